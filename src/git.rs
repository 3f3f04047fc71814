//! The little tick asks of git: which commit the workspace is on.

use std::path::Path;
use std::process::{Command, Stdio};

/// Stages `paths` and commits exactly them (other staged or changed files are left alone).
pub fn commit_paths(root: &Path, paths: &[String], message: &str) -> Result<(), String> {
    let run = |args: Vec<&str>| -> Result<(), String> {
        let output = Command::new("git")
            .args(&args)
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|err| format!("could not run git: {err}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`git {}` failed: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    let mut add = vec!["add", "--all", "--"];
    add.extend(paths.iter().map(String::as_str));
    run(add)?;
    let mut commit = vec!["commit", "--quiet", "-m", message, "--"];
    commit.extend(paths.iter().map(String::as_str));
    run(commit)
}

/// What `git <args>` prints in `root`, or `None` when git is missing or fails (outside a
/// repository, say).
pub fn output(root: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The commit `HEAD` points at, or `None` outside a repository or before the first commit.
pub fn head(root: &Path) -> Option<String> {
    let head = output(root, &["rev-parse", "--verify", "--quiet", "HEAD"])?
        .trim()
        .to_owned();
    (!head.is_empty()).then_some(head)
}
