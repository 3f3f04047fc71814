//! Long output through the person's pager, the way git does it: when stdout is a terminal,
//! `tick show`, `tick status` and `tick log` write into `$TICK_PAGER`, else `$PAGER`, else
//! `less` (with `LESS=FRX` unless the person set `LESS`: it quits at once when the text fits
//! the screen, keeps colour, and leaves the text on screen). `cat` or an empty value turns it
//! off. Errors and warnings stay on stderr, outside the pager.
//!
//! The pager reads what [`crate::ui`] writes, and `ui` shows the control characters of text
//! tick did not write in caret notation before it writes it ([`crate::text::visible`]): `less
//! -R` passes SGR sequences (SGR 8 conceals text) to the terminal, `PAGER=cat` passes
//! everything, so nothing raw may reach the pipe.

use std::io::{IsTerminal as _, Write as _};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

use crate::env::Env;

/// The pager a command's stdout goes into while this lives; dropping it closes the pipe,
/// waits for the pager to end, and gives stdout back.
pub struct Pager {
    child: Child,
    stdout: OwnedFd,
}

/// Starts the pager for a command whose output is `pageable`, when stdout is a terminal and
/// a pager is configured; `None` otherwise (the output goes straight to stdout).
pub fn start(env: &Env, pageable: bool) -> Option<Pager> {
    if !pageable || !std::io::stdout().is_terminal() {
        return None;
    }
    let pager = env
        .vars
        .get("TICK_PAGER")
        .or_else(|| env.vars.get("PAGER"))
        .map_or("less", String::as_str)
        .trim();
    if pager.is_empty() || pager == "cat" {
        return None;
    }
    let mut command = Command::new("sh");
    // The setting may carry arguments (`less -S`): the shell splits it, as git's does.
    command.arg("-c").arg(pager).stdin(Stdio::piped());
    if !env.vars.contains_key("LESS") {
        command.env("LESS", "FRX");
    }
    let mut child = command.spawn().ok()?;
    let pipe = child.stdin.take()?;
    let stdout = nix::unistd::dup(std::io::stdout()).ok()?;
    if nix::unistd::dup2_stdout(&pipe).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    drop(pipe);
    Some(Pager { child, stdout })
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // stdout back on the terminal: the pipe's last writer is gone, the pager sees the end.
        let _ = nix::unistd::dup2_stdout(&self.stdout);
        let _ = self.child.wait();
    }
}
