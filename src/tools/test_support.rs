//! Helpers the tools' tests share: files in a temp workspace, and a tool's text outcome.

use std::path::Path;

use super::ToolOutcome;

/// Writes `content` to `rel` under `root`, creating its directories.
pub(crate) fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The text and error flag of an ordinary tool's outcome.
pub(crate) fn text_of(outcome: ToolOutcome) -> (String, bool) {
    match outcome {
        ToolOutcome::Output { text, is_error, .. } => (text, is_error),
        other => panic!("unexpected outcome {other:?}"),
    }
}
