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
pub mod import;
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

/// The settings for a command that talks to a model, with its flags: see
/// [`crate::config::for_model`].
pub fn model_config(ctx: &Ctx<'_>, args: &crate::cli::ModelArgs) -> Result<crate::config::Config> {
    crate::config::for_model(&ctx.store, ctx.env, &flags(args))
}

/// The settings as resolved, complete or not (for `tick doctor`).
pub fn resolved_config(
    ctx: &Ctx<'_>,
    args: &crate::cli::ModelArgs,
) -> Result<crate::config::Config> {
    crate::config::for_workspace(&ctx.store, ctx.env, &flags(args))
}

fn flags(args: &crate::cli::ModelArgs) -> crate::config::Flags {
    crate::config::Flags {
        provider: args.provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    }
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
        return Ok(match crate::session::run(&ctx.store, env, ui)? {
            crate::session::Ended::Quit => Outcome::Done,
            crate::session::Ended::Interrupted => Outcome::Interrupted,
        });
    };
    match command {
        Command::Init(args) => init::run(&ctx, &args),
        Command::Plan(args) => plan::run(&ctx, &args),
        Command::Import(args) => import::run(&ctx, &args, &cwd),
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

/// What every command that changes a task by hand does first, in its transaction `tx`
/// ([`crate::tasks::by_hand::settle`]): the steps found stale are said once.
pub fn settle(ctx: &Ctx<'_>, tx: &mut crate::tasks::tx::Tx<'_>) -> Result<()> {
    crate::tasks::by_hand::settle(&ctx.store, tx, ctx.now(), &mut |stale| ctx.ui.stale(stale))
}
