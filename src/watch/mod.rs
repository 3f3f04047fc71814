//! Staleness (DESIGN §6): fingerprints of the files a done step relied on, the pure decision
//! of which done steps changed out of band, detection at the start of a command, the live
//! watcher behind `tick watch` and `tick run`, and the plan-freshness check of `tick status`.
//!
//! Start-up detection needs no watcher: it hashes the fingerprinted files of done steps and
//! asks [`stale::stale_steps`] whether tick's journal explains each difference. The live
//! watcher only says *when* to ask again.

pub mod fingerprint;
pub mod freshness;
pub mod live;
pub mod stale;

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::tasks::lock::{self, Lock};
use crate::tasks::{Store, TODO_FILE, Task, TaskRef, journal, todo_md};

pub use fingerprint::fingerprint;
pub use stale::StaleStep;

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

/// The done steps of a loaded task that are stale now. Reads the fingerprinted files and the
/// journal; writes nothing.
pub fn detect(store: &Store, task: &Task) -> Result<Vec<StaleStep>> {
    let paths = stale::watched_paths(&task.todo, &task.state);
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let current = fingerprint::observe(store.root(), &paths);
    let journal = journal::read(&task.dir)?;
    Ok(stale::stale_steps(
        &task.todo,
        &task.state,
        &current,
        &journal,
    ))
}

/// Start-up detection for one task: under the task lock, marks the done steps whose files
/// changed outside tick `[~]` with a `stale:` line dated `now`, writing TODO.md atomically and
/// nothing else. Returns the steps it marked. Fails with [`ErrorKind::Busy`] when another tick
/// process holds the task; a caller that holds the lock itself uses [`refresh_locked`].
pub fn refresh(store: &Store, task: &TaskRef, now: DateTime<Utc>) -> Result<Vec<StaleStep>> {
    let lock = lock::acquire(
        &task.dir,
        &store.rel(&task.dir),
        "tick (staleness check)",
        LOCK_WAIT,
    )?;
    refresh_locked(store, task, now, &lock)
}

/// [`refresh`] for a caller that already holds the task lock (the runner).
pub fn refresh_locked(
    store: &Store,
    task: &TaskRef,
    now: DateTime<Utc>,
    _lock: &Lock,
) -> Result<Vec<StaleStep>> {
    let todo_path = task.dir.join(TODO_FILE);
    // A person's editor may save TODO.md between our read and our write; the lock cannot stop
    // that. Re-read just before writing and start over if it moved, so their edit is kept.
    for _ in 0..3 {
        let loaded = store.load(task)?;
        let stale = detect(store, &loaded)?;
        if stale.is_empty() {
            return Ok(stale);
        }
        let text = stale::mark_stale(&loaded.todo_src, &stale, now)
            .map_err(|e| store.parse_error(&todo_path, &e))?;
        // Like every write of TODO.md, this one gives steps a person added their ids.
        let text = match todo_md::parse(&text) {
            Ok(list) if list.needs_ids() => todo_md::assign_ids(&text, &list).0,
            _ => text,
        };
        todo_md::parse(&text).map_err(|e| {
            Error::internal(format!(
                "marking stale steps in `{}` did not parse back: {e}",
                store.rel(&todo_path)
            ))
        })?;
        if fsx::read_optional(&todo_path)?.as_deref() != Some(loaded.todo_src.as_str()) {
            continue;
        }
        fsx::write_atomic(&todo_path, text.as_bytes())?;
        return Ok(stale);
    }
    Err(Error::new(
        ErrorKind::Busy,
        format!(
            "`{}` kept changing while tick read it",
            store.rel(&todo_path)
        ),
    )
    .hint("save it and try again; it was not changed"))
}

/// [`refresh`] for commands that only report: when another tick process holds the task, or
/// the lock cannot be taken at all (a read-only checkout), the stale steps are detected
/// without being marked.
pub fn refresh_or_detect(store: &Store, task: &TaskRef, now: DateTime<Utc>) -> Result<Refreshed> {
    match lock::acquire(
        &task.dir,
        &store.rel(&task.dir),
        "tick (staleness check)",
        LOCK_WAIT,
    ) {
        Ok(lock) => Ok(Refreshed {
            stale: refresh_locked(store, task, now, &lock)?,
            marked: true,
        }),
        Err(err) if matches!(err.kind, ErrorKind::Busy | ErrorKind::Internal) => {
            let loaded = store.load(task)?;
            Ok(Refreshed {
                stale: detect(store, &loaded)?,
                marked: false,
            })
        }
        Err(err) => Err(err),
    }
}
