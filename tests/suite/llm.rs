//! The model client against a real loopback HTTP server: what it sends, how it reads
//! streams, and how it behaves when the provider misbehaves.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tick::llm::{
    Client, ClientConfig, FinishReason, LlmError, Message, ProviderKind, Request, Response,
    StreamEvent, ToolCall, ToolSpec,
};

use crate::common::fake_model::{FakeModel, Reply};

fn config(kind: ProviderKind, base_url: String) -> ClientConfig {
    ClientConfig {
        api_key: Some("test-key".into()),
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        max_retries: 3,
        retry_base_delay: Duration::from_millis(10),
        retry_max_delay: Duration::from_secs(2),
        ..ClientConfig::new(kind, base_url)
    }
}

fn openai_client(server: &FakeModel) -> Client {
    Client::new(config(ProviderKind::OpenAi, format!("{}/v1", server.url()))).unwrap()
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the workspace".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "test-model".into(),
        system: Some("You plan before you act.".into()),
        messages,
        tools: vec![read_file_tool()],
        max_tokens: Some(256),
        temperature: None,
        structured: None,
        grammar: None,
    }
}

/// Runs one call, collecting what reached the sink.
async fn complete(
    client: &Client,
    req: &Request,
) -> (Vec<StreamEvent>, Result<Response, LlmError>) {
    let mut events = Vec::new();
    let result = client.complete(req, &mut |e| events.push(e)).await;
    (events, result)
}

fn data(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

fn text_chunk(text: &str) -> String {
    data(&json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}))
}

fn finish_chunk(reason: &str) -> String {
    data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

/// A tool call whose arguments arrive in three fragments, the stream itself split at awkward
/// places (inside an event, inside a UTF-8 character).
fn tool_call_stream() -> Vec<Vec<u8>> {
    let events = [
        data(
            &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": ""}}
        ]}, "finish_reason": null}]}),
        ),
        data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "{\"path\": "}}
        ]}, "finish_reason": null}]})),
        data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "\"docs/说明🦀.md\"}"}}
        ]}, "finish_reason": null}]})),
        finish_chunk("tool_calls"),
        data(&json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 20}})),
        "data: [DONE]\n\n".to_owned(),
    ];
    let all = events.concat().into_bytes();
    let crab = all.windows(4).position(|w| w == "🦀".as_bytes()).unwrap();
    let mut cuts = vec![0, 17, 180, crab + 2, all.len() - 30, all.len()];
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| all[w[0]..w[1]].to_vec()).collect()
}

#[tokio::test]
async fn streamed_tool_call_round_trip() {
    let server = FakeModel::start().await;
    server.push(Reply::sse(tool_call_stream()));
    server.push(Reply::sse([
        text_chunk("The file says "),
        text_chunk("hello."),
        finish_chunk("stop"),
        "data: [DONE]\n\n".to_owned(),
    ]));
    let client = openai_client(&server);

    let first = request(vec![Message::user("What does the doc say?")]);
    let (events, result) = complete(&client, &first).await;
    let response = result.unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_7".into(),
            name: "read_file".into(),
            arguments: json!({"path": "docs/说明🦀.md"}),
            arguments_error: None,
        }]
    );
    assert_eq!(response.usage.input_tokens, 50);
    assert_eq!(
        events[0],
        StreamEvent::ToolCallStarted {
            id: "call_7".into(),
            name: "read_file".into()
        }
    );

    let mut messages = first.messages.clone();
    messages.push(Message::Assistant {
        text: response.text.clone(),
        tool_calls: response.tool_calls.clone(),
    });
    messages.push(Message::tool_result("call_7", "hello"));
    let (_, result) = complete(&client, &request(messages)).await;
    assert_eq!(result.unwrap().text, "The file says hello.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer test-key"));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], json!("test-model"));
    assert_eq!(
        sent.body["tools"][0]["function"]["name"],
        json!("read_file")
    );
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "You plan before you act."})
    );

    let replay = &requests[1].body["messages"];
    assert_eq!(
        replay[2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"path\":\"docs/说明🦀.md\"}")
    );
    assert_eq!(
        replay[3],
        json!({"role": "tool", "tool_call_id": "call_7", "content": "hello"})
    );
}

#[tokio::test]
async fn the_future_can_be_spawned() {
    let server = FakeModel::start().await;
    server.push(Reply::sse([text_chunk("ok"), finish_chunk("stop")]));
    let client = openai_client(&server);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = Arc::clone(&seen);
    let handle = tokio::spawn(async move {
        let req = request(vec![Message::user("hi")]);
        client
            .complete(&req, &mut |e| sink_seen.lock().unwrap().push(e))
            .await
    });
    // The server closed right after `finish_reason` without `[DONE]`: still a whole answer.
    assert_eq!(handle.await.unwrap().unwrap().text, "ok");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![StreamEvent::TextDelta("ok".into())]
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_waited_out_then_retried() {
    let server = FakeModel::start().await;
    server.push(
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "1"),
    );
    server.push(Reply::sse([
        text_chunk("done"),
        finish_chunk("stop"),
        "data: [DONE]\n\n".into(),
    ]));
    let client = openai_client(&server);

    let started = Instant::now();
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert_eq!(result.unwrap().text, "done");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited only {:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let server = FakeModel::start().await;
    for _ in 0..10 {
        server.push(Reply::json(
            500,
            &json!({"error": {"code": 500, "message": "Failed to parse input", "type": "server_error"}}),
        ));
    }
    let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
    config.max_retries = 2;
    let client = Client::new(config).unwrap();

    let (events, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let err = result.unwrap_err();
    // No answer, but each retry is told before its wait.
    let retries: Vec<(u32, u32)> = events
        .iter()
        .map(|event| match event {
            StreamEvent::Retrying {
                attempt,
                of,
                reason,
                ..
            } => {
                assert!(reason.contains("Failed to parse input"), "{reason}");
                (*attempt, *of)
            }
            other => panic!("not a retry: {other:?}"),
        })
        .collect();
    assert_eq!(retries, [(2, 3), (3, 3)]);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        err.to_string(),
        "the provider failed (HTTP 500) after 3 attempts: Failed to parse input"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_the_key_variable() {
    let server = FakeModel::start().await;
    server.push(Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
    ));
    server.push(Reply::sse([text_chunk("never"), finish_chunk("stop")]));
    let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
    config.api_key_env = "DEEPSEEK_API_KEY".into();
    let client = Client::new(config).unwrap();

    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let err = result.unwrap_err();
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        err.to_string(),
        "the provider rejected the API key (HTTP 401): Incorrect API key provided"
    );
    assert!(err.hint().unwrap().contains("`DEEPSEEK_API_KEY`"));
}

#[tokio::test]
async fn exhausted_quota_is_not_retried() {
    let server = FakeModel::start().await;
    server.push(Reply::json(
        429,
        &json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}),
    ));
    let client = openai_client(&server);
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert!(matches!(result, Err(LlmError::QuotaExhausted { .. })));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_returns_no_call_and_is_not_resent() {
    let server = FakeModel::start().await;
    server.push(Reply::sse(tool_call_stream()).cut_after(3));
    server.push(Reply::sse(tool_call_stream()));
    let client = openai_client(&server);

    let (events, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert!(!events.is_empty(), "part of the answer reached the sink");
    let err = result.unwrap_err();
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_eq!(
        server.requests().len(),
        1,
        "never resend after part of an answer was used"
    );
}

#[tokio::test]
async fn a_stream_cut_before_any_answer_is_retried() {
    let server = FakeModel::start().await;
    server.push(Reply::sse([": OPENROUTER PROCESSING\n\n"]).cut_after(1));
    server.push(Reply::sse(tool_call_stream()));
    let client = openai_client(&server);

    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert_eq!(result.unwrap().tool_calls.len(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let server = FakeModel::start().await;
    server.push(Reply::sse([text_chunk("thinking about")]).stall());
    let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
    config.idle_timeout = Duration::from_millis(300);
    let client = Client::new(config).unwrap();

    let started = Instant::now();
    let (events, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        LlmError::IdleTimeout {
            after: Duration::from_millis(300)
        }
    );
    assert_eq!(
        err.to_string(),
        "the provider sent nothing for 0.3s; gave up waiting"
    );
    assert_eq!(
        events,
        vec![StreamEvent::TextDelta("thinking about".into())]
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_idle_timeout_without_a_retry() {
    let server = FakeModel::start().await;
    server.push(Reply::silent());
    server.push(Reply::sse([text_chunk("too late"), finish_chunk("stop")]));
    let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
    config.idle_timeout = Duration::from_millis(300);
    let client = Client::new(config).unwrap();

    let (events, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert!(
        matches!(result, Err(LlmError::IdleTimeout { .. })),
        "{result:?}"
    );
    assert!(events.is_empty());
    // A retry would sit through the same silence (a long prompt, a model loading) again.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn keep_alives_and_slow_chunks_do_not_trip_the_idle_timeout() {
    let server = FakeModel::start().await;
    server.push(
        Reply::sse([": ping\n\n"])
            .delay(Duration::from_millis(200))
            .chunk(": ping\n\n")
            .delay(Duration::from_millis(200))
            .chunk(text_chunk("slow but alive"))
            .chunk(finish_chunk("stop")),
    );
    let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
    config.idle_timeout = Duration::from_millis(350);
    let client = Client::new(config).unwrap();
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    assert_eq!(result.unwrap().text, "slow but alive");
}

#[tokio::test]
async fn an_error_inside_a_200_stream_is_an_error() {
    let server = FakeModel::start().await;
    server.push(Reply::sse([
        text_chunk("Let me"),
        data(&json!({"error": {"message": "Provider returned error", "code": "context_length_exceeded"}})),
        "data: [DONE]\n\n".to_owned(),
    ]));
    let client = openai_client(&server);
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, LlmError::InStream { code: Some(c), .. } if c == "context_length_exceeded"),
        "{err:?}"
    );
    assert!(err.to_string().contains("Provider returned error"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error_after_bounded_retries() {
    let server = FakeModel::start().await;
    let url = server.url();
    drop(server);
    // Give the aborted accept loop a moment to release the port.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut config = config(ProviderKind::OpenAi, format!("{url}/v1"));
    config.max_retries = 1;
    let client = Client::new(config).unwrap();
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, LlmError::Connect { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(err.hint().unwrap().contains("`base_url`"));
}

fn anthropic_event(value: &Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap()
    )
}

#[tokio::test]
async fn anthropic_streaming_with_a_tool_use() {
    let server = FakeModel::start().await;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 31, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me read it."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " \"README.md\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 17}}),
        json!({"type": "message_stop"}),
    ];
    server.push(Reply::sse(events.iter().map(anthropic_event)));
    let client = Client::new(config(ProviderKind::Anthropic, server.url())).unwrap();

    let req = request(vec![
        Message::user("Read the readme"),
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "gone.md"}),
                arguments_error: None,
            }],
        },
        Message::tool_error("toolu_1", "`gone.md` does not exist"),
    ]);
    let (events, result) = complete(&client, &req).await;
    let response = result.unwrap();
    assert_eq!(response.text, "Let me read it.");
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls[0].id, "toolu_9");
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"path": "README.md"})
    );
    assert_eq!(response.usage.input_tokens, 31);
    assert_eq!(response.usage.output_tokens, 17);
    assert!(events.contains(&StreamEvent::TextDelta("Let me read it.".into())));

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["max_tokens"], json!(256));
    assert_eq!(sent.body["system"], json!("You plan before you act."));
    assert_eq!(
        sent.body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    assert_eq!(
        sent.body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "`gone.md` does not exist", "is_error": true}
        ]})
    );
}

#[tokio::test]
async fn anthropic_overloaded_before_any_answer_is_retried() {
    let server = FakeModel::start().await;
    server.push(Reply::sse([anthropic_event(
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )]));
    server.push(Reply::sse(
        [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
            json!({"type": "message_stop"}),
        ]
        .iter()
        .map(anthropic_event),
    ));
    let client = Client::new(config(ProviderKind::Anthropic, server.url())).unwrap();
    let (_, result) = complete(&client, &request(vec![Message::user("hi")])).await;
    let response = result.unwrap();
    assert_eq!(response.text, "hi");
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(server.requests().len(), 2);
}

mod pooled_connections {
    //! The client's pooled connections across a thread's model calls (planning's turns and a
    //! run's steps), against a server that keeps connections open and closes idle ones.
    use super::*;

    /// A keep-alive server that closes a connection idle for `idle`, on a runtime of its own
    /// so it keeps serving between tick's calls.
    fn keep_alive_server(idle: Duration, answers: usize) -> (FakeModel, tokio::runtime::Runtime) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(FakeModel::start_keep_alive(idle));
        for n in 0..answers {
            server.push(crate::common::scripts::openai_text(&format!("answer {n}")));
        }
        (server, runtime)
    }

    fn client(server: &FakeModel, pool_idle: Option<Duration>) -> Client {
        let mut config = config(ProviderKind::OpenAi, format!("{}/v1", server.url()));
        config.pool_idle = pool_idle;
        Client::new(config).unwrap()
    }

    /// One model call the way tick makes them (`tick::rt::block_on` on this thread); its
    /// answer and the retries it announced.
    fn ask(client: &Client) -> (String, Vec<String>) {
        let mut retries = Vec::new();
        let response = tick::rt::block_on(client.complete(
            &request(vec![Message::user("hello")]),
            &mut |event| {
                if let StreamEvent::Retrying { reason, .. } = event {
                    retries.push(reason);
                }
            },
        ))
        .unwrap()
        .unwrap();
        (response.text, retries)
    }

    #[test]
    fn a_threads_model_calls_share_one_connection() {
        let (server, _runtime) = keep_alive_server(Duration::from_secs(30), 4);
        let client = client(&server, None);
        for n in 0..4 {
            assert_eq!(ask(&client), (format!("answer {n}"), vec![]));
        }
        // A runtime per call dropped each connection's task with it: 4 connections.
        assert_eq!(server.connections(), 1);
    }

    #[test]
    fn a_connection_idle_longer_than_the_pool_keeps_it_is_not_reused() {
        let (server, _runtime) = keep_alive_server(Duration::from_millis(300), 2);
        let client = client(&server, Some(Duration::from_millis(100)));
        assert_eq!(ask(&client), ("answer 0".to_owned(), vec![]));
        // The server closes the connection while nothing polls it (a step's commands run).
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(ask(&client), ("answer 1".to_owned(), vec![]));
        assert_eq!(server.connections(), 2);
    }

    #[test]
    fn a_pooled_connection_the_server_closed_is_asked_again_at_once() {
        let (server, _runtime) = keep_alive_server(Duration::from_millis(300), 2);
        let client = client(&server, Some(Duration::from_secs(60)));
        assert_eq!(ask(&client), ("answer 0".to_owned(), vec![]));
        std::thread::sleep(Duration::from_millis(600));
        // Was: "connection closed before message completed; asking again in 1.1 s".
        assert_eq!(ask(&client), ("answer 1".to_owned(), vec![]));
        assert_eq!(server.requests().len(), 2);
    }
}
