//! tick: make a coding agent plan first, wait for a person's approval, then execute the approved
//! plan one verified step at a time.

pub mod agent;
pub mod cli;
pub mod commands;
pub mod compact;
pub mod config;
pub mod error;
pub mod fsx;
pub mod git;
pub mod llm;
pub mod plan;
pub mod redact;
pub mod runner;
pub mod sandbox;
pub mod tasks;
pub mod tools;
pub mod transcript;
pub mod ui;
pub mod watch;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use chrono::{DateTime, SubsecRound, Utc};
use clap::Parser;

use crate::commands::Env;
use crate::error::Error;
use crate::ui::Ui;

/// Runs tick with `args` (the program name first) in the real process environment, and
/// returns the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    // The sandbox helper must start before anything else, while the process is one thread.
    if let Some(code) = sandbox::helper_main(&args) {
        return code;
    }
    sandbox::harden_this_process();
    let ui = Ui::new();
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap renders help and usage errors itself; printing is still the ui's job.
            let code = if err.use_stderr() { 2 } else { 0 };
            ui.clap(&err);
            return ExitCode::from(code);
        }
    };
    // `run --json` and `plan --json` print an event stream; its last line is always the
    // result, so a script knows how it ended without parsing stderr.
    let stream = match &cli.command {
        cli::Command::Run(args) => args.json,
        cli::Command::Plan(args) => args.json,
        _ => false,
    };
    let end = |result: Result<u8, Error>| {
        let code = match result {
            Ok(code) => {
                if stream {
                    ui.json_result(code, None);
                }
                code
            }
            Err(err) => {
                ui.error(&err);
                if stream {
                    ui.json_result(err.exit_code(), Some(&err));
                }
                err.exit_code()
            }
        };
        ExitCode::from(code)
    };
    let env = match process_env() {
        Ok(env) => env,
        Err(err) => return end(Err(err)),
    };
    end(commands::dispatch(cli, &env, &ui).map(commands::Outcome::exit_code))
}

/// The outside world, read once. `TICK_NOW` (RFC 3339) fixes the clock, for reproducible
/// files in tests and demos.
fn process_env() -> Result<Env, Error> {
    let vars: std::collections::BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let now = match vars.get("TICK_NOW").filter(|v| !v.is_empty()) {
        Some(text) => DateTime::parse_from_rfc3339(text)
            .map_err(|err| {
                Error::input(format!("`TICK_NOW` is not an RFC 3339 time: {err}"))
                    .hint("like `2026-11-30T14:30:12Z`, or unset it")
            })?
            .with_timezone(&Utc),
        None => Utc::now(),
    };
    let cwd = std::env::current_dir()
        .map_err(|err| Error::internal(format!("could not read the current directory: {err}")))?;
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let stderr_is_terminal = std::io::stderr().is_terminal();
    // `TICK_INTERACTIVE=1|0` overrides the terminal check, for scripted sessions and tests.
    let interactive = match vars.get("TICK_INTERACTIVE").map(String::as_str) {
        Some("1" | "true" | "yes") => true,
        Some("0" | "false" | "no") => false,
        _ => stdin_is_terminal && stderr_is_terminal,
    };
    Ok(Env {
        cwd,
        now: now.trunc_subsecs(0),
        vars,
        stdin_is_terminal,
        stderr_is_terminal,
        interactive,
    })
}
