//! Hooks (DESIGN §14): the contract people already write for Claude Code and Codex, with
//! tick's step events. A hook is a shell command; it gets one JSON object on stdin (the
//! [`Payload`]); exit 0 means its stdout is read as optional JSON (`decision`, `reason`,
//! `additionalContext`, `systemMessage`), exit 2 blocks with its stderr as the reason, any
//! other exit is reported and does not block, and 126/127 (the command is missing or not
//! executable) is an error shown to the person at once, never a guard silently gone.
//!
//! This module owns the configuration entries ([`HookEntry`]), which of them may run here
//! ([`Configured::project_trusted`]), the payload, running them one at a time in declared order
//! inside tick's sandbox ([`fire`]), and what an approval records of them ([`approval`]).
//! The runner calls [`fire`] at each event; it never prints: each hook's run is a
//! [`HookReport`] for the caller to show. `docs/hooks.md` is the person's side of this.

pub mod approval;
mod exec;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::plan::StepId;
use crate::sandbox::Policy;
use crate::tools::bash::CommandEnv;

use crate::hook_entry::compile_matcher;
pub use crate::hook_entry::{
    Configured, DEFAULT_TIMEOUT_S, Event, HookEntry, MAX_TIMEOUT_S, OUTPUT_CAP, Origin,
    PAYLOAD_FORMAT,
};

/// One hook that may run here.
#[derive(Debug, Clone)]
pub struct Hook {
    pub entry: HookEntry,
    pub origin: Origin,
    matcher: Option<Regex>,
}

impl Hook {
    fn new(entry: HookEntry, origin: Origin) -> Hook {
        // Entries were validated as their file was read; a matcher that does not compile
        // here matches nothing rather than everything.
        let matcher =
            compile_matcher(entry.matcher.as_deref()).unwrap_or_else(|_| Regex::new("^$").ok());
        Hook {
            entry,
            origin,
            matcher,
        }
    }

    /// Whether this hook runs for `event` on `target` (a tool name or a step id; empty for
    /// run events).
    pub fn applies(&self, event: Event, target: &str) -> bool {
        self.entry.event == event
            && self
                .matcher
                .as_ref()
                .is_none_or(|m| m.is_match(target) || target.is_empty())
    }
}

/// The hooks that may run in one workspace, in declared order (the person's first, then a
/// trusted repository's), and the repository's hooks that may not.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    hooks: Vec<Hook>,
    /// The repository's hooks that do not run because it is not trusted.
    pub ignored: Vec<HookEntry>,
    /// The file they are in, for the warning.
    pub ignored_file: String,
}

impl HookSet {
    /// The hooks of `configured` that may run in the workspace at `root`.
    pub fn resolve(configured: &Configured, _root: &Path) -> HookSet {
        let mut hooks: Vec<Hook> = configured
            .user
            .iter()
            .map(|e| Hook::new(e.clone(), Origin::User))
            .collect();
        let mut ignored = Vec::new();
        if configured.project_trusted {
            hooks.extend(
                configured
                    .project
                    .iter()
                    .map(|e| Hook::new(e.clone(), Origin::Project)),
            );
        } else {
            ignored.clone_from(&configured.project);
        }
        HookSet {
            hooks,
            ignored,
            ignored_file: configured.project_file.clone(),
        }
    }

    /// Only these hooks (tests, the benchmark).
    pub fn of(entries: Vec<HookEntry>) -> HookSet {
        HookSet {
            hooks: entries
                .into_iter()
                .map(|e| Hook::new(e, Origin::User))
                .collect(),
            ..HookSet::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    pub fn has(&self, event: Event) -> bool {
        self.hooks.iter().any(|h| h.entry.event == event)
    }

    /// The one warning line for the repository's hooks that do not run, if any.
    pub fn ignored_warning(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let list: Vec<String> = self
            .ignored
            .iter()
            .map(|e| format!("{} `{}`", e.event, e.command))
            .collect();
        Some(format!(
            "the hooks in `{}` do not run, because this repository is not trusted: {}; \
             review them, then `tick trust` to let them run",
            self.ignored_file,
            list.join(", ")
        ))
    }

    /// The hooks whose command cannot run here: the first word of the command is neither a
    /// shell builtin, nor a program on the commands' `PATH`, nor an executable file (relative
    /// to `root`). Each with why.
    pub fn missing_commands(&self, root: &Path, env: &CommandEnv) -> Vec<(HookEntry, String)> {
        self.hooks
            .iter()
            .filter_map(|h| {
                exec::command_problem(&h.entry.command, root, env.var("PATH").as_deref())
                    .map(|why| (h.entry.clone(), why))
            })
            .collect()
    }
}

/// What a hook gets on stdin: Claude Code's fields (`hook_event_name`, `cwd`, `tool_name`,
/// `tool_input`, `tool_response`, `session_id`, `transcript_path`) and tick's own. Fields that
/// do not apply to an event are left out. `docs/hooks.md` shows one per event.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Payload {
    /// [`PAYLOAD_FORMAT`]; set by [`fire`].
    pub format: u32,
    /// The event (`tool.pre`, …); set by [`fire`].
    pub hook_event_name: String,
    /// tick's task id, where Claude Code has its session's.
    pub session_id: String,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    pub task_id: String,
    /// The task's phase (`approved`, `running`, …).
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_title: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<String>,
    /// The verification so far (`step.verify`, `step.done`, `step.blocked`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<crate::tasks::state::Evidence>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// The draft the planner submitted (`plan.submitted`): title, summary, steps (each with
    /// `title`, `files`, `verify`, …), risks, as `submit_plan` has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// The model's note with its claim (`step.claimed`), the reason (`step.blocked`), how the
    /// run ended (`run.end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Payload {
    /// The payload of a run event of `task`, in the workspace at `root`.
    pub fn for_task(task: &crate::tasks::Task, root: &Path) -> Payload {
        Payload {
            session_id: task.id.clone(),
            cwd: root.display().to_string(),
            task_id: task.id.clone(),
            phase: task.phase().as_str().to_owned(),
            ..Payload::default()
        }
    }

    /// The payload of an event of step `id` of `task`.
    pub fn for_step(
        task: &crate::tasks::Task,
        id: StepId,
        step: &crate::tasks::todo_md::Step,
        root: &Path,
    ) -> Payload {
        Payload {
            step_id: Some(id.to_string()),
            step_title: Some(step.title.clone()),
            files: step.files.clone(),
            verify: step.verify.clone(),
            ..Payload::for_task(task, root)
        }
    }

    /// The tool call's arguments as a hook expects them: tick's own, plus Claude Code's
    /// `file_path` beside a `path`, so `jq -r .tool_input.file_path` scripts work as they are.
    pub fn tool_input(arguments: &Value) -> Value {
        let mut input = arguments.clone();
        if let Value::Object(map) = &mut input
            && let Some(path) = map.get("path").cloned()
            && !map.contains_key("file_path")
        {
            map.insert("file_path".to_owned(), path);
        }
        input
    }
}

/// One hook's run, for the person (`tick run`'s line, `--json`'s `hook` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookReport {
    pub step: Option<StepId>,
    pub hook_event: Event,
    pub command: String,
    /// `null` when it was killed (timeout) or never started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// It blocked (exit 2, `decision: block`, or a guard that gave no verdict).
    pub blocked: bool,
    /// It could not run (exit 126/127, could not start): the person must fix it.
    pub error: Option<String>,
    /// Its `systemMessage`, for the person.
    pub message: Option<String>,
    /// The last lines of its stderr (secrets redacted).
    pub stderr_tail: String,
    /// The last lines of its stdout (secrets redacted), shown with `-v`.
    pub stdout_tail: String,
}

impl HookReport {
    /// The one line a person sees for this run, such as
    /// ``S1 hook tool.post `./fmt.sh` exit 0 in 0.1s``.
    pub fn line(&self) -> String {
        let step = self.step.map_or(String::new(), |s| format!("{s} "));
        let outcome = match (self.timed_out, self.exit_code) {
            (true, _) => "timed out".to_owned(),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "did not run".to_owned(),
        };
        let mut line = format!(
            "{step}hook {} `{}` {outcome} in {:.1}s",
            self.hook_event,
            self.command,
            Duration::from_millis(self.duration_ms).as_secs_f64()
        );
        if self.blocked {
            line.push_str(", blocked");
        }
        if let Some(error) = &self.error {
            line.push_str(&format!(": {error}"));
        }
        line
    }
}

/// What the hooks of one event decided.
#[derive(Debug, Clone, Default)]
pub struct Fired {
    /// Why it is blocked (the first blocking hook's stderr or reason); the hooks after it did
    /// not run.
    pub block: Option<String>,
    /// `additionalContext` (and a blocking `tool.post`'s feedback) for the model.
    pub context: Vec<String>,
    /// One per hook that ran, as recorded (`step.verify`'s are evidence).
    pub evidence: Vec<crate::tasks::state::Evidence>,
    /// How many hooks ran.
    pub ran: usize,
}

/// Where and how the hooks of one event run.
pub struct Fire<'a> {
    pub root: &'a Path,
    /// The commands' environment and sandbox (the build registry's).
    pub env: &'a CommandEnv,
    /// Plan-mode events run under the read-only policy instead of the build one.
    pub read_only: bool,
    /// Where the payload files and the hooks' transcript go (`<task>/runs/`).
    pub runs_dir: PathBuf,
    pub step: Option<StepId>,
}

/// One step's hooks, owned by the runner's hooks around the step's turn: the base payload,
/// the tool call under way (its `tool.pre` input goes to its `tool.post`), and what the
/// hooks said for the model, which rides on the next tool result.
#[derive(Debug, Clone)]
pub struct ForStep {
    pub set: HookSet,
    pub root: PathBuf,
    pub env: CommandEnv,
    pub runs_dir: PathBuf,
    pub step: StepId,
    pub payload: Payload,
    pub tool: Option<(String, Value)>,
    pub pending: Vec<String>,
}

impl ForStep {
    pub fn has(&self, event: Event) -> bool {
        self.set.has(event)
    }

    /// [`fire`] for this step, with `payload` (the base payload, changed by the caller).
    pub fn fire(
        &self,
        event: Event,
        target: &str,
        payload: &Payload,
        emit: &mut dyn FnMut(HookReport),
    ) -> Fired {
        let how = Fire {
            root: &self.root,
            env: &self.env,
            read_only: false,
            runs_dir: self.runs_dir.clone(),
            step: Some(self.step),
        };
        fire(&self.set, &how, event, target, payload, emit)
    }

    /// The hooks' notes for the model since the last tool result, taken.
    pub fn take_pending(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.pending).join("\n\n"))
    }
}

/// The environment of plan-mode hooks (`plan.submitted`, `plan.approved`): the person's,
/// without `secrets` and whatever looks like a credential, under the read-only policy when
/// the sandbox is on (`sandbox_on`) and can be set up here.
pub fn read_only_env(
    root: &Path,
    sandbox_on: bool,
    secrets: impl IntoIterator<Item = String>,
) -> CommandEnv {
    let contained = sandbox_on && crate::sandbox::available(crate::sandbox::Kind::ReadOnly).is_ok();
    CommandEnv::default()
        .with_secrets(secrets)
        .with_sandbox(if contained {
            crate::sandbox::Sandboxing::On(Policy::read_only(root))
        } else {
            crate::sandbox::Sandboxing::Off
        })
}

/// Numbers payload files apart within one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Runs the hooks of `set` for `event` on `target`, one at a time in declared order, each in
/// the sandbox with its timeout; stops at the first that blocks. Each run is reported to
/// `emit` and appended to `runs/hooks.jsonl`.
pub fn fire(
    set: &HookSet,
    how: &Fire<'_>,
    event: Event,
    target: &str,
    payload: &Payload,
    emit: &mut dyn FnMut(HookReport),
) -> Fired {
    let mut fired = Fired::default();
    let applying: Vec<&Hook> = set
        .hooks
        .iter()
        .filter(|h| h.applies(event, target))
        .collect();
    if applying.is_empty() {
        return fired;
    }
    let input_path = match write_input(how, event, payload) {
        Ok(path) => path,
        Err(err) => {
            // Without its input no hook can run: a guard blocks, the rest are reported.
            for hook in applying {
                emit(HookReport {
                    step: how.step,
                    hook_event: event,
                    command: hook.entry.command.clone(),
                    exit_code: None,
                    timed_out: false,
                    duration_ms: 0,
                    blocked: event.is_gate(),
                    error: Some(format!("its input could not be written: {err}")),
                    message: None,
                    stderr_tail: String::new(),
                    stdout_tail: String::new(),
                });
                if event.is_gate() {
                    fired.block = Some(format!(
                        "the {event} hook `{}` could not run: {err}",
                        hook.entry.command
                    ));
                    break;
                }
            }
            return fired;
        }
    };
    let policy = match how.env.sandbox().policy() {
        Some(_) if how.read_only => Some(Policy::read_only(how.root)),
        Some(policy) => Some(policy.clone()),
        None => None,
    };
    for hook in applying {
        let ran = exec::run(
            how.root,
            how.env,
            policy.as_ref(),
            &hook.entry.command,
            &input_path,
            event,
            hook.entry.timeout(),
        );
        fired.ran += 1;
        let judged = judge(event, &hook.entry.command, &ran);
        record(&how.runs_dir, how.step, event, hook, &ran, &judged);
        let duration_ms = u64::try_from(ran.duration.as_millis()).unwrap_or(u64::MAX);
        let excerpt = |text: &str| crate::redact::redact(&crate::text::tail(text, 20, 2_000), &[]);
        let stderr_tail = excerpt(&ran.stderr);
        let output = if ran.stderr.is_empty() {
            ran.stdout.clone()
        } else if ran.stdout.is_empty() {
            ran.stderr.clone()
        } else {
            format!("{}\n{}", ran.stdout, ran.stderr)
        };
        fired.evidence.push(crate::tasks::state::Evidence {
            command: format!("hook {event}: {}", hook.entry.command),
            exit_code: ran.exit_code.unwrap_or(-1),
            duration_ms,
            output_hash: blake3::hash(output.as_bytes()).to_hex().to_string(),
            output_tail: excerpt(&output),
        });
        emit(HookReport {
            step: how.step,
            hook_event: event,
            command: hook.entry.command.clone(),
            exit_code: ran.exit_code,
            timed_out: ran.timed_out,
            duration_ms,
            blocked: judged.block.is_some(),
            error: judged.error.clone(),
            message: judged.message.clone(),
            stderr_tail,
            stdout_tail: excerpt(&ran.stdout),
        });
        fired.context.extend(judged.context);
        if let Some(block) = judged.block {
            fired.block = Some(block);
            break;
        }
    }
    let _ = crate::fsx::remove_file(&input_path);
    fired
}

/// Writes the payload of `event` where the hooks read it (under `runs/hooks/`). A scratch
/// file, removed after the hooks ran: it needs no fsync (`write_atomic`'s), which on a busy
/// disk would cost more than the hook.
fn write_input(how: &Fire<'_>, event: Event, payload: &Payload) -> crate::error::Result<PathBuf> {
    let mut payload = payload.clone();
    payload.format = PAYLOAD_FORMAT;
    event.as_str().clone_into(&mut payload.hook_event_name);
    let input = serde_json::to_vec(&payload).unwrap_or_default();
    let dir = how.runs_dir.join("hooks");
    crate::fsx::create_dir_all(&dir)?;
    let path = dir.join(format!(
        "input-{}-{}.json",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = crate::fsx::open_append(&path)?;
    std::io::Write::write_all(&mut file, &input)
        .map_err(|err| crate::error::Error::io("write", &path, &err))?;
    Ok(path)
}

/// What one hook's run means for its event.
#[derive(Debug, Default, PartialEq, Eq)]
struct Judged {
    block: Option<String>,
    context: Vec<String>,
    error: Option<String>,
    message: Option<String>,
}

/// The contract: exit 0 (stdout JSON read), 2 (block with stderr), 126/127 (broken), other
/// (reported; only `step.verify` treats every non-zero exit as a refusal).
fn judge(event: Event, command: &str, ran: &exec::Ran) -> Judged {
    let mut judged = Judged::default();
    let stderr = ran.stderr.trim();
    let said = |fallback: &str| {
        if stderr.is_empty() {
            fallback.to_owned()
        } else {
            stderr.to_owned()
        }
    };
    if let Some(why) = &ran.spawn_error {
        judged.error = Some(format!("could not start: {why}"));
    }
    if ran.timed_out {
        judged.error = Some(format!("killed at its timeout ({:.0} s)", ran.timeout_s));
    }
    match ran.exit_code {
        Some(0) => {
            // A guard's verdict that cannot be read is no verdict, which blocks: JSON cut
            // short (`{"decision":"block"`) must not pass as an approval.
            let stdout = ran.stdout.trim();
            if event.is_gate()
                && stdout.starts_with('{')
                && serde_json::from_str::<serde_json::Value>(stdout).is_err()
            {
                let first = stdout.lines().next().unwrap_or_default();
                judged.block = Some(format!(
                    "the {event} hook `{command}` printed JSON that does not parse, so its \
                     verdict cannot be read: {}",
                    first.chars().take(200).collect::<String>()
                ));
                return judged;
            }
            let output = HookOutput::parse(&ran.stdout);
            judged.message = output.system_message;
            judged.context.extend(output.additional_context);
            if output.block {
                judged.block = Some(output.reason.unwrap_or_else(|| {
                    format!("the {event} hook `{command}` refused (decision: block)")
                }));
            }
            return judged;
        }
        Some(2) => {
            judged.block = Some(said(&format!(
                "the {event} hook `{command}` refused (exit 2)"
            )));
            return judged;
        }
        Some(code @ (126 | 127)) => {
            let what = if code == 127 {
                "not found"
            } else {
                "not executable"
            };
            judged.error = Some(format!("its command is {what} (exit {code}): {stderr}"));
        }
        Some(code) if event == Event::StepVerify => {
            // An extra verifier's output is its report, wherever it printed it.
            let output = format!("{}\n{}", ran.stdout.trim(), stderr);
            let output = output.trim();
            judged.block = Some(format!(
                "the step.verify hook `{command}` failed (exit {code}):\n{}",
                if output.is_empty() {
                    "(no output)"
                } else {
                    output
                }
            ));
            return judged;
        }
        Some(_) | None => {}
    }
    if judged.error.is_some() && event.is_gate() {
        judged.block = Some(format!(
            "the {event} hook `{command}` gave no verdict: {}",
            judged.error.clone().unwrap_or_default()
        ));
    }
    if ran.exit_code.is_none() && ran.spawn_error.is_none() && !ran.timed_out {
        judged.error = Some("killed by a signal".to_owned());
        if event.is_gate() {
            judged.block = Some(format!("the {event} hook `{command}` was killed"));
        }
    }
    judged
}

/// What a hook may print on stdout with exit 0 (Claude Code's and Codex's fields; anything
/// else, `updatedInput` included, is ignored: tick never takes a rewritten tool call).
#[derive(Debug, Default, PartialEq, Eq)]
struct HookOutput {
    block: bool,
    reason: Option<String>,
    additional_context: Vec<String>,
    system_message: Option<String>,
}

impl HookOutput {
    fn parse(stdout: &str) -> HookOutput {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(stdout.trim()) else {
            return HookOutput::default();
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let specific = map.get("hookSpecificOutput");
        let decision = text(map.get("decision"))
            .or_else(|| text(specific.and_then(|s| s.get("permissionDecision"))));
        let block = matches!(decision.as_deref(), Some("block" | "deny"))
            || map.get("continue") == Some(&Value::Bool(false));
        let reason = text(map.get("reason"))
            .or_else(|| text(specific.and_then(|s| s.get("permissionDecisionReason"))))
            .or_else(|| text(map.get("stopReason")));
        let additional_context = [
            text(map.get("additionalContext")),
            text(specific.and_then(|s| s.get("additionalContext"))),
        ]
        .into_iter()
        .flatten()
        .collect();
        HookOutput {
            block,
            reason,
            additional_context,
            system_message: text(map.get("systemMessage")),
        }
    }
}

/// Appends one hook's whole run to `runs/hooks.jsonl`, the hooks' part of the step's
/// transcript. A failure to write it is not the hook's failure.
fn record(
    runs_dir: &Path,
    step: Option<StepId>,
    event: Event,
    hook: &Hook,
    ran: &exec::Ran,
    judged: &Judged,
) {
    let line = serde_json::json!({
        "event": event,
        "step": step,
        "origin": hook.origin,
        "command": hook.entry.command,
        "exit_code": ran.exit_code,
        "timed_out": ran.timed_out,
        "duration_ms": u64::try_from(ran.duration.as_millis()).unwrap_or(u64::MAX),
        "blocked": judged.block.is_some(),
        "error": judged.error,
        "stdout": crate::redact::redact(&ran.stdout, &[]),
        "stderr": crate::redact::redact(&ran.stderr, &[]),
    });
    if let Ok(mut file) = crate::fsx::open_append(&runs_dir.join("hooks.jsonl")) {
        use std::io::Write as _;
        let _ = writeln!(file, "{line}");
    }
}

#[cfg(test)]
mod tests;
