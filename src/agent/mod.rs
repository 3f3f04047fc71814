//! The turn loop that drives a model with tools, and the events it reports as it goes. The
//! core never prints: it emits [`AgentEvent`]s, and `ui.rs` renders them.

pub mod context;
pub mod executor;
pub mod planner;

use serde::Serialize;

use crate::config::{Limits, ToolCalls};
use crate::llm::text_calls::{self, Found};
use crate::llm::{
    Client, FinishReason, LlmError, Message, Request, Response, StreamEvent, ToolCall, Usage,
};
use crate::tools::{PayloadLimits, Registry, Tool, ToolOutcome};

/// The hint when the model never made the call its turn had to end with: a model that does
/// not call tools will not start on a retry, so another model is the likely fix.
pub const CHANGE_MODEL_HINT: &str = "this model does not call tools reliably: changing the \
    model is the likely fix (`model:` in `.tasks/config.yaml`, `TICK_MODEL` or `--model`); or \
    set `tool_calls: text` so it writes its calls in the text form tick reads";

/// How a call is written in text (`docs/text-tool-calls.md`), for the system prompt.
pub const TEXT_TOOL_CALLS_PROMPT: &str = include_str!("../../prompts/text-tool-calls.md");

/// Calls parsed from text get ids with this prefix; the wire formats replay them as the text
/// the model wrote, and their results as user messages.
use crate::llm::TEXT_CALL_PREFIX;

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
    /// The model ended a turn without the call it must make; it is told what was wrong.
    Reminder { text: String },
    /// The model wrote a tool call as text; from now on this conversation uses text calls.
    TextProtocol { note: String },
    /// Tokens used so far in this command.
    Usage { usage: Usage },
    /// The request to the model failed before any answer (`reason`: a 500, a dropped
    /// connection, a rate limit) and goes out again in `wait_ms`: attempt `attempt` of `of`.
    Retry {
        attempt: u32,
        of: u32,
        wait_ms: u64,
        reason: String,
    },
}

impl AgentEvent {
    /// What a person watching sees of a streamed event: the text as it comes, and a retry
    /// with its wait (so they see why nothing comes); `None` for the rest.
    pub fn from_stream(event: StreamEvent) -> Option<AgentEvent> {
        match event {
            StreamEvent::TextDelta(text) => Some(AgentEvent::Text { text }),
            StreamEvent::Retrying {
                attempt,
                of,
                wait,
                reason,
            } => Some(AgentEvent::Retry {
                attempt,
                of,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                reason,
            }),
            _ => None,
        }
    }
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
        "propose_replan" => field("step").map(|step| match field("reason") {
            Some(reason) => format!("{step}: {reason}"),
            None => step,
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

/// Drops from the conversation the string arguments of call `call_id` that are over `max`
/// bytes (a call that was refused for them): replaying them would send the model, and every
/// transcript, the same gigabyte again. The model is told what stood there.
fn forget_oversized_arguments(messages: &mut [Message], call_id: &str, max: usize) {
    let Some(Message::Assistant { tool_calls, .. }) = messages
        .iter_mut()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }))
    else {
        return;
    };
    for call in tool_calls.iter_mut().filter(|c| c.id == call_id) {
        if let serde_json::Value::Object(arguments) = &mut call.arguments {
            for value in arguments.values_mut() {
                if let serde_json::Value::String(text) = value
                    && text.len() > max
                {
                    *text = format!("[{} bytes, over the limit; not kept]", text.len());
                }
            }
        }
    }
}

/// Who a turn loop asks, with what instructions and tools, within which limits.
pub struct Model<'a> {
    pub client: &'a Client,
    pub model: String,
    pub system: String,
    pub registry: &'a Registry,
    pub limits: Limits,
    /// Native tool calls, text tool calls, or native until the model writes one as text.
    pub tool_calls: ToolCalls,
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
        let payload = PayloadLimits::from(&self.limits);
        let (mut content, is_error, exit_code) = if let Some(error) = &call.arguments_error {
            (error.clone(), true, None)
        } else if is_the_example(&call.name, &call.arguments) {
            // Small models copy the example a reminder shows them: that is not their work.
            (
                format!(
                    "These arguments are (or keep the placeholder texts of) the example from \
                     tick's reminder, not yours: nothing was done. Call `{}` with a title, \
                     summary and steps of your own for this task, from what you found in the \
                     repository.",
                    call.name
                ),
                true,
                None,
            )
        } else {
            let outcome = self
                .registry
                .execute_within(&call.name, &call.arguments, payload);
            let exit_code = outcome.exit_code();
            let (content, is_error) = handle(outcome);
            (content, is_error, exit_code)
        };
        if is_error
            && content.starts_with("invalid arguments for ")
            && let Some(example) = self.example_call(&call.name, messages)
        {
            content.push_str(&format!(
                "\n\nA minimal valid call looks like this:\n{example}"
            ));
        }
        let content = crate::tools::cap_result(content, self.limits.max_tool_result_bytes);
        sink(AgentEvent::ToolResult {
            name: call.name.clone(),
            is_error,
            exit_code,
        });
        forget_oversized_arguments(messages, &call.id, payload.max_write_bytes);
        messages.push(if is_error {
            Message::tool_error(&call.id, content)
        } else {
            Message::tool_result(&call.id, content)
        });
    }

    /// Sends the conversation, streams the model's text to `sink`, counts tokens against the
    /// limit, and adds the answer to `messages`.
    #[allow(
        clippy::too_many_lines,
        reason = "one answer as it happens: the request, its stream, the retries and the count"
    )]
    pub async fn ask(
        &self,
        turn: u32,
        messages: &mut Vec<Message>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        usage: &mut Usage,
    ) -> Result<Asked, AskError> {
        sink(AgentEvent::Request { turn });
        let text_protocol = self.text_protocol(messages);
        let max_tokens = self.limits.output_tokens(self.registry.mode());
        let request = Request {
            model: self.model.clone(),
            system: Some(if text_protocol {
                format!(
                    "{}\n\n{}",
                    self.system.trim_end(),
                    self.registry.text_tools_prompt(TEXT_TOOL_CALLS_PROMPT)
                )
            } else {
                self.system.clone()
            }),
            messages: messages.clone(),
            // A model that writes its calls as text gets no native tools: two ways of calling
            // in one prompt confuse small models. A conversation that already holds native
            // calls keeps them, because some APIs (Anthropic) refuse tool calls in the history
            // of a request without tools.
            tools: if text_protocol && !has_native_calls(messages) {
                Vec::new()
            } else {
                self.registry.specs()
            },
            max_tokens: Some(max_tokens),
            temperature: None,
            structured: None,
            grammar: None,
        };
        let mut response = {
            let mut forward = |event: StreamEvent| {
                if let Some(event) = AgentEvent::from_stream(event) {
                    sink(event);
                }
            };
            self.client
                .complete(&request, &mut forward)
                .await
                .map_err(AskError::Llm)?
        };
        usage.add(&response.usage);
        sink(AgentEvent::Usage { usage: *usage });
        let cut = response.finish == FinishReason::Length;
        let mut switched = None;
        let mut not_run = Vec::new();
        if !cut && response.tool_calls.is_empty() && self.tool_calls != ToolCalls::Native {
            let (calls, problems) = Self::text_calls(&response.text, messages);
            if !calls.is_empty() {
                not_run = problems;
            }
            if !calls.is_empty() && !text_protocol {
                switched = Some(format!(
                    "Note: you wrote {} as text instead of a tool call. tick ran it as a call. \
                     From now on, write every tool call in your answer as a `<tool_call>` \
                     block holding {{\"name\": ..., \"arguments\": {{...}}}}; the tools and \
                     their arguments are described in the system prompt.",
                    if calls.len() == 1 {
                        format!("the call to `{}`", calls[0].name)
                    } else {
                        format!("{} calls", calls.len())
                    }
                ));
            }
            response.tool_calls = calls;
        }
        messages.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        if let Some(note) = switched {
            sink(AgentEvent::TextProtocol { note: note.clone() });
            messages.push(Message::user(note));
        }
        if !not_run.is_empty() {
            // The calls that were read run; the model must learn about the ones that were not.
            messages.push(Message::user(format!(
                "Not run, because tick could not read them as calls: {}",
                not_run.join("; ")
            )));
        }
        let used = usage.input_tokens + usage.output_tokens;
        if used > self.limits.max_tokens {
            return Err(AskError::TokenLimit {
                used,
                limit: self.limits.max_tokens,
            });
        }
        if cut && response.tool_calls.is_empty() && response.truncated_tool_calls.is_empty() {
            // Nothing in a cut answer is run, not even a call written as text: it may be cut.
            let note = format!(
                "Your answer was cut off at the limit of {max_tokens} output tokens and nothing \
                 in it was run. Answer again, shorter: make the next tool call now, without \
                 repeating what you already wrote (write a large file or plan in parts)."
            );
            sink(AgentEvent::Reminder { text: note.clone() });
            messages.push(Message::user(note));
            return Ok(Asked::CutOff);
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
        let note = format!(
            "Your call to `{}` was cut off at the limit of {max_tokens} output tokens and was \
             not run. Call it again with shorter arguments (write a large file in parts).",
            response.truncated_tool_calls.join("`, `")
        );
        sink(AgentEvent::Reminder { text: note.clone() });
        messages.push(Message::user(note));
        Ok(Asked::CutOff)
    }

    /// Whether this conversation writes tool calls as text: always in `text` mode; in `auto`
    /// mode once the model has written one call as text.
    pub fn text_protocol(&self, messages: &[Message]) -> bool {
        match self.tool_calls {
            ToolCalls::Native => false,
            ToolCalls::Text => true,
            ToolCalls::Auto => messages.iter().any(|m| {
                matches!(m, Message::Assistant { tool_calls, .. }
                    if tool_calls.iter().any(ToolCall::is_text))
            }),
        }
    }

    /// The calls written as text in `reply` that name one of tick's tools, as tool calls,
    /// and what was wrong with the blocks that were meant as calls but are none. A tool
    /// outside the mode is kept: the registry refuses it exactly as a native call.
    fn text_calls(reply: &str, messages: &[Message]) -> (Vec<ToolCall>, Vec<String>) {
        let earlier = messages
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { tool_calls, .. } => {
                    Some(tool_calls.iter().filter(|c| c.is_text()).count())
                }
                _ => None,
            })
            .sum::<usize>();
        let mut calls = Vec::new();
        let mut problems = Vec::new();
        for found in text_calls::parse(reply) {
            match found {
                Found::Call(call) if Tool::from_name(&call.name).is_some() => {
                    calls.push(ToolCall {
                        id: format!("{TEXT_CALL_PREFIX}{}", earlier + calls.len() + 1),
                        name: call.name,
                        arguments: call.arguments,
                        arguments_error: None,
                    });
                }
                Found::Call(call) => problems.push(format!("`{}` is not a tool", call.name)),
                Found::Malformed { error } => problems.push(error),
                Found::Unnamed(_) => {}
            }
        }
        (calls, problems)
    }

    /// What to tell a model that ended its turn without calling `expected`: exactly what was
    /// wrong with its answer, and a minimal valid call. `duty` says what the turn must end
    /// with, in a sentence.
    pub fn reminder(
        &self,
        response: &Response,
        messages: &[Message],
        expected: &str,
        duty: &str,
    ) -> String {
        let found = text_calls::parse(&response.text);
        let problem = found
            .iter()
            .find_map(|f| match f {
                Found::Malformed { error } => Some(format!(
                    "Your answer holds a tool call written as text that could not be read: \
                     {error}."
                )),
                _ => None,
            })
            .or_else(|| found.iter().find_map(|f| self.call_problem(f)))
            .unwrap_or_else(|| {
                if self.text_protocol(messages) {
                    "Your answer has no tool call: no `<tool_call>` block and no fenced JSON \
                     call."
                        .to_owned()
                } else {
                    "Your answer has no tool call.".to_owned()
                }
            });
        // A model that writes calls as text, even broken ones, is shown the text form.
        let form = match self.tool_calls {
            ToolCalls::Native => Form::Native,
            ToolCalls::Text => Form::Text,
            ToolCalls::Auto if self.text_protocol(messages) || !found.is_empty() => Form::Text,
            ToolCalls::Auto => Form::Either,
        };
        let example =
            example_call(expected, form).unwrap_or_else(|| format!("a call to `{expected}`"));
        format!("{problem} {duty}\n\nA minimal valid call looks like this:\n{example}")
    }

    /// What is wrong with a well-formed block that still is no call of this turn.
    fn call_problem(&self, found: &Found) -> Option<String> {
        match found {
            Found::Call(call) if Tool::from_name(&call.name).is_none() => {
                let available = self
                    .registry
                    .specs()
                    .into_iter()
                    .map(|s| format!("`{}`", s.name))
                    .collect::<Vec<_>>()
                    .join(", ");
                Some(format!(
                    "You called `{}`, which is not a tool. The tools you have are: {available}.",
                    call.name
                ))
            }
            Found::Call(call) if self.tool_calls == ToolCalls::Native => Some(format!(
                "You wrote a call to `{}` as text. This conversation uses the API's tool \
                 calls: make the call as a tool call, not in your answer's text.",
                call.name
            )),
            Found::Unnamed(object) => {
                let tool = self
                    .registry
                    .specs()
                    .into_iter()
                    .find(|spec| looks_like_arguments(object, &spec.parameters))?;
                Some(format!(
                    "The JSON block in your answer looks like the arguments of `{}`, but it is \
                     not a call: it has no tool name around it.",
                    tool.name
                ))
            }
            _ => None,
        }
    }

    /// A minimal valid call of `tool`, written the way this conversation calls tools.
    fn example_call(&self, tool: &str, messages: &[Message]) -> Option<String> {
        let form = if self.text_protocol(messages) {
            Form::Text
        } else {
            Form::Native
        };
        example_call(tool, form)
    }
}

/// How an example call is written.
#[derive(Clone, Copy)]
enum Form {
    Native,
    Text,
    /// Native, with the text form for a model that cannot make native calls.
    Either,
}

fn example_call(tool: &str, form: Form) -> Option<String> {
    let arguments = example_arguments(tool)?;
    let native = || {
        format!(
            "a tool call to `{tool}` (through the tool-calling API) with the arguments {arguments}"
        )
    };
    let text = || {
        format!(
            "<tool_call>\n{}\n</tool_call>",
            serde_json::json!({"name": tool, "arguments": arguments})
        )
    };
    Some(match form {
        Form::Native => native(),
        Form::Text => text(),
        Form::Either => format!(
            "{}\n\nIf you cannot make tool calls, write the call in your answer instead, \
             exactly like this:\n{}",
            native(),
            text()
        ),
    })
}

fn has_native_calls(messages: &[Message]) -> bool {
    messages.iter().any(|m| {
        matches!(m, Message::Assistant { tool_calls, .. }
            if tool_calls.iter().any(|c| !c.is_text()))
    })
}

/// Whether `object` could be the arguments of a tool with `schema`: every required property
/// is there and every key is a property.
fn looks_like_arguments(
    object: &serde_json::Map<String, serde_json::Value>,
    schema: &serde_json::Value,
) -> bool {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return false;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    !object.is_empty()
        && !required.is_empty()
        && required.iter().all(|k| object.contains_key(*k))
        && object.keys().all(|k| properties.contains_key(k))
}

/// Whether `arguments` are the example reminders show for `tool` (for the tools whose example
/// could pass for real work). A plan that keeps any of the example's placeholder texts (its
/// title, summary or a step title) is the example with changes, not a plan: small models copy
/// it and edit a field or two.
fn is_the_example(tool: &str, arguments: &serde_json::Value) -> bool {
    let Some(example) = example_arguments(tool) else {
        return false;
    };
    let text = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .map(str::to_owned)
    };
    match Tool::from_name(tool) {
        Some(Tool::SubmitPlan) => {
            let same = |key: &str| {
                text(arguments, key).is_some() && text(arguments, key) == text(&example, key)
            };
            let example_step = text(&example["steps"][0], "title");
            let copied_step = arguments
                .get("steps")
                .and_then(|s| s.as_array())
                .into_iter()
                .flatten()
                .any(|step| text(step, "title") == example_step);
            same("title") || same("summary") || copied_step
        }
        Some(Tool::UpdateStep) => &example == arguments,
        _ => false,
    }
}

/// The smallest arguments each tool accepts, for examples in reminders.
fn example_arguments(tool: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match Tool::from_name(tool)? {
        Tool::ReadFile => json!({"path": "src/main.rs"}),
        Tool::ListFiles => json!({"path": "."}),
        Tool::SearchFiles => json!({"pattern": "fn main"}),
        Tool::SubmitPlan => json!({
            "title": "Short title",
            "summary": "What the plan does and why.",
            "steps": [{"title": "First step", "files": ["src/main.rs"], "verify": ["cargo test"]}]
        }),
        Tool::AskUser => json!({"questions": [{"question": "Which option do you want?"}]}),
        Tool::WriteFile => json!({"path": "src/new.rs", "content": "// new file\n"}),
        Tool::EditFile => {
            json!({"path": "src/main.rs", "old": "exact old text", "new": "new text"})
        }
        Tool::Bash => json!({"command": "cargo test"}),
        Tool::RunCommand => json!({"argv": ["git", "log", "-5", "--stat"]}),
        Tool::UpdateStep => json!({"id": "S1", "status": "done", "evidence": "what you did"}),
        Tool::ProposeReplan => json!({
            "step": "S1",
            "reason": "why the step cannot be done as planned",
            "replace": [{"title": "The step as it can be done"}]
        }),
    })
}
