//! `tick approve`: the only way from a draft to a task folder, and the way to approve a task's
//! PLAN.md again after it was edited. This file picks which of the two the arguments ask for
//! and tells the person what happened; approval itself is [`crate::planning::approve`].

use super::{Ctx, Outcome};
use crate::cli::ApproveArgs;
use crate::error::{Error, Result};
use crate::planning::approve::{self, Approved, Contract, Reapproved};

pub fn run(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let store = &ctx.store;
    approve::finish_cut_short(store)?;
    let contract = Contract {
        allow_deviation: args.allow_deviation,
        max_files_changed: args.max_files,
        commit_steps: args.commit_steps,
    };
    if let Some(task) = &args.task {
        let task = store.resolve(task)?;
        return reapprove(ctx, &task.id, contract);
    }
    if store.draft_plan_path().exists() {
        let approved = approve::approve_draft(store, ctx.now(), contract)?;
        report_approved(ctx, &approved, args.commit)?;
        return Ok(Outcome::Done);
    }
    if let Some(task) = store.current()?
        && store.load(&task).is_ok_and(|t| t.plan_changed())
    {
        return reapprove(ctx, &task.id, contract);
    }
    Err(Error::input("there is no draft to approve")
        .hint("write one with `tick plan \"goal\"` or `tick plan --from plan.md`"))
}

/// Tells the person the draft is a task now, and commits its folder when asked (`--commit`,
/// or the review menu's question).
pub fn report_approved(ctx: &Ctx<'_>, approved: &Approved, commit: bool) -> Result<()> {
    let store = &ctx.store;
    let folder = store.rel(&approved.dir);
    ctx.ui.note(&format!(
        "approved `{}` as `{folder}/` ({} {})",
        approved.title,
        approved.steps,
        if approved.steps == 1 { "step" } else { "steps" }
    ));
    if commit {
        approve::commit_task(store, approved)?;
        ctx.ui.note(&format!("committed `{folder}/`"));
        ctx.ui
            .hint("`tick run` executes it; `tick status` shows it");
    } else {
        ctx.ui.hint(&format!(
            "`tick run` executes it; `tick status` shows it; commit `{folder}/` to share it"
        ));
    }
    Ok(())
}

fn reapprove(ctx: &Ctx<'_>, id: &str, contract: Contract) -> Result<Outcome> {
    match approve::reapprove(&ctx.store, id, ctx.now(), contract)? {
        Reapproved::Unchanged => ctx
            .ui
            .note(&format!("`{id}` is approved as it stands; nothing to do")),
        Reapproved::Approved {
            plan_diff,
            todo,
            step_diff,
        } => {
            if let Some(diff) = plan_diff {
                ctx.ui.data(&diff);
            }
            ctx.ui.note(&format!("approved the edited plan of `{id}`"));
            if step_diff.is_empty() {
                ctx.ui.note("the steps did not change");
            } else {
                ctx.ui.note(&format!(
                    "applied to `{}`:\n{}",
                    ctx.store.rel(&todo),
                    step_diff.trim_end()
                ));
            }
        }
    }
    Ok(Outcome::Done)
}
