//! The tools a model may call, the registry of which exist in each mode, and the workspace
//! path policy every tool goes through.

pub mod workspace;

pub use workspace::{Access, PathError, Workspace};
