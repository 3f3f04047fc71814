//! `tick list`: the draft and every task, newest first.

use super::{Ctx, Outcome};
use crate::cli::ListArgs;
use crate::error::Result;
use crate::report::list::list_report;

pub fn run(ctx: &Ctx<'_>, args: &ListArgs) -> Result<Outcome> {
    let report = list_report(ctx.store())?;
    if args.json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.list(&report);
    }
    Ok(Outcome::Done)
}
