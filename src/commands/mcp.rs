//! `tick mcp serve`: the workspace's tasks as MCP tools over stdio. The tools are
//! [`crate::mcp::serve`]'s; this file resolves the sandbox the verify commands run in, as
//! `tick verify` does, and hands stdin and stdout to the server.

use super::{Ctx, Outcome};
use crate::cli::{McpArgs, McpCommand, McpServeArgs, ModelArgs};
use crate::error::Result;
use crate::mcp::serve::{Tasks, serve_stdio};

pub fn run(ctx: &Ctx<'_>, args: &McpArgs) -> Result<Outcome> {
    match &args.command {
        McpCommand::Serve(args) => serve(ctx, args),
    }
}

fn serve(ctx: &Ctx<'_>, args: &McpServeArgs) -> Result<Outcome> {
    let store = ctx.store();
    let config = super::resolved_config(ctx, &ModelArgs::default())?;
    let (registry, sandboxed) = crate::runner::build::registry(&config, store, args.no_sandbox)?;
    // stdout is the protocol's: warnings go to stderr, as every diagnostic does.
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
    }
    let tasks = Tasks::new(
        store.clone(),
        registry.command_env().clone(),
        ctx.runner_clock(),
    );
    serve_stdio(tasks)?;
    Ok(Outcome::Done)
}
