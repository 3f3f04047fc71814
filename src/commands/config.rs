//! `tick config list|get|set`: the settings tick uses, where each came from, and a checked way
//! to change one in the person's file or the repository's. The work is
//! [`crate::config::setting`]'s; this file renders what it returns.

use super::{Ctx, Outcome};
use crate::cli::{ConfigArgs, ConfigCommand, ConfigSetArgs};
use crate::config::setting;
use crate::error::Result;

pub fn run(ctx: &Ctx<'_>, args: &ConfigArgs) -> Result<Outcome> {
    match &args.command {
        ConfigCommand::List(_) => {
            let listed = setting::list(ctx.store(), ctx.env)?;
            ctx.ui.data(&crate::ui::settings_table(&listed.settings));
            if let Some(warning) = listed.trust_warning {
                ctx.ui.warn(&warning);
            }
        }
        ConfigCommand::Get(get) => {
            let shown = setting::get(ctx.store(), ctx.env, &get.key)?;
            ctx.ui.data(&shown.value);
            ctx.ui.note(&format!("from {}", shown.described()));
        }
        ConfigCommand::Set(set) => self::set(ctx, set)?,
    }
    Ok(Outcome::Done)
}

fn set(ctx: &Ctx<'_>, args: &ConfigSetArgs) -> Result<()> {
    let written = setting::set(ctx.store(), ctx.env, &args.key, &args.value, args.user)?;
    ctx.ui.note(&format!(
        "set `{}` to `{}` in `{}`",
        written.key, written.written, written.shown
    ));
    if let Some(name) = written.overridden_by {
        ctx.ui.warn(&format!(
            "`{name}` is set in the environment and wins over the file"
        ));
    } else if let Ok(now) = setting::get(
        // Trusted as the files were when this command started: the write may have changed that.
        &crate::tasks::Store::at(ctx.store().root()).trusting(ctx.env),
        ctx.env,
        written.key,
    ) && now.ignored_in.is_some()
    {
        // Written, but the repository's file does not decide it yet: say so, with the value
        // in force.
        ctx.ui.warn(&format!(
            "`{}` is not trusted as it is now, so this takes effect after `tick trust`; until \
             then `{}` is `{}`, from {}",
            written.shown, written.key, now.value, now.source
        ));
    }
    Ok(())
}
