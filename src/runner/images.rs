//! A step's before-images, kept while it runs (DESIGN §13): what every file the step changes
//! looked like before its first change in the step, whoever changed it (a tool's write, an
//! agent's `bash`, a verify command). Taken in two halves around the step's work, from the
//! same snapshots the runner already takes ([`Snapshot`]):
//!
//! - at the start, the content of every file the step might change that git could not give
//!   back later (its `files`, and what git already sees changed or new) is kept in the task's
//!   `runs/images/` (content-addressed, each content once);
//! - at the end, for the files the step did change: those kept at the start, or the version
//!   in the commit `HEAD` was on (git saw them unchanged), or "missing" (created by the step).
//!
//! Kept bytes are capped per step (`limits.max_undo_bytes`); a file over the cap is named in
//! the step's record (`before_images_not_kept`), so an undo says so before it starts. Writes
//! nothing but `runs/images/`: a failure here never fails a step (the file is then named as
//! not kept).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;

use super::changes::Snapshot;
use crate::tasks::images::{self, Blobs, Image, StepImages};
use crate::watch::fingerprint;

/// The before-images of one step while it runs.
#[derive(Debug)]
pub struct Capture {
    task_dir: std::path::PathBuf,
    root: std::path::PathBuf,
    step: String,
    images: StepImages,
    blobs: Blobs,
    budget: u64,
    in_git: bool,
}

/// What the end of a step adds to what it changed.
#[derive(Debug, Default)]
pub struct Finished {
    /// Files whose before-image was not kept, and why.
    pub not_kept: BTreeMap<String, String>,
    /// Files whose mode (not content) the step changed: a change all the same.
    pub mode_changed: Vec<String>,
}

impl Capture {
    /// Keeps what the step may change, as `before` (the runner's snapshot at the start) saw
    /// it, within `cap` bytes. An earlier attempt's images of the same step are kept: the
    /// before-image is of the first change.
    pub fn start(root: &Path, task_dir: &Path, step: &str, before: &Snapshot, cap: u64) -> Capture {
        let mut images = StepImages::read(task_dir, step)
            .ok()
            .flatten()
            .unwrap_or_default();
        let in_git = before.dirty.is_some();
        if images.head.is_none() {
            images.head = crate::git::head(root);
        }
        let blobs = Blobs::of(task_dir);
        let mut budget = cap;
        // A tracked file git sees unchanged is in `HEAD`: nothing to copy now.
        let clean: Vec<&String> = before
            .files
            .keys()
            .filter(|p| before.dirty.as_ref().is_some_and(|d| !d.contains(*p)))
            .collect();
        let tracked = if in_git {
            tracked(root, &clean)
        } else {
            BTreeSet::new()
        };
        for (path, hash) in &before.files {
            if images.before.contains_key(path)
                || images.candidates.contains_key(path)
                || tracked.contains(path)
                || hash == fingerprint::UNREADABLE
            {
                continue;
            }
            if hash == fingerprint::MISSING {
                images.candidates.insert(path.clone(), Image::Missing);
                continue;
            }
            match blobs.keep(&root.join(path), Some(hash), &mut budget) {
                Ok(Some(image)) => {
                    images.candidates.insert(path.clone(), image);
                }
                Ok(None) | Err(_) => images.over_cap.push(path.clone()),
            }
        }
        // Written now: a step killed half-way can still be undone.
        let _ = images.write(task_dir, step);
        Capture {
            task_dir: task_dir.to_path_buf(),
            root: root.to_path_buf(),
            step: step.to_owned(),
            images,
            blobs,
            budget,
            in_git,
        }
    }

    /// The step's work is over and it changed `changed` (`after`: the runner's snapshot at
    /// its end): records each one's before-image and what it left.
    pub fn finish(mut self, changed: &BTreeSet<String>, after: &Snapshot) -> Finished {
        let mut finished = Finished::default();
        // A mode change alone leaves the content hash as it was: git's list says it changed.
        if let Some(dirty) = &after.dirty {
            let others: Vec<&String> = dirty.iter().filter(|p| !changed.contains(*p)).collect();
            let at_head = self.at_head(&others);
            for path in others {
                let was = self
                    .images
                    .before
                    .get(path)
                    .or_else(|| self.images.candidates.get(path))
                    .map(mode_of)
                    .or_else(|| at_head.get(path).map(|e| Some(e.mode & 0o111)));
                let now = mode_of(&images::current(&self.root.join(path)));
                if let Some(was) = was
                    && was.is_some()
                    && now.is_some()
                    && was != now
                {
                    finished.mode_changed.push(path.clone());
                }
            }
        }
        let all: BTreeSet<String> = changed
            .iter()
            .chain(&finished.mode_changed)
            .cloned()
            .collect();
        let missing: Vec<&String> = all
            .iter()
            .filter(|p| {
                !self.images.before.contains_key(*p) && !self.images.candidates.contains_key(*p)
            })
            .collect();
        let at_head = self.at_head(&missing);
        let mut fetched = self.fetch(&at_head);
        for path in &all {
            if let Some(image) = self.images.candidates.remove(path) {
                self.images.before.insert(path.clone(), image);
            }
            if !self.images.before.contains_key(path) {
                let bytes = fetched.remove(path);
                match self.head_image(path, at_head.get(path), bytes) {
                    Ok(image) => {
                        self.images.before.insert(path.clone(), image);
                    }
                    Err(why) => {
                        self.images.not_kept.insert(path.clone(), why);
                    }
                }
            }
            let image = match (
                images::current(&self.root.join(path)),
                after.files.get(path),
            ) {
                (Image::File { mode, size, .. }, Some(hash)) => Image::File {
                    hash: hash.clone(),
                    mode,
                    size,
                },
                (image, _) => image,
            };
            self.images.after.insert(path.clone(), image);
        }
        self.images.candidates.clear();
        self.images.over_cap.clear();
        let _ = self.images.write(&self.task_dir, &self.step);
        finished.not_kept.clone_from(&self.images.not_kept);
        finished
    }

    /// The contents of the files in `entries` (git's, at the step's start) that fit the
    /// budget, fetched at once.
    fn fetch(&self, entries: &BTreeMap<String, TreeEntry>) -> BTreeMap<String, Vec<u8>> {
        let mut left = self.budget;
        let wanted: Vec<(&String, &TreeEntry)> = entries
            .iter()
            .filter(|(_, e)| {
                let fits = e.mode == 0o120_000 || e.size <= left;
                if fits && e.mode != 0o120_000 {
                    left -= e.size;
                }
                fits
            })
            .collect();
        let blobs: Vec<String> = wanted.iter().map(|(_, e)| e.blob.clone()).collect();
        wanted
            .iter()
            .zip(cat_blobs(&self.root, &blobs))
            .filter_map(|((path, _), bytes)| Some(((*path).clone(), bytes?)))
            .collect()
    }

    /// The before-image of `path`, which the start did not keep: git's version at the step's
    /// start (`entry`, with its `bytes`), or none at all (created by the step).
    fn head_image(
        &mut self,
        path: &str,
        entry: Option<&TreeEntry>,
        bytes: Option<Vec<u8>>,
    ) -> Result<Image, String> {
        if self.images.over_cap.iter().any(|p| p == path) {
            return Err("larger than `limits.max_undo_bytes`".to_owned());
        }
        if !self.in_git {
            return Err("outside git and outside the step's `files`".to_owned());
        }
        let Some(entry) = entry else {
            // git saw it neither changed nor new, and it is not in `HEAD`: there was none.
            return Ok(Image::Missing);
        };
        let Some(bytes) = bytes else {
            return Err(if entry.size > self.budget {
                "larger than `limits.max_undo_bytes`".to_owned()
            } else {
                format!("git could not give back blob {}", entry.blob)
            });
        };
        if entry.mode == 0o120_000 {
            return Ok(Image::Symlink {
                target: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
        let size = bytes.len() as u64;
        let hash = self.blobs.put_bytes(&bytes).map_err(|e| e.to_string())?;
        self.budget = self.budget.saturating_sub(size);
        Ok(Image::File {
            hash,
            mode: if entry.mode == 0o100_755 {
                0o755
            } else {
                0o644
            },
            size,
        })
    }

    /// Mode and blob of each of `paths` in the commit the step started on.
    fn at_head(&self, paths: &[&String]) -> BTreeMap<String, TreeEntry> {
        let Some(head) = self.images.head.as_deref() else {
            return BTreeMap::new();
        };
        ls_tree(&self.root, head, paths)
    }
}

/// The permission bits of a file image; `None` for anything else.
fn mode_of(image: &Image) -> Option<u32> {
    match image {
        Image::File { mode, .. } => Some(mode & 0o111),
        _ => None,
    }
}

/// Which of `paths` git tracks.
fn tracked(root: &Path, paths: &[&String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for chunk in paths.chunks(500) {
        let mut args = vec!["ls-files", "-z", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        if let Some(out) = crate::git::output(root, &args) {
            found.extend(out.split('\0').filter(|p| !p.is_empty()).map(str::to_owned));
        }
    }
    found
}

/// One file in a commit: its mode, blob and size.
#[derive(Debug, Clone)]
pub struct TreeEntry {
    pub mode: u32,
    pub blob: String,
    pub size: u64,
}

/// `git ls-tree` of `paths` in `commit`.
pub fn ls_tree(root: &Path, commit: &str, paths: &[&String]) -> BTreeMap<String, TreeEntry> {
    let mut found = BTreeMap::new();
    for chunk in paths.chunks(500) {
        let mut args = vec!["ls-tree", "-z", "-l", "--full-tree", commit, "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        let Some(out) = crate::git::output(root, &args) else {
            continue;
        };
        for entry in out.split('\0').filter(|e| !e.is_empty()) {
            // `<mode> SP <type> SP <object> SP+ <size> TAB <path>`
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut parts = meta.split_whitespace();
            let (Some(mode), Some("blob"), Some(blob), Some(size)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if let (Ok(mode), Ok(size)) = (u32::from_str_radix(mode, 8), size.parse()) {
                found.insert(
                    path.to_owned(),
                    TreeEntry {
                        mode,
                        blob: blob.to_owned(),
                        size,
                    },
                );
            }
        }
    }
    found
}

/// The bytes of each of `blobs` (in order; `None` for one git cannot give), from one
/// `git cat-file --batch`.
pub fn cat_blobs(root: &Path, blobs: &[String]) -> Vec<Option<Vec<u8>>> {
    let none = || blobs.iter().map(|_| None).collect();
    if blobs.is_empty() {
        return Vec::new();
    }
    // The sandbox gives its command no stdin, and `--batch` reads the ids from it: this one
    // runs under guard 1's settings alone. It reads objects and runs nothing (no filters, no
    // textconv).
    let mut command = crate::git::command_in(
        &crate::git::Jail::SettingsOnly,
        root,
        &["cat-file", "--batch"],
    );
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = command.spawn() else {
        return none();
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return none();
    };
    let lines: String = blobs.iter().flat_map(|b| [b.as_str(), "\n"]).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(lines.as_bytes());
    });
    let mut out = BufReader::new(stdout);
    let mut found = Vec::with_capacity(blobs.len());
    for _ in blobs {
        let mut header = String::new();
        if out.read_line(&mut header).unwrap_or(0) == 0 {
            found.push(None);
            continue;
        }
        // `<object> SP <type> SP <size>`, or `<object> SP missing`.
        let Some(size) = header
            .split(' ')
            .nth(2)
            .and_then(|s| s.trim().parse::<usize>().ok())
        else {
            found.push(None);
            continue;
        };
        let mut bytes = vec![0; size + 1];
        if out.read_exact(&mut bytes).is_err() {
            found.push(None);
            continue;
        }
        bytes.truncate(size);
        found.push(Some(bytes));
    }
    let _ = writer.join();
    let _ = child.wait();
    found
}
