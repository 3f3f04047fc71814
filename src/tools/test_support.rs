//! Helpers the tools' tests share: files in a temp workspace, and a tool's text outcome.

use std::path::Path;

use super::workspace::Workspace;
use super::{Effects, ToolOutcome};

/// Writes `content` to `rel` under `root`, creating its directories.
pub(crate) fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The text and error flag of an ordinary tool's outcome.
pub(crate) fn text_of(outcome: ToolOutcome) -> (String, bool) {
    let (text, is_error, _) = output_of(outcome);
    (text, is_error)
}

/// The text, error flag and effects of an ordinary tool's outcome.
pub(crate) fn output_of(outcome: ToolOutcome) -> (String, bool, Effects) {
    match outcome {
        ToolOutcome::Output {
            text,
            is_error,
            effects,
        } => (text, is_error, effects),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// What `run` answers to `args`, as [`text_of`]: for the read-only tools' tests, whose call
/// sites read better with a `json!` literal.
#[allow(
    clippy::needless_pass_by_value,
    reason = "call sites read better with a `json!` literal"
)]
pub(crate) fn call_tool(
    run: fn(&Workspace, &serde_json::Value) -> ToolOutcome,
    ws: &Workspace,
    args: serde_json::Value,
) -> (String, bool) {
    text_of(run(ws, &args))
}
