//! The one place the runner writes a task's TODO.md, PLAN.md status and state.yaml. Each
//! write reads the files as they are now (a person may have edited them while a step ran) and
//! changes only what the runner owns. Keep this narrow: the task-write transaction (TODO.md
//! and state.yaml committed together) replaces the bodies here and nowhere else.

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::fsx;
use crate::plan::{Event, Phase, Progress, StepId, StepStatus, transition};
use crate::tasks::state::State;
use crate::tasks::todo_md::{self, StepEdit};
use crate::tasks::{PLAN_FILE, STATE_FILE, Store, TODO_FILE, Task, TaskRef, journal, plan_md};

/// What became of a status the runner meant to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrite {
    /// Written; the task is now in this phase.
    Written(Phase),
    /// A person changed the step's marker away from what the runner expected while the step
    /// ran: their version is kept and nothing was written.
    Kept { current: StepStatus },
    /// The step is no longer in TODO.md; nothing was written.
    Missing,
}

/// Writes `status` (and its `blocked:` reason) for step `id` into TODO.md as it is now: every
/// other byte a person wrote is kept. When `expected` is given and the step's marker is no
/// longer that, the person's version wins. A sub-step's parent follows its sub-steps; PLAN.md's
/// `status:` and the journal follow the phase.
pub fn set_status(
    store: &Store,
    task_ref: &TaskRef,
    id: StepId,
    expected: Option<StepStatus>,
    status: StepStatus,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<StatusWrite> {
    let task = store.load(task_ref)?;
    let path = task.dir.join(TODO_FILE);
    if let (Some(expected), Some(current)) = (expected, task.todo.find(id).map(|s| s.status))
        && current != expected
    {
        return Ok(StatusWrite::Kept { current });
    }
    let Some(src) = todo_md::edit_step(
        &task.todo_src,
        &task.todo,
        id,
        &StepEdit::status(status, reason),
    ) else {
        return Ok(StatusWrite::Missing);
    };
    let src = if id.is_sub() {
        todo_md::settle_parent(&src, id.parent()).map_err(|e| store.parse_error(&path, &e))?
    } else {
        src
    };
    let list = todo_md::parse(&src).map_err(|e| store.parse_error(&path, &e))?;
    fsx::write_atomic(&path, src.as_bytes())?;
    let progress = Progress::from_statuses(list.steps.iter().map(todo_md::Step::progress_status));
    let phase = transition(task.phase(), Event::StepsChanged(progress)).unwrap_or(task.phase());
    journal::transition(
        &task.dir,
        task.phase(),
        phase,
        &format!("the runner set `{id}` {}", status.as_str()),
        now,
    );
    if task.plan.phase() != Some(phase)
        && let Some(plan) = plan_md::set_status_line(&task.plan_src, phase)
    {
        fsx::write_atomic(&task.dir.join(PLAN_FILE), plan.as_bytes())?;
    }
    Ok(StatusWrite::Written(phase))
}

/// Reads state.yaml as it is now, lets `update` change it, and writes it back.
pub fn save_state(
    store: &Store,
    task_ref: &TaskRef,
    update: impl FnOnce(&mut State),
) -> Result<()> {
    let task = store.load(task_ref)?;
    let mut state = task.state;
    update(&mut state);
    fsx::write_atomic(
        &task.dir.join(STATE_FILE),
        crate::commands::approve::state_yaml(&state)?.as_bytes(),
    )
}

/// Gives the steps a person added without an id their ids (inserting only the id tokens), and
/// returns them.
pub fn assign_ids(store: &Store, task: &Task) -> Result<Vec<StepId>> {
    let path = task.dir.join(TODO_FILE);
    let (src, assigned) = todo_md::assign_ids(&task.todo_src, &task.todo);
    todo_md::parse(&src).map_err(|e| store.parse_error(&path, &e))?;
    fsx::write_atomic(&path, src.as_bytes())?;
    Ok(assigned)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_status_changes_only_its_marker_and_follows_the_phase() {
        let todo = "# TODO: T\n\nmy notes\n\n- [-] S1 a\n  - files: a.txt\n- [ ] S2 b\n";
        let (_dir, store, task) = task(todo);
        let written = set_status(
            &store,
            &task,
            StepId::top(1),
            Some(StepStatus::InProgress),
            StepStatus::Blocked,
            Some("which one?"),
            now(),
        )
        .unwrap();
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
        let written = set_status(
            &store,
            &task,
            StepId::top(1),
            Some(StepStatus::InProgress),
            StepStatus::Done,
            None,
            now(),
        )
        .unwrap();
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
        let missing = set_status(
            &store,
            &task,
            StepId::top(7),
            None,
            StepStatus::Done,
            None,
            now(),
        )
        .unwrap();
        assert_eq!(missing, StatusWrite::Missing);
    }

    #[test]
    fn state_is_read_changed_and_written_back() {
        let (_dir, store, task) = task("- [ ] S1 a\n");
        save_state(&store, &task, |state| {
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
}
