//! The session's state and what each key, line and answer from the worker does to it (the
//! engine's events become timeline entries in `timeline.rs`). No terminal and no
//! engine here: [`App`] answers with [`Effect`]s that the event loop carries out (send a
//! request to the worker, stop a run, open the editor, save the mode, reload the panel, quit).

use std::sync::mpsc::Sender;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::error::Error;
use crate::plan::{Phase, StepId};
use crate::tools::Questions;

use super::input::{self, COMMANDS, Input, Line};
use super::mode::Mode;
use super::panel;
use super::scroll::Scroll;
use super::seam::{Answer, Contract, PlanView, Selection, Snapshot};
use super::slash_menu::SlashMenu;
use super::timeline::{Entry, in_session_words, strip_ansi};

/// What the worker is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// `planning`, `running`, `approving`...
    pub what: &'static str,
    /// What happens now, for the status line.
    pub detail: String,
}

/// A request for the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Plan(String),
    Revise(String),
    Answer(Answer),
    Approve(Contract),
    Discard,
    Run(Selection),
    Diff(Option<StepId>),
    /// `/undo [S3]`; `None`: the step done last.
    Undo(Option<StepId>),
}

impl Request {
    fn busy(&self) -> &'static str {
        match self {
            Request::Plan(_) | Request::Revise(_) => "planning",
            Request::Answer(Answer::Planner(_)) => "planning",
            Request::Answer(Answer::Step { .. }) => "answering",
            Request::Approve(_) => "approving",
            Request::Discard => "discarding",
            Request::Run(_) => "running",
            Request::Diff(_) => "diffing",
            Request::Undo(_) => "undoing",
        }
    }
}

/// What the event loop does for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Engine(Request),
    /// Ask the run to stop at the next safe point.
    Stop,
    /// Open the draft in the editor (the terminal is handed over meanwhile).
    Edit,
    /// Keep the mode for the next session.
    SaveMode,
    /// Read the draft and the task again.
    Reload,
    Quit,
}

/// The worker's question waiting for the person, with where the answer goes.
#[derive(Debug)]
pub enum Asked {
    Questions {
        lines: Vec<String>,
        reply: Option<Sender<Option<String>>>,
    },
    Deviation {
        step: StepId,
        files: Vec<String>,
        reply: Option<Sender<bool>>,
    },
}

/// What the keys answer right now, when it is not the input line.
#[derive(Debug)]
pub enum Prompt {
    /// The review menu after the planner submitted.
    Review,
    /// The approval contract's questions, one at a time.
    Contract(ContractForm),
    /// Discard the draft? y/N.
    ConfirmDiscard,
    /// The input line holds the feedback for a revision.
    Revise,
    /// The engine asks.
    Asked(Asked),
}

/// The approval contract being asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContractForm {
    pub question: u8,
    pub contract: Contract,
}

impl ContractForm {
    pub fn text(self) -> &'static str {
        match self.question {
            0 => "may the run change files outside a step's `files` without pausing? [y/N]",
            1 => "stop the run after how many changed files? (a number, Enter for no limit)",
            _ => "commit each verified step when the task runs? [y/N]",
        }
    }
}

pub struct App {
    pub mode: Mode,
    pub snapshot: Snapshot,
    pub timeline: Vec<Entry>,
    pub input: Input,
    pub busy: Option<Busy>,
    pub prompt: Option<Prompt>,
    /// Colour, unless `NO_COLOR`.
    pub color: bool,
    /// Lines scrolled up from the end of the timeline.
    pub scroll: Scroll,
    /// The plan view, when it is open, and how far it is scrolled.
    pub plan_view: Option<Scroll>,
    /// The slash-command menu's choice.
    pub slash: SlashMenu,
    /// The command names Tab found last, when there were several.
    pub completions: Vec<&'static str>,
    pub quit: bool,
    /// Ctrl-C was pressed once: the next one quits.
    ctrl_c_armed: bool,
    stop_requested: bool,
    /// The mode changed and is not saved yet (saving waits while the worker is busy).
    pub mode_unsaved: bool,
}

impl App {
    pub fn new(mode: Mode, snapshot: Snapshot, color: bool) -> App {
        App {
            mode,
            snapshot,
            timeline: Vec::new(),
            input: Input::default(),
            busy: None,
            prompt: None,
            color,
            scroll: Scroll::default(),
            plan_view: None,
            slash: SlashMenu::default(),
            completions: Vec::new(),
            quit: false,
            ctrl_c_armed: false,
            stop_requested: false,
            mode_unsaved: false,
        }
    }

    /// The plan the panel shows.
    pub fn shown(&self) -> Option<&PlanView> {
        panel::shown(&self.snapshot, self.mode)
    }

    pub fn running(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.what == "running")
    }

    pub fn next_action(&self) -> String {
        panel::next_action(
            &self.snapshot,
            self.mode,
            self.busy.as_ref().map(|b| b.what),
        )
    }

    pub(super) fn note(&mut self, text: impl Into<String>) {
        self.timeline.push(Entry::Note(text.into()));
    }

    pub(super) fn error(&mut self, text: impl Into<String>) {
        self.timeline.push(Entry::Error(text.into()));
    }

    /// Shows an engine error with its hints.
    pub fn show_error(&mut self, err: &Error) {
        let mut text = format!("error: {}", err.message);
        for hint in &err.hints {
            text.push('\n');
            text.push_str(&in_session_words(&format!("hint: {hint}")));
        }
        self.error(text);
    }

    /// A line the subcommands printed (captured from stdout and stderr).
    pub fn output(&mut self, line: &str) {
        let line = in_session_words(&strip_ansi(line));
        if line.trim().is_empty() {
            return;
        }
        if line.starts_with("error:") {
            self.error(line);
        } else {
            self.note(line);
        }
    }

    pub fn set_snapshot(&mut self, snapshot: Snapshot) {
        self.snapshot = snapshot;
    }

    fn set_mode(&mut self, mode: Mode) -> Vec<Effect> {
        if mode == self.mode {
            return Vec::new();
        }
        self.mode = mode;
        self.mode_unsaved = true;
        self.note(mode.switched_note());
        // Saved when the worker is idle: a running step must never see `.tasks/` change under
        // it (the runner would take it for tampering). [`App::on_done`] saves it then.
        if self.busy.is_some() {
            return Vec::new();
        }
        vec![Effect::SaveMode]
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        self.ctrl_c_armed = false;
        if let Some(effects) = self.plan_view_key(key) {
            return effects;
        }
        if ctrl && key.code == KeyCode::Char('d') && self.input.is_empty() {
            self.quit = true;
            return vec![Effect::Quit];
        }
        if let Some(effects) = self.slash_key(key) {
            return effects;
        }
        if key.code == KeyCode::Tab || key.code == KeyCode::BackTab {
            if key.code == KeyCode::Tab && self.input.completing() {
                self.completions = self.input.complete();
                if self.completions.len() == 1 {
                    self.completions.clear();
                }
                return Vec::new();
            }
            return self.set_mode(self.mode.toggled());
        }
        self.completions.clear();
        if self.timeline_key(key) {
            return Vec::new();
        }
        if input::is_newline(key) && self.typing() {
            self.input.newline();
            return Vec::new();
        }
        if let Some(effects) = self.prompt_key(key) {
            return effects;
        }
        match key.code {
            KeyCode::Enter => {
                let line = self.input.take();
                return self.submit(&line);
            }
            KeyCode::Esc => {
                self.input.take();
            }
            KeyCode::Char('w') if ctrl => self.input.delete_word(),
            KeyCode::Char('u') if ctrl => {
                self.input.take();
            }
            KeyCode::Char('a') if ctrl => self.input.home(),
            KeyCode::Char('e') if ctrl => self.input.end(),
            KeyCode::Char(c) if !ctrl => self.input.insert(c),
            KeyCode::Backspace => self.input.backspace(),
            KeyCode::Delete => self.input.delete(),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Home => self.input.home(),
            KeyCode::End => self.input.end(),
            _ => {}
        }
        Vec::new()
    }

    /// Ctrl-C: once stops a run at the next safe point (or arms the quit when idle), twice
    /// quits.
    pub fn ctrl_c(&mut self) -> Vec<Effect> {
        if self.ctrl_c_armed {
            self.quit = true;
            return vec![Effect::Stop, Effect::Quit];
        }
        self.ctrl_c_armed = true;
        if self.running() {
            self.stop_requested = true;
            self.note("stopping at the next safe point; Ctrl-C again quits");
            return vec![Effect::Stop];
        }
        if let Some(busy) = &self.busy {
            let what = busy.what;
            self.note(format!(
                "{what} cannot be stopped half-way; Ctrl-C again quits and leaves every file consistent"
            ));
        } else {
            self.input.take();
            self.note("press Ctrl-C again to quit (or type /quit)");
        }
        Vec::new()
    }

    /// The keys a prompt takes; `None` when the key goes to the input line.
    #[allow(
        clippy::too_many_lines,
        reason = "one match over the inline prompts and their keys, one arm per prompt; to be split per prompt"
    )]
    fn prompt_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        let prompt = self.prompt.take()?;
        let code = key.code;
        let lower = |c: char| c.to_ascii_lowercase();
        match prompt {
            Prompt::Review if self.input.is_empty() => {
                let KeyCode::Char(c) = code else {
                    if code == KeyCode::Esc {
                        self.note("kept the draft for later: /approve, /revise, /edit or /discard when you are ready");
                        return Some(Vec::new());
                    }
                    self.prompt = Some(Prompt::Review);
                    return Some(Vec::new());
                };
                match lower(c) {
                    'a' => self.prompt = Some(Prompt::Contract(ContractForm::default())),
                    'r' => {
                        self.prompt = Some(Prompt::Revise);
                    }
                    'e' => {
                        self.prompt = Some(Prompt::Review);
                        return Some(vec![Effect::Edit]);
                    }
                    'd' => self.prompt = Some(Prompt::ConfirmDiscard),
                    'p' => {
                        self.prompt = Some(Prompt::Review);
                        self.open_plan_view();
                    }
                    'k' => self.note(
                        "kept the draft for later: /approve, /revise, /edit or /discard when you are ready",
                    ),
                    // `/` starts a command; the menu stays for when it is done.
                    '/' => {
                        self.input.insert('/');
                        self.prompt = Some(Prompt::Review);
                    }
                    _ => self.prompt = Some(Prompt::Review),
                }
                Some(Vec::new())
            }
            Prompt::Review => {
                self.prompt = Some(Prompt::Review);
                None
            }
            Prompt::ConfirmDiscard => {
                if matches!(code, KeyCode::Char('y' | 'Y')) {
                    return Some(self.request(Request::Discard));
                }
                self.note("kept the draft");
                self.prompt = Some(Prompt::Review);
                Some(Vec::new())
            }
            Prompt::Contract(mut form) => {
                if code == KeyCode::Esc {
                    self.input.take();
                    self.prompt = Some(Prompt::Review);
                    return Some(Vec::new());
                }
                if form.question == 1 {
                    match code {
                        KeyCode::Enter => {
                            let text = self.input.take();
                            let text = text.trim();
                            if text.is_empty() {
                                form.contract.max_files_changed = None;
                            } else if let Ok(n @ 1..) = text.parse::<u32>() {
                                form.contract.max_files_changed = Some(n);
                            } else {
                                self.error(format!("`{text}` is not a positive number"));
                                self.prompt = Some(Prompt::Contract(form));
                                return Some(Vec::new());
                            }
                            form.question = 2;
                        }
                        KeyCode::Char(c) if c.is_ascii_digit() => self.input.insert(c),
                        KeyCode::Backspace => self.input.backspace(),
                        _ => {}
                    }
                    self.prompt = Some(Prompt::Contract(form));
                    return Some(Vec::new());
                }
                let answer = match code {
                    KeyCode::Char('y' | 'Y') => true,
                    KeyCode::Char('n' | 'N') | KeyCode::Enter => false,
                    _ => {
                        self.prompt = Some(Prompt::Contract(form));
                        return Some(Vec::new());
                    }
                };
                if form.question == 0 {
                    form.contract.allow_deviation = answer;
                    form.question = 1;
                    self.prompt = Some(Prompt::Contract(form));
                    return Some(Vec::new());
                }
                form.contract.commit_steps = answer;
                Some(self.request(Request::Approve(form.contract)))
            }
            Prompt::Revise => {
                if code == KeyCode::Esc {
                    self.input.take();
                    self.prompt = Some(Prompt::Review);
                    return Some(Vec::new());
                }
                if code == KeyCode::Enter {
                    let text = self.input.take();
                    let text = text.trim();
                    if text.is_empty() {
                        self.prompt = Some(Prompt::Review);
                        return Some(Vec::new());
                    }
                    self.timeline.push(Entry::Person(text.to_owned()));
                    return Some(self.request(Request::Revise(text.to_owned())));
                }
                self.prompt = Some(Prompt::Revise);
                None
            }
            Prompt::Asked(Asked::Deviation { step, files, reply }) => {
                let go_on = match code {
                    KeyCode::Char('y' | 'Y') => true,
                    KeyCode::Char('n' | 'N') | KeyCode::Enter | KeyCode::Esc => false,
                    _ => {
                        self.prompt = Some(Prompt::Asked(Asked::Deviation { step, files, reply }));
                        return Some(Vec::new());
                    }
                };
                self.note(if go_on {
                    format!("going on after {step}")
                } else {
                    format!("pausing after {step} for your review")
                });
                if let Some(reply) = reply {
                    let _ = reply.send(go_on);
                }
                Some(Vec::new())
            }
            Prompt::Asked(Asked::Questions { lines, reply }) => {
                let answer = match code {
                    KeyCode::Esc => None,
                    KeyCode::Enter => Some(self.input.take()),
                    _ => {
                        self.prompt = Some(Prompt::Asked(Asked::Questions { lines, reply }));
                        return None;
                    }
                };
                let answer = answer.map(|a| a.trim().to_owned());
                match &answer {
                    Some(text) if !text.is_empty() => {
                        self.timeline.push(Entry::Person(text.clone()));
                    }
                    _ => self.note("left the questions open: the draft waits for your answers"),
                }
                if let Some(reply) = reply {
                    let _ = reply.send(answer.filter(|a| !a.is_empty()));
                }
                Some(Vec::new())
            }
        }
    }

    /// A line entered on the input.
    pub fn submit(&mut self, line: &str) -> Vec<Effect> {
        self.scroll.reset();
        let parsed = match input::parse(line) {
            Ok(parsed) => parsed,
            Err(message) => {
                self.error(format!("error: {message}"));
                return Vec::new();
            }
        };
        match parsed {
            Line::Empty => Vec::new(),
            Line::Message(text) => {
                self.timeline.push(Entry::Person(text.clone()));
                self.message(text)
            }
            Line::Plan(goal) => {
                let mut effects = self.set_mode(Mode::Plan);
                if let Some(goal) = goal {
                    self.timeline.push(Entry::Person(goal.clone()));
                    effects.extend(self.message(goal));
                }
                effects
            }
            Line::Build => self.set_mode(Mode::Build),
            Line::Status => {
                self.status();
                vec![Effect::Reload]
            }
            Line::Approve(contract) => {
                let waiting = self.snapshot.draft.is_some()
                    || self.snapshot.task.as_ref().is_some_and(|t| t.plan_changed);
                if !waiting {
                    self.error("error: there is no draft to approve\nhint: describe a goal in PLAN mode first");
                    return Vec::new();
                }
                match contract {
                    Some(contract) => self.request(Request::Approve(contract)),
                    None if self.snapshot.draft.is_some() => {
                        self.prompt = Some(Prompt::Contract(ContractForm::default()));
                        Vec::new()
                    }
                    None => self.request(Request::Approve(Contract::default())),
                }
            }
            Line::Revise(feedback) => {
                self.timeline.push(Entry::Person(feedback.clone()));
                self.request(Request::Revise(feedback))
            }
            Line::Discard => {
                if self.snapshot.draft.is_none() {
                    self.error("error: there is no draft to discard");
                    return Vec::new();
                }
                self.prompt = Some(Prompt::ConfirmDiscard);
                Vec::new()
            }
            Line::Run(selection) => self.run(selection),
            Line::Stop => {
                if self.running() {
                    self.stop_requested = true;
                    self.note("stopping at the next safe point");
                    vec![Effect::Stop]
                } else {
                    self.note("nothing is running");
                    Vec::new()
                }
            }
            Line::Answer { step, text } => {
                self.timeline
                    .push(Entry::Person(format!("/answer {step} {text}")));
                self.request(Request::Answer(Answer::Step { step, text }))
            }
            Line::Diff(step) => self.request(Request::Diff(step)),
            Line::Undo(step) => self.request(Request::Undo(step)),
            Line::Show => {
                self.open_plan_view();
                Vec::new()
            }
            Line::Edit => {
                if self.snapshot.draft.is_none() {
                    self.error("error: there is no draft to edit");
                    return Vec::new();
                }
                vec![Effect::Edit]
            }
            Line::Help => {
                self.help();
                Vec::new()
            }
            Line::Quit => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    /// A plain message: planning in PLAN mode, the runner in BUILD mode.
    fn message(&mut self, text: String) -> Vec<Effect> {
        match self.mode {
            Mode::Plan => match self.snapshot.draft.as_ref().map(|d| d.phase) {
                Some(Some(Phase::NeedsInput)) => {
                    self.request(Request::Answer(Answer::Planner(text)))
                }
                Some(_) => self.request(Request::Revise(text)),
                None => self.request(Request::Plan(text)),
            },
            Mode::Build => {
                let words = text.to_lowercase();
                let next_only = words.contains("next");
                let go = ["continue", "run", "go", "next", "resume", "proceed"]
                    .iter()
                    .any(|w| words.split(|c: char| !c.is_alphanumeric()).any(|x| x == *w));
                if !go {
                    self.note("BUILD mode runs the approved plan: say `continue` or `run the next step`, or use /run; to change the plan, Tab to PLAN mode");
                    return Vec::new();
                }
                self.run(if next_only {
                    Selection::Steps(1)
                } else {
                    Selection::All
                })
            }
        }
    }

    fn run(&mut self, selection: Selection) -> Vec<Effect> {
        if self.mode != Mode::Build {
            self.note("running needs BUILD mode: press Tab to switch, then /run");
            return Vec::new();
        }
        let runnable = self
            .snapshot
            .task
            .as_ref()
            .is_some_and(|t| t.problem.is_none() && !t.phase.is_some_and(Phase::is_finished));
        if !runnable {
            let text = if self.snapshot.draft.is_some() {
                "BUILD mode needs an approved task: the draft waits for /approve (its review menu is in PLAN mode)"
            } else if self
                .snapshot
                .task
                .as_ref()
                .is_some_and(|t| t.phase == Some(Phase::Completed))
            {
                "the task is completed: every step is done; Tab to PLAN mode to plan the next goal"
            } else {
                "BUILD mode needs an approved task: Tab to PLAN mode, describe a goal, then /approve the plan"
            };
            self.note(text);
            return Vec::new();
        }
        self.request(Request::Run(selection))
    }

    fn request(&mut self, request: Request) -> Vec<Effect> {
        if let Some(busy) = &self.busy {
            let what = busy.what;
            self.note(format!(
                "tick is {what}; wait for it to finish{}",
                if what == "running" {
                    ", or /stop it"
                } else {
                    ""
                }
            ));
            return Vec::new();
        }
        self.prompt = None;
        self.stop_requested = false;
        self.busy = Some(Busy {
            what: request.busy(),
            detail: String::new(),
        });
        vec![Effect::Engine(request)]
    }

    fn status(&mut self) {
        let Some(view) = self.shown().cloned() else {
            self.note("no draft and no task yet; type a goal in PLAN mode");
            return;
        };
        let (done, total) = panel::progress(&view);
        let what = match &view.id {
            Some(id) => format!("task `{id}`"),
            None => "draft".to_owned(),
        };
        let phase = view.phase.map_or("unreadable", Phase::as_str);
        self.note(format!(
            "{what}: {} ({phase}, {done}/{total} done)",
            view.title
        ));
        for step in &view.steps {
            let indent = if step.sub { "    " } else { "  " };
            let mut line = format!(
                "{indent}{} {} {}",
                panel::marker(step.status),
                panel::step_id(step),
                step.title
            );
            if let Some(reason) = step.blocked.as_ref().or(step.stale.as_ref()) {
                line.push_str(&format!(" — {reason}"));
            }
            self.note(line);
        }
        let next = self.next_action();
        self.note(format!("next: {next}"));
    }

    fn help(&mut self) {
        self.note("Keys: Tab switches PLAN/BUILD (or takes the /command the menu shows); Enter sends; Shift+Enter or Alt+Enter (or Ctrl-J) starts a new line; a paste is one message; Ctrl-C stops a run, twice quits.");
        self.note("Scrolling: PgUp/PgDn, the mouse wheel or Up/Down; Home/End (on an empty line) or Ctrl+Home/Ctrl+End go to the start and the end. `p` in the review and /show open the whole plan.");
        for (name, text) in COMMANDS {
            self.note(format!("  {name} {text}"));
        }
    }

    /// The worker asks the planner's questions.
    pub fn on_questions(&mut self, questions: &Questions, reply: Option<Sender<Option<String>>>) {
        let lines: Vec<String> = questions
            .questions
            .iter()
            .map(|q| {
                let mut line = q.question.clone();
                if !q.options.is_empty() {
                    line.push_str(&format!(" ({})", q.options.join(" / ")));
                }
                line
            })
            .collect();
        self.note("the planner asks:");
        for line in &lines {
            self.note(format!("  ? {line}"));
        }
        self.note("type your answers on one line and press Enter (Esc leaves them open)");
        self.prompt = Some(Prompt::Asked(Asked::Questions { lines, reply }));
    }

    /// The worker asks whether the run goes on after a deviation.
    pub fn on_deviation(&mut self, step: StepId, files: Vec<String>, reply: Option<Sender<bool>>) {
        self.prompt = Some(Prompt::Asked(Asked::Deviation { step, files, reply }));
    }

    /// The worker finished `request`.
    pub fn on_done(&mut self, request: &Request, result: Result<(), Error>) -> Vec<Effect> {
        self.busy = None;
        self.stop_requested = false;
        if let Some(Prompt::Asked(_)) = self.prompt {
            self.prompt = None;
        }
        let failed = result.is_err();
        if let Err(err) = result {
            self.show_error(&err);
        }
        let mut effects = vec![Effect::Reload];
        if self.mode_unsaved {
            effects.push(Effect::SaveMode);
        }
        if failed {
            if matches!(request, Request::Revise(_) | Request::Approve(_))
                && self.snapshot.draft.is_some()
            {
                self.prompt = Some(Prompt::Review);
            }
            return effects;
        }
        match request {
            Request::Approve(_) => {
                self.note(match self.mode {
                    Mode::Plan => "approved: Tab to BUILD mode, then /run",
                    Mode::Build => "approved: /run executes it",
                });
            }
            Request::Discard => self.note("the draft is gone; type a new goal to plan"),
            _ => {}
        }
        effects
    }

    /// After a reload that followed planning: a fresh draft opens the review menu.
    pub fn after_reload(&mut self, planned: bool) {
        if !planned || self.busy.is_some() {
            return;
        }
        match self.snapshot.draft.as_ref().map(|d| d.phase) {
            Some(Some(Phase::NeedsInput)) => {
                self.note(
                    "the planner needs answers before it can plan: type them and press Enter",
                );
            }
            Some(_) => self.prompt = Some(Prompt::Review),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::plan::StepStatus;
    use crate::tui::seam::StepView;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl_c() -> KeyEvent {
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
    }

    fn draft(phase: Phase) -> Snapshot {
        Snapshot {
            draft: Some(PlanView {
                title: "T".into(),
                phase: Some(phase),
                ..PlanView::default()
            }),
            task: None,
        }
    }

    fn approved() -> Snapshot {
        Snapshot {
            draft: None,
            task: Some(PlanView {
                id: Some("t".into()),
                title: "T".into(),
                phase: Some(Phase::Approved),
                steps: vec![StepView {
                    id: Some("S1".parse().unwrap()),
                    sub: false,
                    status: StepStatus::Pending,
                    title: "one".into(),
                    files: Vec::new(),
                    verify: Vec::new(),
                    done_when: None,
                    depends: Vec::new(),
                    risk: None,
                    blocked: None,
                    stale: None,
                    answer: None,
                }],
                ..PlanView::default()
            }),
        }
    }

    fn engine_requests(effects: &[Effect]) -> Vec<&Request> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Engine(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_message_in_plan_mode_plans_revises_or_answers() {
        let mut app = App::new(Mode::Plan, Snapshot::default(), false);
        assert_eq!(
            app.submit("add a flag"),
            vec![Effect::Engine(Request::Plan("add a flag".into()))]
        );
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        assert_eq!(
            app.submit("split S2"),
            vec![Effect::Engine(Request::Revise("split S2".into()))]
        );
        let mut app = App::new(Mode::Plan, draft(Phase::NeedsInput), false);
        assert_eq!(
            app.submit("use the table"),
            vec![Effect::Engine(Request::Answer(Answer::Planner(
                "use the table".into()
            )))]
        );
    }

    #[test]
    fn a_message_in_build_mode_drives_the_runner_only_with_an_approved_task() {
        let mut app = App::new(Mode::Build, approved(), false);
        assert_eq!(
            app.submit("run the next step"),
            vec![Effect::Engine(Request::Run(Selection::Steps(1)))]
        );
        app.busy = None;
        assert_eq!(
            app.submit("continue"),
            vec![Effect::Engine(Request::Run(Selection::All))]
        );
        // Busy: a second request waits.
        assert!(app.submit("/run").is_empty());

        let mut app = App::new(Mode::Build, Snapshot::default(), false);
        assert!(app.submit("continue").is_empty());
        assert!(
            matches!(app.timeline.last(), Some(Entry::Note(n)) if n.contains("needs an approved task"))
        );
        let mut app = App::new(Mode::Build, draft(Phase::Draft), false);
        assert!(app.submit("/run").is_empty());
        assert!(
            matches!(app.timeline.last(), Some(Entry::Note(n)) if n.contains("waits for /approve"))
        );
        let mut app = App::new(Mode::Build, approved(), false);
        assert!(app.submit("make it faster").is_empty());
    }

    #[test]
    fn run_needs_build_mode() {
        let mut app = App::new(Mode::Plan, approved(), false);
        assert!(app.submit("/run").is_empty());
        assert!(
            matches!(app.timeline.last(), Some(Entry::Note(n)) if n.contains("needs BUILD mode"))
        );
    }

    #[test]
    fn tab_switches_modes_with_the_notes_and_never_approves() {
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        let effects = app.on_key(key(KeyCode::Tab));
        assert_eq!(effects, vec![Effect::SaveMode]);
        assert_eq!(app.mode, Mode::Build);
        assert_eq!(
            app.timeline.last(),
            Some(&Entry::Note(
                "Switched to Build mode. Implementation tools are active.".into()
            ))
        );
        let effects = app.on_key(key(KeyCode::BackTab));
        assert_eq!(effects, vec![Effect::SaveMode]);
        assert_eq!(
            app.timeline.last(),
            Some(&Entry::Note(
                "Switched to Plan mode. Read-only planning is active.".into()
            ))
        );
        // Tab completes a command name instead of switching.
        for c in "/app".chars() {
            app.input.insert(c);
        }
        assert!(app.on_key(key(KeyCode::Tab)).is_empty());
        assert_eq!(app.input.text(), "/approve ");
        assert_eq!(app.mode, Mode::Plan);
    }

    #[test]
    fn a_mode_switched_during_a_run_is_saved_when_the_run_ends() {
        let mut app = App::new(Mode::Build, approved(), false);
        app.submit("/run");
        assert!(app.on_key(key(KeyCode::Tab)).is_empty());
        assert_eq!(app.mode, Mode::Plan);
        let effects = app.on_done(&Request::Run(Selection::All), Ok(()));
        assert!(effects.contains(&Effect::SaveMode), "{effects:?}");
    }

    #[test]
    fn the_review_menu_takes_single_keys_and_the_contract() {
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
        assert!(app.on_key(key(KeyCode::Char('y'))).is_empty());
        for c in ['1', '2'] {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        let effects = app.on_key(key(KeyCode::Enter));
        assert_eq!(
            engine_requests(&effects),
            vec![&Request::Approve(Contract {
                allow_deviation: true,
                max_files_changed: Some(12),
                commit_steps: false,
            })]
        );

        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        app.on_key(key(KeyCode::Char('d')));
        assert!(app.on_key(key(KeyCode::Char('n'))).is_empty());
        assert!(matches!(app.prompt, Some(Prompt::Review)));
        app.on_key(key(KeyCode::Char('d')));
        assert_eq!(
            engine_requests(&app.on_key(key(KeyCode::Char('y')))),
            vec![&Request::Discard]
        );

        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        assert_eq!(app.on_key(key(KeyCode::Char('e'))), vec![Effect::Edit]);
        app.on_key(key(KeyCode::Char('r')));
        for c in "more tests".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            engine_requests(&app.on_key(key(KeyCode::Enter))),
            vec![&Request::Revise("more tests".into())]
        );
    }

    #[test]
    fn ctrl_c_stops_a_run_first_and_quits_the_second_time() {
        let mut app = App::new(Mode::Build, approved(), false);
        app.submit("/run");
        assert!(app.running());
        assert_eq!(app.on_key(ctrl_c()), vec![Effect::Stop]);
        assert!(!app.quit);
        assert_eq!(app.on_key(ctrl_c()), vec![Effect::Stop, Effect::Quit]);
        assert!(app.quit);

        // Idle: the first one only warns; another key in between starts over.
        let mut app = App::new(Mode::Plan, Snapshot::default(), false);
        assert!(app.on_key(ctrl_c()).is_empty());
        app.on_key(key(KeyCode::Char('x')));
        assert!(app.on_key(ctrl_c()).is_empty());
        assert!(!app.quit);
        assert_eq!(app.on_key(ctrl_c()), vec![Effect::Stop, Effect::Quit]);
    }
}
