//! `tick cancel`: a person gives a task up. Its phase becomes `cancelled` (in PLAN.md's
//! `status:` line, logged in the journal); every file stays, as a record
//! ([`crate::tasks::by_hand::cancel`]).

use super::{Ctx, Outcome};
use crate::cli::CancelArgs;
use crate::error::Result;

pub fn run(ctx: &Ctx<'_>, args: &CancelArgs) -> Result<Outcome> {
    let store = ctx.store();
    let cancelled = crate::tasks::by_hand::cancel(store, args.task.as_deref(), ctx.now())?;
    ctx.ui.note(&format!(
        "cancelled `{}` (was {}); its files stay in `{}/`",
        cancelled.id,
        cancelled.was,
        store.rel(&cancelled.dir)
    ));
    ctx.ui.hint(
        "`tick run` and `tick check` skip it now; set `status: approved` in its PLAN.md to take it up again",
    );
    Ok(Outcome::Done)
}
