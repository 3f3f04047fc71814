//! Integration tests, one file per area.

mod concurrency;
mod errors;
mod lifecycle;
mod llm;
mod planning;
mod real_model;
mod running;
mod snapshots;
mod staleness;
mod titles;
mod todo_edits;
