//! What the sandbox cannot stop inside the workspace, found by looking at it:
//!
//! - Hard links that leave the workspace ([`links_leaving`]): a file of the workspace that is
//!   also a file somewhere else (a package store's, `.git/config`), so that a command allowed
//!   to write the one writes the other. The kernel cannot tell the two names apart (they are
//!   one inode): this names them, for the run summary and `tick doctor`.
//! - Setuid and setgid bits ([`clear_setuid`]): a command may set them on its own files (no
//!   kernel right covers `chmod` of a file one owns). Inside the sandbox they do nothing
//!   (`no_new_privs`, the workspace mounted `nosuid`); outside, a setuid file made while tick
//!   runs as root would be a setuid-root program, so they are cleared after every command.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// At most this many entries are looked at; a larger workspace is an error, not a long wait.
const MAX_ENTRIES: usize = 1_000_000;
const SETUID_SETGID: u32 = 0o6000;

/// Calls `visit(path, relative path, metadata)` for every regular file under `root`, without
/// following symlinks and without walking the root's `.git` and `.tasks`.
fn walk_files(
    root: &Path,
    visit: &mut dyn FnMut(&Path, String, &fs::Metadata) -> io::Result<()>,
) -> io::Result<()> {
    let mut budget = MAX_ENTRIES;
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            budget = budget.checked_sub(1).ok_or_else(|| {
                io::Error::other(format!("more than {MAX_ENTRIES} files in the workspace"))
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && (name == ".git" || name == ".tasks") {
                continue;
            }
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((entry.path(), child));
            } else if kind.is_file() {
                visit(&entry.path(), child, &entry.metadata()?)?;
            }
        }
    }
    Ok(())
}

/// Clears the setuid and setgid bits of every regular file under `root` (not in `.git` or
/// `.tasks`) and returns their workspace-relative paths, sorted. Directories keep theirs (a
/// setgid directory only passes its group on).
pub fn clear_setuid(root: &Path) -> io::Result<Vec<String>> {
    let mut cleared = Vec::new();
    walk_files(root, &mut |path, rel, meta| {
        let mode = meta.permissions().mode();
        if mode & SETUID_SETGID != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o1777))?;
            cleared.push(rel);
        }
        Ok(())
    })?;
    cleared.sort();
    Ok(cleared)
}

/// The workspace-relative paths (sorted) of regular files under `root` with more hard links
/// than the workspace holds: every other link is outside it, or in `.git/` or `.tasks/`,
/// which commands may not write. Symlinks are not followed; `.git` and `.tasks` are not
/// walked.
pub fn links_leaving(root: &Path) -> io::Result<Vec<String>> {
    // (device, inode) → (links the inode has, the names found here).
    let mut found: HashMap<(u64, u64), (u64, Vec<String>)> = HashMap::new();
    walk_files(root, &mut |_, rel, meta| {
        if meta.nlink() > 1 {
            found
                .entry((meta.dev(), meta.ino()))
                .or_insert_with(|| (meta.nlink(), Vec::new()))
                .1
                .push(rel);
        }
        Ok(())
    })?;
    let mut leaving: Vec<String> = found
        .into_values()
        .filter(|(links, names)| (names.len() as u64) < *links)
        .flat_map(|(_, names)| names)
        .collect();
    leaving.sort();
    Ok(leaving)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inside_the_workspace_are_not_named() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        fs::create_dir_all(ws.join("a/b")).unwrap();
        fs::create_dir_all(ws.join(".tasks")).unwrap();
        fs::write(ws.join("a/one"), "1").unwrap();
        fs::hard_link(ws.join("a/one"), ws.join("a/b/two")).unwrap();
        assert!(links_leaving(&ws).unwrap().is_empty());
        fs::hard_link(ws.join("a/one"), ws.join(".tasks/three")).unwrap();
        fs::write(dir.path().join("out"), "o").unwrap();
        fs::hard_link(dir.path().join("out"), ws.join("in")).unwrap();
        assert_eq!(links_leaving(&ws).unwrap(), ["a/b/two", "a/one", "in"]);
    }

    #[test]
    fn setuid_and_setgid_bits_of_files_are_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        fs::create_dir_all(ws.join("d")).unwrap();
        fs::create_dir_all(ws.join(".git")).unwrap();
        for (name, mode) in [
            ("a", 0o4755),
            ("d/b", 0o2711),
            ("c", 0o755),
            (".git/x", 0o4755),
        ] {
            fs::write(ws.join(name), "x").unwrap();
            fs::set_permissions(ws.join(name), fs::Permissions::from_mode(mode)).unwrap();
        }
        fs::set_permissions(ws.join("d"), fs::Permissions::from_mode(0o2755)).unwrap();
        assert_eq!(clear_setuid(ws).unwrap(), ["a", "d/b"]);
        let mode = |name: &str| fs::metadata(ws.join(name)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(
            [mode("a"), mode("d/b"), mode("c"), mode("d"), mode(".git/x")],
            [0o755, 0o711, 0o755, 0o2755, 0o4755]
        );
        assert!(clear_setuid(ws).unwrap().is_empty());
    }
}
