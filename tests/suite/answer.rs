//! Blocked is not the end: `tick answer` lifts a block with the person's answer, the next run
//! works on the step with the question and the answer in its prompt, and `tick log` tells
//! the story in order.

use serde_json::json;

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::plans::greet_plan;
use crate::common::scripts::openai_call;
use crate::common::scripts::{claims_done, writes_file};
use crate::common::workspace::{Workspace, stderr};

const PLAN: &str = greet_plan!("bonjour", "");

const QUESTION: &str = "should the greeting be in English or French?";

fn block(step: &str, reason: &str) -> Reply {
    openai_call(
        "b",
        "update_step",
        json!({"id": step, "status": "blocked", "reason": reason}),
    )
}

fn done(step: &str) -> Reply {
    claims_done("d", step, Some("wrote it"))
}

fn write(path: &str, content: &str) -> Reply {
    writes_file("w", path, content)
}

/// `tick` at the instant `now` (commands of one test happen at different times).
async fn tick_at(
    project: &Workspace,
    server: &FakeModel,
    now: &str,
    args: &[&str],
    code: i32,
) -> std::process::Output {
    let now = now.to_owned();
    let output = project
        .tick_with(server, args, move |cmd| {
            cmd.env("TICK_NOW", now);
        })
        .await;
    assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
    output
}

/// A task whose S1 the model blocked with [`QUESTION`].
async fn blocked_task(server: &FakeModel) -> (Workspace, String) {
    let project = Workspace::sample();
    let id = project.approve_plan(server, PLAN).await;
    server.push(block("S1", QUESTION));
    tick_at(&project, server, "2026-11-30T15:00:00Z", &["run"], 4).await;
    (project, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_block_goes_on_with_the_answer_in_the_prompt() {
    let server = FakeModel::start().await;
    let (project, id) = blocked_task(&server).await;
    let todo = format!(".tasks/{id}/TODO.md");

    let output = tick_at(
        &project,
        &server,
        "2026-11-30T15:05:00Z",
        &["answer", "S1", "French: write bonjour"],
        0,
    )
    .await;
    let text = project.read(&todo);
    assert!(text.contains("- [ ] S1 Write the greeting\n"), "{text}");
    assert!(
        text.contains("  - answer: French: write bonjour\n"),
        "{text}"
    );
    assert!(!text.contains("blocked:"), "{text}");
    assert!(
        stderr(&output).contains("`S1` answered and pending again"),
        "{}",
        stderr(&output)
    );
    let state = project.read(&format!(".tasks/{id}/state.yaml"));
    assert!(
        state.contains(QUESTION) && state.contains("French: write bonjour"),
        "{state}"
    );

    let before = server.requests().len();
    server.push(write("hello.txt", "bonjour\n"));
    server.push(done("S1"));
    server.push(write("bye.txt", "au revoir\n"));
    server.push(done("S2"));
    tick_at(&project, &server, "2026-11-30T15:10:00Z", &["run"], 0).await;
    let prompt = server.requests()[before].user_texts().join("\n");
    assert!(
        prompt.contains(&format!("It stopped on: {QUESTION}")),
        "{prompt}"
    );
    assert!(
        prompt.contains("The person's answer (follow it): French: write bonjour"),
        "{prompt}"
    );
    let text = project.read(&todo);
    assert!(text.contains("- [x] S1 Write the greeting\n"), "{text}");
    // The answer stays with the step: it is why the step reads as it does.
    assert!(
        text.contains("  - answer: French: write bonjour\n"),
        "{text}"
    );

    let log = tick_at(&project, &server, "2026-11-30T15:20:00Z", &["log"], 0).await;
    let log = String::from_utf8_lossy(&log.stdout).replace(&id, "[TASK]");
    insta::assert_snapshot!("log_block_answer_done", log);

    let json = tick_at(
        &project,
        &server,
        "2026-11-30T15:20:00Z",
        &["log", "--json"],
        0,
    )
    .await;
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["format"], 1);
    let kinds: Vec<&str> = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    let answered = kinds.iter().position(|k| *k == "answered").unwrap();
    let approved = kinds.iter().position(|k| *k == "approved").unwrap();
    let done = kinds.iter().position(|k| *k == "done").unwrap();
    assert!(approved < answered && answered < done, "{kinds:?}");
    // Every key is present: a task's own event has `step: null`.
    for event in json["events"].as_array().unwrap() {
        assert!(event.get("step").is_some(), "{event}");
    }
    assert_eq!(json["events"][approved]["step"], serde_json::Value::Null);
}

/// Lifts the block on S1 by hand (`tick mark S1 pending`), runs again (S1 blocks once more)
/// and returns the prompt S1 was run with.
async fn next_prompt_after_lifting_by_hand(project: &Workspace, server: &FakeModel) -> String {
    tick_at(
        project,
        server,
        "2026-11-30T15:05:00Z",
        &["mark", "S1", "pending"],
        0,
    )
    .await;
    let before = server.requests().len();
    server.push(block("S1", "still unsure"));
    tick_at(project, server, "2026-11-30T15:10:00Z", &["run"], 4).await;
    server.requests()[before].user_texts().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_lifted_by_hand_still_reaches_the_next_prompt() {
    let server = FakeModel::start().await;
    let (project, _id) = blocked_task(&server).await;
    let prompt = next_prompt_after_lifting_by_hand(&project, &server).await;
    assert!(
        prompt.contains(&format!("It stopped on: {QUESTION}")),
        "{prompt}"
    );
    assert!(prompt.contains("without an answer"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_a_step_that_is_not_blocked_changes_nothing() {
    let server = FakeModel::start().await;
    let (project, id) = blocked_task(&server).await;
    let todo = format!(".tasks/{id}/TODO.md");
    let state = format!(".tasks/{id}/state.yaml");
    let (todo_before, state_before) = (project.read(&todo), project.read(&state));
    let output = tick_at(
        &project,
        &server,
        "2026-11-30T15:05:00Z",
        &["answer", "S2", "x"],
        2,
    )
    .await;
    let err = stderr(&output);
    assert!(err.contains("`S2` is not blocked (it is pending)"), "{err}");
    assert!(err.contains("blocked: `S1`; nothing was changed"), "{err}");
    tick_at(
        &project,
        &server,
        "2026-11-30T15:05:00Z",
        &["answer", "S9", "x"],
        2,
    )
    .await;
    tick_at(
        &project,
        &server,
        "2026-11-30T15:05:00Z",
        &["answer", "S1", "  "],
        2,
    )
    .await;
    assert_eq!(project.read(&todo), todo_before);
    assert_eq!(project.read(&state), state_before);
}

/// A note the person writes under the blocked step in TODO.md reaches the step's next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_under_a_blocked_step_reaches_the_next_prompt() {
    let server = FakeModel::start().await;
    let (project, id) = blocked_task(&server).await;
    let todo_path = format!(".tasks/{id}/TODO.md");
    let todo = project.read(&todo_path);
    let blocked_line = format!("  - blocked: {QUESTION}\n");
    assert!(todo.contains(&blocked_line), "{todo}");
    project.write(
        &todo_path,
        todo.replacen(
            &blocked_line,
            &format!("{blocked_line}  - use French, the customers are in Lyon\n"),
            1,
        ),
    );
    let prompt = next_prompt_after_lifting_by_hand(&project, &server).await;
    assert!(
        prompt.contains("use French, the customers are in Lyon"),
        "{prompt}"
    );
}
