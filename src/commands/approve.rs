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
    if args.task.is_none() && !overlaps_accepted(ctx) {
        ctx.ui
            .note("the draft was not approved; it waits in `.tasks/draft/PLAN.md`");
        return Ok(Outcome::Done);
    }
    match approve::approve(&ctx.store, args.task.as_deref(), ctx.now(), contract)? {
        ApproveOutcome::Draft(approved) => report_approved(ctx, &approved, args.commit)?,
        ApproveOutcome::Task { id, reapproved } => {
            let todo = ctx.store.rel(&ctx.store.task_ref(&id).dir.join(TODO_FILE));
            ctx.ui.reapproved(&id, &reapproved, &todo);
        }
    }
    Ok(Outcome::Done)
}

/// Tells the person the draft is a task now, and commits its folder when asked (`--commit`,
/// or the review menu's question).
pub fn report_approved(ctx: &Ctx<'_>, approved: &Approved, commit: bool) -> Result<()> {
    let folder = ctx.store.rel(&approved.dir);
    ctx.ui.approved(approved, &folder);
    for line in &approved.overlaps {
        ctx.ui.warn(line);
    }
    if commit {
        approve::commit_task(&ctx.store, approved)?;
    }
    ctx.ui.approved_next(&folder, commit);
    Ok(())
}

/// The draft's overlaps with the active tasks, said; in a terminal the person is asked whether
/// to approve anyway. `false` when they said no.
pub fn overlaps_accepted(ctx: &Ctx<'_>) -> bool {
    use crate::person::{Person, Terminal};
    let Some(draft) = ctx.store.load_draft().ok().flatten() else {
        return true;
    };
    let overlaps = approve::draft_overlaps(&ctx.store, &draft.plan.steps);
    if overlaps.is_empty() || !ctx.env.interactive {
        return true;
    }
    for line in &overlaps {
        ctx.ui.warn(line);
    }
    let mut person = Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
    person.yes_no(
        "approve it anyway? both tasks would change these files",
        false,
    ) == Some(true)
}
