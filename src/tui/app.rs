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
use super::seam::{Answer, Contract, EngineEvent, Outcome, PlanView, Selection, Snapshot};
use super::slash_menu::SlashMenu;
use super::timeline::{Entry, in_session_words, strip_ansi};
use crate::planning::PlanEvent;
use crate::planning::review::{
    self, Action as ReviewAction, Answer as ReviewAnswer, Asking, Review,
};
use crate::runner::RunEvent;
use crate::ui::outcomes::{self, Said};

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
    Approve {
        contract: Contract,
        /// Commit the task folder once approved (the review's last question).
        commit_folder: bool,
    },
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
            Request::Approve { .. } => "approving",
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

/// The approval contract being asked: the review machine's form.
pub type ContractForm = review::Form;

/// The prompt that asks what the review machine asks.
fn prompt_of(asking: Asking) -> Prompt {
    match asking {
        Asking::Menu => Prompt::Review,
        Asking::Contract(form) => Prompt::Contract(form),
        Asking::ConfirmDiscard => Prompt::ConfirmDiscard,
        Asking::Revise => Prompt::Revise,
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

    /// A line something printed while the session runs (caught on stdout or stderr). Nothing
    /// in tick should print then, so it is shown as what it is, never read for its meaning.
    pub fn output(&mut self, line: &str) {
        let line = strip_ansi(line);
        if line.trim().is_empty() {
            return;
        }
        self.note(format!("unexpected output: {line}"));
    }

    /// Lines tick says, built by `crate::ui::outcomes` as the subcommands print them, their
    /// hints in the session's own words (`/run`, not `tick run`).
    pub fn say(&mut self, said: &[Said]) {
        for line in said.iter().flat_map(Said::lines) {
            self.note(in_session_words(&line));
        }
    }

    /// The engine's events that are neither the model's nor the runner's.
    pub(super) fn on_told(&mut self, event: EngineEvent) -> Vec<Effect> {
        match event {
            EngineEvent::Plan(PlanEvent::Agent(agent)) => self.on_agent(agent),
            // A planning hook's run reads as a run's does.
            EngineEvent::Plan(PlanEvent::Hook(report)) => {
                return self.on_run(RunEvent::Hook(report));
            }
            EngineEvent::Plan(event) => self.say(&outcomes::plan_event(&event)),
            EngineEvent::Warning(warning) => {
                self.say(&[Said::Warning(crate::ui::warning_line(&warning))]);
            }
            EngineEvent::Note(line) => self.say(&[Said::Note(line)]),
            EngineEvent::Stale(stale) => self.say(&outcomes::stale(&stale)),
            EngineEvent::Agent(_) | EngineEvent::Run(_) => return self.on_engine(event),
        }
        Vec::new()
    }

    /// What a request that ended well did, in the words the subcommands use.
    fn said_of(outcome: &Outcome) -> Vec<Said> {
        match outcome {
            // The planner's events said it (`drafted ...`); the run's summary is an event.
            Outcome::Drafted(_) | Outcome::Ran(_) => Vec::new(),
            Outcome::Answered(answered) => outcomes::answered(answered),
            Outcome::Approved {
                approved,
                folder,
                committed,
            } => {
                let mut said = outcomes::approved(approved, folder);
                said.extend(outcomes::approved_next(folder, *committed));
                said
            }
            Outcome::Reapproved {
                id,
                reapproved,
                todo,
            } => outcomes::reapproved(id, reapproved, todo),
            Outcome::Discarded { discarded, shown } => outcomes::discarded(discarded, shown),
            Outcome::Diff(diff) => outcomes::step_diff(diff),
            Outcome::Undone(undo) => crate::ui::undo::undone(undo),
            Outcome::HooksApproved { id, changes } => outcomes::hooks_approved(id, changes),
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
    fn prompt_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        let prompt = self.prompt.take()?;
        let code = key.code;
        match prompt {
            Prompt::Review if !self.input.is_empty() => {
                self.prompt = Some(Prompt::Review);
                None
            }
            Prompt::Review => self.review_key(Asking::Menu, code),
            Prompt::Contract(form) => self.review_key(Asking::Contract(form), code),
            Prompt::ConfirmDiscard => self.review_key(Asking::ConfirmDiscard, code),
            Prompt::Revise => self.review_key(Asking::Revise, code),
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

    /// A key for the review of the draft: mapped onto [`review::Review`]'s answers (the one
    /// review machine `tick review` drives too), and its action carried out here.
    fn review_key(&mut self, asking: Asking, code: KeyCode) -> Option<Vec<Effect>> {
        let number = matches!(asking, Asking::Contract(form) if form.question.wants_number());
        let answer = match (asking, code) {
            // `/` starts a command; the menu stays for when it is done.
            (Asking::Menu, KeyCode::Char('/')) => {
                self.input.insert('/');
                self.prompt = Some(Prompt::Review);
                return Some(Vec::new());
            }
            (Asking::Revise | Asking::Contract(_), KeyCode::Enter)
                if number || asking == Asking::Revise =>
            {
                ReviewAnswer::Text(self.input.take())
            }
            (Asking::Revise | Asking::Contract(_), KeyCode::Esc) => {
                self.input.take();
                ReviewAnswer::Back
            }
            // The feedback and the limit are typed into the input line.
            (Asking::Revise, _) => {
                self.prompt = Some(Prompt::Revise);
                return None;
            }
            (Asking::Contract(_), KeyCode::Char(c)) if number && c.is_ascii_digit() => {
                self.input.insert(c);
                self.prompt = Some(prompt_of(asking));
                return Some(Vec::new());
            }
            (Asking::Contract(_), KeyCode::Backspace) if number => {
                self.input.backspace();
                self.prompt = Some(prompt_of(asking));
                return Some(Vec::new());
            }
            (Asking::Contract(_), _) if number => {
                self.prompt = Some(prompt_of(asking));
                return Some(Vec::new());
            }
            (_, KeyCode::Char(c)) => ReviewAnswer::Key(c),
            (_, KeyCode::Enter) => ReviewAnswer::Enter,
            (Asking::ConfirmDiscard, _) | (_, KeyCode::Esc) => ReviewAnswer::Back,
            _ => {
                self.prompt = Some(prompt_of(asking));
                return Some(Vec::new());
            }
        };
        let mut review = Review::at(asking, self.review_defaults());
        let action = review.answer(answer);
        self.prompt = Some(prompt_of(review.asking()));
        match action {
            // Its help is the menu line.
            ReviewAction::Ask | ReviewAction::NothingToRevise | ReviewAction::Help => {}
            ReviewAction::Print => self.open_plan_view(),
            ReviewAction::Invalid(message) => self.error(message),
            ReviewAction::Approve {
                contract,
                commit_folder,
            } => {
                return Some(self.request(Request::Approve {
                    contract,
                    commit_folder,
                }));
            }
            ReviewAction::Revise(text) => {
                self.timeline.push(Entry::Person(text.clone()));
                return Some(self.request(Request::Revise(text)));
            }
            ReviewAction::Edit => return Some(vec![Effect::Edit]),
            ReviewAction::Discard => return Some(self.request(Request::Discard)),
            ReviewAction::KeptDraft => self.note("kept the draft"),
            ReviewAction::Keep => {
                self.prompt = None;
                self.note(
                    "kept the draft for later: /approve, /revise, /edit or /discard when you are ready",
                );
            }
        }
        Some(Vec::new())
    }

    /// Where the review's contract starts: the draft's own approval settings.
    fn review_defaults(&self) -> Contract {
        self.snapshot
            .draft
            .as_ref()
            .map(|draft| draft.approval)
            .unwrap_or_default()
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
                    Some(contract) => self.request(Request::Approve {
                        contract,
                        commit_folder: false,
                    }),
                    None if self.snapshot.draft.is_some() => {
                        let form = ContractForm::new(self.review_defaults());
                        self.prompt = Some(Prompt::Contract(form));
                        Vec::new()
                    }
                    None => self.request(Request::Approve {
                        contract: Contract::default(),
                        commit_folder: false,
                    }),
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
    pub fn on_done(&mut self, request: &Request, result: Result<Outcome, Error>) -> Vec<Effect> {
        self.busy = None;
        self.stop_requested = false;
        if let Some(Prompt::Asked(_)) = self.prompt {
            self.prompt = None;
        }
        let failed = result.is_err();
        match result {
            Ok(outcome) => self.say(&Self::said_of(&outcome)),
            Err(err) => self.show_error(&err),
        }
        let mut effects = vec![Effect::Reload];
        if self.mode_unsaved {
            effects.push(Effect::SaveMode);
        }
        if failed {
            if matches!(request, Request::Revise(_) | Request::Approve { .. })
                && self.snapshot.draft.is_some()
            {
                self.prompt = Some(Prompt::Review);
            }
            return effects;
        }
        match request {
            Request::Approve { .. } => {
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
                steps: vec![StepView::bare("S1", "one", StepStatus::Pending)],
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
        let nothing = crate::report::diff::StepDiff::Nothing {
            step: StepId::top(1),
            task: "t".into(),
        };
        let effects = app.on_done(&Request::Run(Selection::All), Ok(Outcome::Diff(nothing)));
        assert!(effects.contains(&Effect::SaveMode), "{effects:?}");
    }

    #[test]
    fn the_review_menu_takes_single_keys_and_the_contract() {
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
        assert!(app.on_key(key(KeyCode::Char('y'))).is_empty());
        for c in ['1', 'x', '2'] {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(app.input.text(), "12");
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        let effects = app.on_key(key(KeyCode::Char('y')));
        assert_eq!(
            engine_requests(&effects),
            vec![&Request::Approve {
                contract: Contract {
                    allow_deviation: true,
                    max_files_changed: Some(12),
                    commit_steps: false,
                },
                commit_folder: true,
            }]
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
    fn the_contract_starts_from_the_drafts_own_settings_and_esc_goes_back() {
        let defaults = Contract {
            allow_deviation: true,
            max_files_changed: Some(4),
            commit_steps: true,
        };
        let mut snapshot = draft(Phase::Draft);
        if let Some(draft) = &mut snapshot.draft {
            draft.approval = defaults;
        }
        let mut app = App::new(Mode::Plan, snapshot, false);
        assert!(app.submit("/approve").is_empty());
        let Some(Prompt::Contract(form)) = &app.prompt else {
            panic!("{:?}", app.prompt)
        };
        assert_eq!(
            form.prompt(),
            "may the run change files outside a step's `files` without pausing? [Y/n]"
        );
        // Esc backs out to the menu; `a` asks again from the start.
        app.on_key(key(KeyCode::Char('n')));
        assert!(app.on_key(key(KeyCode::Esc)).is_empty());
        assert!(matches!(app.prompt, Some(Prompt::Review)));
        app.on_key(key(KeyCode::Char('a')));
        let mut effects = Vec::new();
        for _ in 0..4 {
            effects = app.on_key(key(KeyCode::Enter));
        }
        assert_eq!(
            engine_requests(&effects),
            vec![&Request::Approve {
                contract: defaults,
                commit_folder: false,
            }]
        );
        // A limit that is not a number is said and asked again.
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        app.on_key(key(KeyCode::Char('a')));
        app.on_key(key(KeyCode::Enter));
        app.on_key(key(KeyCode::Char('0')));
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        assert_eq!(
            app.timeline.last(),
            Some(&Entry::Error("`0` is not a positive number".into()))
        );
        assert!(matches!(app.prompt, Some(Prompt::Contract(_))));
    }

    #[test]
    fn the_menu_keeps_the_draft_on_k_or_esc_and_slash_starts_a_command() {
        for code in [KeyCode::Char('k'), KeyCode::Esc] {
            let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
            app.prompt = Some(Prompt::Review);
            assert!(app.on_key(key(code)).is_empty());
            assert!(app.prompt.is_none());
            assert!(
                matches!(app.timeline.last(), Some(Entry::Note(n)) if n.starts_with("kept the draft for later"))
            );
        }
        let mut app = App::new(Mode::Plan, draft(Phase::Draft), false);
        app.prompt = Some(Prompt::Review);
        app.on_key(key(KeyCode::Char('/')));
        assert_eq!(app.input.text(), "/");
        assert!(matches!(app.prompt, Some(Prompt::Review)));
        // With a command being typed, the letters go to the line.
        app.on_key(key(KeyCode::Char('a')));
        assert_eq!(app.input.text(), "/a");
    }

    #[test]
    fn what_is_printed_while_the_session_runs_is_unexpected_output_whatever_it_says() {
        let mut app = App::new(Mode::Plan, Snapshot::default(), false);
        app.output("error: looks like one");
        app.output("   ");
        app.output("\u{1b}[1mnote\u{1b}[0m");
        assert_eq!(
            app.timeline,
            vec![
                Entry::Note("unexpected output: error: looks like one".into()),
                Entry::Note("unexpected output: note".into()),
            ]
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
