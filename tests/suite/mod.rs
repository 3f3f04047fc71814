//! Integration tests, one file per area.

mod concurrency;
mod errors;
mod lifecycle;
mod llm;
mod planning;
mod run_command;
mod running;
mod sandbox;
mod snapshots;
mod staleness;
mod titles;
mod todo_edits;
