//! The terminal while the session owns it: raw mode and the alternate screen, drawn through
//! a duplicate of the original stdout, and the process's stdout and stderr turned into a pipe.
//! Nothing tick says reaches the session that way (the engine's events and outcomes come over
//! the worker's channel as values); the pipe is only a guard, so that a stray print never
//! tears the screen: what it catches is shown in the timeline as unexpected output.
//!
//! Whatever happens — a normal end, an error, a panic, a signal — [`restore`] puts everything
//! back: raw mode off, the main screen, the cursor shown, stdout and stderr the terminal
//! again. A [`Screen`] restores when dropped, and a panic hook restores before the panic
//! message is printed (a panic of the worker thread is caught there instead, and shown as an
//! error in the timeline).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, Once, PoisonError};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::style::Print;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

use crate::error::{Error, Result};

/// What [`restore`] needs, kept where the panic hook can reach it.
struct Saved {
    /// The original stdout and stderr.
    stdout: OwnedFd,
    stderr: OwnedFd,
    /// Whether the session holds the terminal now.
    active: bool,
    /// The thread that draws. A panic there ends the session, so the hook restores the
    /// terminal first; a panic on another thread (the worker) is reported in the timeline
    /// and the session goes on.
    ui_thread: std::thread::ThreadId,
}

static SAVED: Mutex<Option<Saved>> = Mutex::new(None);
static PANIC_HOOK: Once = Once::new();

/// The session's screen; restores the terminal when dropped.
pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<File>>,
    /// The write end of the capture pipe, put on stdout and stderr again after a suspend.
    capture: OwnedFd,
}

fn failed(what: &str, err: impl std::fmt::Display) -> Error {
    Error::internal(format!("could not {what}: {err}"))
        .hint("the terminal was restored; `tick status` and the other subcommands work without the session")
}

/// Takes over the terminal. `on_output` gets each line something wrote to stdout or stderr
/// while the session runs (nothing should), on a thread of its own.
pub fn take(on_output: impl Fn(String) + Send + 'static) -> Result<Screen> {
    let stdout = nix::unistd::dup(std::io::stdout()).map_err(|e| failed("copy stdout", e))?;
    let stderr = nix::unistd::dup(std::io::stderr()).map_err(|e| failed("copy stderr", e))?;
    let drawing = File::from(stdout.try_clone().map_err(|e| failed("copy stdout", e))?);
    let (reader, writer) = std::io::pipe().map_err(|e| failed("make a pipe", e))?;
    let capture = OwnedFd::from(writer);
    std::thread::Builder::new()
        .name("tick-session-output".to_owned())
        .spawn(move || {
            for line in BufReader::new(reader).lines() {
                match line {
                    Ok(line) => on_output(line),
                    Err(_) => break,
                }
            }
        })
        .map_err(|e| failed("start the output thread", e))?;
    *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = Some(Saved {
        stdout,
        stderr,
        active: false,
        ui_thread: std::thread::current().id(),
    });
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_ui_thread = SAVED
                .try_lock()
                .ok()
                .and_then(|saved| saved.as_ref().map(|s| s.ui_thread))
                .is_none_or(|ui| ui == std::thread::current().id());
            if on_ui_thread {
                restore();
            }
            previous(info);
        }));
    });
    watch_for_hang_up().map_err(|e| failed("start the terminal's watch", e))?;
    let terminal =
        Terminal::new(CrosstermBackend::new(drawing)).map_err(|e| failed("use the terminal", e))?;
    let mut screen = Screen { terminal, capture };
    screen.resume()?;
    Ok(screen)
}

/// Whether the session's terminal is still there. A closed or hung-up terminal is no
/// terminal any more (its reads end, and asking for its settings fails), and no SIGHUP need
/// say so: tick is not always the terminal's session leader.
pub fn present() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal()
}

/// What the terminal has for the session after a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Keys (or other input) to read.
    Ready,
    /// Nothing came in the time.
    Quiet,
    /// The terminal went away.
    Gone,
}

/// Waits up to `timeout` for input on the terminal. Asked before crossterm is: on a terminal
/// that was closed crossterm reads an endless end of input and never returns, one core busy.
pub fn wait_for_input(timeout: std::time::Duration) -> Input {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    if !present() {
        return Input::Gone;
    }
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    let got = match poll(&mut fds, timeout) {
        Ok(_) => fds[0].revents().unwrap_or(PollFlags::empty()),
        Err(nix::errno::Errno::EINTR) => return Input::Quiet,
        Err(_) => return Input::Gone,
    };
    if got.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) || !present() {
        Input::Gone
    } else if got.contains(PollFlags::POLLIN) {
        Input::Ready
    } else {
        Input::Quiet
    }
}

/// The last resort when the terminal goes away while crossterm reads it (a window of
/// microseconds the loop cannot close): a thread that sees the terminal gone for longer
/// than the session takes to end by itself restores what it can and ends the process.
fn watch_for_hang_up() -> std::io::Result<()> {
    const GRACE: std::time::Duration = std::time::Duration::from_secs(2);
    std::thread::Builder::new()
        .name("tick-session-hangup".to_owned())
        .spawn(|| {
            while present() {
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            std::thread::sleep(GRACE);
            restore();
            std::process::exit(129);
        })
        .map(drop)
}

impl Screen {
    /// Hands the terminal back (for the person's editor); [`Screen::resume`] takes it again.
    pub fn suspend(&mut self) {
        restore();
    }

    /// Takes the terminal (again): output captured, raw mode, the alternate screen.
    pub fn resume(&mut self) -> Result<()> {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        nix::unistd::dup2_stdout(&self.capture).map_err(|e| failed("capture stdout", e))?;
        nix::unistd::dup2_stderr(&self.capture).map_err(|e| failed("capture stderr", e))?;
        if let Some(saved) = SAVED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            saved.active = true;
        }
        // A paste arrives as one piece (bracketed paste); Shift+Enter is told from Enter where
        // the terminal can (the keyboard protocol's first level, ignored elsewhere); the
        // mouse wheel sends Up/Down in the alternate screen (alternate scroll mode), so the
        // timeline scrolls without taking the mouse, and selecting text works as always.
        let entered = enable_raw_mode().and_then(|()| {
            execute!(
                self.terminal.backend_mut(),
                EnterAlternateScreen,
                EnableBracketedPaste,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
                Print(ALTERNATE_SCROLL_ON)
            )
        });
        if let Err(err) = entered {
            restore();
            return Err(failed("set up the terminal", err));
        }
        // A full redraw on the fresh screen. (`Terminal::clear` would ask the terminal where
        // its cursor is and wait for the answer; resizing to the same size clears without.)
        let size = self
            .terminal
            .size()
            .map_err(|e| failed("read the terminal's size", e))?;
        self.terminal
            .resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
            .map_err(|e| failed("draw on the terminal", e))?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
        *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The wheel as Up/Down keys while the alternate screen is shown (xterm's mode 1007).
const ALTERNATE_SCROLL_ON: &str = "\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &str = "\x1b[?1007l";

/// Puts the terminal back as the session found it. Safe to call at any time, any number of
/// times, from any thread (the panic hook calls it).
pub fn restore() {
    // A panic while the lock is held must not hang the hook: then there is nothing to do.
    let mut guard = match SAVED.try_lock() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let Some(saved) = guard.as_mut() else {
        return;
    };
    if !saved.active {
        return;
    }
    saved.active = false;
    let _ = disable_raw_mode();
    if let Ok(fd) = saved.stdout.try_clone() {
        let mut out = File::from(fd);
        let _ = execute!(
            out,
            PopKeyboardEnhancementFlags,
            DisableBracketedPaste,
            Print(ALTERNATE_SCROLL_OFF),
            LeaveAlternateScreen,
            Show
        );
        let _ = out.flush();
    }
    let _ = nix::unistd::dup2_stdout(&saved.stdout);
    let _ = nix::unistd::dup2_stderr(&saved.stderr);
}
