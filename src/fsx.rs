//! Every filesystem write tick makes goes through here: atomic (temp file, fsync, rename, with
//! the original's permissions kept), and every failure names its path.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use atomic_write_file::AtomicWriteFile;

use crate::error::{Error, Result};
pub use crate::store_path::shown;
use crate::store_path::workspace_of;

/// The most tick reads of a markdown task file (TODO.md, PLAN.md) and of any other text file
/// it reads without a cap of its own (prompts, templates, the journal, transcripts).
pub const MAX_TEXT_FILE: u64 = 8 * 1024 * 1024;
/// The most tick reads of a task's `state.yaml`.
pub const MAX_STATE_FILE: u64 = 8 * 1024 * 1024;
/// The most tick reads of a config file (`.tasks/config.yaml`, the user's config).
pub const MAX_CONFIG_FILE: u64 = 1024 * 1024;
/// The most tick reads of a log it appends to itself (the journal, the planning session): many
/// entries, each already capped.
pub const MAX_LOCAL_LOG: u64 = 64 * 1024 * 1024;

/// Reads a UTF-8 text file of at most [`MAX_TEXT_FILE`] bytes. A missing file is `Ok(None)`.
/// See [`read_capped`] for what is refused.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    read_capped(path, MAX_TEXT_FILE)
}

/// Reads a UTF-8 text file that must exist.
pub fn read(path: &Path) -> Result<String> {
    read_optional(path)?.ok_or_else(|| Error::input(format!("`{}` does not exist", shown(path))))
}

/// Reads a text file that may come from a cloned, hostile repository, so that reading it costs
/// nothing: only a regular file is read (a directory, FIFO, device or socket is an error, and
/// the open never blocks on a FIFO), a file under `.tasks/` only if it resolves inside the
/// workspace (no symlink out), at most `max_bytes` (checked before reading, and the read itself
/// is bounded, so `/dev/zero` behind a symlink cannot be read forever), and only as UTF-8
/// (an error names the line and column of the first bad byte). A missing file is `Ok(None)`.
/// Paths in errors are workspace-relative (from `.tasks/`) when the file is in the store.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Option<String>> {
    read_named(path, &shown(path), max_bytes)
}

/// [`read_capped`], naming the file `name` in errors: for a file the person named (`tick plan
/// --from ../plan.md`), as they wrote it.
pub fn read_named(path: &Path, name: &str, max_bytes: u64) -> Result<Option<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let name = name.to_owned();
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_failed(&name, &err)),
    };
    let meta = file.metadata().map_err(|err| read_failed(&name, &err))?;
    if !meta.is_file() {
        return Err(not_a_file(&name, meta.file_type()));
    }
    if let Some(root) = workspace_of(path) {
        let inside = match (path.canonicalize(), root.canonicalize()) {
            (Ok(real), Ok(root)) => real.starts_with(root),
            _ => false,
        };
        if !inside {
            return Err(Error::input(format!(
                "`{name}` is a link to a file outside the workspace"
            ))
            .hint("tick reads its files only inside the workspace; replace the link with the file itself; nothing was changed"));
        }
    }
    if meta.len() > max_bytes {
        return Err(too_large(&name, max_bytes));
    }
    // Room for the whole file and the probe for more: a file of megabytes is read without
    // growing (and copying) the buffer.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| read_failed(&name, &err))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(&name, max_bytes));
    }
    String::from_utf8(bytes).map(Some).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        let (line, col) = line_col(&err.as_bytes()[..at]);
        Error::input(format!("`{name}:{line}:{col}`: invalid UTF-8"))
            .hint("tick reads and writes UTF-8 text; save the file as UTF-8; it was not changed")
    })
}

/// The 1-based line and column (in characters) just after `valid`, a valid UTF-8 prefix.
fn line_col(valid: &[u8]) -> (usize, usize) {
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = valid.split(|&b| b == b'\n').count();
    let col = std::str::from_utf8(&valid[line_start..]).map_or(1, |last| last.chars().count() + 1);
    (line, col)
}

fn read_failed(name: &str, err: &std::io::Error) -> Error {
    let error = Error::input(format!("could not read `{name}`: {err}"));
    if err.raw_os_error() == Some(libc::ELOOP) {
        return error
            .hint("the path is a symlink loop; replace it with the file; nothing was changed");
    }
    error.hint("nothing was changed")
}

fn not_a_file(name: &str, kind: fs::FileType) -> Error {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Error::input(format!("`{name}` is {what}, not a file")).hint(format!(
        "tick reads only regular files here; remove or rename `{name}` and restore the file (`git checkout -- {name}`); nothing was changed"
    ))
}

fn too_large(name: &str, max_bytes: u64) -> Error {
    Error::input(format!(
        "`{name}` is larger than {} KiB, more than tick reads of this file",
        max_bytes / 1024
    ))
    .hint("tick refuses files this large rather than read them into memory; shorten or restore the file; nothing was changed")
}

/// Replaces `path` with `contents` atomically: a reader sees the old file or the new one, never
/// a mix, and a crash leaves the old file in place.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    refuse_folder_outside(path)?;
    let fail = |err: std::io::Error| Error::io("write", path, &err);
    let mut file = AtomicWriteFile::options().open(path).map_err(fail)?;
    file.write_all(contents).map_err(fail)?;
    file.commit().map_err(fail)
}

/// Opens `path` to append to it (creating it), for logs tick keeps in the store: never
/// through a link, never into a folder that links outside the workspace, never a FIFO.
pub fn open_append(path: &Path) -> Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    refuse_folder_outside(path)?;
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => Error::input(format!("`{}` is a link, not a file", shown(path)))
                .hint("tick appends only to its own files; remove the link (tick makes a new file); nothing was written"),
            _ => Error::io("open", path, &err),
        })?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        Ok(meta) => Err(not_a_file(&shown(path), meta.file_type())),
        Err(err) => Err(Error::io("open", path, &err)),
    }
}

/// A file in the store is written only where the store really is: a folder under `.tasks/`
/// that is a link out of the workspace (a cloned repository can hold one) is refused, so
/// tick never writes a person's files elsewhere on the machine.
fn refuse_folder_outside(path: &Path) -> Result<()> {
    let (Some(root), Some(parent)) = (workspace_of(path), path.parent()) else {
        return Ok(());
    };
    let inside = match (parent.canonicalize(), root.canonicalize()) {
        (Ok(parent), Ok(root)) => parent.starts_with(root),
        // A folder that does not exist yet is created by the caller inside the store.
        (Err(_), _) | (_, Err(_)) => true,
    };
    if inside {
        Ok(())
    } else {
        let name = shown(path);
        Err(Error::input(format!(
            "`{name}` is in a folder that links outside the workspace"
        ))
        .hint("tick writes its files only inside the workspace; replace the link with a folder; nothing was written"))
    }
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

/// Whether `dir` holds a temporary file a killed writer of one of `targets` left (not
/// recursive): what [`remove_stray_temps`] would remove, for a reader deciding whether to take
/// the lock that cleaning needs.
pub fn has_stray_temps(dir: &Path, targets: &[&str]) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| is_stray_temp(name, targets))
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
    fn reads_are_bounded_and_located() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = dir.path().join(".tasks/t");
        fs::create_dir_all(&tasks).unwrap();
        let path = tasks.join("TODO.md");
        assert_eq!(read_capped(&path, 10).unwrap(), None);
        fs::write(&path, "0123456789").unwrap();
        assert_eq!(
            read_capped(&path, 10).unwrap().as_deref(),
            Some("0123456789")
        );
        let err = read_capped(&path, 9).unwrap_err();
        assert!(
            err.message.starts_with("`.tasks/t/TODO.md` is larger"),
            "{}",
            err.message
        );
        fs::write(&path, b"ok\nd\xc3\xa9j\xff\n").unwrap();
        let err = read_capped(&path, 100).unwrap_err();
        assert_eq!(err.message, "`.tasks/t/TODO.md:2:4`: invalid UTF-8");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let err = read_optional(&path).unwrap_err();
        assert_eq!(err.message, "`.tasks/t/TODO.md` is a directory, not a file");
        assert!(
            err.hints[0].contains("nothing was changed"),
            "{:?}",
            err.hints
        );
    }

    #[test]
    fn links_must_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join(".tasks")).unwrap();
        fs::write(dir.path().join("outside.md"), "secret").unwrap();
        fs::write(root.join("inside.md"), "fine").unwrap();
        let out = root.join(".tasks/out.md");
        std::os::unix::fs::symlink(dir.path().join("outside.md"), &out).unwrap();
        let err = read_optional(&out).unwrap_err();
        assert!(
            err.message.contains("outside the workspace"),
            "{}",
            err.message
        );
        let ok = root.join(".tasks/in.md");
        std::os::unix::fs::symlink(root.join("inside.md"), &ok).unwrap();
        assert_eq!(read_optional(&ok).unwrap().as_deref(), Some("fine"));
        // Outside a store there is no workspace to stay in: the person named the file.
        assert_eq!(
            read_optional(&dir.path().join("outside.md"))
                .unwrap()
                .as_deref(),
            Some("secret")
        );
    }

    #[test]
    fn nothing_is_written_through_a_folder_or_file_that_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        let task = dir.path().join("repo/.tasks/t");
        fs::create_dir_all(&task).unwrap();
        std::os::unix::fs::symlink(&outside, task.join("runs")).unwrap();
        let err = write_atomic(&task.join("runs/x.jsonl"), b"log").unwrap_err();
        assert_eq!(
            err.message,
            "`.tasks/t/runs/x.jsonl` is in a folder that links outside the workspace"
        );
        let err = open_append(&task.join("runs/journal.jsonl")).unwrap_err();
        assert!(err.message.contains("links outside"), "{}", err.message);
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);

        let victim = outside.join("victim.txt");
        fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, task.join("journal.jsonl")).unwrap();
        let err = open_append(&task.join("journal.jsonl")).unwrap_err();
        assert_eq!(
            err.message,
            "`.tasks/t/journal.jsonl` is a link, not a file"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        // Inside the store, all is as before.
        write_atomic(&task.join("TODO.md"), b"ok").unwrap();
        let mut log = open_append(&task.join("log.jsonl")).unwrap();
        std::io::Write::write_all(&mut log, b"x\n").unwrap();
    }

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
