//! Putting workspace files back (an undo, a redo) as one all-or-nothing change with the
//! task's own transaction: a write-ahead record, `runs/restore.json`, names every file with
//! the image it has and the image it gets; then the files are put back (each atomically);
//! then the task's transaction commits (TODO.md and state.yaml, which name the record's id);
//! then the record goes. A kill at any instant leaves a record the next command under the
//! task's lock finds ([`recover`]): when state.yaml names its id the change happened and the
//! files are finished; otherwise every file goes back to what it had, and the change did
//! not happen. A file that has neither image by then is someone's since, and is left alone.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::images::{self, Blobs, Image};
use super::state::State;
use super::{RUNS_DIR, STATE_FILE, Store, TaskRef};
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::StepId;

/// The write-ahead record in a task's `runs/`.
pub const RESTORE_FILE: &str = "restore.json";

/// What the record is for: the step's state.yaml tells whether it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Undo,
    Redo,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Undo => "undo",
            Action::Redo => "redo",
        }
    }
}

/// One file's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub path: String,
    pub from: Image,
    pub to: Image,
}

/// The record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The undo's id ([`super::state::Undone::id`]).
    pub id: String,
    pub step: StepId,
    pub action: Action,
    pub at: DateTime<Utc>,
    pub moves: Vec<Move>,
    /// For a step committed with `--commit`: the revert commit made once the task's
    /// transaction has committed (and by [`recover`] when a kill came in between).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<Revert>,
}

/// A revert commit of a step's commit, made with git's plumbing on a temporary index: the
/// person's index and tree are never read into it, and only the reverted files' (and the
/// task files') index entries change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revert {
    /// `HEAD` before the revert: the revert's parent.
    pub head: String,
    pub message: String,
    /// The reverted files' entries in the revert (`git update-index --index-info` lines:
    /// `<mode> <blob>\t<path>`, or mode 0 to remove).
    pub index: Vec<String>,
    /// The task's files (TODO.md, state.yaml, PLAN.md), committed as they are on disk.
    pub task_files: Vec<String>,
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub step: StepId,
    pub action: Action,
    /// `true`: the change had been committed and its files are finished; `false`: it had
    /// not, and the files are back as they were before it.
    pub finished: bool,
    /// Files that had neither image: left as they are.
    pub left: Vec<String>,
}

impl Recovered {
    /// One line for a person.
    pub fn message(&self) -> String {
        let what = format!(
            "a `tick {} {}` was cut short",
            self.action.as_str(),
            self.step
        );
        let how = if self.finished {
            "it had been recorded, so tick finished it".to_owned()
        } else {
            format!(
                "tick put the files back as they were before it: the {} did not happen",
                self.action.as_str()
            )
        };
        let left = if self.left.is_empty() {
            String::new()
        } else {
            format!(
                "; changed since and left as they are: {}",
                self.left
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!("{what}; {how}{left}")
    }
}

fn record_path(task: &TaskRef) -> std::path::PathBuf {
    task.dir.join(RUNS_DIR).join(RESTORE_FILE)
}

/// Whether the task's state.yaml records `plan` as having happened.
fn committed(state: &State, plan: &Plan) -> bool {
    state.steps.get(&plan.step).is_some_and(|record| {
        record.undone.iter().any(|u| {
            u.id == plan.id
                && match plan.action {
                    Action::Undo => true,
                    Action::Redo => u.redone_at.is_some(),
                }
        })
    })
}

/// Carries out `plan` (under the task's lock): the record, the files, then `commit` (the
/// task's transaction, which must record `plan.id` in state.yaml, [`committed`]), then the
/// record goes. When `commit` fails the files go back and its error is returned.
pub fn apply<T>(
    store: &Store,
    task: &TaskRef,
    plan: &Plan,
    commit: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let blobs = Blobs::of(&task.dir);
    let text = serde_json::to_string(plan)
        .map_err(|err| Error::internal(format!("could not write the record: {err}")))?;
    fsx::create_dir_all(&task.dir.join(RUNS_DIR))?;
    fsx::write_atomic(&record_path(task), text.as_bytes())?;
    let mut done = Vec::new();
    let mut result = Ok(());
    for step in &plan.moves {
        let moved = images::checked_path(store.root(), &step.path)
            .and_then(|path| blobs.restore(&path, &step.to));
        if let Err(err) = moved {
            result = Err(err);
            break;
        }
        done.push(step);
    }
    let value = result.and_then(|()| commit());
    match value {
        Ok(value) => {
            let reverted = plan.revert.as_ref().map_or(Ok(()), |revert| {
                commit_revert(store.root(), &task.dir, revert)
            });
            fsx::remove_file(&record_path(task))?;
            reverted?;
            Ok(value)
        }
        Err(err) => {
            for step in done.into_iter().rev() {
                if let Ok(path) = images::checked_path(store.root(), &step.path) {
                    let _ = blobs.restore(&path, &step.from);
                }
            }
            fsx::remove_file(&record_path(task))?;
            Err(err)
        }
    }
}

/// Finishes or undoes what a killed [`apply`] left in `task`. Called under the task's lock,
/// after the task's own transaction was recovered. A `--commit` undo's revert commit goes with
/// it: when the undo did not happen, `HEAD` and the index entries go back too.
pub fn recover(store: &Store, task: &TaskRef) -> Result<Option<Recovered>> {
    let path = record_path(task);
    let Some(text) = fsx::read_optional(&path)? else {
        return Ok(None);
    };
    let Ok(plan) = serde_json::from_str::<Plan>(&text) else {
        // Written atomically, so whole: one that does not read was edited. Dropped.
        fsx::remove_file(&path)?;
        return Ok(None);
    };
    let state: State = fsx::read_optional(&task.dir.join(STATE_FILE))?
        .and_then(|text| serde_yaml::from_str(&text).ok())
        .unwrap_or_default();
    let finished = committed(&state, &plan);
    let blobs = Blobs::of(&task.dir);
    let mut left = Vec::new();
    for step in &plan.moves {
        let Ok(file) = images::checked_path(store.root(), &step.path) else {
            continue;
        };
        images::remove_restore_temp(&file);
        let now = images::current(&file);
        let (want, other) = if finished {
            (&step.to, &step.from)
        } else {
            (&step.from, &step.to)
        };
        if same(&now, want) {
            continue;
        }
        if same(&now, other) {
            blobs.restore(&file, want)?;
        } else {
            left.push(step.path.clone());
        }
    }
    if finished && let Some(revert) = &plan.revert {
        // Failing here must not lock the task for good: the files and the task are done.
        let _ = commit_revert(store.root(), &task.dir, revert);
    }
    fsx::remove_file(&path)?;
    Ok(Some(Recovered {
        step: plan.step,
        action: plan.action,
        finished,
        left,
    }))
}

/// Whether a file as it is (`now`) is `image`: the same content and executable bits, the
/// same link, or both missing.
pub fn same(now: &Image, image: &Image) -> bool {
    match (now, image) {
        (
            Image::File {
                hash: a, mode: m, ..
            },
            Image::File {
                hash: b, mode: n, ..
            },
        ) => a == b && (m & 0o111) == (n & 0o111),
        (a, b) => a == b,
    }
}

/// Makes the revert commit (when `HEAD` is still `revert.head`) and sets the real index's
/// entries of its files to it. Run again after a kill, it finishes what is left.
pub fn commit_revert(root: &Path, task_dir: &Path, revert: &Revert) -> Result<()> {
    let git = |args: &[&str], envs: &[(&str, &str)], stdin: Option<&[u8]>| {
        crate::git::write_output(root, args, envs, stdin)
            .map_err(|err| Error::internal(err.to_string()).hint(REVERT_HINT))
    };
    let head = crate::git::head(root).unwrap_or_default();
    let commit = if head == revert.head {
        let git_dir = crate::git::git_dir(root)
            .ok_or_else(|| Error::internal("git sees no repository here").hint(REVERT_HINT))?;
        let index = git_dir.join(format!(
            "tick-revert-{}.index",
            task_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        let index_text = index.to_string_lossy().into_owned();
        let envs = [("GIT_INDEX_FILE", index_text.as_str())];
        git(&["read-tree", &revert.head], &envs, None)?;
        update_index_with(root, &revert.index, &envs)?;
        let mut add = vec!["add", "--"];
        add.extend(revert.task_files.iter().map(String::as_str));
        git(&add, &envs, None)?;
        let tree = git(&["write-tree"], &envs, None)?;
        let commit = git(
            &[
                "commit-tree",
                tree.trim(),
                "-p",
                &revert.head,
                "-m",
                &revert.message,
            ],
            &envs,
            None,
        )?;
        let commit = commit.trim().to_owned();
        git(&["update-ref", "HEAD", &commit, &revert.head], &[], None)?;
        let _ = std::fs::remove_file(&index);
        commit
    } else {
        head
    };
    // The real index: only the entries of the files the revert holds, as it has them.
    let mut paths: Vec<String> = revert
        .index
        .iter()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p.to_owned()))
        .collect();
    paths.extend(revert.task_files.iter().cloned());
    let mut args = vec!["ls-tree", "-z", "--full-tree", commit.as_str(), "--"];
    args.extend(paths.iter().map(String::as_str));
    let listed = crate::git::output(root, &args).unwrap_or_default();
    let mut lines: Vec<String> = listed
        .split('\0')
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let (meta, path) = e.split_once('\t')?;
            let mut parts = meta.split(' ');
            let (mode, _, blob) = (parts.next()?, parts.next()?, parts.next()?);
            Some(format!("{mode} {blob}\t{path}"))
        })
        .collect();
    let present: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p))
        .collect();
    let gone: Vec<String> = paths
        .iter()
        .filter(|p| !present.contains(p.as_str()))
        .map(|p| format!("0 {}\t{p}", "0".repeat(40)))
        .collect();
    lines.extend(gone);
    update_index(root, &lines)
}

const REVERT_HINT: &str = "the files are back as they were before the step; commit the revert by hand \
     (`git add` the step's files and `.tasks/`, then `git commit`)";

/// Sets index entries (`<mode> <blob>\t<path>` lines, mode `0` to remove one), and only
/// those: `git update-index --cacheinfo` / `--force-remove` with the paths as arguments
/// (the sandbox gives git no stdin).
pub fn update_index(root: &Path, lines: &[String]) -> Result<()> {
    update_index_with(root, lines, &[])
}

/// [`update_index`] with `envs` (a temporary `GIT_INDEX_FILE`).
fn update_index_with(root: &Path, lines: &[String], envs: &[(&str, &str)]) -> Result<()> {
    let mut add: Vec<String> = Vec::new();
    let mut remove: Vec<String> = Vec::new();
    for line in lines {
        let Some((meta, path)) = line.split_once('\t') else {
            continue;
        };
        let Some((mode, blob)) = meta.split_once(' ') else {
            continue;
        };
        if mode == "0" {
            remove.push(path.to_owned());
        } else {
            add.extend([
                "--cacheinfo".to_owned(),
                mode.to_owned(),
                blob.to_owned(),
                path.to_owned(),
            ]);
        }
    }
    let runs = [
        (!add.is_empty())
            .then(|| [vec!["update-index".to_owned(), "--add".to_owned()], add].concat()),
        (!remove.is_empty()).then(|| {
            [
                vec![
                    "update-index".to_owned(),
                    "--force-remove".to_owned(),
                    "--".to_owned(),
                ],
                remove,
            ]
            .concat()
        }),
    ];
    for args in runs.into_iter().flatten() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::git::write_output(root, &args, envs, None)
            .map_err(|err| Error::internal(err.to_string()).hint(REVERT_HINT))?;
    }
    Ok(())
}
