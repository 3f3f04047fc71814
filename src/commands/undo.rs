//! `tick undo S3 [TASK]`: put back exactly what a step changed, and reopen it. The engine is
//! [`crate::undo::undo`]; this file reads the arguments and renders the outcome.

use super::{Ctx, Outcome};
use crate::cli::UndoArgs;
use crate::error::Result;
use crate::undo::{UndoOutcome, UndoRequest};

pub fn run(ctx: &Ctx<'_>, args: &UndoArgs) -> Result<Outcome> {
    let (step, task) = step_and_task(&args.args, "undo")?;
    let task_ref = ctx.store().resolve_or_current(task)?;
    let request = UndoRequest {
        step,
        only: args.only.clone(),
        dry_run: args.dry_run,
        now: ctx.now(),
    };
    let outcome = crate::undo::undo(ctx.store(), &task_ref, &request);
    let outcome = outcome?;
    if !args.dry_run {
        ctx.store().set_current(&task_ref);
    }
    if args.json {
        ctx.ui.json(&outcome);
    }
    match outcome {
        UndoOutcome::Undone(undo) => {
            if !args.json {
                ctx.ui.undone(&undo);
            }
            Ok(Outcome::Done)
        }
        UndoOutcome::Refused { step, refusal } => {
            Err(crate::ui::undo::refusal_error("undo", step, &refusal))
        }
    }
}

/// `S3 [TASK]` or `TASK S3`: the word that is a step id is the step.
pub fn step_and_task<'a>(
    words: &'a [String],
    command: &str,
) -> Result<(crate::plan::StepId, Option<&'a str>)> {
    let mut step = None;
    let mut task = None;
    for word in words {
        match word.parse::<crate::plan::StepId>() {
            Ok(id) if step.is_none() => step = Some(id),
            _ if task.is_none() => task = Some(word.as_str()),
            _ => {
                return Err(crate::error::Error::input(format!(
                    "`{word}` is neither the step nor the task"
                ))
                .hint(format!("`tick {command} S3 [TASK]`")));
            }
        }
    }
    let step = step.ok_or_else(|| {
        crate::error::Error::input("which step?").hint(format!(
            "`tick {command} S3 [TASK]`; `tick status` lists the steps"
        ))
    })?;
    Ok((step, task))
}
