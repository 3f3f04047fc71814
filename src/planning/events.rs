//! What a planning session reports as it goes: plain data, below both the session (which
//! emits it) and `ui.rs` (which renders it for people or as `tick plan --json` lines). The
//! JSON form is a stable format, documented in `docs/json.md`: fields are only ever added.

use serde::Serialize;

use crate::agent::AgentEvent;
use crate::llm::Usage;
use crate::plan::Phase;

/// The version of the `tick plan --json` event stream; raised only when a field changes
/// meaning or goes away.
pub const JSON_FORMAT: u32 = 1;

/// Where a planning run starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// A new goal.
    New,
    /// A person's feedback on the draft.
    Revise,
    /// A person's answers to the planner's questions.
    Answer,
    /// A plan a person wrote (`tick plan --from`).
    FromFile,
    /// A person's feedback on an approved task: a new version of its plan.
    ReviseTask,
}

/// Something that happened while planning, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PlanEvent {
    /// A planning run begins: the first event of every `tick plan --json`.
    PlanStarted { format: u32, start: Start },
    /// The planner works without `run_command` (the read-only sandbox is not available here,
    /// or it is switched off), for this reason. Told once per session.
    RunCommandUnavailable { reason: String },
    /// The planner asked these questions (one line each). Whether a person answered them at
    /// the terminal or the draft waits for answers, the next events say.
    QuestionsAsked { questions: Vec<String> },
    /// The revision changed the draft's steps: a unified diff, one block per step.
    StepsChanged { diff: String },
    /// The draft was written. `usage` is `None` for a plan a person wrote.
    Draft {
        path: String,
        status: Phase,
        title: String,
        usage: Option<Usage>,
        /// Its steps, sub-steps included.
        steps: usize,
        /// The planner's open questions, one line each (`needs-input`); empty otherwise.
        questions: Vec<String>,
    },
    /// An approved task was re-planned: its PLAN.md (`path`) is version `version`, waiting
    /// for `tick approve TASK`; the version before it is `history/PLAN.v<version - 1>.md`.
    Revised {
        task: String,
        /// How a hint names the task ([`crate::tasks::naming::task_named`]).
        #[serde(skip)]
        named: String,
        path: String,
        version: usize,
        usage: Option<Usage>,
    },
    /// tick's own check of a compact draft against the repository found this still wrong
    /// after the repair request; it is kept in the draft's open questions.
    CheckWarning { text: String },
    /// An MCP server did not start, or a tool the person named read-only is not there: one
    /// line; planning goes on without it.
    McpWarning { text: String },
    /// The planning attempt failed (the model or provider, or a limit) and is recorded in
    /// `.tasks/draft/last_attempt.yaml`; the command's error follows.
    AttemptFailed { cause: String, hint: Option<String> },
    /// A `plan.submitted` hook ran (`docs/hooks.md`); the same object as `tick run --json`'s
    /// `hook` event.
    Hook(crate::hooks::HookReport),
    /// The model's turn reported this; in JSON it is the model turn's own object (`request`,
    /// `text`, `tool_call`, `tool_result`, `reminder`, `usage`...), as `tick plan --json` has
    /// always printed it. (Serde wants the untagged variant last.)
    #[serde(untagged)]
    Agent(AgentEvent),
}

#[cfg(test)]
mod tests {
    use super::{JSON_FORMAT, PlanEvent, Start};
    use crate::agent::AgentEvent;

    #[test]
    fn events_are_tagged_and_agent_events_stay_as_they_were() {
        let started = PlanEvent::PlanStarted {
            format: JSON_FORMAT,
            start: Start::New,
        };
        assert_eq!(
            serde_json::to_string(&started).unwrap(),
            r#"{"event":"plan_started","format":1,"start":"new"}"#
        );
        let agent = PlanEvent::Agent(AgentEvent::Request { turn: 2 });
        assert_eq!(
            serde_json::to_string(&agent).unwrap(),
            r#"{"event":"request","turn":2}"#
        );
        let unavailable = PlanEvent::RunCommandUnavailable {
            reason: "off".into(),
        };
        assert_eq!(
            serde_json::to_string(&unavailable).unwrap(),
            r#"{"event":"run_command_unavailable","reason":"off"}"#
        );
    }
}
