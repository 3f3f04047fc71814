//! Model providers: one streaming client for OpenAI-compatible Chat Completions and one for
//! Anthropic's Messages API, behind one request/response shape.
//!
//! The agent builds a [`Request`], calls [`Client::complete`] with a sink for
//! [`StreamEvent`]s (progress for the UI), and acts only on the [`Response`] it gets back: a
//! stream that did not finish never yields a response, so a half-received tool call is never
//! run.

mod anthropic;
mod assemble;
mod client;
pub mod discover;
mod error;
mod openai;
mod server_info;
mod sse;
pub mod structured;
pub mod text_calls;
mod types;

pub use client::{Client, ClientConfig, ProviderKind};
pub use error::{ConnectCause, LlmError};
pub use server_info::context_tokens;
pub use structured::{Structured, StructuredMethod};
pub use types::{
    FinishReason, Message, Request, Response, StreamEvent, TEXT_CALL_PREFIX, ToolCall, Usage,
};

use serde::{Deserialize, Serialize};

/// A tool as the model sees it: a name, what it does, and a JSON schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema (an object schema) of the tool's arguments.
    pub parameters: serde_json::Value,
}
