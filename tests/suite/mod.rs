//! Integration tests, one file per area.

mod llm;
mod planning;
mod staleness;
