//! `run_command` during `tick run`: the build registry offers it, it runs under the build
//! policy, and its `cwd` is honoured there as in plan mode.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::project::Project;
use crate::common::scripts::openai_call;

const PLAN: &str = "# Look around

## Summary
Read, then stop.

## Steps
- [ ] S1 Look in sub
  - files: sub/a.txt
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_runs_in_its_cwd_during_a_run() {
    let server = FakeModel::start().await;
    let project = Project::new();
    project.write("sub/a.txt", "hello\n");
    project.write("plan.md", PLAN);
    assert!(
        project
            .tick(&server, &["plan", "--from", "plan.md"])
            .await
            .status
            .success()
    );
    assert!(project.tick(&server, &["approve"]).await.status.success());
    server.push(openai_call(
        "look",
        "run_command",
        json!({"argv": ["ls", "-1"], "cwd": "sub"}),
    ));
    server.push(openai_call(
        "block",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "looked"}),
    ));
    let output = project.tick(&server, &["run"]).await;
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    let offered: Vec<String> = requests[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(offered.iter().any(|n| n == "run_command"), "{offered:?}");
    let result = requests
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "look")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(result.starts_with("a.txt\n"), "{result}");
}
