//! `tick doctor` against the fake model server and against a closed port. How fast the
//! closed-port case fails is measured by `benches/doctor.sh`, not asserted here.

use serde_json::{Value, json};

use crate::common::fake_model::closed_port_url;
use crate::common::scripts::{openai_call, openai_text};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, scripted, stdout};

fn report(output: &std::process::Output) -> Value {
    let stdout = stdout(output);
    assert_eq!(stdout.lines().count(), 1, "one JSON document: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check `{name}` in {report}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_calls_the_tool_passes() {
    let project = Workspace::sample();
    let first = openai_call("call_1", "report_ready", json!({"ready": true}));
    let (output, server) = scripted(&project, [first], &["doctor", "--json"]).await;
    let report = report(&output);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(check(&report, "configuration")["ok"], true);
    assert_eq!(check(&report, "connection")["ok"], true);
    let tool = check(&report, "tool_call");
    assert_eq!(tool["ok"], true, "{tool}");
    assert!(
        tool["detail"]
            .as_str()
            .unwrap()
            .contains("native tool calls")
    );
    // The settings say where they came from.
    let model = &report["settings"][1];
    assert_eq!(model["value"], "test-model");
    assert_eq!(
        model["source"],
        json!({"kind": "env", "name": "TICK_MODEL"})
    );

    // One tiny request with exactly one tool.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["function"]["name"], "report_ready");
    assert_eq!(requests[0].body["model"], "test-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_writes_the_call_as_text_is_reported_as_text() {
    let project = Workspace::sample();
    let first = openai_text(
        "<tool_call>{\"name\": \"report_ready\", \"arguments\": {\"ready\": true}}</tool_call>",
    );
    let (output, _) = scripted(&project, [first], &["doctor", "--json"]).await;
    let report = report(&output);
    let tool = check(&report, "tool_call");
    assert_eq!(tool["ok"], true, "{tool}");
    assert!(
        tool["detail"].as_str().unwrap().contains("as text"),
        "{tool}"
    );
    assert!(tool["hint"].as_str().unwrap().contains("tool_calls: text"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_only_talks_fails_with_exit_3() {
    let project = Workspace::sample();
    let first = openai_text("Hello! How can I help you today?");
    let (output, _) = scripted(&project, [first], &["doctor"]).await;
    assert_eq!(output.status.code(), Some(3));
    let stdout = stdout(&output);
    assert_contains(
        &stdout,
        "FAIL tool_call     `test-model` answered without calling the tool: Hello!",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_not_retried() {
    let project = Workspace::sample();
    let first = crate::common::fake_model::Reply::json(
        503,
        &json!({"error": {"message": "loading model"}}),
    );
    let (output, server) = scripted(&project, [first], &["doctor", "--json"]).await;
    let report = report(&output);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(check(&report, "tool_call")["ok"], false);
    assert_eq!(server.requests().len(), 1, "doctor never retries");
}

#[test]
fn a_closed_port_fails_with_start_the_server_advice() {
    let project = Workspace::sample();
    let (url, port) = closed_port_url();
    let mut cmd = project.command(&url, &["doctor", "--json"]);
    cmd.env("TICK_PROVIDER", "ollama");
    let output = cmd.output().unwrap();
    let report = report(&output);
    assert_eq!(output.status.code(), Some(3), "{report:#}");
    let connection = check(&report, "connection");
    assert_eq!(connection["ok"], false);
    assert!(
        connection["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("cannot connect to `127.0.0.1:{port}`")),
        "{connection}"
    );
    assert!(
        connection["hint"]
            .as_str()
            .unwrap()
            .starts_with("start the server")
    );
    assert_eq!(check(&report, "tool_call")["ok"], Value::Null, "skipped");
    assert!(!project.path(".tasks").exists(), "doctor writes nothing");
}

#[test]
fn the_closed_port_report_reads_well() {
    let project = Workspace::sample();
    let (url, port) = closed_port_url();
    let mut cmd = project.command(&url, &["doctor"]);
    cmd.env("TICK_PROVIDER", "llamacpp");
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stdout = stdout(&output);
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&format!(r"\b{port}\b"), "[PORT]");
    settings.add_filter(r"\(os error \d+\)", "(os error [N])");
    // The sandbox line depends on the kernel the tests run on.
    settings.add_filter(r"(?m)^  (ok  |FAIL) sandbox .*(\n {7}.*)*$", "  [SANDBOX]");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("cli_doctor_closed_port", stdout));
}

#[test]
fn an_incomplete_configuration_exits_2_and_says_what_is_missing() {
    let project = Workspace::sample();
    let (url, _) = closed_port_url();
    let mut cmd = project.command(&url, &["doctor"]);
    cmd.env_remove("TICK_MODEL");
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stdout = stdout(&output);
    assert_contains(&stdout, "FAIL configuration no model");
    assert_contains(&stdout, "model       -");
    assert_contains(&stdout, "`tick init`");
}

/// Issue 17, item 9: a workspace file that is also a file outside it (a hard link, as uv and
/// pnpm make them) is named by `tick doctor`, which still exits as the other checks say.
#[test]
fn doctor_names_hard_links_that_leave_the_workspace() {
    let ws = crate::common::workspace::Workspace::new();
    ws.write("shared.txt", "x\n");
    std::fs::hard_link(ws.path("shared.txt"), ws.temp().join("elsewhere.txt")).unwrap();
    let run = ws.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hard_links")
        .unwrap_or_else(|| panic!("no hard_links check: {report}"))
        .clone();
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("`shared.txt`"),
        "{check}"
    );
    std::fs::remove_file(ws.temp().join("elsewhere.txt")).unwrap();
    let run = ws.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "hard_links" && c["ok"] == true),
        "{report}"
    );
}

/// Regression (issue 31): against a server that accepts connections and never answers,
/// `tick doctor` printed nothing for 20 s. Not at a terminal it now says what it probes, a
/// line per probe, as it starts each one.
#[test]
fn doctor_says_what_it_probes_while_it_waits() {
    use std::io::{BufRead as _, BufReader};
    use std::time::Duration;
    // The kernel completes the connection; nobody ever reads or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    let project = Workspace::sample();
    let mut child = project
        .command(&url, &["doctor"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    while lines.len() < 2 {
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(line) => lines.push(line.replace(&url, "[URL]")),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(silent);
    insta::assert_snapshot!(lines.join("\n"), @r"
    probing `[URL]`: does it accept a connection? (gives up after 1.5 s)…
    probing `test-model`: does the model make a tool call? (gives up after 20 s of silence)…
    ");
}
