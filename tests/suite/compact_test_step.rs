//! A goal that asks for a test gets a step that writes one, verified by a command that runs
//! it: the compact planner's draft without one is repaired once, and what the repair leaves
//! is a warning in the review. The benchmark's drafts for this goal had no test step in 4 of
//! 5 runs, every step verified by the whole suite, which passes before any change.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::{json_answer, llamacpp_props};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr};

const GOAL: &str =
    "maximum of an empty list should raise ValueError with a clear message; add a unit test";

/// llama.cpp's `GET /props`, a small context: the compact planner.
fn props() -> Reply {
    llamacpp_props(16_384)
}

fn stats_project() -> Workspace {
    let ws = Workspace::new();
    ws.write("stats.py", "def maximum(values):\n    return max(values)\n");
    ws.write(
        "tests/test_stats.py",
        "import unittest\n\nfrom stats import maximum\n\n\nclass StatsTest(unittest.TestCase):\n    \
         def test_maximum(self):\n        self.assertEqual(maximum([3, 1, 2]), 3)\n",
    );
    ws.write(
        "README.md",
        "# stats\n\nRun the tests: `python3 -m unittest discover tests`\n",
    );
    ws
}

/// The benchmark's draft: one code step, no test, the whole suite as its verify.
fn no_test_step() -> Value {
    json!({
        "title": "Raise ValueError for an empty maximum",
        "summary": "maximum raises ValueError on an empty list.",
        "steps": [
            {"title": "Raise ValueError in maximum for an empty list", "files": ["stats.py"],
             "new_files": [], "verify": "python3 -m unittest discover tests"},
            {"title": "Say so in the README", "files": ["README.md"],
             "new_files": [], "verify": "python3 -m unittest discover tests"},
        ],
    })
}

async fn plan(ws: &Workspace, replies: Vec<Reply>) -> (std::process::Output, FakeModel) {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    let output = ws
        .tick_with(&server, &["plan", GOAL], |cmd| {
            cmd.env("TICK_PLANNER", "compact");
        })
        .await;
    (output, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_without_a_test_step_is_repaired_and_else_warned_in_the_review() {
    let ws = stats_project();
    let (output, server) = plan(
        &ws,
        vec![
            props(),
            json_answer(&no_test_step()),
            json_answer(&no_test_step()),
        ],
    )
    .await;
    assert_success(&output);
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(requests.len(), 2, "one plan call and one repair call");
    // The planner is asked for a verify that names the test, before any draft.
    assert_contains(
        &requests[0].last_user_text(),
        "one shell command that fails before the step's change and passes after it: for a \
         step that writes a test, the new test by its name",
    );
    assert_contains(
        &requests[1].last_user_text(),
        "- the goal asks for a test, but no step changes or creates a test file; add a step \
         that writes the test (in `tests/test_stats.py`, say), with a verify that runs it",
    );
    let stderr = stderr(&output);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    insta::assert_snapshot!(warnings.join("\n"), @"warning: tick's check of the draft, kept in it: the goal asks for a test, but no step changes or creates a test file; add a step that writes the test (in `tests/test_stats.py`, say), with a verify that runs it");
    assert_contains(
        &ws.read(".tasks/draft/PLAN.md"),
        "tick's check of this draft, not fixed by the model: the goal asks for a test",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_step_verified_by_the_whole_suite_is_told_to_run_its_test() {
    let ws = stats_project();
    let mut whole_suite = no_test_step();
    whole_suite["steps"][1] = json!({"title": "Test that maximum raises ValueError",
        "files": ["tests/test_stats.py"], "new_files": [],
        "verify": "python3 -m unittest discover tests"});
    let mut named = whole_suite.clone();
    named["steps"][1]["verify"] =
        json!("python3 -m unittest tests.test_stats.StatsTest.test_maximum_of_nothing");
    let (output, server) = plan(
        &ws,
        vec![props(), json_answer(&whole_suite), json_answer(&named)],
    )
    .await;
    assert_success(&output);
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(requests.len(), 2, "one plan call and one repair call");
    assert_contains(
        &requests[1].last_user_text(),
        "- S2 writes the test file `tests/test_stats.py`, but its verify (`python3 -m unittest \
         discover tests`) runs only the whole suite, which passes before the change too; verify \
         with a command that runs the new test: `python3 -m unittest \
         tests.test_stats.StatsTest.test_new`, the new test's name for `test_new`",
    );
    let plan_md = ws.read(".tasks/draft/PLAN.md");
    assert_contains(
        &plan_md,
        "`python3 -m unittest tests.test_stats.StatsTest.test_maximum_of_nothing`",
    );
    assert!(!plan_md.contains("tick's check of this draft"), "{plan_md}");
}
