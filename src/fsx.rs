//! Every filesystem write tick makes goes through here: atomic (temp file, fsync, rename, with
//! the original's permissions kept), and every failure names its path.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use atomic_write_file::AtomicWriteFile;

use crate::error::{Error, Result};

/// Reads a UTF-8 text file. A missing file is `Ok(None)`.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::input(format!("`{}` is not valid UTF-8", path.display()))
                .hint("tick reads and writes UTF-8 text; the file was not changed")
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io("read", path, &err)),
    }
}

/// Reads a UTF-8 text file that must exist.
pub fn read(path: &Path) -> Result<String> {
    read_optional(path)?.ok_or_else(|| Error::input(format!("`{}` does not exist", path.display())))
}

/// Replaces `path` with `contents` atomically: a reader sees the old file or the new one, never
/// a mix, and a crash leaves the old file in place.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let fail = |err: std::io::Error| Error::io("write", path, &err);
    let mut file = AtomicWriteFile::options().open(path).map_err(fail)?;
    file.write_all(contents).map_err(fail)?;
    file.commit().map_err(fail)
}

/// Writes `path` only if it does not exist yet. Returns whether it wrote.
pub fn write_new(path: &Path, contents: &[u8]) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    write_atomic(path, contents)?;
    Ok(true)
}

pub fn create_dir_all(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|err| Error::io("create directory", path, &err))
}

pub fn remove_dir_all(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("remove", path, &err))
        }
        _ => Ok(()),
    }
}

pub fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("remove", path, &err))
        }
        _ => Ok(()),
    }
}

pub fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|err| {
        Error::internal(format!(
            "could not move `{}` to `{}`: {err}",
            from.display(),
            to.display()
        ))
    })
}

/// Flushes a directory's entries (a rename inside it) to disk.
pub fn sync_dir(path: &Path) -> Result<()> {
    fs::File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(|err| Error::io("sync", path, &err))
}

/// The subdirectories of `dir`, sorted by name. A missing directory has none.
pub fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("list", dir, &err)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| Error::io("list", dir, &err))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Whether `name` is a temporary file that an interrupted atomic write of one of `targets`
/// left behind: `.<target>.<6 alphanumerics>`.
pub fn is_stray_temp(name: &str, targets: &[&str]) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    targets.iter().any(|target| {
        rest.strip_prefix(target)
            .and_then(|suffix| suffix.strip_prefix('.'))
            .is_some_and(|suffix| {
                suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
            })
    })
}

/// Removes the temporary files that a killed writer left in `dir` (not recursive). Only files
/// older than `min_age` go, so a write in progress in another process is never disturbed.
pub fn remove_stray_temps(dir: &Path, targets: &[&str], min_age: Duration) -> Result<usize> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(0);
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_stray_temp(name, targets) {
            continue;
        }
        let old_enough = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= min_age);
        if old_enough {
            remove_file(&entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stray_temp_names() {
        let targets = ["TODO.md", "state.yaml"];
        assert!(is_stray_temp(".TODO.md.aB3xY9", &targets));
        assert!(is_stray_temp(".state.yaml.000000", &targets));
        assert!(!is_stray_temp("TODO.md", &targets));
        assert!(!is_stray_temp(".TODO.md.short", &targets));
        assert!(!is_stray_temp(".TODO.md.toolong1", &targets));
        assert!(!is_stray_temp(".PLAN.md.aB3xY9", &targets));
        assert!(!is_stray_temp(".TODO.md.ab-3x9", &targets));
    }

    #[test]
    fn atomic_write_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("TODO.md");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn stray_temps_are_removed_only_when_old() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".TODO.md.abc123"), "torn").unwrap();
        fs::write(dir.path().join("TODO.md"), "kept").unwrap();
        let targets = ["TODO.md"];
        assert_eq!(
            remove_stray_temps(dir.path(), &targets, Duration::from_secs(3600)).unwrap(),
            0
        );
        assert_eq!(
            remove_stray_temps(dir.path(), &targets, Duration::ZERO).unwrap(),
            1
        );
        assert!(dir.path().join("TODO.md").exists());
        assert!(!dir.path().join(".TODO.md.abc123").exists());
    }
}
