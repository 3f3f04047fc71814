//! The files outside `.git/` that the person's own git reads as configuration, which a build
//! command could otherwise write: `.gitmodules`, every submodule's `.git` (a gitfile such as
//! `gitdir: ../.git/modules/lib`, or an old-style directory), and the files that `include.path`
//! and `includeIf.<cond>.path` in the repository's config name inside the work tree.
//!
//! A command that rewrites `lib/.git` to `gitdir: .evil` (with `filter.x.clean` and
//! `core.fsmonitor` in `.evil/config`), or writes the `.gitconfig` that `include.path =
//! ../.gitconfig` names, makes the person's next `git status` run its code, outside any
//! sandbox. The build sandbox binds these read-only ([`super::linux`]) and tamper detection
//! watches them ([`super::tamper`]), with or without the sandbox.
//!
//! Submodules are read from the index (the entries of mode 160000: git recurses into those
//! whether or not `.gitmodules` names them) and from `.gitmodules`, recursively into each
//! submodule's own index. Everything is read bounded and without blocking ([`crate::fsx`]);
//! an index tick cannot parse adds nothing (the sandbox's other layers and `.git/` read-only
//! still hold).

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// The most of an index that is read: larger ones (hundreds of thousands of files) are
/// looked at only through `.gitmodules`.
const MAX_INDEX: u64 = 64 * 1024 * 1024;
/// The most of a config or `.gitmodules` file that is read.
const MAX_CONFIG: u64 = 1024 * 1024;
/// How deep submodules of submodules, and includes of includes, are followed.
const MAX_DEPTH: usize = 4;
/// The mode of a gitlink (a submodule's commit) in the index.
const GITLINK: u32 = 0o160_000;

/// One file of the work tree that git reads as configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitFile {
    /// Absolute, under the workspace root (it may not exist).
    pub path: PathBuf,
    /// A submodule's `.git`: where it is missing, its directory is what to protect.
    pub submodule: bool,
}

/// The git files of the work tree at `root`, in a stable order, each once.
pub fn in_work_tree(root: &Path) -> Vec<GitFile> {
    let mut found = Vec::new();
    let dirs = super::git_dirs(root);
    let git_dir = dirs.get(1).cloned().unwrap_or_else(|| root.join(".git"));
    let common = dirs.last().cloned().unwrap_or_else(|| root.join(".git"));
    submodules(root, &git_dir, &common, 0, &mut found);
    let mut configs = vec![common.join("config"), common.join("config.worktree")];
    if git_dir != common {
        configs.push(git_dir.join("config.worktree"));
    }
    for config in configs {
        includes(root, &config, 0, &mut found);
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|f| seen.insert(f.path.clone()));
    found
}

/// `.gitmodules` of the work tree at `tree` and the `.git` of each submodule in it (from
/// `git_dir`'s index and `.gitmodules`), then the same inside each submodule.
fn submodules(tree: &Path, git_dir: &Path, common: &Path, depth: usize, found: &mut Vec<GitFile>) {
    let gitmodules = tree.join(".gitmodules");
    found.push(GitFile {
        path: gitmodules.clone(),
        submodule: false,
    });
    let mut paths = index_gitlinks(&git_dir.join("index"), sha256(common));
    if let Ok(Some(text)) = crate::fsx::read_capped(&gitmodules, MAX_CONFIG) {
        paths.extend(gitmodules_paths(&text));
    }
    paths.sort();
    paths.dedup();
    for rel in paths {
        let Some(rel) = plain_relative(&rel) else {
            continue;
        };
        let dir = tree.join(rel);
        let dot_git = dir.join(".git");
        found.push(GitFile {
            path: dot_git.clone(),
            submodule: true,
        });
        // Only a submodule that is checked out has submodules of its own to enter.
        if depth < MAX_DEPTH && std::fs::symlink_metadata(&dot_git).is_ok() {
            let inner = super::git_dirs(&dir);
            if let Some(inner_git) = inner.get(1).or(inner.first()) {
                let inner_common = inner.last().unwrap_or(inner_git);
                submodules(&dir, inner_git, inner_common, depth + 1, found);
            }
        }
    }
}

/// Whether the repository uses SHA-256 object names (`extensions.objectFormat = sha256`),
/// which makes index entries 12 bytes longer.
fn sha256(common: &Path) -> bool {
    crate::fsx::read_capped(&common.join("config"), MAX_CONFIG)
        .ok()
        .flatten()
        .is_some_and(|text| {
            text.lines().any(|line| {
                let line = line.trim().to_ascii_lowercase();
                line.starts_with("objectformat") && line.ends_with("sha256")
            })
        })
}

/// The `path = …` values of a `.gitmodules` file.
fn gitmodules_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case("path")
                .then(|| unquote(value))
        })
        .collect()
}

/// A value as git's config writes it: trimmed, without surrounding quotes or a trailing
/// comment.
fn unquote(value: &str) -> String {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('"')
        && let Some(end) = inner.find('"')
    {
        return inner[..end].to_owned();
    }
    let end = value.find([';', '#']).unwrap_or(value.len());
    value[..end].trim().to_owned()
}

/// `rel` when it is a plain relative path (no `..`, not absolute, not empty).
fn plain_relative(rel: &str) -> Option<&Path> {
    let path = Path::new(rel);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && path.components().any(|c| matches!(c, Component::Normal(_)));
    plain.then_some(path)
}

/// The paths of the gitlinks (submodules) the index at `index` records; none when it is
/// missing, too large or not an index tick can read (versions 2, 3 and 4).
fn index_gitlinks(index: &Path, sha256: bool) -> Vec<String> {
    let Ok(file) = crate::fsx::open_regular(index) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    if file.take(MAX_INDEX + 1).read_to_end(&mut bytes).is_err() || bytes.len() as u64 > MAX_INDEX {
        return Vec::new();
    }
    parse_gitlinks(&bytes, if sha256 { 32 } else { 20 }).unwrap_or_default()
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Git's index format (`Documentation/gitformat-index.txt`): a header `DIRC`, version, count;
/// then per entry 40 bytes of stat data (the mode at 24), the object name, 16 bits of flags
/// (and 16 more in version 3+ when the extended bit is set), and the path: NUL-terminated and
/// padded to a multiple of 8 in versions 2 and 3, prefix-compressed in version 4.
fn parse_gitlinks(bytes: &[u8], hash_len: usize) -> Option<Vec<String>> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    let count = be32(bytes, 8)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    let mut links = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, start + 24)?;
        let flags_at = start + 40 + hash_len;
        let flags = u16::from_be_bytes([*bytes.get(flags_at)?, *bytes.get(flags_at + 1)?]);
        let mut path_at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            path_at += 2;
        }
        let path = if version == 4 {
            // How many bytes to drop from the end of the previous path, as git's varint.
            let mut byte = *bytes.get(path_at)?;
            path_at += 1;
            let mut strip = usize::from(byte & 0x7f);
            while byte & 0x80 != 0 {
                byte = *bytes.get(path_at)?;
                path_at += 1;
                strip = ((strip + 1) << 7) | usize::from(byte & 0x7f);
            }
            let end = path_at + bytes.get(path_at..)?.iter().position(|&b| b == 0)?;
            let mut path = previous.get(..previous.len().checked_sub(strip)?)?.to_vec();
            path.extend_from_slice(&bytes[path_at..end]);
            at = end + 1;
            path
        } else {
            let end = path_at + bytes.get(path_at..)?.iter().position(|&b| b == 0)?;
            let path = bytes[path_at..end].to_vec();
            // The entry, NUL included, padded with NULs to a multiple of 8 bytes.
            at = start + (end - start + 8) / 8 * 8;
            path
        };
        if mode & 0o170_000 == GITLINK {
            links.push(String::from_utf8_lossy(&path).into_owned());
        }
        previous = path;
    }
    Some(links)
}

/// The files that `include.path` and `includeIf.<cond>.path` in `config` name inside `root`
/// (relative paths are relative to the config file's directory; `~/` is the person's home,
/// never the work tree), and theirs in turn.
fn includes(root: &Path, config: &Path, depth: usize, found: &mut Vec<GitFile>) {
    let Ok(Some(text)) = crate::fsx::read_capped(config, MAX_CONFIG) else {
        return;
    };
    let base = config.parent().unwrap_or(Path::new("/"));
    for value in include_paths(&text) {
        if value.starts_with('~') {
            continue;
        }
        let named = normalize(&base.join(&value));
        if !named.starts_with(root) {
            continue;
        }
        found.push(GitFile {
            path: named.clone(),
            submodule: false,
        });
        if depth < MAX_DEPTH {
            includes(root, &named, depth + 1, found);
        }
    }
}

/// The `path` values of the `[include]` and `[includeIf "…"]` sections of a config file.
fn include_paths(text: &str) -> Vec<String> {
    let mut in_include = false;
    let mut paths = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split(|c: char| c == ']' || c == '"' || c.is_whitespace())
                .next()
                .unwrap_or("");
            in_include =
                name.eq_ignore_ascii_case("include") || name.eq_ignore_ascii_case("includeif");
            // `[include] path = x` on one line.
            let Some((_, rest)) = header.split_once(']') else {
                continue;
            };
            if !in_include || rest.trim().is_empty() {
                continue;
            }
            if let Some((key, value)) = rest.split_once('=')
                && key.trim().eq_ignore_ascii_case("path")
            {
                paths.push(unquote(value));
            }
            continue;
        }
        if in_include
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("path")
        {
            paths.push(unquote(value));
        }
    }
    paths
}

/// `path` with `.` and `..` resolved lexically, and the longest existing prefix resolved
/// through symlinks, as git opens it: a file that does not exist yet is still named where
/// it would be.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
            break;
        };
        rest.push(name);
        if !existing.pop() {
            break;
        }
    }
    let mut real = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        real.push(name);
    }
    real
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// A repository with gitlinks at `lib` and `deep/er/mod`, one with a `.gitmodules` entry.
    fn repository(version: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(root, &["add", "a.txt"]);
        let sha = "0123456789abcdef0123456789abcdef01234567";
        for path in ["lib", "deep/er/mod"] {
            git(
                root,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("160000,{sha},{path}"),
                ],
            );
        }
        git(root, &["update-index", "--index-version", version]);
        std::fs::write(
            root.join(".gitmodules"),
            "[submodule \"other\"]\n\tpath = \"vendor/other\"\n\turl = x\n",
        )
        .unwrap();
        dir
    }

    fn shown(root: &Path) -> Vec<String> {
        let root = std::fs::canonicalize(root).unwrap();
        in_work_tree(&root)
            .iter()
            .map(|f| {
                let rel = f.path.strip_prefix(&root).unwrap().display().to_string();
                if f.submodule {
                    format!("{rel} (submodule)")
                } else {
                    rel
                }
            })
            .collect()
    }

    #[test]
    fn submodules_come_from_every_index_version_and_gitmodules() {
        for version in ["2", "3", "4"] {
            let dir = repository(version);
            assert_eq!(
                shown(dir.path()),
                [
                    ".gitmodules",
                    "deep/er/mod/.git (submodule)",
                    "lib/.git (submodule)",
                    "vendor/other/.git (submodule)",
                ],
                "index version {version}"
            );
        }
    }

    #[test]
    fn a_submodules_own_submodules_are_followed() {
        let dir = repository("2");
        let root = dir.path();
        let inner = root.join("lib");
        std::fs::create_dir_all(&inner).unwrap();
        git(&inner, &["init", "-q"]);
        std::fs::write(inner.join(".gitmodules"), "[submodule \"x\"]\npath = x\n").unwrap();
        let found = shown(root);
        assert!(found.contains(&"lib/.gitmodules".to_owned()), "{found:?}");
        assert!(
            found.contains(&"lib/x/.git (submodule)".to_owned()),
            "{found:?}"
        );
    }

    #[test]
    fn included_files_inside_the_work_tree_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        let config = root.join(".git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(
            "[include]\n\tpath = ../.gitconfig\n[includeIf \"gitdir:/\"]\n\tPath = \"../cfg/more\" ; c\n\
             [include]\n\tpath = ~/.gitconfig\n\tpath = /etc/gitconfig\n",
        );
        std::fs::write(&config, text).unwrap();
        std::fs::create_dir(root.join("cfg")).unwrap();
        std::fs::write(root.join("cfg/more"), "[include]\npath = third\n").unwrap();
        assert_eq!(
            shown(root),
            [".gitmodules", ".gitconfig", "cfg/more", "cfg/third"]
        );
    }

    #[test]
    fn a_broken_index_names_nothing() {
        assert_eq!(plain_relative("."), None);
        assert_eq!(plain_relative("../x"), None);
        assert_eq!(plain_relative("/x"), None);
        assert_eq!(plain_relative("./a/b"), Some(Path::new("./a/b")));
        assert_eq!(parse_gitlinks(b"DIRC\0\0\0\x02\0\0\0\x05", 20), None);
        assert_eq!(parse_gitlinks(b"XXXX", 20), None);
        assert_eq!(parse_gitlinks(b"", 20), None);
    }
}
