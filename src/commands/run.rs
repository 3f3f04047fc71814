//! `tick run`: execute the approved plan one step at a time. Each step gets a fresh context
//! pack; the model works with build-mode tools and claims `done`; tick runs the step's
//! verification and only then ticks the box, with the evidence in state.yaml. TODO.md and
//! PLAN.md are re-read before every step, so a person's edits between steps count.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use globset::{Glob, GlobSetBuilder};

use super::{Ctx, Outcome};
use crate::agent::context;
use crate::agent::executor::{Executor, StepEnd, StepError, Verdict, Verifier};
use crate::agent::{AgentEvent, Model};
use crate::cli::RunArgs;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::llm::{Client, Message, Usage};
use crate::plan::{Event, Phase, Progress, StepId, StepStatus, transition};
use crate::tasks::journal::{self, Entry};
use crate::tasks::state::{Evidence, State};
use crate::tasks::todo_md::{self, Checklist, StepEdit};
use crate::tasks::{PLAN_FILE, STATE_FILE, Store, TODO_FILE, Task, TaskRef, plan_md};
use crate::tools::bash::{self, CommandEnv};
use crate::tools::{Effects, Mode, Registry, Workspace};
use crate::watch::live::{Change, LiveOptions, LiveWatcher};

pub const EXECUTE_PROMPT: &str = include_str!("../../prompts/execute.md");

/// How often a step's verification may fail before the step is blocked.
const MAX_VERIFY_ATTEMPTS: u32 = 3;
/// How long one verify command may run.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);

/// What to work on next, decided from TODO.md alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Step(StepId),
    AllDone,
    /// A blocked step stands in the way.
    Blocked {
        id: StepId,
        reason: String,
    },
    /// Open steps remain, but each waits on a step that is not done.
    Waiting {
        id: StepId,
        on: StepId,
    },
    /// The step asked for with `--step` is done already.
    AlreadyDone(StepId),
}

/// The units of work in order: a step, or the sub-steps of a step that has them. A sub-step
/// inherits its parent's `depends`.
fn units(todo: &Checklist) -> Vec<(StepId, StepStatus, Option<String>, Vec<StepId>)> {
    let mut units = Vec::new();
    for step in &todo.steps {
        let Some(id) = step.id else { continue };
        if step.substeps.is_empty() || step.status == StepStatus::Blocked {
            units.push((id, step.status, step.blocked.clone(), step.depends.clone()));
        } else {
            for sub in &step.substeps {
                let Some(sub_id) = sub.id else { continue };
                let mut depends = step.depends.clone();
                depends.extend(sub.depends.iter().copied());
                units.push((sub_id, sub.status, sub.blocked.clone(), depends));
            }
        }
    }
    units
}

/// The next unit to run: top to bottom, skipping done ones, honouring `depends`.
pub fn next_step(todo: &Checklist, only: Option<StepId>) -> Next {
    let done: BTreeSet<StepId> = todo
        .all_steps()
        .filter(|s| s.effective_status() == StepStatus::Done)
        .filter_map(|s| s.id)
        .collect();
    let units = units(todo);
    let mut waiting = None;
    for (id, status, blocked, depends) in &units {
        if let Some(only) = only
            && *id != only
            && id.parent() != only
        {
            continue;
        }
        match status {
            StepStatus::Done => continue,
            StepStatus::Blocked => {
                return Next::Blocked {
                    id: *id,
                    reason: blocked
                        .clone()
                        .unwrap_or_else(|| "no reason given".to_owned()),
                };
            }
            _ => {}
        }
        if let Some(dep) = depends.iter().find(|d| !done.contains(d)) {
            waiting.get_or_insert(Next::Waiting { id: *id, on: *dep });
            continue;
        }
        return Next::Step(*id);
    }
    match (waiting, only) {
        (Some(waiting), _) => waiting,
        (None, Some(only)) => Next::AlreadyDone(only),
        (None, None) => Next::AllDone,
    }
}

pub fn run(ctx: &Ctx<'_>, args: &RunArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let only = args
        .step
        .as_deref()
        .map(|s| s.parse::<StepId>().map_err(Error::input))
        .transpose()?;
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    if args.dry_run {
        return dry_run(ctx, &task_ref, only);
    }
    let lock = store.lock_task_now(&task_ref, "tick run")?;
    let config = super::model_config(ctx, &args.model)?;
    let model = config.model.clone().ok_or_else(|| {
        Error::input("no model is configured")
            .hint("set `model:` in `.tasks/config.yaml`, or `TICK_MODEL`, or pass `--model`")
    })?;
    let client = Client::new(config.client_config()?)
        .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
    let workspace = Workspace::new(store.root())
        .map_err(|err| Error::io("open the workspace", store.root(), &err))?;
    let secrets: Vec<String> = config.api_key_env.iter().cloned().collect();
    let sandboxing = crate::sandbox::for_run(&config.sandbox, store.root(), args.no_sandbox)?;
    let unsandboxed = sandboxing.policy().is_none();
    let registry = Registry::for_mode(Mode::Build, workspace)
        .with_secret_env(secrets)
        .with_sandbox(sandboxing);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal(format!("could not start the async runtime: {err}")))?;
    // Ctrl-C (or SIGTERM) asks the run to stop at the next safe point, leaving the step in
    // progress; a second one ends the process at once. Every write is atomic either way.
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&interrupted)))
            .map_err(|err| Error::internal(format!("could not handle Ctrl-C: {err}")))?;
    }
    // The watcher is a help, not a requirement: without it, edits are still caught by the
    // fingerprints at the next command.
    let watcher = RefCell::new(
        runtime
            .block_on(async { LiveWatcher::start(store.root(), LiveOptions::default()) })
            .ok(),
    );
    let system = store.prompt("execute.md", EXECUTE_PROMPT)?;
    let mut usage = Usage::default();
    let mut ran = 0usize;
    let mut first = true;
    let runner = Runner {
        ctx,
        task_ref: &task_ref,
        config: &config,
        model: &model,
        client: &client,
        registry: &registry,
        system: &system,
        runtime: &runtime,
        interrupted: &interrupted,
        json: args.json,
        commit: args.commit,
        watcher: &watcher,
    };
    // What changed while tick was not running is marked stale first, and stale steps are
    // verified again before anything new runs.
    crate::watch::refresh_locked(store, &task_ref, ctx.now(), &lock)?;
    if unsandboxed {
        ctx.ui.warn(crate::sandbox::UNSANDBOXED_WARNING);
        runner.save_state(|state| state.unsandboxed_run = Some(ctx.now()))?;
    }
    let outcome = loop {
        let task = load_for_run(ctx, &task_ref)?;
        if first {
            transition(task.phase(), Event::Run)
                .map_err(|r| Error::input(r.reason).hint(r.hint))?;
            first = false;
            runner.reverify_stale(&task)?;
            continue;
        }
        if args.steps.is_some_and(|max| ran >= max) || (only.is_some() && ran > 0) {
            break Outcome::Done;
        }
        let id = match next_step(&task.todo, only) {
            Next::Step(id) => id,
            Next::AllDone => {
                if ran == 0 {
                    ctx.ui
                        .note("every step of this task is done; nothing to run");
                }
                break Outcome::Done;
            }
            Next::AlreadyDone(id) => {
                ctx.ui.note(&format!("`{id}` is already done"));
                break Outcome::Done;
            }
            Next::Blocked { id, reason } => {
                ctx.ui.warn(&format!("`{id}` is blocked: {reason}"));
                ctx.ui.hint(&format!(
                    "resolve it, then `tick mark {id} pending` (or edit its box) and `tick run` again"
                ));
                break Outcome::Blocked;
            }
            Next::Waiting { id, on } => {
                return Err(Error::input(format!(
                    "`{id}` depends on `{on}`, which is not done and cannot run first"
                ))
                .hint("fix the `depends:` line in TODO.md, or finish the other step"));
            }
        };
        let result = runner.execute(&task, id, &mut usage)?;
        if interrupted.load(Ordering::Relaxed) && result == StepOutcome::Done {
            ctx.ui.warn("stopped after the step, as asked");
            break Outcome::Interrupted;
        }
        ran += 1;
        match result {
            StepOutcome::Done => {}
            StepOutcome::Blocked => break Outcome::Blocked,
            StepOutcome::Paused => break Outcome::Paused,
            StepOutcome::Limit => break Outcome::Limit,
            StepOutcome::Interrupted => break Outcome::Interrupted,
        }
    };
    summary(ctx, &task_ref, &usage, args.json, unsandboxed)?;
    Ok(outcome)
}

/// Reads the task for the next step: it must still be approved as it stands, and steps a
/// person added get their ids now.
fn load_for_run(ctx: &Ctx<'_>, task_ref: &TaskRef) -> Result<Task> {
    let store = &ctx.store;
    let task = store.load(task_ref)?;
    if task.plan_changed() {
        let copy = task
            .dir
            .join(crate::tasks::RUNS_DIR)
            .join(super::approve::APPROVED_COPY);
        if let Some(diff) = super::approve::changes_since_approval(&copy, &task.plan_src) {
            ctx.ui.data(&diff);
        }
        return Err(Error::input(format!(
            "`{}` was edited after approval",
            store.rel(&task.dir.join(PLAN_FILE))
        ))
        .hint(format!(
            "review the change, then approve it with `tick approve {}`; nothing was run",
            task.id
        )));
    }
    if task.todo.needs_ids() {
        let path = task.dir.join(TODO_FILE);
        let (src, assigned) = todo_md::assign_ids(&task.todo_src, &task.todo);
        todo_md::parse(&src).map_err(|e| store.parse_error(&path, &e))?;
        fsx::write_atomic(&path, src.as_bytes())?;
        let names: Vec<String> = assigned.iter().map(|id| format!("`{id}`")).collect();
        ctx.ui
            .note(&format!("new steps got ids: {}", names.join(", ")));
        return store.load(task_ref);
    }
    Ok(task)
}

fn dry_run(ctx: &Ctx<'_>, task_ref: &TaskRef, only: Option<StepId>) -> Result<Outcome> {
    let task = ctx.store.load(task_ref)?;
    let id = match next_step(&task.todo, only) {
        Next::Step(id) => id,
        Next::AlreadyDone(id) => id,
        Next::Blocked { id, .. } | Next::Waiting { id, .. } => id,
        Next::AllDone => {
            ctx.ui.note("every step is done; nothing would run");
            return Ok(Outcome::Done);
        }
    };
    let system = ctx.store.prompt("execute.md", EXECUTE_PROMPT)?;
    ctx.ui.data(&format!(
        "--- system ---\n{}\n--- user ---\n{}",
        system.trim_end(),
        context::pack(&task, id)
    ));
    Ok(Outcome::Done)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepOutcome {
    Done,
    Blocked,
    Paused,
    Limit,
    Interrupted,
}

struct Runner<'a, 'b> {
    ctx: &'a Ctx<'b>,
    task_ref: &'a TaskRef,
    config: &'a Config,
    model: &'a str,
    client: &'a Client,
    registry: &'a Registry,
    system: &'a str,
    runtime: &'a tokio::runtime::Runtime,
    interrupted: &'a AtomicBool,
    json: bool,
    commit: bool,
    /// Sees a person's edits during a step; `None` where the workspace cannot be watched.
    watcher: &'a RefCell<Option<LiveWatcher>>,
}

/// Runs a step's verify commands when the model says `done`, and keeps the evidence.
struct RunVerifier<'a> {
    root: &'a Path,
    env: &'a CommandEnv,
    commands: Vec<String>,
    attempts: u32,
    evidence: Vec<Evidence>,
    task_dir: &'a Path,
    step: StepId,
    ctx: &'a Ctx<'a>,
    json: bool,
}

fn tail(text: &str, lines: usize, chars: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let kept = all[all.len().saturating_sub(lines)..].join("\n");
    let count = kept.chars().count();
    if count > chars {
        kept.chars().skip(count - chars).collect()
    } else {
        kept
    }
}

fn to_utc(time: std::time::SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(time)
}

impl Verifier for RunVerifier<'_> {
    fn verify(&mut self, _note: Option<&str>) -> Verdict {
        if self.commands.is_empty() {
            return Verdict::Passed {
                report: "This step has no verification; tick ticks it as done without \
                         verification."
                    .to_owned(),
            };
        }
        self.attempts += 1;
        self.evidence.clear();
        let mut report = String::new();
        for command in &self.commands {
            let run = match bash::run_command(self.root, self.env, command, VERIFY_TIMEOUT) {
                Ok(run) => run,
                Err(err) => {
                    return Verdict::GaveUp {
                        reason: format!("could not run the verification `{command}`: {err}"),
                    };
                }
            };
            let _ = journal::append(
                self.task_dir,
                &Entry::Command {
                    start: to_utc(run.window.start),
                    end: to_utc(run.window.end),
                    step: Some(self.step.to_string()),
                },
            );
            let duration_ms = u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX);
            let passed = run.passed();
            let outcome = if run.timed_out {
                format!("timed out after {} s", VERIFY_TIMEOUT.as_secs())
            } else {
                match run.exit_code {
                    Some(code) => format!("exit {code}"),
                    None => "killed".to_owned(),
                }
            };
            self.ctx.ui.verification(
                self.step,
                command,
                passed,
                &outcome,
                run.duration,
                self.json,
            );
            self.evidence.push(Evidence {
                command: command.clone(),
                exit_code: run.exit_code.unwrap_or(-1),
                duration_ms,
                output_hash: blake3::hash(run.output.as_bytes()).to_hex().to_string(),
                output_tail: crate::redact::redact(&tail(&run.output, 20, 2_000), &[]),
            });
            if !passed {
                report = format!(
                    "Verification failed: `{command}` ({outcome}).\n{}\n",
                    tail(&run.output, 60, 6_000)
                );
                break;
            }
        }
        if report.is_empty() {
            let summary: Vec<String> = self
                .evidence
                .iter()
                .map(|e| format!("`{}` exit 0 in {} ms", e.command, e.duration_ms))
                .collect();
            return Verdict::Passed {
                report: format!(
                    "Verification passed: {}. The step is done.",
                    summary.join(", ")
                ),
            };
        }
        if self.attempts >= MAX_VERIFY_ATTEMPTS {
            let failed = self
                .evidence
                .last()
                .map_or(String::new(), |e| e.command.clone());
            return Verdict::GaveUp {
                reason: format!(
                    "verification failed {} times; last: `{failed}`",
                    self.attempts
                ),
            };
        }
        report.push_str(&format!(
            "Fix the problem and call `update_step` `done` again ({} of {MAX_VERIFY_ATTEMPTS} attempts used).",
            self.attempts
        ));
        Verdict::Failed { report }
    }
}

/// Files git sees as changed or new, with their content hashes; `None` outside git.
fn dirty_files(root: &Path) -> Option<BTreeMap<String, String>> {
    let text = crate::git::output(
        root,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut files = BTreeMap::new();
    let mut entries = text.split('\0');
    while let Some(entry) = entries.next() {
        if entry.len() < 4 {
            continue;
        }
        let status = &entry[..2];
        let path = entry[3..].to_owned();
        if status.starts_with('R') || status.starts_with('C') {
            entries.next();
        }
        if path.starts_with(".tasks/") {
            continue;
        }
        let hash = std::fs::read(root.join(&path)).map_or_else(
            |_| "missing".to_owned(),
            |b| blake3::hash(&b).to_hex().to_string(),
        );
        files.insert(path, hash);
    }
    Some(files)
}

/// Changed files that no pattern of the step's `files` covers.
fn deviations(patterns: &[String], changed: &BTreeSet<String>) -> Vec<String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.trim_start_matches("./");
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
        // `src/compat` covers what is inside it.
        if let Ok(glob) = Glob::new(&format!("{}/**", pattern.trim_end_matches('/'))) {
            builder.add(glob);
        }
    }
    let Ok(set) = builder.build() else {
        return changed.iter().cloned().collect();
    };
    changed
        .iter()
        .filter(|f| !set.is_match(f.as_str()))
        .cloned()
        .collect()
}

/// What the model's own tools did during a step: files written (with the content hash) and
/// when commands ran. A change the watcher reports that matches neither was made by someone
/// else.
#[derive(Debug)]
struct OwnWork {
    /// When the step started: a file not modified since is not news, whatever the watcher
    /// says (the polling fallback reports every file on its first look).
    started: SystemTime,
    written: BTreeMap<String, String>,
    windows: Vec<(SystemTime, SystemTime)>,
}

impl OwnWork {
    /// Whether a change to `path` (now with `hash`, modified at `modified`) is the model's own.
    fn owns(&self, path: &str, hash: &str, modified: Option<SystemTime>) -> bool {
        if self.written.get(path).is_some_and(|own| own == hash) {
            return true;
        }
        let slack = Duration::from_secs(1);
        self.windows.iter().any(|(start, end)| match modified {
            Some(at) => at + slack >= *start && at <= *end + slack,
            // Deleted: only a command that just ran can have done it.
            None => SystemTime::now()
                .duration_since(*end)
                .is_ok_and(|ago| ago <= Duration::from_secs(3)),
        })
    }
}

impl Runner<'_, '_> {
    /// Verifies stale steps again: pass, and the step is `[x]` again with new evidence;
    /// fail (or no verification to run), and it is `[ ]`, to be redone.
    fn reverify_stale(&self, task: &Task) -> Result<()> {
        let root = self.store().root().to_path_buf();
        for step in task.todo.all_steps() {
            let (Some(id), StepStatus::Stale) = (step.id, step.status) else {
                continue;
            };
            let mut verifier = self.verifier(&root, task, id, &step.verify);
            let passed =
                !step.verify.is_empty() && matches!(verifier.verify(None), Verdict::Passed { .. });
            let now = Utc::now();
            let status = if passed {
                StepStatus::Done
            } else {
                StepStatus::Pending
            };
            let prints = crate::watch::fingerprint(&root, &step.files, &[]);
            self.save_state(|state| {
                state.record_runner(id, status, now, &verifier.evidence, prints);
            })?;
            self.set_status(id, Some(StepStatus::Stale), status, None)?;
            let message = match (passed, step.verify.is_empty()) {
                (true, _) => format!("{id} was stale; verified again: done"),
                (false, true) => {
                    format!("{id} was stale and has no verification: it will be redone")
                }
                (false, false) => {
                    format!("{id} was stale and its verification fails: it will be redone")
                }
            };
            if self.json {
                self.ui().json(&serde_json::json!({"event": "stale_reverified", "id": id.to_string(), "passed": passed}));
            } else {
                self.ui().note(&message);
            }
        }
        Ok(())
    }

    /// The verification of step `id` of `task`, with no attempts used yet.
    fn verifier<'v>(
        &'v self,
        root: &'v Path,
        task: &'v Task,
        id: StepId,
        commands: &[String],
    ) -> RunVerifier<'v> {
        RunVerifier {
            root,
            env: self.registry.command_env(),
            commands: commands.to_vec(),
            attempts: 0,
            evidence: Vec::new(),
            task_dir: &task.dir,
            step: id,
            ctx: self.ctx,
            json: self.json,
        }
    }

    /// When the last sub-step of `parent` is done, the parent's box was ticked with it: run
    /// the parent's own verification now. Pass (or none to run): the parent is done, by the
    /// runner. Fail: the parent is blocked with the failure, and `true` is returned.
    fn settle_parent_verification(&self, parent: StepId) -> Result<bool> {
        let task = self.store().load(self.task_ref)?;
        let Some(step) = task.todo.find(parent) else {
            return Ok(false);
        };
        if step.status != StepStatus::Done {
            return Ok(false);
        }
        let root = self.store().root().to_path_buf();
        let mut verifier = self.verifier(&root, &task, parent, &step.verify);
        let verdict = verifier.verify(None);
        let now = Utc::now();
        let passed = matches!(verdict, Verdict::Passed { .. });
        let prints = crate::watch::fingerprint(&root, &step.files, &[]);
        self.save_state(|state| {
            let status = if passed {
                StepStatus::Done
            } else {
                StepStatus::Blocked
            };
            state.record_runner(parent, status, now, &verifier.evidence, prints);
        })?;
        if passed {
            return Ok(false);
        }
        let failed = verifier.evidence.last().map_or_else(String::new, |e| {
            format!("`{}` exit {}", e.command, e.exit_code)
        });
        let reason = format!("its sub-steps are done but its verification fails: {failed}");
        self.set_status(
            parent,
            Some(StepStatus::Done),
            StepStatus::Blocked,
            Some(&reason),
        )?;
        self.ui().warn(&format!("{parent} is blocked: {reason}"));
        Ok(true)
    }

    /// Forgets changes the watcher saw so far.
    fn drain_watcher(&self) {
        if let Some(watcher) = self.watcher.borrow_mut().as_mut() {
            while watcher.try_next().is_some() {}
        }
    }

    /// Files someone other than the model changed since the last look, as a note for the
    /// model; they are also added to `seen`.
    fn outside_changes(
        &self,
        root: &Path,
        own: &OwnWork,
        seen: &mut BTreeSet<String>,
    ) -> Option<String> {
        let mut paths = BTreeSet::new();
        {
            let mut watcher = self.watcher.borrow_mut();
            let watcher = watcher.as_mut()?;
            while let Some(change) = watcher.try_next() {
                if let Change::Paths(changed) = change {
                    paths.extend(changed);
                }
            }
        }
        let mut foreign = Vec::new();
        for path in paths {
            if path.starts_with(".tasks/") || path.starts_with(".git/") {
                continue;
            }
            let full = root.join(&path);
            let metadata = std::fs::symlink_metadata(&full).ok();
            if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
                continue;
            }
            let modified = metadata.and_then(|m| m.modified().ok());
            if modified.is_some_and(|at| at < own.started) {
                continue;
            }
            let hash = crate::watch::fingerprint::hash_file(&full);
            if !own.owns(&path, &hash, modified) {
                foreign.push(path);
            }
        }
        if foreign.is_empty() {
            return None;
        }
        seen.extend(foreign.iter().cloned());
        let list: Vec<String> = foreign.iter().map(|p| format!("`{p}`")).collect();
        self.ui().warn(&format!(
            "changed outside tick during the step: {}",
            list.join(", ")
        ));
        Some(format!(
            "Note from tick: while you worked, a person changed {} (not through your tools). \
             Read it again before you edit it, and keep their change unless your step says \
             otherwise.",
            list.join(", ")
        ))
    }

    fn ui(&self) -> &crate::ui::Ui {
        self.ctx.ui
    }

    fn store(&self) -> &Store {
        &self.ctx.store
    }

    /// Writes a new status for `id` into TODO.md as it is now: a person may have edited the
    /// file while the step ran, and every edit of theirs is kept (only this step's marker and
    /// runner line change). If they changed this very step's marker away from `expected`,
    /// their version wins and the runner's is reported instead. Follows a parent's sub-steps
    /// and updates PLAN.md's status.
    fn set_status(
        &self,
        id: StepId,
        expected: Option<StepStatus>,
        status: StepStatus,
        reason: Option<&str>,
    ) -> Result<Phase> {
        let store = self.store();
        let task = store.load(self.task_ref)?;
        let path = task.dir.join(TODO_FILE);
        if let (Some(expected), Some(current)) = (expected, task.todo.find(id).map(|s| s.status))
            && current != expected
        {
            self.ui().warn(&format!(
                    "`{id}` was changed to `{}` in `{}` while it ran; your version is kept (tick would have set `{}`)",
                    current.as_str(),
                    store.rel(&path),
                    status.as_str()
                ));
            return Ok(task.phase());
        }
        let Some(src) = todo_md::edit_step(
            &task.todo_src,
            &task.todo,
            id,
            &StepEdit::status(status, reason),
        ) else {
            self.ui().warn(&format!(
                "`{id}` is no longer in `{}`; its status was not written",
                store.rel(&path)
            ));
            return Ok(task.phase());
        };
        let src = if id.is_sub() {
            todo_md::settle_parent(&src, id.parent()).map_err(|e| store.parse_error(&path, &e))?
        } else {
            src
        };
        let list = todo_md::parse(&src).map_err(|e| store.parse_error(&path, &e))?;
        fsx::write_atomic(&path, src.as_bytes())?;
        let progress =
            Progress::from_statuses(list.steps.iter().map(todo_md::Step::progress_status));
        let phase = transition(task.phase(), Event::StepsChanged(progress)).unwrap_or(task.phase());
        journal::transition(
            &task.dir,
            task.phase(),
            phase,
            &format!("the runner set `{id}` {}", status.as_str()),
            Utc::now(),
        );
        if task.plan.phase() != Some(phase)
            && let Some(plan) = plan_md::set_status_line(&task.plan_src, phase)
        {
            fsx::write_atomic(&task.dir.join(PLAN_FILE), plan.as_bytes())?;
        }
        Ok(phase)
    }

    fn save_state(&self, update: impl FnOnce(&mut State)) -> Result<()> {
        let task = self.store().load(self.task_ref)?;
        let mut state = task.state;
        update(&mut state);
        fsx::write_atomic(
            &task.dir.join(STATE_FILE),
            super::approve::state_yaml(&state)?.as_bytes(),
        )
    }

    #[allow(clippy::too_many_lines)]
    fn execute(&self, task: &Task, id: StepId, usage: &mut Usage) -> Result<StepOutcome> {
        let now = self.ctx.now();
        let step = task
            .todo
            .find(id)
            .ok_or_else(|| Error::internal(format!("step `{id}` vanished")))?
            .clone();
        if self.json {
            self.ui().json(&serde_json::json!({"event": "step_started", "id": id.to_string(), "title": step.title}));
        } else {
            self.ui().note(&format!("{id} {}", step.title));
        }
        self.set_status(id, None, StepStatus::InProgress, None)?;
        self.save_state(|state| {
            state.record_runner(id, StepStatus::InProgress, now, &[], BTreeMap::new());
        })?;

        let root = self.store().root().to_path_buf();
        // A sub-step works within its own files and its parent's.
        let mut scope = step.files.clone();
        if let Some(parent) = step
            .id
            .filter(|i| i.is_sub())
            .and_then(|i| task.todo.find(i.parent()))
        {
            scope.extend(parent.files.iter().cloned());
        }
        let before = dirty_files(&root);
        let mut messages = vec![Message::user(context::pack(task, id))];
        let mut verifier = self.verifier(&root, task, id, &step.verify);
        let own = RefCell::new(OwnWork {
            started: SystemTime::now(),
            written: BTreeMap::new(),
            windows: Vec::new(),
        });
        let outside: RefCell<BTreeSet<String>> = RefCell::new(BTreeSet::new());
        // Changes from before this step (tick's own TODO.md write, say) are not news.
        self.drain_watcher();
        let task_dir = task.dir.clone();
        let mut notices = || self.outside_changes(&root, &own.borrow(), &mut outside.borrow_mut());
        let mut record_effects = |effects: &Effects| {
            let mut own = own.borrow_mut();
            if let Some(window) = &effects.command_window {
                own.windows.push((window.start, window.end));
            }
            for file in &effects.files_written {
                own.written.insert(file.path.clone(), file.blake3.clone());
                let _ = journal::append(
                    &task_dir,
                    &Entry::Write {
                        path: file.path.clone(),
                        hash: file.blake3.clone(),
                        at: Utc::now(),
                    },
                );
            }
            if let Some(window) = &effects.command_window {
                let _ = journal::append(
                    &task_dir,
                    &Entry::Command {
                        start: to_utc(window.start),
                        end: to_utc(window.end),
                        step: Some(id.to_string()),
                    },
                );
            }
        };
        let executor = Executor {
            model: Model {
                client: self.client,
                model: self.model.to_owned(),
                system: self.system.to_owned(),
                registry: self.registry,
                limits: self.config.limits,
            },
            step: id,
            interrupted: self.interrupted,
        };
        let ui = self.ui();
        let json = self.json;
        let live = self.ctx.env.stderr_is_terminal;
        let mut sink = move |event: AgentEvent| ui.agent_event(&event, json, live);
        let result = self.runtime.block_on(executor.run(
            &mut messages,
            &mut verifier,
            &mut record_effects,
            &mut notices,
            &mut sink,
            usage,
        ));
        ui.end_live_text();
        self.save_transcript(&task.dir, id, &messages);

        // What the step changed: the files tools wrote, and what git sees changed.
        let outside = outside.into_inner();
        let mut changed: BTreeSet<String> = own.into_inner().written.into_keys().collect();
        if let (Some(before), Some(after)) = (before, dirty_files(&root)) {
            for (path, hash) in &after {
                if before.get(path) != Some(hash) {
                    changed.insert(path.clone());
                }
            }
            for path in before.keys() {
                if !after.contains_key(path) {
                    changed.insert(path.clone());
                }
            }
        }
        changed.retain(|p| !p.starts_with(".tasks/") && !p.starts_with(".git/"));
        let evidence = verifier.evidence.clone();
        let end = match result {
            Ok(end) => end,
            Err(err) => {
                self.save_state(|state| {
                    state.steps.entry(id).or_default().files_changed =
                        changed.iter().cloned().collect();
                })?;
                return Err(step_error(err, id));
            }
        };
        let now = Utc::now().with_timezone(&Utc);
        match end {
            StepEnd::Done { note } => {
                let extra: Vec<String> = changed.iter().cloned().collect();
                let prints = crate::watch::fingerprint(&root, &scope, &extra);
                let deviation = deviations(&scope, &changed);
                self.save_state(|state| {
                    let record = state.record_runner(id, StepStatus::Done, now, &evidence, prints);
                    record.files_changed = changed.iter().cloned().collect();
                    record.deviations.clone_from(&deviation);
                    record.outside_edits = outside.iter().cloned().collect();
                    record.note = note.as_deref().map(|n| crate::redact::redact(n, &[]));
                })?;
                self.set_status(id, Some(StepStatus::InProgress), StepStatus::Done, None)?;
                let verified = if evidence.is_empty() {
                    "done (no verification defined)".to_owned()
                } else {
                    "done, verified".to_owned()
                };
                if self.json {
                    ui.json(&serde_json::json!({"event": "step_done", "id": id.to_string(), "verified": !evidence.is_empty(), "files_changed": changed}));
                } else {
                    ui.note(&format!("{id} {verified}"));
                }
                let parent_blocked = if id.is_sub() {
                    self.settle_parent_verification(id.parent())?
                } else {
                    false
                };
                if self.commit {
                    self.commit_step(task, id, &step.title, &changed)?;
                }
                if parent_blocked {
                    return Ok(StepOutcome::Blocked);
                }
                let task = self.store().load(self.task_ref)?;
                if let Some(max) = task
                    .plan
                    .front
                    .approval
                    .as_ref()
                    .and_then(|a| a.max_files_changed)
                {
                    let total: BTreeSet<&String> = task
                        .state
                        .steps
                        .values()
                        .flat_map(|r| r.files_changed.iter())
                        .collect();
                    if total.len() > max as usize {
                        ui.warn(&format!(
                            "the task has changed {} files, over its limit of {max}",
                            total.len()
                        ));
                        ui.hint(&format!(
                            "review the changes; raise the limit with `tick approve {} --max-files N`",
                            task.id
                        ));
                        return Ok(StepOutcome::Limit);
                    }
                }
                let allowed = task
                    .plan
                    .front
                    .approval
                    .as_ref()
                    .is_some_and(|a| a.allow_deviation);
                if !deviation.is_empty() && !allowed {
                    let list: Vec<String> = deviation.iter().map(|f| format!("`{f}`")).collect();
                    ui.warn(&format!(
                        "{id} changed files outside its `files`: {}",
                        list.join(", ")
                    ));
                    if self.ctx.env.interactive && !self.json {
                        ui.prompt("continue with the next step? [y/N] ");
                        let mut answer = String::new();
                        let _ = std::io::stdin().read_line(&mut answer);
                        if matches!(answer.trim(), "y" | "Y" | "yes") {
                            return Ok(StepOutcome::Done);
                        }
                    }
                    ui.hint("review them (`git diff`), then `tick run` to go on; `tick approve --allow-deviation` stops these pauses");
                    return Ok(StepOutcome::Paused);
                }
                Ok(StepOutcome::Done)
            }
            StepEnd::Blocked { reason } => {
                let reason = crate::redact::redact(&reason, &[]);
                self.save_state(|state| {
                    let record = state.record_runner(
                        id,
                        StepStatus::Blocked,
                        now,
                        &evidence,
                        BTreeMap::new(),
                    );
                    record.files_changed = changed.iter().cloned().collect();
                })?;
                self.set_status(
                    id,
                    Some(StepStatus::InProgress),
                    StepStatus::Blocked,
                    Some(&reason),
                )?;
                if self.json {
                    ui.json(&serde_json::json!({"event": "step_blocked", "id": id.to_string(), "reason": reason}));
                } else {
                    ui.warn(&format!("{id} is blocked: {reason}"));
                    ui.hint(&format!(
                        "answer it (edit the code or PLAN.md), then `tick mark {id} pending` and `tick run`"
                    ));
                }
                Ok(StepOutcome::Blocked)
            }
            StepEnd::Interrupted => {
                ui.warn(&format!(
                    "stopped; `{id}` stays in progress and `tick run` picks it up again"
                ));
                Ok(StepOutcome::Interrupted)
            }
        }
    }

    /// The step's conversation, for the record (`runs/` is not committed).
    fn save_transcript(&self, task_dir: &Path, id: StepId, messages: &[Message]) {
        let secrets: Vec<&str> = self.config.api_key.as_deref().into_iter().collect();
        let mut text = String::new();
        for message in messages {
            if let Ok(line) = serde_json::to_string(message) {
                text.push_str(&crate::redact::redact(&line, &secrets));
                text.push('\n');
            }
        }
        let dir = task_dir.join(crate::tasks::RUNS_DIR);
        let name = format!("{}-{id}.jsonl", self.ctx.now().format("%Y%m%d-%H%M%S"));
        if fsx::create_dir_all(&dir).is_ok() {
            let _ = fsx::write_atomic(&dir.join(name), text.as_bytes());
        }
    }

    /// One commit for a verified step: its files and the task's files, nothing else.
    fn commit_step(
        &self,
        task: &Task,
        id: StepId,
        title: &str,
        changed: &BTreeSet<String>,
    ) -> Result<()> {
        let store = self.store();
        let mut paths: Vec<String> = changed.iter().cloned().collect();
        for file in [PLAN_FILE, TODO_FILE, STATE_FILE] {
            paths.push(store.rel(&task.dir.join(file)));
        }
        let message = format!("{title}\n\nTask: {}\nStep: {id}\n", task.id);
        crate::git::commit_paths(store.root(), &paths, &message).map_err(|err| {
            Error::internal(err).hint("the step is done and recorded; commit it by hand")
        })
    }
}

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

/// The closing line: `5/6 done, 1 blocked: S4 (needs the staging DB password)`.
fn summary(
    ctx: &Ctx<'_>,
    task_ref: &TaskRef,
    usage: &Usage,
    json: bool,
    unsandboxed: bool,
) -> Result<()> {
    let task = ctx.store.load(task_ref)?;
    let progress = task.progress();
    let blocked: Vec<String> = task
        .todo
        .all_steps()
        .filter(|s| s.status == StepStatus::Blocked)
        .map(|s| {
            let id = s.id.map(|i| i.to_string()).unwrap_or_default();
            match &s.blocked {
                Some(reason) => format!("{id} ({reason})"),
                None => id,
            }
        })
        .collect();
    if json {
        ctx.ui.json(&serde_json::json!({
            "event": "summary",
            "done": progress.done,
            "total": progress.total,
            "blocked": blocked,
            "phase": task.phase(),
            "usage": usage,
            "sandboxed": !unsandboxed,
        }));
        return Ok(());
    }
    let mut line = format!("{}/{} done", progress.done, progress.total);
    if !blocked.is_empty() {
        line.push_str(&format!(
            ", {} blocked: {}",
            blocked.len(),
            blocked.join(", ")
        ));
    }
    line.push_str(&format!(
        " ({} tokens in, {} out)",
        usage.input_tokens, usage.output_tokens
    ));
    if unsandboxed {
        line.push_str(", commands ran without the sandbox");
    }
    ctx.ui.note(&line);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(src: &str, only: Option<&str>) -> Next {
        next_step(
            &todo_md::parse(src).unwrap(),
            only.map(|s| s.parse().unwrap()),
        )
    }

    #[test]
    fn picks_the_first_open_step_in_order() {
        assert_eq!(
            next("- [x] S1 a\n- [ ] S2 b\n- [ ] S3 c\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(
            next("- [x] S1 a\n- [-] S2 b\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(
            next("- [x] S1 a\n- [~] S2 b\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(next("- [x] S1 a\n- [x] S2 b\n", None), Next::AllDone);
    }

    #[test]
    fn a_blocked_step_stops_the_run() {
        assert_eq!(
            next(
                "- [x] S1 a\n- [!] S2 b\n  - blocked: no key\n- [ ] S3 c\n",
                None
            ),
            Next::Blocked {
                id: StepId::top(2),
                reason: "no key".into()
            }
        );
    }

    #[test]
    fn depends_are_honoured() {
        let src = "- [ ] S1 a\n  - depends: S2\n- [ ] S2 b\n";
        assert_eq!(next(src, None), Next::Step(StepId::top(2)));
        let src = "- [ ] S1 a\n  - depends: S2\n- [!] S2 b\n";
        assert_eq!(
            next(src, None),
            Next::Blocked {
                id: StepId::top(2),
                reason: "no reason given".into()
            }
        );
    }

    #[test]
    fn sub_steps_are_the_units_of_a_parent() {
        let src = "- [x] S1 a\n- [ ] S2 b\n  - [x] S2.1 c\n  - [ ] S2.2 d\n";
        assert_eq!(next(src, None), Next::Step(StepId::sub(2, 2)));
        assert_eq!(next(src, Some("S2")), Next::Step(StepId::sub(2, 2)));
        assert_eq!(next(src, Some("S1")), Next::AlreadyDone(StepId::top(1)));
    }

    #[test]
    fn deviations_are_files_outside_the_patterns() {
        let changed: BTreeSet<String> = ["src/compat/a.rs", "src/login.rs", "README.md"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let patterns = vec!["src/compat".to_owned(), "src/login.rs".to_owned()];
        assert_eq!(deviations(&patterns, &changed), ["README.md"]);
        let globs = vec!["src/**".to_owned()];
        assert_eq!(deviations(&globs, &changed), ["README.md"]);
    }
}
