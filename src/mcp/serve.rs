//! `tick mcp serve`: tick's tasks as MCP tools over stdio, so another agent (Claude Code,
//! Codex, ...) can execute an approved plan while tick keeps the checklist true.
//!
//! The agent reads (`list_tasks`, `show_task`, `next_step`, `status`), claims the next step
//! (`claim_step`: `[-]`), and reports it done (`report_done`) or blocked (`report_blocked`).
//! A done report is a claim, as `update_step done` is in `tick run`: tick runs the step's
//! `verify` commands itself, in the sandbox, through the runner's verifier, and ticks `[x]`
//! with the evidence only when they pass. No tool drafts, edits or approves a plan: that stays
//! with the person. Every write takes the task's lock and goes through the store's
//! transaction, like every other writer.
//!
//! [`Tasks`] is the tools' logic, synchronous and free of the protocol; [`TickServer`] is
//! rmcp's handler around it, which runs each call on a blocking thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::agent::executor::Verdict;
use crate::env::Clock;
use crate::error::{Error, Result};
use crate::hooks::{Event, HookReport, HookSet};
use crate::plan::{StepId, StepStatus};
use crate::runner::changes::{self, Snapshot};
use crate::runner::record::Recorder;
use crate::runner::verify::StepVerifier;
use crate::runner::write::{self, StatusWrite, StepWrite};
use crate::runner::{Next, RunEvent, next_step};
use crate::tasks::{RUNS_DIR, Store, Task, TaskRef};
use crate::tools::bash::CommandEnv;

/// The tools, in the order `tools/list` gives them.
pub const TOOL_NAMES: [&str; 7] = [
    "list_tasks",
    "show_task",
    "next_step",
    "claim_step",
    "report_done",
    "report_blocked",
    "status",
];

/// Who holds the task lock while a tool writes (shown to a command that waits on it).
const HOLDER: &str = "tick mcp serve";

/// The tools' logic over one workspace's store.
pub struct Tasks {
    store: Store,
    /// The environment and sandbox the step's `verify` commands run in: `tick run`'s.
    env: CommandEnv,
    clock: Clock,
    /// The person's hooks (`step.claimed`, `step.verify`, `step.done` run as in `tick run`).
    hooks: HookSet,
    /// Commit each verified step (`--commit`); without it the approval's contract decides.
    commit: bool,
    /// What the workspace held when each step was claimed, to see what the step changed.
    claimed: Mutex<BTreeMap<(String, StepId), Snapshot>>,
    /// Where each hook's report goes, to be shown to the person on stderr (stdout is the
    /// protocol's); none: the reports are only recorded as evidence.
    reports: Option<Sender<HookReport>>,
}

/// How `tick mcp serve` credits a step it ticks, besides verifying it.
#[derive(Debug, Clone, Default)]
pub struct Credit {
    pub hooks: HookSet,
    pub commit: bool,
}

/// `{task?}`: the task (id, prefix or part of its name); default: the current one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    #[serde(default)]
    task: Option<String>,
}

/// `{step, task?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepArgs {
    step: String,
    #[serde(default)]
    task: Option<String>,
}

/// `{step, task?, note?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DoneArgs {
    step: String,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

/// `{step, reason, task?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockedArgs {
    step: String,
    reason: String,
    #[serde(default)]
    task: Option<String>,
}

/// A tool's failure, as the calling agent reads it: what was wrong and what to do.
fn tool_error(err: &Error) -> String {
    let mut text = err.message.clone();
    for hint in &err.hints {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    text
}

fn parse<T: DeserializeOwned>(tool: &str, arguments: &Value) -> Result<T, String> {
    let arguments = if arguments.is_null() {
        json!({})
    } else {
        arguments.clone()
    };
    serde_json::from_value(arguments).map_err(|err| format!("invalid arguments for {tool}: {err}"))
}

fn parse_step(text: &str) -> Result<StepId, String> {
    text.trim().parse()
}

impl Tasks {
    pub fn new(store: Store, env: CommandEnv, clock: Clock, credit: Credit) -> Tasks {
        Tasks {
            store,
            env,
            clock,
            hooks: credit.hooks,
            commit: credit.commit,
            claimed: Mutex::new(BTreeMap::new()),
            reports: None,
        }
    }

    /// Sends each hook's report to `reports` as the hook ends (the command shows them).
    #[must_use]
    pub fn with_reports(mut self, reports: Sender<HookReport>) -> Tasks {
        self.reports = Some(reports);
        self
    }

    /// Calls tool `name` with `arguments`: its result as JSON, or the error for the agent.
    pub fn call(&self, name: &str, arguments: &Value) -> Result<Value, String> {
        match name {
            "list_tasks" => parse::<TaskArgs>(name, arguments).and_then(|args| match args.task {
                Some(_) => Err("list_tasks takes no `task`".to_owned()),
                None => self.list_tasks().map_err(|e| tool_error(&e)),
            }),
            "show_task" => parse::<TaskArgs>(name, arguments).and_then(|args| {
                self.show_task(args.task.as_deref())
                    .map_err(|e| tool_error(&e))
            }),
            "next_step" => parse::<TaskArgs>(name, arguments)
                .and_then(|args| self.next(args.task.as_deref()).map_err(|e| tool_error(&e))),
            "status" => parse::<TaskArgs>(name, arguments).and_then(|args| {
                self.status(args.task.as_deref())
                    .map_err(|e| tool_error(&e))
            }),
            "claim_step" => {
                let args: StepArgs = parse(name, arguments)?;
                let step = parse_step(&args.step)?;
                self.claim(args.task.as_deref(), step)
                    .map_err(|e| tool_error(&e))
            }
            "report_done" => {
                let args: DoneArgs = parse(name, arguments)?;
                let step = parse_step(&args.step)?;
                self.report_done(args.task.as_deref(), step, args.note.as_deref())?
            }
            "report_blocked" => {
                let args: BlockedArgs = parse(name, arguments)?;
                let step = parse_step(&args.step)?;
                let reason = crate::tasks::render::one_line(&args.reason);
                if reason.is_empty() {
                    return Err("`reason` is empty; say what blocks the step".to_owned());
                }
                self.report_blocked(args.task.as_deref(), step, &reason)
                    .map_err(|e| tool_error(&e))
            }
            other => Err(format!(
                "there is no tool `{other}`; the tools are {}",
                TOOL_NAMES.join(", ")
            )),
        }
    }

    fn list_tasks(&self) -> Result<Value> {
        let report = crate::report::list::list_report(&self.store)?;
        Ok(serde_json::to_value(report).unwrap_or_default())
    }

    fn show_task(&self, task: Option<&str>) -> Result<Value> {
        let task_ref = self.store.resolve_or_current(task)?;
        let task = self.store.load(&task_ref)?;
        Ok(json!({
            "id": task.id,
            "title": task.title(),
            "phase": task.phase(),
            "path": self.store.rel(&task.dir),
            "plan_md": task.plan_src.as_str(),
            "todo_md": task.todo_src.as_str(),
        }))
    }

    fn status(&self, task: Option<&str>) -> Result<Value> {
        let task_ref = self.store.resolve_or_current(task)?;
        let task = self.store.load(&task_ref)?;
        let report = crate::report::status::task_report(&self.store, &task);
        Ok(serde_json::to_value(report).unwrap_or_default())
    }

    /// Whether `task` may run at all, as `tick run` decides (approved PLAN.md, tools and
    /// hooks as approved, a phase that runs). A refusal for changed hooks names each change
    /// (the client's person cannot see tick's stderr).
    fn check_runnable(&self, task: &Task) -> Result<()> {
        crate::runner::check_runnable(&self.store, task, &mut |_| {})?;
        crate::runner::hooks_as_approved(&self.hooks, &self.store, task).map_err(
            |(changes, mut refused)| {
                for change in changes {
                    refused.message = format!("{}\n{change}", refused.message);
                }
                refused
            },
        )
    }

    fn next(&self, task: Option<&str>) -> Result<Value> {
        let task_ref = self.store.resolve_or_current(task)?;
        let task = self.store.load(&task_ref)?;
        self.check_runnable(&task)?;
        Ok(match next_step(&task.todo, None) {
            Next::Step(id) | Next::AlreadyDone(id) => {
                let mut value = step_json(&task, id);
                value["next"] = json!("step");
                value
            }
            Next::AllDone => json!({"task": task.id, "next": "all_done"}),
            Next::Blocked { id, reason } => {
                json!({"task": task.id, "next": "blocked", "step": id, "reason": reason})
            }
            Next::Waiting { id, on } => {
                json!({"task": task.id, "next": "waiting", "step": id, "waits_on": on})
            }
        })
    }

    /// The task, locked and refreshed (what changed while tick was not looking is marked
    /// stale first, as every command does), loaded, and checked to be runnable.
    fn open(&self, task: Option<&str>) -> Result<(TaskRef, crate::tasks::lock::Lock, Task)> {
        let task_ref = self.store.resolve_or_current(task)?;
        let lock = self.store.lock_task(&task_ref, HOLDER)?;
        crate::watch::refresh_locked(&self.store, &task_ref, self.clock.now(), &lock)?;
        let task = self.store.load(&task_ref)?;
        self.check_runnable(&task)?;
        Ok((task_ref, lock, task))
    }

    fn claim(&self, task: Option<&str>, id: StepId) -> Result<Value> {
        let (task_ref, _lock, task) = self.open(task)?;
        let step = task.step_or_error(&self.store, id)?;
        match step.status {
            StepStatus::InProgress => {
                self.remember_before(&task, id, false);
                let mut value = step_json(&task, id);
                value["claimed"] = json!("already in progress");
                return Ok(value);
            }
            StepStatus::Done => {
                return Err(Error::input(format!("`{id}` is done already"))
                    .hint("call `next_step` for the step to work on"));
            }
            _ => {}
        }
        match next_step(&task.todo, Some(id)) {
            Next::Step(next) if next == id => {}
            Next::Waiting { on, .. } => {
                return Err(
                    Error::input(format!("`{id}` waits on `{on}`, which is not done"))
                        .hint(format!("finish `{on}` first; nothing was changed")),
                );
            }
            Next::Blocked { reason, .. } => {
                return Err(Error::input(format!("`{id}` is blocked: {reason}")).hint(
                    "the person unblocks it (`tick answer` or `tick mark`); nothing was changed",
                ));
            }
            _ => {
                return Err(Error::input(format!("`{id}` cannot be claimed now"))
                    .hint("call `next_step` for the step to work on; nothing was changed"));
            }
        }
        self.mark(&task_ref, id, step.status, StepStatus::InProgress, None)?;
        let passed_before = self.verify_before_change(&task_ref, &task, id)?;
        self.remember_before(&task, id, true);
        let task = self.store.load(&task_ref)?;
        let mut value = step_json(&task, id);
        value["claimed"] = json!(true);
        if passed_before {
            value["verify_passed_before"] = json!(true);
            value["note"] = json!(format!(
                "{id}'s verify already passes before any change, so it cannot tell done from \
                 not done: `report_done` ticks it only after a change to the step's files, and \
                 the person sees it as not verified"
            ));
        }
        Ok(value)
    }

    /// Before the agent changes anything, the step's verify runs once, as `tick run` runs it
    /// before the model's turn (sandboxed, with its timeout). One that already passes cannot
    /// tell done from not done: state.yaml records `verify_passed_before`, and `report_done`
    /// then needs a change to the step's files. Skipped for a step without verify and for one
    /// an earlier attempt changed. Whether it passed (now or on an earlier claim).
    fn verify_before_change(&self, task_ref: &TaskRef, task: &Task, id: StepId) -> Result<bool> {
        if task.state.verify_passed_before(id) {
            return Ok(true);
        }
        let verify = task
            .todo
            .find(id)
            .map(|s| s.verify.clone())
            .unwrap_or_default();
        if verify.is_empty() || !crate::runner::earlier_changes(task, id).is_empty() {
            return Ok(false);
        }
        let scope = step_scope(task, id);
        let mut verifier = StepVerifier::new(self.store.root(), &self.env, id, &verify);
        let mut recorder = Recorder::new(
            &self.store,
            &task.id,
            id,
            &scope,
            self.clock.clone(),
            SystemTime::now(),
        );
        let passed = matches!(
            verifier.verify(&mut recorder, &mut |_: RunEvent| {}),
            Verdict::Passed { .. }
        );
        if passed {
            write::save_state(&self.store, task_ref, self.clock.precise(), |state| {
                state.steps.entry(id).or_default().verify_passed_before = true;
            })?;
        }
        Ok(passed)
    }

    /// A done report on a step whose verify passed before the claim, when none of the step's
    /// files (any file, for a step naming none) changed: why it is not ticked.
    fn unchanged_after_passing_before(
        task: &Task,
        id: StepId,
        scope: &[String],
        changed: &BTreeSet<String>,
    ) -> Option<String> {
        if !task.state.verify_passed_before(id)
            || crate::runner::baseline::changed_in_scope(scope, changed)
        {
            return None;
        }
        let verify = task
            .todo
            .find(id)
            .map(|s| crate::runner::baseline::quoted(&s.verify))
            .unwrap_or_default();
        let files = crate::runner::baseline::scope_words(scope);
        Some(format!(
            "`{id}` was not ticked: its verify {verify} already passed before the claim, so it \
             cannot tell done from not done, and none of its files ({files}) has changed; it \
             stays in progress. Make the change the step asks for, then call `report_done` again."
        ))
    }

    /// A done report: the step must be claimed (`[-]`); its verification runs as in `tick
    /// run`, and only a pass ticks it. A failed verification is the tool's error, with the
    /// output, and the step stays in progress. The outer error is the agent's mistake or a
    /// fault; the inner one is the verification's answer.
    fn report_done(
        &self,
        task: Option<&str>,
        id: StepId,
        note: Option<&str>,
    ) -> Result<Result<Value, String>, String> {
        let (task_ref, _lock, task) = self.open(task).map_err(|e| tool_error(&e))?;
        let step = task
            .step_or_error(&self.store, id)
            .map_err(|e| tool_error(&e))?;
        if step.status != StepStatus::InProgress {
            let hint = match next_step(&task.todo, None) {
                Next::Step(next) => format!("the next step is `{next}`: `claim_step` it first"),
                _ => "call `next_step` for what runs next".to_owned(),
            };
            return Err(tool_error(
                &Error::input(format!(
                    "`{id}` is not claimed (it is {}); only a step in progress can be reported done",
                    step.status
                ))
                .hint(format!("{hint}; nothing was changed")),
            ));
        }
        let scope = step_scope(&task, id);
        let note = note.map(|n| crate::redact::redact(n, &[]));
        // Before the verify runs, so that what it writes is no change of the step's.
        let changed = self.changed_by(&task, id, &scope);
        if let Some(not_ticked) = Self::unchanged_after_passing_before(&task, id, &scope, &changed)
        {
            return Ok(Err(not_ticked));
        }
        let verifier = match self.verify_claim(&task, id, &scope, note.as_deref()) {
            Ok(verifier) => verifier,
            Err(not_ticked) => return Ok(Err(not_ticked)),
        };
        let passed_before = task.state.verify_passed_before(id);
        let verified = verifier.has_commands() && !passed_before;
        let changed = self.changed_by(&task, id, &scope);
        let files_changed: Vec<String> = changed.iter().cloned().collect();
        let deviation = changes::deviations(&scope, &changed);
        let prints = crate::watch::fingerprint(self.store.root(), &scope, &files_changed);
        let now = self.clock.precise();
        let written = write::step(
            &self.store,
            &task_ref,
            now,
            StepWrite {
                id,
                expected: Some(StepStatus::InProgress),
                status: StepStatus::Done,
                reason: None,
            },
            |state, written| {
                if written {
                    state.clear_failure();
                    let record = state.record_runner(
                        id,
                        StepStatus::Done,
                        now,
                        verifier.evidence(),
                        prints.clone(),
                    );
                    record.note.clone_from(&note);
                    record.files_changed.clone_from(&files_changed);
                    record.deviations.clone_from(&deviation);
                }
            },
        )
        .map_err(|e| tool_error(&e))?;
        kept_person_edit(id, written).map_err(|e| tool_error(&e))?;
        if let Ok(mut claimed) = self.claimed.lock() {
            claimed.remove(&(task.id.clone(), id));
        }
        let evidence = verifier.evidence().to_vec();
        self.fire(&task, id, Event::StepDone, |p| {
            p.evidence.clone_from(&evidence);
        });
        let commit = self
            .commit_done(&task, id, &step.title, &scope, &changed)
            .map_err(|e| tool_error(&e))?;
        let evidence: Vec<Value> = evidence
            .iter()
            .map(|e| json!({"command": e.command, "exit_code": e.exit_code, "duration_ms": e.duration_ms}))
            .collect();
        Ok(Ok(json!({
            "task": task.id,
            "step": id,
            "status": "done",
            "verified": verified,
            "verify_passed_before": passed_before,
            "evidence": evidence,
            "files_changed": files_changed,
            "commit": commit,
        })))
    }

    /// The claim of step `id` checked as `tick run` checks it: `step.claimed`, the verify
    /// commands, `step.verify`. The verifier with the evidence, or why it is not ticked.
    fn verify_claim(
        &self,
        task: &Task,
        id: StepId,
        scope: &[String],
        note: Option<&str>,
    ) -> Result<StepVerifier, String> {
        let verify = task
            .todo
            .find(id)
            .map(|s| s.verify.clone())
            .unwrap_or_default();
        let mut verifier = StepVerifier::new(self.store.root(), &self.env, id, &verify);
        let mut recorder = Recorder::new(
            &self.store,
            &task.id,
            id,
            scope,
            self.clock.clone(),
            SystemTime::now(),
        );
        let claimed = self.fire(task, id, Event::StepClaimed, |p| {
            p.reason = note.map(str::to_owned);
        });
        if let Some(block) = claimed.block {
            return Err(format!(
                "`{id}` was not ticked: tick's step.claimed hook sent the claim back; it stays \
                 in progress.\n{block}"
            ));
        }
        match verifier.verify(&mut recorder, &mut |_: RunEvent| {}) {
            Verdict::Passed { .. } => {}
            Verdict::Failed { report } => {
                let report = report.replace(
                    "call `update_step` `done` again",
                    "call `report_done` again",
                );
                return Err(format!(
                    "`{id}` was not ticked: its verification failed; it stays in progress.\n{report}"
                ));
            }
            Verdict::GaveUp { reason } => {
                return Err(format!(
                    "`{id}` was not ticked: {reason}; it stays in progress"
                ));
            }
        }
        let passed = verifier.evidence().to_vec();
        let extra = self.fire(task, id, Event::StepVerify, |p| {
            p.reason = note.map(str::to_owned);
            p.evidence = passed;
        });
        verifier.add_evidence(extra.evidence);
        if let Some(block) = extra.block {
            return Err(format!(
                "`{id}` was not ticked: Verification failed: {block}; it stays in progress"
            ));
        }
        Ok(verifier)
    }

    /// Remembers what the workspace holds as step `id` is claimed (`again`: replacing what an
    /// earlier claim remembered), to tell what the step changed when it is reported done.
    fn remember_before(&self, task: &Task, id: StepId, again: bool) {
        let scope = step_scope(task, id);
        let Ok(mut claimed) = self.claimed.lock() else {
            return;
        };
        let key = (task.id.clone(), id);
        if again || !claimed.contains_key(&key) {
            let snapshot = Snapshot::take(
                self.store.root(),
                &scope,
                &crate::runner::earlier_changes(task, id),
            );
            claimed.insert(key, snapshot);
        }
    }

    /// The files step `id` changed since it was claimed, and what its earlier attempts changed
    /// that is changed still; when the claim was not seen by this server (it was made by an
    /// earlier one), the files git sees changed that the step's `files` name.
    fn changed_by(&self, task: &Task, id: StepId, scope: &[String]) -> BTreeSet<String> {
        let root = self.store.root();
        let earlier = crate::runner::earlier_changes(task, id);
        let before = self
            .claimed
            .lock()
            .ok()
            .and_then(|c| c.get(&(task.id.clone(), id)).cloned());
        let mut changed = BTreeSet::new();
        if let Some(before) = before {
            let mut also: BTreeSet<String> = before.files.keys().cloned().collect();
            also.extend(earlier.iter().cloned());
            let after = Snapshot::take(root, scope, &also);
            changed.extend(before.changed(&after));
            if let Some(dirty) = &after.dirty {
                changed.extend(earlier.intersection(dirty).cloned());
            }
        } else {
            let dirty: BTreeSet<String> = changes::dirty_files(root)
                .map(BTreeMap::into_keys)
                .into_iter()
                .flatten()
                .collect();
            changed.extend(changes::commit_set(scope, &earlier, &dirty));
        }
        changed.retain(|p| !p.starts_with(".tasks/") && !p.starts_with(".git/"));
        changed
    }

    /// `--commit` (or the approval's `commit_steps`): the step's commit, as `tick run` makes
    /// it. The commit's id, or `None` when none was asked for or there was nothing to commit.
    fn commit_done(
        &self,
        task: &Task,
        id: StepId,
        title: &str,
        scope: &[String],
        changed: &BTreeSet<String>,
    ) -> Result<Option<String>> {
        if !self.commit && !crate::runner::commits_each_step(task) {
            return Ok(None);
        }
        let dirty: BTreeSet<String> = changes::dirty_files(self.store.root())
            .ok_or_else(|| {
                Error::input("`--commit` needs a git repository, and git sees none here")
                    .hint("the step is done and recorded; serve without `--commit`, or `git init`")
            })?
            .into_keys()
            .collect();
        let files = changes::commit_set(scope, changed, &dirty);
        // The task folder as it is now: the tick just written.
        let task = self.store.load(&self.store.task_ref(&task.id))?;
        let made = crate::runner::commit_verified_step(&self.store, &task, id, title, &files)?;
        Ok(made.and_then(|(commit, _)| commit))
    }

    /// Runs the person's hooks of `event` for step `id`, of the task as it is on disk now.
    fn fire(
        &self,
        task: &Task,
        id: StepId,
        event: Event,
        edit: impl FnOnce(&mut crate::hooks::Payload),
    ) -> crate::hooks::Fired {
        if !self.hooks.has(event) {
            return crate::hooks::Fired::default();
        }
        let task = self
            .store
            .load(&self.store.task_ref(&task.id))
            .unwrap_or_else(|_| task.clone());
        let Some(step) = task.todo.find(id) else {
            return crate::hooks::Fired::default();
        };
        let mut payload = crate::hooks::Payload::for_step(&task, id, step, self.store.root());
        edit(&mut payload);
        let how = crate::hooks::Fire {
            root: self.store.root(),
            env: &self.env,
            read_only: false,
            runs_dir: task.dir.join(RUNS_DIR),
            step: Some(id),
        };
        crate::hooks::fire(
            &self.hooks,
            &how,
            event,
            &id.to_string(),
            &payload,
            &mut |report| {
                if let Some(reports) = &self.reports {
                    // The command has stopped listening only once the serve is over.
                    let _ = reports.send(report);
                }
            },
        )
    }

    fn report_blocked(&self, task: Option<&str>, id: StepId, reason: &str) -> Result<Value> {
        let (task_ref, _lock, task) = self.open(task)?;
        let step = task.step_or_error(&self.store, id)?;
        if matches!(step.status, StepStatus::Done | StepStatus::Stale) {
            return Err(Error::input(format!(
                "`{id}` is {}; only an open step can be blocked",
                step.status
            ))
            .hint("nothing was changed"));
        }
        self.mark(
            &task_ref,
            id,
            step.status,
            StepStatus::Blocked,
            Some(reason),
        )?;
        Ok(json!({"task": task.id, "step": id, "status": "blocked", "reason": reason}))
    }
}

impl Tasks {
    /// Step `id`, found `expected`, marked `status` (with `reason` for `[!]`) and the runner's
    /// record of it started; a person's marker written meanwhile is kept and said.
    fn mark(
        &self,
        task_ref: &TaskRef,
        id: StepId,
        expected: StepStatus,
        status: StepStatus,
        reason: Option<&str>,
    ) -> Result<()> {
        let now = self.clock.precise();
        let change = StepWrite {
            id,
            expected: Some(expected),
            status,
            reason,
        };
        let written = write::step(&self.store, task_ref, now, change, |state, written| {
            if written {
                state.record_runner(id, status, now, &[], std::collections::BTreeMap::new());
            }
        })?;
        kept_person_edit(id, written)
    }
}

/// The files a step works within, as `tick run` takes them.
fn step_scope(task: &Task, id: StepId) -> Vec<String> {
    task.todo
        .find(id)
        .map(|step| crate::runner::step_scope(task, id, step))
        .unwrap_or_default()
}

/// A person changed the step's marker while the tool worked: theirs is kept, and said so.
fn kept_person_edit(id: StepId, written: StatusWrite) -> Result<()> {
    match written {
        StatusWrite::Kept { current } => Err(Error::input(format!(
            "`{id}` was changed by hand to `[{}]` meanwhile; the person's marker was kept",
            current.marker()
        ))
        .hint("call `next_step` to see where the task is now")),
        StatusWrite::Missing => Err(Error::input(format!(
            "`{id}` is no longer in TODO.md; nothing was changed"
        ))
        .hint("call `next_step` to see where the task is now")),
        StatusWrite::Written(_) => Ok(()),
    }
}

/// What an agent needs to do step `id`: its contract as approved.
fn step_json(task: &Task, id: StepId) -> Value {
    let Some(step) = task.todo.find(id) else {
        return json!({"task": task.id, "step": id});
    };
    json!({
        "task": task.id,
        "step": id,
        "title": step.title,
        "status": step.status,
        "files": step.files,
        "verify": step.verify,
        "done_when": step.done_when,
        "tools": step.tools,
        "answer": step.answer,
    })
}

/// The JSON schema of a tool's arguments.
fn schema(properties: &Value, required: &[&str]) -> Arc<serde_json::Map<String, Value>> {
    let value = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// The tools as `tools/list` describes them.
pub fn tools() -> Vec<Tool> {
    let task = json!({"type": "string", "description": "The task: its id, a prefix, or part of its name. Default: the current task."});
    let step = json!({"type": "string", "description": "The step id, like `S2` or `S2.1`."});
    vec![
        Tool::new(
            "list_tasks",
            "The draft and every task in this workspace, newest first, with phase and progress.",
            schema(&json!({}), &[]),
        ),
        Tool::new(
            "show_task",
            "A task's approved PLAN.md and its TODO.md checklist, as they are on disk.",
            schema(&json!({"task": task}), &[]),
        ),
        Tool::new(
            "next_step",
            "The step to work on next (as `tick run` would choose it), with its files, verify \
             commands, done-when and MCP tools; or that all are done, one is blocked, or one waits.",
            schema(&json!({"task": task}), &[]),
        ),
        Tool::new(
            "claim_step",
            "Claim the next step before working on it: it is marked in progress (`[-]`). Only \
             the step `next_step` names can be claimed.",
            schema(&json!({"task": task, "step": step}), &["step"]),
        ),
        Tool::new(
            "report_done",
            "Report a claimed step done. tick runs the step's verify commands itself, in its \
             sandbox, and ticks the step `[x]` with the evidence only if they pass; if they \
             fail, the step stays in progress and the failure is returned: fix it and report \
             again.",
            schema(
                &json!({"task": task, "step": step, "note": {"type": "string", "description": "What was done, in a sentence (kept with the step's record)."}}),
                &["step"],
            ),
        ),
        Tool::new(
            "report_blocked",
            "Report that a step cannot be done as planned: it is marked blocked (`[!]`) with \
             the reason, for the person to answer. Do not improvise a different plan.",
            schema(
                &json!({"task": task, "step": step, "reason": {"type": "string", "description": "What blocks the step, and the smallest question that would unblock it."}}),
                &["step", "reason"],
            ),
        ),
        Tool::new(
            "status",
            "A task's phase, progress and every step with its status and evidence, as `tick \
             status --json` reports it.",
            schema(&json!({"task": task}), &[]),
        ),
    ]
}

/// rmcp's handler around [`Tasks`].
#[derive(Clone)]
pub struct TickServer {
    tasks: Arc<Tasks>,
}

impl TickServer {
    pub fn new(tasks: Tasks) -> TickServer {
        TickServer {
            tasks: Arc::new(tasks),
        }
    }
}

fn text_result(text: String, error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl ServerHandler for TickServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tick", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "tick's approved plans. Work step by step: `next_step`, `claim_step`, do the \
                 work, then `report_done` (tick verifies before it ticks) or `report_blocked`. \
                 Plans are drafted and approved by the person, never through these tools.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks = Arc::clone(&self.tasks);
        let name = request.name.to_string();
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        // tick's store, lock and commands are synchronous: off the protocol's thread.
        let outcome = tokio::task::spawn_blocking(move || tasks.call(&name, &arguments))
            .await
            .unwrap_or_else(|err| Err(format!("tick failed while running the tool: {err}")));
        Ok(match outcome {
            Ok(value) => text_result(
                serde_json::to_string_pretty(&value).unwrap_or_default(),
                false,
            ),
            Err(message) => text_result(message, true),
        }
        .into())
    }
}

/// Serves `tasks` over stdin and stdout until the client closes the connection.
pub fn serve_stdio(tasks: Tasks) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|err| Error::internal(format!("could not start the async runtime: {err}")))?;
    runtime.block_on(async move {
        let service = TickServer::new(tasks)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| Error::internal(format!("the MCP connection failed: {err}")))?;
        service
            .waiting()
            .await
            .map_err(|err| Error::internal(format!("the MCP server stopped: {err}")))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_are_the_named_ones_strict_and_none_plans_or_approves() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in &tools {
            assert_eq!(
                tool.input_schema.get("additionalProperties"),
                Some(&json!(false)),
                "{}",
                tool.name
            );
            for word in ["approve", "draft", "plan"] {
                assert!(!tool.name.contains(word), "{}", tool.name);
            }
        }
    }

    #[test]
    fn argument_errors_name_the_tool_and_the_field() {
        assert_eq!(
            parse::<StepArgs>("claim_step", &json!({"step": "S1", "force": true})).unwrap_err(),
            "invalid arguments for claim_step: unknown field `force`, expected `step` or `task`"
        );
        assert!(parse::<TaskArgs>("status", &Value::Null).is_ok());
        assert_eq!(
            parse_step("S1.x").unwrap_err(),
            "`S1.x` is not a step id (like `S3` or `S3.1`)"
        );
    }
}
