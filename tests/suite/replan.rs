//! Re-planning an approved task (`tick plan --revise "..." TASK`): the planner's new plan is
//! a new version of PLAN.md that waits for approval; unchanged steps keep their id, marker and
//! evidence byte for byte, a changed step starts again, a new step gets a fresh id, a removed
//! one goes, and every earlier version can be printed.

use serde_json::{Value, json};
use tick::tasks::state::State;

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::openai_call;
use crate::common::workspace::{Workspace, stderr, stdout};

const PLAN: &str = "# Greet

## Summary
Greet people.

## Steps
- [ ] S1 Write the greeting
  - files: hello.txt
  - verify: `grep -q hello hello.txt`
- [ ] S2 Write the farewell
  - files: bye.txt
  - verify: `grep -q bye bye.txt`
- [ ] S3 Write the docs
  - files: NOTES.md
";

fn call(name: &str, arguments: Value) -> Reply {
    openai_call("c", name, arguments)
}

fn state_of(project: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&project.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revised_task_keeps_its_done_steps_and_waits_for_approval() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    // S1 verified, S2 blocked.
    server.push(call(
        "write_file",
        json!({"path": "hello.txt", "content": "hello\n"}),
    ));
    server.push(call(
        "update_step",
        json!({"id": "S1", "status": "done", "evidence": "wrote it"}),
    ));
    server.push(call(
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "a farewell needs a config file first"}),
    ));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let todo_path = format!(".tasks/{id}/TODO.md");
    let plan_path = format!(".tasks/{id}/PLAN.md");
    let approved_plan = project.read(&plan_path);
    let s1_before = state_of(&project, &id).steps[&"S1".parse().unwrap()].clone();
    let s1_line = |text: &str| -> String {
        let mut lines = text
            .lines()
            .skip_while(|l| !l.contains("S1 Write the greeting"));
        let first = lines.next().unwrap_or_default().to_owned();
        std::iter::once(first)
            .chain(
                lines
                    .take_while(|l| !l.starts_with("- ["))
                    .map(str::to_owned),
            )
            .collect::<Vec<_>>()
            .join("\n")
    };
    let s1_todo_before = s1_line(&project.read(&todo_path));

    // The person asks for a config file first and no docs step.
    let before = server.requests().len();
    server.push(call(
        "submit_plan",
        json!({
            "title": "Greet",
            "summary": "Greet people, with a config file.",
            "steps": [
                {"title": "Write the greeting", "files": ["hello.txt"], "verify": ["grep -q hello hello.txt"]},
                {"title": "Add the config file", "files": ["greet.conf"], "verify": ["test -f greet.conf"]},
                {"title": "Write the farewell", "files": ["bye.txt"], "verify": ["grep -q bye bye.txt", "grep -q farewell greet.conf"], "depends": ["S2"]}
            ]
        }),
    ));
    let output = project
        .tick_against(
            &server,
            &[
                "plan",
                "--revise",
                "add a config file first; drop the docs",
                &id,
            ],
        )
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("version 2 of its plan"), "{err}");
    assert!(err.contains("drops `S3`"), "{err}");
    // The planner saw the task as it stands.
    let seed = server.requests()[before].user_texts().join("\n");
    assert!(
        seed.contains("add a config file first; drop the docs"),
        "{seed}"
    );
    assert!(seed.contains("- S1 [done] Write the greeting"), "{seed}");
    assert!(
        seed.contains("blocked: a farewell needs a config file first"),
        "{seed}"
    );
    assert!(
        seed.contains("verified: `grep -q hello hello.txt` exit 0"),
        "{seed}"
    );
    // Plan mode: no writing tool was offered.
    let tools = server.requests()[before].tool_names();
    assert!(
        !tools.iter().any(|t| t == "write_file" || t == "bash"),
        "{tools:?}"
    );

    // The new version: unchanged steps keep their ids, the new one is S4, depends follow.
    let revised = project.read(&plan_path);
    assert!(revised.contains("- [ ] S1 Write the greeting"), "{revised}");
    assert!(
        revised.contains("- [ ] S4 Add the config file"),
        "{revised}"
    );
    assert!(revised.contains("- [ ] S2 Write the farewell"), "{revised}");
    assert!(revised.contains("depends: S4"), "{revised}");
    let log = project.tick_against(&server, &["log", &id]).await;
    assert!(
        stdout(&log).contains("version 2 of the plan waits for approval"),
        "{}",
        stdout(&log)
    );
    assert!(!revised.contains("S3"), "{revised}");
    assert_eq!(
        project.read(&format!(".tasks/{id}/history/PLAN.v1.md")),
        approved_plan
    );

    // Nothing runs until the person approves; the run says why.
    let requests = server.requests().len();
    let output = project.tick_against(&server, &["run"]).await;
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("tick approve"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.requests().len(),
        requests,
        "no model turn before approval"
    );

    // Approval merges by id: S1 untouched, S2 reopened, S4 added, S3 gone.
    let output = project.tick_against(&server, &["approve", &id]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let todo = project.read(&todo_path);
    assert_eq!(s1_line(&todo), s1_todo_before, "S1 byte for byte");
    assert!(todo.contains("- [ ] S4 Add the config file"), "{todo}");
    assert!(todo.contains("- [ ] S2 Write the farewell"), "{todo}");
    assert!(!todo.contains("blocked:"), "{todo}");
    assert!(!todo.contains("S3 Write the docs"), "{todo}");
    let state = state_of(&project, &id);
    assert_eq!(
        state.steps[&"S1".parse().unwrap()],
        s1_before,
        "S1's record byte for byte"
    );

    // Every version can be printed.
    let v1 = project
        .tick_against(&server, &["show", "--version", "1", &id])
        .await;
    assert!(stdout(&v1).contains("S3 Write the docs"), "{}", stdout(&v1));
    let v2 = project
        .tick_against(&server, &["show", "--version", "2", &id])
        .await;
    assert!(
        stdout(&v2).contains("S4 Add the config file"),
        "{}",
        stdout(&v2)
    );
    let v3 = project
        .tick_against(&server, &["show", "--version", "3", &id])
        .await;
    assert_eq!(v3.status.code(), Some(2));
    assert!(
        stderr(&v3).contains("its versions are 1 to 2"),
        "{}",
        stderr(&v3)
    );

    // The log tells both versions apart.
    let log = project.tick_against(&server, &["log", &id]).await;
    let log = stdout(&log);
    assert!(
        log.contains("version 1 of the plan approved by a person"),
        "{log}"
    );
    assert!(
        log.contains("version 2 of the plan approved by a person (re-planned)"),
        "{log}"
    );

    // The run goes on with the new step.
    let before = server.requests().len();
    server.push(call(
        "write_file",
        json!({"path": "greet.conf", "content": "farewell\n"}),
    ));
    server.push(call(
        "update_step",
        json!({"id": "S4", "status": "done", "evidence": "wrote it"}),
    ));
    server.push(call(
        "write_file",
        json!({"path": "bye.txt", "content": "bye\n"}),
    ));
    server.push(call(
        "update_step",
        json!({"id": "S2", "status": "done", "evidence": "wrote it"}),
    ));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = server.requests()[before].user_texts().join("\n");
    assert!(
        first.contains("Your step: S4 Add the config file"),
        "{first}"
    );
    let todo = project.read(&todo_path);
    for step in [
        "S1 Write the greeting",
        "S4 Add the config file",
        "S2 Write the farewell",
    ] {
        assert!(todo.contains(&format!("- [x] {step}")), "{todo}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_or_a_cancelled_task_is_not_re_planned_as_a_task() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    let output = project.tick_against(&server, &["cancel", &id]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let plan = project.read(&format!(".tasks/{id}/PLAN.md"));
    let output = project
        .tick_against(&server, &["plan", "--revise", "more", &id])
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("cancelled"), "{}", stderr(&output));
    assert_eq!(project.read(&format!(".tasks/{id}/PLAN.md")), plan);
    assert!(server.requests().is_empty(), "no model turn");
}

/// A re-approved plan whose step changed its contract (title, files, verify, done when)
/// reopens that step: its old evidence proves a different step. A step whose plan did not
/// change keeps its marker, and its record stays as it was.
#[test]
fn a_reapproved_change_to_a_done_steps_verify_reopens_it_and_nothing_else() {
    use crate::common::workspace::{PLAN as WS_PLAN, Workspace};
    let ws = Workspace::new();
    let id = ws.approve(WS_PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S3", "done"]);
    let state_path = format!(".tasks/{id}/state.yaml");
    let s3_before = serde_yaml::from_str::<State>(&ws.read(&state_path))
        .unwrap()
        .steps[&"S3".parse().unwrap()]
        .clone();
    let plan_path = format!(".tasks/{id}/PLAN.md");
    let plan = ws.read(&plan_path);
    ws.write(
        &plan_path,
        plan.replace("`npm test -- login`", "`npm test -- login --all`"),
    );
    let run = ws.ok(&["approve", &id]);
    assert!(run.stderr.contains("S1"), "{}", run.stderr);
    let todo = ws.read(&format!(".tasks/{id}/TODO.md"));
    assert!(
        todo.contains("- [ ] S1 Find the real login entry point"),
        "{todo}"
    );
    assert!(
        todo.contains("  - verify: `npm test -- login --all`"),
        "{todo}"
    );
    assert!(todo.contains("- [x] S3 Update the login tests"), "{todo}");
    let state: State = serde_yaml::from_str(&ws.read(&state_path)).unwrap();
    assert_eq!(state.steps[&"S3".parse().unwrap()], s3_before);
    assert_eq!(
        state.steps[&"S1".parse().unwrap()].status,
        Some(tick::plan::StepStatus::Pending)
    );
}
