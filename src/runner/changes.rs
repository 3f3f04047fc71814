//! Which files a step changed: a content snapshot of the working tree's interesting files
//! (what git sees changed, and what the step's `files` name) before and after the step, the
//! files the step's tools wrote, and which of those fall outside the step's `files`
//! (deviations). Also what `--commit` commits for a step.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::watch::fingerprint;

/// Files git sees as changed or new, with their content hashes; `None` outside git. Paths
/// under `.tasks/` are left out. git never looks into a submodule here
/// (`--ignore-submodules=all`, which beats a submodule's own `ignore` setting): a `lib/.git`
/// file the agent pointed at a git directory of its own would otherwise make tick's status
/// run that directory's filters. A nested repository shows as its directory (`vendor/x/`),
/// which a commit refuses ([`crate::git::CommitError::NestedRepository`]).
pub fn dirty_files(root: &Path) -> Option<BTreeMap<String, String>> {
    let text = crate::git::output(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
    )?;
    Some(
        parse_porcelain(&text)
            .into_iter()
            .filter(|p| !is_task_path(p))
            .map(|path| {
                let hash = fingerprint::hash_file(&root.join(&path));
                (path, hash)
            })
            .collect(),
    )
}

/// The paths of `git status --porcelain=v1 -z` output (for a rename, the new path).
fn parse_porcelain(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut entries = text.split('\0');
    while let Some(entry) = entries.next() {
        if entry.len() < 4 {
            continue;
        }
        let status = &entry[..2];
        paths.push(entry[3..].to_owned());
        if status.starts_with('R') || status.starts_with('C') {
            // The source path follows as its own entry.
            entries.next();
        }
    }
    paths
}

fn is_task_path(path: &str) -> bool {
    path.starts_with(".tasks/") || path.starts_with(".git/")
}

/// The globs of a step's `files`: `src/compat` also covers what is inside it.
fn scope_set(patterns: &[String]) -> Option<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.trim_start_matches("./");
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
        if let Ok(glob) = Glob::new(&format!("{}/**", pattern.trim_end_matches('/'))) {
            builder.add(glob);
        }
    }
    builder.build().ok()
}

/// Changed files that no pattern of the step's `files` covers.
pub fn deviations(patterns: &[String], changed: &BTreeSet<String>) -> Vec<String> {
    let Some(set) = scope_set(patterns) else {
        return changed.iter().cloned().collect();
    };
    changed
        .iter()
        .filter(|f| !set.is_match(f.as_str()))
        .cloned()
        .collect()
}

/// The content of the files a step may change, taken before and after it: every file git
/// sees changed or new, and every file the step's `files` name. `None` hashes are files that
/// were not looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub files: BTreeMap<String, String>,
    /// What git saw changed when the snapshot was taken; `None` outside git.
    pub dirty: Option<BTreeSet<String>>,
}

impl Snapshot {
    /// The snapshot of `root` for a step working within `scope`; `also` are more paths to
    /// look at (those of an earlier snapshot, so a file put back is seen).
    pub fn take(root: &Path, scope: &[String], also: &BTreeSet<String>) -> Snapshot {
        let dirty = dirty_files(root);
        let extra: Vec<String> = also.iter().cloned().collect();
        let mut files = fingerprint::fingerprint(root, scope, &extra);
        files.retain(|path, _| !is_task_path(path));
        if let Some(dirty) = &dirty {
            files.extend(dirty.iter().map(|(p, h)| (p.clone(), h.clone())));
        }
        Snapshot {
            files,
            dirty: dirty.map(|d| d.into_keys().collect()),
        }
    }

    /// Files whose content differs between `self` (before) and `after`: changed, created or
    /// deleted.
    pub fn changed(&self, after: &Snapshot) -> BTreeSet<String> {
        let paths: BTreeSet<&String> = self.files.keys().chain(after.files.keys()).collect();
        paths
            .into_iter()
            .filter(|path| {
                let before = self
                    .files
                    .get(*path)
                    .map_or(fingerprint::MISSING, String::as_str);
                let now = after
                    .files
                    .get(*path)
                    .map_or(fingerprint::MISSING, String::as_str);
                before != now
            })
            .cloned()
            .collect()
    }
}

/// What `--commit` commits for a step, besides the task's own files: of the files git sees
/// changed now (`dirty_now`), those the step changed (`changed`: its tools' writes, the
/// snapshot difference, and what earlier attempts of the same step changed) and those its
/// `scope` names (an earlier, blocked attempt may have written them, and this attempt found
/// them right). Never a file outside the scope that the step did not change; never anything
/// under `.tasks/`; never a file that is as committed.
pub fn commit_set(
    scope: &[String],
    changed: &BTreeSet<String>,
    dirty_now: &BTreeSet<String>,
) -> Vec<String> {
    let scope = scope_set(scope);
    dirty_now
        .iter()
        .filter(|path| !is_task_path(path))
        .filter(|path| {
            changed.contains(*path)
                || scope
                    .as_ref()
                    .is_some_and(|set| set.is_match(path.as_str()))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|s| (*s).to_owned()).collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn deviations_are_files_outside_the_patterns() {
        let changed = set(&["src/compat/a.rs", "src/login.rs", "README.md"]);
        let patterns = strings(&["src/compat", "src/login.rs"]);
        assert_eq!(deviations(&patterns, &changed), ["README.md"]);
        let globs = strings(&["src/**"]);
        assert_eq!(deviations(&globs, &changed), ["README.md"]);
        assert_eq!(deviations(&[], &set(&["a"])), ["a"]);
    }

    #[test]
    fn porcelain_paths_include_renames_once() {
        let text = " M src/a.rs\0?? new file.txt\0R  to.rs\0from.rs\0";
        assert_eq!(parse_porcelain(text), ["src/a.rs", "new file.txt", "to.rs"]);
    }

    #[test]
    fn the_commit_holds_changes_and_dirty_files_in_scope_only() {
        let scope = strings(&["wordcount.py", "tests/**"]);
        let changed = set(&["notes.txt", "gone.txt", ".tasks/x/TODO.md"]);
        let dirty = set(&[
            "notes.txt",
            "wordcount.py",
            "tests/t.py",
            "unrelated.txt",
            ".tasks/x/TODO.md",
        ]);
        assert_eq!(
            commit_set(&scope, &changed, &dirty),
            ["notes.txt", "tests/t.py", "wordcount.py"]
        );
        assert_eq!(
            commit_set(&scope, &set(&[]), &set(&[])),
            Vec::<String>::new()
        );
    }

    fn git(root: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_snapshot_sees_a_file_dirty_before_and_changed_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("wordcount.py"), "v1\n").unwrap();
        std::fs::write(root.join("other.txt"), "o\n").unwrap();
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "init"]);
        // An earlier attempt left it modified.
        std::fs::write(root.join("wordcount.py"), "v2\n").unwrap();
        let scope = strings(&["wordcount.py"]);
        let before = Snapshot::take(root, &scope, &BTreeSet::new());
        assert_eq!(before.dirty, Some(set(&["wordcount.py"])));
        std::fs::write(root.join("wordcount.py"), "v3\n").unwrap();
        std::fs::write(root.join("new.txt"), "n\n").unwrap();
        std::fs::create_dir_all(root.join(".tasks")).unwrap();
        std::fs::write(root.join(".tasks/TODO.md"), "t\n").unwrap();
        let after = Snapshot::take(root, &scope, &before.files.keys().cloned().collect());
        assert_eq!(before.changed(&after), set(&["new.txt", "wordcount.py"]));
        // Put back: no change.
        std::fs::write(root.join("wordcount.py"), "v2\n").unwrap();
        std::fs::remove_file(root.join("new.txt")).unwrap();
        let again = Snapshot::take(root, &scope, &before.files.keys().cloned().collect());
        assert_eq!(before.changed(&again), set(&[]));
    }
}
