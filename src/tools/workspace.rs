//! The workspace path policy: the one place that turns a path a model wrote into a real path,
//! and the one place that decides whether that path may be read or written.
//!
//! Every tool goes through [`Workspace::resolve`]. The rules, strictest first:
//!
//! - A path is relative to the workspace root. Empty paths, NUL bytes and absolute paths are
//!   refused.
//! - `..` is refused anywhere in a path, even where it would stay inside (`a/../b`). Paths are
//!   resolved by the operating system *through symlinks*, so `link/..` is the parent of the
//!   link's target, not `.`; refusing `..` removes that whole class of surprises, and a model
//!   never needs it because every path starts at the root.
//! - The path is resolved following the symlinks of every existing ancestor (and of the final
//!   component when it exists). The resolved path must lie inside the canonical root.
//! - For writing, no component may be `.git` or `.tasks` (ASCII case-insensitively, because
//!   case-insensitive file systems treat `.GIT` as `.git`), neither in the path as written nor
//!   in the resolved path, so a symlink to `.git/` cannot be used as a detour. `.git` is refused
//!   at any depth because a nested repository's hooks run code too; `.tasks` at any depth
//!   because any `.tasks` folder is a tick store that only the runner writes.
//! - A path that does not exist yet resolves through its nearest existing ancestor (for writing
//!   a new file); for reading it is an error.
//!
//! Resolution is a check at the time of the call. A process that swaps a directory for a
//! symlink between the check and the use cannot move a write: `write_file` and `edit_file`
//! open the resolved path again beneath the root by descriptor, never following a link
//! (`fsx::write_beneath`, `fsx::read_beneath`), so a swap makes them fail instead.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What a tool intends to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Directories no tool may write into; the runner alone writes `.tasks/`.
const PROTECTED_DIRS: [&str; 2] = [".git", ".tasks"];

/// Why a path was refused. The `Display` text is written for the model: it says what was wrong
/// and how to write the path instead.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(
        "the path is empty; paths are relative to the workspace root, e.g. `src/main.rs` (use `.` for the root itself)"
    )]
    Empty,
    #[error("`{path}` contains a NUL byte; write the path without it")]
    Nul { path: String },
    #[error(
        "`{path}` is an absolute path; paths are relative to the workspace root, e.g. `src/main.rs`"
    )]
    Absolute { path: String },
    #[error(
        "`{path}` is outside the workspace; paths are relative to the workspace root and may not contain `..`"
    )]
    ParentDir { path: String },
    #[error(
        "`{path}` leads outside the workspace through a symbolic link; only files inside the workspace can be used"
    )]
    OutsideWorkspace { path: String },
    #[error("`{path}` is inside `{dir}/`, which no tool may write; {hint}")]
    Protected {
        path: String,
        dir: &'static str,
        hint: &'static str,
    },
    #[error("`{path}` does not exist; use list_files to see which files there are")]
    NotFound { path: String },
    #[error(
        "`{path}` is a symbolic link that cannot be followed (its target is missing or it loops); use the path of the real file instead"
    )]
    BrokenSymlink { path: String },
    #[error("`{path}` cannot be created because `{file}` is a file, not a directory")]
    NotADirectory { path: String, file: String },
    #[error("`{path}` could not be resolved: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// The workspace root and the policy for paths inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root`, which must exist; it is canonicalised so every later
    /// comparison is between real paths.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("`{}` is not a directory", root.display()),
            ));
        }
        Ok(Self { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve a model-written `path` for `access`, returning an absolute path inside the
    /// workspace. For [`Access::Read`] the path exists; for [`Access::Write`] it may not exist
    /// yet, and then its nearest existing ancestor is a directory inside the workspace.
    pub fn resolve(&self, path: &str, access: Access) -> Result<PathBuf, PathError> {
        let shown = || path.replace('\0', "\\0");
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.contains('\0') {
            return Err(PathError::Nul { path: shown() });
        }
        let mut relative = PathBuf::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(name) => relative.push(name),
                Component::CurDir => {}
                Component::ParentDir => return Err(PathError::ParentDir { path: shown() }),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::Absolute { path: shown() });
                }
            }
        }
        if access == Access::Write {
            Self::check_not_protected(&relative, path)?;
        }

        let (resolved, exists) = self.follow(&relative, path, access)?;
        let Ok(inside) = resolved.strip_prefix(&self.root) else {
            return Err(PathError::OutsideWorkspace { path: shown() });
        };
        // Checked after the containment so that a path through an outside link is reported as
        // outside, whether or not its last part exists.
        if !exists && access == Access::Read {
            return Err(PathError::NotFound { path: shown() });
        }
        if access == Access::Write {
            Self::check_not_protected(inside, path)?;
        }
        Ok(resolved)
    }

    /// The path of `absolute` relative to the root, with `/` separators, as a model should
    /// write it; `.` for the root itself. Paths outside the root are shown as they are.
    pub fn display(&self, absolute: &Path) -> String {
        match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => absolute.display().to_string(),
        }
    }

    fn check_not_protected(relative: &Path, original: &str) -> Result<(), PathError> {
        for component in relative.components() {
            if let Some(dir) = protected_dir(component.as_os_str()) {
                let hint = if dir == ".git" {
                    "git's own files are off limits; change the working tree instead"
                } else {
                    "the runner alone writes `.tasks/`; report progress with update_step"
                };
                return Err(PathError::Protected {
                    path: original.to_owned(),
                    dir,
                    hint,
                });
            }
        }
        Ok(())
    }

    /// Resolve `relative` (already free of `..` and root components) against the root through
    /// the real file system; also says whether the whole path exists.
    fn follow(
        &self,
        relative: &Path,
        original: &str,
        access: Access,
    ) -> Result<(PathBuf, bool), PathError> {
        let full = self.root.join(relative);
        let io_error = |source: io::Error| PathError::Io {
            path: original.to_owned(),
            source,
        };

        // The deepest existing ancestor (possibly `full` itself). `symlink_metadata` so that a
        // dangling link counts as existing and is reported, rather than silently written through.
        let mut existing = full.as_path();
        let mut missing: Vec<&OsStr> = Vec::new();
        loop {
            match existing.symlink_metadata() {
                Ok(_) => break,
                // A symlink loop in an ancestor: walk up to the link itself and report it.
                Err(e) if is_missing(&e) || is_loop(&e) => {}
                Err(e) => return Err(io_error(e)),
            }
            // The root exists, so the walk stops at the root at the latest.
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) if existing != self.root => {
                    missing.push(name);
                    existing = parent;
                }
                _ => {
                    return Err(PathError::NotFound {
                        path: original.to_owned(),
                    });
                }
            }
        }

        let canonical = match existing.canonicalize() {
            Ok(canonical) => canonical,
            Err(e) if is_missing(&e) || is_loop(&e) => {
                return Err(PathError::BrokenSymlink {
                    path: self.display(existing),
                });
            }
            Err(e) => return Err(io_error(e)),
        };
        if missing.is_empty() {
            return Ok((canonical, true));
        }
        if access == Access::Write && !canonical.is_dir() {
            return Err(PathError::NotADirectory {
                path: original.to_owned(),
                file: self.display(existing),
            });
        }
        let mut resolved = canonical;
        for name in missing.iter().rev() {
            resolved.push(name);
        }
        Ok((resolved, false))
    }
}

/// `ELOOP`: too many levels of symbolic links. Linux and the BSDs/macOS differ in the number.
#[cfg(target_os = "linux")]
const LOOP_ERRNO: i32 = 40;
#[cfg(not(target_os = "linux"))]
const LOOP_ERRNO: i32 = 62;

fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(LOOP_ERRNO)
}

fn is_missing(e: &io::Error) -> bool {
    // `a/b` where `a` is a file fails with ENOTDIR: for the caller `a/b` simply does not exist.
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The protected directory `name` is, compared ASCII case-insensitively.
pub(crate) fn protected_dir(name: &OsStr) -> Option<&'static str> {
    let name = name.to_str()?;
    PROTECTED_DIRS
        .into_iter()
        .find(|dir| dir.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _outside: tempfile::TempDir,
        _root: tempfile::TempDir,
        ws: Workspace,
        outside: PathBuf,
    }

    /// A workspace with a file, a directory, a `.git` and `.tasks`, and symlinks pointing
    /// inside and outside, next to an outside directory with a secret.
    fn fixture() -> Fixture {
        let outside_dir = tempfile::tempdir().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        fs::write(outside.join("secret.txt"), "secret").unwrap();

        let root_dir = tempfile::tempdir().unwrap();
        let root = root_dir.path();
        fs::create_dir_all(root.join("src/nested")).unwrap();
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        fs::create_dir_all(root.join(".tasks")).unwrap();
        fs::write(root.join("README.md"), "hello\n").unwrap();
        symlink(&outside, root.join("out_dir")).unwrap();
        symlink(outside.join("secret.txt"), root.join("out_file")).unwrap();
        symlink(root.join("src"), root.join("in_dir")).unwrap();
        symlink("src/main.rs", root.join("in_file")).unwrap();
        symlink(".git", root.join("git_link")).unwrap();
        symlink("does-not-exist", root.join("dangling")).unwrap();
        symlink("loop_b", root.join("loop_a")).unwrap();
        symlink("loop_a", root.join("loop_b")).unwrap();

        let ws = Workspace::new(root).unwrap();
        Fixture {
            _outside: outside_dir,
            _root: root_dir,
            ws,
            outside,
        }
    }

    fn err(ws: &Workspace, path: &str, access: Access) -> String {
        match ws.resolve(path, access) {
            Ok(p) => panic!("`{path}` resolved to {} but should be refused", p.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn plain_paths_resolve_inside() {
        let f = fixture();
        let root = f.ws.root();
        for access in [Access::Read, Access::Write] {
            assert_eq!(
                f.ws.resolve("src/main.rs", access).unwrap(),
                root.join("src/main.rs")
            );
            assert_eq!(
                f.ws.resolve("./src//main.rs", access).unwrap(),
                root.join("src/main.rs")
            );
            assert_eq!(f.ws.resolve(".", access).unwrap(), root);
            assert_eq!(f.ws.resolve("src/", access).unwrap(), root.join("src"));
        }
    }

    #[test]
    fn parent_components_are_refused() {
        let f = fixture();
        for path in ["..", "../x", "a/../../x", "src/../README.md", "src/.."] {
            for access in [Access::Read, Access::Write] {
                let msg = err(&f.ws, path, access);
                assert!(msg.contains("is outside the workspace"), "{path}: {msg}");
            }
        }
        assert_eq!(
            err(&f.ws, "../x", Access::Read),
            "`../x` is outside the workspace; paths are relative to the workspace root and may not contain `..`"
        );
    }

    #[test]
    fn absolute_paths_are_refused() {
        let f = fixture();
        assert_eq!(
            err(&f.ws, "/etc/passwd", Access::Read),
            "`/etc/passwd` is an absolute path; paths are relative to the workspace root, e.g. `src/main.rs`"
        );
        // Even an absolute path that points into the workspace: one way to write a path.
        let inside = f.ws.root().join("README.md");
        let msg = err(&f.ws, inside.to_str().unwrap(), Access::Write);
        assert!(msg.contains("is an absolute path"), "{msg}");
    }

    #[test]
    fn empty_and_nul_are_refused() {
        let f = fixture();
        assert!(err(&f.ws, "", Access::Read).starts_with("the path is empty"));
        assert_eq!(
            err(&f.ws, "src/a\0b", Access::Write),
            "`src/a\\0b` contains a NUL byte; write the path without it"
        );
    }

    #[test]
    fn git_and_tasks_are_readable_but_never_writable() {
        let f = fixture();
        assert!(f.ws.resolve(".git/config", Access::Read).is_ok());
        for path in [
            ".git/config",
            ".GIT/config",
            ".Git",
            ".git/hooks/pre-commit",
            "sub/.git/config",
            ".tasks/x",
            ".TASKS/draft/PLAN.md",
            ".tasks",
        ] {
            let msg = err(&f.ws, path, Access::Write);
            assert!(msg.contains("which no tool may write"), "{path}: {msg}");
        }
        assert_eq!(
            err(&f.ws, ".git/config", Access::Write),
            "`.git/config` is inside `.git/`, which no tool may write; git's own files are off limits; change the working tree instead"
        );
        assert_eq!(
            err(&f.ws, ".tasks/x", Access::Write),
            "`.tasks/x` is inside `.tasks/`, which no tool may write; the runner alone writes `.tasks/`; report progress with update_step"
        );
    }

    #[test]
    fn protected_dirs_reached_through_a_symlink_are_not_writable() {
        let f = fixture();
        assert!(f.ws.resolve("git_link/config", Access::Read).is_ok());
        let msg = err(&f.ws, "git_link/config", Access::Write);
        assert!(msg.contains("inside `.git/`"), "{msg}");
        let msg = err(&f.ws, "git_link/new-file", Access::Write);
        assert!(msg.contains("inside `.git/`"), "{msg}");
    }

    #[test]
    fn symlinks_leaving_the_workspace_are_refused() {
        let f = fixture();
        for path in [
            "out_dir",
            "out_dir/secret.txt",
            "out_dir/new.txt",
            "out_file",
        ] {
            for access in [Access::Read, Access::Write] {
                let msg = err(&f.ws, path, access);
                assert!(
                    msg.contains("leads outside the workspace through a symbolic link"),
                    "{path} {access:?}: {msg}"
                );
            }
        }
        // The secret is untouched and still there: nothing was written.
        assert_eq!(
            fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
            "secret"
        );
    }

    #[test]
    fn symlinks_pointing_inside_are_fine() {
        let f = fixture();
        let root = f.ws.root();
        assert_eq!(
            f.ws.resolve("in_file", Access::Read).unwrap(),
            root.join("src/main.rs")
        );
        assert_eq!(
            f.ws.resolve("in_dir/main.rs", Access::Read).unwrap(),
            root.join("src/main.rs")
        );
        assert_eq!(
            f.ws.resolve("in_dir/new.rs", Access::Write).unwrap(),
            root.join("src/new.rs")
        );
    }

    #[test]
    fn missing_paths() {
        let f = fixture();
        let root = f.ws.root();
        assert_eq!(
            err(&f.ws, "nope.txt", Access::Read),
            "`nope.txt` does not exist; use list_files to see which files there are"
        );
        assert_eq!(
            f.ws.resolve("new/dir/file.txt", Access::Write).unwrap(),
            root.join("new/dir/file.txt")
        );
        assert_eq!(
            err(&f.ws, "README.md/x", Access::Write),
            "`README.md/x` cannot be created because `README.md` is a file, not a directory"
        );
        assert!(err(&f.ws, "README.md/x", Access::Read).contains("does not exist"));
    }

    #[test]
    fn broken_symlinks_are_refused() {
        let f = fixture();
        for path in ["dangling", "loop_a", "loop_a/x"] {
            for access in [Access::Read, Access::Write] {
                let msg = err(&f.ws, path, access);
                assert!(msg.contains("cannot be followed"), "{path}: {msg}");
            }
        }
    }

    #[test]
    fn unicode_names() {
        let f = fixture();
        let root = f.ws.root();
        fs::write(root.join("données ünïcode ✓.txt"), "ok").unwrap();
        assert_eq!(
            f.ws.resolve("données ünïcode ✓.txt", Access::Read).unwrap(),
            root.join("données ünïcode ✓.txt")
        );
        assert_eq!(
            f.ws.resolve("日本/新しい.rs", Access::Write).unwrap(),
            root.join("日本/新しい.rs")
        );
        assert_eq!(f.ws.display(&root.join("日本/新しい.rs")), "日本/新しい.rs");
    }

    #[test]
    fn workspace_root_must_be_a_directory() {
        let f = fixture();
        assert!(Workspace::new(f.ws.root().join("README.md")).is_err());
        assert!(Workspace::new(f.ws.root().join("missing")).is_err());
    }

    mod random_paths {
        use super::*;
        use proptest::prelude::*;

        fn segment() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec![
                "..",
                ".",
                "",
                "src",
                "nested",
                "main.rs",
                "new",
                "out_dir",
                "out_file",
                "in_dir",
                "in_file",
                "git_link",
                ".git",
                ".GIT",
                ".tasks",
                "dangling",
                "loop_a",
                "secret.txt",
                "/",
                "README.md",
            ])
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn random_paths_never_resolve_outside(segments in prop::collection::vec(segment(), 1..6)) {
                let f = fixture();
                let path = segments.join("/");
                for access in [Access::Read, Access::Write] {
                    if let Ok(resolved) = f.ws.resolve(&path, access) {
                        let inside = resolved.strip_prefix(f.ws.root());
                        prop_assert!(inside.is_ok(), "{path} -> {}", resolved.display());
                        prop_assert!(!resolved.starts_with(&f.outside));
                        if access == Access::Write {
                            let protected = inside.unwrap().components()
                                .any(|c| protected_dir(c.as_os_str()).is_some());
                            prop_assert!(!protected, "{path} -> {}", resolved.display());
                        }
                    }
                }
            }
        }
    }
}
