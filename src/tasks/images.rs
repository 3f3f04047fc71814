//! File images for undo: what one workspace file was (missing, a regular file with its mode, a
//! symlink with its target), and a content-addressed folder of file contents under a task's
//! `runs/images/` (local: `.tasks/.gitignore` excludes `*/runs/`) to put it back from. The
//! runner keeps a step's before-images here while the step runs; `tick undo` puts them back and
//! keeps the after-images here for `tick redo`. Every put-back is atomic per file (a temp file
//! beside the target, then a rename), mode and link included.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx;
use crate::watch::fingerprint;

/// The folder of a task's images, below its `runs/`.
pub const IMAGES_DIR: &str = "images";
/// Contents, by blake3 hex, below [`IMAGES_DIR`].
const BLOBS_DIR: &str = "blobs";
/// The part of the name of a temp file this module writes beside a workspace file.
pub const RESTORE_TEMP: &str = ".tick-restore-";

/// What a workspace file was at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Image {
    /// There was no file.
    Missing,
    /// A regular file: its content's blake3 hex (the hash the journal and fingerprints use),
    /// its permission bits and its size.
    File { hash: String, mode: u32, size: u64 },
    /// A symbolic link and where it points.
    Symlink { target: String },
}

impl Image {
    /// The hash the journal and fingerprints know this content by ([`fingerprint::hash_file`]
    /// of the file as it would be): a link is hashed as what it points at, so it is left to
    /// the caller.
    pub fn hash(&self) -> Option<&str> {
        match self {
            Image::Missing => Some(fingerprint::MISSING),
            Image::File { hash, .. } => Some(hash),
            Image::Symlink { .. } => None,
        }
    }

    /// One word for a person: what putting this image back does to a file.
    pub fn describe(&self) -> String {
        match self {
            Image::Missing => "missing".to_owned(),
            Image::File { mode, size, .. } => format!("{size} bytes, mode {:o}", mode & 0o7777),
            Image::Symlink { target } => format!("a link to `{target}`"),
        }
    }
}

/// The image folder of the task folder `task_dir`.
pub fn images_dir(task_dir: &Path) -> PathBuf {
    task_dir.join(super::RUNS_DIR).join(IMAGES_DIR)
}

/// A workspace-relative path tick may put back: relative, no `..`, nothing under `.git/` or
/// `.tasks/`, and no parent folder that is a link (which could point outside the workspace).
/// state.yaml is committed, so a clone could name any path in it.
pub fn checked_path(root: &Path, rel: &str) -> Result<PathBuf> {
    let path = Path::new(rel);
    let bad = rel.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        || rel.starts_with(".git/")
        || rel.starts_with(crate::store_path::TASKS_DIR);
    if bad {
        return Err(super::error::Error::NotRestorable(rel.to_owned()).into());
    }
    let mut at = root.to_path_buf();
    let parts: Vec<Component<'_>> = path.components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            let link = at.strip_prefix(root).unwrap_or(&at).display().to_string();
            let rel = rel.to_owned();
            return Err(super::error::Error::BelowLink { rel, link }.into());
        }
    }
    Ok(root.join(path))
}

/// The image of `path` as it is now, hashing its content.
pub fn current(path: &Path) -> Image {
    match fs::symlink_metadata(path) {
        Err(_) => Image::Missing,
        Ok(meta) if meta.file_type().is_symlink() => Image::Symlink {
            target: fs::read_link(path)
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default(),
        },
        Ok(meta) => Image::File {
            hash: fingerprint::hash_file(path),
            mode: meta.permissions().mode() & 0o7777,
            size: meta.len(),
        },
    }
}

/// The content-addressed contents of one task's images.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The contents kept for the task folder `task_dir`.
    pub fn of(task_dir: &Path) -> Blobs {
        Blobs {
            dir: images_dir(task_dir).join(BLOBS_DIR),
        }
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash)
    }

    /// Whether the content `hash` is kept.
    pub fn has(&self, hash: &str) -> bool {
        self.path(hash).is_file()
    }

    /// Keeps `bytes` (a git blob, say); returns its hash.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<String> {
        let hash = blake3::hash(bytes).to_hex().to_string();
        if !self.has(&hash) {
            fsx::create_dir_all(&self.dir)?;
            fsx::write_atomic(&self.path(&hash), bytes)?;
        }
        Ok(hash)
    }

    /// The image of `path` as it is now, its content kept (once per content). `known` is its
    /// hash when the caller has just taken it: a content already kept is then not read again.
    /// A regular file larger than `budget` is not kept: `Ok(None)`, and the budget stays.
    pub fn keep(
        &self,
        path: &Path,
        known: Option<&str>,
        budget: &mut u64,
    ) -> Result<Option<Image>> {
        let meta = match fs::symlink_metadata(path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Some(Image::Missing));
            }
            Err(err) => return Err(Error::io("read", path, &err)),
            Ok(meta) => meta,
        };
        if meta.file_type().is_symlink() {
            return Ok(Some(current(path)));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let mode = meta.permissions().mode() & 0o7777;
        let size = meta.len();
        if let Some(hash) = known.filter(|h| self.has(h)) {
            return Ok(Some(Image::File {
                hash: hash.to_owned(),
                mode,
                size,
            }));
        }
        if size > *budget {
            return Ok(None);
        }
        let hash = self.copy_in(path)?;
        *budget -= size;
        Ok(Some(Image::File { hash, mode, size }))
    }

    /// Copies the file at `path` in, hashing it on the way; returns its hash.
    fn copy_in(&self, path: &Path) -> Result<String> {
        fsx::create_dir_all(&self.dir)?;
        let fail = |err: std::io::Error| Error::io("keep a copy of", path, &err);
        let mut from = fsx::open_regular(path).map_err(fail)?;
        let temp = self
            .dir
            .join(format!(".in-{}-{}", std::process::id(), unique()));
        let mut to = fs::File::create(&temp).map_err(|e| Error::io("write", &temp, &e))?;
        let mut hasher = blake3::Hasher::new();
        let mut buffer = vec![0; 256 * 1024];
        loop {
            let n = from.read(&mut buffer).map_err(fail)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            to.write_all(&buffer[..n])
                .map_err(|e| Error::io("write", &temp, &e))?;
        }
        drop(to);
        let hash = hasher.finalize().to_hex().to_string();
        if self.has(&hash) {
            fsx::remove_file(&temp)?;
        } else {
            fsx::rename(&temp, &self.path(&hash))?;
        }
        Ok(hash)
    }

    /// Puts `image` back at `path`: a file with its content and mode, a link, or no file.
    /// Atomic per file: a temp file beside it, then a rename over it.
    pub fn restore(&self, path: &Path, image: &Image) -> Result<()> {
        let parent = path.parent().unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = parent.join(format!(".{name}{RESTORE_TEMP}{}", std::process::id()));
        match image {
            Image::Missing => match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => {
                    Err(super::error::Error::FolderNow(path.to_path_buf()).into())
                }
                Ok(_) => fsx::remove_file(path),
                Err(_) => Ok(()),
            },
            Image::File { hash, mode, .. } => {
                let source = self.path(hash);
                if !source.is_file() {
                    return Err(super::error::Error::KeptCopyGone {
                        path: path.to_path_buf(),
                        copy: source,
                    }
                    .into());
                }
                fsx::create_dir_all(parent)?;
                fsx::remove_file(&temp)?;
                without_temp_on_error(&temp, || {
                    fsx::crash::point()?;
                    fs::copy(&source, &temp).map_err(|e| Error::io("write", &temp, &e))?;
                    fsx::crash::point()?;
                    fs::set_permissions(&temp, fs::Permissions::from_mode(*mode))
                        .map_err(|e| Error::io("set the mode of", &temp, &e))?;
                    fsx::rename(&temp, path)
                })
            }
            Image::Symlink { target } => {
                fsx::create_dir_all(parent)?;
                fsx::remove_file(&temp)?;
                without_temp_on_error(&temp, || {
                    fsx::crash::point()?;
                    std::os::unix::fs::symlink(target, &temp)
                        .map_err(|e| Error::io("link", &temp, &e))?;
                    fsx::rename(&temp, path)
                })
            }
        }
    }

    /// The text of the kept content `hash` when it is text of a readable size (for a diff).
    pub fn text(&self, hash: &str) -> Option<String> {
        fsx::read_capped(&self.path(hash), fsx::MAX_TEXT_FILE)
            .ok()
            .flatten()
    }
}

/// Runs `put` (which writes `temp`, then renames it into place); when it fails, `temp` goes:
/// a failed put-back leaves nothing beside the file (a kill's is removed by the next command's
/// recovery, [`remove_restore_temp`]).
fn without_temp_on_error(temp: &Path, put: impl FnOnce() -> Result<()>) -> Result<()> {
    let result = put();
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
}

/// A number that differs between calls in one process.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A temp file [`Blobs::restore`] left beside `path` when it was killed mid-way, removed.
pub fn remove_restore_temp(path: &Path) {
    let Some(parent) = path.parent() else {
        return;
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}{RESTORE_TEMP}");
    if let Ok(entries) = fs::read_dir(parent) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// A step's before-images and what it left, as the runner kept them
/// (`runs/images/<step>.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepImages {
    /// The commit `HEAD` was on when the step started: a file git saw unchanged then is as it
    /// is in this commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// What each file the step changed was before its first change in the step.
    #[serde(default)]
    pub before: BTreeMap<String, Image>,
    /// What each of them was when the step ended.
    #[serde(default)]
    pub after: BTreeMap<String, Image>,
    /// Files the step changed whose before-image was not kept, and why (over the cap, not
    /// a regular file, outside git and the step's `files`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_kept: BTreeMap<String, String>,
    /// Before-images taken at the start for files the step might change (the step's files
    /// and what git saw changed), before it is known which it changes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub candidates: BTreeMap<String, Image>,
    /// Candidates over the cap at the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over_cap: Vec<String>,
}

impl StepImages {
    fn path(task_dir: &Path, step: &str) -> PathBuf {
        images_dir(task_dir).join(format!("{step}.json"))
    }

    /// The images kept for `step` of the task in `task_dir`, if any.
    pub fn read(task_dir: &Path, step: &str) -> Result<Option<StepImages>> {
        let path = Self::path(task_dir, step);
        let Some(text) = fsx::read_capped(&path, fsx::MAX_STATE_FILE)? else {
            return Ok(None);
        };
        serde_json::from_str(&text).map(Some).map_err(|err| {
            super::error::Error::RecordUnreadable {
                path: path.clone(),
                detail: err.to_string(),
            }
            .into()
        })
    }

    /// Writes them, atomically.
    pub fn write(&self, task_dir: &Path, step: &str) -> Result<()> {
        let path = Self::path(task_dir, step);
        fsx::create_dir_all(&images_dir(task_dir))?;
        let text = serde_json::to_string(self)
            .map_err(|err| super::error::Error::serialize("the images", err))?;
        fsx::write_atomic(&path, text.as_bytes())
    }

    /// Moves them aside as the images of undo `undo_id` (the next run of the step starts
    /// afresh; `tick redo` reads them there).
    pub fn retire(task_dir: &Path, step: &str, undo_id: &str) -> Result<()> {
        let from = Self::path(task_dir, step);
        if from.exists() {
            fsx::rename(&from, &Self::path(task_dir, &format!("{step}.{undo_id}")))?;
        }
        Ok(())
    }

    /// The images an undo retired ([`StepImages::retire`]).
    pub fn retired(task_dir: &Path, step: &str, undo_id: &str) -> Result<Option<StepImages>> {
        Self::read(task_dir, &format!("{step}.{undo_id}"))
    }

    /// Puts the retired images back as the step's own (a redo).
    pub fn unretire(task_dir: &Path, step: &str, undo_id: &str) -> Result<()> {
        let from = Self::path(task_dir, &format!("{step}.{undo_id}"));
        if from.exists() {
            fsx::rename(&from, &Self::path(task_dir, step))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_a_link_and_no_file_come_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let blobs = Blobs::of(&root.join(".tasks/t"));
        std::fs::write(root.join("bin.dat"), [0u8, 159, 146, 150, 255]).unwrap();
        std::fs::set_permissions(root.join("bin.dat"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("bin.dat", root.join("link")).unwrap();
        let mut budget = u64::MAX;
        let file = blobs
            .keep(&root.join("bin.dat"), None, &mut budget)
            .unwrap()
            .unwrap();
        let link = blobs
            .keep(&root.join("link"), None, &mut budget)
            .unwrap()
            .unwrap();
        let none = blobs
            .keep(&root.join("new.txt"), None, &mut budget)
            .unwrap()
            .unwrap();
        std::fs::write(root.join("bin.dat"), "changed").unwrap();
        std::fs::set_permissions(root.join("bin.dat"), fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::remove_file(root.join("link")).unwrap();
        std::fs::write(root.join("link"), "now a file").unwrap();
        std::fs::write(root.join("new.txt"), "created").unwrap();
        blobs.restore(&root.join("bin.dat"), &file).unwrap();
        blobs.restore(&root.join("link"), &link).unwrap();
        blobs.restore(&root.join("new.txt"), &none).unwrap();
        assert_eq!(current(&root.join("bin.dat")), file);
        assert_eq!(current(&root.join("link")), link);
        assert!(!root.join("new.txt").exists());
    }

    #[test]
    fn a_file_over_the_budget_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::of(&dir.path().join("t"));
        std::fs::write(dir.path().join("big"), vec![7u8; 100]).unwrap();
        let mut budget = 99;
        assert_eq!(
            blobs
                .keep(&dir.path().join("big"), None, &mut budget)
                .unwrap(),
            None
        );
        assert_eq!(budget, 99);
        let mut budget = 100;
        assert!(
            blobs
                .keep(&dir.path().join("big"), None, &mut budget)
                .unwrap()
                .is_some()
        );
        assert_eq!(budget, 0);
    }

    #[test]
    fn paths_outside_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            "../x",
            "/etc/passwd",
            ".git/config",
            ".tasks/x/TODO.md",
            "a/../../b",
            "",
        ] {
            assert!(checked_path(dir.path(), bad).is_err(), "{bad}");
        }
        std::os::unix::fs::symlink("/tmp", dir.path().join("out")).unwrap();
        assert!(checked_path(dir.path(), "out/x").is_err());
        assert!(checked_path(dir.path(), "src/a.rs").is_ok());
    }
}
