//! The execution turn of one step: the model works with build-mode tools until it reports the
//! step with `update_step`. A `done` claim is checked by the caller's [`StepHooks::verify`];
//! only a passing verification ends the turn as done.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::llm::{LlmError, Message, Usage};
use crate::plan::StepId;
use crate::tools::{Effects, ReplanProposal, StepUpdate, StepUpdateStatus, ToolOutcome};

use super::{AgentEvent, AskError, Asked, Model};

/// What a step's turn must end with, for reminders.
pub const DUTY: &str = "Report the step: call `update_step` with `done` when the work is \
complete, or `blocked` with the question that would unblock it.";

/// What the runner's verification said about a `done` claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed {
        report: String,
    },
    /// The model gets `report` and keeps working.
    Failed {
        report: String,
    },
    /// Too many failures: the step is blocked with `reason`.
    GaveUp {
        reason: String,
    },
}

/// What the caller (the runner) does around the model's work on a step.
pub trait StepHooks {
    /// Checks a `done` claim: the runner runs the step's verify commands here.
    fn verify(&mut self, note: Option<&str>) -> Verdict;
    /// Whether the tool call `tool` with `arguments` may run (`tool.pre` hooks): `Err` is the
    /// refusal the model reads as the call's result; the call does not run.
    fn allow_tool(&mut self, _tool: &str, _arguments: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
    /// A tool call named `tool` is about to run.
    fn before_tool(&mut self, tool: &str);
    /// A tool call finished; `effects` is what it changed.
    fn after_tool(&mut self, effects: &Effects);
    /// What happened outside the tools since the last look (a person editing a file), as a
    /// note for the model; it rides on the next tool result.
    fn notices(&mut self) -> Option<String>;
    /// Checks a `propose_replan` against the plan: `Err` is the refusal the model reads (the
    /// turn goes on); `Ok`, and the turn ends with [`StepEnd::Replanned`].
    fn check_replan(&mut self, proposal: &ReplanProposal) -> Result<(), String>;
}

/// How a step's turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEnd {
    /// Verified (or without verification) and done; the model's note.
    Done {
        note: Option<String>,
    },
    Blocked {
        reason: String,
    },
    /// The model proposed a local re-plan around the step and the hooks accepted it: the
    /// runner writes it as a revision waiting for approval.
    Replanned {
        proposal: ReplanProposal,
    },
    /// The person pressed Ctrl-C.
    Interrupted,
}

#[derive(Debug)]
pub enum StepError {
    Llm(LlmError),
    /// The model stopped twice without reporting the step.
    NoReport,
    TurnLimit {
        turns: u32,
    },
    TokenLimit {
        used: u64,
        limit: u64,
    },
}

/// Resolves once `flag` is set (by the Ctrl-C handler), looking ten times a second.
async fn until_set(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

pub struct Executor<'a> {
    pub model: Model<'a>,
    pub step: StepId,
    pub interrupted: &'a AtomicBool,
}

impl Executor<'_> {
    /// The model reported the step: note it, or check a `done` claim with the verifier and
    /// end the turn when the step is done or blocked.
    fn step_update(
        &self,
        update: StepUpdate,
        hooks: &mut dyn StepHooks,
        end: &mut Option<StepEnd>,
    ) -> (String, bool) {
        match update.id.parse::<StepId>() {
            Ok(id) if id == self.step => match update.status {
                StepUpdateStatus::InProgress => {
                    ("Noted: the step is in progress.".to_owned(), false)
                }
                StepUpdateStatus::Blocked => {
                    let reason = update.reason.unwrap_or_default();
                    let text = format!("The step is blocked: {reason}");
                    *end = Some(StepEnd::Blocked { reason });
                    (text, false)
                }
                StepUpdateStatus::Done => match hooks.verify(update.evidence.as_deref()) {
                    Verdict::Passed { report } => {
                        *end = Some(StepEnd::Done {
                            note: update.evidence,
                        });
                        (report, false)
                    }
                    Verdict::Failed { report } => (report, true),
                    Verdict::GaveUp { reason } => {
                        *end = Some(StepEnd::Blocked {
                            reason: reason.clone(),
                        });
                        (reason, true)
                    }
                },
            },
            _ => (
                format!(
                    "You are working on `{}`; report that step, not `{}`.",
                    self.step, update.id
                ),
                true,
            ),
        }
    }

    #[allow(clippy::too_many_lines)]
    pub async fn run(
        &self,
        messages: &mut Vec<Message>,
        hooks: &mut dyn StepHooks,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        usage: &mut Usage,
    ) -> Result<StepEnd, StepError> {
        let mut reminded = 0;
        let mut turns = 0;
        loop {
            if self.interrupted.load(Ordering::Relaxed) {
                return Ok(StepEnd::Interrupted);
            }
            if turns >= self.model.limits.max_turns {
                return Err(StepError::TurnLimit { turns });
            }
            turns += 1;
            let asked = tokio::select! {
                asked = self.model.ask(turns, messages, sink, usage) => asked,
                () = until_set(self.interrupted) => return Ok(StepEnd::Interrupted),
            };
            let response = match asked {
                Ok(Asked::Answer(response)) => response,
                Ok(Asked::CutOff) => continue,
                Err(AskError::Llm(err)) => return Err(StepError::Llm(err)),
                Err(AskError::TokenLimit { used, limit }) => {
                    return Err(StepError::TokenLimit { used, limit });
                }
            };
            if response.tool_calls.is_empty() {
                if reminded >= self.model.limits.max_reminders {
                    return Err(StepError::NoReport);
                }
                reminded += 1;
                let reminder = self
                    .model
                    .reminder(&response, messages, "update_step", DUTY);
                sink(AgentEvent::Reminder {
                    text: reminder.clone(),
                });
                messages.push(Message::user(reminder));
                continue;
            }
            let mut end = None;
            for call in &response.tool_calls {
                if end.is_some() || self.interrupted.load(Ordering::Relaxed) {
                    messages.push(Message::tool_error(&call.id, "not run: the step ended"));
                    continue;
                }
                if call.arguments_error.is_none()
                    && let Err(refusal) = hooks.allow_tool(&call.name, &call.arguments)
                {
                    messages.push(Message::tool_error(&call.id, refusal));
                    continue;
                }
                hooks.before_tool(&call.name);
                self.model.call_tool(call, messages, sink, &mut |outcome| {
                    let (content, is_error) = match outcome {
                        ToolOutcome::Output {
                            text,
                            is_error,
                            effects: done,
                        } => {
                            hooks.after_tool(&done);
                            (text, is_error)
                        }
                        ToolOutcome::StepUpdate(update) => {
                            self.step_update(update, hooks, &mut end)
                        }
                        ToolOutcome::Replan(proposal) => replan(proposal, hooks, &mut end),
                        ToolOutcome::Plan(_) | ToolOutcome::Questions(_) => (
                            "that tool is not available while executing".to_owned(),
                            true,
                        ),
                    };
                    // What happened outside the tools meanwhile (a person editing a file)
                    // rides on the next tool result, so the model learns it before its next
                    // move.
                    match hooks.notices() {
                        Some(notice) => (format!("{content}\n\n{notice}"), is_error),
                        None => (content, is_error),
                    }
                });
            }
            if let Some(end) = end {
                return Ok(end);
            }
            if self.interrupted.load(Ordering::Relaxed) {
                return Ok(StepEnd::Interrupted);
            }
        }
    }
}

/// The model proposed a local re-plan: refused back to it, or accepted and the turn ends.
fn replan(
    proposal: ReplanProposal,
    hooks: &mut dyn StepHooks,
    end: &mut Option<StepEnd>,
) -> (String, bool) {
    match hooks.check_replan(&proposal) {
        Ok(()) => {
            let text = format!(
                "The re-plan around `{}` was accepted as a proposal. The run stops here until a \
                 person approves the new plan; do nothing more.",
                proposal.step
            );
            *end = Some(StepEnd::Replanned { proposal });
            (text, false)
        }
        Err(refusal) => (refusal, true),
    }
}
