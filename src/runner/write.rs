//! The one place the runner writes a task's TODO.md, PLAN.md status and state.yaml, each write
//! one transaction (`tasks::tx`): a step's marker and its state.yaml record land together, so
//! a kill at any instant leaves either the old pair or the new one, never `[x]` without its
//! record. Each transaction reads the files as they are now (a person may have edited them
//! while a step ran) and changes only what the runner owns.

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::plan::{Phase, StepId, StepStatus};
use crate::tasks::state::State;
use crate::tasks::todo_md::Step;
use crate::tasks::tx::SetStatus;
use crate::tasks::{Store, TaskRef};

/// What became of a status the runner meant to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrite {
    /// Written (or already so); the task is now in this phase.
    Written(Phase),
    /// A person changed the step's marker away from what the runner expected while the step
    /// ran: their version is kept and the marker was not written.
    Kept { current: StepStatus },
    /// The step is no longer in TODO.md; the marker was not written.
    Missing,
}

/// A status the runner writes for one step.
#[derive(Debug, Clone, Copy)]
pub struct StepWrite<'r> {
    pub id: StepId,
    /// The marker the runner expects the step to have now; another one is a person's edit.
    pub expected: Option<StepStatus>,
    pub status: StepStatus,
    /// The step's `blocked:` line.
    pub reason: Option<&'r str>,
}

/// Writes `write` into TODO.md as it is now (every other byte a person wrote is kept; a
/// sub-step's parent follows its sub-steps; PLAN.md's `status:` follows the phase) and, in the
/// same transaction, lets `record` change state.yaml. `record` learns whether the marker was
/// written (`false`: a person's marker was kept, or the step is gone), so it records a status
/// only beside a marker that says the same.
pub fn step(
    store: &Store,
    task_ref: &TaskRef,
    now: DateTime<Utc>,
    write: StepWrite<'_>,
    record: impl FnMut(&mut State, bool),
) -> Result<StatusWrite> {
    step_with(store, task_ref, now, write, record, |_| Ok(()))
}

/// [`step`], with `also` making more changes in the same transaction (a re-plan's new
/// PLAN.md): it sees the files as the transaction read them, after the marker was set, and
/// runs again if the transaction starts over.
pub fn step_with(
    store: &Store,
    task_ref: &TaskRef,
    now: DateTime<Utc>,
    write: StepWrite<'_>,
    mut record: impl FnMut(&mut State, bool),
    mut also: impl FnMut(&mut crate::tasks::tx::Tx<'_>) -> Result<()>,
) -> Result<StatusWrite> {
    let StepWrite {
        id,
        expected,
        status,
        reason,
    } = write;
    let why = format!("the runner set `{id}` {}", status.as_str());
    let (set, committed) = store.transact(task_ref, now, &why, |tx| {
        let set = tx.set_status(id, expected, status, reason)?;
        let written = matches!(set, SetStatus::Set | SetStatus::Unchanged);
        tx.record(|state| record(state, written));
        if written && id.is_sub() {
            settled_parent(store, tx, id.parent(), now)?;
        }
        also(tx)?;
        Ok(set)
    })?;
    Ok(match set {
        SetStatus::Set | SetStatus::Unchanged => StatusWrite::Written(committed.to),
        SetStatus::KeptPersonEdit { current } => StatusWrite::Kept { current },
        SetStatus::Missing => StatusWrite::Missing,
    })
}

/// A parent ticked in this transaction because its last sub-step is done gets its record in
/// the same write: done by the runner, its fingerprints, no evidence yet (the runner verifies
/// the parent next and records the evidence, or blocks it). So a kill in between never leaves
/// a `[x]` without a record.
fn settled_parent(
    store: &Store,
    tx: &mut crate::tasks::tx::Tx<'_>,
    parent: StepId,
    now: DateTime<Utc>,
) -> Result<()> {
    let Some(step) = tx.todo()?.find(parent) else {
        return Ok(());
    };
    if step.status != StepStatus::Done {
        return Ok(());
    }
    let files = step.files.clone();
    let recorded = tx
        .state()
        .steps
        .get(&parent)
        .is_some_and(|r| r.status == Some(StepStatus::Done));
    if !recorded {
        let prints = crate::watch::fingerprint(store.root(), &files, &[]);
        tx.record(|state| {
            state.record_runner(parent, StepStatus::Done, now, &[], prints);
        });
    }
    Ok(())
}

/// Whether `status` may be written for `step` by hand, under the rule the writes above follow:
/// a step is done when all its sub-steps are. So a step with open sub-steps cannot be marked
/// done, and a parent whose sub-steps are all done is done whatever its own marker says (any
/// other status would be written but not take effect), unless it has a `verify` of its own,
/// which its own marker follows.
pub fn check_substeps(step: &Step, status: StepStatus) -> Result<()> {
    let id = step
        .id
        .map_or_else(|| step.title.clone(), |id| id.to_string());
    if status == StepStatus::Done {
        let open: Vec<String> = step
            .substeps
            .iter()
            .filter(|sub| sub.status != StepStatus::Done)
            .filter_map(|sub| sub.id.map(|id| format!("`{id}`")))
            .collect();
        if !open.is_empty() {
            return Err(
                Error::input(format!("`{id}` has open sub-steps: {}", open.join(", ")))
                    .hint("a step is done when all its sub-steps are; mark those instead"),
            );
        }
    }
    // A parent with its own `verify` may be any status: its sub-steps do not decide it.
    if status != StepStatus::Done
        && !step.substeps.is_empty()
        && !step.checks_itself()
        && step
            .substeps
            .iter()
            .all(|sub| sub.status == StepStatus::Done)
    {
        return Err(Error::input(format!(
            "`{id}` is done because all its sub-steps are"
        ))
        .hint("a step is done when all its sub-steps are; mark one of those instead; nothing was changed"));
    }
    Ok(())
}

/// Writes `status` for step `id` (see [`step`]) without changing state.yaml.
pub fn set_status(
    store: &Store,
    task_ref: &TaskRef,
    id: StepId,
    expected: Option<StepStatus>,
    status: StepStatus,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<StatusWrite> {
    let write = StepWrite {
        id,
        expected,
        status,
        reason,
    };
    step(store, task_ref, now, write, |_, _| {})
}

/// Reads state.yaml as it is now, lets `update` change it, and writes it back, in one
/// transaction.
pub fn save_state(
    store: &Store,
    task_ref: &TaskRef,
    now: DateTime<Utc>,
    mut update: impl FnMut(&mut State),
) -> Result<()> {
    store.transact(task_ref, now, "the runner recorded its work", |tx| {
        tx.record(&mut update);
        Ok(())
    })?;
    Ok(())
}

/// Gives the steps a person added without an id their ids (inserting only the id tokens), and
/// returns them.
pub fn assign_ids(store: &Store, task_ref: &TaskRef, now: DateTime<Utc>) -> Result<Vec<StepId>> {
    let (ids, _) = store.transact(task_ref, now, "the runner gave new steps ids", |tx| {
        tx.assign_ids()
    })?;
    Ok(ids)
}

/// Records in the task's state.yaml that a run of it ran the agent's commands without the
/// sandbox, at `now` (`--no-sandbox`, `sandbox: off`): never cleared, `status` shows it.
pub fn record_unsandboxed(store: &Store, task: &TaskRef, now: DateTime<Utc>) -> Result<()> {
    save_state(store, task, now, |state| state.unsandboxed_run = Some(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{PLAN_FILE, STATE_FILE, TODO_FILE};

    const PLAN: &str = "---\ntitle: T\nstatus: executing\n---\n# T\n\n## Steps\n- [ ] S1 a\n";

    fn task(todo: &str) -> (tempfile::TempDir, Store, TaskRef) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let task = store.task_ref("20261130-143012-t");
        std::fs::create_dir_all(&task.dir).unwrap();
        std::fs::write(task.dir.join(PLAN_FILE), PLAN).unwrap();
        std::fs::write(task.dir.join(TODO_FILE), todo).unwrap();
        (dir, store, task)
    }

    fn now() -> DateTime<Utc> {
        "2026-11-30T14:30:12Z".parse().unwrap()
    }

    /// [`set_status`] at [`now`], for a step that was `expected` (`None`: whatever it was).
    fn set(
        (store, task): (&Store, &TaskRef),
        id: StepId,
        expected: Option<StepStatus>,
        status: StepStatus,
        reason: Option<&str>,
    ) -> StatusWrite {
        set_status(store, task, id, expected, status, reason, now()).unwrap()
    }

    #[test]
    fn a_status_changes_only_its_marker_and_follows_the_phase() {
        let todo = "# TODO: T\n\nmy notes\n\n- [-] S1 a\n  - files: a.txt\n- [ ] S2 b\n";
        let (_dir, store, task) = task(todo);
        let written = set(
            (&store, &task),
            StepId::top(1),
            Some(StepStatus::InProgress),
            StepStatus::Blocked,
            Some("which one?"),
        );
        assert_eq!(written, StatusWrite::Written(Phase::Blocked));
        let after = std::fs::read_to_string(task.dir.join(TODO_FILE)).unwrap();
        assert_eq!(
            after,
            "# TODO: T\n\nmy notes\n\n- [!] S1 a\n  - files: a.txt\n  - blocked: which one?\n- [ ] S2 b\n"
        );
        let plan = std::fs::read_to_string(task.dir.join(PLAN_FILE)).unwrap();
        assert!(plan.contains("status: blocked"), "{plan}");
    }

    #[test]
    fn a_persons_change_of_the_marker_wins() {
        let todo = "- [ ] S1 a\n";
        let (_dir, store, task) = task(todo);
        let written = set(
            (&store, &task),
            StepId::top(1),
            Some(StepStatus::InProgress),
            StepStatus::Done,
            None,
        );
        assert_eq!(
            written,
            StatusWrite::Kept {
                current: StepStatus::Pending
            }
        );
        assert_eq!(
            std::fs::read_to_string(task.dir.join(TODO_FILE)).unwrap(),
            todo
        );
        let missing = set(
            (&store, &task),
            StepId::top(7),
            None,
            StepStatus::Done,
            None,
        );
        assert_eq!(missing, StatusWrite::Missing);
    }

    #[test]
    fn state_is_read_changed_and_written_back() {
        let (_dir, store, task) = task("- [ ] S1 a\n");
        save_state(&store, &task, now(), |state| {
            state.record_runner(
                StepId::top(1),
                StepStatus::InProgress,
                now(),
                &[],
                std::collections::BTreeMap::new(),
            );
        })
        .unwrap();
        let loaded = store.load(&task).unwrap();
        assert_eq!(
            loaded.state.steps[&StepId::top(1)].status,
            Some(StepStatus::InProgress)
        );
    }

    #[test]
    fn a_done_marker_and_its_record_are_one_write_and_a_kept_marker_gets_no_status() {
        let (_dir, store, task) = task("- [-] S1 a\n- [ ] S2 b\n");
        let done = StepWrite {
            id: StepId::top(1),
            expected: Some(StepStatus::InProgress),
            status: StepStatus::Done,
            reason: None,
        };
        let record = |state: &mut State, written: bool| {
            let record = state.steps.entry(StepId::top(1)).or_default();
            record.files_changed = vec!["a.txt".into()];
            if written {
                state.record_runner(
                    StepId::top(1),
                    StepStatus::Done,
                    now(),
                    &[],
                    std::collections::BTreeMap::from([("a.txt".into(), "h".into())]),
                );
            }
        };
        let written = step(&store, &task, now(), done, record).unwrap();
        assert_eq!(written, StatusWrite::Written(Phase::Executing));
        let loaded = store.load(&task).unwrap();
        assert_eq!(loaded.todo.steps[0].status, StepStatus::Done);
        let s1 = &loaded.state.steps[&StepId::top(1)];
        assert_eq!(s1.status, Some(StepStatus::Done));
        assert_eq!(s1.fingerprints.len(), 1);
        // No write-ahead record is left behind.
        assert!(!task.dir.join("runs/tx.json").exists());

        // The same write against a marker a person changed: the work is recorded, not a
        // status the marker does not show.
        std::fs::write(task.dir.join(TODO_FILE), "- [x] S1 a\n- [ ] S2 b\n").unwrap();
        std::fs::remove_file(task.dir.join(STATE_FILE)).unwrap();
        let written = step(&store, &task, now(), done, record).unwrap();
        assert_eq!(
            written,
            StatusWrite::Kept {
                current: StepStatus::Done
            }
        );
        let loaded = store.load(&task).unwrap();
        let s1 = &loaded.state.steps[&StepId::top(1)];
        assert_eq!((s1.status, s1.files_changed.len()), (None, 1));
    }

    #[test]
    fn a_parent_ticked_by_its_last_sub_step_is_recorded_in_the_same_write() {
        let todo = "- [ ] S1 a\n  - files: p.txt\n  - [x] S1.1 one\n  - [-] S1.2 two\n";
        let (dir, store, task) = task(todo);
        std::fs::write(dir.path().join("p.txt"), "p\n").unwrap();
        let done = StepWrite {
            id: StepId::sub(1, 2),
            expected: Some(StepStatus::InProgress),
            status: StepStatus::Done,
            reason: None,
        };
        step(&store, &task, now(), done, |_, _| {}).unwrap();
        let loaded = store.load(&task).unwrap();
        assert_eq!(loaded.todo.steps[0].status, StepStatus::Done);
        let parent = &loaded.state.steps[&StepId::top(1)];
        assert_eq!(parent.status, Some(StepStatus::Done));
        assert!(parent.fingerprints.contains_key("p.txt"), "{parent:?}");
        assert!(
            !parent.verified(),
            "not verified until the runner verifies it"
        );
    }
}
