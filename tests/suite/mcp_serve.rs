//! `tick mcp serve` driven by a real MCP client (rmcp's, as Codex uses it) over the stdio of
//! the real binary, in a temp git repository with an approved task: the whole task, step by
//! step, with tick verifying before it ticks; then the real `tick status` agrees.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tick::plan::StepId;
use tick::tasks::state::State;

use crate::common::text::assert_contains;
use crate::common::workspace::Workspace;

pub(super) const PLAN: &str = "# Greeting

## Summary
Greet people from a file.

## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`
- [ ] S2 Add the farewell
  - files: bye.txt
  - verify: `grep -q bye bye.txt`
  - depends: S1
";

type Client = RunningService<RoleClient, ()>;

async fn connect(ws: &Workspace) -> Client {
    connect_with(ws, &[]).await
}

/// `tick mcp serve` with `flags`, and a client connected to it.
async fn connect_with(ws: &Workspace, flags: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::from(ws.tick_process());
    cmd.args(["mcp", "serve"])
        .args(flags)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    let transport = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
        .0;
    ().serve(transport).await.unwrap()
}

/// The tool's text and whether it is an error result.
async fn call(client: &Client, name: &'static str, arguments: Value) -> (String, bool) {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error == Some(true))
}

async fn ok(client: &Client, name: &'static str, arguments: Value) -> Value {
    let (text, error) = call(client, name, arguments).await;
    assert!(!error, "{name} failed: {text}");
    serde_json::from_str(&text).unwrap()
}

async fn refused(client: &Client, name: &'static str, arguments: Value) -> String {
    let (text, error) = call(client, name, arguments).await;
    assert!(error, "{name} was not refused: {text}");
    text
}

fn state(ws: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

/// issue 29, item 3, for an agent over MCP as for `tick run`: a verify that passes before the
/// claim cannot tell done from not done. A done report without a change is refused; with one
/// the step is ticked, and neither the tool nor `tick status` calls it verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verify_that_passes_before_the_claim_is_no_evidence_over_mcp() {
    let ws = Workspace::new();
    ws.write("greeting.txt", "hello\n");
    let id = ws.approve(
        "# Greeting\n\n## Summary\nGreet.\n\n## Steps\n- [ ] S1 Say hello to the world\n  \
         - files: greeting.txt\n  - verify: `grep -q hello greeting.txt`\n",
    );
    let todo = format!(".tasks/{id}/TODO.md");
    let client = connect(&ws).await;
    let claimed = ok(&client, "claim_step", json!({"step": "S1"})).await;
    assert_eq!(claimed["verify_passed_before"], json!(true), "{claimed:#}");
    assert_contains(
        claimed["note"].as_str().unwrap(),
        "S1's verify already passes before any change, so it cannot tell done from not done",
    );
    assert!(state(&ws, &id).steps[&StepId::top(1)].verify_passed_before);

    let unchanged = refused(&client, "report_done", json!({"step": "S1"})).await;
    assert_contains(
        &unchanged,
        "`S1` was not ticked: its verify `grep -q hello greeting.txt` already passed before \
         the claim, so it cannot tell done from not done, and none of its files \
         (greeting.txt) has changed; it stays in progress.",
    );
    assert_contains(&ws.read(&todo), "- [-] S1 Say hello to the world");

    ws.write("greeting.txt", "hello, world\n");
    let done = ok(&client, "report_done", json!({"step": "S1"})).await;
    assert_eq!(done["status"], "done");
    assert_eq!(done["verified"], json!(false), "{done:#}");
    assert_eq!(done["verify_passed_before"], json!(true), "{done:#}");
    assert_contains(&ws.read(&todo), "- [x] S1 Say hello to the world");
    client.cancel().await.unwrap();

    let status: Value = serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(
        status["task"]["steps"][0]["verified"],
        json!(false),
        "{status:#}"
    );
    assert!(!state(&ws, &id).steps[&StepId::top(1)].verified());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_drives_a_whole_task_and_tick_verifies_every_tick() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let todo = format!(".tasks/{id}/TODO.md");
    let client = connect(&ws).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "list_tasks",
            "show_task",
            "next_step",
            "claim_step",
            "report_done",
            "report_blocked",
            "status"
        ]
    );

    let listed = ok(&client, "list_tasks", json!({})).await;
    assert_eq!(listed["tasks"][0]["id"], json!(id));
    let shown = ok(&client, "show_task", json!({"task": id})).await;
    assert_contains(shown["plan_md"].as_str().unwrap(), "## Steps");

    let next = ok(&client, "next_step", json!({})).await;
    assert_eq!(next["step"], "S1");
    assert_eq!(next["verify"], json!(["grep -q hello greeting.txt"]));

    // Reports the agent gets wrong: each a clear tool error, nothing changed.
    let not_claimed = refused(&client, "report_done", json!({"step": "S1"})).await;
    assert_contains(&not_claimed, "`S1` is not claimed (it is pending)");
    assert_contains(&not_claimed, "`claim_step` it first");
    let unknown = refused(&client, "report_done", json!({"step": "S9"})).await;
    assert_contains(&unknown, "there is no step `S9`");
    let not_next = refused(&client, "claim_step", json!({"step": "S2"})).await;
    assert_contains(&not_next, "`S2` waits on `S1`, which is not done");
    assert_contains(&ws.read(&todo), "- [ ] S1 Create greeting.txt");

    let claimed = ok(&client, "claim_step", json!({"step": "S1"})).await;
    assert_eq!(claimed["claimed"], json!(true));
    assert_contains(&ws.read(&todo), "- [-] S1 Create greeting.txt");
    let not_this = refused(&client, "report_done", json!({"step": "S2"})).await;
    assert_contains(&not_this, "`S2` is not claimed");

    // Done, says the agent; the verification says no: not ticked, and the agent reads why.
    ws.write("greeting.txt", "hi\n");
    let failed = refused(&client, "report_done", json!({"step": "S1"})).await;
    assert_contains(&failed, "`S1` was not ticked: its verification failed");
    assert_contains(
        &failed,
        "Verification failed: `grep -q hello greeting.txt` (exit 1)",
    );
    assert_contains(&failed, "call `report_done` again");
    assert_contains(&ws.read(&todo), "- [-] S1 Create greeting.txt");

    ws.write("greeting.txt", "hello\n");
    let done = ok(
        &client,
        "report_done",
        json!({"step": "S1", "note": "wrote the greeting"}),
    )
    .await;
    assert_eq!(done["status"], "done");
    assert_eq!(done["verified"], json!(true));
    assert_eq!(done["evidence"][0]["command"], "grep -q hello greeting.txt");
    assert_eq!(done["evidence"][0]["exit_code"], 0);
    assert_contains(&ws.read(&todo), "- [x] S1 Create greeting.txt");
    let record = state(&ws, &id).steps[&StepId::top(1)].clone();
    assert!(record.verified(), "{record:?}");
    assert_eq!(record.evidence[0].command, "grep -q hello greeting.txt");
    assert!(
        record.fingerprints.contains_key("greeting.txt"),
        "{record:?}"
    );
    assert_eq!(record.note.as_deref(), Some("wrote the greeting"));

    // The second step, blocked by the agent, then the person's answer is theirs to give.
    let next = ok(&client, "next_step", json!({})).await;
    assert_eq!(next["step"], "S2");
    ok(&client, "claim_step", json!({"step": "S2"})).await;
    let blocked = ok(
        &client,
        "report_blocked",
        json!({"step": "S2", "reason": "which farewell?"}),
    )
    .await;
    assert_eq!(blocked["status"], "blocked");
    let next = ok(&client, "next_step", json!({})).await;
    assert_eq!(next["next"], "blocked");

    let status = ok(&client, "status", json!({})).await;
    assert_eq!(status["steps"][0]["status"], "done");
    client.cancel().await.unwrap();

    // The real `tick status` agrees with what the tools did.
    let run = ws.ok(&["status", "--json"]);
    let status: Value = serde_json::from_str(&run.stdout).unwrap();
    let steps = &status["task"]["steps"];
    assert_eq!(steps[0]["id"], "S1");
    assert_eq!(steps[0]["status"], "done");
    assert_eq!(steps[0]["verified"], json!(true));
    assert_eq!(
        steps[0]["evidence"][0]["command"],
        "grep -q hello greeting.txt"
    );
    assert_eq!(steps[1]["status"], "blocked");
    assert_eq!(steps[1]["blocked"], "which farewell?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_calls_are_clear_tool_errors_and_the_server_goes_on() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    let client = connect(&ws).await;
    let cases: [(&'static str, Value, &str); 6] = [
        (
            "claim_step",
            json!({"stp": "S1"}),
            "invalid arguments for claim_step: unknown field `stp`",
        ),
        (
            "claim_step",
            json!({"step": 1}),
            "invalid arguments for claim_step: invalid type: integer `1`",
        ),
        ("claim_step", json!({}), "missing field `step`"),
        (
            "report_done",
            json!({"step": "banana"}),
            "`banana` is not a step id",
        ),
        (
            "report_blocked",
            json!({"step": "S1", "reason": "  "}),
            "`reason` is empty",
        ),
        (
            "approve_plan",
            json!({}),
            "there is no tool `approve_plan`; the tools are list_tasks,",
        ),
    ];
    for (name, arguments, wanted) in cases {
        let text = refused(&client, name, arguments).await;
        assert_contains(&text, wanted);
    }
    // Still serving, and nothing was changed.
    let next = ok(&client, "next_step", json!({})).await;
    assert_eq!(next["step"], "S1");
    assert_eq!(next["status"], "pending");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_edited_after_approval_is_refused_as_tick_run_refuses_it() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let plan = format!(".tasks/{id}/PLAN.md");
    ws.write(
        &plan,
        ws.read(&plan).replace("Add the farewell", "Add a farewell"),
    );
    let client = connect(&ws).await;
    let text = refused(&client, "claim_step", json!({"step": "S1"})).await;
    assert_contains(&text, "was edited after approval");
    assert_contains(
        &text,
        "hint: review the change, then approve it with `tick approve`; nothing was run",
    );
    client.cancel().await.unwrap();
}

/// The person's hooks for the three events around a claim, each writing its name (and, for
/// `step.verify`, the evidence it was given) to `hooks.log`, which git ignores.
const CREDIT_HOOKS: &str = "hooks:
  - event: step.claimed
    command: echo claimed >> hooks.log
  - event: step.verify
    command: \"python3 -c \\\"import json,sys; p=json.load(sys.stdin); open('hooks.log','a').write('verify ' + p['evidence'][0]['command'] + chr(10))\\\"\"
  - event: step.done
    command: echo done >> hooks.log
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_done_credits_the_step_as_tick_run_does_files_hooks_and_commit() {
    let ws = Workspace::new();
    ws.write(".gitignore", "hooks.log\n");
    ws.write("unrelated.txt", "a person's file, not the step's\n");
    ws.git(&["add", ".gitignore"]);
    ws.git(&["commit", "-q", "-m", "ignore the hooks' log"]);
    ws.write_user_config(CREDIT_HOOKS);
    // Approved with the hooks in place, so they are the approved ones.
    let id = ws.approve(PLAN);
    ws.git(&["add", ".tasks"]);
    ws.git(&["commit", "-q", "-m", "approve"]);
    let client = connect_with(&ws, &["--commit"]).await;
    ok(&client, "claim_step", json!({"step": "S1"})).await;
    ws.write("greeting.txt", "hello\n");
    let done = ok(&client, "report_done", json!({"step": "S1"})).await;
    client.cancel().await.unwrap();

    assert_eq!(done["files_changed"], json!(["greeting.txt"]));
    assert_eq!(done["commit"], json!(ws.head()));
    // The hooks ran in order, `step.verify` with the verify command's evidence.
    assert_eq!(
        ws.read("hooks.log"),
        "claimed\nverify grep -q hello greeting.txt\ndone\n"
    );
    let record = state(&ws, &id).steps[&StepId::top(1)].clone();
    assert_eq!(record.files_changed, ["greeting.txt"]);
    assert_eq!(
        record.fingerprints.keys().collect::<Vec<_>>(),
        ["greeting.txt"]
    );
    // The verify command's and the step.verify hook's evidence, as `tick run` records them.
    let commands: Vec<&str> = record.evidence.iter().map(|e| e.command.as_str()).collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert_eq!(commands[0], "grep -q hello greeting.txt");
    // One commit: the step's file and the task's folder; the person's file stays out.
    let message = ws.git(&["log", "-1", "--format=%B"]);
    assert_eq!(
        message.trim_end(),
        format!("Create greeting.txt\n\nTask: {id}\nStep: S1")
    );
    let files = ws.git(&["show", "--name-only", "--format=", "HEAD"]);
    let files: Vec<&str> = files.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        files,
        [
            format!(".tasks/{id}/PLAN.md"),
            format!(".tasks/{id}/TODO.md"),
            format!(".tasks/{id}/state.yaml"),
            "greeting.txt".to_owned()
        ]
    );
    assert_eq!(
        ws.git(&["status", "--porcelain"]).trim(),
        "?? unrelated.txt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_claimed_hook_that_refuses_keeps_the_step_unticked() {
    let ws = Workspace::new();
    ws.write_user_config(
        "hooks:\n  - event: step.claimed\n    command: echo 'tests first' >&2; exit 2\n",
    );
    let id = ws.approve(PLAN);
    let client = connect(&ws).await;
    ok(&client, "claim_step", json!({"step": "S1"})).await;
    ws.write("greeting.txt", "hello\n");
    let refused = refused(&client, "report_done", json!({"step": "S1"})).await;
    client.cancel().await.unwrap();
    assert_eq!(
        refused,
        "`S1` was not ticked: tick's step.claimed hook sent the claim back; it stays in \
         progress.\ntests first"
    );
    assert!(
        ws.read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [-] S1")
    );
}

/// Hooks are part of the approval: one added after it makes `tick mcp serve` refuse the task
/// as `tick run` does, naming the hook, and the hook never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_added_after_approval_is_refused_as_tick_run_refuses_it() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.write_user_config("hooks:\n  - event: step.claimed\n    command: touch hooked.txt\n");
    let client = connect(&ws).await;
    let text = refused(&client, "claim_step", json!({"step": "S1"})).await;
    let next = refused(&client, "next_step", json!({})).await;
    client.cancel().await.unwrap();
    let text = text.replace(&id, "<task>");
    insta::assert_snapshot!(text, @"
    the hooks that apply to task `<task>` changed since it was approved
    + step.claimed `touch hooked.txt` (added)
    hint: review the difference above, then `tick approve` to approve the hooks as they are; nothing was run
    ");
    assert_eq!(next.replace(&id, "<task>"), text);
    assert!(!ws.path("hooked.txt").exists(), "the unapproved hook ran");
    assert!(
        ws.read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [ ] S1")
    );
}
