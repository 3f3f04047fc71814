//! `tick answer S2 "keep both"`: a person answers the question a blocked step stopped on.
//!
//! One transaction: the step goes back to pending, its `blocked:` line gives way to an
//! `answer:` line, and state.yaml keeps the question with its answer, so the next turn on the
//! step is told both (the context pack reads them) and `tick log` can show them later.

use super::{Ctx, Outcome};
use crate::cli::AnswerArgs;
use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::tasks::todo_md::{self, RunnerKey, StepEdit};

pub fn run(ctx: &Ctx<'_>, args: &AnswerArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let id: StepId = args
        .step
        .parse()
        .map_err(|msg: String| Error::input(msg).hint("`tick status` lists the steps"))?;
    let answer = args.answer.split_whitespace().collect::<Vec<_>>().join(" ");
    if answer.is_empty() {
        return Err(Error::input("the answer is empty").hint(format!(
            "`tick answer {id} \"what the step should do\"`; nothing was changed"
        )));
    }

    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let _lock = store.lock_task(&task_ref, "tick answer")?;
    store.set_current(&task_ref);
    let now = ctx.now();
    let mut tx = store.begin(&task_ref)?;
    super::settle(ctx, &mut tx)?;
    let step = super::mark::find(store, &mut tx, id)?;
    let (status, question) = (step.status, step.blocked.clone());
    if status != StepStatus::Blocked {
        let list = tx.todo()?;
        let blocked: Vec<String> = list
            .all_steps()
            .filter(|s| s.status == StepStatus::Blocked)
            .filter_map(|s| s.id.map(|id| format!("`{id}`")))
            .collect();
        let hint = if blocked.is_empty() {
            "no step of this task is blocked; nothing was changed".to_owned()
        } else {
            format!("blocked: {}; nothing was changed", blocked.join(", "))
        };
        return Err(Error::input(format!(
            "`{id}` is not blocked (it is {})",
            status.as_str().replace('_', " ")
        ))
        .hint(hint));
    }

    tx.edit_todo(|src, list| {
        let mut edit = StepEdit::status(StepStatus::Pending, None);
        edit.set.push((RunnerKey::Answer, answer.clone()));
        todo_md::edit_step(src, list, id, &edit)
            .ok_or_else(|| Error::input(format!("there is no step `{id}`")))
    })?;
    tx.record(|state| {
        state.record_unblock(id, question.as_deref(), Some(&answer), now);
        state.record_person(id, StepStatus::Pending, now);
    });
    let (progress, next) = tx.phase_after()?;
    let next = next.map_err(|r| Error::input(r.reason).hint(r.hint))?;
    tx.commit(now, &format!("a person answered `{id}`: {answer}"))?;
    ctx.ui.note(&format!(
        "`{id}` answered and pending again; {}/{} done, {next}",
        progress.done, progress.total
    ));
    ctx.ui.hint("`tick run` goes on with it");
    Ok(Outcome::Done)
}
