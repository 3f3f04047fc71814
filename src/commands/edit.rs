//! `tick edit`: open the draft's or a task's PLAN.md (or TODO.md) in the person's editor and
//! check it when the editor closes. A file that no longer parses is shown once; the person
//! edits again, puts the previous content back, or keeps it. Nothing is reverted unasked.

use std::path::PathBuf;

use super::review::{Edited, edit_checked, edited_error};
use super::{Ctx, Outcome};
use crate::cli::EditArgs;
use crate::error::{Error, Result};
use crate::tasks::{PLAN_FILE, TODO_FILE, plan_md, todo_md};

/// Which file to edit, and the task it belongs to (`None` for the draft).
fn target(ctx: &Ctx<'_>, args: &EditArgs) -> Result<(PathBuf, Option<String>)> {
    let store = &ctx.store;
    if args.task.is_none() && store.draft_plan_path().exists() {
        if args.todo {
            return Err(Error::input("the draft has no TODO.md yet")
                .hint("its steps are in `.tasks/draft/PLAN.md`: `tick edit`; TODO.md is made at `tick approve`"));
        }
        return Ok((store.draft_plan_path(), None));
    }
    let task = store.resolve_or_current(args.task.as_deref())?;
    let file = if args.todo { TODO_FILE } else { PLAN_FILE };
    Ok((task.dir.join(file), Some(task.id)))
}

/// Whether the edited `text` of `path` parses.
fn check(ctx: &Ctx<'_>, path: &std::path::Path, text: &str, todo: bool) -> Result<()> {
    let located = |e: todo_md::ParseError| edited_error(ctx, path, &e);
    if todo {
        todo_md::parse(text).map(|_| ()).map_err(located)
    } else {
        let doc = plan_md::parse(text).map_err(located)?;
        plan_md::validate(&doc).map_err(located)
    }
}

pub fn run(ctx: &Ctx<'_>, args: &EditArgs) -> Result<Outcome> {
    let (path, task) = target(ctx, args)?;
    let shown = ctx.store.rel(&path);
    let mut person = crate::person::Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
    match edit_checked(ctx, &mut person, &path, |text| {
        check(ctx, &path, text, args.todo)
    })? {
        Edited::Unchanged => ctx.ui.note(&format!("`{shown}` was not changed")),
        Edited::Valid => {
            ctx.ui.note(&format!("`{shown}` is valid"));
            if let Some(id) = &task
                && !args.todo
                && ctx
                    .store
                    .load(&ctx.store.task_ref(id))
                    .is_ok_and(|t| t.plan_changed())
            {
                ctx.ui.hint(&format!(
                    "the plan changed since approval: `tick approve {id}` before `tick run`"
                ));
            }
        }
        Edited::Undone => ctx
            .ui
            .note(&format!("put `{shown}` back as it was before the edit")),
        Edited::KeptBroken => ctx.ui.warn(&format!(
            "`{shown}` does not parse; commands that read it fail until it is fixed"
        )),
    }
    Ok(Outcome::Done)
}
