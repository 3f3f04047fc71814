//! The compact planner for small models (`planner: compact | auto`) against the fake loopback
//! server: schema-constrained requests, one repair call for a draft the repository
//! contradicts, warnings kept in the draft, the switch from a prose-answering agent under
//! `auto`, byte-identical request prefixes, and `tick doctor`'s structured-output probe.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, RecordedRequest, Reply};
use crate::common::scripts::writes_file;
use crate::common::scripts::{anthropic_call, openai_call, openai_text};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, json_events, stderr, stdout};

/// llama.cpp's `GET /props`, stating a context of `n_ctx` tokens.
fn props(n_ctx: u32) -> Reply {
    crate::common::scripts::llamacpp_props(n_ctx)
}

/// A streamed JSON answer, as a server constrained by `response_format` sends it, with
/// llama.cpp's usage (cached prompt tokens included) and timings.
fn json_answer(value: &Value) -> Reply {
    let text = value.to_string();
    let (a, b) = text.split_at(text.len() / 2);
    let data = |chunk: Value| format!("data: {chunk}\n\n");
    Reply::sse([
        data(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": a}, "finish_reason": null}]}),
        ),
        data(json!({"choices": [{"index": 0, "delta": {"content": b}, "finish_reason": null}]})),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        data(
            json!({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 640}}, "timings": {"cache_n": 640, "prompt_n": 260}}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ])
}

fn plan(files: &[&str], verify: &str) -> Value {
    json!({
        "title": "Reject empty passwords",
        "summary": "Make login refuse an empty password and test it.",
        "steps": [
            {"title": "Refuse empty passwords in login", "files": files, "new_files": [],
             "verify": verify},
            {"title": "Add a test for the refusal", "files": ["src/login.rs"], "new_files": [],
             "verify": "grep -n test src/login.rs"},
        ],
    })
}

async fn compact_plan(
    project: &Workspace,
    replies: Vec<Reply>,
    args: &[&str],
) -> (std::process::Output, FakeModel) {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    let output = project
        .tick_with(&server, args, |cmd| {
            cmd.env("TICK_PLANNER", "compact");
        })
        .await;
    (output, server)
}

/// The model requests (not the `/props` question).
fn model_requests(server: &FakeModel) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compact_pipelines_requests_carry_the_schema_and_build_the_context() {
    let project = Workspace::sample();
    let (output, server) = compact_plan(
        &project,
        vec![
            props(16_384),
            json_answer(&plan(&["src/login.rs"], "grep -n login src/login.rs")),
        ],
        &["plan", "--json", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    let all = server.requests();
    assert_eq!(
        (all[0].method.as_str(), all[0].path.as_str()),
        ("GET", "/props")
    );
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 1, "the repository fits: no localize call");
    let body = &requests[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["title", "summary", "steps"]));
    // Existing files may only be named from the list, by the server's grammar.
    assert_eq!(
        schema["properties"]["steps"]["items"]["properties"]["files"]["items"]["enum"],
        json!([".gitignore", "Cargo.toml", "src/login.rs", "src/main.rs"])
    );
    assert!(body.get("tools").is_none(), "{body}");
    // The context: the file list, the files' text, the test command; no example paths.
    let user = requests[0].last_user_text();
    assert_contains(&user, "src/login.rs (3 lines)");
    assert_contains(&user, "pub fn login(user: &str, pass: &str) -> bool {");
    assert_contains(
        &user,
        "The tests run with: cargo test (stated in Cargo.toml)",
    );
    assert_contains(&user, "Goal: Reject empty passwords in login");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains(".rs") && !system.contains('`'), "{system}");

    let plan_md = project.read(".tasks/draft/PLAN.md");
    assert_contains(&plan_md, "- [ ] S1 Refuse empty passwords in login");
    assert_contains(&plan_md, "files: src/login.rs");
    // The repository's test command is in each step's verify, for the person to approve:
    // the executor adds nothing at run time (issue 25, finding 4).
    assert_contains(
        &plan_md,
        "verify: `grep -n login src/login.rs`, `cargo test`",
    );
    assert!(!plan_md.contains("tick's check of this draft"), "{plan_md}");
    // Cached prompt tokens reach the `--json` usage events and the draft event.
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let usage = events.iter().find(|e| e["event"] == "usage").unwrap();
    assert_eq!(usage["usage"]["cached_tokens"], 640, "{usage}");
    let draft = events.iter().find(|e| e["event"] == "draft").unwrap();
    assert_eq!(draft["usage"]["input_tokens"], 900);
}

/// Issue 25, finding 3: a `.tasks/.local/` probe cache git tracks came with the repository,
/// not from a probe on this machine: tick does not use it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_cache_git_tracks_is_not_used() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let key = format!("{}/v1 test-model", server.url());
    project.write(
        ".tasks/.local/structured-output.yaml",
        format!(
            "probes:\n  \"{key}\":\n    method: forced_tool\n    held: true\n    detail: shipped\n"
        ),
    );
    project.git(&["add", "-f", ".tasks/.local/structured-output.yaml"]);
    project.git(&["commit", "-qm", "ship a probe cache"]);
    server.push(props(16_384));
    server.push(json_answer(&plan(
        &["src/login.rs"],
        "grep -n login src/login.rs",
    )));
    let output = project
        .tick_with(
            &server,
            &["plan", "Reject empty passwords in login"],
            |cmd| {
                cmd.env("TICK_PLANNER", "compact");
            },
        )
        .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(
        requests[0].body["response_format"]["type"], "json_schema",
        "{}",
        requests[0].body
    );
    assert!(
        requests[0].body.get("tool_choice").is_none(),
        "{}",
        requests[0].body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_plan_call_the_server_fails_is_retried_and_the_retry_is_shown() {
    let project = Workspace::sample();
    let (output, server) = compact_plan(
        &project,
        vec![
            props(16_384),
            Reply::status(500).header("retry-after", "0"),
            json_answer(&plan(&["src/login.rs"], "grep -n login src/login.rs")),
        ],
        &["plan", "--json", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    assert_eq!(
        model_requests(&server).len(),
        2,
        "the failed call and its retry"
    );
    let retries: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|e| e["event"] == "retry")
        .collect();
    assert_eq!(retries.len(), 1, "{}", stdout(&output));
    assert_eq!(retries[0]["attempt"], 2);
    assert_contains(retries[0]["reason"].as_str().unwrap(), "500");
    assert_contains(&project.read(".tasks/draft/PLAN.md"), "files: src/login.rs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_naming_a_missing_file_gets_exactly_one_repair_call() {
    let project = Workspace::sample();
    let (output, server) = compact_plan(
        &project,
        vec![
            props(16_384),
            json_answer(&plan(
                &["src/auth/session.rs"],
                "grep -n login src/login.rs",
            )),
            json_answer(&plan(&["src/login.rs"], "grep -n login src/login.rs")),
        ],
        &["plan", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 2, "one plan call and one repair call");
    let repair = requests[1].last_user_text();
    assert_contains(
        &repair,
        "S1 names `src/auth/session.rs`, which does not exist",
    );
    assert_eq!(repair.matches("\n- ").count(), 1, "{repair}");
    assert_eq!(requests[1].body["response_format"]["type"], "json_schema");
    let plan_md = project.read(".tasks/draft/PLAN.md");
    assert_contains(&plan_md, "files: src/login.rs");
    assert!(!plan_md.contains("src/auth"), "{plan_md}");
    assert!(!plan_md.contains("tick's check of this draft"), "{plan_md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_still_wrong_draft_keeps_its_warnings() {
    let project = Workspace::sample();
    let wrong = plan(&["src/auth/session.rs"], "mytool --check data.csv");
    let (output, server) = compact_plan(
        &project,
        vec![props(16_384), json_answer(&wrong), json_answer(&wrong)],
        &["plan", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    assert_eq!(model_requests(&server).len(), 2, "no second repair");
    assert_contains(
        &stderr(&output),
        "warning: tick's check of the draft, kept in it: S1 names `src/auth/session.rs`",
    );
    let plan_md = project.read(".tasks/draft/PLAN.md");
    assert_contains(
        &plan_md,
        "tick's check of this draft, not fixed by the model: S1 names `src/auth/session.rs`, which does not exist",
    );
    assert_contains(
        &plan_md,
        "S1's verify runs `mytool`, which is not a program",
    );
    assert_contains(
        &plan_md,
        "S1's verify reads `data.csv`, which does not exist",
    );
    // It is still a draft to review, not a plan waiting for answers.
    assert_contains(&plan_md, "status: draft");
    assert_success(&project.tick_against(&server, &["show"]).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answering_prose_in_agent_mode_switches_to_compact_under_auto() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    // A large context: `auto` starts with the agent.
    server.push(props(131_072));
    server.push(openai_text(
        "Here is my plan: 1. Edit src/login.rs. 2. Add tests. Let me know!",
    ));
    server.push(json_answer(&plan(
        &["src/login.rs"],
        "grep -n login src/login.rs",
    )));
    let output = project
        .tick_with(
            &server,
            &["plan", "Reject empty passwords in login"],
            |cmd| {
                cmd.env("TICK_PLANNER", "auto");
            },
        )
        .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(
        requests.len(),
        2,
        "no reminder: the prose answer hands over at once"
    );
    assert!(requests[0].tool_names().contains(&"submit_plan".to_owned()));
    assert!(requests[0].body.get("response_format").is_none());
    assert_eq!(requests[1].body["response_format"]["type"], "json_schema");
    assert!(requests[1].body.get("tools").is_none());
    assert_contains(
        &project.read(".tasks/draft/PLAN.md"),
        "- [ ] S1 Refuse empty passwords in login",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_keeps_planning_when_auto_finds_a_large_context_and_tool_calls() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(props(131_072));
    server.push(openai_call(
        "c1",
        "submit_plan",
        crate::common::scripts::login_plan(),
    ));
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_PLANNER", "auto");
        })
        .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.get("response_format").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_prefixes_of_one_conversation_are_byte_identical_up_to_the_new_turn() {
    let project = Workspace::sample();
    // Too large for a small context: the pipeline localizes first.
    let body = "    let y = x.wrapping_mul(31).rotate_left(7);\n".repeat(8);
    let mut big = String::new();
    for i in 0..20 {
        big.push_str(&format!(
            "pub fn helper_{i}(x: u32) -> u32 {{\n{body}    x + {i}\n}}\n"
        ));
    }
    project.write("src/helpers.rs", &big);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "helpers"]);
    let (output, server) = compact_plan(
        &project,
        vec![
            props(4096),
            json_answer(&json!({"files_to_read": ["src/helpers.rs"]})),
            json_answer(&plan(&["src/nope.rs"], "grep -n login src/login.rs")),
            json_answer(&plan(&["src/login.rs"], "grep -n login src/login.rs")),
        ],
        &["plan", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 3, "localize, plan, repair");
    assert_eq!(
        requests[0].body["response_format"]["json_schema"]["name"],
        "files_to_read"
    );
    assert_contains(
        &requests[0].last_user_text(),
        "=== src/helpers.rs (outline: its definitions by line) ===",
    );
    // Its whole text does not fit what is left of the budget, and its outline was shown
    // already: the plan turn does not send it again.
    let plan_turn = requests[1].last_user_text();
    assert!(plan_turn.starts_with("Write the plan"), "{plan_turn}");
    for pair in requests.windows(2) {
        let (before, after) = (pair[0].messages(), pair[1].messages());
        assert_eq!(after.len(), before.len() + 2, "the answer and one new turn");
        let bytes = |m: &[Value]| serde_json::to_string(m).unwrap();
        assert_eq!(bytes(&after[..before.len()]), bytes(before));
        assert_eq!(after[before.len()]["role"], "assistant");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_answer_after_the_repair_is_an_error_and_writes_no_draft() {
    let project = Workspace::sample();
    let (output, _) = compact_plan(
        &project,
        vec![
            props(16_384),
            openai_text("I think you should edit the file."),
            openai_text("Sure!"),
        ],
        &["plan", "Reject empty passwords in login"],
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_contains(&stderr(&output), "the model's plan answer was not usable");
    assert_contains(&stderr(&output), "no draft was written");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
}

/// `tick doctor` with the compact planner: the first method's probe is answered in prose (a
/// server that accepts `response_format` and ignores it), the second's with the schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_detects_a_server_that_accepts_but_does_not_enforce() {
    let project = Workspace::sample();
    std::fs::create_dir_all(project.path(".tasks")).unwrap();
    let server = FakeModel::start().await;
    server.push(openai_call(
        "call_1",
        "report_ready",
        json!({"ready": true}),
    ));
    server.push(openai_text("Hello! Nice to meet you."));
    server.push(openai_call(
        "call_2",
        "tick_probe",
        json!({"tick_probe": "enforced", "digit": 7}),
    ));
    let output = project
        .tick_with(&server, &["doctor", "--json"], |cmd| {
            cmd.env("TICK_PLANNER", "compact");
        })
        .await;
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "structured")
        .unwrap();
    assert_eq!(check["ok"], true, "{check}");
    assert_contains(
        check["detail"].as_str().unwrap(),
        "`test-model`: forced tool call held on a probe",
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body["response_format"]["type"], "json_schema");
    assert_eq!(
        requests[2].body["tool_choice"]["function"]["name"],
        "tick_probe"
    );
    // Cached for the planner, and not committed.
    let cache = project.read(".tasks/.local/structured-output.yaml");
    assert_contains(&cache, "method: forced_tool");
    assert_eq!(
        project.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_when_no_method_holds() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_call(
        "call_1",
        "report_ready",
        json!({"ready": true}),
    ));
    server.push(openai_text("Hello!"));
    server.push(openai_text("Hi there."));
    let output = project
        .tick_with(&server, &["doctor"], |cmd| {
            cmd.env("TICK_PLANNER", "auto");
        })
        .await;
    let text = stdout(&output);
    assert_contains(&text, "FAIL structured");
    assert_contains(
        &text,
        "no method held (response_format json_schema: not enforced",
    );
    assert_contains(&text, "forced tool call: not enforced");
    // Informational: the exit code is the other checks'.
    assert_eq!(output.status.code(), Some(0), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_plans_again_with_the_persons_feedback() {
    let project = Workspace::sample();
    let (output, server) = compact_plan(
        &project,
        vec![
            props(16_384),
            json_answer(&plan(&["src/login.rs"], "grep -n login src/login.rs")),
            props(16_384),
            json_answer(&plan(
                &["src/login.rs", "src/main.rs"],
                "grep -n login src/main.rs",
            )),
        ],
        &["plan", "Reject empty passwords in login"],
    )
    .await;
    assert_success(&output);
    let output = project
        .tick_with(
            &server,
            &["plan", "--revise", "Also check the caller in main"],
            |cmd| {
                cmd.env("TICK_PLANNER", "compact");
            },
        )
        .await;
    assert_success(&output);
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 2);
    assert_contains(
        &requests[1].last_user_text(),
        "Goal: Reject empty passwords in login\n\nA person reviewed an earlier plan for this goal and asks: Also check the caller in main",
    );
    assert_contains(
        &project.read(".tasks/draft/PLAN.md"),
        "files: src/login.rs, src/main.rs",
    );
}

/// Anthropic constrains an answer only through a forced tool: the plan arrives as a tool call,
/// and the repair turn answers that call before it says what was wrong, as the API requires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_gets_a_forced_tool_and_a_valid_repair_turn() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(anthropic_call(
        "toolu_1",
        "plan",
        &plan(&["src/auth/session.rs"], "grep -n login src/login.rs"),
    ));
    server.push(anthropic_call(
        "toolu_2",
        "plan",
        &plan(&["src/login.rs"], "grep -n login src/login.rs"),
    ));
    let url = server.url();
    let output = project
        .tick_with(
            &server,
            &["plan", "Reject empty passwords in login"],
            |cmd| {
                cmd.env("TICK_PROVIDER", "anthropic")
                    .env("TICK_BASE_URL", &url)
                    .env("ANTHROPIC_API_KEY", "test-key")
                    .env("TICK_PLANNER", "compact");
            },
        )
        .await;
    assert_success(&output);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "no context question to a server that is not llama.cpp"
    );
    for request in &requests {
        assert_eq!(
            request.body["tool_choice"],
            json!({"type": "tool", "name": "plan"})
        );
        assert_eq!(request.body["tools"][0]["name"], "plan");
    }
    let messages = requests[1].messages();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_contains(
        messages[2]["content"][1]["text"].as_str().unwrap(),
        "S1 names `src/auth/session.rs`, which does not exist",
    );
    assert_contains(&project.read(".tasks/draft/PLAN.md"), "files: src/login.rs");
}

// The compact executor (`executor: compact`): per edit, a schema-constrained decision (action
// and path), then the code as plain text (a fenced block, or SEARCH/REPLACE blocks), through
// the guards and the write policy, ticked only when the step's verify and the repository's
// tests pass. Workspaces are `Workspace`s (a git repository with a README).

use crate::common::workspace::Run;

/// `tick run --json` in `ws` against `server`, with `executor`, as the `openai` provider.
async fn run_with_model(ws: &Workspace, server: &FakeModel, executor: &str) -> Run {
    run_as(ws, server, executor, "openai").await
}

/// `tick run --json` in `ws` against `server`, with `executor` and `provider`.
async fn run_as(ws: &Workspace, server: &FakeModel, executor: &str, provider: &str) -> Run {
    let url = format!("{}/v1", server.url());
    let executor = executor.to_owned();
    let mut cmd = ws.tick();
    cmd.args(["run", "--json"])
        .write_stdin("")
        .env("TICK_PROVIDER", provider)
        .env("TICK_BASE_URL", &url)
        .env("TICK_MODEL", "test-model")
        .env("TICK_API_KEY", "test-key")
        .env("TICK_EXECUTOR", &executor);
    Run::off_runtime(move || cmd.output().unwrap()).await
}

/// A repository with tests ([`with_repo_tests`]) and an approved step that bumps the
/// version in `app.txt`, changing `files`, checked by its own grep and then the repository's
/// tests (as the compact planner drafts it); `candidates` sets `limits.compact_candidates`.
fn version_bump(candidates: Option<u32>, files: &str) -> (Workspace, String) {
    let ws = with_repo_tests();
    if let Some(n) = candidates {
        ws.write(
            ".tasks/config.yaml",
            format!("limits:\n  compact_candidates: {n}\n"),
        );
    }
    let id = ws.approve(&one_step(
        "Bump the version",
        files,
        "grep -q 'version 2' app.txt`, `make test",
    ));
    (ws, id)
}

fn one_step(title: &str, files: &str, verify: &str) -> String {
    format!(
        "# Change\n\n## Summary\nOne step.\n\n## Steps\n- [ ] S1 {title}\n  - files: {files}\n  - verify: `{verify}`\n"
    )
}

/// The decision: `action` (`add` or `change`) on `path`.
fn decide(action: &str, path: &str) -> Reply {
    json_answer(&json!({"action": action, "path": path}))
}

/// An `add`'s code, in a fence.
fn fenced(code: &str) -> Reply {
    openai_text(&format!("```rust\n{code}\n```\n"))
}

/// A `change`'s code: one SEARCH/REPLACE block.
fn search_replace(search: &str, replace: &str) -> Reply {
    openai_text(&format!(
        "<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    ))
}

/// A `change` of `path`: the decision, then the block.
fn change(server: &FakeModel, path: &str, search: &str, replace: &str) {
    server.push(decide("change", path));
    server.push(search_replace(search, replace));
}

fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// An agent's `update_step` call claiming S1 done.
fn done_claim(call_id: &str) -> Reply {
    openai_call(
        call_id,
        "update_step",
        json!({"id": "S1", "status": "done"}),
    )
}

/// A workspace whose `lib.rs` has `one()`, and an approved step on `lib.rs` checked by
/// `verify`; returns it with the task id.
fn lib_with_one(title: &str, verify: &str) -> (Workspace, String) {
    let ws = Workspace::new();
    ws.write("lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    let id = ws.approve(&one_step(title, "lib.rs", verify));
    (ws, id)
}

/// The model's add of a test for `one()` to `lib.rs`: the decision, then the fenced code.
fn add_one_is_one(server: &FakeModel) {
    server.push(decide("add", "lib.rs"));
    server.push(fenced(
        "#[test]\nfn one_is_one() {\n    assert_eq!(one(), 1);\n}",
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_edit_outside_the_steps_files_is_refused_naming_the_allowed_ones() {
    let ws = Workspace::new();
    ws.write("calc.py", "RATE = 1\n");
    crate::common::workspace::git(ws.root(), &["add", "."]);
    crate::common::workspace::git(ws.root(), &["commit", "-qm", "calc"]);
    let id = ws.approve(&one_step(
        "Raise the rate",
        "calc.py",
        "grep -q 'RATE = 2' calc.py",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "setup.py"));
    change(&server, "calc.py", "RATE = 1", "RATE = 2");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!ws.exists("setup.py"), "the refused edit was not written");
    assert_eq!(ws.read("calc.py"), "RATE = 2\n");
    assert_contains(&ws.todo(&id), "- [x] S1 Raise the rate");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 3);
    // Each decision is constrained by its schema, the step's files its path's enum.
    for request in &requests[..2] {
        let format = &request.body["response_format"];
        assert_eq!(format["type"], "json_schema", "{}", request.body);
        assert_eq!(format["json_schema"]["name"], "edit");
        let schema = &format["json_schema"]["schema"];
        assert_eq!(schema["required"], json!(["action", "path"]));
        assert_eq!(
            schema["properties"]["action"]["enum"],
            json!(["add", "change"])
        );
        assert_eq!(schema["properties"]["path"]["enum"], json!(["calc.py"]));
        assert!(request.body.get("tools").is_none(), "{}", request.body);
    }
    // The code comes as plain text: no schema, and no grammar for an `openai` server.
    let code = &requests[2];
    assert!(code.body.get("response_format").is_none(), "{}", code.body);
    assert!(code.body.get("grammar").is_none(), "{}", code.body);
    assert_contains(&code.last_user_text(), "<<<<<<< SEARCH\n");
    // After the system prompt: the ask, the decision, the ask for its code.
    assert_eq!(
        code.messages()[2]["content"],
        r#"{"action":"change","path":"calc.py"}"#
    );
    let first = requests[0].last_user_text();
    assert_contains(&first, "Step: S1 Raise the rate");
    assert_contains(&first, "calc.py:\n```\nRATE = 1\n```");
    let again = requests[1].last_user_text();
    assert_contains(
        &again,
        "Not applied, an earlier answer: `setup.py` is not one of this step's files; edit \
         only `calc.py`",
    );
    // The refused answer is not shown again (a small model repeats it); the ask is made
    // again with the refusal added, so the prompt still begins as the first one did.
    assert_eq!(requests[1].user_texts().len(), 1);
    assert!(again.starts_with(&first), "{again}");
    assert_eq!(requests[0].messages()[0], requests[1].messages()[0]);
    assert_ne!(
        requests[0].body["temperature"],
        requests[1].body["temperature"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_edit_deleting_an_unnamed_function_is_refused_listing_it() {
    let ws = Workspace::new();
    let stats =
        "def mean(v):\n    return sum(v) / len(v)\n\n\ndef minimum(v):\n    return min(v)\n";
    ws.write("stats.py", stats);
    let id = ws.approve(&one_step(
        "Make mean return None for an empty list",
        "stats.py",
        "grep -q 'return None' stats.py",
    ));
    let server = FakeModel::start().await;
    // The whole file rewritten, without `minimum`.
    change(
        &server,
        "stats.py",
        stats.trim_end(),
        "def mean(v):\n    if not v:\n        return None\n    return sum(v) / len(v)\n",
    );
    // Asked again from the decision.
    server.push(decide("change", "stats.py"));
    server.push(search_replace(
        "def mean(v):\n    return sum(v) / len(v)",
        "def mean(v):\n    if not v:\n        return None\n    return sum(v) / len(v)",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("stats.py"),
        "def mean(v):\n    if not v:\n        return None\n    return sum(v) / len(v)\n\n\ndef minimum(v):\n    return min(v)\n"
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 4);
    let again = requests[2].last_user_text();
    assert_contains(
        &again,
        "this edit of `stats.py` would remove `function minimum`, which the step does not name",
    );
    // The retry keeps the prefix: the system prompt, then the first ask, made again with the
    // refusal added (the refused decision and code are not shown again).
    assert_eq!(requests[0].messages()[0], requests[2].messages()[0]);
    assert_eq!(requests[2].messages().len(), 2);
    assert!(again.starts_with(&requests[0].last_user_text()), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indentation_shifted_search_is_matched_and_the_replacement_reindented() {
    let ws = Workspace::new();
    ws.write(
        "stats.py",
        "class Stats:\n    def mean(self, v):\n        return sum(v) / len(v)\n",
    );
    let id = ws.approve(&one_step(
        "Make mean return None for an empty list",
        "stats.py",
        "grep -q '            return None' stats.py",
    ));
    let server = FakeModel::start().await;
    // Written without the class's indentation.
    change(
        &server,
        "stats.py",
        "def mean(self, v):\n    return sum(v) / len(v)",
        "def mean(self, v):\n    if not v:\n        return None\n    return sum(v) / len(v)",
    );
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("stats.py"),
        "class Stats:\n    def mean(self, v):\n        if not v:\n            return None\n        return sum(v) / len(v)\n"
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
    assert_eq!(model_requests(&server).len(), 2);
}

/// A workspace whose Makefile states the repository's tests (`make test`): they pass while
/// `keep.txt` says `ok`.
fn with_repo_tests() -> Workspace {
    let ws = Workspace::new();
    ws.write("Makefile", "test:\n\tgrep -q ok keep.txt\n");
    ws.write("keep.txt", "ok\n");
    ws.write("app.txt", "version 1\n");
    crate::common::workspace::git(ws.root(), &["add", "."]);
    crate::common::workspace::git(ws.root(), &["commit", "-qm", "app"]);
    ws
}

/// Issue 25, finding 4: a README's shell line is never a test command the executor runs; it
/// runs only the step's approved `verify`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readme_shell_line_is_never_run_as_the_test_command() {
    let ws = Workspace::new();
    ws.write(
        "README.md",
        "# demo\n\nTests:\n\n    make test; echo RAN > ran.txt\n",
    );
    ws.write("lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    crate::common::workspace::git(ws.root(), &["add", "."]);
    crate::common::workspace::git(ws.root(), &["commit", "-qm", "readme"]);
    let id = ws.approve(&one_step("Test one", "lib.rs", "grep -q one_is_one lib.rs"));
    let server = FakeModel::start().await;
    add_one_is_one(&server);
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!ws.exists("ran.txt"), "the README's line ran: {run:#?}");
    let checks: Vec<String> = events(&run)
        .iter()
        .filter(|e| e["event"] == "verification")
        .map(|e| e["command"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(checks, ["grep -q one_is_one lib.rs"]);
    assert_contains(&ws.todo(&id), "- [x] S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_step_ticks_only_when_its_verify_and_the_repository_tests_pass() {
    // As the compact planner drafts it: the step's own check, then the repository's tests.
    let (ws, id) = version_bump(None, "app.txt, keep.txt");
    let server = FakeModel::start().await;
    change(&server, "app.txt", "version 1", "version 2");
    // The step's verify passes after this, the repository's tests do not.
    change(&server, "keep.txt", "ok", "gone");
    change(&server, "keep.txt", "gone", "ok");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let checks: Vec<(String, bool)> = events(&run)
        .iter()
        .filter(|e| e["event"] == "verification")
        .map(|e| {
            (
                e["command"].as_str().unwrap().to_owned(),
                e["passed"] == true,
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("grep -q 'version 2' app.txt".to_owned(), true),
            ("make test".to_owned(), false),
            ("grep -q 'version 2' app.txt".to_owned(), true),
            ("make test".to_owned(), true),
        ]
    );
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 6);
    let fix = requests[4].last_user_text();
    assert_contains(&fix, "Verification failed: `make test`");
    assert_contains(&fix, "keep.txt:\n```\ngone\n```");
    assert_contains(&ws.todo(&id), "- [x] S1 Bump the version");
    let state = ws.read(&format!(".tasks/{id}/state.yaml"));
    assert_contains(&state, "command: make test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_step_whose_checks_fail_after_one_fix_ends_blocked_with_the_reason() {
    // As the compact planner drafts it: the step's own check, then the repository's tests.
    let (ws, id) = version_bump(Some(0), "app.txt, keep.txt");
    let server = FakeModel::start().await;
    change(&server, "app.txt", "version 1", "version 2");
    change(&server, "keep.txt", "ok", "gone");
    change(&server, "app.txt", "version 2", "version 3");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_ne!(run.code, 0, "{run:#?}");
    assert_eq!(model_requests(&server).len(), 6);
    let todo = ws.todo(&id);
    assert_contains(&todo, "- [!] S1 Bump the version");
    assert_contains(
        &todo,
        "`grep -q 'version 2' app.txt` failed (exit 1), after one fix",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_claim_without_changing_the_steps_files_goes_back_once_then_blocks() {
    let ws = Workspace::new();
    // A verify that fails before the change (one that passes is the next test's case).
    let id = ws.approve(&one_step("Add unit tests", "tests.py", "test -s tests.py"));
    let server = FakeModel::start().await;
    server.push(done_claim("d"));
    server.push(done_claim("d"));
    let run = run_with_model(&ws, &server, "agent").await;
    assert_ne!(run.code, 0, "{run:#?}");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 2);
    let results = requests[1].tool_results();
    assert_eq!(
        results.last().unwrap().1,
        "none of S1's files changed: make the change, or say blocked with why"
    );
    let todo = ws.todo(&id);
    assert_contains(&todo, "- [!] S1 Add unit tests");
    assert_contains(
        &todo,
        "claimed done twice, but none of S1's files changed and no command ran",
    );
    // The verification never ran: there was nothing to verify.
    assert!(!events(&run).iter().any(|e| e["event"] == "verification"));
}

/// issue 29: "`cargo test` passed on the unchanged code" and the step was ticked although
/// the model wrote nothing. A verify that passes before the change cannot tell done from not
/// done: a done claim needs a change to the step's files, even after a command ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verify_that_passes_before_the_change_does_not_tick_a_claim_without_a_change() {
    let ws = Workspace::new();
    let id = ws.approve(&one_step("Add unit tests", "tests.py", "true"));
    let server = FakeModel::start().await;
    // A command (so not an idle claim), then done; then done again.
    server.push(openai_call("b", "bash", json!({"command": "echo looking"})));
    server.push(done_claim("d"));
    server.push(done_claim("e"));
    let run = run_with_model(&ws, &server, "agent").await;
    assert_ne!(run.code, 0, "{run:#?}");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].tool_results().last().unwrap().1,
        "Not ticked: the verify `true` already passed before any change, so it cannot tell \
         done from not done, and none of S1's files (tests.py) has changed. Make the change \
         the step asks for in its files, then claim done again; or say blocked with why."
    );
    let before: Vec<Value> = events(&run)
        .into_iter()
        .filter(|e| e["event"] == "verify_passed_before")
        .collect();
    assert_eq!(before.len(), 1, "{run:#?}");
    assert_eq!(before[0]["commands"], json!(["true"]));
    let todo = ws.todo(&id);
    assert_contains(&todo, "- [!] S1 Add unit tests");
    assert_contains(
        &todo,
        "claimed done twice without changing tests.py, and its verify `true` passed before the change",
    );
    assert_contains(
        &ws.read(&format!(".tasks/{id}/state.yaml")),
        "verify_passed_before: true",
    );
    let status = ws.ok(&["status"]);
    assert_contains(
        &status.stdout,
        "verify passed before the change: it cannot tell done from not done",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verify_that_passes_before_the_change_ticks_once_the_steps_file_changed() {
    let ws = Workspace::new();
    let id = ws.approve(&one_step("Add unit tests", "tests.py", "true"));
    let server = FakeModel::start().await;
    server.push(done_claim("d"));
    server.push(writes_file("w", "tests.py", "assert True\n"));
    server.push(done_claim("e"));
    let run = run_with_model(&ws, &server, "agent").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&ws.todo(&id), "- [x] S1 Add unit tests");
    // Ticked on the change, yet not verified: `true` passes whether or not the step is done.
    let done: Vec<Value> = events(&run)
        .into_iter()
        .filter(|e| e["event"] == "step_done")
        .collect();
    assert_eq!(done.len(), 1, "{run:#?}");
    assert_eq!(done[0]["verified"], json!(false), "{run:#?}");
    assert_eq!(done[0]["passed_before"], json!(true), "{run:#?}");
    let status = ws.ok(&["status"]).stdout;
    assert_contains(&status, "verify passed before the change");
    assert_contains(&status, "(not verified)");
    let json: Value = serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap();
    let step = &json["task"]["steps"][0];
    assert_eq!(step["verified"], json!(false), "{json:#}");
    assert_eq!(step["verify_passed_before"], json!(true), "{json:#}");
    assert_eq!(json["task"]["progress"]["unverified"], json!(1), "{json:#}");
    // The verify that ran after the change is kept as what it is: evidence that it passed.
    assert_contains(
        &ws.read(&format!(".tasks/{id}/state.yaml")),
        "command: 'true'",
    );
    // Verified again, it passes again, and that still shows nothing.
    let again = ws.ok(&["verify", "S1"]);
    assert_contains(
        &again.stderr,
        "S1's verify passed, as it did before the change: done, still not verified",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&ws.ok(&["status", "--json"]).stdout).unwrap()["task"]["steps"]
            [0]["verified"],
        json!(false)
    );
    // A person who reopens the step does not make the verify evidence: it passed on the
    // code as it was before the step, and the next attempt starts from the step's change.
    ws.ok(&["mark", "S1", "pending"]);
    assert_contains(
        &ws.read(&format!(".tasks/{id}/state.yaml")),
        "verify_passed_before: true",
    );
}

/// The same tick as a person reads it from `tick run`: done, and why it is not verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tick_run_says_a_step_whose_verify_passed_before_is_done_but_not_verified() {
    let ws = Workspace::new();
    ws.approve(&one_step("Add unit tests", "tests.py", "true"));
    let server = FakeModel::start().await;
    server.push(writes_file("w", "tests.py", "assert True\n"));
    server.push(done_claim("e"));
    let url = format!("{}/v1", server.url());
    let mut cmd = ws.tick();
    cmd.args(["run"])
        .write_stdin("")
        .env("TICK_PROVIDER", "openai")
        .env("TICK_BASE_URL", &url)
        .env("TICK_MODEL", "test-model")
        .env("TICK_API_KEY", "test-key")
        .env("TICK_EXECUTOR", "agent");
    let run = Run::off_runtime(move || cmd.output().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(
        &run.stderr,
        "S1 done, not verified: its verify passed before the change too, so it cannot show \
         the step done; read the change with `tick diff S1`",
    );
    assert!(!run.stderr.contains("S1 done, verified"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_claim_after_the_reminder_and_a_real_change_ticks() {
    let ws = Workspace::new();
    let id = ws.approve(&one_step("Add unit tests", "tests.py", "test -s tests.py"));
    let server = FakeModel::start().await;
    server.push(done_claim("d"));
    server.push(writes_file("w", "tests.py", "assert True\n"));
    server.push(done_claim("e"));
    let run = run_with_model(&ws, &server, "agent").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&ws.todo(&id), "- [x] S1 Add unit tests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_rust_test_goes_into_a_new_test_module_when_the_file_has_none() {
    let (ws, id) = lib_with_one("Add a test for one", "grep -q 'fn one_is_one' lib.rs");
    let server = FakeModel::start().await;
    // Unbalanced first (refused), then the whole test.
    server.push(decide("add", "lib.rs"));
    server.push(fenced("#[test]\nfn one_is_one() {"));
    add_one_is_one(&server);
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    // Wrapped in a test module: at the top level it would be built into the library too.
    assert_eq!(
        ws.read("lib.rs"),
        "pub fn one() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    \
         #[test]\n    fn one_is_one() {\n        assert_eq!(one(), 1);\n    }\n}\n"
    );
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 4);
    assert_contains(
        &requests[2].last_user_text(),
        "Not applied, an earlier answer: this edit leaves the braces of `lib.rs` unbalanced \
         (one `{` more than `}`)",
    );
    assert_contains(
        &requests[1].last_user_text(),
        "Write only the new code this step adds to `lib.rs`, in one fenced code block",
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// `lib.rs` with `one()`, a raw string holding a `}`, and a test module that ends the file.
const LIB_WITH_TESTS: &str = "pub fn one() -> u32 {\n    1\n}\n\npub const BRACE: &str = r#\"}\"#;\n\n\
                              #[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    \
                              fn brace_closes() {\n        assert_eq!(BRACE, \"}\");\n    }\n}\n";

/// Issue 29: a test added to a file with a test module goes into it (past the `}` of a raw
/// string), and a function added with it goes before the module, not after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_rust_test_goes_into_the_files_test_module_and_a_function_before_it() {
    let ws = Workspace::new();
    ws.write("lib.rs", LIB_WITH_TESTS);
    let id = ws.approve(&one_step(
        "Add two and its test",
        "lib.rs",
        "grep -q 'fn two_is_two' lib.rs",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "lib.rs"));
    server.push(fenced(
        "pub fn two() -> u32 {\n    2\n}\n\n#[test]\nfn two_is_two() {\n    assert_eq!(two(), 2);\n}",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("lib.rs"),
        "pub fn one() -> u32 {\n    1\n}\n\npub const BRACE: &str = r#\"}\"#;\n\npub fn two() -> u32 \
         {\n    2\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn \
         brace_closes() {\n        assert_eq!(BRACE, \"}\");\n    }\n\n    #[test]\n    fn \
         two_is_two() {\n        assert_eq!(two(), 2);\n    }\n}\n"
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
    // The ask says where the code goes.
    assert_contains(
        &model_requests(&server)[1].last_user_text(),
        "tick puts a test function (`#[test]`) into the file's test module",
    );
}

/// `lib.rs` with `Stack` and `Queue`, each with an `impl`, and a test module.
const TWO_TYPES: &str = "pub struct Stack {\n    items: Vec<u32>,\n}\n\nimpl Stack {\n    pub fn \
                         push(&mut self, x: u32) {\n        self.items.push(x);\n    }\n}\n\n\
                         pub struct Queue;\n\nimpl Queue {}\n\n#[cfg(test)]\nmod tests {}\n";

/// Issue 29: a method goes into the `impl` of the type the step names; at the end of the
/// file it would not compile (`self` outside an `impl`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_rust_method_goes_into_the_impl_of_the_type_the_step_names() {
    let ws = Workspace::new();
    ws.write("lib.rs", TWO_TYPES);
    let id = ws.approve(&one_step(
        "Add len to Stack",
        "lib.rs",
        "grep -q 'fn len' lib.rs",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "lib.rs"));
    server.push(fenced(
        "pub fn len(&self) -> usize {\n    self.items.len()\n}",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("lib.rs"),
        TWO_TYPES.replace(
            "        self.items.push(x);\n    }\n",
            "        self.items.push(x);\n    }\n\n    pub fn len(&self) -> usize {\n        \
             self.items.len()\n    }\n",
        )
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// Issue 29: with several `impl`s and no type named, a method is refused back to the model
/// rather than guessed; its `impl Queue { ... }` then goes at the end, before the tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_for_one_of_several_impls_is_refused_until_the_answer_names_its_type() {
    let ws = Workspace::new();
    ws.write("lib.rs", TWO_TYPES);
    let id = ws.approve(&one_step(
        "Add a length method",
        "lib.rs",
        "grep -q 'fn len' lib.rs",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "lib.rs"));
    server.push(fenced("pub fn len(&self) -> usize {\n    0\n}"));
    server.push(decide("add", "lib.rs"));
    server.push(fenced(
        "impl Queue {\n    pub fn len(&self) -> usize {\n        0\n    }\n}",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let again = model_requests(&server)[2].last_user_text();
    assert_contains(
        &again,
        "Not applied, an earlier answer: the new code `pub fn len(&self) -> usize` is a method, \
         but `lib.rs` has several `impl` blocks (`impl Stack`, `impl Queue`) and neither the \
         step nor the code names which type it belongs to",
    );
    assert_eq!(
        ws.read("lib.rs"),
        TWO_TYPES.replace(
            "impl Queue {}\n\n",
            "impl Queue {}\n\nimpl Queue {\n    pub fn len(&self) -> usize {\n        0\n    \
             }\n}\n\n",
        )
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// Issue 29: an indented test method goes into the `TestCase` class, not the last class of
/// the file, where unittest would never run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_python_test_method_goes_into_the_test_case_not_the_last_class() {
    let ws = Workspace::new();
    let before = "import unittest\n\n\nclass Stack:\n    def __init__(self):\n        self.items = \
                  []\n\n\nclass StackTest(unittest.TestCase):\n    def test_new(self):\n        \
                  self.assertEqual(Stack().items, [])\n\n\nclass Helper:\n    pass\n\n\n\
                  if __name__ == \"__main__\":\n    unittest.main()\n";
    ws.write("test_stack.py", before);
    let id = ws.approve(&one_step(
        "Test pushing onto Stack",
        "test_stack.py",
        "PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_stack 2>&1 | grep -q 'test_push .* ok'",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "test_stack.py"));
    server.push(openai_text(
        "```python\n    def test_push(self):\n        s = Stack()\n        s.items.append(1)\n        \
         self.assertEqual(s.items, [1])\n```\n",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("test_stack.py"),
        before.replace(
            "[])\n\n\nclass Helper",
            "[])\n\n    def test_push(self):\n        s = Stack()\n        s.items.append(1)\n        \
             self.assertEqual(s.items, [1])\n\n\nclass Helper",
        )
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// Issue 29: the code ask for a test module names the test the step's check selects; the
/// benchmark's model named its test `test_mean_empty_list` for a check of `test_mean_empty`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_ask_for_a_test_names_the_test_the_check_runs() {
    let ws = Workspace::new();
    ws.write(
        "test_stack.py",
        "import unittest\n\n\nclass StackTest(unittest.TestCase):\n    def test_new(self):\n        \
         self.assertTrue(True)\n",
    );
    let id = ws.approve(&one_step(
        "Test pushing onto a stack",
        "test_stack.py",
        "PYTHONDONTWRITEBYTECODE=1 python3 -m unittest test_stack.StackTest.test_push",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "test_stack.py"));
    server.push(openai_text(
        "```python\n    def test_push(self):\n        self.assertEqual([1], [1])\n```\n",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asks: Vec<String> = model_requests(&server)
        .iter()
        .map(RecordedRequest::last_user_text)
        .collect();
    assert_eq!(asks.len(), 2, "{asks:#?}");
    assert_contains(
        &asks[1],
        "\nName the new test `test_push`: the step's check runs it by that name.",
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// Issue 29: a test calling a function its module does not import yet gets the import on the
/// module's one `from` line; the benchmark's model left it out, and every candidate failed
/// with a `NameError`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_test_gets_the_import_of_the_function_it_calls() {
    let ws = Workspace::new();
    ws.write(
        "stats.py",
        "def mean(values):\n    return sum(values) / len(values)\n\n\ndef median(values):\n    \
         return sorted(values)[len(values) // 2]\n",
    );
    let before = "import unittest\n\nfrom stats import mean\n\n\nclass StatsTest(unittest.TestCase):\n    \
                  def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";
    ws.write("test_stats.py", before);
    let id = ws.approve(&one_step(
        "Test median",
        "test_stats.py",
        "PYTHONDONTWRITEBYTECODE=1 python3 -m unittest test_stats.StatsTest.test_median",
    ));
    let server = FakeModel::start().await;
    server.push(decide("add", "test_stats.py"));
    server.push(openai_text(
        "```python\n    def test_median(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n```\n",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("test_stats.py"),
        before.replace(
            "from stats import mean\n",
            "from stats import mean, median\n"
        ) + "\n    def test_median(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n"
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_call_the_server_fails_is_retried_and_the_retry_is_shown() {
    let (ws, id) = lib_with_one("Add a test for one", "grep -q 'fn one_is_one' lib.rs");
    let server = FakeModel::start().await;
    server.push(Reply::status(500).header("retry-after", "0"));
    add_one_is_one(&server);
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let retries: Vec<Value> = events(&run)
        .into_iter()
        .filter(|e| e["agent"]["event"] == "retry")
        .collect();
    assert_eq!(retries.len(), 1, "{run:#?}");
    assert_eq!(retries[0]["agent"]["attempt"], 2);
    assert_contains(retries[0]["agent"]["reason"].as_str().unwrap(), "500");
    assert_contains(&ws.todo(&id), "- [x] S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_reply_without_a_fence_is_asked_for_once_more_then_refused() {
    let (ws, id) = lib_with_one("Add a test for one", "grep -q 'fn one_is_one' lib.rs");
    let server = FakeModel::start().await;
    server.push(decide("add", "lib.rs"));
    server.push(openai_text("fn one_is_one() {}"));
    server.push(openai_text("Here is the test: one_is_one"));
    // The verify fails (nothing was written): the fix is a new decision and its code.
    add_one_is_one(&server);
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 5);
    assert_contains(
        &requests[2].last_user_text(),
        "Not applied, an earlier answer: the answer has no fenced code block",
    );
    // No third code request: the next one is the fix's decision, which hears the refusal.
    assert!(requests[3].body.get("response_format").is_some());
    let fix = requests[3].last_user_text();
    assert!(
        fix.starts_with("Not applied: the answer has no fenced code block"),
        "{fix}"
    );
    assert_contains(&fix, "none of S1's files changed");
    assert_contains(
        &ws.read("lib.rs"),
        "    fn one_is_one() {\n        assert_eq!(one(), 1);\n    }\n",
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llamacpp_server_gets_a_grammar_for_the_code_a_fence_or_a_search_replace_block() {
    let (ws, id) = lib_with_one(
        "Add a test for one and make one return 1u32",
        "grep -q 'fn one_is_one' lib.rs && grep -q '1u32' lib.rs",
    );
    let server = FakeModel::start().await;
    add_one_is_one(&server);
    // The verify fails; the fix is a change.
    change(
        &server,
        "lib.rs",
        "    1\n}\n\n#[cfg(test)]",
        "    1u32\n}\n\n#[cfg(test)]",
    );
    let run = run_as(&ws, &server, "compact", "llamacpp").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&ws.todo(&id), "- [x] S1");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 4);
    let grammar = |i: usize| requests[i].body.get("grammar").cloned();
    assert_eq!(grammar(0), None, "a decision has its schema");
    let sent = grammar(1).expect("the add's code request carries the grammar");
    assert_contains(
        sent.as_str().unwrap(),
        "root ::= \"```\" [a-z]* \"\\n\" body \"```\"",
    );
    assert!(requests[1].body.get("response_format").is_none());
    let sent = grammar(3).expect("the change's code request carries its grammar");
    assert!(
        sent.as_str()
            .unwrap()
            .starts_with("root ::= \"<<<<<<< SEARCH\\n\" line* \"=======\\n\""),
        "{sent}"
    );
}

/// A `change` that writes a second `struct Selection` is refused back to the decision; an
/// `add` of the new `Selection` takes the old one's place, and the step ticks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_copies_a_definition_goes_back_to_the_decision_and_an_add_replaces_it() {
    let ws = Workspace::new();
    let before = "#[derive(Debug)]\npub struct Selection {\n    pub lines: bool,\n}\n";
    ws.write("lib.rs", before);
    let id = ws.approve(&one_step(
        "Add Default to the derive list of Selection",
        "lib.rs",
        "grep -q 'derive(Debug, Default)' lib.rs",
    ));
    let server = FakeModel::start().await;
    let selection = before.trim_end();
    change(
        &server,
        "lib.rs",
        selection,
        &format!(
            "{selection}\n\n{}",
            selection.replace("(Debug)", "(Debug, Default)")
        ),
    );
    server.push(decide("add", "lib.rs"));
    server.push(fenced(
        "#[derive(Debug, Default)]\npub struct Selection {\n    pub lines: bool,\n}",
    ));
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        ws.read("lib.rs"),
        "#[derive(Debug, Default)]\npub struct Selection {\n    pub lines: bool,\n}\n"
    );
    assert_contains(&ws.todo(&id), "- [x] S1");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 4);
    // The decision is asked again, with the refusal.
    assert!(requests[2].body.get("response_format").is_some());
    assert_contains(
        &requests[2].last_user_text(),
        "Not applied, an earlier answer: this edit of `lib.rs` defines `type Selection` again, \
         which the file already has, so the file would hold two",
    );
}

/// The benchmark's stats module: `mean`, `minimum`, `maximum`, and a repository test that
/// `maximum` still returns `max(values)`.
fn with_stats() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "stats.py",
        "def mean(values):\n    return sum(values) / len(values)\n\n\n\
         def minimum(values):\n    return min(values)\n\n\n\
         def maximum(values):\n    return max(values)\n",
    );
    ws.write(
        "Makefile",
        "test:\n\tgrep -q 'return max(values)' stats.py\n",
    );
    crate::common::workspace::git(ws.root(), &["add", "."]);
    crate::common::workspace::git(ws.root(), &["commit", "-qm", "stats"]);
    ws
}

/// Issue 29, item 6: the model's edit for "`mean` returns None" also rewrote `minimum` and
/// `maximum` (dropping `return max(values)`); the guards refuse it like a removed definition,
/// and the next answer, `mean` alone, lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_also_changes_maximum_is_refused_and_the_steps_own_edit_lands() {
    let ws = with_stats();
    let id = ws.approve(&one_step(
        "Make mean return None for an empty list",
        "stats.py",
        "grep -q 'return None' stats.py`, `make test",
    ));
    let server = FakeModel::start().await;
    change(
        &server,
        "stats.py",
        "def mean(values):\n    return sum(values) / len(values)\n\n\n\
         def minimum(values):\n    return min(values)\n\n\n\
         def maximum(values):\n    return max(values)",
        "def mean(values):\n    if not values:\n        return None\n    return sum(values) / len(values)\n\n\n\
         def minimum(values):\n    if not values:\n        return None\n    return min(values)\n\n\n\
         def maximum(values):\n    if not values:\n        return None",
    );
    change(
        &server,
        "stats.py",
        "def mean(values):\n    return sum(values) / len(values)",
        "def mean(values):\n    if not values:\n        return None\n    return sum(values) / len(values)",
    );
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 4);
    assert_contains(
        &requests[2].last_user_text(),
        "also changes `function minimum`, `function maximum`, which the step is not about",
    );
    assert_contains(&ws.read("stats.py"), "    return max(values)\n");
    assert_contains(&ws.todo(&id), "- [x] S1");
}

/// Issue 29, item 6: a step that ends blocked leaves its files byte for byte as they were, so
/// the repository's tests pass as before; what it tried is in `tick diff S1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_compact_step_puts_its_files_back_and_tick_diff_shows_what_it_tried() {
    let (ws, id) = version_bump(Some(0), "app.txt, keep.txt");
    let server = FakeModel::start().await;
    change(&server, "app.txt", "version 1", "version 2");
    change(&server, "keep.txt", "ok", "gone");
    change(&server, "app.txt", "version 2", "version 3");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_ne!(run.code, 0, "{run:#?}");
    assert_eq!(model_requests(&server).len(), 6);
    assert_eq!(ws.read("app.txt"), "version 1\n");
    assert_eq!(ws.read("keep.txt"), "ok\n");
    let tests = std::process::Command::new("make")
        .arg("test")
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert!(tests.status.success(), "{tests:?}");
    let todo = ws.todo(&id);
    assert_contains(&todo, "- [!] S1 Bump the version");
    assert_contains(
        &todo,
        "its files were put back as they were (`tick diff S1`",
    );
    let diff = ws.tick().args(["diff", "S1"]).output().unwrap();
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert!(diff.status.success(), "{diff:?}");
    let shown = format!("{shown}{}", String::from_utf8_lossy(&diff.stderr));
    assert_contains(
        &shown,
        "# candidate 1 of 1: `grep -q 'version 2' app.txt` failed",
    );
    assert_contains(&shown, "-version 1\n+version 3\n");
    assert_contains(&shown, "-ok\n+gone\n");
}

/// Issue 29, item 4: a candidate whose checks fail is put back and the next one, warmer,
/// starts from the files as they were; the first that passes is kept, and both candidates
/// and their checks are in the step's transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_candidate_is_put_back_and_the_next_one_that_passes_is_kept() {
    let (ws, id) = version_bump(Some(1), "app.txt");
    let server = FakeModel::start().await;
    // Candidate 1: a wrong version, and a wrong fix.
    change(&server, "app.txt", "version 1", "version 3");
    change(&server, "app.txt", "version 3", "version 4");
    // Candidate 2: from `version 1` again.
    change(&server, "app.txt", "version 1", "version 2");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model_requests(&server);
    assert_eq!(requests.len(), 6);
    let temperature = |i: usize| requests[i].body["temperature"].as_f64().unwrap();
    assert!(
        temperature(4) > temperature(0) + 0.2,
        "{} {}",
        temperature(4),
        temperature(0)
    );
    // The second candidate is asked from the step's first message, the file as it was.
    assert_contains(&requests[4].last_user_text(), "version 1");
    assert_eq!(ws.read("app.txt"), "version 2\n");
    assert_contains(&ws.todo(&id), "- [x] S1 Bump the version");
    let runs = ws.path(&format!(".tasks/{id}/runs"));
    let transcript = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-S1.jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap();
    assert_contains(
        &transcript,
        "(tick) candidate 1: `grep -q 'version 2' app.txt` failed (exit 1), after one fix; it changed:",
    );
    assert_contains(
        &transcript,
        "(tick) candidate 2 of 2: the step's files as they were",
    );
}

/// Issue 29, item 4, measured: the verifier's three attempts cut the second candidate short
/// ("verification failed 3 times"); each candidate now has its own two checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_third_candidate_is_checked_after_two_failed_ones_with_their_fixes() {
    let (ws, id) = version_bump(None, "app.txt");
    let server = FakeModel::start().await;
    change(&server, "app.txt", "version 1", "version 3");
    change(&server, "app.txt", "version 3", "version 4");
    change(&server, "app.txt", "version 1", "version 5");
    change(&server, "app.txt", "version 5", "version 6");
    change(&server, "app.txt", "version 1", "version 2");
    let run = run_with_model(&ws, &server, "compact").await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(model_requests(&server).len(), 10);
    assert_eq!(ws.read("app.txt"), "version 2\n");
    assert_contains(&ws.todo(&id), "- [x] S1 Bump the version");
}
