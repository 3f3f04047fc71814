//! The adapter: [`Engine`] implemented with tick's library — planning and approval
//! ([`crate::planning`]), answering a blocked step ([`crate::tasks::by_hand`]), a step's diff
//! ([`crate::report::diff`]), the runner of `src/runner/`, and the store: the functions the
//! subcommands call, never the subcommands. Thin on purpose: each method does what the
//! matching subcommand does, with the session's [`Person`] in place of the terminal, and no
//! session logic lives here.
//!
//! What the subcommands say (`approved ... as ...`, `drafted ...`) is said here through the
//! same [`Ui`] methods; while the session runs, the process's stdout and stderr are a pipe into
//! the timeline (`terminal.rs`), so those notes appear there word for word.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use super::seam::{
    Answer, Contract, Engine, EngineEvent, Person, PlanView, Selection, Snapshot, StepView,
};
use crate::config::{Config, Flags};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plan::{Phase, StepId};
use crate::planning::approve::{self, ApproveOutcome};
use crate::planning::{PlanDeps, PlanEvent, RunCommand, Session, Target};
use crate::runner::build::Parts;
use crate::runner::{RunOptions, Runner, StepOutcome};
use crate::tasks::todo_md::Step;
use crate::tasks::{Store, TODO_FILE, Task};
use crate::tools::Questions;
use crate::ui::Ui;

/// tick's engine for one workspace.
pub struct TickEngine {
    store: Store,
    /// The environment as the subcommands see it.
    env: Env,
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
            store,
            env,
            ui: Ui::new(),
            last_step: Mutex::new(None),
        }
    }

    /// The environment of one action: the session's (its clock is read at each write, so a
    /// session that lasts for hours stamps the real time).
    fn env_now(&self) -> Env {
        self.env.clone()
    }

    /// The settings for talking to the model, as the subcommands resolve them without flags.
    fn model_config(&self, env: &Env) -> Result<Config> {
        crate::config::for_model(&self.store, env, &Flags::default())
    }

    /// One planning turn through [`crate::planning`], the person's questions and the model's
    /// events going to the session; the planning library's other events are printed as
    /// `tick plan` prints them (into the timeline).
    fn planning(&self, request: Request, person: &mut dyn Person) -> Result<()> {
        let env = self.env_now();
        let config = self.model_config(&env)?;
        let deps = PlanDeps {
            config: &config,
            run_command: RunCommand::for_config(&config),
            clock: env.clock.clone(),
            path_var: env.var("PATH").map(Into::into),
        };
        let mut session = Session::open(&self.store, Target::Draft, deps);
        let person = Mutex::new(person);
        let ui = &self.ui;
        let mut sink = |event: PlanEvent| match event {
            PlanEvent::Agent(agent) => person
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .event(EngineEvent::Agent(agent)),
            other => ui.plan_event(&other, false, false),
        };
        let mut asking = PersonSeam(&person);
        match request {
            Request::New(goal) => session.start(&goal, false, &mut asking, &mut sink),
            Request::Revise(feedback) => session.revise(&feedback, &mut asking, &mut sink),
            Request::Answer(text) => session.answer(&text, &mut asking, &mut sink),
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

/// The session's person as tick's one seam to a person sees it: the planner's questions and
/// the runner's go-on question go to the session.
struct PersonSeam<'p, 'q>(&'p Mutex<&'q mut dyn Person>);

impl crate::person::Person for PersonSeam<'_, '_> {
    fn answer_questions(&mut self, questions: &Questions) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ask(questions)
    }

    fn go_on_after_deviation(&mut self, step: StepId, files: &[String]) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .go_on_after_deviation(step, files)
    }
}

impl Engine for TickEngine {
    fn status(&self) -> Snapshot {
        let draft = match self.store.load_draft() {
            Ok(Some(draft)) => Some(PlanView {
                id: None,
                title: draft.plan.title.clone().unwrap_or_default(),
                goal: draft.plan.front.goal.clone(),
                phase: Some(draft.plan.phase().unwrap_or(Phase::Draft)),
                steps: steps_view(&draft.plan.steps.steps),
                problem: None,
                plan_changed: false,
                questions: crate::tasks::plan_md::section_range(&draft.plan.body, "Open questions")
                    .map(|range| question_lines(&draft.plan.body[range]))
                    .unwrap_or_default(),
            }),
            Ok(None) => None,
            Err(err) => Some(PlanView {
                problem: Some(err.message),
                ..PlanView::default()
            }),
        };
        let task = match self.store.current_loaded() {
            Ok(Some((_, Some(task)))) => Some(task_view(&task)),
            Ok(Some((task, None))) => Some(PlanView {
                id: Some(task.id.clone()),
                problem: Some(
                    self.store
                        .load(&task)
                        .err()
                        .map_or_else(|| "the task cannot be read".to_owned(), |e| e.message),
                ),
                ..PlanView::default()
            }),
            Ok(None) => None,
            Err(err) => Some(PlanView {
                problem: Some(err.message),
                ..PlanView::default()
            }),
        };
        Snapshot { draft, task }
    }

    fn plan(&self, goal: &str, person: &mut dyn Person) -> Result<()> {
        self.planning(Request::New(goal.to_owned()), person)
    }

    fn revise(&self, feedback: &str, person: &mut dyn Person) -> Result<()> {
        self.planning(Request::Revise(feedback.to_owned()), person)
    }

    fn answer(&self, answer: &Answer, person: &mut dyn Person) -> Result<()> {
        match answer {
            Answer::Planner(text) => self.planning(Request::Answer(text.clone()), person),
            Answer::Step { step, text } => {
                let env = self.env_now();
                let ui = &self.ui;
                let answered = crate::tasks::by_hand::answer(
                    &self.store,
                    None,
                    *step,
                    text,
                    &env.clock,
                    &mut |stale| ui.stale(stale),
                )?;
                ui.answered(&answered);
                Ok(())
            }
        }
    }

    fn approve(&self, contract: &Contract, _person: &mut dyn Person) -> Result<()> {
        let contract = approve::Contract {
            allow_deviation: contract.allow_deviation,
            max_files_changed: contract.max_files,
            commit_steps: contract.commit_steps,
        };
        let store = &self.store;
        match approve::approve(store, None, self.env_now().now(), contract)? {
            ApproveOutcome::Draft(approved) => {
                let folder = store.rel(&approved.dir);
                self.ui.approved(&approved, &folder);
                self.ui.approved_next(&folder, false);
            }
            ApproveOutcome::Task { id, reapproved } => {
                let todo = store.rel(&store.task_ref(&id).dir.join(TODO_FILE));
                self.ui.reapproved(&id, &reapproved, &todo);
            }
        }
        Ok(())
    }

    fn discard(&self, _person: &mut dyn Person) -> Result<()> {
        let discarded = crate::planning::draft::discard(&self.store)?;
        self.ui
            .discarded(&discarded, &self.store.rel(&discarded.path));
        Ok(())
    }

    fn run(
        &self,
        selection: Selection,
        person: &mut dyn Person,
        stop: Arc<AtomicBool>,
    ) -> Result<StepOutcome> {
        // The body of `tick run`, with the person in place of the terminal.
        let env = self.env_now();
        let store = &self.store;
        let task_ref = store.resolve_or_current(None)?;
        let lock = store.lock_task_now(&task_ref, "tick run")?;
        store.set_current(&task_ref);
        let config = self.model_config(&env)?;
        let parts = Parts::new(&config, store, false)?.with_interrupt(Arc::clone(&stop));
        let sandboxed = parts.sandboxed;
        // As `tick run` without `--commit`: the runner commits each step itself when the
        // approval's contract says so (`commit_steps`).
        let mut runner = Runner::new(parts.deps(
            &config,
            store,
            task_ref.clone(),
            &lock,
            env.clock.clone(),
            stop,
            false,
            true,
        ))?;
        if !sandboxed {
            self.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
            crate::runner::write::record_unsandboxed(store, &task_ref, env.now())?;
        }
        let person = Mutex::new(person);
        let last_step = &self.last_step;
        let mut sink = |event: crate::runner::RunEvent| {
            if let crate::runner::RunEvent::StepStarted { step, .. } = &event {
                *last_step.lock().unwrap_or_else(PoisonError::into_inner) = Some(*step);
            }
            person
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .event(EngineEvent::Run(event));
        };
        let mut confirm = PersonSeam(&person);
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
        Ok(runner.run(options, &mut confirm, &mut sink)?.ended)
    }

    fn diff(&self, step: Option<StepId>, _person: &mut dyn Person) -> Result<()> {
        let step = step
            .or(*self
                .last_step
                .lock()
                .unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| {
                Error::input("say which step: `/diff S3`").hint("`/status` lists the steps")
            })?;
        let diff = crate::report::diff::step_diff(&self.store, None, step)?;
        self.ui.step_diff(&diff);
        Ok(())
    }

    fn refresh(&self) -> Result<()> {
        // What `tick status` does first, without waiting: a task another tick process holds
        // is left to that process.
        let Some((task_ref, Some(task))) = self.store.current_loaded()? else {
            return Ok(());
        };
        if !crate::watch::needs_refresh(&self.store, &task)? {
            return Ok(());
        }
        let Ok(lock) = self
            .store
            .lock_task_now(&task_ref, "tick (staleness check)")
        else {
            return Ok(());
        };
        let now = self.env_now().now();
        crate::watch::refresh_locked(&self.store, &task_ref, now, &lock).map(drop)
    }

    fn draft_file(&self) -> PathBuf {
        self.store.draft_plan_path()
    }

    fn check_draft(&self) -> Result<()> {
        let path = self.store.draft_plan_path();
        let text = crate::fsx::read(&path)?;
        crate::editor::check_plan(&self.store.rel(&path), &text)
    }
}

fn task_view(task: &Task) -> PlanView {
    PlanView {
        id: Some(task.id.clone()),
        title: task.title(),
        goal: task.plan.front.goal.clone(),
        phase: Some(task.phase()),
        steps: steps_view(&task.todo.steps),
        problem: None,
        plan_changed: task.plan_changed(),
        questions: Vec::new(),
    }
}

fn steps_view(steps: &[Step]) -> Vec<StepView> {
    let mut out = Vec::new();
    for step in steps {
        out.push(step_view(step, false));
        out.extend(step.substeps.iter().map(|sub| step_view(sub, true)));
    }
    out
}

fn step_view(step: &Step, sub: bool) -> StepView {
    StepView {
        id: step.id,
        sub,
        status: if sub {
            step.status
        } else {
            step.progress_status()
        },
        title: step.title.clone(),
        files: step.files.clone(),
        risk: step.risk.map(|r| r.as_str().to_owned()),
        blocked: step.blocked.clone(),
        stale: step.stale.clone(),
        answer: step.answer.clone(),
    }
}

/// The bullet items of a draft's `## Open questions` section.
fn question_lines(section: &str) -> Vec<String> {
    section
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .map(str::to_owned)
        .collect()
}
