//! The one place the runner journals what tick itself did while a step ran: every file a tool
//! wrote (with the content hash it wrote) and every command it ran (a `bash` call, a verify
//! command) with content snapshots of the watched files taken just before and just after it
//! (`watch::command_snapshot`). The staleness check reads these records through the one
//! attribution rule (`watch::attribution::owner`, docs/ownership.md); the live watcher's
//! "is this change tick's own?" while the step runs asks the same rule here. No time windows.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::Clock;
use crate::plan::StepId;
use crate::tasks::Store;
use crate::tasks::journal::{self, Record};
use crate::tools::Effects;
use crate::watch::attribution;

/// What tick did during one step (or one verification), journaled as it happens and kept to
/// answer "is this change tick's own?" while the step runs.
#[derive(Debug)]
pub struct Recorder {
    store: Store,
    task: String,
    step: StepId,
    /// The files the step may change: its own `files`, and its parent's for a sub-step.
    scope: Vec<String>,
    clock: Clock,
    /// When the step started: a file not modified since is not news, whatever the watcher
    /// says (the polling fallback reports every file on its first look). Not an attribution:
    /// such a file did not change during the step at all.
    started: SystemTime,
    written: BTreeMap<String, String>,
    /// What this recorder journaled, for [`Recorder::owns`].
    records: Vec<Record>,
    /// Content of the files git sees changed, before and after each command: what a command
    /// changed outside the watched files (a deviation of the agent's, not a person's edit).
    dirty: Vec<(BTreeMap<String, String>, BTreeMap<String, String>)>,
    /// The command under way: when it started, its snapshot, and git's dirty files.
    running: Option<Running>,
    commands: usize,
}

#[derive(Debug)]
struct Running {
    start: chrono::DateTime<chrono::Utc>,
    before: Option<BTreeMap<String, String>>,
    dirty: BTreeMap<String, String>,
}

impl Recorder {
    /// A recorder for `step` of task `task`, whose files are `scope`.
    pub fn new(
        store: &Store,
        task: &str,
        step: StepId,
        scope: &[String],
        clock: Clock,
        started: SystemTime,
    ) -> Self {
        Recorder {
            store: store.clone(),
            task: task.to_owned(),
            step,
            scope: scope.to_vec(),
            clock,
            started,
            written: BTreeMap::new(),
            records: Vec::new(),
            dirty: Vec::new(),
            running: None,
            commands: 0,
        }
    }

    fn journal(&mut self, record: Record) {
        // The journal is a help for later commands; failing to write it never fails a step
        // (without the record, the change counts as out of band: verified again, not trusted).
        let _ = journal::record(self.store.dir(), &record);
        self.records.push(record);
    }

    /// A tool wrote `path` (workspace-relative) leaving content `hash`.
    pub fn tool_wrote(&mut self, path: &str, hash: &str) {
        self.written.insert(path.to_owned(), hash.to_owned());
        self.journal(Record::Write {
            path: path.to_owned(),
            hash: hash.to_owned(),
            at: self.clock.precise(),
            task: self.task.clone(),
            step: Some(self.step.to_string()),
        });
    }

    /// A command tick runs (a `bash` call, a verify command) is about to start: snapshots the
    /// watched files.
    pub fn command_started(&mut self) {
        let root = self.store.root();
        self.running = Some(Running {
            start: self.clock.precise(),
            before: crate::watch::command_snapshot(&self.store, &self.scope).ok(),
            dirty: super::changes::dirty_files(root).unwrap_or_default(),
        });
    }

    /// The command started last has ended: snapshots the watched files again and journals
    /// the command with both snapshots.
    pub fn command_ended(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        self.commands += 1;
        let after_dirty = super::changes::dirty_files(self.store.root()).unwrap_or_default();
        self.dirty.push((running.dirty, after_dirty));
        // Without a snapshot from before, nothing can be said about what the command changed.
        let (Some(before), Ok(after)) = (
            running.before,
            crate::watch::command_snapshot(&self.store, &self.scope),
        ) else {
            return;
        };
        self.journal(Record::Command {
            start: running.start,
            end: self.clock.precise(),
            task: self.task.clone(),
            step: Some(self.step.to_string()),
            scope: self.scope.clone(),
            before,
            after,
        });
    }

    /// What one tool call changed: its writes, and the end of the command it ran.
    pub fn tool_effects(&mut self, effects: &Effects) {
        for file in &effects.files_written {
            self.tool_wrote(&file.path, &file.blake3);
        }
        if effects.ran_command {
            self.command_ended();
        } else {
            // A tool that ran no command after all (refused arguments) leaves no record.
            self.running = None;
        }
    }

    /// The files tools wrote during the step, with the last hash each was written with.
    pub fn written(&self) -> &BTreeMap<String, String> {
        &self.written
    }

    /// How many commands ran (and ended) through this recorder.
    pub fn commands_run(&self) -> usize {
        self.commands
    }

    /// Whether a change the watcher saw to `path` (now with content `hash`, last modified at
    /// `modified`) is tick's own. The one rule (`attribution::owner`) decides for the watched
    /// files: a tool wrote exactly that content, or a command's snapshots show it produced
    /// that content in a file of its step. A watched file outside the step (a done step's
    /// fingerprinted file) that a command's snapshot saw change is a person's edit. Any other
    /// file a command's snapshot of git's changed files saw it produce is the command's (an
    /// agent's change outside its step, for the deviation check, never hidden as a person's).
    pub fn owns(&self, path: &str, hash: &str, modified: Option<SystemTime>) -> bool {
        if modified.is_some_and(|at| at < self.started) {
            return true;
        }
        if self.written.get(path).is_some_and(|own| own == hash)
            || attribution::owner(path, hash, &self.records).is_some()
        {
            return true;
        }
        let watched = self.records.iter().any(|record| match record {
            Record::Command { before, after, .. } => {
                before.contains_key(path) || after.contains_key(path)
            }
            Record::Write { .. } => false,
        });
        if watched {
            return false;
        }
        self.dirty.iter().any(|(before, after)| {
            after.get(path).map_or(
                hash == crate::watch::fingerprint::MISSING && before.contains_key(path),
                |a| a == hash,
            ) && before.get(path).is_none_or(|b| b != hash)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::FileWritten;
    use std::time::Duration;

    const TASK: &str = "20261130-143012-t";

    fn now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T14:30:12Z".parse().unwrap()
    }

    /// A workspace whose task has a done step `S1` fingerprinting `done.txt`, and a recorder
    /// for its `S2` (files: `gen/**`), started an hour ago.
    fn workspace() -> (tempfile::TempDir, Store, Recorder) {
        let root = tempfile::tempdir().unwrap();
        let store = Store::at(root.path());
        let dir = store.dir().join(TASK);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(crate::tasks::STATE_FILE),
            "format: 1\nsteps:\n  S1:\n    status: done\n    fingerprints:\n      done.txt: h\n",
        )
        .unwrap();
        std::fs::write(root.path().join("done.txt"), "v1\n").unwrap();
        let started = SystemTime::now() - Duration::from_secs(3600);
        let recorder = Recorder::new(
            &store,
            TASK,
            StepId::top(2),
            &["gen/**".to_owned()],
            Clock::fixed(now()),
            started,
        );
        (root, store, recorder)
    }

    fn hash(text: &str) -> String {
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }

    fn command_effects() -> Effects {
        Effects {
            files_written: Vec::new(),
            ran_command: true,
            exit_code: Some(0),
        }
    }

    #[test]
    fn a_tool_write_is_own_only_with_the_content_it_wrote_whenever_it_is_seen() {
        let (_root, store, mut rec) = workspace();
        rec.tool_effects(&Effects {
            files_written: vec![FileWritten {
                path: "a.txt".into(),
                blake3: "h1".into(),
            }],
            ran_command: false,
            exit_code: None,
        });
        // Seen a day later, the content still says whose it is.
        let late = Some(SystemTime::now() + Duration::from_secs(86_400));
        assert!(rec.owns("a.txt", "h1", late));
        assert!(!rec.owns("a.txt", "h2", late));
        assert!(!rec.owns("b.txt", "h1", late));
        assert_eq!(
            journal::read_workspace(store.dir()).unwrap(),
            [Record::Write {
                path: "a.txt".into(),
                hash: "h1".into(),
                at: now(),
                task: TASK.into(),
                step: Some("S2".into()),
            }]
        );
        assert_eq!(rec.commands_run(), 0);
    }

    #[test]
    fn a_commands_snapshots_decide_not_the_time_of_the_change() {
        let (root, store, mut rec) = workspace();
        rec.command_started();
        // During the command: it generates a file of its step, and a person saves the done
        // step's file. Both land inside the command's time.
        std::fs::create_dir_all(root.path().join("gen")).unwrap();
        std::fs::write(root.path().join("gen/out.txt"), "made\n").unwrap();
        std::fs::write(root.path().join("done.txt"), "v2 by hand\n").unwrap();
        let during = Some(SystemTime::now());
        rec.tool_effects(&command_effects());
        assert_eq!(rec.commands_run(), 1);

        assert!(
            !rec.owns("done.txt", &hash("v2 by hand\n"), during),
            "a done step's file outside the command's step is the person's"
        );
        // Seen long after the command ended: still the command's, by content.
        let late = Some(SystemTime::now() + Duration::from_secs(600));
        assert!(rec.owns("gen/out.txt", &hash("made\n"), late));
        // Changed again afterwards, to other content: not the command's.
        assert!(!rec.owns("gen/out.txt", &hash("edited\n"), during));

        let journal = journal::read_workspace(store.dir()).unwrap();
        let [
            Record::Command {
                task,
                step,
                scope,
                before,
                after,
                ..
            },
        ] = journal.as_slice()
        else {
            panic!("{journal:?}");
        };
        assert_eq!((task.as_str(), step.as_deref()), (TASK, Some("S2")));
        assert_eq!(scope, &["gen/**".to_owned()]);
        assert_eq!(before.get("done.txt"), Some(&hash("v1\n")));
        assert_eq!(after.get("done.txt"), Some(&hash("v2 by hand\n")));
        assert_eq!(after.get("gen/out.txt"), Some(&hash("made\n")));
        assert!(!before.contains_key("gen/out.txt"));
    }

    #[test]
    fn a_command_that_changes_an_unwatched_file_outside_its_step_is_the_commands() {
        let (root, _store, mut rec) = workspace();
        crate::git::output(root.path(), &["init", "-q"]).unwrap();
        rec.command_started();
        std::fs::write(root.path().join("elsewhere.txt"), "agent\n").unwrap();
        rec.tool_effects(&command_effects());
        let late = Some(SystemTime::now() + Duration::from_secs(600));
        // Outside the step, so a deviation to report, not a person's edit to keep quiet.
        assert!(rec.owns("elsewhere.txt", &hash("agent\n"), late));
        assert!(!rec.owns("elsewhere.txt", &hash("person\n"), late));
        // Not modified since the step began: not a change at all.
        let old = Some(SystemTime::now() - Duration::from_secs(7200));
        assert!(rec.owns("untouched.txt", "h", old));
    }
}
