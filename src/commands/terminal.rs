//! The person at this terminal, as [`Person`]: prompts on stderr through the [`Ui`], answers
//! from stdin. The only place in tick that reads stdin (the sandbox's own plumbing aside).

use std::io::{BufRead as _, Read as _};

use console::{Key, Term};

use crate::person::{Person, question_lines};
use crate::plan::StepId;
use crate::tasks::render;
use crate::tools::Questions;
use crate::ui::Ui;

/// The person at this terminal: prompts on stderr through the [`Ui`], answers from stdin. In
/// a terminal a menu's key is read raw (no Enter needed); otherwise (`TICK_INTERACTIVE=1` and
/// a piped stdin) one line per answer, echoed so the transcript reads.
pub struct Terminal<'a> {
    ui: &'a Ui,
    raw: bool,
}

impl<'a> Terminal<'a> {
    /// `stdin_is_terminal`: read a menu's keys raw.
    pub fn new(ui: &'a Ui, stdin_is_terminal: bool) -> Self {
        Terminal {
            ui,
            raw: stdin_is_terminal,
        }
    }
}

impl Person for Terminal<'_> {
    fn go_on_after_deviation(&mut self, _step: StepId, _files: &[String]) -> bool {
        self.ui.prompt("continue with the next step? [y/N] ");
        read_line().is_some_and(|answer| matches!(answer.trim(), "y" | "Y" | "yes"))
    }

    fn answer_questions(&mut self, questions: &Questions) -> Option<String> {
        let ui = self.ui;
        ui.end_live_text();
        ui.note("the planner asks:");
        let mut answers = String::new();
        for (q, line) in questions.questions.iter().zip(question_lines(questions)) {
            ui.prompt(&format!("{line}\n> "));
            let answer = read_line()?;
            let answer = if answer.trim().is_empty() {
                "(no answer; decide yourself and note it as an assumption)".to_owned()
            } else {
                answer.trim().to_owned()
            };
            answers.push_str(&format!(
                "Q: {}\nA: {answer}\n",
                render::one_line(&q.question)
            ));
        }
        Some(answers)
    }

    fn choose(&mut self, prompt: &str, choices: &[char]) -> Option<char> {
        let ui = self.ui;
        loop {
            ui.prompt(prompt);
            let got = if self.raw {
                match Term::stderr().read_key() {
                    Ok(Key::Char(c)) => {
                        ui.prompt(&format!("{c}\n"));
                        Some(c)
                    }
                    Ok(Key::Enter) => {
                        ui.prompt("\n");
                        None
                    }
                    Ok(Key::CtrlC | Key::Escape) | Err(_) => {
                        ui.prompt("\n");
                        return None;
                    }
                    Ok(_) => None,
                }
            } else {
                let line = read_line()?;
                // A piped answer is not echoed by a terminal: show it, so the transcript reads.
                ui.prompt(&format!("{}\n", line.trim()));
                line.trim().chars().next()
            };
            match got.map(|c| c.to_ascii_lowercase()) {
                Some(c) if choices.contains(&c) => return Some(c),
                Some(c) => ui.warn(&format!("`{c}` is not a choice; `?` lists them")),
                None => ui.note("choose one (there is no default)"),
            }
        }
    }

    fn line(&mut self, prompt: &str) -> Option<String> {
        self.ui.prompt(prompt);
        if self.raw {
            Term::stderr().read_line().ok().map(|l| l.trim().to_owned())
        } else {
            let line = read_line()?.trim().to_owned();
            self.ui.prompt(&format!("{line}\n"));
            Some(line)
        }
    }

    fn yes_no(&mut self, question: &str, default: bool) -> Option<bool> {
        let shown = if default { "[Y/n]" } else { "[y/N]" };
        if self.raw {
            // One key, like the menu it follows: no Enter needed (Enter takes the default).
            let ui = self.ui;
            loop {
                ui.prompt(&format!("{question} {shown} "));
                let (echo, answer) = match Term::stderr().read_key() {
                    Ok(Key::Char('y' | 'Y')) => ("y", Some(true)),
                    Ok(Key::Char('n' | 'N')) => ("n", Some(false)),
                    Ok(Key::Enter) => ("", Some(default)),
                    Ok(Key::CtrlC | Key::Escape) | Err(_) => {
                        ui.prompt("\n");
                        return None;
                    }
                    Ok(_) => ("", None),
                };
                ui.prompt(&format!("{echo}\n"));
                if answer.is_some() {
                    return answer;
                }
                ui.warn("press `y` or `n`");
            }
        }
        loop {
            let answer = self.line(&format!("{question} {shown} "))?;
            match answer.to_ascii_lowercase().as_str() {
                "" => return Some(default),
                "y" | "yes" => return Some(true),
                "n" | "no" => return Some(false),
                other => self.ui.warn(&format!("`{other}` is not `y` or `n`")),
            }
        }
    }
}

/// One line from stdin; `None` when it ended (or cannot be read).
fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

/// All of stdin, for `tick plan --from -` (a plan piped in, not a person's answer; read here
/// so stdin has one reader).
pub fn read_all_stdin() -> std::io::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    Ok(text)
}
