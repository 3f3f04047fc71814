//! `tick discard`: throw the draft away, after asking in a terminal.

use super::terminal::Terminal;
use super::{Ctx, Outcome};
use crate::cli::DiscardArgs;
use crate::error::{Error, Result};
use crate::person::Person;
use crate::planning::draft;
use crate::ui::titled;

pub fn run(ctx: &Ctx<'_>, args: &DiscardArgs) -> Result<Outcome> {
    let store = ctx.store();
    draft::require_draft(store)?;
    if !args.yes {
        // A draft that does not parse can still be thrown away; its title is only for the
        // question.
        let title = titled(draft::waiting_title(store).as_deref());
        if !ctx.env.interactive {
            return Err(
                Error::input(format!("discarding the draft{title} needs a confirmation"))
                    .hint("run it in a terminal, or pass `--yes`; the draft was not changed"),
            );
        }
        let question = format!(
            "discard the draft{title} (`{}`)?",
            store.rel(&store.draft_plan_path())
        );
        let mut person = Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
        if person.yes_no(&question, false) != Some(true) {
            ctx.ui.note("kept the draft");
            return Ok(Outcome::Done);
        }
    }
    discard_now(ctx)?;
    Ok(Outcome::Done)
}

/// Throws the draft away and says so (`tick discard`, the review menu's `d`).
pub fn discard_now(ctx: &Ctx<'_>) -> Result<()> {
    let discarded = draft::discard(ctx.store())?;
    ctx.ui
        .discarded(&discarded, &ctx.store().rel(&discarded.path));
    Ok(())
}
