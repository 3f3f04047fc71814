//! The tools a model may call, the registry of which exist in each mode, and the workspace
//! path policy every tool goes through.
//!
//! Each tool is a spec (name, description, JSON schema) plus a synchronous handler. Handlers
//! never return Rust errors for things the model can fix: a bad argument, a path outside the
//! workspace or an invalid regex become a [`ToolOutcome::Output`] with `is_error: true`, so the
//! model reads the message and tries again. The registry ([`registry`]) decides which tools
//! exist in a mode and refuses to run any other.

pub mod ask_user;
pub mod list_files;
pub mod read_file;
pub mod registry;
pub mod search_files;
pub mod submit_plan;
mod walk;
pub mod workspace;

pub use ask_user::{Question, Questions};
pub use registry::{Mode, Registry, Tool, ToolKind, tools_for_mode};
pub use submit_plan::{PlanStep, PlanSubmission, Risk};
pub use workspace::{Access, PathError, Workspace};

/// What running a tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// Text for the model. `is_error` marks a mistake the model can fix; the turn goes on.
    Output { text: String, is_error: bool },
    /// A valid plan from `submit_plan`; the caller writes it, the tool does not.
    Plan(PlanSubmission),
    /// Questions from `ask_user` for the person.
    Questions(Questions),
}

impl ToolOutcome {
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::Output {
            text: text.into(),
            is_error: false,
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self::Output {
            text: text.into(),
            is_error: true,
        }
    }
}

/// Parse a tool's JSON arguments; the error text is written for the model.
///
/// `null` counts as `{}` because some providers send it for a call without arguments.
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: &serde_json::Value,
) -> Result<T, String> {
    let empty = serde_json::Value::Object(serde_json::Map::new());
    let arguments = if arguments.is_null() {
        &empty
    } else {
        arguments
    };
    if !arguments.is_object() {
        return Err(format!(
            "invalid arguments for {tool}: the arguments must be a JSON object, got `{arguments}`"
        ));
    }
    T::deserialize(arguments).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

/// Deserialize a list that a model may also send as `null` (meaning: none).
pub(crate) fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    use serde::Deserialize as _;
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// `1 file`, `2 files`: counts in notes read as English, without "(s)".
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Remove surrounding whitespace without reallocating.
pub(crate) fn trim_in_place(text: &mut String) {
    let end = text.trim_end().len();
    text.truncate(end);
    let start = text.len() - text.trim_start().len();
    text.drain(..start);
}

/// Cut `text` to at most `max_chars` characters, saying how much was cut, so one huge line
/// (minified code, a data blob) cannot fill a whole result.
pub(crate) fn truncate_line(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!(
            "{}… [line cut: {} more bytes]",
            &text[..cut],
            text.len() - cut
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_line_keeps_short_lines_and_cuts_on_char_boundaries() {
        assert_eq!(count(1, "file", "files"), "1 file");
        assert_eq!(count(0, "file", "files"), "0 files");
        assert_eq!(truncate_line("abc", 3), "abc");
        let mut text = " \t a b \n".to_owned();
        trim_in_place(&mut text);
        assert_eq!(text, "a b");
        assert_eq!(truncate_line("ééé", 2), "éé… [line cut: 2 more bytes]");
    }

    #[test]
    fn parse_args_accepts_null_and_refuses_non_objects() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        struct A {
            #[serde(default)]
            x: Option<u32>,
        }
        assert!(
            parse_args::<A>("t", &serde_json::Value::Null)
                .unwrap()
                .x
                .is_none()
        );
        assert_eq!(
            parse_args::<A>("t", &serde_json::json!("x")).unwrap_err(),
            "invalid arguments for t: the arguments must be a JSON object, got `\"x\"`"
        );
        assert_eq!(
            parse_args::<A>("t", &serde_json::json!({"y": 1})).unwrap_err(),
            "invalid arguments for t: unknown field `y`, expected `x`"
        );
    }
}
