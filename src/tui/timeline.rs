//! The timeline: what the person sees happen, one entry per thing (their messages, the model's
//! streamed text, a line per tool call with how it ended, verification results, steps started,
//! done or blocked, notes and errors), and how the engine's events become entries.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::agent::AgentEvent;
use crate::runner::{RunEvent, StepOutcome};

use super::app::{App, Asked, Effect, Prompt};
use super::panel;
use super::seam::EngineEvent;

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the person typed.
    Person(String),
    /// The model's streamed text.
    Model(String),
    /// A tool call and, once it finished, how.
    Tool {
        name: String,
        detail: String,
        result: Option<String>,
    },
    /// A verification command and how it ended.
    Verify {
        step: String,
        command: String,
        passed: bool,
        summary: String,
    },
    /// A step started, done or blocked.
    Step(String),
    /// A note from tick (mode switches, the subcommands' own notes).
    Note(String),
    /// An error with its hints.
    Error(String),
}

impl App {
    /// Something the engine did.
    pub fn on_engine(&mut self, event: EngineEvent) -> Vec<Effect> {
        // A timeline scrolled back stays where it is (the title says how much is below).
        match event {
            EngineEvent::Agent(event) => {
                self.on_agent(event);
                Vec::new()
            }
            EngineEvent::Run(event) => self.on_run(event),
            // What the planner, a run's start and an answer say: `app.rs`.
            EngineEvent::Plan(_)
            | EngineEvent::Warning(_)
            | EngineEvent::Note(_)
            | EngineEvent::Stale(_) => self.on_told(event),
        }
    }

    fn set_detail(&mut self, detail: String) {
        if let Some(busy) = &mut self.busy {
            busy.detail = detail;
        }
    }

    pub(super) fn on_agent(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Request { turn } => {
                self.set_detail(format!("waiting for the model (turn {turn})"));
            }
            AgentEvent::Retry { .. } => {
                self.note(crate::ui::retry_line(&event));
                self.set_detail("waiting to ask the model again".to_owned());
            }
            AgentEvent::Text { text } => {
                if let Some(Entry::Model(last)) = self.timeline.last_mut() {
                    last.push_str(&text);
                } else {
                    self.timeline.push(Entry::Model(text));
                }
                self.set_detail("the model is writing".to_owned());
            }
            AgentEvent::ToolCall { name, detail } => {
                self.set_detail(format!("{name} {detail}"));
                self.timeline.push(Entry::Tool {
                    name,
                    detail,
                    result: None,
                });
            }
            AgentEvent::ToolResult {
                name,
                is_error,
                exit_code,
            } => {
                let summary = match (is_error, exit_code) {
                    (true, _) => "failed; the model is told why".to_owned(),
                    (false, Some(code)) => format!("exit {code}"),
                    (false, None) => "ok".to_owned(),
                };
                let open = self
                    .timeline
                    .iter_mut()
                    .rev()
                    .find_map(|entry| match entry {
                        Entry::Tool {
                            name: called,
                            result: result @ None,
                            ..
                        } if *called == name => Some(result),
                        _ => None,
                    });
                if let Some(result) = open {
                    *result = Some(summary);
                }
            }
            AgentEvent::Reminder { text } => {
                let first = text.split(". ").next().unwrap_or(&text).to_owned();
                self.note(format!(
                    "warning: reminding the model: {}",
                    first.trim_end_matches('.')
                ));
            }
            AgentEvent::TextProtocol { .. } => {
                self.note("the model writes its tool calls as text; tick reads them from now on");
            }
            AgentEvent::Usage { usage } => {
                if self.busy.as_ref().is_some_and(|b| b.detail.is_empty()) {
                    self.set_detail(format!(
                        "{} tokens so far",
                        usage.input_tokens + usage.output_tokens
                    ));
                }
            }
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per run event, as ui::run_event has them"
    )]
    pub(super) fn on_run(&mut self, event: RunEvent) -> Vec<Effect> {
        match event {
            RunEvent::RunStarted { title, .. } => self.note(format!("running `{title}`")),
            RunEvent::PlanChanged { .. } => {
                self.note("PLAN.md changed since its approval: /approve it again");
            }
            RunEvent::IdsAssigned { steps } => self.note(format!(
                "gave ids to new steps: {}",
                steps.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            )),
            RunEvent::StaleReverified { step, passed, .. } => self.timeline.push(Entry::Step(
                if passed {
                    format!("{step} verified again: [x]")
                } else {
                    format!("{step} failed verification again: redo [ ]")
                },
            )),
            RunEvent::StepStarted { step, title } => {
                self.set_detail(format!("{step} {title}"));
                self.timeline.push(Entry::Step(format!("{step} {title}: started [-]")));
            }
            RunEvent::Agent { agent, .. } => {
                // The model's own events change nothing on disk worth reading again (the
                // watcher sees the files it writes).
                self.on_agent(agent);
                return Vec::new();
            }
            RunEvent::Verification {
                step,
                command,
                passed,
                exit_code,
                timed_out,
                duration_ms,
                output_tail,
            } => {
                let mut summary = match (passed, exit_code, timed_out) {
                    (true, _, _) => format!("passed in {duration_ms} ms"),
                    (false, _, true) => "timed out".to_owned(),
                    (false, Some(code), _) => format!("failed with exit code {code}"),
                    (false, None, _) => "was killed".to_owned(),
                };
                if !passed && let Some(last) = output_tail.lines().rev().find(|l| !l.trim().is_empty()) {
                    summary.push_str(&format!(": {}", last.trim()));
                }
                self.timeline.push(Entry::Verify {
                    step: step.to_string(),
                    command,
                    passed,
                    summary,
                });
            }
            RunEvent::VerifyPassedBefore { step, .. } => self.note(format!(
                "{step}: its verify passed before the change; a done claim needs a change to its files"
            )),
            RunEvent::Overlap { overlaps, .. } => {
                for line in overlaps {
                    self.note(format!("warning: {line}"));
                }
            }
            RunEvent::SourceTicked { step, source, file } => {
                self.note(format!("{step}: ticked `{source}` in `{file}` too"));
            }
            RunEvent::SourceNotTicked {
                step,
                source,
                file,
                reason,
            } => self.note(format!(
                "warning: {step} is done, but `{source}` in `{file}` was not ticked: {reason}"
            )),
            RunEvent::OutsideEdit { step, files } => self.note(format!(
                "{step}: you changed {} while it ran; the model is told",
                files.join(", ")
            )),
            RunEvent::Tampered { step, files } => self.error(format!(
                "error: {step}: something other than tick changed {}; the step is not ticked",
                files.join(", ")
            )),
            RunEvent::StatusKept { step, current, .. } => self.note(format!(
                "{step}: kept your marker {} in TODO.md",
                panel::marker(current)
            )),
            RunEvent::StepMissing { step, .. } => {
                self.note(format!("{step} is no longer in TODO.md; its status was not written"));
            }
            RunEvent::StepDone {
                step,
                verified,
                passed_before,
                ..
            } => self.timeline.push(Entry::Step(if verified {
                format!("{step} done and verified [x]")
            } else if passed_before {
                format!("{step} done, not verified: its verify passed before the change [x]")
            } else {
                format!("{step} done, without verification [x]")
            })),
            RunEvent::StepBlocked { step, reason, .. } => {
                self.timeline.push(Entry::Step(format!("{step} blocked [!]: {reason}")));
                self.note(format!("answer it with /answer {step} <text>, then /run"));
            }
            RunEvent::Replanned { step, reason, .. } => {
                self.timeline.push(Entry::Step(format!(
                    "the plan was adjusted around {step} because {reason}"
                )));
                self.note("review the new steps, then /approve to continue");
            }
            RunEvent::Committed { step, commit, .. } => self.note(format!(
                "committed {step}{}",
                commit.map(|c| format!(" as {}", &c[..c.len().min(12)])).unwrap_or_default()
            )),
            RunEvent::CommitSkipped { step } => {
                self.note(format!("{step} changed no code: nothing to commit"));
            }
            RunEvent::Deviation {
                step,
                files,
                allowed,
            } => self.note(format!(
                "{step} changed files outside its `files`: {}{}",
                files.join(", "),
                if allowed { " (allowed)" } else { "" }
            )),
            RunEvent::Limit {
                files_changed,
                max_files_changed,
                ..
            } => self.error(format!(
                "error: the task changed {files_changed} files, over its limit of {max_files_changed}; the run stopped"
            )),
            RunEvent::Paused { step, files, more } => {
                let list = files.join(", ");
                self.note(if more {
                    format!("paused after {step} for your review of {list}; /run goes on")
                } else {
                    format!("paused after {step} for your review of {list}; no step is left to run")
                });
            }
            RunEvent::Interrupted { step, in_progress } => self.note(if in_progress {
                format!("stopped: {step} stays in progress [-] for the next /run")
            } else {
                format!("stopped after {step}")
            }),
            RunEvent::Hook(report) if report.error.is_some() => {
                self.error(format!("error: {}", report.line()));
            }
            RunEvent::Hook(report) => self.note(report.line()),
            RunEvent::HooksIgnored { warning } => self.note(format!("warning: {warning}")),
            RunEvent::McpWarning { text, .. } => self.note(format!("warning: {text}")),
            RunEvent::HooksChanged { changes } => self.error(format!(
                "error: the hooks changed since approval: {}; /approve takes them",
                changes.join("; ")
            )),
            RunEvent::NothingToRun { step } => self.note(match step {
                Some(step) => format!("{step} is done already"),
                None => "every step is done; nothing to run".to_owned(),
            }),
            RunEvent::Summary(summary) => self.note(format!(
                "{}/{} done; {}",
                summary.done,
                summary.total,
                match summary.outcome {
                    StepOutcome::Done => "the run ended",
                    StepOutcome::Blocked => "a step is blocked",
                    StepOutcome::Paused => "paused for review",
                    StepOutcome::Limit => "the changed-files limit was reached",
                    StepOutcome::Interrupted => "stopped",
                }
            )),
        }
        vec![Effect::Reload]
    }
}

impl App {
    /// Whether the keys type into the input box now (a menu of single keys takes them
    /// otherwise).
    pub(super) fn typing(&self) -> bool {
        match &self.prompt {
            None | Some(Prompt::Revise | Prompt::Asked(Asked::Questions { .. })) => true,
            Some(Prompt::Review) => !self.input.is_empty(),
            Some(_) => false,
        }
    }

    /// The keys that scroll the timeline: PgUp/PgDn a page, Ctrl+Home/Ctrl+End (or Home/End
    /// on an empty input) to its first and last line, Up/Down a line (the mouse wheel sends
    /// those in the alternate screen) unless they move the cursor between the input's
    /// lines. `true` when the key was one of them.
    pub(super) fn timeline_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let empty = self.input.is_empty();
        match key.code {
            KeyCode::PageUp => self.scroll.page_more(),
            KeyCode::PageDown => self.scroll.page_less(),
            KeyCode::Home if ctrl || empty => self.scroll.to_max(),
            KeyCode::End if ctrl || empty => self.scroll.reset(),
            KeyCode::Up | KeyCode::Down => {
                let up = key.code == KeyCode::Up;
                if self.typing() && self.input.multiline() && self.input.vertical(up) {
                    return true;
                }
                if up {
                    self.scroll.more(1);
                } else {
                    self.scroll.less(1);
                }
            }
            _ => return false,
        }
        true
    }
}

/// A line the subcommands printed, in the session's own words: the hints name the slash
/// command that does the same (`/run`, `/answer S2 …`) rather than the subcommand
/// (`tick run`), where the session has one with the same arguments.
pub fn in_session_words(line: &str) -> String {
    const SAME: [(&str, &str); 12] = [
        ("`tick plan --revise \"...\"`", "`/revise ...`"),
        ("`tick plan \"goal\"`", "`/plan goal`"),
        ("`tick run --step ", "`/run "),
        ("`tick run --steps ", "`/run "),
        ("`tick run`", "`/run`"),
        ("`tick status`", "`/status`"),
        ("`tick approve`", "`/approve`"),
        ("`tick answer ", "`/answer "),
        ("`tick diff", "`/diff"),
        ("`tick show`", "`/show`"),
        ("`tick edit`", "`/edit`"),
        ("`tick discard`", "`/discard`"),
    ];
    if !line.starts_with("hint:") {
        return line.to_owned();
    }
    let mut out = line.to_owned();
    for (cli, session) in SAME {
        out = out.replace(cli, session);
    }
    // `/undo S3` takes no `--only`; a hint with it stays the subcommand.
    if !out.contains("--only") {
        out = out.replace("`tick undo ", "`/undo ");
    }
    out
}

/// `text` without ANSI escape sequences (the subcommands' notes may carry colour).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '\r' {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::mode::Mode;
    use crate::tui::seam::Snapshot;

    #[test]
    fn tool_results_close_their_call_and_text_streams_into_one_entry() {
        let mut app = App::new(Mode::Plan, Snapshot::default(), false);
        for text in ["Let me ", "look."] {
            app.on_engine(EngineEvent::Agent(AgentEvent::Text { text: text.into() }));
        }
        app.on_engine(EngineEvent::Agent(AgentEvent::ToolCall {
            name: "read_file".into(),
            detail: "a.rs".into(),
        }));
        app.on_engine(EngineEvent::Agent(AgentEvent::ToolResult {
            name: "read_file".into(),
            is_error: true,
            exit_code: None,
        }));
        assert_eq!(
            app.timeline,
            vec![
                Entry::Model("Let me look.".into()),
                Entry::Tool {
                    name: "read_file".into(),
                    detail: "a.rs".into(),
                    result: Some("failed; the model is told why".into()),
                },
            ]
        );
    }

    #[test]
    fn a_step_done_says_whether_its_verify_is_evidence() {
        let mut app = App::new(Mode::Build, Snapshot::default(), false);
        for (verified, passed_before) in [(true, false), (false, true), (false, false)] {
            app.on_run(RunEvent::StepDone {
                step: crate::plan::StepId::top(1),
                verified,
                passed_before,
                files_changed: vec!["a.rs".into()],
            });
        }
        assert_eq!(
            app.timeline,
            vec![
                Entry::Step("S1 done and verified [x]".into()),
                Entry::Step(
                    "S1 done, not verified: its verify passed before the change [x]".into()
                ),
                Entry::Step("S1 done, without verification [x]".into()),
            ]
        );
    }

    #[test]
    fn hints_name_the_sessions_commands() {
        assert_eq!(
            in_session_words("hint: `tick run` goes on with it"),
            "hint: `/run` goes on with it"
        );
        assert_eq!(
            in_session_words(
                "hint: `tick run` executes it; `tick status` shows it; commit `.tasks/x/` to share it"
            ),
            "hint: `/run` executes it; `/status` shows it; commit `.tasks/x/` to share it"
        );
        assert_eq!(
            in_session_words("hint: `tick answer S2 \"…\"`, then `tick run --step S2`"),
            "hint: `/answer S2 \"…\"`, then `/run S2`"
        );
        assert_eq!(
            in_session_words("hint: `tick redo S2` puts it back; `tick run` does the step again"),
            "hint: `tick redo S2` puts it back; `/run` does the step again"
        );
        assert_eq!(
            in_session_words("hint: `tick undo S2 --only PATH…` does the other files"),
            "hint: `tick undo S2 --only PATH…` does the other files"
        );
        assert_eq!(
            in_session_words(
                "hint: approve it (`tick approve`), revise it (`tick plan --revise \"...\"`), discard it (`tick discard`)"
            ),
            "hint: approve it (`/approve`), revise it (`/revise ...`), discard it (`/discard`)"
        );
        assert_eq!(
            in_session_words("hint: start one with `tick plan \"goal\"`"),
            "hint: start one with `/plan goal`"
        );
        // Notes are what happened, not what to type: left as they are.
        assert_eq!(
            in_session_words("note: `tick run` was stopped"),
            "note: `tick run` was stopped"
        );
    }

    #[test]
    fn captured_output_loses_its_colour_codes() {
        assert_eq!(
            strip_ansi("\u{1b}[1;36mnote:\u{1b}[0m done\r"),
            "note: done"
        );
    }
}
