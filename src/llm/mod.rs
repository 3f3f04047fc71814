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

/// Whether `url` points at this machine (where a local server needs no key).
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

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
