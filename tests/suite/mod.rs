//! Integration tests, one file per area.

mod build_commands;
mod cli_conventions;
mod cli_doctor;
mod cli_first_run;
mod cli_review;
mod concurrency;
mod errors;
mod hostile;
mod kill;
mod lifecycle;
mod llm;
mod models;
mod ownership_runs;
mod planning;
mod real_model;
mod run_command;
mod run_json;
mod run_output;
mod running;
mod sandbox;
mod secrets;
mod snapshots;
mod staleness;
mod titles;
mod todo_edits;
mod verify_cmd;
