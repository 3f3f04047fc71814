//! `tick plan`: a draft plan in `.tasks/draft/PLAN.md`, from a model or from a file a person
//! wrote. An existing draft is never replaced without `--force`.

use std::io::Read;
use std::path::Path;

use super::{Ctx, Outcome};
use crate::cli::PlanArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::Phase;
use crate::tasks::plan_md::{self, FrontMatter};
use crate::tasks::{Draft, Store};

pub fn run(ctx: &Ctx<'_>, args: &PlanArgs) -> Result<Outcome> {
    match &args.from {
        Some(from) => from_file(ctx, from, args.force),
        None => Err(Error::input("give a plan file with `--from FILE`")
            .hint("planning with a model needs a provider; see `tick plan --help`")),
    }
}

/// Refuses to replace a draft unless `force`: it may hold a person's edits.
pub fn check_no_draft(store: &Store, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    let path = store.draft_plan_path();
    if !path.exists() {
        return Ok(());
    }
    let title = store
        .load_draft()
        .ok()
        .flatten()
        .and_then(|draft: Draft| draft.plan.title)
        .map(|t| format!(" `{t}`"))
        .unwrap_or_default();
    Err(Error::input(format!(
        "a draft{title} is already waiting in `{}`",
        store.rel(&path)
    ))
    .hint("approve it (`tick approve`), discard it (`tick discard`), or replace it with `--force`; it was not changed"))
}

fn from_file(ctx: &Ctx<'_>, from: &Path, force: bool) -> Result<Outcome> {
    let store = &ctx.store;
    let (name, src) = if from.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| Error::input(format!("could not read the plan from stdin: {err}")))?;
        ("<stdin>".to_owned(), text)
    } else {
        let path = ctx.env.cwd.join(from);
        (from.display().to_string(), fsx::read(&path)?)
    };
    let located = |err: crate::tasks::todo_md::ParseError| {
        Error::input(format!(
            "`{name}:{}:{}`: {}",
            err.line, err.col, err.message
        ))
        .hint(format!("{}; no draft was written", err.hint))
    };
    let doc = plan_md::parse(&src).map_err(located)?;
    plan_md::validate(&doc).map_err(located)?;

    store.ensure()?;
    let _lock = store.lock("tick plan")?;
    check_no_draft(store, force)?;
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: None,
        title: doc.title.clone(),
        goal: doc.front.goal.clone(),
        status: Some(match doc.front.status {
            Some(Phase::NeedsInput) => Phase::NeedsInput,
            _ => Phase::Draft,
        }),
        created: doc.front.created.or(Some(ctx.now())),
        approved: None,
        approval: doc.front.approval.clone(),
        extra: doc.front.extra.clone(),
    };
    let text = plan_md::render(&front, &doc.body)
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    let draft_dir = store.draft_dir();
    fsx::create_dir_all(&draft_dir)?;
    // A draft from a file has no planning conversation to continue.
    fsx::remove_file(&draft_dir.join(crate::tasks::SESSION_FILE))?;
    let path = store.draft_plan_path();
    fsx::write_atomic(&path, text.as_bytes())?;
    let steps = doc.steps.all_steps().count();
    ctx.ui.note(&format!(
        "drafted `{}` with {steps} {} in `{}`",
        doc.title.unwrap_or_default(),
        if steps == 1 { "step" } else { "steps" },
        store.rel(&path)
    ));
    ctx.ui
        .hint("read it (`tick show`), edit it, then `tick approve` or `tick discard`");
    Ok(Outcome::Done)
}
