//! `tick verify [TASK] [S1 …]`: run the verification of done and stale steps again, without a
//! model. The engine is [`crate::runner::reverify`]; this file resolves the task, the sandbox
//! and the steps, and renders the events.

use super::{Ctx, Outcome};
use crate::cli::{ModelArgs, VerifyArgs};
use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::runner::RunEvent;
use crate::runner::reverify::verify_steps;
use crate::ui::verify;
use crate::undo::from_git::{ClaimFilter, verify_claims};

pub fn run(ctx: &Ctx<'_>, args: &VerifyArgs) -> Result<Outcome> {
    let store = ctx.store();
    // `tick verify S2`, `tick verify TASK`, `tick verify TASK S2 S3`: the words that are step
    // ids are steps, one other word is the task.
    let mut task = None;
    let mut only = Vec::new();
    for word in &args.args {
        match word.parse::<StepId>() {
            Ok(id) => only.push(id),
            Err(_) if task.is_none() => task = Some(word.as_str()),
            Err(_) => {
                return Err(Error::input(format!(
                    "`{word}` is neither a step id nor the only task"
                ))
                .hint("`tick verify [TASK] [S1 S2 …]`"));
            }
        }
    }
    if let Some(range) = &args.from_git {
        return from_git(ctx, args, range, task, &only);
    }
    // The task `tick status` shows: right after its last step is done, the task whose done
    // steps it says to verify, not the next open one.
    let task_ref = store.resolve_or_shown(task)?;
    if args.dry_run {
        return dry_run(ctx, &task_ref, &only);
    }
    let lock = store.lock_task_now(&task_ref, "tick verify")?;
    store.set_current(&task_ref);
    let config = super::resolved_config(ctx, &ModelArgs::default())?;
    let (registry, sandboxed) = crate::runner::build::registry(&config, store, args.no_sandbox)?;
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
    }
    // What changed while tick was not looking is marked stale first, like every command.
    crate::watch::refresh_locked(store, &task_ref, ctx.now(), &lock)?;
    let task = store.load(&task_ref)?;
    store.require_steps(&task)?;
    let hooks = approved_hooks(ctx, &config, &task, args.json)?;
    if let Some(missing) = only.iter().find(|id| task.todo.find(**id).is_none()) {
        let ids: Vec<String> = task
            .todo
            .all_steps()
            .filter_map(|s| s.id.map(|id| format!("`{id}`")))
            .collect();
        return Err(Error::input(format!(
            "there is no step `{missing}` in `{}`",
            store.rel(&task.dir.join(crate::tasks::TODO_FILE))
        ))
        .hint(format!("its steps are {}; nothing was run", ids.join(", "))));
    }
    let clock = ctx.runner_clock();
    let (ui, json, live) = (ctx.ui, args.json, ctx.env.stderr_is_terminal);
    // A stale step's verdict is said by its event: the closing lines leave it out, so each
    // step gets one verdict.
    let mut said = Vec::new();
    let mut sink = |event: RunEvent| {
        if let RunEvent::StaleReverified { step, .. } = &event {
            said.push(*step);
        }
        ui.run_event(&event, json, live);
    };
    let outcomes = verify_steps(
        store,
        &task_ref,
        registry.command_env(),
        &hooks,
        &only,
        &clock,
        &mut sink,
    )?;
    if outcomes.is_empty() {
        ctx.ui.note(&verify::nothing_to_verify(&task, &only));
        return Ok(Outcome::Done);
    }
    let mut failed = false;
    for outcome in &outcomes {
        failed |= outcome.reopens();
        if json || said.contains(&outcome.step()) {
            continue;
        }
        ctx.ui.note(&verify::reverified_line(outcome));
    }
    Ok(if failed {
        Outcome::Blocked
    } else {
        Outcome::Done
    })
}

/// `tick verify --from-git [RANGE] [TASK] [S1 …]`: the verification of each step the range's
/// commits claim, run again ([`crate::undo::from_git::verify_claims`]); nothing is written.
fn from_git(
    ctx: &Ctx<'_>,
    args: &VerifyArgs,
    range: &str,
    task: Option<&str>,
    only: &[StepId],
) -> Result<Outcome> {
    let store = ctx.store();
    let task_id = match task {
        Some(task) => Some(store.resolve(task)?.id.clone()),
        None => None,
    };
    let config = super::resolved_config(ctx, &ModelArgs::default())?;
    let (registry, sandboxed) = crate::runner::build::registry(&config, store, args.no_sandbox)?;
    if !sandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
    }
    let filter = ClaimFilter {
        task: task_id.as_deref(),
        only,
    };
    let (ui, json) = (ctx.ui, args.json);
    let report = verify_claims(
        store,
        Some(range),
        filter,
        registry.command_env(),
        crate::runner::verify::VERIFY_TIMEOUT,
        &mut |claim| {
            if !json {
                ui.claim_verified(claim);
            }
        },
    )?;
    if json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.claims_verified(&report);
    }
    Ok(if report.exit_code == 0 {
        Outcome::Done
    } else {
        Outcome::Findings(report.exit_code)
    })
}

/// `tick verify --dry-run`: the steps `tick verify` would check, each with its commands and
/// what a failure would do; nothing runs and nothing is written.
fn dry_run(ctx: &Ctx<'_>, task_ref: &crate::tasks::TaskRef, only: &[StepId]) -> Result<Outcome> {
    let task = ctx.store().load(task_ref)?;
    ctx.store().require_steps(&task)?;
    let steps = crate::runner::reverify::to_verify(&task.todo, only);
    if steps.is_empty() {
        ctx.ui.note(&verify::nothing_to_verify(&task, only));
        return Ok(Outcome::Done);
    }
    ctx.ui.data(&verify::to_verify_text(&steps));
    ctx.ui
        .hint("`tick verify` runs these: a step that passes is `[x]`, one that fails is opened again (`[ ]`)");
    Ok(Outcome::Done)
}

/// The hooks that guard a tick outside a run (`tick verify`, `tick redo`), as in a run: the
/// ones `task`'s approval recorded, or the command refuses (saying what changed) and none runs.
pub(super) fn approved_hooks(
    ctx: &Ctx<'_>,
    config: &crate::config::Config,
    task: &crate::tasks::Task,
    json: bool,
) -> Result<crate::hooks::HookSet> {
    let store = ctx.store();
    let hooks = crate::hooks::HookSet::resolve(&config.hooks, store.root());
    if let Some(warning) = hooks.ignored_warning() {
        ctx.ui.warn(&warning);
    }
    if let Err((changes, refused)) = crate::runner::hooks_as_approved(&hooks, store, task) {
        let event = RunEvent::HooksChanged { changes };
        ctx.ui.run_event(&event, json, ctx.env.stderr_is_terminal);
        return Err(refused);
    }
    Ok(hooks)
}
