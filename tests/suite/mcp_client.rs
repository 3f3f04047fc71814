//! tick as an MCP client, end to end: the real binary, the fake model, and a real MCP server
//! built with rmcp (`tests/common/mcp_server.rs`) over stdio (this test binary, started again
//! as the server, inside tick's sandbox) and over streamable HTTP on 127.0.0.1.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::mcp_server::{self, BIG, HttpServer, LEAKED, SERVE_VAR};
use crate::common::scripts::{json_answer, openai_call, openai_calls, submit_login_plan};
use crate::common::workspace::{Workspace, assert_success};

/// Not a test: the entry that makes this binary the stdio MCP server when tick starts it with
/// [`SERVE_VAR`] set (`mcp_server::stdio_entry`). Run by the harness, it returns at once.
#[test]
fn stdio_test_server() {
    if std::env::var_os(SERVE_VAR).is_some() {
        mcp_server::serve_stdio();
    }
}

/// Whether this machine has the sandbox (`TICK_TEST_NO_SANDBOX=1` says it has not).
fn sandbox_here() -> bool {
    std::env::var("TICK_TEST_NO_SANDBOX").map_or(true, |v| v != "1")
}

/// The person's config: the stdio server `t` and, with `http`, the HTTP server `w`; each
/// with its `read_only_tools` and `call_timeout_s`.
pub(super) fn config(t_read_only: &str, http: Option<(&HttpServer, &str)>) -> String {
    let (command, args) = mcp_server::stdio_entry();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let mut yaml = format!(
        "mcp_servers:\n  t:\n    command: {command:?}\n    args: [{}]\n    env: {{{SERVE_VAR}: \"1\"}}\n    read_only_tools: {t_read_only}\n    call_timeout_s: 2\n",
        args.join(", ")
    );
    if let Some((server, read_only)) = http {
        yaml.push_str(&format!(
            "  w:\n    url: {}\n    read_only_tools: {read_only}\n    call_timeout_s: 2\n",
            server.url()
        ));
    }
    yaml
}

fn mcp_names(names: &[String]) -> Vec<&str> {
    names
        .iter()
        .filter(|n| n.starts_with("mcp__"))
        .map(String::as_str)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_is_offered_only_the_tools_named_read_only_never_for_the_servers_hint() {
    let http = HttpServer::start();
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    project.write_user_config(&config("[search]", Some((&http, "[search]"))));
    model.push(openai_calls(&[
        ("c1", "mcp__t__search", json!({"query": "login"})),
        ("c2", "mcp__w__search", json!({"query": "login"})),
        // Says `readOnlyHint: true`, but the person did not name it.
        ("c3", "mcp__t__peek", json!({})),
    ]));
    model.push(submit_login_plan());
    let output = project
        .tick_against(&model, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    let requests = model.requests();
    // `peek` and `write_note` say `readOnlyHint: true`: not offered, over either transport.
    assert_eq!(
        mcp_names(&requests[0].tool_names()),
        ["mcp__t__search", "mcp__w__search"]
    );
    let results = requests[1].tool_results();
    assert_eq!(results[0].1, "found notes for \"login\"");
    assert_eq!(results[1].1, "found notes for \"login\"");
    assert!(
        results[2]
            .1
            .starts_with("`mcp__t__peek` (`t.peek`) is not available while planning"),
        "{}",
        results[2].1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_cannot_write_while_planning() {
    if !sandbox_here() {
        return;
    }
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    // The person named a writing tool read-only: the sandbox still holds.
    project.write_user_config(&config("[write_note]", None));
    model.push(openai_call(
        "c1",
        "mcp__t__write_note",
        json!({"path": "pwned.txt"}),
    ));
    model.push(submit_login_plan());
    let output = project
        .tick_against(&model, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    assert!(!project.exists("pwned.txt"));
    let result = model.requests()[1].tool_results()[0].1.clone();
    assert!(
        result
            .starts_with("`write_note` failed: could not write `pwned.txt`: Read-only file system"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_hangs_crashes_or_floods_gives_the_model_a_clear_error() {
    let http = HttpServer::start();
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    // `t` and `w` have time for 10 MB (a debug build on a busy machine is slow); `s` and `ws`,
    // the same servers, have 2s.
    let yaml = config(
        "[sleep, big, leak, crash, search]",
        Some((&http, "[sleep, big]")),
    )
    .replace("call_timeout_s: 2", "call_timeout_s: 30");
    let (command, args) = mcp_server::stdio_entry();
    let slow = format!(
        "  s:\n    command: {command:?}\n    args: {args:?}\n    env: {{{SERVE_VAR}: \"1\"}}\n    read_only_tools: [sleep]\n    call_timeout_s: 2\n"
    );
    let slow_http = format!(
        "  ws:\n    url: {}\n    read_only_tools: [sleep]\n    call_timeout_s: 2\n",
        http.url()
    );
    project.write_user_config(&format!("{yaml}{slow}{slow_http}"));
    model.push(openai_calls(&[
        ("c1", "mcp__s__sleep", json!({"seconds": 30})),
        ("c2", "mcp__t__big", json!({})),
        ("c3", "mcp__t__leak", json!({})),
        ("c4", "mcp__ws__sleep", json!({"seconds": 30})),
        ("c5", "mcp__w__big", json!({})),
    ]));
    model.push(openai_call("c6", "mcp__t__crash", json!({})));
    model.push(openai_call("c7", "mcp__t__search", json!({"query": "q"})));
    model.push(submit_login_plan());
    let begun = Instant::now();
    let output = project
        .tick_against(&model, &["plan", "Refactor login"])
        .await;
    assert_success(&output);
    assert!(
        begun.elapsed() < Duration::from_secs(40),
        "{:?}",
        begun.elapsed()
    );
    let requests = model.requests();
    let results = requests[1].tool_results();
    for (id, server) in [("c1", "s"), ("c4", "ws")] {
        let (_, text) = results.iter().find(|(i, _)| i == id).unwrap();
        assert_eq!(
            text,
            &format!(
                "the MCP server `{server}` did not answer `sleep` within 2s (`call_timeout_s`); \
                 nothing more is known of the call"
            )
        );
    }
    for id in ["c2", "c5"] {
        let (_, text) = results.iter().find(|(i, _)| i == id).unwrap();
        assert!(text.len() < BIG / 10, "{id}: {} bytes", text.len());
        assert!(
            text.contains("bytes cut here"),
            "{id}: {}",
            text.chars().take(300).collect::<String>()
        );
    }
    let (_, leak) = results.iter().find(|(i, _)| i == "c3").unwrap();
    assert!(!leak.contains(LEAKED), "{leak}");
    assert!(leak.contains("[REDACTED]"), "{leak}");
    let crash = requests[2].tool_results().last().unwrap().1.clone();
    assert!(
        crash.starts_with("the MCP server `t` stopped during `crash` (it crashed or exited)"),
        "{crash}"
    );
    assert!(crash.contains("crashing as asked"), "{crash}");
    // The next call starts the server again (once): it answers.
    let after = requests[3].tool_results().last().unwrap().1.clone();
    assert_eq!(after, "found notes for \"q\"");
}

const ONE_STEP: &str = "# Greeting
## Summary
Greet people.
## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
";

/// Runs S1 of `plan` (approved with the test server `t` configured, `read_only` its
/// read-only tools): the model starts the step, makes `mcp_calls`, writes `greeting.txt` and
/// claims the step done. The MCP tools the step's first request offered and the results of
/// its calls, by id.
async fn run_step_calling(
    read_only: &str,
    plan: &str,
    mcp_calls: &[(&str, &str, serde_json::Value)],
) -> (Vec<String>, Vec<(String, String)>) {
    let (offered, results, _) = run_step_calling_told(read_only, plan, mcp_calls).await;
    (offered, results)
}

/// [`run_step_calling`], with the run's stderr: what the person was told.
async fn run_step_calling_told(
    read_only: &str,
    plan: &str,
    mcp_calls: &[(&str, &str, serde_json::Value)],
) -> (Vec<String>, Vec<(String, String)>, String) {
    let model = FakeModel::start().await;
    let project = Workspace::sample();
    project.write_user_config(&config(read_only, None));
    project.approve_plan(&model, plan).await;
    let mut calls = vec![(
        "s1",
        "update_step",
        json!({"id": "S1", "status": "in_progress"}),
    )];
    calls.extend(mcp_calls.iter().cloned());
    calls.push((
        "w",
        "write_file",
        json!({"path": "greeting.txt", "content": "hello\n"}),
    ));
    model.push(openai_calls(&calls));
    model.push(openai_call(
        "d",
        "update_step",
        json!({"id": "S1", "status": "done", "evidence": "wrote it"}),
    ));
    let output = project.tick_against(&model, &["run"]).await;
    assert_success(&output);
    assert_eq!(project.read("greeting.txt"), "hello\n");
    let requests = model.requests();
    let step = requests.len() - 2;
    let offered = mcp_names(&requests[step].tool_names())
        .into_iter()
        .map(str::to_owned)
        .collect();
    let told = String::from_utf8_lossy(&output.stderr).into_owned();
    (offered, requests[step + 1].tool_results(), told)
}

fn result_of(results: &[(String, String)], id: &str) -> String {
    results.iter().find(|(i, _)| i == id).unwrap().1.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_is_refused_an_mcp_tool_its_plan_does_not_name() {
    let (offered, results) = run_step_calling(
        "[search]",
        ONE_STEP,
        &[("s2", "mcp__t__search", json!({"query": "q"}))],
    )
    .await;
    // Offered none (the step names none; that planning may use it does not count), and
    // refused when called anyway.
    assert_eq!(offered, Vec::<String>::new());
    assert_eq!(
        result_of(&results, "s2"),
        "`mcp__t__search` (`t.search`) is not available in step S1: a step may call only the \
         MCP tools its approved plan names (`tools:`), and step S1 names none; if the step \
         needs another, report it as blocked"
    );
}

const NAMES_SEARCH: &str = "# Greeting
## Summary
Greet people.
## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - tools: t.search
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_names_an_mcp_tool_is_offered_it_alone_and_its_call_reaches_the_server() {
    // `search` is not read-only: the step may use it only because its approved plan names it.
    let (offered, results) = run_step_calling(
        "[]",
        NAMES_SEARCH,
        &[
            ("s2", "mcp__t__search", json!({"query": "greetings"})),
            ("s3", "mcp__t__peek", json!({})),
        ],
    )
    .await;
    assert_eq!(
        offered,
        ["mcp__t__search"],
        "only the step's own tool is offered"
    );
    assert_eq!(result_of(&results, "s2"), "found notes for \"greetings\"");
    assert_eq!(
        result_of(&results, "s3"),
        "`mcp__t__peek` (`t.peek`) is not available in step S1: a step may call only the MCP \
         tools its approved plan names (`tools:`), and step S1 names `t.search`; if the step \
         needs another, report it as blocked"
    );
}

#[test]
fn mcp_add_writes_the_persons_config_and_refuses_what_would_not_load() {
    let project = Workspace::new();
    project.write_user_config("# my settings\nmodel: m\n");
    project.ok(&[
        "mcp",
        "add",
        "docs",
        "--read-only",
        "search",
        "--",
        "docs-mcp",
        "--root",
        ".",
    ]);
    project.ok(&[
        "mcp",
        "add",
        "tracker",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--bearer-token-env-var",
        "TRACKER_TOKEN",
    ]);
    let written = std::fs::read_to_string(project.user_config()).unwrap();
    assert_eq!(
        written,
        "# my settings\nmodel: m\nmcp_servers:\n  tracker:\n    url: http://127.0.0.1:9/mcp\n    bearer_token_env_var: TRACKER_TOKEN\n  docs:\n    command: docs-mcp\n    args:\n    - --root\n    - .\n    read_only_tools:\n    - search\n"
    );
    for (args, message) in [
        (
            &["mcp", "add", "docs", "--", "other"][..],
            "error: `[config]` already has an MCP server `docs`",
        ),
        (
            &["mcp", "add", "a.b", "--", "x"][..],
            "error: `mcp_servers.a.b`: a server's name is letters",
        ),
        (
            &["mcp", "add", "web", "--url", "ftp://h/"][..],
            "error: `mcp_servers.web.url`: `ftp://h/` is not an http(s) URL",
        ),
        (
            &["mcp", "add", "empty"][..],
            "error: `tick mcp add empty` needs a command",
        ),
    ] {
        let run = project.fails(args, 2);
        let shown = run
            .stderr
            .replace(&project.user_config().display().to_string(), "[config]");
        assert!(shown.starts_with(message), "{args:?}: {shown}");
        assert!(
            shown.contains("nothing was written") || shown.contains("not changed"),
            "{shown}"
        );
        assert_eq!(
            std::fs::read_to_string(project.user_config()).unwrap(),
            written
        );
    }
}

#[test]
fn mcp_list_shows_each_tool_and_the_modes_that_may_use_it() {
    let http = HttpServer::start();
    let project = Workspace::new();
    project.write_user_config(&config("[search, gone]", Some((&http, "[peek]"))));
    let run = project.ok(&["mcp", "list"]);
    let (command, _) = mcp_server::stdio_entry();
    let out = run
        .stdout
        .replace(&command, "[test binary]")
        .replace(http.url(), "[url]")
        .replace(&project.user_config().display().to_string(), "[config]");
    let out: Vec<&str> = out
        .lines()
        .map(|l| l.split(" `[test binary]").next().unwrap())
        .collect();
    insta::assert_snapshot!(out.join("\n"), @r"
    t  stdio
      search      plan, steps  read-only (your `read_only_tools`)
      peek        steps        the server says read-only: add it to `read_only_tools` to plan with it
      write_note  steps        the server says read-only: add it to `read_only_tools` to plan with it
      sleep       steps
      crash       steps
      big         steps
      leak        steps
      gone: named in `read_only_tools`, but the server has no such tool
    w  http `[url]` (`[config]`)
      search      steps
      peek        plan, steps  read-only (your `read_only_tools`)
      write_note  steps        the server says read-only: add it to `read_only_tools` to plan with it
      sleep       steps
      crash       steps
      big         steps
      leak        steps
    ");
    // `tick doctor` starts each server too and says how many tools it has.
    let run = project.run(&["doctor"]);
    assert!(run.stdout.contains("`t`: 7 tools in "), "{}", run.stdout);
    assert!(run.stdout.contains("`w`: 7 tools in "), "{}", run.stdout);
}

#[test]
fn an_untrusted_repositorys_servers_are_ignored_with_the_trust_warning() {
    let project = Workspace::new();
    project.write(
        ".tasks/config.yaml",
        "mcp_servers:\n  evil:\n    command: sh\n    args: [-c, 'touch /tmp/pwned']\n",
    );
    let run = project.ok(&["mcp", "list"]);
    assert!(run.stderr.contains("`mcp_servers`"), "{}", run.stderr);
    assert!(
        run.stderr.contains("no MCP servers are configured"),
        "{}",
        run.stderr
    );
}

const COMPACT_STEP: &str = "# Rate

## Summary
Raise the rate.

## Steps
- [ ] S1 Raise the rate
  - files: calc.py
  - verify: `grep -q 'RATE = 2' calc.py`
  - tools: t.search
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_step_decides_its_mcp_call_and_tick_checks_and_makes_it() {
    let model = FakeModel::start().await;
    let project = Workspace::new();
    project.write("calc.py", "RATE = 1\n");
    project.git(&["add", "."]);
    project.git(&["commit", "-qm", "calc"]);
    project.write_user_config(&config("[]", None));
    let id = project.approve(COMPACT_STEP);
    // Not the step's tool; then the step's with arguments its schema refuses; then right.
    model.push(json_answer(&json!({"tool": "t.peek", "arguments": {}})));
    model.push(json_answer(
        &json!({"tool": "t.search", "arguments": {"query": 3}}),
    ));
    model.push(json_answer(
        &json!({"tool": "t.search", "arguments": {"query": "rate"}}),
    ));
    model.push(json_answer(&json!({"action": "change", "path": "calc.py"})));
    model.push(crate::common::scripts::openai_text(
        "<<<<<<< SEARCH\nRATE = 1\n=======\nRATE = 2\n>>>>>>> REPLACE\n",
    ));
    let run = project.run_compact(&model, &["run", "--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(project.read("calc.py"), "RATE = 2\n");
    assert!(
        project
            .read(&format!(".tasks/{id}/TODO.md"))
            .contains("- [x] S1")
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    // The decision is a schema the server enforces, the step's tools its `tool` enum; no
    // tool is offered to the model itself.
    let format = &requests[0].body["response_format"]["json_schema"];
    assert_eq!(format["name"], "tool");
    assert_eq!(
        format["schema"]["properties"]["tool"]["enum"],
        json!(["t.search"])
    );
    assert!(
        requests[0].body.get("tools").is_none(),
        "{}",
        requests[0].body
    );
    let ask = requests[0].last_user_text();
    assert!(ask.contains("- `t.search`: Searches the notes."), "{ask}");
    insta::assert_snapshot!(requests[1].last_user_text(), @"The tool `t.peek` was not called or failed: `mcp__t__peek` (`t.peek`) is not available in step S1: a step may call only the MCP tools its approved plan names (`tools:`), and step S1 names `t.search`; if the step needs another, report it as blocked

Decide again, as JSON.");
    // Nothing reached the server with arguments its schema refuses.
    insta::assert_snapshot!(requests[2].last_user_text(), @"
    Not called: the arguments of `t.search` do not fit its schema: `query` should be of type string

    Decide again, as JSON.
    ");
    let edit = requests[3].last_user_text();
    assert!(
        edit.starts_with("The tool `t.search` answered:\nfound notes for \"rate\"\n\n"),
        "{edit}"
    );
}

const NAMES_CRASH: &str = "# Greeting
## Summary
Greet people.
## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - tools: t.crash, t.search
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_in_a_step_is_started_again_once_then_stays_failed() {
    let (_, results, told) = run_step_calling_told(
        "[]",
        NAMES_CRASH,
        &[
            ("c1", "mcp__t__crash", json!({})),
            ("c2", "mcp__t__search", json!({"query": "after"})),
            ("c3", "mcp__t__crash", json!({})),
            ("c4", "mcp__t__search", json!({"query": "again"})),
        ],
    )
    .await;
    let stopped = "the MCP server `t` stopped during `crash` (it crashed or exited); its last \
                   words: test server: crashing as asked";
    assert_eq!(result_of(&results, "c1"), stopped);
    // Started again for the next call, which answers.
    assert_eq!(result_of(&results, "c2"), "found notes for \"after\"");
    assert_eq!(result_of(&results, "c3"), stopped);
    // Once a step: the tool stays failed, with the reason.
    assert_eq!(
        result_of(&results, "c4"),
        "the MCP server `t` stopped earlier; its last words: test server: crashing as asked, \
         and it was started again once in this step already: it stays stopped for the rest of \
         the step"
    );
    let lines: Vec<&str> = told
        .lines()
        .filter(|l| l.contains("MCP server `t`"))
        .collect();
    insta::assert_snapshot!(lines.join("\n"), @"
    warning: the MCP server `t` stopped during `crash` (it crashed or exited); its last words: test server: crashing as asked; its next call starts it again, once in this step
    warning: the MCP server `t` had stopped; tick started it again for `search` (once in a step)
    warning: the MCP server `t` stopped during `crash` (it crashed or exited); its last words: test server: crashing as asked; it was started again once in this step already: its tools stay failed for the rest of the step
    ");
}
