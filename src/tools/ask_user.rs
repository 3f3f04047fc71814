//! `ask_user`: questions from the planner that only the person can answer.
//!
//! The handler only validates and returns typed [`Questions`]; whether they are asked in a
//! terminal or written to the draft's open questions is the caller's decision.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::submit_plan::check_controls;
use super::{ToolOutcome, null_as_empty, parse_args, trim_in_place};
use crate::llm::ToolSpec;

pub const NAME: &str = "ask_user";

/// The questions of one `ask_user` call, at least one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Questions {
    pub questions: Vec<Question>,
}

/// One question for the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub question: String,
    /// Why the answer matters for the plan.
    #[serde(default)]
    pub why: Option<String>,
    /// Suggested answers; the person may answer otherwise.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub options: Vec<String>,
    /// Whether planning cannot go on without the answer. A question the model did not mark
    /// is taken as blocking: it chose to ask, so the person should see it.
    #[serde(default = "blocking_by_default")]
    pub blocking: bool,
}

fn blocking_by_default() -> bool {
    true
}

impl Questions {
    /// Parse and validate `ask_user` arguments; the error text is written for the model.
    pub fn from_arguments(arguments: &serde_json::Value) -> Result<Self, String> {
        let mut questions: Self = parse_args(NAME, arguments)?;
        let mut problems = Vec::new();
        if questions.questions.is_empty() {
            problems.push("`questions` is empty; ask at least one question, or carry on with the plan and record your assumptions".to_owned());
        }
        for (index, question) in questions.questions.iter_mut().enumerate() {
            trim_in_place(&mut question.question);
            let n = index + 1;
            if question.question.is_empty() {
                problems.push(format!("question {n} is empty"));
            }
            check_controls(
                &format!("question {n}"),
                &mut question.question,
                &mut problems,
            );
            if let Some(why) = &mut question.why {
                trim_in_place(why);
                check_controls(&format!("question {n} `why`"), why, &mut problems);
            }
            if question.why.as_deref() == Some("") {
                question.why = None;
            }
            for option in &mut question.options {
                trim_in_place(option);
                check_controls(&format!("question {n} `options`"), option, &mut problems);
            }
            question.options.retain(|option| !option.is_empty());
        }
        if problems.is_empty() {
            Ok(questions)
        } else {
            Err(format!(
                "{NAME} was not accepted; fix this and call {NAME} again:\n- {}",
                problems.join("\n- ")
            ))
        }
    }
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Ask the person questions that the repository cannot answer: decisions, \
                      preferences, missing credentials or facts. Answer from the code what the \
                      code can answer; do not ask for permission to continue. Mark a question \
                      `blocking: false` if you can plan on with a stated assumption."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The question, in one or two sentences."},
                            "why": {"type": "string", "description": "Why the answer changes the plan."},
                            "options": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers, if there are a few natural ones."},
                            "blocking": {"type": "boolean", "description": "Whether planning cannot go on without the answer. Default true."}
                        },
                        "required": ["question"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        }),
    }
}

pub fn run(arguments: &serde_json::Value) -> ToolOutcome {
    match Questions::from_arguments(arguments) {
        Ok(questions) => ToolOutcome::Questions(questions),
        Err(message) => ToolOutcome::error(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_questions() {
        let outcome = run(&json!({"questions": [
            {"question": " Which database? ", "why": "the migration differs", "options": ["postgres", "", "sqlite"]},
            {"question": "Keep the old endpoint?", "blocking": false, "why": " ", "options": null}
        ]}));
        let ToolOutcome::Questions(questions) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(
            questions.questions,
            [
                Question {
                    question: "Which database?".to_owned(),
                    why: Some("the migration differs".to_owned()),
                    options: vec!["postgres".to_owned(), "sqlite".to_owned()],
                    blocking: true,
                },
                Question {
                    question: "Keep the old endpoint?".to_owned(),
                    why: None,
                    options: vec![],
                    blocking: false,
                },
            ]
        );
    }

    #[test]
    fn invalid_questions() {
        let cases = [
            (
                json!({"questions": []}),
                "ask_user was not accepted; fix this and call ask_user again:\n- `questions` is empty; ask at least one question, or carry on with the plan and record your assumptions",
            ),
            (
                json!({"questions": [{"question": "ok"}, {"question": "  "}]}),
                "ask_user was not accepted; fix this and call ask_user again:\n- question 2 is empty",
            ),
            (
                json!({"questions": [{"question": "Which\u{1b}]52;c;eA==\u{7}?", "why": "w\u{1b}[8m", "options": ["a", "b\rc"]}]}),
                "ask_user was not accepted; fix this and call ask_user again:\n- question 1 contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters\n- question 1 `why` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters\n- question 1 `options` contains the control character `^M` (U+000D); write plain text without escape sequences or other control characters",
            ),
            (
                json!({}),
                "invalid arguments for ask_user: missing field `questions`",
            ),
            (
                json!({"questions": [{"question": "a", "urgent": true}]}),
                "invalid arguments for ask_user: unknown field `urgent`, expected one of `question`, `why`, `options`, `blocking`",
            ),
            (
                json!({"questions": [], "title": "x"}),
                "invalid arguments for ask_user: unknown field `title`, expected `questions`",
            ),
            (
                json!({"questions": ["Which database?"]}),
                "invalid arguments for ask_user: invalid type: string \"Which database?\", expected struct Question",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(run(&args), ToolOutcome::error(expected), "{args}");
        }
    }
}
