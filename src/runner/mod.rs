//! Executing an approved task (DESIGN §5): which step runs next, one step's lifecycle (mark it
//! `[-]`, a fresh context pack, the model's turn with build-mode tools, verification of its
//! `done` claim, the tick with evidence and fingerprints), stale steps verified again first,
//! a parent verified once its last sub-step is done, deviations and limits, and `--commit`.
//!
//! A library API that `tick run`, the interactive session and re-planning all drive. It never
//! prints and never reads stdin: everything it does is reported as a [`RunEvent`] through the
//! caller's sink, and the one question it may have (a step changed files outside its `files`
//! and the approval does not allow that: go on anyway?) goes through the caller's [`Person`]
//! ([`crate::person::Nobody`] when nobody can be asked: stop and let the person review). Its
//! writes to TODO.md and state.yaml go through [`write`]; its journal of tick's own changes
//! through [`record::Recorder`].

pub(crate) mod baseline;
pub mod build;
pub mod changes;
mod compact;
pub mod events;
pub mod images;
pub mod record;
pub mod redo;
mod replan;
pub mod reverify;
pub mod schedule;
mod source;
pub mod verify;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use crate::agent::executor::{Executor, StepEnd, StepError, StepHooks, Verdict};
use crate::agent::{AgentEvent, Model, context};
use crate::config::Limits;
pub use crate::env::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::llm::{Client, Message, Usage};
use crate::person::Person;
use crate::plan::{Event, StepId, StepStatus, transition};
use crate::sandbox::tamper;
use crate::tasks::lock::Lock;
use crate::tasks::state::LastAttempt;
use crate::tasks::{PLAN_FILE, RUNS_DIR, Store, TODO_FILE, Task, TaskRef};
use crate::tools::{Effects, Registry};
use crate::watch::live::{Change, LiveOptions, LiveWatcher};
use changes::Snapshot;
use record::Recorder;
use verify::StepVerifier;
use write::{StatusWrite, StepWrite};

pub use events::{BlockedStep, JSON_FORMAT, RunEvent, RunOutcome, StepOutcome, Summary};
pub use schedule::{Next, next_step};

/// The system prompt of a step's turn, overridable from `.tasks/prompts/execute.md`.
pub const EXECUTE_PROMPT: &str = include_str!("../../prompts/execute.md");

/// What [`Runner::settle_parent`] made of a parent whose sub-steps are done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Its own check failed: blocked.
    Blocked,
    /// Its own check passed and ticked it now.
    Ticked,
    /// Nothing to tick: not its turn, ticked with its last sub-step, or a person's marker kept.
    Left,
}

/// Where the runner's events go.
pub type Sink<'s> = dyn FnMut(RunEvent) + Send + 's;

/// The hooks that apply to `task` must be the ones its approval recorded (`tick run` and
/// `tick mcp serve` alike): otherwise the difference, a line per hook, and the error that
/// refuses the task.
pub fn hooks_as_approved(
    set: &crate::hooks::HookSet,
    store: &Store,
    task: &Task,
) -> std::result::Result<(), (Vec<String>, Error)> {
    let now = crate::hooks::approval::record(set, store.root());
    let approved = task
        .state
        .approval
        .as_ref()
        .map_or(&[][..], |a| &a.hooks[..]);
    let changes = crate::hooks::approval::difference(approved, &now);
    if changes.is_empty() {
        return Ok(());
    }
    let refused = Error::input(format!(
        "the hooks that apply to task `{}` changed since it was approved",
        task.id
    ))
    .hint(format!(
        "review the difference above, then `tick approve{}` to approve the hooks as they \
         are; nothing was run",
        crate::tasks::naming::task_named(store, &task.id)
    ));
    Err((changes, refused))
}

/// Whether `task` can run at all, with nothing but its files: it has steps, its PLAN.md is
/// the approved one (else the diff is reported and the run refused), and its phase allows a
/// run (not cancelled). `tick run` asks this before it needs a model, so a problem that needs
/// no model is named first.
pub fn check_runnable(store: &Store, task: &Task, sink: &mut Sink<'_>) -> Result<()> {
    store.require_steps(task)?;
    if task.plan_changed() {
        // The approved copy and its diff stay with `tick approve`, which writes them.
        let copy = task
            .dir
            .join(RUNS_DIR)
            .join(crate::tasks::approval::APPROVED_COPY);
        let diff = crate::tasks::approval::changes_since_approval(&copy, &task.plan_src);
        sink(RunEvent::PlanChanged { diff });
        let plan = store.rel(&task.dir.join(PLAN_FILE));
        // tick's own re-plan is not a person's edit.
        let what = match &task.state.pending_replan {
            Some(replan) => format!(
                "`{plan}` was re-planned by tick around `{}` and waits for your approval",
                replan.step
            ),
            None if task.replanned_by_tick() => {
                format!("`{plan}` was re-planned by tick and waits for your approval")
            }
            None if task.approval_missing() => format!(
                "`{}` holds no approval of `{plan}` (it is missing or was emptied), so tick \
                 cannot tell that the plan is the one you approved",
                store.rel(&task.dir.join(crate::tasks::STATE_FILE))
            ),
            None => format!("`{plan}` was edited after approval"),
        };
        return Err(Error::input(what).hint(format!(
            "review the change, then approve it with `tick approve{}`; nothing was run",
            crate::tasks::naming::task_named(store, &task.id)
        )));
    }
    if let Some(what) = task.tools_changed() {
        return Err(Error::input(format!(
            "`{}` changes the MCP tools the plan approved: {what}",
            store.rel(&task.dir.join(TODO_FILE))
        ))
        .hint(format!(
            "a step's `tools:` are changed in PLAN.md and approved with `tick approve{}`; \
             put TODO.md's `tools:` back as PLAN.md has them; nothing was run",
            crate::tasks::naming::task_named(store, &task.id)
        )));
    }
    transition(task.phase(), Event::Run)
        .map(drop)
        .map_err(|r| Error::input(r.reason).hint(r.hint))
}

/// Everything a runner needs, resolved by its caller.
pub struct RunnerDeps<'a> {
    pub store: &'a Store,
    pub task: TaskRef,
    /// The task's lock, held for as long as the runner lives.
    pub lock: &'a Lock,
    pub client: &'a Client,
    pub model: String,
    /// The step turn's system prompt (usually [`EXECUTE_PROMPT`]).
    pub system: String,
    /// The build-mode tool registry.
    pub registry: &'a Registry,
    pub limits: Limits,
    /// Native tool calls, text tool calls, or native until the model writes one as text.
    pub tool_calls: crate::config::ToolCalls,
    /// Whether the agent's commands run under the sandbox (`false`: `--no-sandbox`).
    pub sandboxed: bool,
    /// Values redacted from the transcripts in `runs/` (the API key).
    pub secrets: Vec<String>,
    /// Where the times it records come from, read at each record.
    pub clock: Clock,
    /// Set (by Ctrl-C) to stop at the next safe point; the running step stays in progress.
    pub interrupted: Arc<AtomicBool>,
    /// Commit each verified step with its files.
    pub commit: bool,
    /// Watch the workspace for a person's edits while a step runs.
    pub watch: bool,
    /// Run each step with the compact executor for small models (`executor:`), not the
    /// agent loop.
    pub compact: Option<crate::compact::exec::ExecOptions>,
    /// The hooks that may run here (`crate::hooks`), in declared order.
    pub hooks: crate::hooks::HookSet,
}

/// Which steps a [`Runner::run`] may run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Only this step (or the sub-steps of this parent).
    pub only: Option<StepId>,
    /// At most this many steps.
    pub max_steps: Option<usize>,
}

/// Executes one approved task. See the module documentation.
pub struct Runner<'a> {
    deps: RunnerDeps<'a>,
    /// Sees a person's edits during a step; `None` where the workspace cannot be watched.
    watcher: Option<LiveWatcher>,
    usage: Usage,
    /// What the `step.start` hooks said for the model, for the step's first message.
    hook_context: Vec<String>,
}

/// The sink, shared by the model's events and the runner's own while a step's turn runs.
struct Emitter<'s, 't>(Mutex<&'s mut Sink<'t>>);

impl<'s, 't> Emitter<'s, 't> {
    fn new(sink: &'s mut Sink<'t>) -> Self {
        Emitter(Mutex::new(sink))
    }

    fn emit(&self, event: RunEvent) {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        (*sink)(event);
    }
}

/// What the runner does around the model's work on one step.
struct Hooks<'r, 's, 't> {
    root: &'r Path,
    step: StepId,
    verifier: StepVerifier,
    recorder: Recorder,
    watcher: Option<&'r mut LiveWatcher>,
    /// Files a person changed while the step ran.
    outside: BTreeSet<String>,
    emitter: &'r Emitter<'s, 't>,
    /// `.tasks/`, `.git/config` and `.git/hooks/` as they were before the command under way.
    guarded: Option<tamper::Snapshot>,
    /// What changed there while one of the agent's commands ran: tick writes nothing there
    /// during a command, so each of these is someone else's doing.
    tampered: Vec<tamper::Tampered>,
    /// The `.tasks/` folders below the workspace's own before the command under way: one
    /// that appears during it was planted ([`crate::tasks::nested_stores`]). Kept from one
    /// command's end to the next one's start, so each command costs one walk.
    nested_before: Option<Vec<String>>,
    /// How many of the agent's commands (`bash`, `run_command`) ran.
    agent_commands: usize,
    /// The step's files, and whether an earlier attempt changed one of them: a `done` claim
    /// when none changed and no command ran goes back once, then blocks the step.
    scope: Vec<String>,
    earlier_changed: bool,
    idle_claims: u32,
    /// What a `propose_replan` is checked against.
    replan: replan::Check<'r>,
    /// The step's hooks (`tool.pre`, `tool.post`, `step.claimed`, `step.verify`), if any.
    fire: Option<crate::hooks::ForStep>,
    /// Set when the step's verify passed before its first change ([`baseline`]).
    passed_before: Option<baseline::PassedBefore>,
}

impl<'r, 's, 't> Hooks<'r, 's, 't> {
    #[allow(
        clippy::too_many_arguments,
        reason = "the borrowed parts of one step's hooks, each named at its call"
    )]
    fn new(
        root: &'r Path,
        step: StepId,
        (verifier, recorder): (StepVerifier, Recorder),
        watcher: Option<&'r mut LiveWatcher>,
        emitter: &'r Emitter<'s, 't>,
        scope: &[String],
        earlier_changed: bool,
        replan: replan::Check<'r>,
    ) -> Self {
        Hooks {
            root,
            step,
            verifier,
            recorder,
            watcher,
            outside: BTreeSet::new(),
            emitter,
            guarded: None,
            tampered: Vec::new(),
            nested_before: None,
            agent_commands: 0,
            scope: scope.to_vec(),
            earlier_changed,
            idle_claims: 0,
            replan,
            fire: None,
            passed_before: None,
        }
    }

    /// The turn is over: what it ended with, and what the hooks saw.
    fn finish(self, result: std::result::Result<StepEnd, StepError>) -> Work {
        Work {
            result,
            verifier: self.verifier,
            recorder: self.recorder,
            outside: self.outside,
            tampered: self.tampered,
            agent_commands: self.agent_commands,
            passed_before: self.passed_before.is_some(),
        }
    }

    /// A `done` claim on a step that names files, when none of them changed (this attempt or
    /// an earlier one) and no command ran: back to the model once, then the step is blocked.
    fn idle_claim(&mut self) -> Option<Verdict> {
        let written: BTreeSet<String> = self.recorder.written().keys().cloned().collect();
        let touched = changes::deviations(&self.scope, &written).len() < written.len();
        if self.scope.is_empty() || touched || self.earlier_changed || self.agent_commands > 0 {
            return None;
        }
        self.idle_claims += 1;
        let step = self.step;
        Some(if self.idle_claims >= 2 {
            Verdict::GaveUp {
                reason: format!(
                    "claimed done twice, but none of {step}'s files changed and no command ran \
                     (if nothing needed changing, `tick mark {step} done`)"
                ),
            }
        } else {
            Verdict::Failed {
                report: format!(
                    "none of {step}'s files changed: make the change, or say blocked with why"
                ),
            }
        })
    }
}

impl Hooks<'_, '_, '_> {
    /// Runs the step's hooks of `event` as a command tick runs for the step: journaled (a
    /// formatter's rewrite is the step's change, not someone else's) and guarded like the
    /// agent's commands.
    fn run_hooks(
        &mut self,
        event: crate::hooks::Event,
        target: &str,
        edit: impl FnOnce(&mut crate::hooks::Payload),
    ) -> crate::hooks::Fired {
        let Some(fire) = self.fire.take() else {
            return crate::hooks::Fired::default();
        };
        if !fire.has(event) {
            self.fire = Some(fire);
            return crate::hooks::Fired::default();
        }
        let mut payload = fire.payload.clone();
        edit(&mut payload);
        let emitter = self.emitter;
        self.guard();
        self.recorder.command_started();
        let fired = fire.fire(event, target, &payload, &mut |report| {
            emitter.emit(RunEvent::Hook(report));
        });
        self.recorder.command_ended();
        self.check_guarded();
        self.fire = Some(fire);
        fired
    }

    /// `step.claimed` (before the verify commands) and `step.verify` (after they passed)
    /// around the verification of a claim; a refusal counts as a failed attempt.
    fn verify_with_hooks(&mut self, note: Option<&str>) -> Verdict {
        use crate::hooks::Event;
        let step = self.step.to_string();
        let claimed = self.run_hooks(Event::StepClaimed, &step, |p| {
            p.reason = note.map(str::to_owned);
        });
        if let Some(block) = claimed.block {
            self.verifier.set_evidence(claimed.evidence);
            return self.verifier.refused(
                true,
                &format!("tick's step.claimed hook sent the claim back:\n{block}"),
            );
        }
        let attempts = self.verifier.attempts();
        let emitter = self.emitter;
        self.guard();
        let verdict = self
            .verifier
            .verify(&mut self.recorder, &mut |event| emitter.emit(event));
        self.check_guarded();
        if !matches!(verdict, Verdict::Passed { .. }) {
            return verdict;
        }
        let evidence = self.verifier.evidence().to_vec();
        let extra = self.run_hooks(Event::StepVerify, &step, |p| {
            p.reason = note.map(str::to_owned);
            p.evidence = evidence;
        });
        self.verifier.add_evidence(extra.evidence);
        match extra.block {
            Some(block) => self.verifier.refused(
                self.verifier.attempts() == attempts,
                &format!("Verification failed: {block}"),
            ),
            None => verdict,
        }
    }

    /// Remembers the guarded files before one of the agent's commands runs.
    fn guard(&mut self) {
        self.guarded = tamper::Snapshot::take(self.root).ok();
        if self.nested_before.is_none() {
            self.nested_before = Some(crate::tasks::nested_stores(self.root));
        }
    }

    /// Compares the guarded files with how they were before the command that just ended.
    fn check_guarded(&mut self) {
        let Some(before) = self.guarded.take() else {
            return;
        };
        // A snapshot that cannot be taken counts as everything gone: never as "unchanged".
        let after = tamper::Snapshot::take_after(self.root, &before).unwrap_or_default();
        let found = tamper::diff(&before, &after, &|_, _| false);
        let planted = self.planted_stores();
        if !found.is_empty() || !planted.is_empty() {
            // Put back at once, so nothing planted there runs before the person looks.
            let mut found = tamper::restore(&before, &after, found);
            found.extend(planted);
            self.emitter.emit(RunEvent::Tampered {
                step: self.step,
                files: found.iter().map(|t| t.path.clone()).collect(),
            });
            self.tampered.extend(found);
        }
    }
}

impl Hooks<'_, '_, '_> {
    /// The `.tasks/` folders that appeared below the workspace's own during the command that
    /// just ended, each removed at once: a store there would decide, for the person's next
    /// `tick` in that folder, where requests go.
    fn planted_stores(&mut self) -> Vec<tamper::Tampered> {
        let before = self.nested_before.take().unwrap_or_default();
        let after = crate::tasks::nested_stores(self.root);
        let planted: Vec<String> = after
            .iter()
            .filter(|path| !before.contains(path))
            .cloned()
            .collect();
        let found: Vec<tamper::Tampered> = planted
            .into_iter()
            .map(|path| {
                let repair = match crate::fsx::remove_dir_all(&self.root.join(&path)) {
                    Ok(()) => tamper::Repair::Removed,
                    Err(err) => tamper::Repair::Failed(err.message),
                };
                tamper::Tampered {
                    path,
                    change: tamper::Change::Added,
                    repair: Some(repair),
                }
            })
            .collect();
        // What the next command starts from: the folders there are now (a planted one that
        // could not be removed is named once, not again after every command).
        self.nested_before = Some(
            after
                .into_iter()
                .filter(|path| {
                    !found
                        .iter()
                        .any(|t| t.path == *path && t.repair == Some(tamper::Repair::Removed))
                })
                .collect(),
        );
        found
    }
}

impl StepHooks for Hooks<'_, '_, '_> {
    fn verify(&mut self, note: Option<&str>) -> Verdict {
        if !self.tampered.is_empty() {
            return Verdict::GaveUp {
                reason: tampered_reason(&self.tampered),
            };
        }
        if let Some(verdict) = self
            .claim_after_passed_before()
            .or_else(|| self.idle_claim())
        {
            return verdict;
        }
        let verdict = self.verify_with_hooks(note);
        if self.tampered.is_empty() {
            verdict
        } else {
            Verdict::GaveUp {
                reason: tampered_reason(&self.tampered),
            }
        }
    }

    fn allow_tool(
        &mut self,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> std::result::Result<(), String> {
        let Some(fire) = self.fire.as_mut() else {
            return Ok(());
        };
        fire.tool = Some((tool.to_owned(), arguments.clone()));
        let input = crate::hooks::Payload::tool_input(arguments);
        let fired = self.run_hooks(crate::hooks::Event::ToolPre, tool, |p| {
            p.tool_name = Some(tool.to_owned());
            p.tool_input = Some(input);
        });
        if let Some(fire) = self.fire.as_mut() {
            fire.pending.extend(fired.context);
        }
        match fired.block {
            Some(block) => Err(format!(
                "Not run: tick's tool.pre hook refused this call.\n{block}"
            )),
            None => Ok(()),
        }
    }

    fn before_tool(&mut self, tool: &str) {
        if matches!(tool, "bash" | "run_command") {
            self.guard();
            self.recorder.command_started();
        }
    }

    fn after_tool(&mut self, effects: &Effects) {
        self.check_guarded();
        if effects.ran_command {
            self.agent_commands += 1;
        }
        self.recorder.tool_effects(effects);
        let Some((tool, arguments)) = self.fire.as_mut().and_then(|f| f.tool.take()) else {
            return;
        };
        let response = serde_json::json!({
            "files_written": effects.files_written.iter().map(|f| &f.path).collect::<Vec<_>>(),
            "exit_code": effects.exit_code,
        });
        let input = crate::hooks::Payload::tool_input(&arguments);
        let fired = self.run_hooks(crate::hooks::Event::ToolPost, &tool, |p| {
            p.tool_name = Some(tool.clone());
            p.tool_input = Some(input);
            p.tool_response = Some(response);
        });
        if let Some(fire) = self.fire.as_mut() {
            fire.pending.extend(fired.context);
            if let Some(block) = fired.block {
                fire.pending.push(format!(
                    "tick's tool.post hook says about this call:\n{block}"
                ));
            }
        }
    }

    fn check_replan(
        &mut self,
        proposal: &crate::tools::ReplanProposal,
    ) -> std::result::Result<(), String> {
        self.replan.check(proposal)
    }

    fn notices(&mut self) -> Option<String> {
        let from_hooks = self
            .fire
            .as_mut()
            .and_then(crate::hooks::ForStep::take_pending);
        match (from_hooks, self.edits_notice()) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
            (a, b) => a.or(b),
        }
    }
}

impl Hooks<'_, '_, '_> {
    /// The note for the model about files a person changed while it worked, if any.
    fn edits_notice(&mut self) -> Option<String> {
        let watcher = self.watcher.as_mut()?;
        let mut paths = BTreeSet::new();
        while let Some(change) = watcher.try_next() {
            if let Change::Paths(changed) = change {
                paths.extend(changed);
            }
        }
        let mut foreign = Vec::new();
        for path in paths {
            if path.starts_with(".tasks/") || path.starts_with(".git/") {
                continue;
            }
            let full = self.root.join(&path);
            let metadata = std::fs::symlink_metadata(&full).ok();
            if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
                continue;
            }
            let modified = metadata.and_then(|m| m.modified().ok());
            let hash = crate::watch::fingerprint::hash_file(&full);
            if !self.recorder.owns(&path, &hash, modified) {
                foreign.push(path);
            }
        }
        if foreign.is_empty() {
            return None;
        }
        self.outside.extend(foreign.iter().cloned());
        let list: Vec<String> = foreign.iter().map(|p| format!("`{p}`")).collect();
        self.emitter.emit(RunEvent::OutsideEdit {
            step: self.step,
            files: foreign,
        });
        Some(format!(
            "Note from tick: while you worked, a person changed {} (not through your tools). \
             Read it again before you edit it, and keep their change unless your step says \
             otherwise.",
            list.join(", ")
        ))
    }
}

/// A step's model work that could not start: this thread has no async runtime.
fn runtime_failed(err: &Error) -> StepError {
    StepError::Llm(crate::llm::LlmError::Setup {
        message: err.to_string(),
    })
}

impl<'a> Runner<'a> {
    /// A runner for `deps.task`: starts (with `deps.watch`) the live
    /// watcher. The watcher is a help, not a requirement: without it, edits are still caught
    /// by the fingerprints at the next command.
    pub fn new(deps: RunnerDeps<'a>) -> Result<Self> {
        let watcher = if deps.watch {
            let root = deps.store.root();
            crate::rt::block_on(async { LiveWatcher::start(root, LiveOptions::default()) })?.ok()
        } else {
            None
        };
        Ok(Runner {
            deps,
            watcher,
            usage: Usage::default(),
            hook_context: Vec::new(),
        })
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    fn store(&self) -> &Store {
        self.deps.store
    }

    fn root(&self) -> &Path {
        self.deps.store.root()
    }

    /// Marks the done steps whose files changed while tick was not running `[~]`.
    pub fn refresh_stale(&self) -> Result<()> {
        crate::watch::refresh_locked(
            self.deps.store,
            &self.deps.task,
            self.deps.clock.precise(),
            self.deps.lock,
        )?;
        Ok(())
    }

    /// Reads the task for the next decision: it must still be approved as it stands, and
    /// steps a person added get their ids now.
    pub fn load(&self, sink: &mut Sink<'_>) -> Result<Task> {
        let store = self.store();
        let task = store.load(&self.deps.task)?;
        check_runnable(store, &task, sink)?;
        if task.todo.needs_ids() {
            let steps = write::assign_ids(store, &self.deps.task, self.deps.clock.precise())?;
            sink(RunEvent::IdsAssigned { steps });
            return store.load(&self.deps.task);
        }
        Ok(task)
    }

    /// What runs next in `task`.
    pub fn next(&self, task: &Task, only: Option<StepId>) -> Next {
        next_step(&task.todo, only)
    }

    /// Runs steps until all are done, a step is blocked, a limit or `opts` stops it, or Ctrl-C.
    /// Stale steps are verified again before anything new runs. Ends with a
    /// [`RunEvent::Summary`].
    pub fn run(
        &mut self,
        opts: RunOptions,
        confirm: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<RunOutcome> {
        self.refresh_stale()?;
        let task = self.load(sink)?;
        transition(task.phase(), Event::Run).map_err(|r| Error::input(r.reason).hint(r.hint))?;
        self.check_hooks(&task, sink)?;
        sink(RunEvent::RunStarted {
            format: JSON_FORMAT,
            task: task.id.clone(),
            title: task.title(),
        });
        self.reverify_stale(&task, sink)?;
        let mut steps_run = 0usize;
        let mut settled = BTreeSet::new();
        let ended = loop {
            // Read first: steps a person added meanwhile get their ids even when the run
            // stops here.
            let task = self.load(sink)?;
            if opts.max_steps.is_some_and(|max| steps_run >= max)
                || (opts.only.is_some() && steps_run > 0)
            {
                break StepOutcome::Done;
            }
            let next = self.next(&task, opts.only);
            // A parent whose sub-steps were ticked outside a run (by hand, `tick mark`) is next
            // in its turn (its `depends` done, nothing blocked before it): its own check runs,
            // with no model, once in a run.
            if let Next::Step(parent) = next
                && task
                    .todo
                    .find(parent)
                    .is_some_and(crate::tasks::todo_md::Step::awaits_its_check)
                && settled.insert(parent)
            {
                match self.settle_parent(parent, sink)? {
                    Settled::Blocked => break StepOutcome::Blocked,
                    // Ticked as a run ticks a step: its `step.done` hooks, and `--commit`.
                    Settled::Ticked => {
                        self.step_event(parent, crate::hooks::Event::StepDone, |_| {}, sink);
                        if self.deps.commit || commits_each_step(&task) {
                            let title = task.todo.find(parent).map(|s| s.title.clone());
                            let title = title.unwrap_or_default();
                            self.commit_step(&task, parent, &title, &[], sink)?;
                        }
                    }
                    Settled::Left => {}
                }
                continue;
            }
            let id = match next {
                Next::Step(_) if self.deps.model.is_empty() => return Err(build::no_model()),
                Next::Step(id) => id,
                Next::AllDone => {
                    if steps_run == 0 {
                        sink(RunEvent::NothingToRun { step: None });
                    }
                    break StepOutcome::Done;
                }
                Next::AlreadyDone(id) => {
                    sink(RunEvent::NothingToRun { step: Some(id) });
                    break StepOutcome::Done;
                }
                Next::Blocked { id, reason } => {
                    sink(RunEvent::StepBlocked {
                        step: id,
                        reason,
                        before_run: true,
                    });
                    break StepOutcome::Blocked;
                }
                Next::Waiting { id, on } => {
                    return Err(Error::input(format!(
                        "`{id}` depends on `{on}`, which is not done and cannot run first"
                    ))
                    .hint("fix the `depends:` line in TODO.md, or finish the other step"));
                }
            };
            let outcome = self.run_step(&task, id, confirm, sink)?;
            if self.deps.interrupted.load(Ordering::Relaxed) && outcome == StepOutcome::Done {
                sink(RunEvent::Interrupted {
                    step: id,
                    in_progress: false,
                });
                break StepOutcome::Interrupted;
            }
            steps_run += 1;
            if outcome != StepOutcome::Done {
                break outcome;
            }
        };
        let summary = self.summary(ended, steps_run)?;
        sink(RunEvent::Summary(summary.clone()));
        self.run_end(ended, sink);
        Ok(RunOutcome {
            ended,
            steps_run,
            summary,
        })
    }

    /// Writes a step's status and, in the same transaction, its state.yaml record
    /// ([`write::step`]), and reports what a person's edit kept.
    fn write_step(
        &self,
        write: StepWrite<'_>,
        record: impl FnMut(&mut crate::tasks::state::State, bool),
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let store = self.store();
        let StepWrite { id, status, .. } = write;
        let written = write::step(
            store,
            &self.deps.task,
            self.deps.clock.precise(),
            write,
            record,
        )?;
        self.write_events(id, status, written, sink);
        Ok(())
    }

    /// The events of a write that did not go as asked: a person's marker kept, or the step
    /// gone from TODO.md.
    fn write_events(
        &self,
        id: StepId,
        wanted: StepStatus,
        written: StatusWrite,
        sink: &mut Sink<'_>,
    ) {
        let file = self.store().rel(&self.deps.task.dir.join(TODO_FILE));
        match written {
            StatusWrite::Written(_) => {}
            StatusWrite::Kept { current } => sink(RunEvent::StatusKept {
                step: id,
                file,
                current,
                wanted,
            }),
            StatusWrite::Missing => sink(RunEvent::StepMissing { step: id, file }),
        }
    }

    fn save_state(&self, update: impl FnMut(&mut crate::tasks::state::State)) -> Result<()> {
        write::save_state(
            self.store(),
            &self.deps.task,
            self.deps.clock.precise(),
            update,
        )
    }

    /// A journal of what tick does for step `id` of `task`, whose files are `scope`.
    fn recorder(&self, task: &Task, id: StepId, scope: &[String]) -> Recorder {
        Recorder::new(
            self.store(),
            &task.id,
            id,
            scope,
            self.deps.clock.clone(),
            SystemTime::now(),
        )
    }

    /// A verification of `step` with no attempts used yet, and a recorder for it.
    fn verifier(
        &self,
        task: &Task,
        id: StepId,
        step: &crate::tasks::todo_md::Step,
    ) -> (StepVerifier, Recorder) {
        (
            StepVerifier::new(
                self.root(),
                self.deps.registry.command_env(),
                id,
                &step.verify,
            ),
            self.recorder(task, id, &step.files),
        )
    }

    /// Verifies the stale steps of `task` again: pass, and the step is `[x]` again with new
    /// evidence; fail (or no verification to run), and it is `[ ]`, to be redone.
    pub fn reverify_stale(&mut self, task: &Task, sink: &mut Sink<'_>) -> Result<()> {
        for step in task.todo.all_steps() {
            let (Some(id), StepStatus::Stale) = (step.id, step.status) else {
                continue;
            };
            let again = reverify::reverify_step(
                self.store(),
                &self.deps.task,
                &task.id,
                (self.deps.registry.command_env(), &self.deps.hooks),
                &self.deps.clock,
                step,
                sink,
            )?;
            self.write_events(id, again.status, again.written, sink);
            sink(RunEvent::StaleReverified {
                step: id,
                passed: again.passed,
                has_verify: again.has_verify,
            });
        }
        Ok(())
    }

    /// When the last sub-step of `parent` is done: a parent with no `verify` of its own was
    /// ticked with it, and is recorded done by the runner. A parent with its own runs it now:
    /// pass, the runner ticks it with the evidence; fail, the parent is blocked with the
    /// failure.
    fn settle_parent(&self, parent: StepId, sink: &mut Sink<'_>) -> Result<Settled> {
        let task = self.store().load(&self.deps.task)?;
        let Some(step) = task.todo.find(parent) else {
            return Ok(Settled::Left);
        };
        let awaits = step.awaits_its_check();
        if step.status != StepStatus::Done && !awaits {
            return Ok(Settled::Left);
        }
        let (mut verifier, mut recorder) = self.verifier(&task, parent, step);
        let mut passed = matches!(
            verifier.verify(&mut recorder, &mut *sink),
            Verdict::Passed { .. }
        );
        // Its `step.verify` hooks guard its tick as any step's.
        if passed {
            let evidence = verifier.evidence().to_vec();
            let event = crate::hooks::Event::StepVerify;
            let fired = self.step_event(parent, event, |p| p.evidence = evidence, sink);
            verifier.add_evidence(fired.evidence);
            passed = fired.block.is_none();
        }
        let prints = crate::watch::fingerprint(self.root(), &step.files, &[]);
        let now = self.deps.clock.precise();
        if passed {
            let record = |state: &mut crate::tasks::state::State| {
                state.record_runner(
                    parent,
                    StepStatus::Done,
                    now,
                    verifier.evidence(),
                    prints.clone(),
                );
            };
            // A person's marker kept over the write is not ticked (tick_source checks too).
            let mut landed = true;
            if awaits {
                // Its own check ticks it, with the evidence in the same write.
                let write = StepWrite {
                    id: parent,
                    expected: Some(step.status),
                    status: StepStatus::Done,
                    reason: None,
                };
                let record = |state: &mut crate::tasks::state::State, written: bool| {
                    landed = written;
                    if written {
                        record(state);
                    }
                };
                self.write_step(write, record, sink)?;
            } else {
                // The parent's box was ticked with its last sub-step: only its record is new.
                self.save_state(record)?;
            }
            if let Some(ticked) = source::tick_source(self.store(), &self.deps.task, parent, now) {
                sink(ticked);
            }
            return Ok(if awaits && landed {
                Settled::Ticked
            } else {
                Settled::Left
            });
        }
        let failed = verifier.evidence().last().map_or_else(String::new, |e| {
            format!("`{}` exit {}", e.command, e.exit_code)
        });
        let reason = format!("its sub-steps are done but its verification fails: {failed}");
        let write = StepWrite {
            id: parent,
            expected: Some(step.status),
            status: StepStatus::Blocked,
            reason: Some(&reason),
        };
        self.write_step(
            write,
            |state, written| {
                if written {
                    state.record_runner(
                        parent,
                        StepStatus::Blocked,
                        now,
                        verifier.evidence(),
                        BTreeMap::new(),
                    );
                }
            },
            sink,
        )?;
        sink(RunEvent::StepBlocked {
            step: parent,
            reason,
            before_run: false,
        });
        Ok(Settled::Blocked)
    }

    /// Runs one step of `task` (as loaded just before): marks it `[-]`, lets the model work
    /// on it from a fresh context pack, verifies its `done` claim, and records the outcome in
    /// TODO.md and state.yaml. A provider or limit failure is an error; the step then stays
    /// in progress.
    pub fn run_step(
        &mut self,
        task: &Task,
        id: StepId,
        confirm: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<StepOutcome> {
        let step = task
            .todo
            .find(id)
            .ok_or_else(|| Error::internal(format!("step `{id}` vanished")))?
            .clone();
        self.start(id, &step.title, sink)?;
        let scope = step_scope(task, id, &step);
        // What earlier (blocked or failed) attempts of this step changed.
        let earlier = earlier_changes(task, id);
        let root = self.deps.store.root().to_path_buf();
        let before = Snapshot::take(&root, &scope, &earlier);
        let capture = images::Capture::start(
            &root,
            &task.dir,
            &id.to_string(),
            &before,
            self.deps.limits.max_undo_bytes,
        );
        let started = self.step_event(id, crate::hooks::Event::StepStart, |_| {}, sink);
        self.hook_context = started.context;
        let work = self.work(task, id, &step, &scope, sink);
        if work.verify_passed_before() {
            self.save_state(|state| {
                state.steps.entry(id).or_default().verify_passed_before = true;
            })?;
        }
        let mut changes = attribute(&root, &scope, &earlier, &before, &work);
        changes.absorb(capture.finish(&changes.changed, &changes.after));
        if !work.tampered.is_empty() {
            // Nothing is taken from the tampered files and nothing is written into them: the
            // step is not ticked, and the person sees what changed.
            return Err(tampered_error(id, &work.tampered));
        }
        let end = match work.result {
            Ok(end) => end,
            Err(err) => return Err(self.record_failure(id, step_error(err, id), &changes)?),
        };
        let evidence = work.verifier.evidence().to_vec();
        match end {
            StepEnd::Done { note } => {
                let done = Done {
                    note,
                    evidence,
                    idle: changes.files_changed.is_empty() && work.agent_commands == 0,
                    passed_before: work.passed_before,
                };
                self.record_done(
                    task,
                    id,
                    &step.title,
                    &scope,
                    &changes,
                    &done,
                    confirm,
                    sink,
                )
            }
            StepEnd::Blocked { reason } => {
                self.record_blocked(id, &reason, &evidence, &changes, sink)
            }
            StepEnd::Replanned { proposal } => {
                self.record_replanned(id, &proposal, &evidence, &changes, sink)
            }
            StepEnd::Interrupted => {
                sink(RunEvent::Interrupted {
                    step: id,
                    in_progress: true,
                });
                Ok(StepOutcome::Interrupted)
            }
        }
    }

    /// A step starts: the event, and `[-]` in TODO.md with its record in state.yaml.
    fn start(&self, id: StepId, title: &str, sink: &mut Sink<'_>) -> Result<()> {
        if let Some(overlap) = source::overlaps_before(self.store(), &self.deps.task, id) {
            sink(overlap);
        }
        sink(RunEvent::StepStarted {
            step: id,
            title: title.to_owned(),
        });
        let now = self.deps.clock.precise();
        let start = StepWrite {
            id,
            expected: None,
            status: StepStatus::InProgress,
            reason: None,
        };
        self.write_step(
            start,
            |state, written| {
                if written {
                    state.record_runner(id, StepStatus::InProgress, now, &[], BTreeMap::new());
                }
            },
            sink,
        )
    }

    /// The model's turn on a step, from a fresh context pack, with the runner's hooks around
    /// each tool call and its `done` claim; the transcript is saved whatever the end.
    fn work(
        &mut self,
        task: &Task,
        id: StepId,
        step: &crate::tasks::todo_md::Step,
        scope: &[String],
        sink: &mut Sink<'_>,
    ) -> Work {
        if let Some(options) = self.deps.compact.clone() {
            return self.work_compact(task, id, step, scope, &options, sink);
        }
        let root = self.deps.store.root().to_path_buf();
        let mut pack = context::pack(task, id);
        for context in std::mem::take(&mut self.hook_context) {
            pack.push_str(&format!("\n\nFrom a hook of the person's: {context}"));
        }
        let mut messages = vec![Message::user(pack)];
        // Changes from before this step (tick's own TODO.md write, say) are not news.
        if let Some(watcher) = self.watcher.as_mut() {
            while watcher.try_next().is_some() {}
        }
        let fire = self.for_step(task, id, step);
        // The step is offered exactly the MCP tools its approved plan names.
        let (registry, warnings) = self.deps.registry.for_step(&id.to_string(), &step.tools);
        for text in warnings {
            sink(RunEvent::McpWarning { step: id, text });
        }
        let emitter = Emitter::new(&mut *sink);
        let (verifier, recorder) = (
            StepVerifier::new(&root, self.deps.registry.command_env(), id, &step.verify),
            self.recorder(task, id, scope),
        );
        let mut hooks = Hooks::new(
            &root,
            id,
            (verifier, recorder),
            self.watcher.as_mut(),
            &emitter,
            scope,
            earlier_in_scope(task, id, scope),
            replan::Check {
                task,
                step: id,
                max_new: self.deps.limits.replan_max_new_steps,
            },
        );
        hooks.fire = fire;
        hooks.verify_before_change();
        let executor = Executor {
            model: Model {
                client: self.deps.client,
                model: self.deps.model.clone(),
                system: self.deps.system.clone(),
                registry: &registry,
                limits: self.deps.limits,
                tool_calls: self.deps.tool_calls,
            },
            step: id,
            interrupted: &self.deps.interrupted,
        };
        let mut agent = |agent: AgentEvent| {
            // A server that stopped or was started again is told at the moment: before the
            // call's result and the rest of the turn.
            for text in registry.take_mcp_notices() {
                emitter.emit(RunEvent::McpWarning { step: id, text });
            }
            emitter.emit(RunEvent::Agent { step: id, agent });
        };
        let result = crate::rt::block_on(executor.run(
            &mut messages,
            &mut hooks,
            &mut agent,
            &mut self.usage,
        ))
        .unwrap_or_else(|err| Err(runtime_failed(&err)));
        for text in registry.take_mcp_notices() {
            emitter.emit(RunEvent::McpWarning { step: id, text });
        }
        let work = hooks.finish(result);
        self.save_transcript(&task.dir, id, &messages);
        work
    }

    /// A failed attempt (the provider, a limit), recorded with what it changed in one write;
    /// the step stays in progress. Returns the error to end the run with.
    fn record_failure(&self, id: StepId, err: Error, changes: &Attributed) -> Result<Error> {
        let attempt = LastAttempt::from_error(self.deps.clock.precise(), Some(id), &err);
        self.save_state(|state| {
            let record = state.steps.entry(id).or_default();
            record.files_changed.clone_from(&changes.files_changed);
            record.before_images_not_kept.clone_from(&changes.not_kept);
            state.record_failure(attempt.clone());
        })?;
        Ok(err)
    }

    /// A verified (or unverifiable) step is ticked with its evidence and fingerprints; its
    /// parent settles, `--commit` commits it, then the file limit and its deviations.
    #[allow(
        clippy::too_many_arguments,
        reason = "the parts of one step's end, each named at the one call"
    )]
    fn record_done(
        &self,
        task: &Task,
        id: StepId,
        title: &str,
        scope: &[String],
        changes: &Attributed,
        done: &Done,
        confirm: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<StepOutcome> {
        let Attributed {
            changed,
            files_changed,
            outside,
            not_kept,
            ..
        } = changes;
        let root = self.root();
        let now = self.deps.clock.precise();
        let prints = crate::watch::fingerprint(root, scope, files_changed);
        let deviation = changes::deviations(scope, changed);
        // This attempt's baseline, or an earlier attempt's as state.yaml keeps it.
        let mut passed_before = done.passed_before;
        let write = StepWrite {
            id,
            expected: Some(StepStatus::InProgress),
            status: StepStatus::Done,
            reason: None,
        };
        self.write_step(
            write,
            |state, written| {
                let record = if written {
                    state.clear_failure();
                    let record = state.record_runner(
                        id,
                        StepStatus::Done,
                        now,
                        &done.evidence,
                        prints.clone(),
                    );
                    record.claimed_without_changes = done.idle;
                    record
                } else {
                    state.steps.entry(id).or_default()
                };
                record.files_changed.clone_from(files_changed);
                record.before_images_not_kept.clone_from(not_kept);
                record.deviations.clone_from(&deviation);
                record.outside_edits = outside.iter().cloned().collect();
                record.note = done.note.as_deref().map(|n| crate::redact::redact(n, &[]));
                passed_before |= record.verify_passed_before;
                if written {
                    move_earlier_prints(state, id, &prints, files_changed, outside);
                }
            },
            sink,
        )?;
        sink(RunEvent::StepDone {
            step: id,
            verified: !done.evidence.is_empty() && !passed_before,
            passed_before,
            files_changed: files_changed.clone(),
        });
        let evidence = done.evidence.clone();
        self.step_event(
            id,
            crate::hooks::Event::StepDone,
            |p| p.evidence = evidence,
            sink,
        );
        if let Some(ticked) = source::tick_source(self.store(), &self.deps.task, id, now) {
            sink(ticked);
        }
        let parent_blocked =
            id.is_sub() && self.settle_parent(id.parent(), sink)? == Settled::Blocked;
        // `--commit`, or the approval's contract (`approve --commit-steps`).
        if self.deps.commit || commits_each_step(task) {
            let dirty: BTreeSet<String> = changes::dirty_files(root)
                .ok_or_else(|| {
                    Error::input("`--commit` needs a git repository, and git sees none here").hint(
                        "the step is done and recorded; run without `--commit`, or `git init`",
                    )
                })?
                .into_keys()
                .collect();
            let files = changes::commit_set(scope, changed, &dirty);
            self.commit_step(task, id, title, &files, sink)?;
        }
        if parent_blocked {
            return Ok(StepOutcome::Blocked);
        }
        self.after_done(id, &deviation, confirm, sink)
    }

    /// The model said the step is blocked: `[!]` with its reason, and what it changed.
    fn record_blocked(
        &self,
        id: StepId,
        reason: &str,
        evidence: &[crate::tasks::state::Evidence],
        changes: &Attributed,
        sink: &mut Sink<'_>,
    ) -> Result<StepOutcome> {
        let now = self.deps.clock.precise();
        let reason = crate::redact::redact(reason, &[]);
        let blocked = StepWrite {
            id,
            expected: Some(StepStatus::InProgress),
            status: StepStatus::Blocked,
            reason: Some(&reason),
        };
        self.write_step(
            blocked,
            |state, written| {
                blocked_record(state, written, id, now, evidence, changes);
            },
            sink,
        )?;
        sink(RunEvent::StepBlocked {
            step: id,
            reason: reason.clone(),
            before_run: false,
        });
        let evidence = evidence.to_vec();
        self.step_event(
            id,
            crate::hooks::Event::StepBlocked,
            |p| {
                p.reason = Some(reason);
                p.evidence = evidence;
            },
            sink,
        );
        Ok(StepOutcome::Blocked)
    }

    /// Before anything runs: the repository's hooks that do not run are named, the hooks
    /// must be the approved ones, and each hook's command must exist.
    fn check_hooks(&self, task: &Task, sink: &mut Sink<'_>) -> Result<()> {
        let set = &self.deps.hooks;
        if let Some(warning) = set.ignored_warning() {
            sink(RunEvent::HooksIgnored { warning });
        }
        if let Err((changes, refused)) = hooks_as_approved(set, self.deps.store, task) {
            sink(RunEvent::HooksChanged { changes });
            return Err(refused);
        }
        let env = self.deps.registry.command_env();
        if let Some((entry, why)) = set.missing_commands(self.root(), env).into_iter().next() {
            return Err(Error::input(format!(
                "the {} hook `{}` cannot run: {why}",
                entry.event, entry.command
            ))
            .hint(
                "fix its `command` under `hooks:` in your config; `tick doctor` checks every \
                 hook; nothing was run",
            ));
        }
        Ok(())
    }

    /// The hooks of step `id` of `task` for its turn, when there are any.
    fn for_step(
        &self,
        task: &Task,
        id: StepId,
        step: &crate::tasks::todo_md::Step,
    ) -> Option<crate::hooks::ForStep> {
        let set = &self.deps.hooks;
        if set.is_empty() {
            return None;
        }
        Some(crate::hooks::ForStep {
            set: set.clone(),
            root: self.root().to_path_buf(),
            env: self.deps.registry.command_env().clone(),
            runs_dir: task.dir.join(RUNS_DIR),
            step: id,
            payload: crate::hooks::Payload::for_step(task, id, step, self.root()),
            tool: None,
            pending: Vec::new(),
        })
    }

    /// Runs the hooks of `event` for step `id`, of the task as it is on disk now.
    fn step_event(
        &self,
        id: StepId,
        event: crate::hooks::Event,
        edit: impl FnOnce(&mut crate::hooks::Payload),
        sink: &mut Sink<'_>,
    ) -> crate::hooks::Fired {
        if !self.deps.hooks.has(event) {
            return crate::hooks::Fired::default();
        }
        let Ok(task) = self.store().load(&self.deps.task) else {
            return crate::hooks::Fired::default();
        };
        let Some(step) = task.todo.find(id) else {
            return crate::hooks::Fired::default();
        };
        let checks = (self.deps.registry.command_env(), &self.deps.hooks);
        reverify::fire_for_step(&task, self.root(), checks, step, event, edit, sink)
    }

    /// `run.end`: the run is over (how, in the payload's `reason`).
    fn run_end(&self, ended: StepOutcome, sink: &mut Sink<'_>) {
        use crate::hooks::Event;
        if !self.deps.hooks.has(Event::RunEnd) {
            return;
        }
        let Ok(task) = self.store().load(&self.deps.task) else {
            return;
        };
        let mut payload = crate::hooks::Payload::for_task(&task, self.root());
        payload.reason = serde_json::to_value(ended)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        let how = crate::hooks::Fire {
            root: self.root(),
            env: self.deps.registry.command_env(),
            read_only: false,
            runs_dir: task.dir.join(RUNS_DIR),
            step: None,
        };
        crate::hooks::fire(
            &self.deps.hooks,
            &how,
            Event::RunEnd,
            "",
            &payload,
            &mut |r| {
                sink(RunEvent::Hook(r));
            },
        );
    }

    /// After a done step: the task's file limit, then the step's deviations.
    fn after_done(
        &self,
        id: StepId,
        deviation: &[String],
        confirm: &mut dyn Person,
        sink: &mut Sink<'_>,
    ) -> Result<StepOutcome> {
        let task = self.store().load(&self.deps.task)?;
        let approval = task.plan.front.approval.as_ref();
        if let Some(max) = approval.and_then(|a| a.max_files_changed) {
            let total: BTreeSet<&String> = task
                .state
                .steps
                .values()
                .flat_map(|r| r.files_changed.iter())
                .collect();
            if total.len() > max as usize {
                sink(RunEvent::Limit {
                    task: task.id.clone(),
                    named: crate::tasks::naming::task_named(self.deps.store, &task.id),
                    files_changed: total.len(),
                    max_files_changed: max,
                });
                return Ok(StepOutcome::Limit);
            }
        }
        if deviation.is_empty() {
            return Ok(StepOutcome::Done);
        }
        let allowed = approval.is_some_and(|a| a.allow_deviation);
        sink(RunEvent::Deviation {
            step: id,
            files: deviation.to_vec(),
            allowed,
        });
        if allowed || confirm.go_on_after_deviation(id, deviation) {
            return Ok(StepOutcome::Done);
        }
        let more = task
            .todo
            .all_steps()
            .any(|s| s.id != Some(id) && s.status != StepStatus::Done);
        sink(RunEvent::Paused {
            step: id,
            files: deviation.to_vec(),
            more,
        });
        Ok(StepOutcome::Paused)
    }

    /// What a blocked compact step tried (its candidates' diffs), beside its transcripts:
    /// `runs/<time>-S1-tried.diff`, which `tick diff S1` shows.
    fn save_tried(&self, task_dir: &Path, id: StepId, tried: &str) {
        let secrets: Vec<&str> = self.deps.secrets.iter().map(String::as_str).collect();
        let text = crate::redact::redact(tried, &secrets);
        self.save_run_file(task_dir, &format!("{id}-tried.diff"), &text);
    }

    /// The step's conversation, for the record (`runs/` is not committed).
    fn save_transcript(&self, task_dir: &Path, id: StepId, messages: &[Message]) {
        let secrets: Vec<&str> = self.deps.secrets.iter().map(String::as_str).collect();
        let text = crate::transcript::jsonl(
            messages,
            &secrets,
            self.deps.limits.max_transcript_entry_bytes,
        );
        self.save_run_file(task_dir, &format!("{id}.jsonl"), &text);
    }

    /// `runs/<time>-<name>` in the task's folder, best effort: the record is not worth
    /// failing a step for.
    fn save_run_file(&self, task_dir: &Path, name: &str, text: &str) {
        let dir = task_dir.join(RUNS_DIR);
        let name = format!(
            "{}-{name}",
            self.deps.clock.precise().format("%Y%m%d-%H%M%S")
        );
        if fsx::create_dir_all(&dir).is_ok() {
            let _ = fsx::write_atomic(&dir.join(name), text.as_bytes());
        }
    }

    /// One commit for a verified step ([`commit_verified_step`]), said as an event.
    fn commit_step(
        &self,
        task: &Task,
        id: StepId,
        title: &str,
        files: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        match commit_verified_step(self.store(), task, id, title, files)? {
            None => sink(RunEvent::CommitSkipped { step: id }),
            Some((commit, files)) => sink(RunEvent::Committed {
                step: id,
                commit,
                files,
            }),
        }
        Ok(())
    }

    /// Where the task stands now, for the closing line.
    pub fn summary(&self, ended: StepOutcome, steps_run: usize) -> Result<Summary> {
        let task = self.store().load(&self.deps.task)?;
        let progress = task.progress();
        let blocked = task
            .todo
            .all_steps()
            .filter(|s| s.status == StepStatus::Blocked)
            .filter_map(|s| {
                Some(BlockedStep {
                    step: s.id?,
                    reason: s.blocked.clone(),
                })
            })
            .collect();
        Ok(Summary {
            task: task.id.clone(),
            done: progress.done,
            total: progress.total,
            blocked,
            phase: task.phase(),
            outcome: ended,
            steps_run,
            usage: self.usage,
            sandboxed: self.deps.sandboxed,
        })
    }
}

/// Whether the approval's contract commits each verified step (`approve --commit-steps`).
pub fn commits_each_step(task: &Task) -> bool {
    task.plan
        .front
        .approval
        .as_ref()
        .is_some_and(|a| a.commit_steps)
}

/// One commit for a verified step: the files it changed and the task's folder, nothing
/// else; none at all (`None`) when it changed no file outside `.tasks/`. Returns the commit
/// and the paths it holds. `tick run --commit` and `tick mcp serve --commit` both commit so.
pub fn commit_verified_step(
    store: &Store,
    task: &Task,
    id: StepId,
    title: &str,
    files: &[String],
) -> Result<Option<(Option<String>, Vec<String>)>> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut paths = files.to_vec();
    // The whole task folder (what `.tasks/.gitignore` leaves out stays out): TODO.md,
    // state.yaml, and the history files a re-plan or re-approval wrote, so the commit
    // leaves no bookkeeping of this step behind.
    paths.push(store.rel(&task.dir));
    let message = format!("{title}\n\nTask: {}\nStep: {id}\n", task.id);
    crate::git::commit_paths(store.root(), &paths, &message).map_err(|err| match err {
        crate::git::CommitError::NestedRepository { .. } => {
            Error::input(format!("{err}; nothing was committed")).hint(
                "the step is done and recorded; commit it by hand, after removing the nested \
                 repository's `.git` or adding it as a submodule yourself (`git submodule add`)",
            )
        }
        crate::git::CommitError::Git(_) => {
            Error::internal(err).hint("the step is done and recorded; commit it by hand")
        }
    })?;
    Ok(Some((crate::git::head(store.root()), paths)))
}

/// The fingerprints of this task's other done steps, moved on in the same write as the step
/// that changed their files (tick's own change, in band: `watch::stale::move_forward` would
/// do it at the next command, after a `--commit` had already been made, leaving state.yaml
/// modified). Only files the step itself changed and no person touched while it ran: a
/// person's edit still makes the earlier step stale.
fn move_earlier_prints(
    state: &mut crate::tasks::state::State,
    id: StepId,
    prints: &std::collections::BTreeMap<String, String>,
    files_changed: &[String],
    outside: &BTreeSet<String>,
) {
    for (other, record) in &mut state.steps {
        if *other == id || record.status != Some(StepStatus::Done) {
            continue;
        }
        for (path, hash) in &mut record.fingerprints {
            if outside.contains(path) || !files_changed.contains(path) {
                continue;
            }
            if let Some(now) = prints.get(path) {
                hash.clone_from(now);
            }
        }
    }
}

/// What the model's turn on a step left: how it ended, and what the hooks saw meanwhile.
struct Work {
    result: std::result::Result<StepEnd, StepError>,
    verifier: StepVerifier,
    recorder: Recorder,
    /// Files a person changed while the step ran, as the watcher saw them.
    outside: BTreeSet<String>,
    tampered: Vec<tamper::Tampered>,
    agent_commands: usize,
    /// The step's verify passed before its first change.
    passed_before: bool,
}

/// What a step changed, and what a person changed meanwhile.
struct Attributed {
    /// Paths the step changed (its tools' writes, the differences it made, and earlier
    /// attempts' changes still there), without `.tasks/` and `.git/`.
    changed: BTreeSet<String>,
    /// The same, as state.yaml records them.
    files_changed: Vec<String>,
    /// Files a person changed while the step ran.
    outside: BTreeSet<String>,
    /// The snapshot at the step's end.
    after: Snapshot,
    /// Files the step changed whose before-image was not kept (see [`images`]).
    not_kept: Vec<String>,
}

impl Attributed {
    /// What keeping the before-images found: a mode change is a change too.
    fn absorb(&mut self, finished: images::Finished) {
        self.changed.extend(finished.mode_changed);
        self.files_changed = self.changed.iter().cloned().collect();
        self.not_kept = finished.not_kept.into_keys().collect();
    }
}

/// How a step the model claimed done ended.
struct Done {
    note: Option<String>,
    evidence: Vec<crate::tasks::state::Evidence>,
    /// Claimed done, yet no file changed and the agent ran no command.
    idle: bool,
    /// The step's verify passed before this attempt changed anything.
    passed_before: bool,
}

/// The files a step works within: its own, and a sub-step's parent's.
/// A step written `[!]` (`written`: by this write) gets the runner's record with its
/// evidence; either way the record keeps what the attempt changed. Returns the record.
fn blocked_record<'s>(
    state: &'s mut crate::tasks::state::State,
    written: bool,
    id: StepId,
    now: chrono::DateTime<chrono::Utc>,
    evidence: &[crate::tasks::state::Evidence],
    changes: &Attributed,
) -> &'s mut crate::tasks::state::StepRecord {
    let record = if written {
        state.record_runner(id, StepStatus::Blocked, now, evidence, BTreeMap::new())
    } else {
        state.steps.entry(id).or_default()
    };
    record.files_changed.clone_from(&changes.files_changed);
    record.before_images_not_kept.clone_from(&changes.not_kept);
    record
}

pub fn step_scope(task: &Task, id: StepId, step: &crate::tasks::todo_md::Step) -> Vec<String> {
    let mut scope = step.files.clone();
    if let Some(parent) = Some(id)
        .filter(|i| i.is_sub())
        .and_then(|i| task.todo.find(i.parent()))
    {
        scope.extend(parent.files.iter().cloned());
    }
    scope
}

/// Whether an earlier attempt of step `id` changed one of its files (`scope`).
fn earlier_in_scope(task: &Task, id: StepId, scope: &[String]) -> bool {
    let earlier = earlier_changes(task, id);
    changes::deviations(scope, &earlier).len() < earlier.len()
}

/// The files earlier (blocked or failed) attempts of step `id` changed, as state.yaml has it
/// (`tick run` and `tick mcp serve` alike).
pub(crate) fn earlier_changes(task: &Task, id: StepId) -> BTreeSet<String> {
    task.state
        .steps
        .get(&id)
        .map(|r| r.files_changed.iter().cloned().collect())
        .unwrap_or_default()
}

/// What the step changed: what its tools wrote, what differs from `before` it, and what
/// `earlier` attempts changed that is still changed. A file a person changed meanwhile is
/// theirs, unless the step's tools wrote it too: what the watcher reported, and what the
/// attribution rule does not give to tick (the watcher may not have said so yet).
fn attribute(
    root: &Path,
    scope: &[String],
    earlier: &BTreeSet<String>,
    before: &Snapshot,
    work: &Work,
) -> Attributed {
    let after = Snapshot::take(root, scope, &before.files.keys().cloned().collect());
    let recorder = &work.recorder;
    let mut outside = work.outside.clone();
    for path in before.changed(&after) {
        if recorder.written().contains_key(&path) || outside.contains(&path) {
            continue;
        }
        let hash = after
            .files
            .get(&path)
            .map_or(crate::watch::fingerprint::MISSING, String::as_str);
        if !recorder.owns(&path, hash, None) {
            outside.insert(path);
        }
    }
    let mut changed: BTreeSet<String> = recorder.written().keys().cloned().collect();
    changed.extend(before.changed(&after).difference(&outside).cloned());
    if let Some(dirty) = &after.dirty {
        changed.extend(earlier.intersection(dirty).cloned());
    }
    changed.retain(|p| !p.starts_with(".tasks/") && !p.starts_with(".git/"));
    Attributed {
        files_changed: changed.iter().cloned().collect(),
        changed,
        outside,
        after,
        not_kept: Vec::new(),
    }
}

/// The error of a step during which something other than tick changed guarded files.
fn tampered_error(id: StepId, tampered: &[tamper::Tampered]) -> Error {
    let list: Vec<String> = tampered.iter().map(ToString::to_string).collect();
    Error::input(format!(
        "something other than tick changed {} while `{id}` ran; the step was not ticked",
        list.join(", ")
    ))
    .hint(
        "tick put back what it could, as it was before the command; look at what is left \
         (`git diff`, `git status .tasks`), then `tick run` again; run with the sandbox on so \
         commands cannot write there",
    )
}

/// Why a step whose guarded files changed cannot be ticked, for the model.
fn tampered_reason(tampered: &[tamper::Tampered]) -> String {
    let list: Vec<String> = tampered.iter().map(ToString::to_string).collect();
    format!(
        "tick stopped this step: a command changed {}, which only tick and the person may change",
        list.join(", ")
    )
}

/// A step's turn that failed, as a person reads it: what failed and that the step stays in
/// progress.
fn step_error(err: StepError, id: StepId) -> Error {
    let left = format!("`{id}` stays in progress; `tick run` picks it up again");
    match err {
        StepError::Llm(err) => {
            let hint = err.hint();
            let mut error = Error::new(ErrorKind::Provider, err.to_string());
            if let Some(hint) = hint {
                error = error.hint(hint);
            }
            error.hint(left)
        }
        StepError::NoReport => Error::new(
            ErrorKind::Provider,
            "the model stopped without reporting the step with `update_step`, even after a reminder",
        )
        .hint(crate::agent::CHANGE_MODEL_HINT)
        .hint(left),
        StepError::TurnLimit { turns } => Error::new(
            ErrorKind::Limit,
            format!("`{id}` used all {turns} turns without finishing"),
        )
        .hint(format!("raise `limits.max_turns` in `.tasks/config.yaml`, or split the step; {left}")),
        StepError::TokenLimit { used, limit } => Error::new(
            ErrorKind::Limit,
            format!("the run used {used} tokens, over the limit of {limit}"),
        )
        .hint(format!("raise `limits.max_tokens` in `.tasks/config.yaml`; {left}")),
    }
}

#[cfg(test)]
mod tests;
