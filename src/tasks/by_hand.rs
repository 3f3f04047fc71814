//! What a person does to a task's steps by hand, each in one transaction under the task's
//! lock: what every such change does first ([`settle`]), finding the step it names
//! ([`find_step`]), and answering the question a blocked step stopped on ([`answer`]), for
//! `tick answer` and the interactive session alike.
//!
//! An answer is one transaction: the step goes back to pending, its `blocked:` line gives way
//! to an `answer:` line, and state.yaml keeps the question with its answer, so the next turn on
//! the step is told both (the context pack reads them) and `tick log` can show them later.

use chrono::{DateTime, Utc};

use crate::env::Clock;
use crate::error::{Error, Result};
use crate::plan::{Phase, Progress, StepId, StepStatus};
use crate::tasks::Store;
use crate::tasks::error::Error as StoreError;
use crate::tasks::plan_md;
use crate::tasks::todo_md::{self, RunnerKey, Step, StepEdit};
use crate::tasks::tx::Tx;
use crate::watch::StaleStep;

/// What every change by hand does first, in its transaction `tx`: what went stale while tick
/// was not looking is marked (each such step goes to `on_stale`, for the caller to tell the
/// person), and steps a person added get their ids.
pub fn settle(
    store: &Store,
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    on_stale: &mut dyn FnMut(&StaleStep),
) -> Result<()> {
    let verdict = crate::watch::examine(store, tx.base())?;
    crate::watch::apply(tx, &verdict, now)?;
    for stale in &verdict.stale {
        on_stale(stale);
    }
    tx.assign_ids()?;
    Ok(())
}

/// Step `id` of the task as `tx` has it, or an error listing the steps there are.
pub fn find_step<'t>(store: &Store, tx: &'t mut Tx<'_>, id: StepId) -> Result<&'t Step> {
    let dir = tx.base().dir.clone();
    let list = tx.todo()?;
    list.find(id)
        .ok_or_else(|| crate::tasks::no_step(store, &dir, list, id))
}

/// A blocked step, answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub id: StepId,
    /// The answer as recorded: its whitespace runs made single spaces.
    pub answer: String,
    /// The task's progress after the answer.
    pub progress: Progress,
    /// The task's phase after the answer.
    pub next: Phase,
}

/// Answers the question blocked step `id` of task `task` (the current one when `None`) stopped
/// on, with `text`: the step is pending again with the answer beside it. The task becomes the
/// current one. Steps found stale on the way go to `on_stale` (before any refusal, as they are
/// found). Refused, with nothing changed, for an empty answer or a step that is not blocked.
pub fn answer(
    store: &Store,
    task: Option<&str>,
    id: StepId,
    text: &str,
    clock: &Clock,
    on_stale: &mut dyn FnMut(&StaleStep),
) -> Result<Answered> {
    let answer = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if answer.is_empty() {
        return Err(Error::input("the answer is empty").hint(format!(
            "`tick answer {id} \"what the step should do\"`; nothing was changed"
        )));
    }
    let task_ref = store.resolve_or_current(task)?;
    let _lock = store.lock_task(&task_ref, "tick answer")?;
    store.set_current(&task_ref);
    let now = clock.now();
    let mut tx = store.begin(&task_ref)?;
    settle(store, &mut tx, now, on_stale)?;
    let step = find_step(store, &mut tx, id)?;
    let (status, question) = (step.status, step.blocked.clone());
    if status != StepStatus::Blocked {
        return Err(not_blocked(&mut tx, id, status)?);
    }
    let dir = tx.base().dir.clone();
    tx.edit_todo(|src, list| {
        let mut edit = StepEdit::status(StepStatus::Pending, None);
        edit.set.push((RunnerKey::Answer, answer.clone()));
        todo_md::edit_step(src, list, id, &edit)
            .ok_or_else(|| crate::tasks::no_step(store, &dir, list, id))
    })?;
    tx.record(|state| {
        state.record_unblock(id, question.as_deref(), Some(&answer), now);
        state.record_person(id, StepStatus::Pending, now);
        // The person answered the step a re-plan was waiting on: that re-plan no longer
        // holds it (they may have refused it by restoring PLAN.md).
        if state.pending_replan.as_ref().is_some_and(|p| p.step == id) {
            state.pending_replan = None;
        }
    });
    let (progress, next) = tx.phase_after()?;
    let next = next.map_err(|r| Error::input(r.reason).hint(r.hint))?;
    tx.commit(now, &format!("a person answered `{id}`: {answer}"))?;
    Ok(Answered {
        id,
        answer,
        progress,
        next,
    })
}

/// A task a person gave up ([`cancel`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    pub id: String,
    /// Its phase before.
    pub was: Phase,
    pub dir: std::path::PathBuf,
}

/// Cancels task `task` (the current one when `None`): its phase becomes `cancelled`, in
/// PLAN.md's `status:` line, written in one transaction (logged in the journal); every file
/// stays, as a record. Refused, with nothing changed, for a phase that cannot be cancelled.
pub fn cancel(store: &Store, task: Option<&str>, now: DateTime<Utc>) -> Result<Cancelled> {
    let task_ref = store.resolve_or_current(task)?;
    let _lock = store.lock_task(&task_ref, "tick cancel")?;
    let (was, _) = store.transact(&task_ref, now, "a person cancelled the task", |tx| {
        let task = tx.base();
        let phase = task.phase();
        let next = crate::plan::transition(phase, crate::plan::Event::Cancel).map_err(|r| {
            StoreError::NotCancellable {
                id: task.id.clone(),
                reason: r.reason,
                hint: r.hint,
            }
        })?;
        let text = if let Some(text) = plan_md::set_status_line(&task.plan_src, next) {
            text
        } else {
            let mut front = task.plan.front.clone();
            front.status = Some(next);
            plan_md::render(&front, &task.plan.body).map_err(|err| StoreError::Render {
                what: "PLAN.md",
                detail: err.to_string(),
            })?
        };
        tx.set_plan_as_is(text);
        Ok(phase)
    })?;
    Ok(Cancelled {
        id: task_ref.id.clone(),
        was,
        dir: task_ref.dir.clone(),
    })
}

/// The refusal to answer step `id`, which is `status`: it names the steps that are blocked.
fn not_blocked(tx: &mut Tx<'_>, id: StepId, status: StepStatus) -> Result<Error> {
    let list = tx.todo()?;
    let blocked: Vec<String> = list
        .all_steps()
        .filter(|s| s.status == StepStatus::Blocked)
        .filter_map(|s| s.id.map(|id| format!("`{id}`")))
        .collect();
    Ok(StoreError::NotBlocked {
        id,
        status: status.as_str(),
        blocked,
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{TODO_FILE, TaskRef};

    const PLAN: &str =
        "---\ntitle: T\nstatus: approved\n---\n# T\n\n## Steps\n\n- [ ] S1 One\n- [ ] S2 Two\n";
    const TODO: &str = "# TODO: T\n\n- [ ] S1 One\n- [!] S2 Two\n  - blocked: which greeting?\n";

    fn task() -> (tempfile::TempDir, Store, TaskRef) {
        crate::tasks::test_task(PLAN, TODO)
    }

    fn clock() -> Clock {
        Clock::fixed("2026-11-30T14:30:12Z".parse().unwrap())
    }

    fn todo(task: &TaskRef) -> String {
        std::fs::read_to_string(task.dir.join(TODO_FILE)).unwrap()
    }

    #[test]
    fn a_blocked_step_is_pending_again_with_its_answer() {
        let (_root, store, task) = task();
        let answered = answer(
            &store,
            Some(&task.id),
            StepId::top(2),
            "  say\n hello ",
            &clock(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(answered.answer, "say hello");
        assert_eq!((answered.progress.done, answered.progress.total), (0, 2));
        let todo = todo(&task);
        assert!(
            todo.contains("- [ ] S2 Two\n  - answer: say hello\n"),
            "{todo}"
        );
        assert!(!todo.contains("blocked:"), "{todo}");
        let state = std::fs::read_to_string(task.dir.join("state.yaml")).unwrap();
        assert!(
            state.contains("which greeting?"),
            "the question is kept: {state}"
        );
        assert!(state.contains("say hello"), "{state}");
    }

    #[test]
    fn a_step_that_is_not_blocked_is_refused_naming_the_blocked_ones() {
        let (_root, store, task) = task();
        let err = answer(
            &store,
            Some(&task.id),
            StepId::top(1),
            "anything",
            &clock(),
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(err.message, "`S1` is not blocked (it is pending)");
        assert_eq!(err.hints, vec!["blocked: `S2`; nothing was changed"]);
        assert_eq!(todo(&task), TODO, "nothing was changed");
    }

    #[test]
    fn an_empty_answer_or_an_unknown_step_is_refused_and_nothing_changes() {
        let (_root, store, task) = task();
        let err = answer(
            &store,
            Some(&task.id),
            StepId::top(2),
            " \n",
            &clock(),
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(err.message, "the answer is empty");
        let err = answer(
            &store,
            Some(&task.id),
            StepId::top(9),
            "x",
            &clock(),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.message.starts_with("there is no step `S9`"), "{err:?}");
        assert_eq!(
            err.hints,
            vec!["its steps are `S1`, `S2`; nothing was changed"]
        );
        assert_eq!(todo(&task), TODO);
    }

    #[test]
    fn a_cancel_killed_at_any_write_leaves_the_old_plan_or_the_new() {
        use crate::tasks::tx::crash;
        // A cancel's commit writes its record, PLAN.md, then removes the record.
        for writes in 0..=3 {
            let (_root, store, task) = task();
            let old = std::fs::read_to_string(task.dir.join(crate::tasks::PLAN_FILE)).unwrap();
            let new = old.replace("status: approved", "status: cancelled");
            crash::after(Some(writes));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cancel(&store, Some(&task.id), clock().now())
            }))
            .unwrap_or_else(|_| Err(crate::error::Error::internal("killed")));
            crash::after(None);
            assert_eq!(result.is_ok(), writes == 3, "killed before write {writes}");
            // The next writer finishes what the killed one began.
            drop(store.lock_task(&task, "test").unwrap());
            let plan = std::fs::read_to_string(task.dir.join(crate::tasks::PLAN_FILE)).unwrap();
            let expected = if writes == 0 { &old } else { &new };
            assert_eq!(&plan, expected, "killed before write {writes}");
            assert_eq!(todo(&task), TODO);
            assert!(!crate::tasks::tx::needs_cleanup(&task.dir));
        }
    }
}
