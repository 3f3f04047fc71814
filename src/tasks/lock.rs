//! One writer per task: an advisory lock on `.lock` in the task's folder (or in `.tasks/` for
//! the draft). The lock file names its holder, so the one who waits can be told who.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};

pub const LOCK_FILE: &str = ".lock";

/// Holders that keep the lock for long: others fail at once instead of waiting.
const LONG_HOLDERS: [&str; 2] = ["tick run", "tick watch"];

/// Held until dropped; the OS releases it if the process dies.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
}

impl Drop for Lock {
    /// The holder's note goes with the lock: a later waiter must not name a process that
    /// finished long ago (a kill leaves it; then it names the last holder, best effort).
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
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
    // A cloned repository may hold a `.lock` that links elsewhere (a person's file, which the
    // note below would overwrite) or is not a file: never follow it, never wait on it.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    let not_a_file = || {
        Error::from(super::error::Error::LockNotAFile(
            [name, "/", LOCK_FILE].concat(),
        ))
    };
    let mut file = match file {
        Ok(file) => file,
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => return Err(not_a_file()),
        Err(err) => return Err(Error::io("open the lock file", &path, &err)),
    };
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return Err(not_a_file());
    }
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
    Ok(Lock { file, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_that_links_elsewhere_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(LOCK_FILE)).unwrap();
        let err = acquire(dir.path(), ".tasks/t", "tick mark", Duration::ZERO).unwrap_err();
        assert_eq!(err.message, "`.tasks/t/.lock` is not a regular file");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }

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
