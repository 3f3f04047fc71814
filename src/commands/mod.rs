//! One file per subcommand. Each takes its parsed `Args` and the [`Ctx`], does its work
//! through the store, and hands what people should see to the [`Ui`].

pub mod answer;
pub mod approve;
pub mod cancel;
pub mod check;
pub mod completions;
pub mod config;
mod ctx;
pub mod diff;
pub mod discard;
pub mod doctor;
pub mod edit;
pub mod from_git;
pub mod import;
pub mod init;
pub mod list;
pub mod log;
pub mod man;
pub mod mark;
pub mod mcp;
pub mod model;
pub mod next;
pub mod plan;
pub mod redo;
pub mod review;
pub mod run;
pub mod show;
pub mod status;
pub mod terminal;
pub mod trust;
pub mod undo;
pub mod verify;
pub mod watch;

use crate::cli::{Cli, Command};
use crate::engine::Engine;
use crate::env::Env;
use crate::error::Result;
use crate::tasks::Store;
use crate::ui::Ui;

pub use ctx::{Ctx, Outcome, flags, model_config, resolved_config, settle, stop_on_signals};

pub fn dispatch(cli: Cli, env: &Env, ui: &Ui) -> Result<Outcome> {
    let cwd = match &cli.directory {
        Some(dir) => env.cwd.join(dir),
        None => env.cwd.clone(),
    };
    let ctx = Ctx {
        engine: Engine::new(Store::discover(&cwd)?.trusting(env), env.clone()),
        env,
        ui,
    };
    ui.detail(&format!("workspace `{}`", ctx.store().root().display()));
    let Some(command) = cli.command else {
        let trusted = trust::ask_for_session(&ctx);
        let store = trusted.as_ref().unwrap_or(ctx.store());
        return Ok(match crate::tui::run(store, env, ui)? {
            crate::tui::Ended::Quit => Outcome::Done,
            crate::tui::Ended::Interrupted => Outcome::Interrupted,
        });
    };
    let outcome = match command {
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
        Command::Trust(args) => trust::run(&ctx, &args),
        Command::Completions(args) => completions::run(&ctx, &args),
        Command::Man(args) => man::run(&ctx, &args),
        Command::Model(args) => model::run(&ctx, &args),
        Command::Undo(args) => undo::run(&ctx, &args),
        Command::Redo(args) => redo::run(&ctx, &args),
        Command::Mcp(args) => mcp::run(&ctx, &args),
        Command::Config(args) => config::run(&ctx, &args),
    };
    // What taking a lock found and finished (an undo cut short by a kill) is said once.
    for notice in ctx.store().take_notices() {
        ui.warn(&notice);
    }
    // The `step.stale` hooks the command's staleness check fired.
    for report in ctx.engine.take_hook_reports() {
        ui.hook_report(&report);
    }
    outcome
}
