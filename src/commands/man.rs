//! `tick man`: the man pages (roff), generated from the same clap definitions as `--help`:
//! `tick(1)`, whose subcommand section names `tick-plan(1)` and the others, and a page for
//! each of those, printed one at a time or all written into a directory.

use clap::CommandFactory as _;

use super::{Ctx, Outcome};
use crate::cli::{Cli, ManArgs};
use crate::error::{Error, Result};
use crate::fsx;

/// Every page: (file name, roff), the top page first, then the subcommands in their order.
pub fn pages() -> Result<Vec<(String, String)>> {
    let mut command = Cli::command().disable_help_subcommand(true);
    // Building gives each subcommand its display name (`tick-plan`), which names its page.
    command.build();
    let mut pages = vec![render(command.clone())?];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(render(sub.clone())?);
    }
    Ok(pages)
}

/// The page of `tick` (`None`) or of one subcommand, like `plan`.
pub fn page(subcommand: Option<&str>) -> Result<String> {
    let wanted = subcommand.map_or_else(|| "tick.1".to_owned(), |name| format!("tick-{name}.1"));
    let pages = pages()?;
    let names: Vec<String> = pages
        .iter()
        .skip(1)
        .map(|(file, _)| {
            format!(
                "`{}`",
                file.trim_start_matches("tick-").trim_end_matches(".1")
            )
        })
        .collect();
    pages
        .into_iter()
        .find(|(file, _)| *file == wanted)
        .map(|(_, roff)| roff)
        .ok_or_else(|| {
            Error::input(format!(
                "there is no subcommand `{}`",
                subcommand.unwrap_or_default()
            ))
            .hint(format!("the pages are for {}", names.join(", ")))
        })
}

fn render(command: clap::Command) -> Result<(String, String)> {
    let man = clap_mangen::Man::new(command);
    let mut out = Vec::new();
    man.render(&mut out)
        .map_err(|err| Error::internal(format!("could not render the man page: {err}")))?;
    Ok((
        man.get_filename(),
        String::from_utf8_lossy(&out).into_owned(),
    ))
}

pub fn run(ctx: &Ctx<'_>, args: &ManArgs) -> Result<Outcome> {
    let Some(dir) = &args.dir else {
        ctx.ui.data(&page(args.command.as_deref())?);
        return Ok(Outcome::Done);
    };
    let dir = ctx.env.cwd.join(dir);
    fsx::create_dir_all(&dir)?;
    let pages = pages()?;
    for (file, roff) in &pages {
        fsx::write_atomic(&dir.join(file), roff.as_bytes())?;
    }
    ctx.ui.note(&format!(
        "wrote {} man pages to `{}`",
        pages.len(),
        dir.display()
    ));
    ctx.ui.hint(&format!(
        "`man tick-plan` finds them when `{}` is on your MANPATH",
        dir.display()
    ));
    Ok(Outcome::Done)
}
