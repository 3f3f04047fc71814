//! `tick approve`: the only way from a draft to a task folder, and the way to approve a task's
//! PLAN.md again after it was edited. Approval itself, and which of the two the arguments ask
//! for, is [`crate::planning::approve`]; this file tells the person what happened.

use super::{Ctx, Outcome};
use crate::cli::ApproveArgs;
use crate::engine::Approval;
use crate::error::Result;
use crate::planning::approve::{self, Approved, Contract};
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
    // `tick approve --allow-deviation` with no draft: the new contract is for the current task.
    let contract_only = args.allow_deviation || args.max_files.is_some() || args.commit_steps;
    let mut task_arg = args.task.clone();
    if task_arg.is_none()
        && contract_only
        && !ctx
            .store()
            .draft_dir()
            .join(crate::tasks::PLAN_FILE)
            .exists()
        && let Some(current) = ctx.store().current()?
    {
        task_arg = Some(current.id.clone());
    }
    // Whether the task's PLAN.md itself was edited since its approval, or only the contract
    // changes now.
    let edited = match &task_arg {
        Some(task) => ctx
            .store()
            .resolve(task)
            .and_then(|r| ctx.store().load(&r))
            .is_ok_and(|t| t.plan_changed()),
        None => true,
    };
    // An untrusted clone's template is never rendered: said, not silently replaced.
    if let Some(line) = ctx.store().untrusted_templates_line() {
        ctx.ui.warn(&line);
    }
    let approved = ctx.engine.approve(task_arg.as_deref(), contract)?;
    let (config, set, changes) = (&approved.config, &approved.hooks, &approved.hooks_approved);
    match &approved.approval {
        Approval::HooksOnly { id } => ctx.ui.hooks_approved(id, changes),
        Approval::Draft(approved) => {
            if !changes.is_empty() {
                ctx.ui.hooks_approved(&approved.id, changes);
            }
            report_approved(ctx, approved, args.commit)?;
            plan_approved(ctx, config, set, &approved.id);
        }
        Approval::Task { id, reapproved } => {
            let only_hooks = matches!(reapproved, approve::Reapproved::Unchanged);
            if !edited && !only_hooks {
                contract_changed(ctx, id, args);
            } else if !only_hooks || changes.is_empty() {
                let todo = ctx
                    .store()
                    .rel(&ctx.store().task_ref(id).dir.join(TODO_FILE));
                ctx.ui.reapproved(id, reapproved, &todo);
                if let Ok(task) = ctx.store().load(&ctx.store().task_ref(id)) {
                    ctx.ui.undone_steps(&task);
                }
            }
            if !changes.is_empty() {
                ctx.ui.hooks_approved(id, changes);
            }
            if !only_hooks {
                plan_approved(ctx, config, set, id);
            }
        }
    }
    Ok(Outcome::Done)
}

/// An unedited task approved again for a new contract: what the contract allows now.
fn contract_changed(ctx: &Ctx<'_>, id: &str, args: &ApproveArgs) {
    let mut said = Vec::new();
    if args.allow_deviation {
        said.push(
            "deviation is now allowed: the run changes files outside a step's `files` without \
             pausing"
                .to_owned(),
        );
    }
    if let Some(max) = args.max_files {
        said.push(format!("the run now stops after {max} changed files"));
    }
    if args.commit_steps {
        said.push("every verified step now gets its own commit".to_owned());
    }
    if said.is_empty() {
        said.push("approved again; the plan did not change".to_owned());
    }
    ctx.ui.note(&format!(
        "`{id}`: {} (the plan itself is unchanged)",
        said.join("; ")
    ));
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

/// The review menu's approval: the draft with `contract`, its hooks, and the folder committed
/// when `commit`.
pub fn approve_reviewed(ctx: &Ctx<'_>, contract: Contract, commit: bool) -> Result<()> {
    let (store, env, now) = (ctx.store(), ctx.env, ctx.now());
    let approved = approve::approve_draft(store, now, contract)?;
    // The hooks that apply are part of the approval (`docs/hooks.md`).
    crate::hooks::approval::approve_configured(store, env, &approved.id, now)?;
    report_approved(ctx, &approved, commit)
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
