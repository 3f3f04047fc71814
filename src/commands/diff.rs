//! `tick diff S3`: the changes a step made. When the run committed each step (`--commit`),
//! the step's commit, found by its `Task:` and `Step:` trailers; otherwise the working tree's
//! `git diff` of the files state.yaml records the step changed.

use super::{Ctx, Outcome};
use crate::cli::DiffArgs;
use crate::error::{Error, Result};
use crate::plan::StepId;

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
fn step_commit(root: &std::path::Path, task: &str, step: StepId) -> Option<String> {
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

pub fn run(ctx: &Ctx<'_>, args: &DiffArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let step: StepId = args.step.parse().map_err(Error::input)?;
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let task = store.load(&task_ref)?;
    if task.todo.find(step).is_none() {
        return Err(Error::input(format!("`{}` has no step `{step}`", task.id))
            .hint(format!("`tick status {}` lists its steps", task.id)));
    }
    let root = store.root();
    if let Some(sha) = step_commit(root, &task.id, step) {
        let shown = crate::git::output(
            root,
            &[
                "show",
                "--no-ext-diff",
                "--no-textconv",
                "--stat",
                "--patch",
                &sha,
            ],
        )
        .ok_or_else(|| Error::internal(format!("`git show {sha}` failed")))?;
        ctx.ui.data(&shown);
        ctx.ui.note(&format!(
            "{step} as committed in {}",
            &sha[..sha.len().min(12)]
        ));
        return Ok(Outcome::Done);
    }
    let files = task
        .state
        .steps
        .get(&step)
        .map(|r| r.files_changed.clone())
        .unwrap_or_default();
    if files.is_empty() {
        ctx.ui.note(&format!(
            "`{step}` has no recorded changes in `{}`: it has not run, or it changed no file",
            task.id
        ));
        return Ok(Outcome::Done);
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
    let since = if base == "HEAD" {
        "HEAD".to_owned()
    } else {
        format!(
            "the commit it was approved on ({})",
            &base[..base.len().min(12)]
        )
    };
    let mut args_git = vec![
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        base.as_str(),
        "--",
    ];
    args_git.extend(files.iter().map(String::as_str));
    let diff = crate::git::output(root, &args_git).unwrap_or_default();
    if !diff.is_empty() {
        ctx.ui.data(&diff);
    }
    let untracked: Vec<&String> = files
        .iter()
        .filter(|f| crate::git::output(root, &["ls-files", "--error-unmatch", "--", f]).is_none())
        .filter(|f| root.join(f).exists())
        .collect();
    for file in &untracked {
        ctx.ui.note(&format!("`{file}` is new and not in git yet"));
    }
    ctx.ui.note(&format!(
        "{step} changed {}: the working tree against {since} (the run did not commit it, so \
         other changes to the same files show too)",
        files
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(Outcome::Done)
}
