//! `search_files`: lines matching a regex, with ripgrep's own engine (grep-regex and
//! grep-searcher) over the same walk as `list_files`.
//!
//! Binary files are skipped whole: a file in which the searcher finds a NUL byte contributes
//! no matches, even ones found before the NUL, because a "match" in a binary is noise to a
//! model. Output is capped at [`MAX_MATCHES`] lines; the search still counts every match so
//! the note can say how far off the cap was.

use std::fmt::Write as _;
use std::io;
use std::ops::ControlFlow;
use std::path::Path;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use serde::Deserialize;
use serde_json::json;

use super::walk::{self, EntryKind};
use super::workspace::{Access, Workspace};
use super::{ToolOutcome, count, parse_args, truncate_line};
use crate::llm::ToolSpec;

pub const NAME: &str = "search_files";

/// Matching lines shown per call.
pub const MAX_MATCHES: usize = 200;
/// Characters shown of one matching line.
pub const MAX_LINE_CHARS: usize = 300;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "Search the workspace for lines matching a regular expression (Rust regex syntax, as \
             ripgrep; `(?i)` makes it case-insensitive). Prints `path:line: text` for each \
             matching line, at most {MAX_MATCHES} lines. Files ignored by .gitignore or .ignore, \
             binary files, `.git` and `.tasks` are not searched."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression matched against each line, e.g. `fn login\\(`."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace root. Default `.`."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose workspace-relative path matches this gitignore-style glob, e.g. `*.rs` (any directory) or `src/**/*.ts`; a leading `!` excludes instead. Applies when `path` is a directory."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

pub fn run(workspace: &Workspace, arguments: &serde_json::Value) -> ToolOutcome {
    ToolOutcome::answered(search(workspace, arguments))
}

fn search(workspace: &Workspace, arguments: &serde_json::Value) -> Result<String, String> {
    let args: Args = parse_args(NAME, arguments)?;
    if args.pattern.is_empty() {
        return Err("pattern is empty; give a regular expression to look for".to_owned());
    }
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            format!(
                "`{}` is not a valid regular expression: {e}\nhint: escape special characters such as `(`, `[`, `{{`, `.` with `\\`",
                args.pattern
            )
        })?;
    let glob = args
        .glob
        .as_deref()
        .map(|glob| build_glob(workspace, glob))
        .transpose()?;
    let shown = args.path.as_deref().unwrap_or(".");
    let target = workspace
        .resolve(shown, Access::Read)
        .map_err(|e| e.to_string())?;
    let target_rel = target.strip_prefix(workspace.root()).unwrap_or(&target);
    if walk::is_hidden_from_tools(target_rel) {
        return Err(format!(
            "`{shown}` is inside `.git` or `.tasks`, which search_files never searches; read_file can read a file there if you know its path"
        ));
    }

    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut results = Results::default();

    if target.is_dir() {
        let summary = walk::walk(workspace, &target, None, |entry| {
            if entry.kind == EntryKind::File
                && glob
                    .as_ref()
                    .is_none_or(|g| !g.matched(&entry.path, false).is_ignore())
            {
                results.search_file(workspace, &mut searcher, &matcher, &entry.path);
            }
            ControlFlow::Continue(())
        });
        if !summary.target_seen {
            return Ok(format!(
                "(`{shown}` is excluded by a .gitignore or .ignore file, so it was not searched; name a file there to search it)"
            ));
        }
    } else {
        // A file named explicitly is searched even if it is ignored: the model asked for it.
        results.search_file(workspace, &mut searcher, &matcher, &target);
    }
    Ok(results.render(&args.pattern))
}

fn build_glob(workspace: &Workspace, glob: &str) -> Result<Override, String> {
    let invalid = |e: ignore::Error| format!("`{glob}` is not a valid glob: {e}");
    let mut builder = OverrideBuilder::new(workspace.root());
    builder.add(glob).map_err(invalid)?;
    builder.build().map_err(invalid)
}

#[derive(Debug, Default)]
struct Results {
    lines: Vec<String>,
    matches: usize,
    files_with_matches: usize,
    binary_skipped: usize,
    unreadable: Vec<String>,
}

impl Results {
    fn search_file(
        &mut self,
        workspace: &Workspace,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        path: &Path,
    ) {
        let mut sink = FileSink::default();
        let shown = workspace.display(path);
        if let Err(e) = searcher.search_path(matcher, path, &mut sink) {
            self.unreadable.push(format!("`{shown}`: {e}"));
            return;
        }
        if sink.binary {
            self.binary_skipped += 1;
            return;
        }
        if sink.matches.is_empty() {
            return;
        }
        self.files_with_matches += 1;
        for (line_number, text) in sink.matches {
            self.matches += 1;
            if self.lines.len() < MAX_MATCHES {
                let text = truncate_line(&text, MAX_LINE_CHARS);
                self.lines.push(format!("{shown}:{line_number}: {text}"));
            }
        }
    }

    fn render(&self, pattern: &str) -> String {
        let mut out = String::new();
        if self.lines.is_empty() {
            let _ = writeln!(out, "no matches for `{pattern}`");
        }
        for line in &self.lines {
            let _ = writeln!(out, "{line}");
        }
        if self.matches > self.lines.len() {
            let _ = writeln!(
                out,
                "[{} of {} matching lines in {} shown; narrow the search with `path`, `glob` or a more specific pattern]",
                self.lines.len(),
                self.matches,
                count(self.files_with_matches, "file", "files")
            );
        }
        if self.binary_skipped > 0 {
            let _ = writeln!(
                out,
                "[{} skipped]",
                count(self.binary_skipped, "binary file", "binary files")
            );
        }
        for problem in &self.unreadable {
            let _ = writeln!(out, "[not searched: {problem}]");
        }
        out
    }
}

/// Collects one file's matches, and whether the file turned out to be binary.
#[derive(Debug, Default)]
struct FileSink {
    matches: Vec<(u64, String)>,
    binary: bool,
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let text = String::from_utf8_lossy(mat.bytes());
        let text = text.trim_end_matches(['\n', '\r']);
        self.matches
            .push((mat.line_number().unwrap_or(0), text.to_owned()));
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{call_tool, write};

    fn project() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"target/\n");
        write(
            root,
            "src/login.rs",
            b"pub fn login() {}\nfn helper() { login() }\n",
        );
        write(root, "src/routes.ts", b"import { login } from './login';\n");
        write(root, "docs/notes.md", b"Call login( carefully\n");
        write(root, "target/gen.rs", b"fn login() {}\n");
        write(root, ".git/config", b"login = yes\n");
        write(root, ".tasks/draft/PLAN.md", b"- login\n");
        write(root, "blob.bin", b"login\0\x01\x02login\n");
        write(root, "latin1.txt", b"caf\xe9 login\n");
        let ws = Workspace::new(root).unwrap();
        (dir, ws)
    }

    #[test]
    fn finds_matches_sorted_skipping_ignored_protected_and_binary_files() {
        let (_dir, ws) = project();
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "login"}));
        assert!(!is_error);
        assert_eq!(
            text,
            "\
docs/notes.md:1: Call login( carefully
latin1.txt:1: caf\u{fffd} login
src/login.rs:1: pub fn login() {}
src/login.rs:2: fn helper() { login() }
src/routes.ts:1: import { login } from './login';
[1 binary file skipped]
"
        );
    }

    #[test]
    fn glob_and_path_filters() {
        let (_dir, ws) = project();
        let (text, _) = call_tool(run, &ws, json!({"pattern": "login", "glob": "*.rs"}));
        assert_eq!(
            text,
            "src/login.rs:1: pub fn login() {}\nsrc/login.rs:2: fn helper() { login() }\n"
        );
        let (text, _) = call_tool(
            run,
            &ws,
            json!({"pattern": "login", "glob": "!*.rs", "path": "src"}),
        );
        assert_eq!(text, "src/routes.ts:1: import { login } from './login';\n");
        let (text, _) = call_tool(run, &ws, json!({"pattern": "login", "glob": "docs/*.md"}));
        assert_eq!(text, "docs/notes.md:1: Call login( carefully\n");
        let (text, _) = call_tool(
            run,
            &ws,
            json!({"pattern": "(?i)PUB FN", "path": "src/login.rs"}),
        );
        assert_eq!(text, "src/login.rs:1: pub fn login() {}\n");
        // An ignored file named explicitly is searched.
        let (text, _) = call_tool(
            run,
            &ws,
            json!({"pattern": "login", "path": "target/gen.rs"}),
        );
        assert_eq!(text, "target/gen.rs:1: fn login() {}\n");
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "login", "path": "target"}));
        assert!(!is_error);
        assert!(text.contains("is excluded by a .gitignore"), "{text}");
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "login", "path": ".git"}));
        assert!(is_error);
        assert!(text.contains("never searches"), "{text}");
    }

    #[test]
    fn no_matches_is_not_an_error() {
        let (_dir, ws) = project();
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "logout"}));
        assert!(!is_error);
        assert_eq!(text, "no matches for `logout`\n[1 binary file skipped]\n");
    }

    #[test]
    fn model_fixable_errors() {
        let (_dir, ws) = project();
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "login("}));
        assert!(is_error);
        assert!(
            text.starts_with("`login(` is not a valid regular expression: "),
            "{text}"
        );
        assert!(text.ends_with("with `\\`"), "{text}");
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "x", "glob": "a[b"}));
        assert!(is_error);
        assert!(text.starts_with("`a[b` is not a valid glob"), "{text}");
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": ""}));
        assert!(is_error);
        assert!(text.starts_with("pattern is empty"));
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "x", "path": "../"}));
        assert!(is_error);
        assert!(text.contains("outside the workspace"));
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "x", "case": "insensitive"}));
        assert!(is_error);
        assert_eq!(
            text,
            "invalid arguments for search_files: unknown field `case`, expected one of `pattern`, `path`, `glob`"
        );
    }

    #[test]
    fn matches_are_capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let many = (0..150)
            .map(|i| format!("hit {i}\n"))
            .collect::<Vec<_>>()
            .concat();
        write(dir.path(), "a.txt", many.as_bytes());
        write(dir.path(), "b.txt", many.as_bytes());
        write(
            dir.path(),
            "long.txt",
            format!("hit {}\n", "y".repeat(1000)).as_bytes(),
        );
        let ws = Workspace::new(dir.path()).unwrap();
        let (text, is_error) = call_tool(run, &ws, json!({"pattern": "hit"}));
        assert!(!is_error);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_MATCHES + 1);
        assert_eq!(lines[0], "a.txt:1: hit 0");
        assert_eq!(lines[MAX_MATCHES - 1], "b.txt:50: hit 49");
        assert_eq!(
            lines[MAX_MATCHES],
            "[200 of 301 matching lines in 3 files shown; narrow the search with `path`, `glob` or a more specific pattern]"
        );
        let (text, _) = call_tool(run, &ws, json!({"pattern": "hit", "path": "long.txt"}));
        assert!(text.contains("… [line cut: 704 more bytes]"), "{text}");
    }
}
