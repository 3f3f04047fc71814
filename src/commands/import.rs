//! `tick import PATH`: another tool's tasks as a draft. The work is
//! [`crate::planning::import`]; this file tells the person what came of it.

use super::{Ctx, Outcome};
use crate::cli::ImportArgs;
use crate::error::{Error, Result};
use crate::planning::import::{self, Request};

/// `cwd` is where the person is (`-C DIR` applied): `PATH` is relative to it.
pub fn run(ctx: &Ctx<'_>, args: &ImportArgs, cwd: &std::path::Path) -> Result<Outcome> {
    let format = match args.format.as_deref() {
        Some(name) => Some(name.parse().map_err(Error::input)?),
        None => None,
    };
    let request = Request {
        named: args.path.to_string_lossy().into_owned(),
        path: cwd.join(&args.path),
        format,
        dry_run: args.dry_run,
        write_back: !args.no_write_back,
    };
    let imported = import::import(ctx.store(), &request, ctx.now())?;
    if args.dry_run {
        ctx.ui.data(&imported.text);
    }
    for warning in &imported.warnings {
        ctx.ui.warn(warning);
    }
    let into = imported.written.as_ref().map_or_else(
        || "nothing written (dry run)".to_owned(),
        |path| format!("draft `{}`", ctx.store().rel(path)),
    );
    ctx.ui.note(&format!(
        "imported {} steps from `{}` ({}): {} ticked (not verified), {} checks proposed; {into}",
        imported.steps,
        imported.source,
        imported.format.tool(),
        imported.done,
        imported.proposed,
    ));
    if imported.written.is_some() {
        ctx.ui.hint("read it with `tick review` (the `proposed:` lines are checks tick wrote), then `tick approve`");
    }
    Ok(Outcome::Done)
}
