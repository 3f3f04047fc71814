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
use crate::tasks::todo_md;
use crate::tasks::{
    PLAN_FILE, RUNS_DIR, SESSION_FILE, STATE_FILE, TODO_FILE, folder_name, steps_hash,
};

/// Where the approved PLAN.md is kept (locally, not committed) to show what changed later.
pub const APPROVED_COPY: &str = "approved-PLAN.md";

pub fn run(ctx: &Ctx<'_>, args: &ApproveArgs) -> Result<Outcome> {
    let store = &ctx.store;
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
    let session = store.draft_dir().join(SESSION_FILE);
    if session.exists() {
        fsx::rename(&session, &runs.join("plan-session.jsonl"))?;
    }
    fsx::sync_dir(&stage)?;
    let task_dir = store.dir().join(&id);
    fsx::rename(&stage, &task_dir)?;
    crate::tasks::journal::transition(
        &task_dir,
        phase,
        Phase::Approved,
        "a person approved the draft",
        now,
    );
    fsx::sync_dir(store.dir())?;
    fsx::remove_dir_all(&store.draft_dir())?;

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
    let copy = task.dir.join(RUNS_DIR).join(APPROVED_COPY);
    if let Some(diff) = changes_since_approval(&copy, &task.plan_src) {
        ctx.ui.data(&diff);
    }
    let now = ctx.now();
    let mut front = task.plan.front.clone();
    front.approved = Some(now);
    front.approval = Some(approval);
    front.status = Some(phase);
    let plan_text = plan_md::render(&front, &task.plan.body).map_err(render_error)?;
    let approved = plan_md::parse(&plan_text).map_err(|e| store.parse_error(&plan_path, &e))?;
    let mut state = task.state.clone();
    state.approval = Some(ApprovalRecord {
        approved_at: now,
        plan_hash: plan_md::approval_hash(&approved),
        steps_hash: steps_hash(&approved.steps),
        git_head: crate::git::head(store.root()),
    });
    fsx::write_atomic(&plan_path, plan_text.as_bytes())?;
    fsx::write_atomic(&task.dir.join(STATE_FILE), state_yaml(&state)?.as_bytes())?;
    fsx::create_dir_all(&task.dir.join(RUNS_DIR))?;
    fsx::write_atomic(&copy, plan_text.as_bytes())?;
    ctx.ui.note(&format!("approved the edited plan of `{id}`"));
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
        return Ok(plan.body.clone());
    };
    let (body, _) = todo_md::assign_ids(&plan.body, &plan.steps);
    // The ids only add bytes inside the region; re-parse to be sure the result still reads.
    todo_md::parse_region(&body, region.start..body.len())
        .map_err(|e| Error::internal(format!("assigning step ids broke the plan: {e}")))?;
    Ok(body)
}

pub fn state_yaml(state: &State) -> Result<String> {
    serde_yaml::to_string(state)
        .map_err(|err| Error::internal(format!("could not write state.yaml: {err}")))
}

#[allow(
    clippy::needless_pass_by_value,
    reason = "used as `map_err(render_error)`"
)]
fn render_error(err: serde_yaml::Error) -> Error {
    Error::internal(format!("could not render PLAN.md: {err}"))
}
