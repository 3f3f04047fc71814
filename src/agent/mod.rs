//! The turn loop that drives a model with tools, and the events it reports as it goes. The
//! core never prints: it emits [`AgentEvent`]s, and `ui.rs` renders them.

pub mod context;
pub mod executor;
pub mod planner;

use serde::Serialize;

use crate::config::Limits;
use crate::llm::{Client, LlmError, Message, Request, Response, StreamEvent, ToolCall, Usage};
use crate::tools::{Registry, ToolOutcome};

/// Something that happened during a turn, for the person watching (or `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A request to the model is about to go out.
    Request { turn: u32 },
    /// Streamed text from the model.
    Text { text: String },
    /// The model called a tool: its name and the argument that says most (a path, a pattern).
    ToolCall { name: String, detail: String },
    /// A tool call finished; `exit_code` when it ran a command that exited.
    ToolResult {
        name: String,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// The model ended a turn without submitting; it is reminded once.
    Reminder { text: String },
    /// Tokens used so far in this command.
    Usage { usage: Usage },
}

/// The argument of a tool call that best says what it does, for a one-line progress view.
pub fn call_detail(name: &str, arguments: &serde_json::Value) -> String {
    let field = |key: &str| {
        arguments
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let detail = match name {
        "read_file" | "write_file" | "edit_file" => field("path"),
        "list_files" => field("path").or_else(|| Some(".".to_owned())),
        "search_files" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "bash" => field("command"),
        "run_command" => arguments
            .get("argv")
            .and_then(serde_json::Value::as_array)
            .map(|argv| {
                let words: Vec<String> = argv
                    .iter()
                    .map(|word| match word.as_str() {
                        Some(w) if !w.is_empty() && !w.contains(char::is_whitespace) => {
                            w.to_owned()
                        }
                        Some(w) => format!("{w:?}"),
                        None => word.to_string(),
                    })
                    .collect();
                words.join(" ")
            }),
        "submit_plan" => field("title"),
        "update_step" => field("id").map(|id| match field("status") {
            Some(status) => format!("{id} {status}"),
            None => id,
        }),
        _ => None,
    };
    let detail = detail.unwrap_or_default();
    let line = detail.lines().next().unwrap_or("");
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// Who a turn loop asks, with what instructions and tools, within which limits.
pub struct Model<'a> {
    pub client: &'a Client,
    pub model: String,
    pub system: String,
    pub registry: &'a Registry,
    pub limits: Limits,
}

/// What one request to the model gave.
pub enum Asked {
    /// A complete answer, already added to the conversation.
    Answer(Response),
    /// The answer's tool calls were cut off by the output limit; the model has been told and
    /// nothing was run. Ask again.
    CutOff,
}

#[derive(Debug)]
pub enum AskError {
    Llm(LlmError),
    TokenLimit { used: u64, limit: u64 },
}

impl Model<'_> {
    /// Runs one tool call of the model's: reports it, sends unparsable arguments back as the
    /// error, runs it through the registry (which refuses tools outside the mode), lets
    /// `handle` turn the outcome into the result text, and adds that to the conversation.
    pub fn call_tool(
        &self,
        call: &ToolCall,
        messages: &mut Vec<Message>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        handle: &mut dyn FnMut(ToolOutcome) -> (String, bool),
    ) {
        sink(AgentEvent::ToolCall {
            name: call.name.clone(),
            detail: call_detail(&call.name, &call.arguments),
        });
        let (content, is_error, exit_code) = if let Some(error) = &call.arguments_error {
            (error.clone(), true, None)
        } else {
            let outcome = self.registry.execute(&call.name, &call.arguments);
            let exit_code = outcome.exit_code();
            let (content, is_error) = handle(outcome);
            (content, is_error, exit_code)
        };
        sink(AgentEvent::ToolResult {
            name: call.name.clone(),
            is_error,
            exit_code,
        });
        messages.push(if is_error {
            Message::tool_error(&call.id, content)
        } else {
            Message::tool_result(&call.id, content)
        });
    }

    /// Sends the conversation, streams the model's text to `sink`, counts tokens against the
    /// limit, and adds the answer to `messages`.
    pub async fn ask(
        &self,
        turn: u32,
        messages: &mut Vec<Message>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        usage: &mut Usage,
    ) -> Result<Asked, AskError> {
        sink(AgentEvent::Request { turn });
        let request = Request {
            model: self.model.clone(),
            system: Some(self.system.clone()),
            messages: messages.clone(),
            tools: self.registry.specs(),
            max_tokens: None,
            temperature: None,
        };
        let response = {
            let mut forward = |event: StreamEvent| {
                if let StreamEvent::TextDelta(text) = event {
                    sink(AgentEvent::Text { text });
                }
            };
            self.client
                .complete(&request, &mut forward)
                .await
                .map_err(AskError::Llm)?
        };
        usage.input_tokens += response.usage.input_tokens;
        usage.output_tokens += response.usage.output_tokens;
        sink(AgentEvent::Usage { usage: *usage });
        messages.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        let used = usage.input_tokens + usage.output_tokens;
        if used > self.limits.max_tokens {
            return Err(AskError::TokenLimit {
                used,
                limit: self.limits.max_tokens,
            });
        }
        if response.truncated_tool_calls.is_empty() {
            return Ok(Asked::Answer(response));
        }
        // The cut calls were never run. Say so, or the model would think they were.
        for call in &response.tool_calls {
            messages.push(Message::tool_error(
                &call.id,
                "not run: another call in the same answer was cut off",
            ));
        }
        messages.push(Message::user(format!(
            "Your call to `{}` was cut off by the output token limit and was not run. Call it \
             again with shorter arguments (write a large file in parts).",
            response.truncated_tool_calls.join("`, `")
        )));
        Ok(Asked::CutOff)
    }
}
