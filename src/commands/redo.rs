//! `tick redo S3 [TASK]`: put an undone step's changes back and verify it again. The engine
//! is [`crate::undo::redo`]; this file resolves the task and the sandbox, and renders.

use super::{Ctx, Outcome};
use crate::cli::{ModelArgs, RedoArgs};
use crate::error::Result;
use crate::runner::RunEvent;
use crate::undo::RedoOutcome;

pub fn run(ctx: &Ctx<'_>, args: &RedoArgs) -> Result<Outcome> {
    let (step, task) = super::undo::step_and_task(&args.args, "redo")?;
    let store = ctx.store();
    let task_ref = store.resolve_or_current(task)?;
    let config = super::resolved_config(ctx, &ModelArgs::default())?;
    let (registry, sandboxed) = crate::runner::build::registry(&config, store, args.no_sandbox)?;
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
    }
    let task = store.load(&task_ref)?;
    let hooks = super::verify::approved_hooks(ctx, &config, &task, args.json)?;
    let clock = ctx.runner_clock();
    let (ui, json, live) = (ctx.ui, args.json, ctx.env.stderr_is_terminal);
    let mut sink = move |event: RunEvent| ui.run_event(&event, json, live);
    let report = crate::undo::redo(
        store,
        &task_ref,
        step,
        registry.command_env(),
        &hooks,
        &clock,
        &mut sink,
    );
    let report = report?;
    store.set_current(&task_ref);
    if args.json {
        ctx.ui.json(&report);
    }
    match &report.outcome {
        RedoOutcome::Redone(redo) => {
            if !args.json {
                ctx.ui.redone(redo, report.verdict);
            }
            Ok(match report.verdict {
                Some(crate::runner::redo::Verdict::Failed) => Outcome::Blocked,
                _ => Outcome::Done,
            })
        }
        RedoOutcome::Refused { step, refusal } => {
            Err(crate::ui::undo::refusal_error("redo", *step, refusal))
        }
    }
}
