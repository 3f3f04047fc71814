//! tick: make a coding agent plan first, wait for a person's approval, then execute the approved
//! plan one verified step at a time.

pub mod error;
pub mod fsx;
pub mod llm;
pub mod plan;
pub mod tasks;
pub mod tools;
