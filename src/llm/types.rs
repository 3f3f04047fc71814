//! The provider-neutral shape of a conversation turn: what the agent asks for ([`Request`]),
//! what it gets back ([`Response`]) and what it sees while the answer streams ([`StreamEvent`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ToolSpec;

/// One message of the conversation. The system prompt is not a message: it lives in
/// [`Request::system`] because the two wire formats place it differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person (or the harness speaking for them) said.
    User { text: String },
    /// A previous answer of the model, replayed so the model sees its own tool calls.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The outcome of one tool call, matched to it by `call_id`.
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::ToolResult {
            call_id: call_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    pub fn tool_error(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::ToolResult {
            call_id: call_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// A tool call the model asked for.
///
/// When the model's arguments were not valid JSON, `arguments` is `Value::String(raw)` holding
/// the exact text the model sent and `arguments_error` says why it did not parse. The call is
/// still returned so the agent can send that error back to the model as the tool result (a
/// mistake the model can fix), and so replaying the conversation sends back the model's own
/// bytes rather than something the harness invented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

/// The id prefix of a call the model wrote as text (`docs/text-tool-calls.md`) rather than
/// through the API. Such a call is replayed as the text the model wrote, and its result as a
/// user message, because the server never saw it as a call.
pub const TEXT_CALL_PREFIX: &str = "text_call_";

impl ToolCall {
    /// Whether the model wrote this call as text.
    pub fn is_text(&self) -> bool {
        self.id.starts_with(TEXT_CALL_PREFIX)
    }

    /// The arguments as the JSON text the model produced, for the wire formats that carry them
    /// as a string.
    pub(crate) fn arguments_text(&self) -> String {
        match (&self.arguments, &self.arguments_error) {
            (Value::String(raw), Some(_)) => raw.clone(),
            (value, _) => value.to_string(),
        }
    }
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Request {
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// An answer constrained to a JSON schema, and how the server is asked to enforce it.
    pub structured: Option<super::Structured>,
    /// A llama.cpp GBNF grammar for a text answer (the compact executor's fenced code), sent
    /// as `grammar` by the OpenAI-compatible client; only for servers known to take it.
    pub grammar: Option<String>,
}

/// Tokens spent by one call, as the provider counted them. Anthropic's cache reads and writes
/// are counted as input, because every one of them is billed and fills the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// How many of `input_tokens` the server took from its prompt cache rather than reading
    /// them again (OpenAI's `prompt_tokens_details.cached_tokens`, llama.cpp's
    /// `timings.cache_n`, Anthropic's `cache_read_input_tokens`); 0 when it does not say.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Adds another call's tokens to these totals.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FinishReason {
    /// The answer is complete.
    #[default]
    Stop,
    /// The model wants the tool calls in [`Response::tool_calls`] run.
    ToolCalls,
    /// The model ran out of output tokens; the answer is cut.
    Length,
    /// Anything else the provider said (`content_filter`, `refusal`, ...), verbatim.
    Other(String),
}

/// A complete answer. A stream that did not complete never becomes a `Response`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Response {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish: FinishReason,
    pub usage: Usage,
    /// Names of tool calls whose arguments were cut off by the output-token limit. They are
    /// not in `tool_calls` and must never be executed; tell the model instead.
    pub truncated_tool_calls: Vec<String>,
}

/// What the client reports while an answer streams in, in arrival order. These are for
/// showing progress; the [`Response`] is the authority on what the model said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StreamEvent {
    TextDelta(String),
    ToolCallStarted {
        id: String,
        name: String,
    },
    ToolCallArgsDelta {
        id: String,
        delta: String,
    },
    /// The call's token totals so far (not an increment); usually once, near the end.
    Usage(Usage),
    /// The request failed before any answer (`reason`) and goes out again after `wait`:
    /// attempt `attempt` of at most `of`. Not part of an answer.
    Retrying {
        attempt: u32,
        of: u32,
        wait: std::time::Duration,
        reason: String,
    },
}
