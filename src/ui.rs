//! The only place that prints. Data (status, lists, plans, JSON) goes to stdout; notes,
//! hints, warnings and errors go to stderr. Colour only on a terminal and never with
//! `NO_COLOR`; every line reads the same without it. A closed pipe is not an error.
//!
//! Text tick did not write (a model's, a file's, a repository's, a command line) never reaches
//! the terminal with its control characters: the methods that take text show them in caret
//! notation ([`crate::text::visible`]), and where a line is put together here with tick's own
//! colours, each such piece is made visible before the colour goes on. The pager gets the same
//! text, so it is safe with `PAGER=cat` and with `less -R` alike.

use std::fmt::Write as _;
use std::io::Write;

use console::{Style, style};
use serde::Serialize;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::agent::AgentEvent;
use crate::error::Error;
use crate::plan::StepStatus;
use crate::planning::PlanEvent;
use crate::report::check::{CheckReport, FindingKind};
use crate::report::list::ListReport;
use crate::report::status::{RevisionWaiting, StatusReport, StepReport, TaskReport};
use crate::report::watch::WatchEvent;
use crate::runner::{RunEvent, StepOutcome, Summary};
use crate::text::visible;

mod doctor;
pub mod outcomes;
pub use doctor::doctor_text;
pub mod undo;
pub use outcomes::{titled, warning_line};
mod settings;
pub use settings::settings_table;
pub mod show;
pub mod verify;

/// How many lines of a failed verification's output the terminal shows.
const FAILED_OUTPUT_LINES: usize = 12;

#[derive(Debug, Default)]
pub struct Ui {
    live: Mutex<Live>,
    /// `-q` (-1: no notes or hints), normal (0), `-v` (1: detail lines too).
    verbosity: std::sync::atomic::AtomicI8,
    /// A verification just failed: the `update_step` claim it refuses is said as that, not as
    /// a tool that failed.
    verify_failed: std::sync::atomic::AtomicBool,
    /// The flag a person's Ctrl-C sets (`tick run`): a tool call it cut short is said as
    /// interrupted by them, not as failed.
    stop: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// How much a command says beside its data, warnings and errors: `-q` and `-v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// What a live model turn has on the terminal: a spinner naming what happens now, and the
/// model's streamed text up to the next newline.
#[derive(Debug, Default)]
struct Live {
    spinner: Option<ProgressBar>,
    text: String,
}

impl Live {
    fn print(&self, line: &str) {
        match &self.spinner {
            Some(spinner) => spinner.println(line),
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    }

    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.print(&style(visible(&text)).dim().to_string());
        }
    }

    fn spinner(&mut self) -> &ProgressBar {
        self.spinner.get_or_insert_with(|| {
            let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            spinner.set_style(
                ProgressStyle::with_template("{spinner:.cyan} {msg} {elapsed:.dim}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            spinner.enable_steady_tick(Duration::from_millis(120));
            spinner
        })
    }
}

impl Ui {
    pub fn new() -> Self {
        Ui::default()
    }

    /// Sets how much the commands say (the global `-q` / `-v`).
    pub fn set_verbosity(&self, verbosity: Verbosity) {
        let level = match verbosity {
            Verbosity::Quiet => -1,
            Verbosity::Normal => 0,
            Verbosity::Verbose => 1,
        };
        self.verbosity
            .store(level, std::sync::atomic::Ordering::Relaxed);
    }

    fn level(&self) -> i8 {
        self.verbosity.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether `-v` asked for detail lines.
    pub fn verbose(&self) -> bool {
        self.level() > 0
    }

    /// A detail line for `-v` only (a probe, a hook run, where a setting came from).
    pub fn detail(&self, text: &str) {
        if self.verbose() {
            Self::err_line(&format!("{} {}", style("·").dim(), visible(text)));
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Progress of a model turn: JSON lines on stdout with `--json`; on a terminal, a spinner
    /// naming each tool call, the model's text, and a line per tool call on stderr;
    /// otherwise nothing.
    /// Tells the printer the flag a Ctrl-C sets, so a tool call it stops is said as that.
    pub fn watch_stop(&self, stop: &std::sync::Arc<std::sync::atomic::AtomicBool>) {
        let _ = self.stop.set(std::sync::Arc::clone(stop));
    }

    /// What a tool call that failed is said as: a refused claim after a failed verification,
    /// else the tool that failed.
    fn failed_tool_line(&self, name: &str) -> String {
        if self
            .stop
            .get()
            .is_some_and(|stop| stop.load(std::sync::atomic::Ordering::Relaxed))
        {
            return format!("{} interrupted by you", visible(name));
        }
        let verify_failed = self
            .verify_failed
            .swap(false, std::sync::atomic::Ordering::Relaxed);
        if name == "update_step" && verify_failed {
            "the verify failed, so the step is not done; the model is told why".to_owned()
        } else {
            format!("{} failed; the model is told why", visible(name))
        }
    }

    pub fn agent_event(&self, event: &AgentEvent, json: bool, live: bool) {
        if json {
            self.json(event);
            return;
        }
        if matches!(event, AgentEvent::ToolCall { .. }) {
            self.verify_failed
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
        if !live {
            // Piped or redirected: no spinner and no streamed text, but one plain line per
            // tool call, so a log still says what the model did.
            match event {
                AgentEvent::ToolCall { name, detail } => {
                    Self::err_line(&format!("-> {} {}", visible(name), visible(detail)));
                }
                AgentEvent::ToolResult {
                    name,
                    is_error: true,
                    ..
                } => {
                    Self::err_line(&format!("   {}", self.failed_tool_line(name)));
                }
                AgentEvent::Retry { .. } => Self::err_line(&retry_line(event)),
                _ => {}
            }
            return;
        }
        let mut live = self.live();
        match event {
            AgentEvent::Request { turn } => {
                live.spinner()
                    .set_message(format!("waiting for the model (turn {turn})"));
            }
            AgentEvent::Text { text } => {
                live.text.push_str(text);
                while let Some(newline) = live.text.find('\n') {
                    let line: String = live.text.drain(..=newline).collect();
                    live.print(&style(visible(line.trim_end())).dim().to_string());
                }
                live.spinner().set_message("the model is writing");
            }
            AgentEvent::ToolCall { name, detail } => {
                live.flush_text();
                let (name, detail) = (visible(name), visible(detail));
                live.print(&format!("{} {name} {detail}", style("→").cyan()));
                live.spinner().set_message(format!("{name} {detail}"));
            }
            AgentEvent::ToolResult {
                name,
                is_error: true,
                ..
            } => {
                let line = self.failed_tool_line(name);
                live.print(&format!("  {} {line}", style("!").yellow()));
            }
            AgentEvent::Reminder { text } => {
                live.flush_text();
                // The reminder's first sentence says what was wrong.
                let first = text.split(". ").next().unwrap_or(text);
                live.print(&format!(
                    "{} reminding the model: {}",
                    style("warning:").yellow().bold(),
                    visible(first.trim_end_matches('.'))
                ));
            }
            AgentEvent::TextProtocol { .. } => {
                live.flush_text();
                live.print(&format!(
                    "{} the model writes its tool calls as text; tick reads them from now on",
                    style("note:").cyan().bold()
                ));
            }
            AgentEvent::Usage { usage } => {
                if let Some(spinner) = &live.spinner {
                    spinner.set_message(format!(
                        "{} tokens so far",
                        usage.input_tokens + usage.output_tokens
                    ));
                }
            }
            AgentEvent::Retry { .. } => {
                live.flush_text();
                live.print(&format!(
                    "{} {}",
                    style("note:").cyan().bold(),
                    retry_line(event)
                ));
                live.spinner().set_message("waiting to ask the model again");
            }
            AgentEvent::ToolResult { .. } => {}
        }
    }

    /// What a command waits for: the spinner's message on a terminal (`live`), else one line.
    pub fn progress(&self, text: &str, live: bool) {
        if self.level() < 0 {
            return;
        }
        if live {
            self.live()
                .spinner()
                .set_message(visible(text).into_owned());
        } else {
            Self::err_line(&format!("{}…", visible(text)));
        }
    }

    /// Ends a live turn: the rest of the streamed text is printed and the spinner goes.
    pub fn end_live_text(&self) {
        let mut live = self.live();
        live.flush_text();
        if let Some(spinner) = live.spinner.take() {
            spinner.finish_and_clear();
        }
    }

    /// A question for the person at the terminal; the answer is read from stdin.
    pub fn prompt(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", style(visible(text)).bold());
        let _ = err.flush();
    }

    /// Data for stdout, its control characters made visible (a newline is added if missing).
    pub fn data(&self, text: &str) {
        Self::data_line(&visible(text));
    }

    /// Data for stdout as it is: a line put together here, tick's colours on text already
    /// made visible.
    fn data_line(text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }

    /// One JSON document on one line of stdout.
    pub fn json(&self, value: &impl Serialize) {
        // Written as it is made: the status of 10,000 steps is megabytes of JSON.
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
        let written = write_json(&mut out, value);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
        drop(out);
        if let Err(err) = written {
            self.error(&Error::internal(format!("could not write JSON: {err}")));
        }
    }

    /// A line on stderr, above the spinner when one is running.
    fn err_line(text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
    }

    /// What a command did, for the person watching.
    pub fn note(&self, text: &str) {
        if self.level() >= 0 {
            Self::err_line(&visible(text));
        }
    }

    /// What to do next.
    pub fn hint(&self, text: &str) {
        if self.level() < 0 {
            return;
        }
        Self::err_line(&format!("{} {}", style("hint:").cyan(), visible(text)));
    }

    pub fn warn(&self, text: &str) {
        Self::err_line(&format!(
            "{} {}",
            style("warning:").yellow().bold(),
            visible(text)
        ));
    }

    pub fn error(&self, error: &Error) {
        // A provider's error body or a command's output can quote a key back.
        Self::err_line(&format!(
            "{} {}",
            style("error:").red().bold(),
            visible(&crate::redact::redact(&error.message, &[]))
        ));
        // An error's hints say what to do about it: `-q` keeps them.
        for hint in &error.hints {
            Self::err_line("");
            Self::err_line(&format!(
                "{} {}",
                style("hint:").cyan(),
                visible(&crate::redact::redact(hint, &[]))
            ));
        }
    }

    /// `tick log`: one line an event, time first, to stdout.
    pub fn log(&self, report: &crate::tasks::history::Report) {
        let mut out = format!(
            "{} {}\n",
            style(visible(&report.task)).bold(),
            visible(&report.title)
        );
        for event in &report.events {
            let step = event
                .step
                .as_deref()
                .map(|s| format!("{s} "))
                .unwrap_or_default();
            out.push_str(&format!(
                "{}  {:<9}  {step}{}\n",
                event.at.format("%Y-%m-%d %H:%M:%S UTC"),
                event.kind.as_str(),
                visible(&crate::tasks::render::one_line(&event.text))
            ));
        }
        Self::data_line(out.trim_end());
    }

    /// clap's help, version and usage errors, rendered by clap.
    pub fn clap(&self, err: &clap::Error) {
        let _ = err.print();
    }

    pub fn status(&self, report: &StatusReport) {
        // Written as it is made, a screenful at a time: 10,000 steps are not first gathered
        // into one string.
        let mut stdout = std::io::stdout().lock();
        let mut ends_line = true;
        let mut flush = |text: &mut String| {
            if !text.is_empty() {
                ends_line = text.ends_with('\n');
                let _ = stdout.write_all(text.as_bytes());
                text.clear();
            }
        };
        let warnings = status_text(report, &mut flush);
        if !ends_line {
            let _ = stdout.write_all(b"\n");
        }
        let _ = stdout.flush();
        drop(stdout);
        // The lines `warn` and `hint` would write, in one write: a plan of 10,000 steps can
        // have thousands of warnings, and stderr is not buffered.
        let mut lines = String::new();
        // `-q` keeps the warnings and drops the hints, as `hint` does.
        let hints = self.level() >= 0;
        let next = crate::report::status::next_action(report).filter(|_| hints);
        for (warning, hint) in warnings {
            let _ = writeln!(
                lines,
                "{} {}",
                style("warning:").yellow().bold(),
                visible(&warning)
            );
            if let Some(hint) = hint.filter(|_| hints) {
                let _ = writeln!(lines, "{} {}", style("hint:").cyan(), visible(&hint));
            }
        }
        if let Some(next) = next {
            let _ = writeln!(lines, "{} {}", style("hint:").cyan(), visible(&next));
        }
        if !lines.is_empty() {
            let _ = std::io::stderr().lock().write_all(lines.as_bytes());
        }
    }

    pub fn list(&self, report: &ListReport) {
        let text = list_text(report);
        if text.is_empty() {
            self.note("no draft and no tasks yet");
            self.hint("write a plan with `tick plan \"goal\"` or `tick plan --from plan.md`");
        } else {
            self.data(&text);
        }
    }
}

impl Ui {
    /// One event of `tick run`: a JSON line on stdout with `--json`; otherwise lines for the
    /// person on stderr (with the model's progress live on a terminal) and data (a plan's diff)
    /// on stdout.
    pub fn run_event(&self, event: &RunEvent, json: bool, live: bool) {
        if json {
            self.json(event);
            return;
        }
        match event {
            RunEvent::Agent { agent, .. } => self.agent_event(agent, false, live),
            RunEvent::Verification {
                passed: false,
                output_tail,
                ..
            } => {
                self.end_live_text();
                self.verify_failed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                Self::err_line(&run_event_line(event).unwrap_or_default());
                // What failed, on screen: the last lines of the output (state.yaml keeps the
                // same tail, `runs/` the whole transcript).
                let lines: Vec<&str> = output_tail.lines().collect();
                for line in &lines[lines.len().saturating_sub(FAILED_OUTPUT_LINES)..] {
                    Self::err_line(&format!("    {}", style(visible(line)).dim()));
                }
            }
            RunEvent::Verification { .. } | RunEvent::StepDone { .. } => {
                self.end_live_text();
                Self::err_line(&run_event_line(event).unwrap_or_default());
            }
            RunEvent::PlanChanged { diff } => {
                if let Some(diff) = diff {
                    self.data(diff);
                }
            }
            RunEvent::StepBlocked { step, reason, .. } => {
                self.end_live_text();
                self.warn(&format!("{step} is blocked: {reason}"));
                self.hint(&format!(
                    "answer it with `tick answer {step} \"...\"` (or change the code or PLAN.md), then `tick run`"
                ));
            }
            RunEvent::Replanned {
                named,
                step,
                reason,
                diff,
                ..
            } => self.replanned(named, *step, reason, diff.as_deref()),
            RunEvent::Limit {
                named,
                files_changed,
                max_files_changed,
                ..
            } => {
                self.warn(&format!(
                    "the task has changed {files_changed} files, over its limit of {max_files_changed}"
                ));
                self.hint(&format!(
                    "review the changes; raise the limit with `tick approve{named} --max-files N`"
                ));
            }
            RunEvent::Paused { files, more, .. } => {
                let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
                let review = format!(
                    "review {} (`git status` shows new files, `git diff` changed ones)",
                    list.join(", ")
                );
                self.hint(&if *more {
                    format!(
                        "{review}, then `tick run` to go on; `tick approve --allow-deviation` stops these pauses"
                    )
                } else {
                    format!("{review}; no step is left to run")
                });
            }
            RunEvent::Overlap { .. }
            | RunEvent::SourceTicked { .. }
            | RunEvent::SourceNotTicked { .. } => self.cross_task_event(event),
            RunEvent::Deviation { .. }
            | RunEvent::Tampered { .. }
            | RunEvent::OutsideEdit { .. }
            | RunEvent::StatusKept { .. }
            | RunEvent::StepMissing { .. } => self.files_event(event),
            RunEvent::Hook(_)
            | RunEvent::HooksIgnored { .. }
            | RunEvent::HooksChanged { .. }
            | RunEvent::McpWarning { .. } => {
                self.hook_event(event);
            }
            RunEvent::Interrupted { step, in_progress } => {
                self.end_live_text();
                if *in_progress {
                    self.warn(&format!(
                        "stopped; `{step}` stays in progress and `tick run` picks it up again"
                    ));
                } else {
                    self.warn("stopped after the step, as asked");
                }
            }
            _ => {
                if let Some(line) = run_event_line(event) {
                    Self::err_line(&line);
                }
            }
        }
    }

    /// The executor re-planned around `step`: the step-level diff (data), why, and what to do;
    /// `t` names the task in the hints ([`crate::tasks::naming::task_named`]).
    fn replanned(&self, t: &str, step: crate::plan::StepId, reason: &str, diff: Option<&str>) {
        self.end_live_text();
        if let Some(diff) = diff {
            self.data(diff);
        }
        self.warn(&format!(
            "the plan was adjusted around {step} because {reason}; `tick approve` to continue"
        ));
        self.hint(&format!(
            "review it (`tick show{t}`), then `tick approve{t}` and `tick run{t}`; to \
             refuse it, put PLAN.md back as it was (`history/` keeps the approved version) and \
             answer `{step}` with `tick answer`"
        ));
    }

    /// One hook's run: a line (a warning when it blocked, an error when it could not run),
    /// the last lines of its stderr when it blocked or failed (and with `-v`, of its stderr
    /// and stdout), then its `systemMessage`.
    pub fn hook_report(&self, report: &crate::hooks::HookReport) {
        self.end_live_text();
        if report.error.is_some() {
            Self::err_line(&format!(
                "{} {}",
                style("error:").red().bold(),
                report.line()
            ));
        } else if report.blocked {
            self.warn(&report.line());
        } else {
            self.note(&report.line());
        }
        let shown = report.blocked || report.error.is_some() || self.verbose();
        if shown && !report.stderr_tail.is_empty() {
            for line in report.stderr_tail.lines().take(FAILED_OUTPUT_LINES) {
                Self::err_line(&format!("    {}", style(line).dim()));
            }
        }
        // Its stdout is what it said to tick (JSON, a formatter's chatter): `-v` only.
        if self.verbose() && !report.stdout_tail.is_empty() {
            for line in report.stdout_tail.lines().take(FAILED_OUTPUT_LINES) {
                Self::err_line(&format!("    stdout: {}", style(line).dim()));
            }
        }
        if let Some(message) = &report.message {
            self.note(&format!("hook: {message}"));
        }
    }

    /// The events of `tick run` about hooks (`docs/hooks.md`): one line per hook that ran,
    /// the repository's hooks that do not run, the hooks changed since approval.
    fn hook_event(&self, event: &RunEvent) {
        match event {
            RunEvent::Hook(report) => self.hook_report(report),
            RunEvent::HooksIgnored { warning } => self.warn(warning),
            RunEvent::McpWarning { text, .. } => {
                self.end_live_text();
                self.warn(text);
            }
            RunEvent::HooksChanged { changes } => {
                self.end_live_text();
                self.warn("the hooks that apply changed since the task was approved:");
                for change in changes {
                    Self::err_line(&format!("    {change}"));
                }
            }
            _ => {}
        }
    }

    /// The events of `tick run` about files: changed outside a step's `files`, by someone
    /// other than tick, or by a person while the step ran.
    fn files_event(&self, event: &RunEvent) {
        match event {
            RunEvent::Deviation {
                step,
                files,
                allowed,
            } => {
                let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
                let text = format!("{step} changed files outside its `files`: {}", list.join(", "));
                if *allowed {
                    self.note(&text);
                } else {
                    self.warn(&text);
                }
            }
            RunEvent::Tampered { step, files } => {
                let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
                self.warn(&format!(
                    "{step}: a command changed {}, which only tick may change; the step will not be ticked",
                    list.join(", ")
                ));
            }
            RunEvent::OutsideEdit { files, .. } => {
                let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
                self.warn(&format!(
                    "changed outside tick during the step: {}",
                    list.join(", ")
                ));
            }
            RunEvent::StatusKept {
                step,
                file,
                current,
                wanted,
            } => self.warn(&format!(
                "`{step}` was changed to `{}` in `{file}` while it ran; your version is kept (tick would have set `{}`)",
                current.as_str(),
                wanted.as_str()
            )),
            RunEvent::StepMissing { step, file } => self.warn(&format!(
                "`{step}` is no longer in `{file}`; its status was not written"
            )),
            _ => {}
        }
    }

    /// What a run says about other files than the task's own: other tasks' steps that change
    /// the same files, and the source file of an imported task.
    fn cross_task_event(&self, event: &RunEvent) {
        self.end_live_text();
        match event {
            RunEvent::Overlap { step, overlaps } => {
                for line in overlaps {
                    self.warn(line);
                }
                self.hint(&format!(
                    "{step} goes on; `tick check` lists every overlap of the active tasks"
                ));
            }
            RunEvent::SourceNotTicked {
                step,
                source,
                file,
                reason,
            } => {
                self.warn(&format!(
                    "{step} is done, but `{source}` in `{file}` was not ticked: {reason}"
                ));
                self.hint(&format!(
                    "tick it there by hand if it is the same task; `{file}` was not changed"
                ));
            }
            _ => self.note(&run_event_line(event).unwrap_or_default()),
        }
    }

    /// The last line of a `--json` event stream: the exit code and, when the command failed,
    /// the error.
    pub fn json_result(&self, exit_code: u8, error: Option<&Error>) {
        let error = error.map(|e| {
            serde_json::json!({
                "message": e.message,
                "hint": (!e.hints.is_empty()).then(|| e.hints.join("\n")),
            })
        });
        self.json(&serde_json::json!({"event": "result", "exit_code": exit_code, "error": error}));
    }
}

/// `value` as JSON into `out`, every control character escaped ([`VisibleJson`]).
fn write_json(out: &mut impl Write, value: &impl Serialize) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        out,
        VisibleJson,
    ))
}

/// JSON as `serde_json` writes it, but with DEL and the C1 controls escaped (`\u009b`) too:
/// JSON escapes only U+0000 to U+001F, and `--json` output may be read on a terminal.
struct VisibleJson;

impl serde_json::ser::Formatter for VisibleJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| c.is_control()) {
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// The one-line note for the run events that are plain notes, what came from the plan or the
/// model made visible; `None` for those rendered otherwise (or not at all: `run_started`).
fn run_event_line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::IdsAssigned { steps } => {
            let names: Vec<String> = steps.iter().map(|id| format!("`{id}`")).collect();
            format!("new steps got ids: {}", names.join(", "))
        }
        RunEvent::StaleReverified {
            step,
            passed,
            has_verify,
        } => match (passed, has_verify) {
            (true, _) => format!("{step} was stale; verified again: done"),
            (false, false) => {
                format!("{step} was stale and has no verification: it will be redone")
            }
            (false, true) => {
                format!("{step} was stale and its verification fails: it will be redone")
            }
        },
        RunEvent::StepStarted { step, title } => format!("{step} {}", visible(title)),
        RunEvent::VerifyPassedBefore { step, commands } => format!(
            "{step} verify passed before the change ({}): a done claim needs a change to the \
             step's files",
            commands
                .iter()
                .map(|c| format!("`{}`", visible(c)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        RunEvent::Verification {
            step,
            command,
            passed,
            exit_code,
            timed_out,
            duration_ms,
            ..
        } => {
            let mark = if *passed {
                style("✓").green()
            } else {
                style("✗").red()
            };
            let outcome = match (timed_out, exit_code) {
                (true, _) => "timed out".to_owned(),
                (false, Some(code)) => format!("exit {code}"),
                (false, None) => "killed".to_owned(),
            };
            format!(
                "{mark} {step} `{}` {outcome} in {:.1}s",
                visible(command),
                Duration::from_millis(*duration_ms).as_secs_f64()
            )
        }
        RunEvent::StepDone {
            step,
            verified,
            passed_before,
            ..
        } => {
            if *verified {
                format!("{step} done, verified")
            } else if *passed_before {
                format!(
                    "{step} done, not verified: its verify passed before the change too, so it \
                     cannot show the step done; read the change with `tick diff {step}`"
                )
            } else {
                format!("{step} done (no verification defined)")
            }
        }
        RunEvent::SourceTicked { step, source, file } => {
            format!("{step}: ticked `{source}` in `{file}` too")
        }
        RunEvent::Committed { step, commit, .. } => match commit {
            Some(commit) => format!("committed {step} as {}", commit.get(..12).unwrap_or(commit)),
            None => format!("committed {step}"),
        },
        RunEvent::CommitSkipped { step } => format!(
            "{step} changed no files outside `.tasks/`: nothing to commit; its tick goes with the next commit"
        ),
        RunEvent::NothingToRun { step: None } => {
            "every step of this task is done; nothing to run".to_owned()
        }
        RunEvent::NothingToRun { step: Some(step) } => format!("`{step}` is already done"),
        RunEvent::Summary(summary) => summary_line(summary),
        _ => return None,
    })
}

/// The closing line: `5/6 done, 1 blocked: S4 (needs the staging DB password)`.
fn summary_line(summary: &Summary) -> String {
    let mut line = format!("{}/{} done", summary.done, summary.total);
    if !summary.blocked.is_empty() {
        let blocked: Vec<String> = summary
            .blocked
            .iter()
            .map(|b| match &b.reason {
                Some(reason) => format!("{} ({})", b.step, visible(reason)),
                None => b.step.to_string(),
            })
            .collect();
        line.push_str(&format!(
            ", {} blocked: {}",
            blocked.len(),
            blocked.join(", ")
        ));
    }
    if summary.outcome == StepOutcome::Interrupted {
        line.push_str(", interrupted");
    }
    line.push_str(&format!(
        " ({} tokens in, {} out)",
        summary.usage.input_tokens, summary.usage.output_tokens
    ));
    if !summary.sandboxed {
        line.push_str(", commands ran without the sandbox");
    }
    line
}

impl Ui {
    /// `tick check`: one line per finding on stdout, a summary on stderr.
    pub fn check(&self, report: &CheckReport) {
        let mut out = String::new();
        for finding in &report.findings {
            let step = finding
                .step
                .as_deref()
                .map(|s| format!(" `{s}`"))
                .unwrap_or_default();
            let kind = match finding.kind {
                FindingKind::ChangedByTask => "changed by tick",
                FindingKind::Unverified => "unverified",
                FindingKind::Stale => "stale",
                FindingKind::PlanChanged => "plan changed",
                FindingKind::Unparseable => "unparseable",
                FindingKind::FailedAttempt => "failed attempt",
                FindingKind::Overlap => "overlap",
            };
            let _ = writeln!(out, "{}{step}: {kind}: {}", finding.task, finding.message);
        }
        if !out.is_empty() {
            self.data(&out);
        }
        let tasks = if report.tasks_checked == 1 {
            "task"
        } else {
            "tasks"
        };
        if report.findings.is_empty() {
            self.note(&format!(
                "{} {tasks} checked: all clear",
                report.tasks_checked
            ));
        } else {
            self.note(&format!(
                "{} {tasks} checked: {} {} (exit code {})",
                report.tasks_checked,
                report.findings.len(),
                if report.findings.len() == 1 {
                    "finding"
                } else {
                    "findings"
                },
                report.exit_code
            ));
        }
    }

    /// One line of `tick watch` on stdout.
    pub fn watch_event(&self, event: &WatchEvent) {
        let line = match event {
            WatchEvent::Step {
                id,
                status,
                title,
                detail,
            } => {
                let word = status.as_str().replace('_', " ");
                let word = marker_style(*status).apply_to(word);
                match (status, detail) {
                    // The check mark is for a verified step only.
                    (StepStatus::Done, Some(detail)) if detail.starts_with("verified") => format!(
                        "{id} {word} {} {}",
                        style("✓").green(),
                        style(visible(detail)).dim()
                    ),
                    (StepStatus::Done, Some(detail)) => {
                        format!("{id} {word} ({})", visible(detail))
                    }
                    (_, Some(detail)) => format!("{id} {word}: {}", visible(detail)),
                    (_, None) => format!("{id} {word}: {}", visible(title)),
                }
            }
            WatchEvent::Added { id, title } => format!("{id} added: {}", visible(title)),
            WatchEvent::Removed { id } => format!("{id} removed"),
            WatchEvent::PlanChanged => format!(
                "{} PLAN.md changed since approval; `tick run` refuses until it is approved again",
                style("warning:").yellow().bold()
            ),
            WatchEvent::Problem(message) => {
                format!("{} {}", style("error:").red().bold(), visible(message))
            }
            WatchEvent::Rescan(reason) => format!("rechecked everything: {}", visible(reason)),
        };
        Self::data_line(&line);
    }
}

fn marker_style(status: StepStatus) -> Style {
    match status {
        StepStatus::Done => Style::new().green(),
        StepStatus::InProgress => Style::new().cyan(),
        StepStatus::Blocked => Style::new().red().bold(),
        StepStatus::Stale => Style::new().yellow(),
        StepStatus::Pending => Style::new(),
    }
}

/// `text` in `style` (on stdout), without the formatting machinery when colours are off:
/// `status` of a 10,000-step plan writes tens of thousands of these.
fn push_styled(out: &mut String, style: &Style, text: &str) {
    if console::colors_enabled() {
        let _ = write!(out, "{}", style.apply_to(text));
    } else {
        out.push_str(text);
    }
}

fn step_lines(out: &mut String, step: &StepReport, indent: &str) {
    let mut marker = [b'[', b' ', b']'];
    // Markers are ASCII.
    marker[1] = u8::try_from(step.status.marker()).unwrap_or(b'?');
    out.push_str(indent);
    push_styled(
        out,
        &marker_style(step.status),
        std::str::from_utf8(&marker).unwrap_or("[?]"),
    );
    out.push(' ');
    match step.id() {
        Some(id) => id.push_to(out),
        None => out.push_str("(new)"),
    }
    out.push(' ');
    out.push_str(&visible(step.title()));
    if step.verified == Some(false) {
        push_styled(out, &Style::new().dim(), "  (not verified)");
    } else {
        push_styled(out, &Style::new().dim(), "");
    }
    out.push('\n');
    if step.verified == Some(true) {
        for evidence in &step.evidence {
            let _ = writeln!(
                out,
                "{indent}      {} `{}` exit {} in {:.1}s",
                style("verified:").green(),
                visible(evidence.command),
                evidence.exit_code,
                Duration::from_millis(evidence.duration_ms).as_secs_f64()
            );
        }
    }
    if step.verify_passed_before {
        let _ = writeln!(
            out,
            "{indent}      {}",
            style("verify passed before the change: it cannot tell done from not done").yellow()
        );
    }
    if step.claimed_without_changes {
        let _ = writeln!(
            out,
            "{indent}      {}",
            style("claimed done with no file changed and no command run").yellow()
        );
    }
    if let Some(reason) = &step.step.blocked {
        let _ = writeln!(
            out,
            "{indent}      {} {}",
            style("blocked:").red(),
            visible(reason)
        );
    }
    if let Some(reason) = &step.step.stale {
        let _ = writeln!(
            out,
            "{indent}      {} {}",
            style("stale:").yellow(),
            visible(reason)
        );
    }
    if let Some(undone) = step.undone_now() {
        let _ = writeln!(
            out,
            "{indent}      {}",
            style(visible(&crate::ui::undo::undone_line(step.id(), undone))).yellow()
        );
    }
    for change in step.later_changes {
        let _ = writeln!(
            out,
            "{indent}      {}",
            style(visible(&format!(
                "{}: {}",
                crate::watch::stale::later_change_text(change),
                change.files.join(", ")
            )))
            .dim()
        );
    }
    for sub in &step.substeps {
        step_lines(out, sub, &format!("{indent}    "));
    }
}

/// How much text `status` gathers before it writes it out.
const STATUS_CHUNK: usize = 64 * 1024;

fn task_text(out: &mut String, task: &TaskReport, flush: &mut dyn FnMut(&mut String)) {
    let p = &task.progress;
    let _ = writeln!(out, "{}", style(visible(&task.title)).bold());
    let _ = writeln!(out, "task:   {}", visible(&task.id));
    let mut phase = format!("{}, {}/{} done", task.phase, p.done, p.total);
    if p.unverified > 0 {
        let _ = write!(phase, ", {} not verified", p.unverified);
    }
    if let Some(revision) = &task.revision_waiting {
        let _ = write!(
            phase,
            "; version {} of the plan waits for approval",
            revision.version
        );
        if let Some(step) = &revision.step {
            let _ = write!(phase, " (re-planned around {})", visible(step));
        }
    }
    let _ = writeln!(out, "phase:  {phase}");
    if let Some(goal) = &task.goal {
        let _ = writeln!(out, "goal:   {}", visible(goal));
    }
    let _ = writeln!(out);
    for step in &task.steps {
        step_lines(out, step, "  ");
        if out.len() >= STATUS_CHUNK {
            flush(out);
        }
    }
}

/// How many steps a warning of `status` names one by one before it counts the rest.
const MAX_LISTED: usize = 10;

/// `` `S1`, `S2` `` or, for more than [`MAX_LISTED`] of them, the first ones and how many
/// more: `ids` are the first (at most [`MAX_LISTED`]) of `count`.
fn id_list(ids: &[String], count: usize) -> String {
    let quoted = |ids: &[String]| {
        ids.iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if count > MAX_LISTED {
        let shown = &ids[..MAX_LISTED - 1];
        format!("{} and {} more", quoted(shown), count - shown.len())
    } else {
        quoted(ids)
    }
}

/// The human form of `tick status`: the text for stdout, handed to `flush` in pieces (the last
/// one at the end), and the warnings (with hints) for stderr.
fn status_text(
    report: &StatusReport,
    flush: &mut dyn FnMut(&mut String),
) -> Vec<(String, Option<String>)> {
    let mut out = String::with_capacity(STATUS_CHUNK + 4096);
    // Whether anything was written before the piece in hand (the draft and the other tasks
    // are set off from the task by a blank line).
    let mut written = false;
    let mut warnings = Vec::new();
    if let Some(error) = &report.draft_error {
        // What to do about it is the next action, or comes after the task's.
        warnings.push((format!("the draft does not parse: {error}"), None));
    }
    if let Some(task) = &report.task {
        task_text(&mut out, task, &mut |chunk: &mut String| {
            written = true;
            flush(chunk);
        });
        warnings.extend(task_warnings(task));
    }
    others_text(&mut out, report, written);
    if let Some(attempt) = &report.plan_attempt {
        warnings.push((
            format!("planning: {}", attempt.summary),
            attempt.hint.clone(),
        ));
    }
    if report.task.is_none() && report.draft.is_none() && report.draft_error.is_none() {
        // The way to start is the next action, the last hint.
        warnings.push(("no tasks yet".to_owned(), None));
    }
    flush(&mut out);
    warnings
}

/// The warning about a revision of the task's PLAN.md waiting for approval: the executor's
/// re-plan, or an edit (a planner's re-plan, a person's).
fn revision_warning(task: &TaskReport) -> Option<(String, Option<String>)> {
    if task.approval_missing {
        return Some((
            format!(
                "`{p}/state.yaml` holds no approval of `{p}/PLAN.md` (missing or emptied): tick \
                 cannot tell that the plan is the one you approved",
                p = task.path
            ),
            Some(format!(
                "`tick run{t}` refuses until you approve it: restore `state.yaml` from git, or \
                 read the plan and `tick approve{t}`",
                t = task.named
            )),
        ));
    }
    let revision = task.revision_waiting.as_ref()?;
    Some(match revision {
        RevisionWaiting {
            version,
            step: Some(step),
            reason,
            ..
        } => (
            format!(
                "the agent re-planned around `{step}` because {}: version {version} of the plan \
                 waits for approval",
                reason.as_deref().unwrap_or("(no reason given)")
            ),
            Some(format!(
                "`tick run{t}` refuses until you approve it: review it with `tick show{t}`, \
                 then `tick approve{t}`",
                t = task.named
            )),
        ),
        RevisionWaiting {
            version,
            by_tick: true,
            ..
        } => (
            format!(
                "`{}/PLAN.md` was re-planned by tick: version {version} of the plan waits for \
                 approval",
                task.path
            ),
            Some(format!(
                "`tick run{t}` refuses until you approve it: review it with `tick show{t}`, \
                 then `tick approve{t}`",
                t = task.named
            )),
        ),
        RevisionWaiting { .. } => (
            format!("`{}/PLAN.md` was edited after approval", task.path),
            Some(format!(
                "`tick run{t}` refuses until you approve it again: `tick approve{t}`",
                t = task.named
            )),
        ),
    })
}

/// The warnings `tick status` gives about `task` (with their hints), in the order shown.
fn task_warnings(task: &TaskReport) -> Vec<(String, Option<String>)> {
    let mut warnings = Vec::new();
    warnings.extend(revision_warning(task));
    if let Some(step) = &task.replan_not_written {
        warnings.push((
            format!(
                "`{step}` is blocked for a re-plan, but PLAN.md holds no new plan (tick was \
                 stopped before writing it, or the approved plan was restored)"
            ),
            Some(format!(
                "`tick approve{t}` keeps the approved plan and makes `{step}` pending again; or \
                 answer it: `tick answer {step} \"...\"{t}`",
                t = task.named
            )),
        ));
    }
    let unverified = task
        .steps
        .iter()
        .flat_map(|s| std::iter::once(s).chain(s.substeps.iter()))
        .filter(|s| s.verified == Some(false));
    let count = unverified.clone().count();
    if count > 0 {
        // Only the ids that are named are written out.
        let named: Vec<String> = unverified
            .take(MAX_LISTED)
            .map(|s| {
                s.id()
                    .map_or_else(|| "(new)".to_owned(), |id| id.to_string())
            })
            .collect();
        let with_verify = task
            .steps
            .iter()
            .flat_map(|s| std::iter::once(s).chain(s.substeps.iter()))
            .filter(|s| s.verified == Some(false) && !s.step.verify.is_empty())
            .count();
        warnings.push((
            format!(
                "{} {} done without verification",
                id_list(&named, count),
                if count == 1 { "is" } else { "are" }
            ),
            (with_verify > 0).then(|| {
                "`tick verify` runs their `verify` commands now, no model needed (`--dry-run` shows which first)"
                    .to_owned()
            }),
        ));
    }
    if let Some(at) = task.unsandboxed_run {
        warnings.push((
            format!(
                "commands of this task ran without the sandbox (last at {})",
                at.format("%Y-%m-%d %H:%M UTC")
            ),
            Some("what they did was not contained: check `.git/` and `.tasks/` by hand".to_owned()),
        ));
    }
    for found in &task.stale_found {
        warnings.push((
            format!(
                "`{}` is stale: {} changed outside tick",
                found.id,
                found.files.join(", ")
            ),
            Some(if found.marked && !has_verify(task, &found.id) {
                format!(
                    "it has no `verify` to check it again: `tick run` redoes it, or `tick mark {} done` \
                     vouches for it as it is",
                    found.id
                )
            } else if found.marked {
                format!(
                    "`tick verify {}` checks it again now (no model needed); `tick run` does it first too",
                    found.id
                )
            } else {
                "another tick process holds the task and marks it".to_owned()
            }),
        ));
    }
    missing_files_warnings(task, &mut warnings);
    if let Some(attempt) = &task.last_attempt {
        warnings.push((attempt.summary.clone(), attempt.hint.clone()));
    }
    let new_steps = task
        .steps
        .iter()
        .flat_map(|s| std::iter::once(s).chain(s.substeps.iter()))
        .filter(|s| s.id().is_none())
        .count();
    if new_steps > 0 {
        warnings.push((
            format!(
                "{new_steps} new {} without an id; tick assigns ids at its next write",
                if new_steps == 1 { "step" } else { "steps" }
            ),
            None,
        ));
    }
    warnings
}

/// The pending steps of `task` that name files that no longer exist: a few one by one, the
/// rest counted; the hint once, after them.
fn missing_files_warnings(task: &TaskReport, warnings: &mut Vec<(String, Option<String>)>) {
    let missing = &task.plan_may_be_out_of_date;
    let shown = if missing.len() > MAX_LISTED {
        MAX_LISTED - 1
    } else {
        missing.len()
    };
    for step in &missing[..shown] {
        warnings.push((
            format!(
                "`{}` names files that no longer exist: {}; the plan may be out of date",
                step.id,
                step.files
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None,
        ));
    }
    if missing.len() > shown {
        warnings.push((
            format!(
                "{} more pending steps name files that no longer exist (`tick status --json` lists them)",
                missing.len() - shown
            ),
            None,
        ));
    }
    if let Some(last) = warnings.last_mut().filter(|_| !missing.is_empty()) {
        last.1 = Some(format!(
            "edit `{}/PLAN.md` and approve it again, or edit the {} in TODO.md",
            task.path,
            if missing.len() == 1 { "step" } else { "steps" }
        ));
    }
}

/// Whether step `id` of the reported task has a `verify` (a stale one without is redone).
fn has_verify(task: &TaskReport, id: &str) -> bool {
    task.steps
        .iter()
        .flat_map(|s| std::iter::once(s).chain(&s.substeps))
        .find(|s| s.id().is_some_and(|i| i.to_string() == id))
        .is_none_or(|s| !s.step.verify.is_empty())
}

/// The draft and the other tasks that need attention, after the task (set off by a blank line
/// when anything was `written` before).
fn others_text(out: &mut String, report: &StatusReport, written: bool) {
    if let Some(draft) = &report.draft {
        if written || !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "draft:  {} ({}, {} {}) in {}",
            visible(draft.title.as_deref().unwrap_or("(untitled)")),
            draft.phase,
            draft.steps,
            if draft.steps == 1 { "step" } else { "steps" },
            visible(&draft.path)
        );
    }
    if !report.attention.is_empty() {
        if written || !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "other tasks that need attention:");
        for other in &report.attention {
            let (Some(phase), Some(title)) = (other.phase, &other.title) else {
                let error = other.error.as_deref().unwrap_or("its files do not parse");
                let _ = writeln!(
                    out,
                    "  {}  unreadable: {}",
                    visible(&other.id),
                    visible(error)
                );
                continue;
            };
            let mut why = format!("{phase}, {}/{} done", other.done, other.total);
            if other.stale > 0 {
                let _ = write!(why, ", {} stale", other.stale);
            }
            let _ = writeln!(out, "  {}  {} ({why})", visible(&other.id), visible(title));
        }
    }
}

/// The human form of `tick list`: one line per draft or task, columns aligned.
pub fn list_text(report: &ListReport) -> String {
    let mut rows: Vec<[String; 4]> = Vec::new();
    if let Some(draft) = &report.draft {
        rows.push([
            "draft".to_owned(),
            draft.phase.to_string(),
            format!("{} steps", draft.steps),
            draft.title.clone().unwrap_or_default(),
        ]);
    }
    if let Some(error) = &report.draft_error {
        rows.push([
            "draft".to_owned(),
            "invalid".to_owned(),
            "-".to_owned(),
            error.clone(),
        ]);
    }
    for task in &report.tasks {
        rows.push(match &task.error {
            Some(error) => [
                task.id.clone(),
                "invalid".to_owned(),
                "-".to_owned(),
                error.clone(),
            ],
            None => [
                task.id.clone(),
                task.phase.map(|p| p.to_string()).unwrap_or_default(),
                format!("{}/{}", task.done, task.total),
                task.title.clone().unwrap_or_default(),
            ],
        });
    }
    let mut widths = [0usize; 3];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    }
    out
}

impl Ui {
    /// One event of `tick plan`: a JSON line on stdout with `--json`; otherwise lines for the
    /// person on stderr (with the model's progress live on a terminal) and data (a revision's
    /// step diff) on stdout.
    pub fn plan_event(&self, event: &PlanEvent, json: bool, live: bool) {
        if json {
            self.json(event);
            return;
        }
        match event {
            PlanEvent::Agent(agent) => self.agent_event(agent, false, live),
            PlanEvent::Hook(report) => self.hook_report(report),
            PlanEvent::RunCommandUnavailable { .. } => self.say(&outcomes::plan_event(event)),
            _ => {
                let said = outcomes::plan_event(event);
                if !said.is_empty() {
                    self.end_live_text();
                }
                self.say(&said);
            }
        }
    }
}

/// One line for a retry: why the request failed, how long tick waits, which attempt is next.
pub fn retry_line(event: &AgentEvent) -> String {
    let AgentEvent::Retry {
        attempt,
        of,
        wait_ms,
        reason,
    } = event
    else {
        return String::new();
    };
    #[allow(clippy::cast_precision_loss, reason = "a wait in tenths of a second")]
    let seconds = *wait_ms as f64 / 1000.0;
    format!(
        "{}; asking again in {seconds:.1} s (attempt {attempt} of {of})",
        visible(reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_every_control_character_and_reads_back_the_same() {
        let value = serde_json::json!({"title": "a\u{1b}]52;c;eA==\u{7} \u{7f}\u{9b}8m ✓\u{a0}"});
        let mut out = Vec::new();
        write_json(&mut out, &value).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\"title\":\"a\\u001b]52;c;eA==\\u0007 \\u007f\\u009b8m ✓\u{a0}\"}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}
