//! The pure rules of a plan's life: step ids and statuses, task phases, and the one table of
//! transitions between phases. Nothing here touches a file.

pub mod phase;
pub mod step;

pub use phase::{Event, Phase, Progress, Refusal, transition};
pub use step::{Risk, StepId, StepStatus};
