//! Tamper detection: what changed, during a step, in the files that decide what tick does
//! next (`.tasks/`, `.git/config`, `.git/hooks/`) and was not written by tick.
//!
//! The sandbox makes these read-only for the agent's commands; this is the check that holds
//! without it (`--no-sandbox`), or if a layer fails. The runner takes a [`Snapshot`] before a
//! step and one after, and [`diff`] names every change tick did not make itself; a step with
//! such a change is not ticked and the run stops, naming them. Nothing is read from the
//! tampered files to decide that: only their hashes are compared.
//!
//! Left out: a task's `runs/` (transcripts and the journal, which tick appends to during the
//! step), the workspace journal `.tasks/journal.jsonl` (appended to around every command) and
//! `.lock` files.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use crate::watch::fingerprint::{self, MISSING};

/// At most this many entries are looked at; a tree larger than that is an error, not a
/// long wait.
const MAX_ENTRIES: usize = 20_000;
/// At most this deep below a watched directory.
const MAX_DEPTH: usize = 16;

/// The watched files of one workspace at one moment: workspace-relative path (with `.git/…`
/// as seen from the workspace, also for a worktree whose git directory lives elsewhere) →
/// blake3 hex of the content, `symlink:<target>`, or `special:<kind>` for a FIFO, socket or
/// device (never opened).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<String, String>,
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
}

impl std::fmt::Display for Tampered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.path, self.change.as_str())
    }
}

impl Snapshot {
    /// Hashes every file under `root/.tasks/` and `.git/hooks/`, and `.git/config`.
    pub fn take(root: &Path) -> io::Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        let mut budget = MAX_ENTRIES;
        snapshot.walk(&root.join(".tasks"), ".tasks", 0, &mut budget)?;
        let git = super::git_dirs(root)
            .pop()
            .unwrap_or_else(|| root.join(".git"));
        snapshot.add(&git.join("config"), ".git/config")?;
        snapshot.walk(&git.join("hooks"), ".git/hooks", 0, &mut budget)?;
        Ok(snapshot)
    }

    /// The paths and hashes, for messages and tests.
    pub fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    fn add(&mut self, path: &Path, rel: &str) -> io::Result<()> {
        if let Some(hash) = entry_hash(path)? {
            self.files.insert(rel.to_owned(), hash);
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
            });
        }
    }
    for path in before.files.keys() {
        if !after.files.contains_key(path) && !tick_wrote(path, MISSING) {
            changes.push(Tampered {
                path: path.clone(),
                change: Change::Removed,
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn changes(list: &[Tampered]) -> Vec<(String, Change)> {
        list.iter().map(|t| (t.path.clone(), t.change)).collect()
    }

    #[test]
    fn nothing_changed_is_nothing_tampered() {
        let dir = workspace();
        let before = Snapshot::take(dir.path()).unwrap();
        let after = Snapshot::take(dir.path()).unwrap();
        assert_eq!(before.files().len(), 5, "{:?}", before.files());
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
