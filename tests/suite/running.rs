//! `tick run` end to end: a real approved task in a real git repository, the real binary, and
//! a fake model that writes files and claims steps done. Verification decides every tick.

use std::process::Output;

use serde_json::{Value, json};
use tick::tasks::state::State;

use crate::common::fake_model::{FakeModel, RecordedRequest, Reply};
use crate::common::scripts::{claims_done, writes_file};
use crate::common::scripts::{openai_call, openai_call_chunks, openai_calls, openai_text};
use crate::common::workspace::assert_success;
use crate::common::workspace::{Workspace, approve_committed, interrupted_after};

pub(super) const PLAN: &str = "# Greeting

## Summary
Greet people from the command line.

## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`
- [ ] S2 Add a shout script
  - files: shout.sh
  - verify: `sh shout.sh | grep -q HELLO`
- [ ] S3 Document it
  - files: NOTES.md
";

pub(super) use crate::common::workspace::stderr;

/// A project with `PLAN` approved, committed so the run starts from a clean tree.
pub(super) async fn approved(server: &FakeModel, plan: &str) -> (Workspace, String) {
    let project = Workspace::sample();
    approve_committed(&project, server, plan).await;
    let id = std::fs::read_dir(project.path(".tasks"))
        .unwrap()
        .filter_map(std::result::Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("2026"))
        .unwrap();
    (project, id)
}

fn start(id: &str) -> (String, String, Value) {
    (
        format!("call_{id}_start"),
        "update_step".to_owned(),
        json!({"id": id, "status": "in_progress"}),
    )
}

/// One step's script: start and write a file in one answer, then claim done.
pub(super) fn work(server: &FakeModel, id: &str, path: &str, content: &str) {
    let (start_id, name, args) = start(id);
    server.push(openai_calls(&[
        (&start_id, &name, args),
        (
            &format!("call_{id}_write"),
            "write_file",
            json!({"path": path, "content": content}),
        ),
    ]));
    server.push(claims_done(
        &format!("call_{id}_done"),
        id,
        Some("wrote it"),
    ));
}

fn state(project: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&project.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

fn user_messages(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_step_plan_runs_to_completion() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    work(&server, "S2", "shout.sh", "echo HELLO\n");
    work(&server, "S3", "NOTES.md", "Run `sh shout.sh`.\n");

    let output = project.tick_ends(&server, &["run"], 0).await;
    assert_eq!(project.read("greeting.txt"), "hello\n");
    assert_eq!(project.read("shout.sh"), "echo HELLO\n");
    let todo = project.todo(&id);
    assert!(todo.contains("- [x] S1 Create greeting.txt"), "{todo}");
    assert!(todo.contains("- [x] S2 Add a shout script"), "{todo}");
    assert!(todo.contains("- [x] S3 Document it"), "{todo}");
    assert!(
        project
            .read(&format!(".tasks/{id}/PLAN.md"))
            .contains("status: completed")
    );
    assert!(stderr(&output).contains("3/3 done"), "{}", stderr(&output));

    let state = state(&project, &id);
    let s1 = &state.steps[&"S1".parse().unwrap()];
    assert!(s1.verified());
    assert_eq!(s1.evidence[0].command, "grep -q hello greeting.txt");
    assert_eq!(s1.evidence[0].exit_code, 0);
    assert_eq!(s1.files_changed, ["greeting.txt"]);
    assert!(s1.fingerprints.contains_key("greeting.txt"));
    let s3 = &state.steps[&"S3".parse().unwrap()];
    assert!(
        !s3.verified(),
        "S3 has no verify: done without verification"
    );

    // Every phase change is logged with its reason.
    let journal = project.read(&format!(".tasks/{id}/runs/journal.jsonl"));
    let transitions: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "transition")
        .collect();
    let moves: Vec<(String, String)> = transitions
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap().to_owned(),
                e["to"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("draft".to_owned(), "approved".to_owned()),
            ("approved".to_owned(), "executing".to_owned()),
            ("executing".to_owned(), "completed".to_owned())
        ]
    );
    assert_eq!(transitions[2]["reason"], "the runner set `S3` done");

    // `status` answers why each step is ticked.
    let output = project.tick_against(&server, &["status"]).await;
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains(
            "[x] S1 Create greeting.txt\n        verified: `grep -q hello greeting.txt` exit 0 in"
        ),
        "{out}"
    );
    assert!(out.contains("[x] S3 Document it  (not verified)"), "{out}");
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let s1 = &report["task"]["steps"][0];
    assert_eq!(s1["changed_by"], "runner");
    assert_eq!(s1["evidence"][0]["command"], "grep -q hello greeting.txt");
    assert_eq!(s1["evidence"][0]["exit_code"], 0);

    // One fresh context per step: each step's first request has only its own pack.
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    for (index, step) in [(0, "S1"), (2, "S2"), (4, "S3")] {
        let users = user_messages(&requests[index]);
        assert_eq!(users.len(), 1, "{step}: {users:?}");
        assert!(
            users[0].contains(&format!("## Your step: {step}")),
            "{}",
            users[0]
        );
        let roles: Vec<&str> = requests[index].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user"], "{step}");
    }
    assert!(user_messages(&requests[4])[0].contains("- S1 Create greeting.txt (done)"));
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["write_file", "edit_file", "bash", "update_step"] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    assert!(!tools.contains(&"submit_plan"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_verification_goes_back_to_the_model() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    // Writes the wrong greeting and claims done: verification decides.
    server.push(writes_file("c0", "greeting.txt", "goodbye\n"));
    server.push(claims_done("c1", "S1", None));
    server.push(writes_file("c2", "greeting.txt", "hello\n"));
    server.push(claims_done("c3", "S1", None));
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let failed = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .unwrap();
    assert!(
        failed["content"]
            .as_str()
            .unwrap()
            .contains("Verification failed: `grep -q hello greeting.txt` (exit 1)"),
        "{failed}"
    );
    let todo = project.todo(&id);
    assert!(todo.contains("- [x] S1"), "{todo}");
    assert!(todo.contains("- [ ] S2"), "{todo}");
    assert!(state(&project, &id).verified("S1".parse().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_step_ends_the_run_with_its_question() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    server.push(openai_call(
        "c1",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "which greeting: hello or hi?"}),
    ));
    let output = project.tick_ends(&server, &["run"], 4).await;
    let todo = project.todo(&id);
    assert!(todo.contains("- [!] S1 Create greeting.txt\n  - files: greeting.txt\n  - verify: `grep -q hello greeting.txt`\n  - blocked: which greeting: hello or hi?\n"), "{todo}");
    let err = stderr(&output);
    assert!(
        err.contains("0/3 done, 1 blocked: S1 (which greeting: hello or hi?)"),
        "{err}"
    );
    assert!(
        project
            .read(&format!(".tasks/{id}/PLAN.md"))
            .contains("status: blocked")
    );

    // A second run stops at the same place without asking the model.
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_files_outside_the_step_pauses_the_run() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    server.push(openai_calls(&[
        (
            "c1",
            "write_file",
            json!({"path": "greeting.txt", "content": "hello\n"}),
        ),
        ("c2", "bash", json!({"command": "echo extra > other.txt"})),
    ]));
    server.push(claims_done("c3", "S1", None));
    let output = project.tick_ends(&server, &["run"], 5).await;
    let err = stderr(&output);
    assert!(
        err.contains("S1 changed files outside its `files`: `other.txt`"),
        "{err}"
    );
    let state = state(&project, &id);
    assert_eq!(
        state.steps[&"S1".parse().unwrap()].deviations,
        ["other.txt"]
    );
    assert!(project.todo(&id).contains("- [x] S1"));
    assert_eq!(server.requests().len(), 2, "S2 did not start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_git_and_outside_are_refused() {
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server, PLAN).await;
    let config_before = project.read(".git/config");
    server.push(openai_calls(&[
        (
            "c1",
            "write_file",
            json!({"path": ".git/config", "content": "x"}),
        ),
        (
            "c2",
            "write_file",
            json!({"path": "../outside.txt", "content": "x"}),
        ),
        (
            "c3",
            "edit_file",
            json!({"path": ".tasks/config.yaml", "old": "#", "new": "x"}),
        ),
    ]));
    server.push(openai_call(
        "c4",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "cannot"}),
    ));
    project.tick_ends(&server, &["run"], 4).await;
    assert_eq!(project.read(".git/config"), config_before);
    assert!(
        !project
            .root()
            .parent()
            .unwrap()
            .join("outside.txt")
            .exists()
    );
    let request = &server.requests()[1];
    let errors: Vec<&Value> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(errors.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_on_the_same_task_fails_at_once() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    server.push(Reply::sse(["data: {\"choices\":[]}\n\n".to_owned()]).stall());
    let mut first = project.command(&format!("{}/v1", server.url()), &["run"]);
    let mut child = first
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run has asked the model (it holds the lock by then).
    server.wait_for_requests(1).await;
    let started = std::time::Instant::now();
    let output = project.tick_ends(&server, &["run"], 7).await;
    assert!(
        stderr(&output).contains("tick run (pid"),
        "{}",
        stderr(&output)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));

    // Killed mid-step: every file still parses, S1 is in progress, nothing ticked.
    child.kill().unwrap();
    child.wait().unwrap();
    let todo = project.todo(&id);
    assert!(todo.contains("- [-] S1"), "{todo}");
    assert!(!todo.contains("- [x]"));
    let output = project.tick_against(&server, &["status"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    // The next run resumes S1.
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--step", "S1"], 0)
        .await;
    assert!(project.todo(&id).contains("- [x] S1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_edits_between_runs_are_honoured() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;

    // The person unticks S1 and adds a step of their own before S2.
    let path = format!(".tasks/{id}/TODO.md");
    let todo = project.read(&path).replace("- [x] S1", "- [ ] S1").replace(
        "- [ ] S2 Add a shout script",
        "- [ ] Add a farewell\n  - files: bye.txt\n- [ ] S2 Add a shout script",
    );
    project.write(&path, &todo);
    work(&server, "S1", "greeting.txt", "hello again\n");
    work(&server, "S4", "bye.txt", "bye\n");
    let output = project
        .tick_ends(&server, &["run", "--steps", "2"], 0)
        .await;
    assert!(
        stderr(&output).contains("new steps got ids: `S4`"),
        "{}",
        stderr(&output)
    );
    let todo = project.read(&path);
    assert!(todo.contains("- [x] S1"), "{todo}");
    assert!(todo.contains("- [x] S4 Add a farewell"), "{todo}");
    assert!(todo.contains("- [ ] S2"), "{todo}");
    assert_eq!(project.read("bye.txt"), "bye\n");
}

/// [`PLAN`] approved, then its PLAN.md edited by hand ("Greet people" → "Greet everyone").
pub(super) async fn approved_then_edited(server: &FakeModel) -> (Workspace, String) {
    let (project, id) = approved(server, PLAN).await;
    let path = format!(".tasks/{id}/PLAN.md");
    project.write(
        &path,
        project
            .read(&path)
            .replace("Greet people", "Greet everyone"),
    );
    (project, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_plan_stops_the_run_until_approved_again() {
    let server = FakeModel::start().await;
    let (project, id) = approved_then_edited(&server).await;
    let output = project.tick_ends(&server, &["run"], 2).await;
    assert!(stderr(&output).contains("was edited after approval"));
    assert!(String::from_utf8_lossy(&output.stdout).contains("+Greet everyone"));
    assert!(server.requests().is_empty());
    let output = project.tick_against(&server, &["approve", &id]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    server.push(openai_text("I will not report."));
    server.push(openai_text("Still not."));
    server.push(openai_text("Never."));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(
        output.status.code(),
        Some(3),
        "the run started: {}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("without reporting the step"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_the_pack_and_runs_nothing() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    let output = project
        .tick_against(&server, &["run", "--dry-run", "--step", "S2"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("--- system ---"));
    assert!(out.contains("## Your step: S2 Add a shout script"), "{out}");
    assert!(
        out.contains("- verify: `sh shout.sh | grep -q HELLO`"),
        "{out}"
    );
    assert!(
        out.contains("## Coming next (not now)\n- S3 Document it"),
        "{out}"
    );
    assert!(server.requests().is_empty());
    assert!(project.todo(&id).contains("- [ ] S2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_makes_one_commit_per_verified_step() {
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server, PLAN).await;
    project.write("unrelated.txt", "a person's work in progress\n");
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--steps", "1", "--commit"], 0)
        .await;
    let log = project.git(&["log", "-1", "--format=%B"]);
    assert!(log.starts_with("Create greeting.txt\n"), "{log}");
    assert!(log.contains("Step: S1"), "{log}");
    let files = project.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("greeting.txt"));
    assert!(!files.contains("unrelated.txt"), "{files}");
    assert!(
        project
            .git(&["status", "--porcelain"])
            .contains("?? unrelated.txt")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_commit_commits_only_the_task_folder() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.write("plan.md", PLAN);
    project.write("scratch.txt", "not mine to commit\n");
    assert_success(
        &project
            .tick_against(&server, &["plan", "--from", "plan.md"])
            .await,
    );
    let output = project
        .tick_against(&server, &["approve", "--commit"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let log = project.git(&["log", "-1", "--format=%B"]);
    assert!(log.starts_with("Approve plan: Greeting\n"), "{log}");
    assert!(log.contains("Task: 2026"), "{log}");
    let files = project.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(
        files.contains("/TODO.md") && files.contains("/PLAN.md") && files.contains("/state.yaml"),
        "{files}"
    );
    assert!(files.contains(".tasks/.gitignore"), "{files}");
    assert!(!files.contains("runs/"), "local files stay local: {files}");
    assert!(
        !files.contains("scratch.txt") && !files.contains("plan.md\n"),
        "{files}"
    );
}

/// Runs `tick run --steps 1` while the model's first answer waits until `edit` has changed
/// TODO.md under the runner's feet.
async fn run_with_an_edit_mid_step(
    edit: impl FnOnce(&Workspace, &str),
) -> (Workspace, String, Output) {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    let mut reply = Reply::sse(Vec::<String>::new()).delay(std::time::Duration::from_millis(700));
    for chunk in openai_call_chunks(&[(
        "c1",
        "write_file",
        json!({"path": "greeting.txt", "content": "hello\n"}),
    )]) {
        reply = reply.chunk(chunk);
    }
    server.push(reply);
    server.push(claims_done("c2", "S1", None));
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["run", "--steps", "1"]);
    let running = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    server.wait_for_requests(1).await;
    assert!(project.todo(&id).contains("- [-] S1"));
    edit(&project, &id);
    let output = running.await.unwrap();
    (project, id, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_todo_edit_during_a_step_is_kept() {
    let (project, id, output) = run_with_an_edit_mid_step(|project, id| {
        let path = format!(".tasks/{id}/TODO.md");
        let todo = project.read(&path).replace(
            "- [ ] S3 Document it",
            "- [ ] S3 Document it\n  - a note of mine\n- [ ] Tell the team",
        );
        project.write(&path, &todo);
    })
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let todo = project.todo(&id);
    assert!(todo.contains("- [x] S1 Create greeting.txt"), "{todo}");
    assert!(todo.contains("  - a note of mine\n"), "{todo}");
    assert!(
        todo.contains("- [ ] S4 Tell the team"),
        "the new step got its id at tick's write: {todo}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicting_edit_of_the_running_step_keeps_the_persons_version() {
    let (project, id, output) = run_with_an_edit_mid_step(|project, id| {
        let path = format!(".tasks/{id}/TODO.md");
        let todo = project.read(&path).replace("- [-] S1", "- [ ] S1");
        project.write(&path, &todo);
    })
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("`S1` was changed to `pending`"), "{err}");
    assert!(err.contains("your version is kept"), "{err}");
    assert!(project.todo(&id).contains("- [ ] S1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_steps_are_verified_again_before_anything_runs() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;
    let path = format!(".tasks/{id}/TODO.md");

    // An edit that keeps the verification passing: ticked again, with new evidence.
    project.write("greeting.txt", "hello, world\n");
    let output = project
        .tick_ends(&server, &["run", "--steps", "0"], 0)
        .await;
    assert!(
        stderr(&output).contains("S1 was stale; verified again: done"),
        "{}",
        stderr(&output)
    );
    let todo = project.read(&path);
    assert!(todo.contains("- [x] S1"), "{todo}");
    assert!(!todo.contains("stale:"), "{todo}");

    // An edit that breaks it: back to pending, to be redone.
    project.write("greeting.txt", "bye\n");
    let output = project
        .tick_ends(&server, &["run", "--steps", "0"], 0)
        .await;
    assert!(
        stderr(&output).contains("S1 was stale and its verification fails"),
        "{}",
        stderr(&output)
    );
    let todo = project.read(&path);
    assert!(todo.contains("- [ ] S1"), "{todo}");
    assert!(!todo.contains("stale:"), "{todo}");
    assert_eq!(
        server.requests().len(),
        2,
        "no model call for re-verification"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_edit_during_a_step_is_told_to_the_model() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    // The model answers after the person's edit has had time to reach the live watcher
    // (150 ms of debounce), with room for a loaded machine: at 900 ms it was missed once, with
    // the suite running beside a release build.
    let mut reply = Reply::sse(Vec::<String>::new()).delay(std::time::Duration::from_millis(2_500));
    for chunk in openai_call_chunks(&[("c1", "read_file", json!({"path": "plan.txt"}))]) {
        reply = reply.chunk(chunk);
    }
    server.push(reply);
    server.push(writes_file("c2", "greeting.txt", "hello\n"));
    server.push(claims_done("c3", "S1", None));
    project.write("plan.txt", "notes\n");
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "notes"]);
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["run", "--steps", "1"]);
    let running = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    server.wait_for_requests(1).await;
    project.write("greeting.txt", "hi from a person\n");
    let output = running.await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .unwrap();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("a person changed `greeting.txt`"),
        "{content}"
    );
    assert!(stderr(&output).contains("changed outside tick during the step: `greeting.txt`"));
    let state = state(&project, &id);
    assert_eq!(
        state.steps[&"S1".parse().unwrap()].outside_edits,
        ["greeting.txt"]
    );
}

/// [`PLAN`] approved, then `tick run` stopped with Ctrl-C while its first step waits for the
/// model (exit code 130).
pub(super) async fn stopped_in_its_first_step(
    server: &FakeModel,
) -> (Workspace, String, std::process::Output) {
    let (project, id) = approved(server, PLAN).await;
    server.push(Reply::sse(["data: {\"choices\":[]}\n\n".to_owned()]).stall());
    let output = interrupted_after(
        project.command(&format!("{}/v1", server.url()), &["run"]),
        server,
        1,
    )
    .await;
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    (project, id, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_run_and_leaves_the_step_in_progress() {
    let server = FakeModel::start().await;
    let (project, id, output) = stopped_in_its_first_step(&server).await;
    assert!(
        stderr(&output).contains("`S1` stays in progress"),
        "{}",
        stderr(&output)
    );
    let todo = project.todo(&id);
    assert!(todo.contains("- [-] S1"), "{todo}");
    let output = project.tick_against(&server, &["status"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_is_verified_when_its_last_sub_step_is_done() {
    let plan = "# Pair

## Steps
- [ ] S1 Write both halves
  - files: a.txt, b.txt
  - verify: `cat a.txt b.txt | grep -q ab`
  - [ ] S1.1 Write the first half
    - verify: `test -f a.txt`
  - [ ] S1.2 Write the second half
    - verify: `test -f b.txt`
";
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, plan).await;
    work(&server, "S1.1", "a.txt", "a\n");
    work(&server, "S1.2", "b.txt", "b\n");
    let output = project.tick_against(&server, &["run"]).await;
    // `a` and `b` on separate lines: the parent's own check fails.
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let todo = project.todo(&id);
    assert!(todo.contains("- [!] S1 Write both halves"), "{todo}");
    assert!(todo.contains("blocked: its sub-steps are done but its verification fails: `cat a.txt b.txt | grep -q ab` exit 1"), "{todo}");
    assert!(
        todo.contains("- [x] S1.1") && todo.contains("- [x] S1.2"),
        "{todo}"
    );
    // The sub-steps wrote only inside their parent's files: no deviation pause.
    assert!(
        !stderr(&output).contains("outside its `files`"),
        "{}",
        stderr(&output)
    );

    // Fixed by a person and ticked by hand: done. Their edit of b.txt is out of band for the
    // sub-steps that relied on it (they go stale), so they vouch for those too.
    project.write("b.txt", "ab\n");
    for step in ["S1.1", "S1.2", "S1"] {
        let output = project.tick_against(&server, &["mark", step, "done"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let output = project.tick_ends(&server, &["run"], 0).await;
    assert!(stderr(&output).contains("every step of this task is done; nothing to run"));
    assert_eq!(server.requests().len(), 4);
}

/// Sub-steps ticked outside a run (`tick mark`) leave their parent's own check to be run:
/// `tick run` runs it first, without asking the model anything, and ticks the parent on its
/// pass; on its failure the parent is blocked with the failure, never `[x]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_checks_a_parent_whose_sub_steps_were_ticked_by_hand() {
    let plan = "# Pair

## Steps
- [ ] S1 Write both halves
  - files: a.txt, b.txt
  - verify: `cat a.txt b.txt | grep -qx ab`
  - [ ] S1.1 Write the first half
    - verify: `test -f a.txt`
  - [ ] S1.2 Write the second half
    - verify: `test -f b.txt`
";
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, plan).await;
    project.write("a.txt", "a\n");
    project.write("b.txt", "b\n");
    for step in ["S1.1", "S1.2"] {
        let output = project.tick_against(&server, &["mark", step, "done"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    assert!(project.todo(&id).contains("- [ ] S1 Write both halves"));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let todo = project.todo(&id);
    assert!(todo.contains("- [!] S1 Write both halves"), "{todo}");
    assert!(
        todo.contains("its sub-steps are done but its verification fails"),
        "{todo}"
    );

    project.write("a.txt", "ab\n");
    project.write("b.txt", "");
    let output = project
        .tick_against(&server, &["mark", "S1", "pending"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project.tick_ends(&server, &["run", "--commit"], 0).await;
    let todo = project.todo(&id);
    assert!(
        todo.contains("- [x] S1 Write both halves"),
        "{todo}\n{}",
        stderr(&output)
    );
    // Ticked as a run ticks a step: `--commit` is answered for it too.
    assert!(
        stderr(&output).contains("S1 changed no files outside `.tasks/`: nothing to commit"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty(), "the model was asked");
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["task"]["steps"][0]["verified"], true, "{report}");
}

/// Issue 8: `run --commit` produced a commit with only `.tasks/*` when the step's file had been
/// written by an earlier, blocked attempt (git saw it dirty before and after the step).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_holds_a_file_written_in_an_earlier_blocked_attempt() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    project.write("unrelated.txt", "a person's work in progress\n");
    // First attempt: writes the file, then blocks.
    server.push(openai_calls(&[(
        "c1",
        "write_file",
        json!({"path": "greeting.txt", "content": "hello\n"}),
    )]));
    server.push(openai_call(
        "c2",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "hello or hi?"}),
    ));
    project.tick_ends(&server, &["run"], 4).await;
    let output = project
        .tick_against(&server, &["mark", "S1", "pending"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));

    // Second attempt: the file is right already; the model only claims done.
    server.push(claims_done("c3", "S1", Some("it was there")));
    project
        .tick_ends(&server, &["run", "--steps", "1", "--commit"], 0)
        .await;
    let stat = project.git(&["show", "--stat", "--format=%s", "HEAD"]);
    assert!(stat.starts_with("Create greeting.txt\n"), "{stat}");
    assert!(
        stat.lines()
            .any(|l| l.trim_start().starts_with("greeting.txt ")),
        "{stat}"
    );
    assert!(stat.contains(&format!(".tasks/{id}/TODO.md")), "{stat}");
    assert!(!stat.contains("unrelated.txt"), "{stat}");
    let status = project.git(&["status", "--porcelain"]);
    assert!(!status.contains("greeting.txt"), "{status}");
    assert!(status.contains("?? unrelated.txt"), "{status}");
    assert_eq!(
        state(&project, &id).steps[&"S1".parse().unwrap()].files_changed,
        ["greeting.txt"]
    );
}

/// A step that changes no file makes no commit of `.tasks/` alone; its tick goes with the
/// next commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_never_holds_only_the_task_files() {
    let server = FakeModel::start().await;
    // S3 names no files, so a done claim that changes nothing ticks it (on a step that names
    // files it would go back to the model).
    let plan = PLAN.replace("  - files: NOTES.md\n", "");
    let (project, _id) = approved(&server, &plan).await;
    let head = project.git(&["rev-parse", "HEAD"]);
    server.push(claims_done("c1", "S1", None));
    server.push(writes_file("c2", "greeting.txt", "hello\n"));
    server.push(claims_done("c3", "S1", None));
    // S1's first claim goes back (none of its files changed yet), then it passes: one
    // commit with the file.
    project
        .tick_ends(&server, &["run", "--steps", "1", "--commit"], 0)
        .await;
    assert_ne!(project.git(&["rev-parse", "HEAD"]), head);
    let head = project.git(&["rev-parse", "HEAD"]);
    // S3 has no verify and the model changes nothing: no commit.
    let output = project.tick_against(&server, &["mark", "S2", "done"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    server.push(claims_done("c4", "S3", None));
    let output = project
        .tick_ends(&server, &["run", "--steps", "1", "--commit"], 0)
        .await;
    assert_eq!(project.git(&["rev-parse", "HEAD"]), head);
    assert!(
        stderr(&output).contains("S3 changed no files outside `.tasks/`: nothing to commit"),
        "{}",
        stderr(&output)
    );
}

/// Issue 8: right after finishing a newer task, `tick status` with no argument showed an
/// older, unfinished one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_task_just_finished_and_lists_others_needing_attention() {
    let server = FakeModel::start().await;
    let (project, older) = approved(&server, PLAN).await;
    let output = project
        .tick_against(&server, &["mark", "S1", "blocked", "--reason", "later"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    project.write(
        "bye.md",
        "# Farewell\n\n## Steps\n- [ ] S1 Write bye.txt\n  - files: bye.txt\n  - verify: `grep -q bye bye.txt`\n",
    );
    let later = |cmd: &mut std::process::Command| {
        cmd.env("TICK_NOW", "2026-11-30T15:00:00Z");
    };
    for args in [&["plan", "--from", "bye.md"][..], &["approve"]] {
        let output = project.tick_with(&server, args, later).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let newer = "20261130-150000-farewell";
    work(&server, "S1", "bye.txt", "bye\n");
    let output = project.tick_with(&server, &["run", newer], later).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let output = project.tick_against(&server, &["status"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.starts_with("Farewell\n"), "{out}");
    assert!(out.contains(&format!("task:   {newer}")), "{out}");
    assert!(out.contains("phase:  completed, 1/1 done"), "{out}");
    assert!(
        out.contains(&format!(
            "other tasks that need attention:\n  {older}  Greeting (blocked, 0/3 done)\n"
        )),
        "{out}"
    );
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["task"]["id"], newer);
    assert_eq!(report["attention"][0]["id"], older.as_str());
    assert_eq!(report["attention"][0]["phase"], "blocked");
    // The remembered task is local.
    assert!(
        project
            .git(&["check-ignore", ".tasks/.current"])
            .contains(".current")
    );

    // Acting on the older task makes it the current one again.
    let output = project
        .tick_against(&server, &["mark", "S1", "pending", "--task", &older])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["task"]["id"], older.as_str());
    assert_eq!(report["attention"], json!([]));
}

/// A task whose TODO.md a person broke by hand (a glued marker) needs them more than any
/// other: `tick status` lists it among the others with where its file is wrong, instead of
/// dropping it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_another_task_whose_todo_does_not_parse() {
    let server = FakeModel::start().await;
    let (project, older) = approved(&server, PLAN).await;
    project.write(
        "bye.md",
        "# Farewell\n\n## Steps\n- [ ] S1 Write bye.txt\n  - files: bye.txt\n  - verify: `grep -q bye bye.txt`\n",
    );
    let later = |cmd: &mut std::process::Command| {
        cmd.env("TICK_NOW", "2026-11-30T15:00:00Z");
    };
    for args in [&["plan", "--from", "bye.md"][..], &["approve"]] {
        let output = project.tick_with(&server, args, later).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let todo = format!(".tasks/{older}/TODO.md");
    let text = project.read(&todo);
    let broken = text.replacen("- [ ] S2", "- [x]S2", 1);
    assert_ne!(broken, text, "{text}");
    project.write(&todo, &broken);
    let line = broken.lines().position(|l| l.contains("[x]S2")).unwrap() + 1;

    let output = project.tick_against(&server, &["status"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.starts_with("Farewell\n"), "{out}");
    let listed = format!("other tasks that need attention:\n  {older}  unreadable: ");
    assert!(out.contains(&listed), "{out}");
    assert!(out.contains(&format!("TODO.md:{line}")), "{out}");
    let output = project.tick_against(&server, &["status", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["attention"][0]["id"], older.as_str());
    assert_eq!(report["attention"][0]["phase"], Value::Null);
    let error = report["attention"][0]["error"].as_str().unwrap();
    assert!(error.contains(&format!("TODO.md:{line}")), "{error}");
}

/// A file a person creates while a step runs is theirs: not the step's change, not a
/// deviation, not in the step's commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_new_file_during_a_step_is_not_the_steps() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    let mut reply = Reply::sse(Vec::<String>::new()).delay(std::time::Duration::from_millis(1500));
    for chunk in openai_call_chunks(&[("c1", "list_files", json!({}))]) {
        reply = reply.chunk(chunk);
    }
    server.push(reply);
    server.push(writes_file("c2", "greeting.txt", "hello\n"));
    server.push(claims_done("c3", "S1", None));
    let mut cmd = project.command(
        &format!("{}/v1", server.url()),
        &["run", "--steps", "1", "--commit"],
    );
    let running = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    server.wait_for_requests(1).await;
    project.write("mine.txt", "a person's file\n");
    let output = running.await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("changed outside tick during the step: `mine.txt`"),
        "{}",
        stderr(&output)
    );
    let record = &state(&project, &id).steps[&"S1".parse().unwrap()];
    assert_eq!(record.files_changed, ["greeting.txt"]);
    assert!(record.deviations.is_empty(), "{:?}", record.deviations);
    assert_eq!(record.outside_edits, ["mine.txt"]);
    let files = project.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("greeting.txt"), "{files}");
    assert!(!files.contains("mine.txt"), "{files}");
}

/// Issue 31: a `--commit` run of a whole plan leaves nothing for the person to commit: each
/// step's commit carries tick's bookkeeping as it is after that commit (TODO.md, state.yaml,
/// and whatever else tick wrote for the task), so `git status` is clean at the end. As a
/// person does it: `tick init`, a plan, `approve --commit`, `run --commit`, with a later step
/// changing a file an earlier one made (its fingerprints move on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_run_of_a_whole_plan_leaves_a_clean_tree() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    // `tick init` writes `.tasks/config.yaml`; the person commits nothing by hand.
    assert_success(&project.tick_against(&server, &["init"]).await);
    assert!(project.path(".tasks/config.yaml").is_file());
    let plan = PLAN.replace(
        "  - files: shout.sh\n",
        "  - files: shout.sh, greeting.txt\n",
    );
    let plan_file = project.temp().join("plan.md");
    std::fs::write(&plan_file, plan).unwrap();
    let output = project
        .tick_against(&server, &["plan", "--from", plan_file.to_str().unwrap()])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project
        .tick_against(&server, &["approve", "--commit"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(project.git(&["status", "--porcelain"]), "", "after approve");
    work(&server, "S1", "greeting.txt", "hello\n");
    let (start_id, name, args) = start("S2");
    server.push(openai_calls(&[
        (&start_id, &name, args),
        (
            "call_S2_write",
            "write_file",
            json!({"path": "shout.sh", "content": "tr a-z A-Z < greeting.txt\n"}),
        ),
        (
            "call_S2_greet",
            "write_file",
            json!({"path": "greeting.txt", "content": "hello world\n"}),
        ),
    ]));
    server.push(claims_done("call_S2_done", "S2", None));
    work(&server, "S3", "NOTES.md", "# Notes\n");
    let output = project.tick_ends(&server, &["run", "--commit"], 0).await;
    assert_eq!(
        project.git(&["status", "--porcelain", "--untracked-files=all"]),
        "",
        "{}",
        stderr(&output)
    );
    let log = project.git(&["log", "--format=%s", "-4"]);
    assert_eq!(
        log, "Document it\nAdd a shout script\nCreate greeting.txt\nApprove plan: Greeting",
        "{log}"
    );
    let approval = project.git(&["show", "--name-only", "--format=", "HEAD~3"]);
    assert!(approval.contains(".tasks/config.yaml"), "{approval}");
    // A command after the run finds nothing to record either.
    assert_success(&project.tick_against(&server, &["status"]).await);
    assert_eq!(
        project.git(&["status", "--porcelain", "--untracked-files=all"]),
        "",
        "{}",
        project.git(&["diff"])
    );
}

/// Regression: `tick run --step S9` on a task without an `S9` said "`S9` is already done" and
/// exited 0. It is bad input, refused before any model is asked for (no server here).
#[test]
fn run_step_that_the_task_does_not_have_is_refused_with_its_steps_before_a_model() {
    let ws = Workspace::new();
    ws.approve(crate::common::workspace::PLAN);
    for args in [
        &["run", "--step", "S9"][..],
        &["run", "--step", "S9", "--dry-run"],
        &["run", "--step", "S2.7", "--json"],
    ] {
        let run = ws.fails(args, 2);
        let missing = args[2];
        assert!(
            run.stderr
                .contains(&format!("there is no step `{missing}` in `.tasks/")),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains("its steps are `S1`, `S2`, `S2.1`, `S2.2`, `S3`"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("already done"),
            "{args:?}: {}",
            run.stderr
        );
    }
}
