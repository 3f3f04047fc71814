//! The one seam between tick and the person it works for: every question tick may put to
//! them (go on after a deviation? the planner's questions, a choice from a menu such as the
//! review menu, a line of text, yes or no) goes through [`Person`]. The runner and the
//! planning session ask through it and never read stdin; [`Terminal`] is the one
//! implementation that does (and the only place in tick that reads stdin, the sandbox's own
//! plumbing aside); [`Nobody`] answers when no one can be asked. The interactive session
//! will be another implementation, and tests script one.

use std::io::{BufRead as _, Read as _};

use console::{Key, Term};

use crate::plan::StepId;
use crate::tasks::render;
use crate::tools::Questions;
use crate::ui::Ui;

/// Someone tick can ask. Every method has the answer of a person who is not there (no, or
/// `None`), so an implementation says only what it can answer.
pub trait Person {
    /// A step changed files outside its `files` and the approval does not allow that: may
    /// the run go on anyway?
    fn go_on_after_deviation(&mut self, _step: StepId, _files: &[String]) -> bool {
        false
    }

    /// The planner's questions: the answers as text for the model, or `None` when no one can
    /// answer now (the draft then waits for `tick plan --answer`).
    fn answer_questions(&mut self, _questions: &Questions) -> Option<String> {
        None
    }

    /// One of `choices` (lowercase), after `prompt`; asks again until one is chosen. `None`
    /// when the input ended.
    fn choose(&mut self, _prompt: &str, _choices: &[char]) -> Option<char> {
        None
    }

    /// A line of text, trimmed; `None` when the input ended.
    fn line(&mut self, _prompt: &str) -> Option<String> {
        None
    }

    /// Yes or no, with `default` taken on an empty answer; `None` when the input ended.
    fn yes_no(&mut self, _question: &str, _default: bool) -> Option<bool> {
        None
    }
}

/// No one to ask: the run stops for a review, questions make the draft `needs-input`, menus
/// end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nobody;

impl Person for Nobody {}

/// Each question on one line, with why it matters and the options offered: how the draft's
/// `## Open questions` and the terminal show them.
pub fn question_lines(questions: &Questions) -> Vec<String> {
    questions
        .questions
        .iter()
        .map(|q| {
            let mut line = render::one_line(&q.question);
            if let Some(why) = &q.why {
                line.push_str(&format!(" (why: {})", render::one_line(why)));
            }
            if !q.options.is_empty() {
                line.push_str(&format!(" Options: {}.", q.options.join(" / ")));
            }
            line
        })
        .collect()
}

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

/// Whether stdin is a terminal: a person may be there to answer (nothing is read).
pub fn stdin_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal()
}

/// All of stdin, for `tick plan --from -` (a plan piped in, not a person's answer; read here
/// so stdin has one reader).
pub fn read_all_stdin() -> std::io::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{Nobody, Person, question_lines};
    use crate::plan::StepId;
    use crate::tools::Questions;

    #[test]
    fn nobody_answers_nothing() {
        let mut nobody = Nobody;
        assert!(!nobody.go_on_after_deviation(StepId::top(1), &["a".to_owned()]));
        let questions: Questions =
            serde_json::from_value(serde_json::json!({"questions": [{"question": "Which?"}]}))
                .unwrap();
        assert_eq!(nobody.answer_questions(&questions), None);
        assert_eq!(nobody.choose("menu? ", &['a']), None);
        assert_eq!(nobody.line("text? "), None);
        assert_eq!(nobody.yes_no("sure?", true), None);
    }

    #[test]
    fn a_question_reads_on_one_line_with_why_and_options() {
        let questions: Questions = serde_json::from_value(serde_json::json!({"questions": [
            {"question": "Redis\nor the database?", "why": "both exist", "options": ["redis", "database"]},
            {"question": "May the old endpoint go?"}
        ]}))
        .unwrap();
        assert_eq!(
            question_lines(&questions),
            [
                "Redis or the database? (why: both exist) Options: redis / database.",
                "May the old endpoint go?"
            ]
        );
    }
}
