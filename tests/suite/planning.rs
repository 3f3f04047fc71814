//! `tick plan "goal"` end to end: the real binary, a real git repository in a temp dir, and a
//! fake model server on 127.0.0.1 that streams scripted answers and records every request.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, RecordedRequest, Reply};
use crate::common::scripts::asks_user;
use crate::common::scripts::{
    anthropic_call, login_plan, openai_call, openai_calls, openai_text, submit_login_plan,
};
use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::planned_json;
use crate::common::workspace::plans_login;
use crate::common::workspace::plans_login_anthropic;
use crate::common::workspace::revised_login;
use crate::common::workspace::{
    Workspace, assert_success, interrupted_after, planned_without_a_call, scripted, stderr, stdout,
};

const WRITING_TOOLS: [&str; 4] = ["write_file", "edit_file", "bash", "update_step"];

fn assert_plan_mode_only(requests: &[RecordedRequest]) {
    for request in requests {
        let names = request.tool_names();
        assert!(!names.is_empty(), "tools are sent");
        for name in &names {
            assert!(
                !WRITING_TOOLS.contains(&name.as_str()),
                "plan mode offered `{name}`"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_planning_turn_ends_in_a_draft() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_call("call_1", "list_files", json!({})));
    server.push(openai_call(
        "call_2",
        "search_files",
        json!({"pattern": "fn login"}),
    ));
    server.push(openai_call(
        "call_3",
        "read_file",
        json!({"path": "src/login.rs"}),
    ));
    server.push(openai_call("call_4", "submit_plan", login_plan()));

    let output = project
        .tick_against(
            &server,
            &["plan", "Refactor the login module, keep the old API"],
        )
        .await;
    assert_success(&output);

    let draft = project.read(".tasks/draft/PLAN.md");
    insta::assert_snapshot!("planned_draft", draft);
    assert!(stderr(&output).contains("drafted `Refactor the login module` with 3 steps"));
    assert!(project.path(".tasks/draft/session.jsonl").exists());

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_plan_mode_only(&requests);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "test-model");
    // Each tool result goes back under the id of the call it answers.
    let results = requests[3].tool_results();
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    assert!(
        results[0].1.contains("src/"),
        "list_files result: {}",
        results[0].1
    );
    assert!(
        results[1].1.contains("src/login.rs:1:"),
        "search result: {}",
        results[1].1
    );
    assert!(
        results[2].1.contains("pub fn login"),
        "read result: {}",
        results[2].1
    );

    // The draft can be approved as it is.
    let output = project.tick_against(&server, &["approve"]).await;
    assert_success(&output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_tools_are_refused_while_planning() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_calls(&[
        (
            "call_w",
            "write_file",
            json!({"path": "pwned.txt", "content": "x"}),
        ),
        ("call_b", "bash", json!({"command": "touch pwned2.txt"})),
    ]));
    server.push(openai_call(
        "call_e",
        "edit_file",
        json!({"path": "src/login.rs", "old": "pub", "new": "priv"}),
    ));
    server.push(openai_call("call_p", "submit_plan", login_plan()));

    let requests = plans_login(&project, &server).await;
    project.assert_untouched_outside_tasks();
    assert_eq!(requests.len(), 3);
    assert_plan_mode_only(&requests);
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 2);
    for (_, content) in &results {
        assert_contains(content, "not available in plan mode");
    }
    assert!(
        requests[2].tool_results()[2]
            .1
            .contains("not available in plan mode")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_plan_goes_back_to_the_model() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let mut bad = login_plan();
    bad["steps"][0]["owner"] = json!("sam");
    server.push(openai_call("call_1", "submit_plan", bad));
    server.push(openai_call("call_2", "submit_plan", login_plan()));

    let requests = plans_login(&project, &server).await;
    assert_eq!(requests.len(), 2);
    let (id, content) = &requests[1].tool_results()[0];
    assert_eq!(id, "call_1");
    assert!(
        content.contains("owner"),
        "the error names the field: {content}"
    );
    assert!(project.read(".tasks/draft/PLAN.md").contains("## Steps"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_without_submit_plan_is_reminded_then_fails() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_text("Here is my plan: 1. do it. 2. test it."));
    server.push(openai_text("As I said: do it, then test it."));
    server.push(openai_text("Do it, then test it."));

    let output = project
        .tick_ends(&server, &["plan", "Refactor login"], 3)
        .await;
    let err = stderr(&output);
    assert_contains(&err, "without calling `submit_plan`");
    assert_contains(&err, "no draft was written");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]
            .last_user_text()
            .contains("Call `submit_plan` now")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_without_a_terminal_wait_for_answer() {
    let project = Workspace::sample();
    let first = asks_user(
        &json!([{"question": "Keep sessions in Redis or in the database?", "why": "both exist", "options": ["redis", "database"]}]),
    );
    let (output, server) = scripted(&project, [first], &["plan", "Move sessions"]).await;
    assert_success(&output);
    let draft = project.read(".tasks/draft/PLAN.md");
    assert_contains(&draft, "status: needs-input");
    assert_contains(
        &draft,
        "## Open questions\n\n- Keep sessions in Redis or in the database? (why: both exist) Options: redis / database.",
    );
    assert!(stderr(&output).contains("tick plan --answer"));

    // Approving is refused while questions are open.
    let output = project.tick_against(&server, &["approve"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("waiting for answers"));

    server.push(openai_call("call_p", "submit_plan", login_plan()));
    let output = project
        .tick_against(&server, &["plan", "--answer", "the database"])
        .await;
    assert_success(&output);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The conversation goes on: the question's call is answered, then the person's answer.
    assert_eq!(requests[1].tool_results()[0].0, "call_q");
    assert!(requests[1].last_user_text().contains("the database"));
    let draft = project.read(".tasks/draft/PLAN.md");
    assert!(draft.contains("status: draft"));
    assert!(draft.contains("goal: Move sessions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_at_a_terminal_are_asked_there() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(asks_user(&json!([{"question": "Which database?"}])));
    server.push(openai_call("call_p", "submit_plan", login_plan()));
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["plan", "Move sessions"]);
    cmd.env("TICK_INTERACTIVE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = cmd.spawn().unwrap();
        // The answer, then "keep for later" at the review menu.
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"Postgres\nk\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_success(&output);
    assert!(stderr(&output).contains("Which database?"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (id, content) = &requests[1].tool_results()[0];
    assert_eq!(id, "call_q");
    assert_contains(content, "A: Postgres");
    assert!(
        project
            .read(".tasks/draft/PLAN.md")
            .contains("status: draft")
    );
    assert!(
        stdout(&output).contains("draft: Refactor the login module"),
        "the menu shows the draft"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revise_continues_the_conversation_and_shows_the_step_diff() {
    let project = Workspace::sample();
    let (output, server) = revised_login(&project, &[]).await;
    assert_success(&output);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].tool_results()[0].0, "call_1");
    assert!(
        requests[1]
            .last_user_text()
            .contains("name the new module auth")
    );
    let diff = stdout(&output);
    assert_contains(&diff, "-S2 Move login into a module");
    assert_contains(&diff, "+S2 Move login into src/auth");
    assert!(
        project
            .read(".tasks/draft/PLAN.md")
            .contains("S2 Move login into src/auth")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_draft_is_not_replaced() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(submit_login_plan());
    assert_success(&project.tick_against(&server, &["plan", "one"]).await);
    let before = project.read(".tasks/draft/PLAN.md");
    let output = project.tick_against(&server, &["plan", "two"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("already waiting"));
    assert_eq!(project.read(".tasks/draft/PLAN.md"), before);
    assert_eq!(
        server.requests().len(),
        1,
        "no tokens spent on a plan that cannot land"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_after_the_given_time() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(
        Reply::json(
            429,
            &json!({"error": {"message": "slow down", "type": "rate_limit"}}),
        )
        .header("Retry-After", "1"),
    );
    server.push(submit_login_plan());
    let started = std::time::Instant::now();
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_key_is_not_retried() {
    let project = Workspace::sample();
    let first = Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided"}}),
    );
    let (output, server) = scripted(&project, [first], &["plan", "Refactor login"]).await;
    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert_contains(&err, "rejected the API key (HTTP 401)");
    assert_contains(&err, "Incorrect API key provided");
    assert_contains(&err, "`OPENAI_API_KEY`");
    assert_eq!(server.requests().len(), 1);
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_tool_call_runs_nothing() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let start = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"submit_plan\",\"arguments\":\"{\\\"title\\\": \\\"Half\"}}]},\"finish_reason\":null}]}\n\n";
    server
        .push(Reply::sse([start.to_owned(), "data: {\"choices\":[{\"ind".to_owned()]).cut_after(2));
    let output = project
        .tick_ends(&server, &["plan", "Refactor login"], 3)
        .await;
    assert_contains(&stderr(&output), "ended before the answer was complete");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_plans_the_same_way() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(anthropic_call(
        "toolu_1",
        "read_file",
        &json!({"path": "src/login.rs"}),
    ));
    server.push(anthropic_call("toolu_2", "submit_plan", &login_plan()));
    let requests = plans_login_anthropic(&project, &server).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/messages");
    let names: Vec<String> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"submit_plan".to_owned()));
    for name in &names {
        assert!(!WRITING_TOOLS.contains(&name.as_str()));
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(result["content"].to_string().contains("pub fn login"));
    assert_eq!(
        project
            .read(".tasks/draft/PLAN.md")
            .lines()
            .find(|l| l.starts_with("title:")),
        Some("title: Refactor the login module")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_progress_is_one_event_per_line() {
    let project = Workspace::sample();
    let first = openai_call("call_1", "read_file", json!({"path": "src/login.rs"}));
    let second = openai_call("call_2", "submit_plan", login_plan());
    let (events, _) = planned_json(&project, [first, second]).await;
    assert!(events.iter().any(|e| e["event"] == "tool_call"
        && e["name"] == "read_file"
        && e["detail"] == "src/login.rs"));
    let result = events.last().unwrap();
    assert_eq!(result["event"], "result");
    assert_eq!(result["exit_code"], 0);
    assert!(result["error"].is_null());
    let last = &events[events.len() - 2];
    assert_eq!(last["event"], "draft");
    assert_eq!(last["path"], ".tasks/draft/PLAN.md");
    assert_eq!(last["usage"]["input_tokens"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_model_configured_is_explained() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env_remove("TICK_MODEL");
        })
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert_contains(&stderr(&output), "it needs a model");
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_planning_leaves_no_draft() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_call("call_1", "list_files", json!({})));
    server.push(Reply::sse(["data: {\"choices\":[]}\n\n".to_owned()]).stall());
    let output = interrupted_after(
        project.command(&format!("{}/v1", server.url()), &["plan", "Refactor login"]),
        &server,
        2,
    )
    .await;
    assert!(!output.status.success());
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
    assert!(!project.path(".tasks/draft/session.jsonl").exists());
    // Nothing half-written was left for the next command to trip on.
    let output = project.tick_against(&server, &["status"]).await;
    assert_success(&output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_plan_file_is_named_as_given() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let output = project
        .tick_against(&server, &["plan", "--from", "nope.md"])
        .await;
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert_contains(&err, "error: there is no plan file `nope.md`");
    assert_contains(&err, "or `-` to read it from stdin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_planning_attempt_is_recorded_shown_and_checked_until_one_succeeds() {
    let project = Workspace::sample();
    let (_, server) = planned_without_a_call(&project, "I think the plan is obvious.").await;
    let record = project.read(".tasks/draft/last_attempt.yaml");
    assert_starts_with(
        &record,
        "at: 2026-11-30T14:30:12Z\ncause: the model stopped without calling `submit_plan`, even after 2 reminders\nhint: ",
    );
    assert_contains(&record, "changing the model is the likely fix");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());

    let output = project.tick_against(&server, &["status"]).await;
    let err = stderr(&output);
    assert_contains(
        &err,
        "warning: planning: the last attempt failed at 2026-11-30 14:30 UTC: the model stopped without calling `submit_plan`",
    );
    assert_contains(&err, "hint: what was wrong: Your answer has no tool call.");
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["plan_attempt"]["at"], "2026-11-30T14:30:12Z");

    let output = project.tick_ends(&server, &["check"], 14).await;
    let out = stdout(&output);
    assert_starts_with(
        &out,
        "draft: failed attempt: the last attempt failed at 2026-11-30 14:30 UTC",
    );
    assert!(!stderr(&output).contains("all clear"));

    // A plan that goes through clears the record.
    server.push(submit_login_plan());
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    assert!(!project.path(".tasks/draft/last_attempt.yaml").exists());
    project.tick_ends(&server, &["check"], 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_recorded_in_state_yaml_is_shown_by_status_and_check() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    project.write("plan.md", "# Greet\n\n## Steps\n- [ ] S1 Say hello\n");
    let output = project
        .tick_against(&server, &["plan", "--from", "plan.md"])
        .await;
    assert_success(&output);
    let output = project.tick_against(&server, &["approve"]).await;
    assert_success(&output);
    let id = project.task_id();
    let state = format!(".tasks/{id}/state.yaml");
    // What the runner's failure path writes (`tasks::state::record_failed_attempt`).
    let text = project.read(&state);
    project.write(
        &state,
        format!(
            "{text}last_attempt:\n  at: 2026-11-30T14:31:00Z\n  step: S1\n  cause: the model stopped without reporting the step\n  hint: changing the model is the likely fix\n"
        ),
    );
    let output = project.tick_against(&server, &["status"]).await;
    let err = stderr(&output);
    assert_contains(
        &err,
        "warning: the last attempt failed at `S1` at 2026-11-30 14:31 UTC: the model stopped without reporting the step",
    );
    assert_contains(&err, "hint: changing the model is the likely fix");
    let output = project.tick_against(&server, &["check", "--json"]).await;
    assert_eq!(output.status.code(), Some(14));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["findings"][0]["kind"], "failed_attempt");
    assert_eq!(json["findings"][0]["step"], "S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prose_of_a_hand_written_plan_becomes_its_summary_and_reaches_the_executor() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    project.write(
        "plan.md",
        "# Greet\n\nGreet people from the command line, in **French** too.\n\n## Steps\n- [ ] S1 Say hello\n  - files: hello.txt\n",
    );
    let output = project
        .tick_against(&server, &["plan", "--from", "plan.md"])
        .await;
    assert_success(&output);
    let draft = project.read(".tasks/draft/PLAN.md");
    assert_contains(
        &draft,
        "# Greet\n\n## Summary\n\nGreet people from the command line, in **French** too.\n\n## Steps\n",
    );
    let output = project.tick_against(&server, &["approve"]).await;
    assert_success(&output);
    let output = project.tick_against(&server, &["run", "--dry-run"]).await;
    assert_success(&output);
    let pack = stdout(&output);
    assert_contains(
        &pack,
        "## Summary\nGreet people from the command line, in **French** too.",
    );
    assert!(server.requests().is_empty());
}
