//! The one seam between the session and tick's engine: the [`Engine`] trait (everything the
//! session asks of planning, approval and the runner), the typed events it reports while it
//! works (the planner's and the runner's, the warnings a run starts with), the typed
//! [`Outcome`] each request ends with, and the plain data that crosses between them (the
//! person it asks is tick's one [`Person`]). Nothing the engine says reaches the session as
//! text to be parsed: the timeline builds its entries from these values. The session is
//! written against this file only; `engine.rs` implements it with tick's engine.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::agent::AgentEvent;
use crate::engine::Warning;
use crate::error::Error;
pub use crate::person::Person;
use crate::plan::StepId;
/// The approval contract (`tick approve --allow-deviation --max-files N --commit-steps`):
/// the planning library's own.
pub use crate::planning::approve::Contract;
use crate::planning::approve::{Approved, Reapproved};
use crate::planning::draft::Discarded;
use crate::planning::{Drafted, PlanEvent};
use crate::report::diff::StepDiff;
use crate::runner::RunEvent;
use crate::runner::RunOutcome;
use crate::tasks::by_hand::Answered;
use crate::undo::Undo;
use crate::watch::StaleStep;

pub use crate::engine::{PlanView, Snapshot, StepView};

/// Everything the session asks of tick's engine. Each call does exactly what the matching
/// subcommand does on disk; long calls run on the session's worker thread, ask the
/// [`Person`] (tick's one seam to a person) and report through `events`.
pub trait Engine: Send + Sync {
    /// The draft and the current task as they are on disk now. Never fails: a file that
    /// does not parse is reported in the view's `problem`.
    fn status(&self) -> Snapshot;
    /// `tick plan "goal"`.
    fn plan(
        &self,
        goal: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Drafted, Error>;
    /// `tick plan --revise "feedback"`.
    fn revise(
        &self,
        feedback: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Drafted, Error>;
    /// `tick plan --answer "text"` for the planner's open questions, or `tick answer S2
    /// "text"` for a blocked step.
    fn answer(
        &self,
        answer: &Answer,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<Outcome, Error>;
    /// `tick approve` with the contract's flags (and `--commit` when `commit_folder`).
    fn approve(&self, contract: &Contract, commit_folder: bool) -> Result<Outcome, Error>;
    /// `tick discard --yes` (the session asked first).
    fn discard(&self) -> Result<Outcome, Error>;
    /// `tick run`, `tick run --step S3` or `tick run --steps N`; `stop` set asks it to stop at
    /// the next safe point, as Ctrl-C does.
    fn run(
        &self,
        selection: Selection,
        person: &mut dyn Person,
        events: &mut Events<'_>,
        stop: Arc<AtomicBool>,
    ) -> Result<RunOutcome, Error>;
    /// `tick diff S3` (`None`: the step that ran last).
    fn diff(&self, step: Option<StepId>) -> Result<StepDiff, Error>;
    /// `tick undo S3` for the current task (`None`: the step done last), as the person
    /// asked in `/undo`.
    fn undo(&self, step: Option<StepId>) -> Result<Undo, Error>;
    /// What every subcommand does first: marks the current task's done steps whose files
    /// changed outside tick stale (`[~]`). Never waits: a task another tick process holds is
    /// left to it.
    fn refresh(&self) -> Result<(), Error>;
    /// The session starts: the `session.start` hooks' runs (and the `step.stale` ones of
    /// the first refresh), for the timeline.
    fn session_start(&self) -> Vec<crate::hooks::HookReport> {
        Vec::new()
    }
    /// The draft's PLAN.md, for the person's editor.
    fn draft_file(&self) -> PathBuf;
    /// Whether the draft parses and validates, as `tick approve` will check it.
    fn check_draft(&self) -> Result<(), Error>;
}

/// Where what the engine does goes while it works (the session's channel).
pub type Events<'e> = dyn FnMut(EngineEvent) + Send + 'e;

/// Something the engine did, for the timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The model's own progress (outside a planning turn or a run).
    Agent(AgentEvent),
    /// The planning session's events (the model's progress inside them).
    Plan(PlanEvent),
    Run(RunEvent),
    /// What a run (or planning) says before it starts: the person should know, it goes on.
    Warning(Warning),
    /// A line about the settings the engine found (a server found on this machine).
    Note(String),
    /// A done step found stale while an answer was written.
    Stale(StaleStep),
}

/// How a request of the session ended, as the matching subcommand reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A planning turn wrote the draft (`/plan`, a revision, the planner's answers).
    Drafted(Drafted),
    /// A blocked step answered.
    Answered(Answered),
    /// The draft approved as the task in `folder` (workspace-relative), its folder committed
    /// when `committed`.
    Approved {
        approved: Approved,
        folder: String,
        committed: bool,
    },
    /// The task's edited plan approved again; `todo` is its TODO.md as shown.
    Reapproved {
        id: String,
        reapproved: Reapproved,
        todo: String,
    },
    /// No draft and the task's plan unchanged, but the hooks that apply changed: those
    /// approved (as `tick approve` does).
    HooksApproved { id: String, changes: Vec<String> },
    /// The draft thrown away; `shown` is its PLAN.md.
    Discarded { discarded: Discarded, shown: String },
    /// A run ended.
    Ran(RunOutcome),
    /// A step's changes.
    Diff(StepDiff),
    /// A done step undone (`/undo`).
    Undone(Undo),
}

/// An answer typed by the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// To the planner's open questions.
    Planner(String),
    /// To the question a blocked step stopped on.
    Step { step: StepId, text: String },
}

/// Which steps a run may run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Selection {
    /// Until done, blocked or stopped.
    #[default]
    All,
    /// Only this step.
    Step(StepId),
    /// At most this many steps.
    Steps(usize),
}
