//! Helpers shared by the integration tests.

pub mod fake_model;
pub mod mcp_server;
pub mod plans;
pub mod processes;
pub mod programs;
pub mod pty;
pub mod scripts;
pub mod text;
pub mod workspace;
