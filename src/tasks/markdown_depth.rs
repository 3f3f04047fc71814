//! A cheap bound on how deeply TODO.md and PLAN.md nest, checked before the markdown parser
//! sees them. A line of four million `- ` is a list nested four million deep, and parsing it
//! took 17 s and 800 MB; tick's grammar nests two levels (a step, its sub-steps and their
//! detail lines). Only container markers that open on one line are counted: nesting by
//! indentation needs two more spaces per level on every line, so within the file size cap it
//! cannot get deep enough to cost anything.

use super::parse_error::ParseError;

/// How many lists and block quotes may open on one line.
pub const MAX_DEPTH: usize = 32;

/// An error at the first line that opens more than [`MAX_DEPTH`] lists or block quotes.
/// `lines_before` is how many lines of the file come before `src` (PLAN.md's front matter).
pub fn check(src: &str, lines_before: usize) -> Result<(), ParseError> {
    for (index, line) in src.lines().enumerate() {
        if let Some(at) = too_deep(line.as_bytes()) {
            return Err(ParseError {
                line: index + 1 + lines_before,
                col: line[..at].chars().count() + 1,
                message: format!("lists or block quotes nested more than {MAX_DEPTH} levels deep"),
                hint: "steps nest one level (sub-steps); restore the file from git or flatten the list"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// The byte offset of the marker that goes past [`MAX_DEPTH`], if one does.
fn too_deep(bytes: &[u8]) -> Option<usize> {
    let blank = |at: usize| bytes.get(at).is_some_and(|b| *b == b' ' || *b == b'\t');
    let mut at = 0;
    let mut depth = 0;
    loop {
        while blank(at) {
            at += 1;
        }
        let start = at;
        match bytes.get(at)? {
            b'>' => at += 1,
            b'-' | b'*' | b'+' if blank(at + 1) => at += 2,
            b'0'..=b'9' => {
                let digits = bytes[at..]
                    .iter()
                    .take(10)
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let end = at + digits;
                if digits > 9 || !matches!(bytes.get(end), Some(b'.' | b')')) || !blank(end + 1) {
                    return None;
                }
                at = end + 2;
            }
            _ => return None,
        }
        depth += 1;
        if depth > MAX_DEPTH {
            return Some(start);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn tick_files_pass_and_a_deep_line_is_located() {
        let todo = "# TODO\n\n- [ ] S1 a\n  - files: x\n  - [ ] S1.1 b\n> - [ ] quoted\n1. x\n";
        check(todo, 0).unwrap();
        let ok = format!("x\n{}y\n", "- ".repeat(MAX_DEPTH));
        check(&ok, 0).unwrap();
        let deep = format!("x\n{}y\n", "- ".repeat(MAX_DEPTH + 1));
        let err = check(&deep, 3).unwrap_err();
        assert_eq!((err.line, err.col), (5, 2 * MAX_DEPTH + 1), "{err:?}");
        let quotes = format!("{}\n", "> 1) ".repeat(20));
        assert!(check(&quotes, 0).is_err());
        // Not markers: emphasis, rules, numbers in text.
        check("*emph* and - dash\n---\n***\n2026. was a year\n-x\n", 0).unwrap();
    }

    #[test]
    fn four_million_levels_cost_nothing() {
        let line = "- ".repeat(4_000_000);
        let started = Instant::now();
        assert!(check(&line, 0).is_err());
        assert!(started.elapsed() < Duration::from_millis(100));
    }
}
