//! `tick mcp list`, `tick mcp add` and `tick mcp serve`. The list starts each of the person's
//! MCP servers (`crate::mcp`) as planning would (stdio ones in the read-only sandbox) and says
//! which mode may use each tool; `add` writes an entry into the person's own config file;
//! `serve` hands stdin and stdout to [`crate::mcp::serve`], the workspace's tasks as MCP
//! tools, with the sandbox the verify commands run in resolved as `tick verify` does.

use super::{Ctx, Outcome};
use crate::cli::{McpAddArgs, McpArgs, McpCommand, McpServeArgs, ModelArgs};
use crate::error::{Error, Result};
use crate::mcp::config::FileServer;
use crate::mcp::serve::{Credit, Tasks, serve_stdio};

pub fn run(ctx: &Ctx<'_>, args: &McpArgs) -> Result<Outcome> {
    match &args.command {
        McpCommand::List(_) => list(ctx),
        McpCommand::Add(add_args) => add(ctx, add_args),
        McpCommand::Serve(serve_args) => serve(ctx, serve_args),
    }
}

fn list(ctx: &Ctx<'_>) -> Result<Outcome> {
    let config = ctx
        .engine
        .resolved_config(&crate::config::Flags::default())?;
    if let Some(line) = config.trust_warning() {
        ctx.ui.warn(&line);
    }
    let Some(launcher) = ctx.engine.mcp_launcher(&config, None) else {
        ctx.ui.note(
            "no MCP servers are configured; add one with `tick mcp add NAME -- COMMAND...` or \
             `tick mcp add NAME --url URL`",
        );
        return Ok(Outcome::Done);
    };
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    let mut failed = false;
    let mut out = String::new();
    for (started, _) in launcher.started(&names) {
        out.push_str(&crate::mcp::describe(&started));
        failed |= started.tools.is_err();
    }
    ctx.ui.data(out.trim_end());
    Ok(if failed {
        Outcome::Findings(3)
    } else {
        Outcome::Done
    })
}

fn add(ctx: &Ctx<'_>, args: &McpAddArgs) -> Result<Outcome> {
    let mut entry = FileServer {
        read_only_tools: args.read_only.clone(),
        ..FileServer::default()
    };
    match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            entry.url = Some(url.clone());
            entry
                .bearer_token_env_var
                .clone_from(&args.bearer_token_env_var);
        }
        (None, Some((command, rest))) => {
            entry.command = Some(command.clone());
            entry.args = rest.to_vec();
            entry.network = args.network.then_some(true);
            for pair in &args.env {
                let (key, value) = pair.split_once('=').ok_or_else(|| {
                    Error::input(format!("`--env {pair}` is not `KEY=VALUE`"))
                        .hint("for example `--env DOCS_LANG=en`; nothing was written")
                })?;
                entry.env.insert(key.to_owned(), value.to_owned());
            }
        }
        _ => {
            return Err(Error::input(format!(
                "`tick mcp add {}` needs a command after `--` or a `--url`",
                args.name
            ))
            .hint("for example `tick mcp add docs -- docs-mcp --root .`; nothing was written"));
        }
    }
    let path = crate::config::add_mcp_server(ctx.env, &args.name, &entry)?;
    ctx.ui.note(&format!(
        "added the MCP server `{}` to `{}`; `tick mcp list` starts it and lists its tools",
        args.name,
        path.display()
    ));
    if entry.read_only_tools.is_empty() {
        ctx.ui.note(
            "planning is offered none of its tools until you name the read-only ones \
             (`read_only_tools:` in its entry, or `--read-only TOOL`)",
        );
    }
    Ok(Outcome::Done)
}

fn serve(ctx: &Ctx<'_>, args: &McpServeArgs) -> Result<Outcome> {
    let store = ctx.store();
    let config = super::resolved_config(ctx, &ModelArgs::default())?;
    let (registry, sandboxed) = crate::runner::build::registry(&config, store, args.no_sandbox)?;
    // stdout is the protocol's: warnings go to stderr, as every diagnostic does.
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
    }
    let credit = Credit {
        hooks: crate::hooks::HookSet::resolve(&config.hooks, store.root()),
        commit: args.commit,
    };
    let (reports, shown) = std::sync::mpsc::channel();
    let tasks = Tasks::new(
        store.clone(),
        registry.command_env().clone(),
        ctx.runner_clock(),
        credit,
    )
    .with_reports(reports);
    // The serve answers on its own thread; this one shows each hook's report on stderr as it
    // ends, until the serve is over and drops its end of the channel.
    std::thread::scope(|scope| {
        let served = scope.spawn(move || serve_stdio(tasks));
        for report in shown {
            ctx.ui.hook_report(&report);
        }
        served
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the MCP serve thread panicked")))
    })?;
    Ok(Outcome::Done)
}
