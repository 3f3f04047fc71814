//! What every command is handed ([`Ctx`]: the engine, the environment, the printer), how a
//! command ends ([`Outcome`] and its exit code), and the few steps several commands share
//! before their own work: the settings for a model, the stop flag, settling by hand.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};

use crate::engine::Engine;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::tasks::Store;
use crate::ui::Ui;

/// Everything a command needs: the engine for the workspace, the environment, the printer.
pub struct Ctx<'a> {
    pub engine: Engine,
    pub env: &'a Env,
    pub ui: &'a Ui,
}

impl Ctx<'_> {
    /// The workspace's store (the engine's).
    pub fn store(&self) -> &Store {
        self.engine.store()
    }

    /// The time now, to the second: read at each call, so a long-lived process stamps each
    /// write with the time it happened.
    pub fn now(&self) -> DateTime<Utc> {
        self.env.now()
    }

    /// The clock the runner reads while it works (the environment's: fixed when `TICK_NOW`
    /// fixes it). Attribution compares content, never times, so a fixed clock is safe.
    pub fn runner_clock(&self) -> crate::env::Clock {
        self.env.clock.clone()
    }
}

/// How a command ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// A step is blocked and needs a person.
    Blocked,
    /// The run stopped for the person to review (a deviation).
    Paused,
    /// A limit (files changed) stopped the run.
    Limit,
    /// The person pressed Ctrl-C.
    Interrupted,
    /// `tick check` found something: its exit code.
    Findings(u8),
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Done => 0,
            Outcome::Blocked => 4,
            Outcome::Paused => 5,
            Outcome::Limit => 6,
            Outcome::Interrupted => 130,
            Outcome::Findings(code) => code,
        }
    }
}

impl From<crate::runner::StepOutcome> for Outcome {
    fn from(ended: crate::runner::StepOutcome) -> Outcome {
        use crate::runner::StepOutcome;
        match ended {
            StepOutcome::Done => Outcome::Done,
            StepOutcome::Blocked => Outcome::Blocked,
            StepOutcome::Paused => Outcome::Paused,
            StepOutcome::Limit => Outcome::Limit,
            StepOutcome::Interrupted => Outcome::Interrupted,
        }
    }
}

/// The settings for a command that talks to a model, with its flags: see
/// [`Engine::model_config`]; what an untrusted repository's files were not allowed to
/// decide, and a server found on this machine rather than configured, are said in one line
/// each.
pub fn model_config(ctx: &Ctx<'_>, args: &crate::cli::ModelArgs) -> Result<crate::config::Config> {
    let config = ctx.engine.model_config(&flags(args))?;
    warn_untrusted(ctx, &config);
    if let Some(line) = config.found_line() {
        ctx.ui.note(&line);
    }
    ctx.ui.detail(&format!(
        "model `{}` ({}) at `{}` (the URL from {})",
        config.model.as_deref().unwrap_or("?"),
        config.provider.as_str(),
        config.base_url,
        config.base_url_source
    ));
    Ok(config)
}

/// The one line naming what an untrusted repository's files would have decided.
fn warn_untrusted(ctx: &Ctx<'_>, config: &crate::config::Config) {
    if let Some(warning) = config.trust_warning() {
        ctx.ui.warn(&warning);
    }
}

/// The settings as resolved, complete or not (for `tick doctor`).
pub fn resolved_config(
    ctx: &Ctx<'_>,
    args: &crate::cli::ModelArgs,
) -> Result<crate::config::Config> {
    let config = ctx.engine.resolved_config(&flags(args))?;
    warn_untrusted(ctx, &config);
    Ok(config)
}

pub fn flags(args: &crate::cli::ModelArgs) -> crate::config::Flags {
    crate::config::Flags {
        provider: args.provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    }
}

/// The flag a run stops on: Ctrl-C (or SIGTERM, or a closed terminal's SIGHUP) stops the
/// agent's command under way at once and the run at the next safe point, leaving the step in
/// progress; a second one ends the process at once, and the sandbox with it. Every write is
/// atomic either way.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&interrupted)))
            .map_err(|err| Error::internal(format!("could not handle Ctrl-C: {err}")))?;
    }
    Ok(interrupted)
}

/// What every command that changes a task by hand does first, in its transaction `tx`
/// ([`crate::tasks::by_hand::settle`]): the steps found stale are said once.
pub fn settle(ctx: &Ctx<'_>, tx: &mut crate::tasks::tx::Tx<'_>) -> Result<()> {
    crate::tasks::by_hand::settle(ctx.store(), tx, ctx.now(), &mut |stale| ctx.ui.stale(stale))
}
