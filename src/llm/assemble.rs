//! Turning the fragments both decoders collect into one [`Response`]: the rules for which tool
//! calls may be returned, which were cut off, and how unparseable arguments are carried.

use serde_json::Value;

use super::{FinishReason, Response, ToolCall, Usage};

/// A tool call while its arguments are still arriving.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PartialCall {
    pub id: String,
    pub name: String,
    pub args: String,
    /// The provider said this call's block ended (Anthropic's `content_block_stop`). OpenAI
    /// has no such signal; its decoder closes every call when the answer finishes.
    pub closed: bool,
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
        }
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
