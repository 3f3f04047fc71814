//! What `tick plan` needs to decide on and run the compact planner: the choice (`planner:`,
//! and for `auto` the server's context size, asked only of a server on this machine or
//! Ollama), the structured-output method (the cached probe, else the provider's first
//! candidate), the prompt (overridable in `.tasks/prompts/`) and the budget.

use std::ffi::OsString;
use std::path::Path;

use super::{
    Choice, CompactDraft, CompactError, CompactEvent, Options, PROMPT, PROMPT_FILE, budget, cache,
    choose,
};
use crate::config::{Config, Limits, Planner, Provider, is_loopback};
use crate::error::{Error, ErrorKind, Result};
use crate::llm::{Client, ProviderKind, context_tokens};
use crate::tasks::Store;

/// The files the localize call may ask for.
const MAX_READ_FILES: usize = 4;

/// The planner `tick plan` runs, and the compact planner's options.
#[derive(Debug, Clone)]
pub struct Setup {
    pub choice: Choice,
    pub options: Options,
    /// The context size the server stated, if it was asked.
    pub context_tokens: Option<u32>,
}

impl Setup {
    /// Resolves the planner for a new goal or a revision (`fresh`); answering the agent's
    /// questions goes on with the agent, which holds that conversation.
    pub async fn resolve(
        client: &Client,
        config: &Config,
        store: &Store,
        path_var: Option<OsString>,
        fresh: bool,
    ) -> Result<Setup> {
        let loopback = is_loopback(&config.base_url);
        let ollama = config.provider == Provider::Ollama;
        let model = config.planner_model()?;
        // Only llama.cpp (`/props`) and Ollama (`/api/show`) say; both speak OpenAI's format.
        let asks = config.provider.kind() == ProviderKind::OpenAi && (loopback || ollama);
        let context_tokens = if fresh && config.planner != Planner::Agent && asks {
            context_tokens(client, &model, ollama).await
        } else {
            None
        };
        let choice = if fresh {
            choose(config.planner, loopback, context_tokens)
        } else {
            Choice::Agent { fallback: false }
        };
        let cached = cache::load(store.dir());
        let method = cache::method_for(
            &cached,
            &cache::key(&config.base_url, &model),
            config.provider.kind(),
            ollama,
        );
        Ok(Setup {
            choice,
            options: Options {
                model,
                method,
                system: store.prompt(PROMPT_FILE, PROMPT)?,
                budget: budget(context_tokens, loopback),
                max_read_files: MAX_READ_FILES,
                path_var,
                read_only_sandbox: false,
            },
            context_tokens,
        })
    }

    /// Whether an agent answer without a tool call hands over to the compact planner.
    pub fn falls_back(&self) -> bool {
        self.choice == Choice::Agent { fallback: true }
    }

    /// The agent's limits: with a fallback, the first answer without a tool call ends the
    /// agent at once (no reminders) so the compact planner starts without delay.
    pub fn agent_limits(&self, limits: Limits) -> Limits {
        if self.falls_back() {
            Limits {
                max_reminders: 0,
                ..limits
            }
        } else {
            limits
        }
    }

    /// Runs the compact planner.
    pub async fn plan(
        &self,
        client: &Client,
        root: &Path,
        goal: &str,
        sink: &mut (dyn FnMut(CompactEvent) + Send),
    ) -> std::result::Result<CompactDraft, CompactError> {
        super::plan(client, root, goal, &self.options, sink).await
    }
}

impl CompactError {
    /// The error for the person, when it is not the provider's (those get the agent's
    /// messages and hints).
    pub fn into_error(self) -> Error {
        Error::new(ErrorKind::Provider, self.to_string())
            .hint(
                "a small model may do better with a narrower goal; or write the plan yourself: \
                 `tick plan --from plan.md`",
            )
            .hint("no draft was written")
    }
}
