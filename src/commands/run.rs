//! `tick run`: execute the approved plan one verified step at a time. This file turns the
//! arguments into a [`Runner`] and renders its events; the engine (scheduling, a step's
//! lifecycle, verification, attribution, deviations, `--commit`) is [`crate::runner`].

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::{Ctx, Outcome};
use crate::agent::context;
use crate::cli::RunArgs;
use crate::error::{Error, Result};
use crate::person::Terminal;
use crate::plan::StepId;
use crate::runner::build::Parts;
use crate::runner::{
    Confirm, EXECUTE_PROMPT, NeverGoOn, Next, RunEvent, RunOptions, Runner, StepOutcome, next_step,
};
use crate::tasks::TaskRef;

pub fn run(ctx: &Ctx<'_>, args: &RunArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let only = args
        .step
        .as_deref()
        .map(|s| s.parse::<StepId>().map_err(Error::input))
        .transpose()?;
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    if args.dry_run {
        return dry_run(ctx, &task_ref, only);
    }
    let lock = store.lock_task_now(&task_ref, "tick run")?;
    store.set_current(&task_ref);
    let ui = ctx.ui;
    let (json, live) = (args.json, ctx.env.stderr_is_terminal);
    let mut sink = move |event: RunEvent| ui.run_event(&event, json, live);
    // What needs no model is said before the model's settings are asked for.
    crate::runner::check_runnable(store, &store.load(&task_ref)?, &mut sink)?;
    let config = super::model_config(ctx, &args.model)?;
    // Ctrl-C (or SIGTERM, or a closed terminal's SIGHUP) stops the agent's command under way
    // at once and the run at the next safe point, leaving the step in progress; a second one
    // ends the process at once, and the sandbox with it. Every write is atomic either way.
    let interrupted = Arc::new(AtomicBool::new(false));
    let parts =
        Parts::new(&config, store, args.no_sandbox)?.with_interrupt(Arc::clone(&interrupted));
    let sandboxed = parts.sandboxed;
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&interrupted)))
            .map_err(|err| Error::internal(format!("could not handle Ctrl-C: {err}")))?;
    }
    let mut runner = Runner::new(parts.deps(
        &config,
        store,
        task_ref.clone(),
        &lock,
        ctx.runner_clock(),
        interrupted,
        args.commit,
        true,
    ))?;
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
        crate::runner::write::record_unsandboxed(store, &task_ref, ctx.now())?;
    }
    warn_about_hard_links(ctx, store.root());
    let mut terminal = Terminal::new(ui, ctx.env.stdin_is_terminal);
    let confirm: &mut dyn Confirm = if ctx.env.interactive && !json {
        &mut terminal
    } else {
        &mut NeverGoOn
    };
    let options = RunOptions {
        only,
        max_steps: args.steps,
    };
    let result = runner.run(options, confirm, &mut sink);
    ui.end_live_text();
    Ok(match result?.ended {
        StepOutcome::Done => Outcome::Done,
        StepOutcome::Blocked => Outcome::Blocked,
        StepOutcome::Paused => Outcome::Paused,
        StepOutcome::Limit => Outcome::Limit,
        StepOutcome::Interrupted => Outcome::Interrupted,
    })
}

/// Names the workspace's files that are also files elsewhere (hard links): no sandbox can
/// keep a command that may write the one from writing the other.
fn warn_about_hard_links(ctx: &Ctx<'_>, root: &std::path::Path) {
    let Ok(leaving) = crate::sandbox::links_leaving(root) else {
        return;
    };
    if leaving.is_empty() {
        return;
    }
    let mut list: Vec<String> = leaving.iter().take(5).map(|p| format!("`{p}`")).collect();
    if leaving.len() > list.len() {
        list.push(format!("and {} more", leaving.len() - list.len()));
    }
    ctx.ui.warn(&format!(
        "{} {} hard links outside the workspace (or into `.git/`, `.tasks/`): a command that \
         writes them writes there too",
        list.join(", "),
        if leaving.len() == 1 { "has" } else { "have" }
    ));
}

/// Prints the exact prompt the next step would get, and runs nothing.
fn dry_run(ctx: &Ctx<'_>, task_ref: &TaskRef, only: Option<StepId>) -> Result<Outcome> {
    let task = ctx.store.load(task_ref)?;
    ctx.store.require_steps(&task)?;
    let id = match next_step(&task.todo, only) {
        Next::Step(id) | Next::AlreadyDone(id) => id,
        Next::Blocked { id, .. } | Next::Waiting { id, .. } => id,
        Next::AllDone => {
            ctx.ui.note("every step is done; nothing would run");
            return Ok(Outcome::Done);
        }
    };
    let system = ctx.store.prompt("execute.md", EXECUTE_PROMPT)?;
    ctx.ui.data(&format!(
        "--- system ---\n{}\n--- user ---\n{}",
        system.trim_end(),
        context::pack(&task, id)
    ));
    Ok(Outcome::Done)
}
