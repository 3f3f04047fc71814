//! The compact planner for small models (`planner: compact | auto`) against the fake loopback
//! server: schema-constrained requests, one repair call for a draft the repository
//! contradicts, warnings kept in the draft, the switch from a prose-answering agent under
//! `auto`, byte-identical request prefixes, and `tick doctor`'s structured-output probe.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, RecordedRequest, Reply};
use crate::common::scripts::{anthropic_call, openai_call, openai_text};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr, stdout};

/// llama.cpp's `GET /props`, stating a context of `n_ctx` tokens.
fn props(n_ctx: u32) -> Reply {
    Reply::json(
        200,
        &json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}),
    )
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
