//! `propose_replan`: how the executor asks for a *local* change to the approved plan (DESIGN
//! §3, "Blocked is not the end"): the step it is working on is rewritten (or split into a
//! few) and a few new prerequisite steps go right before it.
//!
//! The handler only parses and tidies the proposal, with the same step shape and checks as
//! `submit_plan`. Whether it fits the task (the step being executed, steps that exist, the
//! count limit) needs the plan, so the runner decides that
//! ([`crate::planning::replan::check_local`]); a proposal it accepts stops the run until a
//! person approves the new plan. Nothing here writes.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::submit_plan::{PlanStep, check_controls, step_schema};
use super::{ToolOutcome, null_as_empty, parse_args, trim_in_place};
use crate::llm::ToolSpec;

pub const NAME: &str = "propose_replan";

/// A proposal as the model made it, parsed and tidied; not yet checked against the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplanProposal {
    /// The id of the step being executed, e.g. `S3`.
    pub step: String,
    /// Why the step cannot be done as planned; shown to the person and logged.
    pub reason: String,
    /// The step's new content: one step, or a split into a few (in order).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub replace: Vec<PlanStep>,
    /// New steps that must be done first, in order; they go right before the step.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub insert_before: Vec<PlanStep>,
}

impl ReplanProposal {
    /// Parse `propose_replan` arguments and check each step as `submit_plan` does (titles,
    /// files, verify, done when); `depends` is checked against the plan later. The error
    /// text is written for the model.
    pub fn from_arguments(arguments: &serde_json::Value) -> Result<Self, String> {
        let mut proposal: Self = parse_args(NAME, arguments)?;
        trim_in_place(&mut proposal.step);
        trim_in_place(&mut proposal.reason);
        let mut problems = Vec::new();
        check_controls("`step`", &mut proposal.step, &mut problems);
        check_controls("`reason`", &mut proposal.reason, &mut problems);
        if proposal.reason.is_empty() {
            problems
                .push("`reason` is empty; say why the step cannot be done as planned".to_owned());
        }
        for (list, name) in [
            (&mut proposal.insert_before, "insert_before"),
            (&mut proposal.replace, "replace"),
        ] {
            for (index, step) in list.iter_mut().enumerate() {
                step.validate_fields(&format!("`{name}[{index}]`"), &mut problems);
                for dependency in &mut step.depends {
                    trim_in_place(dependency);
                }
                step.depends.retain(|d| !d.is_empty());
            }
        }
        if problems.is_empty() {
            Ok(proposal)
        } else {
            Err(refusal(&problems))
        }
    }
}

/// The error result for a proposal with `problems`: each on its own line, all at once.
pub fn refusal(problems: &[String]) -> String {
    format!(
        "{NAME} was not accepted and nothing was changed; fix {} and call {NAME} again, or \
         report the step blocked with `update_step`:\n- {}",
        if problems.len() == 1 { "this" } else { "these" },
        problems.join("\n- ")
    )
}

pub fn spec() -> ToolSpec {
    let step = step_schema(
        "Commands that check the step; each must run in this repository.",
        "Ids of existing steps before this one that it needs, e.g. [\"S1\"].",
    );
    ToolSpec {
        name: NAME.to_owned(),
        description: "Propose a local change to the approved plan when the step you are working \
                      on cannot be done as planned but a small change would fix it: rewrite \
                      your step (`replace`: its new content, or a split into a few steps) and \
                      add a few new steps that must come first (`insert_before`). Only your own \
                      step can change; every other step stays as it is. An accepted proposal \
                      ends your turn and stops the run until a person approves the new plan; \
                      a refused one says what is wrong. If no plan change would help, report \
                      the step blocked with `update_step` instead."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "step": {
                    "type": "string",
                    "pattern": "^S[1-9][0-9]*(\\.[1-9][0-9]*)?$",
                    "description": "The id of the step you are working on, e.g. `S3`."
                },
                "reason": {"type": "string", "description": "Why the step cannot be done as planned, in a sentence the person reads."},
                "replace": {
                    "type": "array",
                    "minItems": 1,
                    "description": "The step's new content, in order: one step, or a split into a few.",
                    "items": step.clone()
                },
                "insert_before": {
                    "type": "array",
                    "description": "New steps to do first, in order; they go right before the step.",
                    "items": step
                }
            },
            "required": ["step", "reason", "replace"],
            "additionalProperties": false
        }),
    }
}

pub fn run(arguments: &serde_json::Value) -> ToolOutcome {
    match ReplanProposal::from_arguments(arguments) {
        Ok(proposal) => ToolOutcome::Replan(proposal),
        Err(message) => ToolOutcome::error(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(arguments: &serde_json::Value) -> String {
        match ReplanProposal::from_arguments(arguments) {
            Ok(proposal) => panic!("accepted {proposal:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_proposal_is_parsed_and_tidied() {
        let outcome = run(&json!({
            "step": " S3 ",
            "reason": " the config file does not exist yet ",
            "replace": [{"title": " Write the farewell ", "files": ["bye.txt", " "], "depends": [" S1 "]}],
            "insert_before": [{"title": "Add the config file", "verify": ["test -f greet.conf"]}]
        }));
        let ToolOutcome::Replan(proposal) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(proposal.step, "S3");
        assert_eq!(proposal.reason, "the config file does not exist yet");
        assert_eq!(proposal.replace[0].title, "Write the farewell");
        assert_eq!(proposal.replace[0].files, ["bye.txt"]);
        assert_eq!(proposal.replace[0].depends, ["S1"]);
        assert_eq!(proposal.insert_before[0].verify, ["test -f greet.conf"]);
    }

    #[test]
    fn unknown_fields_are_refused_at_every_level() {
        insta::assert_snapshot!(
            error(&json!({"step": "S3", "reason": "r", "replace": [{"title": "t"}], "remove": ["S4"]})),
            @"invalid arguments for propose_replan: unknown field `remove`, expected one of `step`, `reason`, `replace`, `insert_before`"
        );
        insta::assert_snapshot!(
            error(&json!({"step": "S3", "reason": "r", "replace": [{"title": "t", "id": "S3"}]})),
            @"invalid arguments for propose_replan: unknown field `id`, expected one of `title`, `files`, `verify`, `done_when`, `risk`, `depends`, `tools`"
        );
    }

    #[test]
    fn step_problems_are_reported_as_submit_plan_reports_them() {
        insta::assert_snapshot!(error(&json!({
            "step": "S3",
            "reason": "  ",
            "replace": [{"title": "two\nlines", "files": ["/etc/passwd"]}],
            "insert_before": [{"title": "", "verify": ["a\nb"]}]
        })), @r"
        propose_replan was not accepted and nothing was changed; fix these and call propose_replan again, or report the step blocked with `update_step`:
        - `reason` is empty; say why the step cannot be done as planned
        - `insert_before[0]` `title` is empty
        - `insert_before[0]` `verify`: `a` spans several lines; give each command as its own one-line item
        - `replace[0]` `title` must be one line; put the details in the summary, `done_when` or `context`
        - `replace[0]` `files`: `/etc/passwd` is absolute; list paths relative to the workspace root
        ");
    }

    #[test]
    fn control_characters_are_refused_naming_the_field() {
        insta::assert_snapshot!(error(&json!({
            "step": "S3",
            "reason": "it fails \u{1b}]52;c;eA==\u{7}",
            "replace": [{"title": "t", "verify": ["make \u{1b}[8m; rm -rf ~"]}],
        })), @r"
        propose_replan was not accepted and nothing was changed; fix these and call propose_replan again, or report the step blocked with `update_step`:
        - `reason` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - `replace[0]` `verify` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        ");
    }

    #[test]
    fn spec_is_strict_at_every_level() {
        let spec = spec();
        assert_eq!(spec.name, NAME);
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        for list in ["replace", "insert_before"] {
            assert_eq!(
                spec.parameters["properties"][list]["items"]["additionalProperties"],
                json!(false)
            );
        }
    }
}
