//! Model providers: one streaming client for OpenAI-compatible Chat Completions and one for
//! Anthropic's Messages API, behind one request/response shape.

use serde::{Deserialize, Serialize};

/// A tool as the model sees it: a name, what it does, and a JSON schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema (an object schema) of the tool's arguments.
    pub parameters: serde_json::Value,
}
