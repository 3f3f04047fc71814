//! Every filesystem write tick makes goes through here: atomic (temp file, fsync, rename, with
//! the original's permissions kept), and every failure names its path.
//!
//! Every temporary file tick writes has one name: `.tick-tmp.<pid>.<6 alphanumerics>.<name>`
//! ([`TEMP_PREFIX`], [`parse_temp`]), beside the file it will replace. The live watcher never
//! reports this process's own as a change made outside tick; a workspace write notes the one
//! it makes under `.tasks/.local/writing/` while it lasts, so the next command removes what a
//! kill left ([`remove_interrupted_writes`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::Result;
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

/// Why a file could not be read (or a store file not be written where it is), with the facts
/// and the message; [`crate::error`] adds its exit code and what to do next.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{0}` does not exist")]
    Missing(String),
    #[error("could not read `{name}`: {source}")]
    Read {
        name: String,
        source: std::io::Error,
    },
    #[error("`{name}` is {what}, not a file")]
    NotAFile { name: String, what: &'static str },
    #[error("`{0}` is a link to a file outside the workspace")]
    LinkOutside(String),
    #[error("`{name}` is larger than {} KiB, more than tick reads of this file", .max_bytes / 1024)]
    TooLarge { name: String, max_bytes: u64 },
    #[error("`{name}:{line}:{col}`: invalid UTF-8")]
    InvalidUtf8 {
        name: String,
        line: usize,
        col: usize,
    },
    /// A log tick appends to is a link (`open_append`).
    #[error("`{0}` is a link, not a file")]
    AppendToLink(String),
    #[error("`{0}` is in a folder that links outside the workspace")]
    FolderOutside(String),
    #[error("could not move `{}` to `{}`: {source}", .from.display(), .to.display())]
    Move {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
}

/// Reads a UTF-8 text file of at most [`MAX_TEXT_FILE`] bytes. A missing file is `Ok(None)`.
/// See [`read_capped`] for what is refused.
pub fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    read_capped(path, MAX_TEXT_FILE)
}

/// Reads a UTF-8 text file that must exist.
pub fn read(path: &Path) -> Result<String, Error> {
    read_optional(path)?.ok_or_else(|| Error::Missing(shown(path)))
}

/// Reads a text file that may come from a cloned, hostile repository, so that reading it costs
/// nothing: only a regular file is read (a directory, FIFO, device or socket is an error, and
/// the open never blocks on a FIFO), a file under `.tasks/` only if it resolves inside the
/// workspace (no symlink out), at most `max_bytes` (checked before reading, and the read itself
/// is bounded, so `/dev/zero` behind a symlink cannot be read forever), and only as UTF-8
/// (an error names the line and column of the first bad byte). A missing file is `Ok(None)`.
/// Paths in errors are workspace-relative (from `.tasks/`) when the file is in the store.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Option<String>, Error> {
    read_named(path, &shown(path), max_bytes)
}

/// [`read_capped`], naming the file `name` in errors: for a file the person named (`tick plan
/// --from ../plan.md`), as they wrote it.
pub fn read_named(path: &Path, name: &str, max_bytes: u64) -> Result<Option<String>, Error> {
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
        Err(err) => return Err(read_failed(&name, err)),
    };
    let meta = file.metadata().map_err(|err| read_failed(&name, err))?;
    if !meta.is_file() {
        return Err(not_a_file(&name, meta.file_type()));
    }
    if let Some(root) = workspace_of(path) {
        let inside = match (path.canonicalize(), root.canonicalize()) {
            (Ok(real), Ok(root)) => real.starts_with(root),
            _ => false,
        };
        if !inside {
            return Err(Error::LinkOutside(name));
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
        .map_err(|err| read_failed(&name, err))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(&name, max_bytes));
    }
    String::from_utf8(bytes).map(Some).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        let (line, col) = line_col(&err.as_bytes()[..at]);
        Error::InvalidUtf8 {
            name: name.clone(),
            line,
            col,
        }
    })
}

/// The 1-based line and column (in characters) just after `valid`, a valid UTF-8 prefix.
fn line_col(valid: &[u8]) -> (usize, usize) {
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = valid.split(|&b| b == b'\n').count();
    let col = std::str::from_utf8(&valid[line_start..]).map_or(1, |last| last.chars().count() + 1);
    (line, col)
}

fn read_failed(name: &str, err: std::io::Error) -> Error {
    Error::Read {
        name: name.to_owned(),
        source: err,
    }
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
    Error::NotAFile {
        name: name.to_owned(),
        what,
    }
}

fn too_large(name: &str, max_bytes: u64) -> Error {
    Error::TooLarge {
        name: name.to_owned(),
        max_bytes,
    }
}

/// The start of the name of every temporary file tick writes.
pub const TEMP_PREFIX: &str = ".tick-tmp.";
/// Where, below a workspace, each write in progress notes its temporary file.
const WRITING_DIR: &str = ".tasks/.local/writing";
/// The longest file name most file systems take.
const NAME_MAX: usize = 255;

/// The name of a temporary file that will replace `target` (a file name): this process's id,
/// six alphanumerics, and as much of `target` as fits.
fn temp_name(target: &str, attempt: u32) -> String {
    let mut name = format!(
        "{TEMP_PREFIX}{}.{}.",
        std::process::id(),
        temp_suffix(attempt)
    );
    for c in target.chars() {
        if name.len() + c.len_utf8() > NAME_MAX {
            break;
        }
        name.push(c);
    }
    name
}

/// The writer's process id and the target's name (cut to fit) of a name [`temp_name`] made.
pub fn parse_temp(name: &str) -> Option<(u32, &str)> {
    let rest = name.strip_prefix(TEMP_PREFIX)?;
    let (pid, rest) = rest.split_once('.')?;
    let (suffix, target) = rest.split_once('.')?;
    let pid = pid.parse().ok()?;
    let valid = suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric());
    (valid && !target.is_empty()).then_some((pid, target))
}

/// Whether `name` is a temporary file this process is writing (or wrote and renamed).
pub fn is_own_temp(name: &str) -> bool {
    parse_temp(name).is_some_and(|(pid, _)| pid == std::process::id())
}

/// Whether the process `pid` is alive (or could be: one of another user's).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// Test-only crash injection (issue 26): [`crash::arm`] makes the Nth of the filesystem
/// operations that carry a [`crash::point`] (this module's writes, renames and removals, and
/// the undo's put-backs) stop there, as a kill would (a panic no cleanup code sees) or as a
/// failing disk would (an error). Per thread, so parallel tests do not see each other's; in
/// a non-test build a point is nothing.
#[cfg(test)]
pub mod crash {
    use std::cell::Cell;

    use crate::error::Result;

    /// How the armed point stops.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Mode {
        /// Unwinds with [`Killed`], past every `Err` path: what a kill -9 leaves.
        Kill,
        /// Returns an error from the operation.
        Fail,
    }

    /// The payload of [`Mode::Kill`]'s unwind.
    #[derive(Debug)]
    pub struct Killed;

    thread_local! {
        static ARMED: Cell<Option<(usize, Mode)>> = const { Cell::new(None) };
        static PASSED: Cell<usize> = const { Cell::new(0) };
    }

    /// Stops the `n`th point from now (0: the next one).
    pub fn arm(n: usize, mode: Mode) {
        ARMED.set(Some((n, mode)));
        PASSED.set(0);
    }

    /// Disarms; how many points were passed since [`arm`].
    pub fn disarm() -> usize {
        ARMED.set(None);
        PASSED.get()
    }

    pub fn point() -> Result<()> {
        let Some((left, mode)) = ARMED.get() else {
            return Ok(());
        };
        PASSED.set(PASSED.get() + 1);
        if left > 0 {
            ARMED.set(Some((left - 1, mode)));
            return Ok(());
        }
        ARMED.set(None);
        match mode {
            Mode::Kill => std::panic::resume_unwind(Box::new(Killed)),
            Mode::Fail => Err(crate::error::Error::internal("an injected failure")),
        }
    }
}

#[cfg(not(test))]
pub mod crash {
    #[inline]
    pub fn point() -> crate::error::Result<()> {
        Ok(())
    }
}

/// Replaces `path` with `contents` atomically: a reader sees the old file or the new one, never
/// a mix, and a crash leaves the old file in place. The temp file beside it has tick's name
/// ([`TEMP_PREFIX`]); the original's permissions are kept.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    crash::point()?;
    refuse_folder_outside(path)?;
    let fail = |err: std::io::Error| crate::error::Error::io("write", path, &err);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| fail(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let keep_mode = fs::symlink_metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o7777);
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let temp = dir.join(temp_name(&name, attempt));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(fail(err)),
        }
    };
    let written = (|| {
        if let Some(mode) = keep_mode {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        // Written, not yet in place: a kill here leaves the temp file.
        crash::point().map_err(|err| std::io::Error::other(err.message))?;
        fs::rename(&temp, path)
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(fail(err));
    }
    // The rename is durable once the directory is.
    #[allow(
        clippy::disallowed_methods,
        reason = "opens a directory to fsync it; nothing is read"
    )]
    if let Ok(dir) = fs::File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Notes, under `root`'s `.tasks/.local/writing/`, that `temp` (relative to `root`) is being
/// written, until the returned note is dropped. Without a `.tasks/` there is nowhere to note it
/// (and no tick command to clean up after): `None`.
fn note_writing(root: &Path, temp: &Path) -> Option<WritingNote> {
    if !root.join(crate::store_path::TASKS_DIR).is_dir() {
        return None;
    }
    let dir = root.join(WRITING_DIR);
    fs::create_dir_all(&dir).ok()?;
    if let Some(local) = dir.parent() {
        let _ = write_new(&local.join(".gitignore"), b"*\n");
    }
    let name = temp.file_name()?.to_string_lossy().into_owned();
    let note = dir.join(&name);
    fs::write(&note, temp.as_os_str().as_encoded_bytes()).ok()?;
    Some(WritingNote(note))
}

/// A note of a write in progress; removed when dropped (the write ended, one way or another).
struct WritingNote(PathBuf);

impl Drop for WritingNote {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Removes the temporary files that writes into the workspace at `root` left when tick was
/// killed during them (their writer is gone), with their notes. Returns how many went. Only a
/// file with tick's temp name is ever removed, by descriptor beneath the workspace.
pub fn remove_interrupted_writes(root: &Path) -> usize {
    let dir = root.join(WRITING_DIR);
    let Ok(entries) = fs::read_dir(&dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, _)) = name.to_str().and_then(parse_temp) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        if let Ok(Some(rel)) = read_capped(&entry.path(), 8192) {
            let rel = Path::new(&rel);
            let named = rel.file_name() == Some(name.as_os_str());
            let plain = rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if named && plain && remove_beneath(root, rel) {
                removed += 1;
            }
        }
        let _ = fs::remove_file(entry.path());
    }
    removed
}

/// Removes the file `rel` beneath `root`, never through a symbolic link. Whether it did.
fn remove_beneath(root: &Path, rel: &Path) -> bool {
    use nix::unistd::{UnlinkatFlags, unlinkat};
    let shown = rel.display().to_string();
    let Ok((parent, name)) = split_file(rel, &shown) else {
        return false;
    };
    let Ok(dir) = open_dir_beneath(root, &parent, &shown, false) else {
        return false;
    };
    unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir).is_ok()
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
            Some(libc::ELOOP) => Error::AppendToLink(shown(path)).into(),
            _ => crate::error::Error::io("open", path, &err),
        })?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        Ok(meta) => Err(not_a_file(&shown(path), meta.file_type()).into()),
        Err(err) => Err(crate::error::Error::io("open", path, &err)),
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
        Err(Error::FolderOutside(shown(path)).into())
    }
}

/// Why a write or read beneath a directory failed. The text is written for the model, naming
/// the file as it wrote it.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error(
        "`{path}` changed while it was being opened (a part of it became a symbolic link or stopped being a directory); nothing was written; try again"
    )]
    Moved { path: String },
    #[error("`{path}` cannot be created because `{file}` is a file, not a directory")]
    NotADirectory { path: String, file: String },
    #[error("`{path}` is a directory; give the path of a file inside it")]
    Directory { path: String },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: String },
    #[error("`{path}` is {len} bytes, more than the {max} bytes allowed")]
    TooLarge { path: String, len: u64, max: u64 },
    #[error("could not {op} `{path}`: {errno}")]
    Io {
        op: &'static str,
        path: String,
        errno: nix::errno::Errno,
    },
}

/// Opens the directory `relative` (plain names only) beneath `root` one component at a time,
/// each `openat` relative to the directory already held and with `O_NOFOLLOW`, creating what
/// is missing with `mkdirat` in that held directory. Nothing is looked up by name twice, so a
/// process swapping a directory for a symbolic link can make the open fail but never move it
/// out of `root`: the guarantee of `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, kept on
/// any kernel (and through `mkdir`, which `openat2` cannot do).
fn open_dir_beneath(
    root: &Path,
    relative: &Path,
    shown: &str,
    create: bool,
) -> std::result::Result<std::os::fd::OwnedFd, BeneathError> {
    use nix::errno::Errno;
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::{Mode, mkdirat};

    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let io = |op, errno| BeneathError::Io {
        op,
        path: shown.to_owned(),
        errno,
    };
    let mut dir = open(root, dir_flags, Mode::empty()).map_err(|e| io("open", e))?;
    let mut walked = PathBuf::new();
    for component in relative.components() {
        let std::path::Component::Normal(name) = component else {
            // The workspace policy hands over plain names only; anything else is a swap or a bug.
            return Err(BeneathError::Moved {
                path: shown.to_owned(),
            });
        };
        walked.push(name);
        let next = match openat(&dir, name, dir_flags, Mode::empty()) {
            Err(Errno::ENOENT) if create => {
                match mkdirat(&dir, name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(io("create directory", e)),
                }
                openat(&dir, name, dir_flags, Mode::empty())
            }
            other => other,
        };
        dir = match next {
            Ok(fd) => fd,
            // A symbolic link where a directory was: `O_NOFOLLOW` with `O_DIRECTORY` fails
            // with ELOOP or, on Linux, ENOTDIR.
            Err(Errno::ELOOP) => {
                return Err(BeneathError::Moved {
                    path: shown.to_owned(),
                });
            }
            Err(Errno::ENOTDIR) if is_symlink_at(&dir, name) => {
                return Err(BeneathError::Moved {
                    path: shown.to_owned(),
                });
            }
            Err(Errno::ENOTDIR) => {
                return Err(BeneathError::NotADirectory {
                    path: shown.to_owned(),
                    file: walked.display().to_string(),
                });
            }
            Err(e) => return Err(io("open", e)),
        };
    }
    Ok(dir)
}

fn is_symlink_at(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> bool {
    use nix::fcntl::AtFlags;
    use nix::sys::stat::{SFlag, fstatat};
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

/// Splits a workspace-relative file path into its directory and its name.
fn split_file(
    relative: &Path,
    shown: &str,
) -> std::result::Result<(PathBuf, PathBuf), BeneathError> {
    match (relative.parent(), relative.file_name()) {
        (Some(parent), Some(name)) => Ok((parent.to_path_buf(), PathBuf::from(name))),
        _ => Err(BeneathError::Directory {
            path: shown.to_owned(),
        }),
    }
}

/// What [`write_beneath`] replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    /// The size of the file that was there, `None` when the file is new.
    pub previous_len: Option<u64>,
}

/// Writes `contents` to `relative` beneath `root` atomically and without following any
/// symbolic link: the directory is opened by descriptor ([`open_dir_beneath`], creating
/// missing directories), a temp file is made in it with `O_EXCL | O_NOFOLLOW`, written,
/// fsynced and renamed over the name within that same directory, and the directory is
/// fsynced. The original's permissions are kept. `relative` is a path the workspace policy
/// resolved (no `..`, no symlink when it was checked); `shown` names it in errors.
pub fn write_beneath(
    root: &Path,
    relative: &Path,
    shown: &str,
    contents: &[u8],
) -> std::result::Result<Replaced, BeneathError> {
    use std::os::unix::fs::PermissionsExt;

    use nix::errno::Errno;
    use nix::fcntl::{AtFlags, OFlag, openat, renameat};
    use nix::sys::stat::{Mode, SFlag, fstatat};
    use nix::unistd::{UnlinkatFlags, unlinkat};

    let io = |op, errno| BeneathError::Io {
        op,
        path: shown.to_owned(),
        errno,
    };
    let (parent, name) = split_file(relative, shown)?;
    let dir = open_dir_beneath(root, &parent, shown, true)?;
    let previous = match fstatat(&dir, &name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => Some(stat),
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(io("look at", e)),
    };
    let kind = previous.map(|stat| SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT);
    if kind == Some(SFlag::S_IFDIR) {
        return Err(BeneathError::Directory {
            path: shown.to_owned(),
        });
    }
    let keep_mode = previous
        .filter(|_| kind == Some(SFlag::S_IFREG))
        .map(|stat| stat.st_mode & 0o7777);

    let file_name = name.to_string_lossy();
    let create =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut attempt = 0u32;
    let (temp, fd, note) = loop {
        let temp = PathBuf::from(temp_name(&file_name, attempt));
        // Noted before it exists, so that a kill at any moment leaves a note of it.
        let note = note_writing(root, &parent.join(&temp));
        match openat(&dir, &temp, create, Mode::from_bits_truncate(0o666)) {
            Ok(fd) => break (temp, fd, note),
            Err(Errno::EEXIST) if attempt < 100 => attempt += 1,
            Err(e) => return Err(io("create a temporary file for", e)),
        }
    };
    let mut file = fs::File::from(fd);
    let written = (|| {
        if let Some(mode) = keep_mode {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()
    })();
    drop(file);
    let renamed = written
        .map_err(|e| {
            io(
                "write",
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            )
        })
        .and_then(|()| renameat(&dir, &temp, &dir, &name).map_err(|e| io("replace", e)));
    if let Err(err) = renamed {
        let _ = unlinkat(&dir, &temp, UnlinkatFlags::NoRemoveDir);
        return Err(err);
    }
    drop(note);
    fs::File::from(dir).sync_all().map_err(|e| {
        io(
            "sync",
            Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        )
    })?;
    Ok(Replaced {
        previous_len: previous
            .filter(|_| kind == Some(SFlag::S_IFREG))
            .and_then(|stat| u64::try_from(stat.st_size).ok()),
    })
}

/// Six alphanumerics for a temp file's name, different per process, call and attempt, in the
/// form [`is_stray_temp`] recognises.
fn temp_suffix(attempt: u32) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&nanos.to_le_bytes());
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&CALLS.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update(&attempt.to_le_bytes());
    hasher.finalize().as_bytes()[..6]
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// Reads the regular file `relative` beneath `root` by descriptor, never through a symbolic
/// link (see [`open_dir_beneath`]) and never blocking on a FIFO: at most `max_bytes`. A
/// missing file is `Ok(None)`.
pub fn read_beneath(
    root: &Path,
    relative: &Path,
    shown: &str,
    max_bytes: u64,
) -> std::result::Result<Option<Vec<u8>>, BeneathError> {
    use std::io::Read;

    use nix::errno::Errno;
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;

    let io = |op, errno| BeneathError::Io {
        op,
        path: shown.to_owned(),
        errno,
    };
    let (parent, name) = split_file(relative, shown)?;
    let dir = match open_dir_beneath(root, &parent, shown, false) {
        Err(BeneathError::Io {
            errno: Errno::ENOENT,
            ..
        }) => return Ok(None),
        other => other?,
    };
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = match openat(&dir, &name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => {
            return Err(BeneathError::Moved {
                path: shown.to_owned(),
            });
        }
        Err(e) => return Err(io("open", e)),
    };
    let file = fs::File::from(fd);
    let as_errno = |e: std::io::Error| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    let meta = file.metadata().map_err(|e| io("read", as_errno(e)))?;
    if meta.is_dir() {
        return Err(BeneathError::Directory {
            path: shown.to_owned(),
        });
    }
    if !meta.is_file() {
        return Err(BeneathError::NotAFile {
            path: shown.to_owned(),
        });
    }
    if meta.len() > max_bytes {
        return Err(BeneathError::TooLarge {
            path: shown.to_owned(),
            len: meta.len(),
            max: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", as_errno(e)))?;
    if bytes.len() as u64 > max_bytes {
        return Err(BeneathError::TooLarge {
            path: shown.to_owned(),
            len: bytes.len() as u64,
            max: max_bytes,
        });
    }
    Ok(Some(bytes))
}

/// Opens `path` for reading only if it is a regular file, without blocking on a FIFO or
/// reading a device behind a link: for readers that stream a file themselves (hashing it,
/// paging through it) rather than take it whole through [`read_capped`].
pub fn open_regular(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
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
    fs::create_dir_all(path).map_err(|err| crate::error::Error::io("create directory", path, &err))
}

pub fn remove_dir_all(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(crate::error::Error::io("remove", path, &err))
        }
        _ => Ok(()),
    }
}

pub fn remove_file(path: &Path) -> Result<()> {
    crash::point()?;
    match fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(crate::error::Error::io("remove", path, &err))
        }
        _ => Ok(()),
    }
}

pub fn rename(from: &Path, to: &Path) -> Result<()> {
    crash::point()?;
    fs::rename(from, to).map_err(|err| {
        Error::Move {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            source: err,
        }
        .into()
    })
}

/// Flushes a directory's entries (a rename inside it) to disk.
pub fn sync_dir(path: &Path) -> Result<()> {
    #[allow(
        clippy::disallowed_methods,
        reason = "opens tick's own directory to sync it; nothing is read"
    )]
    fs::File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(|err| crate::error::Error::io("sync", path, &err))
}

/// The subdirectories of `dir`, sorted by name. A missing directory has none.
pub fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(crate::error::Error::io("list", dir, &err)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| crate::error::Error::io("list", dir, &err))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Whether `name` is a temporary file that an interrupted atomic write of one of `targets`
/// left behind: tick's own name ([`parse_temp`]), or `.<target>.<6 alphanumerics>` as tick
/// named them before.
pub fn is_stray_temp(name: &str, targets: &[&str]) -> bool {
    if let Some((_, target)) = parse_temp(name) {
        return targets.contains(&target);
    }
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
        let err = crate::error::Error::from(read_capped(&path, 9).unwrap_err());
        assert!(
            err.message.starts_with("`.tasks/t/TODO.md` is larger"),
            "{}",
            err.message
        );
        fs::write(&path, b"ok\nd\xc3\xa9j\xff\n").unwrap();
        let err = crate::error::Error::from(read_capped(&path, 100).unwrap_err());
        assert_eq!(err.message, "`.tasks/t/TODO.md:2:4`: invalid UTF-8");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let err = crate::error::Error::from(read_optional(&path).unwrap_err());
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
        assert!(matches!(err, Error::LinkOutside(_)), "{err}");
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
    fn only_regular_files_are_opened_for_streaming() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for path in [&fifo, &zero, &dir.path().to_path_buf()] {
            let err = open_regular(path).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{path:?}");
        }
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        assert!(open_regular(&file).is_ok());
        // Hashing a step's file goes through it too: no hang, no endless read.
        assert_eq!(
            crate::watch::fingerprint::hash_file(&zero),
            crate::watch::fingerprint::UNREADABLE
        );
        assert_eq!(
            crate::watch::fingerprint::hash_file(&fifo),
            crate::watch::fingerprint::UNREADABLE
        );
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
        let own = temp_name("TODO.md", 0);
        assert!(is_stray_temp(&own, &targets), "{own}");
        assert!(is_own_temp(&own));
        assert_eq!(parse_temp(&own).map(|(_, t)| t), Some("TODO.md"));
        assert!(!is_stray_temp(&temp_name("PLAN.md", 0), &targets));
        assert!(!is_own_temp(".tick-tmp.1.abcdef.TODO.md"));
        assert_eq!(parse_temp(".tick-tmp.x.abcdef.a"), None);
        assert_eq!(parse_temp(".tick-tmp.1.abc.a"), None);
        // A long name is cut to fit, on a character boundary.
        let long = temp_name(&"é".repeat(200), 0);
        assert!(
            long.len() <= NAME_MAX && parse_temp(&long).is_some(),
            "{long}"
        );
    }

    /// Issue 25, finding 10: a kill during a write into the workspace left its temp file for
    /// good. The write notes it; once its writer is gone the next command removes it (and
    /// only it).
    #[test]
    fn a_killed_writes_temp_file_is_removed_by_the_next_command() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join(".tasks")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        write_beneath(root, Path::new("src/a.txt"), "src/a.txt", b"x").unwrap();
        // Nothing is left by a write that ended.
        assert_eq!(fs::read_dir(root.join(WRITING_DIR)).unwrap().count(), 0);
        assert_eq!(fs::read_dir(root.join("src")).unwrap().count(), 1);
        // What a write killed midway leaves: the note and the temp file of a dead process.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        dead.wait().unwrap();
        let temp = format!("{TEMP_PREFIX}{pid}.aB3xY9.big.txt");
        fs::write(root.join("src").join(&temp), "torn").unwrap();
        fs::write(root.join(WRITING_DIR).join(&temp), format!("src/{temp}")).unwrap();
        // A live writer's is kept.
        let live = format!("{TEMP_PREFIX}{}.aB3xY9.other.txt", std::process::id());
        fs::write(root.join("src").join(&live), "in progress").unwrap();
        fs::write(root.join(WRITING_DIR).join(&live), format!("src/{live}")).unwrap();
        // A note naming another file removes nothing.
        let forged = format!("{TEMP_PREFIX}{pid}.zzzzzz.x");
        fs::write(root.join(WRITING_DIR).join(&forged), "src/a.txt").unwrap();
        assert_eq!(remove_interrupted_writes(root), 1);
        assert!(!root.join("src").join(&temp).exists());
        assert!(root.join("src").join(&live).exists());
        assert!(root.join("src/a.txt").exists());
        assert!(!root.join(WRITING_DIR).join(&forged).exists());
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
        fs::write(dir.path().join(temp_name("TODO.md", 0)), "torn").unwrap();
        fs::write(dir.path().join("TODO.md"), "kept").unwrap();
        let targets = ["TODO.md"];
        assert_eq!(
            remove_stray_temps(dir.path(), &targets, Duration::from_secs(3600)).unwrap(),
            0
        );
        assert_eq!(
            remove_stray_temps(dir.path(), &targets, Duration::ZERO).unwrap(),
            2
        );
        assert!(dir.path().join("TODO.md").exists());
        assert!(!dir.path().join(".TODO.md.abc123").exists());
    }
}
