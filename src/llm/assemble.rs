//! Turning the fragments both decoders collect into one [`Response`]: the rules for which tool
//! calls may be returned, which were cut off, and how unparseable arguments are carried.

use serde_json::Value;

use super::{FinishReason, Response, ToolCall, Usage};

/// The most of one answer tick holds while it streams, unless the client is told otherwise:
/// the text, and each tool call's arguments, separately. Beyond it the rest is counted and
/// dropped, so a model streaming a gigabyte costs tick a few megabytes.
pub(crate) const DEFAULT_MAX_ANSWER_BYTES: usize =
    2 * crate::config::DEFAULT_MAX_WRITE_BYTES + 64 * 1024;

/// A tool call while its arguments are still arriving.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PartialCall {
    pub id: String,
    pub name: String,
    pub args: String,
    /// The provider said this call's block ended (Anthropic's `content_block_stop`). OpenAI
    /// has no such signal; its decoder closes every call when the answer finishes.
    pub closed: bool,
    /// Bytes of arguments received, kept or not.
    pub received: usize,
    /// The cap the arguments passed: they were dropped as they arrived, and the call becomes
    /// an error for the model instead of running.
    pub over_cap: Option<usize>,
}

impl PartialCall {
    /// Appends a fragment of the arguments, unless they pass `cap` bytes: then what was
    /// kept is freed and the rest only counted. Returns whether the fragment was kept.
    pub fn push_args(&mut self, fragment: &str, cap: usize) -> bool {
        self.received = self.received.saturating_add(fragment.len());
        if self.received > cap {
            if self.over_cap.is_none() {
                self.args = String::new();
                self.over_cap = Some(cap);
            }
            return false;
        }
        self.args.push_str(fragment);
        true
    }
}

/// An answer's text while it streams, kept up to a cap.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CappedText {
    pub text: String,
    /// Bytes that arrived after the cap, dropped.
    pub dropped: usize,
}

impl CappedText {
    /// Appends `fragment` as far as `cap` bytes allow (cut at a character boundary); returns
    /// the part kept, for the progress events.
    pub fn push<'a>(&mut self, fragment: &'a str, cap: usize) -> &'a str {
        if self.dropped > 0 {
            self.dropped = self.dropped.saturating_add(fragment.len());
            return "";
        }
        let room = cap.saturating_sub(self.text.len());
        let mut keep = fragment.len().min(room);
        while !fragment.is_char_boundary(keep) {
            keep -= 1;
        }
        self.text.push_str(&fragment[..keep]);
        self.dropped = fragment.len() - keep;
        &fragment[..keep]
    }

    /// The text, with a note saying how much was dropped after the cap.
    pub fn finish(self) -> String {
        if self.dropped == 0 {
            return self.text;
        }
        let mut text = self.text;
        text.push_str(&format!(
            "\n[tick dropped the rest of this answer: {} more bytes after the first {}]",
            self.dropped,
            text.len()
        ));
        text
    }
}

/// Builds the response of a stream that completed.
pub(crate) fn response(
    text: String,
    calls: Vec<PartialCall>,
    finish: FinishReason,
    usage: Usage,
) -> Response {
    let cut_by_length = finish == FinishReason::Length;
    let mut tool_calls = Vec::new();
    let mut truncated_tool_calls = Vec::new();
    for call in calls {
        if let Some(cap) = call.over_cap {
            // Never run, whatever its end: the model is told, and can write in parts.
            tool_calls.push(ToolCall {
                id: call.id,
                name: call.name.clone(),
                arguments: Value::Object(serde_json::Map::new()),
                arguments_error: Some(format!(
                    "the arguments of `{}` were larger than {cap} bytes, more than any tool takes \
                     (`limits.max_write_bytes` caps a file's content); tick stopped reading them \
                     after {cap} bytes and ran nothing. Write a large file in parts: create it with \
                     write_file, then add to it with edit_file",
                    call.name
                )),
            });
            continue;
        }
        let raw = call.args.trim();
        // A call with no arguments yet when the token limit hit is cut, not argument-less.
        if !call.closed || (cut_by_length && raw.is_empty()) {
            truncated_tool_calls.push(call.name);
            continue;
        }
        let parsed = if raw.is_empty() {
            // Some servers send `""` for a tool that takes no arguments.
            Ok(Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_str::<Value>(raw)
        };
        match parsed {
            Ok(arguments) => tool_calls.push(ToolCall {
                id: call.id,
                name: call.name,
                arguments,
                arguments_error: None,
            }),
            // A JSON document cut by the token limit cannot be told from a complete one except
            // by failing to parse; it was never finished, so it must never run.
            Err(_) if cut_by_length => truncated_tool_calls.push(call.name),
            Err(err) => tool_calls.push(ToolCall {
                id: call.id,
                name: call.name,
                arguments: Value::String(call.args),
                arguments_error: Some(format!("the arguments are not valid JSON: {err}")),
            }),
        }
    }
    // Ollama and some llama.cpp builds say `stop` even when the answer is tool calls.
    let finish = if finish == FinishReason::Stop && !tool_calls.is_empty() {
        FinishReason::ToolCalls
    } else {
        finish
    };
    Response {
        text,
        tool_calls,
        finish,
        usage,
        truncated_tool_calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: &str) -> PartialCall {
        PartialCall {
            id: format!("id-{name}"),
            name: name.to_owned(),
            args: args.to_owned(),
            closed: true,
            ..PartialCall::default()
        }
    }

    /// Issue 17, item 18: arguments stop growing at the cap, and the call comes back as an
    /// error for the model, never run, even when the stream ends normally.
    #[test]
    fn arguments_over_the_cap_are_dropped_and_reported() {
        let mut big = call("write_file", "");
        let fragment = "x".repeat(1000);
        let mut kept = 0;
        for _ in 0..10_000 {
            kept += usize::from(big.push_args(&fragment, 64 * 1024));
        }
        assert_eq!(kept, 65);
        assert_eq!(big.received, 10_000_000);
        assert!(big.args.is_empty() && big.args.capacity() == 0);
        let small = call("read_file", "{\"path\":\"a\"}");
        let r = response(
            String::new(),
            vec![big, small],
            FinishReason::ToolCalls,
            Usage::default(),
        );
        assert_eq!(r.tool_calls.len(), 2);
        let error = r.tool_calls[0].arguments_error.as_deref().unwrap();
        assert!(
            error.starts_with("the arguments of `write_file` were larger than 65536 bytes"),
            "{error}"
        );
        assert_eq!(r.tool_calls[1].arguments, json!({"path": "a"}));
    }

    #[test]
    fn text_stops_at_the_cap_on_a_character_boundary() {
        let mut text = CappedText::default();
        // `é` is two bytes: the second would pass the cap, so neither is kept.
        assert_eq!(text.push("héllo", 2), "h");
        assert_eq!(text.push("more", 2), "");
        assert_eq!(text.dropped, 9);
        assert_eq!(
            text.finish(),
            "h\n[tick dropped the rest of this answer: 9 more bytes after the first 1]"
        );
    }

    #[test]
    fn invalid_json_on_a_normal_stop_is_returned_raw_with_the_error() {
        let r = response(
            String::new(),
            vec![call("read_file", "{\"path\": ")],
            FinishReason::ToolCalls,
            Usage::default(),
        );
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments, json!("{\"path\": "));
        assert!(
            r.tool_calls[0]
                .arguments_error
                .as_deref()
                .is_some_and(|e| e.starts_with("the arguments are not valid JSON"))
        );
        assert_eq!(r.tool_calls[0].arguments_text(), "{\"path\": ");
    }

    #[test]
    fn length_keeps_finished_calls_and_reports_the_cut_ones() {
        let r = response(
            String::new(),
            vec![
                call("read_file", "{\"path\":\"a\"}"),
                call("write_file", "{\"path\":\"b\",\"content\":\"par"),
                call("bash", ""),
            ],
            FinishReason::Length,
            Usage::default(),
        );
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].name, "read_file");
        assert_eq!(r.truncated_tool_calls, vec!["write_file", "bash"]);
        assert_eq!(r.finish, FinishReason::Length);
    }

    #[test]
    fn empty_arguments_mean_an_empty_object_and_stop_becomes_tool_calls() {
        let r = response(
            "ok".to_owned(),
            vec![call("list_files", "")],
            FinishReason::Stop,
            Usage::default(),
        );
        assert_eq!(r.tool_calls[0].arguments, json!({}));
        assert_eq!(r.finish, FinishReason::ToolCalls);
    }

    #[test]
    fn unclosed_blocks_never_run() {
        let mut open = call("bash", "{\"command\":\"ls\"}");
        open.closed = false;
        let r = response(
            String::new(),
            vec![open],
            FinishReason::Stop,
            Usage::default(),
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.truncated_tool_calls, vec!["bash"]);
    }
}
