//! One file per subcommand. Each takes its parsed `Args` and the [`Ctx`], does its work
//! through the store, and hands what people should see to the [`Ui`].

pub mod answer;
pub mod approve;
pub mod cancel;
pub mod check;
pub mod completions;
pub mod diff;
pub mod discard;
pub mod doctor;
pub mod edit;
pub mod init;
pub mod list;
pub mod log;
pub mod man;
pub mod mark;
pub mod next;
pub mod plan;
pub mod review;
pub mod run;
pub mod show;
pub mod status;
pub mod verify;
pub mod watch;

use chrono::{DateTime, Utc};

use crate::cli::{Cli, Command};
use crate::env::Env;
use crate::error::Result;
use crate::tasks::Store;
use crate::ui::Ui;

/// Everything a command needs.
pub struct Ctx<'a> {
    pub store: Store,
    pub env: &'a Env,
    pub ui: &'a Ui,
}

impl Ctx<'_> {
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

/// The settings for a command that talks to a model: files, environment, then its flags.
///
/// Fails, before anything is written, with one message naming everything still missing (a
/// model, a key) and the ways to set it; and, for a server on this machine, at once when it
/// refuses the connection (it is not running: retrying would only make the person wait).
pub fn model_config(ctx: &Ctx<'_>, args: &crate::cli::ModelArgs) -> Result<crate::config::Config> {
    let config = resolved_config(ctx, args)?;
    let missing = config.missing(true);
    if !missing.is_empty() {
        let path = ctx.store.config_path();
        return Err(config.missing_error(&missing, &ctx.store.rel(&path)));
    }
    if crate::config::is_loopback(&config.base_url) {
        doctor::require_server(&config)?;
    }
    Ok(config)
}

/// The settings as resolved, complete or not (for `tick doctor`).
pub fn resolved_config(
    ctx: &Ctx<'_>,
    args: &crate::cli::ModelArgs,
) -> Result<crate::config::Config> {
    let flags = crate::config::Flags {
        provider: args.provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    };
    let path = ctx.store.config_path();
    crate::config::resolve(&path, &ctx.store.rel(&path), ctx.env, &flags)
}

pub fn dispatch(cli: Cli, env: &Env, ui: &Ui) -> Result<Outcome> {
    let cwd = match &cli.directory {
        Some(dir) => env.cwd.join(dir),
        None => env.cwd.clone(),
    };
    let ctx = Ctx {
        store: Store::discover(&cwd),
        env,
        ui,
    };
    let Some(command) = cli.command else {
        return crate::session::run(&ctx);
    };
    match command {
        Command::Init(args) => init::run(&ctx, &args),
        Command::Plan(args) => plan::run(&ctx, &args),
        Command::Show(args) => show::run(&ctx, &args),
        Command::Discard(args) => discard::run(&ctx, &args),
        Command::Approve(args) => approve::run(&ctx, &args),
        Command::Mark(mut args) => {
            // `tick mark S1 done TASK` and `tick mark S1 done -t TASK` mean the same.
            if args.task.is_none() {
                args.task = args.task_flag.take();
            }
            mark::run(&ctx, &args)
        }
        Command::Answer(args) => answer::run(&ctx, &args),
        Command::Log(args) => log::run(&ctx, &args),
        Command::Run(args) => run::run(&ctx, &args),
        Command::Status(args) => status::run(&ctx, &args),
        Command::List(args) => list::run(&ctx, &args),
        Command::Watch(args) => watch::run(&ctx, &args),
        Command::Check(args) => check::run(&ctx, &args),
        Command::Doctor(args) => doctor::run(&ctx, &args),
        Command::Review(args) => review::run(&ctx, &args),
        Command::Next(args) => next::run(&ctx, &args),
        Command::Verify(args) => verify::run(&ctx, &args),
        Command::Edit(args) => edit::run(&ctx, &args),
        Command::Diff(args) => diff::run(&ctx, &args),
        Command::Cancel(args) => cancel::run(&ctx, &args),
        Command::Completions(args) => completions::run(&ctx, &args),
        Command::Man(args) => man::run(&ctx, &args),
    }
}

/// What every command that changes a task by hand does first, in its transaction `tx`: what
/// went stale while tick was not looking is marked (and said once), and steps a person added
/// get their ids.
pub fn settle(ctx: &Ctx<'_>, tx: &mut crate::tasks::tx::Tx<'_>) -> Result<()> {
    let verdict = crate::watch::examine(&ctx.store, tx.base())?;
    crate::watch::apply(tx, &verdict, ctx.now())?;
    for stale in &verdict.stale {
        ctx.ui.warn(&format!(
            "`{}` is stale: {} changed outside tick",
            stale.id,
            stale.files.join(", ")
        ));
    }
    tx.assign_ids()?;
    Ok(())
}
