//! Plan freshness: a pending step whose `files` no longer exist was planned against a tree
//! that has moved on, so the plan may be out of date (DESIGN §6). Reported by `tick status`.
//!
//! "No longer" matters: a step may name a file it is going to create. When the task was
//! approved on a git commit, only patterns that matched a file in that commit and match
//! nothing now are reported. Without a commit to compare with, every pattern that matches
//! nothing is reported, since tick cannot tell.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use super::fingerprint::{self, glob_set, is_glob};
use crate::plan::StepStatus;
use crate::tasks::todo_md::Checklist;

/// A pending step whose files are gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingFiles {
    pub id: String,
    /// The step's `files` patterns that match nothing in the working tree.
    pub files: Vec<String>,
}

/// The pending steps of `checklist` whose `files` name nothing in the working tree under
/// `root` any more. `approved_on` is the commit the task was approved on, if any.
pub fn missing_files(
    root: &Path,
    checklist: &Checklist,
    approved_on: Option<&str>,
) -> Vec<MissingFiles> {
    let mut then: Option<Option<Vec<String>>> = None;
    let mut dirs = HashMap::new();
    let mut out = Vec::new();
    for step in checklist.all_steps() {
        if step.status != StepStatus::Pending || step.files.is_empty() {
            continue;
        }
        let mut gone = unmatched(root, &step.files, &mut dirs);
        if gone.is_empty() {
            continue;
        }
        if let Some(commit) = approved_on {
            let files = then.get_or_insert_with(|| files_at(root, commit));
            if let Some(files) = files {
                gone.retain(|pattern| existed(pattern, files));
            }
        }
        if !gone.is_empty() {
            out.push(MissingFiles {
                id: step
                    .id
                    .map_or_else(|| step.title.clone(), |id| id.to_string()),
                files: gone,
            });
        }
    }
    out
}

/// [`fingerprint::unmatched`], answering at once for a literal path whose directory does not
/// exist (a big plan names thousands of files under a few directories; `dirs` remembers which
/// exist).
fn unmatched(root: &Path, patterns: &[String], dirs: &mut HashMap<String, bool>) -> Vec<String> {
    let mut surely_gone: Vec<&String> = Vec::new();
    let mut to_look_at: Vec<&String> = Vec::new();
    for pattern in patterns {
        let clean = pattern
            .trim()
            .trim_start_matches("./")
            .trim_end_matches('/');
        let parent = clean.rsplit_once('/').map(|(dir, _)| dir);
        let dir_missing = match parent {
            Some(dir) if !is_glob(clean) && !dir.is_empty() => {
                let exists = if let Some(&exists) = dirs.get(dir) {
                    exists
                } else {
                    let exists = root.join(dir).is_dir();
                    dirs.insert(dir.to_owned(), exists);
                    exists
                };
                !exists
            }
            _ => false,
        };
        if dir_missing {
            surely_gone.push(pattern);
        } else {
            to_look_at.push(pattern);
        }
    }
    if to_look_at.is_empty() {
        // In the patterns' order already.
        return surely_gone.into_iter().cloned().collect();
    }
    let to_look_at: Vec<String> = to_look_at.into_iter().cloned().collect();
    let looked = fingerprint::unmatched(root, &to_look_at);
    patterns
        .iter()
        .filter(|p| surely_gone.contains(p) || looked.contains(p))
        .cloned()
        .collect()
}

/// Whether `pattern` named a file among `files` (the tree of a commit).
fn existed(pattern: &str, files: &[String]) -> bool {
    let pattern = pattern
        .trim()
        .trim_start_matches("./")
        .trim_end_matches('/');
    if is_glob(pattern) {
        let set = glob_set(&[pattern]);
        files.iter().any(|file| set.is_match(file))
    } else {
        let dir = format!("{pattern}/");
        files
            .iter()
            .any(|file| file == pattern || file.starts_with(&dir))
    }
}

/// Every file path in `commit`, or `None` if git cannot say (not a repository, no git).
fn files_at(root: &Path, commit: &str) -> Option<Vec<String>> {
    let text = crate::git::output(
        root,
        &["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit],
    )?;
    Some(
        text.split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::todo_md;

    const TODO: &str = "\
- [ ] S1 Edit the old module
  - files: src/old.rs
- [ ] S2 Create a new module
  - files: src/new.rs
- [x] S3 Done already
  - files: src/gone.rs
- [ ] S4 Still there
  - files: src/*.rs, src/kept.rs
";

    #[test]
    fn without_a_commit_every_unmatched_pattern_of_a_pending_step_counts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/kept.rs"), "k").unwrap();
        let list = todo_md::parse(TODO).unwrap();
        let missing = missing_files(dir.path(), &list, None);
        assert_eq!(
            missing,
            [
                MissingFiles {
                    id: "S1".into(),
                    files: vec!["src/old.rs".into()]
                },
                MissingFiles {
                    id: "S2".into(),
                    files: vec!["src/new.rs".into()]
                },
            ]
        );
    }

    #[test]
    fn existed_matches_literals_dirs_and_globs() {
        let files = vec!["src/a.rs".to_owned(), "lib/x/y.rs".to_owned()];
        assert!(existed("src/a.rs", &files));
        assert!(existed("./lib/x/", &files));
        assert!(existed("src/*.rs", &files));
        assert!(!existed("src/b.rs", &files));
        assert!(!existed("lib/*.rs", &files));
    }
}
