//! tick: make a coding agent plan first, wait for a person's approval, then execute the approved
//! plan one verified step at a time.

// Unit tests read the files they made themselves; tick's own reads go through `fsx`.
#![cfg_attr(
    test,
    allow(
        clippy::disallowed_methods,
        reason = "tests read files they wrote; clippy.toml bans them in tick's own code"
    )
)]

pub mod agent;
pub mod cli;
pub mod commands;
pub mod compact;
pub mod config;
pub mod editor;
pub mod engine;
pub mod env;
pub mod error;
pub mod fsx;
pub mod git;
pub mod hook_entry;
pub mod hooks;
pub mod import;
pub mod llm;
pub mod local_model;
pub mod mcp;
pub mod pager;
pub mod person;
pub mod plan;
pub mod planning;
pub mod redact;
pub mod report;
pub mod rt;
pub mod runner;
pub mod sandbox;
pub mod store_path;
pub mod tasks;
pub mod text;
pub mod tls;
pub mod tools;
pub mod transcript;
pub mod trust;
pub mod tui;
pub mod ui;
pub mod undo;
mod user_error;
pub mod watch;

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser;

use crate::env::Env;
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
    // A shell asking for completions (the script `tick completions` prints calls back).
    if let Some(shell) = std::env::var_os(commands::completions::VAR)
        && let Ok(cwd) = std::env::current_dir()
        && let Some(answer) = commands::completions::complete(&shell.to_string_lossy(), &args, &cwd)
    {
        return match answer {
            Ok(text) => {
                ui.data(&text);
                ExitCode::SUCCESS
            }
            Err(err) => {
                ui.error(&err);
                ExitCode::from(err.exit_code())
            }
        };
    }
    let cli = match cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap renders help and usage errors itself; printing is still the ui's job.
            let code = if err.use_stderr() { 2 } else { 0 };
            ui.clap(&err);
            return ExitCode::from(code);
        }
    };
    // `auto` is the console crate's own reading of the terminal, `NO_COLOR` and `CLICOLOR_FORCE`.
    if cli.color != cli::ColorWhen::Auto {
        let on = cli.color == cli::ColorWhen::Always;
        console::set_colors_enabled(on);
        console::set_colors_enabled_stderr(on);
    }
    ui.set_verbosity(if cli.quiet {
        ui::Verbosity::Quiet
    } else if cli.verbose {
        ui::Verbosity::Verbose
    } else {
        ui::Verbosity::Normal
    });
    // Without a command, only a person at a terminal gets the session; anything else gets
    // clap's "requires a subcommand" with the list, as before the session existed.
    if cli.command.is_none() && !(env::stdin_is_terminal() && std::io::stdout().is_terminal()) {
        let required = <cli::Cli as clap::CommandFactory>::command().subcommand_required(true);
        if let Err(err) = required.try_get_matches_from(&args) {
            ui.clap(&err);
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    }
    // `run --json` and `plan --json` print an event stream; its last line is always the
    // result, so a script knows how it ended without parsing stderr.
    let stream = match &cli.command {
        Some(cli::Command::Run(args)) => args.json,
        Some(cli::Command::Plan(args)) => args.json,
        Some(cli::Command::Verify(args)) => args.json,
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
    let env = match Env::from_process() {
        Ok(env) => env,
        Err(err) => return end(Err(err)),
    };
    // What people read at length goes through their pager at a terminal.
    let pageable = match &cli.command {
        Some(cli::Command::Show(_)) => true,
        Some(cli::Command::Status(args)) => !args.json,
        Some(cli::Command::Log(args)) => !args.json,
        _ => false,
    };
    let pager = pager::start(&env, pageable && !cli.no_pager);
    let code = end(commands::dispatch(cli, &env, &ui).map(commands::Outcome::exit_code));
    drop(pager);
    code
}
