//! The one seam between the session and tick's engine: the [`Engine`] trait (everything the
//! session asks of planning, approval and the runner), the events it reports while it works
//! (the person it asks is tick's one [`Person`]), and the plain data that crosses between
//! them. The session is written
//! against this file only; `engine.rs` implements it with today's library.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::agent::AgentEvent;
use crate::error::Error;
pub use crate::person::Person;
use crate::plan::StepId;
/// The approval contract (`tick approve --allow-deviation --max-files N --commit-steps`):
/// the planning library's own.
pub use crate::planning::approve::Contract;
use crate::runner::{RunEvent, StepOutcome};

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
    ) -> Result<(), Error>;
    /// `tick plan --revise "feedback"`.
    fn revise(
        &self,
        feedback: &str,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<(), Error>;
    /// `tick plan --answer "text"` for the planner's open questions, or `tick answer S2
    /// "text"` for a blocked step.
    fn answer(
        &self,
        answer: &Answer,
        person: &mut dyn Person,
        events: &mut Events<'_>,
    ) -> Result<(), Error>;
    /// `tick approve` with the contract's flags.
    fn approve(&self, contract: &Contract) -> Result<(), Error>;
    /// `tick discard --yes` (the session asked first).
    fn discard(&self) -> Result<(), Error>;
    /// `tick run`, `tick run --step S3` or `tick run --steps N`; `stop` set asks it to stop at
    /// the next safe point, as Ctrl-C does.
    fn run(
        &self,
        selection: Selection,
        person: &mut dyn Person,
        events: &mut Events<'_>,
        stop: Arc<AtomicBool>,
    ) -> Result<StepOutcome, Error>;
    /// `tick diff S3` (`None`: the step that ran last).
    fn diff(&self, step: Option<StepId>) -> Result<(), Error>;
    /// `tick undo S3` for the current task (`None`: the step done last), as the person
    /// asked in `/undo`.
    fn undo(&self, step: Option<StepId>) -> Result<(), Error>;
    /// What every subcommand does first: marks the current task's done steps whose files
    /// changed outside tick stale (`[~]`). Never waits: a task another tick process holds is
    /// left to it.
    fn refresh(&self) -> Result<(), Error>;
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
    Agent(AgentEvent),
    Run(RunEvent),
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
