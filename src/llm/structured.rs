//! Answers constrained to a JSON schema: which way each server is asked to enforce one
//! ([`StructuredMethod`]), how the answer is read back ([`Structured::value`]), the check of
//! that answer against the schema ([`check`]), and the probe that tells whether a server
//! enforces what it accepts ([`probe`]).
//!
//! A server that accepts a constraint is not trusted to enforce it: llama.cpp takes
//! `tool_choice: "required"` (and named `tool_choice` objects) and silently answers in prose.
//! So every structured answer is checked against its schema, and the probe asks a question
//! whose natural answer is prose, under a schema with keys the question never mentions: only
//! a server that enforces the schema can answer with those keys.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Client, LlmError, Message, ProviderKind, Request, Response};

/// How a server is asked for an answer that fits a JSON schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMethod {
    /// `response_format: {type: json_schema, json_schema: {name, schema, strict: true}}`:
    /// llama.cpp (a grammar from the first token), vLLM, OpenAI's strict mode.
    ResponseFormat,
    /// Ollama's `format: <schema>` (sent with `response_format` too, which newer Ollama
    /// versions read on their OpenAI-compatible endpoint).
    OllamaFormat,
    /// One tool whose parameters are the schema, and the model made to call it: OpenAI's
    /// named `tool_choice` with a strict function, Anthropic's `tool_choice: {type: tool}`.
    ForcedTool,
}

impl StructuredMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResponseFormat => "response_format json_schema",
            Self::OllamaFormat => "ollama format",
            Self::ForcedTool => "forced tool call",
        }
    }

    /// The methods worth trying on a server, best first. `ollama` says the server is Ollama
    /// (the provider preset), which the URL alone cannot tell.
    pub fn candidates(kind: ProviderKind, ollama: bool) -> Vec<StructuredMethod> {
        match kind {
            ProviderKind::Anthropic => vec![Self::ForcedTool],
            ProviderKind::OpenAi if ollama => vec![Self::OllamaFormat, Self::ResponseFormat],
            ProviderKind::OpenAi => vec![Self::ResponseFormat, Self::ForcedTool],
        }
    }
}

/// A request for an answer that fits `schema`, named `name` (the tool's name when the method
/// is [`StructuredMethod::ForcedTool`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    pub name: String,
    pub schema: Value,
    pub method: StructuredMethod,
}

impl Structured {
    /// The answer as JSON, checked against the schema; the error says what was wrong, in words
    /// that can go back to the model.
    pub fn value(&self, response: &Response) -> Result<Value, String> {
        let value = match self.method {
            StructuredMethod::ForcedTool => {
                match response.tool_calls.iter().find(|c| c.name == self.name) {
                    Some(call) => match &call.arguments_error {
                        Some(why) => return Err(format!("the answer is not JSON: {why}")),
                        None => call.arguments.clone(),
                    },
                    // A server that took the tool but did not force it may still have written
                    // the object as text.
                    None => parse_text(&response.text)?,
                }
            }
            StructuredMethod::ResponseFormat | StructuredMethod::OllamaFormat => {
                parse_text(&response.text)?
            }
        };
        let mut problems = Vec::new();
        check(&self.schema, &value, "", &mut problems);
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "the answer does not fit the schema: {}",
                problems.join("; ")
            ))
        }
    }
}

/// The JSON object in a text answer, also inside a Markdown code fence.
fn parse_text(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(inner.trim()).map_err(|err| {
        let start: String = trimmed.chars().take(80).collect();
        if trimmed.is_empty() {
            "the answer is empty, not a JSON object".to_owned()
        } else {
            format!("the answer is not JSON ({err}): `{start}`")
        }
    })
}

/// Checks `value` against the subset of JSON Schema tick's own schemas use (`type`,
/// `properties`, `required`, `additionalProperties: false`, `items`, `enum`, `minItems`,
/// `maxItems`, `maxLength`), adding one line per problem. Keywords outside the subset are
/// not checked.
pub fn check(schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>) {
    let here = if at.is_empty() { "the answer" } else { at };
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        problems.push(format!("{here} is {value}, not one of the allowed values"));
        return;
    }
    let Some(kind) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    };
    if !fits {
        problems.push(format!("{here} should be of type {kind}"));
        return;
    }
    if let (Some(object), Some(properties)) = (
        value.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(name) {
                problems.push(format!("{here} has no `{name}`"));
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, item) in object {
            let path = if at.is_empty() {
                format!("`{name}`")
            } else {
                format!("{at}.{name}")
            };
            match properties.get(name) {
                Some(sub) => check(sub, item, &path, problems),
                None if closed => problems.push(format!("{here} has an unknown key `{name}`")),
                None => {}
            }
        }
    }
    if let Some(items) = value.as_array() {
        let count = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            problems.push(format!("{here} has {count} items, fewer than {min}"));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            problems.push(format!("{here} has {count} items, more than {max}"));
        }
        if let Some(sub) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(sub, item, &format!("{here}[{i}]"), problems);
            }
        }
    }
    if let (Some(text), Some(max)) = (
        value.as_str(),
        schema.get("maxLength").and_then(Value::as_u64),
    ) && text.chars().count() as u64 > max
    {
        problems.push(format!("{here} is longer than {max} characters"));
    }
}

/// The schema of the probe: keys the probe's question never mentions.
fn probe_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tick_probe": {"type": "string", "enum": ["enforced"]},
            "digit": {"type": "integer"},
        },
        "required": ["tick_probe", "digit"],
        "additionalProperties": false,
    })
}

/// The name the probe's schema (and forced tool) goes by.
pub const PROBE_NAME: &str = "tick_probe";

/// What one probe request found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub method: StructuredMethod,
    /// The answer fitted the schema although the question asked for prose.
    pub held: bool,
    /// What the server answered, or why the request failed.
    pub detail: String,
}

/// Asks `model` a question whose natural answer is a sentence, under a schema with keys the
/// question never names, using `method`. Only a server that enforces the schema answers with
/// them; one that accepts the field and ignores it answers in prose, and is found out.
pub async fn probe(
    client: &Client,
    model: &str,
    method: StructuredMethod,
    timeout: Duration,
) -> Probe {
    let structured = Structured {
        name: PROBE_NAME.to_owned(),
        schema: probe_schema(),
        method,
    };
    let request = Request {
        model: model.to_owned(),
        system: Some("You are a friendly assistant.".to_owned()),
        messages: vec![Message::user("Say hello in one short sentence.")],
        tools: Vec::new(),
        max_tokens: Some(60),
        temperature: Some(0.0),
        structured: Some(structured.clone()),
        grammar: None,
    };
    let mut sink = |_event| {};
    let answer = tokio::time::timeout(timeout, client.complete(&request, &mut sink)).await;
    let (held, detail) = match answer {
        Err(_) => (false, format!("no answer within {}s", timeout.as_secs())),
        Ok(Err(err)) => (false, refusal(&err)),
        Ok(Ok(response)) => match structured.value(&response) {
            Ok(value) => (true, format!("answered {value}")),
            Err(why) => (false, format!("not enforced: {why}")),
        },
    };
    Probe {
        method,
        held,
        detail,
    }
}

fn refusal(err: &LlmError) -> String {
    format!("the request failed: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{FinishReason, ToolCall};

    fn text(answer: &str) -> Response {
        Response {
            text: answer.to_owned(),
            finish: FinishReason::Stop,
            ..Response::default()
        }
    }

    #[test]
    fn the_probe_schema_accepts_only_its_own_keys() {
        let structured = Structured {
            name: PROBE_NAME.into(),
            schema: probe_schema(),
            method: StructuredMethod::ResponseFormat,
        };
        assert!(
            structured
                .value(&text("{\"tick_probe\": \"enforced\", \"digit\": 3}"))
                .is_ok()
        );
        for prose in [
            "Hello there!",
            "{\"greeting\": \"hello\"}",
            "{\"tick_probe\": \"yes\", \"digit\": 3}",
            "{\"tick_probe\": \"enforced\", \"digit\": \"3\"}",
            "{\"tick_probe\": \"enforced\", \"digit\": 3, \"extra\": 1}",
            "",
        ] {
            assert!(structured.value(&text(prose)).is_err(), "{prose}");
        }
    }

    #[test]
    fn a_fenced_object_is_read() {
        assert_eq!(
            parse_text("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(parse_text(" {\"a\": 1} ").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn a_forced_tool_answer_is_read_from_the_call_or_else_the_text() {
        let structured = Structured {
            name: "plan".into(),
            schema: json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}}),
            method: StructuredMethod::ForcedTool,
        };
        let called = Response {
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "plan".into(),
                arguments: json!({"x": 1}),
                arguments_error: None,
            }],
            ..Response::default()
        };
        assert_eq!(structured.value(&called).unwrap(), json!({"x": 1}));
        assert_eq!(
            structured.value(&text("{\"x\": 2}")).unwrap(),
            json!({"x": 2})
        );
        assert!(structured.value(&text("I would call plan.")).is_err());
    }

    #[test]
    fn check_reports_every_problem_with_its_place() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["steps"],
            "properties": {
                "steps": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                    "type": "object", "required": ["title"],
                    "properties": {"title": {"type": "string", "maxLength": 5}},
                }},
            },
        });
        let mut problems = Vec::new();
        check(
            &schema,
            &json!({"steps": [{"title": "too long"}, {}, {"title": 1}], "x": 1}),
            "",
            &mut problems,
        );
        assert_eq!(
            problems,
            vec![
                "`steps` has 3 items, more than 2",
                "`steps`[0].title is longer than 5 characters",
                "`steps`[1] has no `title`",
                "`steps`[2].title should be of type string",
                "the answer has an unknown key `x`",
            ]
        );
    }

    #[test]
    fn candidates_put_the_enforced_method_first() {
        assert_eq!(
            StructuredMethod::candidates(ProviderKind::OpenAi, false)[0],
            StructuredMethod::ResponseFormat
        );
        assert_eq!(
            StructuredMethod::candidates(ProviderKind::OpenAi, true)[0],
            StructuredMethod::OllamaFormat
        );
        assert_eq!(
            StructuredMethod::candidates(ProviderKind::Anthropic, false),
            vec![StructuredMethod::ForcedTool]
        );
    }
}
