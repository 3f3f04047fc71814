//! The hooks the engine fires itself, outside a step's turn: `step.stale`, told by the
//! store's one place every staleness transition goes through ([`Store::on_stale`]), whoever
//! wrote it (the watcher, a status or check refresh, an undo marking dependents), and
//! `session.start`. Both run under the read-only policy: no step runs. Their reports wait in
//! the engine for the front end ([`super::Engine::take_hook_reports`]).

use std::sync::{Arc, Mutex, PoisonError};

use crate::config::Flags;
use crate::env::Env;
use crate::hooks::{Event, Fire, HookReport, HookSet, Payload, fire, read_only_env};
use crate::tasks::{OnStale, RUNS_DIR, Store, Task};
use crate::tools::bash::CommandEnv;

/// The hook runs the engine did on its own, not yet shown.
pub(super) type Reports = Arc<Mutex<Vec<HookReport>>>;

pub(super) fn push(reports: &Reports, report: HookReport) {
    reports
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(report);
}

pub(super) fn take(reports: &Reports) -> Vec<HookReport> {
    std::mem::take(&mut *reports.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The `step.stale` hooks, once per step a commit made stale, with its `stale:` line as the
/// payload's `reason`. The settings are read only when a step went stale.
pub(super) fn stale_observer(env: Env, reports: Reports) -> Arc<OnStale> {
    Arc::new(
        move |store: &Store, task: &Task, ids: &[crate::plan::StepId]| {
            let Some((set, command_env)) = read_only_hooks(store, &env, Event::StepStale) else {
                return;
            };
            for &id in ids {
                let Some(step) = task.todo.find(id) else {
                    continue;
                };
                let mut payload = Payload::for_step(task, id, step, store.root());
                payload.reason.clone_from(&step.stale);
                let how = Fire {
                    root: store.root(),
                    env: &command_env,
                    read_only: true,
                    runs_dir: task.dir.join(RUNS_DIR),
                    step: Some(id),
                };
                fire(
                    &set,
                    &how,
                    Event::StepStale,
                    &id.to_string(),
                    &payload,
                    &mut |report| push(&reports, report),
                );
            }
        },
    )
}

/// The `session.start` hooks, with the current task's payload when there is one.
pub(super) fn session_start(store: &Store, env: &Env) -> Vec<HookReport> {
    let Some((set, command_env)) = read_only_hooks(store, env, Event::SessionStart) else {
        return Vec::new();
    };
    let current = store.current_loaded().ok().flatten();
    let (payload, runs_dir) = match current {
        Some((_, Some(task))) => (
            Payload::for_task(&task, store.root()),
            task.dir.join(RUNS_DIR),
        ),
        _ => (
            Payload {
                session_id: "session".to_owned(),
                cwd: store.root().display().to_string(),
                ..Payload::default()
            },
            store.draft_dir().join(RUNS_DIR),
        ),
    };
    let how = Fire {
        root: store.root(),
        env: &command_env,
        read_only: true,
        runs_dir,
        step: None,
    };
    let mut reports = Vec::new();
    fire(
        &set,
        &how,
        Event::SessionStart,
        "",
        &payload,
        &mut |report| reports.push(report),
    );
    reports
}

/// The hooks that may run here when one of them is for `event`, and the read-only
/// environment they run in. Settings that do not resolve fire nothing: the command that
/// needs them says why.
fn read_only_hooks(store: &Store, env: &Env, event: Event) -> Option<(HookSet, CommandEnv)> {
    let config = crate::config::for_workspace(store, env, &Flags::default()).ok()?;
    let set = HookSet::resolve(&config.hooks, store.root());
    if !set.has(event) {
        return None;
    }
    let command_env = read_only_env(
        store.root(),
        config.sandbox.enabled,
        config.api_key_env.iter().cloned(),
    );
    Some((set, command_env))
}
