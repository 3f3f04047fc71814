//! Models as they are: tool calls written as text (`tool_calls: text | auto`), reminders that
//! say what was wrong, and answers bounded in tokens and in time. The real binary plans in a
//! real git repository against the fake model server.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, RecordedRequest};
use crate::common::scripts::{
    anthropic_call, anthropic_text, anthropic_text_cut, login_plan, openai_call, openai_looping,
    openai_text, openai_text_cut, openai_text_pieces, submit_login_plan,
};
use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::login_planned;
use crate::common::workspace::plans_login;
use crate::common::workspace::plans_login_anthropic;
use crate::common::workspace::{
    Workspace, assert_success, planned, planned_without_a_call, stderr,
};

fn system(request: &RecordedRequest) -> String {
    request.messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn has_tools(request: &RecordedRequest) -> bool {
    request.body.get("tools").is_some()
}

fn config(project: &Workspace, yaml: &str) {
    project.write(".tasks/config.yaml", yaml);
}

fn tag_call(name: &str, arguments: &Value) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_mode_plans_from_calls_written_in_both_forms() {
    let project = Workspace::sample();
    config(&project, "tool_calls: text\n");
    let server = FakeModel::start().await;
    // A fenced call with the arguments as a one-element list, streamed 5 bytes at a time
    // (every SSE event split over two network chunks), with non-ASCII text around it.
    server.push(openai_text_pieces(
        "Zuerst schaue ich mir die Dateien an \u{2013} gerne:\n\n```json\n{\"name\": \"list_files\", \"arguments\": [ {\"path\": \"src\"} ]}\n```\n",
        5,
    ));
    // A `<tool_call>` block with the arguments as a JSON string.
    let plan = json!({"name": "submit_plan", "arguments": login_plan().to_string()});
    server.push(openai_text_pieces(
        &format!("Now the plan.\n<tool_call>\n{plan}\n</tool_call>"),
        7,
    ));

    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    assert!(
        project
            .read(".tasks/draft/PLAN.md")
            .contains("# Refactor the login module")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(!has_tools(request), "text mode sends no native tools");
        let system = system(request);
        assert_contains(&system, "## How to call tools");
        assert!(system.contains("\n### submit_plan\n"));
        assert!(
            !system.contains("### write_file"),
            "plan mode describes no build tool"
        );
        assert_eq!(request.body["max_tokens"], 8192);
    }
    // The result of the text call comes back as a user message holding the listing.
    let result = requests[1].last_user_text();
    assert_starts_with(&result, "<tool_result call=\"1\">");
    assert_contains(&result, "src/login.rs");
    // The transcript records the parsed calls as tool calls.
    let session = project.read(".tasks/draft/session.jsonl");
    let calls: Vec<String> = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(calls, ["list_files", "submit_plan"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_switches_to_text_after_one_text_call_and_notes_it_once() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_text(&format!(
        "Let me look.\n```json\n{}\n```",
        json!({"name": "read_file", "arguments": {"path": "src/login.rs"}})
    )));
    server.push(openai_text(&tag_call("list_files", &json!({}))));
    server.push(openai_text(&tag_call("submit_plan", &login_plan())));

    let requests = plans_login(&project, &server).await;
    assert_eq!(requests.len(), 3);
    assert!(has_tools(&requests[0]), "auto starts native");
    assert!(!system(&requests[0]).contains("## How to call tools"));
    for request in &requests[1..] {
        assert!(!has_tools(request), "then text");
        assert!(system(request).contains("## How to call tools"));
    }
    let notes = |request: &RecordedRequest| {
        request
            .user_texts()
            .iter()
            .filter(|t| t.starts_with("Note: you wrote the call to `read_file` as text"))
            .count()
    };
    assert_eq!(notes(&requests[1]), 1);
    assert_eq!(notes(&requests[2]), 1, "the note is given once");
    assert!(
        requests[1]
            .user_texts()
            .iter()
            .any(|t| t.contains("pub fn login")),
        "the text call was run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_call_to_a_build_tool_is_refused_while_planning() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_text(&format!(
        "{}\n{}",
        tag_call("write_file", &json!({"path": "pwned.txt", "content": "x"})),
        tag_call("bash", &json!({"command": "touch pwned2.txt"}))
    )));
    server.push(openai_text(&tag_call(
        "edit_file",
        &json!({"path": "src/login.rs", "old": "pub", "new": "priv"}),
    )));
    server.push(openai_text(&tag_call("submit_plan", &login_plan())));

    let requests = plans_login(&project, &server).await;
    project.assert_untouched_outside_tasks();
    let refusals = |request: &RecordedRequest| {
        request
            .user_texts()
            .iter()
            .filter(|t| t.starts_with("<tool_result") && t.contains("not available in plan mode"))
            .count()
    };
    assert_eq!(refusals(&requests[1]), 2);
    assert_eq!(refusals(&requests[2]), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_at_all_is_reminded_as_often_as_configured() {
    let project = Workspace::sample();
    let (output, server) =
        planned_without_a_call(&project, "Here is my plan: 1. do it. 2. test it.").await;
    let err = stderr(&output);
    assert_contains(
        &err,
        "without calling `submit_plan`, even after 2 reminders",
    );
    assert_contains(&err, "what was wrong: Your answer has no tool call.");
    assert_contains(&err, "changing the model is the likely fix");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let reminder = requests[1].last_user_text();
    assert_starts_with(
        &reminder,
        "Your answer has no tool call. Call `submit_plan` now",
    );
    assert_contains(
        &reminder,
        "A minimal valid call looks like this:\na tool call to `submit_plan`",
    );
    // In `auto` mode a model that cannot call tools natively is shown the text form too.
    assert_contains(
        &reminder,
        "If you cannot make tool calls, write the call in your answer instead, exactly like this:\n<tool_call>\n{\"arguments\":",
    );

    let project = Workspace::sample();
    config(&project, "limits:\n  max_reminders: 0\n");
    server.push(openai_text("Here is my plan."));
    let before = server.requests().len();
    project
        .tick_ends(&server, &["plan", "Refactor login"], 3)
        .await;
    assert_eq!(server.requests().len(), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_call_that_does_not_parse_is_reminded_with_the_parse_error() {
    let project = Workspace::sample();
    config(&project, "tool_calls: text\n");
    let first = openai_text(
        "The plan:\n<tool_call>\n{\"name\": \"submit_plan\", \"arguments\": {\"title\": }}\n</tool_call>",
    );
    let second = openai_text(&tag_call("submit_plan", &login_plan()));
    let requests = planned(&project, [first, second]).await;
    let reminder = requests[1].last_user_text();
    assert_starts_with(
        &reminder,
        "Your answer holds a tool call written as text that could not be read: the JSON at line 3, column ",
    );
    assert!(
        reminder.contains("<tool_call>\n{\"arguments\":{\"steps\":"),
        "the example is in the text form: {reminder}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_beside_a_good_call_that_are_no_calls_are_reported() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_text(&format!(
        "{}\n<tool_call>{{\"name\": \"read_file\", \"arguments\": {{\"path\": }}</tool_call>\n{}",
        tag_call("list_files", &json!({})),
        tag_call("open_file", &json!({"path": "a"}))
    )));
    server.push(submit_login_plan());
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    let texts = server.requests()[1].user_texts();
    let note = texts
        .iter()
        .find(|t| {
            t.starts_with(
                "Not run, because tick could not read them as calls: the JSON at line 4, column ",
            )
        })
        .unwrap_or_else(|| panic!("{texts:?}"));
    assert!(note.ends_with("; `open_file` is not a tool"), "{note}");
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("<tool_result call=\"1\">"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_call_to_an_unknown_tool_is_reminded_with_the_tools() {
    let project = Workspace::sample();
    let first = openai_text(&tag_call("make_plan", &json!({"title": "x"})));
    let requests = planned(&project, [first, submit_login_plan()]).await;
    let reminder = requests[1].last_user_text();
    assert_starts_with(
        &reminder,
        "You called `make_plan`, which is not a tool. The tools you have are: `read_file`, `list_files`, `search_files`, `run_command`, `submit_plan`, `ask_user`.",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_arguments_without_the_call_wrapper_are_named_in_the_reminder() {
    let project = Workspace::sample();
    let first = openai_text(&format!("```json\n{}\n```", login_plan()));
    let requests = planned(&project, [first, submit_login_plan()]).await;
    let reminder = requests[1].last_user_text();
    assert_starts_with(
        &reminder,
        "The JSON block in your answer looks like the arguments of `submit_plan`, but it is not a call",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_mode_does_not_run_text_calls_and_says_so() {
    let project = Workspace::sample();
    config(&project, "tool_calls: native\n");
    let first = openai_text(&tag_call("list_files", &json!({})));
    let requests = planned(&project, [first, submit_login_plan()]).await;
    assert!(has_tools(&requests[1]));
    let reminder = requests[1].last_user_text();
    assert_starts_with(
        &reminder,
        "You wrote a call to `list_files` as text. This conversation uses the API's tool calls",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_come_back_with_the_error_and_a_valid_example() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let mut bad = login_plan();
    bad.as_object_mut().unwrap().remove("summary");
    server.push(openai_call("call_1", "submit_plan", bad));
    server.push(openai_call("call_2", "submit_plan", login_plan()));
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    let (_, result) = server.requests()[1].tool_results().remove(0);
    assert_starts_with(
        &result,
        "invalid arguments for submit_plan: missing field `summary`",
    );
    assert_contains(
        &result,
        "A minimal valid call looks like this:\na tool call to `submit_plan`",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_limit_is_sent_on_both_providers() {
    let project = Workspace::sample();
    let server = login_planned(&project).await;
    assert_eq!(server.requests()[0].body["max_tokens"], 8192);

    let project = Workspace::sample();
    config(&project, "limits:\n  max_output_tokens: 1234\n");
    let server = FakeModel::start().await;
    server.push(anthropic_call("toolu_1", "submit_plan", &login_plan()));
    let requests = plans_login_anthropic(&project, &server).await;
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.body["max_tokens"], 1234);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_by_the_limit_is_reported_and_a_cut_text_call_never_runs() {
    let project = Workspace::sample();
    config(&project, "tool_calls: text\n");
    let server = FakeModel::start().await;
    // A complete-looking call in a cut answer: it may have been cut after its last byte
    // (more arguments, more calls), so it is not run.
    server.push(openai_text_cut(&tag_call(
        "write_file",
        &json!({"path": "x.txt", "content": "x"}),
    )));
    server.push(openai_text(&tag_call("submit_plan", &login_plan())));
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    let requests = server.requests();
    let note = requests[1].last_user_text();
    assert_starts_with(
        &note,
        "Your answer was cut off at the limit of 8192 output tokens and nothing in it was run. Answer again, shorter",
    );
    assert!(
        !requests[1]
            .user_texts()
            .iter()
            .any(|t| t.starts_with("<tool_result")),
        "nothing ran"
    );

    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(anthropic_text_cut("I will explain at length"));
    server.push(anthropic_call("toolu_1", "submit_plan", &login_plan()));
    let requests = plans_login_anthropic(&project, &server).await;
    let last = requests[1].messages().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Your answer was cut off at the limit of 8192 output tokens"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_streams_forever_is_stopped_by_the_answer_time_limit() {
    let project = Workspace::sample();
    config(
        &project,
        "limits:\n  answer_timeout_s: 1\n  idle_timeout_s: 30\n",
    );
    let server = FakeModel::start().await;
    server.push(openai_looping("la ", Duration::from_millis(20)));
    let started = Instant::now();
    let output = project.tick_against(&server, &["plan", "Sing"]).await;
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = stderr(&output);
    assert_contains(
        &err,
        "the answer was still streaming after 1s, the limit for one answer; it was stopped",
    );
    assert_contains(&err, "limits.answer_timeout_s");
    assert_eq!(server.requests().len(), 1, "not retried");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
}

/// A project with a one-step plan approved and committed, and the task's id.
async fn approved_greeting(server: &FakeModel, config_yaml: &str) -> (Workspace, String) {
    let project = Workspace::sample();
    config(&project, config_yaml);
    let id = project
        .approve_plan(
            server,
            "# Greeting\n\n## Steps\n- [ ] S1 Create greeting.txt\n  - files: greeting.txt\n  - verify: `grep -q hello greeting.txt`\n",
        )
        .await;
    (project, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_done_through_text_calls_is_verified_like_a_native_one() {
    let server = FakeModel::start().await;
    let (project, id) = approved_greeting(&server, "tool_calls: text\n").await;
    server.push(openai_text(&format!(
        "{}\n{}\n{}",
        tag_call("update_step", &json!({"id": "S1", "status": "in_progress"})),
        tag_call("submit_plan", &login_plan()),
        tag_call(
            "write_file",
            &json!({"path": "greeting.txt", "content": "hi\n"})
        )
    )));
    server.push(openai_text(&tag_call(
        "update_step",
        &json!({"id": "S1", "status": "done", "evidence": "wrote it"}),
    )));
    server.push(openai_text(&format!(
        "```json\n{}\n```\n<tool_call>{}</tool_call>",
        json!({"name": "write_file", "arguments": [{"path": "greeting.txt", "content": "hello\n"}]}),
        json!({"name": "update_step", "arguments": {"id": "S1", "status": "done", "evidence": "fixed"}})
    )));

    project.tick_ends(&server, &["run"], 0).await;
    assert_eq!(project.read("greeting.txt"), "hello\n");
    assert!(project.todo(&id).contains("- [x] S1 Create greeting.txt"));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(!has_tools(request));
        let system = system(request);
        assert_contains(&system, "\n### update_step\n");
        assert!(!system.contains("### submit_plan"), "{system}");
        assert_eq!(request.body["max_tokens"], 4096);
    }
    let results = requests[1].user_texts();
    assert!(
        results
            .iter()
            .any(|t| t.starts_with("<tool_result call=\"2\">")
                && t.contains("not available in build mode")),
        "{results:?}"
    );
    // The done claim with the wrong content failed its verification and went back.
    let failed = requests[2].last_user_text();
    assert_starts_with(&failed, "<tool_result call=\"4\">");
    assert_contains(&failed, "grep -q hello greeting.txt");
    let state: Value =
        serde_yaml::from_str(&project.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
    assert_eq!(state["steps"]["S1"]["evidence"][0]["exit_code"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_with_native_calls_keeps_its_tools_after_switching_to_text() {
    let project = Workspace::sample();
    let first = openai_call("call_1", "list_files", json!({}));
    let second = openai_text(&tag_call("read_file", &json!({"path": "src/login.rs"})));
    let third = openai_text(&tag_call("submit_plan", &login_plan()));
    let requests = planned(&project, [first, second, third]).await;
    assert_eq!(requests.len(), 3);
    // The history holds a native call: a request without tools would be refused by some APIs.
    assert!(has_tools(&requests[2]));
    assert!(system(&requests[2]).contains("## How to call tools"));
    let native = requests[2]
        .messages()
        .iter()
        .filter(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        .count();
    assert_eq!(native, 1, "only the native call is replayed as one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_calls_work_on_anthropic_too() {
    let project = Workspace::sample();
    config(&project, "tool_calls: text\n");
    let server = FakeModel::start().await;
    server.push(anthropic_text(&tag_call("list_files", &json!({}))));
    server.push(anthropic_text(&tag_call("submit_plan", &login_plan())));
    let requests = plans_login_anthropic(&project, &server).await;
    assert_eq!(requests.len(), 2);
    assert!(!has_tools(&requests[1]));
    assert!(
        requests[1].body["system"]
            .as_str()
            .unwrap()
            .contains("## How to call tools")
    );
    let last = requests[1].messages().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("<tool_result call=\"1\">"), "{last}");
    assert_contains(text, "src/login.rs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_that_is_not_running_is_named_quickly_with_what_set_its_url() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let url = server.url();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let dead = FakeModel::start().await;
    let output = project
        .tick_with(&dead, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_BASE_URL", format!("{url}/v1"));
        })
        .await;
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let err = stderr(&output);
    // The server is named with what set its URL, at once, before anything is written.
    assert_contains(
        &err,
        &format!("cannot connect to `{}`", url.trim_start_matches("http://")),
    );
    assert_contains(&err, "(environment `TICK_BASE_URL`)");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(!project.path(".tasks").exists(), "nothing is written");
}
