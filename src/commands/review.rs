//! The review of a draft at a terminal: [`crate::planning::review`]'s machine (one key per
//! choice, no default on Enter, the contract's questions with the draft's own settings as
//! defaults, the offer to commit the task folder) asked through [`Person`], the plan printed
//! once. After `tick plan` in a terminal, and again whenever a person runs `tick review`;
//! [`plan_and_review`] is the loop of the two (`tick plan` comes here, never the other way).

use super::edit::{Edited, edit_checked};
use super::terminal::Terminal;
use super::{Ctx, Outcome};
use crate::cli::ReviewArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::person::{Nobody, Person};
use crate::plan::Phase;
use crate::planning::PlanEvent;
use crate::planning::approve;
use crate::planning::review::{self as machine, Action, Request, Review};

/// `tick review`: the menu for the draft that waits; a revision plans again.
pub fn run(ctx: &Ctx<'_>, args: &ReviewArgs) -> Result<Outcome> {
    // A draft that does not parse is reviewed too: the menu can edit or discard it.
    if !ctx.store().draft_plan_path().exists() {
        return Err(Error::input("there is no draft to review")
            .hint("write one with `tick plan \"goal\"` or `tick plan --from plan.md`"));
    }
    if !ctx.env.interactive {
        return Err(Error::input("`tick review` needs a person at a terminal")
            .hint("read the draft with `tick show`, then `tick approve`, `tick plan --revise \"...\"` or `tick discard`"));
    }
    let mut person = Terminal::new(ctx.ui, ctx.env.stdin_is_terminal);
    let Some(request) = menu(ctx, &mut person)? else {
        return Ok(Outcome::Done);
    };
    let config = super::model_config(ctx, &args.model)?;
    plan_and_review(ctx, &config, request, false)
}

/// Plans; then, with a person at a terminal, shows the review menu and plans again for as
/// long as they revise or answer.
pub fn plan_and_review(
    ctx: &Ctx<'_>,
    config: &Config,
    first: Request,
    json: bool,
) -> Result<Outcome> {
    let (ui, mut sink) = (ctx.ui, plan_sink(ctx, json));
    let mut session = ctx.engine.planning(config);
    let mut next = Some(first);
    while let Some(request) = next.take() {
        let drafted = asking(ctx, json, |person| match request {
            Request::New { goal, replace } => session.start(&goal, replace, person, &mut sink),
            Request::Revise(feedback) => session.revise(&feedback, person, &mut sink),
            Request::Answer(answers) => session.answer(&answers, person, &mut sink),
        });
        ui.end_live_text();
        let drafted = drafted?;
        if json {
            break;
        }
        if !ctx.env.interactive {
            if drafted.status != Phase::NeedsInput {
                ui.hint("read it (`tick show`), edit it, then `tick approve`, `tick plan --revise \"...\"` or `tick discard`");
            }
            break;
        }
        next = menu(ctx, &mut Terminal::new(ui, ctx.env.stdin_is_terminal))?;
    }
    Ok(Outcome::Done)
}

/// Shows a planning call's events as they come (`--json`: one JSON line each).
pub(super) fn plan_sink<'u>(ctx: &Ctx<'u>, json: bool) -> impl FnMut(PlanEvent) + 'u {
    let ui = ctx.ui;
    let live = ctx.env.stderr_is_terminal;
    move |event: PlanEvent| ui.plan_event(&event, json, live)
}

/// Runs `call` with the person who answers a planning call's questions: the terminal when
/// someone is there and the output is not `--json`, else nobody (the questions stay open).
pub(super) fn asking<R>(ctx: &Ctx<'_>, json: bool, call: impl FnOnce(&mut dyn Person) -> R) -> R {
    if ctx.env.interactive && !json {
        call(&mut Terminal::new(ctx.ui, ctx.env.stdin_is_terminal))
    } else {
        call(&mut Nobody)
    }
}

/// The review menu. Prints the draft once, then asks until the review ends; what comes back
/// is the planning the person asked for (a revision, answers), if any.
pub fn menu(ctx: &Ctx<'_>, person: &mut dyn Person) -> Result<Option<Request>> {
    let (ui, store) = (ctx.ui, ctx.store());
    let draft = match store.load_draft() {
        Ok(Some(draft)) => Some(draft),
        Ok(None) => return Ok(None),
        // A draft that does not parse can still be edited or discarded from here.
        Err(err) => {
            ui.error(&Error {
                hints: vec!["`e` opens it in your editor; `d` discards it".to_owned()],
                ..err
            });
            None
        }
    };
    if let Some(draft) = &draft {
        super::show::print_draft(ctx, draft);
        if draft.plan.phase() == Some(Phase::NeedsInput) {
            let prompt = "your answers (one line; empty to answer later): ";
            let answer = person.line(prompt).unwrap_or_default();
            if answer.is_empty() {
                ui.hint("answer later with `tick plan --answer \"...\"`");
                return Ok(None);
            }
            return Ok(Some(Request::Answer(answer)));
        }
        for line in approve::draft_overlaps(store, &draft.plan.steps) {
            ui.warn(&line);
        }
    }
    let mut review = Review::new(draft_defaults(ctx));
    let waits = "the draft waits in `.tasks/draft/PLAN.md`; `tick review` comes back here";
    loop {
        let Some(answer) = machine::ask(person, review.asking()) else {
            ui.hint(waits);
            return Ok(None);
        };
        match review.answer(answer) {
            Action::Ask | Action::KeptDraft => {}
            Action::Invalid(message) => ui.warn(&message),
            Action::Approve {
                contract,
                commit_folder,
            } => {
                match super::approve::approve_reviewed(ctx, contract, commit_folder) {
                    Ok(()) => return Ok(None),
                    // Approved, but something after it failed (the commit): nothing to review.
                    Err(err) if !store.draft_plan_path().exists() => return Err(err),
                    // A draft that does not validate stays under review.
                    Err(err) => ui.error(&err),
                }
            }
            Action::Revise(feedback) => return Ok(Some(Request::Revise(feedback))),
            Action::NothingToRevise => ui.note("nothing to revise"),
            Action::Edit => {
                edit_draft(ctx, person)?;
                // The contract starts from the settings as edited.
                review = Review::new(draft_defaults(ctx));
            }
            Action::Discard => {
                super::discard::discard_now(ctx)?;
                return Ok(None);
            }
            Action::Keep => {
                ui.hint(&format!("{waits}, `tick approve` approves it"));
                return Ok(None);
            }
            Action::Print => {
                if let Some(draft) = store.load_draft().ok().flatten() {
                    super::show::print_draft(ctx, &draft);
                }
            }
            Action::Help => ui.note(&machine::help()),
        }
    }
}

/// The draft's own approval settings as it is on disk now (none when it does not parse).
fn draft_defaults(ctx: &Ctx<'_>) -> crate::planning::approve::Contract {
    let draft = ctx.store().load_draft().ok().flatten();
    machine::defaults(draft.as_ref().and_then(|d| d.plan.front.approval.as_ref()))
}

/// Opens the draft in the editor; an edit that does not parse is shown once, and the person
/// edits again, puts the previous content back, or keeps it as it is.
fn edit_draft(ctx: &Ctx<'_>, person: &mut dyn Person) -> Result<()> {
    let path = ctx.store().draft_plan_path();
    let shown = ctx.store().rel(&path);
    match edit_checked(ctx, person, &path, |text| {
        crate::editor::check_plan(&shown, text)
    })? {
        Edited::Unchanged => ctx.ui.note("the draft was not changed"),
        Edited::Valid => ctx.ui.note("the edited draft is valid"),
        Edited::Undone => ctx.ui.note("put the draft back as it was before the edit"),
        Edited::KeptBroken => ctx.ui.warn(&format!(
            "`{shown}` does not parse; fix it before `tick approve`"
        )),
    }
    Ok(())
}
