//! `tick approve`: the only way from a draft to a task folder, and the way to approve a task's
//! PLAN.md again after it was edited.

use std::path::Path;

use super::{Ctx, Outcome};
use crate::cli::ApproveArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Phase, transition};
use crate::tasks::plan_md::{self, Approval, FrontMatter, PlanDoc};
use crate::tasks::render::render_todo;
use crate::tasks::state::{ApprovalRecord, State};
use crate::tasks::{
    PLAN_FILE, RUNS_DIR, SESSION_FILE, STATE_FILE, TODO_FILE, draft_hash, folder_name, merge,
    remove_draft, steps_hash, todo_md,
};

/// Where the approved PLAN.md is kept (locally, not committed) to show what changed later.
pub const APPROVED_COPY: &str = "approved-PLAN.md";

pub fn run(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let store = &ctx.store;
    // An approval a kill cut short after the draft's PLAN.md went: taking the store's lock
    // finishes it (the rest of the draft folder goes) before anything looks for a draft.
    // Likewise a temp file a killed write of `.tasks/.current` left.
    if store.approving_path().exists()
        || crate::fsx::has_stray_temps(store.dir(), &crate::tasks::WRITTEN_FILES)
    {
        drop(store.lock("tick approve")?);
    }
    if let Some(task) = &args.task {
        let task = store.resolve(task)?;
        return reapprove(ctx, &task.id, args);
    }
    if store.draft_plan_path().exists() {
        return approve_draft(ctx, args);
    }
    if let Some(task) = store.current()?
        && store.load(&task).is_ok_and(|t| t.plan_changed())
    {
        return reapprove(ctx, &task.id, args);
    }
    Err(Error::input("there is no draft to approve")
        .hint("write one with `tick plan \"goal\"` or `tick plan --from plan.md`"))
}

fn approval_of(existing: Option<&Approval>, args: &ApproveArgs) -> Approval {
    let existing = existing.cloned().unwrap_or_default();
    Approval {
        allow_deviation: args.allow_deviation || existing.allow_deviation,
        max_files_changed: args.max_files.or(existing.max_files_changed),
        commit_steps: args.commit_steps || existing.commit_steps,
    }
}

fn approve_draft(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let store = &ctx.store;
    store.ensure()?;
    let _lock = store.lock("tick approve")?;
    let Some(draft) = store.load_draft()? else {
        return Err(Error::input("there is no draft to approve"));
    };
    let path = draft.path.clone();
    let phase = draft.plan.phase().unwrap_or(Phase::Draft);
    transition(phase, Event::Approve).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    plan_md::validate(&draft.plan).map_err(|e| store.parse_error(&path, &e))?;

    // Steps a person added to the draft without ids get them now, so PLAN.md and TODO.md
    // name the same steps.
    let body = with_ids(&draft.plan)?;
    let plan = plan_md::parse(&plan_md::render(&draft.plan.front, &body).map_err(render_error)?)
        .map_err(|e| store.parse_error(&path, &e))?;
    let now = ctx.now();
    // A title is one line: a newline in it would write markdown of its own into TODO.md.
    let title = crate::tasks::render::one_line(&plan.title.clone().unwrap_or_default());

    let ids = store.task_ids()?;
    let base = folder_name::base_name(now, &title);
    let id = (1..=10_000)
        .map(|n| folder_name::candidate(&base, n))
        .find(|candidate| !ids.contains(candidate) && !store.dir().join(candidate).exists())
        .ok_or_else(|| Error::internal("no free task folder name"))?;

    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: Some(id.clone()),
        title: Some(title.clone()),
        goal: plan.front.goal.clone(),
        status: Some(Phase::Approved),
        created: plan.front.created.or(Some(now)),
        approved: Some(now),
        approval: Some(approval_of(plan.front.approval.as_ref(), args)),
        extra: plan.front.extra.clone(),
    };
    let plan_text = plan_md::render(&front, &body).map_err(render_error)?;
    let approved = plan_md::parse(&plan_text).map_err(|e| store.parse_error(&path, &e))?;
    let todo_text = render_todo(store, &id, &title, &approved.steps)?;
    let mut state = State::new();
    state.approval = Some(ApprovalRecord {
        approved_at: now,
        plan_hash: plan_md::approval_hash(&approved),
        steps_hash: steps_hash(&approved.steps),
        git_head: crate::git::head(store.root()),
        draft_hash: Some(draft_hash(&draft.src)),
    });
    let state_text = state_yaml(&state)?;

    // Build the folder beside its final place and move it in with one rename, so a crash
    // leaves either no task or a whole one.
    let stage = store
        .dir()
        .join(format!(".staging-{}-{id}", std::process::id()));
    fsx::create_dir_all(&stage)?;
    fsx::write_atomic(&stage.join(PLAN_FILE), plan_text.as_bytes())?;
    fsx::write_atomic(&stage.join(TODO_FILE), todo_text.as_bytes())?;
    fsx::write_atomic(&stage.join(STATE_FILE), state_text.as_bytes())?;
    let runs = stage.join(RUNS_DIR);
    fsx::create_dir_all(&runs)?;
    fsx::write_atomic(&runs.join(APPROVED_COPY), plan_text.as_bytes())?;
    // Copied, not moved: until the task folder is in place, the draft stays whole.
    let session = store.draft_dir().join(SESSION_FILE);
    if let Some(text) = fsx::read_optional(&session)? {
        fsx::write_atomic(&runs.join("plan-session.jsonl"), text.as_bytes())?;
    }
    fsx::sync_dir(&stage)?;
    // The note says which task this draft becomes. A kill after the rename leaves task and
    // draft both; the next command sees the note and the task's `draft_hash`, and finishes by
    // removing the draft instead of approving it again (`Store::lock`).
    fsx::write_atomic(&store.approving_path(), id.as_bytes())?;
    let task_dir = store.dir().join(&id);
    fsx::rename(&stage, &task_dir)?;
    fsx::sync_dir(store.dir())?;
    remove_draft(store)?;
    crate::tasks::journal::transition(
        &task_dir,
        phase,
        Phase::Approved,
        "a person approved the draft",
        now,
    );

    store.set_current(&store.task_ref(&id));
    let steps = approved.steps.all_steps().count();
    ctx.ui.note(&format!(
        "approved `{title}` as `{}/` ({steps} {})",
        store.rel(&task_dir),
        if steps == 1 { "step" } else { "steps" }
    ));
    if args.commit {
        let paths = vec![
            store.rel(&task_dir),
            store.rel(&store.dir().join(".gitignore")),
        ];
        let message = format!("Approve plan: {title}\n\nTask: {id}\n");
        crate::git::commit_paths(store.root(), &paths, &message).map_err(|err| {
            Error::internal(err).hint("the task is approved; commit its folder by hand")
        })?;
        ctx.ui
            .note(&format!("committed `{}/`", store.rel(&task_dir)));
    }
    if args.commit {
        ctx.ui
            .hint("`tick run` executes it; `tick status` shows it");
    } else {
        ctx.ui.hint(&format!(
            "`tick run` executes it; `tick status` shows it; commit `{}/` to share it",
            store.rel(&task_dir)
        ));
    }
    Ok(Outcome::Done)
}

fn reapprove(ctx: &Ctx<'_>, id: &str, args: &ApproveArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let task_ref = store.task_ref(id);
    let _lock = store.lock_task(&task_ref, "tick approve")?;
    store.set_current(&task_ref);
    let task = store.load(&task_ref)?;
    let phase = task.phase();
    transition(phase, Event::Approve).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    let approval = approval_of(task.plan.front.approval.as_ref(), args);
    let settings_changed = task.plan.front.approval.as_ref() != Some(&approval);
    if !task.plan_changed() && !settings_changed {
        ctx.ui
            .note(&format!("`{id}` is approved as it stands; nothing to do"));
        return Ok(Outcome::Done);
    }
    let plan_path = task.dir.join(PLAN_FILE);
    let todo_path = task.dir.join(TODO_FILE);
    let copy = task.dir.join(RUNS_DIR).join(APPROVED_COPY);
    // The steps as PLAN.md has them now: the contract TODO.md must follow.
    let edited = plan_md::parse(&task.plan_src).map_err(|e| store.parse_error(&plan_path, &e))?;
    plan_md::validate(&edited).map_err(|e| store.parse_error(&plan_path, &e))?;
    // The steps as last approved; without the local copy (a fresh clone), TODO.md stands in.
    let approved_copy = fsx::read_optional(&copy)?;
    let old_steps = approved_copy
        .as_deref()
        .and_then(|text| plan_md::parse(text).ok())
        .map_or_else(|| (*task.todo).clone(), |plan| plan.steps);
    let (merged, diff) =
        merge::apply_plan(&task.todo_src, &old_steps, &edited.steps).map_err(|e| {
            Error::input(format!(
                "`{}`: the edited steps cannot be applied to `{}`: {}",
                store.rel(&plan_path),
                store.rel(&todo_path),
                e.message
            ))
            .hint("fix the steps in PLAN.md (a `depends` on a removed step?); nothing was changed")
        })?;
    if let Some(text) = changes_since_approval(&copy, &task.plan_src) {
        ctx.ui.data(&text);
    }
    let now = ctx.now();
    let mut front = task.plan.front.clone();
    front.approved = Some(now);
    front.approval = Some(approval);
    front.status = Some(phase);
    let plan_text = plan_md::render(&front, &task.plan.body).map_err(render_error)?;
    let approved = plan_md::parse(&plan_text).map_err(|e| store.parse_error(&plan_path, &e))?;
    let record = ApprovalRecord {
        approved_at: now,
        plan_hash: plan_md::approval_hash(&approved),
        steps_hash: steps_hash(&approved.steps),
        git_head: crate::git::head(store.root()),
        draft_hash: task
            .state
            .approval
            .as_ref()
            .and_then(|a| a.draft_hash.clone()),
    };
    let ((), committed) =
        store.transact(&task_ref, now, "a person approved the edited plan", |tx| {
            tx.set_plan(plan_text.clone());
            tx.edit_todo(|src, _| {
                // A person may have saved TODO.md since it was read above: merge into theirs.
                if src == task.todo_src.as_str() {
                    Ok(merged.clone())
                } else {
                    merge::apply_plan(src, &old_steps, &edited.steps)
                        .map(|(text, _)| text)
                        .map_err(|e| store.parse_error(&todo_path, &e))
                }
            })?;
            tx.assign_ids()?;
            tx.record(|state| state.approval = Some(record.clone()));
            Ok(())
        })?;
    fsx::create_dir_all(&task.dir.join(RUNS_DIR))?;
    fsx::write_atomic(&copy, committed.task.plan_src.as_bytes())?;
    ctx.ui.note(&format!("approved the edited plan of `{id}`"));
    if diff.is_empty() {
        ctx.ui.note("the steps did not change");
    } else {
        ctx.ui.note(&format!(
            "applied to `{}`:\n{}",
            store.rel(&todo_path),
            diff.to_string().trim_end()
        ));
    }
    Ok(Outcome::Done)
}

/// A unified diff of PLAN.md against the copy kept at the last approval, if there is one.
pub fn changes_since_approval(copy: &Path, current: &str) -> Option<String> {
    let old = fsx::read_optional(copy).ok()??;
    if old == current {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&old, current);
    Some(
        diff.unified_diff()
            .context_radius(2)
            .header("PLAN.md (approved)", "PLAN.md (now)")
            .to_string(),
    )
}

/// The draft's body with ids given to its id-less steps.
fn with_ids(plan: &PlanDoc) -> Result<String> {
    let Some(region) = plan.steps_region.clone() else {
        return Ok(plan.body.to_string());
    };
    let (body, _) = todo_md::assign_ids(&plan.body, &plan.steps);
    // The ids only add bytes inside the region; re-parse to be sure the result still reads.
    todo_md::parse_region(&body, region.start..body.len())
        .map_err(|e| Error::internal(format!("assigning step ids broke the plan: {e}")))?;
    Ok(body)
}

/// state.yaml's text (the one definition is [`crate::tasks::tx::state_yaml`]).
pub fn state_yaml(state: &State) -> Result<String> {
    crate::tasks::tx::state_yaml(state)
}

#[allow(
    clippy::needless_pass_by_value,
    reason = "used as `map_err(render_error)`"
)]
fn render_error(err: serde_yaml::Error) -> Error {
    Error::internal(format!("could not render PLAN.md: {err}"))
}
