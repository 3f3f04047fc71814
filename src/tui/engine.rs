//! The adapter: the session's [`Engine`] seam implemented over tick's one engine
//! ([`crate::engine::Engine`], which the subcommands drive too), plus what the session asks
//! that the engine leaves to its front ends: answering a blocked step
//! ([`crate::tasks::by_hand`]), approval and discard ([`crate::planning`]), a step's diff
//! ([`crate::report::diff`]). Thin on purpose: each method does what the matching subcommand
//! does, with the session's [`Person`] in place of the terminal, and no session logic lives
//! here.
//!
//! Nothing here prints: what happens goes to the session as typed [`EngineEvent`]s, and each
//! request ends with a typed [`Outcome`]; the timeline says them with the same line builders
//! the subcommands print (`crate::ui::outcomes`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use super::seam::{
    Answer, Contract, Engine, EngineEvent, Events, Outcome, Person, Selection, Snapshot,
};
use crate::config::Flags;
use crate::engine::{Approval, Event, RunRequest};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::planning::{Drafted, PlanEvent};
use crate::report::diff::StepDiff;
use crate::runner::{RunEvent, RunOptions, RunOutcome};
use crate::tasks::{Store, TODO_FILE};

/// tick's engine for one workspace, as the session sees it.
pub struct TickEngine {
    engine: crate::engine::Engine,
    /// The step the last run worked on, for `/diff` without a step.
    last_step: Mutex<Option<StepId>>,
}

impl TickEngine {
    pub fn new(store: Store, env: &Env) -> TickEngine {
        let mut env = env.clone();
        // A person is here (the subcommands then skip their "run `tick approve` next" hints),
        // but nothing reads the terminal: every question goes through the [`Person`].
        env.interactive = true;
        env.stdin_is_terminal = false;
        env.stderr_is_terminal = false;
        TickEngine {
            engine: crate::engine::Engine::new(store, env),
            last_step: Mutex::new(None),
        }
    }

    fn store(&self) -> &Store {
        self.engine.store()
    }

    /// One planning turn through the engine's planning session, the person's questions and
    /// the planner's events going to the session.
    fn planning(
        &self,
        request: Request,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Drafted> {
        let config = self.engine.model_config(&Flags::default())?;
        if let Some(line) = config.trust_warning() {
            events(EngineEvent::Warning(crate::engine::Warning::Untrusted(
                line,
            )));
        }
        if let Some(line) = config.found_line() {
            events(EngineEvent::Note(line));
        }
        let mut session = self.engine.planning(&config);
        let mut sink = |event: PlanEvent| events(EngineEvent::Plan(event));
        match request {
            Request::New(goal) => session.start(&goal, false, person, &mut sink),
            Request::Revise(feedback) => session.revise(&feedback, person, &mut sink),
            Request::Answer(text) => session.answer(&text, person, &mut sink),
        }
    }
}

/// What a planning turn starts from, in the session.
enum Request {
    New(String),
    Revise(String),
    Answer(String),
}

impl Engine for TickEngine {
    fn status(&self) -> Snapshot {
        self.engine.status()
    }

    fn plan(
        &self,
        goal: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Drafted> {
        self.planning(Request::New(goal.to_owned()), person, events)
    }

    fn revise(
        &self,
        feedback: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Drafted> {
        self.planning(Request::Revise(feedback.to_owned()), person, events)
    }

    fn answer(
        &self,
        answer: &Answer,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Outcome> {
        match answer {
            Answer::Planner(text) => self
                .planning(Request::Answer(text.clone()), person, events)
                .map(Outcome::Drafted),
            Answer::Step { step, text } => crate::tasks::by_hand::answer(
                self.store(),
                None,
                *step,
                text,
                &self.engine.env().clock,
                &mut |stale| events(EngineEvent::Stale(stale.clone())),
            )
            .map(Outcome::Answered),
        }
    }

    fn approve(&self, contract: &Contract, commit_folder: bool) -> Result<Outcome> {
        let store = self.store();
        let approved = self.engine.approve(None, *contract)?;
        match approved.approval {
            Approval::Draft(approved) => {
                if commit_folder {
                    crate::planning::approve::commit_task(store, &approved)?;
                }
                let folder = store.rel(&approved.dir);
                Ok(Outcome::Approved {
                    approved,
                    folder,
                    committed: commit_folder,
                })
            }
            Approval::Task { id, reapproved } => {
                let todo = store.rel(&store.task_ref(&id).dir.join(TODO_FILE));
                Ok(Outcome::Reapproved {
                    id,
                    reapproved,
                    todo,
                })
            }
            Approval::HooksOnly { id } => Ok(Outcome::HooksApproved {
                id,
                changes: approved.hooks_approved,
            }),
        }
    }

    fn discard(&self) -> Result<Outcome> {
        let discarded = crate::planning::draft::discard(self.store())?;
        let shown = self.store().rel(&discarded.path);
        Ok(Outcome::Discarded { discarded, shown })
    }

    fn run(
        &self,
        selection: Selection,
        person: &mut dyn Person,
        events: &mut Events<'_>,
        stop: Arc<AtomicBool>,
    ) -> Result<RunOutcome> {
        // As `tick run` without `--commit`: the runner commits each step itself when the
        // approval's contract says so (`commit_steps`).
        let options = match selection {
            Selection::All => RunOptions::default(),
            Selection::Step(step) => RunOptions {
                only: Some(step),
                max_steps: None,
            },
            Selection::Steps(n) => RunOptions {
                only: None,
                max_steps: Some(n),
            },
        };
        let request = RunRequest {
            task: None,
            options,
            flags: Flags::default(),
            no_sandbox: false,
            commit: false,
            stop,
            stopped_by: "/stop",
        };
        let last_step = &self.last_step;
        let mut sink = |event: Event| match event {
            Event::Run(event) => {
                if let RunEvent::StepStarted { step, .. } = &event {
                    *last_step.lock().unwrap_or_else(PoisonError::into_inner) = Some(*step);
                }
                events(EngineEvent::Run(event));
            }
            Event::Warning(warning) => events(EngineEvent::Warning(warning)),
            Event::Note(line) => events(EngineEvent::Note(line)),
        };
        self.engine.run(request, person, &mut sink)
    }

    fn diff(&self, step: Option<StepId>) -> Result<StepDiff> {
        let step = step
            .or(*self
                .last_step
                .lock()
                .unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| {
                Error::input("say which step: `/diff S3`").hint("`/status` lists the steps")
            })?;
        crate::report::diff::step_diff(self.store(), None, step)
    }

    fn undo(&self, step: Option<StepId>) -> Result<crate::undo::Undo> {
        let store = self.store();
        let task_ref = store.resolve_or_current(None)?;
        let step = match step {
            Some(step) => step,
            None => last_done(&store.load(&task_ref)?).ok_or_else(|| {
                Error::input("no step is done: there is nothing to undo")
                    .hint("`/status` lists the steps; `/undo S3` names one")
            })?,
        };
        let request = crate::undo::UndoRequest {
            step,
            only: Vec::new(),
            dry_run: false,
            now: self.engine.env().now(),
        };
        match crate::undo::undo(store, &task_ref, &request)? {
            crate::undo::UndoOutcome::Undone(undo) => Ok(undo),
            crate::undo::UndoOutcome::Refused { step, refusal } => {
                Err(crate::ui::undo::refusal_error("undo", step, &refusal))
            }
        }
    }

    fn session_start(&self) -> Vec<crate::hooks::HookReport> {
        self.engine.session_start()
    }

    fn refresh(&self) -> Result<()> {
        // What `tick status` does first, without waiting: a task another tick process holds
        // is left to that process.
        let Some((task_ref, Some(task))) = self.store().current_loaded()? else {
            return Ok(());
        };
        if !crate::watch::needs_refresh(self.store(), &task)? {
            return Ok(());
        }
        let Ok(lock) = self
            .store()
            .lock_task_now(&task_ref, "tick (staleness check)")
        else {
            return Ok(());
        };
        let now = self.engine.env().now();
        crate::watch::refresh_locked(self.store(), &task_ref, now, &lock).map(drop)
    }

    fn draft_file(&self) -> PathBuf {
        self.store().draft_plan_path()
    }

    fn check_draft(&self) -> Result<()> {
        let path = self.store().draft_plan_path();
        let text = crate::fsx::read(&path)?;
        crate::editor::check_plan(&self.store().rel(&path), &text)
    }
}

/// The done step ticked last (by its record's time; the later one in the plan on a tie).
fn last_done(task: &crate::tasks::Task) -> Option<StepId> {
    let steps = task
        .todo
        .steps
        .iter()
        .flat_map(|step| std::iter::once(step).chain(&step.substeps));
    steps
        .filter(|step| step.status == crate::plan::StepStatus::Done)
        .filter_map(|step| step.id)
        .enumerate()
        .max_by_key(|(n, id)| (task.state.steps.get(id).and_then(|r| r.done_at), *n))
        .map(|(_, id)| id)
}
