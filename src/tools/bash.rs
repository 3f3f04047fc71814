//! `bash`: run a shell command in the workspace root, bounded in time, output and reach.
//!
//! What this file guarantees, and why:
//!
//! - The command runs in its own process group with stdin closed. When it times out, the whole
//!   group gets SIGTERM, then SIGKILL: children and background children die with it. When it
//!   exits on its own, whatever it left running in its group is stopped the same way, so a
//!   `server &` cannot outlive the call, hold the output pipe open, or write files after the
//!   runner has stopped attributing changes to the command.
//! - Output (stdout and stderr through one pipe, so they interleave as a terminal would) is
//!   read in a thread and kept as a head and a tail, so a command that prints gigabytes costs
//!   a bounded amount of memory and context. If a process that left the group still holds
//!   the pipe, the call stops waiting for it once the group is gone.
//! - The environment is an allow-list ([`PASSED_ENV`], `LC_*`, and the names the person adds
//!   under `sandbox.env` in their own config): a credential under a name nobody thought of
//!   never reaches a command. The provider's API keys are removed even from that. The base
//!   environment is injectable ([`CommandEnv`]) so tests never touch the process's own.
//! - Under a sandbox policy ([`CommandEnv::with_sandbox`], which `tick run` always sets unless
//!   the person opted out) the command runs through [`crate::sandbox`]: it writes only where
//!   the policy says, cannot see tick's processes, and a process that deliberately leaves the
//!   group (`setsid`, a double-forking daemon) still dies with the command, because the whole
//!   pid namespace does. The group handling here stays as the first layer, and the only one
//!   without a sandbox.
//! - When the caller's interrupt flag is set (Ctrl-C in `tick run`,
//!   [`CommandEnv::with_interrupt`]), the command is stopped at once, the same way as on a
//!   timeout, instead of being waited for.
//! - Setuid and setgid bits a sandboxed command leaves on files of the workspace are cleared
//!   after it ([`crate::sandbox::clear_setuid`]), and the output says so.
//! - The outcome says that a command ran; what it changed the runner learns from snapshots.
//!
//! A non-zero exit is not a failure of the tool: it is output the model reads, marked as an
//! error so the model notices.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::json;

use super::workspace::Workspace;
use super::{Effects, ToolOutcome, count, count_newlines, parse_args};
use crate::llm::ToolSpec;
use crate::redact::looks_secret;
use crate::sandbox::Sandboxing;

pub const NAME: &str = "bash";

/// Seconds a command may run when the model does not say.
pub const DEFAULT_TIMEOUT_S: u64 = 120;
/// The most seconds a model may ask for.
pub const MAX_TIMEOUT_S: u64 = 1800;
/// Lines and bytes kept from the start and from the end of the output.
pub const HEAD_LINES: usize = 200;
pub const TAIL_LINES: usize = 200;
const HEAD_BYTES: usize = 15 * 1024;
const TAIL_BYTES: usize = 15 * 1024;
/// How long processes get between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the output pipe to close once the group is gone; only a process that
/// left the group can keep it open.
const EOF_GRACE: Duration = Duration::from_secs(2);
/// How often to look whether a signalled group is gone.
const POLL: Duration = Duration::from_millis(10);
/// How often to look at the interrupt flag while a command runs.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// The environment variables holding provider API keys, removed from every command's
/// environment unless told otherwise.
pub const DEFAULT_SECRET_ENV: [&str; 5] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "TICK_API_KEY",
];

/// The variables a command gets from tick's environment, besides `LC_*` and what the person
/// adds (`sandbox.env`): where programs are, who and where the person is, their language,
/// terminal and time zone, the temporary directory. Codex's `shell_environment_policy` core
/// set is the same idea.
pub const PASSED_ENV: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ", "TMPDIR", "LANGUAGE",
];

/// Whether `name` is passed to commands whatever the configuration: [`PASSED_ENV`] or a
/// locale category (`LC_ALL`, `LC_CTYPE`...).
pub fn passed_by_default(name: &str) -> bool {
    PASSED_ENV.contains(&name) || name.starts_with("LC_")
}

/// Where a command's environment comes from, which variables are taken out of it, and the
/// sandbox it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEnv {
    /// `None`: the tick process's own environment. `Some`: exactly these variables.
    base: Option<Vec<(String, String)>>,
    /// The names the person added to the allow-list (`sandbox.env` in their own config).
    passed: Vec<String>,
    secrets: Vec<String>,
    /// `Off` unless the caller says: only the caller knows the workspace, the configuration
    /// and whether the person opted out. `tick run` always says.
    sandbox: Sandboxing,
    interrupt: InterruptFlag,
}

impl Default for CommandEnv {
    fn default() -> Self {
        Self {
            base: None,
            passed: Vec::new(),
            secrets: DEFAULT_SECRET_ENV.iter().map(|&s| s.to_owned()).collect(),
            sandbox: Sandboxing::Off,
            interrupt: InterruptFlag::default(),
        }
    }
}

/// The flag that stops the command under way (Ctrl-C in `tick run`), if any. Two are equal
/// when they are the same flag.
#[derive(Debug, Clone, Default)]
struct InterruptFlag(Option<Arc<AtomicBool>>);

impl InterruptFlag {
    fn is_set(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

impl PartialEq for InterruptFlag {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for InterruptFlag {}

impl CommandEnv {
    /// Commands see exactly `vars` (minus the secrets) instead of tick's own environment.
    #[must_use]
    pub fn with_base(mut self, vars: Vec<(String, String)>) -> Self {
        self.base = Some(vars);
        self
    }

    /// Also pass these variables, by name, to commands (`sandbox.env` in the person's own
    /// config: `CARGO_HOME`, `SSL_CERT_FILE`...). The provider's keys stay out even so.
    #[must_use]
    pub fn with_passed(mut self, names: impl IntoIterator<Item = String>) -> Self {
        for name in names {
            if !self.passed.contains(&name) {
                self.passed.push(name);
            }
        }
        self
    }

    /// Also remove these variables, on top of the ones already removed.
    #[must_use]
    pub fn with_secrets(mut self, names: impl IntoIterator<Item = String>) -> Self {
        for name in names {
            if !self.secrets.contains(&name) {
                self.secrets.push(name);
            }
        }
        self
    }

    /// Run commands under `sandbox` (see [`crate::sandbox`]).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Sandboxing) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Stop a running command at once when `flag` is set (by the Ctrl-C handler), with
    /// everything it started, instead of waiting for it.
    #[must_use]
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = InterruptFlag(Some(flag));
        self
    }

    /// The names of the variables commands never see, besides those that
    /// [`looks_secret`].
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub fn sandbox(&self) -> &Sandboxing {
        &self.sandbox
    }

    /// Gives `command` exactly the environment a command may see: of the base (or tick's own
    /// environment), the allow-list ([`passed_by_default`] and the person's names), never the
    /// named secrets.
    pub fn apply(&self, command: &mut Command) {
        let vars: Vec<(OsString, OsString)> = match &self.base {
            Some(vars) => vars
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            None => std::env::vars_os().collect(),
        };
        command.env_clear();
        command.envs(vars.into_iter().filter(|(name, _)| {
            let name = name.to_string_lossy();
            let allowed = passed_by_default(&name) || self.passed.iter().any(|p| *p == name);
            allowed && !self.secrets.iter().any(|s| *s == name)
        }));
    }

    /// The value `name` has in the commands' base environment (secrets never have one).
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        if self.secrets.iter().any(|s| s == name) || looks_secret(name) {
            return None;
        }
        match &self.base {
            None => std::env::var(name).ok(),
            Some(vars) => vars
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone()),
        }
    }

    /// The `PATH` the command will see, to find the shell in.
    fn path(&self) -> Option<OsString> {
        match &self.base {
            None => std::env::var_os("PATH"),
            Some(vars) => vars
                .iter()
                .rev()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| OsString::from(v)),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    timeout_s: Option<f64>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "Run a shell command with `bash -c` in the workspace root and return its combined \
             stdout and stderr, exit code and duration. stdin is closed, so interactive \
             commands fail instead of waiting; pass flags like `--yes` or `-y`. The command \
             is killed, with everything it started, after `timeout_s` seconds (default \
             {DEFAULT_TIMEOUT_S}, at most {MAX_TIMEOUT_S}). Anything it leaves running in the \
             background is stopped when it exits, so it cannot start a server for later \
             calls. Output beyond the first {HEAD_LINES} and last {TAIL_LINES} lines (or about \
             {} KiB) is cut; filter long output (`| tail`, `grep`) yourself. To change files, \
             prefer edit_file and write_file. API keys are not in the environment. Under tick's \
             sandbox, `.git/` and `.tasks/` are read-only (tick commits and ticks steps \
             itself), `/tmp` is private, and nothing outside the workspace can be written.",
            (HEAD_BYTES + TAIL_BYTES) / 1024
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line, e.g. `cargo test --lib 2>&1 | tail -n 50`."
                },
                "timeout_s": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT_S,
                    "description": format!("Seconds before the command is killed. Default {DEFAULT_TIMEOUT_S}, at most {MAX_TIMEOUT_S}.")
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

pub fn run(workspace: &Workspace, env: &CommandEnv, arguments: &serde_json::Value) -> ToolOutcome {
    let args: Args = match parse_args(NAME, arguments) {
        Ok(args) => args,
        Err(message) => return ToolOutcome::error(message),
    };
    if args.command.trim().is_empty() {
        return ToolOutcome::error("`command` is empty; give the command line to run");
    }
    let mut notes = Vec::new();
    let timeout_s = match args.timeout_s {
        None => Duration::from_secs(DEFAULT_TIMEOUT_S),
        Some(s) => match timeout(s, MAX_TIMEOUT_S) {
            Ok((timeout, note)) => {
                notes.extend(note);
                timeout
            }
            Err(message) => return ToolOutcome::error(message),
        },
    };
    match execute(workspace.root(), env, &args.command, timeout_s) {
        Ok(finished) => finished.into_outcome(timeout_s, MAX_TIMEOUT_S, notes),
        Err(e) => ToolOutcome::error(format!("the command could not be started: {e}")),
    }
}

/// A command's result as the runner records it for verification evidence.
#[derive(Debug, Clone)]
pub struct CommandRun {
    /// `None` when it was killed (timeout or signal).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Combined stdout and stderr, capped head and tail like the tool's output.
    pub output: String,
    pub duration: Duration,
}

impl CommandRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `command` with `bash -c` in `root` the way the `bash` tool does (own process group,
/// stdin closed, secrets removed, the group killed on timeout), for the runner's verification.
pub fn run_command(
    root: &Path,
    env: &CommandEnv,
    command: &str,
    timeout: Duration,
) -> io::Result<CommandRun> {
    let finished = execute(root, env, command, timeout)?;
    let (exit_code, timed_out) = match finished.end {
        End::Exited(status) => (status.code(), false),
        End::TimedOut => (None, true),
        End::Interrupted => (None, false),
    };
    let mut output = finished.output;
    for note in finished.notes {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&note);
        output.push('\n');
    }
    Ok(CommandRun {
        exit_code,
        timed_out,
        output,
        duration: finished.ran_for,
    })
}

/// The timeout for `timeout_s` seconds, with a note when it had to be lowered to `max_s`.
pub(crate) fn timeout(seconds: f64, max_s: u64) -> Result<(Duration, Option<String>), String> {
    let max = Duration::from_secs(max_s);
    match Duration::try_from_secs_f64(seconds) {
        Ok(requested) if requested.is_zero() => {}
        Ok(requested) if requested <= max => return Ok((requested, None)),
        // Too large to represent counts as too large, like any other large value.
        Ok(_) | Err(_) if seconds > 0.0 => {
            let note = format!("note: timeout_s {seconds} is above the maximum; {max_s} was used");
            return Ok((max, Some(note)));
        }
        _ => {}
    }
    Err(format!(
        "timeout_s must be a number of seconds above 0, at most {max_s}"
    ))
}

/// How the command's main process ended.
#[derive(Debug)]
enum End {
    Exited(ExitStatus),
    TimedOut,
    /// Stopped because the interrupt flag was set.
    Interrupted,
}

/// Everything known once the command and its group are gone.
#[derive(Debug)]
pub(crate) struct Finished {
    end: End,
    output: String,
    /// `output` leaves part of what the command wrote out (head and tail are kept).
    output_cut: bool,
    /// From the start to the main process's end.
    ran_for: Duration,
    /// Processes were still in the group after the main process exited, and were stopped.
    stopped_leftovers: bool,
    /// The pipe was still open when the call stopped waiting for it.
    output_held_open: bool,
    /// What tick did after the command that the reader should know (`note: …`).
    notes: Vec<String>,
}

impl Finished {
    /// The exit code, when the main process exited rather than being killed.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        match &self.end {
            End::Exited(status) => status.code(),
            End::TimedOut | End::Interrupted => None,
        }
    }

    /// The command's output, when none of it was cut.
    pub(crate) fn whole_output(&self) -> Option<&str> {
        (!self.output_cut).then_some(self.output.as_str())
    }

    /// The result for the model; `max_timeout_s` is what it is told it may raise a timeout to.
    pub(crate) fn into_outcome(
        self,
        timeout: Duration,
        max_timeout_s: u64,
        mut notes: Vec<String>,
    ) -> ToolOutcome {
        let exit_code = self.exit_code();
        let mut text = if self.output.is_empty() {
            "(no output)\n".to_owned()
        } else {
            self.output
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let is_error = match self.end {
            End::TimedOut => {
                let _ = write!(
                    text,
                    "killed after {} s (timeout), with every process it started; raise timeout_s \
                     (at most {max_timeout_s}) if the command needs longer, or do less in one call",
                    timeout.as_secs_f64()
                );
                true
            }
            End::Interrupted => {
                text.push_str(
                    "stopped, with every process it started: tick was interrupted (Ctrl-C)",
                );
                true
            }
            End::Exited(status) => {
                let duration = seconds(self.ran_for);
                if let Some(code) = status.code() {
                    let _ = write!(text, "exit code {code}, {duration}");
                    code != 0
                } else {
                    let signal = status.signal().unwrap_or_default();
                    let name = Signal::try_from(signal).map_or("unknown", Signal::as_str);
                    let _ = write!(text, "killed by signal {signal} ({name}) after {duration}");
                    true
                }
            }
        };
        if self.stopped_leftovers {
            notes.push(
                "note: processes the command left running in the background were stopped; a \
                 command cannot leave a server or watcher running for later calls"
                    .to_owned(),
            );
        }
        notes.extend(self.notes);
        if self.output_held_open {
            notes.push(
                "note: a process that left the command's process group still holds its output \
                 open; output it wrote after this point is not shown"
                    .to_owned(),
            );
        }
        for note in notes {
            text.push('\n');
            text.push_str(&note);
        }
        ToolOutcome::Output {
            text,
            is_error,
            effects: Effects {
                files_written: Vec::new(),
                ran_command: true,
                exit_code,
            },
        }
    }
}

/// `0.12 s`, `14 s`: precise where it is short, readable where it is long.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else {
        format!("{secs:.0} s")
    }
}

fn execute(
    root: &Path,
    env: &CommandEnv,
    command: &str,
    timeout: Duration,
) -> io::Result<Finished> {
    let shell = find_shell(env.path().as_deref());
    let mut cmd = if let Some(policy) = env.sandbox().policy() {
        policy.command(&shell, [OsStr::new("-c"), OsStr::new(command)])
    } else {
        let mut cmd = Command::new(&shell);
        cmd.arg("-c").arg(command);
        cmd
    };
    cmd.current_dir(root);
    env.apply(&mut cmd);
    let policy = env.sandbox().policy();
    let mut finished = watch(cmd, policy.is_some(), timeout, &env.interrupt)?;
    if let Some(policy) = policy.filter(|p| p.kind() == crate::sandbox::Kind::Build) {
        // The namespace is gone: nothing of the command can set the bits again meanwhile.
        finished
            .notes
            .push(match crate::sandbox::clear_setuid(policy.workspace()) {
                Ok(cleared) if cleared.is_empty() => return Ok(finished),
                Ok(cleared) => {
                    let list: Vec<String> = cleared.iter().map(|p| format!("`{p}`")).collect();
                    format!(
                        "note: the setuid and setgid bits the command set were cleared: {}",
                        list.join(", ")
                    )
                }
                Err(err) => format!(
                    "warning: the workspace could not be checked for setuid files the command \
                     made: {err}"
                ),
            });
    }
    Ok(finished)
}

/// Runs `cmd` (its program, arguments, directory and environment already set) the way this
/// file describes: its own process group, stdin closed, output captured head and tail, the
/// group stopped on timeout, on `env`'s interrupt flag (a person's Ctrl-C) and after the main
/// process exits. `sandboxed`: `cmd` is a [`crate::sandbox::Policy::command`], whose helper
/// reports on its stdin. `run_command` uses it too.
pub(crate) fn supervise_in(
    cmd: Command,
    sandboxed: bool,
    timeout: Duration,
    env: &CommandEnv,
) -> io::Result<Finished> {
    watch(cmd, sandboxed, timeout, &env.interrupt)
}

/// Runs `cmd`, stopping it at `timeout` or as soon as `interrupt` is set.
fn watch(
    mut cmd: Command,
    sandboxed: bool,
    timeout: Duration,
    interrupt: &InterruptFlag,
) -> io::Result<Finished> {
    let started = Instant::now();
    let (mut reader, writer) = io::pipe()?;
    // Under the sandbox, the helper says on this pipe (its stdin) whether it killed processes
    // the command left running; the command's own stdin is /dev/null either way.
    let mut report = None;
    let mut child = {
        // The `Command` holds the parent's copies of the pipe's write end; it is dropped at
        // the end of this block, so the pipe closes when the command's processes are gone.
        if sandboxed {
            let (report_reader, report_writer) = io::pipe()?;
            report = Some(report_reader);
            cmd.stdin(report_writer);
        } else {
            cmd.stdin(Stdio::null());
        }
        cmd.stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0);
        let child = cmd.spawn();
        drop(cmd);
        child?
    };
    // The group id is the child's pid (`process_group(0)`). The kernel does not reuse that
    // number while any process is still in the group, so signalling it after the child has
    // been reaped reaches only what the command started.
    let Ok(pid) = i32::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other("the process id does not fit a pid_t"));
    };
    let group = Pid::from_raw(pid);

    let captured = Arc::new(Mutex::new(Capture::default()));
    let (eof_tx, eof_rx) = mpsc::channel::<()>();
    {
        let captured = Arc::clone(&captured);
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => captured
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = eof_tx.send(());
        });
    }
    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });

    let waited = loop {
        if interrupt.is_set() {
            break Err(End::Interrupted);
        }
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            break Err(End::TimedOut);
        }
        match exit_rx.recv_timeout(left.min(INTERRUPT_POLL)) {
            Ok(status) => break Ok(status),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                stop_group(group);
                return Err(io::Error::other("lost track of the command's process"));
            }
        }
    };
    let (end, ran_for, stopped_leftovers) = match waited {
        Ok(status) => {
            let ran_for = started.elapsed();
            let leftovers = group_exists(group);
            if leftovers {
                stop_group(group);
            }
            // The helper has exited: its end of the report pipe is closed, so this returns.
            let mut text = String::new();
            if let Some(report) = report.as_mut() {
                let _ = report.read_to_string(&mut text);
            }
            let killed_in_sandbox = text.lines().any(|line| line == crate::sandbox::LEFTOVERS);
            (
                End::Exited(status?),
                ran_for,
                leftovers || killed_in_sandbox,
            )
        }
        Err(end) => {
            // Under the sandbox the group is the helper alone, which SIGTERM ends at once;
            // its death ends the namespace (see `Policy::command`).
            stop_group(group);
            // Reap the main process, which SIGKILL has ended by now.
            let _ = exit_rx.recv_timeout(TERM_GRACE);
            (end, started.elapsed().min(timeout), false)
        }
    };
    // If the pipe is still open, the reader thread is left blocked on it; it ends when the
    // process holding the pipe exits; what it reads from now on is never shown.
    let output_held_open = eof_rx.recv_timeout(EOF_GRACE).is_err();
    let output = std::mem::take(&mut *captured.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Finished {
        end,
        output_cut: output.cut(),
        output: output.render(),
        ran_for,
        stopped_leftovers,
        output_held_open,
        notes: Vec::new(),
    })
}

/// Whether any process is left in `group`. A zombie not yet reaped by its new parent still
/// counts; it costs at most one grace period.
fn group_exists(group: Pid) -> bool {
    // EPERM means a process exists that we may not signal; it is still there.
    !matches!(killpg(group, None), Err(Errno::ESRCH))
}

/// SIGTERM the group, give it [`TERM_GRACE`] to exit, then SIGKILL what is left. SIGCONT
/// follows SIGTERM because a stopped process (one that read the terminal from the
/// background, say) would otherwise never act on it.
fn stop_group(group: Pid) {
    if killpg(group, Signal::SIGTERM).is_err() {
        return;
    }
    let _ = killpg(group, Signal::SIGCONT);
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline {
        if !group_exists(group) {
            return;
        }
        thread::sleep(POLL);
    }
    let _ = killpg(group, Signal::SIGKILL);
}

/// `bash` from the command's `PATH` (or the usual places), else `/bin/sh`.
fn find_shell(path: Option<&OsStr>) -> PathBuf {
    let executable = |candidate: &Path| {
        candidate
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let from_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("bash"));
    let usual = ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .map(PathBuf::from);
    from_path
        .chain(usual)
        .find(|candidate| candidate.is_absolute() && executable(candidate))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// The output kept of one command: the first [`HEAD_LINES`] lines (at most [`HEAD_BYTES`])
/// and the last [`TAIL_LINES`] (at most [`TAIL_BYTES`]), with counts of what lies between.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    head_newlines: usize,
    head_full: bool,
    /// Everything after the head, trimmed from the front as it grows.
    tail: Vec<u8>,
    total_bytes: u64,
    total_newlines: u64,
}

impl Capture {
    fn push(&mut self, mut data: &[u8]) {
        self.total_bytes += data.len() as u64;
        self.total_newlines += count_newlines(data) as u64;
        if !self.head_full {
            let room = data.len().min(HEAD_BYTES - self.head.len());
            let mut take = room;
            for (i, &b) in data[..room].iter().enumerate() {
                if b == b'\n' {
                    self.head_newlines += 1;
                    if self.head_newlines == HEAD_LINES {
                        take = i + 1;
                        break;
                    }
                }
            }
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.head_full = self.head_newlines == HEAD_LINES || self.head.len() == HEAD_BYTES;
        }
        self.tail.extend_from_slice(data);
        // Trim in batches so a stream of small writes does not shift the buffer every time.
        if self.tail.len() > 2 * TAIL_BYTES {
            let cut = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..cut);
        }
    }

    /// Where the kept part of the tail starts: its last [`TAIL_LINES`] lines, at most
    /// [`TAIL_BYTES`].
    fn tail_start(&self) -> usize {
        let mut start = self.tail.len().saturating_sub(TAIL_BYTES);
        // The last TAIL_LINES lines; a final newline does not begin another line.
        let body = &self.tail[start..];
        let scan_end = body.len() - usize::from(body.ends_with(b"\n"));
        let mut lines = 0;
        for i in (0..scan_end).rev() {
            if body[i] == b'\n' {
                lines += 1;
                if lines == TAIL_LINES {
                    start += i + 1;
                    break;
                }
            }
        }
        start
    }

    /// Whether [`Capture::render`] leaves part of the output out.
    fn cut(&self) -> bool {
        self.total_bytes > (self.head.len() + self.tail.len() - self.tail_start()) as u64
    }

    fn render(&self) -> String {
        let mut start = self.tail_start();
        let kept = self.head.len() + self.tail.len() - start;
        let omitted_bytes = self.total_bytes - kept as u64;
        // A tail cut inside a line starts at the next whole line, when there is one.
        if omitted_bytes > 0
            && start > 0
            && self.tail[start - 1] != b'\n'
            && let Some(nl) = self.tail[start..].iter().position(|&b| b == b'\n')
            && start + nl + 1 < self.tail.len()
        {
            start += nl + 1;
        }
        let tail = &self.tail[start..];
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        let kept = self.head.len() + tail.len();
        let omitted_bytes = self.total_bytes - kept as u64;
        if omitted_bytes > 0 {
            let omitted_lines = self.total_newlines
                - count_newlines(&self.head) as u64
                - count_newlines(tail) as u64;
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            let lines = usize::try_from(omitted_lines).unwrap_or(usize::MAX);
            let _ = if lines == 0 {
                writeln!(out, "[… {omitted_bytes} bytes of output cut …]")
            } else {
                writeln!(
                    out,
                    "[… {} ({omitted_bytes} bytes) of output cut …]",
                    count(lines, "line", "lines")
                )
            };
        }
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::output_of;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    /// A small fixed environment: what the test process's own `PATH` finds, plus `extra`.
    fn env(extra: &[(&str, &str)]) -> CommandEnv {
        let mut vars = vec![(
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
        )];
        vars.extend(extra.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())));
        CommandEnv::default().with_base(vars)
    }

    fn call(ws: &Workspace, env: &CommandEnv, args: &serde_json::Value) -> (String, bool, Effects) {
        output_of(run(ws, env, args))
    }

    /// Whether `pid` is a live process; a zombie waiting to be reaped is dead for this purpose.
    fn alive(pid: i32) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X'))
            }
            Err(_) => nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok(),
        }
    }

    fn read_pid(dir: &Path, name: &str) -> i32 {
        fs::read_to_string(dir.join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Wait a little for the dead to be reaped by their new parent before asserting.
    fn gone_soon(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if !alive(pid) {
                return true;
            }
            thread::sleep(POLL);
        }
        false
    }

    #[test]
    fn output_exit_code_and_that_a_command_ran() {
        let (dir, ws) = setup();
        let (text, is_error, effects) = call(
            &ws,
            &env(&[]),
            &json!({"command": "echo out; echo err >&2; pwd; exit 3"}),
        );
        assert!(is_error);
        let root = dir.path().canonicalize().unwrap();
        let expected = format!("out\nerr\n{}\nexit code 3, ", root.display());
        assert!(text.starts_with(&expected), "{text}");
        assert!(text.ends_with(" s"), "{text}");
        assert!(effects.files_written.is_empty());
        assert!(effects.ran_command);

        let (text, is_error, _) = call(&ws, &env(&[]), &json!({"command": "true"}));
        assert!(!is_error);
        assert!(text.starts_with("(no output)\nexit code 0, "), "{text}");
    }

    #[test]
    fn stdin_is_closed() {
        let (_dir, ws) = setup();
        let started = Instant::now();
        let (text, is_error, _) = call(
            &ws,
            &env(&[]),
            &json!({"command": "cat; read line || echo eof", "timeout_s": 20}),
        );
        assert!(!is_error, "{text}");
        assert!(text.starts_with("eof\nexit code 0"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let (dir, ws) = setup();
        let started = Instant::now();
        let (text, is_error, effects) = call(
            &ws,
            &env(&[]),
            &json!({
                "command": "sleep 30 & echo $! > bg.pid; sh -c 'echo $$ > fg.pid; exec sleep 30'",
                "timeout_s": 1
            }),
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(is_error);
        assert!(
            text.starts_with(
                "(no output)\nkilled after 1 s (timeout), with every process it started;"
            ),
            "{text}"
        );
        assert!(effects.ran_command);
        for name in ["bg.pid", "fg.pid"] {
            let pid = read_pid(dir.path(), name);
            assert!(gone_soon(pid), "{name} {pid} still runs");
        }
    }

    #[test]
    fn processes_ignoring_sigterm_are_killed() {
        let (dir, ws) = setup();
        let started = Instant::now();
        let (text, is_error, _) = call(
            &ws,
            &env(&[]),
            &json!({
                "command": "trap '' TERM; sleep 30 & echo $! > bg.pid; echo started; wait",
                "timeout_s": 0.5
            }),
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(is_error);
        assert!(
            text.starts_with("started\nkilled after 0.5 s (timeout)"),
            "{text}"
        );
        let pid = read_pid(dir.path(), "bg.pid");
        assert!(gone_soon(pid), "{pid} still runs");
    }

    #[test]
    fn background_children_are_stopped_after_a_normal_exit() {
        let (dir, ws) = setup();
        let started = Instant::now();
        // The background `sleep` holds the output pipe open: without the group kill the call
        // would wait for it.
        let (text, is_error, _) = call(
            &ws,
            &env(&[]),
            &json!({"command": "sleep 100 & echo $! > bg.pid; echo done"}),
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{text}");
        assert!(!is_error, "{text}");
        assert!(text.starts_with("done\nexit code 0, "), "{text}");
        assert!(
            text.ends_with(
                "\nnote: processes the command left running in the background were stopped; a \
                 command cannot leave a server or watcher running for later calls"
            ),
            "{text}"
        );
        let pid = read_pid(dir.path(), "bg.pid");
        assert!(gone_soon(pid), "{pid} still runs");
    }

    #[test]
    fn a_process_that_left_the_group_does_not_hold_the_call() {
        if find_shell(None) == Path::new("/bin/sh") || !Path::new("/usr/bin/setsid").exists() {
            return;
        }
        let (dir, ws) = setup();
        let started = Instant::now();
        // The escapee keeps the output pipe open; the call must stop waiting for it.
        let (text, is_error, _) = call(
            &ws,
            &env(&[]),
            &json!({"command": "/usr/bin/setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & \
                               while [ ! -s esc.pid ]; do sleep 0.05; done; echo hi"}),
        );
        let pid = read_pid(dir.path(), "esc.pid");
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        assert!(started.elapsed() < Duration::from_secs(10), "{text}");
        assert!(!is_error, "{text}");
        assert!(text.starts_with("hi\nexit code 0, "), "{text}");
        assert!(
            text.ends_with(
                "\nnote: a process that left the command's process group still holds its output \
                 open; output it wrote after this point is not shown"
            ),
            "{text}"
        );
    }

    #[test]
    fn api_keys_are_not_passed_on() {
        let (_dir, ws) = setup();
        let env = env(&[
            ("OPENAI_API_KEY", "sk-secret-1"),
            ("ANTHROPIC_API_KEY", "sk-secret-2"),
            ("MY_TOKEN", "secret-3"),
            ("VISIBLE", "yes"),
        ])
        .with_passed(["VISIBLE".to_owned(), "OPENAI_API_KEY".to_owned()])
        .with_secrets(["MY_TOKEN".to_owned()]);
        let (text, is_error, _) = call(&ws, &env, &json!({"command": "env"}));
        assert!(!is_error, "{text}");
        assert!(text.contains("VISIBLE=yes\n"), "{text}");
        for hidden in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_TOKEN", "secret"] {
            assert!(!text.contains(hidden), "{hidden} leaked: {text}");
        }
    }

    #[test]
    fn anything_named_like_a_credential_is_not_passed_on() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "DB_PASSWORD",
            "my_apikey",
            "STRIPE_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "KEYBOARD", "TOKENIZERS_PARALLELISM", "LANG"] {
            assert!(!looks_secret(name), "{name}");
        }
        let (_dir, ws) = setup();
        let (text, _, _) = call(
            &ws,
            &env(&[("GITHUB_TOKEN", "ghp_x"), ("KEEP", "1")]).with_passed(["KEEP".to_owned()]),
            &json!({"command": "env"}),
        );
        assert!(text.contains("KEEP=1") && !text.contains("ghp_x"), "{text}");
    }

    /// Issue 25, finding 9: credentials under common names that no pattern catches reached
    /// commands; the environment is an allow-list now, so an unusual name the person set is
    /// not passed either, unless they add it.
    #[test]
    fn only_the_allow_list_reaches_a_command() {
        let credentials = [
            "GITHUB_PAT",
            "GH_PAT",
            "GITLAB_PAT",
            "BW_SESSION",
            "OP_SESSION_my",
            "MYSQL_PWD",
            "NPM_CONFIG__AUTH",
            "DOCKER_AUTH_CONFIG",
            "PYPI_PASS",
            "CI_JOB_JWT",
            "AWS_ACCESS_KEY_ID",
            "SLACK_WEBHOOK_URL",
            "ZQX_UNUSUAL_NAME",
        ];
        let mut vars: Vec<(&str, &str)> =
            credentials.iter().map(|&n| (n, "leaked-value")).collect();
        vars.extend([
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/p"),
            ("LANG", "C.UTF-8"),
            ("LC_TIME", "C"),
            ("TERM", "xterm"),
            ("TZ", "UTC"),
            ("USER", "p"),
            ("TMPDIR", "/tmp"),
            ("CARGO_HOME", "/c"),
        ]);
        let (_dir, ws) = setup();
        let (text, _, _) = call(&ws, &env(&vars), &json!({"command": "env"}));
        assert!(!text.contains("leaked-value"), "{text}");
        for kept in [
            "PATH=/usr/bin:/bin\n",
            "HOME=/home/p\n",
            "LANG=C.UTF-8\n",
            "LC_TIME=C\n",
            "TERM=xterm\n",
            "TZ=UTC\n",
            "USER=p\n",
            "TMPDIR=/tmp\n",
        ] {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        assert!(!text.contains("CARGO_HOME"), "{text}");
        let added = env(&vars).with_passed(["CARGO_HOME".to_owned()]);
        let (text, _, _) = call(&ws, &added, &json!({"command": "env"}));
        assert!(text.contains("CARGO_HOME=/c\n"), "{text}");
        assert!(!text.contains("leaked-value"), "{text}");
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let (_dir, ws) = setup();
        let (text, is_error, _) = call(&ws, &env(&[]), &json!({"command": "seq 1 100000"}));
        assert!(!is_error);
        let total_bytes: usize = (1..=100_000).map(|i: u32| i.to_string().len() + 1).sum();
        let kept_bytes: usize = (1..=200)
            .chain(99_801..=100_000)
            .map(|i: u32| i.to_string().len() + 1)
            .sum();
        let mut expected = String::new();
        for i in 1..=200 {
            let _ = writeln!(expected, "{i}");
        }
        let _ = writeln!(
            expected,
            "[… 99600 lines ({} bytes) of output cut …]",
            total_bytes - kept_bytes
        );
        for i in 99_801..=100_000 {
            let _ = writeln!(expected, "{i}");
        }
        expected.push_str("exit code 0, ");
        assert!(
            text.starts_with(&expected),
            "{}",
            &text[..2000.min(text.len())]
        );
    }

    #[test]
    fn capture_is_the_same_however_the_output_is_split() {
        let mut data = Vec::new();
        for i in 0..3000 {
            data.extend_from_slice(format!("line {i} {}\n", "é".repeat(i % 37)).as_bytes());
        }
        data.extend_from_slice(&vec![b'x'; 40_000]);
        let whole = {
            let mut capture = Capture::default();
            capture.push(&data);
            capture.render()
        };
        for chunk in [1, 2, 7, 100, 4096, 65_536] {
            let mut capture = Capture::default();
            for piece in data.chunks(chunk) {
                capture.push(piece);
            }
            assert_eq!(capture.render(), whole, "chunk {chunk}");
        }
        assert!(whole.starts_with("line 0 \nline 1 é\n"));
        assert!(whole.len() <= HEAD_BYTES + TAIL_BYTES + 100);
    }

    #[test]
    fn capture_limits() {
        // Short output is kept whole.
        let mut capture = Capture::default();
        capture.push(b"a\nb");
        assert_eq!(capture.render(), "a\nb");
        assert!(!capture.cut());
        // One huge line: cut by bytes, no line count in the note.
        let mut capture = Capture::default();
        capture.push(&vec![b'y'; 100_000]);
        let rendered = capture.render();
        assert!(capture.cut());
        assert_eq!(
            rendered,
            format!(
                "{}\n[… {} bytes of output cut …]\n{}",
                "y".repeat(HEAD_BYTES),
                100_000 - HEAD_BYTES - TAIL_BYTES,
                "y".repeat(TAIL_BYTES)
            )
        );
        // Exactly head + tail lines: nothing is cut, nothing is noted.
        let mut capture = Capture::default();
        let mut text = String::new();
        for i in 0..HEAD_LINES + TAIL_LINES {
            let _ = writeln!(text, "{i}");
        }
        capture.push(text.as_bytes());
        assert_eq!(capture.render(), text);
        assert!(!capture.cut());
        // One more line is cut.
        capture.push(b"one more\n");
        assert!(capture.cut());
    }

    #[test]
    fn argument_errors() {
        let (_dir, ws) = setup();
        let env = env(&[]);
        let cases = [
            (
                json!({"command": "  "}),
                "`command` is empty; give the command line to run",
            ),
            (
                json!({"command": "true", "timeout_s": 0}),
                "timeout_s must be a number of seconds above 0, at most 1800",
            ),
            (
                json!({"command": "true", "timeout_s": -1}),
                "timeout_s must be a number of seconds above 0, at most 1800",
            ),
            (
                json!({}),
                "invalid arguments for bash: missing field `command`",
            ),
            (
                json!({"command": "ls", "cwd": "src"}),
                "invalid arguments for bash: unknown field `cwd`, expected `command` or `timeout_s`",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(
                run(&ws, &env, &args),
                ToolOutcome::error(expected),
                "{args}"
            );
        }
        let (text, is_error, _) = call(
            &ws,
            &env,
            &json!({"command": "echo hi", "timeout_s": 99999}),
        );
        assert!(!is_error);
        assert!(
            text.ends_with("\nnote: timeout_s 99999 is above the maximum; 1800 was used"),
            "{text}"
        );
    }

    #[test]
    fn shell_lookup() {
        assert!(find_shell(Some(OsStr::new("/nonexistent"))).is_absolute());
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bash");
        fs::write(&fake, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_shell(Some(dir.path().as_os_str())), fake);
        // Relative PATH entries are not trusted: they would depend on the working directory.
        assert_ne!(find_shell(Some(OsStr::new("."))), PathBuf::from("./bash"));
    }

    #[test]
    fn killed_by_a_signal() {
        let (_dir, ws) = setup();
        let (text, is_error, _) = call(&ws, &env(&[]), &json!({"command": "kill -9 $$"}));
        assert!(is_error);
        assert!(
            text.starts_with("(no output)\nkilled by signal 9 (SIGKILL) after "),
            "{text}"
        );
    }
}
