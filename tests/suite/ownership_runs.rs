//! The runner's own bookkeeping, end to end with the real binary and the fake model: which
//! changes are tick's (the snapshot journal, not time windows), what a later task does to an
//! earlier task's files, failed runs left on record, and a done claim with nothing done.

use std::process::Output;
use std::time::Duration;

use serde_json::json;
use tick::tasks::state::State;

use super::running::{PLAN, approved, stderr, work};
use crate::common::fake_model::FakeModel;
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_calls, openai_text};
use crate::common::workspace::Workspace;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn both(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

fn state(project: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&project.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

/// The id of the one task folder that is not `known`.
fn other_task(project: &Workspace, known: &str) -> String {
    let ids: Vec<String> = std::fs::read_dir(project.path(".tasks"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("20") && n != known)
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

/// One step: start it, call `name` with `args`, then claim it done.
fn step_with(server: &FakeModel, id: &str, name: &str, args: serde_json::Value) {
    server.push(openai_calls(&[
        (
            &format!("call_{id}_start"),
            "update_step",
            json!({"id": id, "status": "in_progress"}),
        ),
        (&format!("call_{id}_tool"), name, args),
    ]));
    server.push(claims_done(&format!("call_{id}_done"), id, Some("did it")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_model_never_reports_leaves_its_failure_on_record() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    server.push(openai_text("I will not report."));
    server.push(openai_text("Still not."));
    server.push(openai_text("Never."));
    let output = project.tick_ends(&server, &["run"], 3).await;
    assert!(
        stderr(&output).contains(tick::agent::CHANGE_MODEL_HINT),
        "{}",
        stderr(&output)
    );

    let attempt = state(&project, &id).last_attempt.expect("a failure record");
    assert_eq!(attempt.step, Some("S1".parse().unwrap()));
    assert!(
        attempt.cause.contains("without reporting the step"),
        "{attempt:?}"
    );
    assert!(
        attempt.hint.contains(tick::agent::CHANGE_MODEL_HINT),
        "{attempt:?}"
    );

    let status = project.tick_against(&server, &["status"]).await;
    assert!(
        both(&status).contains("the last attempt failed at `S1`"),
        "{}",
        both(&status)
    );
    let check = project.tick_against(&server, &["check"]).await;
    assert_eq!(check.status.code(), Some(14), "{}", both(&check));

    // A step that then goes well clears the record.
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;
    assert_eq!(state(&project, &id).last_attempt, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_claim_with_nothing_done_is_recorded_and_shown() {
    let server = FakeModel::start().await;
    // S3 names no files: a claim with nothing done on a step that names files goes back to
    // the model instead (`compact::a_done_claim_without_changing_the_steps_files_...`).
    let plan = PLAN.replace("  - files: NOTES.md\n", "");
    let (project, id) = approved(&server, &plan).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    work(&server, "S2", "shout.sh", "echo HELLO\n");
    // S3: the model claims it done without touching anything.
    server.push(claims_done("call_S3_done", "S3", Some("documented")));
    project.tick_ends(&server, &["run"], 0).await;
    let state = state(&project, &id);
    assert!(!state.steps[&"S1".parse().unwrap()].claimed_without_changes);
    assert!(state.steps[&"S3".parse().unwrap()].claimed_without_changes);

    let status = both(&project.tick_against(&server, &["status"]).await);
    let lines: Vec<&str> = status
        .lines()
        .filter(|l| l.contains("claimed done with no file changed and no command run"))
        .collect();
    assert_eq!(lines.len(), 1, "{status}");
    let after_s3 = status.split("S3 Document it").nth(1).unwrap_or_default();
    assert!(
        after_s3.contains("claimed done with no file changed"),
        "{status}"
    );
}

/// A one-step plan whose S1 (`$verb` shared.txt) owns `shared.txt` and greps it for `$word`.
macro_rules! shared_file_plan {
    ($title:literal, $summary:literal, $verb:literal, $word:literal) => {
        concat!(
            "# ",
            $title,
            "\n\n## Summary\n",
            $summary,
            "\n\n## Steps\n",
            "- [ ] S1 ",
            $verb,
            " shared.txt\n",
            "  - files: shared.txt\n",
            "  - verify: `grep -q ",
            $word,
            " shared.txt`\n",
        )
    };
}

const PLAN_A: &str = shared_file_plan!("Shared file", "Start the shared file.", "Write", "one");

const PLAN_B: &str = shared_file_plan!("Extend it", "Extend the shared file.", "Extend", "two");

/// The repro, run for real: task A completed through `write_file`, task B approved
/// later changes A's file through `edit_file`. A stays completed and says who changed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_task_editing_an_earlier_tasks_file_through_tick_is_not_stale() {
    let server = FakeModel::start().await;
    let (project, a) = approved(&server, PLAN_A).await;
    step_with(
        &server,
        "S1",
        "write_file",
        json!({"path": "shared.txt", "content": "one\n"}),
    );
    project.tick_ends(&server, &["run", &a], 0).await;
    assert!(project.todo(&a).contains("- [x] S1"));

    project.write("plan-b.md", PLAN_B);
    for args in [&["plan", "--from", "plan-b.md"][..], &["approve"]] {
        let output = project.tick_against(&server, args).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let b = other_task(&project, &a);
    assert_ne!(a, b);
    step_with(
        &server,
        "S1",
        "edit_file",
        json!({"path": "shared.txt", "old": "one", "new": "one two"}),
    );
    project.tick_ends(&server, &["run", &b], 0).await;
    assert_eq!(project.read("shared.txt"), "one two\n");

    let check = project.tick_against(&server, &["check"]).await;
    assert_eq!(check.status.code(), Some(0), "{}", both(&check));
    let list = stdout(&project.tick_against(&server, &["list"]).await);
    let line_a = list.lines().find(|l| l.contains(&a)).unwrap();
    assert!(line_a.contains("completed"), "{list}");
    assert!(!project.todo(&a).contains("- [~]"), "{}", project.todo(&a));
    let status = both(&project.tick_against(&server, &["status", &a]).await);
    assert!(
        status.contains(&format!("changed by task {b} S1")),
        "{status}"
    );
    let strict = project.tick_against(&server, &["check", "--strict"]).await;
    assert_eq!(strict.status.code(), Some(9), "{}", both(&strict));
}

const PLAN_TWO: &str = "# Two files

## Summary
Two files.

## Steps
- [ ] S1 Write a.txt
  - files: a.txt
  - verify: `grep one a.txt`
- [ ] S2 Write b.txt
  - files: b.txt
  - verify: `test -f b.txt`
";

/// While the agent's `bash` for S2 runs, a person saves S1's file. The command's snapshots
/// see the change, but S1's file is not S2's: the edit is the person's. S1 goes stale and is
/// verified again by the next run (its verification prints the file, so the new evidence
/// shows the run); the run never says the agent changed that file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_edit_during_an_agents_bash_makes_the_done_step_stale_and_reverified() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN_TWO).await;
    let s1 = |project: &Workspace| state(project, &id).steps[&"S1".parse().unwrap()].clone();

    step_with(
        &server,
        "S1",
        "write_file",
        json!({"path": "a.txt", "content": "one\n"}),
    );
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;
    assert_eq!(s1(&project).evidence[0].output_tail, "one");
    let before = server.requests().len();

    step_with(
        &server,
        "S2",
        "bash",
        json!({"command": "sleep 2 && echo two > b.txt"}),
    );
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["run", "--steps", "1"]);
    let running = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    // The answer holding the `bash` call has been served: the command runs now.
    server.wait_for_requests(before + 1).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    project.write("a.txt", "one, edited by a person\n");
    let output = running.await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.read("b.txt"), "two\n");
    let s2 = &state(&project, &id).steps[&"S2".parse().unwrap()];
    assert!(
        s2.deviations.is_empty(),
        "{:?}\n{}",
        s2.deviations,
        stderr(&output)
    );
    assert_eq!(s2.files_changed, ["b.txt"]);
    assert_eq!(s2.outside_edits, ["a.txt"]);
    assert!(
        !stderr(&output).contains("outside its"),
        "{}",
        stderr(&output)
    );
    // S1 was not quietly moved on to the person's content with its old evidence.
    assert_eq!(s1(&project).evidence[0].output_tail, "one");

    // The next command sees S1's file changed by someone other than tick.
    let status = project.tick_against(&server, &["status"]).await;
    assert!(project.todo(&id).contains("- [~] S1"), "{}", both(&status));
    // And the next run verifies it again before anything else.
    project.tick_ends(&server, &["run"], 0).await;
    assert!(
        project.todo(&id).contains("- [x] S1"),
        "{}",
        project.todo(&id)
    );
    assert_eq!(
        s1(&project).evidence[0].output_tail,
        "one, edited by a person"
    );
}
