//! `tick import`'s engine: another tool's task file read (bounded, as every file a clone ships),
//! made into a draft PLAN.md by [`crate::import::draft`], and written as the draft through the
//! same path as a plan a person wrote ([`super::draft::from_text`]), so it is reviewed and
//! approved as any draft. The repository's test command (the one the compact planner detects)
//! is what a step without a check of its own is proposed.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::fsx;
use crate::import::{self, Format, draft::ImportMeta};
use crate::plan::Phase;
use crate::tasks::Store;
use crate::tasks::plan_md::{self, FrontMatter};

/// The front matter key of a draft's import record.
pub const FRONT_MATTER_KEY: &str = "import";

/// The marks of the source's tasks, beside the draft: `.tasks/draft/import.yaml`.
pub const MARKS_FILE: &str = "import.yaml";

/// What to import.
#[derive(Debug, Clone)]
pub struct Request {
    /// The file (or a folder holding it), as the person named it, and resolved.
    pub named: String,
    pub path: PathBuf,
    pub format: Option<Format>,
    pub dry_run: bool,
    pub write_back: bool,
}

/// What an import made.
#[derive(Debug, Clone)]
pub struct Imported {
    pub format: Format,
    /// The source, relative to the repository.
    pub source: String,
    pub title: String,
    pub steps: usize,
    pub done: usize,
    pub proposed: usize,
    pub warnings: Vec<String>,
    /// The draft's text; written to `.tasks/draft/PLAN.md` unless a dry run.
    pub text: String,
    pub written: Option<PathBuf>,
}

/// Imports `request` into the draft (or, for a dry run, only makes its text).
pub fn import(store: &Store, request: &Request, now: DateTime<Utc>) -> Result<Imported> {
    let file = source_file(&request.path);
    let named = &request.named;
    let root = store.root();
    let (rel, inside) = relative_to(root, &file);
    let mut warnings = Vec::new();
    let write_back = request.write_back && inside;
    if request.write_back && !inside {
        warnings.push(format!(
            "`{named}` is outside the repository: tick will not tick it back (imported as if with `--no-write-back`)"
        ));
    }
    // A path that is not there is said as such, before its name is read for a format.
    if std::fs::symlink_metadata(&file).is_err() {
        return Err(Error::input(format!("`{named}` does not exist")).hint("nothing was imported"));
    }
    let format = match request.format {
        Some(format) => format,
        None => Format::detect(&rel).ok_or_else(|| {
            Error::input(format!("cannot tell which tool wrote `{named}`"))
                .hint("name it with `--format kiro|speckit|openspec|taskmaster|backlog`; nothing was imported")
        })?,
    };
    let shown = if inside { rel.clone() } else { named.clone() };
    let src = fsx::read_named(&file, &shown, fsx::MAX_TEXT_FILE)
        .map_err(|err| match err {
            // The path a person typed: nothing of theirs to remove or restore.
            fsx::Error::NotAFile { .. } => Error::input(err.to_string())
                .hint("name the tool's task file itself; nothing was imported"),
            err => err.into(),
        })?
        .ok_or_else(|| {
            Error::input(format!("`{named}` does not exist")).hint("nothing was imported")
        })?;
    let parsed = import::parse(format, &rel, &src).map_err(|err| {
        Error::input(format!(
            "`{shown}:{}:{}`: {}",
            err.line, err.col, err.message
        ))
        .hint(err.hint)
    })?;
    let repo = crate::compact::context::scan(root);
    let test = repo.test_command();
    let options = import::draft::Options {
        format,
        path: &shown,
        write_back,
        test_command: test
            .as_ref()
            .map(|t| (t.command.as_str(), t.source.as_str())),
    };
    let drafted = import::draft::draft(&parsed, &options);
    warnings.extend(drafted.warnings.iter().cloned());
    let mut extra = serde_yaml::Mapping::new();
    extra.insert(
        FRONT_MATTER_KEY.into(),
        serde_yaml::to_value(&drafted.meta)
            .map_err(|err| Error::internal(format!("could not record the import: {err}")))?,
    );
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        title: Some(drafted.title.clone()),
        goal: Some(format!(
            "Carry out the {} tasks in `{shown}`",
            format.tool()
        )),
        status: Some(Phase::Draft),
        created: Some(now),
        extra,
        ..FrontMatter::default()
    };
    let text = plan_md::render(&front, &drafted.body)
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    let written = if request.dry_run {
        None
    } else {
        let path = super::draft::from_text(store, &shown, &text, false, now)?.path;
        let marks = serde_yaml::to_string(&drafted.marks)
            .map_err(|err| Error::internal(format!("could not record the import: {err}")))?;
        fsx::write_atomic(&store.draft_dir().join(MARKS_FILE), marks.as_bytes())?;
        Some(path)
    };
    Ok(Imported {
        format,
        source: shown,
        title: drafted.title,
        steps: drafted.steps,
        done: drafted.done,
        proposed: drafted.proposed,
        warnings,
        text,
        written,
    })
}

/// The task file a folder holds, the way each tool names it; a file is itself.
fn source_file(path: &Path) -> PathBuf {
    if !path.is_dir() {
        return path.to_path_buf();
    }
    for name in ["tasks.md", "tasks/tasks.json", "tasks.json"] {
        let candidate = path.join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    path.to_path_buf()
}

/// `path` relative to `root` (`/`-separated), and whether it is inside it, links resolved.
fn relative_to(root: &Path, path: &Path) -> (String, bool) {
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match real.strip_prefix(&root) {
        Ok(rel) => (
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            true,
        ),
        Err(_) => (path.to_string_lossy().replace('\\', "/"), false),
    }
}

/// A plan's import record, from its PLAN.md front matter.
pub fn meta_of(front: &FrontMatter) -> Option<ImportMeta> {
    let value = front.extra.get(FRONT_MATTER_KEY)?;
    serde_yaml::from_value(value.clone()).ok()
}

/// The marks `tick import` kept beside the draft; none when there are none or they do not
/// read (the steps are then not ticked back, never ticked back wrongly).
pub fn draft_marks(store: &Store) -> import::draft::Marks {
    let path = store.draft_dir().join(MARKS_FILE);
    fsx::read_capped(&path, fsx::MAX_STATE_FILE)
        .ok()
        .flatten()
        .and_then(|text| {
            crate::tasks::safe_yaml::from_str(&text, 0, "invalid import marks", "").ok()
        })
        .unwrap_or_default()
}
