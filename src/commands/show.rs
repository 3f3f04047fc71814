//! `tick show`: the draft or a task's plan, as a person reads it.

use super::{Ctx, Outcome};
use crate::cli::ShowArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::Phase;
use crate::planning::replan;
use crate::tasks::{Draft, plan_md};

/// Prints a draft as a person reads it; returns its phase.
pub fn print_draft(ctx: &Ctx<'_>, draft: &Draft) -> Phase {
    let phase = draft.plan.phase().unwrap_or(Phase::Draft);
    let steps = draft.plan.steps.all_steps().count();
    ctx.ui.data(&format!(
        "draft: {} ({phase}, {steps} {})\nfile:  {}\n\n{}",
        draft.plan.title.as_deref().unwrap_or("(untitled)"),
        if steps == 1 { "step" } else { "steps" },
        ctx.store().rel(&draft.path),
        draft
            .plan
            .body
            .trim_start_matches(['\n', '\r'])
            .replace("\r\n", "\n")
    ));
    phase
}

pub fn run(ctx: &Ctx<'_>, args: &ShowArgs) -> Result<Outcome> {
    let store = ctx.store();
    if let Some(version) = args.version {
        return show_version(ctx, args.task.as_deref(), version);
    }
    let draft = if args.task.is_none() {
        match store.load_draft() {
            Ok(draft) => draft,
            Err(err) if err.kind == crate::error::ErrorKind::Input => {
                return print_broken_draft(ctx).ok_or(err);
            }
            Err(err) => return Err(err),
        }
    } else {
        None
    };
    if let Some(draft) = draft {
        let phase = print_draft(ctx, &draft);
        if phase == Phase::NeedsInput {
            ctx.ui
                .hint("answer the open questions with `tick plan --answer \"...\"`");
        } else {
            ctx.ui
                .hint("`tick approve` to approve it, edit the file, or `tick discard`");
        }
        return Ok(Outcome::Done);
    }
    let Some(task_ref) = (match &args.task {
        Some(query) => Some(store.resolve(query)?),
        None => store.current()?,
    }) else {
        return Err(Error::input("there is no draft and no task to show")
            .hint("write a plan with `tick plan \"goal\"` or `tick plan --from plan.md`"));
    };
    let task = store.load(&task_ref)?;
    let progress = task.progress();
    let body = crate::ui::show::with_status(&task.plan.body, &task.todo);
    ctx.ui.data(&format!(
        "task:  {} ({}, {}/{} done)\nfile:  {}\n\n{}",
        task.title(),
        task.phase(),
        progress.done,
        progress.total,
        store.rel(&task.dir.join(crate::tasks::PLAN_FILE)),
        // A CRLF file reads as its lines, not with a `^M` at the end of each.
        body.trim_start_matches(['\n', '\r']).replace("\r\n", "\n")
    ));
    Ok(Outcome::Done)
}

/// A draft whose PLAN.md does not parse, printed as it is with the error under the line it is
/// on (`file:line:col`), so it can be read and fixed; `None` when the file parses (what failed
/// was something else).
fn print_broken_draft(ctx: &Ctx<'_>) -> Option<Outcome> {
    let store = ctx.store();
    let path = store.draft_plan_path();
    let src = fsx::read_optional(&path).ok()??;
    let err = plan_md::parse(&src).err()?;
    let shown = store.rel(&path);
    let mut out = format!("draft: (does not parse)\nfile:  {shown}\n\n");
    for (n, line) in src.lines().enumerate() {
        out.push_str(line);
        out.push('\n');
        if n + 1 == err.line {
            out.push_str(&" ".repeat(err.col.saturating_sub(1)));
            out.push_str(&format!("^ {}\n", err.message));
        }
    }
    ctx.ui.data(out.trim_end());
    ctx.ui.warn(&format!(
        "`{shown}:{}:{}`: {}",
        err.line, err.col, err.message
    ));
    let mut hint = err.hint.clone();
    if !hint.is_empty() {
        hint.push_str("; ");
    }
    hint.push_str(
        "fix it with `tick edit` (checked on close); `tick approve` refuses until it parses",
    );
    ctx.ui.hint(&hint);
    Some(Outcome::Done)
}

/// `tick show --version N [TASK]`: version `version` of the task's plan, as it was approved
/// (from `history/`), or the current PLAN.md for the newest version.
fn show_version(ctx: &Ctx<'_>, task: Option<&str>, version: usize) -> Result<Outcome> {
    let store = ctx.store();
    let task_ref = store.resolve_or_current(task)?;
    let kept = replan::versions_kept(&task_ref.dir);
    let path = if version == kept + 1 {
        task_ref.dir.join(crate::tasks::PLAN_FILE)
    } else if (1..=kept).contains(&version) {
        replan::history_path(&task_ref.dir, version)
    } else {
        return Err(Error::input(format!(
            "`{}` has no version {version} of its plan",
            task_ref.id
        ))
        .hint(format!(
            "its versions are 1 to {}; the newest is PLAN.md",
            kept + 1
        )));
    };
    let text = fsx::read_capped(&path, fsx::MAX_TEXT_FILE)?
        .ok_or_else(|| Error::input(format!("`{}` is missing", store.rel(&path))))?;
    ctx.ui.data(&format!(
        "task:  {} (plan version {version} of {})\nfile:  {}\n\n{text}",
        task_ref.id,
        kept + 1,
        store.rel(&path)
    ));
    Ok(Outcome::Done)
}
