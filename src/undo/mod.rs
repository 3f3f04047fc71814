//! Taking one step back (DESIGN §13): `tick undo S3` puts back exactly the bytes S3 changed,
//! from the before-images the runner kept ([`crate::runner::images`]), and only when nobody
//! changed those files since (the one ownership rule names who did: a person, a later step,
//! another task); the step reopens with its evidence kept as `undone` history, and the steps
//! that relied on it go stale. A step committed with `--commit` is undone with a revert
//! commit carrying `Reverts-Step:` and `Task:` trailers, made without touching the person's
//! other staged or unstaged changes. `tick redo S3` puts the step's changes back and ticks it
//! only when its verification passes again.
//!
//! A library API for `tick undo` / `tick redo` and the session: typed outcomes, no printing.
//! Every change goes through [`crate::tasks::restore`] (a write-ahead record around the files
//! and the task's transaction), so a kill at any instant leaves the state before or after.

pub mod from_git;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::tasks::images::{self, Blobs, Image, StepImages};
use crate::tasks::journal::{self, Record};
use crate::tasks::restore::{self, Action, Move, Plan, Revert};
use crate::tasks::state::Undone;
use crate::tasks::{PLAN_FILE, STATE_FILE, Store, TODO_FILE, Task, TaskRef};
use crate::watch::{attribution, fingerprint};

/// Who changed a file since the step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Who {
    /// Nothing in tick's journal explains the change: a person (or a program not run by tick).
    Person,
    /// A step of the same task.
    Step { step: String },
    /// A step of another task.
    Task { task: String, step: Option<String> },
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Person => f.write_str("changed outside tick (by a person)"),
            Who::Step { step } => write!(f, "changed since by step `{step}`"),
            Who::Task { task, step } => match step {
                Some(step) => write!(f, "changed by `{step}` of task `{task}`"),
                None => write!(f, "changed by task `{task}`"),
            },
        }
    }
}

/// A file the undo (or redo) refuses to touch, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub path: String,
    pub why: String,
}

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The step created it: removed.
    Remove,
    /// The step deleted it: made again.
    Recreate,
    /// The step changed its content (or its mode, or its link): put back.
    Restore,
}

/// One file of an undo or redo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: String,
    pub change: Change,
    /// What it is now and what it becomes, in words.
    pub now: String,
    pub becomes: String,
    /// The unified diff of the change, for text files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// What an undo does (or, with `--dry-run`, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undo {
    pub task: String,
    pub step: StepId,
    pub files: Vec<FileChange>,
    /// Files of the step left as they are (`--only` named others).
    pub kept: Vec<String>,
    /// Steps that go stale with "S3 was undone".
    pub stale: Vec<StepId>,
    /// The step's commit, reverted by a new commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
    /// The revert commit made (not in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revert_commit: Option<String>,
    pub dry_run: bool,
}

/// Why an undo or a redo did nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// Files changed since, each with who changed it.
    ChangedSince { conflicts: Vec<Conflict> },
    /// Files whose before-image (or after-image) was not kept.
    NotKept { conflicts: Vec<Conflict> },
    /// A revert of the step's commit would conflict with later commits or the index.
    RevertConflicts {
        commit: String,
        conflicts: Vec<Conflict>,
    },
}

/// The outcome of [`undo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum UndoOutcome {
    Undone(Undo),
    Refused { step: StepId, refusal: Refusal },
}

/// What to undo.
#[derive(Debug, Clone)]
pub struct UndoRequest {
    pub step: StepId,
    /// Only these files (`--only`); empty: all of the step's.
    pub only: Vec<String>,
    pub dry_run: bool,
    pub now: DateTime<Utc>,
}

/// Undoes `request.step` of `task_ref` (taking the task's lock). Refusals are outcomes;
/// errors are for what is wrong with the request (no such step, nothing to undo).
#[allow(
    clippy::too_many_lines,
    reason = "the undo in its order: checks, the plan, the one transaction, read top to bottom"
)]
pub fn undo(store: &Store, task_ref: &TaskRef, request: &UndoRequest) -> Result<UndoOutcome> {
    let _lock = store.lock_task(task_ref, "tick undo")?;
    let task = store.load(task_ref)?;
    let id = request.step;
    let step = task.step_or_error(store, id)?;
    let record = task.state.steps.get(&id).cloned().unwrap_or_default();
    let step_name = id.to_string();
    let Some(kept) = StepImages::read(&task.dir, &step_name)? else {
        return Err(nothing_to_undo(&task, id, &record));
    };
    if matches!(step.status, StepStatus::Pending) && record.files_changed.is_empty() {
        return Err(nothing_to_undo(&task, id, &record));
    }
    let all: BTreeSet<String> = kept
        .after
        .keys()
        .chain(&record.files_changed)
        .chain(kept.not_kept.keys())
        .cloned()
        .collect();
    let selected = select(&all, &request.only, id)?;

    let root = store.root();
    let now_images = match check_files(store, &task, id, &kept, &selected)? {
        Ok(images) => images,
        Err(refusal) => return Ok(UndoOutcome::Refused { step: id, refusal }),
    };
    let blobs = Blobs::of(&task.dir);
    let change = |p: &String| file_change(&blobs, root, p, &now_images[p], &kept.before[p]);
    let files: Vec<FileChange> = selected.iter().map(change).collect();
    let stale = dependents(&task, id, &selected);
    let reverts = step_commit(root, &task.id, id);
    let revert = match &reverts {
        Some(commit) => match plan_revert(root, &task, id, &step.title, commit, &selected)? {
            Ok(revert) => Some(revert),
            Err(conflicts) => {
                return Ok(UndoOutcome::Refused {
                    step: id,
                    refusal: Refusal::RevertConflicts {
                        commit: commit.clone(),
                        conflicts,
                    },
                });
            }
        },
        None => None,
    };
    let mut undo = Undo {
        task: task.id.clone(),
        step: id,
        files,
        kept: all.difference(&selected).cloned().collect(),
        stale: stale.clone(),
        reverts: reverts.clone(),
        revert_commit: None,
        dry_run: request.dry_run,
    };
    if request.dry_run {
        return Ok(UndoOutcome::Undone(undo));
    }

    let moves = keep_after_images(root, &blobs, &selected, &now_images, &kept)?;
    let undo_id = unique_id(&record.undone, request.now, id);
    let plan = Plan {
        id: undo_id.clone(),
        step: id,
        action: Action::Undo,
        at: request.now,
        moves,
        revert,
    };
    // tick's own write: the journal says so before the files change, so no watcher (or the
    // next command's check) takes them for a person's edit.
    journal_writes(store, &task.id, id, &plan, request.now);
    StepImages::retire(&task.dir, &step_name, &undo_id)?;
    let kept_files = undo.kept.clone();
    let restored: Vec<String> = selected.iter().cloned().collect();
    let done_at = record.done_at;
    let evidence = record.evidence.clone();
    let reason = format!("{id} was undone");
    let result = restore::apply(store, task_ref, &plan, || {
        store.transact(task_ref, request.now, &reason, |tx| {
            tx.set_status(id, None, StepStatus::Pending, None)?;
            for dependent in &stale {
                tx.set_status(*dependent, None, StepStatus::Stale, Some(&reason))?;
            }
            let undone = Undone {
                id: undo_id.clone(),
                at: request.now,
                files: restored.clone(),
                kept: kept_files.clone(),
                done_at,
                evidence: evidence.clone(),
                reverted: reverts.clone(),
                made_stale: stale.clone(),
                redone_at: None,
            };
            tx.record(|state| record_undone(state, id, undone, request.now));
            Ok(())
        })
    });
    if let Err(err) = result {
        let _ = StepImages::unretire(&task.dir, &step_name, &undo_id);
        return Err(err);
    }
    if undo.reverts.is_some() {
        undo.revert_commit = crate::git::head(root);
    }
    Ok(UndoOutcome::Undone(undo))
}

/// What `tick redo` did to the files; the verification follows ([`crate::runner::redo`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redo {
    pub task: String,
    pub step: StepId,
    pub files: Vec<FileChange>,
}

/// The outcome of [`redo_files`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RedoOutcome {
    Redone(Redo),
    Refused { step: StepId, refusal: Refusal },
}

/// Puts the changes of the last undo of `id` back (the caller holds the task's lock), when
/// every file is still as the undo left it. The step stays open: the caller verifies it.
#[allow(
    clippy::too_many_lines,
    reason = "the redo in its order: checks per file, the plan, the one transaction"
)]
pub fn redo_files(
    store: &Store,
    task_ref: &TaskRef,
    id: StepId,
    now: DateTime<Utc>,
) -> Result<RedoOutcome> {
    let task = store.load(task_ref)?;
    task.step_or_error(store, id)?;
    let record = task.state.steps.get(&id).cloned().unwrap_or_default();
    let Some(last) = record.undone.last().filter(|u| u.redone_at.is_none()) else {
        return Err(
            Error::input(format!("`{id}` has no undo to redo")).hint(format!(
                "`tick undo {id}` takes a step back; `tick log` shows what was undone and redone"
            )),
        );
    };
    let step_name = id.to_string();
    let Some(kept) = StepImages::retired(&task.dir, &step_name, &last.id)? else {
        return Err(Error::input(format!(
            "the images of `{id}`'s undo are gone from `runs/images/`"
        ))
        .hint("run the step again with `tick run --step`; nothing was changed"));
    };
    let root = store.root();
    let blobs = Blobs::of(&task.dir);
    let journal = journal::read_workspace(store.dir()).unwrap_or_default();
    let mut conflicts = Vec::new();
    let mut missing = Vec::new();
    let mut moves = Vec::new();
    let mut files = Vec::new();
    for path in &last.files {
        let file = images::checked_path(root, path)?;
        let now_image = images::current(&file);
        let (Some(before), Some(after)) = (kept.before.get(path), kept.after.get(path)) else {
            missing.push(Conflict {
                path: path.clone(),
                why: "its image was not kept".to_owned(),
            });
            continue;
        };
        if !restore::same(&now_image, before) {
            conflicts.push(Conflict {
                path: path.clone(),
                why: who_changed(&task, id, path, &file, &journal).to_string(),
            });
            continue;
        }
        if let Some(hash) = after.hash()
            && !matches!(after, Image::Missing)
            && !blobs.has(hash)
        {
            missing.push(Conflict {
                path: path.clone(),
                why: "the copy the undo kept is gone".to_owned(),
            });
            continue;
        }
        files.push(file_change(&blobs, root, path, &now_image, after));
        moves.push(Move {
            path: path.clone(),
            from: now_image,
            to: after.clone(),
        });
    }
    if !missing.is_empty() {
        return Ok(RedoOutcome::Refused {
            step: id,
            refusal: Refusal::NotKept { conflicts: missing },
        });
    }
    if !conflicts.is_empty() {
        return Ok(RedoOutcome::Refused {
            step: id,
            refusal: Refusal::ChangedSince { conflicts },
        });
    }
    let plan = Plan {
        id: last.id.clone(),
        step: id,
        action: Action::Redo,
        at: now,
        moves,
        revert: None,
    };
    journal_writes(store, &task.id, id, &plan, now);
    let undo_id = last.id.clone();
    let redone: Vec<String> = last.files.clone();
    restore::apply(store, task_ref, &plan, || {
        store.transact(task_ref, now, &format!("{id} was redone"), |tx| {
            tx.record(|state| {
                let entry = state.steps.entry(id).or_default();
                if let Some(undone) = entry.undone.iter_mut().find(|u| u.id == undo_id) {
                    undone.redone_at = Some(now);
                }
                let mut files: BTreeSet<String> = entry.files_changed.iter().cloned().collect();
                files.extend(redone.iter().cloned());
                entry.files_changed = files.into_iter().collect();
            });
            Ok(())
        })
    })?;
    StepImages::unretire(&task.dir, &step_name, &undo_id)?;
    Ok(RedoOutcome::Redone(Redo {
        task: task.id.clone(),
        step: id,
        files,
    }))
}

/// Whether every one of `selected` can be put back: its before-image was kept, and it is as
/// the step left it (else who changed it, by the one ownership rule). Returns what each is
/// now.
fn check_files(
    store: &Store,
    task: &Task,
    id: StepId,
    kept: &StepImages,
    selected: &BTreeSet<String>,
) -> Result<std::result::Result<BTreeMap<String, Image>, Refusal>> {
    // What cannot be put back, said before anything starts.
    let unkeepable: Vec<Conflict> = selected
        .iter()
        .filter(|p| !kept.before.contains_key(*p))
        .map(|p| Conflict {
            path: p.clone(),
            why: kept.not_kept.get(p).map_or_else(
                || "no before-image was kept".to_owned(),
                |why| format!("its before-image was not kept: {why}"),
            ),
        })
        .collect();
    if !unkeepable.is_empty() {
        return Ok(Err(Refusal::NotKept {
            conflicts: unkeepable,
        }));
    }
    let journal = journal::read_workspace(store.dir()).unwrap_or_default();
    let mut conflicts = Vec::new();
    let mut now_images = BTreeMap::new();
    for path in selected {
        let file = images::checked_path(store.root(), path)?;
        let now = images::current(&file);
        let left = kept.after.get(path).cloned().unwrap_or(Image::Missing);
        if !restore::same(&now, &left) {
            conflicts.push(Conflict {
                path: path.clone(),
                why: who_changed(task, id, path, &file, &journal).to_string(),
            });
        }
        now_images.insert(path.clone(), now);
    }
    if !conflicts.is_empty() {
        return Ok(Err(Refusal::ChangedSince { conflicts }));
    }
    Ok(Ok(now_images))
}

/// state.yaml's side of an undo: the step open again with `undone` history (its evidence and
/// fingerprints there, not on the step), the steps made stale marked so.
fn record_undone(
    state: &mut crate::tasks::state::State,
    id: StepId,
    undone: Undone,
    now: DateTime<Utc>,
) {
    for dependent in &undone.made_stale {
        let record = state.steps.entry(*dependent).or_default();
        record.status = Some(StepStatus::Stale);
        record.changed_at = Some(now);
    }
    let entry = state.steps.entry(id).or_default();
    entry.status = Some(StepStatus::Pending);
    entry.changed_at = Some(now);
    entry.changed_by = Some(crate::tasks::state::Actor::Person);
    entry.done_at = None;
    entry.evidence.clear();
    entry.fingerprints.clear();
    entry.later_changes.clear();
    entry.before_images_not_kept.clear();
    entry.files_changed.clone_from(&undone.kept);
    entry.undone.push(undone);
}

/// The moves of an undo, with each file's after-image (for `tick redo`) kept first.
fn keep_after_images(
    root: &std::path::Path,
    blobs: &Blobs,
    selected: &BTreeSet<String>,
    now_images: &BTreeMap<String, Image>,
    kept: &StepImages,
) -> Result<Vec<Move>> {
    let mut moves = Vec::new();
    let mut unlimited = u64::MAX;
    for path in selected {
        let file = images::checked_path(root, path)?;
        let from = blobs
            .keep(&file, now_images[path].hash(), &mut unlimited)?
            .unwrap_or_else(|| now_images[path].clone());
        moves.push(Move {
            path: path.clone(),
            from,
            to: kept.before[path].clone(),
        });
    }
    Ok(moves)
}

fn nothing_to_undo(task: &Task, id: StepId, record: &crate::tasks::state::StepRecord) -> Error {
    if record.undone.last().is_some_and(|u| u.redone_at.is_none()) {
        return Error::input(format!("`{id}` is undone already")).hint(format!(
            "`tick redo {id}` puts its changes back; nothing was changed"
        ));
    }
    Error::input(format!(
        "tick kept no before-images for `{id}` of task `{}`",
        task.id
    ))
    .hint("only a step run by this version of tick can be undone; nothing was changed")
}

/// The files to undo: all of them, or those `only` names (each must be one of the step's).
fn select(all: &BTreeSet<String>, only: &[String], id: StepId) -> Result<BTreeSet<String>> {
    if only.is_empty() {
        return Ok(all.clone());
    }
    let mut selected = BTreeSet::new();
    for path in only {
        let path = path.trim_start_matches("./").to_owned();
        if !all.contains(&path) {
            let listed: Vec<String> = all.iter().map(|p| format!("`{p}`")).collect();
            return Err(
                Error::input(format!("`{id}` did not change `{path}`")).hint(format!(
                    "its files are {}; nothing was changed",
                    if listed.is_empty() {
                        "none".to_owned()
                    } else {
                        listed.join(", ")
                    }
                )),
            );
        }
        selected.insert(path);
    }
    Ok(selected)
}

/// Who made `path` what it is now, by the one ownership rule.
fn who_changed(
    task: &Task,
    id: StepId,
    path: &str,
    file: &std::path::Path,
    journal: &[Record],
) -> Who {
    let hash = fingerprint::hash_file(file);
    match attribution::owner(path, &hash, journal) {
        Some(owner) if owner.task == task.id => match owner.step {
            Some(step) if step != id.to_string() => Who::Step { step },
            // The step's own record, yet not what it left: someone changed it back and forth.
            _ => Who::Person,
        },
        Some(owner) => Who::Task {
            task: owner.task,
            step: owner.step,
        },
        None => Who::Person,
    }
}

/// One file's change, with a diff when both sides are text.
fn file_change(
    blobs: &Blobs,
    root: &std::path::Path,
    path: &str,
    now: &Image,
    becomes: &Image,
) -> FileChange {
    let change = match (now, becomes) {
        (_, Image::Missing) => Change::Remove,
        (Image::Missing, _) => Change::Recreate,
        _ => Change::Restore,
    };
    let text_of = |image: &Image, current: bool| -> Option<String> {
        match image {
            Image::Missing => Some(String::new()),
            Image::File { hash, .. } => {
                if current {
                    crate::fsx::read_capped(&root.join(path), crate::fsx::MAX_TEXT_FILE)
                        .ok()
                        .flatten()
                } else {
                    blobs.text(hash)
                }
            }
            Image::Symlink { .. } => None,
        }
    };
    let diff = match (text_of(now, true), text_of(becomes, false)) {
        (Some(a), Some(b)) if a != b => Some(
            similar::TextDiff::from_lines(&a, &b)
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{path}"), &format!("b/{path}"))
                .to_string(),
        ),
        _ => None,
    };
    FileChange {
        path: path.to_owned(),
        change,
        now: now.describe(),
        becomes: becomes.describe(),
        diff,
    }
}

/// The done steps that relied on `id`: those that depend on it (directly or through other
/// steps), and those ticked after it whose files include one of `files`.
fn dependents(task: &Task, id: StepId, files: &BTreeSet<String>) -> Vec<StepId> {
    let steps: Vec<&crate::tasks::todo_md::Step> = task.todo.all_steps().collect();
    let done_at = task.state.steps.get(&id).and_then(|r| r.done_at);
    let mut reached: BTreeSet<StepId> = BTreeSet::from([id]);
    loop {
        let before = reached.len();
        for step in &steps {
            if let Some(sid) = step.id
                && step.depends.iter().any(|d| reached.contains(d))
            {
                reached.insert(sid);
            }
        }
        if reached.len() == before {
            break;
        }
    }
    steps
        .iter()
        .filter_map(|step| {
            let sid = step.id?;
            if sid == id || step.status != StepStatus::Done {
                return None;
            }
            let record = task.state.steps.get(&sid);
            let by_files = record.is_some_and(|r| {
                r.done_at.is_some_and(|at| done_at.is_none_or(|d| at >= d))
                    && r.files_changed
                        .iter()
                        .chain(r.fingerprints.keys())
                        .any(|f| files.contains(f))
            });
            (reached.contains(&sid) || by_files).then_some(sid)
        })
        .collect()
}

fn unique_id(undone: &[Undone], now: DateTime<Utc>, id: StepId) -> String {
    let base = format!("{}-{id}", now.format("%Y%m%d-%H%M%S"));
    let mut candidate = base.clone();
    let mut n = 2;
    while undone.iter().any(|u| u.id == candidate) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    candidate
}

/// Journals each file the plan writes as tick's own (`write` records with the content's
/// hash), so the ownership rule never calls them out-of-band.
fn journal_writes(store: &Store, task: &str, id: StepId, plan: &Plan, now: DateTime<Utc>) {
    let mut records = Vec::with_capacity(plan.moves.len());
    for step in &plan.moves {
        let hash = match &step.to {
            Image::Symlink { target } => {
                let at = store
                    .root()
                    .join(&step.path)
                    .parent()
                    .map(|p| p.join(target));
                at.map_or_else(
                    || fingerprint::MISSING.to_owned(),
                    |p| fingerprint::hash_file(&p),
                )
            }
            other => other.hash().unwrap_or(fingerprint::MISSING).to_owned(),
        };
        records.push(Record::Write {
            path: step.path.clone(),
            hash,
            at: now,
            task: task.to_owned(),
            step: Some(id.to_string()),
        });
    }
    // Like the runner's records: a journal that cannot be written never fails the undo
    // (the files then count as changed outside tick, and are verified again).
    let _ = journal::record_all(store.dir(), &records);
}

/// The commit `--commit` made for `id` of `task` (its `Task:` and `Step:` trailers) on the
/// current branch, unless a later commit already reverted it.
pub fn step_commit(root: &std::path::Path, task: &str, id: StepId) -> Option<String> {
    let commits = from_git::read_trailers(root, None).ok()?;
    let step = id.to_string();
    let mut found = None;
    // Oldest first: the last `Step:` commit, unless a `Reverts-Step:` commit follows it.
    for commit in commits.iter().rev() {
        if commit.task.as_deref() != Some(task) {
            continue;
        }
        if commit.step.as_deref() == Some(step.as_str()) {
            found = Some(commit.id.clone());
        } else if commit.reverts_step.as_deref() == Some(step.as_str()) {
            found = None;
        }
    }
    found
}

/// The revert of `commit` for the files `selected`: refused (the conflicting files named)
/// when a later commit or the index changed one of them.
fn plan_revert(
    root: &std::path::Path,
    task: &Task,
    id: StepId,
    title: &str,
    commit: &str,
    selected: &BTreeSet<String>,
) -> Result<std::result::Result<Revert, Vec<Conflict>>> {
    let head = crate::git::head(root).ok_or_else(|| Error::internal("git sees no commit here"))?;
    let in_commit = from_git::commit_files(root, commit);
    let paths: Vec<&String> = selected.intersection(&in_commit).collect();
    let parent = format!("{commit}^");
    let was = crate::runner::images::ls_tree(root, &parent, &paths);
    let made = crate::runner::images::ls_tree(root, commit, &paths);
    let at_head = crate::runner::images::ls_tree(root, &head, &paths);
    let staged = index_entries(root, &paths);
    let mut conflicts = Vec::new();
    let mut index = Vec::new();
    for path in &paths {
        let key =
            |e: Option<&crate::runner::images::TreeEntry>| e.map(|e| (e.mode, e.blob.clone()));
        if key(at_head.get(*path)) != key(made.get(*path)) {
            conflicts.push(Conflict {
                path: (*path).clone(),
                why: format!("was changed by a later commit after {}", short(commit)),
            });
            continue;
        }
        if staged.get(*path) != key(at_head.get(*path)).as_ref() {
            conflicts.push(Conflict {
                path: (*path).clone(),
                why: "has staged changes".to_owned(),
            });
            continue;
        }
        index.push(match was.get(*path) {
            Some(entry) => format!("{:o} {}\t{path}", entry.mode, entry.blob),
            None => format!("0 {}\t{path}", "0".repeat(40)),
        });
    }
    if !conflicts.is_empty() {
        return Ok(Err(conflicts));
    }
    let task_files = [PLAN_FILE, TODO_FILE, STATE_FILE]
        .iter()
        .map(|f| {
            task.dir
                .join(f)
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let message = format!(
        "Revert \"{title}\"\n\nThis reverts commit {commit}.\n\nTask: {}\nReverts-Step: {id}\n",
        task.id
    );
    Ok(Ok(Revert {
        head,
        message,
        index,
        task_files,
    }))
}

/// The index's (mode, blob) of each of `paths`.
fn index_entries(root: &std::path::Path, paths: &[&String]) -> BTreeMap<String, (u32, String)> {
    let mut args = vec!["ls-files", "-z", "-s", "--"];
    args.extend(paths.iter().map(|p| p.as_str()));
    let listed = crate::git::output(root, &args).unwrap_or_default();
    listed
        .split('\0')
        .filter_map(|e| {
            // `<mode> <blob> <stage>\t<path>`
            let (meta, path) = e.split_once('\t')?;
            let mut parts = meta.split(' ');
            let mode = u32::from_str_radix(parts.next()?, 8).ok()?;
            let blob = parts.next()?.to_owned();
            Some((path.to_owned(), (mode, blob)))
        })
        .collect()
}

fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// What `tick redo` did: the files, then the verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RedoReport {
    #[serde(flatten)]
    pub outcome: RedoOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::runner::redo::Verdict>,
}

/// Redoes step `id` of `task_ref` (taking the task's lock): its changes put back when the
/// files are as the undo left them, then its `verify` run; only a pass ticks it.
pub fn redo(
    store: &Store,
    task_ref: &TaskRef,
    id: StepId,
    env: &crate::tools::bash::CommandEnv,
    hooks: &crate::hooks::HookSet,
    clock: &crate::env::Clock,
    sink: &mut crate::runner::Sink<'_>,
) -> Result<RedoReport> {
    let _lock = store.lock_task(task_ref, "tick redo")?;
    let outcome = redo_files(store, task_ref, id, clock.precise())?;
    let verdict = match &outcome {
        RedoOutcome::Redone(_) => Some(crate::runner::redo::verify_redone(
            store, task_ref, env, hooks, clock, id, sink,
        )?),
        RedoOutcome::Refused { .. } => None,
    };
    Ok(RedoReport { outcome, verdict })
}
