//! Hooks end to end (`docs/hooks.md`): real bash and python hook scripts, the real binary, a
//! real approved task and the fake model. What the model received is read from the
//! server's requests; what was recorded, from state.yaml and the journal.

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::fake_model::FakeModel;
use crate::common::scripts::{openai_call, openai_calls};
use crate::common::workspace::task_state as state;
use crate::common::workspace::{Workspace, approve_committed, stderr, stdout};
use crate::suite::run_snapshots::transcript;

const PLAN: &str = "# Greeting

## Summary
Greet people.

## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`
";

/// The formatter: a Claude-Code-shaped post-edit hook that reads `tool_input.file_path`
/// and rewrites the file (trailing spaces off, a header on).
const FORMATTER: &str = r##"import json, sys
payload = json.load(sys.stdin)
assert payload["hook_event_name"] == "tool.post" and payload["format"] == 1
path = payload["tool_input"]["file_path"]
lines = [line.rstrip() for line in open(path).read().splitlines()]
if lines[:1] != ["# formatted"]:
    lines.insert(0, "# formatted")
open(path, "w").write("\n".join(lines) + "\n")
"##;

/// A project with `files` committed, `config` as the person's own config, and `plan`
/// approved under it (so its hooks are the approved ones).
async fn approved_with(
    server: &FakeModel,
    plan: &str,
    config: &str,
    files: &[(&str, &str)],
) -> (Workspace, String) {
    let project = Workspace::sample();
    for (path, text) in files {
        project.write(path, text);
    }
    project.write_user_config(config);
    approve_committed(&project, server, plan).await;
    let id = project.task_id();
    (project, id)
}

/// The model starts S1 and makes `call` (name, arguments) in one answer.
fn start_and(server: &FakeModel, name: &str, args: Value) {
    server.push(openai_calls(&[
        (
            "call_start",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        ("call_tool", name, args),
    ]));
}

fn claim_done(server: &FakeModel, n: usize) {
    server.push(openai_call(
        &format!("call_done_{n}"),
        "update_step",
        json!({"id": "S1", "status": "done", "evidence": "wrote it"}),
    ));
}

fn write_greeting(server: &FakeModel, content: &str) {
    start_and(
        server,
        "write_file",
        json!({"path": "greeting.txt", "content": content}),
    );
}

/// Every tool result the model received, over all requests.
fn tool_results(server: &FakeModel) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.body.get("messages").is_some())
        .flat_map(|r| r.tool_results().into_iter().map(|(_, text)| text))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_formatter_hook_rewrites_the_file_and_the_change_is_the_steps() {
    let server = FakeModel::start().await;
    let config = "hooks:\n  - event: tool.post\n    matcher: write_file|edit_file\n    command: python3 .hooks/format.py\n";
    let (project, id) =
        approved_with(&server, PLAN, config, &[(".hooks/format.py", FORMATTER)]).await;
    write_greeting(&server, "hello   \n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(project.read("greeting.txt"), "# formatted\nhello\n");
    let err = stderr(&output);
    assert!(
        err.contains("S1 hook tool.post `python3 .hooks/format.py` exit 0 in"),
        "{err}"
    );
    assert!(!err.contains("changed outside tick"), "{err}");

    let record = &state(&project, &id).steps[&"S1".parse().unwrap()];
    assert_eq!(record.files_changed, ["greeting.txt"]);
    assert!(record.outside_edits.is_empty(), "{record:?}");
    assert!(record.deviations.is_empty(), "{record:?}");
    // The journal has the hook as a command of S1 that produced the formatted content.
    let journal = project.read(".tasks/journal.jsonl");
    let formatted = blake3::hash(b"# formatted\nhello\n").to_hex().to_string();
    assert!(
        journal.lines().any(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            entry["kind"] == "command"
                && entry["step"] == "S1"
                && entry["after"]["greeting.txt"] == formatted.as_str()
        }),
        "{journal}"
    );
    // Nothing is stale afterwards: the formatted content is what S1 was ticked with.
    let status = project.tick_against(&server, &["status"]).await;
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(
        project
            .read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [x] S1"),
        "{}",
        project.read(&format!(".tasks/{id}/TODO.md"))
    );
    // The hook's whole run is in the task's transcript.
    let transcript = project.read(&format!(".tasks/{id}/runs/hooks.jsonl"));
    assert!(
        transcript.contains("\"event\":\"tool.post\""),
        "{transcript}"
    );
}

/// The worked example of `docs/hooks.md`, as it is written there: the script, the config and
/// what `tick run` shows.
fn docs_example() -> (String, String, String) {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hooks.md")).unwrap();
    let block = |marker: &str| -> String {
        let after = &docs[docs.find(marker).unwrap() + marker.len()..];
        let start = after.find("```").unwrap();
        let body = &after[start..];
        let body = &body[body.find('\n').unwrap() + 1..];
        body[..body.find("```").unwrap()].to_owned()
    };
    (
        block("<!-- example: script -->"),
        block("<!-- example: config -->"),
        block("<!-- example: output -->"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_example_blocks_rm_rf_and_the_model_reads_its_stderr() {
    let server = FakeModel::start().await;
    let (script, config, shown) = docs_example();
    let (project, _id) =
        approved_with(&server, PLAN, &config, &[(".hooks/no-rm-rf.sh", &script)]).await;
    start_and(&server, "bash", json!({"command": "rm -rf src"}));
    server.push(openai_call(
        "call_write",
        "write_file",
        json!({"path": "greeting.txt", "content": "hello\n"}),
    ));
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(project.path("src/login.rs").exists(), "rm -rf ran");
    let refused = tool_results(&server)
        .into_iter()
        .find(|t| t.contains("tool.pre hook refused"))
        .expect("the model was told");
    assert!(
        refused.contains("rm -rf is not allowed in this repository"),
        "{refused}"
    );
    // What the person sees is what the docs show, but for the time.
    let time = regex::Regex::new(r"in \d+\.\d+s").unwrap();
    assert_eq!(
        time.replace_all(&hook_lines(&stderr(&output)), "in [TIME]"),
        time.replace_all(shown.trim_end(), "in [TIME]"),
        "{}",
        stderr(&output)
    );
    // The other calls passed the guard (exit 0) and ran.
    assert_eq!(project.read("greeting.txt"), "hello\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_verify_hook_refuses_the_tick_and_its_output_is_in_state_yaml() {
    let server = FakeModel::start().await;
    let check = "import json, sys\np = json.load(sys.stdin)\nassert p['evidence'][0]['command'] == 'grep -q hello greeting.txt'\nprint(p['step_id'] + ' needs a test first')\nsys.exit(1)\n";
    let config = "hooks:\n  - event: step.verify\n    command: python3 .hooks/check.py\n";
    let (project, id) = approved_with(&server, PLAN, config, &[(".hooks/check.py", check)]).await;
    write_greeting(&server, "hello\n");
    for n in 1..=3 {
        claim_done(&server, n);
    }
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let todo = project.read(&format!(".tasks/{id}/TODO.md"));
    assert!(todo.contains("- [!] S1"), "{todo}");
    let record = &state(&project, &id).steps[&"S1".parse().unwrap()];
    let hook = record
        .evidence
        .iter()
        .find(|e| e.command == "hook step.verify: python3 .hooks/check.py")
        .unwrap_or_else(|| panic!("{:?}", record.evidence));
    assert_eq!(hook.exit_code, 1);
    assert_eq!(hook.output_tail, "S1 needs a test first");
    // Next to the verify command's own evidence, which passed.
    assert!(
        record
            .evidence
            .iter()
            .any(|e| e.command == "grep -q hello greeting.txt" && e.exit_code == 0)
    );
    let told = tool_results(&server);
    assert!(
        told.iter().any(|t| t.contains("S1 needs a test first")),
        "{told:?}"
    );
}

/// `tick verify` is held to the same guard as a run: a `step.verify` hook that refuses keeps
/// the step open (the verify commands passed), its verdict is evidence, and once it agrees the
/// step is ticked. A hook removed since approval refuses the verify, as it refuses a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tick_verify_runs_the_step_verify_hooks_of_a_run() {
    let server = FakeModel::start().await;
    // The flag's name is not in the command, so making it does not change the approved hook.
    let config = "hooks:\n  - event: step.verify\n    command: python3 -c \"import os, sys; sys.exit(0 if os.path.exists('o' + 'k') else 1)\"\n";
    let hook = "python3 -c \"import os, sys; sys.exit(0 if os.path.exists('o' + 'k') else 1)\"";
    let (project, id) = approved_with(&server, PLAN, config, &[]).await;
    project.write("greeting.txt", "hello\n");
    let output = project.tick_against(&server, &["mark", "S1", "done"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    let output = project.tick_against(&server, &["verify", "S1"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("hook step.verify `{hook}` exit 1")),
        "{}",
        stderr(&output)
    );
    let todo = project.read(&format!(".tasks/{id}/TODO.md"));
    assert!(todo.contains("- [ ] S1"), "{todo}");
    let record = &state(&project, &id).steps[&"S1".parse().unwrap()];
    assert!(
        record
            .evidence
            .iter()
            .any(|e| e.command == format!("hook step.verify: {hook}") && e.exit_code == 1),
        "{:?}",
        record.evidence
    );

    project.write("ok", "");
    let output = project.tick_against(&server, &["mark", "S1", "done"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project.tick_against(&server, &["verify", "S1"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        project
            .read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [x] S1")
    );

    project.write_user_config("");
    let output = project.tick_against(&server, &["verify", "S1"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("changed since it was approved"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty(), "verify asks no model");
}

/// A parent's own check is guarded by the `step.verify` hooks too, in a run as in
/// `tick verify`: a hook that refuses blocks the parent instead of letting it be ticked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_own_check_in_a_run_is_guarded_by_step_verify_hooks() {
    let server = FakeModel::start().await;
    let plan = "# Pair\n\n## Steps\n- [ ] S1 Both\n  - verify: `test -f pair.txt`\n  - [ ] S1.1 One\n    - verify: `true`\n  - [ ] S1.2 Two\n    - verify: `true`\n";
    let config = "hooks:\n  - event: step.verify\n    matcher: S1\n    command: echo 'not the parent yet' >&2; exit 1\n";
    let (project, id) = approved_with(&server, plan, config, &[("pair.txt", "1 2\n")]).await;
    for step in ["S1.1", "S1.2"] {
        let output = project.tick_against(&server, &["mark", step, "done"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let todo = project.read(&format!(".tasks/{id}/TODO.md"));
    assert!(todo.contains("- [!] S1 Both"), "{todo}");
    assert!(server.requests().is_empty(), "no model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_keeps_refusing_step_claimed_stops_at_the_limit() {
    let server = FakeModel::start().await;
    let config = "hooks:\n  - event: step.claimed\n    command: echo 'not yet' >&2; exit 2\n";
    let (project, id) = approved_with(&server, PLAN, config, &[]).await;
    write_greeting(&server, "hello\n");
    // More claims than the limit: the run must stop using them at the limit.
    for n in 1..=6 {
        claim_done(&server, n);
    }
    let before = server.requests().len();
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(
        server.requests().len() - before,
        4,
        "one turn and three claims"
    );
    let todo = project.read(&format!(".tasks/{id}/TODO.md"));
    assert!(todo.contains("- [!] S1"), "{todo}");
    assert!(todo.contains("refused 3 times"), "{todo}");
    let told = tool_results(&server);
    assert!(
        told.iter()
            .any(|t| t.contains("step.claimed hook sent the claim back") && t.contains("not yet")),
        "{told:?}"
    );
    // The verify command never ran: the claim went back before it.
    assert!(!stderr(&output).contains("`grep -q hello greeting.txt`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_hangs_is_killed_at_its_timeout_and_the_run_goes_on() {
    let server = FakeModel::start().await;
    let config = "hooks:\n  - event: tool.post\n    command: sleep 60\n    timeout_s: 1\n";
    let (project, id) = approved_with(&server, PLAN, config, &[]).await;
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let started = Instant::now();
    let output = project.tick_against(&server, &["run", "--json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(30));
    let hooks: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "hook")
        .collect();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["hook_event"], "tool.post");
    assert_eq!(hooks[0]["command"], "sleep 60");
    assert_eq!(hooks[0]["timed_out"], true);
    assert_eq!(hooks[0]["blocked"], false);
    assert_eq!(hooks[0]["exit_code"], Value::Null);
    assert!(hooks[0]["error"].as_str().unwrap().contains("timeout"));
    let todo = project.read(&format!(".tasks/{id}/TODO.md"));
    assert!(todo.contains("- [x] S1"), "{todo}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_hook_command_is_reported_and_nothing_runs() {
    let server = FakeModel::start().await;
    let config = "hooks:\n  - event: tool.post\n    command: ./.hooks/format.sh\n";
    let (project, _id) = approved_with(&server, PLAN, config, &[]).await;
    let before = server.requests().len();
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(
            "error: the tool.post hook `./.hooks/format.sh` cannot run: `./.hooks/format.sh` does not exist"
        ),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    assert_eq!(server.requests().len(), before, "the model was asked");
    // Against a port nothing listens on, so the model checks fail at once.
    let (closed, _) = crate::common::fake_model::closed_port_url();
    let doctor = project
        .command(&closed, &["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hooks")
        .unwrap_or_else(|| panic!("{report}"))
        .clone();
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("tool.post `./.hooks/format.sh`: `./.hooks/format.sh` does not exist"),
        "{check}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_added_or_changed_after_approval_makes_the_run_refuse() {
    let server = FakeModel::start().await;
    let (project, id) = approved_with(&server, PLAN, "", &[(".hooks/done.sh", "exit 0\n")]).await;
    project.write_user_config("hooks:\n  - event: step.done\n    command: bash .hooks/done.sh\n");
    let before = server.requests().len();
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("+ step.done `bash .hooks/done.sh` (added)"),
        "{err}"
    );
    // The current task needs no id: the hint is what the person types, and it works below.
    assert!(
        err.contains("then `tick approve` to approve the hooks"),
        "{err}"
    );
    assert_eq!(server.requests().len(), before);

    let output = project.tick_against(&server, &["approve"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("approved the hooks of"),
        "{}",
        stderr(&output)
    );
    let approval = state(&project, &id).approval.unwrap();
    assert_eq!(approval.hooks.len(), 1);
    assert_eq!(approval.hooks[0].command, "bash .hooks/done.sh");
    assert!(approval.hooks[0].scripts.contains_key(".hooks/done.sh"));

    // The script it names is edited: a changed hook.
    project.write(".hooks/done.sh", "touch pwned\n");
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("~ step.done `bash .hooks/done.sh` (changed: `.hooks/done.sh`)"),
        "{}",
        stderr(&output)
    );
    assert!(!project.path("pwned").exists());

    // Approved again, the run goes ahead with it.
    project.write(".hooks/done.sh", "echo done >&2\n");
    let output = project.tick_against(&server, &["approve"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("S1 hook step.done `bash .hooks/done.sh` exit 0"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_hook_in_an_untrusted_clone_does_not_run() {
    let server = FakeModel::start().await;
    let (project, id) = approved_with(&server, PLAN, "", &[]).await;
    project.write(
        ".tasks/config.yaml",
        "hooks:\n  - event: step.start\n    command: touch hook-ran\n",
    );
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!project.path("hook-ran").exists(), "the clone's hook ran");
    let err = stderr(&output);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("do not run, because this repository is not trusted"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("step.start `touch hook-ran`"), "{err}");
    assert!(warnings[0].contains("`tick trust`"), "{err}");
    assert!(
        project
            .read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [x] S1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_cannot_write_git_or_tasks() {
    let server = FakeModel::start().await;
    let config = "hooks:\n  - event: tool.post\n    command: echo planted > .git/hooks/pre-commit; echo planted > .tasks/planted\n";
    let (project, id) = approved_with(&server, PLAN, config, &[]).await;
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(
        !project.path(".git/hooks/pre-commit").exists(),
        "{}",
        stderr(&output)
    );
    assert!(
        !project.path(".tasks/planted").exists(),
        "{}",
        stderr(&output)
    );
    if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
        // Without the sandbox the tamper guard puts them back and the step is not ticked.
        assert!(!output.status.success());
    } else {
        // The sandbox stopped the writes, and said so on the hook's stderr.
        assert!(output.status.success(), "{}", stderr(&output));
        let transcript = project.read(&format!(".tasks/{id}/runs/hooks.jsonl"));
        assert!(
            transcript.contains("Read-only file system")
                || transcript.contains("Permission denied"),
            "{transcript}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_submitted_hook_sends_the_draft_back_with_its_feedback() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.write(
        ".hooks/plan-check.py",
        "import json, sys\np = json.load(sys.stdin)\nassert p['hook_event_name'] == 'plan.submitted'\nmissing = [s['title'] for s in p['plan']['steps'] if not s.get('done_when')]\nif missing:\n    print('every step needs done_when; missing: ' + ', '.join(missing), file=sys.stderr)\n    sys.exit(2)\n",
    );
    project.write_user_config(
        "hooks:\n  - event: plan.submitted\n    command: python3 .hooks/plan-check.py\n",
    );
    let first = crate::common::scripts::login_plan();
    let mut second = first.clone();
    for step in second["steps"].as_array_mut().unwrap() {
        step["done_when"] = json!("it works");
    }
    server.push(openai_call("call_1", "submit_plan", first));
    server.push(openai_call("call_2", "submit_plan", second));
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (id, content) = &requests[1].tool_results()[0];
    assert_eq!(id, "call_1");
    assert!(
        content.contains("sent back by tick's plan.submitted hook"),
        "{content}"
    );
    assert!(
        content.contains("missing: Move login into a module, Keep the old entry point as a shim"),
        "{content}"
    );
    // The person sees only the revised draft, and the hook's two runs.
    let draft = project.read(".tasks/draft/PLAN.md");
    assert_eq!(draft.matches("done when: it works").count(), 3, "{draft}");
    let err = stderr(&output);
    assert!(
        err.contains("hook plan.submitted `python3 .hooks/plan-check.py` exit 2 in"),
        "{err}"
    );
    assert!(
        err.contains("hook plan.submitted `python3 .hooks/plan-check.py` exit 0 in"),
        "{err}"
    );
}

/// The cost of an empty hook (`true`) per event, on this machine: `benches/hooks.sh` runs it
/// (ignored in the suite: it measures, it does not check). Two figures: one hook run as
/// `tick::hooks::fire` does it (payload file, sandbox, bash), and per tool call in a real
/// `tick run` (the same plus the journal's snapshots around it), from runs with and without
/// the hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: benches/hooks.sh"]
async fn bench_an_empty_hook_per_event() {
    use tick::hooks::{Event, Fire, HookEntry, HookSet, Payload, fire};
    use tick::sandbox::{Kind, Policy, Sandboxing};
    use tick::tools::bash::CommandEnv;

    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let project = Workspace::sample();
    let set = HookSet::of(vec![HookEntry {
        event: Event::ToolPost,
        matcher: None,
        command: "true".to_owned(),
        timeout_s: None,
    }]);
    let bin = std::path::PathBuf::from(assert_cmd::cargo::cargo_bin!("tick"));
    let mut envs = vec![("unsandboxed", CommandEnv::default())];
    if tick::sandbox::available_with(Kind::Build, Some(&bin)).is_ok() {
        let policy = Policy::build(project.root()).with_helper(&bin);
        envs.push((
            "sandboxed",
            CommandEnv::default().with_sandbox(Sandboxing::On(policy)),
        ));
    }
    for (name, env) in &envs {
        let how = Fire {
            root: project.root(),
            env,
            read_only: false,
            runs_dir: project.temp().join("runs"),
            step: None,
        };
        let started = Instant::now();
        for _ in 0..rounds {
            let fired = fire(
                &set,
                &how,
                Event::ToolPost,
                "write_file",
                &Payload::default(),
                &mut |_| {},
            );
            assert_eq!(fired.ran, 1);
        }
        let per = started.elapsed() / rounds;
        println!(
            "bench: one empty hook, {name}: {:.1} ms",
            per.as_secs_f64() * 1e3
        );
    }

    // End to end: a step of `calls` writes, with and without a `tool.post` hook.
    let calls = 20;
    let mut times = Vec::new();
    for config in ["", "hooks:\n  - event: tool.post\n    command: 'true'\n"] {
        let server = FakeModel::start().await;
        let (project, _) = approved_with(&server, PLAN, config, &[]).await;
        let mut batch = vec![(
            "call_start".to_owned(),
            "update_step".to_owned(),
            json!({"id": "S1", "status": "in_progress"}),
        )];
        for n in 0..calls {
            batch.push((
                format!("call_w{n}"),
                "write_file".to_owned(),
                json!({"path": "greeting.txt", "content": format!("hello {n}\n")}),
            ));
        }
        let refs: Vec<(&str, &str, Value)> = batch
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.clone()))
            .collect();
        server.push(openai_calls(&refs));
        claim_done(&server, 1);
        let started = Instant::now();
        let output = project.tick_against(&server, &["run"]).await;
        times.push(started.elapsed());
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let per = times[1].saturating_sub(times[0]) / calls;
    println!(
        "bench: tick run, {calls} tool calls: {:.0} ms without the hook, {:.0} ms with it: {:.1} ms per event",
        times[0].as_secs_f64() * 1e3,
        times[1].as_secs_f64() * 1e3,
        per.as_secs_f64() * 1e3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_approved_hook_runs_read_only_after_the_approval() {
    let server = FakeModel::start().await;
    let hook = "import json, sys\np = json.load(sys.stdin)\ntry:\n    open('written-by-hook', 'w').write('x')\n    wrote = 'wrote'\nexcept OSError:\n    wrote = 'read-only'\nprint(json.dumps({'systemMessage': ' '.join([p['hook_event_name'], p['task_id'], p['phase'], wrote])}))\n";
    let config = "hooks:\n  - event: plan.approved\n    command: python3 .hooks/approved.py\n";
    let project = Workspace::sample();
    project.write(".hooks/approved.py", hook);
    project.write_user_config(config);
    project.write("plan.md", PLAN);
    let output = project
        .tick_against(&server, &["plan", "--from", "plan.md"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project.tick_against(&server, &["approve"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = project.task_id();
    let sandboxed = !std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1");
    let expected = format!(
        "hook: plan.approved {id} approved {}",
        if sandboxed { "read-only" } else { "wrote" }
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    assert_eq!(project.path("written-by-hook").exists(), !sandboxed);
}

/// The run snapshots' filters, and `--json`'s durations and the fake model's port.
fn snapshot_settings() -> insta::Settings {
    let mut settings = super::run_snapshots::settings();
    settings.add_filter(r#""duration_ms":\d+"#, r#""duration_ms":[MS]"#);
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings
}

/// The lines of a run's stderr about hooks: each hook's line, its message, and the excerpts
/// under it.
fn hook_lines(err: &str) -> String {
    let mut shown = Vec::new();
    let mut under_hook = false;
    for line in err.lines() {
        if line.contains(" hook ") || line.starts_with("hook ") || line.starts_with("hook:") {
            under_hook = true;
            shown.push(line);
        } else if under_hook && line.starts_with("    ") {
            shown.push(line);
        } else {
            under_hook = false;
        }
    }
    shown.join("\n")
}

/// Whether the suite runs with the sandbox (a hook under the read-only policy cannot write).
fn sandboxed() -> bool {
    !std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1")
}

/// A hook that tries to write the workspace and says, in its `systemMessage`, the payload's
/// event, ids, title, files and `reason`, and whether the write went through.
const TELLING: &str = r#"import json, sys
p = json.load(sys.stdin)
try:
    open("written-by-hook", "w").write("x")
    wrote = "wrote"
except OSError:
    wrote = "read-only"
said = [p["hook_event_name"], str(p["format"]), p.get("task_id", ""), p.get("step_id", "-"),
        repr(p.get("step_title")), ",".join(p.get("files", [])), "[WRITE]" if wrote == ("read-only" if sys.argv[1] == "1" else "wrote") else wrote]
print(json.dumps({"systemMessage": " ".join(said) + ": " + str(p.get("reason"))}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_stale_hook_runs_once_read_only_when_a_done_step_goes_stale() {
    let server = FakeModel::start().await;
    let config = format!(
        "hooks:\n  - event: step.stale\n    command: python3 .hooks/stale.py {}\n",
        u8::from(sandboxed())
    );
    let (project, id) =
        approved_with(&server, PLAN, &config, &[(".hooks/stale.py", TELLING)]).await;
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("step.stale"),
        "{}",
        stderr(&output)
    );

    // A person edits the done step's file: the next command marks it stale, and the hook
    // runs once for that transition, under the read-only policy.
    project.write("greeting.txt", "hello, by hand\n");
    let output = project.tick_against(&server, &["status"]).await;
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_step_stale_status", transcript(&project, &output));
    });
    assert!(!project.path("written-by-hook").exists() || !sandboxed());
    let again = project.tick_against(&server, &["status"]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains("step.stale"), "{}", stderr(&again));
    let transcript = project.read(&format!(".tasks/{id}/runs/hooks.jsonl"));
    let runs: Vec<Value> = serde_json::Deserializer::from_str(&transcript)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .filter(|run| run["event"] == "step.stale")
        .collect();
    assert_eq!(runs.len(), 1, "{transcript}");
    assert_eq!(runs[0]["step"], "S1");
    assert_eq!(runs[0]["exit_code"], 0);
}

/// `tick args...` (a run) of [`PLAN`] approved under `config`, the model writing the
/// greeting and claiming S1 done; it must succeed.
async fn greeting_run(config: &str, files: &[(&str, &str)], args: &[&str]) -> Output {
    let server = FakeModel::start().await;
    let (project, _) = approved_with(&server, PLAN, config, files).await;
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    let output = project.tick_against(&server, args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tick_run_shows_each_hook_on_one_line_its_output_with_v_and_hook_events_in_json() {
    let config = "hooks:\n  - event: tool.post\n    command: bash .hooks/fmt.sh\n  - event: step.done\n    command: 'true'\n";
    let script = "echo \"formatted after $TICK_HOOK_EVENT\" >&2\necho '{\"systemMessage\": \"greeting formatted\"}'\n";
    let files = [(".hooks/fmt.sh", script)];
    // Verbose: each hook's line, its stderr and stdout excerpts, and its message.
    let output = greeting_run(config, &files, &["-v", "run"]).await;
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_run_verbose", hook_lines(&stderr(&output)));
    });
    // Plain: one line each (and the hook's `systemMessage`); `--json`: one `hook` event each.
    let output = greeting_run(config, &files, &["run"]).await;
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_run_plain", hook_lines(&stderr(&output)));
    });
    let output = greeting_run(config, &files, &["run", "--json"]).await;
    let hooks: Vec<String> = stdout(&output)
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["event"] == "hook")
        .map(str::to_owned)
        .collect();
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_run_json", hooks.join("\n"));
    });
}

/// The compact executor's edits are `write_file` calls to the hooks: a `tool.pre` exit 2
/// refuses one (the model hears why when asked again), a `tool.post` formatter rewrites the
/// file and its change is the step's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compact_executor_runs_tool_pre_and_tool_post_around_its_edits() {
    use crate::common::scripts::openai_text;
    let guard = "#!/usr/bin/env bash\n# tool.pre: no rate of 3\nif grep -q 'RATE = 3'; then\n  echo 'a rate of 3 is refused here' >&2\n  exit 2\nfi\n";
    let config = "hooks:\n  - event: tool.pre\n    matcher: write_file\n    command: bash .hooks/guard.sh\n  - event: tool.post\n    matcher: write_file\n    command: python3 .hooks/format.py\n";
    let plan = "# Rate\n\n## Summary\nRaise the rate.\n\n## Steps\n- [ ] S1 Raise the rate\n  - files: calc.py\n  - verify: `grep -q 'RATE = 2' calc.py`\n";
    let server = FakeModel::start().await;
    let (project, id) = approved_with(
        &server,
        plan,
        config,
        &[
            ("calc.py", "RATE = 1\n"),
            (".hooks/guard.sh", guard),
            (".hooks/format.py", FORMATTER),
        ],
    )
    .await;
    let decide = || openai_text(&json!({"action": "change", "path": "calc.py"}).to_string());
    let block = |to: &str| {
        openai_text(&format!(
            "<<<<<<< SEARCH\nRATE = 1\n=======\nRATE = {to}\n>>>>>>> REPLACE\n"
        ))
    };
    server.push(decide());
    server.push(block("3"));
    server.push(decide());
    server.push(block("2"));
    let asks = || -> Vec<String> {
        server
            .requests()
            .iter()
            .filter(|r| r.body.get("messages").is_some())
            .map(|r| r.body.to_string())
            .collect()
    };
    let before = asks().len();
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("TICK_EXECUTOR", "compact");
        })
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(project.read("calc.py"), "# formatted\nRATE = 2\n");
    let requests = asks();
    assert_eq!(requests.len() - before, 4, "two decisions, two codes");
    let asked_again = &requests[before + 2];
    assert!(
        asked_again.contains("tool.pre hook refused this call")
            && asked_again.contains("a rate of 3 is refused here"),
        "{asked_again}"
    );
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_compact_executor", hook_lines(&stderr(&output)));
    });
    let record = &state(&project, &id).steps[&"S1".parse().unwrap()];
    assert_eq!(record.files_changed, ["calc.py"]);
    assert!(record.outside_edits.is_empty(), "{record:?}");
    assert!(
        project
            .read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [x] S1")
    );
}

#[test]
fn a_session_start_hook_runs_read_only_and_the_timeline_shows_it() {
    let project = Workspace::sample();
    project.write(".hooks/start.py", TELLING);
    project.write_user_config(&format!(
        "hooks:\n  - event: session.start\n    command: python3 .hooks/start.py {}\n",
        u8::from(sandboxed())
    ));
    let (closed, _) = crate::common::fake_model::closed_port_url();
    let config_home = project.user_config();
    let config_home = config_home.parent().unwrap().parent().unwrap();
    let mut pty = super::session::Pty::spawn_sized(
        project.root(),
        &closed,
        &[],
        &[("XDG_CONFIG_HOME", &config_home.display().to_string())],
        (40, 160),
    );
    let screen = pty.wait_for("hook session.start");
    let line =
        regex::Regex::new(r"hook session.start `python3 .hooks/start.py [01]` exit 0 in \d+\.\ds")
            .unwrap();
    assert!(line.is_match(&screen), "{screen}");
    pty.quit();
    assert!(!project.path("written-by-hook").exists() || !sandboxed());
    let transcript = project.read(".tasks/draft/runs/hooks.jsonl");
    let run: Value = serde_json::from_str(transcript.lines().next().unwrap()).unwrap();
    assert_eq!(run["event"], "session.start");
    let said: Value = serde_json::from_str(run["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        said["systemMessage"],
        "session.start 1  - None  [WRITE]: None"
    );
}

/// [`PLAN`] with an S2 that depends on S1.
fn two_steps() -> String {
    format!(
        "{PLAN}- [ ] S2 Create farewell.txt\n  - files: farewell.txt\n  - depends: S1\n  - verify: `grep -q bye farewell.txt`\n"
    )
}

/// The model does S2: writes the farewell, claims it done.
fn farewell(server: &FakeModel) {
    let start = json!({"id": "S2", "status": "in_progress"});
    let write = json!({"path": "farewell.txt", "content": "bye\n"});
    let done = json!({"id": "S2", "status": "done"});
    let calls = [
        ("call_s2", "update_step", start),
        ("call_bye", "write_file", write),
    ];
    server.push(openai_calls(&calls));
    server.push(openai_call("call_s2_done", "update_step", done));
}

/// [`two_steps`] approved with a `step.stale` hook ([`TELLING`]), the model set to do S1.
async fn two_steps_with_a_stale_hook() -> (FakeModel, Workspace) {
    let config = format!(
        "hooks:\n  - event: step.stale\n    command: python3 .hooks/stale.py {}\n",
        u8::from(sandboxed())
    );
    let server = FakeModel::start().await;
    let hook = [(".hooks/stale.py", TELLING)];
    let (project, _) = approved_with(&server, &two_steps(), &config, &hook).await;
    write_greeting(&server, "hello\n");
    claim_done(&server, 1);
    (server, project)
}

/// Whatever marks a done step stale fires `step.stale`: here `tick undo S1`, which makes S2
/// (it depends on S1) stale in its transaction; the payload's `reason` is S2's `stale:` line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_marking_a_dependent_stale_fires_its_step_stale_hook() {
    let (server, project) = two_steps_with_a_stale_hook().await;
    farewell(&server);
    let output = project.tick_against(&server, &["run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = project.tick_against(&server, &["undo", "S1"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    snapshot_settings().bind(|| {
        insta::assert_snapshot!(
            "hooks_step_stale_undo",
            hook_lines(&stderr(&output)).replace(&project.task_id(), "[TASK]")
        );
    });
}

/// A step `tick run` finds stale as it starts: its `step.stale` hook is a `hook` event of the
/// run's `--json` (and the only one: nothing else has a hook).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_the_run_finds_stale_has_its_hook_event_in_the_runs_json() {
    let (server, project) = two_steps_with_a_stale_hook().await;
    let output = project
        .tick_against(&server, &["run", "--steps", "1"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    project.write("greeting.txt", "hello again\n");
    farewell(&server);
    let output = project.tick_against(&server, &["run", "--json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let events: Vec<String> = stdout(&output)
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["event"] == "hook")
        .map(|l| l.replace(&project.task_id(), "[TASK]"))
        .collect();
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("hooks_step_stale_run_json", events.join("\n"));
    });
}

/// `tick doctor` lists the hooks that apply, in the order they run, with each command that
/// cannot run here, and names the untrusted repository's hooks that do not run.
#[test]
fn doctor_lists_the_hooks_that_apply_and_checks_each_command() {
    let project = Workspace::sample();
    project.write(".hooks/stale.py", TELLING);
    project.write_user_config(
        "hooks:\n  - event: step.stale\n    command: python3 .hooks/stale.py 1\n  - event: tool.post\n    matcher: write_file\n    command: ./.hooks/format.sh\n  - event: session.start\n    command: 'true'\n",
    );
    project.write(
        ".tasks/config.yaml",
        "hooks:\n  - event: step.start\n    command: touch hook-ran\n",
    );
    let (closed, _) = crate::common::fake_model::closed_port_url();
    let output = project.command(&closed, &["doctor"]).output().unwrap();
    let shown = stdout(&output);
    let hooks: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("FAIL hooks"))
        .take_while(|l| l.trim_start().starts_with("FAIL hooks") || l.starts_with("         "))
        .collect();
    snapshot_settings().bind(|| insta::assert_snapshot!("hooks_doctor", hooks.join("\n")));
}
