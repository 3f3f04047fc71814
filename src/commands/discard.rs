//! `tick discard`: throw the draft away, after asking in a terminal.

use super::{Ctx, Outcome};
use crate::cli::DiscardArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Phase, transition};

pub fn run(ctx: &Ctx<'_>, args: &DiscardArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let path = store.draft_plan_path();
    if !store.draft_dir().exists() {
        return Err(Error::input("there is no draft to discard")
            .hint("`tick list` shows the draft and the tasks"));
    }
    // A draft that does not parse can still be thrown away; its title is only for the message.
    let draft = store.load_draft().ok().flatten();
    let title = draft
        .as_ref()
        .and_then(|d| d.plan.title.clone())
        .map(|t| format!(" `{t}`"))
        .unwrap_or_default();
    if !args.yes {
        if !ctx.env.interactive {
            return Err(
                Error::input(format!("discarding the draft{title} needs a confirmation"))
                    .hint("run it in a terminal, or pass `--yes`; the draft was not changed"),
            );
        }
        let keys = super::review::Keys::new(ctx);
        let question = format!("discard the draft{title} (`{}`)?", store.rel(&path));
        if keys.yes_no(ctx, &question, false) != Some(true) {
            ctx.ui.note("kept the draft");
            return Ok(Outcome::Done);
        }
    }
    let _lock = store.lock("tick discard")?;
    let phase = draft
        .as_ref()
        .and_then(|d| d.plan.phase())
        .unwrap_or(Phase::Draft);
    transition(phase, Event::Discard).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    fsx::remove_dir_all(&store.draft_dir())?;
    ctx.ui.note(&format!(
        "discarded the draft{title} (`{}`)",
        store.rel(&path)
    ));
    Ok(Outcome::Done)
}
