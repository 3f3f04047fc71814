//! Planning for small models: a fixed pipeline tick drives, instead of an agent loop a small
//! model cannot hold. This module owns that pipeline and what it needs:
//!
//! - [`context`]: the context tick builds itself (file list, small files whole, outlines of
//!   large ones, files matching the goal first, the repository's test command), within a
//!   token budget sized to the server's context;
//! - [`plan`]: a localize call (`{files_to_read}`) when much of the repository does not fit
//!   (a quarter of the budget or more left out), one plan call with a schema a 1.5B model can
//!   fill, validation against the repository ([`validate`]), and one repair call listing the
//!   problems; what is still wrong is kept as warnings in the draft, never dropped;
//! - [`guards`]: the checks a compact step's edits pass (only the step's files, flexible
//!   search/replace, no definition removed that the step does not name), on the same
//!   [`outline`]s as the context;
//! - [`place`]: where a compact step's `add` puts new code in an existing file (a test into
//!   the test module, a method into its `impl` or class, other code at the end);
//! - [`cache`]: the structured-output method each server got on its last probe;
//! - [`choose`]: which planner `planner: auto` picks.
//!
//! Every call is constrained by a JSON schema the server enforces
//! ([`crate::llm::structured`]), and every answer is checked against it anyway. Each call
//! appends to one conversation, so every request's prefix is byte-identical to the one before
//! it and the server's prompt cache holds. Emits [`CompactEvent`]s; never prints.

pub mod cache;
pub mod context;
pub mod exec;
pub mod flags;
pub mod guards;
pub mod help;
pub mod imports;
pub mod mend;
pub mod outline;
pub mod place;
pub mod repeat;
pub mod setup;
pub mod test_command;
pub mod tool_call;
pub mod validate;

use std::ffi::OsString;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::agent::AgentEvent;
use crate::config::Planner;
use crate::llm::{
    Client, LlmError, Message, Request, Response, StreamEvent, Structured, StructuredMethod, Usage,
};
use crate::tools::PlanSubmission;
use context::{Context, Repo, Shown};
use validate::{DraftPlan, Facts};

/// The system prompt of every compact call: three lines, no example a small model could copy.
pub const PROMPT: &str = include_str!("../../prompts/compact-plan.md");
/// Its name under `.tasks/prompts/`, where a repository may override it.
pub const PROMPT_FILE: &str = "compact-plan.md";

/// Contexts under this many tokens get the compact planner under `planner: auto`.
pub const SMALL_CONTEXT: u32 = 32 * 1024;

/// What `tick plan` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Compact,
    /// The agent loop; with `fallback`, an answer without a tool call switches to compact.
    Agent {
        fallback: bool,
    },
}

/// The planner for `setting`, a server on this machine or not (`loopback`), and the context
/// size the server states (`None`: it does not say).
pub fn choose(setting: Planner, loopback: bool, context_tokens: Option<u32>) -> Choice {
    match setting {
        Planner::Compact => Choice::Compact,
        Planner::Agent => Choice::Agent { fallback: false },
        Planner::Auto => match context_tokens {
            Some(n) if n < SMALL_CONTEXT => Choice::Compact,
            Some(_) => Choice::Agent { fallback: true },
            None if loopback => Choice::Compact,
            None => Choice::Agent { fallback: true },
        },
    }
}

/// Tokens the repository may take in the prompt, from the server's context size: half of it
/// less the answer, at most 1,600 on this machine and 24,000 elsewhere; 8k (local) or 32k
/// (remote) when the server does not say. The local cap is about time, not room: a 1.5B model
/// on one core of a busy 2-core machine reads a prompt at about 17 tokens a second and writes
/// 4, so 1,300 tokens of prompt and a plan of 200 tokens already take about 110 s.
pub fn budget(context_tokens: Option<u32>, loopback: bool) -> usize {
    let total = context_tokens.unwrap_or(if loopback { 8192 } else { 32_768 }) as usize;
    let cap = if loopback { 1600 } else { 24_000 };
    (total / 2)
        .saturating_sub(PLAN_TOKENS as usize)
        .clamp(500, cap)
}

/// Output tokens of the plan call: enough for four steps; the schema's lengths bound it too.
pub const PLAN_TOKENS: u32 = 1200;
const LOCALIZE_TOKENS: u32 = 300;

/// Everything one compact planning run needs besides the client.
#[derive(Debug, Clone)]
pub struct Options {
    pub model: String,
    pub method: StructuredMethod,
    /// The system prompt ([`PROMPT`] or a repository's override).
    pub system: String,
    /// Tokens the repository's part of the prompt may take ([`budget`]).
    pub budget: usize,
    /// The most files the localize call may ask for.
    pub max_read_files: usize,
    /// `PATH`, to check that a verify command's program exists.
    pub path_var: Option<OsString>,
    /// Whether the read-only sandbox can be set up here: only then is a verify program's
    /// `--help` run, to check the options the verify passes it ([`help`]).
    pub read_only_sandbox: bool,
}

/// Which call of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Localize,
    Plan,
    Repair,
}

impl Stage {
    fn schema_name(self) -> &'static str {
        match self {
            Stage::Localize => "files_to_read",
            Stage::Plan | Stage::Repair => "plan",
        }
    }
}

/// What happened during a compact run, for the person watching (or `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum CompactEvent {
    /// The context tick built.
    Context {
        files: usize,
        whole: usize,
        outlined: usize,
        tokens: usize,
        complete: bool,
        test_command: Option<String>,
    },
    /// A request is about to go out.
    Request { stage: Stage, turn: u32 },
    /// Streamed text of the answer.
    Text { text: String },
    /// The files the localize call chose, as read into the plan call.
    Read { files: Vec<String> },
    /// The draft's problems, sent back in the repair call.
    Repair { problems: Vec<String> },
    /// Tokens used so far.
    Usage { usage: Usage },
    /// A failed request is tried again after `wait_ms` (a person sees why nothing comes).
    Retry {
        attempt: u32,
        of: u32,
        wait_ms: u64,
        reason: String,
    },
}

/// The agent event that shows `event` to a person the way the agent loop's are shown.
pub fn agent_event(event: &CompactEvent) -> Option<AgentEvent> {
    Some(match event {
        CompactEvent::Context {
            files,
            whole,
            outlined,
            tokens,
            ..
        } => AgentEvent::ToolCall {
            name: "context".to_owned(),
            detail: format!(
                "{files} files, {whole} whole, {outlined} outlined, about {tokens} tokens"
            ),
        },
        CompactEvent::Request { turn, .. } => AgentEvent::Request { turn: *turn },
        CompactEvent::Text { text } => AgentEvent::Text { text: text.clone() },
        CompactEvent::Read { files } => AgentEvent::ToolCall {
            name: "read_file".to_owned(),
            detail: files.join(", "),
        },
        CompactEvent::Repair { problems } => AgentEvent::Reminder {
            text: format!(
                "The draft has {} the repository contradicts. {}",
                if problems.len() == 1 {
                    "a problem".to_owned()
                } else {
                    format!("{} problems", problems.len())
                },
                problems.join("; ")
            ),
        },
        CompactEvent::Usage { usage } => AgentEvent::Usage { usage: *usage },
        CompactEvent::Retry {
            attempt,
            of,
            wait_ms,
            reason,
        } => AgentEvent::Retry {
            attempt: *attempt,
            of: *of,
            wait_ms: *wait_ms,
            reason: reason.clone(),
        },
    })
}

/// A compact plan: the full `submit_plan` shape, validated as `submit_plan` validates, and
/// what tick's checks still found wrong after the repair (also in its open questions).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactDraft {
    pub submission: PlanSubmission,
    pub warnings: Vec<String>,
    /// The conversation, for `session.jsonl`.
    pub messages: Vec<Message>,
    pub usage: Usage,
    pub requests: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the model's {stage} answer was not usable, even after a repair request: {why}")]
    Unusable { stage: &'static str, why: String },
}

/// The goal of a compact re-plan: the goal and what the person asked of the earlier draft
/// (the pipeline plans afresh; a small model does better without the old draft to copy).
pub fn with_feedback(goal: &str, feedback: Option<&str>) -> String {
    match feedback {
        Some(feedback) => format!(
            "{goal}\n\nA person reviewed an earlier plan for this goal and asks: {}",
            feedback.trim()
        ),
        None => goal.to_owned(),
    }
}

/// Plans `goal` for the repository at `root` with `client`: context, an optional localize
/// call, the plan call, validation, at most one repair call.
#[allow(
    clippy::too_many_lines,
    reason = "the pipeline told in order (context, localize, plan, check, repair); to be split per stage"
)]
pub async fn plan(
    client: &Client,
    root: &Path,
    goal: &str,
    options: &Options,
    sink: &mut (dyn FnMut(CompactEvent) + Send),
) -> Result<CompactDraft, CompactError> {
    let repo = context::scan(root);
    let context = context::build(&repo, goal, options.budget);
    sink(CompactEvent::Context {
        files: repo.files.len(),
        whole: context.count(Shown::Whole),
        outlined: context.count(Shown::Outline),
        tokens: context.tokens,
        complete: context.complete,
        test_command: context.test.as_ref().map(|t| t.command.clone()),
    });
    let mut talk = Conversation {
        client,
        options,
        messages: Vec::new(),
        usage: Usage::default(),
        requests: 0,
    };
    let plan_ask = plan_instruction(&context, goal);
    // A few small files left out (a README, a config) are not worth a call of their own.
    if context.complete || context.left_out < options.budget / 4 {
        talk.messages.push(Message::user(format!(
            "{}\nGoal: {goal}\n\n{plan_ask}",
            context.text
        )));
    } else {
        talk.messages.push(Message::user(format!(
            "{}\nGoal: {goal}\n\n{}",
            context.text,
            localize_instruction(options.max_read_files)
        )));
        let chosen = match talk
            .ask(
                Stage::Localize,
                localize_schema(&context, options.max_read_files),
                LOCALIZE_TOKENS,
                sink,
            )
            .await?
        {
            Ok(value) => value["files_to_read"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Err(_) => Vec::new(),
        };
        // Only text files the first message did not show whole are worth reading.
        let unread = |path: &String| {
            repo.file(path).is_some_and(|f| f.text.is_some())
                && context
                    .files
                    .iter()
                    .any(|(p, shown)| p == path && *shown != Shown::Whole)
        };
        let mut files: Vec<String> = chosen
            .into_iter()
            .filter(|p| unread(p))
            .take(options.max_read_files)
            .collect();
        // The model chose nothing usable: the files the goal names are the best guess.
        if files.is_empty() {
            files = context
                .matched
                .iter()
                .filter(|p| unread(p))
                .take(options.max_read_files)
                .cloned()
                .collect();
        }
        // What the first message left of the budget, and at least a third of it: the prompt
        // stays near the budget, which on this machine is about time.
        let room = options
            .budget
            .saturating_sub(context.tokens)
            .max(options.budget / 3);
        let (text, read) = context::read_files(&repo, &context, &files, room);
        sink(CompactEvent::Read { files: read });
        talk.messages
            .push(Message::user(format!("{text}{plan_ask}")));
    }

    let schema = plan_schema(&repo);
    let first = talk
        .ask(Stage::Plan, schema.clone(), PLAN_TOKENS, sink)
        .await?;
    let facts_on_path = |program: &str| on_path(options.path_var.as_deref(), program);
    let prompts = [options.system.as_str(), plan_ask.as_str()];
    let help = options
        .read_only_sandbox
        .then(|| help::Help::sandboxed(root, options.path_var.as_deref()))
        .flatten();
    let long_options = |program: &str, subcommand: &[String]| {
        help.as_ref()
            .and_then(|help| help.long_options(program, subcommand))
    };
    let facts = Facts {
        repo: &repo,
        on_path: &facts_on_path,
        prompts: &prompts,
        goal,
        test_command: context.test.as_ref().map(|t| t.command.as_str()),
        long_options: &long_options,
    };
    let first = first.and_then(|value| read_draft(&value, &context, &facts));
    let problems = match &first {
        Ok(read) => read.problems.clone(),
        Err(why) => vec![why.clone()],
    };
    let read = if problems.is_empty() {
        first.map_err(|why| CompactError::Unusable { stage: "plan", why })?
    } else {
        sink(CompactEvent::Repair {
            problems: problems.clone(),
        });
        talk.messages
            .push(Message::user(repair_instruction(&problems)));
        let repaired = talk
            .ask(Stage::Repair, schema, PLAN_TOKENS, sink)
            .await?
            .and_then(|value| read_draft(&value, &context, &facts));
        match (first, repaired) {
            // The repair is kept unless it made things worse.
            (Ok(first), Ok(repaired)) if first.problems.len() < repaired.problems.len() => first,
            (_, Ok(repaired)) => repaired,
            (Ok(first), Err(_)) => first,
            (Err(_), Err(why)) => {
                return Err(CompactError::Unusable { stage: "plan", why });
            }
        }
    };
    let submission = submission(&read.draft, &context, &repo, &read.problems, &read.mended)
        .map_err(|why| CompactError::Unusable { stage: "plan", why })?;
    Ok(CompactDraft {
        submission,
        warnings: read.problems,
        messages: talk.messages,
        usage: talk.usage,
        requests: talk.requests,
    })
}

/// The draft in `value` and its problems: the repository checks, and whatever `submit_plan`'s
/// own validation refuses.
fn read_draft(value: &Value, context: &Context, facts: &Facts<'_>) -> Result<Read, String> {
    let mut draft: DraftPlan = serde_json::from_value(value.clone())
        .map_err(|err| format!("the answer is not a plan: {err}"))?;
    let functions = validate::goal_functions(facts.goal, facts.repo);
    let function = match functions.as_slice() {
        [(name, _)] => Some(name.as_str()),
        _ => None,
    };
    let mut mended =
        mend::suite_verified_tests(&mut draft, facts.repo, facts.test_command, function);
    mended.extend(mend::test_classes(&mut draft, facts.repo));
    mended.extend(mend::tests_to_write(&mut draft, facts.repo));
    mended.extend(mend::compared_errors(&mut draft));
    mended.extend(mend::unchecked_messages(&mut draft, facts.goal));
    let mut problems = validate::problems(&draft, facts);
    if let Err(refused) = submission(&draft, context, facts.repo, &[], &mended) {
        problems.push(refused);
    }
    Ok(Read {
        draft,
        problems,
        mended,
    })
}

/// A draft as [`read_draft`] read it: the plan after tick's own corrections, what is still
/// wrong with it, and what tick corrected ([`mend`]).
struct Read {
    draft: DraftPlan,
    problems: Vec<String>,
    mended: Vec<String>,
}

/// The full `submit_plan` shape filled in from the small model's draft, validated the way
/// `submit_plan` validates it. `warnings` become open questions and `mended` (what tick
/// corrected itself) joins the context: the person sees both.
fn submission(
    draft: &DraftPlan,
    context: &Context,
    repo: &Repo,
    warnings: &[String],
    mended: &[String],
) -> Result<PlanSubmission, String> {
    let test = context.test.as_ref();
    let steps: Vec<Value> = draft
        .steps
        .iter()
        .map(|step| {
            let mut files: Vec<String> = Vec::new();
            for path in step.files.iter().chain(&step.new_files) {
                let path = path.trim().trim_start_matches("./").to_owned();
                if !path.is_empty() && !files.contains(&path) {
                    files.push(path);
                }
            }
            let mut verify: Vec<&str> = Some(step.verify.trim())
                .filter(|v| !v.is_empty())
                .into_iter()
                .collect();
            // The repository's tests run after each step: said here, in the plan the person
            // approves, never added when the step runs.
            if let Some(test) = test
                && !verify.contains(&test.command.as_str())
            {
                verify.push(&test.command);
            }
            json!({"title": one_line(&step.title), "files": files, "verify": verify})
        })
        .collect();
    let plan = json!({
        "title": one_line(&draft.title),
        "summary": draft.summary,
        "context": format!(
            "Drafted by tick's compact planner for small models from {} files of the \
             repository ({} read whole, {} as outlines){}.",
            repo.files.len(),
            context.count(Shown::Whole),
            context.count(Shown::Outline),
            test.map(|t| format!("; the tests run with `{}` ({})", t.command, t.source))
                .unwrap_or_default(),
        ) + &mended
            .iter()
            .map(|note| format!(" {note}."))
            .collect::<Vec<_>>()
            .concat(),
        "steps": steps,
        "verification": test.map(|t| format!("`{}`", t.command)),
        "open_questions": warnings
            .iter()
            .map(|w| format!("tick's check of this draft, not fixed by the model: {w}"))
            .collect::<Vec<_>>(),
    });
    PlanSubmission::from_arguments(&plan)
}

fn one_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.trim().chars().take(100).collect()
}

/// The conversation of one run: every request is the one before it plus the new turn.
struct Conversation<'a> {
    client: &'a Client,
    options: &'a Options,
    messages: Vec<Message>,
    usage: Usage,
    requests: u32,
}

impl Conversation<'_> {
    /// One constrained call; the answer joins the conversation. `Ok(Err(why))` when the answer
    /// does not fit the schema (the caller decides what that costs); `Err` when the call
    /// failed.
    async fn ask(
        &mut self,
        stage: Stage,
        schema: Value,
        max_tokens: u32,
        sink: &mut (dyn FnMut(CompactEvent) + Send),
    ) -> Result<Result<Value, String>, CompactError> {
        // The answer is checked against the schema without its lists of allowed paths: those
        // guide the server's decoding, and a path outside them is the repository check's to
        // report, in words the model can act on.
        let checked = Structured {
            name: stage.schema_name().to_owned(),
            schema: without_enums(&schema),
            method: self.options.method,
        };
        self.requests += 1;
        sink(CompactEvent::Request {
            stage,
            turn: self.requests,
        });
        let structured = Structured {
            name: stage.schema_name().to_owned(),
            schema,
            method: self.options.method,
        };
        let request = Request {
            model: self.options.model.clone(),
            system: Some(self.options.system.clone()),
            messages: self.messages.clone(),
            tools: Vec::new(),
            max_tokens: Some(max_tokens),
            temperature: Some(0.2),
            structured: Some(structured.clone()),
            grammar: None,
        };
        let response: Response = {
            let mut forward = |event: StreamEvent| match event {
                StreamEvent::ToolCallArgsDelta { delta, .. } => {
                    sink(CompactEvent::Text { text: delta });
                }
                event => match AgentEvent::from_stream(event) {
                    Some(AgentEvent::Text { text }) => sink(CompactEvent::Text { text }),
                    Some(AgentEvent::Retry {
                        attempt,
                        of,
                        wait_ms,
                        reason,
                    }) => sink(CompactEvent::Retry {
                        attempt,
                        of,
                        wait_ms,
                        reason,
                    }),
                    _ => {}
                },
            };
            self.client.complete(&request, &mut forward).await?
        };
        self.usage.add(&response.usage);
        sink(CompactEvent::Usage { usage: self.usage });
        let value = checked.value(&response);
        self.messages.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        // A forced tool call must be answered before the next user turn (Anthropic refuses a
        // conversation where it is not).
        for call in &response.tool_calls {
            self.messages
                .push(Message::tool_result(&call.id, "Received."));
        }
        Ok(value)
    }
}

fn plan_instruction(context: &Context, goal: &str) -> String {
    let test = context.test.as_ref().map_or_else(
        || {
            "The repository states no test command; verify with a command that runs here."
                .to_owned()
        },
        |t| format!("The repository's test command is `{}`.", t.command),
    );
    let (new_test, changed) = verify_examples(context);
    let changed = match (
        validate::goal_errors(goal).first(),
        changed.starts_with("`python3"),
    ) {
        // A goal that asks for an error gets the check of one: `assert` cannot catch it, and
        // calling the function passes as soon as anything raises (the benchmark's `max([])`
        // raised `ValueError` before any change).
        (Some(error), true) => format!(
            "{changed}; for an error, `python3 -c \"import unittest, x; \
             unittest.TestCase().assertRaisesRegex({error}, 'message', x.f, [])\"`"
        ),
        _ => changed.to_owned(),
    };
    format!(
        "Write the plan for the goal as JSON: a short title, a one-sentence summary, and 2 or 3 \
         small ordered steps. Each step has a title saying what it changes, `files`: \
         the existing files it changes, `new_files`: files it creates (in existing \
         directories), and `verify`: one shell command that fails before the step's change \
         and passes after it: for a step that writes a test, the new test by its name \
         ({new_test}); for a step that changes code, a check of the changed behaviour \
         ({changed}). The whole suite, or a test module that exists already, passes before \
         the change too, so it cannot show the step worked. When the goal asks for a test, one \
         step writes it in a test file. {test}"
    )
}

/// The planner's examples of a verify that fails before a step's change, in the language of
/// the repository's test command (both when it states none): a small model copies an
/// example's shape, so a Python repository sees no cargo and a Rust one no Python. The
/// changed-behaviour example checks a value (`f(2) == 4`): with `f([]) is None`, drafts for a
/// goal that asks to raise an error asked for `None` instead (2026-12-04 benchmark, goal 3).
fn verify_examples(context: &Context) -> (&'static str, &'static str) {
    let program = context
        .test
        .as_ref()
        .and_then(|t| t.command.split_whitespace().next())
        .unwrap_or("");
    if program.starts_with("python") || program == "pytest" {
        (
            "`python3 -m unittest tests.test_x.XTest.test_new`",
            "`python3 -c \"from x import f; assert f(2) == 4\"`",
        )
    } else if program == "cargo" {
        (
            "`cargo test test_new`",
            "a test of it written in the same step, `cargo test test_new`",
        )
    } else {
        (
            "`python3 -m unittest tests.test_x.XTest.test_new`, `cargo test test_new`",
            "`python3 -c \"from x import f; assert f(2) == 4\"`",
        )
    }
}

fn localize_instruction(max: usize) -> String {
    format!(
        "The repository is too large to show whole. Before planning, choose the files you \
         need to read for this goal: at most {max}, from the file list. Answer as JSON with \
         `files_to_read`."
    )
}

fn repair_instruction(problems: &[String]) -> String {
    let mut text = "tick checked the plan against the repository and found:\n".to_owned();
    for problem in problems {
        text.push_str(&format!("- {problem}\n"));
    }
    text.push_str("\nAnswer with the whole plan again as JSON, with these fixed.");
    text
}

/// The schema of the plan call: what a 1.5B model can fill. `files` may only name listed
/// files (an enum the server's grammar enforces) when the list is not too long for one.
pub fn plan_schema(repo: &Repo) -> Value {
    let mut file = json!({"type": "string", "maxLength": 120});
    if !repo.files.is_empty() && repo.files.len() <= 200 {
        file = json!({"type": "string", "enum": repo.paths()});
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["title", "summary", "steps"],
        "properties": {
            "title": {"type": "string", "maxLength": 60},
            "summary": {"type": "string", "maxLength": 200},
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": 4,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["title", "files", "new_files", "verify"],
                    "properties": {
                        "title": {"type": "string", "maxLength": 80},
                        "files": {"type": "array", "maxItems": 4, "items": file},
                        "new_files": {
                            "type": "array",
                            "maxItems": 3,
                            "items": {"type": "string", "maxLength": 120},
                        },
                        // Room for a check of an error: `python3 -c "import unittest, stats;
                        // unittest.TestCase().assertRaisesRegex(ValueError, 'empty list',
                        // stats.maximum, [])"` is 117 characters.
                        "verify": {"type": "string", "maxLength": 200},
                    },
                },
            },
        },
    })
}

/// The schema of the localize call: paths from the list only.
fn localize_schema(context: &Context, max: usize) -> Value {
    let listed: Vec<&str> = context
        .files
        .iter()
        .filter(|(_, shown)| *shown != Shown::Whole)
        .map(|(path, _)| path.as_str())
        .take(300)
        .collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["files_to_read"],
        "properties": {
            "files_to_read": {
                "type": "array",
                "maxItems": max,
                "items": {"type": "string", "enum": listed},
            },
        },
    })
}

/// `schema` without any `enum` of strings.
pub(crate) fn without_enums(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| {
                    !(*key == "enum"
                        && value
                            .as_array()
                            .is_some_and(|a| a.iter().all(Value::is_string)))
                })
                .map(|(key, value)| (key.clone(), without_enums(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_enums).collect()),
        other => other.clone(),
    }
}

/// Whether `program` is an executable file in one of `path_var`'s directories.
pub fn on_path(path_var: Option<&std::ffi::OsStr>, program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(path_var) = path_var else {
        return false;
    };
    std::env::split_paths(path_var).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Texts the compact pipeline's unit tests share.
#[cfg(test)]
pub(crate) mod fixtures {
    /// The benchmark's stats module, two blank lines between its functions.
    pub const STATS: &str = "\"\"\"Small statistics helpers.\"\"\"\n\n\n\
                             def mean(values):\n    return sum(values) / len(values)\n\n\n\
                             def minimum(values):\n    return min(values)\n\n\n\
                             def maximum(values):\n    return max(values)\n\n\n\
                             def spread(values):\n    return maximum(values) - minimum(values)\n";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_chooses_compact_for_small_or_local_servers() {
        use Choice::{Agent, Compact};
        assert_eq!(choose(Planner::Compact, false, Some(200_000)), Compact);
        assert_eq!(
            choose(Planner::Agent, true, Some(4096)),
            Agent { fallback: false }
        );
        assert_eq!(choose(Planner::Auto, false, Some(16_384)), Compact);
        assert_eq!(
            choose(Planner::Auto, true, Some(131_072)),
            Agent { fallback: true }
        );
        assert_eq!(choose(Planner::Auto, true, None), Compact);
        assert_eq!(choose(Planner::Auto, false, None), Agent { fallback: true });
    }

    #[test]
    fn the_budget_follows_the_context_within_caps() {
        assert_eq!(budget(Some(16_384), true), 1600);
        assert_eq!(budget(Some(4096), true), 848);
        assert_eq!(budget(Some(2048), true), 500);
        assert_eq!(budget(None, true), 1600);
        assert_eq!(budget(Some(200_000), false), 24_000);
        assert_eq!(budget(None, false), 15_184);
    }

    #[test]
    fn the_plan_schema_lists_files_and_checks_what_it_says() {
        let repo = Repo::from_files(vec![context::RepoFile {
            path: "a.py".into(),
            bytes: 1,
            text: Some("x".into()),
        }]);
        let schema = plan_schema(&repo);
        let good = json!({"title": "T", "summary": "S", "steps": [
            {"title": "x", "files": ["a.py"], "new_files": [], "verify": "python3 a.py"}]});
        let mut problems = Vec::new();
        crate::llm::structured::check(&schema, &good, "", &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        let bad = json!({"title": "T", "summary": "S", "steps": [
            {"title": "x", "files": ["b.py"], "new_files": [], "verify": "v"}]});
        crate::llm::structured::check(&schema, &bad, "", &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn a_draft_fills_the_full_submit_plan_shape() {
        let repo = Repo::from_files(vec![
            context::RepoFile {
                path: "src/lib.rs".into(),
                bytes: 10,
                text: Some("fn a() {}\n".into()),
            },
            context::RepoFile {
                path: "Cargo.toml".into(),
                bytes: 10,
                text: Some("[package]\n".into()),
            },
        ]);
        let context = context::build(&repo, "goal", 1000);
        let draft = DraftPlan {
            title: "Add tests\nsecond line".into(),
            summary: "Adds tests.".into(),
            steps: vec![validate::DraftStep {
                title: "Test a".into(),
                files: vec!["./src/lib.rs".into()],
                new_files: vec!["tests/a.rs".into(), "src/lib.rs".into()],
                verify: "cargo test".into(),
            }],
        };
        let plan = submission(&draft, &context, &repo, &["S1 is odd".into()], &[]).unwrap();
        assert_eq!(plan.title, "Add tests");
        assert_eq!(plan.steps[0].files, vec!["src/lib.rs", "tests/a.rs"]);
        assert_eq!(plan.steps[0].verify, vec!["cargo test"]);
        assert_eq!(plan.verification.as_deref(), Some("`cargo test`"));
        assert_eq!(
            plan.open_questions,
            vec!["tick's check of this draft, not fixed by the model: S1 is odd"]
        );
        assert!(
            plan.context
                .unwrap()
                .contains("the tests run with `cargo test` (Cargo.toml)")
        );
    }

    #[test]
    fn the_verify_examples_follow_the_test_command_and_the_goal() {
        let context = |command: Option<&str>| Context {
            text: String::new(),
            files: Vec::new(),
            complete: true,
            test: command.map(|c| test_command::TestCommand {
                command: c.to_owned(),
                source: "README.md".to_owned(),
            }),
            matched: Vec::new(),
            tokens: 0,
            left_out: 0,
        };
        let python = context(Some("python3 -m unittest discover tests"));
        let ask = plan_instruction(&python, "mean should return None for an empty list");
        assert!(ask.contains("tests.test_x.XTest.test_new"), "{ask}");
        assert!(ask.contains("assert f(2) == 4"), "{ask}");
        assert!(!ask.contains("cargo"), "{ask}");
        assert!(
            !ask.contains("is None"),
            "no example a goal could copy: {ask}"
        );
        assert!(!ask.contains("assertRaisesRegex"), "{ask}");

        let ask = plan_instruction(
            &python,
            "maximum should raise ValueError with the message 'empty list'",
        );
        assert!(
            ask.contains(
                "for an error, `python3 -c \"import unittest, x; \
                 unittest.TestCase().assertRaisesRegex(ValueError, 'message', x.f, [])\"`"
            ),
            "{ask}"
        );

        let rust = plan_instruction(
            &context(Some("cargo test")),
            "parse should fail with ParseError",
        );
        assert!(rust.contains("`cargo test test_new`"), "{rust}");
        assert!(!rust.contains("python"), "{rust}");

        let unknown = plan_instruction(&context(None), "add a flag");
        assert!(unknown.contains("python3 -m unittest") && unknown.contains("cargo test"));
        assert!(unknown.contains("states no test command"), "{unknown}");
    }

    #[test]
    fn on_path_finds_executables_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.path().join("data"), "").unwrap();
        std::fs::set_permissions(
            dir.path().join("tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        assert!(on_path(Some(&path), "tool"));
        assert!(!on_path(Some(&path), "data"));
        assert!(!on_path(Some(&path), "missing"));
        assert!(!on_path(None, "tool"));
    }
}
