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
        .map_err(|err| super::error::Error::serialize("the record", err))?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::fsx::crash::{self, Mode};
    use crate::plan::StepStatus;
    use crate::tasks::state::Undone;
    use crate::tasks::{TODO_FILE, tx};

    const PLAN: &str = "---\ntitle: T\nstatus: approved\n---\n# T\n\n## Steps\n\n- [ ] S1 One\n";
    const TODO: &str = "# TODO: T\n\n- [x] S1 One\n- [ ] S2 Two\n";
    const UNDO_ID: &str = "u1";

    /// What one workspace file is in a layout: content and mode, a link, or nothing.
    #[derive(Clone, Copy)]
    enum Entry {
        File(&'static [u8], u32),
        Link(&'static str),
        Missing,
    }

    /// The files S1 changed, as they were before it (what an undo puts back) and as it left
    /// them: a rewrite, a file it made, one it deleted, a mode change, a link retargeted and a
    /// binary file in a folder it made.
    const FILES: [(&str, Entry, Entry); 6] = [
        (
            "a.txt",
            Entry::File(b"before\n", 0o644),
            Entry::File(b"after\n", 0o644),
        ),
        (
            "new.txt",
            Entry::Missing,
            Entry::File(b"made by S1\n", 0o644),
        ),
        (
            "gone.txt",
            Entry::File(b"was here\n", 0o644),
            Entry::Missing,
        ),
        (
            "run.sh",
            Entry::File(b"echo hi\n", 0o755),
            Entry::File(b"echo hi\n", 0o644),
        ),
        ("link", Entry::Link("a.txt"), Entry::Link("run.sh")),
        (
            "deep/er/new.bin",
            Entry::Missing,
            Entry::File(&[0, 159, 146, 255], 0o600),
        ),
    ];

    fn lay(root: &Path, before: bool) {
        for (path, was, left) in FILES {
            let at = root.join(path);
            let _ = std::fs::remove_file(&at);
            match if before { was } else { left } {
                Entry::File(bytes, mode) => {
                    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                    std::fs::write(&at, bytes).unwrap();
                    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)).unwrap();
                }
                Entry::Link(target) => std::os::unix::fs::symlink(target, &at).unwrap(),
                Entry::Missing => {}
            }
        }
    }

    /// Every file and link of the workspace (`.tasks/` aside) and its image: a temp file
    /// left beside a restored one shows here too.
    fn tree(root: &Path) -> BTreeMap<String, Image> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Image>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel == ".tasks" {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    walk(root, &path, out);
                } else {
                    out.insert(rel, images::current(&path));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(root, root, &mut out);
        out
    }

    fn now() -> DateTime<Utc> {
        "2026-12-02T10:00:00Z".parse().unwrap()
    }

    /// A task whose S1 left [`FILES`] as it left them, and the undo's write-ahead plan.
    fn undo_ready() -> (
        tempfile::TempDir,
        Store,
        TaskRef,
        Plan,
        [BTreeMap<String, Image>; 2],
    ) {
        let (dir, store, task) = crate::tasks::test_task(PLAN, TODO);
        let root = dir.path();
        let blobs = Blobs::of(&task.dir);
        let keep = |budget: &mut u64| -> BTreeMap<String, Image> {
            FILES
                .iter()
                .map(|(path, ..)| {
                    let image = blobs.keep(&root.join(path), None, budget).unwrap().unwrap();
                    ((*path).to_owned(), image)
                })
                .collect()
        };
        let mut budget = u64::MAX;
        lay(root, true);
        let (to, before_tree) = (keep(&mut budget), tree(root));
        lay(root, false);
        let (from, after_tree) = (keep(&mut budget), tree(root));
        let moves = FILES
            .iter()
            .map(|(path, ..)| Move {
                path: (*path).to_owned(),
                from: from[*path].clone(),
                to: to[*path].clone(),
            })
            .collect();
        let plan = Plan {
            id: UNDO_ID.to_owned(),
            step: StepId::top(1),
            action: Action::Undo,
            at: now(),
            moves,
            revert: None,
        };
        (dir, store, task, plan, [before_tree, after_tree])
    }

    /// The undo as `tick undo` commits it: S1 back to `[ ]`, the undo in state.yaml.
    fn undo(store: &Store, task: &TaskRef, plan: &Plan) -> Result<()> {
        apply(store, task, plan, || {
            store.transact(task, now(), "S1 was undone", |tx| {
                tx.set_status(StepId::top(1), None, StepStatus::Pending, None)?;
                tx.record(|state| {
                    state
                        .steps
                        .entry(StepId::top(1))
                        .or_default()
                        .undone
                        .push(Undone {
                            id: UNDO_ID.to_owned(),
                            at: now(),
                            files: FILES.iter().map(|(p, ..)| (*p).to_owned()).collect(),
                            kept: Vec::new(),
                            done_at: None,
                            evidence: Vec::new(),
                            reverted: None,
                            made_stale: Vec::new(),
                            redone_at: None,
                        });
                });
                Ok(())
            })
        })
        .map(|_| ())
    }

    /// After the next command's recovery: the tree, TODO.md and state.yaml all before the
    /// undo or all after it, and nothing of the undo's own left. Returns which.
    fn whole(root: &Path, task: &TaskRef, trees: &[BTreeMap<String, Image>; 2], at: &str) -> bool {
        let now_tree = tree(root);
        let undone = now_tree == trees[0];
        assert!(
            undone || now_tree == trees[1],
            "{at}: a half-restored tree: {now_tree:#?}"
        );
        let todo = std::fs::read_to_string(task.dir.join(TODO_FILE)).unwrap();
        let state: State = std::fs::read_to_string(task.dir.join(STATE_FILE))
            .ok()
            .map(|text| serde_yaml::from_str(&text).unwrap())
            .unwrap_or_default();
        let recorded = state
            .steps
            .get(&StepId::top(1))
            .is_some_and(|r| r.undone.iter().any(|u| u.id == UNDO_ID));
        let marker = if undone { "- [ ] S1" } else { "- [x] S1" };
        assert!(
            todo.contains(marker),
            "{at}: files undone {undone}, TODO.md:\n{todo}"
        );
        assert_eq!(
            recorded, undone,
            "{at}: files undone {undone}, state.yaml disagrees"
        );
        assert!(!record_path(task).exists(), "{at}: the record is left");
        assert!(
            !tx::needs_cleanup(&task.dir),
            "{at}: the task folder needs cleaning"
        );
        undone
    }

    /// Issue 26: an undo stopped at each filesystem operation of its sequence, in turn (the
    /// record, every put-back's temp file, mode and rename, the task's own transaction, the
    /// record's removal), by a kill (nothing after it runs) and by a failing operation,
    /// leaves, once the next command has recovered, the state before the undo or the state
    /// after it: never a half-restored tree.
    #[test]
    fn an_undo_stopped_at_each_point_of_its_sequence_is_all_or_nothing() {
        for mode in [Mode::Kill, Mode::Fail] {
            let mut outcomes = Vec::new();
            for n in 0.. {
                assert!(n < 500, "the sequence never ended");
                let (dir, store, task, plan, trees) = undo_ready();
                let at = format!("{mode:?} at point {n}");
                let lock = store
                    .lock_task_within(&task, "tick undo", Duration::ZERO)
                    .unwrap();
                crash::arm(n, mode);
                let ran = catch_unwind(AssertUnwindSafe(|| undo(&store, &task, &plan)));
                let passed = crash::disarm();
                drop(lock);
                match &ran {
                    Err(payload) => assert!(payload.is::<crash::Killed>(), "{at}: a real panic"),
                    Ok(Err(err)) => {
                        assert!(err.message.contains("an injected failure"), "{at}: {err:?}");
                    }
                    Ok(Ok(())) => {}
                }
                let finished = matches!(ran, Ok(Ok(())));
                // The next command, under the lock, recovers what was left.
                let _next = store
                    .lock_task_within(&task, "tick status", Duration::ZERO)
                    .unwrap();
                let undone = whole(dir.path(), &task, &trees, &at);
                if finished {
                    assert!(undone, "{at}: the undo said it was done");
                }
                if passed <= n {
                    // The sequence ended before the armed point: every point was tried.
                    assert!(finished, "{at}: not stopped, yet not done");
                    break;
                }
                outcomes.push(undone);
            }
            // Stopped before the commit it did not happen, after it it did: both were seen.
            assert!(outcomes.len() > 20, "{mode:?}: {} points", outcomes.len());
            assert!(
                outcomes.contains(&false) && outcomes.contains(&true),
                "{mode:?}: {outcomes:?}"
            );
        }
    }
}
