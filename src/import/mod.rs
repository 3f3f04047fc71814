//! `tick import`'s readers of other tools' task files (Kiro, Spec Kit, OpenSpec, Taskmaster,
//! Backlog.md): each format's file becomes [`SourceTask`]s with the byte position of the mark
//! that says "done" and a hash of what surrounded it, and [`write_back`] ticks that mark
//! again later, refusing when the source changed there. One file per format; everything here
//! is pure (texts in, texts out), so the command and the runner do the reading and writing.

pub mod backlog;
pub mod draft;
pub mod json_spans;
pub mod kiro;
pub mod markdown;
pub mod openspec;
pub mod speckit;
pub mod taskmaster;
pub mod text;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A task file format tick imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Kiro,
    Speckit,
    Openspec,
    Taskmaster,
    Backlog,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Kiro,
        Format::Speckit,
        Format::Openspec,
        Format::Taskmaster,
        Format::Backlog,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Kiro => "kiro",
            Format::Speckit => "speckit",
            Format::Openspec => "openspec",
            Format::Taskmaster => "taskmaster",
            Format::Backlog => "backlog",
        }
    }

    /// The tool's own name, for people.
    pub fn tool(self) -> &'static str {
        match self {
            Format::Kiro => "Kiro",
            Format::Speckit => "Spec Kit",
            Format::Openspec => "OpenSpec",
            Format::Taskmaster => "Taskmaster",
            Format::Backlog => "Backlog.md",
        }
    }

    /// The format a path's place says, the way each tool lays its files out:
    /// `.kiro/specs/<feature>/tasks.md`, `specs/NNN-feature/tasks.md`,
    /// `openspec/changes/<id>/tasks.md`, `.taskmaster/tasks/tasks.json` (or any `tasks.json`),
    /// `backlog/tasks/<id> - <title>.md`. `path` is `/`-separated.
    pub fn detect(path: &str) -> Option<Format> {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let has = |name: &str| parts.contains(&name);
        let file = parts.last().copied().unwrap_or("");
        if file.to_ascii_lowercase().ends_with(".json") {
            return Some(Format::Taskmaster);
        }
        if has(".kiro") {
            return Some(Format::Kiro);
        }
        if has("openspec") {
            return Some(Format::Openspec);
        }
        if has(".taskmaster") {
            return Some(Format::Taskmaster);
        }
        if has("backlog") || file.starts_with("task-") {
            return Some(Format::Backlog);
        }
        if has("specs") {
            return Some(Format::Speckit);
        }
        None
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                format!("`{text}` is not a format tick imports (kiro, speckit, openspec, taskmaster, backlog)")
            })
    }
}

/// One task (or sub-task, or acceptance criterion) of a source file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceTask {
    /// The id the source gives it (`T012`, `1.1`, `3.2`, `task-12#1`).
    pub id: String,
    pub title: String,
    /// The source says it is done (`[x]`, `status: done`).
    pub done: bool,
    /// Kiro's optional task (`- [ ]* 3.4`).
    pub optional: bool,
    /// Spec Kit's `[P]`: may run in parallel with the other `[P]` tasks of its phase.
    pub parallel: bool,
    /// Requirement links (`_Requirements: 1.1, 1.2_`, Spec Kit's `[US1]`).
    pub reqs: Vec<String>,
    /// Paths the task names, inside the repository.
    pub files: Vec<String>,
    /// Source ids this task depends on.
    pub depends: Vec<String>,
    /// Depends on the top-level task before it (Spec Kit's phases run in order).
    pub after_previous: bool,
    /// Commands the source states as the check (a `Verify:` line).
    pub verify: Vec<String>,
    /// Taskmaster's `testStrategy`, as written.
    pub test_strategy: Option<String>,
    /// Further text of the task, one line each.
    pub notes: Vec<String>,
    /// 1-based line of the task in the source.
    pub line: usize,
    /// Where its done mark is, for [`write_back`]; `None` for a task without one (a phase).
    pub mark: Option<Mark>,
    pub subtasks: Vec<SourceTask>,
}

/// What a format says about a whole file, besides its tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceFile {
    /// The plan's title (the file's heading, the feature folder, the Backlog task's title).
    pub title: Option<String>,
    /// The prose the file opens with (Backlog's description), for the plan's summary.
    pub summary: Option<String>,
    pub tasks: Vec<SourceTask>,
    /// Things the person should know: paths left out, a task id used twice.
    pub warnings: Vec<String>,
}

impl SourceFile {
    /// A file with a title and tasks and no opening prose.
    pub fn new(title: Option<String>, tasks: Vec<SourceTask>, warnings: Vec<String>) -> Self {
        Self {
            title,
            summary: None,
            tasks,
            warnings,
        }
    }
}

/// The position of a done mark and the guard that keeps a write-back honest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// 1-based line of the mark.
    pub line: usize,
    /// Byte offset of the mark within its line (the character between the brackets, or the
    /// opening quote of Taskmaster's `"status"` value).
    pub col: usize,
    /// Hash of the line as imported (Taskmaster: of the task's id, title and status).
    pub hash: String,
    /// Where a format that finds the task by name rather than by line finds it (Taskmaster:
    /// `tag/id`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// A source file that does not read as its format: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

/// How many tasks one import takes: a plan longer than this is not a plan a person reviews.
pub const MAX_TASKS: usize = 2_000;

/// Reads `src` as `format`. `name` is the file's path in the repository (for the title when
/// the text has none).
pub fn parse(format: Format, name: &str, src: &str) -> Result<SourceFile, ImportError> {
    let mut file = match format {
        Format::Kiro => kiro::parse(src)?,
        Format::Speckit => speckit::parse(src)?,
        Format::Openspec => openspec::parse(src)?,
        Format::Taskmaster => taskmaster::parse(src)?,
        Format::Backlog => backlog::parse(src)?,
    };
    if file.title.is_none() {
        file.title = Some(text::title_from_path(name));
    }
    let count: usize = file.tasks.iter().map(|t| 1 + t.subtasks.len()).sum();
    if count > MAX_TASKS {
        return Err(ImportError {
            line: 1,
            col: 1,
            message: format!("{count} tasks, more than the {MAX_TASKS} one import takes"),
            hint: "split the file, or import one feature's tasks at a time".into(),
        });
    }
    check_ids(&file.tasks)?;
    Ok(file)
}

/// Two tasks with one id cannot both be written back: an error naming both lines.
fn check_ids(tasks: &[SourceTask]) -> Result<(), ImportError> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for task in tasks
        .iter()
        .flat_map(|t| std::iter::once(t).chain(t.subtasks.iter()))
    {
        if task.id.is_empty() {
            continue;
        }
        if let Some(first) = seen.insert(&task.id, task.line) {
            return Err(ImportError {
                line: task.line,
                col: 1,
                message: format!("task id `{}` is used twice (also on line {first})", task.id),
                hint: "give each task its own id; nothing was imported".into(),
            });
        }
    }
    Ok(())
}

/// Why a write-back did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotWritten {
    /// The line (or Taskmaster task) changed since the import: it is left as it is.
    Changed,
    /// The source already says done there.
    AlreadyDone,
}

/// `src` with the task at `mark` ticked the way `format` writes it: `[x]` (Spec Kit: `[X]`), or
/// Taskmaster's `"status": "done"`. Only the mark's bytes change.
pub fn write_back(format: Format, src: &str, mark: &Mark) -> Result<String, NotWritten> {
    match format {
        Format::Taskmaster => taskmaster::write_back(src, mark),
        Format::Speckit => markdown::write_back(src, mark, 'X'),
        Format::Kiro | Format::Openspec | Format::Backlog => markdown::write_back(src, mark, 'x'),
    }
}

/// A short, stable hash of `text` (hex).
pub fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..16].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_found_from_where_each_tool_keeps_its_files() {
        for (path, want) in [
            (".kiro/specs/user-auth/tasks.md", Some(Format::Kiro)),
            ("specs/001-photo-albums/tasks.md", Some(Format::Speckit)),
            ("./specs/002-x/tasks.md", Some(Format::Speckit)),
            ("openspec/changes/add-2fa/tasks.md", Some(Format::Openspec)),
            (".taskmaster/tasks/tasks.json", Some(Format::Taskmaster)),
            ("tasks/tasks.json", Some(Format::Taskmaster)),
            (
                "backlog/tasks/task-12 - Add login.md",
                Some(Format::Backlog),
            ),
            ("task-3 - Fix.md", Some(Format::Backlog)),
            ("notes/tasks.md", None),
        ] {
            assert_eq!(Format::detect(path), want, "{path}");
        }
    }

    #[test]
    fn format_names_parse_in_any_case_and_others_are_refused() {
        assert_eq!("SpecKit".parse::<Format>(), Ok(Format::Speckit));
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>(), Ok(f));
        }
        assert!("jira".parse::<Format>().unwrap_err().contains("`jira`"));
    }

    #[test]
    fn two_tasks_with_one_id_are_an_error_naming_both_lines() {
        let src = "## Phase 1: Setup\n\n- [ ] T001 Create src/a.py\n- [ ] T001 Create src/b.py\n";
        let err = parse(Format::Speckit, "specs/001-x/tasks.md", src).unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (4, "task id `T001` is used twice (also on line 3)")
        );
    }

    #[test]
    fn more_tasks_than_a_plan_holds_are_refused() {
        let mut src = String::from("## Phase 1: All\n\n");
        for n in 0..=MAX_TASKS {
            src.push_str(&format!("- [ ] T{n:05} Do {n}\n"));
        }
        let err = parse(Format::Speckit, "specs/001-x/tasks.md", &src).unwrap_err();
        assert!(
            err.message.contains("more than the 2000"),
            "{}",
            err.message
        );
    }
}
