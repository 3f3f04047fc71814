//! `tick plan`: a draft plan in `.tasks/draft/PLAN.md`, from a model exploring the repository
//! read-only, or from a file a person wrote. An existing draft is never replaced without
//! `--force`; `--revise` and `--answer` go on with the planning conversation.

use std::io::{BufRead, Read};
use std::path::Path;

use super::{Ctx, Outcome};
use crate::agent::planner::{Asker, NoAsker, PlanEnd, PlanError, Planner};
use crate::agent::{AgentEvent, Model};
use crate::cli::PlanArgs;
use crate::compact;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::llm::{Client, Message, Usage};
use crate::plan::{Event, Phase, transition};
use crate::sandbox;
use crate::tasks::plan_md::{self, FrontMatter};
use crate::tasks::state::LastAttempt;
use crate::tasks::{Draft, SESSION_FILE, Store, render};
use crate::tools::{Mode, PlanSubmission, Questions, Registry, Workspace, run_command};

pub const PLAN_PROMPT: &str = include_str!("../../prompts/plan.md");

pub fn run(ctx: &Ctx<'_>, args: &PlanArgs) -> Result<Outcome> {
    if let Some(from) = &args.from {
        return from_file(ctx, from, args.force);
    }
    let request = if let Some(feedback) = &args.revise {
        Continue::Revise(feedback.clone())
    } else if let Some(answer) = &args.answer {
        Continue::Answer(answer.clone())
    } else if let Some(goal) = args
        .goal
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        Continue::New(goal.to_owned())
    } else {
        return Err(
            Error::input("say what you want planned: `tick plan \"goal\"`")
                .hint("or give a plan you wrote: `tick plan --from plan.md`"),
        );
    };
    let config = super::model_config(ctx, &args.model)?;
    let commands = run_command_setup(ctx, &config, args.json);
    let mut next = Some(request);
    while let Some(request) = next.take() {
        let planned = plan_with_model(ctx, &config, commands.as_ref(), request, args);
        if let Err(err) = &planned
            && matches!(err.kind, ErrorKind::Provider | ErrorKind::Limit)
        {
            record_plan_attempt(&ctx.store, &LastAttempt::from_error(ctx.now(), None, err))?;
        }
        planned?;
        if args.json || !ctx.env.interactive {
            break;
        }
        next = match super::review::menu(ctx)? {
            super::review::Choice::Revise(feedback) => Some(Continue::Revise(feedback)),
            super::review::Choice::Answer(answer) => Some(Continue::Answer(answer)),
            super::review::Choice::Stop => None,
        };
    }
    Ok(Outcome::Done)
}

/// What a planning run starts from.
enum Continue {
    New(String),
    Revise(String),
    Answer(String),
}

fn planning_error(err: PlanError, config: &Config) -> Error {
    match err {
        PlanError::Llm(err) => {
            let hint = if matches!(err, crate::llm::LlmError::Connect { .. }) {
                Some(config.server_hint())
            } else {
                err.hint()
            };
            let mut error = Error::new(ErrorKind::Provider, err.to_string());
            if let Some(hint) = hint {
                error = error.hint(hint);
            }
            error.hint("no draft was written")
        }
        PlanError::NoSubmission {
            text,
            reminder,
            reminders,
        } => {
            let said = text.trim();
            let mut error = Error::new(
                ErrorKind::Provider,
                format!(
                    "the model stopped without calling `submit_plan`, even after {}",
                    match reminders {
                        0 => "no reminder (`limits.max_reminders` is 0)".to_owned(),
                        1 => "a reminder".to_owned(),
                        n => format!("{n} reminders"),
                    }
                ),
            );
            let what = reminder.split("\n\n").next().unwrap_or(&reminder).to_owned();
            error = error.hint(format!("what was wrong: {what}"));
            if !said.is_empty() {
                let excerpt: String = said.chars().take(300).collect();
                error = error.hint(format!("its last words: {excerpt}"));
            }
            error
                .hint(crate::agent::CHANGE_MODEL_HINT)
                .hint("no draft was written")
        }
        PlanError::TurnLimit { turns } => Error::new(
            ErrorKind::Limit,
            format!("the planner used all {turns} turns without submitting a plan"),
        )
        .hint("raise `limits.max_turns` in `.tasks/config.yaml`, or narrow the goal; no draft was written"),
        PlanError::TokenLimit { used, limit } => Error::new(
            ErrorKind::Limit,
            format!("the planner used {used} tokens, over the limit of {limit}"),
        )
        .hint("raise `limits.max_tokens` in `.tasks/config.yaml`; no draft was written"),
    }
}

/// Where a failed planning attempt is recorded until one succeeds.
const ATTEMPT_FILE: &str = "last_attempt.yaml";

/// The failed planning attempt recorded in `.tasks/draft/`, if any. A record that does not
/// parse is no record: it is only a report, and the next attempt replaces it.
pub fn last_plan_attempt(store: &Store) -> Option<LastAttempt> {
    let text = fsx::read_optional(&store.draft_dir().join(ATTEMPT_FILE)).ok()??;
    serde_yaml::from_str(&text).ok()
}

fn record_plan_attempt(store: &Store, attempt: &LastAttempt) -> Result<()> {
    let text = serde_yaml::to_string(attempt)
        .map_err(|err| Error::internal(format!("could not record the failed attempt: {err}")))?;
    fsx::create_dir_all(&store.draft_dir())?;
    fsx::write_atomic(&store.draft_dir().join(ATTEMPT_FILE), text.as_bytes())
}

fn load_session(store: &Store) -> Result<Vec<Message>> {
    let path = store.draft_dir().join(SESSION_FILE);
    let Some(text) = fsx::read_capped(&path, fsx::MAX_LOCAL_LOG)? else {
        return Ok(Vec::new());
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|err| {
                Error::input(format!("`{}:{}`: {err}", store.rel(&path), i + 1))
                    .hint("the planning conversation is damaged; `tick plan --force \"goal\"` starts over")
            })
        })
        .collect()
}

fn save_session(
    store: &Store,
    messages: &[Message],
    secrets: &[&str],
    max_entry_bytes: usize,
) -> Result<()> {
    let text = crate::transcript::jsonl(messages, secrets, max_entry_bytes);
    fsx::write_atomic(&store.draft_dir().join(SESSION_FILE), text.as_bytes())
}

fn plan_with_model(
    ctx: &Ctx<'_>,
    config: &Config,
    commands: Option<&run_command::Setup>,
    request: Continue,
    args: &PlanArgs,
) -> Result<()> {
    let store = &ctx.store;
    store.ensure()?;
    let _lock = store.lock("tick plan")?;
    let draft = store.load_draft()?;
    let feedback = match &request {
        Continue::Revise(feedback) => Some(feedback.clone()),
        Continue::New(_) | Continue::Answer(_) => None,
    };
    let (goal, mut messages, old_draft) = match request {
        Continue::New(goal) => {
            check_no_draft(store, args.force)?;
            let intro = format!(
                "Goal: {goal}\n\nExplore the repository to plan this, then call `submit_plan`."
            );
            (goal, vec![Message::user(intro)], None)
        }
        Continue::Revise(feedback) => {
            let draft = draft.ok_or_else(|| {
                Error::input("there is no draft to revise")
                    .hint("start one with `tick plan \"goal\"`")
            })?;
            let phase = draft.plan.phase().unwrap_or(Phase::Draft);
            transition(phase, Event::Revise).map_err(|r| Error::input(r.reason).hint(r.hint))?;
            let goal = draft_goal(&draft);
            let mut messages = load_session(store)?;
            if messages.is_empty() {
                messages.push(Message::user(format!(
                    "Goal: {goal}\n\nA person wrote a draft plan for it (below). Revise it as \
                     they ask, exploring the repository as needed, then call `submit_plan` with \
                     the whole revised plan.\n\nTheir request: {feedback}\n\nThe draft:\n\n{}",
                    draft.src
                )));
            } else {
                messages.push(Message::user(format!(
                    "The person reviewed your draft and asks for a revision:\n\n{feedback}\n\n\
                     The draft as it stands now (they may have edited it):\n\n{}\n\nCall \
                     `submit_plan` with the whole revised plan.",
                    draft.src
                )));
            }
            (goal, messages, Some(draft))
        }
        Continue::Answer(answer) => {
            let draft = draft.ok_or_else(|| {
                Error::input("there is no draft waiting for answers")
                    .hint("start one with `tick plan \"goal\"`")
            })?;
            if draft.plan.phase() != Some(Phase::NeedsInput) {
                return Err(Error::input("the draft has no open questions to answer")
                    .hint("ask for changes with `tick plan --revise \"...\"`"));
            }
            let goal = draft_goal(&draft);
            let mut messages = load_session(store)?;
            if messages.is_empty() {
                return Err(
                    Error::input("the planning conversation of this draft is missing")
                        .hint("start over with `tick plan --force \"goal\"`"),
                );
            }
            messages.push(Message::user(format!(
                "The person's answers to your questions:\n\n{answer}\n\nContinue planning and \
                 finish with `submit_plan`."
            )));
            (goal, messages, Some(draft))
        }
    };

    let client = Client::new(config.client_config()?)
        .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
    let workspace = Workspace::new(store.root())
        .map_err(|err| Error::io("open the workspace", store.root(), &err))?;
    let root = workspace.root().to_path_buf();
    let mut registry = Registry::for_mode(Mode::Plan, workspace);
    if let Some(setup) = commands {
        registry = registry
            .with_sandbox(sandbox::Sandboxing::On(sandbox::Policy::read_only(root)))
            .with_run_command(setup.clone());
    }
    let system = store.prompt("plan.md", PLAN_PROMPT)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal(format!("could not start the async runtime: {err}")))?;
    let path_var = ctx.env.var("PATH").map(Into::into);
    let compact = runtime.block_on(compact::setup::Setup::resolve(
        &client,
        config,
        store,
        path_var,
        old_draft.is_none() || feedback.is_some(),
    ))?;
    let planner = Planner {
        model: Model {
            client: &client,
            model: config.planner_model()?,
            system,
            registry: &registry,
            limits: compact.agent_limits(config.limits),
            tool_calls: config.tool_calls,
        },
    };
    let ui = ctx.ui;
    let json = args.json;
    let live = ctx.env.stderr_is_terminal;
    let mut sink = move |event: AgentEvent| ui.agent_event(&event, json, live);
    let mut usage = Usage::default();
    let mut terminal = TerminalAsker { ctx };
    let asker: &mut dyn Asker = if ctx.env.interactive && !json {
        &mut terminal
    } else {
        &mut NoAsker
    };
    // Small models: the compact pipeline (src/compact/) plans instead of the agent loop.
    let end = match compact.choice {
        compact::Choice::Compact => None,
        compact::Choice::Agent { .. } => {
            match runtime.block_on(planner.run(&mut messages, asker, &mut sink, &mut usage)) {
                Err(PlanError::NoSubmission { .. }) if compact.falls_back() => None,
                end => Some(end),
            }
        }
    };
    let end = if let Some(end) = end {
        end
    } else {
        let mut forward = |e| compact::agent_event(&e).into_iter().for_each(&mut sink);
        let goal = compact::with_feedback(&goal, feedback.as_deref());
        let draft = runtime.block_on(compact.plan(&client, store.root(), &goal, &mut forward));
        ui.end_live_text();
        let draft = draft.map_err(|err| match err {
            compact::CompactError::Llm(err) => planning_error(PlanError::Llm(err), config),
            unusable @ compact::CompactError::Unusable { .. } => unusable.into_error(),
        })?;
        for warning in &draft.warnings {
            ui.warn(&format!("tick's check of the draft, kept in it: {warning}"));
        }
        (messages, usage) = (draft.messages, usage.plus(&draft.usage));
        Ok(PlanEnd::Submitted(draft.submission))
    };
    ui.end_live_text();
    let end = end.map_err(|err| planning_error(err, config))?;

    let secrets: Vec<&str> = config.api_key.as_deref().into_iter().collect();
    let (status, body, title) = match &end {
        PlanEnd::Submitted(plan) => (
            Phase::Draft,
            render::plan_body(store, plan)?,
            plan.title.clone(),
        ),
        PlanEnd::NeedsInput(questions) => {
            let waiting = PlanSubmission {
                title: render::one_line(&goal).chars().take(100).collect(),
                summary: "The planner has questions it needs answered before it can plan."
                    .to_owned(),
                context: None,
                assumptions: Vec::new(),
                steps: Vec::new(),
                risks: Vec::new(),
                verification: None,
                out_of_scope: Vec::new(),
                open_questions: question_lines(questions),
            };
            (
                Phase::NeedsInput,
                render::plan_body(store, &waiting)?,
                waiting.title,
            )
        }
    };
    // Redacted before rendering, so a key at the start of a value cannot turn the YAML into
    // something else (`title: [REDACTED] ...`); the rendered text is checked again below.
    let body = crate::redact::redact(&body, &secrets);
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: None,
        title: Some(crate::redact::redact(&render::one_line(&title), &secrets)),
        goal: Some(crate::redact::redact(&goal, &secrets)),
        status: Some(status),
        created: old_draft
            .as_ref()
            .and_then(|d| d.plan.front.created)
            .or(Some(ctx.now())),
        approved: None,
        approval: old_draft
            .as_ref()
            .and_then(|d| d.plan.front.approval.clone()),
        extra: serde_yaml::Mapping::new(),
    };
    let text = plan_md::render(&front, &body)
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    let text = crate::redact::redact(&text, &secrets);
    fsx::create_dir_all(&store.draft_dir())?;
    save_session(
        store,
        &messages,
        &secrets,
        config.limits.max_transcript_entry_bytes,
    )?;
    let path = store.draft_plan_path();
    fsx::write_atomic(&path, text.as_bytes())?;
    fsx::remove_file(&store.draft_dir().join(ATTEMPT_FILE))?;

    if let Some(old) = &old_draft
        && let Ok(new) = plan_md::parse(&text)
        && let Some(diff) = step_diff(&old.plan, &new)
    {
        ui.data(&diff);
    }
    let tokens = format!(
        "{} tokens in, {} out",
        usage.input_tokens, usage.output_tokens
    );
    if json {
        ui.json(&serde_json::json!({
            "event": "draft",
            "path": store.rel(&path),
            "status": status,
            "title": title,
            "usage": usage,
        }));
        return Ok(());
    }
    match end {
        PlanEnd::Submitted(plan) => {
            ui.note(&format!(
                "drafted `{}` with {} {} in `{}` ({tokens})",
                render::one_line(&plan.title),
                plan.steps.len(),
                if plan.steps.len() == 1 {
                    "step"
                } else {
                    "steps"
                },
                store.rel(&path)
            ));
            if !ctx.env.interactive {
                ui.hint("read it (`tick show`), edit it, then `tick approve`, `tick plan --revise \"...\"` or `tick discard`");
            }
        }
        PlanEnd::NeedsInput(questions) => {
            ui.note(&format!(
                "the planner needs answers before it can plan; its questions are in `{}` ({tokens})",
                store.rel(&path)
            ));
            for line in question_lines(&questions) {
                ui.note(&format!("  - {line}"));
            }
            ui.hint("answer with `tick plan --answer \"...\"`");
        }
    }
    Ok(())
}

/// `run_command` for the planner when the read-only sandbox can be set up here; otherwise
/// `None`: the planner works without it, and the person is told so once.
///
/// Plan mode never runs a command outside the read-only sandbox: with the sandbox switched off
/// (`sandbox: off`, `TICK_SANDBOX=off`) the planner is not offered `run_command` either.
fn run_command_setup(ctx: &Ctx<'_>, config: &Config, json: bool) -> Option<run_command::Setup> {
    let why = if config.sandbox.enabled {
        sandbox::available(sandbox::Kind::ReadOnly)
            .err()
            .map(|unavailable| unavailable.to_string())
    } else {
        Some("the sandbox is switched off, and plan mode runs commands only inside it".to_owned())
    };
    if let Some(why) = why {
        if json {
            ctx.ui.json(&serde_json::json!({
                "event": "run_command_unavailable",
                "reason": why,
            }));
        } else {
            ctx.ui.warn(&format!(
                "the planner plans without `run_command` (git log, blame, ls...): {why}"
            ));
        }
        return None;
    }
    let setup = run_command::Setup::new(config.run_command.clone());
    // Only a debug build knows this switch: the tests that show the sandbox holds alone.
    #[cfg(debug_assertions)]
    let setup = if ctx.env.var(NO_ALLOW_LIST_FOR_TESTS) == Some("1") {
        setup.without_allow_list_for_tests()
    } else {
        setup
    };
    Some(setup)
}

/// Set to `1` in a debug build, `run_command` skips its allow-list (guard 1), so tests can
/// show that the read-only sandbox (guard 2) alone writes nothing. Release builds ignore it.
#[cfg(debug_assertions)]
pub const NO_ALLOW_LIST_FOR_TESTS: &str = "TICK_TEST_RUN_COMMAND_WITHOUT_ALLOW_LIST";

fn draft_goal(draft: &Draft) -> String {
    draft
        .plan
        .front
        .goal
        .clone()
        .or_else(|| draft.plan.title.clone())
        .unwrap_or_default()
}

/// Each question on one line, with why it matters and the options offered.
fn question_lines(questions: &Questions) -> Vec<String> {
    questions
        .questions
        .iter()
        .map(|q| {
            let mut line = render::one_line(&q.question);
            if let Some(why) = &q.why {
                line.push_str(&format!(" (why: {})", render::one_line(why)));
            }
            if !q.options.is_empty() {
                line.push_str(&format!(" Options: {}.", q.options.join(" / ")));
            }
            line
        })
        .collect()
}

/// The steps of two drafts as a diff, one block per step; `None` when the steps are the same.
pub fn step_diff(old: &plan_md::PlanDoc, new: &plan_md::PlanDoc) -> Option<String> {
    let lines = |doc: &plan_md::PlanDoc| -> String {
        let mut out = String::new();
        for step in doc.steps.all_steps() {
            let id = step.id.map_or_else(|| "(new)".into(), |id| id.to_string());
            out.push_str(&format!("{id} {}\n", step.title));
            for detail in render::detail_lines(step) {
                out.push_str(&format!("    {detail}\n"));
            }
        }
        out
    };
    let (old, new) = (lines(old), lines(new));
    if old == new {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&old, &new);
    Some(
        diff.unified_diff()
            .context_radius(1)
            .header("steps before", "steps now")
            .to_string(),
    )
}

/// Asks the model's questions at the terminal and reads the answers from stdin.
struct TerminalAsker<'a, 'b> {
    ctx: &'a Ctx<'b>,
}

impl Asker for TerminalAsker<'_, '_> {
    fn ask(&mut self, questions: &Questions) -> Option<String> {
        let ui = self.ctx.ui;
        ui.end_live_text();
        ui.note("the planner asks:");
        let mut answers = String::new();
        for (q, line) in questions.questions.iter().zip(question_lines(questions)) {
            ui.prompt(&format!("{line}\n> "));
            let answer = read_line()?;
            let answer = if answer.trim().is_empty() {
                "(no answer; decide yourself and note it as an assumption)".to_owned()
            } else {
                answer.trim().to_owned()
            };
            answers.push_str(&format!(
                "Q: {}\nA: {answer}\n",
                render::one_line(&q.question)
            ));
        }
        Some(answers)
    }
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

/// Refuses to replace a draft unless `force`: it may hold a person's edits.
pub fn check_no_draft(store: &Store, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    let path = store.draft_plan_path();
    if !path.exists() {
        return Ok(());
    }
    let title = store
        .load_draft()
        .ok()
        .flatten()
        .and_then(|draft: Draft| draft.plan.title)
        .map(|t| format!(" `{t}`"))
        .unwrap_or_default();
    Err(Error::input(format!(
        "a draft{title} is already waiting in `{}`",
        store.rel(&path)
    ))
    .hint("approve it (`tick approve`), revise it (`tick plan --revise \"...\"`), discard it (`tick discard`), or replace it with `--force`; it was not changed"))
}

/// A hand-written plan's prose between its title and its first section, under a
/// `## Summary` heading when it has none: the summary is what reaches the executor's context
/// pack. `None` when there is a summary already or no prose to make one of. Every byte of
/// the prose is kept.
fn prose_as_summary(body: &str) -> Option<String> {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag};
    if plan_md::section_range(body, "Summary").is_some() {
        return None;
    }
    let mut prose_start = 0;
    let mut first_section = body.len();
    for (event, range) in Parser::new(body).into_offset_iter() {
        if let Event::Start(Tag::Heading { level, .. }) = event {
            if level == HeadingLevel::H1 && prose_start == 0 && range.start < first_section {
                prose_start = range.end;
            } else if level <= HeadingLevel::H2 {
                first_section = range.start;
                break;
            }
        }
    }
    let prose = body.get(prose_start..first_section)?;
    if prose.trim().is_empty() {
        return None;
    }
    let lead = prose.len() - prose.trim_start().len();
    let at = prose_start + lead;
    Some(format!("{}## Summary\n\n{}", &body[..at], &body[at..]))
}

fn from_file(ctx: &Ctx<'_>, from: &Path, force: bool) -> Result<Outcome> {
    let store = &ctx.store;
    let (name, src) = if from.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| Error::input(format!("could not read the plan from stdin: {err}")))?;
        ("<stdin>".to_owned(), text)
    } else {
        let path = ctx.env.cwd.join(from);
        let name = from.display().to_string();
        let text = fsx::read_named(&path, &name, fsx::MAX_TEXT_FILE)?.ok_or_else(|| {
            Error::input(format!("there is no plan file `{name}`")).hint(
                "give the path of a plan you wrote (PLAN.md format), or `-` to read it from stdin",
            )
        })?;
        (name, text)
    };
    let located = |err: crate::tasks::todo_md::ParseError| {
        Error::input(format!(
            "`{name}:{}:{}`: {}",
            err.line, err.col, err.message
        ))
        .hint(format!("{}; no draft was written", err.hint))
    };
    let mut doc = plan_md::parse(&src).map_err(located)?;
    plan_md::validate(&doc).map_err(located)?;
    if let Some(body) = prose_as_summary(&doc.body) {
        doc.body = body.into();
    }

    store.ensure()?;
    let _lock = store.lock("tick plan")?;
    check_no_draft(store, force)?;
    let title = doc
        .title
        .as_deref()
        .map(|title| crate::redact::redact(&render::one_line(title), &[]));
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: None,
        title: title.clone(),
        goal: doc
            .front
            .goal
            .as_deref()
            .map(|goal| crate::redact::redact(goal, &[])),
        status: Some(match doc.front.status {
            Some(Phase::NeedsInput) => Phase::NeedsInput,
            _ => Phase::Draft,
        }),
        created: doc.front.created.or(Some(ctx.now())),
        approved: None,
        approval: doc.front.approval.clone(),
        extra: doc.front.extra.clone(),
    };
    let text = plan_md::render(&front, &crate::redact::redact(&doc.body, &[]))
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    let draft_dir = store.draft_dir();
    fsx::create_dir_all(&draft_dir)?;
    // A draft from a file has no planning conversation to continue.
    fsx::remove_file(&draft_dir.join(SESSION_FILE))?;
    fsx::remove_file(&draft_dir.join(ATTEMPT_FILE))?;
    let path = store.draft_plan_path();
    fsx::write_atomic(&path, text.as_bytes())?;
    let steps = doc.steps.all_steps().count();
    ctx.ui.note(&format!(
        "drafted `{}` with {steps} {} in `{}`",
        title.unwrap_or_default(),
        if steps == 1 { "step" } else { "steps" },
        store.rel(&path)
    ));
    ctx.ui
        .hint("read it (`tick show`), edit it, then `tick approve` or `tick discard`");
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::prose_as_summary;

    #[test]
    fn prose_before_the_first_section_becomes_the_summary() {
        let body = "# Greeting\n\nGreet people from the command line.\nKeep it **short**.\n\n## Steps\n- [ ] S1 Do it\n";
        assert_eq!(
            prose_as_summary(body).unwrap(),
            "# Greeting\n\n## Summary\n\nGreet people from the command line.\nKeep it **short**.\n\n## Steps\n- [ ] S1 Do it\n"
        );
        // Without a title the prose starts the body.
        assert_eq!(
            prose_as_summary("Some words.\n\n## Steps\n- [ ] S1 x\n").unwrap(),
            "## Summary\n\nSome words.\n\n## Steps\n- [ ] S1 x\n"
        );
    }

    #[test]
    fn a_plan_with_a_summary_or_without_prose_is_left_alone() {
        for body in [
            "# T\n\nWords.\n\n## Summary\nThe summary.\n\n## Steps\n- [ ] S1 x\n",
            "# T\n\n## Steps\n- [ ] S1 x\n",
            "# T\n\n   \n## Steps\n- [ ] S1 x\n",
        ] {
            assert_eq!(prose_as_summary(body), None, "{body}");
        }
    }
}
