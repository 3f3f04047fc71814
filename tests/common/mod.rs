//! Helpers shared by the integration tests.

pub mod fake_model;
pub mod programs;
pub mod project;
pub mod scripts;
pub mod text;
pub mod workspace;
