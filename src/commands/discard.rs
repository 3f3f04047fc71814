//! `tick discard`: throw the draft away.

use super::{Ctx, Outcome};
use crate::cli::DiscardArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Phase, transition};

pub fn run(ctx: &Ctx<'_>, _args: &DiscardArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let path = store.draft_plan_path();
    if !store.draft_dir().exists() {
        return Err(Error::input("there is no draft to discard")
            .hint("`tick list` shows the draft and the tasks"));
    }
    let _lock = store.lock("tick discard")?;
    // A draft that does not parse can still be thrown away; its title is only for the message.
    let draft = store.load_draft().ok().flatten();
    let phase = draft
        .as_ref()
        .and_then(|d| d.plan.phase())
        .unwrap_or(Phase::Draft);
    transition(phase, Event::Discard).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    fsx::remove_dir_all(&store.draft_dir())?;
    let title = draft
        .and_then(|d| d.plan.title)
        .map(|t| format!(" `{t}`"))
        .unwrap_or_default();
    ctx.ui.note(&format!(
        "discarded the draft{title} (`{}`)",
        store.rel(&path)
    ));
    Ok(Outcome::Done)
}
