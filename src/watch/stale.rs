//! Which done steps are stale, and why: the pure decision of DESIGN §6, with no I/O. The
//! caller observes the files (hash and modification time) and reads the journal; this module
//! compares.
//!
//! A done step is stale when one of its fingerprinted files now differs from its fingerprint
//! *out of band*, that is, when neither of tick's own records explains the change:
//!
//! 1. **A journalled write.** The journal lists every file tick's tools wrote with the hash
//!    they wrote. If the file's current content is content tick wrote (after the step was
//!    ticked), tick made it so. Comparing content rather than event times means the verdict
//!    does not depend on a watcher having seen the write.
//! 2. **A command window.** A `bash` command may change any file, and nobody records which. Its
//!    window (start to end) is journalled instead: a file whose last modification time lies
//!    inside a window (which ended after the step was ticked) was last changed while tick's
//!    command ran, so the change is taken as the command's. The modification time is the
//!    only witness that survives until the next command start; it is also what `make` trusts.
//!    The cost is that a person's edit made during a command window is taken as tick's; windows
//!    are seconds long and the live watcher sees the same ambiguity, so this is accepted. A
//!    `git checkout` or an editor save sets the time to *now*, outside any earlier window, so
//!    those are caught. A deleted file has no modification time and is always out of band.
//!
//! Only the last tick's fingerprints count: a step ticked again gets new ones.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, TimeDelta, Utc};

use super::fingerprint::Observed;
use crate::plan::{StepId, StepStatus};
use crate::tasks::journal::Entry;
use crate::tasks::state::State;
use crate::tasks::todo_md::{self, Checklist, ParseError, StepEdit};

/// File systems stamp times with a coarse clock (a few milliseconds behind the one the journal
/// reads, whole seconds on some), so a window is widened by this much on each side.
pub const WINDOW_SLACK: TimeDelta = TimeDelta::milliseconds(1000);

/// How many files a `stale:` line names before it says "and N more".
const NAMED_FILES: usize = 3;

/// A done step whose files changed outside tick.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StaleStep {
    pub id: StepId,
    /// The changed files, workspace-relative, sorted.
    pub files: Vec<String>,
}

/// The fingerprinted files of the steps that are done (`[x]`) in `checklist`: what must be
/// observed to decide staleness. Paths under `.tasks/` are left out.
pub fn watched_paths(checklist: &Checklist, state: &State) -> BTreeSet<String> {
    done_steps(checklist)
        .filter_map(|id| state.steps.get(&id))
        .flat_map(|record| record.fingerprints.keys())
        .filter(|path| !is_task_file(path))
        .cloned()
        .collect()
}

/// The done steps of `checklist` whose fingerprinted files changed out of band, in file order.
/// A path missing from `current` was not observed and counts as unchanged.
pub fn stale_steps(
    checklist: &Checklist,
    state: &State,
    current: &BTreeMap<String, Observed>,
    journal: &[Entry],
) -> Vec<StaleStep> {
    let mut out = Vec::new();
    for id in done_steps(checklist) {
        let Some(record) = state.steps.get(&id) else {
            continue;
        };
        let files: Vec<String> = record
            .fingerprints
            .iter()
            .filter(|(path, _)| !is_task_file(path))
            .filter(|(path, recorded)| {
                current.get(*path).is_some_and(|now| {
                    now.hash != **recorded && !in_band(path, now, record.done_at, journal)
                })
            })
            .map(|(path, _)| path.clone())
            .collect();
        if !files.is_empty() {
            out.push(StaleStep { id, files });
        }
    }
    out
}

/// Whether tick itself explains `path` being as `now` shows it.
fn in_band(path: &str, now: &Observed, done_at: Option<DateTime<Utc>>, journal: &[Entry]) -> bool {
    // Journal times are exact while `done_at` may be truncated to the second: compare against
    // the start of that second.
    let after_tick = |at: DateTime<Utc>| done_at.is_none_or(|done| at >= done);
    journal.iter().any(|entry| match entry {
        Entry::Write {
            path: written,
            hash,
            at,
        } => written == path && *hash == now.hash && after_tick(*at),
        Entry::Command { start, end, .. } => {
            after_tick(*end)
                && now.modified.is_some_and(|modified| {
                    modified >= *start - WINDOW_SLACK && modified <= *end + WINDOW_SLACK
                })
        }
        Entry::Transition { .. } => false,
    })
}

/// The ids of steps whose own box is ticked.
fn done_steps(checklist: &Checklist) -> impl Iterator<Item = StepId> + '_ {
    checklist
        .all_steps()
        .filter(|step| step.status == StepStatus::Done)
        .filter_map(|step| step.id)
}

fn is_task_file(path: &str) -> bool {
    path.split('/')
        .next()
        .is_some_and(|first| first.eq_ignore_ascii_case(".tasks") || first == ".git")
}

/// The `stale:` line for `files` changed at `at`.
pub fn reason(files: &[String], at: DateTime<Utc>) -> String {
    let mut named: Vec<&str> = files.iter().take(NAMED_FILES).map(String::as_str).collect();
    let more = files.len().saturating_sub(NAMED_FILES);
    let more_text = format!("{more} more");
    if more > 0 {
        named.push(&more_text);
    }
    let list = match named.as_slice() {
        [] => "files".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    format!(
        "{list} changed outside tick at {}",
        at.format("%Y-%m-%d %H:%M UTC")
    )
}

/// `src` with each of `stale` marked `[~]` and given its `stale:` line; every other byte is
/// kept. Steps no longer in the file are skipped.
pub fn mark_stale(src: &str, stale: &[StaleStep], at: DateTime<Utc>) -> Result<String, ParseError> {
    let mut text = src.to_owned();
    for step in stale {
        let checklist = todo_md::parse(&text)?;
        let edit = StepEdit::status(StepStatus::Stale, Some(&reason(&step.files, at)));
        if let Some(edited) = todo_md::edit_step(&text, &checklist, step.id, &edit) {
            text = edited;
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::state::StepRecord;

    const TODO: &str = "\
# TODO: t

- [x] S1 First
  - files: src/a.rs
- [ ] S2 Second
  - files: src/b.rs
- [x] S3 Third
  - files: src/c.rs
- [~] S4 Fourth
  - stale: src/d.rs changed outside tick at 2026-11-30 14:00 UTC
- [x] S5 Parent
  - [x] S5.1 Child
";

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    const DONE: &str = "2026-11-30T14:00:00Z";

    fn state(prints: &[(&str, &[(&str, &str)])]) -> State {
        let mut state = State::new();
        for (id, files) in prints {
            state.steps.insert(
                id.parse().unwrap(),
                StepRecord {
                    status: Some(StepStatus::Done),
                    done_at: Some(t(DONE)),
                    fingerprints: files
                        .iter()
                        .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
                        .collect(),
                    ..StepRecord::default()
                },
            );
        }
        state
    }

    fn seen(items: &[(&str, &str, Option<&str>)]) -> BTreeMap<String, Observed> {
        items
            .iter()
            .map(|(p, h, m)| {
                (
                    (*p).to_owned(),
                    Observed {
                        hash: (*h).to_owned(),
                        modified: m.map(t),
                    },
                )
            })
            .collect()
    }

    fn ids(stale: &[StaleStep]) -> Vec<String> {
        stale.iter().map(|s| s.id.to_string()).collect()
    }

    fn check(state: &State, now: &BTreeMap<String, Observed>, journal: &[Entry]) -> Vec<StaleStep> {
        stale_steps(&todo_md::parse(TODO).unwrap(), state, now, journal)
    }

    const LATER: Option<&str> = Some("2026-11-30T15:00:00Z");

    #[test]
    fn unchanged_files_are_not_stale() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        assert!(check(&st, &seen(&[("src/a.rs", "h1", LATER)]), &[]).is_empty());
    }

    #[test]
    fn a_changed_file_makes_its_done_step_stale() {
        let st = state(&[
            ("S1", &[("src/a.rs", "h1")]),
            ("S3", &[("src/c.rs", "h3"), ("src/a.rs", "h1")]),
        ]);
        let stale = check(&st, &seen(&[("src/a.rs", "new", LATER)]), &[]);
        assert_eq!(ids(&stale), ["S1", "S3"]);
        assert_eq!(stale[1].files, ["src/a.rs"]);
    }

    #[test]
    fn only_done_steps_become_stale() {
        // S2 is pending, S4 already stale: neither is reported, whatever their prints say.
        let st = state(&[("S2", &[("src/b.rs", "h2")]), ("S4", &[("src/d.rs", "h4")])]);
        let now = seen(&[("src/b.rs", "x", LATER), ("src/d.rs", "x", LATER)]);
        assert!(check(&st, &now, &[]).is_empty());
    }

    #[test]
    fn sub_steps_are_checked_too() {
        let st = state(&[("S5.1", &[("src/e.rs", "h")])]);
        let stale = check(&st, &seen(&[("src/e.rs", "x", LATER)]), &[]);
        assert_eq!(ids(&stale), ["S5.1"]);
    }

    #[test]
    fn deletion_and_creation_are_changes() {
        let st = state(&[
            ("S1", &[("src/a.rs", "h1")]),
            ("S3", &[("src/new.rs", "missing")]),
        ]);
        let now = seen(&[("src/a.rs", "missing", None), ("src/new.rs", "h", LATER)]);
        assert_eq!(ids(&check(&st, &now, &[])), ["S1", "S3"]);
    }

    #[test]
    fn unobserved_paths_count_as_unchanged() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        assert!(check(&st, &BTreeMap::new(), &[]).is_empty());
    }

    #[test]
    fn a_step_without_a_record_or_prints_is_never_stale() {
        let st = state(&[("S3", &[])]);
        assert!(check(&st, &seen(&[("src/a.rs", "x", LATER)]), &[]).is_empty());
    }

    #[test]
    fn content_tick_wrote_after_the_tick_is_in_band() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let write = |path: &str, hash: &str, at: &str| Entry::Write {
            path: path.into(),
            hash: hash.into(),
            at: t(at),
        };
        let now = seen(&[("src/a.rs", "w", LATER)]);
        assert!(check(&st, &now, &[write("src/a.rs", "w", "2026-11-30T14:10:00Z")]).is_empty());
        // Same content, other file: not an explanation.
        assert_eq!(
            ids(&check(
                &st,
                &now,
                &[write("src/b.rs", "w", "2026-11-30T14:10:00Z")]
            )),
            ["S1"]
        );
        // Same file, other content: someone changed it after tick wrote it.
        assert_eq!(
            ids(&check(
                &st,
                &now,
                &[write("src/a.rs", "v", "2026-11-30T14:10:00Z")]
            )),
            ["S1"]
        );
        // Content tick wrote *before* the tick and restored later (a checkout of an old
        // version): out of band.
        assert_eq!(
            ids(&check(
                &st,
                &now,
                &[write("src/a.rs", "w", "2026-11-30T13:00:00Z")]
            )),
            ["S1"]
        );
    }

    #[test]
    fn a_deletion_tick_journalled_is_in_band() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let journal = [Entry::Write {
            path: "src/a.rs".into(),
            hash: "missing".into(),
            at: t("2026-11-30T14:10:00Z"),
        }];
        assert!(check(&st, &seen(&[("src/a.rs", "missing", None)]), &journal).is_empty());
    }

    #[test]
    fn a_change_inside_a_command_window_is_in_band() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let window = [Entry::Command {
            start: t("2026-11-30T14:10:00Z"),
            end: t("2026-11-30T14:10:30Z"),
            step: Some("S3".into()),
        }];
        let at = |m: &str| seen(&[("src/a.rs", "x", Some(m))]);
        assert!(check(&st, &at("2026-11-30T14:10:10Z"), &window).is_empty());
        // Within the slack on either side.
        assert!(check(&st, &at("2026-11-30T14:09:59.500Z"), &window).is_empty());
        assert!(check(&st, &at("2026-11-30T14:10:30.900Z"), &window).is_empty());
        // Outside the window: a person's edit after the command, or before it.
        assert_eq!(
            ids(&check(&st, &at("2026-11-30T14:11:00Z"), &window)),
            ["S1"]
        );
        assert_eq!(
            ids(&check(&st, &at("2026-11-30T14:05:00Z"), &window)),
            ["S1"]
        );
        // A deleted file has no time to place in a window.
        assert_eq!(
            ids(&check(
                &st,
                &seen(&[("src/a.rs", "missing", None)]),
                &window
            )),
            ["S1"]
        );
    }

    #[test]
    fn a_window_that_ended_before_the_tick_explains_nothing() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let window = [Entry::Command {
            start: t("2026-11-30T13:00:00Z"),
            end: t("2026-11-30T13:00:30Z"),
            step: None,
        }];
        let now = seen(&[("src/a.rs", "x", Some("2026-11-30T13:00:10Z"))]);
        assert_eq!(ids(&check(&st, &now, &window)), ["S1"]);
    }

    #[test]
    fn task_files_are_never_stale_even_if_recorded() {
        let st = state(&[("S1", &[(".tasks/x/TODO.md", "h1")])]);
        let now = seen(&[(".tasks/x/TODO.md", "x", LATER)]);
        assert!(check(&st, &now, &[]).is_empty());
        assert!(watched_paths(&todo_md::parse(TODO).unwrap(), &st).is_empty());
    }

    #[test]
    fn watched_paths_are_the_prints_of_done_steps() {
        let st = state(&[
            ("S1", &[("src/a.rs", "h1")]),
            ("S2", &[("src/b.rs", "h2")]),
            ("S3", &[("src/a.rs", "h1"), ("src/c.rs", "h3")]),
        ]);
        let paths = watched_paths(&todo_md::parse(TODO).unwrap(), &st);
        assert_eq!(
            paths.into_iter().collect::<Vec<_>>(),
            ["src/a.rs", "src/c.rs"]
        );
    }

    #[test]
    fn reasons_name_a_few_files() {
        let at = t("2026-11-30T14:31:59Z");
        let files = |n: usize| (1..=n).map(|i| format!("f{i}")).collect::<Vec<_>>();
        assert_eq!(
            reason(&files(1), at),
            "f1 changed outside tick at 2026-11-30 14:31 UTC"
        );
        assert_eq!(
            reason(&files(2), at),
            "f1 and f2 changed outside tick at 2026-11-30 14:31 UTC"
        );
        assert_eq!(
            reason(&files(5), at),
            "f1, f2, f3 and 2 more changed outside tick at 2026-11-30 14:31 UTC"
        );
    }

    #[test]
    fn marking_touches_only_markers_and_stale_lines() {
        let stale = [
            StaleStep {
                id: StepId::top(1),
                files: vec!["src/a.rs".into()],
            },
            StaleStep {
                id: StepId::sub(5, 1),
                files: vec!["src/e.rs".into()],
            },
            StaleStep {
                id: StepId::top(9),
                files: vec!["gone".into()],
            },
        ];
        let out = mark_stale(TODO, &stale, t("2026-11-30T14:31:00Z")).unwrap();
        let expected = TODO
            .replace(
                "- [x] S1 First\n  - files: src/a.rs\n",
                "- [~] S1 First\n  - files: src/a.rs\n  - stale: src/a.rs changed outside tick at 2026-11-30 14:31 UTC\n",
            )
            .replace(
                "  - [x] S5.1 Child\n",
                "  - [~] S5.1 Child\n    - stale: src/e.rs changed outside tick at 2026-11-30 14:31 UTC\n",
            );
        assert_eq!(out, expected);
    }
}
