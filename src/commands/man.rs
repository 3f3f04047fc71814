//! `tick man`: the man page (roff), generated from the same clap definitions as `--help`.

use clap::CommandFactory as _;

use super::{Ctx, Outcome};
use crate::cli::{Cli, ManArgs};
use crate::error::{Error, Result};

/// The man page for tick and a section per subcommand, as roff.
pub fn page() -> Result<String> {
    let command = Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    let render =
        |err: std::io::Error| Error::internal(format!("could not render the man page: {err}"));
    man.render_title(&mut out).map_err(render)?;
    man.render_name_section(&mut out).map_err(render)?;
    man.render_synopsis_section(&mut out).map_err(render)?;
    man.render_description_section(&mut out).map_err(render)?;
    man.render_options_section(&mut out).map_err(render)?;
    man.render_subcommands_section(&mut out).map_err(render)?;
    man.render_version_section(&mut out).map_err(render)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub fn run(ctx: &Ctx<'_>, _args: &ManArgs) -> Result<Outcome> {
    ctx.ui.data(&page()?);
    Ok(Outcome::Done)
}
