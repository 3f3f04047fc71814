//! What a new user met around blocks and re-checks, each pinned: a pause on the last step
//! says nothing is left and names the new file, stale and unverified steps point at
//! `tick verify`, and `tick verify --dry-run` shows what it would run without running it.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::claims_done;
use crate::common::scripts::openai_calls;
use crate::common::text::assert_contains;
use crate::common::workspace::{PLAN, Workspace, stderr};

const ONE_STEP: &str = "# One

## Summary
One step.

## Steps
- [ ] S1 Write the greeting
  - files: hello.txt
  - verify: `grep -q hello hello.txt`
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_on_the_last_step_says_nothing_is_left_and_names_new_files() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, ONE_STEP).await;
    server.push(openai_calls(&[
        (
            "w",
            "write_file",
            json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        (
            "b",
            "bash",
            json!({"command": "echo extra > notes-new.txt"}),
        ),
    ]));
    server.push(claims_done("d", "S1", None));
    let output = project.tick_ends(&server, &["run"], 5).await;
    let err = stderr(&output);
    assert!(
        err.contains("review `notes-new.txt` (`git status` shows new files"),
        "{err}"
    );
    assert!(err.contains("no step is left to run"), "{err}");
    assert!(!err.contains("to go on"), "{err}");
}

#[test]
fn unverified_and_stale_steps_point_at_tick_verify() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    let status = ws.ok(&["status"]);
    assert_contains(
        &status.stderr,
        "`tick verify` runs their `verify` commands now",
    );
    // S1's file changes outside tick: stale, and the hint names `tick verify S1`.
    ws.write("src/login.ts", "changed\n");
    let status = ws.ok(&["status"]);
    assert_contains(&status.stderr, "`tick verify S1` checks it again now");
}

/// A stale step with no `verify` has nothing for `tick verify` to run: its hint says what
/// does take it up.
#[test]
fn a_stale_step_without_a_verify_is_not_pointed_at_tick_verify() {
    let ws = Workspace::new();
    ws.approve("# Notes\n\n## Steps\n- [ ] S1 Write the notes\n  - files: NOTES.md\n");
    ws.write("NOTES.md", "one\n");
    ws.ok(&["mark", "S1", "done"]);
    ws.write("NOTES.md", "two\n");
    let status = ws.ok(&["status"]);
    assert_contains(
        &status.stderr,
        "it has no `verify` to check it again: `tick run` redoes it, or `tick mark S1 done` vouches for it as it is",
    );
    assert!(
        !status.stderr.contains("tick verify S1"),
        "{}",
        status.stderr
    );
}

#[test]
fn verify_dry_run_shows_the_commands_and_changes_nothing() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S3", "done"]);
    let todo = ws.todo(&id);
    let state = ws.read(&format!(".tasks/{id}/state.yaml"));
    let run = ws.ok(&["verify", "--dry-run"]);
    assert_eq!(
        run.stdout,
        "[x] S1 Find the real login entry point and its callers\n    $ npm test -- login\n[x] S3 Update the login tests\n    no verification: left as it is\n"
    );
    assert_contains(&run.stderr, "one that fails is opened again");
    assert_eq!(ws.todo(&id), todo);
    assert_eq!(ws.read(&format!(".tasks/{id}/state.yaml")), state);
    let only = ws.ok(&["verify", "--dry-run", "S3"]);
    assert!(!only.stdout.contains("S1"), "{}", only.stdout);
}
