//! The little tick asks of git: which commit the workspace is on.

use std::path::Path;
use std::process::{Command, Stdio};

/// The commit `HEAD` points at, or `None` outside a repository or before the first commit.
pub fn head(root: &Path) -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let head = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!head.is_empty()).then_some(head)
}
