//! A stdio MCP server that crashes and is started again: the person is told at the moment,
//! while planning and in a step, before what the turn does next.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::{openai_call, openai_calls, submit_login_plan};
use crate::common::workspace::{Workspace, assert_success, stderr};
use crate::suite::mcp_client::config;

/// What the person saw, with the temporary paths out.
fn told(project: &Workspace, text: &str) -> String {
    text.replace(&project.root().display().to_string(), "[ROOT]")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_shows_a_crashed_server_stopping_and_starting_again() {
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    project.write_user_config(&config("[crash, search]", None));
    model.push(openai_call("c1", "mcp__t__crash", json!({})));
    model.push(openai_call("c2", "mcp__t__search", json!({"query": "q"})));
    model.push(openai_call("c3", "mcp__t__crash", json!({})));
    model.push(submit_login_plan());
    let output = project
        .tick_against(&model, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    insta::assert_snapshot!(told(&project, &stderr(&output)));
}

const NAMES_CRASH: &str = "# Greeting
## Summary
Greet people.
## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - tools: t.crash
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_shows_a_crashed_server_at_the_moment_before_the_rest_of_its_turn() {
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    project.write_user_config(&config("[]", None));
    project.approve_plan(&model, NAMES_CRASH).await;
    model.push(openai_calls(&[
        (
            "s1",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        ("c1", "mcp__t__crash", json!({})),
        (
            "w",
            "write_file",
            json!({"path": "greeting.txt", "content": "hello\n"}),
        ),
    ]));
    model.push(openai_call(
        "d",
        "update_step",
        json!({"id": "S1", "status": "done", "evidence": "wrote it"}),
    ));
    let output = project.tick_against(&model, &["run"]).await;
    assert_success(&output);
    // The warning comes right after the crashing call, before `write_file` of the same turn.
    insta::assert_snapshot!(told(&project, &stderr(&output)));
}
