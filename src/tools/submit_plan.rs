//! `submit_plan`: the only way a planning turn produces a plan.
//!
//! The arguments are parsed strictly (unknown fields refused at every level) and then checked
//! for what a schema cannot say: one-line titles, no control characters (a terminal would act
//! on them when the plan is shown), step ids that exist, dependencies only on earlier steps.
//! All problems are reported at once, so the model can fix them in one retry.
//! The handler returns a typed [`PlanSubmission`]; writing PLAN.md is the caller's job.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ToolOutcome, null_as_empty, parse_args, trim_in_place};
use crate::llm::ToolSpec;

pub const NAME: &str = "submit_plan";

/// How risky a step is, as the planner judges it: the same levels TODO.md's `risk:` takes.
pub use crate::plan::Risk;

/// A plan as the model submitted it, validated. Steps have no ids of their own: the n-th step
/// is `S<n>` (see [`PlanSubmission::step_id`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSubmission {
    pub title: String,
    pub summary: String,
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub assumptions: Vec<String>,
    pub steps: Vec<PlanStep>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub risks: Vec<String>,
    #[serde(default)]
    pub verification: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub out_of_scope: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub open_questions: Vec<String>,
}

/// One step of a submitted plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub title: String,
    /// Paths or globs relative to the workspace root.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub files: Vec<String>,
    /// Commands that check the step.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub verify: Vec<String>,
    #[serde(default)]
    pub done_when: Option<String>,
    #[serde(default)]
    pub risk: Option<Risk>,
    /// Ids (`S1`, `S2`, ...) of earlier steps.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub depends: Vec<String>,
    /// The MCP tools the step needs, qualified `server.tool`; during the step only these are
    /// offered.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tools: Vec<String>,
}

/// A submitted plan is drafted as PLAN.md by [`crate::tasks::render::plan_body`].
impl<'a> From<&'a PlanSubmission> for crate::tasks::render::PlanInput<'a> {
    fn from(plan: &'a PlanSubmission) -> Self {
        Self {
            title: &plan.title,
            summary: &plan.summary,
            context: plan.context.as_deref(),
            assumptions: &plan.assumptions,
            steps: plan
                .steps
                .iter()
                .map(|step| crate::tasks::render::StepInput {
                    title: &step.title,
                    files: &step.files,
                    verify: &step.verify,
                    done_when: step.done_when.as_deref(),
                    risk: step.risk,
                    depends: &step.depends,
                    tools: &step.tools,
                })
                .collect(),
            risks: &plan.risks,
            verification: plan.verification.as_deref(),
            out_of_scope: &plan.out_of_scope,
            open_questions: &plan.open_questions,
        }
    }
}

impl PlanSubmission {
    /// The id of the step at `index` (0-based): `S1` for the first.
    pub fn step_id(index: usize) -> String {
        format!("S{}", index + 1)
    }

    /// Parse and validate `submit_plan` arguments; the error text is written for the model.
    pub fn from_arguments(arguments: &serde_json::Value) -> Result<Self, String> {
        let plan: Self = parse_args(NAME, arguments)?;
        plan.validated()
    }

    /// Check what the schema cannot express, and tidy what is harmless to tidy (surrounding
    /// whitespace, blank list items, repeated dependencies).
    fn validated(mut self) -> Result<Self, String> {
        let mut problems = Vec::new();
        trim_in_place(&mut self.title);
        trim_in_place(&mut self.summary);
        check_one_line("the plan's `title`", &self.title, &mut problems);
        check_controls("the plan's `title`", &mut self.title, &mut problems);
        check_controls("`summary`", &mut self.summary, &mut problems);
        if self.summary.is_empty() {
            problems
                .push("`summary` is empty; say in a few sentences what the plan does".to_owned());
        }
        for (list, name) in [
            (&mut self.assumptions, "`assumptions`"),
            (&mut self.risks, "`risks`"),
            (&mut self.out_of_scope, "`out_of_scope`"),
            (&mut self.open_questions, "`open_questions`"),
        ] {
            tidy(list);
            for item in list.iter_mut() {
                check_controls(name, item, &mut problems);
            }
        }
        for (text, name) in [
            (&mut self.context, "`context`"),
            (&mut self.verification, "`verification`"),
        ] {
            if let Some(value) = text {
                trim_in_place(value);
                check_controls(name, value, &mut problems);
            }
            if text.as_deref() == Some("") {
                *text = None;
            }
        }
        if self.steps.is_empty() {
            problems.push(
                "`steps` is empty; a plan needs at least one step, each small and verifiable"
                    .to_owned(),
            );
        }
        let count = self.steps.len();
        for (index, step) in self.steps.iter_mut().enumerate() {
            let id = Self::step_id(index);
            step.validate(&id, index, count, &mut problems);
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            let mut message = format!(
                "{NAME} was not accepted; fix {} and call {NAME} again:",
                if problems.len() == 1 { "this" } else { "these" }
            );
            for problem in problems {
                message.push_str("\n- ");
                message.push_str(&problem);
            }
            Err(message)
        }
    }
}

impl PlanStep {
    fn validate(&mut self, id: &str, index: usize, count: usize, problems: &mut Vec<String>) {
        self.validate_fields(id, problems);
        self.validate_depends(id, index, count, problems);
    }

    /// Checks and tidies everything but `depends` (whose ids mean different things to
    /// `submit_plan` and `propose_replan`); problems name the step as `label`.
    pub(crate) fn validate_fields(&mut self, label: &str, problems: &mut Vec<String>) {
        let id = label;
        trim_in_place(&mut self.title);
        check_one_line(&format!("{id} `title`"), &self.title, problems);
        check_controls(&format!("{id} `title`"), &mut self.title, problems);
        tidy(&mut self.files);
        tidy(&mut self.verify);
        tidy(&mut self.tools);
        for (list, name) in [
            (&mut self.files, "files"),
            (&mut self.verify, "verify"),
            (&mut self.depends, "depends"),
            (&mut self.tools, "tools"),
        ] {
            for item in list.iter_mut() {
                check_controls(&format!("{id} `{name}`"), item, problems);
            }
        }
        for file in &self.files {
            if let Some(problem) = file_problem(file) {
                problems.push(format!("{id} `files`: `{file}` {problem}"));
            }
        }
        for (at, tool) in self.tools.iter().enumerate() {
            if let Some(problem) = crate::tasks::todo_md::tool_name_problem(tool) {
                problems.push(format!("{id} `tools`: `{tool}` {problem}"));
            } else if self.tools[..at].contains(tool) {
                problems.push(format!(
                    "{id} `tools`: `{tool}` is listed twice; list it once"
                ));
            }
        }
        for command in &self.verify {
            if command.contains('\n') {
                problems.push(format!(
                    "{id} `verify`: `{}` spans several lines; give each command as its own one-line item",
                    command.lines().next().unwrap_or_default()
                ));
            }
        }
        if let Some(done_when) = &mut self.done_when {
            trim_in_place(done_when);
            if done_when.contains('\n') {
                problems.push(format!("{id} `done_when` must be one line"));
            }
            check_controls(&format!("{id} `done_when`"), done_when, problems);
        }
        if self.done_when.as_deref() == Some("") {
            self.done_when = None;
        }
    }

    /// `depends` as `submit_plan` numbers it: by position in the submission.
    fn validate_depends(
        &mut self,
        id: &str,
        index: usize,
        count: usize,
        problems: &mut Vec<String>,
    ) {
        let mut depends: Vec<String> = Vec::new();
        for dependency in &self.depends {
            let dependency = dependency.trim();
            match parse_step_id(dependency) {
                None => problems.push(format!(
                    "{id} `depends`: `{dependency}` is not a step id; use ids like `S1` (steps are numbered S1, S2, ... in the order given)"
                )),
                Some(n) if n == index + 1 => {
                    problems.push(format!("{id} depends on itself; remove `{dependency}`"));
                }
                Some(n) if n > count => problems.push(format!(
                    "{id} `depends`: {dependency} does not exist; the steps are S1 to S{count}"
                )),
                Some(n) if n > index + 1 => problems.push(format!(
                    "{id} depends on {dependency}, which comes later; a step may depend only on earlier steps, so reorder the steps or drop the dependency"
                )),
                Some(n) => {
                    let canonical = format!("S{n}");
                    if !depends.contains(&canonical) {
                        depends.push(canonical);
                    }
                }
            }
        }
        self.depends = depends;
    }
}

/// `S<n>` with n ≥ 1 and no leading zeros, so one step has one spelling.
fn parse_step_id(text: &str) -> Option<usize> {
    let digits = text.strip_prefix('S')?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn check_one_line(what: &str, text: &str, problems: &mut Vec<String>) {
    if text.is_empty() {
        problems.push(format!("{what} is empty"));
    } else if text.contains('\n') {
        problems.push(format!(
            "{what} must be one line; put the details in the summary, `done_when` or `context`"
        ));
    }
}

/// Refuses a control character other than newline and tab in `text`, the field `what`, as
/// newlines are refused where a field is one line: shown on a terminal (the review, `tick
/// show`, the run), an escape sequence would act instead of being read, and could hide part
/// of a verify command from the person approving it. A Windows line end (`\r\n`) is only a
/// line end: it is tidied to `\n` first.
pub(super) fn check_controls(what: &str, text: &mut String, problems: &mut Vec<String>) {
    if text.contains("\r\n") {
        *text = text.replace("\r\n", "\n");
    }
    if let Some(c) = crate::text::first_hidden_control(text) {
        problems.push(format!(
            "{what} contains the control character `{}` (U+{:04X}); write plain text without \
             escape sequences or other control characters",
            crate::text::caret(c),
            u32::from(c)
        ));
    }
}

/// Trim items and drop blank ones: an empty string in a list carries nothing.
fn tidy(list: &mut Vec<String>) {
    for item in list.iter_mut() {
        trim_in_place(item);
    }
    list.retain(|item| !item.is_empty());
}

/// Why `file` cannot be a step's file entry, if it cannot. Globs are allowed; only the shape
/// of the path is checked, since the files a step creates do not exist yet.
fn file_problem(file: &str) -> Option<&'static str> {
    if file.contains(['\n', '\0']) {
        return Some("must be one path on one line");
    }
    let path = Path::new(file);
    if path.is_absolute() || file.starts_with('/') {
        return Some("is absolute; list paths relative to the workspace root");
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Some("contains `..`; list paths inside the workspace, relative to its root");
    }
    None
}

/// The JSON schema of a list of strings, with its `description`.
fn strings(description: &str) -> serde_json::Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// The JSON schema of one [`PlanStep`], shared by `submit_plan` and `propose_replan`; only
/// the hints for `verify` and `depends` differ between the two tools.
pub(super) fn step_schema(verify: &str, depends: &str) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "One-line title of the step."},
            "files": strings("Files (or globs) the step touches, relative to the workspace root."),
            "verify": strings(verify),
            "done_when": {"type": "string", "description": "One line saying when the step is done."},
            "risk": {"type": "string", "enum": ["low", "medium", "high"]},
            "depends": strings(depends),
            "tools": strings("MCP tools the step needs, qualified as `server.tool` (e.g. `github.create_issue`); only these are offered during the step. Omit when the step needs none.")
        },
        "required": ["title"],
        "additionalProperties": false
    })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Submit the finished plan for the person's review. This is the only way to \
                      deliver a plan: a plan written as a chat message does not count. Steps are \
                      numbered S1, S2, ... in the order given; each should be small, name the \
                      files it touches, and say how to verify it with a command that can run in \
                      this repository. Call it once the plan is complete; if it is refused, fix \
                      the listed problems and call it again."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Short one-line title of the plan."},
                "summary": {"type": "string", "description": "What the plan does and why, in a few sentences."},
                "context": {"type": "string", "description": "What you found in the repository that the plan relies on: entry points, callers, tests, build files."},
                "assumptions": strings("Assumptions you made where the code could not settle a question."),
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "description": "The ordered steps; the first is S1.",
                    "items": step_schema(
                        "Commands that check the step, e.g. `cargo test login`; each must run in this repository.",
                        "Ids of earlier steps this one needs, e.g. [\"S1\"]."
                    )
                },
                "risks": strings("What could go wrong."),
                "verification": {"type": "string", "description": "How the whole change is verified at the end."},
                "out_of_scope": strings("What the plan deliberately does not do."),
                "open_questions": strings("Questions for the person that remain open.")
            },
            "required": ["title", "summary", "steps"],
            "additionalProperties": false
        }),
    }
}

pub fn run(arguments: &serde_json::Value) -> ToolOutcome {
    match PlanSubmission::from_arguments(arguments) {
        Ok(plan) => ToolOutcome::Plan(plan),
        Err(message) => ToolOutcome::error(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(arguments: &serde_json::Value) -> String {
        match PlanSubmission::from_arguments(arguments) {
            Ok(plan) => panic!("accepted {plan:?}"),
            Err(e) => e,
        }
    }

    fn minimal() -> serde_json::Value {
        json!({
            "title": "Refactor login",
            "summary": "Move login into its own module.",
            "steps": [{"title": "Find callers"}]
        })
    }

    #[test]
    fn full_plan_is_accepted_and_tidied() {
        let plan = PlanSubmission::from_arguments(&json!({
            "title": "  Refactor login module ",
            "summary": "Keep the old API, add tests.",
            "context": "login lives in src/login.ts",
            "assumptions": ["node 20", " "],
            "steps": [
                {"title": "Find callers", "files": ["src/routes.ts", "src/login.ts"],
                 "verify": ["npm test -- login"], "done_when": "every caller is listed", "risk": "low"},
                {"title": "Add compat layer", "files": ["src/compat/**"], "risk": "high",
                 "depends": ["S1", "S1"]},
                {"title": "Run the suite", "verify": ["npm test"], "depends": ["S1", "S2"],
                 "done_when": null, "files": null}
            ],
            "risks": ["sessions break"],
            "verification": "npm test",
            "out_of_scope": ["new login UI"],
            "open_questions": null
        }))
        .unwrap();
        assert_eq!(plan.title, "Refactor login module");
        assert_eq!(plan.assumptions, ["node 20"]);
        assert_eq!(plan.steps.len(), 3);
        assert_eq!(plan.steps[0].risk, Some(Risk::Low));
        assert_eq!(plan.steps[1].depends, ["S1"]);
        assert_eq!(plan.steps[2].depends, ["S1", "S2"]);
        assert!(plan.steps[2].files.is_empty());
        assert!(plan.open_questions.is_empty());
        assert_eq!(PlanSubmission::step_id(2), "S3");
        // The value round-trips through its own serialisation.
        let again: PlanSubmission =
            serde_json::from_value(serde_json::to_value(&plan).unwrap()).unwrap();
        assert_eq!(again, plan);
    }

    #[test]
    fn minimal_plan_is_accepted() {
        let plan = PlanSubmission::from_arguments(&minimal()).unwrap();
        assert_eq!(plan.steps[0].title, "Find callers");
        assert_eq!(run(&minimal()), ToolOutcome::Plan(plan));
    }

    #[test]
    fn unknown_fields_are_refused_at_every_level() {
        let mut top = minimal();
        top["priority"] = json!("high");
        insta::assert_snapshot!(error(&top), @"invalid arguments for submit_plan: unknown field `priority`, expected one of `title`, `summary`, `context`, `assumptions`, `steps`, `risks`, `verification`, `out_of_scope`, `open_questions`");
        let mut step = minimal();
        step["steps"][0]["id"] = json!("S1");
        insta::assert_snapshot!(error(&step), @"invalid arguments for submit_plan: unknown field `id`, expected one of `title`, `files`, `verify`, `done_when`, `risk`, `depends`, `tools`");
    }

    #[test]
    fn schema_errors() {
        let mut risk = minimal();
        risk["steps"][0]["risk"] = json!("extreme");
        insta::assert_snapshot!(error(&risk), @"invalid arguments for submit_plan: unknown variant `extreme`, expected one of `low`, `medium`, `high`");
        let mut missing = minimal();
        missing.as_object_mut().unwrap().remove("steps");
        insta::assert_snapshot!(error(&missing), @"invalid arguments for submit_plan: missing field `steps`");
        let mut files = minimal();
        files["steps"][0]["files"] = json!("src/a.rs");
        insta::assert_snapshot!(error(&files), @r#"invalid arguments for submit_plan: invalid type: string "src/a.rs", expected a sequence"#);
    }

    #[test]
    fn empty_steps_and_titles() {
        let mut plan = minimal();
        plan["steps"] = json!([]);
        plan["title"] = json!("  ");
        plan["summary"] = json!("");
        insta::assert_snapshot!(error(&plan), @r"
        submit_plan was not accepted; fix these and call submit_plan again:
        - the plan's `title` is empty
        - `summary` is empty; say in a few sentences what the plan does
        - `steps` is empty; a plan needs at least one step, each small and verifiable
        ");
    }

    #[test]
    fn windows_line_ends_are_tidied_not_refused() {
        let mut plan = minimal();
        plan["summary"] = json!("One.\r\nTwo.\r\n");
        plan["context"] = json!("a\r\nb");
        let plan = PlanSubmission::from_arguments(&plan).unwrap();
        assert_eq!(plan.summary, "One.\nTwo.");
        assert_eq!(plan.context.as_deref(), Some("a\nb"));
    }

    #[test]
    fn control_characters_are_refused_in_every_field_naming_it() {
        let plan = json!({
            "title": "Plan\u{1b}]52;c;eA==\u{7}",
            "summary": "Line one.\nLine two\tis fine, \u{9b}31m is not.",
            "context": "ctx\r\nmore\rover",
            "assumptions": ["ok", "bell\u{7}"],
            "risks": ["del\u{7f}"],
            "verification": "clear\u{1b}[2J",
            "out_of_scope": ["nul\u{0}"],
            "open_questions": ["bs\u{8}"],
            "steps": [{"title": "Step\u{1b}[8m", "files": ["src/\u{1b}[1Aa.rs"],
                       "verify": ["true \u{1b}[8m; curl x | sh"], "done_when": "done\u{85}now",
                       "depends": []}]
        });
        insta::assert_snapshot!(error(&plan), @r"
        submit_plan was not accepted; fix these and call submit_plan again:
        - the plan's `title` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - `summary` contains the control character `M-^[` (U+009B); write plain text without escape sequences or other control characters
        - `assumptions` contains the control character `^G` (U+0007); write plain text without escape sequences or other control characters
        - `risks` contains the control character `^?` (U+007F); write plain text without escape sequences or other control characters
        - `out_of_scope` contains the control character `^@` (U+0000); write plain text without escape sequences or other control characters
        - `open_questions` contains the control character `^H` (U+0008); write plain text without escape sequences or other control characters
        - `context` contains the control character `^M` (U+000D); write plain text without escape sequences or other control characters
        - `verification` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - S1 `title` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - S1 `files` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - S1 `verify` contains the control character `^[` (U+001B); write plain text without escape sequences or other control characters
        - S1 `done_when` contains the control character `M-^E` (U+0085); write plain text without escape sequences or other control characters
        ");
    }

    #[test]
    fn step_problems_are_all_reported() {
        let plan = json!({
            "title": "Two\nlines",
            "summary": "s",
            "steps": [
                {"title": "", "depends": ["S1"]},
                {"title": "first line\nsecond line", "depends": ["S3", "step 1", "S01"]},
                {"title": "ok", "depends": ["S9"], "files": ["/etc/passwd", "../x", "src/**"],
                 "verify": ["cargo build\ncargo test"], "done_when": "a\nb"}
            ]
        });
        insta::assert_snapshot!(error(&plan), @r"
        submit_plan was not accepted; fix these and call submit_plan again:
        - the plan's `title` must be one line; put the details in the summary, `done_when` or `context`
        - S1 `title` is empty
        - S1 depends on itself; remove `S1`
        - S2 `title` must be one line; put the details in the summary, `done_when` or `context`
        - S2 depends on S3, which comes later; a step may depend only on earlier steps, so reorder the steps or drop the dependency
        - S2 `depends`: `step 1` is not a step id; use ids like `S1` (steps are numbered S1, S2, ... in the order given)
        - S2 `depends`: `S01` is not a step id; use ids like `S1` (steps are numbered S1, S2, ... in the order given)
        - S3 `files`: `/etc/passwd` is absolute; list paths relative to the workspace root
        - S3 `files`: `../x` contains `..`; list paths inside the workspace, relative to its root
        - S3 `verify`: `cargo build` spans several lines; give each command as its own one-line item
        - S3 `done_when` must be one line
        - S3 `depends`: S9 does not exist; the steps are S1 to S3
        ");
    }

    #[test]
    fn a_step_names_its_mcp_tools_qualified_and_once() {
        let mut plan = minimal();
        plan["steps"][0]["tools"] = json!([" github.create_issue ", "", "docs.search"]);
        let accepted = PlanSubmission::from_arguments(&plan).unwrap();
        assert_eq!(
            accepted.steps[0].tools,
            ["github.create_issue", "docs.search"]
        );
        // Serialised without `tools` when a step has none, with them when it has.
        let none = PlanSubmission::from_arguments(&minimal()).unwrap();
        assert!(
            serde_json::to_value(&none.steps[0])
                .unwrap()
                .get("tools")
                .is_none()
        );
        let again: PlanSubmission =
            serde_json::from_value(serde_json::to_value(&accepted).unwrap()).unwrap();
        assert_eq!(again, accepted);
        plan["steps"][0]["tools"] = json!(["create_issue", "git hub.x", "a.b", "a.b", ".x"]);
        insta::assert_snapshot!(error(&plan), @r"
        submit_plan was not accepted; fix these and call submit_plan again:
        - S1 `tools`: `create_issue` is not a qualified tool name (`server.tool`)
        - S1 `tools`: `git hub.x` is not a tool name; a server name is letters, digits, `_` and `-`, then `.` and the tool's name
        - S1 `tools`: `a.b` is listed twice; list it once
        - S1 `tools`: `.x` is not a tool name; a server name is letters, digits, `_` and `-`, then `.` and the tool's name
        ");
        assert_eq!(
            spec().parameters["properties"]["steps"]["items"]["properties"]["tools"]["type"],
            json!("array")
        );
    }

    #[test]
    fn one_problem_reads_in_the_singular() {
        let mut plan = minimal();
        plan["steps"][0]["depends"] = json!(["S2"]);
        assert_eq!(
            error(&plan),
            "submit_plan was not accepted; fix this and call submit_plan again:\n- S1 `depends`: S2 does not exist; the steps are S1 to S1"
        );
    }

    #[test]
    fn run_turns_errors_into_model_fixable_output() {
        let outcome = run(&json!({"title": "x"}));
        assert_eq!(
            outcome,
            ToolOutcome::error("invalid arguments for submit_plan: missing field `summary`")
        );
    }

    #[test]
    fn spec_is_strict_at_every_level() {
        let spec = spec();
        assert_eq!(spec.name, NAME);
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        assert_eq!(
            spec.parameters["properties"]["steps"]["items"]["additionalProperties"],
            json!(false)
        );
    }
}
