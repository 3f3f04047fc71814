//! `tick mark S3 done`: a person sets a step's status, through the same engine the runner uses.

use std::collections::BTreeMap;

use super::{Ctx, Outcome};
use crate::cli::{MarkArgs, MarkStatus};
use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::runner::write::check_substeps;
use crate::tasks::by_hand;
use crate::tasks::tx::SetStatus;

pub fn run(ctx: &Ctx<'_>, args: &MarkArgs) -> Result<Outcome> {
    let store = ctx.store();
    let (id, status, reason) = parse(args)?;
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let _lock = store.lock_task(&task_ref, "tick mark")?;
    store.set_current(&task_ref);
    let now = ctx.now();
    let why = format!("a person marked `{id}` {}", status.as_str());
    // One transaction: what went stale while tick was not looking (like every command), the
    // ids of steps a person added, and the mark itself, written together.
    let mut tx = store.begin(&task_ref)?;
    super::settle(ctx, &mut tx)?;
    let (before, step_files, lifted) = {
        let step = by_hand::find_step(store, &mut tx, id)?;
        check_substeps(step, status)?;
        // Lifting a block by hand keeps its question for the next turn on the step.
        let lifted = (step.status == StepStatus::Blocked && status != StepStatus::Blocked)
            .then(|| step.blocked.clone());
        (step.effective_status(), step.files.clone(), lifted)
    };
    let set = tx.set_status(id, None, status, reason)?;
    let (progress, next) = tx.phase_after()?;
    let next = next.map_err(|r| Error::input(r.reason).hint(r.hint))?;
    if set != SetStatus::Set {
        // Nothing of the mark to write; what the staleness check found still is.
        tx.commit(now, "files of done steps changed outside tick")?;
        ctx.ui.note(&format!(
            "`{id}` is already {}",
            before.as_str().replace('_', " ")
        ));
        return Ok(Outcome::Done);
    }
    tx.record(|state| {
        if let Some(question) = &lifted {
            state.record_unblock(id, question.as_deref(), None, now);
        }
        state.record_person(id, status, now);
        if let Some(record) = state.steps.get_mut(&id) {
            // A person ticking a step vouches for its files as they are now: a later change
            // outside tick makes it stale. Any other status relies on nothing.
            record.fingerprints = if status == StepStatus::Done {
                crate::watch::fingerprint(store.root(), &step_files, &[])
            } else {
                BTreeMap::new()
            };
        }
    });
    tx.commit(now, &why)?;
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

/// The step, the status and the `blocked` reason asked for, checked before anything is read.
fn parse(args: &MarkArgs) -> Result<(StepId, StepStatus, Option<&str>)> {
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
    Ok((id, status, reason))
}
