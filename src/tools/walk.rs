//! The directory walk shared by `list_files` and `search_files`, so both agree on what a model
//! can see: ripgrep's walker with one set of ignore rules.
//!
//! - `.gitignore`, `.ignore` and `.git/info/exclude` are honoured whether or not the workspace
//!   is a git repository: a project's ignore files describe generated and vendored files either
//!   way, and a tarball of a repository should look like the repository.
//! - Only ignore files *inside* the workspace count. The walk always starts at the workspace
//!   root (a sub-path is reached by pruning every other branch), so `src/` sees the rules of
//!   `./.gitignore`, while nothing above the root (say a `.gitignore` with `*` in a home
//!   directory kept under git) or in the user's global git config changes what a model sees.
//! - Hidden files are shown (`.github/`, `.env.example`, `.cargo/` matter when planning);
//!   `.git` and `.tasks` directories are never entered, at any depth.
//! - Symlinks are listed but not followed, so a walk never leaves the workspace.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::workspace::{Workspace, protected_dir};

/// What an entry is, as far as a listing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    File,
    Symlink,
}

/// One entry below the walk's target.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Absolute path.
    pub path: PathBuf,
    /// 1 for a direct child of the target.
    pub depth: usize,
    pub kind: EntryKind,
}

/// What the caller should know about a finished walk.
#[derive(Debug, Default)]
pub(crate) struct WalkSummary {
    /// The target itself was reached; if not, the ignore rules exclude it.
    pub target_seen: bool,
    /// Entries that could not be read (permissions, races with deletion).
    pub unreadable: usize,
}

/// Whether `rel` (relative to the root) is inside a `.git` or `.tasks` directory, or is one.
pub(crate) fn is_hidden_from_tools(rel: &Path) -> bool {
    rel.components()
        .any(|c| protected_dir(c.as_os_str()).is_some())
}

/// A walk of the workspace at `root` as tick sees it: hidden files included, `.gitignore`,
/// `.ignore` and `.git/info/exclude` honoured whether or not it is a git repository, nothing
/// above the root or in the user's global git config counted, symlinks not followed. The
/// model's tools and the staleness fingerprints walk the same way.
pub(crate) fn workspace_walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false);
    builder
}

/// Walk the entries below `target` (an absolute path inside the workspace, as
/// [`Workspace::resolve`] returns it) down to `max_depth` levels, in sorted order, calling
/// `visit` for each until it breaks.
pub(crate) fn walk(
    workspace: &Workspace,
    target: &Path,
    max_depth: Option<usize>,
    mut visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> WalkSummary {
    let root = workspace.root().to_path_buf();
    let target_rel = target.strip_prefix(&root).unwrap_or(target).to_path_buf();
    let target_depth = target_rel.components().count();

    let mut builder = workspace_walker(&root);
    builder
        .max_depth(max_depth.map(|d| d.saturating_add(target_depth)))
        .sort_by_file_name(std::cmp::Ord::cmp);
    let filter_root = root.clone();
    let filter_target = target_rel.clone();
    builder.filter_entry(move |entry| {
        let Ok(rel) = entry.path().strip_prefix(&filter_root) else {
            return false;
        };
        // Prune every branch that neither leads to the target nor lies below it.
        !is_hidden_from_tools(rel)
            && (rel.starts_with(&filter_target) || filter_target.starts_with(rel))
    });

    let mut summary = WalkSummary::default();
    for result in builder.build() {
        let Ok(entry) = result else {
            summary.unreadable += 1;
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(&root) else {
            continue;
        };
        if rel == target_rel {
            summary.target_seen = true;
            continue;
        }
        if !rel.starts_with(&target_rel) {
            continue;
        }
        let kind = match entry.file_type() {
            Some(t) if t.is_symlink() => EntryKind::Symlink,
            Some(t) if t.is_dir() => EntryKind::Dir,
            _ => EntryKind::File,
        };
        let depth = entry.depth().saturating_sub(target_depth);
        if visit(Entry {
            path: entry.path().to_path_buf(),
            depth,
            kind,
        })
        .is_break()
        {
            break;
        }
    }
    summary
}
