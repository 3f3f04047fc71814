//! `run_command` during `tick run`: the build registry offers it, it runs under the build
//! policy, and its `cwd` is honoured there as in plan mode.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::openai_call;
use crate::common::scripts::{claims_done, writes_file};
use crate::common::workspace::Workspace;
use crate::common::workspace::assert_success;

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
    let project = Workspace::sample();
    project.write("sub/a.txt", "hello\n");
    project.approve_plan(&server, PLAN).await;
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
    let output = project.tick_against(&server, &["run"]).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_with_commit_steps_commits_each_verified_step() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.write(
        "plan.md",
        "# One file\n\n## Summary\nWrite it.\n\n## Steps\n- [ ] S1 Write it\n  - files: out.txt\n  - verify: `test -f out.txt`\n",
    );
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "start"]);
    assert_success(
        &project
            .tick_against(&server, &["plan", "--from", "plan.md"])
            .await,
    );
    let approve = project
        .tick_against(&server, &["approve", "--commit-steps"])
        .await;
    assert!(approve.status.success());
    server.push(writes_file("w", "out.txt", "x\n"));
    server.push(claims_done("d", "S1", Some("wrote it")));
    // No `--commit` on the command line: the approved contract asks for it.
    let output = project.tick_against(&server, &["run"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let log = project.git(&["log", "-1", "--format=%B", "--name-only"]);
    assert!(log.contains("Step: S1"), "{log}");
    assert!(log.contains("out.txt"), "{log}");
}
