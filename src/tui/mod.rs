//! The interactive session (`tick` with no subcommand, in a terminal; DESIGN §11): a timeline
//! and a live plan panel over the same engine the subcommands use.
//!
//! This module owns the terminal while the session runs and the loop that ties the parts
//! together: keys go to the [`app::App`] (state, commands, menus), its effects go to the
//! [`worker`] thread (which calls the [`Engine`] and sends events back over a channel), to the
//! editor, or to the mode file; the panel is read from disk again after engine events and when
//! the workspace watcher sees a change (a person's edit to TODO.md shows within a second).
//! Everything the engine does goes through the one seam in [`seam`], implemented in
//! [`engine`].

pub mod app;
pub mod engine;
pub mod input;
pub mod mode;
pub mod panel;
pub mod plan_view;
pub mod render;
pub mod scroll;
pub mod seam;
pub mod slash_menu;
pub mod terminal;
pub mod timeline;
pub mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event};

use crate::env::Env;
use crate::error::{Error, Result};
use crate::tasks::Store;
use crate::ui::Ui;
use crate::watch::live::{LiveOptions, LiveWatcher};

pub use seam::{Engine, EngineEvent, Person, Snapshot};

use app::{App, Effect, Prompt, Request};
use worker::{Msg, Worker};

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The person quit with nothing running.
    Quit,
    /// The session ended while a run was going (the run was stopped).
    Interrupted,
}

/// Runs the session in the workspace of `store` until the person quits; `ui` says what the
/// editor's failure was, as `tick edit` says it.
pub fn run(store: &Store, env: &Env, ui: &Ui) -> Result<Ended> {
    let engine: Arc<dyn Engine> = Arc::new(engine::TickEngine::new(store.clone(), env));
    let color = env.var("NO_COLOR").is_none();
    // Like every command, the session starts by marking what went stale while tick was not
    // looking.
    let refreshed = engine.refresh();
    let mut app = App::new(mode::load(store), engine.status(), color);
    if let Err(err) = &refreshed {
        app.show_error(err);
    }
    for report in engine.session_start() {
        let _ = app.on_run(crate::runner::RunEvent::Hook(report));
    }
    let (tx, rx) = channel::<Msg>();
    let worker = Worker::start(Arc::clone(&engine), tx.clone())
        .map_err(|err| Error::internal(format!("could not start the session's worker: {err}")))?;
    let signals = Signals::register()?;
    // Without a watcher the panel still follows the engine's own events.
    let watcher = match LiveWatcher::start(store.root(), LiveOptions::default()) {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            app.show_error(
                &Error {
                    message: format!(
                        "the panel cannot follow edits made outside tick: {}",
                        err.message
                    ),
                    ..err
                }
                .hint("`/status` reads the files again"),
            );
            None
        }
    };
    let output = tx.clone();
    let mut screen = terminal::take(move |line| {
        let _ = output.send(Msg::Output(line));
    })?;
    let mut session = Session {
        store,
        env,
        ui,
        engine,
        worker,
        watcher,
        signals,
        refresh_error: refreshed.err().map(|err| err.message),
    };
    let result = session.run(&mut screen, &mut app, &rx);
    // The terminal is the person's again before anything is printed.
    drop(screen);
    result
}

/// SIGTERM, SIGHUP and SIGINT while the session runs (in raw mode Ctrl-C is a key, so SIGINT
/// only comes from `kill`).
struct Signals {
    quit: Arc<AtomicBool>,
    interrupt: Arc<AtomicBool>,
}

impl Signals {
    fn register() -> Result<Signals> {
        let quit = Arc::new(AtomicBool::new(false));
        let interrupt = Arc::new(AtomicBool::new(false));
        let register = |signal, flag: &Arc<AtomicBool>| {
            signal_hook::flag::register(signal, Arc::clone(flag))
                .map(drop)
                .map_err(|err| Error::internal(format!("could not handle signals: {err}")))
        };
        register(signal_hook::consts::SIGTERM, &quit)?;
        register(signal_hook::consts::SIGHUP, &quit)?;
        register(signal_hook::consts::SIGINT, &interrupt)?;
        Ok(Signals { quit, interrupt })
    }
}

struct Session<'a> {
    store: &'a Store,
    env: &'a Env,
    ui: &'a Ui,
    engine: Arc<dyn Engine>,
    worker: Worker,
    watcher: Option<LiveWatcher>,
    signals: Signals,
    /// The last staleness check's error, shown once rather than at every reload.
    refresh_error: Option<String>,
}

/// A request still under way when the session ends (quit, a signal, the terminal gone)
/// was asked to stop; the worker gets up to [`WIND_DOWN`] to reach its next safe point
/// (the agent's command under way is killed at once), so the session ends with its
/// writes made and no child left. Questions asked meanwhile go unanswered.
fn wind_down(app: &App, rx: &Receiver<Msg>) {
    if app.busy.is_none() {
        return;
    }
    let deadline = Instant::now() + WIND_DOWN;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(Msg::Done(..)) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// See [`Session::panic_for_tests`].
#[cfg(debug_assertions)]
pub const PANIC_FOR_TESTS: &str = "TICK_TEST_SESSION_PANIC";

/// How long the loop waits for a key before it looks at the other sources.
const TICK: Duration = Duration::from_millis(60);
/// How long a request under way may take to stop when the session ends.
const WIND_DOWN: Duration = Duration::from_millis(800);
/// Watcher events closer together than this reload the panel once.
const RELOAD_EVERY: Duration = Duration::from_millis(100);

impl Session<'_> {
    fn run(
        &mut self,
        screen: &mut terminal::Screen,
        app: &mut App,
        rx: &Receiver<Msg>,
    ) -> Result<Ended> {
        let mut frame = 0usize;
        let mut dirty = true;
        let mut reload_wanted = false;
        let mut last_reload = Instant::now();
        let drawn = |err: std::io::Error| Error::internal(format!("could not draw: {err}"));
        loop {
            if dirty {
                let drew = screen.terminal.draw(|f| render::draw(f, app, frame));
                match drew {
                    Ok(_) => dirty = false,
                    Err(err) if terminal::present() => return Err(drawn(err)),
                    // Drawing failed because the terminal went away.
                    Err(_) => {
                        self.apply(screen, app, vec![Effect::Stop, Effect::Quit])?;
                        break;
                    }
                }
            }
            if app.quit {
                break;
            }
            // A terminal that went away (closed, hung up) ends the session as a SIGHUP does.
            // Crossterm is asked only for what the terminal has (or a resize): it never
            // returns from a closed one.
            if terminal::wait_for_input(TICK) == terminal::Input::Gone {
                self.apply(screen, app, vec![Effect::Stop, Effect::Quit])?;
                break;
            }
            while terminal::present() && event::poll(Duration::ZERO).map_err(drawn)? {
                match event::read().map_err(drawn)? {
                    Event::Key(key) => {
                        #[cfg(debug_assertions)]
                        self.panic_for_tests(app, key);
                        let effects = app.on_key(key);
                        self.apply(screen, app, effects)?;
                    }
                    // One paste is one piece of text, its newlines kept: a pasted paragraph
                    // is one message when Enter sends it.
                    Event::Paste(text) => app.input.paste(&text),
                    _ => {}
                }
                // A resize (or any event) redraws at the new size.
                dirty = true;
            }
            while let Ok(msg) = rx.try_recv() {
                self.on_msg(screen, app, msg)?;
                dirty = true;
            }
            if let Some(watcher) = &mut self.watcher {
                while watcher.try_next().is_some() {
                    reload_wanted = true;
                }
            }
            if reload_wanted && last_reload.elapsed() >= RELOAD_EVERY {
                self.reload(app);
                reload_wanted = false;
                last_reload = Instant::now();
                dirty = true;
            }
            if self.signals.quit.swap(false, Ordering::SeqCst) {
                let effects = vec![Effect::Stop, Effect::Quit];
                self.apply(screen, app, effects)?;
            }
            if self.signals.interrupt.swap(false, Ordering::SeqCst) {
                let effects = app.ctrl_c();
                self.apply(screen, app, effects)?;
                dirty = true;
            }
            if app.busy.is_some() {
                frame = frame.wrapping_add(1);
                dirty = true;
            }
        }
        wind_down(app, rx);
        if app.mode_unsaved && app.busy.is_none() {
            let _ = mode::save(self.store, app.mode);
        }
        Ok(if app.running() {
            Ended::Interrupted
        } else {
            Ended::Quit
        })
    }

    fn on_msg(&mut self, screen: &mut terminal::Screen, app: &mut App, msg: Msg) -> Result<()> {
        match msg {
            Msg::Engine(event) => {
                let effects = app.on_engine(event);
                self.apply(screen, app, effects)?;
            }
            Msg::Questions(questions, reply) => app.on_questions(&questions, Some(reply)),
            Msg::Deviation(step, files, reply) => app.on_deviation(step, files, Some(reply)),
            Msg::Output(line) => app.output(&line),
            Msg::Done(request, result) => {
                let planned = result.is_ok()
                    && matches!(
                        request,
                        Request::Plan(_)
                            | Request::Revise(_)
                            | Request::Answer(seam::Answer::Planner(_))
                    );
                let effects = app.on_done(&request, result);
                self.apply(screen, app, effects)?;
                app.after_reload(planned);
            }
        }
        Ok(())
    }

    fn apply(
        &mut self,
        screen: &mut terminal::Screen,
        app: &mut App,
        effects: Vec<Effect>,
    ) -> Result<()> {
        for effect in effects {
            match effect {
                Effect::Engine(request) => {
                    if !self.worker.send(request) {
                        app.busy = None;
                        app.show_error(&Error::internal("the session's worker stopped"));
                    }
                }
                Effect::Stop => self.worker.stop.store(true, Ordering::SeqCst),
                Effect::Edit => self.edit(screen, app)?,
                Effect::SaveMode => match mode::save(self.store, app.mode) {
                    Ok(()) => app.mode_unsaved = false,
                    Err(err) => app.show_error(&err),
                },
                Effect::Reload => self.reload(app),
                Effect::Quit => {
                    self.worker.stop.store(true, Ordering::SeqCst);
                    app.quit = true;
                }
            }
        }
        Ok(())
    }

    /// Reads the draft and the task again; when the worker is idle, first marks what went
    /// stale (a person's edit to a done step's file shows as `[~]` at once, as `tick watch`
    /// marks it; during a run the runner does that itself).
    fn reload(&mut self, app: &mut App) {
        if app.busy.is_none() {
            match self.engine.refresh() {
                Ok(()) => self.refresh_error = None,
                Err(err) => {
                    if self.refresh_error.as_deref() != Some(err.message.as_str()) {
                        app.show_error(&err);
                    }
                    self.refresh_error = Some(err.message);
                }
            }
        }
        app.set_snapshot(self.engine.status());
    }

    /// In a debug build with `TICK_TEST_SESSION_PANIC=1`, Enter on the line `panic` panics on
    /// the UI thread: the test that the terminal is restored on a panic. Release builds do
    /// not have it.
    #[cfg(debug_assertions)]
    fn panic_for_tests(&self, app: &App, key: event::KeyEvent) {
        if key.code == event::KeyCode::Enter
            && app.input.text() == "panic"
            && self.env.var(PANIC_FOR_TESTS) == Some("1")
        {
            panic!("a panic the tests asked for");
        }
    }

    /// The review menu's `e`: the draft in the person's editor, checked when it closes, and
    /// back to the menu (a parse error is shown; `e` opens the editor again).
    fn edit(&mut self, screen: &mut terminal::Screen, app: &mut App) -> Result<()> {
        let path = self.engine.draft_file();
        screen.suspend();
        let opened = crate::editor::open(self.env, &path, &self.store.rel(&path));
        // Said while the terminal is the editor's still, as `tick edit` says it.
        if let Ok(closed) = &opened {
            self.ui.editor_closed(closed);
        }
        screen.resume()?;
        if let Err(err) = opened {
            app.show_error(&err);
        } else {
            match self.engine.check_draft() {
                Ok(()) => app.timeline.push(timeline::Entry::Note(
                    "the edited draft is valid".to_owned(),
                )),
                Err(err) => {
                    app.show_error(&err.hint("press `e` to edit it again"));
                }
            }
        }
        app.set_snapshot(self.engine.status());
        if app.snapshot.draft.is_some() && app.busy.is_none() {
            app.prompt = Some(Prompt::Review);
        }
        Ok(())
    }
}
