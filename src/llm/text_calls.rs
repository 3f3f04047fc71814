//! Tool calls written as text in a reply, for models that do not use the API's tool calls
//! (many local models, and llama.cpp without `--jinja`). The grammar is documented in
//! `docs/text-tool-calls.md`; this module is its only parser.
//!
//! A call is a JSON object `{"name": "...", "arguments": {...}}` inside
//!
//! - a `<tool_call>` … `</tool_call>` block (the closing tag may be missing at the very end of
//!   the reply, where a model that stopped on the tag leaves it off), or
//! - a fenced code block (```` ``` ```` or ```` ```json ````, also `tool_call`), or
//! - the whole reply, when it is nothing but that object, or
//! - prose, when the reply has no blocks at all and the object starts with `{"name"`.
//!
//! `arguments` may be an object, a JSON string holding an object, or a one-element array
//! holding an object (small models write all three); `parameters` is accepted for
//! `arguments`. Anything else beside `name` is an error that says how to write it instead.
//! The reply is parsed once, complete: a reply cut by the output limit is never parsed, so a
//! truncated call is never run.

use serde_json::{Map, Value};

/// One call found in a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    pub name: String,
    /// Always a JSON object.
    pub arguments: Value,
}

/// What one block of a reply turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A well-formed call (the tool may still not exist, or refuse the arguments).
    Call(TextCall),
    /// A block that was meant as a call but could not be read; `error` says why and where.
    Malformed { error: String },
    /// A JSON object with no `name`: perhaps a tool's arguments written without the wrapper.
    Unnamed(Map<String, Value>),
}

/// The keys a call object may have beside `name`.
const ARGUMENT_KEYS: [&str; 2] = ["arguments", "parameters"];

/// Every call-like block of `text`, in order.
pub fn parse(text: &str) -> Vec<Found> {
    let whole = text.trim();
    if whole.starts_with('{')
        && whole.ends_with('}')
        && let Ok(value) = serde_json::from_str::<Value>(whole)
        && let call @ Found::Call(_) = interpret(value)
    {
        return vec![call];
    }
    let mut found = Vec::new();
    let mut rest = 0;
    let mut has_blocks = false;
    while rest < text.len() {
        let tail = &text[rest..];
        let tag = tail.find(OPEN_TAG).map(|at| (at, Block::Tag));
        let fence = find_fence(tail).map(|(at, len)| (at, Block::Fence(len)));
        let next = match (tag, fence) {
            (Some(t), Some(f)) => Some(if t.0 <= f.0 { t } else { f }),
            (t, f) => t.or(f),
        };
        let Some((at, block)) = next else { break };
        has_blocks = true;
        let start = rest + at;
        match block {
            Block::Tag => {
                let body_start = start + OPEN_TAG.len();
                // The closing tag is looked for after the JSON, which may hold the tag's text
                // inside a string.
                let from = body_start + json_extent(&text[body_start..]);
                let (body_end, end) = match text[from..].find(CLOSE_TAG) {
                    Some(close) => (from + close, from + close + CLOSE_TAG.len()),
                    None => (text.len(), text.len()),
                };
                let body = strip_fence(&text[body_start..body_end]);
                read_json(text, body_start, body, true, &mut found);
                rest = end;
            }
            Block::Fence(open_len) => {
                let info_end = text[start + open_len..]
                    .find('\n')
                    .map_or(text.len(), |n| start + open_len + n);
                let info = text[start + open_len..info_end].trim();
                let body_start = (info_end + 1).min(text.len());
                let (body_end, end) = match find_closing_fence(&text[body_start..]) {
                    Some((close, len)) => (body_start + close, body_start + close + len),
                    None => (text.len(), text.len()),
                };
                let body = &text[body_start..body_end];
                if body.trim_start().starts_with(OPEN_TAG) {
                    found.extend(parse(body));
                    rest = end;
                    continue;
                }
                let meant = matches!(
                    info.to_ascii_lowercase().as_str(),
                    "json" | "tool_call" | "tool_code" | "jsonc"
                );
                if info.is_empty() || meant {
                    read_json(text, body_start, body, meant, &mut found);
                }
                rest = end;
            }
        }
    }
    if found.is_empty() && !has_blocks {
        found = inline_calls(text);
    }
    found
}

/// Calls written as bare JSON inside prose (`Here it is: {"name": ...}`), for a reply with no
/// blocks at all. Only an object that starts with its `name` key and is a well-formed call
/// counts: prose that happens to hold JSON is not a call.
fn inline_calls(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find('{') {
        let start = from + at;
        from = start + 1;
        if !text[from..].trim_start().starts_with("\"name\"") {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next()
            && let call @ Found::Call(_) = interpret(value)
        {
            found.push(call);
            from = start + values.byte_offset();
        }
    }
    found
}

/// How many bytes of `text` the JSON values at its start cover (0 when it does not start
/// with JSON).
fn json_extent(text: &str) -> usize {
    if !text.trim_start().starts_with(['{', '[']) {
        return 0;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut end = 0;
    while let Some(Ok(_)) = values.next() {
        end = values.byte_offset();
    }
    end
}

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";

enum Block {
    Tag,
    /// An opening fence of this many backticks.
    Fence(usize),
}

/// The first opening fence: (byte offset, number of backticks). A run of three or more
/// backticks opens a block at the start of a line (up to three spaces in), or anywhere when
/// the rest of its line is only an info word (`über ```json`, which small models write).
fn find_fence(text: &str) -> Option<(usize, usize)> {
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let mut from = 0;
        while let Some(at) = line[from..].find("```") {
            let at = from + at;
            let ticks = line[at..].chars().take_while(|c| *c == '`').count();
            let info = line[at + ticks..].trim();
            let line_initial = at == indent && indent <= 3;
            let mid_line = !line[..at].contains('`')
                && info.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if (line_initial && !info.contains('`')) || mid_line {
                return Some((line_start + at, ticks));
            }
            from = at + ticks;
        }
        line_start += line.len();
    }
    None
}

/// The closing fence of a block whose body is `text`: (offset where the body ends, length of
/// the fence including its line break). A fence is a line of only backticks, or backticks
/// that end a line (`}```"`): JSON strings hold no raw line breaks, so this is never inside
/// one.
fn find_closing_fence(text: &str) -> Option<(usize, usize)> {
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end();
        let ticks = content.len() - content.trim_end_matches('`').len();
        if ticks >= 3 {
            let at = content.len() - ticks;
            return Some((line_start + at, line.len() - at));
        }
        line_start += line.len();
    }
    None
}

/// A `<tool_call>` body may itself be fenced.
fn strip_fence(body: &str) -> &str {
    let trimmed = body.trim();
    let Some(after) = trimmed.strip_prefix("```") else {
        return body;
    };
    let after = after.trim_start_matches('`');
    let after = after.split_once('\n').map_or("", |(_, rest)| rest);
    after.trim_end().trim_end_matches('`')
}

/// Reads the JSON values of one block (`body` starts at byte `offset` of `reply`). `meant`:
/// the block was marked as a call, so text that is not JSON is an error rather than code.
fn read_json(reply: &str, offset: usize, body: &str, meant: bool, found: &mut Vec<Found>) {
    let trimmed = body.trim_start();
    if trimmed.is_empty() {
        if meant {
            found.push(Found::Malformed {
                error: "the block is empty; it must hold one JSON object".to_owned(),
            });
        }
        return;
    }
    if !trimmed.starts_with(['{', '[']) {
        if meant || looks_like_call(trimmed) {
            found.push(Found::Malformed {
                error: format!(
                    "the block at {} does not start with `{{`; it must hold one JSON object",
                    position(reply, offset + body.len() - trimmed.len())
                ),
            });
        }
        return;
    }
    let block_start = found.len();
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    loop {
        let value = match values.next() {
            None => return,
            Some(Ok(value)) => value,
            Some(Err(err)) => {
                // Trailing commas are the commonest slip of small models; nothing else is
                // repaired.
                if let Some(fixed) = without_trailing_commas(body)
                    && serde_json::Deserializer::from_str(&fixed)
                        .into_iter::<Value>()
                        .all(|v| v.is_ok())
                {
                    found.truncate(block_start);
                    read_json(reply, offset, &fixed, meant, found);
                    return;
                }
                if meant || looks_like_call(body) {
                    let at = line_col_offset(body, err.line(), err.column());
                    let what = err.to_string();
                    let what = what.split(" at line ").next().unwrap_or(&what);
                    found.push(Found::Malformed {
                        error: format!(
                            "the JSON at {} is not valid: {what}",
                            position(reply, offset + at)
                        ),
                    });
                }
                return;
            }
        };
        match value {
            Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
                for item in items {
                    found.push(interpret(item));
                }
            }
            Value::Object(_) => found.push(interpret(value)),
            _ if meant => found.push(Found::Malformed {
                error: "the block must hold a JSON object `{\"name\": ..., \"arguments\": {...}}`"
                    .to_owned(),
            }),
            _ => {}
        }
    }
}

/// `text` with every comma that only precedes a closing `}` or `]` removed (outside strings),
/// or `None` when it has none.
fn without_trailing_commas(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    for (at, c) in text.char_indices() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == ',' {
            let next = text[at + 1..].trim_start().chars().next();
            // Only a comma after a value: `{,}` stays an error.
            let after_value = !matches!(
                out.trim_end().chars().last(),
                None | Some('{' | '[' | ',' | ':')
            );
            if after_value && matches!(next, Some('}' | ']')) {
                changed = true;
                continue;
            }
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    changed.then_some(out)
}

fn looks_like_call(text: &str) -> bool {
    text.contains("\"name\"")
        && ARGUMENT_KEYS
            .iter()
            .any(|k| text.contains(&format!("\"{k}\"")))
}

/// A call object: `name`, and the arguments in one of the shapes models write.
fn interpret(value: Value) -> Found {
    let Value::Object(mut object) = value else {
        return malformed("a call must be a JSON object");
    };
    // The OpenAI wire shape, `{"type": "function", "function": {"name", "arguments"}}`.
    if !object.contains_key("name")
        && let Some(Value::Object(function)) = object.get("function")
        && function.contains_key("name")
    {
        let function = function.clone();
        object.remove("type");
        object.remove("function");
        if object.is_empty() {
            return interpret(Value::Object(function));
        }
    }
    let name = match object.remove("name") {
        None => return Found::Unnamed(object),
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        Some(other) => {
            return malformed(&format!(
                "`name` must be the tool's name as a string, not `{}`",
                short(&other)
            ));
        }
    };
    let mut present = ARGUMENT_KEYS.iter().filter(|k| object.contains_key(**k));
    let key = present.next().copied();
    if present.next().is_some() {
        return malformed(&format!(
            "the call to `{name}` has both `arguments` and `parameters`; write only `arguments`"
        ));
    }
    let raw = key.and_then(|k| object.remove(k)).unwrap_or(Value::Null);
    if let Some(extra) = object.keys().next() {
        let mut arguments = match &raw {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        for (k, v) in &object {
            arguments.insert(k.clone(), v.clone());
        }
        return malformed(&format!(
            "the call to `{name}` has the key `{extra}` beside `name` and `arguments`; every \
             argument goes inside `arguments`: {}",
            serde_json::json!({"name": name, "arguments": arguments})
        ));
    }
    let key = key.unwrap_or("arguments");
    match arguments_object(raw) {
        Ok(arguments) => Found::Call(TextCall {
            name,
            arguments: Value::Object(arguments),
        }),
        Err(why) => malformed(&format!("`{key}` of the call to `{name}` {why}")),
    }
}

fn arguments_object(raw: Value) -> Result<Map<String, Value>, String> {
    match raw {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        Value::String(text) if text.trim().is_empty() => Ok(Map::new()),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(format!(
                "is a string holding `{}`, not a JSON object",
                short(&other)
            )),
            Err(err) => Err(format!("is a string that is not a JSON object: {err}")),
        },
        Value::Array(mut items) if items.len() == 1 && items[0].is_object() => match items.pop() {
            Some(Value::Object(map)) => Ok(map),
            _ => Err("must be a JSON object".to_owned()),
        },
        Value::Array(items) => Err(format!(
            "is a list of {} items; it must be one JSON object",
            items.len()
        )),
        other => Err(format!("must be a JSON object, not `{}`", short(&other))),
    }
}

fn malformed(error: &str) -> Found {
    Found::Malformed {
        error: error.to_owned(),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}

/// The byte offset of `serde_json`'s 1-based line and column in `text`.
fn line_col_offset(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len());
        }
        offset += l.len();
    }
    text.len()
}

/// "line L, column C of your answer", 1-based, columns in characters.
fn position(reply: &str, offset: usize) -> String {
    let mut offset = offset.min(reply.len());
    while !reply.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &reply[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("line {line}, column {column} of your answer")
}

#[cfg(test)]
#[path = "text_calls_tests.rs"]
mod tests;
