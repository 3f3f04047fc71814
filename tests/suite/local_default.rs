//! Local by default: with no provider, base URL or key configured, tick asks the usual local
//! servers (here: the list `TICK_LOCAL_SERVERS` names, as the real ports may be taken on the
//! machine running the tests), uses the first that serves a model and says so; with none
//! answering, it fails at once and names the command that sets one up.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::fake_model::{FakeModel, Reply, closed_port_url};
use crate::common::scripts::submit_login_plan;
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr};

/// Nothing configured: no provider, base URL, model or key from anywhere.
fn unconfigured(cmd: &mut std::process::Command, servers: &str) {
    cmd.env_remove("TICK_PROVIDER")
        .env_remove("TICK_BASE_URL")
        .env_remove("TICK_MODEL")
        .env("TICK_LOCAL_SERVERS", servers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_configured_plan_uses_the_local_server_it_finds_and_says_so() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(Reply::json(
        200,
        &json!({"object": "list", "data": [{"id": "local-coder", "object": "model"}]}),
    ));
    server.push(submit_login_plan());
    let (refused, _) = closed_port_url();
    let url = format!("{}/v1", server.url());
    let servers = format!("ollama={refused},llamacpp={url}");
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            unconfigured(cmd, &servers);
            // The agent planner keeps the scripted conversation to one call.
            cmd.env("TICK_PLANNER", "agent");
        })
        .await;
    assert_success(&output);
    assert_contains(
        &stderr(&output),
        &format!(
            "using llama.cpp at `{url}` with model `local-coder`: found on this machine, as \
             nothing is configured\n"
        ),
    );
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/models")
    );
    let chat = requests.last().unwrap();
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.body["model"], "local-coder");
    assert!(project.exists(".tasks/draft/PLAN.md"));
}

#[test]
fn with_nothing_answering_plan_fails_within_a_second_naming_tick_model_setup() {
    let project = Workspace::new();
    // One port that takes connections and never answers (the kernel accepts them into the
    // backlog), one that refuses them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (refused, _) = closed_port_url();
    let servers = format!(
        "llamacpp=http://{}/v1,ollama={refused}",
        silent.local_addr().unwrap()
    );
    let run = |servers: &str| {
        let mut cmd = project.tick_process();
        cmd.args(["plan", "Add a --verbose flag"])
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY");
        unconfigured(&mut cmd, servers);
        let started = Instant::now();
        let output = cmd.output().unwrap();
        (output, started.elapsed())
    };
    // The same command asking no server: what the machine takes for the rest of it (a debug
    // build on a loaded machine can take half a second for that alone).
    let (_, baseline) = run("none");
    let (output, took) = run(&servers);
    assert_eq!(output.status.code(), Some(2), "{output:#?}");
    // Idle, the whole command takes about 0.5 s; the probe adds at most its 300 ms budget.
    assert!(
        took.saturating_sub(baseline) < Duration::from_millis(600),
        "the probe took {took:?} against {baseline:?} without it"
    );
    assert!(
        took < Duration::from_secs(1).max(baseline * 2),
        "took {took:?}"
    );
    let err = stderr(&output);
    assert_contains(
        &err,
        "error: tick cannot talk to a model yet: no model server answers on this machine",
    );
    assert_contains(&err, "`tick model setup`");
    assert!(!project.exists(".tasks"), "nothing was written");
}

#[test]
fn doctor_shows_the_server_it_found() {
    let project = Workspace::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeModel::start());
    for _ in 0..2 {
        server.push(Reply::json(200, &json!({"data": [{"id": "local-coder"}]})));
    }
    let url = format!("{}/v1", server.url());
    let mut cmd = project.tick_process();
    cmd.args(["doctor"]);
    unconfigured(&mut cmd, &format!("vllm={url}"));
    let output = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_contains(
        &out,
        &format!("base_url    {url:<34} found on this machine: vLLM\n"),
    );
    assert_contains(&out, "model       local-coder");
    drop(rt);
}
