//! What a runner needs, built in one place from the resolved [`Config`] and the [`Store`]: the
//! model client, the sandboxed build-mode tool registry and the step prompt. `tick run`,
//! `tick verify` and the interactive session build their runners (or, for `verify`, just the
//! commands' sandbox) here, so they cannot drift apart.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::{Clock, EXECUTE_PROMPT, RunnerDeps};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::llm::{Client, ClientConfig};
use crate::tasks::lock::Lock;
use crate::tasks::{Store, TaskRef};
use crate::tools::{Mode, Registry, Workspace};

/// The build-mode tools for the workspace of `store`, under the sandbox the config asks for
/// (`no_sandbox`: the person's `--no-sandbox`), without the API key's variable in the
/// commands' environment. Says whether the sandbox is on.
pub fn registry(config: &Config, store: &Store, no_sandbox: bool) -> Result<(Registry, bool)> {
    let sandboxing = crate::sandbox::for_run(&config.sandbox, store.root(), no_sandbox)?;
    let sandboxed = sandboxing.policy().is_some();
    let workspace = Workspace::new(store.root())
        .map_err(|err| Error::io("open the workspace", store.root(), &err))?;
    let registry = Registry::for_mode(Mode::Build, workspace)
        .with_passed_env(config.sandbox.env.clone())
        .with_secret_env(config.api_key_env.iter().cloned().collect())
        .with_sandbox(sandboxing)
        .with_run_command(crate::tools::run_command::Setup::new(
            config.run_command.clone(),
        ));
    Ok((registry, sandboxed))
}

/// The error of a run that must give a step to a model and has none configured.
pub fn no_model() -> Error {
    Error::input("no model is configured")
        .hint("set `model:` in `.tasks/config.yaml`, or `TICK_MODEL`, or pass `--model`")
}

/// A runner's model, tools and prompt, owned; [`Parts::deps`] lends them to a runner.
pub struct Parts {
    pub client: Client,
    pub model: String,
    /// The step turn's system prompt (`.tasks/prompts/execute.md` or [`EXECUTE_PROMPT`]).
    pub system: String,
    pub registry: Registry,
    /// Whether the agent's commands run under the sandbox.
    pub sandboxed: bool,
    /// The compact executor's options when `executor:` (or, under `auto`, the server)
    /// chooses it for the steps.
    pub compact: Option<crate::compact::exec::ExecOptions>,
}

impl Parts {
    /// The parts for running tasks of `store` with `config` (which names a model).
    pub fn new(config: &Config, store: &Store, no_sandbox: bool) -> Result<Parts> {
        let model = config.model.clone().ok_or_else(no_model)?;
        let client = Client::new(config.client_config()?)
            .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
        Parts::with_client(config, store, no_sandbox, client, model)
    }

    /// The parts for a run that has no step to give a model (every step done, or a blocked
    /// one first): the settings may name no model or key, and nothing asks the server
    /// anything. A step that turns up after all (a person unticked one meanwhile) stops the
    /// run with [`no_model`] before any request is made.
    pub fn without_steps(config: &Config, store: &Store, no_sandbox: bool) -> Result<Parts> {
        let client = Client::new(ClientConfig::new(
            config.provider.kind(),
            config.base_url.clone(),
        ))
        .map_err(|err| Error::new(ErrorKind::Provider, err.to_string()))?;
        let mut config = config.clone();
        config.executor = crate::config::Planner::Agent;
        Parts::with_client(&config, store, no_sandbox, client, String::new())
    }

    fn with_client(
        config: &Config,
        store: &Store,
        no_sandbox: bool,
        client: Client,
        model: String,
    ) -> Result<Parts> {
        let (registry, sandboxed) = registry(config, store, no_sandbox)?;
        let compact = if config.executor == crate::config::Planner::Agent {
            None
        } else {
            crate::rt::block_on(crate::compact::exec::resolve(
                &client, config, store, &model,
            ))??
        };
        Ok(Parts {
            client,
            model,
            system: store.prompt("execute.md", EXECUTE_PROMPT)?,
            registry,
            sandboxed,
            compact,
        })
    }

    /// The parts, with the agent's commands stopped at once when `interrupted` is set (a
    /// person's Ctrl-C), instead of at the end of the command.
    #[must_use]
    pub fn with_interrupt(mut self, interrupted: Arc<AtomicBool>) -> Parts {
        self.registry = self.registry.with_interrupt(interrupted);
        self
    }

    /// Everything a runner of `task` needs: these parts, `config`'s limits and secrets, and
    /// what the caller decides (`commit` each step, `watch` for a person's edits).
    #[allow(
        clippy::too_many_arguments,
        reason = "each is the caller's own: its store, task, lock, clock, Ctrl-C flag and flags"
    )]
    pub fn deps<'a>(
        &'a self,
        config: &Config,
        store: &'a Store,
        task: TaskRef,
        lock: &'a Lock,
        clock: Clock,
        interrupted: Arc<AtomicBool>,
        commit: bool,
        watch: bool,
    ) -> RunnerDeps<'a> {
        RunnerDeps {
            store,
            task,
            lock,
            client: &self.client,
            model: self.model.clone(),
            system: self.system.clone(),
            registry: &self.registry,
            limits: config.limits,
            tool_calls: config.tool_calls,
            sandboxed: self.sandboxed,
            secrets: config.api_key.iter().cloned().collect(),
            clock,
            interrupted,
            commit,
            watch,
            compact: self.compact.clone(),
            hooks: crate::hooks::HookSet::resolve(&config.hooks, store.root()),
        }
    }
}
