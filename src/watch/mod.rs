//! Staleness (DESIGN §6): fingerprints of the files a done step relied on, the one
//! attribution rule (is a change tick's own?), the pure decision of which done steps changed
//! out of band, detection at the start of a command, the live watcher behind `tick watch` and
//! `tick run`, and the plan-freshness check of `tick status`.
//!
//! Start-up detection needs no watcher: it hashes the fingerprinted files of done steps and,
//! only when one differs, reads the workspace journal and asks [`stale::judge`] who made each
//! difference. The live watcher only says *when* to ask again.

pub mod attribution;
pub mod fingerprint;
pub mod freshness;
pub mod live;
pub mod stale;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{ErrorKind, Result};
use crate::fsx;
use crate::plan::StepStatus;
use crate::tasks::lock::Lock;
use crate::tasks::state::State;
use crate::tasks::{STATE_FILE, Store, Task, TaskRef, journal};

pub use fingerprint::fingerprint;
pub use stale::{StaleStep, Verdict};

/// How long a staleness check waits for the task lock. A run holds it for minutes, and a
/// read-only command must not hang on it: it reports what it found instead of marking.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// What a start-up check found, and whether it wrote the `[~]` markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refreshed {
    pub stale: Vec<StaleStep>,
    /// `false` when another tick process held the task: `stale` was detected, not marked.
    pub marked: bool,
}

/// The verdict on a loaded task now: which done steps are stale, and which fingerprints tick's
/// own later work moved. Reads the fingerprinted files, and the journal only when one of them
/// changed; writes nothing.
pub fn examine(store: &Store, task: &Task) -> Result<Verdict> {
    let paths = stale::watched_paths(&task.todo, &task.state);
    if paths.is_empty() {
        return Ok(Verdict::default());
    }
    let current = snapshot(store.root(), &paths);
    let restored = stale::restored(&task.todo, &task.state, &current);
    if !stale::any_changed(&task.todo, &task.state, &current) {
        return Ok(Verdict {
            restored,
            ..Verdict::default()
        });
    }
    let journal = journal::read_workspace(store.dir())?;
    Ok(Verdict {
        restored,
        ..stale::judge(&task.todo, &task.state, &current, &journal)
    })
}

/// The done steps of a loaded task that are stale now. Writes nothing.
pub fn detect(store: &Store, task: &Task) -> Result<Vec<StaleStep>> {
    Ok(examine(store, task)?.stale)
}

/// Whether a start-up check of `task` would write anything: stale markers, fingerprints
/// tick's own later work moved, or a commit a killed process left to finish.
pub fn needs_refresh(store: &Store, task: &Task) -> Result<bool> {
    // Not a write of the task's: what writes killed midway left goes whatever the answer.
    crate::fsx::remove_interrupted_writes(store.root());
    Ok(crate::tasks::tx::needs_cleanup(&task.dir) || !examine(store, task)?.is_empty())
}

/// Start-up detection for one task: under the task lock, marks the done steps whose files
/// changed outside tick `[~]` with a `stale:` line dated `now`, and moves forward the
/// fingerprints tick's own later work changed (recording changes made by other tasks), in one
/// transaction. Returns the steps it marked. Fails with [`ErrorKind::Busy`] when another tick
/// process holds the task; a caller that holds the lock itself uses [`refresh_locked`].
pub fn refresh(store: &Store, task: &TaskRef, now: DateTime<Utc>) -> Result<Vec<StaleStep>> {
    let lock = store.lock_task_within(task, "tick (staleness check)", LOCK_WAIT)?;
    refresh_locked(store, task, now, &lock)
}

/// [`refresh`] for a caller that already holds the task lock (the runner, `tick mark`).
pub fn refresh_locked(
    store: &Store,
    task: &TaskRef,
    now: DateTime<Utc>,
    _lock: &Lock,
) -> Result<Vec<StaleStep>> {
    // What a kill during a write left is tick's own litter, never a change to report. (Its
    // writer is gone, so no lock is needed for it.)
    crate::fsx::remove_interrupted_writes(store.root());
    let (stale, _) = store.transact(
        task,
        now,
        "files of done steps changed outside tick",
        |tx| {
            let verdict = examine(store, tx.base())?;
            apply(tx, &verdict, now)?;
            Ok(verdict.stale)
        },
    )?;
    Ok(stale)
}

/// Writes `verdict` into a transaction: the `[~]` markers and `stale:` lines, the moved
/// fingerprints and later changes, and ids for steps a person added (like every write of
/// TODO.md).
pub fn apply(
    tx: &mut crate::tasks::tx::Tx<'_>,
    verdict: &Verdict,
    now: DateTime<Utc>,
) -> Result<()> {
    if verdict.is_empty() {
        return Ok(());
    }
    let task = tx.base().id.clone();
    tx.record(|state| stale::move_forward(state, &task, &verdict.moved));
    for id in &verdict.restored {
        tx.set_status(*id, Some(StepStatus::Stale), StepStatus::Done, None)?;
    }
    if !verdict.stale.is_empty() {
        for step in &verdict.stale {
            let reason = stale::reason(&step.files, now);
            tx.set_status(
                step.id,
                Some(StepStatus::Done),
                StepStatus::Stale,
                Some(&reason),
            )?;
        }
        tx.assign_ids()?;
    }
    Ok(())
}

/// The paths a caller snapshots before and after a command it runs for the agent (with the
/// files of the step the command runs for, [`command_snapshot`]): the fingerprinted files of
/// every done step of every task in the workspace. Reads each task's state.yaml only.
pub fn snapshot_paths(store: &Store) -> Result<BTreeSet<String>> {
    let mut paths = BTreeSet::new();
    for id in store.task_ids()? {
        let path = store.dir().join(&id).join(STATE_FILE);
        let Some(text) = fsx::read_optional(&path)? else {
            continue;
        };
        let Ok(state) = serde_yaml::from_str::<State>(&text) else {
            continue;
        };
        paths.extend(
            state
                .steps
                .values()
                .filter(|record| record.status == Some(StepStatus::Done))
                .flat_map(|record| record.fingerprints.keys().cloned()),
        );
    }
    Ok(paths)
}

/// The content hash of each of `paths` (workspace-relative) below `root`, or
/// [`fingerprint::MISSING`].
pub fn snapshot(root: &Path, paths: &BTreeSet<String>) -> BTreeMap<String, String> {
    paths
        .iter()
        .map(|rel| (rel.clone(), fingerprint::hash_file(&root.join(rel))))
        .collect()
}

/// What a caller records around one command for step files `scope`: [`snapshot_paths`] plus
/// the files `scope` names now, hashed. Take it before and after the command, and journal
/// both (`journal::Record::Command`): the "after" one also covers files the command created.
pub fn command_snapshot(store: &Store, scope: &[String]) -> Result<BTreeMap<String, String>> {
    let mut paths = snapshot_paths(store)?;
    paths.extend(fingerprint(store.root(), scope, &[]).into_keys());
    Ok(snapshot(store.root(), &paths))
}

/// [`refresh`] for commands that only report: when another tick process holds the task, or
/// the lock cannot be taken at all (a read-only checkout), the stale steps are detected
/// without being marked.
pub fn refresh_or_detect(store: &Store, task: &TaskRef, now: DateTime<Utc>) -> Result<Refreshed> {
    match store.lock_task_within(task, "tick (staleness check)", LOCK_WAIT) {
        Ok(lock) => Ok(Refreshed {
            stale: refresh_locked(store, task, now, &lock)?,
            marked: true,
        }),
        Err(err) if matches!(err.kind, ErrorKind::Busy | ErrorKind::Internal) => {
            // Another tick may be writing: only what dead writers left goes.
            crate::fsx::remove_interrupted_writes(store.root());
            let loaded = store.load(task)?;
            Ok(Refreshed {
                stale: detect(store, &loaded)?,
                marked: false,
            })
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_cover_every_done_steps_prints_and_the_commands_scope() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::at(root.path());
        for (id, state) in [
            (
                "20261130-143012-a",
                "format: 1\nsteps:\n  S1:\n    status: done\n    fingerprints:\n      a.rs: h\n  S2:\n    status: pending\n    fingerprints:\n      p.rs: h\n",
            ),
            (
                "20261130-143013-b",
                "format: 1\nsteps:\n  S1:\n    status: done\n    fingerprints:\n      b.rs: h\n",
            ),
        ] {
            let dir = store.dir().join(id);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(STATE_FILE), state).unwrap();
        }
        let paths = snapshot_paths(&store).unwrap();
        assert_eq!(paths.iter().collect::<Vec<_>>(), ["a.rs", "b.rs"]);

        std::fs::write(root.path().join("a.rs"), "x").unwrap();
        std::fs::create_dir_all(root.path().join("gen")).unwrap();
        std::fs::write(root.path().join("gen/out.txt"), "y").unwrap();
        let seen = command_snapshot(&store, &["gen/**".to_owned()]).unwrap();
        assert_eq!(
            seen.keys().collect::<Vec<_>>(),
            ["a.rs", "b.rs", "gen/out.txt"]
        );
        assert_eq!(
            seen["a.rs"],
            fingerprint::hash_file(&root.path().join("a.rs"))
        );
        assert_eq!(seen["b.rs"], fingerprint::MISSING);
    }
}
