//! Which done steps are stale, and why: the pure decision of DESIGN §6, with no I/O. The
//! caller hashes the files and reads the workspace journal; this module compares.
//!
//! A done step's fingerprinted file that now differs from its fingerprint was changed either
//! by tick ([`super::attribution::owner`] finds the write or the command that produced that
//! content) or outside tick. Outside tick makes the step stale. By tick, the step stays done:
//! its fingerprint moves forward to the new content, and when the change came from another
//! task it is recorded on the step as a later change (`changed by task B S2`), which only
//! `tick check --strict` treats as a finding.
//!
//! Only the last tick's fingerprints count: a step ticked again gets new ones.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::attribution::{self, Owner};
use crate::plan::{StepId, StepStatus};
use crate::tasks::journal::Record;
use crate::tasks::state::{LaterChange, State};
use crate::tasks::todo_md::{self, Checklist, ParseError, StepEdit};

/// How many files a `stale:` line names before it says "and N more".
const NAMED_FILES: usize = 3;

/// A done step whose files changed outside tick.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StaleStep {
    pub id: StepId,
    /// The changed files, workspace-relative, sorted.
    pub files: Vec<String>,
}

/// A fingerprinted file of a done step that tick itself changed since: the fingerprint moves
/// to `hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub id: StepId,
    pub path: String,
    pub hash: String,
    pub by: Owner,
}

/// What start-up detection decided for one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub stale: Vec<StaleStep>,
    pub moved: Vec<Moved>,
    /// Stale steps whose fingerprinted files are all back to the content recorded when they
    /// were ticked: what they relied on is as it was, so they are `[x]` again.
    pub restored: Vec<StepId>,
}

impl Verdict {
    pub fn is_empty(&self) -> bool {
        self.stale.is_empty() && self.moved.is_empty() && self.restored.is_empty()
    }
}

/// The stale steps (`[~]`) of `checklist` whose every fingerprinted file has, in `current`,
/// the content recorded when the step was last ticked. A step without fingerprints (ticked by
/// hand) is never restored this way; a file not observed counts as not restored.
pub fn restored(
    checklist: &Checklist,
    state: &State,
    current: &BTreeMap<String, String>,
) -> Vec<StepId> {
    checklist
        .all_steps()
        .filter(|step| step.status == StepStatus::Stale)
        .filter_map(|step| step.id)
        .filter(|id| {
            state.steps.get(id).is_some_and(|record| {
                let mut files = record
                    .fingerprints
                    .iter()
                    .filter(|(path, _)| !is_task_file(path))
                    .peekable();
                files.peek().is_some()
                    && files.all(|(path, recorded)| current.get(path) == Some(recorded))
            })
        })
        .collect()
}

/// The fingerprinted files of the steps that are done (`[x]`) in `checklist`: what must be
/// observed to decide staleness. Paths under `.tasks/` are left out.
pub fn watched_paths(checklist: &Checklist, state: &State) -> BTreeSet<String> {
    let stale = checklist
        .all_steps()
        .filter(|step| step.status == StepStatus::Stale)
        .filter_map(|step| step.id);
    done_steps(checklist)
        .chain(stale)
        .filter_map(|id| state.steps.get(&id))
        .flat_map(|record| record.fingerprints.keys())
        // A name recorded redacted (it held a secret) is no file on disk.
        .filter(|path| !is_task_file(path) && !path.contains(crate::redact::REDACTED))
        .cloned()
        .collect()
}

/// Whether some fingerprinted file of a done step differs from its fingerprint in `current`
/// (path → hash): only then need the journal be read.
pub fn any_changed(
    checklist: &Checklist,
    state: &State,
    current: &BTreeMap<String, String>,
) -> bool {
    done_steps(checklist)
        .filter_map(|id| state.steps.get(&id))
        .flat_map(|record| record.fingerprints.iter())
        .any(|(path, recorded)| {
            !is_task_file(path) && current.get(path).is_some_and(|now| now != recorded)
        })
}

/// The verdict on the done steps of `checklist` (of task `task`) whose fingerprinted files
/// differ in `current` (path → hash; a path missing from it was not observed and counts as
/// unchanged), in file order.
pub fn judge(
    checklist: &Checklist,
    state: &State,
    current: &BTreeMap<String, String>,
    journal: &[Record],
) -> Verdict {
    let mut verdict = Verdict::default();
    for id in done_steps(checklist) {
        let Some(record) = state.steps.get(&id) else {
            continue;
        };
        let mut outside = Vec::new();
        for (path, recorded) in &record.fingerprints {
            let Some(now) = current.get(path) else {
                continue;
            };
            if is_task_file(path) || now == recorded {
                continue;
            }
            match attribution::owner(path, now, journal) {
                Some(by) => verdict.moved.push(Moved {
                    id,
                    path: path.clone(),
                    hash: now.clone(),
                    by,
                }),
                None => outside.push(path.clone()),
            }
        }
        if !outside.is_empty() {
            verdict.stale.push(StaleStep { id, files: outside });
        }
    }
    verdict
}

/// The done steps of `checklist` whose fingerprinted files changed out of band.
pub fn stale_steps(
    checklist: &Checklist,
    state: &State,
    current: &BTreeMap<String, String>,
    journal: &[Record],
) -> Vec<StaleStep> {
    judge(checklist, state, current, journal).stale
}

/// Moves the fingerprints of `moved` forward in `state`, and records on each step the changes
/// that came from a task other than `task`, one entry per (task, step) that made them.
pub fn move_forward(state: &mut State, task: &str, moved: &[Moved]) {
    for change in moved {
        let Some(record) = state.steps.get_mut(&change.id) else {
            continue;
        };
        record
            .fingerprints
            .insert(change.path.clone(), change.hash.clone());
        if change.by.task == task || change.by.task.is_empty() {
            continue;
        }
        let same = record
            .later_changes
            .iter_mut()
            .find(|c| c.task == change.by.task && c.step == change.by.step);
        match same {
            Some(entry) => {
                entry.at = entry.at.max(change.by.at);
                if !entry.files.contains(&change.path) {
                    entry.files.push(change.path.clone());
                    entry.files.sort();
                }
            }
            None => record.later_changes.push(LaterChange {
                task: change.by.task.clone(),
                step: change.by.step.clone(),
                at: change.by.at,
                files: vec![change.path.clone()],
            }),
        }
    }
}

/// How a later change reads in `status` and `check`: `changed by task <id> S2`.
pub fn later_change_text(change: &LaterChange) -> String {
    match &change.step {
        Some(step) => format!("changed by task {} {step}", change.task),
        None => format!("changed by task {}", change.task),
    }
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

    #[test]
    fn a_stale_step_whose_files_are_all_back_is_restored() {
        let list = todo_md::parse("- [~] S1 a\n  - stale: x\n- [~] S2 b\n- [~] S3 c\n- [x] S4 d\n")
            .unwrap();
        let mut state = State::new();
        let prints = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
                .collect()
        };
        for (id, files) in [
            (1, prints(&[("a", "h1"), ("b", "h2")])),
            (2, prints(&[("a", "h1"), ("c", "h3")])),
            (4, prints(&[("a", "h1")])),
        ] {
            state.steps.entry(StepId::top(id)).or_default().fingerprints = files;
        }
        // S3 has no record (ticked by hand): never restored by content.
        let current = prints(&[("a", "h1"), ("b", "h2"), ("c", "changed")]);
        assert_eq!(restored(&list, &state, &current), [StepId::top(1)]);
        // A file not observed is not taken as restored.
        let partial = prints(&[("a", "h1")]);
        assert!(restored(&list, &state, &partial).is_empty());
        assert!(watched_paths(&list, &state).contains("c"));
    }
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

    fn seen(items: &[(&str, &str, Option<&str>)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(p, h, _)| ((*p).to_owned(), (*h).to_owned()))
            .collect()
    }

    fn ids(stale: &[StaleStep]) -> Vec<String> {
        stale.iter().map(|s| s.id.to_string()).collect()
    }

    fn check(state: &State, now: &BTreeMap<String, String>, journal: &[Record]) -> Vec<StaleStep> {
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

    fn write(path: &str, hash: &str, task: &str) -> Record {
        Record::Write {
            path: path.into(),
            hash: hash.into(),
            at: t("2026-11-30T14:10:00Z"),
            task: task.into(),
            step: Some("S2".into()),
        }
    }

    #[test]
    fn content_tick_wrote_is_in_band_and_moves_the_fingerprint() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let now = seen(&[("src/a.rs", "w", LATER)]);
        let list = todo_md::parse(TODO).unwrap();
        let verdict = judge(&list, &st, &now, &[write("src/a.rs", "w", "A")]);
        assert!(verdict.stale.is_empty());
        assert_eq!(verdict.moved.len(), 1);
        assert_eq!(verdict.moved[0].hash, "w");
        // Same content, other file: not an explanation.
        assert_eq!(
            ids(&check(&st, &now, &[write("src/b.rs", "w", "A")])),
            ["S1"]
        );
        // Same file, other content: someone changed it after tick wrote it.
        assert_eq!(
            ids(&check(&st, &now, &[write("src/a.rs", "v", "A")])),
            ["S1"]
        );
    }

    #[test]
    fn a_deletion_tick_journalled_is_in_band() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let journal = [write("src/a.rs", "missing", "A")];
        assert!(check(&st, &seen(&[("src/a.rs", "missing", None)]), &journal).is_empty());
    }

    #[test]
    fn a_commands_change_counts_only_inside_its_scope() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let command = |scope: &str| Record::Command {
            start: t("2026-11-30T14:10:00Z"),
            end: t("2026-11-30T14:10:30Z"),
            task: "A".into(),
            step: Some("S3".into()),
            scope: vec![scope.into()],
            before: BTreeMap::from([("src/a.rs".into(), "h1".into())]),
            after: BTreeMap::from([("src/a.rs".into(), "x".into())]),
        };
        let now = seen(&[("src/a.rs", "x", LATER)]);
        assert!(check(&st, &now, &[command("src/**")]).is_empty());
        // A person's edit during a command for a step that has nothing to do with the file.
        assert_eq!(ids(&check(&st, &now, &[command("src/c.rs")])), ["S1"]);
    }

    #[test]
    fn a_change_another_task_made_is_recorded_on_the_step() {
        let mut st = state(&[("S1", &[("src/a.rs", "h1"), ("src/b.rs", "h2")])]);
        let now = seen(&[("src/a.rs", "w", LATER), ("src/b.rs", "v", LATER)]);
        let list = todo_md::parse(TODO).unwrap();
        let journal = [write("src/a.rs", "w", "B"), write("src/b.rs", "v", "B")];
        let verdict = judge(&list, &st, &now, &journal);
        assert!(verdict.stale.is_empty());
        move_forward(&mut st, "A", &verdict.moved);
        let record = &st.steps[&StepId::top(1)];
        assert_eq!(record.fingerprints["src/a.rs"], "w");
        assert_eq!(record.fingerprints["src/b.rs"], "v");
        assert_eq!(record.later_changes.len(), 1);
        assert_eq!(record.later_changes[0].files, ["src/a.rs", "src/b.rs"]);
        assert_eq!(
            later_change_text(&record.later_changes[0]),
            "changed by task B S2"
        );
        // Moved forward: the next look finds nothing.
        assert!(judge(&list, &st, &now, &journal).is_empty());
    }

    #[test]
    fn a_change_the_same_task_made_moves_the_fingerprint_quietly() {
        let mut st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let now = seen(&[("src/a.rs", "w", LATER)]);
        let list = todo_md::parse(TODO).unwrap();
        let verdict = judge(&list, &st, &now, &[write("src/a.rs", "w", "A")]);
        move_forward(&mut st, "A", &verdict.moved);
        assert_eq!(st.steps[&StepId::top(1)].fingerprints["src/a.rs"], "w");
        assert!(st.steps[&StepId::top(1)].later_changes.is_empty());
    }

    #[test]
    fn only_changed_prints_need_the_journal() {
        let st = state(&[("S1", &[("src/a.rs", "h1")])]);
        let list = todo_md::parse(TODO).unwrap();
        assert!(!any_changed(&list, &st, &seen(&[("src/a.rs", "h1", None)])));
        assert!(any_changed(&list, &st, &seen(&[("src/a.rs", "h2", None)])));
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
