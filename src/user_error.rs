//! The one place where the typed errors of the store (`tasks`), the settings (`config`) and
//! the filesystem (`fsx`) become the user-facing [`Error`]: each variant's exit code and what
//! to do next. The variants carry the facts (path, line, column, key) and their own one-line
//! message; the hints a person reads are worded here, as jj's `command_error.rs` does.

use crate::error::Error;
use crate::{config, fsx, tasks};

impl From<fsx::Error> for Error {
    fn from(err: fsx::Error) -> Error {
        let message = err.to_string();
        match err {
            fsx::Error::Missing(_) => Error::input(message),
            fsx::Error::Read { source, .. } if source.raw_os_error() == Some(libc::ELOOP) => {
                Error::input(message).hint(
                    "the path is a symlink loop; replace it with the file; nothing was changed",
                )
            }
            fsx::Error::Read { .. } => Error::input(message).hint("nothing was changed"),
            fsx::Error::NotAFile { name, .. } => Error::input(message).hint(format!(
                "tick reads only regular files here; remove or rename `{name}` and restore the \
                 file (`git checkout -- {name}`); nothing was changed"
            )),
            fsx::Error::LinkOutside(_) => Error::input(message).hint(
                "tick reads its files only inside the workspace; replace the link with the file \
                 itself; nothing was changed",
            ),
            fsx::Error::TooLarge { .. } => Error::input(message).hint(
                "tick refuses files this large rather than read them into memory; shorten or \
                 restore the file; nothing was changed",
            ),
            fsx::Error::InvalidUtf8 { .. } => Error::input(message).hint(
                "tick reads and writes UTF-8 text; save the file as UTF-8; it was not changed",
            ),
            fsx::Error::AppendToLink(_) => Error::input(message).hint(
                "tick appends only to its own files; remove the link (tick makes a new file); \
                 nothing was written",
            ),
            fsx::Error::FolderOutside(_) => Error::input(message).hint(
                "tick writes its files only inside the workspace; replace the link with a \
                 folder; nothing was written",
            ),
            fsx::Error::Move { .. } => Error::internal(message),
        }
    }
}

impl From<tasks::error::Error> for Error {
    fn from(err: tasks::error::Error) -> Error {
        use tasks::error::Error as E;
        let message = err.to_string();
        match err {
            E::NestedStore { rel, top } => Error::input(message).hint(format!(
                "if it is yours, move its tasks to the top level (`mv {rel}/* .tasks/` from `{}`) \
                 and remove it; if you did not make it, remove it (`rm -r {rel}`): its \
                 `config.yaml` may name a server of someone else's; nothing was read from it",
                top.display()
            )),
            E::NoTaskMatches(_) => {
                Error::input(message).hint("`tick list` shows the tasks and their ids")
            }
            E::Ambiguous { .. } => Error::input(message).hint("give more of the id"),
            E::NoSteps { todo, .. } => Error::input(message).hint(format!(
                "steps are lines like `- [ ] S1 Do one thing`; restore the file (`git checkout \
                 -- {todo}`) or add the steps; the file was not changed"
            )),
            E::Missing(_) => Error::input(message)
                .hint("restore it from git, or remove the task folder if it is left over"),
            E::Parse { hint, path, .. } => {
                let open = edit_command(&path)
                    .map(|command| format!("; fix it with `{command}`"))
                    .unwrap_or_default();
                let hint = if hint.is_empty() {
                    format!("the file was not changed{open}")
                } else {
                    format!("{hint}; the file was not changed{open}")
                };
                Error::input(message).hint(hint)
            }
            E::NoStep { ids, .. } => Error::input(message).hint(format!(
                "its steps are {}; nothing was changed",
                ids.join(", ")
            )),
            E::NotCancellable { hint, .. } => Error::input(message).hint(hint),
            E::NotBlocked { blocked, .. } if blocked.is_empty() => {
                Error::input(message).hint("no step of this task is blocked; nothing was changed")
            }
            E::NotBlocked { blocked, .. } => Error::input(message).hint(format!(
                "blocked: {}; nothing was changed",
                blocked.join(", ")
            )),
            E::LockNotAFile(path) => Error::input(message).hint(format!(
                "remove `{path}` (tick makes a new one); nothing was changed"
            )),
            E::Template { origin, .. } => {
                Error::input(message).hint(format!("fix or remove {origin}; nothing was written"))
            }
            E::TemplateOutput { file, .. } => Error::input(message).hint(format!(
                "fix or remove the {file} template (`{file}.j2` in `.tasks/templates/` or \
                 `~/.config/tick/templates/`); nothing was written"
            )),
            E::NotRestorable(_) => {
                Error::input(message).hint("the step's record names it; nothing was changed")
            }
            E::BelowLink { .. } => {
                Error::input(message).hint("tick never writes through a link; nothing was changed")
            }
            E::FolderNow(_) => Error::input(message).hint("move it away and run the command again"),
            E::KeptCopyGone { .. } => Error::internal(message)
                .hint("`runs/images/` was cleaned; nothing more can be put back from it"),
            E::RecordUnreadable { .. } => Error::internal(message)
                .hint("it is tick's own record in `runs/`; remove it to start over"),
            E::NoTemplate(_) | E::EditUnparsed { .. } | E::Serialize { .. } | E::Render { .. } => {
                Error::internal(message)
            }
        }
    }
}

impl From<config::error::Error> for Error {
    fn from(err: config::error::Error) -> Error {
        use config::error::{Error as E, Section};
        let message = err.to_string();
        match err {
            E::File { closest, .. } => {
                let error = Error::input(message);
                let error = match closest {
                    Some(key) => error.hint(format!("did you mean `{key}`?")),
                    None => error,
                };
                error.hint(
                    "keys are `provider`, `model`, `plan_model`, `base_url`, `api_key_env`, \
                     `tool_calls` (`native`, `text`, `auto`), `planner` and `executor` \
                     (`compact`, `agent`, `auto`), `limits` (`max_turns`, `max_tokens`, \
                     `max_output_tokens`, `answer_timeout_s`, `idle_timeout_s`, `max_retries`, \
                     `max_reminders`, `max_write_bytes`, `max_tool_result_bytes`, \
                     `max_transcript_entry_bytes`, `replan_max_new_steps`, `max_undo_bytes`, \
                     `compact_candidates`, `compact_candidate_budget_s`), `sandbox` (`off`, or \
                     `network`, `writable`, `env`), `run_command` (`allow`), `hooks` (a list of \
                     `{event, matcher, command, timeout_s}`) and `mcp_servers` (see \
                     `docs/mcp.md`); the file was not changed",
                )
            }
            E::Section { section, .. } => Error::input(message).hint(match section {
                Section::Hooks => {
                    "see `docs/hooks.md` for the events and the entry's keys; the file was not \
                     changed"
                }
                Section::RunCommand => {
                    "an entry is `{program: NAME, subcommands: [..], reject: [..]}`; it can \
                     only add to tick's table; the file was not changed"
                }
                Section::McpServers => {
                    "see `docs/mcp.md` for a server's keys; the file was not changed"
                }
            }),
            E::WritableNotAbsolute(_) => Error::input(message)
                .hint("write `/path/to/dir` or `~/dir`; the file was not changed"),
            E::Variable { var, .. } => Error::input(message).hint(match var {
                "TICK_PROVIDER" => "use `openai`, `anthropic`, `ollama` or `llamacpp`",
                "TICK_TOOL_CALLS" => "use `native`, `text` or `auto`",
                "TICK_SANDBOX" => "use `TICK_SANDBOX=off` to run without the sandbox, or unset it",
                _ => "use `compact`, `agent` or `auto`",
            }),
            E::Candidates { .. } => Error::input(message).hint(
                "write `kind=url` pairs separated by commas \
                 (`llamacpp=http://127.0.0.1:8080/v1`), or `none`; or unset it to ask the usual \
                 ports",
            ),
            E::NoApiKey(key_env) => Error::input(message).hint(format!(
                "set `{key_env}` or `api_key_env` in `.tasks/config.yaml`; a local server \
                 (`provider: ollama`) needs none"
            )),
            E::McpServerExists { .. } => Error::input(message).hint(
                "edit its entry under `mcp_servers:`, or choose another name; the file was not \
                 changed",
            ),
            E::Entry(_) => Error::internal(message),
            E::McpByHand { .. } => Error::input(message)
                .hint("add the server by hand (see `docs/mcp.md`); the file was not changed"),
        }
    }
}

/// The command that opens the tick file at `path` (as a parse error names it) in the editor:
/// `tick edit` for the draft, `tick edit [--todo] TASK` for a task's PLAN.md or TODO.md (the
/// task by its timestamp, which names it alone).
fn edit_command(path: &str) -> Option<String> {
    let path = path.replace('\\', "/");
    let rest = path.rsplit_once(".tasks/").map(|(_, rest)| rest)?;
    let (dir, file) = rest.split_once('/')?;
    let todo = match file {
        "PLAN.md" => "",
        "TODO.md" => " --todo",
        _ => return None,
    };
    if dir == "draft" {
        return (todo.is_empty()).then(|| "tick edit".to_owned());
    }
    let stamp = dir
        .get(..15)
        .filter(|s| s.as_bytes().get(8) == Some(&b'-'))?;
    Some(format!("tick edit{todo} {stamp}"))
}

#[cfg(test)]
mod edit_command_tests {
    use super::edit_command;

    #[test]
    fn a_parse_error_names_the_command_that_opens_its_file() {
        for (path, command) in [
            (".tasks/draft/PLAN.md", Some("tick edit")),
            (
                ".tasks/20261130-143013-refactor-login/TODO.md",
                Some("tick edit --todo 20261130-143013"),
            ),
            (
                "/home/a/repo/.tasks/20261130-143013-x/PLAN.md",
                Some("tick edit 20261130-143013"),
            ),
            // Files `tick edit` does not open.
            (".tasks/draft/TODO.md", None),
            (".tasks/config.yaml", None),
            (".tasks/20261130-143013-x/state.yaml", None),
            (".tasks/not-a-task/PLAN.md", None),
            ("PLAN.md", None),
        ] {
            assert_eq!(edit_command(path).as_deref(), command, "{path}");
        }
    }
}
