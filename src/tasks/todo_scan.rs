//! A line scanner for the shape TODO.md almost always has: a heading, an HTML comment, prose,
//! and list items indented two spaces a level. It finds the same list items (and the same
//! first heading) as pulldown-cmark does, at a fraction of the cost, and answers `None` for any
//! line whose reading it is not sure of: a tab, a code fence, a block quote, a setext
//! underline, an ordered list, a line that could continue a paragraph, odd indentation. The
//! caller then parses the file with pulldown-cmark. A property test compares the two on
//! generated files that mix both kinds of lines (`scanner_agrees_with_pulldown_cmark`).

use std::ops::Range;

use memchr::memchr;
use memchr::memmem::find;

use super::{Item, first_heading};

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

/// The list items of `src` and its first level-1 heading, as `collect_items` finds them;
/// `None` when the file has a line this scanner does not read.
pub(super) fn items(src: &str) -> Option<(Vec<Item>, Option<String>)> {
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
    let mut items: Vec<Item> = Vec::with_capacity(src.len() / 48);
    // The open items, outermost first: the item at depth d is indented 2 * d spaces.
    let mut open: Vec<usize> = Vec::with_capacity(4);
    let mut heading: Option<String> = None;
    let mut prev = Prev::Block;
    let mut in_comment = false;
    let mut pos = 0;
    while pos < bytes.len() {
        let newline = memchr(b'\n', &bytes[pos..]).map(|i| pos + i);
        let next = newline.map_or(bytes.len(), |nl| nl + 1);
        let mut end = newline.unwrap_or(bytes.len());
        if end > pos && bytes[end - 1] == b'\r' {
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
            match line.get(content)? {
                b'[' => {
                    // A step's box: one marker character, a space, a title.
                    let marker_ok = matches!(
                        line.get(content + 1),
                        Some(b' ' | b'x' | b'X' | b'-' | b'!' | b'~')
                    ) && line.get(content + 2) == Some(&b']')
                        && line.get(content + 3) == Some(&b' ')
                        && head_end > content + 4;
                    if !marker_ok {
                        return None;
                    }
                }
                b if b.is_ascii_alphabetic() => {}
                _ => return None,
            }
            close(&mut items, &mut open, indent / 2, pos);
            let head = pos + content..pos + head_end;
            let code_spans = code_spans(&src[head.clone()])?;
            items.push(Item {
                range: pos..bytes.len(),
                parent: open.last().copied(),
                in_quote: false,
                head: Some(head),
                code_spans,
            });
            open.push(items.len() - 1);
            prev = Prev::Item;
        } else if indent > 0 {
            // Indented text: a paragraph's continuation, code, or an item's second block.
            return None;
        } else if first == b'#' {
            let level = line.iter().take_while(|&&b| b == b'#').count();
            if level > 6 || line.get(level).is_some_and(|&b| b != b' ') {
                return None;
            }
            close(&mut items, &mut open, 0, pos);
            if level == 1 && heading.is_none() {
                heading = first_heading(&src[pos..end]);
            }
            prev = Prev::Block;
        } else if line.starts_with(b"<!--") {
            // `<!-->` and `<!--->` are whole comments to some readers and openers to others.
            if line[4..].starts_with(b">") || line[4..].starts_with(b"->") {
                return None;
            }
            close(&mut items, &mut open, 0, pos);
            in_comment = find(&line[4..], b"-->").is_none();
            prev = Prev::Block;
        } else if first.is_ascii_alphabetic() {
            // Prose outside the list. Right after an item's line it would continue the item's
            // text (a lazy continuation line).
            if prev == Prev::Item {
                return None;
            }
            close(&mut items, &mut open, 0, pos);
            prev = Prev::Paragraph;
        } else {
            return None;
        }
        pos = next;
    }
    close(&mut items, &mut open, 0, bytes.len());
    Some((items, heading))
}

/// Ends the open items at `depth` and deeper: their range stops where the line at `at`
/// starts (blank lines before it belong to them, as in pulldown-cmark).
fn close(items: &mut [Item], open: &mut Vec<usize>, depth: usize, at: usize) {
    while open.len() > depth {
        if let Some(index) = open.pop() {
            items[index].range.end = at;
        }
    }
}

/// The code spans of a one-line text, unescaped as pulldown-cmark gives them: a run of
/// backticks opens a span that the next run of the same length closes; a run without a match
/// is text. `None` where other syntax could take the backticks first: a backslash escape, an
/// HTML tag or autolink, a link destination.
fn code_spans(text: &str) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    if memchr(b'`', bytes).is_none() {
        return Some(Vec::new());
    }
    if bytes.iter().any(|&b| b == b'\\' || b == b'<') || find(bytes, b"](").is_some() {
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
    let start = from + memchr(b'`', bytes.get(from..)?)?;
    let len = bytes[start..].iter().take_while(|&&b| b == b'`').count();
    Some(start..start + len)
}
