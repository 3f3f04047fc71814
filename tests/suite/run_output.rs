//! What `tick run` shows a person when its output is piped: one plain line per tool call,
//! and a failed verification with the last lines of its output.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::openai_call;
use crate::common::scripts::{claims_done, writes_file};
use crate::common::workspace::Workspace;

const PLAN: &str = "# Fail once

## Summary
A step whose verification fails.

## Steps
- [ ] S1 Write the file
  - files: out.txt
  - verify: `echo first-line; echo BOOM-the-reason; false`
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_runs_show_tool_calls_and_why_verification_failed() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    server.push(writes_file("w", "out.txt", "x\n"));
    server.push(claims_done("d", "S1", Some("wrote it")));
    server.push(openai_call(
        "b",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "it keeps failing"}),
    ));
    let output = project.tick_against(&server, &["run"]).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{err}");
    assert!(err.contains("-> write_file out.txt"), "{err}");
    assert!(err.contains("-> update_step"), "{err}");
    let failed = err
        .lines()
        .position(|l| l.contains("✗ S1"))
        .unwrap_or_else(|| panic!("no failed verification line: {err}"));
    let after: Vec<&str> = err.lines().skip(failed + 1).take(2).collect();
    assert_eq!(after, ["    first-line", "    BOOM-the-reason"], "{err}");
}
