//! What tick takes from the outside world, passed in so tests can fix it: the working
//! directory, the environment variables, whether a person is at the terminal, and the one
//! [`Clock`] every timestamp tick writes comes from.
//!
//! The clock is read when a timestamp is written, never once at start: a long-lived process
//! (the interactive session, `tick watch`, a long `tick run`) stamps each write with the time
//! it happened. `TICK_NOW` (RFC 3339) fixes the clock for reproducible files in tests and demos.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, SubsecRound, TimeDelta, Utc};

use crate::error::{Error, Result};

/// Where time comes from.
#[derive(Debug, Clone)]
pub struct Clock(Source);

#[derive(Debug, Clone)]
enum Source {
    /// The wall clock, read at each call.
    System,
    /// A fixed time that moves only when told to (tests, demos). Clones share it, so advancing
    /// one advances every holder.
    Fixed(Arc<Mutex<DateTime<Utc>>>),
}

impl Clock {
    /// The wall clock.
    pub fn system() -> Self {
        Clock(Source::System)
    }

    /// A clock that stays at `at` until [`Clock::advance`] moves it.
    pub fn fixed(at: DateTime<Utc>) -> Self {
        Clock(Source::Fixed(Arc::new(Mutex::new(at))))
    }

    /// Whether this clock is fixed (a test's or a demo's).
    pub fn is_fixed(&self) -> bool {
        matches!(self.0, Source::Fixed(_))
    }

    /// The time now, to the second: what TODO.md, state.yaml and the task's files show.
    pub fn now(&self) -> DateTime<Utc> {
        self.precise().trunc_subsecs(0)
    }

    /// The time now, to the clock's full precision: the times the runner records while a
    /// step works (its journal and command records).
    pub fn precise(&self) -> DateTime<Utc> {
        match &self.0 {
            Source::System => Utc::now(),
            Source::Fixed(at) => *at.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Moves a fixed clock on by `by`; the system clock moves by itself, so this leaves it be.
    pub fn advance(&self, by: TimeDelta) {
        if let Source::Fixed(at) = &self.0 {
            let mut at = at.lock().unwrap_or_else(PoisonError::into_inner);
            *at += by;
        }
    }
}

/// What a command gets from the outside world, passed in so tests can fix it.
#[derive(Debug, Clone)]
pub struct Env {
    pub cwd: PathBuf,
    /// Where every timestamp tick writes comes from; read it when writing.
    pub clock: Clock,
    pub vars: BTreeMap<String, String>,
    pub stdin_is_terminal: bool,
    pub stderr_is_terminal: bool,
    /// Whether tick may ask questions and show menus: a person at a terminal.
    pub interactive: bool,
}

impl Env {
    /// The outside world of this process, read once; the clock is read at each use.
    /// `TICK_NOW` (RFC 3339) fixes the clock, `TICK_INTERACTIVE=1|0` overrides the terminal
    /// check (for scripted sessions and tests).
    pub fn from_process() -> Result<Env> {
        let vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let clock = clock_from(vars.get("TICK_NOW").map(String::as_str))?;
        let cwd = std::env::current_dir().map_err(|err| {
            Error::internal(format!("could not read the current directory: {err}"))
        })?;
        let stdin_is_terminal = stdin_is_terminal();
        let stderr_is_terminal = std::io::stderr().is_terminal();
        let interactive = match vars.get("TICK_INTERACTIVE").map(String::as_str) {
            Some("1" | "true" | "yes") => true,
            Some("0" | "false" | "no") => false,
            _ => stdin_is_terminal && stderr_is_terminal,
        };
        Ok(Env {
            cwd,
            clock,
            vars,
            stdin_is_terminal,
            stderr_is_terminal,
            interactive,
        })
    }

    /// An environment with `vars` only, in `cwd`, with a fixed clock and nobody at a terminal:
    /// for tests.
    pub fn fixed(cwd: PathBuf, vars: BTreeMap<String, String>, at: DateTime<Utc>) -> Env {
        Env {
            cwd,
            clock: Clock::fixed(at),
            vars,
            stdin_is_terminal: false,
            stderr_is_terminal: false,
            interactive: false,
        }
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The time now, to the second (see [`Clock::now`]).
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }
}

/// The clock `TICK_NOW` asks for: fixed at its time (to the second), or the system's when it
/// is unset or empty.
fn clock_from(tick_now: Option<&str>) -> Result<Clock> {
    match tick_now.filter(|v| !v.is_empty()) {
        Some(text) => {
            let at = DateTime::parse_from_rfc3339(text).map_err(|err| {
                Error::input(format!("`TICK_NOW` is not an RFC 3339 time: {err}"))
                    .hint("like `2026-11-30T14:30:12Z`, or unset it")
            })?;
            Ok(Clock::fixed(at.with_timezone(&Utc).trunc_subsecs(0)))
        }
        None => Ok(Clock::system()),
    }
}

/// Whether stdin is a terminal: a person may be there to answer (nothing is read).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// The person's own config directory (`$XDG_CONFIG_HOME/tick`, else `~/.config/tick`): where
/// their template and prompt overrides are (`templates/`, `prompts/`).
pub fn user_config_dir(env: &Env) -> Option<PathBuf> {
    env.var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            env.var("HOME")
                .map(|home| std::path::Path::new(home).join(".config"))
        })
        .map(|base| base.join("tick"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_fixed_clock_moves_only_when_advanced_and_every_clone_sees_it() {
        let clock = Clock::fixed(at("2026-11-30T14:30:12Z"));
        let held = clock.clone();
        assert_eq!(clock.now(), at("2026-11-30T14:30:12Z"));
        clock.advance(TimeDelta::hours(1));
        assert_eq!(held.now(), at("2026-11-30T15:30:12Z"));
    }

    #[test]
    fn the_system_clock_is_read_at_each_call() {
        let clock = Clock::system();
        let first = clock.precise();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(clock.precise() > first);
        assert_eq!(clock.now().timestamp_subsec_nanos(), 0);
    }

    #[test]
    fn tick_now_fixes_the_clock_to_the_second() {
        let clock = clock_from(Some("2026-11-30T14:30:12.75+01:00")).unwrap();
        assert!(clock.is_fixed());
        assert_eq!(clock.precise(), at("2026-11-30T13:30:12Z"));
        assert!(!clock_from(Some("")).unwrap().is_fixed());
        assert!(!clock_from(None).unwrap().is_fixed());
        let err = clock_from(Some("yesterday")).unwrap_err();
        assert!(
            err.message.contains("`TICK_NOW` is not an RFC 3339 time"),
            "{err:?}"
        );
    }
}
