//! The line reader the markdown formats share (Kiro, Spec Kit, OpenSpec, Backlog.md): each line
//! as a heading, a checkbox item with the byte offset of its mark, another bullet, or prose;
//! lines inside fenced code blocks are nobody's tasks. One pass over the bytes, splitting only
//! at ASCII, so any input is read in linear time without a panic. Also the markdown
//! write-back: one mark byte replaced, on a line whose hash is still the imported one.

use super::{Mark, NotWritten, hash};

/// One line of a markdown task file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Heading {
        level: usize,
        text: &'a str,
    },
    /// `- [ ] text` (or `*`, `+`, `1.` bullets); `star` is Kiro's optional `- [ ]*`.
    Check {
        indent: usize,
        marker: u8,
        star: bool,
        text: &'a str,
    },
    Bullet {
        indent: usize,
        text: &'a str,
    },
    Text {
        indent: usize,
        text: &'a str,
    },
    Blank,
}

/// A line with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At<'a> {
    pub line: Line<'a>,
    /// 1-based.
    pub number: usize,
    /// Byte offset of the line's start.
    pub start: usize,
    /// The line without its line ending.
    pub raw: &'a str,
    /// Byte offset of the mark within the line, for a checkbox.
    pub mark_col: Option<usize>,
}

impl At<'_> {
    /// The mark of a checkbox line, for a later write-back.
    pub fn mark(&self) -> Option<Mark> {
        self.mark_col.map(|col| Mark {
            line: self.number,
            col,
            hash: hash(self.raw),
            key: String::new(),
        })
    }
}

/// The lines of `src`, fenced code left out.
pub fn lines(src: &str) -> Vec<At<'_>> {
    let mut out = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut start = 0;
    let mut number = 0;
    let bytes = src.as_bytes();
    while start < bytes.len() {
        number += 1;
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let mut raw = &src[start..end];
        if let Some(stripped) = raw.strip_suffix('\r') {
            raw = stripped;
        }
        let indent = raw
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count();
        let rest = &raw[indent..];
        let fence_mark = fence_of(rest);
        match (fence, fence_mark) {
            (Some((ch, len)), Some((c, l)))
                if c == ch && l >= len && rest[l..].trim().is_empty() =>
            {
                fence = None;
            }
            (Some(_), _) => {}
            (None, Some(open)) => fence = Some(open),
            (None, None) => {
                let (line, mark_col) = classify(indent, rest);
                out.push(At {
                    line,
                    number,
                    start,
                    raw,
                    mark_col,
                });
            }
        }
        start = end + 1;
    }
    out
}

fn fence_of(rest: &str) -> Option<(u8, usize)> {
    let first = *rest.as_bytes().first()?;
    if first != b'`' && first != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|b| *b == first).count();
    (len >= 3).then_some((first, len))
}

fn classify(indent: usize, rest: &str) -> (Line<'_>, Option<usize>) {
    if rest.trim().is_empty() {
        return (Line::Blank, None);
    }
    let bytes = rest.as_bytes();
    if bytes[0] == b'#' {
        let level = bytes.iter().take_while(|b| **b == b'#').count();
        if level <= 6 && bytes.get(level).is_none_or(|b| *b == b' ' || *b == b'\t') {
            return (
                Line::Heading {
                    level,
                    text: rest[level..].trim().trim_end_matches('#').trim(),
                },
                None,
            );
        }
    }
    let Some(after_bullet) = bullet_len(bytes) else {
        return (
            Line::Text {
                indent,
                text: rest.trim(),
            },
            None,
        );
    };
    let item = &rest[after_bullet..];
    let ib = item.as_bytes();
    if ib.len() >= 3 && ib[0] == b'[' && ib[2] == b']' && ib[1].is_ascii() && ib[1] >= b' ' {
        let mut text = &item[3..];
        let star = text.starts_with('*');
        if star {
            text = &text[1..];
        }
        if text.is_empty() || text.starts_with(' ') || text.starts_with('\t') {
            return (
                Line::Check {
                    indent,
                    marker: ib[1],
                    star,
                    text: text.trim(),
                },
                Some(indent + after_bullet + 1),
            );
        }
    }
    (
        Line::Bullet {
            indent,
            text: item.trim(),
        },
        None,
    )
}

/// The length of a list bullet and the space after it (`- `, `* `, `+ `, `1. `, `1) `): one
/// to four spaces, as markdown reads a list item (`-  [ ] T004` is a task too).
fn bullet_len(bytes: &[u8]) -> Option<usize> {
    let marker = match bytes.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            (digits <= 9 && matches!(bytes.get(digits), Some(b'.' | b')'))).then_some(digits + 1)?
        }
        _ => return None,
    };
    let spaces = bytes[marker..]
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    // More than four is the item's own indented text: its content starts after one.
    match spaces {
        0 => None,
        1..=4 => Some(marker + spaces),
        _ => Some(marker + 1),
    }
}

/// The text of the first level-1 heading that `title` keeps (it may also rewrite it): a
/// format's own boilerplate heading ("Tasks", "Implementation Plan") is not a plan's title.
pub fn title(lines: &[At<'_>], title: impl Fn(&str) -> Option<String>) -> Option<String> {
    lines.iter().find_map(|at| match at.line {
        Line::Heading { level: 1, text } => title(text),
        _ => None,
    })
}

/// Whether a checkbox mark says done.
pub fn is_done(marker: u8) -> bool {
    marker == b'x' || marker == b'X'
}

/// `src` with the checkbox at `mark` ticked as `done` (`x` or `X`): the line is the imported
/// one if its hash still matches (at its old number, else the one line anywhere with that
/// hash); only the mark's byte changes.
pub fn write_back(src: &str, mark: &Mark, done: char) -> Result<String, NotWritten> {
    let lines: Vec<(usize, &str)> = line_spans(src);
    let matches = |(_, raw): &(usize, &str)| hash(raw) == mark.hash;
    let at = match lines.get(mark.line.wrapping_sub(1)) {
        Some(line) if matches(line) => Some(*line),
        _ => {
            let mut found = lines.iter().filter(|l| matches(l));
            match (found.next(), found.next()) {
                (Some(line), None) => Some(*line),
                _ => None,
            }
        }
    };
    let Some((start, raw)) = at else {
        return Err(NotWritten::Changed);
    };
    let bytes = raw.as_bytes();
    let col = mark.col;
    if col == 0 || bytes.get(col - 1) != Some(&b'[') || bytes.get(col + 1) != Some(&b']') {
        return Err(NotWritten::Changed);
    }
    let marker = bytes[col];
    if is_done(marker) {
        return Err(NotWritten::AlreadyDone);
    }
    if !marker.is_ascii() {
        return Err(NotWritten::Changed);
    }
    let at = start + col;
    let mut out = String::with_capacity(src.len());
    out.push_str(&src[..at]);
    out.push(done);
    out.push_str(&src[at + 1..]);
    Ok(out)
}

/// Each line's start and text (without its line ending).
fn line_spans(src: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < src.len() {
        let end = memchr::memchr(b'\n', &src.as_bytes()[start..]).map_or(src.len(), |i| start + i);
        let raw = &src[start..end];
        out.push((start, raw.strip_suffix('\r').unwrap_or(raw)));
        start = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn checkboxes_headings_bullets_and_code_are_told_apart() {
        let src = "# Tasks\n\n- [ ] 1. Set up\n  - [x] 1.1 Sub\n  - _Requirements: 1.1_\n- [ ]* 2 Optional\n```\n- [ ] not a task\n```\n* [X] T1 star bullet\nprose\n";
        let got: Vec<Line<'_>> = lines(src).into_iter().map(|a| a.line).collect();
        assert_eq!(
            got,
            [
                Line::Heading {
                    level: 1,
                    text: "Tasks"
                },
                Line::Blank,
                Line::Check {
                    indent: 0,
                    marker: b' ',
                    star: false,
                    text: "1. Set up"
                },
                Line::Check {
                    indent: 2,
                    marker: b'x',
                    star: false,
                    text: "1.1 Sub"
                },
                Line::Bullet {
                    indent: 2,
                    text: "_Requirements: 1.1_"
                },
                Line::Check {
                    indent: 0,
                    marker: b' ',
                    star: true,
                    text: "2 Optional"
                },
                Line::Check {
                    indent: 0,
                    marker: b'X',
                    star: false,
                    text: "T1 star bullet"
                },
                Line::Text {
                    indent: 0,
                    text: "prose"
                },
            ]
        );
    }

    #[test]
    fn a_task_with_more_space_after_its_bullet_is_a_task() {
        for line in [
            "-  [ ] T004 odd indent",
            "*    [ ] T004 odd indent",
            "1.  [ ] T004 odd indent",
        ] {
            let found = lines(line);
            assert!(
                matches!(
                    found[0].line,
                    Line::Check {
                        marker: b' ',
                        text: "T004 odd indent",
                        ..
                    }
                ),
                "{line}: {:?}",
                found[0].line
            );
        }
        assert!(!matches!(
            lines("-[ ] T4 no space")[0].line,
            Line::Check { .. }
        ));
    }

    #[test]
    fn the_mark_is_the_byte_between_the_brackets() {
        let src = "x\n  - [ ] 1.1 Sub\r\n";
        let at = &lines(src)[1];
        let mark = at.mark().unwrap();
        assert_eq!((mark.line, mark.col), (2, 5));
        assert_eq!(
            write_back(src, &mark, 'x').unwrap(),
            "x\n  - [x] 1.1 Sub\r\n"
        );
    }

    #[test]
    fn a_line_changed_since_the_import_is_not_written() {
        let src = "- [ ] 1 Title\n";
        let mark = lines(src)[0].mark().unwrap();
        assert_eq!(
            write_back("- [ ] 1 Title, edited\n", &mark, 'x'),
            Err(NotWritten::Changed)
        );
        assert_eq!(
            write_back("- [x] 1 Title\n", &mark, 'x'),
            Err(NotWritten::Changed)
        );
        assert_eq!(write_back("", &mark, 'x'), Err(NotWritten::Changed));
    }

    #[test]
    fn a_line_that_moved_is_found_by_its_hash_unless_it_is_there_twice() {
        let src = "- [ ] 1 Title\n";
        let mark = lines(src)[0].mark().unwrap();
        assert_eq!(
            write_back("new\n\n- [ ] 1 Title\n", &mark, 'X').unwrap(),
            "new\n\n- [X] 1 Title\n"
        );
        assert_eq!(
            write_back("a\n- [ ] 1 Title\n- [ ] 1 Title\n", &mark, 'x'),
            Err(NotWritten::Changed)
        );
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_a_panic(src in "\\PC{0,400}") {
            let _ = lines(&src);
        }

        #[test]
        fn any_markdown_like_text_is_read_without_a_panic(src in "([-*+ #`~\\[\\]xX0-9.)\n\r\t]|é|a){0,300}") {
            for at in lines(&src) {
                if let Some(mark) = at.mark() {
                    let _ = write_back(&src, &mark, 'x');
                }
            }
        }

        #[test]
        fn write_back_changes_only_the_mark(
            before in "(- [a-z ]{0,8}\n|# [a-z]{0,5}\n|\n){0,6}",
            indent in " {0,4}",
            title in "[a-zA-Z0-9 ./é]{0,20}",
            after in "(- \\[ \\] [a-z]{0,8}\n|[a-z ]{0,8}\n){0,6}",
        ) {
            let src = format!("{before}{indent}- [ ] {title}\n{after}");
            let target = lines(&src).into_iter().find(|a| a.number == before.lines().count() + 1 && a.mark_col.is_some());
            let mark = target.and_then(|a| a.mark()).unwrap();
            if let Ok(out) = write_back(&src, &mark, 'x') {
                prop_assert_eq!(out.len(), src.len());
                let differ: Vec<usize> = (0..src.len()).filter(|i| src.as_bytes()[*i] != out.as_bytes()[*i]).collect();
                prop_assert_eq!(differ.len(), 1);
                prop_assert_eq!(out.as_bytes()[differ[0]], b'x');
                prop_assert_eq!(src.as_bytes()[differ[0]], b' ');
            }
        }
    }
}

/// The tasks of a run of lines: each checkbox a task, one nested deeper a sub-task of the
/// top-level task above it (deeper levels are flattened into it), bullets and prose indented
/// under a task its details. `head` splits a checkbox's text into the source id and the title.
pub fn tasks(
    lines: &[At<'_>],
    head: &dyn Fn(&str) -> (String, String),
    warnings: &mut Vec<String>,
) -> Vec<super::SourceTask> {
    use super::SourceTask;
    let mut out: Vec<SourceTask> = Vec::new();
    // The indent of the open top-level task, and whether a sub-task is open.
    let mut top_indent: Option<usize> = None;
    let mut sub_open = false;
    for at in lines {
        match &at.line {
            Line::Check {
                indent,
                marker,
                star,
                text,
            } => {
                let (id, title) = head(text);
                let mut task = SourceTask {
                    id,
                    title,
                    done: is_done(*marker),
                    optional: *star,
                    line: at.number,
                    mark: at.mark(),
                    ..SourceTask::default()
                };
                let title = task.title.clone();
                add_paths(&mut task, &title, warnings);
                match top_indent {
                    Some(top) if *indent > top => {
                        if let Some(parent) = out.last_mut() {
                            parent.subtasks.push(task);
                            sub_open = true;
                        }
                    }
                    _ => {
                        out.push(task);
                        top_indent = Some(*indent);
                        sub_open = false;
                    }
                }
            }
            Line::Bullet { indent, text } | Line::Text { indent, text } => {
                let Some(top) = top_indent else { continue };
                if *indent <= top && matches!(at.line, Line::Text { .. }) {
                    top_indent = None;
                    continue;
                }
                if *indent <= top {
                    // A plain bullet beside the tasks: a person's note, not a task's detail.
                    continue;
                }
                let Some(parent) = out.last_mut() else {
                    continue;
                };
                let task = match parent.subtasks.last_mut() {
                    Some(sub) if sub_open => sub,
                    _ => parent,
                };
                add_detail(task, text, warnings);
            }
            Line::Heading { .. } => {
                top_indent = None;
                sub_open = false;
            }
            Line::Blank => {}
        }
    }
    out
}

/// One detail line of a task: its check, its requirements, or a note (whose paths count).
pub fn add_detail(task: &mut super::SourceTask, text: &str, warnings: &mut Vec<String>) {
    if let Some(commands) = super::text::verify_line(text) {
        task.verify.extend(commands);
    } else if let Some(reqs) = super::text::requirements_line(text) {
        task.reqs.extend(reqs);
    } else {
        add_paths(task, text, warnings);
        task.notes.push(text.to_owned());
    }
}

/// The paths `text` names, added to the task's files; those outside the repository warned of.
pub fn add_paths(task: &mut super::SourceTask, text: &str, warnings: &mut Vec<String>) {
    let (inside, outside) = super::text::paths(text);
    for path in inside {
        if !task.files.contains(&path) {
            task.files.push(path);
        }
    }
    for path in outside {
        warnings.push(format!(
            "line {}: task `{}` names `{path}`, outside the repository; it is not among the step's files",
            task.line, task.id
        ));
    }
}

/// `1. Title`, `1.1 Title`, `3 Title` as id and title; text without a number is all title.
pub fn numbered_head(text: &str) -> (String, String) {
    let digits = text
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let id = text[..digits].trim_end_matches('.');
    let rest = &text[digits..];
    if id.is_empty()
        || !id.as_bytes()[0].is_ascii_digit()
        || !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'))
    {
        return (String::new(), text.trim().to_owned());
    }
    (id.to_owned(), rest.trim().to_owned())
}

#[cfg(test)]
mod task_tests {
    use super::*;

    #[test]
    fn nesting_makes_sub_tasks_and_details_go_to_the_task_above() {
        let src = "- [ ] 1. Set up src/lib.rs\n  - [x] 1.1 Sub\n    - _Requirements: 1.1_\n    - Verify: `make check`\n  - [ ] 1.2 Other\n    - [ ] 1.2.1 Deeper\n- [ ] 2. Next\n  - a note naming docs/x.md\n";
        let mut warnings = Vec::new();
        let tasks = tasks(&lines(src), &numbered_head, &mut warnings);
        assert_eq!(tasks.len(), 2);
        assert_eq!(
            (tasks[0].id.as_str(), tasks[0].title.as_str()),
            ("1", "Set up src/lib.rs")
        );
        assert_eq!(tasks[0].files, ["src/lib.rs"]);
        let subs: Vec<&str> = tasks[0].subtasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(subs, ["1.1", "1.2", "1.2.1"]);
        assert!(tasks[0].subtasks[0].done);
        assert_eq!(tasks[0].subtasks[0].reqs, ["1.1"]);
        assert_eq!(tasks[0].subtasks[0].verify, ["make check"]);
        assert_eq!(tasks[1].notes, ["a note naming docs/x.md"]);
        assert_eq!(tasks[1].files, ["docs/x.md"]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn numbered_heads() {
        assert_eq!(numbered_head("1. Title"), ("1".into(), "Title".into()));
        assert_eq!(
            numbered_head("2.10 Sub task"),
            ("2.10".into(), "Sub task".into())
        );
        assert_eq!(numbered_head("10"), ("10".into(), String::new()));
        assert_eq!(
            numbered_head("1.5x faster"),
            (String::new(), "1.5x faster".into())
        );
        assert_eq!(
            numbered_head("No number"),
            (String::new(), "No number".into())
        );
        assert_eq!(numbered_head(".5 half"), (String::new(), ".5 half".into()));
    }
}
