//! The `--json` event streams of `tick run` and `tick plan` against their documentation: every
//! line of a real run parses, every event kind is documented in `docs/json.md`, and each line
//! has exactly the fields its table lists. The stream always ends with the `result` line, also
//! when the command fails.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

use serde_json::{Value, json};

use super::running::{PLAN, approved, approved_then_edited, stderr, work};
use crate::common::fake_model::FakeModel;
use crate::common::scripts::{login_plan, openai_call};
use crate::common::workspace::{Workspace, event_kinds, json_events};

/// Documented fields per event kind, from the tables of one `## ` section of docs/json.md
/// (and the result line, which every stream shares).
fn documented(section: &str) -> BTreeMap<String, BTreeSet<String>> {
    let doc = include_str!("../../docs/json.md");
    let mut events: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut h2 = String::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            title.clone_into(&mut h2);
            current = None;
        } else if line == "### The result line" {
            current = Some("result".to_owned());
        } else if let Some(name) = line.strip_prefix("#### `") {
            current = (h2 == section).then(|| name.trim_end_matches('`').to_owned());
        } else if let (Some(event), Some(row)) = (&current, line.strip_prefix("| `")) {
            let field = row.split('`').next().unwrap().to_owned();
            events.entry(event.clone()).or_default().insert(field);
        }
    }
    assert!(!events.is_empty(), "no tables under {section}");
    events
}

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().unwrap().keys().cloned().collect()
}

/// Every stdout line as JSON, each checked against the documentation.
fn events(output: &Output, section: &str) -> Vec<Value> {
    let docs = documented(section);
    let agent_docs = documented("`tick plan --json`");
    let lines = json_events(output);
    for line in &lines {
        let kind = line["event"].as_str().unwrap();
        let fields = docs
            .get(kind)
            .unwrap_or_else(|| panic!("`{kind}` is not documented under {section}: {line}"));
        assert_eq!(&keys(line), fields, "{line}");
        if kind == "agent" {
            let agent = &line["agent"];
            let kind = agent["event"].as_str().unwrap();
            assert_eq!(&keys(agent), &agent_docs[kind], "{line}");
        }
    }
    let last = lines.last().expect("a stream is never empty");
    assert_eq!(last["event"], "result", "the result line comes last");
    assert_eq!(
        last["exit_code"].as_i64(),
        output.status.code().map(i64::from)
    );
    lines
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .filter(|kind| *kind != "agent")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_lines_are_the_documented_events() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server, PLAN).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    server.push(openai_call(
        "c1",
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "which shell?"}),
    ));
    let output = project
        .tick_ends(&server, &["run", "--json", "--commit"], 4)
        .await;
    let events = events(&output, "`tick run --json`");
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "step_started",
            "verification",
            "step_done",
            "committed",
            "step_started",
            "step_blocked",
            "summary",
            "result"
        ]
    );
    assert_eq!(events[0]["format"], 1);
    assert_eq!(events[0]["task"], id.as_str());
    // The verification runs inside the model's `update_step` call: after the call, before
    // its result.
    let position = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let call =
        position(&|e| e["agent"]["event"] == "tool_call" && e["agent"]["detail"] == "S1 done");
    let verification = position(&|e| e["event"] == "verification");
    let result = call
        + events[call..]
            .iter()
            .position(|e| e["agent"]["event"] == "tool_result")
            .unwrap();
    assert!(call < verification && verification < result, "{events:#?}");
    let verification = &events[verification];
    assert_eq!(verification["step"], "S1");
    assert_eq!(verification["command"], "grep -q hello greeting.txt");
    assert_eq!(verification["passed"], true);
    assert_eq!(verification["exit_code"], 0);
    let done = events.iter().find(|e| e["event"] == "step_done").unwrap();
    assert_eq!(done["files_changed"], json!(["greeting.txt"]));
    assert_eq!(done["verified"], true);
    let committed = events.iter().find(|e| e["event"] == "committed").unwrap();
    assert_eq!(
        committed["commit"].as_str().unwrap(),
        project.git(&["rev-parse", "HEAD"]).trim()
    );
    assert_eq!(committed["files"][0], "greeting.txt");
    let blocked = events
        .iter()
        .find(|e| e["event"] == "step_blocked")
        .unwrap();
    assert_eq!(blocked["reason"], "which shell?");
    assert_eq!(blocked["before_run"], false);
    let summary = &events[events.len() - 2];
    assert_eq!(summary["done"], 1);
    assert_eq!(summary["total"], 3);
    assert_eq!(summary["outcome"], "blocked");
    assert_eq!(
        summary["blocked"],
        json!([{"step": "S2", "reason": "which shell?"}])
    );
    assert_eq!(summary["usage"]["input_tokens"], 300);
    assert!(events.last().unwrap()["error"].is_null());

    // The next run finds the step blocked and runs nothing.
    let output = project.tick_ends(&server, &["run", "--json"], 4).await;
    let events = self::events(&output, "`tick run --json`");
    assert_eq!(
        kinds(&events),
        ["run_started", "step_blocked", "summary", "result"]
    );
    assert_eq!(events[1]["before_run"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_steps_and_nothing_to_run_are_events_too() {
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server, PLAN).await;
    work(&server, "S1", "greeting.txt", "hello\n");
    project
        .tick_ends(&server, &["run", "--steps", "1"], 0)
        .await;
    project.write("greeting.txt", "hello, world\n");
    let output = project
        .tick_ends(&server, &["run", "--json", "--step", "S1"], 0)
        .await;
    let events = events(&output, "`tick run --json`");
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "verification",
            "stale_reverified",
            "nothing_to_run",
            "summary",
            "result"
        ]
    );
    assert_eq!(events[2]["passed"], true);
    assert_eq!(events[2]["has_verify"], true);
    assert_eq!(events[3]["step"], "S1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_still_ends_with_the_result_and_its_error() {
    let server = FakeModel::start().await;
    let (project, _) = approved_then_edited(&server).await;
    let output = project.tick_ends(&server, &["run", "--json"], 2).await;
    let events = events(&output, "`tick run --json`");
    assert_eq!(kinds(&events), ["plan_changed", "result"]);
    assert!(
        events[0]["diff"]
            .as_str()
            .unwrap()
            .contains("+Greet everyone"),
        "{}",
        events[0]
    );
    let error = &events[1]["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("was edited after approval"),
        "{error}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("tick approve"),
        "{error}"
    );
    assert!(server.requests().is_empty());

    // A failure before the run starts is a result line as well.
    let project = Workspace::sample();
    let output = project.tick_against(&server, &["run", "--json"]).await;
    assert_eq!(output.status.code(), Some(2));
    let events = self::events(&output, "`tick run --json`");
    assert_eq!(kinds(&events), ["result"]);
    assert!(
        events[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no tasks yet")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_json_lines_are_the_documented_events() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    server.push(openai_call(
        "call_1",
        "read_file",
        json!({"path": "src/login.rs"}),
    ));
    server.push(openai_call("call_2", "submit_plan", login_plan()));
    let output = project
        .tick_against(&server, &["plan", "--json", "Refactor login"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output, "`tick plan --json`");
    let kinds = event_kinds(&events);
    assert_eq!(
        kinds,
        [
            "plan_started",
            "request",
            "usage",
            "tool_call",
            "tool_result",
            "request",
            "usage",
            "tool_call",
            "tool_result",
            "draft",
            "result"
        ]
    );

    // Failing: a draft exists already.
    server.push(openai_call("call_3", "submit_plan", login_plan()));
    let output = project
        .tick_ends(&server, &["plan", "--json", "Something else"], 2)
        .await;
    let events = self::events(&output, "`tick plan --json`");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["event"], "plan_started");
    assert!(!events[1]["error"]["message"].as_str().unwrap().is_empty());
}
