//! The checklist grammar of TODO.md (and of the `## Steps` section of PLAN.md): parsing into
//! steps with byte offsets, and edits that rewrite only the bytes they must. Pure: no I/O.
//!
//! A list item whose text starts with `[` + one character + `]` is a step. Checkbox-like text
//! in code blocks, block quotes and HTML is not, because pulldown-cmark decides what is a list
//! item. pulldown-cmark only knows `[ ]`, `[x]` and `[X]`, so the marker itself is read from the
//! source at the offset the same parse gives for the item's first text.
//!
//! Most files never reach pulldown-cmark: a line scanner (`todo_scan.rs`) reads the shape
//! TODO.md nearly always has and builds the same steps through the same code; anything it is
//! not sure of, and every error, goes to the pulldown-cmark reading. Property tests hold the
//! two to the same result.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub use super::parse_error::ParseError;
use crate::plan::{Risk, StepId, StepStatus};

/// A detail line key tick writes (and removes): the runner's `blocked`, `stale`, `evidence`, and
/// the `answer` that `tick answer` records for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunnerKey {
    Blocked,
    Stale,
    Evidence,
    /// The person's answer to a block, written by `tick answer` (or by hand); it stays with
    /// the step through later status changes, so every later turn on the step sees it.
    Answer,
}

impl RunnerKey {
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerKey::Blocked => "blocked",
            RunnerKey::Stale => "stale",
            RunnerKey::Evidence => "evidence",
            RunnerKey::Answer => "answer",
        }
    }
}

/// One step (or sub-step) as the file has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// `None` for a step a person added without an id; it gets one at tick's next write.
    pub id: Option<StepId>,
    pub status: StepStatus,
    pub title: String,
    pub files: Vec<String>,
    pub verify: Vec<String>,
    pub done_when: Option<String>,
    pub risk: Option<Risk>,
    pub depends: Vec<StepId>,
    /// The MCP tools the step may use, qualified `server.tool` (`tools: github.create_issue`).
    /// Part of the approved contract: during the step only these are offered.
    pub tools: Vec<String>,
    /// The id the step has in the file it was imported from (`source: T012`).
    pub source: Option<String>,
    /// The requirements the step serves, as its source links them (`reqs: 1.1, US2`).
    pub reqs: Vec<String>,
    /// Where a check tick proposed came from (`proposed: verify, from ...`): the source had
    /// none, tick wrote it, the review shows it.
    pub proposed: Option<String>,
    pub blocked: Option<String>,
    pub stale: Option<String>,
    pub evidence: Option<String>,
    /// The person's answer to the step's last block (`answer:`, from `tick answer`).
    pub answer: Option<String>,
    /// Nested bullets that are not `key: value` details: a person's notes, kept as written.
    pub notes: Vec<String>,
    pub substeps: Vec<Step>,
    /// 1-based line of the step's checkbox.
    pub line: usize,
    span: StepSpan,
}

/// Where a step's pieces are in the source, for edits that touch nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StepSpan {
    /// Byte offset of the marker character between the brackets.
    marker: usize,
    /// Byte offset where the id (or, without one, the title) starts.
    title_start: usize,
    /// Where a new detail line goes, and how it is indented.
    insert_at: usize,
    detail_prefix: Cow<'static, str>,
    /// Whether `detail_prefix` was taken from a nested item, rather than made up.
    prefix_from_child: bool,
    eol: &'static str,
    /// Runner-owned detail lines: the whole line(s), and the value within them.
    runner_lines: BTreeMap<RunnerKey, (Range<usize>, Range<usize>)>,
    /// The whole lines of the item, its details and sub-steps included.
    item_lines: Range<usize>,
    /// The title text after the id (or the whole head without one).
    title: Range<usize>,
    /// What comes before the checkbox on its line: indentation, bullet and a space.
    line_prefix: Cow<'static, str>,
    /// The planned detail lines (`files`, `verify`, ...): key and whole line(s), in order.
    details: Vec<(&'static str, Range<usize>)>,
}

/// A parsed checklist: the steps in file order, sub-steps inside their parents.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checklist {
    /// The text of the first level-1 heading, if any.
    pub heading: Option<String>,
    pub steps: Vec<Step>,
}

impl Checklist {
    /// Every step and sub-step, parents before their sub-steps.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps
            .iter()
            .flat_map(|step| std::iter::once(step).chain(step.substeps.iter()))
    }

    pub fn find(&self, id: StepId) -> Option<&Step> {
        self.all_steps().find(|step| step.id == Some(id))
    }

    fn find_mut(&mut self, id: StepId) -> Option<&mut Step> {
        for step in &mut self.steps {
            if step.id == Some(id) {
                return Some(step);
            }
            if let Some(sub) = step.substeps.iter_mut().find(|s| s.id == Some(id)) {
                return Some(sub);
            }
        }
        None
    }

    /// Whether some step still needs an id.
    pub fn needs_ids(&self) -> bool {
        self.all_steps().any(|step| step.id.is_none())
    }
}

impl Step {
    /// The status a parent shows: its own marker, unless all its sub-steps are done (a parent
    /// blocked or stale in its own right stays so). A parent with a `verify` of its own is
    /// done only by its own marker: its sub-steps being done does not show that its check
    /// passes, so it waits for that check (`tick run` or `tick verify` runs it).
    pub fn effective_status(&self) -> StepStatus {
        if matches!(self.status, StepStatus::Blocked | StepStatus::Stale) || self.checks_itself() {
            return self.status;
        }
        if !self.substeps.is_empty()
            && self
                .substeps
                .iter()
                .all(|sub| sub.status == StepStatus::Done)
        {
            StepStatus::Done
        } else {
            self.status
        }
    }
}

impl Step {
    /// A parent with a `verify` of its own: done only when that passes, not when its
    /// sub-steps are.
    pub fn checks_itself(&self) -> bool {
        !self.substeps.is_empty() && !self.verify.is_empty()
    }

    /// A parent whose sub-steps are all done but whose own check has not ticked it yet (open
    /// or in progress). A blocked parent stays blocked (its reason is a person's to answer) and a stale one is
    /// verified again as any stale step is.
    pub fn awaits_its_check(&self) -> bool {
        self.checks_itself()
            && matches!(self.status, StepStatus::Pending | StepStatus::InProgress)
            && self.substeps.iter().all(|s| s.status == StepStatus::Done)
    }
}

/// Where a step's pieces are, for edits made elsewhere (the plan merge); the edits go through
/// [`apply_edits`].
impl Step {
    /// The whole lines of the item, its details and sub-steps included.
    pub fn item_lines(&self) -> Range<usize> {
        self.span.item_lines.clone()
    }

    /// The title's bytes (after the id).
    pub fn title_range(&self) -> Range<usize> {
        self.span.title.clone()
    }

    /// What comes before the checkbox on its line: indentation and bullet.
    pub fn line_prefix(&self) -> &str {
        &self.span.line_prefix
    }

    /// How a new detail line of this step starts, and where it goes.
    pub fn detail_prefix(&self) -> &str {
        &self.span.detail_prefix
    }

    pub fn detail_insert_at(&self) -> usize {
        self.span.insert_at
    }

    pub fn eol(&self) -> &'static str {
        self.span.eol
    }

    /// The whole lines of the step's `key` details (one of [`PLANNED_KEYS`]).
    pub fn detail_lines_of(&self, key: &str) -> Vec<Range<usize>> {
        self.span
            .details
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, range)| range.clone())
            .collect()
    }
}

/// Brings `list` (the parse of `old`) up to date with `new` without parsing again, when `new`
/// is `old` with only step `id`'s marker character replaced by `status`'s: every offset stays
/// valid. Returns whether it could; if not, parse `new`.
pub fn patch_marker(
    list: &mut Checklist,
    old: &str,
    new: &str,
    id: StepId,
    status: StepStatus,
) -> bool {
    if !can_patch_marker(list, old, new, id, status) {
        return false;
    }
    if let Some(step) = list.find_mut(id) {
        step.status = status;
    }
    true
}

/// Whether [`patch_marker`] can bring `list` up to date: `new` is `old` with only step `id`'s
/// marker character replaced by `status`'s.
pub fn can_patch_marker(
    list: &Checklist,
    old: &str,
    new: &str,
    id: StepId,
    status: StepStatus,
) -> bool {
    let Some(step) = list.find(id) else {
        return false;
    };
    let at = step.span.marker;
    let width = status.marker().len_utf8();
    old.len() == new.len()
        && old.get(..at) == new.get(..at)
        && old.get(at + width..) == new.get(at + width..)
        && old.get(at..at + width).is_some_and(|c| c.len() == width)
}

/// Applies replacements of byte ranges (which must not overlap). Insertions at one offset
/// keep the order they are given in.
pub fn apply_edits(src: &str, edits: Vec<(Range<usize>, String)>) -> String {
    let mut edits: Vec<(usize, (Range<usize>, String))> = edits.into_iter().enumerate().collect();
    edits.sort_by_key(|(index, (range, _))| std::cmp::Reverse((range.start, range.end, *index)));
    let mut out = src.to_owned();
    for (_, (range, text)) in edits {
        out.replace_range(range, &text);
    }
    out
}

impl Step {
    /// The status that counts towards a task's progress: a parent whose sub-steps have begun
    /// is under way even while its own box is empty.
    pub fn progress_status(&self) -> StepStatus {
        let status = self.effective_status();
        let begun = self
            .substeps
            .iter()
            .any(|sub| sub.status != StepStatus::Pending);
        if status == StepStatus::Pending && begun {
            StepStatus::InProgress
        } else {
            status
        }
    }
}

/// Parses a whole TODO.md.
pub fn parse(src: &str) -> Result<Checklist, ParseError> {
    parse_region(src, 0..src.len())
}

/// Parses only the steps whose checkbox lies in `region` (the `## Steps` section of PLAN.md).
/// The whole text is still parsed, so code blocks and quotes around the region are understood.
pub fn parse_region(src: &str, region: Range<usize>) -> Result<Checklist, ParseError> {
    // Most files are read by the line scanner; the rest by pulldown-cmark, after the check
    // that keeps its cost bounded.
    if region == (0..src.len())
        && let Some(checklist) = scan::checklist(src)
    {
        return Ok(checklist);
    }
    super::markdown_depth::check(src, 0)?;
    let (items, heading) = collect_items(src);
    build(src, region, items, heading)
}

/// Where a list item's pieces are, as either reader found them: what building a step or a
/// detail from it needs.
struct At {
    /// The bullet, and the start of its line.
    bullet: usize,
    line_start: usize,
    /// The item's first text, and the start of the line after it.
    head: Option<Range<usize>>,
    after_head: usize,
    /// The start of the line after the item's last (its blank lines included).
    after_item: usize,
    /// The 1-based line of the head, where that line starts, and whether it ends in CRLF.
    line: usize,
    head_line_start: usize,
    crlf: bool,
}

impl At {
    fn of(src: &str, lines: &LineIndex, item: &Item) -> At {
        let bullet = bullet_of(src, item);
        let head_start = item.head.as_ref().map_or(bullet, |head| head.start);
        At {
            bullet,
            line_start: lines.line_start(bullet),
            head: item.head.clone(),
            after_head: item
                .head
                .as_ref()
                .map_or(0, |head| lines.next_line_start(src, head.end)),
            after_item: lines.next_line_start(src, item.range.end),
            line: lines.line_of(head_start) + 1,
            head_line_start: lines.line_start(head_start),
            crlf: src[..lines.line_end(head_start)].ends_with('\r'),
        }
    }
}

/// Turns a byte offset into a 1-based line and column, for an error message.
type Locate<'a> = &'a dyn Fn(usize) -> (usize, usize);

/// The checklist made of the list items a parse found.
fn build(
    src: &str,
    region: Range<usize>,
    mut items: Vec<Item>,
    heading: Option<String>,
) -> Result<Checklist, ParseError> {
    let lines = LineIndex::new(src);
    let roots = items.iter().filter(|item| item.parent.is_none()).count();
    let mut checklist = Checklist {
        heading,
        steps: Vec::with_capacity(roots),
    };
    // Which step (index into checklist.steps, then sub-step index) each item became.
    let mut role: Vec<Role> = Vec::with_capacity(items.len());
    let locate = |offset: usize| lines.line_col(src, offset);
    for item in &mut items {
        let parent_role = item.parent.map_or(Role::Root, |p| role[p]);
        let marker = match item.head {
            Some(ref head) => scan_marker(src, head.start, lines.line_end(head.start)),
            None => MarkerScan::NotMarker,
        };
        let in_region = region.contains(&item.range.start);
        let this = match (parent_role, marker) {
            _ if item.in_quote || !in_region => Role::Ignored,
            (Role::Root, MarkerScan::NotMarker) => Role::Ignored,
            (Role::Step(..) | Role::Root, MarkerScan::Bad { at, text }) => {
                let (line, col) = lines.line_col(src, at);
                return Err(ParseError {
                    line,
                    col,
                    message: format!("unknown step marker `{text}`"),
                    hint: "markers are `[ ]`, `[x]`, `[-]`, `[!]`, `[~]`".into(),
                });
            }
            (Role::Step(..) | Role::Root, MarkerScan::Glued { at, text }) => {
                let (line, col) = lines.line_col(src, at);
                return Err(ParseError {
                    line,
                    col,
                    message: format!("the step marker `{text}` has no space after it"),
                    hint: format!(
                        "write `{text} {}`: a marker, a space, then the step",
                        &src[at..lines.line_end(at)]
                            .split(char::is_whitespace)
                            .next()
                            .unwrap_or("")
                    ),
                });
            }
            (Role::Root, MarkerScan::Marker { status, at }) => {
                let place = At::of(src, &lines, item);
                let step = build_step(src, &place, status, at, Level::Top, &locate)?;
                checklist.steps.push(step);
                Role::Step(checklist.steps.len() - 1, None)
            }
            (Role::Step(parent, None), MarkerScan::Marker { status, at }) => {
                let parent_id = checklist.steps[parent].id;
                let place = At::of(src, &lines, item);
                let step = build_step(src, &place, status, at, Level::Sub(parent_id), &locate)?;
                first_sub_step(&mut checklist.steps[parent], src, &place);
                checklist.steps[parent].substeps.push(step);
                Role::Step(parent, Some(checklist.steps[parent].substeps.len() - 1))
            }
            (Role::Step(_, Some(_)), MarkerScan::Marker { at, .. }) => {
                let (line, col) = lines.line_col(src, at);
                return Err(ParseError {
                    line,
                    col,
                    message: "a checkbox nested under a sub-step".into(),
                    hint: "steps have one level of sub-steps (`S2.1`); move it up a level or make it a plain bullet".into(),
                });
            }
            (Role::Step(parent, sub), MarkerScan::NotMarker) => {
                let step = match sub {
                    Some(sub) => &mut checklist.steps[parent].substeps[sub],
                    None => &mut checklist.steps[parent],
                };
                let place = At::of(src, &lines, item);
                add_detail(src, step, &place, &mut item.code_spans, &locate)?;
                Role::Detail
            }
            (Role::Detail | Role::Ignored, _) => Role::Ignored,
        };
        role.push(this);
    }
    check_ids(&checklist, &locate)?;
    Ok(checklist)
}

/// A new detail line goes before the first sub-step: it must be indented like it, or the
/// sub-steps would end up nested under the detail.
fn first_sub_step(parent: &mut Step, src: &str, sub: &At) {
    if !parent.span.prefix_from_child {
        parent.span.detail_prefix = detail_prefix_of(src, sub);
        parent.span.prefix_from_child = true;
    }
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Root,
    /// Top-level step index, and sub-step index within it.
    Step(usize, Option<usize>),
    Detail,
    Ignored,
}

/// A list item as pulldown-cmark saw it.
#[derive(Debug)]
struct Item {
    range: Range<usize>,
    parent: Option<usize>,
    in_quote: bool,
    /// The item's first block of inline text (start of its first text to end of that
    /// paragraph), if the item starts with text.
    head: Option<Range<usize>>,
    /// Inline code spans inside `head`, unescaped.
    code_spans: Vec<String>,
}

#[derive(PartialEq)]
enum HeadState {
    Waiting,
    Open,
    Closed,
}

fn parser_options() -> Options {
    Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// A byte order mark would make the first line a paragraph: parse after it, and shift offsets.
fn bom_len(src: &str) -> usize {
    if src.starts_with('\u{feff}') { 3 } else { 0 }
}

/// The list items, and the first level-1 heading (what [`first_heading`] would say, found in
/// the same parse: building pulldown-cmark's block tree is most of a parse's cost).
fn collect_items(src: &str) -> (Vec<Item>, Option<String>) {
    let mut items: Vec<Item> = Vec::new();
    let mut states: Vec<HeadState> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut quote_depth = 0usize;
    let mut heading = HeadingScan::default();
    let skip = bom_len(src);
    for (event, range) in Parser::new_ext(&src[skip..], parser_options()).into_offset_iter() {
        heading.feed(&event);
        let range = range.start + skip..range.end + skip;
        match &event {
            Event::Start(Tag::Item) => {
                // Close the parent's head: a nested list ends it.
                if let Some(&top) = stack.last() {
                    close_head(&mut states[top]);
                }
                items.push(Item {
                    range: range.clone(),
                    parent: stack.last().copied(),
                    in_quote: quote_depth > 0,
                    head: None,
                    code_spans: Vec::new(),
                });
                states.push(HeadState::Waiting);
                stack.push(items.len() - 1);
                continue;
            }
            Event::End(TagEnd::Item) => {
                stack.pop();
                continue;
            }
            Event::Start(Tag::BlockQuote(_)) => quote_depth += 1,
            Event::End(TagEnd::BlockQuote(_)) => quote_depth = quote_depth.saturating_sub(1),
            _ => {}
        }
        let Some(&top) = stack.last() else { continue };
        let state = &mut states[top];
        let item = &mut items[top];
        match (&*state, classify(&event)) {
            (HeadState::Waiting, Class::ParagraphStart) => {}
            (HeadState::Waiting, Class::Inline) => {
                item.head = Some(range.clone());
                *state = HeadState::Open;
                if let Event::Code(code) = &event {
                    item.code_spans.push(code.to_string());
                }
            }
            (HeadState::Open, Class::Inline) => {
                if let Some(head) = &mut item.head {
                    head.end = head.end.max(range.end);
                }
                if let Event::Code(code) = &event {
                    item.code_spans.push(code.to_string());
                }
            }
            (HeadState::Waiting | HeadState::Open, Class::Block | Class::ParagraphEnd) => {
                close_head(state);
            }
            _ => {}
        }
    }
    (items, heading.found)
}

/// Finds the first level-1 heading in a stream of events, as [`first_heading`] does.
#[derive(Default)]
struct HeadingScan {
    /// The heading's text so far, while inside the first level-1 heading.
    open: Option<String>,
    found: Option<String>,
}

impl HeadingScan {
    fn feed(&mut self, event: &Event<'_>) {
        if self.found.is_some() {
            return;
        }
        match (event, &mut self.open) {
            (
                Event::Start(Tag::Heading {
                    level: pulldown_cmark::HeadingLevel::H1,
                    ..
                }),
                open,
            ) => *open = Some(String::new()),
            (Event::End(TagEnd::Heading(_)), Some(text)) => {
                self.found = Some(collapse_whitespace(text));
            }
            (Event::Text(t) | Event::Code(t), Some(text)) => text.push_str(t),
            _ => {}
        }
    }
}

fn close_head(state: &mut HeadState) {
    *state = HeadState::Closed;
}

enum Class {
    ParagraphStart,
    ParagraphEnd,
    Inline,
    Block,
    Other,
}

fn classify(event: &Event<'_>) -> Class {
    match event {
        Event::Start(Tag::Paragraph) => Class::ParagraphStart,
        Event::End(TagEnd::Paragraph) => Class::ParagraphEnd,
        Event::Text(_)
        | Event::Code(_)
        | Event::InlineMath(_)
        | Event::DisplayMath(_)
        | Event::InlineHtml(_)
        | Event::FootnoteReference(_)
        | Event::SoftBreak
        | Event::HardBreak
        | Event::TaskListMarker(_)
        | Event::Start(
            Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Link { .. }
            | Tag::Image { .. },
        )
        | Event::End(
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::Image,
        ) => Class::Inline,
        Event::Start(_) | Event::Html(_) | Event::Rule => Class::Block,
        Event::End(_) => Class::Other,
    }
}

enum MarkerScan {
    NotMarker,
    Marker {
        status: StepStatus,
        at: usize,
    },
    Bad {
        at: usize,
        text: String,
    },
    /// A marker with a step id right after it, no space between (`[ ]S2`); `at` is the id.
    Glued {
        at: usize,
        text: String,
    },
}

/// Whether `text` starts with a step id (`S2`, `S2.1`) that ends the word.
fn starts_with_step_id(text: &str) -> bool {
    let word = text.split(char::is_whitespace).next().unwrap_or("");
    word.parse::<StepId>().is_ok()
}

/// Reads a `[c]` marker at `at`. One known character is a marker; one unknown character, an
/// empty pair, or two characters that look like a botched marker (`[xx]`, `[ x]`) are errors;
/// anything else (`[link](url)`, `[WIP]`) is ordinary text.
fn scan_marker(src: &str, at: usize, line_end: usize) -> MarkerScan {
    let rest = &src[at..line_end];
    if !rest.starts_with('[') {
        return MarkerScan::NotMarker;
    }
    let Some(close) = rest[1..].find(']').map(|i| i + 1) else {
        return MarkerScan::NotMarker;
    };
    let inner = &rest[1..close];
    let after = rest[close + 1..].chars().next();
    if after.is_some_and(|c| !c.is_whitespace()) {
        // `- [x]glued` is a note; `- [ ]S2 title` is a step whose space went missing, and
        // reading it as a note would drop the step without a word.
        let mut one = inner.chars();
        let known = one
            .next()
            .is_some_and(|c| StepStatus::from_marker(c).is_some())
            && one.next().is_none();
        if known && starts_with_step_id(&rest[close + 1..]) {
            return MarkerScan::Glued {
                at: at + close + 1,
                text: rest[..=close].into(),
            };
        }
        return MarkerScan::NotMarker;
    }
    let text = &rest[..=close];
    let mut chars = inner.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(c), None, _) => match StepStatus::from_marker(c) {
            Some(status) => MarkerScan::Marker { status, at: at + 1 },
            None => MarkerScan::Bad {
                at,
                text: text.into(),
            },
        },
        (None, _, _) => MarkerScan::Bad {
            at,
            text: text.into(),
        },
        (Some(a), Some(b), None)
            if [a, b].iter().all(|c| StepStatus::from_marker(*c).is_some()) =>
        {
            MarkerScan::Bad {
                at,
                text: text.into(),
            }
        }
        _ => MarkerScan::NotMarker,
    }
}

fn build_step(
    src: &str,
    at: &At,
    status: StepStatus,
    marker: usize,
    level: Level,
    locate: Locate<'_>,
) -> Result<Step, ParseError> {
    let head = at.head.clone().unwrap_or(marker..marker);
    // `marker` is the character inside the brackets; the head goes on after `]`.
    let after_marker = marker + src[marker..].chars().next().map_or(1, char::len_utf8) + 1;
    let text = &src[after_marker.min(head.end)..head.end];
    let title_start = after_marker + (text.len() - text.trim_start().len());
    let text = text.trim_start();
    let line = at.line;
    // Columns are counted only for an error: they walk the line's characters.
    let at_marker = |message: String, hint: &str| {
        let (line, col) = locate(marker - 1);
        ParseError {
            line,
            col,
            message,
            hint: hint.to_owned(),
        }
    };
    let (id, title) = split_id(text);
    let title_at = title.as_ptr() as usize - src.as_ptr() as usize;
    let title_range =
        title_at + (title.len() - title.trim_start().len())..title_at + title.trim_end().len();
    let item_lines = at.line_start..at.after_item;
    let line_prefix = shared_prefix(&src[at.line_start..marker - 1]);
    let id = match id {
        Some(id_text) => {
            let id: StepId = id_text.parse().map_err(|message| {
                at_marker(
                    message,
                    "ids look like `S3` (a step) or `S3.1` (a sub-step)",
                )
            })?;
            check_id_level(id, level).map_err(|(message, hint)| {
                let (line, col) = locate(title_start);
                ParseError {
                    line,
                    col,
                    message,
                    hint,
                }
            })?;
            Some(id)
        }
        None => None,
    };
    let title = collapse_whitespace(title);
    if title.is_empty() {
        return Err(at_marker(
            "a step without a title".into(),
            "write what the step does after the checkbox, like `- [ ] S4 Update the login tests`",
        ));
    }
    let eol = if at.crlf { "\r\n" } else { "\n" };
    // Under the item's text: its indentation, bullet and space as blanks (tabs kept).
    let indent = &src[at.head_line_start..marker - 1];
    let detail_prefix = if indent.contains('\t') {
        let mut blanks: String = indent
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        blanks.push_str("- ");
        Cow::Owned(blanks)
    } else {
        spaced_prefix(indent.chars().count(), '-')
    };
    Ok(Step {
        id,
        status,
        title,
        files: Vec::new(),
        verify: Vec::new(),
        done_when: None,
        risk: None,
        depends: Vec::new(),
        tools: Vec::new(),
        source: None,
        reqs: Vec::new(),
        proposed: None,
        blocked: None,
        stale: None,
        evidence: None,
        answer: None,
        notes: Vec::new(),
        substeps: Vec::new(),
        line,
        span: StepSpan {
            marker,
            title_start,
            insert_at: at.after_head,
            detail_prefix,
            prefix_from_child: false,
            eol,
            runner_lines: BTreeMap::new(),
            item_lines,
            title: title_range,
            line_prefix,
            details: Vec::new(),
        },
    })
}

/// Whether a step is top-level or a sub-step (of a parent that may not have an id yet).
#[derive(Debug, Clone, Copy)]
enum Level {
    Top,
    Sub(Option<StepId>),
}

/// `S3 Title` → (`S3`, `Title`); a title without an id token → (None, title).
fn split_id(text: &str) -> (Option<&str>, &str) {
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    let token = &text[..end];
    let looks_like_id = token.len() > 1
        && token.starts_with('S')
        && token[1..].bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && token[1..].starts_with(|c: char| c.is_ascii_digit());
    if looks_like_id {
        (Some(token), &text[end..])
    } else {
        (None, text)
    }
}

/// Whether `id` fits where it is; the message and hint when it does not.
fn check_id_level(id: StepId, level: Level) -> Result<(), (String, String)> {
    let problem = match (level, id.minor) {
        (Level::Top, Some(_)) => Some((
            format!("`{id}` is a sub-step id on a top-level step"),
            format!("top-level steps have ids like `S{}`", id.major),
        )),
        (Level::Sub(_), None) => Some((
            format!("`{id}` is a step id on a sub-step"),
            "sub-steps have ids like `S2.1`, under their step `S2`".to_owned(),
        )),
        (Level::Sub(Some(parent)), Some(_)) if parent.major != id.major => Some((
            format!("sub-step `{id}` is under `{parent}`"),
            format!(
                "a sub-step of `{parent}` has an id like `{parent}.1`; remove the id and tick will assign one"
            ),
        )),
        _ => None,
    };
    match problem {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// The detail keys a person, the planner or `tick import` writes (the rest are the runner's).
pub const PLANNED_KEYS: [&str; 9] = [
    "files",
    "verify",
    "done when",
    "risk",
    "depends",
    "tools",
    "source",
    "reqs",
    "proposed",
];

/// The detail keys only the runner writes.
const RUNNER_KEYS: [&str; 4] = ["blocked", "stale", "evidence", "answer"];

/// Every detail key TODO.md knows: the planned ones and the runner's.
pub const DETAIL_KEYS: [&str; PLANNED_KEYS.len() + RUNNER_KEYS.len()] = {
    let mut keys = [""; PLANNED_KEYS.len() + RUNNER_KEYS.len()];
    let mut i = 0;
    while i < keys.len() {
        keys[i] = if i < PLANNED_KEYS.len() {
            PLANNED_KEYS[i]
        } else {
            RUNNER_KEYS[i - PLANNED_KEYS.len()]
        };
        i += 1;
    }
    keys
};

/// Whether `text` has a run of backticks that no later run of the same length closes, as
/// markdown reads code spans (such a run is left as a literal backtick).
fn unclosed_backtick(text: &str) -> bool {
    let bytes = text.as_bytes();
    let run_at = |at: usize| bytes[at..].iter().take_while(|b| **b == b'`').count();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let open = run_at(at);
        let mut next = at + open;
        loop {
            let Some(offset) = bytes[next..].iter().position(|b| *b == b'`') else {
                return true;
            };
            let close = run_at(next + offset);
            next += offset + close;
            if close == open {
                break;
            }
        }
        at = next;
    }
    false
}

/// A verify that opens a backtick nothing closes: the message and its hint.
const UNCLOSED_BACKTICK: (&str, &str) = (
    "the verify command opens a backtick that nothing closes",
    "end the command with a backtick: - verify: `cargo test`",
);

fn add_detail(
    src: &str,
    step: &mut Step,
    at: &At,
    code_spans: &mut Vec<String>,
    locate: Locate<'_>,
) -> Result<(), ParseError> {
    let item_line_start = at.line_start;
    let Some(head) = at.head.clone() else {
        // A nested bullet that starts with a block (code, quote): a note, kept as written.
        step.span.insert_at = step.span.insert_at.max(at.after_item);
        return Ok(());
    };
    let text = &src[head.clone()];
    let line_end = at.after_head;
    step.span.insert_at = step.span.insert_at.max(line_end);
    set_detail_prefix(&mut step.span.detail_prefix, src, at);
    step.span.prefix_from_child = true;
    let Some(colon) = text.bytes().position(|b| b == b':') else {
        step.notes.push(collapse_whitespace(text));
        return Ok(());
    };
    let key = trim_end_ws(trim_start_ws(&text[..colon]));
    let Some(key) = DETAIL_KEYS
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(key))
    else {
        let key_at = head.start + (text.len() - trim_start_ws(text).len());
        if let Some(error) = misspelt_detail(key, locate(key_at)) {
            return Err(error);
        }
        step.notes.push(collapse_whitespace(text));
        return Ok(());
    };
    let value_start = head.start + colon + 1;
    let rest = &src[value_start..head.end];
    let value_start = value_start + (rest.len() - trim_start_ws(rest).len());
    let value_end = head.start + trim_end_ws(text).len();
    let raw_value = &src[value_start..value_end.max(value_start)];
    let value = || collapse_whitespace(raw_value);
    let at_value = |message: String, hint: &str| {
        let (line, col) = locate(value_start);
        ParseError {
            line,
            col,
            message,
            hint: hint.to_owned(),
        }
    };
    let runner = |key: RunnerKey, step: &mut Step| {
        step.span.runner_lines.insert(
            key,
            (
                item_line_start..line_end,
                value_start..value_end.max(value_start),
            ),
        );
    };
    if let Some(planned) = PLANNED_KEYS.iter().find(|k| **k == key) {
        step.span.details.push((planned, item_line_start..line_end));
    }
    match key {
        "files" => step.files.extend(split_list(&collapsed(raw_value))),
        // `` verify: `cargo test `` would run as a shell syntax error on every try, and
        // `` `true` `false `` would run `true` alone.
        "verify" if unclosed_backtick(raw_value) => {
            return Err(at_value(
                UNCLOSED_BACKTICK.0.to_owned(),
                UNCLOSED_BACKTICK.1,
            ));
        }
        "verify" if !code_spans.is_empty() => step.verify.append(code_spans),
        "verify" => {
            let value = value();
            if !value.is_empty() {
                step.verify.push(value);
            }
        }
        "done when" => step.done_when = Some(value()),
        "tools" | "source" | "reqs" | "proposed" => {
            listed_detail(step, key, raw_value).map_err(|(m, h)| at_value(m, h))?;
        }
        "risk" => {
            step.risk = Some(value().parse().map_err(|message| {
                at_value(message, "write `risk: low`, `risk: medium` or `risk: high`")
            })?);
        }
        "depends" => {
            for part in split_list(&collapsed(raw_value)) {
                let id: StepId = part.parse().map_err(|message| {
                    at_value(message, "list step ids, like `depends: S1, S2`")
                })?;
                step.depends.push(id);
            }
        }
        "blocked" | "stale" | "evidence" | "answer" => {
            let (slot, tick_key) = match key {
                "blocked" => (&mut step.blocked, RunnerKey::Blocked),
                "stale" => (&mut step.stale, RunnerKey::Stale),
                "evidence" => (&mut step.evidence, RunnerKey::Evidence),
                _ => (&mut step.answer, RunnerKey::Answer),
            };
            *slot = Some(value());
            runner(tick_key, step);
        }
        _ => step.notes.push(collapse_whitespace(text)),
    }
    Ok(())
}

/// The detail keys whose loss changes what tick checks or tracks: a line that misspells one
/// (`verfy:`) would be read as a note, and the step would be ticked without its verify.
const GUARDED_KEYS: [&str; 5] = ["files", "verify", "depends", "done when", "tools"];

/// The error for detail key `key` (at `line`, `col`) when it misspells a guarded key, near
/// enough to one to be a typo of it.
fn misspelt_detail(key: &str, (line, col): (usize, usize)) -> Option<ParseError> {
    if key.split_whitespace().count() > 2 {
        return None;
    }
    let known = crate::config::error::nearest(&key.to_ascii_lowercase(), GUARDED_KEYS)?;
    Some(ParseError {
        line,
        col,
        message: format!("unknown detail `{key}:`: did you mean `{known}:`?"),
        hint: format!(
            "write `{known}:`; as it is, the line would be a note and the step would lose its \
             `{known}`"
        ),
    })
}

/// The detail lines of lists and ids: `tools:` (a step's MCP tools, each `server.tool`, each
/// once) and those `tick import` writes; the message and hint when one is wrong.
fn listed_detail(
    step: &mut Step,
    key: &str,
    raw_value: &str,
) -> Result<(), (String, &'static str)> {
    if key != "tools" {
        import_detail(step, key, raw_value);
        return Ok(());
    }
    for tool in split_list(&collapsed(raw_value)) {
        if let Some(problem) = tool_name_problem(&tool) {
            return Err((
                format!("`{tool}` {problem}"),
                "name MCP tools as `server.tool`, like `tools: github.create_issue`",
            ));
        }
        if step.tools.contains(&tool) {
            return Err((
                format!("`{tool}` is listed twice"),
                "list each `server.tool` once",
            ));
        }
        step.tools.push(tool);
    }
    Ok(())
}

/// Why `name` cannot be a step's MCP tool, if it cannot: a tool is named `server.tool`, the
/// server as the person's config names it and the tool as the server does (no spaces, no
/// commas, no backticks, which would not survive a `tools:` line).
pub fn tool_name_problem(name: &str) -> Option<&'static str> {
    let Some((server, tool)) = name.split_once('.') else {
        return Some("is not a qualified tool name (`server.tool`)");
    };
    let fine = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    };
    if !fine(server) || server.contains(['.', '/']) || !fine(tool) {
        return Some(
            "is not a tool name; a server name is letters, digits, `_` and `-`, then `.` and the tool's name",
        );
    }
    None
}

/// The detail lines `tick import` writes: the source task's id, its requirement links, and
/// where a check tick proposed came from.
fn import_detail(step: &mut Step, key: &str, raw_value: &str) {
    match key {
        "source" => step.source = Some(collapse_whitespace(raw_value)),
        "reqs" => step.reqs.extend(split_list(&collapsed(raw_value))),
        _ => step.proposed = Some(collapse_whitespace(raw_value)),
    }
}

/// Where an item's bullet is. pulldown-cmark may start a nested item's range before it: at
/// the parent's content column, or even at the newline ending the line above.
fn bullet_of(src: &str, item: &Item) -> usize {
    let rest = &src[item.range.start..];
    item.range.start + (rest.len() - rest.trim_start().len())
}

/// Sets `prefix` to [`detail_prefix_of`] `item`, without building a new string when it is that
/// already (every detail line of a step usually lines up with the one before).
fn set_detail_prefix(prefix: &mut Cow<'static, str>, src: &str, at: &At) {
    let item_start = at.bullet;
    let indent = &src[at.line_start..item_start];
    let bullet = match src.as_bytes().get(item_start) {
        Some(b @ (b'-' | b'*' | b'+')) => *b,
        _ => b'-',
    };
    let same = prefix.len() == indent.len() + 2
        && prefix.starts_with(indent)
        && prefix.as_bytes()[indent.len()..] == [bullet, b' '];
    if !same {
        *prefix = detail_prefix_of(src, at);
    }
}

/// The indentation and bullet of an existing nested item, so new lines line up with it.
fn detail_prefix_of(src: &str, at: &At) -> Cow<'static, str> {
    let item_start = at.bullet;
    let indent = &src[at.line_start..item_start];
    let bullet = src[item_start..]
        .chars()
        .next()
        .filter(|c| matches!(c, '-' | '*' | '+'))
        .unwrap_or('-');
    if indent.bytes().all(|b| b == b' ') {
        spaced_prefix(indent.len(), bullet)
    } else {
        Cow::Owned(format!("{indent}{bullet} "))
    }
}

/// The usual line prefixes (a bullet after 0 to 8 spaces), kept once for all the steps.
const SHARED_PREFIXES: [[&str; 5]; 3] = [
    ["- ", "  - ", "    - ", "      - ", "        - "],
    ["* ", "  * ", "    * ", "      * ", "        * "],
    ["+ ", "  + ", "    + ", "      + ", "        + "],
];

/// `spaces` spaces, `bullet` and a space.
fn spaced_prefix(spaces: usize, bullet: char) -> Cow<'static, str> {
    let row = match bullet {
        '-' => Some(0),
        '*' => Some(1),
        '+' => Some(2),
        _ => None,
    };
    match row {
        Some(row) if spaces.is_multiple_of(2) && spaces <= 8 => {
            Cow::Borrowed(SHARED_PREFIXES[row][spaces / 2])
        }
        _ => Cow::Owned(format!("{}{bullet} ", " ".repeat(spaces))),
    }
}

/// `text` (indentation, a bullet and a space, from the file) without a copy of its own when it
/// is one of the usual prefixes.
fn shared_prefix(text: &str) -> Cow<'static, str> {
    SHARED_PREFIXES
        .iter()
        .flatten()
        .find(|usual| **usual == text)
        .map_or_else(
            || Cow::Owned(text.to_owned()),
            |usual| Cow::Borrowed(*usual),
        )
}

/// `a, b` or `` `a`, `b` `` → `["a", "b"]`. `value` is collapsed (its only whitespace is
/// single spaces), so trimming spaces is trimming whitespace.
fn split_list(value: &str) -> Vec<String> {
    let mut parts = Vec::with_capacity(1 + value.bytes().filter(|&b| b == b',').count());
    let mut rest = value;
    loop {
        // A plain loop: the lists are short, shorter than a vectorised search's set-up.
        let comma = rest.bytes().position(|b| b == b',');
        let part = &rest[..comma.unwrap_or(rest.len())];
        let part = trim_byte(trim_byte(trim_byte(part, b' '), b'`'), b' ');
        if !part.is_empty() {
            parts.push(part.to_owned());
        }
        match comma {
            Some(at) => rest = &rest[at + 1..],
            None => return parts,
        }
    }
}

/// `text.trim_start()`, quicker on the usual ASCII text.
fn trim_start_ws(text: &str) -> &str {
    let skip = text.bytes().take_while(|b| is_ascii_space(*b)).count();
    match text.as_bytes().get(skip) {
        Some(b) if *b >= 0x80 => text[skip..].trim_start(),
        _ => &text[skip..],
    }
}

/// `text.trim_end()`, quicker on the usual ASCII text.
fn trim_end_ws(text: &str) -> &str {
    let keep = text.len()
        - text
            .bytes()
            .rev()
            .take_while(|b| is_ascii_space(*b))
            .count();
    match text.as_bytes()[..keep].last() {
        Some(b) if *b >= 0x80 => text[..keep].trim_end(),
        _ => &text[..keep],
    }
}

/// ASCII whitespace as `char::is_whitespace` has it (`u8::is_ascii_whitespace` leaves out
/// the vertical tab).
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `text` without `byte` (ASCII) at either end.
fn trim_byte(text: &str, byte: u8) -> &str {
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|&b| b != byte).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != byte)
        .map_or(start, |i| i + 1);
    &text[start..end]
}

fn collapse_whitespace(text: &str) -> String {
    collapsed(text).into_owned()
}

/// [`collapse_whitespace`], without a copy when the text is collapsed already.
fn collapsed(text: &str) -> Cow<'_, str> {
    // Most texts are collapsed already (words with one space between, once the ends are
    // trimmed, as splitting would): they are kept as they are. First the test on bytes, for
    // ASCII text: spaces at the ends go; a control character (all the ASCII whitespace but the
    // space among them), a non-ASCII byte or two spaces in a row send it the long way.
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|&b| b != b' ').unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |i| i + 1);
    let inner = &bytes[start..end];
    let unusual = inner.iter().fold(0u8, |found, &b| {
        found | u8::from(b < 0x20) | u8::from(b >= 0x80)
    });
    let doubled = inner
        .iter()
        .zip(inner.iter().skip(1))
        .fold(0u8, |found, (&a, &b)| {
            found | (u8::from(a == b' ') & u8::from(b == b' '))
        });
    if unusual | doubled == 0 {
        return Cow::Borrowed(&text[start..end]);
    }
    let text = text.trim();
    let mut after_space = true;
    let mut already = true;
    for c in text.chars() {
        if c == ' ' && !after_space {
            after_space = true;
        } else if c.is_whitespace() {
            already = false;
            break;
        } else {
            after_space = false;
        }
    }
    // Trimmed, the text neither starts nor ends with a space.
    if already {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

pub fn first_heading(src: &str) -> Option<String> {
    let mut heading = HeadingScan::default();
    for event in Parser::new_ext(&src[bom_len(src)..], parser_options()) {
        heading.feed(&event);
        if heading.found.is_some() {
            break;
        }
    }
    heading.found
}

fn check_ids(checklist: &Checklist, locate: Locate<'_>) -> Result<(), ParseError> {
    // The ids sorted (they mostly are already): a duplicate sits beside its twin, and a
    // dependency is found by a binary search.
    let mut known: Vec<StepId> = checklist.all_steps().filter_map(|step| step.id).collect();
    known.sort_unstable();
    if known.windows(2).any(|pair| pair[0] == pair[1]) {
        duplicate_id(checklist, locate)?;
    }
    for step in checklist.all_steps() {
        for dep in &step.depends {
            if known.binary_search(dep).is_err() {
                let (line, col) = locate(step.span.title_start);
                return Err(ParseError {
                    line,
                    col,
                    message: format!(
                        "step `{}` depends on `{dep}`, which is not in the checklist",
                        step.id
                            .map_or_else(|| step.title.clone(), |id| id.to_string())
                    ),
                    hint: "fix or remove its `depends:` line".into(),
                });
            }
        }
    }
    if let Some(cycle) = dependency_cycle(checklist) {
        let first = cycle[0];
        let at = checklist
            .find(first)
            .map_or(0, |step| step.span.title_start);
        let (line, col) = locate(at);
        let path: Vec<String> = cycle.iter().map(|id| format!("`{id}`")).collect();
        return Err(ParseError {
            line,
            col,
            message: format!(
                "step `{first}` waits on itself: {}{}, so no order can run it",
                path.join(" waits on "),
                if cycle.iter().any(|id| id.is_sub()) {
                    " (a parent is done after its sub-steps, and a sub-step waits on what its \
                     parent depends on)"
                } else {
                    ""
                }
            ),
            hint: "remove one of those `depends:` lines".into(),
        });
    }
    Ok(())
}

/// A chain of steps that ends where it began, in file order of its first step: `[S1, S2, S1]`.
/// A step waits on its `depends`, a sub-step also on its parent's, and a parent on its
/// sub-steps (it is done after them), as `tick run` schedules them.
fn dependency_cycle(checklist: &Checklist) -> Option<Vec<StepId>> {
    let mut waits: BTreeMap<StepId, Vec<StepId>> = BTreeMap::new();
    let mut order = Vec::new();
    for step in &checklist.steps {
        let Some(id) = step.id else { continue };
        order.push(id);
        let mut on = step.depends.clone();
        on.extend(step.substeps.iter().filter_map(|sub| sub.id));
        waits.insert(id, on);
        for sub in &step.substeps {
            let Some(sub_id) = sub.id else { continue };
            order.push(sub_id);
            let mut on = sub.depends.clone();
            on.extend(step.depends.iter().copied());
            waits.insert(sub_id, on);
        }
    }
    // Depth first, each step once, without recursion (a chain of 10,000 steps is a long
    // path): `path` is the chain being followed, each with the next of its waits to try.
    let mut done = std::collections::BTreeSet::new();
    for start in order {
        if done.contains(&start) {
            continue;
        }
        let mut path: Vec<(StepId, usize)> = vec![(start, 0)];
        done.insert(start);
        while let Some((id, next)) = path.last_mut() {
            let Some(&on) = waits.get(id).and_then(|w| w.get(*next)) else {
                path.pop();
                continue;
            };
            *next += 1;
            if let Some(at) = path.iter().position(|(p, _)| *p == on) {
                let mut cycle: Vec<StepId> = path[at..].iter().map(|(p, _)| *p).collect();
                cycle.push(on);
                return Some(cycle);
            }
            if done.insert(on) {
                path.push((on, 0));
            }
        }
    }
    None
}

/// The error for the first step (in file order) whose id an earlier step has.
fn duplicate_id(checklist: &Checklist, locate: Locate<'_>) -> Result<(), ParseError> {
    let mut seen: BTreeMap<StepId, usize> = BTreeMap::new();
    for step in checklist.all_steps() {
        if let Some(id) = step.id
            && let Some(first) = seen.insert(id, step.line)
        {
            let (line, col) = locate(step.span.title_start);
            return Err(ParseError {
                    line,
                    col,
                    message: format!("duplicate step id `{id}` (also on line {first})"),
                    hint: "ids are never reused; remove the id from the newer step and tick will assign a free one".into(),
                });
        }
    }
    Ok(())
}

/// A change to one step: its new status and runner-owned detail lines to set or remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepEdit {
    pub status: Option<StepStatus>,
    pub set: Vec<(RunnerKey, String)>,
    pub remove: Vec<RunnerKey>,
}

impl StepEdit {
    /// The usual edit for a new status: `blocked:`/`stale:` lines follow the status (a reason
    /// replaces the old one; leaving the status removes the line), and `evidence:` goes when a
    /// step is no longer done.
    pub fn status(status: StepStatus, reason: Option<&str>) -> Self {
        let mut edit = StepEdit {
            status: Some(status),
            ..StepEdit::default()
        };
        for (key, owner) in [
            (RunnerKey::Blocked, StepStatus::Blocked),
            (RunnerKey::Stale, StepStatus::Stale),
        ] {
            if status == owner {
                if let Some(reason) = reason {
                    edit.set.push((key, reason.to_owned()));
                }
            } else {
                edit.remove.push(key);
            }
        }
        if !matches!(status, StepStatus::Done | StepStatus::Stale) {
            edit.remove.push(RunnerKey::Evidence);
        }
        edit
    }
}

/// Applies `edit` to step `id`: the marker byte is replaced in place, runner lines are
/// replaced, inserted or removed, and every other byte stays as it was.
pub fn edit_step(src: &str, checklist: &Checklist, id: StepId, edit: &StepEdit) -> Option<String> {
    let step = checklist.find(id)?;
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    if let Some(status) = edit.status {
        let current = src[step.span.marker..].chars().next();
        let keep = status == StepStatus::Done && current == Some('X');
        if !keep && current != Some(status.marker()) {
            let len = current.map_or(1, char::len_utf8);
            edits.push((
                step.span.marker..step.span.marker + len,
                status.marker().to_string(),
            ));
        }
    }
    let mut inserts = String::new();
    for (key, value) in &edit.set {
        let value = one_line(value);
        if let Some((_, value_range)) = step.span.runner_lines.get(key) {
            if src[value_range.clone()] != value {
                edits.push((value_range.clone(), value));
            }
        } else {
            inserts.push_str(&step.span.detail_prefix);
            inserts.push_str(key.as_str());
            inserts.push_str(": ");
            inserts.push_str(&value);
            inserts.push_str(step.span.eol);
        }
    }
    for key in &edit.remove {
        if edit.set.iter().any(|(set, _)| set == key) {
            continue;
        }
        if let Some((line_range, _)) = step.span.runner_lines.get(key) {
            let mut range = line_range.clone();
            // The last line of a file without a final newline: take the newline before it
            // instead, so the file still ends the way it did.
            if range.end == src.len() && !src.ends_with('\n') && range.start > 0 {
                range.start -= 1;
                if src[..range.start].ends_with('\r') {
                    range.start -= 1;
                }
            }
            edits.push((range, String::new()));
        }
    }
    if !inserts.is_empty() {
        let at = step.span.insert_at;
        if at == src.len() && !src.ends_with('\n') {
            let trimmed = inserts
                .strip_suffix(step.span.eol)
                .unwrap_or(&inserts)
                .to_owned();
            edits.push((at..at, format!("{}{trimmed}", step.span.eol)));
        } else {
            edits.push((at..at, inserts));
        }
    }
    Some(apply(src, edits))
}

/// A parent follows its sub-steps: ticked when all are done (unless it has a `verify` of its
/// own, whose pass ticks it), unticked when one reopens.
pub fn settle_parent(src: &str, parent: StepId) -> Result<String, ParseError> {
    let list = parse(src)?;
    let Some(step) = list.find(parent) else {
        return Ok(src.to_owned());
    };
    if step.substeps.is_empty() {
        return Ok(src.to_owned());
    }
    let all_done = step.substeps.iter().all(|s| s.status == StepStatus::Done);
    let status = match (all_done, step.status) {
        // A parent with its own `verify` is ticked by that check, never by its sub-steps.
        (true, _) if step.checks_itself() => return Ok(src.to_owned()),
        (true, StepStatus::Pending | StepStatus::InProgress | StepStatus::Stale) => {
            StepStatus::Done
        }
        (false, StepStatus::Done) => StepStatus::Pending,
        _ => return Ok(src.to_owned()),
    };
    Ok(
        edit_step(src, &list, parent, &StepEdit::status(status, None))
            .unwrap_or_else(|| src.to_owned()),
    )
}

/// Gives every step without an id the next free one, by inserting only the id token. Returns
/// the new text and the ids assigned, in file order.
pub fn assign_ids(src: &str, checklist: &Checklist) -> (String, Vec<StepId>) {
    let mut next_major = checklist
        .all_steps()
        .filter_map(|step| step.id)
        .map(|id| id.major)
        .max()
        .unwrap_or(0);
    let mut edits = Vec::new();
    let mut assigned = Vec::new();
    for step in &checklist.steps {
        let major = if let Some(id) = step.id {
            id.major
        } else {
            next_major += 1;
            let id = StepId::top(next_major);
            edits.push((
                step.span.title_start..step.span.title_start,
                format!("{id} "),
            ));
            assigned.push(id);
            next_major
        };
        let mut next_minor = step
            .substeps
            .iter()
            .filter_map(|sub| sub.id.and_then(|id| id.minor))
            .max()
            .unwrap_or(0);
        for sub in &step.substeps {
            if sub.id.is_none() {
                next_minor += 1;
                let id = StepId::sub(major, next_minor);
                edits.push((sub.span.title_start..sub.span.title_start, format!("{id} ")));
                assigned.push(id);
            }
        }
    }
    (apply(src, edits), assigned)
}

/// Runner-written values are one line: a newline in a reason would end the detail line and
/// start markdown of its own.
fn one_line(value: &str) -> String {
    let collapsed = collapse_whitespace(value);
    if collapsed.is_empty() {
        "(no reason given)".to_owned()
    } else {
        collapsed
    }
}

fn apply(src: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(range, _)| std::cmp::Reverse((range.start, range.end)));
    let mut out = src.to_owned();
    for (range, text) in edits {
        out.replace_range(range, &text);
    }
    out
}

/// Byte offset ↔ line/column.
struct LineIndex {
    starts: Vec<usize>,
    len: usize,
    /// The line [`LineIndex::line_of`] found last.
    hint: std::cell::Cell<usize>,
}

impl LineIndex {
    fn new(src: &str) -> Self {
        let mut starts = Vec::with_capacity(src.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        LineIndex {
            starts,
            len: src.len(),
            hint: std::cell::Cell::new(0),
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        // The steps are built front to back: the line asked for is nearly always the one asked
        // for last or one just after it.
        let hint = self.hint.get();
        if self.starts.get(hint).is_some_and(|&start| start <= offset) {
            let mut line = hint;
            for _ in 0..4 {
                match self.starts.get(line + 1) {
                    Some(&next) if next <= offset => line += 1,
                    _ => {
                        self.hint.set(line);
                        return line;
                    }
                }
            }
        }
        let line = match self.starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        };
        self.hint.set(line);
        line
    }

    /// 1-based line and column; the column counts characters, as editors do.
    fn line_col(&self, src: &str, offset: usize) -> (usize, usize) {
        let line = self.line_of(offset);
        let start = self.starts[line];
        let col = src.get(start..offset).map_or(1, |s| s.chars().count() + 1);
        (line + 1, col)
    }

    fn line_start(&self, offset: usize) -> usize {
        self.starts[self.line_of(offset)]
    }

    /// The offset of the line end (the `\n`, or the end of the text) of `offset`'s line.
    fn line_end(&self, offset: usize) -> usize {
        self.starts
            .get(self.line_of(offset) + 1)
            .map_or(self.len, |next| next - 1)
    }

    /// The start of the line after the one holding the last byte before `end`.
    fn next_line_start(&self, src: &str, end: usize) -> usize {
        let last = end.saturating_sub(1).min(src.len().saturating_sub(1));
        self.starts
            .get(self.line_of(last) + 1)
            .copied()
            .unwrap_or(src.len())
    }
}

#[path = "todo_scan.rs"]
mod scan;

#[cfg(test)]
#[path = "todo_md_tests.rs"]
mod tests;
