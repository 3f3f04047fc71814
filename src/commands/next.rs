//! `tick next`: which step runs next and the command that runs it, without running anything.

use super::{Ctx, Outcome};
use crate::cli::NextArgs;
use crate::error::{Error, Result};
use crate::plan::Phase;
use crate::runner::{Next, next_step};

pub fn run(ctx: &Ctx<'_>, args: &NextArgs) -> Result<Outcome> {
    let store = ctx.store();
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let task = store.load(&task_ref)?;
    let id = &task.id;
    // The hints name the task only when a bare `tick run` would not reach it.
    let current = store.current()?.map(|t| t.id);
    let t = crate::tasks::naming::task_arg(&store.task_ids()?, id, current.as_deref());
    if task.phase() == Phase::Cancelled {
        return Err(
            Error::input(format!("`{id}` was cancelled: nothing runs next"))
                .hint("set `status: approved` in its PLAN.md to take it up again"),
        );
    }
    if task.plan_changed() {
        let what = if task.approval_missing() {
            "has no approval in its state.yaml (missing or emptied)"
        } else if task.replanned_by_tick() || task.state.pending_replan.is_some() {
            "was re-planned by tick"
        } else {
            "was edited after approval"
        };
        ctx.ui.warn(&format!(
            "`{id}/PLAN.md` {what}; `tick run` refuses until `tick approve{t}`"
        ));
    }
    match next_step(&task.todo, None) {
        Next::Step(step) => {
            let title = task
                .todo
                .find(step)
                .map(|s| s.title.clone())
                .unwrap_or_default();
            ctx.ui.data(&format!("{step} {title}"));
            if let Some(found) = task.todo.find(step) {
                if !found.files.is_empty() {
                    ctx.ui
                        .data(&format!("  files:  {}", found.files.join(", ")));
                }
                for verify in &found.verify {
                    ctx.ui.data(&format!("  verify: `{verify}`"));
                }
            }
            ctx.ui.hint(&format!(
                "run it with `tick run{t} --step {step}`, or all that is left with `tick run{t}`"
            ));
        }
        Next::AllDone => {
            ctx.ui.note(&format!("every step of `{id}` is done"));
            ctx.ui
                .hint("`tick status` shows the evidence; `tick check` checks nothing went stale");
        }
        Next::Blocked { id: step, reason } => {
            ctx.ui.data(&format!("{step} is blocked: {reason}"));
            ctx.ui.hint(&format!(
                "answer it with `tick answer {step} \"...\"{t}`, or fix what blocks it and `tick mark {step} pending{t}`; then `tick run{t}`"
            ));
        }
        Next::Waiting { id: step, on } => {
            ctx.ui
                .data(&format!("{step} waits on {on}, which is not done"));
            ctx.ui
                .hint(&format!("finish {on} first: `tick run{t} --step {on}`"));
        }
        Next::AlreadyDone(step) => {
            ctx.ui.note(&format!("{step} is already done"));
        }
    }
    Ok(Outcome::Done)
}
