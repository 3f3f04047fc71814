//! The changes a step made (`tick diff S3`, the session's `/diff`), as data. When the run
//! committed each step, the step's commit, found by its `Task:` and `Step:` trailers;
//! otherwise the working tree's `git diff` of the files state.yaml records the step changed.

use std::path::Path;

use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::tasks::Store;

/// What a step changed, as git shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepDiff {
    /// The step's own commit: `git show --stat --patch` of `sha`.
    Committed {
        step: StepId,
        sha: String,
        shown: String,
    },
    /// state.yaml records no file the step changed: it has not run, or it changed none.
    Nothing { step: StepId, task: String },
    /// The step changed nothing that stayed: it ended blocked and its files were put back
    /// (the compact executor). `diff`: what it tried, from `runs/<time>-S1-tried.diff`.
    Tried {
        step: StepId,
        task: String,
        diff: String,
    },
    /// The working tree against `base` (`HEAD`, or the commit the plan was approved on), for
    /// the files the step changed.
    WorkingTree {
        step: StepId,
        /// The files state.yaml records, workspace-relative.
        files: Vec<String>,
        /// `git diff` of them; empty when they match `base`.
        diff: String,
        /// Those of them that exist and git does not know yet.
        untracked: Vec<String>,
        /// `HEAD`, or the full hash of the commit the plan was approved on.
        base: String,
    },
}

/// Task `id` has no step `step`: the refusal, with a hint that names the task as a person
/// types it.
fn no_such_step(store: &Store, id: &str, step: StepId) -> Error {
    Error::input(format!("`{id}` has no step `{step}`")).hint(format!(
        "`tick status{}` lists its steps",
        crate::tasks::naming::task_named(store, id)
    ))
}

/// What step `step` of task `task` (the current one when `None`) changed in the code: tick's
/// own bookkeeping under `.tasks/` is left out ([`step_diff_all`] shows it too).
pub fn step_diff(store: &Store, task: Option<&str>, step: StepId) -> Result<StepDiff> {
    step_diff_all(store, task, step, false)
}

/// [`step_diff`]; with `all`, a committed step's `.tasks/` files (TODO.md, state.yaml) too.
///
/// A step a person ticked by hand has no recorded changes: its declared `files` stand in for
/// them. A new file git does not know yet is shown whole, as a diff from nothing.
pub fn step_diff_all(
    store: &Store,
    task: Option<&str>,
    step: StepId,
    all: bool,
) -> Result<StepDiff> {
    let task_ref = store.resolve_or_current(task)?;
    let task = store.load(&task_ref)?;
    if task.todo.find(step).is_none() {
        return Err(no_such_step(store, &task.id, step));
    }
    let root = store.root();
    if let Some(sha) = step_commit(root, &task.id, step) {
        let mut args = vec![
            "show",
            "--no-ext-diff",
            "--no-textconv",
            "--stat",
            "--patch",
            sha.as_str(),
        ];
        let code: Vec<String>;
        if !all {
            let names = crate::git::output(root, &["show", "--name-only", "-z", "--format=", &sha])
                .ok_or_else(|| Error::internal(format!("`git show {sha}` failed")))?;
            code = names
                .split('\0')
                .filter(|name| !name.is_empty() && !is_bookkeeping(name))
                .map(str::to_owned)
                .collect();
            // A commit of bookkeeping alone shows its header and nothing else.
            args.push("--");
            args.extend(code.iter().map(String::as_str));
        }
        let shown = crate::git::output(root, &args)
            .ok_or_else(|| Error::internal(format!("`git show {sha}` failed")))?;
        return Ok(StepDiff::Committed { step, sha, shown });
    }
    let record = task.state.steps.get(&step);
    let mut files = record.map(|r| r.files_changed.clone()).unwrap_or_default();
    let by_hand = record.is_some_and(|r| r.changed_by == Some(crate::tasks::state::Actor::Person));
    if files.is_empty()
        && by_hand
        && let Some(declared) = task.todo.find(step).map(|s| s.files.clone())
    {
        files = crate::watch::fingerprint(root, &declared, &[])
            .into_keys()
            .collect();
    }
    if files.is_empty() {
        if let Some(diff) = tried(&task.dir, step) {
            return Ok(StepDiff::Tried {
                step,
                task: task.id.clone(),
                diff,
            });
        }
        return Ok(StepDiff::Nothing {
            step,
            task: task.id.clone(),
        });
    }
    // Against the commit the plan was approved on, so changes committed since (by hand,
    // without trailers) still show; HEAD when the approval recorded none.
    let base = task
        .state
        .approval
        .as_ref()
        .and_then(|a| a.git_head.clone())
        .filter(|head| {
            crate::git::output(root, &["cat-file", "-e", &format!("{head}^{{commit}}")]).is_some()
        })
        .unwrap_or_else(|| "HEAD".to_owned());
    let mut args = vec![
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        base.as_str(),
        "--",
    ];
    args.extend(files.iter().map(String::as_str));
    let mut diff = crate::git::output(root, &args).unwrap_or_default();
    let untracked: Vec<String> = files
        .iter()
        .filter(|f| crate::git::output(root, &["ls-files", "--error-unmatch", "--", f]).is_none())
        .filter(|f| root.join(f).exists())
        .cloned()
        .collect();
    for file in &untracked {
        diff.push_str(&new_file_diff(root, file));
    }
    // A blocked step whose files were put back: what it tried instead of an empty diff.
    if diff.is_empty()
        && let Some(tried) = tried(&task.dir, step)
    {
        return Ok(StepDiff::Tried {
            step,
            task: task.id.clone(),
            diff: tried,
        });
    }
    Ok(StepDiff::WorkingTree {
        step,
        files,
        diff,
        untracked,
        base,
    })
}

/// The newest `runs/<time>-<step>-tried.diff` of the task in `task_dir`: what a blocked
/// step tried before its files were put back.
fn tried(task_dir: &Path, step: StepId) -> Option<String> {
    let suffix = format!("-{step}-tried.diff");
    let newest = std::fs::read_dir(task_dir.join("runs"))
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(&suffix))
        .max()?;
    crate::fsx::read_optional(&task_dir.join("runs").join(newest))
        .ok()
        .flatten()
}

/// Whether `path` is tick's own bookkeeping (a task's files under `.tasks/`).
fn is_bookkeeping(path: &str) -> bool {
    path.starts_with(".tasks/")
}

/// A file git does not know yet, as a diff from nothing (what `git diff` shows once it is
/// added); a binary or oversized file is named, not printed.
fn new_file_diff(root: &Path, file: &str) -> String {
    let text = match crate::fsx::read_capped(&root.join(file), crate::fsx::MAX_TEXT_FILE) {
        Ok(Some(text)) if !text.contains('\0') => text,
        Ok(None) => return String::new(),
        _ => {
            return format!(
                "diff --git a/{file} b/{file}\nnew file\nBinary or large file {file} not shown\n"
            );
        }
    };
    let diff = similar::TextDiff::from_lines("", text.as_str());
    let body = diff
        .unified_diff()
        .header("/dev/null", &format!("b/{file}"))
        .to_string();
    format!("diff --git a/{file} b/{file}\nnew file\n{body}")
}

/// `text` as a POSIX basic regular expression that matches only itself (git's `--grep`).
fn basic_regex_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if ".[]*^$\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The commit whose message carries both trailers, newest first.
fn step_commit(root: &Path, task: &str, step: StepId) -> Option<String> {
    let sha = crate::git::output(
        root,
        &[
            "log",
            "--all-match",
            "--format=%H",
            "-n",
            "1",
            // Whole trailer lines: `Step: S1` must not find `Step: S11`.
            &format!("--grep=^Task: {}$", basic_regex_literal(task)),
            &format!("--grep=^Step: {}$", basic_regex_literal(&step.to_string())),
        ],
    )?;
    let sha = sha.trim().to_owned();
    (!sha.is_empty()).then_some(sha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{PLAN_FILE, TODO_FILE};

    #[test]
    fn a_trailer_is_matched_literally() {
        assert_eq!(basic_regex_literal("20261130-x.y"), "20261130-x\\.y");
        assert_eq!(basic_regex_literal("a[b]*^$\\"), "a\\[b\\]\\*\\^\\$\\\\");
    }

    #[test]
    fn a_step_the_task_lacks_is_refused_and_one_that_never_ran_has_nothing() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::at(root.path());
        let task = store.task_ref("20261130-143012-t");
        std::fs::create_dir_all(&task.dir).unwrap();
        let plan = "---\ntitle: T\nstatus: approved\n---\n# T\n\n## Steps\n\n- [ ] S1 One\n";
        std::fs::write(task.dir.join(PLAN_FILE), plan).unwrap();
        std::fs::write(task.dir.join(TODO_FILE), "# TODO: T\n\n- [ ] S1 One\n").unwrap();
        let err = step_diff(&store, Some(&task.id), StepId::top(2)).unwrap_err();
        assert_eq!(err.message, "`20261130-143012-t` has no step `S2`");
        // The hint names the task as a person types it: the current task needs no name.
        assert_eq!(err.hints, ["`tick status` lists its steps"]);
        assert_eq!(
            step_diff(&store, Some(&task.id), StepId::top(1)).unwrap(),
            StepDiff::Nothing {
                step: StepId::top(1),
                task: task.id.clone()
            }
        );
        // A newer open task is the current one: now the hint names this one, by the
        // shortest prefix that is its alone.
        let newer = store.task_ref("20261130-150000-u");
        std::fs::create_dir_all(&newer.dir).unwrap();
        std::fs::write(newer.dir.join(PLAN_FILE), plan).unwrap();
        std::fs::write(newer.dir.join(TODO_FILE), "# TODO: T\n\n- [ ] S1 One\n").unwrap();
        let err = step_diff(&store, Some(&task.id), StepId::top(2)).unwrap_err();
        assert_eq!(err.hints, ["`tick status 20261130-14` lists its steps"]);
    }
}
