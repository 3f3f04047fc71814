//! The engine: the one handle both front ends drive. The subcommands (`commands/`) turn their
//! arguments into calls here and render what comes back; the session (`tui/`) holds the same
//! handle on its worker thread. What both must do alike lives here once: settings resolution
//! with the probe of a server on this machine, the run lock, the runner's parts and the
//! sandbox, the warnings a run starts with (as [`Warning`] events), the planning session, and
//! the step that runs next ([`crate::runner::next_step`], with `depends`).
//!
//! The engine never prints: events go to the caller's sink, outcomes come back typed.

mod hooks;
mod snapshot;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub use snapshot::{PlanView, Snapshot, StepView};

use crate::config::{Config, Flags};
use crate::env::Env;
use crate::error::Result;
use crate::hooks::HookSet;
use crate::person::Person;
use crate::plan::StepId;
use crate::planning::approve::{ApproveOutcome, Contract, Reapproved};
use crate::planning::{PlanDeps, RunCommand, Session, Target};
use crate::runner::build::Parts;
use crate::runner::{EXECUTE_PROMPT, Next, RunEvent, RunOptions, RunOutcome, Runner, next_step};
use crate::tasks::{Store, Task};

/// tick's engine for one workspace: its store and the environment it was started in.
#[derive(Debug, Clone)]
pub struct Engine {
    store: Store,
    env: Env,
    /// The hooks the engine ran on its own (`step.stale`), for the front end to show.
    hook_reports: hooks::Reports,
}

/// Something the engine did or found while it works, for the front end to show.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Run(RunEvent),
    Warning(Warning),
    /// A line about the settings the engine found (a server found on this machine).
    Note(String),
}

/// What a run says before its first step: the person should know, the run goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The agent's commands run without the sandbox.
    Unsandboxed,
    /// What an untrusted repository's files would have decided and were not allowed to
    /// ([`Config::trust_warning`]).
    Untrusted(String),
    /// Files of the workspace that are hard links to files elsewhere (workspace-relative):
    /// no sandbox can keep a command that may write the one from writing the other.
    HardLinks(Vec<String>),
}

/// What `tick run` (or the session's `/run`) asks for.
#[derive(Debug, Clone)]
pub struct RunRequest<'r> {
    /// The task named; `None`: the current one.
    pub task: Option<&'r str>,
    pub options: RunOptions,
    /// The model flags of the command line.
    pub flags: Flags,
    pub no_sandbox: bool,
    /// Commit each step (`--commit`); without it the approval's contract decides.
    pub commit: bool,
    /// Set, the run stops at its next safe point (Ctrl-C, `/stop`).
    pub stop: Arc<AtomicBool>,
    /// What set `stop`, as `tick log` tells of it: "Ctrl-C", "/stop".
    pub stopped_by: &'static str,
}

/// What [`Engine::approve`] approved.
#[derive(Debug, Clone)]
pub struct Approved {
    pub approval: Approval,
    /// The hook changes approved with it (empty when the hooks were approved already).
    pub hooks_approved: Vec<String>,
    /// The settings the hooks were read from, for the `plan.approved` hooks.
    pub config: Config,
    pub hooks: HookSet,
}

/// Which approval [`Engine::approve`] made.
#[derive(Debug, Clone)]
pub enum Approval {
    /// The draft is a task now.
    Draft(crate::planning::approve::Approved),
    /// Task `id`'s PLAN.md was approved again, or found approved as it stands.
    Task { id: String, reapproved: Reapproved },
    /// Nothing else to approve: only the current task's changed hooks were.
    HooksOnly { id: String },
}

/// The prompts the next step would get (`tick run --dry-run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    pub system: String,
    pub user: String,
}

impl Engine {
    /// The engine for `store`: from now on every commit that makes a done step stale fires
    /// the `step.stale` hooks.
    pub fn new(store: Store, env: Env) -> Engine {
        let hook_reports = hooks::Reports::default();
        store.on_stale(hooks::stale_observer(
            env.clone(),
            Arc::clone(&hook_reports),
        ));
        Engine {
            store,
            env,
            hook_reports,
        }
    }

    /// The hooks the engine ran on its own since the last call (`step.stale`), in order.
    pub fn take_hook_reports(&self) -> Vec<crate::hooks::HookReport> {
        hooks::take(&self.hook_reports)
    }

    /// The interactive session starts: its `session.start` hooks (read-only), then what the
    /// engine ran on its own before (the session's first staleness check).
    pub fn session_start(&self) -> Vec<crate::hooks::HookReport> {
        let mut reports = self.take_hook_reports();
        reports.extend(hooks::session_start(&self.store, &self.env));
        reports
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The settings for talking to a model, with `flags` ([`crate::config::for_workspace`]);
    /// with nothing configured, the first server on this machine that serves a model
    /// ([`crate::config::with_local_server`]: settings resolution itself opens no
    /// connection, the engine probes). A server on this machine that refuses the connection
    /// fails at once (it is not running: retrying would only make the person wait).
    pub fn model_config(&self, flags: &Flags) -> Result<Config> {
        let config = crate::config::for_workspace(&self.store, &self.env, flags)?;
        let config = crate::config::with_local_server(config, &self.store, &self.env)?;
        let config = crate::config::complete(config, &self.store)?;
        if crate::config::is_loopback(&config.base_url) {
            crate::report::doctor::require_server(&config)?;
        }
        Ok(config)
    }

    /// The settings as resolved, complete or not (`tick doctor`, `tick verify`).
    pub fn resolved_config(&self, flags: &Flags) -> Result<Config> {
        crate::config::for_workspace(&self.store, &self.env, flags)
    }

    /// The planning session on the draft, with `config`'s model and `run_command` as the
    /// sandbox allows.
    pub fn planning<'a>(&'a self, config: &'a Config) -> Session<'a> {
        let deps = PlanDeps {
            config,
            run_command: self.run_command(config),
            clock: self.env.clock.clone(),
            path_var: self.env.var("PATH").map(Into::into),
            mcp: self.mcp_launcher(config, None),
        };
        Session::open(&self.store, Target::Draft, deps)
    }

    /// The person's MCP servers for one command, if any are configured; none start yet.
    /// Stdio servers are contained as `containment` says, or, for planning (`None`), under
    /// the read-only policy (without a sandbox when the person switched it off).
    pub fn mcp_launcher(
        &self,
        config: &Config,
        containment: Option<crate::mcp::Containment>,
    ) -> Option<Arc<crate::mcp::Launcher>> {
        use crate::mcp::Containment;
        if config.mcp_servers.is_empty() {
            return None;
        }
        let root = self.store.root().to_path_buf();
        let containment = containment.unwrap_or_else(|| {
            if !config.sandbox.enabled {
                return Containment::Unsandboxed { workspace: root };
            }
            match crate::sandbox::available(crate::sandbox::Kind::ReadOnly) {
                Ok(()) => Containment::Sandboxed(crate::sandbox::Policy::read_only(root)),
                Err(unavailable) => Containment::Unavailable(format!(
                    "{unavailable}; stdio MCP servers run only inside it"
                )),
            }
        });
        let var = |name: &str| self.env.var(name).map(str::to_owned);
        Some(crate::mcp::Launcher::new(
            &config.mcp_servers,
            containment,
            &var,
        ))
    }

    /// `run_command` for the planner, as [`RunCommand::for_config`] decides.
    fn run_command(&self, config: &Config) -> RunCommand {
        let run_command = RunCommand::for_config(config);
        // Only a debug build knows this switch: the tests that show the sandbox holds alone.
        #[cfg(debug_assertions)]
        if let RunCommand::Available(setup) = &run_command
            && self.env.var(NO_ALLOW_LIST_FOR_TESTS) == Some("1")
        {
            return RunCommand::Available(setup.clone().without_allow_list_for_tests());
        }
        run_command
    }

    /// Runs the approved task: locks it, makes it current, says what needs no model first,
    /// then the warnings, then the steps. `person` is asked whether to go on after a
    /// deviation.
    pub fn run(
        &self,
        request: RunRequest<'_>,
        person: &mut dyn Person,
        sink: &mut (dyn FnMut(Event) + Send),
    ) -> Result<RunOutcome> {
        let store = &self.store;
        let task_ref = store.resolve_or_current(request.task)?;
        let lock = store.lock_task_now(&task_ref, "tick run")?;
        // What needs no model is said before the model's settings are asked for: a plan
        // changed since approval, and a `--step` the task does not have. A run refused for
        // either leaves the current task as it was.
        let task = store.load(&task_ref)?;
        crate::runner::check_runnable(store, &task, &mut |event| {
            sink(Event::Run(event));
        })?;
        if let Some(id) = request.options.only {
            task.step_or_error(store, id)?;
        }
        store.set_current(&task_ref);
        // A run with no step to give the model (every step done, or a blocked one first)
        // says so with the settings as they are: it needs no model, so none is asked for. Files
        // changed while tick was off are looked at first: a stale step may have to be redone.
        crate::watch::refresh_locked(store, &task_ref, self.env.clock.precise(), &lock)?;
        let task = store.load(&task_ref)?;
        // A parent whose sub-steps are done has only its own check left: no model for that.
        let steps_to_run = task.progress().stale > 0
            || matches!(
                next_step(&task.todo, request.options.only),
                Next::Step(id) if !task.todo.find(id).is_some_and(crate::tasks::todo_md::Step::awaits_its_check)
            );
        let config = if steps_to_run {
            self.model_config(&request.flags)?
        } else {
            self.resolved_config(&request.flags)?
        };
        if let Some(line) = config.trust_warning() {
            sink(Event::Warning(Warning::Untrusted(line)));
        }
        if let Some(line) = config.found_line() {
            sink(Event::Note(line));
        }
        let parts = if steps_to_run {
            Parts::new(&config, store, request.no_sandbox)?
        } else {
            Parts::without_steps(&config, store, request.no_sandbox)?
        };
        let mut parts = parts.with_interrupt(Arc::clone(&request.stop));
        if !config.mcp_servers.is_empty() {
            // A step's stdio servers run under the run's own policy (or, with the sandbox off,
            // unsandboxed like its commands).
            let containment = match parts.registry.command_env().sandbox().policy() {
                Some(policy) => crate::mcp::Containment::Sandboxed(policy.clone()),
                None => crate::mcp::Containment::Unsandboxed {
                    workspace: store.root().to_path_buf(),
                },
            };
            let launcher = self.mcp_launcher(&config, Some(containment));
            if let Some(launcher) = launcher {
                parts.registry = parts.registry.with_mcp(launcher).0;
            }
        }
        let mut runner = Runner::new(parts.deps(
            &config,
            store,
            task_ref.clone(),
            &lock,
            self.env.clock.clone(),
            request.stop,
            request.commit,
            true,
        ))?;
        if !parts.sandboxed {
            sink(Event::Warning(Warning::Unsandboxed));
            crate::runner::write::record_unsandboxed(store, &task_ref, self.env.now())?;
        }
        if let Ok(leaving) = crate::sandbox::links_leaving(store.root())
            && !leaving.is_empty()
        {
            sink(Event::Warning(Warning::HardLinks(leaving)));
        }
        runner.run(request.options, person, &mut |event| {
            // A step gone stale fired its hooks in the commit that marked it.
            for report in self.take_hook_reports() {
                sink(Event::Run(RunEvent::Hook(report)));
            }
            // `tick log` tells of the stop: a person's Ctrl-C is part of the task's story.
            if let crate::runner::RunEvent::Interrupted { step, in_progress } = &event {
                let step = in_progress.then(|| step.to_string());
                let now = self.env.now();
                crate::tasks::journal::interrupted(
                    &task_ref.dir,
                    step.as_deref(),
                    request.stopped_by,
                    now,
                );
            }
            sink(Event::Run(event));
        })
    }

    /// The task named (or the current one) and what runs next in it, as `tick run` decides.
    pub fn next(&self, task: Option<&str>, only: Option<StepId>) -> Result<(Task, Next)> {
        let task = self.store.load(&self.store.resolve_or_current(task)?)?;
        let next = next_step(&task.todo, only);
        Ok((task, next))
    }

    /// The exact prompts the next step would get; `None` when every step is done.
    pub fn dry_run(&self, task: Option<&str>, only: Option<StepId>) -> Result<Option<Prompts>> {
        let (task, next) = self.next(task, only)?;
        self.store.require_steps(&task)?;
        if let Some(id) = only {
            task.step_or_error(&self.store, id)?;
        }
        let id = match next {
            Next::Step(id) | Next::AlreadyDone(id) => id,
            Next::Blocked { id, .. } | Next::Waiting { id, .. } => id,
            Next::AllDone => return Ok(None),
        };
        Ok(Some(Prompts {
            system: self.store.prompt("execute.md", EXECUTE_PROMPT)?,
            user: crate::agent::context::pack(&task, id),
        }))
    }

    /// Approves the draft, or task `task`'s edited plan (the current task's when `None` and
    /// there is no draft), with `contract`; the hooks that apply now are approved with it
    /// (`docs/hooks.md`). With nothing else to approve, a change of the current task's hooks
    /// is approved alone ([`Approval::HooksOnly`]).
    pub fn approve(&self, task: Option<&str>, contract: Contract) -> Result<Approved> {
        let store = &self.store;
        let now = self.env.now();
        let config = crate::config::for_workspace(store, &self.env, &Flags::default())?;
        let hooks = HookSet::resolve(&config.hooks, store.root());
        let record = crate::hooks::approval::record(&hooks, store.root());
        let approval = match crate::planning::approve::approve(store, task, now, contract) {
            Ok(ApproveOutcome::Draft(approved)) => Approval::Draft(approved),
            Ok(ApproveOutcome::Task { id, reapproved }) => Approval::Task { id, reapproved },
            Err(err) => {
                if task.is_none()
                    && let Some(current) = store.current()?
                {
                    let changes =
                        crate::hooks::approval::approve(store, &current.id, &record, now)?;
                    if !changes.is_empty() {
                        return Ok(Approved {
                            approval: Approval::HooksOnly { id: current.id },
                            hooks_approved: changes,
                            config,
                            hooks,
                        });
                    }
                }
                return Err(err);
            }
        };
        let id = match &approval {
            Approval::Draft(approved) => approved.id.clone(),
            Approval::Task { id, .. } | Approval::HooksOnly { id } => id.clone(),
        };
        let hooks_approved = crate::hooks::approval::approve(store, &id, &record, now)?;
        Ok(Approved {
            approval,
            hooks_approved,
            config,
            hooks,
        })
    }

    /// The draft and the current task as they are on disk now. Never fails: a file that
    /// does not parse is reported in the view's `problem`.
    pub fn status(&self) -> Snapshot {
        snapshot::read(&self.store)
    }
}

/// Set to `1` in a debug build, `run_command` skips its allow-list (guard 1), so tests can
/// show that the read-only sandbox (guard 2) alone writes nothing. Release builds ignore it.
#[cfg(debug_assertions)]
pub const NO_ALLOW_LIST_FOR_TESTS: &str = "TICK_TEST_RUN_COMMAND_WITHOUT_ALLOW_LIST";

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::Engine;
    use crate::config::Flags;
    use crate::env::Env;
    use crate::error::ErrorKind;
    use crate::tasks::Store;

    #[test]
    fn the_model_settings_fail_at_once_when_a_local_server_does_not_listen() {
        let dir = tempfile::tempdir().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let vars: BTreeMap<String, String> = [
            ("HOME", dir.path().display().to_string()),
            ("TICK_PROVIDER", "ollama".to_owned()),
            ("TICK_MODEL", "m".to_owned()),
            ("TICK_BASE_URL", format!("http://127.0.0.1:{port}/v1")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let env = Env::fixed(dir.path().to_path_buf(), vars, chrono::DateTime::UNIX_EPOCH);
        let engine = Engine::new(Store::at(dir.path()), env);
        assert!(engine.model_config(&Flags::default()).is_ok());
        drop(listener);
        let err = engine.model_config(&Flags::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Provider);
        // Resolving alone does not care whether the server listens.
        assert!(engine.resolved_config(&Flags::default()).is_ok());
    }
}
