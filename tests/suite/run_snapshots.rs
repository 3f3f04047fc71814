//! What `tick run` prints for a person, pinned by snapshots: a step verified and ticked, a
//! verification that fails and is then blocked, and a step the model blocks with a question.
//! Wording changes show up as reviewed snapshot diffs instead of scattered `contains` checks.
//! Durations, temp paths and the task id are filtered.

use std::process::Output;

use insta::assert_snapshot;
use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::plans::greet_plan;
use crate::common::scripts::openai_call;
use crate::common::workspace::Workspace;

/// The plan of every case: one step with a verification that reads the file it writes.
const PLAN: &str = greet_plan!("hello", "  - verify: `grep -q bye bye.txt`\n");

pub(super) fn transcript(project: &Workspace, output: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
    .replace(&project.root().display().to_string(), "[REPO]")
    .replace(&project.task_id(), "[TASK]")
}

pub(super) fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    // Wall-clock times of commands and of the run.
    settings.add_filter(r"\b\d+(\.\d+)?\s?(ms|s)\b", "[TIME]");
    settings.add_filter(r"\(pid \d+\)", "(pid [PID])");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[GIT_HEAD]");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn write(id: &str, path: &str, content: &str) -> crate::common::fake_model::Reply {
    openai_call(id, "write_file", json!({"path": path, "content": content}))
}

fn step(
    id: &str,
    step: &str,
    status: &str,
    extra: (&str, &str),
) -> crate::common::fake_model::Reply {
    let mut arguments = json!({"id": step, "status": status});
    arguments[extra.0] = json!(extra.1);
    openai_call(id, "update_step", arguments)
}

/// `plan` approved, and `tick run` of a model that writes each step's file and claims it done.
async fn both_steps_written(plan: &str) -> (Workspace, Output) {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, plan).await;
    server.push(write("w1", "hello.txt", "hello\n"));
    server.push(step("d1", "S1", "done", ("evidence", "wrote hello.txt")));
    server.push(write("w2", "bye.txt", "bye\n"));
    server.push(step("d2", "S2", "done", ("evidence", "wrote bye.txt")));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(0));
    (project, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_output_every_step_verified() {
    let (project, output) = both_steps_written(PLAN).await;
    settings().bind(|| assert_snapshot!("run_output_verified", transcript(&project, &output)));
}

/// issue 29: a verify that passed before the change passes whether or not the step is done.
/// S2's `test -d .` does: S2 is ticked on its change, and the run says it is not verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_output_a_verify_that_passed_before_the_change_is_not_verification() {
    const PLAN: &str = greet_plan!("hello", "  - verify: `test -d .`\n");
    let (project, output) = both_steps_written(PLAN).await;
    settings().bind(|| {
        assert_snapshot!("run_output_passed_before", transcript(&project, &output));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_output_verification_fails_then_blocks() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    server.push(write("w1", "hello.txt", "goodbye\n"));
    server.push(step("d1", "S1", "done", ("evidence", "wrote hello.txt")));
    server.push(step(
        "b1",
        "S1",
        "blocked",
        ("reason", "the greeting's wording is not settled"),
    ));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4));
    settings().bind(|| assert_snapshot!("run_output_verify_fails", transcript(&project, &output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_output_blocked_with_a_question() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    server.push(step(
        "b1",
        "S1",
        "blocked",
        ("reason", "should the greeting be in English or French?"),
    ));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4));
    settings().bind(|| assert_snapshot!("run_output_blocked", transcript(&project, &output)));
}
