//! `tick show`: the draft or a task's plan, as a person reads it.

use super::{Ctx, Outcome};
use crate::cli::ShowArgs;
use crate::error::{Error, Result};
use crate::plan::Phase;
use crate::tasks::Draft;

/// Prints a draft as a person reads it; returns its phase.
pub fn print_draft(ctx: &Ctx<'_>, draft: &Draft) -> Phase {
    let phase = draft.plan.phase().unwrap_or(Phase::Draft);
    let steps = draft.plan.steps.all_steps().count();
    ctx.ui.data(&format!(
        "draft: {} ({phase}, {steps} {})\nfile:  {}\n\n{}",
        draft.plan.title.as_deref().unwrap_or("(untitled)"),
        if steps == 1 { "step" } else { "steps" },
        ctx.store.rel(&draft.path),
        draft.plan.body.trim_start_matches(['\n', '\r'])
    ));
    phase
}

pub fn run(ctx: &Ctx<'_>, args: &ShowArgs) -> Result<Outcome> {
    let store = &ctx.store;
    if args.task.is_none()
        && let Some(draft) = store.load_draft()?
    {
        let phase = print_draft(ctx, &draft);
        if phase == Phase::NeedsInput {
            ctx.ui
                .hint("answer the open questions with `tick plan --answer \"...\"`");
        } else {
            ctx.ui
                .hint("`tick approve` to approve it, edit the file, or `tick discard`");
        }
        return Ok(Outcome::Done);
    }
    let Some(task_ref) = (match &args.task {
        Some(query) => Some(store.resolve(query)?),
        None => store.current()?,
    }) else {
        return Err(Error::input("there is no draft and no task to show")
            .hint("write a plan with `tick plan \"goal\"` or `tick plan --from plan.md`"));
    };
    let task = store.load(&task_ref)?;
    let progress = task.progress();
    ctx.ui.data(&format!(
        "task:  {} ({}, {}/{} done)\nfile:  {}\n\n{}",
        task.title(),
        task.phase(),
        progress.done,
        progress.total,
        store.rel(&task.dir.join(crate::tasks::PLAN_FILE)),
        task.plan.body.trim_start_matches(['\n', '\r'])
    ));
    Ok(Outcome::Done)
}
