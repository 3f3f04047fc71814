//! One writer per task: an advisory lock on `.lock` in the task's folder (or in `.tasks/` for
//! the draft). The lock file names its holder, so the one who waits can be told who.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};

pub const LOCK_FILE: &str = ".lock";

/// Holders that keep the lock for long: others fail at once instead of waiting.
const LONG_HOLDERS: [&str; 2] = ["tick run", "tick watch"];

/// Held until dropped; the OS releases it if the process dies.
#[derive(Debug)]
pub struct Lock {
    _file: File,
    path: PathBuf,
}

impl Lock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes the lock in `dir` for `holder` (like `tick mark`). If another process holds it, tries
/// again until `wait` has passed, then fails with a message naming the holder and `name`, the
/// folder as the person knows it (`.tasks/<id>`, not an absolute path).
pub fn acquire(dir: &Path, name: &str, holder: &str, wait: Duration) -> Result<Lock> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|err| Error::io("open the lock file", &path, &err))?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                let mut who = String::new();
                let _ = file.seek(SeekFrom::Start(0));
                let _ = file.read_to_string(&mut who);
                let who = who.trim();
                // A run holds the lock for minutes: waiting for it would only look like a hang.
                let long = LONG_HOLDERS.iter().any(|h| who.starts_with(h));
                if !long && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(25));
                    continue;
                }
                let who = if who.is_empty() {
                    "another tick process".to_owned()
                } else {
                    format!("`{who}`")
                };
                return Err(
                    Error::new(ErrorKind::Busy, format!("{who} is working on `{name}`")).hint(
                        "wait for it to finish (or stop it), then try again; nothing was changed",
                    ),
                );
            }
            Err(TryLockError::Error(err)) => {
                return Err(Error::io("lock", &path, &err));
            }
        }
    }
    // Best effort: the note only makes the waiting side's message better.
    let _ = file.set_len(0);
    let _ = file.seek(SeekFrom::Start(0));
    let _ = write!(file, "{holder} (pid {})", std::process::id());
    let _ = file.flush();
    Ok(Lock { _file: file, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path(), "x", "tick run", Duration::ZERO).unwrap();
        let err = acquire(dir.path(), "x", "tick mark", Duration::from_millis(60)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Busy);
        assert!(err.message.contains("`tick run (pid "), "{}", err.message);
        assert!(
            err.message.ends_with(" is working on `x`"),
            "{}",
            err.message
        );
        drop(first);
        acquire(dir.path(), "x", "tick mark", Duration::ZERO).unwrap();
    }
}
