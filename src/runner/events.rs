//! What the runner reports as it goes, and how a step or a run ended: plain data, below both
//! the runner (which emits it) and `ui.rs` (which renders it for people or as `--json` lines).
//! The JSON form is a stable format, documented in `docs/json.md`: fields are only ever added.

use serde::Serialize;

use crate::agent::AgentEvent;
use crate::llm::Usage;
use crate::plan::{Phase, StepId, StepStatus};

/// The version of the `tick run --json` event stream; raised only when a field changes
/// meaning or goes away.
pub const JSON_FORMAT: u32 = 1;

/// Something that happened during a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The run took the task's lock and begins.
    RunStarted {
        format: u32,
        task: String,
        title: String,
    },
    /// PLAN.md changed since its approval: the run refuses (the error follows). `diff` is a
    /// unified diff against the approved copy, when that copy exists.
    PlanChanged { diff: Option<String> },
    /// One hook ran (`docs/hooks.md`): its event, command, exit and time.
    Hook(crate::hooks::HookReport),
    /// The repository's hooks do not run: it is not trusted. One line naming them.
    HooksIgnored { warning: String },
    /// A tool the step's plan names is not available (its MCP server did not start, or has
    /// no such tool): one line; the step goes on without it.
    McpWarning { step: StepId, text: String },
    /// The hooks that apply differ from the approved ones, one line each (`+` added, `-`
    /// removed, `~` changed): the run refuses (the error follows).
    HooksChanged { changes: Vec<String> },
    /// Steps a person added without an id got these ids in TODO.md.
    IdsAssigned { steps: Vec<StepId> },
    /// A stale step was verified again before anything else ran: `passed` ticks it `[x]`
    /// again; otherwise it is `[ ]`, to be redone. `has_verify` is false for a step without
    /// verification (it is always redone).
    StaleReverified {
        step: StepId,
        passed: bool,
        has_verify: bool,
    },
    /// The work on a step begins; it is marked `[-]`.
    StepStarted { step: StepId, title: String },
    /// Before `step` starts: steps of other active tasks, still to be done, change some of
    /// the same files, one line each: "S2 of this task and S4 of `…-auth` both change
    /// `src/lib.rs`".
    Overlap { step: StepId, overlaps: Vec<String> },
    /// The step came from another tool's task file (`tick import`) and tick ticked it there
    /// too: `source` is the task's id in `file`.
    SourceTicked {
        step: StepId,
        source: String,
        file: String,
    },
    /// The step came from another tool's task file, but tick did not tick it there: `reason`
    /// says why (the line changed since the import, the file is outside the repository).
    SourceNotTicked {
        step: StepId,
        source: String,
        file: String,
        reason: String,
    },
    /// The model's turn for `step` reported `agent` (the same events `tick plan --json`
    /// prints).
    Agent { step: StepId, agent: AgentEvent },
    /// Before the step changed anything, its verify `commands` already passed: they cannot
    /// tell done from not done, so a `done` claim needs a change to the step's files.
    VerifyPassedBefore { step: StepId, commands: Vec<String> },
    /// One verification command ran.
    Verification {
        step: StepId,
        command: String,
        passed: bool,
        /// `null` when the command was killed (timeout or signal).
        exit_code: Option<i32>,
        timed_out: bool,
        duration_ms: u64,
        /// The last lines of its output (at most 20 lines, 2,000 characters), secrets
        /// redacted.
        output_tail: String,
    },
    /// Files a person changed while the step ran (not through tick's tools); the model is
    /// told on its next tool result.
    OutsideEdit { step: StepId, files: Vec<String> },
    /// Something other than tick changed `.tasks/`, `.git/config` or `.git/hooks/` while one
    /// of the agent's commands ran: the step will not be ticked.
    Tampered { step: StepId, files: Vec<String> },
    /// A person changed this step's marker in TODO.md while it ran: their version is kept and
    /// the runner's `wanted` status was not written.
    StatusKept {
        step: StepId,
        file: String,
        current: StepStatus,
        wanted: StepStatus,
    },
    /// The step is no longer in TODO.md (a person removed it while it ran); its status was not
    /// written.
    StepMissing { step: StepId, file: String },
    /// The step is ticked `[x]`. `verified` is false for a step without verification, and for
    /// one whose verify already passed before the change (`passed_before`): such a verify
    /// passes whether or not the step is done, so it is no evidence.
    StepDone {
        step: StepId,
        verified: bool,
        passed_before: bool,
        files_changed: Vec<String>,
    },
    /// The step is blocked (`[!]`) with `reason`: by the model, by failing verification, or
    /// (for a parent) because its own verification failed once its sub-steps were done.
    /// `before_run` is true when the run found it blocked already and ran nothing.
    StepBlocked {
        step: StepId,
        reason: String,
        before_run: bool,
    },
    /// `--commit` committed the step: `commit` is the new commit's id, `files` what it holds
    /// (the step's changed files, then the task's files).
    Committed {
        step: StepId,
        commit: Option<String>,
        files: Vec<String>,
    },
    /// `--commit` made no commit for the step, because it changed no file outside `.tasks/`;
    /// its tick is committed with the next step that changes code.
    CommitSkipped { step: StepId },
    /// The step changed files outside its `files`. `allowed` when the approval allows
    /// deviation; otherwise the run pauses unless the person says to go on.
    Deviation {
        step: StepId,
        files: Vec<String>,
        allowed: bool,
    },
    /// The task has changed more files than its approval allows: the run stops.
    Limit {
        task: String,
        /// How a hint names the task ([`crate::tasks::naming::task_named`]).
        #[serde(skip)]
        named: String,
        files_changed: usize,
        max_files_changed: u32,
    },
    /// The run stopped after `step` for the person to review its deviation: `files`, the
    /// files it changed outside its `files`; `more`, whether steps are left to run after it.
    Paused {
        step: StepId,
        files: Vec<String>,
        more: bool,
    },
    /// The model proposed a local re-plan around `step` (`propose_replan`) and tick accepted
    /// it: `step` is blocked `[!]`, `version` of task `task`'s PLAN.md waits for approval
    /// (with `added`, the new steps' ids, and `diff`, the step-level diff), and the run stops
    /// (exit 4) until `tick approve`.
    Replanned {
        task: String,
        /// How a hint names the task ([`crate::tasks::naming::task_named`]).
        #[serde(skip)]
        named: String,
        step: StepId,
        reason: String,
        added: Vec<StepId>,
        version: usize,
        diff: Option<String>,
    },
    /// Ctrl-C. `in_progress`: `step` was stopped mid-way and stays `[-]` for the next run;
    /// otherwise `step` had just finished and the run stopped after it.
    Interrupted { step: StepId, in_progress: bool },
    /// Every step is done (`step` is `null`), or the one step asked for is done already.
    NothingToRun { step: Option<StepId> },
    /// The last event of a run that did not fail.
    Summary(Summary),
}

/// The closing numbers of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub task: String,
    /// Top-level steps done, and in all.
    pub done: usize,
    pub total: usize,
    pub blocked: Vec<BlockedStep>,
    pub phase: Phase,
    pub outcome: StepOutcome,
    pub steps_run: usize,
    pub usage: Usage,
    /// `false` when the agent's commands ran without the sandbox.
    pub sandboxed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedStep {
    pub step: StepId,
    pub reason: Option<String>,
}

/// How a step ended (and so how a run ended, when it stops there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    Done,
    /// A step is blocked and needs a person.
    Blocked,
    /// Stopped for the person to review a deviation.
    Paused,
    /// The task's `max_files_changed` was passed.
    Limit,
    /// Ctrl-C.
    Interrupted,
}

/// How a whole run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub ended: StepOutcome,
    pub steps_run: usize,
    pub summary: Summary,
}
