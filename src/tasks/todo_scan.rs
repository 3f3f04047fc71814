//! A line scanner for the shape TODO.md almost always has: a heading, an HTML comment, prose,
//! and list items indented two spaces a level. It builds the checklist pulldown-cmark's reading
//! builds (the same steps, offsets and first heading), at a fraction of the cost, and answers
//! `None` for any line whose reading it is not sure of: a tab, a code fence, a block quote, a
//! setext underline, an ordered list, a line that could continue a paragraph, odd indentation.
//! The caller then parses the file with pulldown-cmark. Property tests compare the two on
//! generated files that mix both kinds of lines (`scanner_agrees_with_pulldown_cmark`,
//! `halves_read_at_once_are_the_whole`).

use std::ops::Range;

use memchr::memmem::find;

use super::{
    At, Checklist, Level, Role, add_detail, build_step, check_ids, first_heading, first_sub_step,
};
use crate::plan::StepStatus;

/// What the line before was, for the rules that depend on it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// The start of the file, a heading or the end of an HTML comment.
    Block,
    Blank,
    /// A line of a paragraph outside any list.
    Paragraph,
    Item,
}

/// The checklist of `src`, built as [`super::parse`] builds it from pulldown-cmark's list
/// items; `None` when the file has a line this scanner does not read, or an error (which the
/// full parse then reports, with its position).
pub(super) fn checklist(src: &str) -> Option<Checklist> {
    checklist_split(src, PARALLEL_FROM)
}

/// Files at least this long are read in two halves at once (on two cores, when there are).
const PARALLEL_FROM: usize = 256 * 1024;

/// [`checklist`], reading a file of `parallel_from` bytes or more in two halves, each on its
/// own thread. The halves meet at a top-level step's line, where the scanner's state does not
/// depend on what came before: every item before it has ended there, and the line above is
/// not in a comment (the first half says so, or the file is read in one go).
pub(super) fn checklist_split(src: &str, parallel_from: usize) -> Option<Checklist> {
    let bytes = src.as_bytes();
    // Tabs, other control characters and a lone CR change how a line reads.
    let control = bytes.chunks(4096).any(|chunk| {
        // Branch-free, so that it runs on many bytes at a time.
        let hits = chunk.iter().map(|&b| {
            u8::from(b < 0x20) & u8::from(b != b'\n') & u8::from(b != b'\r') | u8::from(b == 0x7f)
        });
        hits.fold(0, |found, hit| found | hit) != 0
    });
    if control || memchr::memchr_iter(b'\r', bytes).any(|at| bytes.get(at + 1) != Some(&b'\n')) {
        return None;
    }
    let split = (src.len() >= parallel_from)
        .then(|| {
            memchr::memmem::find(&bytes[src.len() / 2..], b"\n- [").map(|at| src.len() / 2 + at + 1)
        })
        .flatten();
    let locate = |_: usize| (0, 0);
    // Room for every step in the list the first part starts (the second part's are moved in).
    let steps = 1 + memchr::memmem::find_iter(bytes, b"\n- [").count();
    let list = match split {
        Some(split) => {
            let lines_before = memchr::memchr_iter(b'\n', &bytes[..split]).count();
            let (first, second) = std::thread::scope(|scope| {
                // No thread to be had (a limit on processes): the second half after the first.
                let second = std::thread::Builder::new()
                    .spawn_scoped(scope, || scan(src, split..src.len(), lines_before, 0));
                let first = scan(src, 0..split, 0, steps);
                let second = match second {
                    Ok(thread) => thread.join().ok().flatten(),
                    Err(_) => scan(src, split..src.len(), lines_before, 0),
                };
                (first, second)
            });
            match (first, second) {
                (Some(first), Some(second)) if !first.in_comment => {
                    let mut list = first.list;
                    list.heading = list.heading.or(second.list.heading);
                    list.steps.extend(second.list.steps);
                    list
                }
                _ => scan(src, 0..src.len(), 0, steps)?.list,
            }
        }
        None => scan(src, 0..src.len(), 0, steps)?.list,
    };
    check_ids(&list, &locate).ok()?;
    Some(list)
}

/// What [`scan`] read of a part of the file.
struct Part {
    list: Checklist,
    /// Whether the part ended inside an HTML comment.
    in_comment: bool,
}

/// Reads the lines in `range` (which starts at a line's start, after `lines_before` lines):
/// their steps, without checking ids across them. `room` is how many steps to make room for
/// (0: as many as the part has).
#[allow(
    clippy::too_many_lines,
    reason = "one pass over the lines, its state (open items, comment, previous line) in locals of \
              this hot loop rather than threaded through calls"
)]
fn scan(src: &str, range: Range<usize>, lines_before: usize, room: usize) -> Option<Part> {
    let bytes = &src.as_bytes()[..range.end];
    let room = if room == 0 {
        1 + memchr::memmem::find_iter(&bytes[range.start..], b"\n- [").count()
    } else {
        room
    };
    let mut list = Checklist {
        heading: None,
        steps: Vec::with_capacity(room),
    };
    // The open items, outermost first: the item at depth d is indented 2 * d spaces.
    let mut open: Vec<Role> = Vec::with_capacity(4);
    // Errors are reported by the full parse: here they only mean "not this way".
    let locate = |_: usize| (0, 0);
    let mut prev = Prev::Block;
    let mut in_comment = false;
    let mut line_number = lines_before;
    let mut pos = range.start;
    // One search over the part, not one per line.
    let mut newlines = memchr::memchr_iter(b'\n', &bytes[range.start..]).map(|i| range.start + i);
    while pos < bytes.len() {
        line_number += 1;
        let newline = newlines.next();
        let next = newline.map_or(bytes.len(), |nl| nl + 1);
        let mut end = newline.unwrap_or(bytes.len());
        let crlf = end > pos && bytes[end - 1] == b'\r';
        if crlf {
            end -= 1;
        }
        let line = &bytes[pos..end];
        if in_comment {
            if find(line, b"-->").is_some() {
                in_comment = false;
                prev = Prev::Block;
            }
            pos = next;
            continue;
        }
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        if indent == line.len() {
            prev = Prev::Blank;
            pos = next;
            continue;
        }
        let first = line[indent];
        if matches!(first, b'-' | b'*' | b'+') && line.get(indent + 1) == Some(&b' ') {
            // A list item: `- ` and then its text, two spaces deeper per level.
            if indent % 2 != 0 || indent > 4 || indent / 2 > open.len() {
                return None;
            }
            let content = indent + 2;
            let head_end = line.len() - line.iter().rev().take_while(|&&b| b == b' ').count();
            let marker = match line.get(content)? {
                b'[' => {
                    // A step's box: one marker character, a space, a title.
                    let status = StepStatus::from_marker(char::from(*line.get(content + 1)?))?;
                    let boxed = line.get(content + 2) == Some(&b']')
                        && line.get(content + 3) == Some(&b' ')
                        && head_end > content + 4;
                    if !boxed {
                        return None;
                    }
                    Some((status, pos + content + 1))
                }
                b if b.is_ascii_alphabetic() => None,
                _ => return None,
            };
            close(&mut list, &mut open, indent / 2, pos);
            let head = pos + content..pos + head_end;
            let mut code_spans = code_spans(&src[head.clone()])?;
            let at = At {
                bullet: pos + indent,
                line_start: pos,
                head: Some(head),
                after_head: next,
                // Known when the item ends (`close`).
                after_item: next,
                line: line_number,
                head_line_start: pos,
                crlf,
            };
            let parent = open.last().copied().unwrap_or(Role::Root);
            let role = match (parent, marker) {
                (Role::Root, None) | (Role::Detail | Role::Ignored, _) => Role::Ignored,
                (Role::Root, Some((status, marker))) => {
                    let step = build_step(src, &at, status, marker, Level::Top, &locate).ok()?;
                    list.steps.push(step);
                    Role::Step(list.steps.len() - 1, None)
                }
                (Role::Step(parent, None), Some((status, marker))) => {
                    let level = Level::Sub(list.steps[parent].id);
                    let step = build_step(src, &at, status, marker, level, &locate).ok()?;
                    first_sub_step(&mut list.steps[parent], src, &at);
                    list.steps[parent].substeps.push(step);
                    Role::Step(parent, Some(list.steps[parent].substeps.len() - 1))
                }
                // A checkbox under a sub-step is an error.
                (Role::Step(_, Some(_)), Some(_)) => return None,
                (Role::Step(parent, sub), None) => {
                    let step = match sub {
                        Some(sub) => &mut list.steps[parent].substeps[sub],
                        None => &mut list.steps[parent],
                    };
                    add_detail(src, step, &at, &mut code_spans, &locate).ok()?;
                    Role::Detail
                }
            };
            open.push(role);
            prev = Prev::Item;
        } else if indent > 0 {
            // Indented text: a paragraph's continuation, code, or an item's second block.
            return None;
        } else if first == b'#' {
            let level = line.iter().take_while(|&&b| b == b'#').count();
            if level > 6 || line.get(level).is_some_and(|&b| b != b' ') {
                return None;
            }
            close(&mut list, &mut open, 0, pos);
            if level == 1 && list.heading.is_none() {
                list.heading = first_heading(&src[pos..end]);
            }
            prev = Prev::Block;
        } else if line.starts_with(b"<!--") {
            // `<!-->` and `<!--->` are whole comments to some readers and openers to others.
            if line[4..].starts_with(b">") || line[4..].starts_with(b"->") {
                return None;
            }
            close(&mut list, &mut open, 0, pos);
            in_comment = find(&line[4..], b"-->").is_none();
            prev = Prev::Block;
        } else if first.is_ascii_alphabetic() {
            // Prose outside the list. Right after an item's line it would continue the item's
            // text (a lazy continuation line).
            if prev == Prev::Item {
                return None;
            }
            close(&mut list, &mut open, 0, pos);
            prev = Prev::Paragraph;
        } else {
            return None;
        }
        pos = next;
    }
    close(&mut list, &mut open, 0, bytes.len());
    Some(Part { list, in_comment })
}

/// Ends the open items at `depth` and deeper: their lines stop where the line at `at` starts
/// (blank lines before it belong to them, as in pulldown-cmark).
fn close(list: &mut Checklist, open: &mut Vec<Role>, depth: usize, at: usize) {
    while open.len() > depth {
        let step = match open.pop() {
            Some(Role::Step(step, None)) => &mut list.steps[step],
            Some(Role::Step(step, Some(sub))) => &mut list.steps[step].substeps[sub],
            _ => continue,
        };
        step.span.item_lines.end = at;
    }
}

/// The code spans of a one-line text, unescaped as pulldown-cmark gives them: a run of
/// backticks opens a span that the next run of the same length closes; a run without a match
/// is text. `None` where other syntax could take the backticks first: a backslash escape, an
/// HTML tag or autolink, a link destination.
fn code_spans(text: &str) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    if !bytes.contains(&b'`') {
        return Some(Vec::new());
    }
    // Short texts: plain loops beat the vectorised searches' set-up.
    let link = bytes.windows(2).any(|pair| pair == b"](");
    if link || bytes.iter().any(|&b| b == b'\\' || b == b'<') {
        return None;
    }
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(open) = run_from(bytes, at) {
        let Range { start, end } = open;
        let len = end - start;
        let mut search = end;
        let mut closed = None;
        while let Some(run) = run_from(bytes, search) {
            if run.len() == len {
                closed = Some(run);
                break;
            }
            search = run.end;
        }
        match closed {
            Some(close) => {
                let inner = &text[end..close.start];
                let stripped = if inner.len() >= 2
                    && inner.starts_with(' ')
                    && inner.ends_with(' ')
                    && inner.bytes().any(|b| b != b' ')
                {
                    &inner[1..inner.len() - 1]
                } else {
                    inner
                };
                spans.push(stripped.to_owned());
                at = close.end;
            }
            None => at = end,
        }
    }
    Some(spans)
}

/// The next run of backticks at or after `from`.
fn run_from(bytes: &[u8], from: usize) -> Option<Range<usize>> {
    let start = from + bytes.get(from..)?.iter().position(|&b| b == b'`')?;
    let len = bytes[start..].iter().take_while(|&&b| b == b'`').count();
    Some(start..start + len)
}
