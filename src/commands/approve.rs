//! `tick approve`: the only way from a draft to a task folder, and the way to approve a task's
//! PLAN.md again after it was edited. Approval itself, and which of the two the arguments ask
//! for, is [`crate::planning::approve`]; this file tells the person what happened.

use super::{Ctx, Outcome};
use crate::cli::ApproveArgs;
use crate::error::Result;
use crate::planning::approve::{self, ApproveOutcome, Approved, Contract};
use crate::tasks::TODO_FILE;

pub fn run(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let contract = Contract {
        allow_deviation: args.allow_deviation,
        max_files_changed: args.max_files,
        commit_steps: args.commit_steps,
    };
    if args.task.is_none() && !overlaps_accepted(ctx) {
        ctx.ui
            .note("the draft was not approved; it waits in `.tasks/draft/PLAN.md`");
        return Ok(Outcome::Done);
    }
    // The hooks that apply now are part of what is approved (`crate::hooks::approval`).
    let config =
        crate::config::for_workspace(ctx.store(), ctx.env, &crate::config::Flags::default())?;
    let set = crate::hooks::HookSet::resolve(&config.hooks, ctx.store().root());
    let hooks = crate::hooks::approval::record(&set, ctx.store().root());
    // An untrusted clone's template is never rendered: said, not silently replaced.
    if let Some(line) = ctx.store().untrusted_templates_line() {
        ctx.ui.warn(&line);
    }
    let outcome = match approve::approve(ctx.store(), args.task.as_deref(), ctx.now(), contract) {
        Ok(outcome) => outcome,
        Err(err) => {
            // Nothing else to approve, but the current task's hooks changed: approve those.
            if args.task.is_none()
                && let Some(task) = ctx.store().current()?
            {
                let changes =
                    crate::hooks::approval::approve(ctx.store(), &task.id, &hooks, ctx.now())?;
                if !changes.is_empty() {
                    ctx.ui.hooks_approved(&task.id, &changes);
                    return Ok(Outcome::Done);
                }
            }
            return Err(err);
        }
    };
    match outcome {
        ApproveOutcome::Draft(approved) => {
            let changes =
                crate::hooks::approval::approve(ctx.store(), &approved.id, &hooks, ctx.now())?;
            if !changes.is_empty() {
                ctx.ui.hooks_approved(&approved.id, &changes);
            }
            report_approved(ctx, &approved, args.commit)?;
            plan_approved(ctx, &config, &set, &approved.id);
        }
        ApproveOutcome::Task { id, reapproved } => {
            let changes = crate::hooks::approval::approve(ctx.store(), &id, &hooks, ctx.now())?;
            let only_hooks = matches!(reapproved, approve::Reapproved::Unchanged);
            if !only_hooks || changes.is_empty() {
                let todo = ctx
                    .store()
                    .rel(&ctx.store().task_ref(&id).dir.join(TODO_FILE));
                ctx.ui.reapproved(&id, &reapproved, &todo);
            }
            if !changes.is_empty() {
                ctx.ui.hooks_approved(&id, &changes);
            }
            if !matches!(reapproved, approve::Reapproved::Unchanged) {
                plan_approved(ctx, &config, &set, &id);
            }
        }
    }
    Ok(Outcome::Done)
}

/// The `plan.approved` hooks of task `id`, once its approval is written (read-only sandbox);
/// each run is shown. They cannot undo the approval.
fn plan_approved(
    ctx: &Ctx<'_>,
    config: &crate::config::Config,
    set: &crate::hooks::HookSet,
    id: &str,
) {
    use crate::hooks::{Event, Fire, Payload, fire, read_only_env};
    if !set.has(Event::PlanApproved) {
        return;
    }
    let Ok(task) = ctx.store().load(&ctx.store().task_ref(id)) else {
        return;
    };
    let root = ctx.store().root();
    let env = read_only_env(
        root,
        config.sandbox.enabled,
        config.api_key_env.iter().cloned(),
    );
    let how = Fire {
        root,
        env: &env,
        read_only: true,
        runs_dir: task.dir.join(crate::tasks::RUNS_DIR),
        step: None,
    };
    let payload = Payload::for_task(&task, root);
    fire(
        set,
        &how,
        Event::PlanApproved,
        "",
        &payload,
        &mut |report| {
            ctx.ui.hook_report(&report);
        },
    );
}

/// Tells the person the draft is a task now, and commits its folder when asked (`--commit`,
/// or the review menu's question).
pub fn report_approved(ctx: &Ctx<'_>, approved: &Approved, commit: bool) -> Result<()> {
    let folder = ctx.store().rel(&approved.dir);
    ctx.ui.approved(approved, &folder);
    for line in &approved.overlaps {
        ctx.ui.warn(line);
    }
    if commit {
        approve::commit_task(ctx.store(), approved)?;
    }
    ctx.ui.approved_next(&folder, commit);
    Ok(())
}

/// The draft's overlaps with the active tasks, said; in a terminal the person is asked whether
/// to approve anyway. `false` when they said no.
pub fn overlaps_accepted(ctx: &Ctx<'_>) -> bool {
    use super::terminal::Terminal;
    use crate::person::Person;
    let Some(draft) = ctx.store().load_draft().ok().flatten() else {
        return true;
    };
    let overlaps = approve::draft_overlaps(ctx.store(), &draft.plan.steps);
    if overlaps.is_empty() || !ctx.env.interactive {
        return true;
    }
    for line in &overlaps {
        ctx.ui.warn(line);
    }
    let mut person = Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
    person.yes_no(
        "approve it anyway? both tasks would change these files",
        false,
    ) == Some(true)
}
