//! `tick mark S3 done`: a person sets a step's status, through the same engine the runner uses.

use super::{Ctx, Outcome};
use crate::cli::{MarkArgs, MarkStatus};
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Progress, StepId, StepStatus, transition};
use crate::tasks::todo_md::{self, StepEdit};
use crate::tasks::{PLAN_FILE, STATE_FILE, TODO_FILE, plan_md};

pub fn run(ctx: &Ctx<'_>, args: &MarkArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let id: StepId = args
        .step
        .parse()
        .map_err(|msg: String| Error::input(msg).hint("`tick status` lists the steps"))?;
    let status = match args.status {
        MarkStatus::Done => StepStatus::Done,
        MarkStatus::Pending => StepStatus::Pending,
        MarkStatus::InProgress => StepStatus::InProgress,
        MarkStatus::Blocked => StepStatus::Blocked,
    };
    let reason = args
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if status == StepStatus::Blocked && reason.is_none() {
        return Err(Error::input("a blocked step needs a reason").hint(format!(
            "`tick mark {id} blocked --reason \"what is missing\"`"
        )));
    }
    if status != StepStatus::Blocked && reason.is_some() {
        return Err(Error::input("`--reason` goes with `blocked`"));
    }

    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let lock = store.lock_task(&task_ref, "tick mark")?;
    store.set_current(&task_ref);
    // Like every command, mark first marks what went stale while tick was not looking.
    let newly_stale = crate::watch::refresh_locked(store, &task_ref, ctx.now(), &lock)?;
    for stale in &newly_stale {
        ctx.ui.warn(&format!(
            "`{}` is stale: {} changed outside tick",
            stale.id,
            stale.files.join(", ")
        ));
    }
    let task = store.load(&task_ref)?;
    let todo_path = task.dir.join(TODO_FILE);
    let phase = task.phase();

    // Steps a person added without ids get them in this write.
    let mut src = task.todo_src.clone();
    let mut list = task.todo.clone();
    if list.needs_ids() {
        src = todo_md::assign_ids(&src, &list).0;
        list = todo_md::parse(&src).map_err(|e| store.parse_error(&todo_path, &e))?;
    }
    let Some(step) = list.find(id) else {
        let ids: Vec<String> = list
            .all_steps()
            .filter_map(|s| s.id.map(|id| format!("`{id}`")))
            .collect();
        return Err(Error::input(format!(
            "there is no step `{id}` in `{}`",
            store.rel(&todo_path)
        ))
        .hint(format!("its steps are {}", ids.join(", "))));
    };
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
    // A parent whose sub-steps are all done is done whatever its own marker says, so any other
    // status would be written but not take effect.
    if status != StepStatus::Done
        && !step.substeps.is_empty()
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
    let before = step.effective_status();
    let step_files = step.files.clone();
    src = edit(&src, &list, id, status, reason)?;
    if id.is_sub() {
        src = todo_md::settle_parent(&src, id.parent())
            .map_err(|e| Error::internal(e.to_string()))?;
    }
    let list = todo_md::parse(&src).map_err(|e| {
        Error::internal(format!(
            "the edit of `{}` did not parse back: {e}",
            store.rel(&todo_path)
        ))
    })?;
    if src == task.todo_src {
        ctx.ui.note(&format!(
            "`{id}` is already {}",
            before.as_str().replace('_', " ")
        ));
        return Ok(Outcome::Done);
    }
    let progress = Progress::from_statuses(list.steps.iter().map(todo_md::Step::progress_status));
    let next = transition(phase, Event::StepsChanged(progress))
        .map_err(|r| Error::input(r.reason).hint(r.hint))?;

    let mut state = task.state.clone();
    state.record_person(id, status, ctx.now());
    if let Some(record) = state.steps.get_mut(&id) {
        // A person ticking a step vouches for its files as they are now: a later change
        // outside tick makes it stale. Any other status relies on nothing.
        record.fingerprints = if status == StepStatus::Done {
            crate::watch::fingerprint(store.root(), &step_files, &[])
        } else {
            std::collections::BTreeMap::new()
        };
    }
    fsx::write_atomic(&todo_path, src.as_bytes())?;
    fsx::write_atomic(
        &task.dir.join(STATE_FILE),
        super::approve::state_yaml(&state)?.as_bytes(),
    )?;
    if task.plan.phase() != Some(next)
        && let Some(plan) = plan_md::set_status_line(&task.plan_src, next)
    {
        fsx::write_atomic(&task.dir.join(PLAN_FILE), plan.as_bytes())?;
    }
    crate::tasks::journal::transition(
        &task.dir,
        phase,
        next,
        &format!("a person marked `{id}` {}", status.as_str()),
        ctx.now(),
    );
    let how = match status {
        StepStatus::Done => " (by hand: not verified)".to_owned(),
        StepStatus::Blocked => format!(": {}", reason.unwrap_or_default()),
        _ => String::new(),
    };
    ctx.ui.note(&format!(
        "`{id}` {}{how}; {}/{} done, {}",
        status.as_str().replace('_', " "),
        progress.done,
        progress.total,
        next
    ));
    Ok(Outcome::Done)
}

fn edit(
    src: &str,
    list: &todo_md::Checklist,
    id: StepId,
    status: StepStatus,
    reason: Option<&str>,
) -> Result<String> {
    todo_md::edit_step(src, list, id, &StepEdit::status(status, reason))
        .ok_or_else(|| Error::internal(format!("step `{id}` vanished while editing")))
}
