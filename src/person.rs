//! The one seam between tick and the person it works for: every question tick may put to
//! them (go on after a deviation? the planner's questions, a choice from a menu such as the
//! review menu, a line of text, yes or no) goes through [`Person`]. The runner and the
//! planning session ask through it and never read stdin. The person at a terminal is
//! `commands::terminal::Terminal` (the only place in tick that reads stdin, the sandbox's own
//! plumbing aside), the session's is the channel person of `tui::worker`; [`Nobody`] answers
//! when no one can be asked, and tests script one. This floor imports nothing that prints.

use crate::plan::StepId;
use crate::tasks::render;
use crate::tools::Questions;

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
