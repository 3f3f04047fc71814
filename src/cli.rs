//! The command line as clap sees it: raw flags only. Each command's `Args` doc comment is its
//! `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Make a coding agent plan first, wait for your approval, then execute the approved plan one
/// verified step at a time.
///
/// Plans live in `.tasks/` as PLAN.md and TODO.md: read them, edit them, commit them.
#[derive(Debug, Parser)]
#[command(name = "tick", version = env!("TICK_LONG_VERSION"), about, long_about = None, propagate_version = true)]
#[command(after_help = SESSION_NOTE, after_long_help = TOP_EXAMPLES)]
pub struct Cli {
    /// Run as if tick was started in DIR.
    #[arg(short = 'C', long = "directory", value_name = "DIR", global = true)]
    pub directory: Option<PathBuf>,

    /// Say less: no notes or hints, only the data, warnings and errors.
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say more: detail lines (where the settings came from, each probe, each hook run).
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,

    /// Print straight to stdout, never through the pager (`$TICK_PAGER`, `$PAGER`).
    #[arg(long, global = true)]
    pub no_pager: bool,

    /// Colour: `auto` (on a terminal, unless `NO_COLOR` is set), `always`, `never`.
    #[arg(long, value_enum, value_name = "WHEN", global = true, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,

    /// `None`: the interactive session (in a terminal).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// When the lines tick prints are coloured (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Init(InitArgs),
    Plan(PlanArgs),
    Import(ImportArgs),
    Show(ShowArgs),
    Discard(DiscardArgs),
    Approve(ApproveArgs),
    Mark(MarkArgs),
    Answer(AnswerArgs),
    Log(LogArgs),
    Run(RunArgs),
    Status(StatusArgs),
    List(ListArgs),
    Watch(WatchArgs),
    Check(CheckArgs),
    Doctor(DoctorArgs),
    Review(ReviewArgs),
    Next(NextArgs),
    Verify(VerifyArgs),
    Edit(EditArgs),
    Diff(DiffArgs),
    Cancel(CancelArgs),
    Trust(TrustArgs),
    Completions(CompletionsArgs),
    Man(ManArgs),
    Model(LocalModelArgs),
    Undo(UndoArgs),
    Redo(RedoArgs),
    Mcp(McpArgs),
    Config(ConfigArgs),
}

/// Show or change a setting: each value tick uses and where it came from.
///
/// `list` shows every setting, its value and its source (default, your file
/// `~/.config/tick/config.yaml`, the repository's `.tasks/config.yaml`, or the environment);
/// `set` writes your file (`--user`) or the repository's (`--repo`), checked before it is
/// replaced in one step. See `docs/config.md`.
#[derive(Debug, Args)]
#[command(after_long_help = CONFIG_EXAMPLES)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

const CONFIG_EXAMPLES: &str = "\
Examples:
  tick config list                           # every setting, its value and its source
  tick config get model
  tick config set model qwen2.5-coder --user  # in ~/.config/tick/config.yaml
  tick config set limits.max_turns 60 --repo  # in .tasks/config.yaml";

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    List(ConfigListArgs),
    Get(ConfigGetArgs),
    Set(ConfigSetArgs),
}

/// Every setting with the value tick uses and where it came from.
#[derive(Debug, Args)]
pub struct ConfigListArgs {}

/// One setting's value (on stdout) and where it came from (on stderr).
#[derive(Debug, Args)]
pub struct ConfigGetArgs {
    /// The setting, as in the file: `model`, `limits.max_turns`.
    pub key: String,
}

/// Write one setting to your file or the repository's, keeping the file's other lines.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("file").required(true).args(["user", "repo"])))]
pub struct ConfigSetArgs {
    /// The setting, as in the file: `model`, `limits.max_turns`.
    pub key: String,

    /// Its new value.
    pub value: String,

    /// Write your own file (`~/.config/tick/config.yaml`, or `$TICK_CONFIG`).
    #[arg(long)]
    pub user: bool,

    /// Write the repository's file (`.tasks/config.yaml`, committed with the repository).
    #[arg(long)]
    pub repo: bool,
}

/// Your MCP servers (list, add) and tick's tasks as MCP tools for other agents (serve).
///
/// See `docs/mcp.md`.
/// While planning, only the tools your config names in a server's `read_only_tools` are
/// offered (a server's `readOnlyHint` is shown as a suggestion, never trusted); during a step,
/// only the tools its approved plan names. Stdio servers run inside tick's sandbox.
#[derive(Debug, Args)]
#[command(after_long_help = MCP_EXAMPLES)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    List(McpListArgs),
    Add(McpAddArgs),
    Serve(McpServeArgs),
}

/// Start each configured server and list its tools, with the modes that may use each.
#[derive(Debug, Args)]
pub struct McpListArgs {}

/// Add a server to your own config file (`~/.config/tick/config.yaml`).
///
/// `tick mcp add docs -- docs-mcp --root .` adds a stdio server; `tick mcp add tracker --url
/// https://tracker.example/mcp` a streamable HTTP one. The entry is checked before anything
/// is written, and the file is replaced in one step.
#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name: letters, digits, `-` and `_`.
    pub name: String,

    /// A streamable HTTP server's URL (instead of a command after `--`).
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,

    /// The variable holding the HTTP server's bearer token.
    #[arg(long, requires = "url")]
    pub bearer_token_env_var: Option<String>,

    /// A tool planning may call (repeat for more): name only tools that cannot change
    /// anything.
    #[arg(long = "read-only", value_name = "TOOL")]
    pub read_only: Vec<String>,

    /// `KEY=VALUE` set for a stdio server (repeat for more).
    #[arg(long = "env", value_name = "KEY=VALUE", conflicts_with = "url")]
    pub env: Vec<String>,

    /// Let the sandboxed stdio server reach the network.
    #[arg(long, conflicts_with = "url")]
    pub network: bool,

    /// The stdio server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Serve this workspace's tasks as MCP tools over stdio, for another agent to execute.
///
/// Tools: `list_tasks`, `show_task`, `next_step`, `claim_step`, `report_done`,
/// `report_blocked`, `status`. A `report_done` is a claim: tick runs the step's `verify`
/// commands in its sandbox, as `tick run` does, and ticks the step only if they pass. No tool
/// drafts or approves a plan. Configure it in your agent as the command `tick mcp serve`, run
/// in the repository; see docs/mcp.md.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// Run the verify commands without the sandbox (recorded, like `tick run --no-sandbox`).
    #[arg(long)]
    pub no_sandbox: bool,

    /// Commit each step `report_done` ticks, with the files it changed (like `tick run
    /// --commit`).
    #[arg(long)]
    pub commit: bool,
}

/// A model on this machine, no API key needed: `setup`, `start`, `stop`, `status`, `speed`.
///
/// llama.cpp's server and Qwen2.5-Coder-1.5B, built and kept in `~/.cache/tick-local`
/// (`TICK_LOCAL_DIR`). Every phase is skipped when already done and resumes after a kill; the build runs at low
/// priority. tick finds the running server by itself: no settings needed.
#[derive(Debug, Args)]
#[command(after_long_help = MODEL_EXAMPLES)]
pub struct LocalModelArgs {
    #[command(subcommand)]
    pub action: ModelAction,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum ModelAction {
    /// Build the server, download and check the model (once: 25-90 min on 2 busy cores), then
    /// start it.
    Setup,
    /// Start the server on 127.0.0.1:8080, setting it up first when needed, and wait until it
    /// answers.
    Start,
    /// Stop the server `tick model start` started.
    Stop,
    /// Say what is built and whether the server runs (exit 3: not running).
    Status,
    /// Measure prompt and generation tokens/s of the running server.
    Speed,
}

/// Take one step back: put back exactly the bytes a step changed, and reopen it.
///
/// Refuses, naming each file and who changed it (you, a later step, another task), when a
/// file the step changed was changed again since; `--only PATH…` undoes the rest. The step
/// goes back to `[ ]` (its evidence kept as history in state.yaml) and the steps that relied
/// on it become `[~]` stale. A step committed with `--commit` is undone by a revert commit
/// (`Reverts-Step:` and `Task:` trailers) that leaves your other staged and unstaged changes
/// alone.
#[derive(Debug, Args)]
#[command(after_long_help = UNDO_EXAMPLES)]
pub struct UndoArgs {
    /// `S3 [TASK]`: the step, and the task (id, prefix or part of its name; default: the
    /// current task).
    #[arg(required = true, num_args = 1..=2, value_name = "STEP [TASK]")]
    pub args: Vec<String>,
    /// Say which files would change (with the diff) and which steps would go stale; change
    /// nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Undo only these of the step's files; the others stay as they are.
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub only: Vec<String>,
    /// Print the outcome as JSON (documented in `docs/json.md`).
    #[arg(long)]
    pub json: bool,
}

/// Put an undone step's changes back, and tick it only when its `verify` passes again.
///
/// Refuses when a file changed since the undo, naming it and who changed it.
#[derive(Debug, Args)]
#[command(after_long_help = REDO_EXAMPLES)]
pub struct RedoArgs {
    /// `S3 [TASK]`: the step, and the task (default: the current task).
    #[arg(required = true, num_args = 1..=2, value_name = "STEP [TASK]")]
    pub args: Vec<String>,
    /// Run the verification without the sandbox (recorded, like `tick run --no-sandbox`).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Print the outcome as JSON (documented in `docs/json.md`).
    #[arg(long)]
    pub json: bool,
}

const UNDO_EXAMPLES: &str = "\
Examples:
  tick undo S3 --dry-run             # the files, the diff, the steps that would go stale
  tick undo S3                       # put S3's files back and reopen it
  tick undo S3 --only src/a.rs       # only that file
  tick redo S3                       # put it back again; ticked when its verify passes";

/// Create `.tasks/` with a commented `config.yaml` and a `.gitignore`.
///
/// Safe to run again: files that exist are left as they are.
#[derive(Debug, Args)]
#[command(after_long_help = INIT_EXAMPLES)]
pub struct InitArgs {}

/// Which model to talk to, for the commands that do.
#[derive(Debug, Default, Clone, Args)]
pub struct ModelArgs {
    /// The model (overrides `model` in the config and `TICK_MODEL`).
    #[arg(long)]
    pub model: Option<String>,

    /// The provider: `openai` (any OpenAI-compatible server), `anthropic`, `ollama`,
    /// `llamacpp`.
    #[arg(long, value_enum)]
    pub provider: Option<crate::config::Provider>,

    /// The server's base URL (overrides `base_url` and `TICK_BASE_URL`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// Have the model explore the repository (read-only) and write a plan for a goal.
///
/// The plan lands as a draft in `.tasks/draft/PLAN.md` for you to read, edit, revise,
/// approve or discard. The model has no tool that can change anything while planning.
#[derive(Debug, Args)]
#[command(after_long_help = PLAN_EXAMPLES)]
pub struct PlanArgs {
    /// What you want done (with `--revise`: the task to re-plan, an id, prefix or part of
    /// its name).
    pub goal: Option<String>,

    /// Take a plan you wrote (PLAN.md format; `-` reads stdin) as the draft instead of asking
    /// a model.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["goal", "revise", "answer"])]
    pub from: Option<PathBuf>,

    /// Ask the planner to revise the draft, or re-plan an approved task (`tick plan
    /// --revise "..." TASK`; without a draft, the current task): what should change.
    #[arg(long, value_name = "FEEDBACK", conflicts_with = "answer")]
    pub revise: Option<String>,

    /// Answer the planner's open questions and let it go on.
    #[arg(long, value_name = "ANSWERS", conflicts_with = "goal")]
    pub answer: Option<String>,

    /// Replace an existing draft.
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub model: ModelArgs,

    /// Print progress events and the result as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Print the draft, or a task's plan.
#[derive(Debug, Args)]
#[command(disable_version_flag = true)]
#[command(after_long_help = SHOW_EXAMPLES)]
pub struct ShowArgs {
    /// A task id, unique prefix or part of its name; without it, the draft (or the current
    /// task when there is no draft).
    pub task: Option<String>,

    /// Print version N of the task's plan: 1 is the first approved plan; each re-plan
    /// (`tick plan --revise "..." TASK`) makes the next.
    #[arg(long, value_name = "N")]
    pub version: Option<usize>,
}

/// Make a draft from Kiro, Spec Kit, OpenSpec, Taskmaster or Backlog.md tasks.
///
/// Each task becomes a step with its source id (`source:`), requirement links (`reqs:`), the
/// paths it names (`files:`) and a proposed check (`proposed:`); tasks the source ticked are
/// ticked, done but not verified. Review and approve the draft as any other. When tick ticks
/// a step, it ticks the source's task too, unless that line changed since the import.
#[derive(Debug, Args)]
#[command(after_long_help = IMPORT_EXAMPLES)]
pub struct ImportArgs {
    /// The task file (or the folder that holds it: `specs/001-feature/`, `.taskmaster/`).
    pub path: PathBuf,

    /// The tool that wrote it; found from the path when not given.
    #[arg(long, value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(["kiro", "speckit", "openspec", "taskmaster", "backlog"]))]
    pub format: Option<String>,

    /// Print the draft; write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Never tick the source file.
    #[arg(long)]
    pub no_write_back: bool,
}

/// Throw the draft away.
///
/// In a terminal it asks first; elsewhere it needs `--yes`.
#[derive(Debug, Default, Args)]
#[command(after_long_help = DISCARD_EXAMPLES)]
pub struct DiscardArgs {
    /// Discard without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Approve the draft: it becomes a task folder with PLAN.md, TODO.md and state.yaml.
///
/// Given a task whose PLAN.md was edited after approval, approves the edited plan.
#[derive(Debug, Default, Args)]
#[command(after_long_help = APPROVE_EXAMPLES)]
pub struct ApproveArgs {
    /// A task whose PLAN.md changed since its approval, to approve again.
    pub task: Option<String>,

    /// Let the run change files outside a step's `files` without pausing.
    #[arg(long)]
    pub allow_deviation: bool,

    /// Stop the run when the task has changed more than N files.
    #[arg(long, value_name = "N")]
    pub max_files: Option<u32>,

    /// Commit the approved task folder (and nothing else) with a `Task:` trailer.
    #[arg(long)]
    pub commit: bool,

    /// Part of the contract: every verified step gets its own commit when the task runs, as
    /// with `tick run --commit`.
    #[arg(long)]
    pub commit_steps: bool,
}

/// Execute the approved plan, one verified step at a time.
///
/// Each step starts from a fresh context built from PLAN.md and TODO.md. The model works with
/// tools that can write and run commands; when it says a step is done, tick runs the step's
/// `verify` commands and only then ticks the box. Exit codes: 0 done, 4 a step is blocked,
/// 5 paused for review (files changed outside a step's `files`), 6 a limit was reached,
/// 130 interrupted.
#[derive(Debug, Default, Args)]
#[command(after_long_help = RUN_EXAMPLES)]
pub struct RunArgs {
    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,

    /// Run only this step (`S3`, or `S2.1`).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,

    /// Run at most N steps.
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,

    /// Print the exact prompt the next step would get, and run nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Commit each verified step (its files and the task's files) with `Task:` and `Step:`
    /// trailers.
    #[arg(long)]
    pub commit: bool,

    /// Run the agent's commands without the sandbox (`docs/sandbox.md`), as `sandbox: off` in
    /// the config does; the run is recorded as unsandboxed. Only for a model and a repository
    /// you trust.
    #[arg(long)]
    pub no_sandbox: bool,

    #[command(flatten)]
    pub model: ModelArgs,

    /// Print progress events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Set a step's status by hand: `tick mark S3 done`.
///
/// A step marked done by hand has no verification behind it, and `tick status` says so.
#[derive(Debug, Args)]
#[command(after_long_help = MARK_EXAMPLES)]
pub struct MarkArgs {
    /// The step id, like `S3` or `S2.1`.
    pub step: String,

    /// The new status.
    pub status: MarkStatus,

    /// Why the step is blocked (required with `blocked`).
    #[arg(long)]
    pub reason: Option<String>,

    /// The task (id, prefix or part of its name); default: the current task.
    #[arg(value_name = "TASK")]
    pub task: Option<String>,

    /// The task, as a flag (the same as the positional `TASK`).
    #[arg(
        long = "task",
        short = 't',
        value_name = "TASK",
        conflicts_with = "task"
    )]
    pub task_flag: Option<String>,
}

/// Answer a blocked step's question: `tick answer S2 "keep both"`.
///
/// The answer is written under the step in TODO.md (`answer:`), the step is pending again,
/// and the next `tick run` works on it with the question and your answer in view.
#[derive(Debug, Args)]
#[command(after_long_help = ANSWER_EXAMPLES)]
pub struct AnswerArgs {
    /// The blocked step, like `S2` or `S2.1`.
    pub step: String,

    /// Your answer.
    pub answer: String,

    /// The task (id, prefix or part of its name); default: the current task.
    #[arg(value_name = "TASK")]
    pub task: Option<String>,
}

/// The history of a task in time order: created, approved, steps done, blocks, answers,
/// phase changes, failed attempts.
#[derive(Debug, Args)]
#[command(after_long_help = LOG_EXAMPLES)]
pub struct LogArgs {
    /// The task (id, prefix or part of its name); default: the current task.
    pub task: Option<String>,

    /// Print JSON (the format is documented in `docs/json.md`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MarkStatus {
    Done,
    Pending,
    InProgress,
    Blocked,
}

/// Show a task: its phase, progress, each step, and what needs attention.
#[derive(Debug, Args)]
#[command(after_long_help = STATUS_EXAMPLES)]
pub struct StatusArgs {
    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,

    /// Rebuild each step's state from the `Task:`/`Step:`/`Reverts-Step:` trailers of the
    /// commits in RANGE (default `HEAD`) and say where they disagree with TODO.md.
    #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "HEAD")]
    pub from_git: Option<String>,

    /// Print JSON (the format is documented in `docs/json.md`).
    #[arg(long)]
    pub json: bool,
}

/// List the draft and every task with its phase and progress.
#[derive(Debug, Args)]
#[command(after_long_help = LIST_EXAMPLES)]
pub struct ListArgs {
    /// Print JSON (the format is documented in `docs/json.md`).
    #[arg(long)]
    pub json: bool,
}

/// Follow a task live, for a second terminal: the checklist, then a line per change.
///
/// Steps whose files change outside tick are marked stale (`[~]`) as it happens. Stop with
/// Ctrl-C.
#[derive(Debug, Args)]
#[command(after_long_help = WATCH_EXAMPLES)]
pub struct WatchArgs {
    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,
}

/// Check every task, for CI and pre-commit hooks; exits non-zero when something needs a look.
///
/// Marks done steps whose files changed outside tick stale (`[~]`) first, like every command.
/// Cancelled tasks are skipped. When several reasons apply, the most severe one sets the exit
/// code:
///
///   13  a PLAN.md, TODO.md or state.yaml cannot be read or parsed
///   12  a PLAN.md changed since it was approved
///   10  a step is stale: files it relied on changed outside tick
///   11  a step is done without verification
///    9  with --strict: a done step's files were changed later by tick, running another task
///   16  steps still to do in two active tasks change the same files
///   14  the last planning or run attempt failed (`tick status` says why)
///    0  all clear
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[command(after_long_help = CHECK_EXAMPLES)]
pub struct CheckArgs {
    /// Compare every task's TODO.md with the trailers of the commits in RANGE (default
    /// `HEAD`): exit code 15 when they disagree (a tick with no commit, a commit with no
    /// tick, a revert not reflected, a commit whose files are not the step's).
    #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "HEAD")]
    pub from_git: Option<String>,
    /// Also report done steps whose files tick changed later while running another task
    /// (`changed by task <id> S2`): not stale, but worth a look.
    #[arg(long)]
    pub strict: bool,
    /// Print one JSON report: `format`, `tasks_checked`, `newly_stale` (`[task, step]` pairs
    /// this check marked), `findings` (each with `task`, `kind` of `stale`, `unverified`,
    /// `plan_changed`, `unparseable` or, with `--strict`, `changed_by_task`, `step` and
    /// `message`) and `exit_code`.
    #[arg(long)]
    pub json: bool,
}

const PLAN_EXAMPLES: &str = "\
Examples:
  tick plan \"Refactor the login module, keep the old API, add tests\"
  tick plan --provider ollama --model qwen3 \"Add a --verbose flag\"
  tick plan --revise \"Split S2 in two; no new dependencies\"
  tick plan --answer \"Use the existing session table\"
  tick plan --from my-plan.md        # no model: your own plan becomes the draft";

const RUN_EXAMPLES: &str = "\
Examples:
  tick run                           # the current task, until done or blocked
  tick run --step S3                 # only S3
  tick run --steps 1 --commit        # one step, committed with its trailers
  tick run --dry-run                 # the prompt the next step would get; runs nothing
  tick run 20261130-143012           # a task by id prefix";

const MARK_EXAMPLES: &str = "\
Examples:
  tick mark S3 done
  tick mark S2.1 in-progress
  tick mark S4 blocked --reason \"the staging credentials are missing\"
  tick mark S1 pending login         # in the task whose name contains `login`";

const ANSWER_EXAMPLES: &str = "\
Examples:
  tick answer S2 \"keep both: --lines adds a column\"
  tick answer S2.1 \"use the staging database\" login   # in the task whose name contains `login`";

const STATUS_EXAMPLES: &str = "\
Examples:
  tick status                        # the current task
  tick status login                  # the task whose name contains `login`
  tick status --json | jq .task.progress";

/// Check the setup: where each setting comes from, that the server answers, that the model
/// makes tool calls, and that the sandbox can run.
///
/// The connection check gives up after 1.5 s and never retries. Exit code 0 when the
/// configuration, the connection and the tool call pass, 2 when the configuration is
/// incomplete, 3 when the server or the model fails. The sandbox line is a report: it does not
/// set the exit code.
#[derive(Debug, Args)]
#[command(after_long_help = DOCTOR_EXAMPLES)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// Print one JSON report (`checks`, each with `name`, `ok`, `detail`, `hint`).
    #[arg(long)]
    pub json: bool,
}

/// Open the review menu for the draft again: approve, revise, edit, discard or keep it.
///
/// One key per choice, and Enter alone chooses nothing: `a` approve (asks whether the run may
/// change files outside a step's `files`, the changed-files limit, and whether to commit),
/// `r` revise, `e` edit in `$EDITOR` (checked when it closes), `d` discard (asks first), `k`
/// keep for later, `p` print the plan again, `?` help. With `TICK_INTERACTIVE=1` and a piped
/// stdin it reads one answer per line.
#[derive(Debug, Args)]
#[command(after_long_help = REVIEW_EXAMPLES)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Run the verification of done and stale steps again, without a model.
///
/// A step whose `verify` commands pass is `[x]` with new evidence and fingerprints; one whose
/// commands fail (or a stale step with nothing to run) is opened again (`[ ]`) for `tick run`
/// to redo. The commands run in the same sandbox as during `tick run`.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[command(after_long_help = VERIFY_EXAMPLES)]
pub struct VerifyArgs {
    /// `[TASK] [S1 S2 …]`: a task (id, prefix or part of its name; default: the current
    /// task) and the steps to verify (default: every done and stale step).
    pub args: Vec<String>,
    /// Verify the steps the commits of RANGE (default `HEAD`) claim, by their `Task:` and
    /// `Step:` trailers, not reverted since: each step's `verify` runs again and nothing is
    /// written; exit code 15 when one fails (or names no step here), 11 when one has no
    /// `verify`.
    #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "HEAD", conflicts_with = "dry_run")]
    pub from_git: Option<String>,
    /// Run the commands without the sandbox (recorded, like `tick run --no-sandbox`).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Print the verification events as JSON lines (the `tick run --json` events).
    #[arg(long)]
    pub json: bool,
    /// Say which steps would be verified with which commands, and run nothing (a step whose
    /// check fails is opened again, so look first).
    #[arg(long, conflicts_with = "json")]
    pub dry_run: bool,
}

/// Say which step runs next, and the command that runs it.
#[derive(Debug, Args)]
#[command(after_long_help = NEXT_EXAMPLES)]
pub struct NextArgs {
    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,
}

/// Open the draft or a task's PLAN.md (or TODO.md) in `$EDITOR`; checked when it closes.
///
/// A file that no longer parses is kept as you left it unless you choose to put the old
/// content back.
#[derive(Debug, Args)]
#[command(after_long_help = EDIT_EXAMPLES)]
pub struct EditArgs {
    /// A task id, unique prefix or part of its name; default: the draft, else the current
    /// task.
    pub task: Option<String>,

    /// Edit TODO.md instead of PLAN.md.
    #[arg(long)]
    pub todo: bool,
}

/// Show the changes a step made.
///
/// From the step's commit when the run used `--commit` (found by its `Step:` and `Task:`
/// trailers), otherwise `git diff` of the files the step changed, from the commit the plan
/// was approved on to the working tree.
#[derive(Debug, Args)]
#[command(after_long_help = DIFF_EXAMPLES)]
pub struct DiffArgs {
    /// The step id, like `S3`.
    pub step: String,

    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,

    /// Show tick's own bookkeeping in the step's commit too (TODO.md, state.yaml).
    #[arg(long)]
    pub all: bool,
}

/// Cancel a task: it stops being run; its files stay for the record.
#[derive(Debug, Args)]
#[command(after_long_help = CANCEL_EXAMPLES)]
pub struct CancelArgs {
    /// A task id, unique prefix or part of its name; default: the current task.
    pub task: Option<String>,
}

/// Trust this repository's `.tasks/config.yaml`, templates and prompts.
///
/// Until you do, a repository's files decide only what tightens (a lower limit,
/// `sandbox.network: false`, the model's name): where requests go and which key is sent
/// (`provider`, `base_url`, `api_key_env`), what runs (`run_command.allow`), anything that
/// loosens the sandbox or a limit, and its templates and prompts are ignored, with one warning
/// naming them. The trust is recorded with a hash of each file in
/// `~/.local/state/tick/trusted.yaml` (`$XDG_STATE_HOME/tick/`); a changed file needs
/// trusting again.
#[derive(Debug, Args)]
#[command(after_long_help = TRUST_EXAMPLES)]
pub struct TrustArgs {
    /// List the trusted repositories, and whether their files are still as trusted.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,

    /// Stop trusting this repository.
    #[arg(long)]
    pub revoke: bool,
}

/// Print a shell completion script.
#[derive(Debug, Args)]
#[command(after_long_help = COMPLETIONS_EXAMPLES)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    #[value(name = "powershell")]
    PowerShell,
    Elvish,
}

/// Print tick's man pages (roff): `tick(1)` and one page per subcommand, `tick-plan(1)`...
#[derive(Debug, Args)]
#[command(after_long_help = MAN_EXAMPLES)]
pub struct ManArgs {
    /// The subcommand whose page to print, like `plan` (default: the top page, `tick(1)`).
    pub command: Option<String>,

    /// Write every page into DIR (`tick.1`, `tick-plan.1`, ...) instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// What `tick` alone does, for both the short and the long help.
macro_rules! session_note {
    () => {
        "Without a command, in a terminal: the interactive session (a timeline, the plan \
         panel, PLAN and BUILD modes; `/help` inside lists its keys and commands)."
    };
}

const SESSION_NOTE: &str = session_note!();

const TOP_EXAMPLES: &str = concat!(
    session_note!(),
    "

Examples:
  tick plan \"Add a --verbose flag\"   # the model drafts a plan; nothing is changed yet
  tick review                        # read it: approve, revise, edit or discard
  tick approve                       # the draft becomes a task
  tick run                           # one verified step at a time
  tick status                        # where it stands and what to do next"
);
// The EXAMPLES of the commands above (their `--help` and man pages).

const INIT_EXAMPLES: &str = "\
Examples:
  tick init                          # `.tasks/` with a commented config.yaml and a .gitignore
  tick -C ../other-repo init         # in another repository";

const IMPORT_EXAMPLES: &str = "\
Examples:
  tick import specs/001-feature/     # a Spec Kit feature's tasks become the draft
  tick import .taskmaster/ --dry-run # print the draft; write nothing
  tick import tasks.md --format kiro --no-write-back";

const SHOW_EXAMPLES: &str = "\
Examples:
  tick show                          # the draft, else the current task's plan
  tick show login                    # the plan of the task whose name contains `login`
  tick show login --version 1        # that task's first approved plan";

const DISCARD_EXAMPLES: &str = "\
Examples:
  tick discard                       # asks first, in a terminal
  tick discard --yes                 # in a script";

const APPROVE_EXAMPLES: &str = "\
Examples:
  tick approve                       # the draft becomes a task
  tick approve --max-files 10 --commit-steps
  tick approve login                 # a task whose PLAN.md was edited after approval";

const LOG_EXAMPLES: &str = "\
Examples:
  tick log                           # the current task's history
  tick log login --json              # as JSON lines";

const LIST_EXAMPLES: &str = "\
Examples:
  tick list
  tick list --json | jq '.tasks[] | {id, phase}'";

const WATCH_EXAMPLES: &str = "\
Examples:
  tick watch                         # the current task, in a second terminal
  tick watch login";

const CHECK_EXAMPLES: &str = "\
Examples:
  tick check                         # in CI or a pre-commit hook
  tick check --strict --json
  tick check --from-git main..HEAD   # the branch's commits against the ticks";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  tick doctor
  tick doctor --provider ollama --model qwen3
  tick doctor --json";

const REVIEW_EXAMPLES: &str = "\
Examples:
  tick review                        # the draft's review menu again
  tick review --provider ollama --model qwen3   # `r` revises with this model";

const VERIFY_EXAMPLES: &str = "\
Examples:
  tick verify                        # every done and stale step of the current task
  tick verify S2 S3                  # just these
  tick verify login S2               # step S2 of the task matching `login`
  tick verify --dry-run              # which commands would run; runs nothing
  tick verify --from-git main..HEAD  # every step the branch's commits claim (for CI)";

const NEXT_EXAMPLES: &str = "\
Examples:
  tick next                          # the current task's next step and its command
  tick next login";

const EDIT_EXAMPLES: &str = "\
Examples:
  tick edit                          # the draft, else the current task's PLAN.md
  tick edit --todo                   # the current task's TODO.md
  tick edit login";

const DIFF_EXAMPLES: &str = "\
Examples:
  tick diff S3                       # what S3 changed
  tick diff S3 login --all           # with tick's own bookkeeping, in the task matching `login`";

const CANCEL_EXAMPLES: &str = "\
Examples:
  tick cancel                        # the current task
  tick cancel login";

const TRUST_EXAMPLES: &str = "\
Examples:
  tick trust                         # trust this repository's files as they are now
  tick trust --list
  tick trust --revoke";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  tick completions bash > ~/.local/share/bash-completion/completions/tick
  tick completions zsh > ~/.zfunc/_tick
  tick completions fish > ~/.config/fish/completions/tick.fish";

const MAN_EXAMPLES: &str = "\
Examples:
  tick man plan | man -l -           # read tick-plan(1)
  tick man --dir ~/.local/share/man  # every page into its man1/; then `man tick-plan`";

const MODEL_EXAMPLES: &str = "\
Examples:
  tick model setup                   # once: build, download, check, start
  tick model start
  tick model status
  tick model speed
  tick model stop";

const REDO_EXAMPLES: &str = "\
Examples:
  tick redo S3                       # put S3's changes back; ticked when its verify passes
  tick redo S3 login --json";

const MCP_EXAMPLES: &str = "\
Examples:
  tick mcp list
  tick mcp add docs -- docs-mcp --root .
  tick mcp add tracker --url https://tracker.example/mcp --bearer-token-env-var TRACKER_TOKEN
  tick mcp serve --commit            # in the agent's config, run in the repository";
