//! `read_file`: a text file's lines with line numbers, a range at a time.
//!
//! One call returns at most [`MAX_LINES`] lines and [`MAX_BYTES`] of text, and a line longer
//! than [`MAX_LINE_CHARS`] is cut, so a huge file or a minified line can never flood the
//! model's context; the closing note says exactly which call reads on. Binary files are
//! refused; text that is not UTF-8 is shown lossily rather than refused, because source files
//! in Latin-1 are still worth reading.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};

use serde::Deserialize;
use serde_json::json;

use super::workspace::{Access, Workspace};
use super::{ToolOutcome, count, parse_args};
use crate::llm::ToolSpec;

pub const NAME: &str = "read_file";

/// Lines per call.
pub const MAX_LINES: usize = 2000;
/// Bytes of file text per call.
pub const MAX_BYTES: usize = 100 * 1024;
/// Characters shown of one line.
pub const MAX_LINE_CHARS: usize = 2000;
/// How much of the start of a file is checked for a NUL byte, as git and ripgrep do.
const BINARY_PROBE: usize = 8 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "Read a text file in the workspace. Each line is prefixed with its line number and a \
             tab. At most {MAX_LINES} lines or {} KiB are returned per call; the result then ends \
             with a note saying which offset to call with to read on. Lines longer than \
             {MAX_LINE_CHARS} characters are cut. Binary files are refused; use list_files for \
             directories.",
            MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path relative to the workspace root, e.g. `src/main.rs`."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return, 1-based. Default 1."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": format!("Number of lines to return. Default and maximum {MAX_LINES}.")
                }
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

pub fn run(workspace: &Workspace, arguments: &serde_json::Value) -> ToolOutcome {
    ToolOutcome::answered(read(workspace, arguments))
}

fn read(workspace: &Workspace, arguments: &serde_json::Value) -> Result<String, String> {
    let args: Args = parse_args(NAME, arguments)?;
    if args.offset == Some(0) {
        return Err("offset is 1-based: use offset 1 for the first line".to_owned());
    }
    if args.limit == Some(0) {
        return Err(format!(
            "limit must be at least 1 (at most {MAX_LINES} lines are returned per call)"
        ));
    }
    let path = workspace
        .resolve(&args.path, Access::Read)
        .map_err(|e| e.to_string())?;
    let shown = &args.path;
    if path.is_dir() {
        return Err(format!(
            "`{shown}` is a directory; use list_files to see what is in it"
        ));
    }
    let io_error = |e: io::Error| format!("`{shown}` could not be read: {e}");
    let file = crate::fsx::open_regular(&path).map_err(io_error)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);

    let probe = reader.fill_buf().map_err(io_error)?;
    let probe = &probe[..probe.len().min(BINARY_PROBE)];
    if probe.contains(&0) {
        return Err(format!(
            "`{shown}` looks like a binary file (it contains a NUL byte); read_file shows text files only"
        ));
    }

    let first = args.offset.unwrap_or(1);
    let limit = usize::try_from(args.limit.unwrap_or(MAX_LINES as u64))
        .unwrap_or(MAX_LINES)
        .min(MAX_LINES);
    let page = read_page(&mut reader, first, limit).map_err(io_error)?;
    Ok(render(shown, first, &page))
}

/// The lines one call shows, and what the closing note needs to know.
#[derive(Debug, Default)]
struct Page {
    lines: Vec<String>,
    /// Lines in the whole file.
    total: u64,
    /// Whether the byte cap, not `limit` or the end of the file, ended the page.
    byte_capped: bool,
}

fn read_page(reader: &mut impl BufRead, first: u64, limit: usize) -> io::Result<Page> {
    let mut page = Page::default();
    let mut bytes = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Lines past the page are still read: the note tells the model how long the file is.
        let length = read_line_capped(reader, &mut buf, KEPT_LINE_BYTES)?;
        if length == 0 {
            break;
        }
        page.total += 1;
        let in_range = page.total >= first && page.lines.len() < limit && !page.byte_capped;
        if !in_range {
            continue;
        }
        let text = String::from_utf8_lossy(strip_newline(&buf));
        let text = match text.char_indices().nth(MAX_LINE_CHARS) {
            None => text.into_owned(),
            Some((cut, _)) => {
                let rest = strip_newline_len(length).saturating_sub(cut);
                format!("{}… [line cut: {rest} more bytes]", &text[..cut])
            }
        };
        if bytes + text.len() > MAX_BYTES && !page.lines.is_empty() {
            page.byte_capped = true;
            continue;
        }
        bytes += text.len();
        page.lines.push(text);
    }
    Ok(page)
}

/// Bytes of a line kept in memory: enough for [`MAX_LINE_CHARS`] characters of up to four
/// bytes each, so a file that is one enormous line is never held whole.
const KEPT_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 4;

/// Read one line (with its newline) into `buf`, keeping at most `keep` bytes of it; returns
/// the line's full length, 0 at the end of the file.
fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<usize> {
    let mut length = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(length);
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.map_or(available.len(), |i| i + 1)];
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let consumed = chunk.len();
        length += consumed;
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(length);
        }
    }
}

/// The length of a line without its newline, for the "more bytes" note; a `\r` before it is
/// counted, which is close enough for a note.
fn strip_newline_len(length: usize) -> usize {
    length.saturating_sub(1)
}

fn strip_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn render(shown: &str, first: u64, page: &Page) -> String {
    if page.total == 0 {
        return format!("(`{shown}` is empty)");
    }
    if page.lines.is_empty() {
        return format!(
            "(`{shown}` has {}; offset {first} is past the end)",
            count(
                usize::try_from(page.total).unwrap_or(usize::MAX),
                "line",
                "lines"
            )
        );
    }
    let mut out = String::new();
    let mut number = first;
    for line in &page.lines {
        let _ = writeln!(out, "{number:>6}\t{line}");
        number += 1;
    }
    let last = number - 1;
    if last < page.total {
        let why = if page.byte_capped {
            format!(" (the {} KiB per-call limit was reached)", MAX_BYTES / 1024)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "[lines {first}-{last} of {} shown{why}; call read_file with offset {} to read more]",
            page.total,
            last + 1
        );
    } else if first > 1 {
        let _ = write!(out, "[lines {first}-{last} of {}; end of file]", page.total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::text_of;
    use std::fs;

    /// The agent's `bash` can make a FIFO; opening it to read would block the turn forever.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (dir, ws) = setup();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(call(&ws, json!({"path": "pipe"}))).unwrap());
        let (text, is_error) = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("read_file blocked on a FIFO");
        assert!(is_error);
        assert_eq!(text, "`pipe` could not be read: not a regular file");
    }

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[allow(
        clippy::needless_pass_by_value,
        reason = "call sites read better with a `json!` literal"
    )]
    fn call(ws: &Workspace, args: serde_json::Value) -> (String, bool) {
        text_of(run(ws, &args))
    }

    fn numbered(n: usize) -> String {
        (1..=n)
            .map(|i| format!("line {i}\n"))
            .collect::<Vec<_>>()
            .concat()
    }

    #[test]
    fn whole_small_file_has_line_numbers_and_no_note() {
        let (dir, ws) = setup();
        fs::write(dir.path().join("a.txt"), "alpha\r\nbeta\n\ngamma").unwrap();
        let (text, is_error) = call(&ws, json!({"path": "a.txt"}));
        assert!(!is_error);
        assert_eq!(
            text,
            "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma\n"
        );
    }

    #[test]
    fn ranges_and_the_note_that_says_how_to_read_on() {
        let (dir, ws) = setup();
        fs::write(dir.path().join("a.txt"), numbered(10)).unwrap();
        let (text, _) = call(&ws, json!({"path": "a.txt", "offset": 3, "limit": 2}));
        assert_eq!(
            text,
            "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10 shown; call read_file with offset 5 to read more]"
        );
        let (text, _) = call(&ws, json!({"path": "a.txt", "offset": 9}));
        assert_eq!(
            text,
            "     9\tline 9\n    10\tline 10\n[lines 9-10 of 10; end of file]"
        );
        let (text, is_error) = call(&ws, json!({"path": "a.txt", "offset": 11}));
        assert!(!is_error);
        assert_eq!(text, "(`a.txt` has 10 lines; offset 11 is past the end)");
    }

    #[test]
    fn line_cap() {
        let (dir, ws) = setup();
        fs::write(dir.path().join("big.txt"), numbered(MAX_LINES + 5)).unwrap();
        let (text, _) = call(&ws, json!({"path": "big.txt", "limit": 1_000_000}));
        assert_eq!(text.lines().count(), MAX_LINES + 1);
        assert!(text.ends_with(&format!(
            "[lines 1-{MAX_LINES} of {} shown; call read_file with offset {} to read more]",
            MAX_LINES + 5,
            MAX_LINES + 1
        )));
        let (text, _) = call(&ws, json!({"path": "big.txt", "offset": MAX_LINES + 1}));
        assert!(text.starts_with(&format!("  {}\tline {}\n", MAX_LINES + 1, MAX_LINES + 1)));
        assert!(text.ends_with("end of file]"));
    }

    #[test]
    fn byte_cap_and_long_lines() {
        let (dir, ws) = setup();
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let content = format!("{long}\n").repeat(200);
        fs::write(dir.path().join("wide.txt"), content).unwrap();
        let (text, is_error) = call(&ws, json!({"path": "wide.txt"}));
        assert!(!is_error);
        assert!(text.contains("… [line cut: 10 more bytes]"));
        let shown = text.lines().count() - 1;
        assert!(shown < 200, "{shown}");
        assert!(text.len() < MAX_BYTES + 64 * 1024);
        assert!(text.ends_with(&format!(
            "[lines 1-{shown} of 200 shown (the 100 KiB per-call limit was reached); call read_file with offset {} to read more]",
            shown + 1
        )));
    }

    #[test]
    fn one_enormous_line_is_cut_without_reading_it_whole_into_the_result() {
        let (dir, ws) = setup();
        let line = "é".repeat(300_000);
        fs::write(dir.path().join("min.js"), format!("{line}\nend\n")).unwrap();
        let (text, is_error) = call(&ws, json!({"path": "min.js"}));
        assert!(!is_error);
        let expected_rest = line.len() - MAX_LINE_CHARS * 2;
        assert_eq!(
            text,
            format!(
                "     1\t{}… [line cut: {expected_rest} more bytes]\n     2\tend\n",
                "é".repeat(MAX_LINE_CHARS)
            )
        );
        let mut buf = Vec::new();
        let mut reader = io::Cursor::new(b"abcdef\ngh".to_vec());
        assert_eq!(read_line_capped(&mut reader, &mut buf, 3).unwrap(), 7);
        assert_eq!(buf, b"abc");
        buf.clear();
        assert_eq!(read_line_capped(&mut reader, &mut buf, 3).unwrap(), 2);
        assert_eq!(buf, b"gh");
        buf.clear();
        assert_eq!(read_line_capped(&mut reader, &mut buf, 3).unwrap(), 0);
    }

    #[test]
    fn binary_files_are_refused() {
        let (dir, ws) = setup();
        fs::write(dir.path().join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
        let (text, is_error) = call(&ws, json!({"path": "img.png"}));
        assert!(is_error);
        assert_eq!(
            text,
            "`img.png` looks like a binary file (it contains a NUL byte); read_file shows text files only"
        );
    }

    #[test]
    fn non_utf8_is_shown_lossily() {
        let (dir, ws) = setup();
        fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let (text, is_error) = call(&ws, json!({"path": "latin1.txt"}));
        assert!(!is_error);
        assert_eq!(text, "     1\tcaf\u{fffd}\n");
    }

    #[test]
    fn model_fixable_errors() {
        let (dir, ws) = setup();
        fs::create_dir(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("empty.txt"), "").unwrap();
        let cases = [
            (
                json!({"path": "src"}),
                "`src` is a directory; use list_files to see what is in it",
            ),
            (
                json!({"path": "nope"}),
                "`nope` does not exist; use list_files to see which files there are",
            ),
            (
                json!({"path": "../etc/passwd"}),
                "`../etc/passwd` is outside the workspace; paths are relative to the workspace root and may not contain `..`",
            ),
            (
                json!({"path": "a", "offset": 0}),
                "offset is 1-based: use offset 1 for the first line",
            ),
            (
                json!({"path": "a", "limit": 0}),
                "limit must be at least 1 (at most 2000 lines are returned per call)",
            ),
            (
                json!({"path": "a", "lines": 3}),
                "invalid arguments for read_file: unknown field `lines`, expected one of `path`, `offset`, `limit`",
            ),
            (
                json!({}),
                "invalid arguments for read_file: missing field `path`",
            ),
            (
                json!({"path": "a", "offset": -1}),
                "invalid arguments for read_file: invalid value: integer `-1`, expected u64",
            ),
        ];
        for (args, expected) in cases {
            let (text, is_error) = call(&ws, args.clone());
            assert!(is_error, "{args}");
            assert_eq!(text, expected, "{args}");
        }
        let (text, is_error) = call(&ws, json!({"path": "empty.txt"}));
        assert!(!is_error);
        assert_eq!(text, "(`empty.txt` is empty)");
    }
}
