//! Scripted model answers for the fake server: an OpenAI-compatible or Anthropic stream that
//! calls tools or says something, in a few chunks.

use serde_json::{Value, json};

use super::fake_model::Reply;

fn data(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

/// An OpenAI-compatible stream calling `calls` (id, tool name, arguments), the arguments of
/// each split in two fragments.
pub fn openai_calls(calls: &[(&str, &str, Value)]) -> Reply {
    Reply::sse(openai_call_chunks(calls))
}

/// The SSE events of [`openai_calls`], to script a reply with pauses.
pub fn openai_call_chunks(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut chunks = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let args = arguments.to_string();
        let cut = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        chunks.push(data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": &args[..cut]}}
        ]}, "finish_reason": null}]})));
        chunks.push(data(
            &json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "function": {"arguments": &args[cut..]}}
        ]}, "finish_reason": null}]}),
        ));
    }
    chunks.push(data(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ));
    chunks.push(data(
        &json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}}),
    ));
    chunks.push("data: [DONE]\n\n".to_owned());
    chunks
}

pub fn openai_call(id: &str, name: &str, arguments: Value) -> Reply {
    openai_calls(&[(id, name, arguments)])
}

/// llama.cpp's `GET /props`, stating a context of `n_ctx` tokens: what tells the compact
/// planner and executor a small model serves.
pub fn llamacpp_props(n_ctx: u32) -> Reply {
    Reply::json(
        200,
        &json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}),
    )
}

/// A JSON answer, streamed as a server constrained by `response_format` sends it.
pub fn json_answer(value: &Value) -> Reply {
    openai_text(&value.to_string())
}

/// An OpenAI-compatible stream that only talks.
pub fn openai_text(text: &str) -> Reply {
    openai_text_ending(text, "stop")
}

/// An OpenAI-compatible stream of `text` that ends with `finish_reason`.
fn openai_text_ending(text: &str, finish_reason: &str) -> Reply {
    Reply::sse([
        data(
            &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        ),
        data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})),
        "data: [DONE]\n\n".to_owned(),
    ])
}

/// An OpenAI-compatible stream that only talks, `text` sent in pieces of `piece` bytes (cut
/// inside UTF-8 characters on the wire: each SSE event is split over two network chunks).
pub fn openai_text_pieces(text: &str, piece: usize) -> Reply {
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut at = piece.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let event = data(
            &json!({"choices": [{"index": 0, "delta": {"content": &rest[..at]}, "finish_reason": null}]}),
        )
        .into_bytes();
        let half = event.len() / 2;
        chunks.push(event[..half].to_vec());
        chunks.push(event[half..].to_vec());
        rest = &rest[at..];
    }
    chunks.push(
        data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
            .into_bytes(),
    );
    chunks.push(b"data: [DONE]\n\n".to_vec());
    Reply::sse(chunks)
}

/// An OpenAI-compatible stream that talks until it runs out of output tokens.
pub fn openai_text_cut(text: &str) -> Reply {
    openai_text_ending(text, "length")
}

/// The start of an OpenAI-compatible stream, then the same token forever.
pub fn openai_looping(token: &str, pause: std::time::Duration) -> Reply {
    Reply::sse([data(
        &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
    )])
    .forever(
        data(&json!({"choices": [{"index": 0, "delta": {"content": token}, "finish_reason": null}]})),
        pause,
    )
}

/// An Anthropic stream of text that stops at the output-token limit.
pub fn anthropic_text_cut(text: &str) -> Reply {
    anthropic_text_ending(text, "max_tokens")
}

/// An Anthropic stream of `text` that ends with `stop_reason`.
fn anthropic_text_ending(text: &str, stop_reason: &str) -> Reply {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 80, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    Reply::sse(events.iter().map(anthropic_event))
}

fn anthropic_event(value: &Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap()
    )
}

/// An Anthropic stream: some text, then one tool use.
pub fn anthropic_call(id: &str, name: &str, arguments: &Value) -> Reply {
    let args = arguments.to_string();
    let cut = args
        .char_indices()
        .nth(args.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 80, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": &args[..cut]}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": &args[cut..]}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    Reply::sse(events.iter().map(anthropic_event))
}

/// A plan the fake model submits.
pub fn login_plan() -> Value {
    json!({
        "title": "Refactor the login module",
        "summary": "Move `login` behind a compatibility layer and cover it with tests.",
        "context": "`src/login.rs` holds `login`; `src/main.rs` calls it.",
        "assumptions": ["The old `login(user, pass)` signature must keep working"],
        "steps": [
            {"title": "Add tests for the current login", "files": ["tests/login.rs"], "verify": ["cargo test login"], "done_when": "the tests pass on the old code", "risk": "low"},
            {"title": "Move login into a module", "files": ["src/login.rs", "src/auth/mod.rs"], "verify": ["cargo build"], "depends": ["S1"], "risk": "medium"},
            {"title": "Keep the old entry point as a shim", "files": ["src/login.rs"], "verify": ["cargo test"], "depends": ["S2"]}
        ],
        "risks": ["Callers outside this repository may rely on the module path"],
        "verification": "`cargo test` passes.",
        "out_of_scope": ["Changing the password hashing"],
        "open_questions": []
    })
}

/// The model submits [`login_plan`] (OpenAI-compatible, call id `call_1`).
pub fn submit_login_plan() -> Reply {
    openai_call("call_1", "submit_plan", login_plan())
}

/// An Anthropic stream that only talks.
pub fn anthropic_text(text: &str) -> Reply {
    anthropic_text_ending(text, "end_turn")
}

/// The model saying step `step` is done (with `evidence` when given), as call `id`.
pub fn claims_done(id: &str, step: &str, evidence: Option<&str>) -> Reply {
    let mut arguments = json!({"id": step, "status": "done"});
    if let Some(evidence) = evidence {
        arguments["evidence"] = json!(evidence);
    }
    openai_call(id, "update_step", arguments)
}

/// The model writing `content` to `path` with `write_file`, as call `id`.
pub fn writes_file(id: &str, path: &str, content: &str) -> Reply {
    openai_call(id, "write_file", json!({"path": path, "content": content}))
}

/// One answer in which the model calls `run_command` with each of `arguments`, as calls
/// `call_0`, `call_1`, ...
pub fn run_command_calls(arguments: &[Value]) -> Reply {
    let ids: Vec<String> = (0..arguments.len()).map(|i| format!("call_{i}")).collect();
    let calls: Vec<(&str, &str, Value)> = ids
        .iter()
        .zip(arguments)
        .map(|(id, args)| (id.as_str(), "run_command", args.clone()))
        .collect();
    openai_calls(&calls)
}

/// The model asking the person `questions` with `ask_user`, as call `call_q`.
pub fn asks_user(questions: &Value) -> Reply {
    openai_call("call_q", "ask_user", json!({ "questions": questions }))
}
