//! Running one hook: `bash -c` in the workspace root under the caller's sandbox policy, its
//! stdin the payload file, stdout and stderr captured apart (the contract reads them apart)
//! and capped, its process group (under the sandbox: its whole pid namespace) killed at the
//! timeout.
//!
//! The sandbox gives every command `/dev/null` as stdin, so the payload travels as a file
//! under the task's `runs/` (readable inside the sandbox, never writable by it) that the
//! shell opens as its stdin before the hook's command.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{Event, OUTPUT_CAP};
use crate::sandbox::Policy;
use crate::tools::bash::CommandEnv;

/// How long a killed hook's group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long the output pipes are waited for once the hook's process is gone (a process that
/// left its group may hold them).
const EOF_GRACE: Duration = Duration::from_millis(500);

/// One hook's run.
#[derive(Debug, Clone, Default)]
pub(super) struct Ran {
    /// `None`: killed, or never started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub timeout_s: f64,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    /// Why it could not be started at all.
    pub spawn_error: Option<String>,
}

/// Runs `command` for `event` with `input` as its stdin.
pub(super) fn run(
    root: &Path,
    env: &CommandEnv,
    policy: Option<&Policy>,
    command: &str,
    input: &Path,
    event: Event,
    timeout: Duration,
) -> Ran {
    // The first line opens the payload as stdin; the hook's command follows unchanged.
    let script = format!("exec 0<\"$TICK_HOOK_INPUT\"\n{command}");
    let mut cmd = if let Some(policy) = policy {
        policy.command("bash", [OsStr::new("-c"), OsStr::new(&script)])
    } else {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(&script);
        cmd
    };
    cmd.current_dir(root);
    env.apply(&mut cmd);
    let root_text = root.display().to_string();
    cmd.env("TICK_HOOK_INPUT", input)
        .env("TICK_HOOK_EVENT", event.as_str())
        .env("TICK_PROJECT_DIR", &root_text)
        // Claude Code's name for it, which existing scripts use.
        .env("CLAUDE_PROJECT_DIR", &root_text)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut ran = Ran {
        timeout_s: timeout.as_secs_f64(),
        ..Ran::default()
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            ran.spawn_error = Some(err.to_string());
            return ran;
        }
    };
    let group = i32::try_from(child.id()).ok().map(Pid::from_raw);
    let stdout = child.stdout.take().map(capture);
    let stderr = child.stderr.take().map(capture);
    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });
    match exit_rx.recv_timeout(timeout) {
        Ok(Ok(status)) => ran.exit_code = status.code(),
        Ok(Err(err)) => ran.spawn_error = Some(err.to_string()),
        Err(_) => {
            ran.timed_out = true;
            if let Some(group) = group {
                stop_group(group);
            }
            let _ = exit_rx.recv_timeout(TERM_GRACE);
        }
    }
    ran.duration = started.elapsed();
    // Whatever the hook left running in its group goes with it.
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGKILL);
    }
    ran.stdout = stdout.as_ref().map(collect).unwrap_or_default();
    ran.stderr = stderr.as_ref().map(collect).unwrap_or_default();
    ran
}

/// Reads a pipe to its end in a thread, keeping the first [`OUTPUT_CAP`] bytes.
fn capture(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = 0usize;
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                    dropped += n - room;
                }
            }
        }
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[{dropped} more bytes not kept]"));
        }
        let _ = tx.send(text);
    });
    rx
}

fn collect(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(EOF_GRACE).unwrap_or_default()
}

/// SIGTERM the group, then SIGKILL what is left after [`TERM_GRACE`].
fn stop_group(group: Pid) {
    if killpg(group, Signal::SIGTERM).is_err() {
        return;
    }
    let _ = killpg(group, Signal::SIGCONT);
    thread::sleep(TERM_GRACE);
    let _ = killpg(group, Signal::SIGKILL);
}

/// Words that are not programs but the shell's own.
const SHELL_WORDS: [&str; 28] = [
    "[", "[[", ":", ".", "!", "{", "(", "if", "for", "while", "until", "case", "true", "false",
    "echo", "printf", "exit", "cd", "test", "export", "eval", "exec", "source", "set", "read",
    "command", "type", "local",
];

/// Why `command` cannot run here, if it cannot: its first word (after `VAR=value`
/// assignments) is neither a shell word, nor on `path`, nor an executable file relative to
/// `root`.
pub(super) fn command_problem(command: &str, root: &Path, path: Option<&str>) -> Option<String> {
    let first = command
        .split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with('='))?;
    let first = first.trim_matches(|c| c == '"' || c == '\'');
    if SHELL_WORDS.contains(&first) || first.starts_with('$') {
        return None;
    }
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if first.contains('/') {
        let full = root.join(first);
        return if executable(&full) {
            None
        } else if full.exists() {
            Some(format!("`{first}` is not executable (`chmod +x {first}`)"))
        } else {
            Some(format!("`{first}` does not exist"))
        };
    }
    let found = path
        .into_iter()
        .flat_map(|p| std::env::split_paths(OsStr::new(p)).collect::<Vec<_>>())
        .any(|dir| executable(&dir.join(first)));
    (!found).then(|| format!("`{first}` is not on the commands' `PATH`"))
}
