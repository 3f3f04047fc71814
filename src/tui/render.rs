//! Drawing the session: the timeline, the plan panel (a right sidebar at 120 columns and more,
//! a compact card above the input when narrower), the input line with its inline menus, and a
//! status line. Every marker and badge is text first; colour (never with `NO_COLOR`) only
//! adds to it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::plan::{Phase, StepStatus};

use super::app::{App, Asked, Prompt};
use super::mode::Mode;
use super::panel;
use super::seam::PlanView;
use super::timeline::Entry;

/// From this width on, the panel is a sidebar.
pub const SIDEBAR_MIN_WIDTH: u16 = 120;

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Styles that vanish without colour.
struct Paint {
    color: bool,
}

impl Paint {
    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    fn dim(&self) -> Style {
        if self.color {
            Style::default().add_modifier(Modifier::DIM)
        } else {
            Style::default()
        }
    }

    fn badge(&self, mode: Mode) -> Style {
        let base = Style::default().add_modifier(Modifier::BOLD);
        if !self.color {
            return base.add_modifier(Modifier::REVERSED);
        }
        match mode {
            Mode::Plan => base.fg(Color::Black).bg(Color::Cyan),
            Mode::Build => base.fg(Color::Black).bg(Color::Green),
        }
    }

    fn marker(&self, status: StepStatus) -> Style {
        match status {
            StepStatus::Done => self.fg(Color::Green),
            StepStatus::InProgress => self.fg(Color::Yellow),
            StepStatus::Blocked => self.fg(Color::Red),
            StepStatus::Stale => self.fg(Color::Magenta),
            StepStatus::Pending => Style::default(),
        }
    }
}

/// Draws the whole session; `frame_count` turns the spinner.
pub fn draw(frame: &mut Frame<'_>, app: &App, frame_count: usize) {
    let paint = Paint { color: app.color };
    let area = frame.area();
    let wide = area.width >= SIDEBAR_MIN_WIDTH;
    let card_height = if wide { 0 } else { 5 };
    let [body, card, input, status] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(card_height),
        Constraint::Length(input_height(app, area)),
        Constraint::Length(1),
    ])
    .areas(area);
    if wide {
        let [timeline, sidebar] =
            Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)])
                .areas(body);
        draw_timeline(frame, app, &paint, timeline);
        draw_sidebar(frame, app, &paint, sidebar);
    } else {
        draw_timeline(frame, app, &paint, body);
        draw_card(frame, app, &paint, card);
    }
    draw_input(frame, app, &paint, input);
    draw_status(frame, app, &paint, status, frame_count);
    if app.plan_view.is_some() {
        // Over everything but the input and the status line.
        let over = Rect {
            height: body.height + card.height,
            ..body
        };
        super::plan_view::draw(frame, app, over);
    } else if app.slash_menu_open() {
        draw_slash_menu(frame, app, &paint, body, input);
    }
}

/// The most lines the input box grows to.
const INPUT_MAX_LINES: usize = 8;

/// The input box's height: its text's rows (wrapped at the box's width), up to
/// [`INPUT_MAX_LINES`] and a third of the screen, and its borders.
fn input_height(app: &App, area: Rect) -> u16 {
    let width = usize::from(area.width.saturating_sub(2).max(1));
    let rows = if prompt_menu(app).1.is_some() {
        1
    } else {
        app.input.layout(width).0.len()
    };
    let most = INPUT_MAX_LINES.min(usize::from(area.height / 3).max(1));
    u16::try_from(rows.clamp(1, most)).unwrap_or(1) + 2
}

/// The slash-command menu, just above the input box, over the timeline.
fn draw_slash_menu(frame: &mut Frame<'_>, app: &App, paint: &Paint, body: Rect, input: Rect) {
    let found = super::slash_menu::matches(app.input.text());
    let chosen = app.slash.chosen(found.len());
    let rows = found.len().min(usize::from(body.height.saturating_sub(2)));
    if rows == 0 {
        return;
    }
    // The chosen entry stays in view when the list is longer than the room.
    let first = (chosen + 1).saturating_sub(rows);
    let height = u16::try_from(rows).unwrap_or(0) + 2;
    let area = Rect {
        x: input.x,
        y: input.y.saturating_sub(height),
        width: input.width.min(body.width),
        height,
    };
    let width = usize::from(area.width.saturating_sub(2));
    let lines: Vec<Line<'static>> = found
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(n, (name, help))| {
            let (mark, style) = if n == chosen {
                ("›", bold().add_modifier(Modifier::REVERSED))
            } else {
                (" ", Style::default())
            };
            Line::from(vec![
                Span::styled(clip(&format!("{mark} {name:<9}"), width), style),
                Span::styled(
                    clip(&format!(" {help}"), width.saturating_sub(11)),
                    paint.dim(),
                ),
            ])
        })
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" commands · ↑↓ choose · Tab or Enter takes ");
    frame.render_widget(ratatui::widgets::Clear, area);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_timeline(frame: &mut Frame<'_>, app: &App, paint: &Paint, area: Rect) {
    // The lines are laid out at the pane's inner width first: how far back the pane is
    // scrolled is only known once they are counted.
    let inner = Block::default().borders(Borders::ALL).inner(area);
    let width = usize::from(inner.width.max(1));
    let mut lines: Vec<Line<'static>> = Vec::new();
    // The welcome stays at the top of the timeline, where scrolling back finds it.
    {
        for text in [
            "Plan first, approve, then run one verified step at a time.",
            "",
            "PLAN mode: type a goal and press Enter; the planner reads the repository (it cannot change it).",
            "BUILD mode (Tab): /run executes the approved plan; the panel ticks the steps.",
            "/help lists the commands.",
        ] {
            push_wrapped(&mut lines, text, width, paint.dim(), "");
        }
    }
    for entry in &app.timeline {
        entry_lines(&mut lines, entry, paint, width);
    }
    let height = usize::from(inner.height);
    let back = app.scroll.fit_following(lines.len(), height);
    let title = if back == 0 {
        " tick ".to_owned()
    } else {
        format!(" tick · {back} more below: End or Ctrl+End ")
    };
    frame.render_widget(Block::default().borders(Borders::ALL).title(title), area);
    let end = lines.len() - back;
    let start = end.saturating_sub(height);
    let shown: Vec<Line<'static>> = lines[start..end].to_vec();
    frame.render_widget(Paragraph::new(shown), inner);
}

fn entry_lines(lines: &mut Vec<Line<'static>>, entry: &Entry, paint: &Paint, width: usize) {
    match entry {
        Entry::Person(text) => {
            // A pasted message keeps its lines.
            for (n, line) in text.lines().enumerate() {
                let lead = if n == 0 { "› " } else { "  " };
                push_wrapped(lines, &format!("{lead}{line}"), width, bold(), "  ");
            }
        }
        Entry::Model(text) => {
            for line in text.lines() {
                push_wrapped(lines, line, width, paint.dim(), "");
            }
        }
        Entry::Tool {
            name,
            detail,
            result,
        } => {
            let text = match result {
                Some(result) => format!("→ {name} {detail} · {result}"),
                None => format!("→ {name} {detail}"),
            };
            let style = if result.as_deref().is_some_and(|r| r.starts_with("failed")) {
                paint.fg(Color::Yellow)
            } else {
                paint.fg(Color::Cyan)
            };
            push_wrapped(lines, &text, width, style, "  ");
        }
        Entry::Verify {
            step,
            command,
            passed,
            summary,
        } => {
            let (mark, style) = if *passed {
                ("✓", paint.fg(Color::Green))
            } else {
                ("✗", paint.fg(Color::Red))
            };
            push_wrapped(
                lines,
                &format!("{mark} {step} verify `{command}` {summary}"),
                width,
                style,
                "  ",
            );
        }
        Entry::Step(text) => push_wrapped(lines, &format!("■ {text}"), width, bold(), "  "),
        Entry::Note(text) => push_wrapped(lines, text, width, Style::default(), "  "),
        Entry::Error(text) => {
            for line in text.lines() {
                push_wrapped(lines, line, width, paint.fg(Color::Red), "  ");
            }
        }
    }
}

/// Wraps `text` at `width` characters (at spaces where it can), continuation lines indented.
fn push_wrapped(
    lines: &mut Vec<Line<'static>>,
    text: &str,
    width: usize,
    style: Style,
    indent: &str,
) {
    for line in wrap(&crate::text::visible(text), width, indent) {
        lines.push(Line::from(Span::styled(line, style)));
    }
}

pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(indent.chars().count() + 8);
    // Leading spaces are kept: they indent the first line.
    let body = text.trim_start_matches(' ');
    let lead = text.len() - body.len();
    let mut out = Vec::new();
    let mut current = " ".repeat(lead.min(width / 2));
    let mut len = current.len();
    let mut has_word = false;
    for word in body.split(' ') {
        let word_len = word.chars().count();
        if has_word && len + 1 + word_len > width {
            out.push(std::mem::take(&mut current));
            current.push_str(indent);
            len = indent.chars().count();
        } else if has_word {
            current.push(' ');
            len += 1;
        }
        has_word = true;
        let mut rest: Vec<char> = word.chars().collect();
        while len + rest.len() > width {
            let room = width - len;
            current.extend(rest.drain(..room));
            out.push(std::mem::take(&mut current));
            current.push_str(indent);
            len = indent.chars().count();
        }
        len += rest.len();
        current.extend(rest);
    }
    out.push(current);
    out
}

fn badge_line<'a>(app: &App, paint: &Paint, view: Option<&PlanView>) -> Line<'a> {
    let mut spans = vec![Span::styled(
        format!(" {} ", app.mode.badge()),
        paint.badge(app.mode),
    )];
    if let Some(view) = view {
        // The phase says draft or task (`draft`, `needs-input` are drafts).
        let phase = view.phase.map_or("unreadable", Phase::as_str);
        let (done, total) = panel::progress(view);
        spans.push(Span::raw(format!(" {phase} · {done}/{total} done ")));
    }
    Line::from(spans)
}

#[allow(
    clippy::too_many_lines,
    reason = "the panel drawn top to bottom, one block per section; to be split per section"
)]
fn draw_sidebar(frame: &mut Frame<'_>, app: &App, paint: &Paint, area: Rect) {
    let block = Block::default().borders(Borders::ALL).title(" plan ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width.max(1));
    let view = app.shown();
    let mut lines = vec![badge_line(app, paint, view)];
    match view {
        None => {
            lines.push(Line::raw(""));
            push_wrapped(&mut lines, "No plan yet.", width, paint.dim(), "");
        }
        Some(view) => {
            if !view.title.is_empty() {
                push_wrapped(&mut lines, &view.title, width, bold(), "");
            }
            if let Some(goal) = &view.goal {
                push_wrapped(
                    &mut lines,
                    &format!("goal: {goal}"),
                    width,
                    paint.dim(),
                    "  ",
                );
            }
            if let Some(problem) = &view.problem {
                push_wrapped(
                    &mut lines,
                    &format!("problem: {problem}"),
                    width,
                    paint.fg(Color::Red),
                    "  ",
                );
            }
            if view.plan_changed {
                push_wrapped(
                    &mut lines,
                    "PLAN.md changed since approval",
                    width,
                    paint.fg(Color::Yellow),
                    "  ",
                );
            }
            lines.push(Line::raw(""));
            for step in &view.steps {
                let indent = if step.sub { "  " } else { "" };
                let head = format!("{} {}", panel::step_id(step), step.title);
                let mut first = true;
                for piece in wrap(&head, width.saturating_sub(4 + indent.len()), "") {
                    if first {
                        lines.push(Line::from(vec![
                            Span::raw(indent.to_owned()),
                            Span::styled(panel::marker(step.status), paint.marker(step.status)),
                            Span::raw(format!(" {piece}")),
                        ]));
                        first = false;
                    } else {
                        lines.push(Line::raw(format!("{indent}    {piece}")));
                    }
                }
                let detail_indent = format!("{indent}    ");
                let mut details = Vec::new();
                if !step.files.is_empty() {
                    details.push(format!("files: {}", step.files.join(", ")));
                }
                if let Some(risk) = &step.risk {
                    details.push(format!("risk: {risk}"));
                }
                if !details.is_empty() {
                    push_wrapped(
                        &mut lines,
                        &format!("{detail_indent}{}", details.join(" · ")),
                        width,
                        paint.dim(),
                        &detail_indent,
                    );
                }
                // What decides "done" is part of the contract being approved.
                for command in &step.verify {
                    push_wrapped(
                        &mut lines,
                        &format!("{detail_indent}verify: `{command}`"),
                        width,
                        paint.dim(),
                        &format!("{detail_indent}  "),
                    );
                }
                if let Some(reason) = &step.blocked {
                    push_wrapped(
                        &mut lines,
                        &format!("{detail_indent}blocked: {reason}"),
                        width,
                        paint.fg(Color::Red),
                        &detail_indent,
                    );
                }
                if let Some(reason) = &step.stale {
                    push_wrapped(
                        &mut lines,
                        &format!("{detail_indent}stale: {reason}"),
                        width,
                        paint.fg(Color::Magenta),
                        &detail_indent,
                    );
                }
            }
            for question in &view.questions {
                push_wrapped(
                    &mut lines,
                    &format!("? {question}"),
                    width,
                    paint.fg(Color::Yellow),
                    "  ",
                );
            }
        }
    }
    lines.push(Line::raw(""));
    push_wrapped(
        &mut lines,
        &format!("next: {}", app.next_action()),
        width,
        paint.fg(Color::Cyan),
        "  ",
    );
    // The steps may not fit: the next action stays in view, the steps are cut first.
    let height = usize::from(inner.height);
    if lines.len() > height && height > 2 {
        let tail = lines.split_off(lines.len() - 2);
        lines.truncate(height - 3);
        lines.push(Line::raw("…"));
        lines.extend(tail);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn draw_card(frame: &mut Frame<'_>, app: &App, paint: &Paint, area: Rect) {
    if area.height == 0 {
        return;
    }
    let view = app.shown();
    let block = Block::default()
        .borders(Borders::ALL)
        .title(badge_line(app, paint, view));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width.max(1));
    let mut lines = Vec::new();
    if let Some(view) = view {
        let title = if view.title.is_empty() {
            view.problem.clone().unwrap_or_default()
        } else {
            view.title.clone()
        };
        lines.push(Line::styled(clip(&title, width), bold()));
        match panel::current_step(view) {
            Some(step) => {
                let mut text = format!(" {} {}", panel::step_id(step), step.title);
                if let Some(reason) = step.blocked.as_ref().or(step.stale.as_ref()) {
                    text.push_str(&format!(" — {reason}"));
                }
                lines.push(Line::from(vec![
                    Span::raw("now: "),
                    Span::styled(panel::marker(step.status), paint.marker(step.status)),
                    Span::raw(clip(&text, width.saturating_sub(8))),
                ]));
            }
            None => lines.push(Line::raw("now: no open step")),
        }
    } else {
        lines.push(Line::styled("No plan yet.", paint.dim()));
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled(
        clip(&format!("next: {}", app.next_action()), width),
        paint.fg(Color::Cyan),
    ));
    frame.render_widget(Paragraph::new(lines), inner);
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The input box's title and, for a prompt of single keys, the menu it shows instead of
/// the text.
fn prompt_menu(app: &App) -> (String, Option<String>) {
    match &app.prompt {
        Some(Prompt::Review) if app.input.is_empty() => (
            " review the draft ".to_owned(),
            Some(crate::planning::review::session_menu()),
        ),
        Some(Prompt::Review) | None => (format!(" {} › ", app.mode.badge()), None),
        Some(Prompt::Contract(form)) if form.question.wants_number() => {
            (format!(" approve: {} ", form.prompt()), None)
        }
        Some(Prompt::Contract(form)) => (" approve ".to_owned(), Some(form.prompt())),
        Some(Prompt::ConfirmDiscard) => (
            " discard ".to_owned(),
            Some(format!(
                "{} [y/N]",
                crate::planning::review::DISCARD_QUESTION
            )),
        ),
        Some(Prompt::Revise) => (
            " what should change? (Enter sends, Esc back) ".to_owned(),
            None,
        ),
        Some(Prompt::Asked(Asked::Questions { .. })) => (
            " your answers (Enter sends, Esc leaves them open) ".to_owned(),
            None,
        ),
        Some(Prompt::Asked(Asked::Deviation { step, files, .. })) => (
            " deviation ".to_owned(),
            Some(format!(
                "{step} changed files outside its `files` ({}): go on? [y/N]",
                files.join(", ")
            )),
        ),
    }
}

fn draw_input(frame: &mut Frame<'_>, app: &App, paint: &Paint, area: Rect) {
    let (title, menu) = prompt_menu(app);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if let Some(menu) = menu {
        frame.render_widget(
            Paragraph::new(Line::styled(menu, paint.fg(Color::Yellow))),
            inner,
        );
        return;
    }
    let width = usize::from(inner.width.max(1));
    let height = usize::from(inner.height.max(1));
    let (rows, (row, col)) = app.input.layout(width);
    // The rows around the cursor when the text is taller than the box.
    let first = (row + 1).saturating_sub(height);
    let mut lines: Vec<Line<'static>> = rows
        .into_iter()
        .skip(first)
        .take(height)
        .map(Line::raw)
        .collect();
    if !app.completions.is_empty()
        && let Some(last) = lines.last_mut()
    {
        last.spans.push(Span::styled(
            format!("   {}", app.completions.join("  ")),
            paint.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    let x = inner.x + u16::try_from(col).unwrap_or(inner.width);
    let y = inner.y + u16::try_from(row - first).unwrap_or(0);
    frame.set_cursor_position(Position::new(
        x.min(inner.right().saturating_sub(1)),
        y.min(inner.bottom().saturating_sub(1)),
    ));
}

fn draw_status(frame: &mut Frame<'_>, app: &App, paint: &Paint, area: Rect, frame_count: usize) {
    let mut spans = vec![Span::styled(
        format!(" {} ", app.mode.badge()),
        paint.badge(app.mode),
    )];
    match &app.busy {
        Some(busy) => {
            let spin = SPINNER[frame_count % SPINNER.len()];
            let detail = if busy.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", busy.detail)
            };
            spans.push(Span::styled(
                format!(" {spin} {}{detail}", busy.what),
                paint.fg(Color::Yellow),
            ));
        }
        None => spans.push(Span::styled(
            " Tab plan/build · /help · Ctrl-C stop, twice quit",
            paint.dim(),
        )),
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_and_splits_long_words() {
        assert_eq!(wrap("one two three", 9, "  "), vec!["one two", "  three"]);
        assert_eq!(wrap("abcdefghijkl", 10, ""), vec!["abcdefghij", "kl"]);
        assert_eq!(wrap("", 10, ""), vec![""]);
        assert_eq!(wrap("äöü äöü", 4 + 8, ""), vec!["äöü äöü"]);
        assert_eq!(wrap("    files: a, b", 40, "    "), vec!["    files: a, b"]);
    }
}
