//! `tick diff S3`: the changes a step made, as [`crate::report::diff`] finds them.

use super::{Ctx, Outcome};
use crate::cli::DiffArgs;
use crate::error::{Error, Result};
use crate::plan::StepId;

pub fn run(ctx: &Ctx<'_>, args: &DiffArgs) -> Result<Outcome> {
    let step: StepId = args.step.parse().map_err(Error::input)?;
    let diff =
        crate::report::diff::step_diff_all(ctx.store(), args.task.as_deref(), step, args.all)?;
    ctx.ui.step_diff(&diff);
    Ok(Outcome::Done)
}
