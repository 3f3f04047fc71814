//! `tick edit`: open the draft's or a task's PLAN.md (or TODO.md) in the person's editor and
//! check it when the editor closes. A file that no longer parses is shown once; the person
//! edits again, puts the previous content back, or keeps it. Nothing is reverted unasked.

use std::path::{Path, PathBuf};

use super::{Ctx, Outcome};
use crate::cli::EditArgs;
use crate::editor;
use crate::error::{Error, Result};
use crate::fsx;
use crate::person::Person;
use crate::tasks::{PLAN_FILE, TODO_FILE};

/// Which file to edit, and the task it belongs to (`None` for the draft).
fn target(ctx: &Ctx<'_>, args: &EditArgs) -> Result<(PathBuf, Option<String>)> {
    let store = ctx.store();
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
fn check(ctx: &Ctx<'_>, path: &Path, text: &str, todo: bool) -> Result<()> {
    let shown = ctx.store().rel(path);
    if todo {
        editor::check_todo(&shown, text)
    } else {
        editor::check_plan(&shown, text)
    }
}

pub fn run(ctx: &Ctx<'_>, args: &EditArgs) -> Result<Outcome> {
    let (path, task) = target(ctx, args)?;
    let shown = ctx.store().rel(&path);
    let mut person = super::terminal::Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
    match edit_checked(ctx, &mut person, &path, |text| {
        check(ctx, &path, text, args.todo)
    })? {
        Edited::Unchanged => ctx.ui.note(&format!("`{shown}` was not changed")),
        Edited::Valid => {
            ctx.ui.note(&format!("`{shown}` is valid"));
            if let Some(id) = &task
                && !args.todo
                && ctx
                    .store()
                    .load(&ctx.store().task_ref(id))
                    .is_ok_and(|t| t.plan_changed())
            {
                let t = crate::tasks::naming::task_named(ctx.store(), id);
                ctx.ui.hint(&format!(
                    "the plan changed since approval: `tick approve{t}` before `tick run{t}`"
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

/// How [`edit_checked`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edited {
    /// The file passed the check and is byte for byte what it was.
    Unchanged,
    /// The file changed and passed the check.
    Valid,
    /// The edit did not pass; the person put the previous content back.
    Undone,
    /// The edit did not pass; the person kept it as it is.
    KeptBroken,
}

/// Opens `path` in the editor and runs `check` on its text when the editor closes. An edit
/// that does not pass is shown once, and the person edits again, puts the previous content
/// back, or keeps it; with no person at a terminal the error is returned and the edit stays in
/// the file. `tick edit` and the review menu's `e` both edit through here.
pub fn edit_checked(
    ctx: &Ctx<'_>,
    person: &mut dyn Person,
    path: &Path,
    check: impl Fn(&str) -> Result<()>,
) -> Result<Edited> {
    let before = fsx::read(path)?;
    loop {
        open_in_editor(ctx, path)?;
        let after = fsx::read(path)?;
        let Err(err) = check(&after) else {
            return Ok(if after == before {
                Edited::Unchanged
            } else {
                Edited::Valid
            });
        };
        if !ctx.env.interactive {
            let again = if path
                .file_name()
                .is_some_and(|n| n == crate::tasks::TODO_FILE)
            {
                "tick edit --todo"
            } else {
                "tick edit"
            };
            return Err(err.hint(format!(
                "your edit is kept as you left it; `{again}` to fix it"
            )));
        }
        ctx.ui
            .error(&err.hint("your edit is in the file as you left it"));
        match person.choose(
            "[e]dit again [u]ndo the edit [k]eep it as it is: ",
            &['e', 'u', 'k'],
        ) {
            Some('e') => {}
            Some('u') => {
                fsx::write_atomic(path, before.as_bytes())?;
                return Ok(Edited::Undone);
            }
            _ => return Ok(Edited::KeptBroken),
        }
    }
}

/// Runs the person's editor on `path` and waits for it; an editor that failed is said.
pub fn open_in_editor(ctx: &Ctx<'_>, path: &Path) -> Result<()> {
    let closed = editor::open(ctx.env, path, &ctx.store().rel(path))?;
    ctx.ui.editor_closed(&closed);
    Ok(())
}
