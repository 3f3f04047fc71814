//! What `tick plan` prints, pinned by snapshots: a plain draft, a draft whose planner has
//! questions and no terminal to ask them at (needs-input), a revision with its step diff, and
//! the planner without `run_command`. The real binary against the loopback fake model; temp
//! paths are filtered.

use serde_json::json;

use crate::common::project::{Project, scripted, stderr, stdout};
use crate::common::scripts::{login_plan, openai_call, submit_login_plan};

/// Exit code, stdout and stderr of one command, as a person reads them.
fn both(output: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        stdout(output),
        stderr(output)
    )
}

fn filters(project: &Project) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &regex_escape(&project.root().display().to_string()),
        "[REPO]",
    );
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escape = "\\.+*?()|[]{}^$#&-~".contains(c);
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_draft() {
    let project = Project::new();
    let replies = [
        openai_call("call_1", "list_files", json!({})),
        openai_call("call_2", "read_file", json!({"path": "src/login.rs"})),
        openai_call("call_3", "submit_plan", login_plan()),
    ];
    let (output, _) = scripted(&project, replies, &["plan", "Refactor login"]).await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_plain_draft", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_with_questions_without_a_terminal() {
    let project = Project::new();
    let ask = openai_call(
        "call_q",
        "ask_user",
        json!({"questions": [
            {"question": "Keep sessions in Redis or in the database?", "why": "both exist", "options": ["redis", "database"]},
            {"question": "May the old endpoint go?"}
        ]}),
    );
    let (output, _) = scripted(&project, [ask], &["plan", "Move sessions"]).await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_needs_input", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_shows_the_step_diff() {
    let project = Project::new();
    let (output, server) =
        scripted(&project, [submit_login_plan()], &["plan", "Refactor login"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let mut revised = login_plan();
    revised["steps"][1]["title"] = json!("Move login into src/auth");
    server.push(openai_call("call_2", "submit_plan", revised));
    let output = project
        .tick(&server, &["plan", "--revise", "name the new module auth"])
        .await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_revised", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_without_run_command() {
    let project = Project::new();
    let server = crate::common::fake_model::FakeModel::start().await;
    server.push(submit_login_plan());
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_SANDBOX", "off");
        })
        .await;
    filters(&project)
        .bind(|| insta::assert_snapshot!("plan_output_without_run_command", both(&output)));
}
