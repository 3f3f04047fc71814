//! What can go wrong in the store, with the facts (the file as the person knows it, the line
//! and column, the step, the query) and a one-line message each; `crate::user_error` turns
//! each into the user-facing error with its exit code and hints.

use std::path::PathBuf;

use crate::plan::StepId;

/// A store failure. Paths are as the person knows them (from `.tasks/` on) unless the field
/// says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `.tasks/` below the repository's top level `top` (`rel` from `top`).
    #[error(
        "`{rel}` is a task store below the repository's top level: tick uses only the \
         `.tasks/` at the top level"
    )]
    NestedStore { rel: String, top: PathBuf },
    #[error("no task matches `{0}`")]
    NoTaskMatches(String),
    #[error("`{query}` matches {} tasks: {}", .ids.len(), .ids.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", "))]
    Ambiguous { query: String, ids: Vec<String> },
    /// A task's checklist without steps (`what`: "is empty", "has no steps").
    #[error("`{todo}:1:1`: the checklist {what}")]
    NoSteps { todo: String, what: &'static str },
    /// A task file that is not there.
    #[error("`{0}` is missing")]
    Missing(String),
    /// A task file that does not parse: `hint` is the parser's, without "not changed".
    #[error("`{path}:{line}:{col}`: {message}")]
    Parse {
        path: String,
        line: usize,
        col: usize,
        message: String,
        hint: String,
    },
    /// No step `id` in the checklist `todo`, whose steps are `ids` (each in backticks).
    #[error("there is no step `{id}` in `{todo}`")]
    NoStep {
        id: StepId,
        todo: String,
        ids: Vec<String>,
    },
    /// A phase that forbids cancelling: the reason and hint of the refused transition.
    #[error("`{id}` cannot be cancelled: {reason}")]
    NotCancellable {
        id: String,
        reason: String,
        hint: String,
    },
    /// An answer to a step that is not blocked; `blocked` are the steps that are.
    #[error("`{id}` is not blocked (it is {})", .status.replace('_', " "))]
    NotBlocked {
        id: StepId,
        status: &'static str,
        blocked: Vec<String>,
    },
    /// A task's lock file (`path`: `.tasks/<id>/.lock`) that is a link or not a file.
    #[error("`{0}` is not a regular file")]
    LockNotAFile(String),
    #[error("no template `{0}`")]
    NoTemplate(String),
    /// A template (`origin`: "`.tasks/templates/PLAN.md.j2`", "the built-in `…`") that failed.
    #[error("template {origin} failed: {detail}")]
    Template { origin: String, detail: String },
    /// What a template made of a file (`file`: "TODO.md", "PLAN.md") does not parse back.
    #[error("the {file} template produced {what} that does not parse: {detail}")]
    TemplateOutput {
        file: &'static str,
        what: &'static str,
        detail: String,
    },
    /// A workspace path a step's record names that tick may not put back.
    #[error("`{0}` is not a workspace file tick may put back")]
    NotRestorable(String),
    #[error("`{rel}` lies below a link (`{link}`)")]
    BelowLink { rel: String, link: String },
    /// A file a step left that is a folder now (absolute path).
    #[error("`{}` is a folder now, where the step left a file", .0.display())]
    FolderNow(PathBuf),
    /// The kept copy `copy` of `path` is gone (absolute paths).
    #[error("the kept copy of `{}` is gone (`{}`)", .path.display(), .copy.display())]
    KeptCopyGone { path: PathBuf, copy: PathBuf },
    /// One of tick's own records in `runs/` that does not read (absolute path).
    #[error("`{}` does not read: {detail}", .path.display())]
    RecordUnreadable { path: PathBuf, detail: String },
    /// An edit of TODO.md that does not parse back (a bug).
    #[error("the edit of `{todo}` did not parse back: {detail}")]
    EditUnparsed { todo: String, detail: String },
    /// What tick could not serialize (`what`: "the journal", "state.yaml", ...).
    #[error("could not write {what}: {detail}")]
    Serialize { what: &'static str, detail: String },
    #[error("could not render {what}: {detail}")]
    Render { what: &'static str, detail: String },
}

impl Error {
    /// [`Error::Serialize`] of `what`, from the serializer's error.
    pub fn serialize(what: &'static str, err: impl std::fmt::Display) -> Self {
        Error::Serialize {
            what,
            detail: err.to_string(),
        }
    }
}
