//! `list_files`: the files and directories below a path, as a sorted list of workspace-relative
//! paths a model can pass straight to `read_file`.
//!
//! The walk rules (ignore files, hidden files, `.git`/`.tasks`) are [`super::walk`]'s. When
//! there are more than [`MAX_ENTRIES`] entries, the shallowest ones are kept: an overview of
//! the top levels helps a model choose where to look next more than one deep corner does.

use std::fmt::Write as _;
use std::ops::ControlFlow;

use serde::Deserialize;
use serde_json::json;

use super::walk::{self, EntryKind};
use super::workspace::{Access, Workspace};
use super::{ToolOutcome, count, parse_args};
use crate::llm::ToolSpec;

pub const NAME: &str = "list_files";

/// Entries shown per call.
pub const MAX_ENTRIES: usize = 1000;
/// Levels listed when the model does not say.
pub const DEFAULT_DEPTH: usize = 3;
/// Entries remembered while walking; past this they are only counted, to bound memory in a
/// huge tree.
const MAX_COLLECTED: usize = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    depth: Option<usize>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "List files and directories below a directory of the workspace, sorted, one \
             workspace-relative path per line. Directories end with `/`, symbolic links with `@`. \
             Files ignored by .gitignore or .ignore are left out, and `.git` and `.tasks` are \
             never listed. At most {MAX_ENTRIES} entries are returned (the shallowest first); list \
             a subdirectory to see more."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace root. Default `.` (the root)."
                },
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "description": format!("How many levels to descend: 1 lists only the directory's own entries. Default {DEFAULT_DEPTH}.")
                }
            },
            "additionalProperties": false
        }),
    }
}

pub fn run(workspace: &Workspace, arguments: &serde_json::Value) -> ToolOutcome {
    ToolOutcome::answered(list(workspace, arguments))
}

fn list(workspace: &Workspace, arguments: &serde_json::Value) -> Result<String, String> {
    let args: Args = parse_args(NAME, arguments)?;
    let shown = args.path.as_deref().unwrap_or(".");
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
    if depth == 0 {
        return Err(
            "depth must be at least 1 (1 lists only the directory's own entries)".to_owned(),
        );
    }
    let target = workspace
        .resolve(shown, Access::Read)
        .map_err(|e| e.to_string())?;
    if !target.is_dir() {
        return Err(format!("`{shown}` is a file; use read_file to read it"));
    }
    let target_rel = target.strip_prefix(workspace.root()).unwrap_or(&target);
    if walk::is_hidden_from_tools(target_rel) {
        return Err(format!(
            "`{shown}` is inside `.git` or `.tasks`, which list_files never lists; read_file can read a file there if you know its path"
        ));
    }

    let mut entries: Vec<(usize, String)> = Vec::new();
    let mut total = 0usize;
    let summary = walk::walk(workspace, &target, Some(depth), |entry| {
        total += 1;
        if entries.len() < MAX_COLLECTED {
            let mut path = workspace.display(&entry.path);
            match entry.kind {
                EntryKind::Dir => path.push('/'),
                EntryKind::Symlink => path.push('@'),
                EntryKind::File => {}
            }
            entries.push((entry.depth, path));
        }
        ControlFlow::Continue(())
    });

    if !summary.target_seen {
        return Ok(format!(
            "(`{shown}` is excluded by a .gitignore or .ignore file, so its contents are not listed; read_file can still read a file there)"
        ));
    }
    if total == 0 {
        return Ok(format!("(`{shown}` is empty)"));
    }
    // Keep the shallowest entries, then show them in path order.
    entries.sort();
    entries.truncate(MAX_ENTRIES);
    let mut paths: Vec<String> = entries.into_iter().map(|(_, path)| path).collect();
    paths.sort();

    let mut out = paths.join("\n");
    out.push('\n');
    if total > paths.len() {
        let _ = write!(
            out,
            "[{} of {total} entries shown, the shallowest first; {} left out: list a subdirectory or use a smaller depth]",
            paths.len(),
            total - paths.len()
        );
    }
    if summary.unreadable > 0 {
        let _ = write!(
            out,
            "[{} could not be read]",
            count(summary.unreadable, "entry", "entries")
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{call_tool, write};
    use std::fs;

    /// A project that is not a git repository but has a .gitignore, and a .git directory
    /// that is only there to be skipped.
    fn project() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", "target/\n*.log\n");
        write(root, "src/main.rs", "fn main() {}\n");
        write(root, "src/lib/mod.rs", "\n");
        write(root, "src/lib/deep/er/file.rs", "\n");
        write(root, "target/debug/app", "bin");
        write(root, "debug.log", "log");
        write(root, ".github/workflows/ci.yml", "on: push\n");
        write(root, ".git/config", "[core]\n");
        write(root, ".tasks/draft/PLAN.md", "# plan\n");
        write(root, "src/.tasks/x", "x");
        write(root, "README.md", "hi\n");
        let ws = Workspace::new(root).unwrap();
        (dir, ws)
    }

    #[test]
    fn lists_sorted_honours_gitignore_and_skips_git_and_tasks() {
        let (_dir, ws) = project();
        let (text, is_error) = call_tool(run, &ws, json!({}));
        assert!(!is_error);
        assert_eq!(
            text,
            "\
.github/
.github/workflows/
.github/workflows/ci.yml
.gitignore
README.md
src/
src/lib/
src/lib/deep/
src/lib/mod.rs
src/main.rs
"
        );
    }

    #[test]
    fn subdirectory_sees_the_root_gitignore_and_depth() {
        let (dir, ws) = project();
        write(dir.path(), "src/trace.log", "x");
        let (text, _) = call_tool(run, &ws, json!({"path": "src", "depth": 1}));
        assert_eq!(text, "src/lib/\nsrc/main.rs\n");
        let (text, _) = call_tool(run, &ws, json!({"path": "./src/lib/", "depth": 10}));
        assert_eq!(
            text,
            "src/lib/deep/\nsrc/lib/deep/er/\nsrc/lib/deep/er/file.rs\nsrc/lib/mod.rs\n"
        );
    }

    #[test]
    fn gitignore_is_honoured_inside_a_git_repository_too() {
        let (dir, ws) = project();
        write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
        write(dir.path(), ".git/info/exclude", "README.md\n");
        let (text, _) = call_tool(run, &ws, json!({"depth": 1}));
        assert_eq!(text, ".github/\n.gitignore\nsrc/\n");
    }

    #[test]
    fn ignored_and_protected_targets() {
        let (_dir, ws) = project();
        let (text, is_error) = call_tool(run, &ws, json!({"path": "target"}));
        assert!(!is_error);
        assert!(text.contains("is excluded by a .gitignore"), "{text}");
        let (text, is_error) = call_tool(run, &ws, json!({"path": ".git"}));
        assert!(is_error);
        assert!(text.contains("which list_files never lists"), "{text}");
        let (text, is_error) = call_tool(run, &ws, json!({"path": "README.md"}));
        assert!(is_error);
        assert_eq!(text, "`README.md` is a file; use read_file to read it");
        let (text, is_error) = call_tool(run, &ws, json!({"depth": 0}));
        assert!(is_error);
        assert!(text.starts_with("depth must be at least 1"));
        let (text, is_error) = call_tool(run, &ws, json!({"path": "/"}));
        assert!(is_error);
        assert!(text.contains("absolute path"));
        let (text, is_error) = call_tool(run, &ws, json!({"recursive": true}));
        assert!(is_error);
        assert_eq!(
            text,
            "invalid arguments for list_files: unknown field `recursive`, expected `path` or `depth`"
        );
    }

    #[test]
    fn symlinks_are_marked_and_not_followed() {
        let (dir, ws) = project();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.txt", "s");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("src/out")).unwrap();
        let (text, _) = call_tool(run, &ws, json!({"path": "src", "depth": 5}));
        assert!(text.contains("src/out@\n"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn empty_directory() {
        let (dir, ws) = project();
        fs::create_dir(dir.path().join("empty")).unwrap();
        assert_eq!(
            call_tool(run, &ws, json!({"path": "empty"})).0,
            "(`empty` is empty)"
        );
    }

    #[test]
    fn cap_keeps_the_shallowest_entries_and_says_how_many_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for i in 0..(MAX_ENTRIES + 50) {
            write(root, &format!("a/deep/f{i:04}.txt"), "");
        }
        write(root, "z.txt", "");
        let ws = Workspace::new(root).unwrap();
        let (text, is_error) = call_tool(run, &ws, json!({}));
        assert!(!is_error);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_ENTRIES + 1);
        // The top-level file survives the cap although it sorts last.
        assert!(lines.contains(&"z.txt"));
        assert!(lines.contains(&"a/deep/"));
        assert_eq!(
            lines[MAX_ENTRIES],
            format!(
                "[{MAX_ENTRIES} of {} entries shown, the shallowest first; 53 left out: list a subdirectory or use a smaller depth]",
                MAX_ENTRIES + 53
            )
        );
    }
}
