//! `tick completions <shell>`: a completion script generated from the clap definitions, so it
//! never falls behind the commands.

use clap::CommandFactory as _;
use clap_complete::Shell as Target;

use super::{Ctx, Outcome};
use crate::cli::{Cli, CompletionsArgs, Shell};
use crate::error::Result;

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let target = match shell {
        Shell::Bash => Target::Bash,
        Shell::Zsh => Target::Zsh,
        Shell::Fish => Target::Fish,
        Shell::PowerShell => Target::PowerShell,
        Shell::Elvish => Target::Elvish,
    };
    let mut out = Vec::new();
    clap_complete::generate(target, &mut Cli::command(), "tick", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

pub fn run(ctx: &Ctx<'_>, args: &CompletionsArgs) -> Result<Outcome> {
    ctx.ui.data(&script(args.shell));
    Ok(Outcome::Done)
}
