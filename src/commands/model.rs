//! `tick model setup | start | stop | status | speed`: the model on this machine, through
//! [`crate::local_model`].

use super::{Ctx, Outcome};
use crate::cli::{LocalModelArgs, ModelAction};
use crate::error::Result;
use crate::local_model::{self, Action};

pub fn run(ctx: &Ctx<'_>, args: &LocalModelArgs) -> Result<Outcome> {
    let action = match args.action {
        ModelAction::Setup => Action::Setup,
        ModelAction::Start => Action::Start,
        ModelAction::Stop => Action::Stop,
        ModelAction::Status => Action::Status,
        ModelAction::Speed => Action::Speed,
    };
    Ok(match local_model::run(action, ctx.env)? {
        0 => Outcome::Done,
        code => Outcome::Findings(code),
    })
}
