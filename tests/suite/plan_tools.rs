//! Per-step MCP tools in the plan format (`tools: server.tool`): the planner names them in
//! `submit_plan`, they are drafted into PLAN.md, carried into TODO.md at approval, and are
//! part of what was approved: a changed list, in PLAN.md or in TODO.md, stops `tick run`
//! until the person approves again. The real binary in a temp git repository.

use serde_json::json;

use crate::common::scripts::openai_call;
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, filters, scripted, stderr};

/// A plan by hand whose first step names two MCP tools.
const PLAN: &str = "# File the release issue

## Summary
Open the release issue and note it in the changelog.

## Steps
- [ ] S1 Open the release issue
  - files: CHANGELOG.md
  - verify: `grep -q release CHANGELOG.md`
  - tools: github.create_issue, docs.search
- [ ] S2 Tidy the notes
  - files: NOTES.md
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planners_tools_are_drafted_and_approved_into_plan_and_todo() {
    let project = Workspace::new();
    let plan = json!({
        "title": "File the release issue",
        "summary": "Open the release issue and note it in the changelog.",
        "steps": [
            {"title": "Open the release issue", "files": ["CHANGELOG.md"],
             "verify": ["grep -q release CHANGELOG.md"],
             "tools": ["github.create_issue", "docs.search"]},
            {"title": "Tidy the notes", "files": ["NOTES.md"]}
        ]
    });
    let (output, server) = scripted(
        &project,
        [openai_call("call_1", "submit_plan", plan)],
        &["plan", "File the release issue"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    // The planner was told it may name tools.
    let request = &server.requests()[0].body;
    let submit = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "submit_plan")
        .unwrap();
    assert_eq!(
        submit["function"]["parameters"]["properties"]["steps"]["items"]["properties"]["tools"]["type"],
        "array"
    );
    let draft = project.read(".tasks/draft/PLAN.md");
    project.ok(&["approve"]);
    let id = project.task_id();
    let settings = filters(&project);
    settings.bind(|| {
        insta::assert_snapshot!("plan_tools_draft_plan_md", draft);
        insta::assert_snapshot!("plan_tools_todo_md", project.todo(&id));
    });
    let status = project.ok(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let steps = status["task"]["steps"].as_array().unwrap();
    assert_eq!(
        steps[0]["tools"],
        json!(["github.create_issue", "docs.search"])
    );
    assert!(steps[1].get("tools").is_none(), "{}", steps[1]);
}

#[test]
fn a_hand_edited_tools_list_stops_the_run_until_approved_again() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let todo_path = format!(".tasks/{id}/TODO.md");
    assert_contains(
        &ws.read(&todo_path),
        "  - tools: github.create_issue, docs.search\n",
    );

    // In PLAN.md: the approval's hash covers it.
    let plan_path = format!(".tasks/{id}/PLAN.md");
    let approved = ws.read(&plan_path);
    ws.write(
        &plan_path,
        approved.replace("docs.search", "docs.search, shell.exec"),
    );
    let run = ws.fails(&["run"], 2);
    assert_contains(&run.stderr, "was edited after approval");
    assert_contains(
        &run.stdout,
        "+  - tools: github.create_issue, docs.search, shell.exec",
    );
    // Approved again, TODO.md takes the new list.
    ws.ok(&["approve", &id]);
    assert_contains(
        &ws.read(&todo_path),
        "  - tools: github.create_issue, docs.search, shell.exec\n",
    );

    // In TODO.md, where a person edits steps freely: tools are capabilities, so not these.
    let todo = ws.read(&todo_path);
    ws.write(
        &todo_path,
        todo.replace(
            "- [ ] S2 Tidy the notes\n",
            "- [ ] S2 Tidy the notes\n  - tools: shell.exec\n",
        ),
    );
    let run = ws.fails(&["run"], 2);
    insta::assert_snapshot!(run.stderr.replace(&id, "[ID]"), @r"
    error: `.tasks/[ID]/TODO.md` changes the MCP tools the plan approved: `S2`'s tools are `shell.exec` in TODO.md, none in the approved PLAN.md

    hint: a step's `tools:` are changed in PLAN.md and approved with `tick approve`; put TODO.md's `tools:` back as PLAN.md has them; nothing was run
    ");
    ws.write(&todo_path, todo);
    // Back as approved: what stops the run now is the missing model, not the tools.
    let run = ws.run(&["run"]);
    assert!(!run.stderr.contains("tools"), "{}", run.stderr);
}

#[test]
fn a_bad_tool_name_is_refused_with_its_line() {
    let ws = Workspace::new();
    let run = ws.run_stdin(
        &["plan", "--from", "-"],
        &PLAN.replace("docs.search", "search"),
    );
    assert_eq!(run.code, 2, "{run:#?}");
    assert_contains(&run.stderr, ":10:");
    assert_contains(
        &run.stderr,
        "`search` is not a qualified tool name (`server.tool`)",
    );
    assert_contains(&run.stderr, "hint: name MCP tools as `server.tool`");
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
}

#[test]
fn steps_without_tools_render_as_before() {
    let ws = Workspace::new();
    let id = ws.approve(&PLAN.replace("  - tools: github.create_issue, docs.search\n", ""));
    assert!(!ws.todo(&id).contains("tools"));
    let status = ws.ok(&["status", "--json"]);
    assert!(!status.stdout.contains("\"tools\""), "{}", status.stdout);
}
