//! The review menu for a draft: one key per choice (`a`pprove, `r`evise, `e`dit, `d`iscard,
//! `k`eep, `p`rint, `?` help), no default on Enter, the plan printed once. After `tick plan`
//! in a terminal, and again whenever a person runs `tick review`. The person answers through [`Person`] (at a terminal, [`Terminal`]: keys read raw, or one
//! line per answer from a piped stdin with `TICK_INTERACTIVE=1`, so scripts and tests can
//! drive it); approving and discarding are [`crate::planning`]'s.

use super::edit::{Edited, edit_checked};
use super::plan::Request;
use super::terminal::Terminal;
use super::{Ctx, Outcome};
use crate::cli::ReviewArgs;
use crate::error::{Error, Result};
use crate::person::Person;
use crate::plan::Phase;
use crate::planning::approve::{self, Contract};

/// What the person chose that the caller carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Plan again with this feedback.
    Revise(String),
    /// Go on planning with these answers.
    Answer(String),
    /// The review is over (approved, discarded, kept for later, or stdin closed).
    Stop,
}

const HELP: &str = "  a  approve: the draft becomes a task (you choose the run's limits next)
  r  revise: tell the planner what should change
  e  edit: open the draft in $EDITOR; it is checked when you close it
  d  discard: throw the draft away (asks first)
  k  keep: leave the draft for later (`tick review` comes back here)
  p  print the plan again
  ?  this help";

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
    let request = match menu(ctx, &mut person)? {
        Choice::Revise(feedback) => Request::Revise(feedback),
        Choice::Answer(answers) => Request::Answer(answers),
        Choice::Stop => return Ok(Outcome::Done),
    };
    // Planning again comes back to this menu.
    let config = super::model_config(ctx, &args.model)?;
    super::plan::plan_and_review(ctx, &config, request, false)
}

/// The review menu. Prints the draft once, then reads choices until one ends the review.
pub fn menu(ctx: &Ctx<'_>, person: &mut dyn Person) -> Result<Choice> {
    let ui = ctx.ui;
    let store = ctx.store();
    let draft = match store.load_draft() {
        Ok(Some(draft)) => Some(draft),
        Ok(None) => return Ok(Choice::Stop),
        // A draft that does not parse can still be edited or discarded from here.
        Err(err) => {
            ui.error(&Error {
                hints: vec!["`e` opens it in your editor; `d` discards it".to_owned()],
                ..err
            });
            None
        }
    };
    if let Some(draft) = &draft
        && draft.plan.phase() == Some(Phase::NeedsInput)
    {
        super::show::print_draft(ctx, draft);
        let answer = person
            .line("your answers (one line; empty to answer later): ")
            .unwrap_or_default();
        if answer.is_empty() {
            ui.hint("answer later with `tick plan --answer \"...\"`");
            return Ok(Choice::Stop);
        }
        return Ok(Choice::Answer(answer));
    }
    if let Some(draft) = &draft {
        super::show::print_draft(ctx, draft);
        for line in approve::draft_overlaps(store, &draft.plan.steps) {
            ui.warn(&line);
        }
    }
    loop {
        let Some(choice) = person.choose(
            "[a]pprove [r]evise [e]dit [d]iscard [k]eep [p]rint [?]help: ",
            &['a', 'r', 'e', 'd', 'k', 'p', '?'],
        ) else {
            ui.hint("the draft waits in `.tasks/draft/PLAN.md`; `tick review` comes back here");
            return Ok(Choice::Stop);
        };
        match choice {
            'a' => {
                let Some((contract, commit)) = contract(ctx, person) else {
                    continue;
                };
                let approved =
                    approve::approve_draft(store, ctx.now(), contract).and_then(|approved| {
                        // The hooks that apply are part of the approval (`docs/hooks.md`).
                        crate::hooks::approval::approve_configured(
                            store,
                            ctx.env,
                            &approved.id,
                            ctx.now(),
                        )?;
                        super::approve::report_approved(ctx, &approved, commit)
                    });
                match approved {
                    Ok(()) => return Ok(Choice::Stop),
                    // Approved, but something after it failed (the commit): nothing to review.
                    Err(err) if !store.draft_plan_path().exists() => return Err(err),
                    // A draft that does not validate stays under review.
                    Err(err) => ui.error(&err),
                }
            }
            'r' => {
                let feedback = person.line("what should change? ").unwrap_or_default();
                if !feedback.is_empty() {
                    return Ok(Choice::Revise(feedback));
                }
                ui.note("nothing to revise");
            }
            'e' => edit_draft(ctx, person)?,
            'd' => {
                if person.yes_no("discard the draft?", false) == Some(true) {
                    super::discard::discard_now(ctx)?;
                    return Ok(Choice::Stop);
                }
            }
            'k' => {
                ui.hint("the draft waits in `.tasks/draft/PLAN.md`; `tick review` comes back here, `tick approve` approves it");
                return Ok(Choice::Stop);
            }
            'p' => {
                if let Some(draft) = store.load_draft().ok().flatten() {
                    super::show::print_draft(ctx, &draft);
                }
            }
            _ => ui.note(HELP),
        }
    }
}

/// The approval's contract, asked with its defaults shown, and whether to commit the task
/// folder; `None` to go back to the menu.
fn contract(ctx: &Ctx<'_>, person: &mut dyn Person) -> Option<(Contract, bool)> {
    let existing = ctx
        .store()
        .load_draft()
        .ok()
        .flatten()
        .and_then(|d| d.plan.front.approval)
        .unwrap_or_default();
    let allow_deviation = person.yes_no(
        "may the run change files outside a step's `files` without pausing?",
        existing.allow_deviation,
    )?;
    let shown = existing
        .max_files_changed
        .map_or_else(|| "no limit".to_owned(), |n| n.to_string());
    let max_files_changed = loop {
        let answer = person.line(&format!(
            "stop the run after how many changed files? [{shown}] "
        ))?;
        if answer.is_empty() {
            break existing.max_files_changed;
        }
        match answer.parse::<u32>() {
            Ok(n) if n > 0 => break Some(n),
            _ => ctx.ui.warn(&format!("`{answer}` is not a positive number")),
        }
    };
    let commit_steps = person.yes_no(
        "commit each verified step when the task runs?",
        existing.commit_steps,
    )?;
    let commit = person.yes_no("commit the approved task folder now?", false)?;
    let contract = Contract {
        allow_deviation,
        max_files_changed,
        commit_steps,
    };
    Some((contract, commit))
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
