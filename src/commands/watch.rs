//! `tick watch [TASK]`: a live view of one task for a second terminal. Prints the checklist,
//! then one line per change as TODO.md or a fingerprinted file changes, and marks steps whose
//! files changed outside tick stale as it happens. Ctrl-C (or SIGTERM) ends it cleanly.

use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};

use super::{Ctx, Outcome};
use crate::cli::WatchArgs;
use crate::error::{Error, ErrorKind, Result};
use crate::report::status;
use crate::report::watch::{Shown, WatchEvent, diff, snapshot};
use crate::tasks::{PLAN_FILE, STATE_FILE, TODO_FILE, Task, TaskRef};
use crate::watch::live::{Change, LiveOptions, LiveWatcher};
use crate::watch::{self, stale};

pub fn run(ctx: &Ctx<'_>, args: &WatchArgs) -> Result<Outcome> {
    let task = ctx.store().resolve_or_current(args.task.as_deref())?;
    crate::rt::block_on(watch(ctx, &task))?
}

async fn watch(ctx: &Ctx<'_>, task_ref: &TaskRef) -> Result<Outcome> {
    let store = ctx.store();
    let options = LiveOptions {
        force_poll: matches!(ctx.env.var("TICK_WATCH_POLL"), Some("1" | "true" | "yes")),
        ..LiveOptions::default()
    };
    let mut watcher = LiveWatcher::start(store.root(), options)?;
    if let Some(why) = &watcher.fallback
        && watcher.is_polling()
    {
        ctx.ui.warn(&format!(
            "watching by polling: the native watcher failed ({why})"
        ));
    }
    // Listen before saying "watching": a Ctrl-C from then on must end the loop, not the process.
    let listen = |kind: SignalKind| {
        signal(kind).map_err(|err| Error::internal(format!("could not listen for signals: {err}")))
    };
    let mut sigint = listen(SignalKind::interrupt())?;
    let mut sigterm = listen(SignalKind::terminate())?;

    let task_prefix = format!("{}/", store.rel(&task_ref.dir));
    let mut shown = Shown::new();
    let mut plan_changed = false;
    // The first pass marks what went stale while nobody watched, then shows the checklist.
    match check(ctx, task_ref) {
        Ok(task) => {
            let report = status::task_report(store, &task);
            ctx.ui.status(&status::StatusReport {
                format: status::JSON_FORMAT,
                draft: None,
                draft_error: None,
                task: Some(report),
                attention: Vec::new(),
                plan_attempt: None,
            });
            shown = snapshot(&task);
            plan_changed = task.plan_changed();
        }
        Err(err) if err.kind == ErrorKind::Input => {
            ctx.ui.watch_event(&WatchEvent::Problem(err.message));
        }
        Err(err) => return Err(err),
    }
    ctx.ui.note(&format!(
        "watching `{}` for changes (Ctrl-C to stop)",
        store.rel(&task_ref.dir)
    ));

    loop {
        let change = tokio::select! {
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
            change = watcher.next() => change,
        };
        let Some(change) = change else { break };
        let relevant = match &change {
            Change::Rescan { reason } => {
                ctx.ui.watch_event(&WatchEvent::Rescan(reason.clone()));
                true
            }
            Change::Paths(paths) => paths.iter().any(|path| {
                // Every other task's files, and this task's runs/, are no concern of this view.
                match path.strip_prefix(&task_prefix) {
                    Some(file) => [TODO_FILE, PLAN_FILE, STATE_FILE].contains(&file),
                    None => !path.starts_with(".tasks/"),
                }
            }),
        };
        if !relevant {
            continue;
        }
        match check(ctx, task_ref) {
            Ok(task) => {
                let next = snapshot(&task);
                for event in diff(&shown, &next, &task) {
                    ctx.ui.watch_event(&event);
                }
                if task.plan_changed() && !plan_changed {
                    ctx.ui.watch_event(&WatchEvent::PlanChanged);
                }
                plan_changed = task.plan_changed();
                shown = next;
            }
            Err(err) if err.kind == ErrorKind::Input => {
                ctx.ui.watch_event(&WatchEvent::Problem(err.message));
            }
            Err(err) => return Err(err),
        }
    }
    ctx.ui.note("stopped watching");
    Ok(Outcome::Done)
}

/// Marks what is stale (unless a run holds the task: it marks its own) and reads the task back.
fn check(ctx: &Ctx<'_>, task_ref: &TaskRef) -> Result<Task> {
    let found = watch::refresh_or_detect(ctx.store(), task_ref, ctx.now())?;
    for report in ctx.engine.take_hook_reports() {
        ctx.ui.hook_report(&report);
    }
    let mut task = ctx.store().load(task_ref)?;
    if !found.marked
        && !found.stale.is_empty()
        // Show the verdict anyway, in memory; the file is left to the process that holds it.
        && let Ok(text) = stale::mark_stale(&task.todo_src, &found.stale, ctx.now())
        && let Ok(list) = crate::tasks::todo_md::parse(&text)
    {
        task.todo = list.into();
        task.todo_src = Arc::new(text);
    }
    Ok(task)
}
