//! Re-planning an approved task (`tick plan --revise "..." TASK`): the planner's new plan is
//! a new version of PLAN.md that waits for approval; unchanged steps keep their id, marker and
//! evidence byte for byte, a changed step starts again, a new step gets a fresh id, a removed
//! one goes, and every earlier version can be printed.

use serde_json::{Value, json};
use tick::tasks::state::State;

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::openai_call;
use crate::common::text::assert_contains;
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

/// Scripts the executor's turn for `step`: write `content` to `path`, then mark the step done.
fn write_and_finish(server: &FakeModel, path: &str, content: &str, step: &str) {
    server.push(call(
        "write_file",
        json!({"path": path, "content": content}),
    ));
    server.push(call(
        "update_step",
        json!({"id": step, "status": "done", "evidence": "wrote it"}),
    ));
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
    write_and_finish(&server, "hello.txt", "hello\n", "S1");
    server.push(call(
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "a farewell needs a config file first"}),
    ));
    project.tick_ends(&server, &["run"], 4).await;
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
    project.tick_ends(&server, &["approve", &id], 0).await;
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
    write_and_finish(&server, "greet.conf", "farewell\n", "S4");
    write_and_finish(&server, "bye.txt", "bye\n", "S2");
    project.tick_ends(&server, &["run"], 0).await;
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

/// Issue 31: a re-plan that rewrites a done step's title keeps the step's id (same place,
/// same files): the re-approval reopens it with its evidence kept as history, and only the
/// genuinely new step gets a new id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revise_that_rewrites_a_steps_title_keeps_its_id() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    write_and_finish(&server, "hello.txt", "hello\n", "S1");
    server.push(call(
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "later"}),
    ));
    project.tick_ends(&server, &["run"], 4).await;
    server.push(call(
        "submit_plan",
        json!({
            "title": "Greet",
            "summary": "Greet people.",
            "steps": [
                {"title": "Write the greeting in English and French", "files": ["hello.txt"], "verify": ["grep -q hello hello.txt"]},
                {"title": "Write the farewell", "files": ["bye.txt"], "verify": ["grep -q bye bye.txt"]},
                {"title": "Write the docs", "files": ["NOTES.md"]},
                {"title": "Add a changelog", "files": ["CHANGELOG.md"]}
            ]
        }),
    ));
    let output = project
        .tick_ends(
            &server,
            &["plan", "--revise", "greet in French too", &id],
            0,
        )
        .await;
    let revised = project.read(&format!(".tasks/{id}/PLAN.md"));
    assert!(
        revised.contains("- [ ] S1 Write the greeting in English and French"),
        "{revised}"
    );
    assert!(revised.contains("- [ ] S4 Add a changelog"), "{revised}");
    assert!(!stderr(&output).contains("drops"), "{}", stderr(&output));
    project.tick_ends(&server, &["approve", &id], 0).await;
    let todo = project.todo(&id);
    assert!(
        todo.contains("- [ ] S1 Write the greeting in English and French"),
        "reopened: {todo}"
    );
    assert!(todo.contains("- [ ] S4 Add a changelog"), "{todo}");
    assert!(!todo.contains("S5"), "{todo}");
    let s1 = &state_of(&project, &id).steps[&"S1".parse().unwrap()];
    assert!(s1.evidence.is_empty(), "{s1:?}");
    assert_eq!(s1.earlier_evidence.len(), 1, "{s1:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_or_a_cancelled_task_is_not_re_planned_as_a_task() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    project.tick_ends(&server, &["cancel", &id], 0).await;
    let plan = project.read(&format!(".tasks/{id}/PLAN.md"));
    let output = project
        .tick_ends(&server, &["plan", "--revise", "more", &id], 2)
        .await;
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
    assert_contains(&run.stderr, "S1");
    let todo = ws.todo(&id);
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

// The executor's local re-plan (`propose_replan`): the step being executed is rewritten and
// a few steps go right before it; the run stops until the person approves the diff.

mod local {
    use serde_json::{Value, json};

    use super::{call, write_and_finish};
    use crate::common::fake_model::{FakeModel, Reply};
    use crate::common::text::assert_contains;
    use crate::common::workspace::{Run, Workspace, git};

    const GREET: &str = "---
title: Greet
goal: Greet people
---
# Greet

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

    /// `tick args...` in `ws` against the fake model, not yet started.
    fn tick_command(ws: &Workspace, server: &FakeModel, args: &[&str]) -> std::process::Command {
        let mut cmd = ws.tick_process();
        cmd.args(args)
            .env("TICK_PROVIDER", "openai")
            .env("TICK_BASE_URL", format!("{}/v1", server.url()))
            .env("TICK_MODEL", "test-model")
            .env("TICK_INTERACTIVE", "0")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// `tick args...` in `ws` against the fake model, off the async runtime so the server
    /// keeps serving.
    async fn tick(ws: &Workspace, server: &FakeModel, args: &[&str]) -> Run {
        let mut cmd = tick_command(ws, server, args);
        Run::off_runtime(move || cmd.output().unwrap()).await
    }

    /// The plan approved and committed, so the run starts from a clean tree.
    fn approved(ws: &Workspace) -> String {
        let id = ws.approve(GREET);
        git(ws.root(), &["add", "-A"]);
        git(ws.root(), &["commit", "-q", "-m", "approve"]);
        id
    }

    /// The proposal the farewell step makes: a config file first, and the farewell checked
    /// against it.
    fn farewell_needs_a_config() -> Value {
        json!({
            "step": "S2",
            "reason": "the farewell text must come from a config file, which does not exist yet",
            "insert_before": [
                {"title": "Add the config file", "files": ["greet.conf"], "verify": ["grep -q farewell greet.conf"]}
            ],
            "replace": [
                {"title": "Write the farewell from the config", "files": ["bye.txt"],
                 "verify": ["grep -q bye bye.txt"], "depends": ["S1"]}
            ]
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_proposal_that_touches_another_step_is_refused_back_to_the_model_and_the_run_goes_on()
    {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let id = approved(&ws);
        let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
        server.push(call(
            "propose_replan",
            json!({"step": "S3", "reason": "the docs should come first",
                   "replace": [{"title": "Write the docs first"}]}),
        ));
        write_and_finish(&server, "hello.txt", "hello\n", "S1");
        let run = tick(&ws, &server, &["run", "--steps", "1"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        // The refusal went back to the model as the tool's error result, naming what is wrong.
        let requests = server.requests();
        let results = requests[1].tool_results();
        let (_, refusal) = results.last().unwrap();
        assert!(
            refusal.contains(
                "the proposal changes `S3`, but the step being executed is `S1`: a local \
                 re-plan may rewrite only `S1` and add steps right before it"
            ),
            "{refusal}"
        );
        // The tool is offered while executing.
        assert!(
            requests[0]
                .tool_names()
                .contains(&"propose_replan".to_owned())
        );
        // Nothing was re-planned; the step was done as planned.
        assert_eq!(
            ws.read(&format!(".tasks/{id}/PLAN.md")),
            plan.replace("status: approved", "status: executing")
        );
        assert!(!ws.exists(&format!(".tasks/{id}/history")));
        assert!(ws.todo(&id).contains("- [x] S1 Write the greeting"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_accepted_proposal_stops_the_run_until_approved_then_the_run_goes_on_at_the_new_steps()
     {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let id = approved(&ws);
        let plan_path = format!(".tasks/{id}/PLAN.md");
        let todo_path = format!(".tasks/{id}/TODO.md");
        let approved_plan = ws.read(&plan_path);
        write_and_finish(&server, "hello.txt", "hello\n", "S1");
        server.push(call("propose_replan", farewell_needs_a_config()));
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        assert_eq!(server.requests().len(), 3, "the turn ended at the proposal");
        assert_contains(
            &run.stderr,
            "-> propose_replan S2: the farewell text must come from a config",
        );
        assert!(
            run.stderr.contains(
                "the plan was adjusted around S2 because the farewell text must come from a \
                 config file, which does not exist yet; `tick approve` to continue"
            ),
            "{}",
            run.stderr
        );
        // The step-level diff, on stdout.
        assert_contains(&run.stdout, "+S4 Add the config file");
        assert_contains(&run.stdout, "-S2 Write the farewell\n");
        assert_contains(&run.stdout, "+S2 Write the farewell from the config");
        // The revision is written as a global re-plan writes it: a new PLAN.md, the approved
        // version kept (as it was when the step ran), nothing else in the plan touched.
        let revised = ws.read(&plan_path);
        assert_eq!(
            ws.read(&format!(".tasks/{id}/history/PLAN.v1.md")),
            approved_plan.replace("status: approved", "status: executing")
        );
        assert!(revised.contains("status: blocked"), "{revised}");
        let steps: Vec<&str> = revised.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(
            steps,
            [
                "- [ ] S1 Write the greeting",
                "- [ ] S4 Add the config file",
                "- [ ] S2 Write the farewell from the config",
                "- [ ] S3 Write the docs"
            ]
        );
        assert!(
            revised.contains("## Summary\n\nGreet people.\n"),
            "{revised}"
        );
        // The step waits, blocked with why; S1 stays done.
        let todo = ws.read(&todo_path);
        assert!(todo.contains("- [x] S1 Write the greeting"), "{todo}");
        assert!(todo.contains("- [!] S2 Write the farewell\n"), "{todo}");
        assert!(
            todo.contains(
                "  - blocked: re-planned: the farewell text must come from a config file"
            ),
            "{todo}"
        );
        let s1_before: String = todo.lines().take_while(|l| !l.contains("S2")).collect();

        // `tick log` shows the re-plan with its reason.
        let log = tick(&ws, &server, &["log", &id]).await;
        assert_eq!(log.code, 0, "{log:#?}");
        assert!(
            log.stdout.contains(
                "the agent re-planned around S2 because the farewell text must come from a \
                 config file, which does not exist yet (version 2 of the plan)"
            ),
            "{}",
            log.stdout
        );

        // `tick status` says what the task waits for.
        let status = tick(&ws, &server, &["status", &id]).await;
        assert_eq!(status.code, 0, "{status:#?}");
        assert!(
            status.stdout.contains(
                "phase:  blocked, 1/3 done; version 2 of the plan waits for approval \
                 (re-planned around S2)"
            ),
            "{}",
            status.stdout
        );
        assert!(
            status.stderr.contains(
                "the agent re-planned around `S2` because the farewell text must come from a \
                 config file, which does not exist yet: version 2 of the plan waits for approval"
            ),
            "{}",
            status.stderr
        );

        // Nothing runs until the person approves.
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 2, "{run:#?}");
        assert!(run.stderr.contains("tick approve"), "{}", run.stderr);
        // Regression (issue 31): tick's own re-plan was "edited after approval".
        assert!(
            run.stderr.contains(&format!(
                "error: `.tasks/{id}/PLAN.md` was re-planned by tick around `S2` and waits for your approval"
            )),
            "{}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("edited after approval"),
            "{}",
            run.stderr
        );
        assert_eq!(server.requests().len(), 3, "no model turn before approval");

        // As the run said: `tick approve`, the current task's revision (there is no draft).
        let approve = tick(&ws, &server, &["approve"]).await;
        assert_eq!(approve.code, 0, "{approve:#?}");
        let todo = ws.read(&todo_path);
        let s1_after: String = todo.lines().take_while(|l| !l.contains("S4")).collect();
        assert_eq!(s1_after, s1_before, "S1 byte for byte");
        let steps: Vec<&str> = todo.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(
            steps,
            [
                "- [x] S1 Write the greeting",
                "- [ ] S4 Add the config file",
                "- [ ] S2 Write the farewell from the config",
                "- [ ] S3 Write the docs"
            ]
        );
        assert!(!todo.contains("blocked:"), "{todo}");

        // The run goes on at the new step, then the rewritten one.
        let before = server.requests().len();
        for (file, content, step) in [
            ("greet.conf", "farewell=bye\n", "S4"),
            ("bye.txt", "bye\n", "S2"),
            ("NOTES.md", "notes\n", "S3"),
        ] {
            write_and_finish(&server, file, content, step);
        }
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        let requests = server.requests();
        let first = requests[before].user_texts().join("\n");
        assert!(
            first.contains("Your step: S4 Add the config file"),
            "{first}"
        );
        let second = requests[before + 2].user_texts().join("\n");
        assert!(
            second.contains("Your step: S2 Write the farewell from the config"),
            "{second}"
        );
        let todo = ws.read(&todo_path);
        for step in [
            "S1 Write the greeting",
            "S4 Add the config file",
            "S2 Write the farewell from the config",
            "S3 Write the docs",
        ] {
            assert!(todo.contains(&format!("- [x] {step}")), "{todo}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn json_run_events_carry_a_typed_replanned_event() {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let id = approved(&ws);
        server.push(call(
            "propose_replan",
            json!({"step": "S1", "reason": "the greeting needs a template",
                   "insert_before": [{"title": "Add the template", "files": ["hello.tpl"]}],
                   "replace": [{"title": "Write the greeting from the template", "files": ["hello.txt"]}]}),
        ));
        let run = tick(&ws, &server, &["run", "--json"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        let events: Vec<Value> = run
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let replanned = events
            .iter()
            .find(|e| e["event"] == "replanned")
            .unwrap_or_else(|| panic!("{events:#?}"));
        assert_eq!(replanned["task"], json!(id));
        assert_eq!(replanned["step"], json!("S1"));
        assert_eq!(replanned["reason"], json!("the greeting needs a template"));
        assert_eq!(replanned["added"], json!(["S4"]));
        assert_eq!(replanned["version"], json!(2));
        assert!(
            replanned["diff"]
                .as_str()
                .unwrap()
                .contains("+S4 Add the template"),
            "{replanned}"
        );
        let summary = events.iter().find(|e| e["event"] == "summary").unwrap();
        assert_eq!(summary["outcome"], "blocked");
        assert_eq!(events.last().unwrap()["exit_code"], 4);
    }

    // A re-plan cut short by SIGKILL. The runner keeps the approved plan in `history/` first,
    // then writes the step blocked, the re-plan waiting and the new PLAN.md in one
    // transaction (all or nothing: `tasks::tx` rolls a killed commit forward), then logs it.
    // Each instant in between is rebuilt from the files of a real run: the run killed while
    // S2 waits on the model (before the proposal) and the same run completed with the proposal.

    /// The task files a re-plan writes, in this order of kept texts.
    const FILES: [&str; 5] = [
        "PLAN.md",
        "TODO.md",
        "state.yaml",
        "history/PLAN.v1.md",
        "runs/journal.jsonl",
    ];

    /// `FILES` of task `id` as they are (`None`: absent).
    fn files(ws: &Workspace, id: &str) -> Vec<Option<String>> {
        FILES
            .iter()
            .map(|f| {
                let rel = format!(".tasks/{id}/{f}");
                ws.exists(&rel).then(|| ws.read(&rel))
            })
            .collect()
    }

    /// Puts `FILES` of task `id` as `texts` says (`None`: removed).
    fn put(ws: &Workspace, id: &str, texts: &[Option<String>]) {
        for (f, text) in FILES.iter().zip(texts) {
            let rel = format!(".tasks/{id}/{f}");
            match text {
                Some(text) => ws.write(&rel, text),
                None if ws.exists(&rel) => std::fs::remove_file(ws.path(&rel)).unwrap(),
                None => {}
            }
        }
    }

    /// The files at the two ends of a re-plan, from one real run: `before`, `tick run` killed
    /// (SIGKILL) while S2 is in progress and its turn waits on the model; `after`, `tick run`
    /// again, the model proposing the re-plan, the run stopped for approval.
    struct Ends {
        id: String,
        before: Vec<Option<String>>,
        after: Vec<Option<String>>,
    }

    async fn ends(ws: &Workspace, server: &FakeModel) -> Ends {
        let id = approved(ws);
        let todo_path = format!(".tasks/{id}/TODO.md");
        let asked = server.requests().len() + 3;
        write_and_finish(server, "hello.txt", "hello\n", "S1");
        server.push(Reply::silent());
        let mut child = tick_command(ws, server, &["run"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while server.requests().len() < asked || !ws.read(&todo_path).contains("- [-] S2") {
            assert!(
                std::time::Instant::now() < deadline,
                "S2's turn never started: {}",
                ws.read(&todo_path)
            );
            assert!(child.try_wait().unwrap().is_none(), "the run ended");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let before = files(ws, &id);
        server.push(call("propose_replan", farewell_needs_a_config()));
        let run = tick(ws, server, &["run"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        let after = files(ws, &id);
        assert_eq!(
            after[3].as_deref(),
            before[0].as_deref(),
            "the approved plan is kept as it was when the step ran"
        );
        Ends { id, before, after }
    }

    /// After approval the run goes on at the new step, then the rewritten one, then S3.
    async fn approve_then_run_the_new_plan(ws: &Workspace, server: &FakeModel, id: &str) {
        let approve = tick(ws, server, &["approve"]).await;
        assert_eq!(approve.code, 0, "{approve:#?}");
        for (file, content, step) in [
            ("greet.conf", "farewell=bye\n", "S4"),
            ("bye.txt", "bye\n", "S2"),
            ("NOTES.md", "notes\n", "S3"),
        ] {
            write_and_finish(server, file, content, step);
        }
        let run = tick(ws, server, &["run"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        let todo = ws.todo(id);
        let steps: Vec<&str> = todo.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(
            steps,
            [
                "- [x] S1 Write the greeting",
                "- [x] S4 Add the config file",
                "- [x] S2 Write the farewell from the config",
                "- [x] S3 Write the docs"
            ]
        );
    }

    /// Killed after the approved plan was kept, before the transaction: the copy reads like
    /// PLAN.md and is no version of its own; nothing says a re-plan happened; the next run
    /// redoes the step and its re-plan is version 2.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replan_killed_after_keeping_the_approved_plan_claims_no_version_and_runs_again() {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let Ends { id, before, .. } = ends(&ws, &server).await;
        let mut cut = before.clone();
        cut[3].clone_from(&before[0]);
        put(&ws, &id, &cut);

        let status = tick(&ws, &server, &["status", &id]).await;
        assert_eq!(status.code, 0, "{status:#?}");
        assert_contains(&status.stdout, "phase:  executing, 1/3 done\n");
        assert!(!status.stderr.contains("approv"), "{}", status.stderr);
        let log = tick(&ws, &server, &["log", &id]).await;
        assert!(!log.stdout.contains("version"), "{}", log.stdout);
        assert!(!log.stdout.contains("re-plan"), "{}", log.stdout);
        let show = tick(&ws, &server, &["show", "--version", "2", &id]).await;
        assert_eq!(show.code, 2, "{show:#?}");
        assert_contains(&show.stderr, "its versions are 1 to 1");

        // The run picks the step up again; the model proposes again; that is version 2, and
        // the version kept is the approved plan.
        server.push(call("propose_replan", farewell_needs_a_config()));
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        let status = tick(&ws, &server, &["status", &id]).await;
        assert_contains(
            &status.stdout,
            "version 2 of the plan waits for approval (re-planned around S2)",
        );
        assert_eq!(files(&ws, &id)[3], before[0]);
        assert!(!ws.exists(&format!(".tasks/{id}/history/PLAN.v2.md")));
        approve_then_run_the_new_plan(&ws, &server, &id).await;
        let log = tick(&ws, &server, &["log", &id]).await;
        assert_contains(
            &log.stdout,
            "version 2 of the plan approved by a person (re-planned)",
        );
    }

    /// The instants from the transaction on: killed before the log line (the files say the
    /// re-plan waits, the log's plan events say so too), and the re-plan whole. And the
    /// on-disk state an older tick left when killed between its two writes (the step
    /// blocked "approve the new plan", PLAN.md unchanged), which a person who restores the
    /// approved PLAN.md leaves too: `status` says there is no new plan, `tick approve`
    /// keeps the approved plan and reopens the step, and the run does the step as approved.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_instant_of_a_replan_tells_the_truth_and_approve_then_run_go_on() {
        let server = FakeModel::start().await;

        // Killed after the transaction, before the log line.
        let ws = Workspace::new();
        let Ends { id, after, .. } = ends(&ws, &server).await;
        let mut cut = after.clone();
        let journal = after[4].clone().unwrap();
        let kept: String = journal
            .split_inclusive('\n')
            .filter(|l| !l.contains("\"kind\":\"replanned\""))
            .collect();
        assert_ne!(kept, journal, "the re-plan was logged");
        cut[4] = Some(kept);
        put(&ws, &id, &cut);
        let status = tick(&ws, &server, &["status", &id]).await;
        assert!(
            status.stdout.contains(
                "phase:  blocked, 1/3 done; version 2 of the plan waits for approval \
                 (re-planned around S2)"
            ),
            "{}",
            status.stdout
        );
        // The log tells the re-plan from state.yaml.
        let log = tick(&ws, &server, &["log", &id]).await;
        assert_contains(
            &log.stdout,
            "version 2 of the plan waits for approval (`tick approve`)",
        );
        assert!(
            log.stdout.contains(
                "the agent re-planned around S2 because the farewell text must come from a \
                 config file, which does not exist yet (version 2 of the plan)"
            ),
            "{}",
            log.stdout
        );
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 2, "{run:#?}");
        assert_contains(&run.stderr, "tick approve");
        approve_then_run_the_new_plan(&ws, &server, &id).await;

        // Blocked for a re-plan PLAN.md does not hold.
        let ws = Workspace::new();
        let Ends { id, before, after } = ends(&ws, &server).await;
        let cut = vec![
            before[0].clone(),
            after[1].clone(),
            after[2].clone(),
            None,
            after[4].clone(),
        ];
        put(&ws, &id, &cut);
        let status = tick(&ws, &server, &["status", &id]).await;
        assert_eq!(status.code, 0, "{status:#?}");
        assert!(
            !status.stdout.contains("waits for approval"),
            "{}",
            status.stdout
        );
        assert!(
            status.stderr.contains(
                "`S2` is blocked for a re-plan, but PLAN.md holds no new plan (tick was \
                 stopped before writing it, or the approved plan was restored)"
            ),
            "{}",
            status.stderr
        );
        let json = tick(&ws, &server, &["status", "--json", &id]).await;
        assert_contains(&json.stdout, "\"replan_not_written\":\"S2\"");
        // The run does not run the step; the approval its block asks for reopens it.
        let requests = server.requests().len();
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(
            (run.code, server.requests().len()),
            (4, requests),
            "{run:#?}"
        );
        assert!(run.stderr.contains("S2 is blocked"), "{run:#?}");
        let approve = tick(&ws, &server, &["approve"]).await;
        assert_eq!(approve.code, 0, "{approve:#?}");
        assert_contains(&approve.stderr, "`S2` is pending again");
        let todo = ws.todo(&id);
        assert!(todo.contains("- [ ] S2 Write the farewell\n"), "{todo}");
        assert!(!todo.contains("blocked:"), "{todo}");
        let state: tick::tasks::state::State =
            serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
        assert_eq!(state.pending_replan, None);
        // Said once: approving again has nothing to do.
        let again = tick(&ws, &server, &["approve", &id]).await;
        assert!(again.stderr.contains("nothing to do"), "{again:#?}");
        for (file, content, step) in [("bye.txt", "bye\n", "S2"), ("NOTES.md", "n\n", "S3")] {
            write_and_finish(&server, file, content, step);
        }
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        let todo = ws.todo(&id);
        for step in [
            "S1 Write the greeting",
            "S2 Write the farewell",
            "S3 Write the docs",
        ] {
            assert!(todo.contains(&format!("- [x] {step}")), "{todo}");
        }
        let log = tick(&ws, &server, &["log", &id]).await;
        assert!(
            log.stdout
                .contains("re-planned: the farewell text must come from a config file"),
            "the block stays in the history: {}",
            log.stdout
        );

        // The re-plan whole: logged once.
        let ws = Workspace::new();
        let Ends { id, .. } = ends(&ws, &server).await;
        let log = tick(&ws, &server, &["log", &id]).await;
        assert_eq!(
            log.stdout.matches("the agent re-planned around S2").count(),
            1,
            "{}",
            log.stdout
        );
        approve_then_run_the_new_plan(&ws, &server, &id).await;
    }

    /// A person refuses a re-plan by restoring the approved PLAN.md and answers the step:
    /// the re-plan no longer waits, and the step runs as approved with the answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answering_the_step_of_a_refused_replan_clears_the_replan() {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let id = approved(&ws);
        write_and_finish(&server, "hello.txt", "hello\n", "S1");
        server.push(call("propose_replan", farewell_needs_a_config()));
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        let state_path = format!(".tasks/{id}/state.yaml");
        let state: tick::tasks::state::State = serde_yaml::from_str(&ws.read(&state_path)).unwrap();
        assert!(state.pending_replan.is_some());

        git(
            ws.root(),
            &["checkout", "--", &format!(".tasks/{id}/PLAN.md")],
        );
        let answer = tick(
            &ws,
            &server,
            &["answer", "S2", "no config file: write bye.txt as planned"],
        )
        .await;
        assert_eq!(answer.code, 0, "{answer:#?}");
        let state: tick::tasks::state::State = serde_yaml::from_str(&ws.read(&state_path)).unwrap();
        assert_eq!(state.pending_replan, None, "{}", ws.read(&state_path));
        let status = tick(&ws, &server, &["status", &id]).await;
        assert!(!status.stderr.contains("re-plan"), "{}", status.stderr);
        assert!(!status.stdout.contains("approval"), "{}", status.stdout);

        for (file, content, step) in [("bye.txt", "bye\n", "S2"), ("NOTES.md", "n\n", "S3")] {
            write_and_finish(&server, file, content, step);
        }
        let before = server.requests().len();
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        let first = server.requests()[before].user_texts().join("\n");
        assert!(first.contains("write bye.txt as planned"), "{first}");
        let todo = ws.todo(&id);
        assert!(todo.contains("- [x] S2 Write the farewell\n"), "{todo}");
    }

    /// A re-plan that cannot keep the approved plan (`history` is a file, not a folder) writes
    /// nothing: the step is not blocked for a plan that does not exist, and once the folder
    /// can be made the next run re-plans and goes on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replan_that_cannot_keep_the_approved_plan_blocks_nothing() {
        let server = FakeModel::start().await;
        let ws = Workspace::new();
        let id = approved(&ws);
        let history = format!(".tasks/{id}/history");
        ws.write(&history, "in the way\n");
        write_and_finish(&server, "hello.txt", "hello\n", "S1");
        server.push(call("propose_replan", farewell_needs_a_config()));
        let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
        let run = tick(&ws, &server, &["run"]).await;
        assert_ne!(run.code, 0, "{run:#?}");
        assert_ne!(run.code, 4, "{run:#?}");
        assert_contains(&run.stderr, "history");
        let todo = ws.todo(&id);
        assert!(todo.contains("- [-] S2 Write the farewell\n"), "{todo}");
        assert!(!todo.contains("re-planned"), "{todo}");
        assert_eq!(
            ws.read(&format!(".tasks/{id}/PLAN.md")),
            plan.replace("status: approved", "status: executing")
        );
        let state: tick::tasks::state::State =
            serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
        assert_eq!(state.pending_replan, None);
        let status = tick(&ws, &server, &["status", &id]).await;
        assert!(!status.stdout.contains("approval"), "{}", status.stdout);
        assert!(!status.stderr.contains("re-plan"), "{}", status.stderr);

        std::fs::remove_file(ws.path(&history)).unwrap();
        server.push(call("propose_replan", farewell_needs_a_config()));
        let run = tick(&ws, &server, &["run"]).await;
        assert_eq!(run.code, 4, "{run:#?}");
        approve_then_run_the_new_plan(&ws, &server, &id).await;
    }
}
