//! `update_step`: how the model *claims* progress on a step in build mode.
//!
//! The runner owns the checkboxes (DESIGN §1.2): this handler only validates the claim and
//! returns a typed [`StepUpdate`]. It touches no file; the runner decides what a claim means
//! (a `done` is verified before anything is ticked).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ToolOutcome, parse_args, trim_in_place};
use crate::llm::ToolSpec;

pub const NAME: &str = "update_step";

/// The status a model may claim for a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepUpdateStatus {
    InProgress,
    Done,
    Blocked,
}

/// A validated `update_step` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepUpdate {
    /// `S3` or `S3.1`.
    pub id: String,
    pub status: StepUpdateStatus,
    /// What shows the step is done: commands run, their results.
    #[serde(default)]
    pub evidence: Option<String>,
    /// Why the step cannot go on; always present when `status` is `blocked`.
    #[serde(default)]
    pub reason: Option<String>,
}

impl StepUpdate {
    /// Parse and validate `update_step` arguments; the error text is written for the model.
    pub fn from_arguments(arguments: &serde_json::Value) -> Result<Self, String> {
        let mut update: Self = parse_args(NAME, arguments)?;
        trim_in_place(&mut update.id);
        for text in [&mut update.evidence, &mut update.reason] {
            if let Some(inner) = text.as_mut() {
                trim_in_place(inner);
            }
            if text.as_deref() == Some("") {
                *text = None;
            }
        }
        let mut problems = Vec::new();
        if !is_step_id(&update.id) {
            problems.push(format!(
                "`{}` is not a step id; step ids look like `S3` or `S3.1`, as in TODO.md",
                update.id
            ));
        }
        if update.status == StepUpdateStatus::Blocked && update.reason.is_none() {
            problems.push(
                "`blocked` needs a `reason`: say what stops the step and what would unblock it"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(update)
        } else {
            Err(format!(
                "{NAME} was not accepted; fix this and call {NAME} again:\n- {}",
                problems.join("\n- ")
            ))
        }
    }
}

/// `S<n>` or `S<n>.<m>` with positive numbers written without leading zeros, so one step has
/// exactly one spelling.
fn is_step_id(id: &str) -> bool {
    let positive = |digits: &str| {
        !digits.is_empty()
            && !digits.starts_with('0')
            && digits.len() <= 9
            && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let Some(rest) = id.strip_prefix('S') else {
        return false;
    };
    match rest.split_once('.') {
        None => positive(rest),
        Some((step, sub)) => positive(step) && positive(sub),
    }
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Report progress on a step of the approved plan. Call it with \
                      `in_progress` when you start a step, `done` when its work is finished \
                      (give `evidence`: what you ran and what it showed; the runner then runs \
                      the step's checks before ticking it), or `blocked` when it cannot be done \
                      as planned (give the `reason` and what would unblock it). This does not \
                      edit TODO.md; the runner does."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": "^S[1-9][0-9]*(\\.[1-9][0-9]*)?$",
                    "description": "The step id, e.g. `S3` or `S3.1`."
                },
                "status": {
                    "type": "string",
                    "enum": ["in_progress", "done", "blocked"]
                },
                "evidence": {
                    "type": "string",
                    "description": "For `done`: commands run and their results, briefly."
                },
                "reason": {
                    "type": "string",
                    "description": "Required for `blocked`: what stops the step, and the smallest question or change that would unblock it."
                }
            },
            "required": ["id", "status"],
            "additionalProperties": false
        }),
    }
}

pub fn run(arguments: &serde_json::Value) -> ToolOutcome {
    match StepUpdate::from_arguments(arguments) {
        Ok(update) => ToolOutcome::StepUpdate(update),
        Err(message) => ToolOutcome::error(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_updates() {
        assert_eq!(
            run(&json!({"id": "S3", "status": "in_progress"})),
            ToolOutcome::StepUpdate(StepUpdate {
                id: "S3".to_owned(),
                status: StepUpdateStatus::InProgress,
                evidence: None,
                reason: None,
            })
        );
        assert_eq!(
            run(
                &json!({"id": " S12.4 ", "status": "done", "evidence": " cargo test: 12 passed\n", "reason": " "})
            ),
            ToolOutcome::StepUpdate(StepUpdate {
                id: "S12.4".to_owned(),
                status: StepUpdateStatus::Done,
                evidence: Some("cargo test: 12 passed".to_owned()),
                reason: None,
            })
        );
        assert_eq!(
            run(
                &json!({"id": "S1", "status": "blocked", "reason": "needs a DB password", "evidence": null})
            ),
            ToolOutcome::StepUpdate(StepUpdate {
                id: "S1".to_owned(),
                status: StepUpdateStatus::Blocked,
                evidence: None,
                reason: Some("needs a DB password".to_owned()),
            })
        );
    }

    #[test]
    fn step_ids() {
        for id in ["S1", "S9", "S10", "S3.1", "S12.34"] {
            assert!(is_step_id(id), "{id}");
        }
        for id in [
            "",
            "S",
            "s1",
            "1",
            "S0",
            "S01",
            "S1.",
            "S.1",
            "S1.0",
            "S1.2.3",
            "S-1",
            "S1a",
            "S 1",
            "step 1",
            "S1234567890",
        ] {
            assert!(!is_step_id(id), "{id}");
        }
    }

    #[test]
    fn invalid_updates() {
        let cases = [
            (
                json!({"id": "3", "status": "done"}),
                "update_step was not accepted; fix this and call update_step again:\n- `3` is not a step id; step ids look like `S3` or `S3.1`, as in TODO.md",
            ),
            (
                json!({"id": "S2", "status": "blocked", "reason": "  "}),
                "update_step was not accepted; fix this and call update_step again:\n- `blocked` needs a `reason`: say what stops the step and what would unblock it",
            ),
            (
                json!({"id": "x", "status": "blocked"}),
                "update_step was not accepted; fix this and call update_step again:\n- `x` is not a step id; step ids look like `S3` or `S3.1`, as in TODO.md\n- `blocked` needs a `reason`: say what stops the step and what would unblock it",
            ),
            (
                json!({"id": "S1", "status": "finished"}),
                "invalid arguments for update_step: unknown variant `finished`, expected one of `in_progress`, `done`, `blocked`",
            ),
            (
                json!({"id": "S1", "status": "done", "notes": "x"}),
                "invalid arguments for update_step: unknown field `notes`, expected one of `id`, `status`, `evidence`, `reason`",
            ),
            (
                json!({"status": "done"}),
                "invalid arguments for update_step: missing field `id`",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(run(&args), ToolOutcome::error(expected), "{args}");
        }
    }
}
