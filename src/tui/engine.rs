//! The adapter: the session's [`Engine`] seam implemented over tick's one engine
//! ([`crate::engine::Engine`], which the subcommands drive too), plus what the session asks
//! that the engine leaves to its front ends: answering a blocked step
//! ([`crate::tasks::by_hand`]), approval and discard ([`crate::planning`]), a step's diff
//! ([`crate::report::diff`]). Thin on purpose: each method does what the matching subcommand
//! does, with the session's [`Person`] in place of the terminal, and no session logic lives
//! here.
//!
//! What the subcommands say (`approved ... as ...`, `drafted ...`) is said here through the
//! same [`Ui`] methods; while the session runs, the process's stdout and stderr are a pipe into
//! the timeline (`terminal.rs`), so those notes appear there word for word.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use super::seam::{Answer, Contract, Engine, EngineEvent, Events, Person, Selection, Snapshot};
use crate::config::Flags;
use crate::engine::{Approval, Event, RunRequest};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::planning::PlanEvent;
use crate::runner::{RunEvent, RunOptions, StepOutcome};
use crate::tasks::{Store, TODO_FILE};
use crate::ui::Ui;

/// tick's engine for one workspace, as the session sees it.
pub struct TickEngine {
    engine: crate::engine::Engine,
    ui: Ui,
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
            ui: Ui::new(),
            last_step: Mutex::new(None),
        }
    }

    fn store(&self) -> &Store {
        self.engine.store()
    }

    /// One planning turn through the engine's planning session, the person's questions and
    /// the model's events going to the session; the planning library's other events are
    /// printed as `tick plan` prints them (into the timeline).
    fn planning(
        &self,
        request: Request,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<()> {
        let config = self.engine.model_config(&Flags::default())?;
        if let Some(line) = config.trust_warning() {
            self.ui.warn(&line);
        }
        if let Some(line) = config.found_line() {
            self.ui.note(&line);
        }
        let mut session = self.engine.planning(&config);
        let ui = &self.ui;
        let mut sink = |event: PlanEvent| match event {
            PlanEvent::Agent(agent) => events(EngineEvent::Agent(agent)),
            other => ui.plan_event(&other, false, false),
        };
        match request {
            Request::New(goal) => session.start(&goal, false, person, &mut sink),
            Request::Revise(feedback) => session.revise(&feedback, person, &mut sink),
            Request::Answer(text) => session.answer(&text, person, &mut sink),
        }
        .map(drop)
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

    fn plan(&self, goal: &str, person: &mut dyn Person, events: &mut Events<'_>) -> Result<()> {
        self.planning(Request::New(goal.to_owned()), person, events)
    }

    fn revise(
        &self,
        feedback: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<()> {
        self.planning(Request::Revise(feedback.to_owned()), person, events)
    }

    fn answer(
        &self,
        answer: &Answer,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<()> {
        match answer {
            Answer::Planner(text) => self.planning(Request::Answer(text.clone()), person, events),
            Answer::Step { step, text } => {
                let ui = &self.ui;
                let answered = crate::tasks::by_hand::answer(
                    self.store(),
                    None,
                    *step,
                    text,
                    &self.engine.env().clock,
                    &mut |stale| ui.stale(stale),
                )?;
                ui.answered(&answered);
                Ok(())
            }
        }
    }

    fn approve(&self, contract: &Contract) -> Result<()> {
        let store = self.store();
        let approved = self.engine.approve(None, *contract)?;
        match approved.approval {
            Approval::Draft(approved) => {
                let folder = store.rel(&approved.dir);
                self.ui.approved(&approved, &folder);
                self.ui.approved_next(&folder, false);
            }
            Approval::Task { id, reapproved } => {
                let todo = store.rel(&store.task_ref(&id).dir.join(TODO_FILE));
                self.ui.reapproved(&id, &reapproved, &todo);
            }
            Approval::HooksOnly { id } => self.ui.hooks_approved(&id, &approved.hooks_approved),
        }
        Ok(())
    }

    fn discard(&self) -> Result<()> {
        let discarded = crate::planning::draft::discard(self.store())?;
        self.ui
            .discarded(&discarded, &self.store().rel(&discarded.path));
        Ok(())
    }

    fn run(
        &self,
        selection: Selection,
        person: &mut dyn Person,
        events: &mut Events<'_>,
        stop: Arc<AtomicBool>,
    ) -> Result<StepOutcome> {
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
        };
        let (last_step, ui) = (&self.last_step, &self.ui);
        let mut sink = |event: Event| match event {
            Event::Run(event) => {
                if let RunEvent::StepStarted { step, .. } = &event {
                    *last_step.lock().unwrap_or_else(PoisonError::into_inner) = Some(*step);
                }
                events(EngineEvent::Run(event));
            }
            Event::Warning(warning) => ui.warn(&crate::ui::warning_line(&warning)),
            Event::Note(line) => ui.note(&line),
        };
        Ok(self.engine.run(request, person, &mut sink)?.ended)
    }

    fn diff(&self, step: Option<StepId>) -> Result<()> {
        let step = step
            .or(*self
                .last_step
                .lock()
                .unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| {
                Error::input("say which step: `/diff S3`").hint("`/status` lists the steps")
            })?;
        let diff = crate::report::diff::step_diff(self.store(), None, step)?;
        self.ui.step_diff(&diff);
        Ok(())
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
