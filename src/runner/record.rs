//! The one place the runner journals what tick itself did while a step ran: every file a tool
//! wrote (with the content hash it wrote) and every command it ran (a `bash` call or a verify
//! command). The staleness check and the live watcher use these records to tell tick's own
//! changes from a person's (DESIGN §6). Keep this narrow: the journal's mechanism changes
//! (content snapshots around each command) land here and nowhere else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::plan::StepId;
use crate::tasks::journal::{self, Entry};
use crate::tools::{CommandWindow, Effects};

/// How far a file's modification time may sit outside a command's window and still be the
/// command's (file systems stamp with a coarse clock).
const WINDOW_SLACK: Duration = Duration::from_secs(1);
/// How long after a command a deleted file may still be the command's doing.
const DELETE_SLACK: Duration = Duration::from_secs(3);

/// What tick did during one step, journaled as it happens and kept to answer "is this change
/// tick's own?" while the step runs.
#[derive(Debug)]
pub struct Recorder {
    task_dir: PathBuf,
    step: StepId,
    /// When the step started: a file not modified since is not news, whatever the watcher
    /// says (the polling fallback reports every file on its first look).
    started: SystemTime,
    written: BTreeMap<String, String>,
    windows: Vec<(SystemTime, SystemTime)>,
    /// When the command under way started, as the runner saw it.
    running: Option<SystemTime>,
}

impl Recorder {
    pub fn new(task_dir: &Path, step: StepId, started: SystemTime) -> Self {
        Recorder {
            task_dir: task_dir.to_path_buf(),
            step,
            started,
            written: BTreeMap::new(),
            windows: Vec::new(),
            running: None,
        }
    }

    /// A tool wrote `path` (workspace-relative) leaving content `hash`, at `at`.
    pub fn tool_wrote(&mut self, path: &str, hash: &str, at: DateTime<Utc>) {
        self.written.insert(path.to_owned(), hash.to_owned());
        // The journal is a help for later commands; failing to write it never fails a step.
        let _ = journal::append(
            &self.task_dir,
            &Entry::Write {
                path: path.to_owned(),
                hash: hash.to_owned(),
                at,
            },
        );
    }

    /// A command tick runs (a `bash` call, a verify command) is about to start.
    pub fn command_started(&mut self, at: SystemTime) {
        self.running = Some(at);
    }

    /// The command started last has ended; `window` is when its processes ran. The recorded
    /// window starts at the earlier of the two starts, so nothing the command did is missed.
    pub fn command_ended(&mut self, window: &CommandWindow) {
        let start = self
            .running
            .take()
            .map_or(window.start, |at| at.min(window.start));
        self.windows.push((start, window.end));
        let _ = journal::append(
            &self.task_dir,
            &Entry::Command {
                start: DateTime::<Utc>::from(start),
                end: DateTime::<Utc>::from(window.end),
                step: Some(self.step.to_string()),
            },
        );
    }

    /// What one tool call changed: its writes and its command window.
    pub fn tool_effects(&mut self, effects: &Effects, at: DateTime<Utc>) {
        for file in &effects.files_written {
            self.tool_wrote(&file.path, &file.blake3, at);
        }
        match &effects.command_window {
            Some(window) => self.command_ended(window),
            // A tool that ran no command after all (refused arguments) leaves no window.
            None => self.running = None,
        }
    }

    /// The files tools wrote during the step, with the last hash each was written with.
    pub fn written(&self) -> &BTreeMap<String, String> {
        &self.written
    }

    /// Whether a change the watcher saw to `path` (now with content `hash`, modified at
    /// `modified`, `None` when deleted) is tick's own, as of `now`. A file untouched since
    /// the step started is not a change at all.
    pub fn owns(
        &self,
        path: &str,
        hash: &str,
        modified: Option<SystemTime>,
        now: SystemTime,
    ) -> bool {
        if modified.is_some_and(|at| at < self.started) {
            return true;
        }
        if self.written.get(path).is_some_and(|own| own == hash) {
            return true;
        }
        self.windows.iter().any(|(start, end)| match modified {
            Some(at) => at + WINDOW_SLACK >= *start && at <= *end + WINDOW_SLACK,
            // Deleted: only a command that just ran can have done it.
            None => now
                .duration_since(*end)
                .is_ok_and(|ago| ago <= DELETE_SLACK),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::FileWritten;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    fn recorder(dir: &Path) -> Recorder {
        Recorder::new(dir, StepId::top(1), at(0))
    }

    #[test]
    fn a_tool_write_is_own_only_with_the_content_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = recorder(dir.path());
        let now: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        rec.tool_effects(
            &Effects {
                files_written: vec![FileWritten {
                    path: "a.txt".into(),
                    blake3: "h1".into(),
                }],
                command_window: None,
                exit_code: None,
            },
            now,
        );
        assert!(rec.owns("a.txt", "h1", Some(at(100)), at(100)));
        assert!(!rec.owns("a.txt", "h2", Some(at(100)), at(100)));
        assert!(!rec.owns("b.txt", "h1", Some(at(100)), at(100)));
        let journal = journal::read(dir.path()).unwrap();
        assert_eq!(
            journal,
            [Entry::Write {
                path: "a.txt".into(),
                hash: "h1".into(),
                at: now
            }]
        );
    }

    #[test]
    fn a_change_inside_a_command_window_is_own_and_outside_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = recorder(dir.path());
        rec.command_started(at(10));
        rec.command_ended(&CommandWindow {
            start: at(11),
            end: at(20),
        });
        assert!(rec.owns("x", "h", Some(at(10)), at(30)), "started early");
        assert!(rec.owns("x", "h", Some(at(20)), at(30)));
        assert!(
            !rec.owns("x", "h", Some(at(25)), at(30)),
            "after the window"
        );
        assert!(rec.owns("x", "h", None, at(22)), "deleted just after");
        assert!(!rec.owns("x", "h", None, at(40)), "deleted much later");
        assert!(
            rec.owns("x", "h", Some(at(0) - Duration::from_secs(5)), at(40)),
            "not modified since the step began"
        );
        let journal = journal::read(dir.path()).unwrap();
        assert_eq!(
            journal,
            [Entry::Command {
                start: DateTime::<Utc>::from(at(10)),
                end: DateTime::<Utc>::from(at(20)),
                step: Some("S1".into()),
            }]
        );
    }
}
