//! Planning, the step before a task runs (DESIGN §3): a planning [`Session`] on the draft
//! (`start` a goal, `revise` with feedback, `answer` the planner's questions) that drives the
//! model's read-only turn and writes `.tasks/draft/PLAN.md`; the conversation kept for the
//! next turn (`.tasks/draft/session.jsonl`, [`conversation`]); the record of a failed attempt
//! ([`attempt`]); drafting PLAN.md with secrets redacted, from the model or from a plan a
//! person wrote, and discarding it ([`draft`]); and approval ([`approve`]): a draft becomes a
//! task, an edited task's PLAN.md is merged into its TODO.md.
//!
//! A library API that `tick plan`, `tick approve`, `tick review`, the interactive session and
//! re-planning all drive. It never prints and never reads stdin: what happens is reported as
//! a [`PlanEvent`] through the caller's [`Sink`], and the planner's questions go to the
//! caller's [`Person`]. The approval protocol's files and its recovery after a kill are
//! [`crate::tasks::approval`], below the store's lock.

pub mod approve;
pub mod attempt;
pub mod conversation;
pub mod draft;
pub mod events;
pub mod import;
pub mod replan;
pub mod review;

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};

use crate::agent::Model;
use crate::agent::planner::{PlanError, Planner};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::llm::{Client, Usage};
use crate::person::Person;
use crate::plan::Phase;
use crate::sandbox;
use crate::tasks::Store;
use crate::tasks::state::LastAttempt;
use crate::tools::{Mode, Questions, Registry, Workspace, run_command};

pub use events::{JSON_FORMAT, PlanEvent, Start};

/// The planning turn's system prompt, overridable from `.tasks/prompts/plan.md`.
pub const PLAN_PROMPT: &str = include_str!("../../prompts/plan.md");

/// Where a session's events go.
pub type Sink<'s> = dyn FnMut(PlanEvent) + Send + 's;

/// What a session plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The one draft of the workspace, `.tasks/draft/PLAN.md`.
    Draft,
}

/// Whether the planner gets `run_command`: only inside the read-only sandbox.
#[derive(Debug, Clone)]
pub enum RunCommand {
    Available(run_command::Setup),
    /// Why not (said once per session).
    Unavailable(String),
}

impl RunCommand {
    /// `run_command` for the planner when the read-only sandbox can be set up here; otherwise
    /// the planner works without it, and the person is told why.
    ///
    /// Plan mode never runs a command outside the read-only sandbox: with the sandbox switched
    /// off (`sandbox: off`, `TICK_SANDBOX=off`) the planner is not offered `run_command`
    /// either.
    pub fn for_config(config: &Config) -> RunCommand {
        let why = if config.sandbox.enabled {
            sandbox::available(sandbox::Kind::ReadOnly)
                .err()
                .map(|unavailable| unavailable.to_string())
        } else {
            Some(
                "the sandbox is switched off, and plan mode runs commands only inside it"
                    .to_owned(),
            )
        };
        match why {
            Some(why) => RunCommand::Unavailable(why),
            None => RunCommand::Available(run_command::Setup::new(config.run_command.clone())),
        }
    }
}

/// Everything a session needs, resolved by its caller.
pub struct PlanDeps<'a> {
    pub config: &'a Config,
    pub run_command: RunCommand,
    /// The clock for what the session writes (`created:`, the attempt record), read at
    /// each write: a session can last an hour.
    pub clock: crate::env::Clock,
    /// The person's `PATH`, where the compact planner checks that a plan's verify programs
    /// exist.
    pub path_var: Option<std::ffi::OsString>,
    /// The person's MCP servers (`crate::mcp`), if any are configured: the planner is offered
    /// the tools their config names read-only.
    pub mcp: Option<std::sync::Arc<crate::mcp::Launcher>>,
}

/// A draft as a planning run left it.
#[derive(Debug, Clone, PartialEq)]
pub struct Drafted {
    pub path: PathBuf,
    pub status: Phase,
    pub title: String,
    /// Its steps, sub-steps included.
    pub steps: usize,
    /// The planner's open questions, one line each, when it is `needs-input`.
    pub questions: Vec<String>,
    /// Tokens the planning used; `None` for a plan a person wrote.
    pub usage: Option<Usage>,
}

/// A planning session: one conversation with the planner about one target. See the module
/// documentation.
pub struct Session<'a> {
    store: &'a Store,
    target: Target,
    deps: PlanDeps<'a>,
    /// Whether the person was told that `run_command` is unavailable.
    told_run_command: bool,
}

impl<'a> Session<'a> {
    pub fn open(store: &'a Store, target: Target, deps: PlanDeps<'a>) -> Session<'a> {
        Session {
            store,
            target,
            deps,
            told_run_command: false,
        }
    }

    /// Plans `goal` from scratch. An existing draft is refused unless `replace`: it may hold
    /// a person's edits.
    pub fn start(
        &mut self,
        goal: &str,
        replace: bool,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Drafted> {
        self.plan(
            conversation::Request::New {
                goal: goal.to_owned(),
                replace,
            },
            person,
            sink,
        )
    }

    /// Revises the draft as the person asks, going on with its conversation.
    pub fn revise(
        &mut self,
        feedback: &str,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Drafted> {
        self.plan(
            conversation::Request::Revise(feedback.to_owned()),
            person,
            sink,
        )
    }

    /// Gives the person's answers to the planner's open questions and goes on planning.
    pub fn answer(
        &mut self,
        answers: &str,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Drafted> {
        self.plan(
            conversation::Request::Answer(answers.to_owned()),
            person,
            sink,
        )
    }

    fn plan(
        &mut self,
        request: conversation::Request,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Drafted> {
        sink(PlanEvent::PlanStarted {
            format: JSON_FORMAT,
            start: request.start(),
        });
        if let RunCommand::Unavailable(reason) = &self.deps.run_command
            && !self.told_run_command
        {
            self.told_run_command = true;
            sink(PlanEvent::RunCommandUnavailable {
                reason: reason.clone(),
            });
        }
        let planned = self.plan_with_model(request, person, sink);
        if let Err(err) = &planned
            && matches!(err.kind, ErrorKind::Provider | ErrorKind::Limit)
        {
            attempt::record(self.store, &LastAttempt::from_error(self.now(), None, err))?;
            sink(PlanEvent::AttemptFailed {
                cause: err.message.clone(),
                hint: (!err.hints.is_empty()).then(|| err.hints.join("\n")),
            });
        }
        planned
    }

    /// The time this session writes.
    fn now(&self) -> DateTime<Utc> {
        self.deps.clock.now()
    }

    fn plan_with_model(
        &self,
        request: conversation::Request,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Drafted> {
        let Target::Draft = self.target;
        let store = self.store;
        let config = self.deps.config;
        store.ensure()?;
        let _lock = store.lock("tick plan")?;
        let feedback = match &request {
            conversation::Request::Revise(feedback) => Some(feedback.clone()),
            conversation::Request::New { .. } | conversation::Request::Answer(_) => None,
        };
        let mut begun = conversation::begin(store, request)?;
        let fresh = begun.old_draft.is_none() || feedback.is_some();
        let (end, usage) = self.plan_draft(&mut begun, feedback.as_deref(), fresh, person, sink)?;

        let secrets: Vec<&str> = config.api_key.as_deref().into_iter().collect();
        let planned = draft::planned(store, &begun, &end, &secrets, self.now())?;
        fsx::create_dir_all(&store.draft_dir())?;
        conversation::save(
            store,
            &begun.messages,
            &secrets,
            config.limits.max_transcript_entry_bytes,
        )?;
        fsx::write_atomic(&planned.drafted.path, planned.text.as_bytes())?;
        attempt::clear(store)?;
        if let Some(diff) = planned.step_diff {
            sink(PlanEvent::StepsChanged { diff });
        }
        let drafted = Drafted {
            usage: Some(usage),
            ..planned.drafted
        };
        sink(draft_event(store, &drafted));
        Ok(drafted)
    }

    /// One planning turn in plan mode (read-only tools, `run_command` in the read-only
    /// sandbox when it is available) on `messages`, until the planner submits or asks.
    fn run_planner(
        &self,
        messages: &mut Vec<crate::llm::Message>,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<(crate::agent::planner::PlanEnd, Usage)> {
        let client = Client::new(self.deps.config.client_config()?)
            .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
        let end = self.agent_turn(&client, self.deps.config.limits, messages, person, sink)?;
        let (end, usage) = end;
        let end = end.map_err(|err| planning_error(err, self.deps.config))?;
        Ok((end, usage))
    }

    /// The draft's planning turn: the agent loop, or for a small model the compact pipeline
    /// ([`crate::compact`]), as `planner:` and the server decide; an agent that answers
    /// without a tool call hands over to the compact pipeline under `auto`.
    fn plan_draft(
        &self,
        begun: &mut conversation::Begun,
        feedback: Option<&str>,
        fresh: bool,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<(crate::agent::planner::PlanEnd, Usage)> {
        let config = self.deps.config;
        let client = Client::new(config.client_config()?)
            .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
        let mut compact = crate::rt::block_on(crate::compact::setup::Setup::resolve(
            &client,
            config,
            self.store,
            self.deps.path_var.clone(),
            fresh,
        ))??;
        // The planner's own commands run only in the read-only sandbox, and so does the
        // `--help` of a verify's program.
        compact.options.read_only_sandbox =
            matches!(self.deps.run_command, RunCommand::Available(_));
        let agent = match compact.choice {
            crate::compact::Choice::Compact => None,
            crate::compact::Choice::Agent { .. } => {
                let limits = compact.agent_limits(config.limits);
                match self.agent_turn(&client, limits, &mut begun.messages, person, sink)? {
                    (Err(PlanError::NoSubmission { .. }), _) if compact.falls_back() => None,
                    (end, usage) => Some((end, usage)),
                }
            }
        };
        if let Some((end, usage)) = agent {
            return Ok((end.map_err(|err| planning_error(err, config))?, usage));
        }
        let goal = crate::compact::with_feedback(&begun.goal, feedback);
        let mut forward = |event| {
            if let Some(agent) = crate::compact::agent_event(&event) {
                sink(PlanEvent::Agent(agent));
            }
        };
        let draft =
            crate::rt::block_on(compact.plan(&client, self.store.root(), &goal, &mut forward))?
                .map_err(|err| match err {
                    crate::compact::CompactError::Llm(err) => {
                        planning_error(PlanError::Llm(err), config)
                    }
                    unusable @ crate::compact::CompactError::Unusable { .. } => {
                        unusable.into_error()
                    }
                })?;
        for warning in &draft.warnings {
            sink(PlanEvent::CheckWarning {
                text: warning.clone(),
            });
        }
        begun.messages = draft.messages;
        Ok((
            crate::agent::planner::PlanEnd::Submitted(draft.submission),
            draft.usage,
        ))
    }

    /// The agent loop's planning turn with `limits`, on `messages`.
    fn agent_turn(
        &self,
        client: &Client,
        limits: crate::config::Limits,
        messages: &mut Vec<crate::llm::Message>,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<(
        std::result::Result<crate::agent::planner::PlanEnd, PlanError>,
        Usage,
    )> {
        let store = self.store;
        let config = self.deps.config;
        let workspace = Workspace::new(store.root())
            .map_err(|err| Error::io("open the workspace", store.root(), &err))?;
        let root = workspace.root().to_path_buf();
        let mut registry = Registry::for_mode(Mode::Plan, workspace);
        if let RunCommand::Available(setup) = &self.deps.run_command {
            registry = registry
                .with_sandbox(sandbox::Sandboxing::On(sandbox::Policy::read_only(root)))
                .with_run_command(setup.clone());
        }
        if let Some(launcher) = &self.deps.mcp {
            let (with_mcp, warnings) = registry.with_mcp(std::sync::Arc::clone(launcher));
            registry = with_mcp;
            for text in warnings {
                sink(PlanEvent::McpWarning { text });
            }
        }
        let planner = Planner {
            model: Model {
                client,
                model: config.planner_model()?,
                system: store.prompt("plan.md", PLAN_PROMPT)?,
                registry: &registry,
                limits,
                tool_calls: config.tool_calls,
            },
            review: None,
        };
        let mut usage = Usage::default();
        let emitter = Emitter(Mutex::new(sink));
        let hooks = crate::hooks::HookSet::resolve(&config.hooks, store.root());
        let review = |plan: &crate::tools::PlanSubmission| {
            submitted_hooks(store, config, &hooks, plan, &emitter)
        };
        let planner = Planner {
            review: hooks
                .has(crate::hooks::Event::PlanSubmitted)
                .then_some(&review as &crate::agent::planner::Review<'_>),
            ..planner
        };
        let end = {
            // A server that stopped or was started again during a tool call is told as it
            // happens: before the next thing the turn reports (the call's result).
            let told_mcp = || {
                for text in registry.take_mcp_notices() {
                    emitter.emit(PlanEvent::McpWarning { text });
                }
            };
            let mut on_agent = |event| {
                told_mcp();
                emitter.emit(PlanEvent::Agent(event));
            };
            let mut asking = Asking {
                person,
                emitter: &emitter,
            };
            let end =
                crate::rt::block_on(planner.run(messages, &mut asking, &mut on_agent, &mut usage));
            told_mcp();
            end?
        };
        Ok((end, usage))
    }

    /// Re-plans the approved task `task` as the person asks (`feedback`): a planning turn
    /// from the task as it stands, whose plan becomes the task's PLAN.md with every unchanged
    /// step keeping its id. The approved version is kept in `history/`; the revision waits
    /// for `tick approve TASK` (until then `tick run` refuses and shows the diff).
    pub fn revise_task(
        &mut self,
        task: &str,
        feedback: &str,
        person: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<Revised> {
        sink(PlanEvent::PlanStarted {
            format: JSON_FORMAT,
            start: Start::ReviseTask,
        });
        if let RunCommand::Unavailable(reason) = &self.deps.run_command
            && !self.told_run_command
        {
            self.told_run_command = true;
            sink(PlanEvent::RunCommandUnavailable {
                reason: reason.clone(),
            });
        }
        let store = self.store;
        let task_ref = store.resolve(task)?;
        let _lock = store.lock_task(&task_ref, "tick plan --revise")?;
        let current = store.load(&task_ref)?;
        // `tick log` keeps each revision's feedback.
        crate::tasks::journal::revised(&task_ref.dir, feedback, self.now());
        let phase = current.phase();
        crate::plan::transition(phase, crate::plan::Event::Replan)
            .map_err(|r| Error::input(r.reason).hint(r.hint))?;
        let mut messages = vec![crate::llm::Message::user(replan::seed(&current, feedback))];
        let (end, usage) = self.run_planner(&mut messages, person, sink)?;
        let crate::agent::planner::PlanEnd::Submitted(plan) = end else {
            return Err(Error::input(
                "the planner has questions before it can re-plan; nothing was changed",
            )
            .hint(format!(
                "say what it needs in the feedback: `tick plan --revise \"...\" {}`",
                current.id
            )));
        };
        let titles: Vec<String> = plan.steps.iter().map(|s| s.title.clone()).collect();
        let files: Vec<Vec<String>> = plan.steps.iter().map(|s| s.files.clone()).collect();
        let ids = replan::matched_ids(&current.todo, &titles, &files);
        let body = crate::tasks::render::plan_body(store, &plan)?;
        let body = replan::with_ids(&body, &ids)?;
        let secrets: Vec<&str> = self.deps.config.api_key.as_deref().into_iter().collect();
        let body = crate::redact::redact(&body, &secrets);
        let mut front = current.plan.front.clone();
        front.title = Some(crate::redact::redact(
            &crate::tasks::render::one_line(&plan.title),
            &secrets,
        ));
        let text = crate::tasks::plan_md::render(&front, &body)
            .map_err(|err| Error::internal(format!("could not render the plan: {err}")))?;
        let text = crate::redact::redact(&text, &secrets);
        let new = crate::tasks::plan_md::parse(&text)
            .map_err(|e| store.parse_error(&current.dir.join(crate::tasks::PLAN_FILE), &e))?;
        let (version, diff) =
            replan::write_revision(store, &current, &text, &new, self.deps.clock.now())?;
        let plan_path = current.dir.join(crate::tasks::PLAN_FILE);
        if let Some(diff) = &diff {
            sink(PlanEvent::StepsChanged { diff: diff.clone() });
        }
        let revised = Revised {
            task: current.id.clone(),
            path: plan_path,
            version,
            removed: replan::removed(&current.todo, &ids),
            usage,
        };
        sink(PlanEvent::Revised {
            task: revised.task.clone(),
            named: crate::tasks::naming::task_named(store, &revised.task),
            path: store.rel(&revised.path),
            version,
            usage: Some(usage),
        });
        Ok(revised)
    }
}

/// A task re-planned and waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub struct Revised {
    pub task: String,
    pub path: PathBuf,
    /// The number of the new version (the approved one before it is `version - 1`).
    pub version: usize,
    /// Steps the new plan no longer has.
    pub removed: Vec<crate::plan::StepId>,
    pub usage: Usage,
}

/// The `draft` event of a draft just written.
/// Runs the `plan.submitted` hooks on the planner's `plan`, in the read-only sandbox (when
/// it can be set up here and is not switched off): `Err` is the feedback the plan goes back
/// to the planner with.
fn submitted_hooks(
    store: &Store,
    config: &Config,
    hooks: &crate::hooks::HookSet,
    plan: &crate::tools::PlanSubmission,
    emitter: &Emitter<'_, '_>,
) -> std::result::Result<(), String> {
    let root = store.root();
    let env = crate::hooks::read_only_env(
        root,
        config.sandbox.enabled,
        config.api_key_env.iter().cloned(),
    );
    let payload = crate::hooks::Payload {
        session_id: "draft".to_owned(),
        cwd: root.display().to_string(),
        task_id: "draft".to_owned(),
        phase: Phase::Draft.as_str().to_owned(),
        plan: serde_json::to_value(plan).ok(),
        ..crate::hooks::Payload::default()
    };
    let how = crate::hooks::Fire {
        root,
        env: &env,
        read_only: true,
        runs_dir: store.draft_dir().join(crate::tasks::RUNS_DIR),
        step: None,
    };
    let fired = crate::hooks::fire(
        hooks,
        &how,
        crate::hooks::Event::PlanSubmitted,
        "",
        &payload,
        &mut |report| emitter.emit(PlanEvent::Hook(report)),
    );
    match fired.block {
        Some(feedback) => Err(feedback),
        None => Ok(()),
    }
}

pub fn draft_event(store: &Store, drafted: &Drafted) -> PlanEvent {
    PlanEvent::Draft {
        path: store.rel(&drafted.path),
        status: drafted.status,
        title: drafted.title.clone(),
        usage: drafted.usage,
        steps: drafted.steps,
        questions: drafted.questions.clone(),
    }
}

/// The sink, shared by the model's events and the questions while the planner's turn runs.
struct Emitter<'s, 't>(Mutex<&'s mut Sink<'t>>);

impl Emitter<'_, '_> {
    fn emit(&self, event: PlanEvent) {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        (*sink)(event);
    }
}

/// The person, as the planner asks them: the questions are reported, then put to the person.
/// (The planner asks nothing else.)
struct Asking<'p, 'e, 's, 't> {
    person: &'p mut dyn Person,
    emitter: &'e Emitter<'s, 't>,
}

impl Person for Asking<'_, '_, '_, '_> {
    fn answer_questions(&mut self, questions: &Questions) -> Option<String> {
        self.emitter.emit(PlanEvent::QuestionsAsked {
            questions: crate::person::question_lines(questions),
        });
        self.person.answer_questions(questions)
    }
}

/// A failed planning turn as the person reads it; every one says no draft was written.
fn planning_error(err: PlanError, config: &Config) -> Error {
    match err {
        PlanError::Llm(err) => {
            // A refused certificate is no unreachable server: the client's own hint says so.
            let unreachable = matches!(
                err,
                crate::llm::LlmError::Connect { cause, .. }
                    if cause != crate::llm::ConnectCause::Certificate
            );
            let hint = if unreachable {
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
