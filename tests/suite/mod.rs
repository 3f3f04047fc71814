//! Integration tests, one file per area.

mod lifecycle;
mod llm;
