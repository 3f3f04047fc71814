//! A model that submits the example from tick's reminder has not planned anything: the call
//! is refused, and a real plan afterwards is taken.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::openai_call;
use crate::common::workspace::Workspace;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reminders_example_submitted_as_is_is_refused() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let example = json!({
        "title": "Short title",
        "summary": "What the plan does and why.",
        "steps": [{"title": "First step", "files": ["src/main.rs"], "verify": ["cargo test"]}]
    });
    server.push(openai_call("copy", "submit_plan", example));
    server.push(openai_call(
        "real",
        "submit_plan",
        json!({
            "title": "Add a greeting",
            "summary": "Print hello.",
            "steps": [{"title": "Print hello in main", "files": ["src/main.rs"]}]
        }),
    ));
    let output = project
        .tick_against(&server, &["plan", "Add a greeting"])
        .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    let refused = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "copy")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(
        refused.contains("the example from tick's reminder"),
        "{refused}"
    );
    let draft = project.read(".tasks/draft/PLAN.md");
    assert!(draft.contains("Add a greeting"), "{draft}");
    assert!(!draft.contains("Short title"), "{draft}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_with_a_field_changed_is_still_the_example() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_call(
        "copy",
        "submit_plan",
        json!({
            "title": "Short title",
            "summary": "Add the flag.",
            "steps": [
                {"title": "Parse the flag", "files": ["src/main.rs"]},
                {"title": "Print it", "files": ["src/main.rs"]}
            ]
        }),
    ));
    server.push(openai_call(
        "real",
        "submit_plan",
        json!({
            "title": "Add a --version flag",
            "summary": "Parse and print it.",
            "steps": [{"title": "Parse the flag", "files": ["src/main.rs"]}]
        }),
    ));
    let output = project
        .tick_against(&server, &["plan", "Add a --version flag"])
        .await;
    assert!(output.status.success());
    let draft = project.read(".tasks/draft/PLAN.md");
    assert!(draft.contains("Add a --version flag"), "{draft}");
    assert!(!draft.contains("Short title"), "{draft}");
}
