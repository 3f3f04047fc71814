//! Integration tests, one file per area.

mod concurrency;
mod errors;
mod hostile;
mod lifecycle;
mod llm;
mod planning;
mod running;
mod secrets;
mod snapshots;
mod staleness;
mod titles;
mod todo_edits;
