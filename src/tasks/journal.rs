//! The journal of tick's own writes in a task: every file a tool wrote (with the hash it
//! wrote) and the time window of every command the runner ran. A change that matches neither
//! was made outside tick. Kept in `runs/journal.jsonl`, local and never committed.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::Phase;

pub const JOURNAL_FILE: &str = "journal.jsonl";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// tick wrote `path` (workspace-relative, `/`-separated) with content hash `hash`.
    Write {
        path: String,
        hash: String,
        at: DateTime<Utc>,
    },
    /// A command ran from `start` to `end`; anything it changed is tick's doing.
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
}

/// Logs a phase change of the task in `task_dir` (nothing when the phase stays). The log is
/// for people reading `runs/journal.jsonl`; failing to write it never fails a command.
pub fn transition(task_dir: &Path, from: Phase, to: Phase, reason: &str, at: DateTime<Utc>) {
    if from != to {
        let _ = append(
            task_dir,
            &Entry::Transition {
                at,
                from,
                to,
                reason: reason.to_owned(),
            },
        );
    }
}

pub fn path(task_dir: &Path) -> PathBuf {
    task_dir.join(crate::tasks::RUNS_DIR).join(JOURNAL_FILE)
}

/// Appends one entry as one line. A crash can tear only the last line, which [`read`] skips.
pub fn append(task_dir: &Path, entry: &Entry) -> Result<()> {
    let path = path(task_dir);
    if let Some(dir) = path.parent() {
        fsx::create_dir_all(dir)?;
    }
    let mut line = serde_json::to_string(entry)
        .map_err(|err| Error::internal(format!("could not write the journal: {err}")))?;
    line.push('\n');
    let mut file = fsx::open_append(&path)?;
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|err| Error::io("append to", &path, &err))
}

/// Every readable entry, oldest first. A missing journal is empty; a torn line is skipped.
pub fn read(task_dir: &Path) -> Result<Vec<Entry>> {
    let Some(text) = fsx::read_capped(&path(task_dir), fsx::MAX_LOCAL_LOG)? else {
        return Ok(Vec::new());
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_reads_back_skipping_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let at: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        let write = Entry::Write {
            path: "src/a.rs".into(),
            hash: "abc".into(),
            at,
        };
        let command = Entry::Command {
            start: at,
            end: at,
            step: Some("S1".into()),
        };
        append(dir.path(), &write).unwrap();
        append(dir.path(), &command).unwrap();
        let file = path(dir.path());
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("{\"kind\":\"wri");
        std::fs::write(&file, text).unwrap();
        assert_eq!(read(dir.path()).unwrap(), vec![write, command]);
    }
}
