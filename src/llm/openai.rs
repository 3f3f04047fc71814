//! The OpenAI-compatible Chat Completions wire format (OpenAI, Ollama, llama.cpp, vLLM,
//! OpenRouter, DeepSeek...): the request body, and the decoder that turns its streamed chunks
//! into [`StreamEvent`]s and one [`Response`], absorbing each server's quirks.

use serde_json::{Map, Value, json};

use super::assemble::{self, CappedText, PartialCall};
use super::error::ProviderError;
use super::sse::SseEvent;
use super::structured::{Structured, StructuredMethod};
use super::{
    FinishReason, LlmError, Message, Request, Response, StreamEvent, TEXT_CALL_PREFIX, ToolCall,
    Usage,
};

/// The result of a call the model wrote as text, as the user message that answers it.
pub(crate) fn text_result(call_id: &str, content: &str) -> String {
    let n = call_id.strip_prefix(TEXT_CALL_PREFIX).unwrap_or(call_id);
    format!("<tool_result call=\"{n}\">\n{content}\n</tool_result>")
}

/// The JSON body for `POST {base}/chat/completions`.
///
/// `max_tokens` because it is the name every compatible server understands, except for
/// OpenAI's reasoning models, which reject it and take `max_completion_tokens`
/// ([`wants_max_completion_tokens`]). Tool results have no error flag on this wire, so `is_error` is carried only by
/// the content the agent wrote.
pub(crate) fn request_body(req: &Request) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &req.messages {
        messages.push(match message {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } => {
                let tool_calls: Vec<&ToolCall> =
                    tool_calls.iter().filter(|c| !c.is_text()).collect();
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                // `null` rather than `""`: some servers reject an empty string beside tool calls.
                m.insert(
                    "content".into(),
                    if text.is_empty() && !tool_calls.is_empty() {
                        Value::Null
                    } else {
                        text.clone().into()
                    },
                );
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments_text()},
                            })
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                Value::Object(m)
            }
            Message::ToolResult {
                call_id, content, ..
            } if call_id.starts_with(TEXT_CALL_PREFIX) => {
                json!({"role": "user", "content": text_result(call_id, content)})
            }
            Message::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = Map::new();
    body.insert("model".into(), req.model.clone().into());
    body.insert("messages".into(), Value::Array(messages));
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            })
        })
        .collect();
    if let Some(structured) = &req.structured {
        insert_structured(&mut body, &mut tools, structured);
    }
    if let Some(grammar) = &req.grammar {
        body.insert("grammar".into(), grammar.clone().into());
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = req.max_tokens {
        let key = if wants_max_completion_tokens(&req.model) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), max.into());
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// The fields that ask for an answer fitting `structured.schema`, by its method.
fn insert_structured(
    body: &mut Map<String, Value>,
    tools: &mut Vec<Value>,
    structured: &Structured,
) {
    let response_format = json!({
        "type": "json_schema",
        "json_schema": {"name": structured.name, "schema": structured.schema, "strict": true},
    });
    match structured.method {
        StructuredMethod::ResponseFormat => {
            body.insert("response_format".into(), response_format);
        }
        StructuredMethod::OllamaFormat => {
            body.insert("format".into(), structured.schema.clone());
            body.insert("response_format".into(), response_format);
        }
        StructuredMethod::ForcedTool => {
            tools.push(json!({
                "type": "function",
                "function": {
                    "name": structured.name,
                    "description": "Give the answer as this call's arguments.",
                    "parameters": structured.schema,
                    "strict": true,
                },
            }));
            body.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": structured.name}}),
            );
        }
    }
}

/// Whether `model` is one of OpenAI's reasoning models (`o1`, `o3`, `o4-mini`, `gpt-5`...),
/// also behind a router's `openai/` prefix.
pub(crate) fn wants_max_completion_tokens(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4"]
        .iter()
        .any(|family| name == *family || name.starts_with(&format!("{family}-")))
        || name.starts_with("gpt-5")
}

/// Accumulates one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    text: CappedText,
    /// The most kept of the text, and of each call's arguments ([`CappedText`],
    /// [`PartialCall::push_args`]); set by [`Decoder::with_cap`].
    cap: usize,
    calls: Vec<OpenCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    done: bool,
}

#[derive(Debug)]
struct OpenCall {
    index: Option<u64>,
    started: bool,
    call: PartialCall,
}

impl Decoder {
    /// A decoder that keeps at most `cap` bytes of the text and of each call's arguments.
    pub fn with_cap(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// Whether the answer is whole: `[DONE]` arrived, or a `finish_reason` did (a server that
    /// closes right after it lost nothing but the usage chunk).
    pub fn is_complete(&self) -> bool {
        self.done || self.finish.is_some()
    }

    pub fn on_event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() || self.done {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| LlmError::Protocol {
            message: format!("a chunk is not JSON ({err}): `{}`", snippet(data)),
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let provider = ProviderError::from_json(&json!({ "error": error }));
            return Err(LlmError::InStream {
                transient: provider.is_transient(),
                code: provider.code,
                message: provider.message,
            });
        }
        // Only the first choice: tick never asks for `n > 1`.
        if let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        {
            self.on_choice(choice, out);
        }
        // The usage chunk usually has empty `choices`; Ollama puts usage beside the finish.
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
                cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(self.usage.cached_tokens),
            };
            out.push(StreamEvent::Usage(self.usage));
        }
        // llama.cpp's own account of its prompt cache, beside (or instead of) the usage.
        if let Some(cached) = chunk["timings"]["cache_n"]
            .as_u64()
            .or_else(|| chunk["tokens_cached"].as_u64())
        {
            self.usage.cached_tokens = cached;
        }
        Ok(())
    }

    fn on_choice(&mut self, choice: &Value, out: &mut Vec<StreamEvent>) {
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            let kept = self.text.push(text, self.cap);
            if !kept.is_empty() {
                out.push(StreamEvent::TextDelta(kept.to_owned()));
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in calls {
                self.on_tool_fragment(fragment, out);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "stop" => FinishReason::Stop,
                "tool_calls" | "function_call" => FinishReason::ToolCalls,
                "length" => FinishReason::Length,
                other => FinishReason::Other(other.to_owned()),
            });
        }
    }

    fn on_tool_fragment(&mut self, fragment: &Value, out: &mut Vec<StreamEvent>) {
        let index = fragment.get("index").and_then(Value::as_u64);
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = &fragment["function"];
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let args = function
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("");

        // Which call does this fragment continue? A known id names it (some servers repeat the
        // id in every fragment); a new id always starts a call, because Ollama gives every
        // parallel call `index: 0`; without an id the fragment continues the last call with
        // its index.
        let position = match id {
            Some(id) => self.calls.iter().position(|c| c.call.id == id),
            None => self.calls.iter().rposition(|c| c.index == index),
        };
        let position = position.unwrap_or_else(|| {
            let id = id.map_or_else(|| format!("call_{}", self.calls.len()), str::to_owned);
            self.calls.push(OpenCall {
                index,
                started: false,
                call: PartialCall {
                    id,
                    ..PartialCall::default()
                },
            });
            self.calls.len() - 1
        });
        let open = &mut self.calls[position];
        if let Some(name) = name
            && open.call.name.is_empty()
        {
            name.clone_into(&mut open.call.name);
        }
        if !open.started && !open.call.name.is_empty() {
            open.started = true;
            out.push(StreamEvent::ToolCallStarted {
                id: open.call.id.clone(),
                name: open.call.name.clone(),
            });
        }
        if !args.is_empty() && open.call.push_args(args, self.cap) {
            out.push(StreamEvent::ToolCallArgsDelta {
                id: open.call.id.clone(),
                delta: args.to_owned(),
            });
        }
    }

    /// The answer, if the stream completed; a cut stream yields no response at all, so no
    /// half-received tool call can ever be run.
    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.is_complete() {
            return Err(LlmError::StreamCut {
                reason: "the connection closed before `[DONE]` or a `finish_reason`".to_owned(),
                attempts: 1,
            });
        }
        let finish = self.finish.unwrap_or(if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        let calls = self
            .calls
            .into_iter()
            .map(|c| PartialCall {
                closed: true,
                ..c.call
            })
            .collect();
        Ok(assemble::response(
            self.text.finish(),
            calls,
            finish,
            self.usage,
        ))
    }
}

/// The start of a bad chunk, enough to recognise it.
pub(crate) fn snippet(data: &str) -> String {
    match data.char_indices().nth(120) {
        Some((at, _)) => format!("{}...", &data[..at]),
        None => data.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolCall, ToolSpec};

    use crate::llm::ProviderKind;
    use crate::llm::client::testing::{self, Outcome};

    fn decode_chunks(chunks: &[&[u8]]) -> Outcome {
        testing::decode_chunks(ProviderKind::OpenAi, chunks)
    }

    fn decode_every_split(fixture: &str) -> Outcome {
        testing::decode_every_split(ProviderKind::OpenAi, fixture)
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens() {
        for (model, expected) in [
            ("o1", true),
            ("o3-mini", true),
            ("o4-mini-2025-04-16", true),
            ("gpt-5", true),
            ("gpt-5-mini", true),
            ("openai/o3", true),
            ("gpt-4o", false),
            ("qwen2.5-coder:1.5b", false),
            ("o1x", false),
            ("llama-3-o1", false),
        ] {
            assert_eq!(wants_max_completion_tokens(model), expected, "{model}");
            let body = request_body(&Request {
                model: model.into(),
                max_tokens: Some(77),
                ..Request::default()
            });
            let (used, other) = if expected {
                ("max_completion_tokens", "max_tokens")
            } else {
                ("max_tokens", "max_completion_tokens")
            };
            assert_eq!(body[used], 77, "{model}");
            assert!(body.get(other).is_none(), "{model}");
        }
    }

    /// A call written as text, streamed as content deltas split at every byte of the stream
    /// (inside UTF-8 characters too), reads back as the same call.
    #[test]
    fn a_text_call_survives_every_split_of_the_stream() {
        let pieces = [
            "Ich lese die Datei \u{2013} \u{00fc}ber ",
            "```json\n{\"name\": \"read_file\", \"argu",
            "ments\": [ {\"path\": \"src/\u{00e9}t\u{00e9}.rs\"} ]}\n``",
            "`\nfertig \u{1f600}",
        ];
        let mut fixture = String::new();
        for piece in pieces {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
            fixture.push_str(&format!("data: {chunk}\n\n"));
        }
        fixture.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        let (_, response) = decode_every_split(&fixture);
        let response = response.unwrap();
        assert_eq!(
            crate::llm::text_calls::parse(&response.text),
            vec![crate::llm::text_calls::Found::Call(
                crate::llm::text_calls::TextCall {
                    name: "read_file".into(),
                    arguments: json!({"path": "src/\u{00e9}t\u{00e9}.rs"}),
                }
            )]
        );
    }

    fn text_of(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    const PLAIN_TEXT: &str = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"世界 🦀!\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn plain_text_answer() {
        let (events, result) = decode_every_split(PLAIN_TEXT);
        let r = result.unwrap();
        assert_eq!(r.text, "Hello, 世界 🦀!");
        assert_eq!(text_of(&events), r.text);
        assert_eq!(r.finish, FinishReason::Stop);
        assert!(r.tool_calls.is_empty());
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 5,
            cached_tokens: 0,
        };
        assert_eq!(r.usage, usage);
        assert_eq!(events.last(), Some(&StreamEvent::Usage(usage)));
    }

    #[test]
    fn cached_prompt_tokens_are_read_from_usage_or_llama_cpp_timings() {
        let openai = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":640}}}\n\n",
            "data: [DONE]\n\n",
        );
        let (_, result) = decode_every_split(openai);
        assert_eq!(result.unwrap().usage.cached_tokens, 640);
        // An older llama.cpp: no details in the usage, its timings beside it.
        let llama = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":9},\"timings\":{\"cache_n\":512,\"prompt_n\":388}}\n\n",
            "data: [DONE]\n\n",
        );
        let (_, result) = decode_every_split(llama);
        let usage = result.unwrap().usage;
        assert_eq!((usage.input_tokens, usage.cached_tokens), (900, 512));
        let (_, result) = decode_every_split(PLAIN_TEXT);
        assert_eq!(result.unwrap().usage.cached_tokens, 0);
    }

    #[test]
    fn structured_output_goes_where_each_method_puts_it() {
        let schema = json!({"type": "object"});
        let body = |method| {
            request_body(&Request {
                model: "m".into(),
                structured: Some(Structured {
                    name: "plan".into(),
                    schema: schema.clone(),
                    method,
                }),
                ..Request::default()
            })
        };
        let format = body(StructuredMethod::ResponseFormat);
        assert_eq!(
            format["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "plan", "schema": schema, "strict": true}})
        );
        assert!(format.get("tools").is_none() && format.get("tool_choice").is_none());
        let ollama = body(StructuredMethod::OllamaFormat);
        assert_eq!(ollama["format"], schema);
        let forced = body(StructuredMethod::ForcedTool);
        assert_eq!(forced["tools"][0]["function"]["name"], "plan");
        assert_eq!(forced["tools"][0]["function"]["parameters"], schema);
        assert_eq!(
            forced["tool_choice"],
            json!({"type": "function", "function": {"name": "plan"}})
        );
        assert!(forced.get("response_format").is_none());
    }

    const PARALLEL_FRAGMENTED: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\": \\\"src/文件.rs\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"search_files\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"pattern\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\" \\\"🦀+\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":30}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn parallel_tool_calls_with_fragmented_arguments() {
        let (events, result) = decode_every_split(PARALLEL_FRAGMENTED);
        let r = result.unwrap();
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "src/文件.rs"}),
                    arguments_error: None,
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "search_files".into(),
                    arguments: json!({"pattern": "🦀+"}),
                    arguments_error: None,
                },
            ]
        );
        assert_eq!(
            events[0],
            StreamEvent::ToolCallStarted {
                id: "call_a".into(),
                name: "read_file".into()
            }
        );
        let started = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
            .count();
        assert_eq!(started, 2);
    }

    const OLLAMA_INDEX_ZERO: &str = concat!(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x1\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x2\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"b.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn ollama_parallel_calls_all_with_index_zero() {
        let (_, result) = decode_every_split(OLLAMA_INDEX_ZERO);
        let r = result.unwrap();
        let paths: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.arguments["path"].as_str()))
            .collect();
        assert_eq!(
            paths,
            vec![("call_x1", Some("a.rs")), ("call_x2", Some("b.rs"))]
        );
        // Ollama says `stop`; the answer is tool calls.
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.usage.input_tokens, 9);
    }

    const KEEP_ALIVES: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        ": OPENROUTER PROCESSING\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\r\n\r\n",
        ":ping\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn keep_alive_comments_are_ignored() {
        let (events, result) = decode_every_split(KEEP_ALIVES);
        assert_eq!(result.unwrap().text, "ok");
        assert_eq!(events, vec![StreamEvent::TextDelta("ok".into())]);
    }

    const ERROR_IN_200: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me\"},\"finish_reason\":null}]}\n\n",
        "data: {\"error\":{\"message\":\"Provider returned error: 上游 failed\",\"code\":\"context_length_exceeded\"}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn an_error_inside_a_200_stream_is_an_error() {
        let (events, result) = decode_every_split(ERROR_IN_200);
        assert_eq!(events, vec![StreamEvent::TextDelta("Let me".into())]);
        let err = result.unwrap_err();
        assert_eq!(
            err,
            LlmError::InStream {
                code: Some("context_length_exceeded".into()),
                message: "Provider returned error: 上游 failed".into(),
                transient: false,
            }
        );
        assert_eq!(
            err.to_string(),
            "the provider reported an error in the middle of its answer `context_length_exceeded`: Provider returned error: 上游 failed"
        );
    }

    const LLAMA_CPP_LENGTH: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"I will write the file \"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"Xk3pQ9a\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"说明.md\\\",\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"content\\\":\\\"# 标题 🦀\\\\n\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":64}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn llama_cpp_length_truncated_call_is_reported_not_returned() {
        let (events, result) = decode_every_split(LLAMA_CPP_LENGTH);
        let r = result.unwrap();
        assert_eq!(r.finish, FinishReason::Length);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.truncated_tool_calls, vec!["write_file"]);
        assert_eq!(r.text, "I will write the file ");
        assert!(events.contains(&StreamEvent::ToolCallStarted {
            id: "Xk3pQ9a".into(),
            name: "write_file".into()
        }));
    }

    #[test]
    fn llama_cpp_text_beside_tool_calls_in_one_chunk_keeps_both() {
        let fixture = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Checking. \",\"tool_calls\":[{\"index\":0,\"id\":\"q8ZrT1\",\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (events, result) = decode_every_split(fixture);
        let r = result.unwrap();
        assert_eq!(r.text, "Checking. ");
        assert_eq!(r.tool_calls[0].id, "q8ZrT1");
        assert_eq!(r.tool_calls[0].arguments, json!({}));
        assert_eq!(events[0], StreamEvent::TextDelta("Checking. ".into()));
    }

    #[test]
    fn a_stream_cut_mid_call_returns_no_call() {
        let cut = &PARALLEL_FRAGMENTED[..PARALLEL_FRAGMENTED
            .find("\"index\":1,\"function\"")
            .unwrap()];
        let (_, result) = decode_every_split(cut);
        assert!(matches!(result, Err(LlmError::StreamCut { .. })));
    }

    #[test]
    fn invalid_arguments_at_a_normal_end_come_back_raw() {
        let fixture = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"bash\",\"arguments\":\"{command: ls}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (_, result) = decode_every_split(fixture);
        let call = &result.unwrap().tool_calls[0];
        assert_eq!(call.arguments, json!("{command: ls}"));
        assert!(call.arguments_error.is_some());
    }

    proptest::proptest! {
        /// Beyond two-way splits: any number of cuts anywhere gives the same answer.
        #[test]
        fn any_chunking_gives_the_same_answer(
            cuts in proptest::collection::vec(0..PARALLEL_FRAGMENTED.len(), 0..12),
            fixture in proptest::sample::select(vec![PLAIN_TEXT, PARALLEL_FRAGMENTED, OLLAMA_INDEX_ZERO, LLAMA_CPP_LENGTH, ERROR_IN_200]),
        ) {
            let input = fixture.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.push(0);
            cuts.push(input.len());
            cuts.sort_unstable();
            let chunks: Vec<&[u8]> = cuts.windows(2).map(|w| &input[w[0]..w[1]]).collect();
            proptest::prop_assert_eq!(decode_chunks(&chunks), decode_chunks(&[input]));
        }
    }

    #[test]
    fn a_chunk_that_is_not_json_is_a_protocol_error() {
        let (_, result) = decode_every_split("data: {not json\n\n");
        assert!(matches!(result, Err(LlmError::Protocol { .. })));
    }

    #[test]
    fn request_body_carries_tools_stream_and_tool_results() {
        let req = Request {
            model: "m".into(),
            system: Some("be careful".into()),
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "a"}),
                        arguments_error: None,
                    }],
                },
                Message::tool_error("c1", "error: no such file"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
            temperature: None,
            structured: None,
            grammar: None,
        };
        assert_eq!(
            request_body(&req),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be careful"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "error: no such file"},
                ],
                "tools": [{"type": "function", "function": {"name": "read_file", "description": "read", "parameters": {"type": "object"}}}],
                "max_tokens": 100,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }
}
