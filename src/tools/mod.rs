//! The tools a model may call, the registry of which exist in each mode, and the workspace
//! path policy every tool goes through.
//!
//! Each tool is a spec (name, description, JSON schema) plus a synchronous handler. Handlers
//! never return Rust errors for things the model can fix: a bad argument, a path outside the
//! workspace, an invalid regex, an `edit_file` match not found or a command that failed become
//! a [`ToolOutcome::Output`] with `is_error: true`, so the model reads the message and tries
//! again. The registry ([`registry`]) decides which tools exist in a mode and refuses to run
//! any other.
//!
//! Writing tools also say what they changed ([`Effects`]): the runner journals its own writes
//! so it can tell them from a person's (DESIGN §6).

pub mod allowlist;
pub mod ask_user;
pub mod bash;
pub mod edit_file;
pub mod list_files;
pub mod propose_replan;
pub mod read_file;
pub mod registry;
pub mod run_command;
pub mod search_files;
pub mod submit_plan;
pub mod update_step;
pub(crate) mod walk;
pub mod workspace;

#[cfg(test)]
pub(crate) mod test_support;
pub mod write_file;

pub use ask_user::{Question, Questions};
pub use bash::CommandEnv;

pub use propose_replan::ReplanProposal;
pub use registry::{Mode, Registry, Tool, ToolKind, tools_for_mode};
pub use submit_plan::{PlanStep, PlanSubmission, Risk};
pub use update_step::{StepUpdate, StepUpdateStatus};
pub use workspace::{Access, PathError, Workspace};

/// What running a tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// Text for the model. `is_error` marks a mistake the model can fix; the turn goes on.
    /// `effects` is what the call changed, for the runner's journal; empty for reading tools.
    Output {
        text: String,
        is_error: bool,
        effects: Effects,
    },
    /// A valid plan from `submit_plan`; the caller writes it, the tool does not.
    Plan(PlanSubmission),
    /// Questions from `ask_user` for the person.
    Questions(Questions),
    /// A claim from `update_step` about a step; the runner acts on it, the tool does not.
    StepUpdate(StepUpdate),
    /// A local re-plan from `propose_replan`, parsed but not yet checked against the plan;
    /// the runner decides, the tool does not.
    Replan(ReplanProposal),
}

impl ToolOutcome {
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::Output {
            text: text.into(),
            is_error: false,
            effects: Effects::default(),
        }
    }

    /// The outcome of a tool that answers with text: the text, or the error for the model.
    pub(crate) fn answered(result: Result<String, String>) -> Self {
        match result {
            Ok(text) => Self::text(text),
            Err(message) => Self::error(message),
        }
    }

    /// The outcome of a tool that wrote one file: its report and the write, or the error.
    pub(crate) fn wrote(result: Result<(String, FileWritten), String>) -> Self {
        match result {
            Ok((text, written)) => Self::Output {
                text,
                is_error: false,
                effects: Effects {
                    files_written: vec![written],
                    ..Effects::default()
                },
            },
            Err(message) => Self::error(message),
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self::Output {
            text: text.into(),
            is_error: true,
            effects: Effects::default(),
        }
    }

    /// What the call changed; nothing for outcomes that are not [`ToolOutcome::Output`].
    pub fn effects(&self) -> Option<&Effects> {
        match self {
            Self::Output { effects, .. } => Some(effects),
            _ => None,
        }
    }

    /// The exit code of the command the call ran, if it ran one that exited.
    pub fn exit_code(&self) -> Option<i32> {
        self.effects().and_then(|effects| effects.exit_code)
    }
}

/// What one tool call changed, so the runner can tell its own writes from a person's
/// (DESIGN §6): the hashes the call wrote, and whether it ran a command (whose changes the
/// runner finds by comparing snapshots before and after it, never by time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Files the call wrote, with the content they were left with.
    pub files_written: Vec<FileWritten>,
    /// Whether the call ran a command (and it ended).
    pub ran_command: bool,
    /// The exit code of the command the call ran, when it ran one and it exited (for the
    /// events and the transcript); not a change.
    pub exit_code: Option<i32>,
}

impl Effects {
    pub fn is_empty(&self) -> bool {
        self.files_written.is_empty() && !self.ran_command
    }
}

/// One file a tool wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWritten {
    /// Workspace-relative, with `/` separators, after symlinks were followed: the file that
    /// really changed.
    pub path: String,
    /// blake3 of the bytes written, lowercase hex.
    pub blake3: String,
}

impl FileWritten {
    pub(crate) fn new(path: String, content: &[u8]) -> Self {
        Self {
            path,
            blake3: blake3::hash(content).to_hex().to_string(),
        }
    }
}

/// Caps on what one tool call may carry, from `limits:` in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadLimits {
    /// The most bytes `write_file`'s `content` and `edit_file`'s `old`/`new` may hold.
    pub max_write_bytes: usize,
}

/// `limits.max_write_bytes`: 4 MiB, far over any source file a step should write whole.
pub const DEFAULT_MAX_WRITE_BYTES: usize = 4 * 1024 * 1024;

impl Default for PayloadLimits {
    fn default() -> Self {
        Self {
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

/// Refuses a call whose string argument `field` is over `max` bytes, looking at the parsed
/// arguments in place: nothing is copied, so a gigabyte argument costs one comparison here.
pub(crate) fn refuse_oversized(
    tool: &str,
    arguments: &serde_json::Value,
    fields: &[&str],
    max: usize,
) -> Result<(), String> {
    for field in fields {
        let Some(len) = arguments
            .get(field)
            .and_then(serde_json::Value::as_str)
            .map(str::len)
        else {
            continue;
        };
        if len > max {
            return Err(format!(
                "`{field}` is {len} bytes, over the limit of {max} bytes for one {tool} call                  (`limits.max_write_bytes`); nothing was written. Write a large file in parts                  (write_file a first part, then edit_file to append the next, each under the                  limit), or generate it with a command instead of sending it"
            ));
        }
    }
    Ok(())
}

/// Cuts a tool result over `max` bytes to its head and tail, with a note in the middle that
/// says how much was left out and how to get it, so one huge output cannot fill the context.
pub fn cap_result(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let note_budget = 400;
    let keep = max.saturating_sub(note_budget);
    let head_end = floor_char_boundary(&text, keep * 2 / 3);
    let tail_start = ceil_char_boundary(&text, text.len() - (keep - keep * 2 / 3));
    let cut = tail_start - head_end;
    format!(
        "{}\n\n[… {cut} bytes cut here: the result had {} bytes, more than the {max} sent to \
         you. To see the rest, read the file in parts (read_file with `offset` and `limit`), \
         narrow a command's output (`| head -n 100`, `| tail -n 100`, `| grep PATTERN`), or \
         search with a narrower pattern or path …]\n\n{}",
        &text[..head_end],
        text.len(),
        &text[tail_start..]
    )
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
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

/// The number of `\n` bytes in `bytes`.
#[allow(
    clippy::naive_bytecount,
    reason = "command output and edited files are small; not worth a dependency"
)]
pub(crate) fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
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
    fn results_over_the_cap_keep_head_and_tail_and_say_how_to_go_on() {
        let short = "x".repeat(100);
        assert_eq!(cap_result(short.clone(), 1024), short);
        let long = format!("HEAD{}TAIL", "é".repeat(100_000));
        let capped = cap_result(long.clone(), 4096);
        assert!(capped.len() <= 4096 + 100, "{}", capped.len());
        assert!(capped.starts_with("HEAD") && capped.ends_with("TAIL"));
        assert!(capped.contains("read_file with `offset` and `limit`"));
        assert!(capped.contains(&format!("the result had {} bytes", long.len())));
    }

    #[test]
    fn oversized_arguments_are_refused_without_copying() {
        let args = serde_json::json!({"path": "a", "content": "x".repeat(5000)});
        assert!(refuse_oversized("write_file", &args, &["content"], 5000).is_ok());
        let err = refuse_oversized("write_file", &args, &["content"], 4999).unwrap_err();
        assert!(
            err.starts_with("`content` is 5000 bytes, over the limit of 4999"),
            "{err}"
        );
        assert!(err.contains("nothing was written"));
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
