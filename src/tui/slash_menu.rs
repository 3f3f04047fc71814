//! The menu of slash commands that opens as a `/` is typed: the commands whose names start
//! with what is typed, one of them chosen (Up/Down), Tab or Enter to take it. Which commands
//! match and what choosing one does are pure functions; the keys are the [`App`]'s.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::app::{App, Effect, Prompt};
use super::input::COMMANDS;

/// The commands that mean nothing without their argument: choosing one fills the input
/// and waits for the rest.
const NEEDS_ARGUMENT: [&str; 2] = ["/revise", "/answer"];

/// The commands a command name being typed matches, with their help; empty when the input
/// is not a command name being typed.
pub fn matches(typed: &str) -> Vec<(&'static str, &'static str)> {
    if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .copied()
        .filter(|(name, _)| name.starts_with(typed))
        .collect()
}

/// The menu's choice (an index into [`matches`]), kept inside the list as it shrinks.
#[derive(Debug, Default)]
pub struct SlashMenu {
    chosen: usize,
}

/// What taking a command does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The input becomes this (the name and a space): the command needs more.
    Fill(String),
    /// The command is sent as it is.
    Send(String),
}

impl SlashMenu {
    /// The chosen entry among `count`.
    pub fn chosen(&self, count: usize) -> usize {
        self.chosen.min(count.saturating_sub(1))
    }

    pub fn reset(&mut self) {
        self.chosen = 0;
    }

    fn step(&mut self, count: usize, down: bool) {
        let chosen = self.chosen(count);
        self.chosen = match (down, chosen) {
            (true, n) if n + 1 < count => n + 1,
            (true, _) => 0,
            (false, 0) => count.saturating_sub(1),
            (false, n) => n - 1,
        };
    }
}

/// Taking `name` with Tab (`send` false) or Enter.
pub fn take(name: &str, send: bool) -> Taken {
    if send && !NEEDS_ARGUMENT.contains(&name) {
        Taken::Send(name.to_owned())
    } else {
        Taken::Fill(format!("{name} "))
    }
}

impl App {
    /// Whether the menu is open: a command name is being typed where commands are taken.
    pub fn slash_menu_open(&self) -> bool {
        matches!(self.prompt, None | Some(Prompt::Review)) && !matches(self.input.text()).is_empty()
    }

    /// The keys the open menu takes; `None` when it is closed or the key is not one of its.
    pub(super) fn slash_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        if !self.slash_menu_open() {
            self.slash.reset();
            return None;
        }
        let found = matches(self.input.text());
        let chosen = found[self.slash.chosen(found.len())].0;
        match key.code {
            KeyCode::Up => self.slash.step(found.len(), false),
            KeyCode::Down => self.slash.step(found.len(), true),
            KeyCode::Tab | KeyCode::Enter => {
                self.slash.reset();
                match take(chosen, key.code == KeyCode::Enter) {
                    Taken::Fill(text) => self.input.set(&text),
                    Taken::Send(line) => {
                        self.input.take();
                        return Some(self.submit(&line));
                    }
                }
            }
            _ => {
                // Typing changes the list; the choice starts over at its top.
                self.slash.reset();
                return None;
            }
        }
        Some(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::KeyModifiers;

    use super::*;
    use crate::tui::app::Request;
    use crate::tui::mode::Mode;
    use crate::tui::seam::Snapshot;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_menu_lists_what_the_typed_name_matches() {
        assert_eq!(matches("/").len(), COMMANDS.len());
        let names: Vec<&str> = matches("/d").iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["/discard", "/diff"]);
        assert!(matches("/diff S1").is_empty());
        assert!(matches("plain").is_empty());
        assert!(matches("/zz").is_empty());
    }

    #[test]
    fn arrows_choose_and_tab_or_enter_take() {
        let mut app = App::new(Mode::Plan, Snapshot::default(), false);
        for c in "/d".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert!(app.slash_menu_open());
        app.on_key(key(KeyCode::Down));
        assert_eq!(app.slash.chosen(2), 1);
        app.on_key(key(KeyCode::Tab));
        assert_eq!(app.input.text(), "/diff ");
        assert!(!app.slash_menu_open());
        assert_eq!(app.mode, Mode::Plan, "Tab took the command, not the mode");

        // Up from the top wraps to the bottom; Enter sends a command that needs nothing.
        app.input.take();
        for c in "/s".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        let names: Vec<&str> = matches("/s").iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["/status", "/stop", "/show"]);
        app.on_key(key(KeyCode::Up));
        assert_eq!(app.slash.chosen(3), 2);
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        assert!(app.plan_view.is_none(), "no plan to show");
        assert!(app.input.is_empty());

        // Enter on a command that needs its argument fills it in and waits.
        for c in "/rev".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert!(app.on_key(key(KeyCode::Enter)).is_empty());
        assert_eq!(app.input.text(), "/revise ");
        for c in "more tests".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            vec![Effect::Engine(Request::Revise("more tests".into()))]
        );
    }
}
