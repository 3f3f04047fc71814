//! What a config file says about hooks, as plain data: the events ([`Event`]), one entry as
//! written ([`HookEntry`]) and both files' entries ([`Configured`]). It stands on the floor
//! of the leaves so that `config` can read hooks without importing `hooks/` (which reads
//! `config`); `crate::hooks` re-exports all of it and owns running them.

use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// The version of the JSON a hook gets on stdin; raised only when a field changes meaning
/// or goes away (fields are only ever added).
pub const PAYLOAD_FORMAT: u32 = 1;
/// Seconds a hook may run when its entry does not say.
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// The most seconds an entry may ask for.
pub const MAX_TIMEOUT_S: u64 = 600;
/// The most of a hook's stdout, and of its stderr, that tick keeps (the rest is counted).
pub const OUTPUT_CAP: usize = 64 * 1024;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Event {
    /// Before one of the agent's tool calls; exit 2 refuses it (the model reads the stderr).
    #[serde(rename = "tool.pre")]
    ToolPre,
    /// After one of the agent's tool calls (a formatter); exit 2's stderr goes to the model.
    #[serde(rename = "tool.post")]
    ToolPost,
    /// A step begins, before the model's turn.
    #[serde(rename = "step.start")]
    StepStart,
    /// The model says the step is done, before its verify commands: exit 2 sends it back.
    #[serde(rename = "step.claimed")]
    StepClaimed,
    /// After the verify commands passed: an extra verifier, any non-zero exit refuses the tick.
    #[serde(rename = "step.verify")]
    StepVerify,
    /// A step was ticked.
    #[serde(rename = "step.done")]
    StepDone,
    /// A step was blocked.
    #[serde(rename = "step.blocked")]
    StepBlocked,
    /// `tick run` ends, however it ends (after the summary).
    #[serde(rename = "run.end")]
    RunEnd,
    /// A person approved the task (`tick approve`), after it was written. Runs under the
    /// read-only policy; reported, it cannot undo the approval.
    #[serde(rename = "plan.approved")]
    PlanApproved,
    /// The planner submitted a draft, before the person sees it: exit 2 sends it back to the
    /// planner with the stderr as feedback. Runs under the read-only policy.
    #[serde(rename = "plan.submitted")]
    PlanSubmitted,
    /// A done step became stale `[~]` (its files changed outside tick), once per transition,
    /// after it was written; the payload's `reason` is its `stale:` line. Runs under the
    /// read-only policy (no step runs); reported, it cannot keep the step done.
    #[serde(rename = "step.stale")]
    StepStale,
    /// The interactive session (`tick` alone) starts. Runs under the read-only policy.
    #[serde(rename = "session.start")]
    SessionStart,
}

impl Event {
    pub const ALL: [Event; 12] = [
        Event::ToolPre,
        Event::ToolPost,
        Event::StepStart,
        Event::StepClaimed,
        Event::StepVerify,
        Event::StepDone,
        Event::StepBlocked,
        Event::RunEnd,
        Event::PlanSubmitted,
        Event::PlanApproved,
        Event::StepStale,
        Event::SessionStart,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::ToolPre => "tool.pre",
            Event::ToolPost => "tool.post",
            Event::StepStart => "step.start",
            Event::StepClaimed => "step.claimed",
            Event::StepVerify => "step.verify",
            Event::StepDone => "step.done",
            Event::StepBlocked => "step.blocked",
            Event::RunEnd => "run.end",
            Event::PlanSubmitted => "plan.submitted",
            Event::PlanApproved => "plan.approved",
            Event::StepStale => "step.stale",
            Event::SessionStart => "session.start",
        }
    }

    /// Whether a hook of this event is a guard: its verdict decides something, so a hook that
    /// gave none (it timed out, or could not start) blocks rather than letting the thing
    /// through unguarded.
    pub fn is_gate(self) -> bool {
        matches!(
            self,
            Event::ToolPre | Event::StepClaimed | Event::StepVerify
        )
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `hooks:` entry of a config file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    pub event: Event,
    /// A regular expression over the whole tool name (tool events) or step id (step events);
    /// unset, empty or `*`: everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// A shell command (`bash -c`), run in the workspace root.
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

impl HookEntry {
    /// Checks what serde cannot: the matcher compiles, the command is not empty, the timeout
    /// is in range. The message names the entry by its position (from 1).
    pub fn validate(entries: &[HookEntry]) -> Result<(), String> {
        for (n, entry) in entries.iter().enumerate() {
            let n = n + 1;
            if entry.command.trim().is_empty() {
                return Err(format!(
                    "hook {n} (`{}`) has an empty `command`",
                    entry.event
                ));
            }
            if let Some(seconds) = entry.timeout_s
                && (seconds == 0 || seconds > MAX_TIMEOUT_S)
            {
                return Err(format!(
                    "hook {n} (`{}`): `timeout_s` must be between 1 and {MAX_TIMEOUT_S}",
                    entry.event
                ));
            }
            if let Err(err) = compile_matcher(entry.matcher.as_deref()) {
                return Err(format!(
                    "hook {n} (`{}`): the matcher `{}` is not a regular expression: {err}",
                    entry.event,
                    entry.matcher.as_deref().unwrap_or_default()
                ));
            }
        }
        Ok(())
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(
            self.timeout_s
                .unwrap_or(DEFAULT_TIMEOUT_S)
                .clamp(1, MAX_TIMEOUT_S),
        )
    }
}

pub(crate) fn compile_matcher(matcher: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match matcher.map(str::trim) {
        None | Some("" | "*") => Ok(None),
        Some(pattern) => Regex::new(&format!("^(?:{pattern})$")).map(Some),
    }
}

/// Where a hook was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The person's own config file: needs no trust.
    User,
    /// The repository's `.tasks/config.yaml`: runs only where the person trusts the repository.
    Project,
}

/// The hooks of both config files, as read (the config resolves this; [`HookSet::resolve`]
/// decides which may run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configured {
    pub user: Vec<HookEntry>,
    pub project: Vec<HookEntry>,
    /// The repository's config file as shown to the person (`.tasks/config.yaml`).
    pub project_file: String,
    /// Whether the person trusts the repository as its files are now (`tick trust`, DESIGN
    /// §12): only then do its hooks run. A clone's hooks never run on clone-and-run.
    pub project_trusted: bool,
}
