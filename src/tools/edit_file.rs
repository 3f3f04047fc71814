//! `edit_file`: replace one exact piece of text in a file.
//!
//! `old` must occur exactly once (overlapping occurrences count), so an edit can never land in
//! a place the model did not mean. When it does not, the error is written to be fixed in one
//! retry: for no match, the most similar region of the file with line numbers; for several,
//! the lines of each. A CRLF file stays CRLF when the model writes `\n`, because models
//! nearly always do. The matching and the messages are pure functions of the text; only
//! [`run`] touches the file, through the atomic write `write_file` uses.

use std::fmt::Write as _;

use serde::Deserialize;

use super::workspace::{Access, Workspace};
use super::write_file::{PATH_PARAM, line_count, run_writing, string_params, write_bytes};
use super::{FileWritten, PayloadLimits, ToolOutcome, count, count_newlines, truncate_line};
use crate::fsx;
use crate::llm::ToolSpec;

pub const NAME: &str = "edit_file";

/// Lines of a region quoted in a message.
const MAX_QUOTED_LINES: usize = 30;
/// Characters of one quoted line.
const MAX_QUOTED_CHARS: usize = 300;
/// Lines of context shown around the edited region.
const CONTEXT_LINES: usize = 2;
/// Match positions listed when `old` is ambiguous.
const MAX_LISTED_MATCHES: usize = 10;
/// Below this similarity (0 to 1) a region is not worth showing as "closest".
const MIN_SIMILARITY: f64 = 0.4;
/// Line comparisons the near-match search may make before it gives up, so a huge file or a
/// huge `old` cannot stall the turn.
const MAX_COMPARISONS: usize = 2_000_000;
/// Lines of `old` the near-match search looks at; the start of a region is what locates it.
const MAX_COMPARED_LINES: usize = 40;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old: String,
    new: String,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Replace text in an existing file: `old` is replaced by `new`. `old` must \
                      be copied exactly from the file (indentation and whitespace included) \
                      and must occur exactly once; include a few surrounding lines to make it \
                      unique. Line numbers from read_file are not part of the text. To create \
                      a file or replace it whole, use write_file."
            .to_owned(),
        parameters: string_params(&[
            PATH_PARAM,
            (
                "old",
                "The exact text to replace; it must occur exactly once in the file.",
            ),
            (
                "new",
                "The text to put in its place; may be empty to delete `old`.",
            ),
        ]),
    }
}

/// Runs the tool; `old` or `new` over `limits.max_write_bytes` is refused before it is
/// copied, and so is an edit whose result would be over it.
pub fn run_within(
    workspace: &Workspace,
    arguments: &serde_json::Value,
    limits: PayloadLimits,
) -> ToolOutcome {
    run_writing(NAME, &["old", "new"], arguments, limits, |args| {
        edit(workspace, &args, limits)
    })
}

fn edit(
    workspace: &Workspace,
    args: &Args,
    limits: PayloadLimits,
) -> Result<(String, FileWritten), String> {
    let shown = &args.path;
    if args.old.is_empty() {
        return Err(
            "`old` is empty; copy the text to replace from the file (to add text, include a \
             neighbouring line in `old` and in `new`; to create a file, use write_file)"
                .to_owned(),
        );
    }
    if args.old == args.new {
        return Err("`old` and `new` are the same; nothing would change".to_owned());
    }
    let path = workspace
        .resolve(shown, Access::Write)
        .map_err(|e| e.to_string())?;
    // Read by descriptor beneath the root, like the write: never a FIFO (it would block the
    // turn), never more than a tool may write, never through a link swapped in since `path`
    // was resolved.
    let relative = path
        .strip_prefix(workspace.root())
        .map_err(|_| format!("`{shown}` is outside the workspace"))?;
    let max = limits.max_write_bytes as u64;
    let bytes = match fsx::read_beneath(workspace.root(), relative, shown, max) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(format!(
                "`{shown}` does not exist; create it with write_file"
            ));
        }
        Err(fsx::BeneathError::NotAFile { .. }) => {
            return Err(format!(
                "`{shown}` is not a regular file; edit_file changes text files only"
            ));
        }
        Err(fsx::BeneathError::Directory { .. }) => {
            return Err(format!("`{shown}` is a directory, not a file"));
        }
        Err(fsx::BeneathError::TooLarge { len, .. }) => {
            return Err(format!(
                "`{shown}` is {len} bytes, over the limit of {max} bytes a tool may write \
                 (`limits.max_write_bytes`); nothing was written. Change it with a command \
                 (`sed`, a script) instead"
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(format!(
            "`{shown}` is not UTF-8 text; edit_file changes text files only (write_file replaces a file whole)"
        ));
    };
    let edit = replace_once(&text, &args.old, &args.new).map_err(|e| e.message(shown))?;
    if edit.text.len() > limits.max_write_bytes && edit.text.len() > text.len() {
        return Err(format!(
            "the edit would make `{shown}` {} bytes, over the limit of {} bytes a tool may \
             write (`limits.max_write_bytes`); nothing was written",
            edit.text.len(),
            limits.max_write_bytes
        ));
    }
    let (written, _) = write_bytes(workspace, &path, shown, edit.text.as_bytes())?;
    Ok((edit.report(&written.path), written))
}

/// A successful replacement.
#[derive(Debug, PartialEq, Eq)]
struct Edit {
    /// The whole new file.
    text: String,
    /// 1-based lines `old` spanned.
    old_lines: (usize, usize),
    /// 1-based lines `new` spans in the new text; `None` when `new` is empty.
    new_lines: Option<(usize, usize)>,
}

impl Edit {
    fn report(&self, path: &str) -> String {
        let (first, last) = self.old_lines;
        let mut out = format!(
            "edited `{path}`: replaced {} ({}) with {}; the file now has {}",
            span(first, last),
            count(last - first + 1, "line", "lines"),
            self.new_lines.map_or_else(
                || "nothing".to_owned(),
                |(a, b)| count(b - a + 1, "line", "lines")
            ),
            count(line_count(&self.text), "line", "lines"),
        );
        // The edited region with a little context, so the model sees the result without a
        // read_file call.
        let (a, b) = self.new_lines.unwrap_or((first, first));
        let from = a.saturating_sub(CONTEXT_LINES).max(1);
        let to = b + CONTEXT_LINES;
        let quoted = quote_lines(&self.text, from, to);
        if !quoted.is_empty() {
            let _ = write!(out, "\n{quoted}");
        }
        out
    }
}

/// Why `old` could not be replaced.
#[derive(Debug, PartialEq)]
enum EditError {
    /// `old` does not occur; the closest region, if any is similar enough.
    NotFound(Option<Region>),
    /// `old` occurs more than once: the 1-based line spans of each occurrence.
    Ambiguous(Vec<(usize, usize)>),
}

/// A run of lines of the file that resembles `old`.
#[derive(Debug, PartialEq)]
struct Region {
    first: usize,
    last: usize,
    /// Every line equals its counterpart in `old` once surrounding whitespace is trimmed.
    whitespace_only: bool,
    quoted: String,
}

impl EditError {
    fn message(&self, path: &str) -> String {
        match self {
            EditError::NotFound(None) => format!(
                "`old` was not found in `{path}`, and nothing in the file resembles it; the \
                 file was not changed. Read it with read_file to see its current content"
            ),
            EditError::NotFound(Some(region)) => {
                let why = if region.whitespace_only {
                    " (it differs from `old` only in whitespace at the start or end of lines)"
                } else {
                    ""
                };
                format!(
                    "`old` was not found in `{path}`; the file was not changed. `old` must be \
                     copied exactly, including indentation and whitespace. The most similar \
                     text is at {}{why}:\n{}\nCall edit_file again with `old` copied from these \
                     lines (without the line numbers)",
                    span(region.first, region.last),
                    region.quoted
                )
            }
            EditError::Ambiguous(spans) => {
                let mut listed: Vec<String> = spans
                    .iter()
                    .take(MAX_LISTED_MATCHES)
                    .map(|&(a, b)| span(a, b))
                    .collect();
                if spans.len() > MAX_LISTED_MATCHES {
                    listed.push(format!("{} more", spans.len() - MAX_LISTED_MATCHES));
                }
                format!(
                    "`old` occurs {} times in `{path}` ({}); the file was not changed. It must \
                     occur exactly once: include more of the surrounding lines in `old` (and in \
                     `new`) so that it identifies one place",
                    spans.len(),
                    listed.join(", ")
                )
            }
        }
    }
}

/// `line 3` or `lines 3-5`.
fn span(first: usize, last: usize) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}

/// Replace the single occurrence of `old` (non-empty) in `text` with `new`.
///
/// If `old` as written does not occur but does once its line endings are those of the file,
/// that counts; `new` then gets the line endings of the text it replaces.
fn replace_once(text: &str, old: &str, new: &str) -> Result<Edit, EditError> {
    let crlf_file = is_crlf(text);
    let mut old = old.to_owned();
    let mut found = find_all(text, &old);
    if found.is_empty() {
        let converted = if crlf_file {
            to_crlf(&old)
        } else {
            old.replace("\r\n", "\n")
        };
        if converted != old {
            found = find_all(text, &converted);
            old = converted;
        }
    }
    let crlf_new = if old.contains("\r\n") {
        true
    } else if old.contains('\n') {
        false
    } else {
        crlf_file
    };
    let new = if crlf_new {
        to_crlf(new)
    } else {
        new.replace("\r\n", "\n")
    };
    match found.as_slice() {
        [] => Err(EditError::NotFound(closest_region(text, &old))),
        &[at] => {
            let mut result = String::with_capacity(text.len() - old.len() + new.len());
            result.push_str(&text[..at]);
            result.push_str(&new);
            result.push_str(&text[at + old.len()..]);
            let new_lines = (!new.is_empty()).then(|| lines_of(&result, at, new.len()));
            Ok(Edit {
                old_lines: lines_of(text, at, old.len()),
                new_lines,
                text: result,
            })
        }
        many => Err(EditError::Ambiguous(
            many.iter()
                .map(|&at| lines_of(text, at, old.len()))
                .collect(),
        )),
    }
}

/// Every start of `needle` (non-empty) in `haystack`, overlapping ones included: `aa` occurs
/// twice in `aaa`, and either could be the one meant.
fn find_all(haystack: &str, needle: &str) -> Vec<usize> {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        found.push(from + i);
        from += i + step;
    }
    found
}

/// The 1-based lines that the `len` bytes (at least one) at `at` span.
fn lines_of(text: &str, at: usize, len: usize) -> (usize, usize) {
    let line_at = |byte: usize| count_newlines(&text.as_bytes()[..byte]) + 1;
    (line_at(at), line_at(at + len - 1))
}

/// Whether most of the file's line breaks are CRLF.
fn is_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Lines `from..=to` (1-based, clipped to the file) numbered as `read_file` numbers them.
fn quote_lines(text: &str, from: usize, to: usize) -> String {
    let mut out = String::new();
    let shown_to = to.min(from + MAX_QUOTED_LINES - 1);
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if number < from {
            continue;
        }
        if number > shown_to {
            if number <= to {
                let _ = writeln!(out, "[… {} not shown]", span(number, to));
            }
            break;
        }
        let _ = writeln!(
            out,
            "{number:>6}\t{}",
            truncate_line(line, MAX_QUOTED_CHARS)
        );
    }
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// The run of file lines most like `old`, compared line by line with surrounding whitespace
/// trimmed: the usual near misses are indentation, a changed line, or a stale copy.
fn closest_region(text: &str, old: &str) -> Option<Region> {
    let old_lines: Vec<&str> = old.lines().map(str::trim).collect();
    // Blank lines at the ends of `old` say nothing about where it belongs.
    let first_real = old_lines.iter().position(|l| !l.is_empty())?;
    let last_real = old_lines.iter().rposition(|l| !l.is_empty())?;
    let old_lines = &old_lines[first_real..=last_real];
    let file_lines: Vec<&str> = text.lines().map(str::trim).collect();
    if file_lines.is_empty() {
        return None;
    }
    let compared = &old_lines[..old_lines.len().min(MAX_COMPARED_LINES)];
    if compared.len().saturating_mul(file_lines.len()) > MAX_COMPARISONS {
        return None;
    }
    let old_grams: Vec<Vec<(char, char)>> = compared.iter().map(|l| bigrams(l)).collect();
    let file_grams: Vec<Vec<(char, char)>> = file_lines.iter().map(|l| bigrams(l)).collect();

    let windows = file_lines.len().saturating_sub(compared.len()) + 1;
    let mut best: Option<(usize, f64)> = None;
    for start in 0..windows {
        let mut total = 0.0;
        for (k, old_line) in compared.iter().enumerate() {
            let Some(file_line) = file_lines.get(start + k) else {
                break;
            };
            total += if old_line == file_line {
                1.0
            } else {
                dice(&old_grams[k], &file_grams[start + k])
            };
        }
        #[allow(
            clippy::cast_precision_loss,
            reason = "a line count far below 2^52; the score is approximate anyway"
        )]
        let score = total / compared.len() as f64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((start, score));
        }
    }
    let (start, score) = best?;
    if score < MIN_SIMILARITY {
        return None;
    }
    let first = start + 1;
    let last = (start + old_lines.len()).min(file_lines.len());
    let whitespace_only =
        file_lines[start..last] == old_lines[..last - start] && last - start == old_lines.len();
    Some(Region {
        first,
        last,
        whitespace_only,
        quoted: quote_lines(text, first, last),
    })
}

/// The sorted character pairs of `line`; a one-character line is its own pair.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.chars().collect();
    let mut grams: Vec<(char, char)> = match chars.as_slice() {
        [] => Vec::new(),
        [only] => vec![(*only, '\0')],
        _ => chars.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    grams.sort_unstable();
    grams
}

/// Sørensen–Dice similarity of two sorted bigram multisets, 0 to 1: cheap, and tolerant of the
/// small changes that make an exact match fail.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "line lengths far below 2^52; the score is approximate anyway"
    )]
    let score = (2 * shared) as f64 / (a.len() + b.len()) as f64;
    score
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Effects;
    use crate::tools::test_support::output_of;
    use serde_json::json;
    use std::fs;

    /// The tool with the default [`PayloadLimits`].
    fn run(workspace: &Workspace, arguments: &serde_json::Value) -> ToolOutcome {
        run_within(workspace, arguments, PayloadLimits::default())
    }

    fn setup(name: &str, content: &str) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(name), content).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    fn call(ws: &Workspace, path: &str, old: &str, new: &str) -> (String, bool, Effects) {
        output_of(run(ws, &json!({"path": path, "old": old, "new": new})))
    }

    const RUST: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\nfn other() {\n    let y = 2;\n}\n";

    #[test]
    fn big_files_and_fifos_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        fs::write(dir.path().join("big.txt"), "a".repeat(2048)).unwrap();
        let limits = PayloadLimits {
            max_write_bytes: 1024,
        };
        let args = json!({"path": "big.txt", "old": "a", "new": "b"});
        let ToolOutcome::Output { text, is_error, .. } = run_within(&ws, &args, limits) else {
            panic!("not an output");
        };
        assert!(
            is_error && text.contains("2048 bytes, over the limit of 1024"),
            "{text}"
        );
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let args = json!({"path": "pipe", "old": "a", "new": "b"});
        let ToolOutcome::Output { text, is_error, .. } = run(&ws, &args) else {
            panic!("not an output");
        };
        assert!(is_error && text.contains("not a regular file"), "{text}");
    }

    #[test]
    fn replaces_exactly_once_and_reports_the_write() {
        let (dir, ws) = setup("main.rs", RUST);
        let (text, is_error, effects) = call(
            &ws,
            "main.rs",
            "    let x = 1;\n",
            "    let x = 10;\n    let z = 3;\n",
        );
        assert!(!is_error, "{text}");
        let expected = RUST.replace("    let x = 1;\n", "    let x = 10;\n    let z = 3;\n");
        assert_eq!(
            fs::read_to_string(dir.path().join("main.rs")).unwrap(),
            expected
        );
        assert_eq!(
            text,
            "edited `main.rs`: replaced line 2 (1 line) with 2 lines; the file now has 9 lines\n     \
             1\tfn main() {\n     2\t    let x = 10;\n     3\t    let z = 3;\n     4\t    println!(\"{x}\");\n     5\t}"
        );
        assert_eq!(effects.files_written.len(), 1);
        assert_eq!(effects.files_written[0].path, "main.rs");
        assert_eq!(
            effects.files_written[0].blake3,
            blake3::hash(expected.as_bytes()).to_hex().to_string()
        );
        assert!(!effects.ran_command);
    }

    #[test]
    fn deleting_text() {
        let (dir, ws) = setup("main.rs", RUST);
        let (text, is_error, _) = call(&ws, "main.rs", "\nfn other() {\n    let y = 2;\n}\n", "");
        assert!(!is_error, "{text}");
        assert!(text.starts_with("edited `main.rs`: replaced lines 5-8 (4 lines) with nothing; the file now has 4 lines\n"), "{text}");
        assert_eq!(
            fs::read_to_string(dir.path().join("main.rs")).unwrap(),
            "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n"
        );
    }

    #[test]
    fn zero_matches_show_the_nearest_lines_and_change_nothing() {
        let (dir, ws) = setup("main.rs", RUST);
        let (text, is_error, effects) = call(
            &ws,
            "main.rs",
            "    let x = 1;\n    println!(\"{y}\");\n",
            "nope",
        );
        assert!(is_error);
        assert!(effects.is_empty());
        assert_eq!(
            text,
            "`old` was not found in `main.rs`; the file was not changed. `old` must be copied \
             exactly, including indentation and whitespace. The most similar text is at lines \
             2-3:\n     2\t    let x = 1;\n     3\t    println!(\"{x}\");\nCall edit_file again \
             with `old` copied from these lines (without the line numbers)"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("main.rs")).unwrap(),
            RUST
        );

        // Wrong indentation is named as such.
        let (text, is_error, _) = call(&ws, "main.rs", "  let y = 2;\n  }", "x");
        assert!(is_error);
        assert!(
            text.contains("The most similar text is at lines 7-8 (it differs from `old` only in whitespace at the start or end of lines):\n     7\t    let y = 2;\n     8\t}\n"),
            "{text}"
        );

        // Nothing alike at all.
        let (text, _, _) = call(&ws, "main.rs", "SELECT * FROM users;", "x");
        assert_eq!(
            text,
            "`old` was not found in `main.rs`, and nothing in the file resembles it; the file \
             was not changed. Read it with read_file to see its current content"
        );
    }

    #[test]
    fn two_matches_name_both_lines() {
        let content = "a = 1\nb = 2\na = 1\n";
        let (dir, ws) = setup("x.py", content);
        let (text, is_error, effects) = call(&ws, "x.py", "a = 1", "a = 3");
        assert!(is_error);
        assert!(effects.is_empty());
        assert_eq!(
            text,
            "`old` occurs 2 times in `x.py` (line 1, line 3); the file was not changed. It must \
             occur exactly once: include more of the surrounding lines in `old` (and in `new`) \
             so that it identifies one place"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("x.py")).unwrap(),
            content
        );
        // With context it is unique.
        let (_, is_error, _) = call(&ws, "x.py", "b = 2\na = 1", "b = 2\na = 3");
        assert!(!is_error);
        assert_eq!(
            fs::read_to_string(dir.path().join("x.py")).unwrap(),
            "a = 1\nb = 2\na = 3\n"
        );
    }

    #[test]
    fn overlapping_and_multi_line_matches_are_ambiguous() {
        assert_eq!(find_all("aaa", "aa"), [0, 1]);
        assert_eq!(find_all("éaéa", "éa"), [0, 3]);
        assert_eq!(
            replace_once("x\ny\nx\ny\n", "x\ny", "z"),
            Err(EditError::Ambiguous(vec![(1, 2), (3, 4)]))
        );
        let many = "k\n".repeat(12);
        let message = replace_once(&many, "k", "j").unwrap_err().message("f");
        assert!(
            message.starts_with("`old` occurs 12 times in `f` (line 1, line 2, line 3, line 4, line 5, line 6, line 7, line 8, line 9, line 10, 2 more)"),
            "{message}"
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let content = "one\r\ntwo\r\nthree\r\n";
        let (dir, ws) = setup("w.txt", content);
        let (text, is_error, _) = call(&ws, "w.txt", "two\nthree\n", "2\n3\n4\n");
        assert!(!is_error, "{text}");
        assert_eq!(
            fs::read(dir.path().join("w.txt")).unwrap(),
            b"one\r\n2\r\n3\r\n4\r\n"
        );
        // A single-line `old` with a multi-line `new` also gets CRLF.
        let (_, is_error, _) = call(&ws, "w.txt", "one", "zero\none");
        assert!(!is_error);
        assert_eq!(
            fs::read(dir.path().join("w.txt")).unwrap(),
            b"zero\r\none\r\n2\r\n3\r\n4\r\n"
        );
        // An LF file keeps LF even if the model sends CRLF.
        assert_eq!(
            replace_once("a\nb\n", "a\r\nb", "c\r\nd").unwrap().text,
            "c\nd\n"
        );
    }

    #[test]
    fn refusals() {
        let (dir, ws) = setup("a.txt", "hello\n");
        fs::create_dir(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("bin"), b"\xff\xfe\0").unwrap();
        let cases = [
            (
                json!({"path": "a.txt", "old": "", "new": "x"}),
                "`old` is empty; copy the text to replace from the file (to add text, include a neighbouring line in `old` and in `new`; to create a file, use write_file)",
            ),
            (
                json!({"path": "a.txt", "old": "hello", "new": "hello"}),
                "`old` and `new` are the same; nothing would change",
            ),
            (
                json!({"path": "a.txt", "old": "x"}),
                "invalid arguments for edit_file: missing field `new`",
            ),
            (
                json!({"path": "a.txt", "old": "x", "new": "y", "replace_all": true}),
                "invalid arguments for edit_file: unknown field `replace_all`, expected one of `path`, `old`, `new`",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(run(&ws, &args), ToolOutcome::error(expected), "{args}");
        }
        // A path that cannot be edited: the refusal names it first.
        let paths = [
            ("b.txt", "does not exist; create it with write_file"),
            ("src", "is a directory, not a file"),
            (
                "bin",
                "is not UTF-8 text; edit_file changes text files only (write_file replaces a file whole)",
            ),
            (
                ".git/config",
                "is inside `.git/`, which no tool may write; git's own files are off limits; change the working tree instead",
            ),
            (
                "../a.txt",
                "is outside the workspace; paths are relative to the workspace root and may not contain `..`",
            ),
        ];
        for (path, why) in paths {
            let args = json!({"path": path, "old": "x", "new": "y"});
            let expected = format!("`{path}` {why}");
            assert_eq!(run(&ws, &args), ToolOutcome::error(expected), "{args}");
        }
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "hello\n"
        );
    }

    #[test]
    fn similarity() {
        assert!((dice(&bigrams("abc"), &bigrams("abc")) - 1.0).abs() < f64::EPSILON);
        assert!(dice(&bigrams("abc"), &bigrams("xyz")) < f64::EPSILON);
        assert!(dice(&bigrams("let x = 1;"), &bigrams("let x = 2;")) > 0.7);
        assert!(closest_region("", "x").is_none());
        assert!(closest_region("a\n", "\n\n").is_none());
        // `old` longer than the file is still compared.
        let region = closest_region("alpha\nbeta\n", "alpha\nbeta\ngamma\n").unwrap();
        assert_eq!((region.first, region.last), (1, 2));
        assert!(!region.whitespace_only);
    }

    #[test]
    fn long_regions_are_quoted_in_part() {
        let text = (1..=50).fold(String::new(), |mut text, i| {
            let _ = writeln!(text, "line {i}");
            text
        });
        let quoted = quote_lines(&text, 5, 45);
        assert_eq!(quoted.lines().count(), MAX_QUOTED_LINES + 1);
        assert!(quoted.ends_with("[… lines 35-45 not shown]"), "{quoted}");
    }
}
