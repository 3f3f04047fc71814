//! Content fingerprints of a step's files: which files a step's `files` patterns name today,
//! and the blake3 hash of each. The runner records them when it ticks a step; every later
//! command compares them with the working tree (DESIGN §6).
//!
//! - A pattern without glob characters names one path. It is fingerprinted even when
//!   `.gitignore` ignores it (the plan named it explicitly), and a path that does not exist is
//!   recorded as [`MISSING`], so a later creation is a change like any other. A literal
//!   directory means everything below it.
//! - A glob (`src/**/*.rs`) is matched against the files a walk finds with ripgrep's walker:
//!   `.gitignore` honoured, `.git` and `.tasks` never entered, symlinks not followed. `*` does
//!   not cross `/`; `**` does. The walk is pruned to the glob's literal prefix directory.
//! - Nothing under `.tasks/` is ever fingerprinted: TODO.md, PLAN.md and state.yaml change
//!   with every tick and must never make a step stale.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Component, Path};

use chrono::{DateTime, Utc};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::tools::walk::{is_hidden_from_tools, workspace_walker};
use crate::tools::workspace::protected_dir;

/// The hash recorded for a path that does not exist.
pub const MISSING: &str = "missing";
/// The hash recorded for a path that exists but could not be read (a directory, no
/// permission). Any later readable content differs from it.
pub const UNREADABLE: &str = "unreadable";

/// Fingerprints of the files `patterns` (a step's `files`, globs allowed) and `extra` (paths a
/// run changed, literal) name below `root`: workspace-relative path → blake3 hex, or
/// [`MISSING`].
pub fn fingerprint(root: &Path, patterns: &[String], extra: &[String]) -> BTreeMap<String, String> {
    let mut paths = expand(root, patterns.iter().map(String::as_str));
    // Changed files are named exactly, whatever characters their names have.
    paths.extend(extra.iter().filter_map(|path| normalize(path.trim())));
    paths
        .into_iter()
        .map(|rel| {
            let hash = hash_file(&root.join(&rel));
            (rel, hash)
        })
        .collect()
}

/// The blake3 hex of the file's content, [`MISSING`] or [`UNREADABLE`] (also for a FIFO or a
/// device: a link to `/dev/zero` is not hashed forever).
pub fn hash_file(path: &Path) -> String {
    match crate::fsx::open_regular(path) {
        Ok(mut file) => {
            let mut hasher = blake3::Hasher::new();
            match std::io::copy(&mut file, &mut hasher) {
                Ok(_) => hasher.finalize().to_hex().to_string(),
                Err(_) => UNREADABLE.to_owned(),
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => MISSING.to_owned(),
        Err(_) => UNREADABLE.to_owned(),
    }
}

/// A file as it is now: its hash and when it was last modified (`None` when missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub hash: String,
    pub modified: Option<DateTime<Utc>>,
}

/// Hash and modification time of each workspace-relative path in `paths`.
pub fn observe<'a>(
    root: &Path,
    paths: impl IntoIterator<Item = &'a String>,
) -> BTreeMap<String, Observed> {
    paths
        .into_iter()
        .filter(|rel| normalize(rel).is_some())
        .map(|rel| {
            let path = root.join(rel);
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .map(DateTime::<Utc>::from);
            let observed = Observed {
                hash: hash_file(&path),
                modified,
            };
            (rel.clone(), observed)
        })
        .collect()
}

/// The patterns among `patterns` that name nothing in the working tree today.
pub fn unmatched(root: &Path, patterns: &[String]) -> Vec<String> {
    patterns
        .iter()
        .filter(|pattern| {
            let found = expand(root, std::iter::once(pattern.as_str()));
            found.is_empty()
                || found
                    .iter()
                    .all(|rel| hash_file(&root.join(rel)) == MISSING)
        })
        .cloned()
        .collect()
}

/// Whether `pattern` has glob syntax, as opposed to naming one path.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// A glob matcher for `patterns` as the `files` grammar means them: `*` stays within a path
/// segment. Patterns that do not compile are left out.
pub fn glob_set(patterns: &[&str]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = compile(pattern) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

fn compile(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build()
}

/// Workspace-relative `/`-separated paths the patterns name. Paths that leave the workspace
/// (`..`, absolute) or lie under `.git`/`.tasks` are dropped: a plan is never trusted as a path.
fn expand<'a>(root: &Path, patterns: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut globs: Vec<String> = Vec::new();
    for pattern in patterns {
        let pattern = pattern.trim();
        let Some(norm) = normalize(pattern.trim_end_matches('/')) else {
            continue;
        };
        if is_glob(&norm) {
            globs.push(norm);
        } else if root.join(&norm).is_dir() {
            globs.push(format!("{norm}/**"));
        } else {
            out.insert(norm);
        }
    }
    if !globs.is_empty() {
        let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
        walk_matching(root, &refs, &mut out);
    }
    out
}

/// `pattern` cleaned to `a/b/c` form, or `None` if it would leave the workspace or names a
/// skipped directory.
fn normalize(pattern: &str) -> Option<String> {
    let trimmed = pattern.trim_start_matches("./");
    if trimmed.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for component in Path::new(trimmed).components() {
        match component {
            Component::Normal(part) => {
                let part = part.to_str()?;
                if protected_dir(OsStr::new(part)).is_some() {
                    return None;
                }
                parts.push(part);
            }
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The directories a glob can match below: the segments before the first one with glob
/// syntax (`src/compat/**` → `src/compat`; `*.rs` → the root).
fn literal_prefix(glob: &str) -> String {
    let segments: Vec<&str> = glob.split('/').collect();
    let literal: Vec<&str> = segments
        .iter()
        .take(segments.len().saturating_sub(1))
        .take_while(|segment| !is_glob(segment))
        .copied()
        .collect();
    literal.join("/")
}

/// Adds the files below `root` that match one of `globs` to `out`.
fn walk_matching(root: &Path, globs: &[&str], out: &mut BTreeSet<String>) {
    let set = glob_set(globs);
    let prefixes: Vec<String> = globs.iter().map(|g| literal_prefix(g)).collect();
    let mut builder = workspace_walker(root);
    let filter_root = root.to_path_buf();
    builder.filter_entry(move |entry| {
        let Ok(rel) = entry.path().strip_prefix(&filter_root) else {
            return false;
        };
        if rel.as_os_str().is_empty() {
            return true;
        }
        let skipped = is_hidden_from_tools(rel);
        // Prune every branch that neither leads to a glob's prefix nor lies below one.
        !skipped
            && prefixes.iter().any(|prefix| {
                let prefix = Path::new(prefix);
                rel.starts_with(prefix) || prefix.starts_with(rel)
            })
    });
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str().map(|r| r.replace('\\', "/")) else {
            continue;
        };
        if set.is_match(&rel) {
            out.insert(rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        dir
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn literal_paths_are_hashed_and_missing_ones_recorded() {
        let dir = tree(&[("src/a.rs", "a")]);
        let prints = fingerprint(dir.path(), &strings(&["src/a.rs", "src/gone.rs"]), &[]);
        assert_eq!(prints["src/a.rs"], blake3::hash(b"a").to_hex().to_string());
        assert_eq!(prints["src/gone.rs"], MISSING);
        assert_eq!(prints.len(), 2);
    }

    #[test]
    fn globs_expand_honouring_gitignore_and_single_segment_stars() {
        let dir = tree(&[
            (".gitignore", "gen/\n"),
            ("src/a.rs", "a"),
            ("src/deep/b.rs", "b"),
            ("src/c.txt", "c"),
            ("gen/x.rs", "x"),
        ]);
        let prints = fingerprint(dir.path(), &strings(&["src/*.rs", "gen/*.rs"]), &[]);
        assert_eq!(prints.keys().collect::<Vec<_>>(), ["src/a.rs"]);
        let prints = fingerprint(dir.path(), &strings(&["src/**/*.rs"]), &[]);
        assert_eq!(
            prints.keys().collect::<Vec<_>>(),
            ["src/a.rs", "src/deep/b.rs"]
        );
        // A literal directory is everything below it.
        let prints = fingerprint(dir.path(), &strings(&["src/"]), &[]);
        assert_eq!(prints.len(), 3);
    }

    #[test]
    fn tasks_git_and_escaping_paths_are_never_fingerprinted() {
        let dir = tree(&[
            (".tasks/t/TODO.md", "- [x] S1 a"),
            (".git/HEAD", "ref"),
            ("a.rs", "a"),
        ]);
        let prints = fingerprint(
            dir.path(),
            &strings(&[".tasks/t/TODO.md", "**", "../outside", "/etc/passwd"]),
            &strings(&[".git/HEAD", "./a.rs"]),
        );
        assert_eq!(prints.keys().collect::<Vec<_>>(), ["a.rs"]);
    }

    #[test]
    fn extra_paths_are_literal() {
        let dir = tree(&[("weird[1].rs", "w")]);
        let prints = fingerprint(dir.path(), &[], &strings(&["weird[1].rs", "deleted.rs"]));
        assert_eq!(
            prints["weird[1].rs"],
            blake3::hash(b"w").to_hex().to_string()
        );
        assert_eq!(prints["deleted.rs"], MISSING);
    }

    #[test]
    fn unmatched_patterns() {
        let dir = tree(&[("src/a.rs", "a")]);
        assert_eq!(
            unmatched(
                dir.path(),
                &strings(&["src/a.rs", "src/b.rs", "src/*.rs", "lib/**"])
            ),
            strings(&["src/b.rs", "lib/**"])
        );
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix("src/compat/**"), "src/compat");
        assert_eq!(literal_prefix("*.rs"), "");
        assert_eq!(literal_prefix("src/*/x.rs"), "src");
    }

    #[test]
    fn observe_reports_hash_and_time() {
        let dir = tree(&[("a.rs", "a")]);
        let seen = observe(dir.path(), &strings(&["a.rs", "b.rs", "../x"]));
        assert_eq!(seen.len(), 2);
        assert!(seen["a.rs"].modified.is_some());
        assert_eq!(seen["b.rs"].hash, MISSING);
        assert_eq!(seen["b.rs"].modified, None);
    }
}
