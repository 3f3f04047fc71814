//! Integration tests, one file per area.

mod concurrency;
mod errors;
mod kill;
mod lifecycle;
mod llm;
mod planning;
mod running;
mod snapshots;
mod staleness;
mod titles;
mod todo_edits;
