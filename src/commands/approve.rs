//! `tick approve`: the only way from a draft to a task folder, and the way to approve a task's
//! PLAN.md again after it was edited. Approval itself, and which of the two the arguments ask
//! for, is [`crate::planning::approve`]; this file tells the person what happened.

use super::{Ctx, Outcome};
use crate::cli::ApproveArgs;
use crate::error::Result;
use crate::planning::approve::{self, ApproveOutcome, Approved, Contract};
use crate::tasks::TODO_FILE;

pub fn run(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let contract = Contract {
        allow_deviation: args.allow_deviation,
        max_files_changed: args.max_files,
        commit_steps: args.commit_steps,
    };
    match approve::approve(ctx.store(), args.task.as_deref(), ctx.now(), contract)? {
        ApproveOutcome::Draft(approved) => report_approved(ctx, &approved, args.commit)?,
        ApproveOutcome::Task { id, reapproved } => {
            let todo = ctx
                .store()
                .rel(&ctx.store().task_ref(&id).dir.join(TODO_FILE));
            ctx.ui.reapproved(&id, &reapproved, &todo);
        }
    }
    Ok(Outcome::Done)
}

/// Tells the person the draft is a task now, and commits its folder when asked (`--commit`,
/// or the review menu's question).
pub fn report_approved(ctx: &Ctx<'_>, approved: &Approved, commit: bool) -> Result<()> {
    let folder = ctx.store().rel(&approved.dir);
    ctx.ui.approved(approved, &folder);
    if commit {
        approve::commit_task(ctx.store(), approved)?;
    }
    ctx.ui.approved_next(&folder, commit);
    Ok(())
}
