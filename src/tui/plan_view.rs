//! The plan view: the whole plan the panel shows (the draft under review, or the task), every
//! step with its files, verify commands, done-when, risk and dependencies, at any width and
//! scrollable. Opened with `p` in the review menu or `/show`; Esc or `q` closes it (back to
//! the review menu, if it was open).

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::plan::Phase;

use super::app::{App, Effect};
use super::panel;
use super::render::wrap;
use super::scroll::Scroll;
use super::seam::PlanView;

impl App {
    /// `/show` and the review menu's `p`.
    pub fn open_plan_view(&mut self) {
        if self.shown().is_none() {
            self.note("no draft and no task yet; type a goal in PLAN mode");
            return;
        }
        self.plan_view = Some(Scroll::default());
    }

    /// The keys the open view takes (all of them but Ctrl-C); `None` when it is closed.
    pub(super) fn plan_view_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        let scroll = self.plan_view.as_mut()?;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q' | 'p') => self.plan_view = None,
            KeyCode::Down | KeyCode::Char('j') => scroll.more(1),
            KeyCode::Up | KeyCode::Char('k') => scroll.less(1),
            KeyCode::PageDown | KeyCode::Char(' ') => scroll.page_more(),
            KeyCode::PageUp => scroll.page_less(),
            KeyCode::End | KeyCode::Char('G') => scroll.to_max(),
            KeyCode::Home | KeyCode::Char('g') => scroll.reset(),
            _ => {}
        }
        Some(Vec::new())
    }
}

/// The plan as lines of at most `width` characters.
pub fn lines(view: &PlanView, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let phase = view.phase.map_or("unreadable", Phase::as_str);
    let (done, total) = panel::progress(view);
    let what = view
        .id
        .as_ref()
        .map(|id| format!("task `{id}`, "))
        .unwrap_or_default();
    out.extend(wrap(
        &format!("{} — {what}{phase}, {done}/{total} done", view.title),
        width,
        "  ",
    ));
    if let Some(goal) = &view.goal {
        for (n, line) in goal.lines().enumerate() {
            let lead = if n == 0 { "goal: " } else { "      " };
            out.extend(wrap(&format!("{lead}{line}"), width, "      "));
        }
    }
    if let Some(problem) = &view.problem {
        out.extend(wrap(&format!("problem: {problem}"), width, "  "));
    }
    if view.plan_changed {
        out.extend(wrap("PLAN.md changed since its approval", width, "  "));
    }
    for step in &view.steps {
        out.push(String::new());
        let indent = if step.sub { "  " } else { "" };
        out.extend(wrap(
            &format!(
                "{indent}{} {} {}",
                panel::marker(step.status),
                panel::step_id(step),
                step.title
            ),
            width,
            &format!("{indent}    "),
        ));
        let detail = format!("{indent}    ");
        let hang = format!("{detail}           ");
        let mut field = |name: &str, value: &str| {
            out.extend(wrap(&format!("{detail}{name:<10} {value}"), width, &hang));
        };
        if !step.files.is_empty() {
            field("files:", &step.files.join(", "));
        }
        if step.verify.is_empty() {
            field("verify:", "(none: the model's claim is the evidence)");
        }
        for command in &step.verify {
            field("verify:", &format!("`{command}`"));
        }
        if let Some(done_when) = &step.done_when {
            field("done when:", done_when);
        }
        if let Some(risk) = &step.risk {
            field("risk:", risk);
        }
        if !step.depends.is_empty() {
            let ids: Vec<String> = step.depends.iter().map(ToString::to_string).collect();
            field("depends:", &ids.join(", "));
        }
        if let Some(reason) = &step.blocked {
            field("blocked:", reason);
        }
        if let Some(reason) = &step.stale {
            field("stale:", reason);
        }
        if let Some(answer) = &step.answer {
            field("answer:", answer);
        }
    }
    if !view.questions.is_empty() {
        out.push(String::new());
        out.push("open questions:".to_owned());
        for question in &view.questions {
            out.extend(wrap(&format!("  ? {question}"), width, "    "));
        }
    }
    out
}

/// Draws the open view over `area`.
pub fn draw(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let (Some(scroll), Some(view)) = (&app.plan_view, app.shown()) else {
        return;
    };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(
            " plan ",
            Style::default().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(" ↑↓ PgUp PgDn Home End scroll · Esc or q closes ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let all = lines(view, usize::from(inner.width.max(1)));
    let height = usize::from(inner.height);
    let top = scroll.fit(all.len(), height);
    let shown: Vec<Line<'static>> = all
        .into_iter()
        .skip(top)
        .take(height)
        .map(Line::from)
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::KeyModifiers;

    use super::*;
    use crate::plan::StepStatus;
    use crate::tui::app::Prompt;
    use crate::tui::mode::Mode;
    use crate::tui::seam::{Snapshot, StepView};

    fn view() -> PlanView {
        let step = |id: &str, verify: &[&str]| StepView {
            id: Some(id.parse().unwrap()),
            sub: false,
            status: StepStatus::Pending,
            title: format!("step {id}"),
            files: vec![format!("{id}.txt")],
            verify: verify.iter().map(|v| (*v).to_owned()).collect(),
            done_when: Some("the file says so".into()),
            depends: Vec::new(),
            risk: Some("low".into()),
            blocked: None,
            stale: None,
            answer: None,
        };
        PlanView {
            title: "T".into(),
            goal: Some("one\ntwo".into()),
            phase: Some(Phase::Draft),
            steps: vec![step("S1", &[]), step("S2", &["grep -q x S2.txt"])],
            ..PlanView::default()
        }
    }

    #[test]
    fn every_step_shows_its_contract() {
        let text = lines(&view(), 40).join("\n");
        assert_eq!(
            text,
            "T — draft, 0/2 done
goal: one
      two

[ ] S1 step S1
    files:     S1.txt
    verify:    (none: the model's claim
               is the evidence)
    done when: the file says so
    risk:      low

[ ] S2 step S2
    files:     S2.txt
    verify:    `grep -q x S2.txt`
    done when: the file says so
    risk:      low"
        );
    }

    #[test]
    fn p_in_the_review_opens_it_and_esc_goes_back_to_the_menu() {
        let mut app = App::new(
            Mode::Plan,
            Snapshot {
                draft: Some(view()),
                task: None,
            },
            false,
        );
        app.prompt = Some(Prompt::Review);
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert!(app.on_key(key(KeyCode::Char('p'))).is_empty());
        assert!(app.plan_view.is_some());
        // The view takes the keys: `a` does not approve.
        assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
        assert!(matches!(app.prompt, Some(Prompt::Review)));
        app.on_key(key(KeyCode::Esc));
        assert!(app.plan_view.is_none());
        assert!(matches!(app.prompt, Some(Prompt::Review)));
    }
}
