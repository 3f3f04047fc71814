//! The planning turn: the model explores with read-only tools until it calls `submit_plan`.
//! It is reminded once if it stops without one, and limits on turns and tokens stop a runaway.
//! The conversation is kept by the caller, so `--revise` and `--answer` go on with it.

use crate::llm::{LlmError, Message, Usage};
use crate::person::Person;
use crate::tools::{PlanSubmission, Questions, ToolOutcome};

use super::{AgentEvent, AskError, Asked, Model};

/// What the planner's turn must end with, for reminders.
pub const DUTY: &str = "Call `submit_plan` now with the whole plan (or `ask_user` if you cannot \
plan without an answer); a plan written as chat text does not count.";

/// How a planning turn ended well.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanEnd {
    /// The model submitted a valid plan.
    Submitted(PlanSubmission),
    /// The model asked questions no one could answer here.
    NeedsInput(Questions),
}

/// How a planning turn failed.
#[derive(Debug)]
pub enum PlanError {
    Llm(LlmError),
    /// The model stopped without submitting a plan, as often as reminders allow.
    NoSubmission {
        text: String,
        /// The last reminder: what was wrong with the model's answer.
        reminder: String,
        reminders: u32,
    },
    TurnLimit {
        turns: u32,
    },
    TokenLimit {
        used: u64,
        limit: u64,
    },
}

pub struct Planner<'a> {
    pub model: Model<'a>,
    /// Checks a submitted plan before anyone sees it (`plan.submitted` hooks): `Err` is the
    /// feedback it goes back to the model with.
    pub review: Option<&'a Review<'a>>,
}

/// A check of a submitted plan: `Err(feedback)` sends it back to the planner.
pub type Review<'a> = dyn Fn(&crate::tools::PlanSubmission) -> Result<(), String> + Sync + 'a;

/// The result text for an `ask_user` call no one could answer now.
pub const DEFERRED: &str = "The person is not at a terminal. Your questions were saved in the \
draft; their answers will come in a later message.";

impl Planner<'_> {
    /// Runs the model on `messages` until it submits a plan or asks what no one can answer;
    /// its questions go to `person` (who may be [`crate::person::Nobody`]).
    /// `messages` grows with the conversation, whatever the outcome.
    pub async fn run(
        &self,
        messages: &mut Vec<Message>,
        person: &mut dyn Person,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        usage: &mut Usage,
    ) -> Result<PlanEnd, PlanError> {
        let mut reminded = 0;
        let mut turns = 0;
        loop {
            if turns >= self.model.limits.max_turns {
                return Err(PlanError::TurnLimit { turns });
            }
            turns += 1;
            let response = match self.model.ask(turns, messages, sink, usage).await {
                Ok(Asked::Answer(response)) => response,
                Ok(Asked::CutOff) => continue,
                Err(AskError::Llm(err)) => return Err(PlanError::Llm(err)),
                Err(AskError::TokenLimit { used, limit }) => {
                    return Err(PlanError::TokenLimit { used, limit });
                }
            };
            if response.tool_calls.is_empty() {
                let reminder = self
                    .model
                    .reminder(&response, messages, "submit_plan", DUTY);
                if reminded >= self.model.limits.max_reminders {
                    return Err(PlanError::NoSubmission {
                        text: response.text,
                        reminder,
                        reminders: reminded,
                    });
                }
                reminded += 1;
                sink(AgentEvent::Reminder {
                    text: reminder.clone(),
                });
                messages.push(Message::user(reminder));
                continue;
            }
            let mut plan = None;
            let mut open = None;
            for call in &response.tool_calls {
                self.model
                    .call_tool(call, messages, sink, &mut |outcome| match outcome {
                        ToolOutcome::Output { text, is_error, .. } => (text, is_error),
                        ToolOutcome::StepUpdate(_) => (
                            "`update_step` is not available in plan mode".to_owned(),
                            true,
                        ),
                        ToolOutcome::Replan(_) => (
                            "`propose_replan` is not available in plan mode".to_owned(),
                            true,
                        ),
                        ToolOutcome::Plan(submission) if plan.is_none() => {
                            if let Some(Err(feedback)) = self.review.map(|r| r(&submission)) {
                                return (
                                    format!(
                                        "The plan was sent back by tick's plan.submitted hook; \
                                         the person has not seen it. Revise it and call \
                                         `submit_plan` again with the whole plan.\n{feedback}"
                                    ),
                                    true,
                                );
                            }
                            plan = Some(submission);
                            (
                            "The plan was received. It is now a draft for the person to review."
                                .to_owned(),
                            false,
                        )
                        }
                        ToolOutcome::Plan(_) => (
                            "Only the first plan in one answer is kept; this one was ignored."
                                .to_owned(),
                            true,
                        ),
                        ToolOutcome::Questions(questions) => {
                            if let Some(answers) = person.answer_questions(&questions) {
                                (answers, false)
                            } else {
                                open = Some(questions);
                                (DEFERRED.to_owned(), false)
                            }
                        }
                    });
            }
            if let Some(plan) = plan {
                return Ok(PlanEnd::Submitted(plan));
            }
            if let Some(questions) = open {
                return Ok(PlanEnd::NeedsInput(questions));
            }
            if response.tool_calls.iter().all(|c| c.name == "submit_plan") {
                // Every submit_plan was invalid: the model has the errors and tries again.
                reminded = 0;
            }
        }
    }
}
