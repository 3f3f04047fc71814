//! `tick run`: execute the approved plan one verified step at a time. This file turns the
//! arguments into an [`Engine::run`](crate::engine::Engine::run) and renders its events; the
//! engine is [`crate::engine`], the runner below it [`crate::runner`].

use super::terminal::Terminal;
use super::{Ctx, Outcome};
use crate::cli::RunArgs;
use crate::engine::{Event, RunRequest};
use crate::error::{Error, Result};
use crate::person::{Nobody, Person};
use crate::plan::StepId;
use crate::runner::RunOptions;

pub fn run(ctx: &Ctx<'_>, args: &RunArgs) -> Result<Outcome> {
    let only = args.step.as_deref().map(str::parse::<StepId>);
    let only = only.transpose().map_err(Error::input)?;
    if args.dry_run {
        let Some(prompts) = ctx.engine.dry_run(args.task.as_deref(), only)? else {
            ctx.ui.note("every step is done; nothing would run");
            return Ok(Outcome::Done);
        };
        let (system, user) = (prompts.system.trim_end(), prompts.user);
        ctx.ui
            .data(&format!("--- system ---\n{system}\n--- user ---\n{user}"));
        return Ok(Outcome::Done);
    }
    let (ui, json, live) = (ctx.ui, args.json, ctx.env.stderr_is_terminal);
    let mut sink = move |event: Event| match event {
        Event::Run(event) => ui.run_event(&event, json, live),
        Event::Warning(warning) => ui.warn(&crate::ui::warning_line(&warning)),
        Event::Note(line) => ui.note(&line),
    };
    let stop = super::stop_on_signals()?;
    ctx.ui.watch_stop(&stop);
    let request = RunRequest {
        task: args.task.as_deref(),
        options: RunOptions {
            only,
            max_steps: args.steps,
        },
        flags: super::flags(&args.model),
        no_sandbox: args.no_sandbox,
        commit: args.commit,
        stop,
        stopped_by: "Ctrl-C",
    };
    let mut terminal = Terminal::new(ui, ctx.env.stdin_is_terminal);
    let person: &mut dyn Person = if ctx.env.interactive && !json {
        &mut terminal
    } else {
        &mut Nobody
    };
    let result = ctx.engine.run(request, person, &mut sink);
    ui.end_live_text();
    Ok(result?.ended.into())
}
