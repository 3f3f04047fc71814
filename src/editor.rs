//! The person's editor on one of tick's files (`tick edit`, the review menu's `e`, the
//! session's `e`), and the checks an edited PLAN.md or TODO.md must pass, with errors that say
//! where the edit went wrong.

use std::path::Path;
use std::process::ExitStatus;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::tasks::plan_md;
use crate::tasks::todo_md::{self, ParseError};

/// How an editor that ran ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// The editor setting as run.
    pub editor: String,
    pub status: ExitStatus,
}

/// The editor setting of `env`: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor(env: &Env) -> String {
    env.var("VISUAL")
        .or_else(|| env.var("EDITOR"))
        .unwrap_or("vi")
        .to_owned()
}

/// Runs the editor of `env` on `path` (shown to the person as `shown`) and waits for it.
/// Fails when no editor could be started; an editor that ran and failed is a [`Closed`] with
/// that status (the file may still have been edited).
pub fn open(env: &Env, path: &Path, shown: &str) -> Result<Closed> {
    // `vi` into a pipe edits nothing and exits 0, which would read as "closed unchanged".
    if env.var("VISUAL").is_none() && env.var("EDITOR").is_none() && !env.stdin_is_terminal {
        return Err(Error::input(format!(
            "no editor for `{shown}`: `EDITOR` and `VISUAL` are not set and there is no terminal for `vi`"
        ))
        .hint(format!(
            "set `EDITOR` (like `EDITOR=nano`, or `EDITOR='code --wait'`), or edit `{shown}` yourself; it was not changed"
        )));
    }
    let editor = editor(env);
    // The editor setting may carry arguments (`code --wait`): let the shell split it.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .map_err(|err| Error::internal(format!("could not start the editor `{editor}`: {err}")))?;
    // The shell's own codes for a program it could not find or run: no editor ever opened.
    if matches!(status.code(), Some(126 | 127)) {
        return Err(
            Error::input(format!("could not run the editor `{editor}`")).hint(format!(
                "set `$VISUAL` or `$EDITOR` to an editor on your PATH (like `EDITOR=nano`); `{shown}` was not changed"
            )),
        );
    }
    Ok(Closed { editor, status })
}

/// A parse error in a file a person just edited, shown as `shown`: where, and what to fix (not
/// "the file was not changed": they just changed it).
pub fn edited_error(shown: &str, err: &ParseError) -> Error {
    let error = Error::input(format!(
        "`{shown}:{}:{}`: {}",
        err.line, err.col, err.message
    ));
    if err.hint.is_empty() {
        error
    } else {
        error.hint(err.hint.clone())
    }
}

/// Whether `text`, the content of a PLAN.md (shown as `shown`) a person just edited, parses
/// and validates.
pub fn check_plan(shown: &str, text: &str) -> Result<()> {
    let located = |e: ParseError| edited_error(shown, &e);
    let doc = plan_md::parse(text).map_err(located)?;
    plan_md::validate(&doc).map_err(located)
}

/// Whether `text`, the content of a TODO.md (shown as `shown`) a person just edited, parses.
pub fn check_todo(shown: &str, text: &str) -> Result<()> {
    todo_md::parse(text)
        .map(drop)
        .map_err(|e| edited_error(shown, &e))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Env::fixed(std::env::temp_dir(), vars, chrono::DateTime::UNIX_EPOCH)
    }

    #[test]
    fn visual_wins_over_editor_and_vi_is_the_last_resort() {
        assert_eq!(editor(&env(&[("VISUAL", "a"), ("EDITOR", "b")])), "a");
        assert_eq!(editor(&env(&[("EDITOR", "b")])), "b");
        assert_eq!(editor(&env(&[])), "vi");
    }

    #[test]
    fn the_editor_edits_the_file_and_its_failure_is_its_status() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("PLAN.md");
        std::fs::write(&path, "before\n").unwrap();
        let closed = open(&env(&[("EDITOR", "echo after >")]), &path, "PLAN.md").unwrap();
        assert!(closed.status.success());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\n");
        let closed = open(&env(&[("EDITOR", "false")]), &path, "PLAN.md").unwrap();
        assert_eq!(
            (closed.editor.as_str(), closed.status.code()),
            ("false", Some(1))
        );
    }

    #[test]
    fn an_editor_that_cannot_run_is_an_error_naming_the_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("PLAN.md");
        std::fs::write(&path, "x\n").unwrap();
        let err = open(
            &env(&[("EDITOR", "no-such-editor-anywhere")]),
            &path,
            "PLAN.md",
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "could not run the editor `no-such-editor-anywhere`"
        );
        assert!(
            err.hints[0].ends_with("`PLAN.md` was not changed"),
            "{:?}",
            err.hints
        );
    }

    #[test]
    fn an_edit_that_does_not_parse_is_located_in_the_file() {
        let err = check_plan(".tasks/draft/PLAN.md", "---\ntitle: [\n---\n").unwrap_err();
        assert!(
            err.message.starts_with("`.tasks/draft/PLAN.md:"),
            "{}",
            err.message
        );
        assert!(check_todo("TODO.md", "# TODO: T\n\n- [ ] S1 One\n").is_ok());
    }
}
