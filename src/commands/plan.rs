//! `tick plan`: a draft plan in `.tasks/draft/PLAN.md`, from a model exploring the repository
//! read-only, or from a file a person wrote. An existing draft is never replaced without
//! `--force`; `--revise` and `--answer` go on with the planning conversation. This file turns
//! the arguments into the engine's planning session and renders its events; planning itself is
//! [`crate::planning`].

use std::path::Path;

use super::review::{asking, plan_and_review, plan_sink};
use super::{Ctx, Outcome};
use crate::cli::PlanArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::fsx;
use crate::planning::review::Request;
use crate::planning::{self, JSON_FORMAT, PlanEvent, Start};

/// The failed planning attempt recorded in `.tasks/draft/`, if any (for `status` and `check`).
pub use crate::planning::attempt::last as last_plan_attempt;

pub fn run(ctx: &Ctx<'_>, args: &PlanArgs) -> Result<Outcome> {
    if let Some(from) = &args.from {
        return from_file(ctx, from, args.force, args.json);
    }
    if let Some(feedback) = &args.revise
        && let Some(task) = task_to_revise(ctx, args.goal.as_deref())?
    {
        let config = super::model_config(ctx, &args.model)?;
        return revise_task(ctx, &config, &task, feedback, args.json);
    }
    let request = if let Some(feedback) = &args.revise {
        Request::Revise(feedback.clone())
    } else if let Some(answer) = &args.answer {
        Request::Answer(answer.clone())
    } else if let Some(goal) = args
        .goal
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        Request::New {
            goal: goal.to_owned(),
            replace: args.force,
        }
    } else {
        return Err(
            Error::input("say what you want planned: `tick plan \"goal\"`")
                .hint("or give a plan you wrote: `tick plan --from plan.md`"),
        );
    };
    let config = super::model_config(ctx, &args.model)?;
    plan_and_review(ctx, &config, request, args.json)
}

/// The task `tick plan --revise "..." [TASK]` re-plans: the one named; without a name, none
/// while there is a draft (the draft is revised), else the current task.
fn task_to_revise(ctx: &Ctx<'_>, named: Option<&str>) -> Result<Option<String>> {
    if let Some(query) = named.map(str::trim).filter(|q| !q.is_empty()) {
        return Ok(Some(ctx.store().resolve(query)?.id));
    }
    if ctx.store().draft_plan_path().exists() {
        return Ok(None);
    }
    Ok(ctx.store().current()?.map(|task| task.id))
}

/// Re-plans an approved task: a new version of its PLAN.md, waiting for approval.
fn revise_task(
    ctx: &Ctx<'_>,
    config: &Config,
    task: &str,
    feedback: &str,
    json: bool,
) -> Result<Outcome> {
    let ui = ctx.ui;
    let mut sink = plan_sink(ctx, json);
    let revised = asking(ctx, json, |person| {
        let mut session = ctx.engine.planning(config);
        session.revise_task(task, feedback, person, &mut sink)
    });
    ui.end_live_text();
    let revised = revised?;
    if !json && !revised.removed.is_empty() {
        let removed: Vec<String> = revised.removed.iter().map(|id| format!("`{id}`")).collect();
        ui.note(&format!(
            "the new plan drops {}: `tick approve` removes them from TODO.md",
            removed.join(", ")
        ));
    }
    Ok(Outcome::Done)
}

/// `tick plan --from FILE` (or `-` for stdin): the draft is the plan a person wrote.
fn from_file(ctx: &Ctx<'_>, from: &Path, force: bool, json: bool) -> Result<Outcome> {
    let store = ctx.store();
    let (name, src) = if from.as_os_str() == "-" {
        let text = super::terminal::read_all_stdin()
            .map_err(|err| Error::input(format!("could not read the plan from stdin: {err}")))?;
        ("<stdin>".to_owned(), text)
    } else {
        let path = ctx.env.cwd.join(from);
        let name = from.display().to_string();
        let text = fsx::read_named(&path, &name, fsx::MAX_TEXT_FILE)
            .map_err(|err| match err {
                // The path a person typed: nothing of theirs to remove or restore.
                fsx::Error::NotAFile { .. } => Error::input(err.to_string()).hint(
                    "give the path of a plan you wrote (PLAN.md format), or `-` to read it from \
                     stdin",
                ),
                err => err.into(),
            })?
            .ok_or_else(|| {
                Error::input(format!("there is no plan file `{name}`")).hint(
                "give the path of a plan you wrote (PLAN.md format), or `-` to read it from stdin",
            )
            })?;
        (name, text)
    };
    let mut sink = plan_sink(ctx, json);
    sink(PlanEvent::PlanStarted {
        format: JSON_FORMAT,
        start: Start::FromFile,
    });
    let drafted = planning::draft::from_text(store, &name, &src, force, ctx.now())?;
    sink(planning::draft_event(store, &drafted));
    if !json {
        ctx.ui
            .hint("read it (`tick show`), edit it, then `tick approve` or `tick discard`");
    }
    Ok(Outcome::Done)
}
