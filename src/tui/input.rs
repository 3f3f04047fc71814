//! The input box: editing keys over text that may hold several lines (a paste keeps its
//! newlines; Shift+Enter or Alt+Enter adds one), the slash commands and their parsing, and
//! how the text is laid out in a box of a given width. Pure: no terminal, no engine.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::plan::StepId;

use super::seam::{Contract, Selection};

/// Every slash command, with its one-line help, in the order `/help` lists them.
pub const COMMANDS: [(&str, &str); 15] = [
    ("/plan", "[goal]  switch to PLAN mode; with a goal, plan it"),
    ("/build", "switch to BUILD mode"),
    ("/status", "the task's phase, progress and next action"),
    (
        "/approve",
        "[--allow-deviation] [--max-files N] [--commit-steps]  approve the draft",
    ),
    ("/revise", "<feedback>  ask the planner to revise the draft"),
    ("/discard", "throw the draft away (asks first)"),
    (
        "/run",
        "[S3|N]  run the task: all steps, one step, or N steps",
    ),
    ("/stop", "stop the run at the next safe point"),
    ("/answer", "<S2> <text>  answer a blocked step's question"),
    ("/diff", "[S3]  the changes a step made"),
    (
        "/undo",
        "[S3]  put back what a step changed (the last done step without an id)",
    ),
    (
        "/show",
        "the whole plan: every step's files, verify, done-when and risk",
    ),
    ("/edit", "open the draft in $EDITOR"),
    ("/help", "keys and commands"),
    ("/quit", "leave the session"),
];

/// Whether `key` starts a new line rather than sending: Shift+Enter (reported by terminals
/// that disambiguate it), Alt+Enter, or Ctrl-J (a line feed, which every terminal sends).
pub fn is_newline(key: KeyEvent) -> bool {
    match key.code {
        KeyCode::Enter => key
            .modifiers
            .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT),
        KeyCode::Char('j') => key.modifiers == KeyModifiers::CONTROL,
        _ => false,
    }
}

/// A line the person entered, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Not a command: a goal, feedback, an answer, or "continue".
    Message(String),
    Plan(Option<String>),
    Build,
    Status,
    /// `None`: ask the contract's questions first.
    Approve(Option<Contract>),
    Revise(String),
    Discard,
    Run(Selection),
    Stop,
    Answer {
        step: StepId,
        text: String,
    },
    Diff(Option<StepId>),
    /// `None`: the step done last.
    Undo(Option<StepId>),
    Show,
    Edit,
    Help,
    Quit,
    Empty,
}

/// Parses an entered line; `Err` is the message to show for a malformed command.
pub fn parse(line: &str) -> Result<Line, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(Line::Empty);
    }
    let Some(command) = line.strip_prefix('/') else {
        return Ok(Line::Message(line.to_owned()));
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(name, rest)| (name, rest.trim()));
    let rest_opt = (!rest.is_empty()).then(|| rest.to_owned());
    Ok(match name {
        "plan" => Line::Plan(rest_opt),
        "build" | "code" => Line::Build,
        "status" => Line::Status,
        "approve" => Line::Approve(if rest.is_empty() {
            None
        } else {
            Some(contract(rest)?)
        }),
        "revise" => {
            Line::Revise(rest_opt.ok_or("say what should change: `/revise split S2 in two`")?)
        }
        "discard" => Line::Discard,
        "run" => Line::Run(selection(rest)?),
        "stop" => Line::Stop,
        "answer" => {
            let (step, text) = rest
                .split_once(char::is_whitespace)
                .ok_or("`/answer S2 your answer`")?;
            Line::Answer {
                step: step_id(step)?,
                text: text.trim().to_owned(),
            }
        }
        "diff" => Line::Diff(if rest.is_empty() {
            None
        } else {
            Some(step_id(rest)?)
        }),
        "undo" => Line::Undo(if rest.is_empty() {
            None
        } else {
            Some(step_id(rest)?)
        }),
        "show" | "plan-view" => Line::Show,
        "edit" => Line::Edit,
        "help" | "?" => Line::Help,
        "quit" | "exit" | "q" => Line::Quit,
        other => return Err(format!("unknown command `/{other}`; `/help` lists them")),
    })
}

fn step_id(text: &str) -> Result<StepId, String> {
    text.parse::<StepId>()
        .map_err(|_| format!("`{text}` is not a step id like `S3`"))
}

fn selection(rest: &str) -> Result<Selection, String> {
    if rest.is_empty() {
        return Ok(Selection::All);
    }
    if let Ok(n) = rest.parse::<usize>() {
        return if n == 0 {
            Err("`/run N` runs N steps; N is at least 1".to_owned())
        } else {
            Ok(Selection::Steps(n))
        };
    }
    step_id(rest).map(Selection::Step)
}

fn contract(rest: &str) -> Result<Contract, String> {
    let mut contract = Contract::default();
    let mut words = rest.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "--allow-deviation" => contract.allow_deviation = true,
            "--commit-steps" => contract.commit_steps = true,
            "--max-files" => {
                let n = words
                    .next()
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|n| *n > 0)
                    .ok_or("`--max-files` takes a positive number")?;
                contract.max_files_changed = Some(n);
            }
            other => {
                return Err(format!(
                    "`/approve` knows `--allow-deviation`, `--max-files N` and `--commit-steps`, not `{other}`"
                ));
            }
        }
    }
    Ok(contract)
}

/// The text being typed and the cursor in it (a char index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    text: String,
    cursor: usize,
}

impl Input {
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, in characters from the start.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    fn byte_at(&self, chars: usize) -> usize {
        self.text
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(i, _)| i)
    }

    pub fn insert(&mut self, c: char) {
        let at = self.byte_at(self.cursor);
        self.text.insert(at, c);
        self.cursor += 1;
    }

    /// Shift+Enter, Alt+Enter or Ctrl+J: a new line in the text, not a send.
    pub fn newline(&mut self) {
        self.insert('\n');
    }

    /// A bracketed paste: inserted as one piece at the cursor, its line breaks kept (as
    /// `\n`, whatever the terminal sent), tabs as four spaces, other control characters
    /// dropped (they would move the cursor of the terminal that draws them).
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        // Built first and inserted once: a long paste is not a character-at-a-time insert.
        let mut clean = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '\n' => clean.push('\n'),
                '\t' => clean.push_str("    "),
                c if c.is_control() => {}
                c => clean.push(c),
            }
        }
        let at = self.byte_at(self.cursor);
        self.text.insert_str(at, &clean);
        self.cursor += clean.chars().count();
    }

    /// Moves the cursor one line up (`up`) or down, keeping its column where the other
    /// line is long enough. `false` when there is no line there (the key may scroll the
    /// timeline instead).
    pub fn vertical(&mut self, up: bool) -> bool {
        let lines: Vec<usize> = self.text.split('\n').map(|l| l.chars().count()).collect();
        let (row, col) = self.row_col();
        let target = if up {
            match row.checked_sub(1) {
                Some(row) => row,
                None => return false,
            }
        } else if row + 1 < lines.len() {
            row + 1
        } else {
            return false;
        };
        let start: usize = lines[..target].iter().map(|n| n + 1).sum();
        self.cursor = start + col.min(lines[target]);
        true
    }

    /// The cursor's line and column in the text (its own lines, not wrapped).
    fn row_col(&self) -> (usize, usize) {
        let before: String = self.text.chars().take(self.cursor).collect();
        let row = before.matches('\n').count();
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        (row, col)
    }

    /// Whether the text has more than one line.
    pub fn multiline(&self) -> bool {
        self.text.contains('\n')
    }

    /// The text laid out in a box `width` characters wide: its lines, each cut into rows of
    /// at most `width` characters, and the cursor's row and column among them.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(1);
        let (line, col) = self.row_col();
        let mut rows = Vec::new();
        let mut cursor = (0, 0);
        for (n, text) in self.text.split('\n').enumerate() {
            let chars: Vec<char> = text.chars().collect();
            let first = rows.len();
            if chars.is_empty() {
                rows.push(String::new());
            }
            for chunk in chars.chunks(width) {
                rows.push(chunk.iter().collect());
            }
            if n == line {
                // A cursor at the end of a full row goes to the start of the next one.
                cursor = (first + col / width, col % width);
                if cursor.0 >= rows.len() {
                    rows.push(String::new());
                }
            }
        }
        (rows, cursor)
    }

    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.cursor -= 1;
            let at = self.byte_at(self.cursor);
            self.text.remove(at);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.chars().count() {
            let at = self.byte_at(self.cursor);
            self.text.remove(at);
        }
    }

    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.text.chars().count());
    }

    /// To the start of the cursor's line.
    pub fn home(&mut self) {
        let (_, col) = self.row_col();
        self.cursor -= col;
    }

    /// To the end of the cursor's line.
    pub fn end(&mut self) {
        let rest = self
            .text
            .chars()
            .skip(self.cursor)
            .take_while(|c| *c != '\n')
            .count();
        self.cursor += rest;
    }

    /// Deletes the word before the cursor (Ctrl-W).
    pub fn delete_word(&mut self) {
        while self.cursor > 0 && self.char_before().is_some_and(char::is_whitespace) {
            self.backspace();
        }
        while self.cursor > 0 && self.char_before().is_some_and(|c| !c.is_whitespace()) {
            self.backspace();
        }
    }

    fn char_before(&self) -> Option<char> {
        self.text.chars().nth(self.cursor.checked_sub(1)?)
    }

    /// Takes the line, leaving the input empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    pub fn set(&mut self, text: &str) {
        text.clone_into(&mut self.text);
        self.cursor = self.text.chars().count();
    }

    /// Whether Tab completes here: the line is a command name being typed.
    pub fn completing(&self) -> bool {
        self.text.starts_with('/') && !self.text.contains(char::is_whitespace)
    }

    /// Completes the command name being typed: one match is completed (with a space after
    /// it), several are extended to their common prefix. Returns the matches.
    pub fn complete(&mut self) -> Vec<&'static str> {
        let typed = self.text.as_str();
        let matches: Vec<&'static str> = COMMANDS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| name.starts_with(typed))
            .collect();
        match matches.as_slice() {
            [] => {}
            [one] => self.set(&format!("{one} ")),
            [first, rest @ ..] => {
                let mut common = first.len();
                for other in rest {
                    common = common.min(
                        first
                            .bytes()
                            .zip(other.bytes())
                            .take_while(|(a, b)| a == b)
                            .count(),
                    );
                }
                self.set(&first[..common]);
            }
        }
        matches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(
            parse("fix the login").unwrap(),
            Line::Message("fix the login".into())
        );
        assert_eq!(parse("  ").unwrap(), Line::Empty);
        assert_eq!(parse("/plan").unwrap(), Line::Plan(None));
        assert_eq!(
            parse("/plan add a flag").unwrap(),
            Line::Plan(Some("add a flag".into()))
        );
        assert_eq!(parse("/run").unwrap(), Line::Run(Selection::All));
        assert_eq!(
            parse("/run S3").unwrap(),
            Line::Run(Selection::Step("S3".parse().unwrap()))
        );
        assert_eq!(parse("/run 2").unwrap(), Line::Run(Selection::Steps(2)));
        assert!(parse("/run 0").is_err());
        assert!(parse("/run banana").is_err());
        assert_eq!(
            parse("/approve --max-files 5 --commit-steps").unwrap(),
            Line::Approve(Some(Contract {
                allow_deviation: false,
                max_files_changed: Some(5),
                commit_steps: true
            }))
        );
        assert_eq!(parse("/approve").unwrap(), Line::Approve(None));
        assert!(parse("/approve --max-files x").is_err());
        assert!(parse("/revise").is_err());
        assert_eq!(
            parse("/answer S2 keep both").unwrap(),
            Line::Answer {
                step: "S2".parse().unwrap(),
                text: "keep both".into()
            }
        );
        assert_eq!(parse("/diff").unwrap(), Line::Diff(None));
        assert_eq!(
            parse("/diff S1").unwrap(),
            Line::Diff(Some("S1".parse().unwrap()))
        );
        assert_eq!(parse("/undo").unwrap(), Line::Undo(None));
        assert_eq!(
            parse("/undo S2").unwrap(),
            Line::Undo(Some("S2".parse().unwrap()))
        );
        assert!(parse("/undo two").is_err());
        assert_eq!(parse("/show").unwrap(), Line::Show);
        assert_eq!(
            parse("line one\nline two\n").unwrap(),
            Line::Message("line one\nline two".into())
        );
        assert!(parse("/frobnicate").is_err());
        assert_eq!(parse("/quit").unwrap(), Line::Quit);
    }

    #[test]
    fn every_listed_command_parses() {
        for (name, _) in COMMANDS {
            let line = match name {
                "/revise" => "/revise more tests".to_owned(),
                "/answer" => "/answer S1 yes".to_owned(),
                _ => name.to_owned(),
            };
            assert!(parse(&line).is_ok(), "{line}");
        }
    }

    #[test]
    fn tab_completes_command_names() {
        let mut input = Input::default();
        input.set("/ap");
        assert!(input.completing());
        assert_eq!(input.complete(), vec!["/approve"]);
        assert_eq!(input.text(), "/approve ");
        assert!(!input.completing());

        input.set("/d");
        assert_eq!(input.complete(), vec!["/discard", "/diff"]);
        assert_eq!(input.text(), "/di");

        input.set("/zz");
        assert!(input.complete().is_empty());
        assert_eq!(input.text(), "/zz");

        input.set("plain words");
        assert!(!input.completing());
    }

    #[test]
    fn editing_keys_work_on_characters() {
        let mut input = Input::default();
        for c in "héllo wörld".chars() {
            input.insert(c);
        }
        input.left();
        input.backspace();
        assert_eq!(input.text(), "héllo wörd");
        input.home();
        input.delete();
        assert_eq!(input.text(), "éllo wörd");
        input.end();
        input.delete_word();
        assert_eq!(input.text(), "éllo ");
        assert_eq!(input.take(), "éllo ");
        assert!(input.is_empty());
    }

    #[test]
    fn a_paste_keeps_its_lines_and_drops_control_characters() {
        let mut input = Input::default();
        input.insert('>');
        input.paste("first line\r\nsecond\tline\rthird\u{7}\n");
        assert_eq!(input.text(), ">first line\nsecond    line\nthird\n");
        assert!(input.multiline());
        assert_eq!(input.cursor(), input.text().chars().count());
        input.home();
        input.paste("ü");
        assert_eq!(input.text(), ">first line\nsecond    line\nthird\nü");
        // A long paste is one insert, not one per character.
        let long = "x".repeat(200_000);
        let start = std::time::Instant::now();
        input.paste(&long);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn up_and_down_move_between_lines_and_home_end_stay_on_theirs() {
        let mut input = Input::default();
        input.paste("abcdef\nxy\nlonger line");
        assert!(!input.vertical(false), "on the last line already");
        assert!(input.vertical(true));
        assert_eq!(
            input.cursor(),
            "abcdef\nxy".chars().count(),
            "clamped to `xy`"
        );
        input.home();
        assert_eq!(input.cursor(), "abcdef\n".chars().count());
        input.end();
        assert_eq!(input.cursor(), "abcdef\nxy".chars().count());
        assert!(input.vertical(true));
        assert!(!input.vertical(true), "on the first line");
        input.newline();
        assert_eq!(input.text(), "ab\ncdef\nxy\nlonger line");
    }

    #[test]
    fn the_layout_wraps_each_line_and_places_the_cursor() {
        let mut input = Input::default();
        input.paste("abcdefgh\n\nxyz");
        let (rows, cursor) = input.layout(5);
        assert_eq!(rows, vec!["abcde", "fgh", "", "xyz"]);
        assert_eq!(cursor, (3, 3));
        input.set("abcde");
        assert_eq!(
            input.layout(5),
            (vec!["abcde".into(), String::new()], (1, 0))
        );
        input.set("");
        assert_eq!(input.layout(5), (vec![String::new()], (0, 0)));
    }
}
