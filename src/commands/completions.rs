//! `tick completions <shell>`: shell completion that knows the workspace. The script it prints
//! calls tick back (`TICK_COMPLETE=bash tick -- words…`) for each completion, so subcommands and
//! flags come from the clap definitions (never behind the commands) and task and step ids
//! from `.tasks/` as it is now: a task id is 60 characters, nobody types it.

use std::ffi::OsString;
use std::path::Path;

use clap::CommandFactory as _;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;

use super::{Ctx, Outcome};
use crate::cli::{Cli, CompletionsArgs, Shell};
use crate::error::{Error, Result};
use crate::plan::StepStatus;
use crate::tasks::Store;

/// The variable the completion script sets when it calls tick back.
pub const VAR: &str = "TICK_COMPLETE";

fn shell_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "bash",
        Shell::Zsh => "zsh",
        Shell::Fish => "fish",
        Shell::PowerShell => "powershell",
        Shell::Elvish => "elvish",
    }
}

/// The completion script for `shell`: it registers tick (found on `PATH`) as its own completer.
pub fn script(shell: Shell) -> Result<String> {
    let name = shell_name(shell);
    let shells = Shells::builtins();
    let completer = shells
        .completer(name)
        .ok_or_else(|| Error::internal(format!("no completion support for `{name}`")))?;
    let mut out = Vec::new();
    completer
        .write_registration(VAR, "tick", "tick", "tick", &mut out)
        .map_err(|err| Error::internal(format!("could not write the completion script: {err}")))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The answer to a completion request: `shell` (the value of [`VAR`]) asks for the words
/// after `--` in `args`, typed in `cwd`. `None` when `args` is not a completion request.
pub fn complete(shell: &str, args: &[OsString], cwd: &Path) -> Option<Result<String>> {
    let start = args.iter().position(|a| a == "--")? + 1;
    let words: Vec<OsString> = args[start..].to_vec();
    let shells = Shells::builtins();
    let Some(completer) = shells.completer(shell) else {
        return Some(Err(Error::input(format!(
            "`{VAR}={shell}`: tick completes for bash, zsh, fish, powershell and elvish"
        ))));
    };
    let mut command = command(cwd);
    let mut out = Vec::new();
    Some(
        completer
            .write_complete(&mut command, words, Some(cwd), &mut out)
            .map(|()| String::from_utf8_lossy(&out).into_owned())
            .map_err(|err| Error::internal(format!("could not complete: {err}"))),
    )
}

/// tick's command line with candidates for every task and step argument, read from the
/// workspace that `cwd` is in when the shell asks.
fn command(cwd: &Path) -> clap::Command {
    let mut command = Cli::command();
    command.build();
    let subcommands: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subcommands {
        command = command.mut_subcommand(&name, |mut sub| {
            let args: Vec<(String, bool)> = sub
                .get_arguments()
                .filter_map(|arg| {
                    let id = arg.get_id().as_str();
                    let names = arg.get_value_names().unwrap_or_default();
                    if id == "task" || id == "task_flag" || names.iter().any(|n| n == "TASK") {
                        Some((id.to_owned(), true))
                    } else if id == "step" || names.iter().any(|n| n == "STEP") {
                        Some((id.to_owned(), false))
                    } else {
                        None
                    }
                })
                .collect();
            for (id, is_task) in args {
                let root = cwd.to_path_buf();
                let candidates = if is_task {
                    ArgValueCandidates::new(move || task_candidates(&root))
                } else {
                    ArgValueCandidates::new(move || step_candidates(&root))
                };
                sub = sub.mut_arg(id, |arg| arg.add(candidates));
            }
            sub
        });
    }
    command
}

/// Every task, newest first, with its title as the help text.
fn task_candidates(cwd: &Path) -> Vec<CompletionCandidate> {
    let Ok(store) = Store::discover(cwd) else {
        return Vec::new();
    };
    let mut ids = store.task_ids().unwrap_or_default();
    ids.reverse();
    ids.into_iter()
        .map(|id| {
            let title = store
                .load(&store.task_ref(&id))
                .map(|task| task.title())
                .unwrap_or_default();
            CompletionCandidate::new(id).help(Some(title.into()))
        })
        .collect()
}

/// The current task's steps, with their status and title as the help text.
fn step_candidates(cwd: &Path) -> Vec<CompletionCandidate> {
    let Ok(store) = Store::discover(cwd) else {
        return Vec::new();
    };
    let Some(task) = store
        .current()
        .ok()
        .flatten()
        .and_then(|task| store.load(&task).ok())
    else {
        return Vec::new();
    };
    task.todo
        .all_steps()
        .filter_map(|step| {
            let id = step.id?;
            let status = match step.status {
                StepStatus::Pending => "pending",
                other => other.as_str(),
            };
            Some(
                CompletionCandidate::new(id.to_string())
                    .help(Some(format!("[{status}] {}", step.title).into())),
            )
        })
        .collect()
}

pub fn run(ctx: &Ctx<'_>, args: &CompletionsArgs) -> Result<Outcome> {
    ctx.ui.data(&script(args.shell)?);
    Ok(Outcome::Done)
}
