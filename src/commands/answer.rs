//! `tick answer S2 "keep both"`: a person answers the question a blocked step stopped on;
//! the answering is [`crate::tasks::by_hand::answer`].

use super::{Ctx, Outcome};
use crate::cli::AnswerArgs;
use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::tasks::by_hand;

pub fn run(ctx: &Ctx<'_>, args: &AnswerArgs) -> Result<Outcome> {
    let id: StepId = args
        .step
        .parse()
        .map_err(|msg: String| Error::input(msg).hint("`tick status` lists the steps"))?;
    let answered = by_hand::answer(
        ctx.store(),
        args.task.as_deref(),
        id,
        &args.answer,
        &ctx.env.clock,
        &mut |stale| ctx.ui.stale(stale),
    )?;
    ctx.ui.answered(&answered);
    Ok(Outcome::Done)
}
