//! The turn loop that drives a model with tools, and the events it reports as it goes. The
//! core never prints: it emits [`AgentEvent`]s, and `ui.rs` renders them.

pub mod context;
pub mod executor;
pub mod planner;

use serde::Serialize;

use crate::llm::Usage;

/// Something that happened during a turn, for the person watching (or `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A request to the model is about to go out.
    Request { turn: u32 },
    /// Streamed text from the model.
    Text { text: String },
    /// The model called a tool: its name and the argument that says most (a path, a pattern).
    ToolCall { name: String, detail: String },
    /// A tool call finished.
    ToolResult { name: String, is_error: bool },
    /// The model ended a turn without submitting; it is reminded once.
    Reminder { text: String },
    /// Tokens used so far in this command.
    Usage { usage: Usage },
}

/// The argument of a tool call that best says what it does, for a one-line progress view.
pub fn call_detail(name: &str, arguments: &serde_json::Value) -> String {
    let field = |key: &str| {
        arguments
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let detail = match name {
        "read_file" | "write_file" | "edit_file" => field("path"),
        "list_files" => field("path").or_else(|| Some(".".to_owned())),
        "search_files" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "bash" => field("command"),
        "submit_plan" => field("title"),
        "update_step" => field("id").map(|id| match field("status") {
            Some(status) => format!("{id} {status}"),
            None => id,
        }),
        _ => None,
    };
    let detail = detail.unwrap_or_default();
    let line = detail.lines().next().unwrap_or("");
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}
