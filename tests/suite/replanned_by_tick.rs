//! Issue 31: tick's own re-plan of an approved task (`tick plan --revise`) is named as tick's
//! in `tick run`, `status` and `next`, and a person's edit after it is named as an edit again;
//! `tick status --json` carries the next action its human output ends with.

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::openai_call;
use crate::common::workspace::{PLAN as WS_PLAN, Run, Workspace, filters};

const PLAN: &str = concat!(
    "# Greet\n\n## Summary\nGreet people.\n\n## Steps\n",
    crate::common::plans::greet_steps!("hello", ""),
);

/// `tick args…` against `server`, as a person sees it.
async fn shown(ws: &Workspace, server: &FakeModel, args: &[&str]) -> String {
    let mut cmd = ws.command(&format!("{}/v1", server.url()), args);
    Run::off_runtime(move || cmd.output().unwrap())
        .await
        .shown(args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revise_is_shown_as_tick_s_re_plan_until_a_person_edits_it() {
    let server = FakeModel::start().await;
    let ws = Workspace::sample();
    let id = ws.approve_plan(&server, PLAN).await;
    server.push(openai_call(
        "c",
        "submit_plan",
        json!({
            "title": "Greet",
            "summary": "Greet people.",
            "steps": [
                {"title": "Write the greeting", "files": ["hello.txt"], "verify": ["grep -q hello hello.txt"]},
                {"title": "Write the farewell", "files": ["bye.txt"]},
                {"title": "Add a changelog", "files": ["CHANGELOG.md"]}
            ]
        }),
    ));
    ws.tick_ends(&server, &["plan", "--revise", "keep a changelog", &id], 0)
        .await;
    let mut out = String::new();
    for args in [&["run"][..], &["status"], &["next"]] {
        out.push_str(&shown(&ws, &server, args).await);
    }
    // A person's edit after tick's re-plan is an edit.
    let plan = format!(".tasks/{id}/PLAN.md");
    let edited = ws.read(&plan).replace("Add a changelog", "Add a NEWS file");
    ws.write(&plan, edited);
    for args in [&["run"][..], &["status"]] {
        out.push_str(&shown(&ws, &server, args).await);
    }
    filters(&ws).bind(|| insta::assert_snapshot!("replanned_by_tick", out));
    assert_eq!(
        server.requests().len(),
        1,
        "only the re-plan asked the model"
    );
}

#[test]
fn status_json_carries_the_next_action_the_human_output_ends_with() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], WS_PLAN);
    let mut nexts = Vec::new();
    let mut next = |ws: &Workspace| {
        let run = ws.ok(&["status", "--json"]);
        let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        nexts.push(value["next"].clone());
    };
    next(&ws);
    ws.ok(&["approve"]);
    next(&ws);
    ws.ok(&["mark", "S1", "done"]);
    next(&ws);
    for step in ["S2.1", "S2.2", "S3"] {
        ws.ok(&["mark", step, "done"]);
    }
    next(&ws);
    // The human output's last line is the same hint.
    let human = ws.ok(&["status"]).stderr;
    let last = human.lines().last().unwrap_or_default().to_owned();
    assert_eq!(
        Some(last.trim_start_matches("hint: ")),
        nexts[3]["hint"].as_str()
    );
    insta::assert_json_snapshot!("status_json_next", nexts);
}
