//! `tick mcp serve` shows the person's hooks on stderr, never on stdout: stdout is the MCP
//! protocol's channel, so a hook's line or `systemMessage` there would break the client.
//! A real rmcp client drives the real binary; its stderr goes to a file the test reads.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use super::mcp_serve::PLAN;
use crate::common::workspace::Workspace;

const HOOKS: &str = r#"hooks:
  - event: step.claimed
    command: echo claimed >&2
  - event: step.done
    command: printf '{"systemMessage":"S1 is done, the greeting says hello"}'
"#;

/// The file's text once it holds `wanted`, or as it is after 10 s.
fn read_when(path: &std::path::Path, wanted: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(wanted) || start.elapsed() > Duration::from_secs(10) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serves_hook_lines_and_system_message_go_to_stderr_and_stdout_stays_the_protocol() {
    let ws = Workspace::new();
    ws.write_user_config(HOOKS);
    ws.approve(PLAN);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = tokio::process::Command::from(ws.tick_process());
    cmd.args(["mcp", "serve"]);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap()
        .0;
    // Every message on stdout is parsed by the client as protocol: a stray line there fails
    // the calls below.
    let client = ().serve(transport).await.unwrap();
    for (tool, args) in [
        ("claim_step", json!({"step": "S1"})),
        ("report_done", json!({"step": "S1"})),
    ] {
        if tool == "report_done" {
            ws.write("greeting.txt", "hello\n");
        }
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        let result = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    }
    client.cancel().await.unwrap();

    let stderr = read_when(log.path(), "hook: S1 is done");
    let time = regex::Regex::new(r"in \d+\.\ds").unwrap();
    insta::assert_snapshot!(time.replace_all(stderr.trim_end(), "in [TIME]"), @r#"
    S1 hook step.claimed `echo claimed >&2` exit 0 in [TIME]
    S1 hook step.done `printf '{"systemMessage":"S1 is done, the greeting says hello"}'` exit 0 in [TIME]
    hook: S1 is done, the greeting says hello
    "#);
}
