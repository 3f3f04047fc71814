//! Anthropic's Messages API wire format: the request body (content blocks, strictly
//! alternating roles) and the decoder for its typed stream events.

use serde_json::{Map, Value, json};

use super::assemble::{self, CappedText, PartialCall};
use super::error::ProviderError;
use super::openai::snippet;
use super::sse::SseEvent;
use super::{
    FinishReason, LlmError, Message, Request, Response, StreamEvent, TEXT_CALL_PREFIX, Usage,
};

/// The API requires `max_tokens`; this is used when the request leaves it open.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The JSON body for `POST {base}/v1/messages`.
pub(crate) fn request_body(req: &Request) -> Value {
    // The API rejects two consecutive messages with the same role, so tool results (and any
    // text after them) are gathered into one user message.
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &req.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                // An empty text block is rejected.
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls.iter().filter(|c| !c.is_text()) {
                    // `input` must be an object; a call whose arguments did not parse is
                    // replayed as `{}` and its tool result carries the parse error.
                    let input = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        Value::Object(Map::new())
                    };
                    blocks.push(json!({
                        "type": "tool_use", "id": call.id, "name": call.name, "input": input,
                    }));
                }
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id, content, ..
            } if call_id.starts_with(TEXT_CALL_PREFIX) => (
                "user",
                vec![json!({"type": "text", "text": super::openai::text_result(call_id, content)})],
            ),
            Message::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let mut block = json!({
                    "type": "tool_result", "tool_use_id": call_id, "content": content,
                });
                if *is_error {
                    block["is_error"] = true.into();
                }
                ("user", vec![block])
            }
        };
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();

    let mut body = Map::new();
    body.insert("model".into(), req.model.clone().into());
    body.insert(
        "max_tokens".into(),
        req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
    );
    if let Some(system) = &req.system {
        body.insert("system".into(), system.clone().into());
    }
    body.insert("messages".into(), Value::Array(messages));
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    // Anthropic has one way to constrain an answer: a tool the model is made to call.
    if let Some(structured) = &req.structured {
        tools.push(json!({
            "name": structured.name,
            "description": "Give the answer as this tool's input.",
            "input_schema": structured.schema,
        }));
        body.insert(
            "tool_choice".into(),
            json!({"type": "tool", "name": structured.name}),
        );
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    body.insert("stream".into(), true.into());
    Value::Object(body)
}

#[derive(Debug)]
enum Block {
    Text,
    Tool(PartialCall),
    /// Thinking and server-side blocks: not part of the answer tick acts on.
    Other,
}

/// Accumulates one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    text: CappedText,
    /// The most kept of the text, and of each call's arguments ([`CappedText`],
    /// [`PartialCall::push_args`]); set by [`Decoder::with_cap`].
    cap: usize,
    /// Blocks by their stream `index`.
    blocks: Vec<(u64, Block)>,
    finish: Option<FinishReason>,
    usage: Usage,
    stopped: bool,
}

impl Decoder {
    /// A decoder that keeps at most `cap` bytes of the text and of each call's arguments.
    pub fn with_cap(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// Whether the answer is whole: `message_stop` arrived, or the `stop_reason` that
    /// precedes it.
    pub fn is_complete(&self) -> bool {
        self.stopped || self.finish.is_some()
    }

    pub fn on_event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|err| LlmError::Protocol {
            message: format!("an event is not JSON ({err}): `{}`", snippet(data)),
        })?;
        // The `type` field is authoritative; the SSE `event:` name is a copy of it.
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&ev.event);
        match kind {
            // No event yet: usage is reported once, with the totals, at `message_delta`.
            "message_start" => self.read_usage(&value["message"]["usage"]),
            "content_block_start" => self.on_block_start(&value, out),
            "content_block_delta" => self.on_block_delta(&value, out),
            "content_block_stop" => {
                if let Some(Block::Tool(call)) = self.block_mut(&value) {
                    call.closed = true;
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.finish = Some(match reason {
                        "end_turn" | "stop_sequence" => FinishReason::Stop,
                        "tool_use" => FinishReason::ToolCalls,
                        "max_tokens" => FinishReason::Length,
                        other => FinishReason::Other(other.to_owned()),
                    });
                }
                self.read_usage(&value["usage"]);
                out.push(StreamEvent::Usage(self.usage));
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let provider = ProviderError::from_json(&value);
                return Err(LlmError::InStream {
                    transient: provider.is_transient(),
                    code: provider.code,
                    message: provider.message,
                });
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    /// Usage arrives in parts: input in `message_start`, output (running total) in
    /// `message_delta`; a field that is absent keeps its earlier value.
    fn read_usage(&mut self, usage: &Value) {
        let field = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(input) = field("input_tokens") {
            self.usage.input_tokens = input
                + field("cache_creation_input_tokens").unwrap_or(0)
                + field("cache_read_input_tokens").unwrap_or(0);
            self.usage.cached_tokens = field("cache_read_input_tokens").unwrap_or(0);
        }
        if let Some(output) = field("output_tokens") {
            self.usage.output_tokens = output;
        }
    }

    fn block_mut(&mut self, value: &Value) -> Option<&mut Block> {
        let index = value.get("index").and_then(Value::as_u64)?;
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn on_block_start(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let block = &value["content_block"];
        let block = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    let kept = self.text.push(text, self.cap);
                    if !kept.is_empty() {
                        out.push(StreamEvent::TextDelta(kept.to_owned()));
                    }
                }
                Block::Text
            }
            Some("tool_use") => {
                let text = |key: &str| {
                    block
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let call = PartialCall {
                    id: text("id"),
                    name: text("name"),
                    ..PartialCall::default()
                };
                out.push(StreamEvent::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                Block::Tool(call)
            }
            _ => Block::Other,
        };
        self.blocks.push((index, block));
    }

    fn on_block_delta(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let delta = &value["delta"];
        let kind = delta.get("type").and_then(Value::as_str);
        let mut text_delta = None;
        let cap = self.cap;
        match (self.block_mut(value), kind) {
            (Some(Block::Text), Some("text_delta")) => {
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    text_delta = Some(text.to_owned());
                }
            }
            (Some(Block::Tool(call)), Some("input_json_delta")) => {
                if let Some(part) = delta.get("partial_json").and_then(Value::as_str)
                    && !part.is_empty()
                    && call.push_args(part, cap)
                {
                    out.push(StreamEvent::ToolCallArgsDelta {
                        id: call.id.clone(),
                        delta: part.to_owned(),
                    });
                }
            }
            _ => {}
        }
        if let Some(text) = text_delta {
            let kept = self.text.push(&text, self.cap);
            if !kept.is_empty() {
                out.push(StreamEvent::TextDelta(kept.to_owned()));
            }
        }
    }

    /// The answer, if the stream completed; see [`super::openai::Decoder::finish`].
    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.is_complete() {
            return Err(LlmError::StreamCut {
                reason: "the connection closed before `message_stop`".to_owned(),
                attempts: 1,
            });
        }
        let calls = self
            .blocks
            .into_iter()
            .filter_map(|(_, b)| match b {
                Block::Tool(call) => Some(call),
                Block::Text | Block::Other => None,
            })
            .collect();
        let finish = self.finish.unwrap_or(FinishReason::Stop);
        Ok(assemble::response(
            self.text.finish(),
            calls,
            finish,
            self.usage,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolCall, ToolSpec};

    use crate::llm::ProviderKind;
    use crate::llm::client::testing::{self, Outcome};

    fn decode_every_split(fixture: &str) -> Outcome {
        testing::decode_every_split(ProviderKind::Anthropic, fixture)
    }

    const TEXT_AND_TOOL_USE: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading 文件 \"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first 🦀\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"read_file\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"文\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"档/🦀.md\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );

    #[test]
    fn text_and_tool_use() {
        let (events, result) = decode_every_split(TEXT_AND_TOOL_USE);
        let r = result.unwrap();
        assert_eq!(r.text, "Reading 文件 first 🦀");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.tool_calls,
            vec![ToolCall {
                id: "toolu_01".into(),
                name: "read_file".into(),
                arguments: json!({"path": "文档/🦀.md"}),
                arguments_error: None,
            }]
        );
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 30,
                output_tokens: 42,
                cached_tokens: 5,
            }
        );
        assert!(events.contains(&StreamEvent::ToolCallStarted {
            id: "toolu_01".into(),
            name: "read_file".into()
        }));
    }

    #[test]
    fn structured_output_is_a_forced_tool() {
        let body = request_body(&Request {
            model: "claude".into(),
            structured: Some(crate::llm::Structured {
                name: "plan".into(),
                schema: json!({"type": "object"}),
                method: crate::llm::StructuredMethod::ForcedTool,
            }),
            ..Request::default()
        });
        assert_eq!(body["tools"][0]["name"], "plan");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "plan"}));
    }

    #[test]
    fn max_tokens_cuts_the_open_tool_use() {
        let fixture = TEXT_AND_TOOL_USE.replace("档/🦀.md\\\"}", "档/").replace(
            "\"tool_use\",\"stop_sequence\"",
            "\"max_tokens\",\"stop_sequence\"",
        );
        let (_, result) = decode_every_split(&fixture);
        let r = result.unwrap();
        assert_eq!(r.finish, FinishReason::Length);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.truncated_tool_calls, vec!["read_file"]);
    }

    #[test]
    fn a_stream_cut_before_message_stop_returns_nothing() {
        let cut = &TEXT_AND_TOOL_USE[..TEXT_AND_TOOL_USE.find("event: message_delta").unwrap()];
        let (_, result) = decode_every_split(cut);
        assert!(matches!(result, Err(LlmError::StreamCut { .. })));
    }

    #[test]
    fn an_error_event_is_an_error() {
        let fixture = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
            "event: error\n",
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let (_, result) = decode_every_split(fixture);
        assert_eq!(
            result.unwrap_err(),
            LlmError::InStream {
                code: Some("overloaded_error".into()),
                message: "Overloaded".into(),
                transient: true,
            }
        );
    }

    #[test]
    fn request_body_merges_tool_results_into_one_user_turn() {
        let req = Request {
            model: "claude".into(),
            system: Some("sys".into()),
            messages: vec![
                Message::user("go"),
                Message::Assistant {
                    text: "two calls".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "a"}),
                            arguments_error: None,
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "bash".into(),
                            arguments: json!("{bad"),
                            arguments_error: Some("not JSON".into()),
                        },
                    ],
                },
                Message::tool_result("t1", "contents"),
                Message::tool_error("t2", "the arguments are not valid JSON"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.5),
            structured: None,
            grammar: None,
        };
        assert_eq!(
            request_body(&req),
            json!({
                "model": "claude",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "system": "sys",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "two calls"},
                        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "t2", "name": "bash", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "contents"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "the arguments are not valid JSON", "is_error": true},
                    ]},
                ],
                "tools": [{"name": "read_file", "description": "read", "input_schema": {"type": "object"}}],
                "temperature": 0.5,
                "stream": true,
            })
        );
    }
}
