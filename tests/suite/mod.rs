//! Integration tests, one file per area.

mod lifecycle;
mod llm;
mod titles;
mod todo_edits;
