//! Files a clone can ship and files the agent writes: a hostile `runs/tx.json` (a FIFO, a link
//! to `/dev/zero`) costs nothing to read, a tool write cannot be raced out of the workspace
//! or into `.tasks/`, secrets in file names are not recorded, and a tool call's arguments
//! stop growing at the write cap while they stream.

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use crate::common::scripts::claims_done;
use crate::common::workspace::{PLAN, Workspace};

/// Generous: each of these takes milliseconds; before the fix they never ended.
const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `tick args...` with stdin closed and returns its exit code and its stdout and stderr
/// together; fails the test (killing tick) after [`DEADLINE`].
fn run_bounded(ws: &Workspace, args: &[&str]) -> (i32, String) {
    let run = ws.run_bounded(args, DEADLINE);
    (run.code, format!("{}{}", run.stdout, run.stderr))
}

/// An approved task whose `runs/tx.json` is replaced by what `plant` makes at the path given.
fn with_hostile_tx(plant: impl FnOnce(&std::path::Path)) -> (Workspace, String) {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let runs = ws.path(&format!(".tasks/{id}/runs"));
    fs::create_dir_all(&runs).unwrap();
    plant(&runs.join("tx.json"));
    (ws, format!(".tasks/{id}/runs/tx.json"))
}

fn assert_status_and_mark_end_naming(ws: &Workspace, rel: &str, what: &str) {
    for args in [&["status"][..], &["mark", "S1", "done"]] {
        let (code, output) = run_bounded(ws, args);
        assert_ne!(code, 0, "{args:?} succeeded: {output}");
        assert!(
            output.contains(&format!("`{rel}` is {what}")),
            "{args:?}: wanted `{rel}` is {what} in:\n{output}"
        );
    }
}

#[test]
fn a_fifo_as_the_pending_transaction_never_blocks() {
    let (ws, rel) = with_hostile_tx(|path| {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    });
    assert_status_and_mark_end_naming(&ws, &rel, "a named pipe (FIFO)");
}

#[test]
fn the_pending_transaction_linked_to_dev_zero_is_not_read() {
    let (ws, rel) = with_hostile_tx(|path| {
        std::os::unix::fs::symlink("/dev/zero", path).unwrap();
    });
    assert_status_and_mark_end_naming(&ws, &rel, "a device");
}

const NOTES_PLAN: &str = "# Notes

## Summary
Write a note.

## Steps
- [ ] S1 Write the note
  - files: notes/**
  - verify: `true`
";

/// Issue 17, item 17: a token as a file name (`notes/ghp_….txt`) is recorded redacted in
/// state.yaml (files changed, fingerprints) and in the journal, and the redacted name, which
/// is no file on disk, does not make the step stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_a_file_name_is_recorded_redacted() {
    use serde_json::json;

    use crate::common::fake_model::FakeModel;
    use crate::common::scripts::openai_calls;
    use crate::common::workspace::{Workspace, assert_success, stdout};

    let token = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXyZ";
    let name = format!("notes/{token}.txt");
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, NOTES_PLAN).await;
    server.push(openai_calls(&[
        (
            "w1",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        (
            "w2",
            "write_file",
            json!({"path": name, "content": "remember\n"}),
        ),
    ]));
    server.push(claims_done("w3", "S1", None));
    assert_success(&project.tick_against(&server, &["run"]).await);
    assert_eq!(project.read(&name), "remember\n");

    let state = project.read(&format!(".tasks/{id}/state.yaml"));
    assert!(!state.contains(token), "{state}");
    assert!(state.contains("notes/[REDACTED].txt"), "{state}");
    let journal = project.read(".tasks/journal.jsonl");
    assert!(!journal.contains(token), "{journal}");
    assert!(journal.contains("notes/[REDACTED].txt"), "{journal}");

    let status = project.tick_against(&server, &["status"]).await;
    assert_success(&status);
    let todo = project.todo(&id);
    assert!(todo.contains("- [x] S1"), "{todo}");
    assert!(!stdout(&status).contains("stale"), "{}", stdout(&status));
}

/// The peak resident memory of a running process so far (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Issue 17, item 18: a model streams a `write_file` whose arguments are 64 MiB, in 64 KiB
/// fragments. tick keeps at most its cap of them (twice `limits.max_write_bytes` plus a
/// little), runs nothing, and tells the model; its peak memory stays far below the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_streamed_argument_is_capped_while_it_arrives() {
    use serde_json::json;

    use crate::common::fake_model::{FakeModel, Reply};
    use crate::common::scripts::openai_call;
    use crate::common::workspace::{Workspace, stderr};

    const FRAGMENT: usize = 64 * 1024;
    const FRAGMENTS: usize = 1024;
    let data = |chunk: &serde_json::Value| format!("data: {chunk}\n\n");
    let fragment = |args: &str| {
        data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": args}}
        ]}, "finish_reason": null}]}))
    };
    let mut chunks = vec![data(
        &json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "big", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"big.txt\", \"content\": \""}}
    ]}, "finish_reason": null}]}),
    )];
    let piece = fragment(&"x".repeat(FRAGMENT));
    chunks.extend(std::iter::repeat_n(piece, FRAGMENTS));
    chunks.push(fragment("\"}"));
    chunks.push(data(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ));
    chunks.push("data: [DONE]\n\n".to_owned());

    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.write(".tasks/config.yaml", "limits:\n  max_write_bytes: 100000\n");
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "config"]);
    project.approve_plan(&server, NOTES_PLAN).await;
    server.push(Reply::sse(chunks));
    server.push(openai_call(
        "stop",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "too big"}),
    ));
    let child = project
        .command(&format!("{}/v1", server.url()), &["run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (peak, output) = tokio::task::spawn_blocking(move || {
        let pid = child.id();
        let mut child = child;
        let mut peak = 0;
        while child.try_wait().unwrap().is_none() {
            if let Some(kib) = peak_rss_kib(pid) {
                peak = peak.max(kib);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (peak, child.wait_with_output().unwrap())
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(!project.path("big.txt").exists());
    // 64 MiB arrived; tick (about 40 MiB of its own, sandbox helper and runtime) never held
    // them.
    assert!(peak > 0 && peak < 80 * 1024, "peak RSS {peak} KiB");
    let results = server.requests()[1].tool_results();
    let (_, told) = results.iter().find(|(id, _)| id == "big").unwrap();
    assert!(
        told.contains("were larger than 265536 bytes") && told.contains("ran nothing"),
        "{told}"
    );
}
