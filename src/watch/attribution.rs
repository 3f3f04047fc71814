//! The one attribution rule (DESIGN §6): whether tick made a file hold the content it holds.
//! Pure: the caller reads the workspace journal and hashes the file; this module decides.
//!
//! A change of `path` to content `hash` is tick's own iff
//!
//! 1. tick wrote exactly that content to that path (a tool's `write_file`/`edit_file`, any
//!    task, any run), or
//! 2. a command tick ran recorded `after[path] == hash` and `before[path] != hash` (the
//!    command is what changed it), **and** `path` lies inside that command's `scope` (the
//!    files of the step it ran for).
//!
//! Anything else is out of band. There are no time windows: a person's edit that lands while
//! an agent's command runs changes the snapshot too, and the snapshot cannot say who made it;
//! when the file is not one the command's step may touch, the edit is taken as the person's
//! (so a done step relying on it is re-verified rather than trusted). Of several records that
//! explain a change, the latest names the owner.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::fingerprint::{glob_set, is_glob};
use crate::tasks::journal::Record;

/// Who, of tick's work, made a change: a task, its step, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub task: String,
    pub step: Option<String>,
    pub at: DateTime<Utc>,
}

/// The work of tick's that made `path` hold content `hash`, or `None` when the change was
/// made outside tick. The latest of tick's own changes of `path` decides: when it left other
/// content, `hash` came from elsewhere since, even if tick wrote that content once before (a
/// person putting back what an undo wrote, after the redo, is the person's change).
pub fn owner(path: &str, hash: &str, journal: &[Record]) -> Option<Owner> {
    for record in journal.iter().rev() {
        match record {
            Record::Write {
                path: written,
                hash: wrote,
                at,
                task,
                step,
            } if written == path => {
                return (wrote == hash).then(|| Owner {
                    task: task.clone(),
                    step: step.clone(),
                    at: *at,
                });
            }
            Record::Write { .. } => {}
            Record::Command {
                end,
                task,
                step,
                scope,
                before,
                after,
                ..
            } => {
                let Some(left) = after.get(path) else {
                    continue;
                };
                let changed = before.get(path).is_none_or(|before| before != left);
                let ours = in_scope(path, scope);
                // A change seen during a command for another step is not tick's, and it is
                // the latest change; one of a file the command never saw before is no guide.
                if !changed || (!ours && !before.contains_key(path)) {
                    continue;
                }
                return (ours && left == hash).then(|| Owner {
                    task: task.clone(),
                    step: step.clone(),
                    at: *end,
                });
            }
        }
    }
    None
}

/// Whether `path` is one of the files `scope` (a step's `files` patterns) names: a literal
/// path itself or anything below it (a directory), or a match of a glob.
pub fn in_scope(path: &str, scope: &[String]) -> bool {
    let path = path.trim_start_matches("./");
    let mut globs = Vec::new();
    for pattern in scope {
        let pattern = pattern
            .trim()
            .trim_start_matches("./")
            .trim_end_matches('/');
        if pattern.is_empty() {
            continue;
        }
        if is_glob(pattern) {
            globs.push(pattern);
        } else if path == pattern
            || path
                .strip_prefix(pattern)
                .is_some_and(|rest| rest.starts_with('/'))
        {
            return true;
        }
    }
    !globs.is_empty() && glob_set(&globs).is_match(path)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn write(path: &str, hash: &str, task: &str, step: &str) -> Record {
        Record::Write {
            path: path.into(),
            hash: hash.into(),
            at: t("2026-11-30T14:10:00Z"),
            task: task.into(),
            step: Some(step.into()),
        }
    }

    fn command(scope: &[&str], before: &[(&str, &str)], after: &[(&str, &str)]) -> Record {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
                .collect()
        };
        Record::Command {
            start: t("2026-11-30T14:20:00Z"),
            end: t("2026-11-30T14:20:30Z"),
            task: "B".into(),
            step: Some("S2".into()),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            before: map(before),
            after: map(after),
        }
    }

    fn owned(path: &str, hash: &str, journal: &[Record]) -> bool {
        owner(path, hash, journal).is_some()
    }

    #[test]
    fn nothing_journalled_explains_nothing() {
        assert_eq!(owner("a.rs", "h", &[]), None);
    }

    #[test]
    fn a_tool_write_owns_exactly_its_path_and_content() {
        let journal = [write("src/a.rs", "w", "B", "S2")];
        assert_eq!(
            owner("src/a.rs", "w", &journal),
            Some(Owner {
                task: "B".into(),
                step: Some("S2".into()),
                at: t("2026-11-30T14:10:00Z"),
            })
        );
        // Other content at that path: someone changed it after tick wrote it.
        assert!(!owned("src/a.rs", "v", &journal));
        // The same content at another path: not something tick wrote there.
        assert!(!owned("src/b.rs", "w", &journal));
    }

    #[test]
    fn writes_of_any_task_and_any_run_count_and_the_latest_names_the_owner() {
        let journal = [write("a", "w", "A", "S1"), write("a", "w", "B", "S4")];
        let found = owner("a", "w", &journal).unwrap();
        assert_eq!(
            (found.task.as_str(), found.step.as_deref()),
            ("B", Some("S4"))
        );
    }

    #[test]
    fn tick_putting_a_file_back_does_not_own_a_persons_later_return_to_it() {
        // The step wrote `hello`, its undo `hi`, its redo `hello`: a person's `hi` now is theirs.
        let journal = [
            write("greeting.txt", "hello", "A", "S1"),
            write("greeting.txt", "hi", "A", "S1"),
            write("greeting.txt", "hello", "A", "S1"),
        ];
        assert!(!owned("greeting.txt", "hi", &journal));
        assert!(owned("greeting.txt", "hello", &journal));
        // The same with a command's change last.
        let mut journal = journal.to_vec();
        journal.push(command(
            &["greeting.txt"],
            &[("greeting.txt", "hello")],
            &[("greeting.txt", "bye")],
        ));
        assert!(!owned("greeting.txt", "hello", &journal));
        assert!(owned("greeting.txt", "bye", &journal));
        // A command that left it alone is no change of it.
        journal.push(command(
            &["greeting.txt"],
            &[("greeting.txt", "bye")],
            &[("greeting.txt", "bye")],
        ));
        assert!(owned("greeting.txt", "bye", &journal));
    }

    #[test]
    fn a_command_owns_what_it_changed_inside_its_scope() {
        let journal = [command(
            &["src/**"],
            &[("src/a.rs", "old")],
            &[("src/a.rs", "new")],
        )];
        let found = owner("src/a.rs", "new", &journal).unwrap();
        assert_eq!(found.at, t("2026-11-30T14:20:30Z"));
        assert_eq!(found.step.as_deref(), Some("S2"));
        // Changed again after the command: not what it left.
        assert!(!owned("src/a.rs", "later", &journal));
    }

    #[test]
    fn a_file_the_command_created_is_its_own() {
        let journal = [command(&["gen/"], &[], &[("gen/out.txt", "h")])];
        assert!(owned("gen/out.txt", "h", &journal));
    }

    #[test]
    fn a_file_the_command_deleted_is_its_own() {
        let journal = [command(
            &["old.rs"],
            &[("old.rs", "h")],
            &[("old.rs", "missing")],
        )];
        assert!(owned("old.rs", "missing", &journal));
    }

    #[test]
    fn a_file_the_command_did_not_change_is_not_explained_by_it() {
        // Same before and after: the content came from somewhere else, before the command.
        let journal = [command(&["a.rs"], &[("a.rs", "h")], &[("a.rs", "h")])];
        assert!(!owned("a.rs", "h", &journal));
    }

    #[test]
    fn a_change_outside_the_commands_scope_is_out_of_band() {
        // A person edits a done step's file while the agent's command for another step runs:
        // the snapshot sees the change, but the command's step has no business with the file.
        let journal = [command(
            &["src/b.rs"],
            &[("src/a.rs", "old"), ("src/b.rs", "b0")],
            &[("src/a.rs", "by hand"), ("src/b.rs", "b1")],
        )];
        assert!(!owned("src/a.rs", "by hand", &journal));
        assert!(owned("src/b.rs", "b1", &journal));
    }

    #[test]
    fn a_command_without_snapshots_explains_nothing() {
        // What older versions journalled: a time window only.
        let journal = [command(&["**"], &[], &[])];
        assert!(!owned("a.rs", "h", &journal));
    }

    #[test]
    fn scope_patterns() {
        let scope =
            |patterns: &[&str]| patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        assert!(in_scope("src/a.rs", &scope(&["src/a.rs"])));
        assert!(in_scope("src/a.rs", &scope(&["./src/a.rs"])));
        assert!(in_scope("src/a/b.rs", &scope(&["src/a"])));
        assert!(in_scope("src/a/b.rs", &scope(&["src/a/"])));
        assert!(!in_scope("src/ab.rs", &scope(&["src/a"])));
        assert!(in_scope("src/x/y.rs", &scope(&["src/**"])));
        assert!(in_scope("src/y.rs", &scope(&["src/*.rs"])));
        assert!(!in_scope("src/x/y.rs", &scope(&["src/*.rs"])));
        assert!(!in_scope("a.rs", &scope(&[])));
        assert!(!in_scope("a.rs", &scope(&["", "  "])));
        assert!(in_scope("a.rs", &scope(&["b.rs", "a.rs"])));
    }
}
