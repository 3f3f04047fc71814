//! Tamper detection: what changed, during a step, in the files that decide what tick does
//! next or what the person's own git runs (`.tasks/`, `.git` itself, `.git/config`,
//! `.git/hooks/`, `.git/commondir`, `.git/config.worktree`, and the git files of the work
//! tree: `.gitmodules`, each submodule's `.git` with its git directory's `config` and
//! `hooks/`, the files `include.path` names; see [`super::gitfiles`]) and was not written by
//! tick.
//!
//! The sandbox makes these read-only for the agent's commands; this is the check that holds
//! without it (`--no-sandbox`), or if a layer fails (a hard link into `.git/` made before
//! the run is one the sandbox cannot see). The runner takes a [`Snapshot`] before each of the
//! agent's commands and one after, and [`diff`] names every change tick did not make itself;
//! [`restore`] then puts each path back as the first snapshot had it (which is why it keeps
//! the content of small files), so the person's next `git status` does not run what was
//! planted. A step with such a change is not ticked and the run stops, naming them. Nothing
//! is read from the tampered files to decide that: only their hashes are compared.
//!
//! Left out: a task's `runs/` (transcripts and the journal, which tick appends to during the
//! step), the workspace journal `.tasks/journal.jsonl` (appended to around every command) and
//! `.lock` files.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::watch::fingerprint::{self, MISSING};

/// At most this many entries are looked at; a tree larger than that is an error, not a
/// long wait.
const MAX_ENTRIES: usize = 20_000;
/// At most this deep below a watched directory.
const MAX_DEPTH: usize = 16;
/// Files up to this size are kept whole, so that they can be put back.
const MAX_KEPT_FILE: u64 = 1024 * 1024;
/// At most this much content is kept in all.
const MAX_KEPT: u64 = 16 * 1024 * 1024;

/// The watched files of one workspace at one moment: workspace-relative path (with `.git/…`
/// as seen from the workspace, also for a worktree whose git directory lives elsewhere) →
/// blake3 hex of the content, `symlink:<target>`, or `special:<kind>` for a FIFO, socket or
/// device (never opened).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<String, String>,
    /// Where it looked.
    places: Vec<Place>,
    /// Where each path is, and what [`restore`] needs to put it back.
    kept: BTreeMap<String, Kept>,
    kept_bytes: u64,
}

/// A file, or a tree walked whole, that a snapshot looks at, with its name for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    path: PathBuf,
    rel: String,
    tree: bool,
}

/// Where a snapshot of `root` looks: `.tasks/`, `.git` itself, the common git directory's
/// `config` and `hooks/`, the git directory's `commondir` and `config.worktree`, and the git
/// files of the work tree, with each submodule's own `config` and `hooks/`.
fn watched(root: &Path) -> Vec<Place> {
    let place = |path: PathBuf, rel: &str, tree: bool| Place {
        path,
        rel: rel.to_owned(),
        tree,
    };
    let dirs = super::git_dirs(root);
    let git_dir = dirs.get(1).cloned().unwrap_or_else(|| root.join(".git"));
    let common = dirs.last().cloned().unwrap_or_else(|| root.join(".git"));
    let mut places = vec![
        place(root.join(".tasks"), ".tasks", true),
        place(root.join(".git"), ".git", false),
        place(common.join("config"), ".git/config", false),
        place(common.join("hooks"), ".git/hooks", true),
        place(git_dir.join("commondir"), ".git/commondir", false),
        place(
            git_dir.join("config.worktree"),
            ".git/config.worktree",
            false,
        ),
    ];
    let real = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let rel = |path: &Path| {
        path.strip_prefix(&real)
            .map_or_else(|_| path.display().to_string(), |r| r.display().to_string())
    };
    for file in super::gitfiles::in_work_tree(&real) {
        places.push(place(file.path.clone(), &rel(&file.path), false));
        // The submodule's own git directory: `.git/modules/<name>`, or its `.git`.
        let Some(dir) = file.path.parent().filter(|_| file.submodule) else {
            continue;
        };
        if let Some(inner) = super::git_dirs(dir).last().filter(|d| d.is_dir()) {
            let inner = fs::canonicalize(inner).unwrap_or_else(|_| inner.clone());
            places.push(place(
                inner.join("config"),
                &rel(&inner.join("config")),
                false,
            ));
            places.push(place(inner.join("hooks"), &rel(&inner.join("hooks")), true));
        }
    }
    places
}

/// One watched path: where it is, and its content and mode when it is a small regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kept {
    path: PathBuf,
    content: Option<(Vec<u8>, u32)>,
}

/// How one watched path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Removed,
    Modified,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Modified => "modified",
        }
    }
}

/// A change tick did not make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tampered {
    /// Workspace-relative, like `.git/hooks/pre-commit` or `.tasks/<task>/TODO.md`.
    pub path: String,
    pub change: Change,
    /// What [`restore`] did about it; `None` before it ran.
    pub repair: Option<Repair>,
}

/// How a tampered path was put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Its content (or link) and mode are as before the command.
    PutBack,
    /// It did not exist before, and is gone again.
    Removed,
    /// It could not be: why.
    Failed(String),
}

impl std::fmt::Display for Tampered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.path, self.change.as_str())?;
        match &self.repair {
            None => Ok(()),
            Some(Repair::PutBack) => write!(f, " (put back as it was)"),
            Some(Repair::Removed) => write!(f, " (removed)"),
            Some(Repair::Failed(why)) => write!(f, " (could not be put back: {why})"),
        }
    }
}

impl Snapshot {
    /// Hashes every file under `root/.tasks/` and `.git/hooks/`, `.git` itself (a worktree's
    /// file), `.git/config`, `.git/commondir` and `.git/config.worktree` (which git reads when
    /// they appear), and the git files of the work tree.
    pub fn take(root: &Path) -> io::Result<Snapshot> {
        Snapshot::take_with(watched(root))
    }

    /// [`Snapshot::take`] after a command, looking also where `before` looked: a command that
    /// empties `.gitmodules` and rewrites a submodule's `.git` is still seen doing both.
    pub fn take_after(root: &Path, before: &Snapshot) -> io::Result<Snapshot> {
        let mut places = before.places.clone();
        for place in watched(root) {
            if !places.contains(&place) {
                places.push(place);
            }
        }
        Snapshot::take_with(places)
    }

    fn take_with(places: Vec<Place>) -> io::Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        let mut budget = MAX_ENTRIES;
        for place in &places {
            if place.tree {
                snapshot.walk(&place.path, &place.rel, 0, &mut budget)?;
            } else {
                snapshot.add(&place.path, &place.rel)?;
            }
        }
        snapshot.places = places;
        Ok(snapshot)
    }

    /// The paths and hashes, for messages and tests.
    pub fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    fn add(&mut self, path: &Path, rel: &str) -> io::Result<()> {
        let room = MAX_KEPT_FILE.min(MAX_KEPT - self.kept_bytes);
        let content = read_small(path, room)?;
        let hash = match &content {
            Some((bytes, _)) => Some(blake3::hash(bytes).to_hex().to_string()),
            None => entry_hash(path)?,
        };
        if let Some(hash) = hash {
            self.files.insert(rel.to_owned(), hash);
            self.kept_bytes += content.as_ref().map_or(0, |(b, _)| b.len() as u64);
            self.kept.insert(
                rel.to_owned(),
                Kept {
                    path: path.to_path_buf(),
                    content,
                },
            );
        }
        Ok(())
    }

    fn walk(&mut self, dir: &Path, rel: &str, depth: usize, budget: &mut usize) -> io::Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            // A directory replaced by a file (or a link) is recorded as what it is now.
            Err(_) => return self.add(dir, rel),
        };
        if depth > MAX_DEPTH {
            return Err(io::Error::other(format!(
                "`{rel}` is nested more than {MAX_DEPTH} levels deep"
            )));
        }
        for entry in entries {
            let entry = entry?;
            *budget = budget.checked_sub(1).ok_or_else(|| {
                io::Error::other(format!("more than {MAX_ENTRIES} files under `{rel}`"))
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child_rel = format!("{rel}/{name}");
            // The workspace journal (`.tasks/journal.jsonl`) is appended to like `runs/`.
            let workspace_journal = rel == ".tasks" && name == crate::tasks::journal::JOURNAL_FILE;
            if workspace_journal
                || (rel.starts_with(".tasks")
                    && (name == "runs" || name == crate::tasks::lock::LOCK_FILE))
            {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                self.walk(&entry.path(), &child_rel, depth + 1, budget)?;
            } else {
                self.add(&entry.path(), &child_rel)?;
            }
        }
        Ok(())
    }
}

/// The content and mode of the regular file at `path` (never through a final symlink, never
/// blocking on a FIFO swapped in), if it has at most `max` bytes.
fn read_small(path: &Path, max: u64) -> io::Result<Option<(Vec<u8>, u32)>> {
    // Missing, a symlink (ELOOP), a directory to walk: not a file to keep.
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
    else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > max {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(None);
    }
    Ok(Some((bytes, meta.permissions().mode())))
}

/// The hash of what is at `path` without following a final symlink, or `None` if nothing.
fn entry_hash(path: &Path) -> io::Result<Option<String>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let kind = meta.file_type();
    Ok(Some(if kind.is_symlink() {
        format!("symlink:{}", fs::read_link(path)?.display())
    } else if kind.is_file() {
        fingerprint::hash_file(path)
    } else if kind.is_dir() {
        "special:directory".to_owned()
    } else {
        "special:not a regular file".to_owned()
    }))
}

/// Every path whose entry differs between `before` and `after` and that tick did not write:
/// `tick_wrote(path, hash)` says whether tick itself left `hash` at `path` during the step
/// (`hash` is [`MISSING`] for a removal). Sorted by path.
pub fn diff(
    before: &Snapshot,
    after: &Snapshot,
    tick_wrote: &dyn Fn(&str, &str) -> bool,
) -> Vec<Tampered> {
    let mut changes = Vec::new();
    for (path, hash) in &after.files {
        let change = match before.files.get(path) {
            None => Change::Added,
            Some(old) if old != hash => Change::Modified,
            Some(_) => continue,
        };
        if !tick_wrote(path, hash) {
            changes.push(Tampered {
                path: path.clone(),
                change,
                repair: None,
            });
        }
    }
    for path in before.files.keys() {
        if !after.files.contains_key(path) && !tick_wrote(path, MISSING) {
            changes.push(Tampered {
                path: path.clone(),
                change: Change::Removed,
                repair: None,
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// Puts each of `changes` (from [`diff`]`(before, after, …)`) back as `before` had it: an
/// added path is removed, a modified or removed file gets its content and mode back (a
/// symlink its target). Writes are atomic (a new file renamed over the old one), so a hard
/// link that led into the file from elsewhere no longer does. Returns the changes with what
/// was done about each.
pub fn restore(before: &Snapshot, after: &Snapshot, changes: Vec<Tampered>) -> Vec<Tampered> {
    changes
        .into_iter()
        .map(|mut tampered| {
            let repair = match tampered.change {
                Change::Added => {
                    after
                        .kept
                        .get(&tampered.path)
                        .map(|now| match remove_added(&now.path) {
                            Ok(()) => Repair::Removed,
                            Err(err) if err.kind() == io::ErrorKind::NotFound => Repair::Removed,
                            Err(err) => Repair::Failed(err.to_string()),
                        })
                }
                Change::Modified | Change::Removed => before
                    .kept
                    .get(&tampered.path)
                    .map(|was| put_back(was, &before.files[&tampered.path])),
            };
            tampered.repair =
                Some(repair.unwrap_or_else(|| Repair::Failed("not in the snapshot".to_owned())));
            tampered
        })
        .collect()
}

/// Removes what a command added at a watched path: a file, a link, or (a submodule's `.git`,
/// a `.git` where there was none) a directory with what it holds.
fn remove_added(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// Writes `was` back at its path; `hash` is its entry in the snapshot.
fn put_back(was: &Kept, hash: &str) -> Repair {
    let result = if let Some((content, mode)) = &was.content {
        crate::fsx::write_atomic(&was.path, content)
            .map_err(|err| err.to_string())
            .and_then(|()| {
                fs::set_permissions(&was.path, fs::Permissions::from_mode(*mode))
                    .map_err(|err| err.to_string())
            })
    } else if let Some(target) = hash.strip_prefix("symlink:") {
        let _ = fs::remove_file(&was.path);
        std::os::unix::fs::symlink(target, &was.path).map_err(|err| err.to_string())
    } else {
        Err("it was larger than tick keeps, or not a regular file".to_owned())
    };
    match result {
        Ok(()) => Repair::PutBack,
        Err(why) => Repair::Failed(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::fs::symlink;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [".tasks/t1/runs", ".git/hooks"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::write(root.join(".tasks/config.yaml"), "model: m\n").unwrap();
        fs::write(root.join(".tasks/t1/TODO.md"), "- [ ] S1 a\n- [ ] S2 b\n").unwrap();
        fs::write(root.join(".tasks/t1/state.yaml"), "format: 1\n").unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        dir
    }

    fn never(_: &str, _: &str) -> bool {
        false
    }

    #[test]
    fn tampered_files_are_put_back_as_they_were() {
        let dir = workspace();
        let root = dir.path();
        let config = root.join(".git/config");
        std::fs::set_permissions(&config, fs::Permissions::from_mode(0o600)).unwrap();
        let outside = root.join("linked");
        fs::hard_link(&config, &outside).unwrap();
        let before = Snapshot::take(root).unwrap();
        let todo = fs::read(root.join(".tasks/t1/TODO.md")).unwrap();
        fs::write(&outside, "[core]\nfsmonitor = env\n").unwrap();
        fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nenv\n").unwrap();
        fs::remove_file(root.join(".tasks/t1/TODO.md")).unwrap();
        fs::remove_file(root.join(".tasks/config.yaml")).unwrap();
        symlink("/etc/passwd", root.join(".tasks/config.yaml")).unwrap();
        let after = Snapshot::take(root).unwrap();
        let restored = restore(&before, &after, diff(&before, &after, &never));
        let shown: Vec<String> = restored.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "`.git/config` modified (put back as it was)",
                "`.git/hooks/pre-commit` added (removed)",
                "`.tasks/config.yaml` modified (put back as it was)",
                "`.tasks/t1/TODO.md` removed (put back as it was)",
            ]
        );
        assert_eq!(Snapshot::take(root).unwrap().files(), before.files());
        assert_eq!(fs::read_to_string(&config).unwrap(), "[core]\n");
        assert_eq!(
            fs::metadata(&config).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read(root.join(".tasks/t1/TODO.md")).unwrap(), todo);
        // The link no longer leads into `.git/config`.
        assert_eq!(
            fs::read_to_string(&outside).unwrap(),
            "[core]\nfsmonitor = env\n"
        );
    }

    fn changes(list: &[Tampered]) -> Vec<(String, Change)> {
        list.iter().map(|t| (t.path.clone(), t.change)).collect()
    }

    #[test]
    fn nothing_changed_is_nothing_tampered() {
        let dir = workspace();
        let before = Snapshot::take(dir.path()).unwrap();
        let after = Snapshot::take(dir.path()).unwrap();
        // `.git` itself is one entry (a directory here).
        assert_eq!(before.files().len(), 6, "{:?}", before.files());
        assert!(diff(&before, &after, &never).is_empty());
    }

    #[test]
    fn every_kind_of_change_is_named() {
        let dir = workspace();
        let root = dir.path();
        let before = Snapshot::take(root).unwrap();
        fs::write(root.join(".tasks/t1/TODO.md"), "- [ ] S1 a\n- [x] S2 b\n").unwrap();
        fs::remove_file(root.join(".tasks/t1/state.yaml")).unwrap();
        fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nenv\n").unwrap();
        fs::write(root.join(".git/config"), "[core]\nfsmonitor = env\n").unwrap();
        fs::remove_file(root.join(".tasks/config.yaml")).unwrap();
        symlink("/etc/passwd", root.join(".tasks/config.yaml")).unwrap();
        fs::create_dir_all(root.join(".tasks/t2")).unwrap();
        fs::write(root.join(".tasks/t2/PLAN.md"), "x").unwrap();
        // Transcripts and locks are tick's business during a step.
        fs::write(root.join(".tasks/t1/runs/s1.jsonl"), "{}").unwrap();
        fs::write(root.join(".tasks/t1/.lock"), "pid").unwrap();
        fs::write(root.join(".tasks/journal.jsonl"), "{}\n").unwrap();
        let after = Snapshot::take(root).unwrap();
        assert_eq!(
            changes(&diff(&before, &after, &never)),
            [
                (".git/config".to_owned(), Change::Modified),
                (".git/hooks/pre-commit".to_owned(), Change::Added),
                (".tasks/config.yaml".to_owned(), Change::Modified),
                (".tasks/t1/TODO.md".to_owned(), Change::Modified),
                (".tasks/t1/state.yaml".to_owned(), Change::Removed),
                (".tasks/t2/PLAN.md".to_owned(), Change::Added),
            ]
        );
        assert_eq!(after.files()[".tasks/config.yaml"], "symlink:/etc/passwd");
    }

    #[test]
    fn what_tick_wrote_is_not_tampering() {
        let dir = workspace();
        let root = dir.path();
        let before = Snapshot::take(root).unwrap();
        let todo = "- [x] S1 a\n- [ ] S2 b\n";
        fs::write(root.join(".tasks/t1/TODO.md"), todo).unwrap();
        fs::remove_file(root.join(".tasks/t1/state.yaml")).unwrap();
        fs::write(root.join(".git/hooks/post-commit"), "x").unwrap();
        let after = Snapshot::take(root).unwrap();
        let todo_hash = blake3::hash(todo.as_bytes()).to_hex().to_string();
        let wrote = |path: &str, hash: &str| {
            (path == ".tasks/t1/TODO.md" && hash == todo_hash)
                || (path == ".tasks/t1/state.yaml" && hash == MISSING)
        };
        assert_eq!(
            changes(&diff(&before, &after, &wrote)),
            [(".git/hooks/post-commit".to_owned(), Change::Added)]
        );
        // The same path with other content than tick wrote is tampering.
        fs::write(root.join(".tasks/t1/TODO.md"), "- [x] S1 a\n- [x] S2 b\n").unwrap();
        let after = Snapshot::take(root).unwrap();
        assert!(
            changes(&diff(&before, &after, &wrote))
                .contains(&(".tasks/t1/TODO.md".to_owned(), Change::Modified))
        );
    }

    #[test]
    fn a_worktree_is_watched_in_its_common_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main/.git");
        fs::create_dir_all(main.join("hooks")).unwrap();
        fs::create_dir_all(main.join("worktrees/wt")).unwrap();
        fs::write(main.join("config"), "[core]\n").unwrap();
        fs::write(main.join("worktrees/wt/commondir"), "../..\n").unwrap();
        let wt = dir.path().join("wt");
        fs::create_dir_all(&wt).unwrap();
        fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join("worktrees/wt").display()),
        )
        .unwrap();
        let before = Snapshot::take(&wt).unwrap();
        assert!(before.files().contains_key(".git/config"));
        fs::write(main.join("hooks/pre-commit"), "x").unwrap();
        let after = Snapshot::take(&wt).unwrap();
        assert_eq!(
            changes(&diff(&before, &after, &never)),
            [(".git/hooks/pre-commit".to_owned(), Change::Added)]
        );
    }

    /// Issue 25, finding 6: what makes the person's git read another configuration (a
    /// `commondir` in the git directory, a submodule's gitfile, a file `include.path` names,
    /// `.gitmodules`) was not watched, so without the sandbox a command could plant it.
    #[test]
    fn what_points_git_elsewhere_is_watched_and_put_back() {
        let dir = workspace();
        let root = dir.path();
        fs::write(
            root.join(".git/config"),
            "[core]\n[include]\n\tpath = ../.gitconfig\n",
        )
        .unwrap();
        fs::create_dir_all(root.join("lib")).unwrap();
        fs::write(root.join("lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
        fs::create_dir_all(root.join(".git/modules/lib/hooks")).unwrap();
        fs::write(root.join(".git/modules/lib/config"), "[core]\n").unwrap();
        fs::write(
            root.join(".gitmodules"),
            "[submodule \"lib\"]\n\tpath = lib\n",
        )
        .unwrap();
        let before = Snapshot::take(root).unwrap();
        fs::write(root.join(".git/commondir"), "../evil\n").unwrap();
        fs::write(root.join("lib/.git"), "gitdir: .evil\n").unwrap();
        fs::write(root.join(".gitconfig"), "[core]\nfsmonitor = env\n").unwrap();
        fs::write(root.join(".gitmodules"), "").unwrap();
        fs::write(
            root.join(".git/modules/lib/config"),
            "[core]\nfsmonitor = x\n",
        )
        .unwrap();
        fs::write(root.join(".git/modules/lib/hooks/post-checkout"), "x").unwrap();
        let after = Snapshot::take_after(root, &before).unwrap();
        let restored = restore(&before, &after, diff(&before, &after, &never));
        let shown: Vec<String> = restored.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "`.git/commondir` added (removed)",
                "`.git/modules/lib/config` modified (put back as it was)",
                "`.git/modules/lib/hooks/post-checkout` added (removed)",
                "`.gitconfig` added (removed)",
                "`.gitmodules` modified (put back as it was)",
                "`lib/.git` modified (put back as it was)",
            ]
        );
        assert_eq!(Snapshot::take(root).unwrap().files(), before.files());
        // A `.git` directory made where a submodule had none goes too.
        fs::remove_file(root.join("lib/.git")).unwrap();
        let before = Snapshot::take(root).unwrap();
        fs::create_dir_all(root.join("lib/.git/hooks")).unwrap();
        fs::write(root.join("lib/.git/config"), "[core]\nfsmonitor = x\n").unwrap();
        let after = Snapshot::take_after(root, &before).unwrap();
        let restored = restore(&before, &after, diff(&before, &after, &never));
        assert!(
            restored
                .iter()
                .any(|t| t.to_string() == "`lib/.git` added (removed)"),
            "{restored:?}"
        );
        assert!(!root.join("lib/.git").exists());
    }

    #[test]
    fn a_fifo_is_recorded_without_being_opened() {
        let dir = workspace();
        let root = dir.path();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join(".tasks/t1/PLAN.md"))
            .status()
            .unwrap();
        assert!(status.success());
        let snapshot = Snapshot::take(root).unwrap();
        assert_eq!(
            snapshot.files()[".tasks/t1/PLAN.md"],
            "special:not a regular file"
        );
    }
}
