//! The journal of tick's own work, per workspace (`.tasks/journal.jsonl`, local and never
//! committed): every file a tool wrote, with the hash it wrote, and every command tick ran for
//! the agent, with the fingerprinted files' contents before and after it. The one attribution
//! rule (`watch::attribution`) reads it to tell tick's changes from everyone else's. Every
//! line is redacted like any text tick writes, file names included.
//!
//! Older versions kept one journal per task (`<task>/runs/journal.jsonl`, [`Entry`]); those
//! are still read, and [`append`] still takes their entries (it files writes and commands in
//! the workspace journal), so callers written against them keep working. Phase transitions
//! stay in the task's own log: they are for people reading it, not for attribution.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Phase, StepStatus};

pub const JOURNAL_FILE: &str = "journal.jsonl";

/// One line of the workspace journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// tick wrote `path` (workspace-relative, `/`-separated) with content hash `hash`, while
    /// running `step` of `task`.
    Write {
        path: String,
        hash: String,
        at: DateTime<Utc>,
        #[serde(default)]
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// tick ran a command (an agent's `bash`, a `verify`) for `step` of `task`, whose files
    /// are `scope` (the step's `files` patterns). `before` and `after` are the hashes of the
    /// snapshot paths (`watch::snapshot_paths`) just before it started and just after it
    /// ended.
    Command {
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        #[serde(default)]
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        scope: Vec<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        before: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        after: BTreeMap<String, String>,
    },
}

/// An entry of the older per-task journal, still accepted by [`append`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// tick wrote `path` (workspace-relative, `/`-separated) with content hash `hash`.
    Write {
        path: String,
        hash: String,
        at: DateTime<Utc>,
    },
    /// A command ran from `start` to `end`. Without snapshots it explains no change: a time
    /// window cannot tell the agent's change from a person's.
    Command {
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// The task moved from one phase to another, and why.
    Transition {
        at: DateTime<Utc>,
        from: Phase,
        to: Phase,
        reason: String,
    },
    /// The executor re-planned around `step` (`propose_replan`), and why: `version` of the
    /// plan waits for approval.
    Replanned {
        at: DateTime<Utc>,
        step: String,
        reason: String,
        version: usize,
    },
    /// A step's marker moved, and why: written by tick (`by_hand: false`, the reason its
    /// transaction gave), or found changed by a person in TODO.md since tick last wrote it
    /// (`by_hand: true`, seen at `at`).
    Step {
        at: DateTime<Utc>,
        step: String,
        from: StepStatus,
        to: StepStatus,
        reason: String,
        #[serde(default)]
        by_hand: bool,
    },
    /// A person stopped the run (Ctrl-C, `/stop`); `step` stays in progress when given.
    Interrupted {
        at: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        how: String,
    },
    /// A person asked for a revision of the plan (`tick plan --revise`): their feedback.
    Revised { at: DateTime<Utc>, feedback: String },
}

/// Logs the marker changes from `before` to `after` (each `(id, status)`), each with
/// `reason(id)`; `by_hand` when a person made them in TODO.md. Like [`transition`], failing to write it
/// never fails a command.
pub fn steps_changed(
    task_dir: &Path,
    before: &[(String, StepStatus)],
    after: &[(String, StepStatus)],
    reason: &dyn Fn(&str) -> String,
    by_hand: bool,
    at: DateTime<Utc>,
) {
    for (step, to) in after {
        let Some((_, from)) = before.iter().find(|(id, _)| id == step) else {
            continue;
        };
        if from != to {
            let _ = append_line(
                &path(task_dir),
                &Entry::Step {
                    at,
                    step: step.clone(),
                    from: *from,
                    to: *to,
                    reason: reason(step),
                    by_hand,
                },
            );
        }
    }
}

/// Logs that a person stopped the run of the task in `task_dir` (`how`: "Ctrl-C", "/stop").
pub fn interrupted(task_dir: &Path, step: Option<&str>, how: &str, at: DateTime<Utc>) {
    let _ = append_line(
        &path(task_dir),
        &Entry::Interrupted {
            at,
            step: step.map(str::to_owned),
            how: how.to_owned(),
        },
    );
}

/// Logs a person's revision request (`tick plan --revise "feedback"`) on the task in
/// `task_dir`.
pub fn revised(task_dir: &Path, feedback: &str, at: DateTime<Utc>) {
    let _ = append_line(
        &path(task_dir),
        &Entry::Revised {
            at,
            feedback: feedback.to_owned(),
        },
    );
}

/// The markers tick last wrote to a task's TODO.md (`runs/markers.json`, local): what a
/// person changed by hand since is what differs from it.
pub fn markers_path(task_dir: &Path) -> PathBuf {
    task_dir.join(crate::tasks::RUNS_DIR).join(MARKERS_FILE)
}

const MARKERS_FILE: &str = "markers.json";

/// The markers tick last wrote, `None` before the first write this version records.
pub fn last_markers(task_dir: &Path) -> Option<Vec<(String, StepStatus)>> {
    let text = fsx::read_capped(&markers_path(task_dir), fsx::MAX_LOCAL_LOG)
        .ok()
        .flatten()?;
    serde_json::from_str(&text).ok()
}

/// Keeps the markers tick just wrote (best effort: without it, hand edits are not logged).
pub fn keep_markers(task_dir: &Path, markers: &[(String, StepStatus)]) {
    if let Ok(text) = serde_json::to_string(markers) {
        let _ = fsx::write_atomic(&markers_path(task_dir), text.as_bytes());
    }
}

/// Logs a phase change of the task in `task_dir` (nothing when the phase stays). The log is
/// for people reading `runs/journal.jsonl`; failing to write it never fails a command.
pub fn transition(task_dir: &Path, from: Phase, to: Phase, reason: &str, at: DateTime<Utc>) {
    if from != to {
        let _ = append_line(
            &path(task_dir),
            &Entry::Transition {
                at,
                from,
                to,
                reason: reason.to_owned(),
            },
        );
    }
}

/// Logs the executor's re-plan around `step` of the task in `task_dir`, with its reason and
/// the plan version it wrote. Like [`transition`], failing to write it never fails a command.
pub fn replanned(
    task_dir: &Path,
    step: crate::plan::StepId,
    reason: &str,
    version: usize,
    at: DateTime<Utc>,
) {
    let _ = append_line(
        &path(task_dir),
        &Entry::Replanned {
            at,
            step: step.to_string(),
            reason: reason.to_owned(),
            version,
        },
    );
}

/// The task's own log (`<task>/runs/journal.jsonl`): transitions, and the entries of older
/// versions.
pub fn path(task_dir: &Path) -> PathBuf {
    task_dir.join(crate::tasks::RUNS_DIR).join(JOURNAL_FILE)
}

/// The workspace journal in the `.tasks/` folder `tasks_dir`.
pub fn workspace_path(tasks_dir: &Path) -> PathBuf {
    tasks_dir.join(JOURNAL_FILE)
}

/// Appends an entry of the older form for the task in `task_dir`: a write or a command goes to
/// the workspace journal (as the task's, with no snapshots), a transition to the task's log.
pub fn append(task_dir: &Path, entry: &Entry) -> Result<()> {
    let task = task_name(task_dir);
    let tasks_dir = task_dir.parent().unwrap_or(task_dir);
    match entry.clone() {
        Entry::Write { path, hash, at } => record(
            tasks_dir,
            &Record::Write {
                path,
                hash,
                at,
                task,
                step: None,
            },
        ),
        Entry::Command { start, end, step } => record(
            tasks_dir,
            &Record::Command {
                start,
                end,
                task,
                step,
                scope: Vec::new(),
                before: BTreeMap::new(),
                after: BTreeMap::new(),
            },
        ),
        _ => append_line(&path(task_dir), entry),
    }
}

/// Appends `record` to the workspace journal of the `.tasks/` folder `tasks_dir`.
pub fn record(tasks_dir: &Path, record: &Record) -> Result<()> {
    append_line(&workspace_path(tasks_dir), record)
}

/// Appends `records` to the workspace journal in one write and one flush (an undo journals
/// every file it puts back before it moves any).
pub fn record_all(tasks_dir: &Path, records: &[Record]) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let path = workspace_path(tasks_dir);
    fsx::create_dir_all(tasks_dir)?;
    let mut text = String::new();
    for record in records {
        text.push_str(
            &crate::redact::json(record, &[])
                .map_err(|err| super::error::Error::serialize("the journal", err))?,
        );
        text.push('\n');
    }
    let mut file = fsx::open_append(&path)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|err| Error::io("append to", &path, &err))
}

/// Appends one value as one JSON line. A crash can tear only the last line, which the readers
/// skip.
fn append_line(path: &Path, value: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent() {
        fsx::create_dir_all(dir)?;
    }
    // Paths are recorded as the redacted text everything else is: a token as a file name
    // (the keys of `before`/`after` too, through the line guard) never reaches the file.
    let mut line = crate::redact::json(value, &[])
        .map_err(|err| super::error::Error::serialize("the journal", err))?;
    line.push('\n');
    let mut file = fsx::open_append(path)?;
    // One `write` of the whole line: appends of concurrent processes do not interleave.
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|err| Error::io("append to", path, &err))
}

/// Every readable record of the workspace whose `.tasks/` folder is `tasks_dir`: the workspace
/// journal, then each task's older journal (its writes and commands, as that task's). A
/// missing journal is empty; a torn line is skipped.
pub fn read_workspace(tasks_dir: &Path) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = match fsx::read_optional(&workspace_path(tasks_dir))? {
        Some(text) => text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect(),
        None => Vec::new(),
    };
    for dir in fsx::subdirs(tasks_dir)? {
        records.extend(read_task_log(&dir)?);
    }
    Ok(records)
}

/// The writes and commands of one task's older journal, as workspace records.
fn read_task_log(task_dir: &Path) -> Result<Vec<Record>> {
    let Some(text) = fsx::read_optional(&path(task_dir))? else {
        return Ok(Vec::new());
    };
    let task = task_name(task_dir);
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
        .filter_map(|entry| match entry {
            Entry::Write { path, hash, at } => Some(Record::Write {
                path,
                hash,
                at,
                task: task.clone(),
                step: None,
            }),
            Entry::Command { start, end, step } => Some(Record::Command {
                start,
                end,
                task: task.clone(),
                step,
                scope: Vec::new(),
                before: BTreeMap::new(),
                after: BTreeMap::new(),
            }),
            _ => None,
        })
        .collect())
}

/// The entries of one task's own log, oldest first.
pub fn read(task_dir: &Path) -> Result<Vec<Entry>> {
    let Some(text) = fsx::read_capped(&path(task_dir), fsx::MAX_LOCAL_LOG)? else {
        return Ok(Vec::new());
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

fn task_name(task_dir: &Path) -> String {
    task_dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        "2026-11-30T14:30:12Z".parse().unwrap()
    }

    #[test]
    fn records_and_reads_back_skipping_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let write = Record::Write {
            path: "src/a.rs".into(),
            hash: "abc".into(),
            at: at(),
            task: "t1".into(),
            step: Some("S1".into()),
        };
        let command = Record::Command {
            start: at(),
            end: at(),
            task: "t1".into(),
            step: Some("S1".into()),
            scope: vec!["src/**".into()],
            before: BTreeMap::from([("src/a.rs".into(), "abc".into())]),
            after: BTreeMap::from([("src/a.rs".into(), "def".into())]),
        };
        record(dir.path(), &write).unwrap();
        record(dir.path(), &command).unwrap();
        let file = workspace_path(dir.path());
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("{\"kind\":\"wri");
        std::fs::write(&file, text).unwrap();
        assert_eq!(read_workspace(dir.path()).unwrap(), vec![write, command]);
    }

    #[test]
    fn older_entries_land_in_the_workspace_journal_as_the_tasks() {
        let tasks = tempfile::tempdir().unwrap();
        let task = tasks.path().join("20261130-143012-a");
        std::fs::create_dir_all(&task).unwrap();
        append(
            &task,
            &Entry::Write {
                path: "a".into(),
                hash: "h".into(),
                at: at(),
            },
        )
        .unwrap();
        transition(&task, Phase::Approved, Phase::Executing, "run", at());
        // An older version's per-task journal is read too.
        let older = Entry::Write {
            path: "b".into(),
            hash: "g".into(),
            at: at(),
        };
        let log = path(&task);
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str(&serde_json::to_string(&older).unwrap());
        text.push('\n');
        std::fs::write(&log, text).unwrap();

        let records = read_workspace(tasks.path()).unwrap();
        let writes: Vec<(&str, &str)> = records
            .iter()
            .filter_map(|r| match r {
                Record::Write { path, task, .. } => Some((path.as_str(), task.as_str())),
                Record::Command { .. } => None,
            })
            .collect();
        assert_eq!(
            writes,
            [("a", "20261130-143012-a"), ("b", "20261130-143012-a")]
        );
        assert!(matches!(read(&task).unwrap()[0], Entry::Transition { .. }));
    }
}
