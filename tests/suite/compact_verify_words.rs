//! The compact planner reads a draft's verify commands like a reviewer: a flag the verify's
//! program does not take (its `--help`, run in the read-only sandbox, does not list it), and a
//! function the goal names that no step names, are sent back in the repair request, and what
//! the repair leaves is a warning in the review.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::{json_answer, llamacpp_props};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr};

/// llama.cpp's `GET /props`, a small context: the compact planner.
fn props() -> Reply {
    llamacpp_props(16_384)
}

/// Whether this machine has the sandbox (`TICK_TEST_NO_SANDBOX=1` says it has not): a
/// program's `--help` runs only inside it.
fn sandboxed() -> bool {
    std::env::var("TICK_TEST_NO_SANDBOX").map_or(true, |v| v != "1")
}

/// The benchmark's `wordfreq.py`, with its tests.
fn wordfreq_project() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "wordfreq.py",
        "import sys\n\n\ndef count_words(text):\n    return {}\n\n\ndef main(argv):\n    \
         print(count_words(sys.stdin.read()))\n",
    );
    ws.write(
        "tests/test_wordfreq.py",
        "import unittest\n\nfrom wordfreq import count_words\n\n\nclass WordfreqTest(unittest.TestCase):\n    \
         def test_count_words(self):\n        self.assertEqual(count_words(''), {})\n",
    );
    ws.write(
        "README.md",
        "# wordfreq\n\nRun the tests: `python3 -m unittest discover tests`\n",
    );
    ws
}

/// A draft of one step, verified by `verify`.
fn draft(title: &str, verify: &str) -> Value {
    json!({
        "title": "Print the most frequent words",
        "summary": "wordfreq.py takes --top N.",
        "steps": [
            {"title": title, "files": ["wordfreq.py"], "new_files": [], "verify": verify},
        ],
    })
}

/// `tick plan` of the `--top` goal: the model drafts `first`, and repairs it as `repaired`.
async fn plan_top(
    ws: &Workspace,
    first: &Value,
    repaired: &Value,
) -> (std::process::Output, Vec<String>) {
    plan(
        ws,
        TOP_GOAL,
        vec![props(), json_answer(first), json_answer(repaired)],
        |_| {},
    )
    .await
}

async fn plan(
    ws: &Workspace,
    goal: &str,
    replies: Vec<Reply>,
    adjust: impl FnOnce(&mut std::process::Command),
) -> (std::process::Output, Vec<String>) {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    let output = ws
        .tick_with(&server, &["plan", goal], |cmd| {
            cmd.env("TICK_PLANNER", "compact");
            // The system's python3 (not a version manager's shim): its `--help` is known.
            cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin");
            adjust(cmd);
        })
        .await;
    let asked = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.last_user_text())
        .collect();
    (output, asked)
}

fn warnings(output: &std::process::Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|l| l.starts_with("warning: tick's check"))
        .map(str::to_owned)
        .collect()
}

const TOP_GOAL: &str =
    "Add a --top N option to wordfreq.py that prints only the N most frequent words";
const TOP_PROBLEM: &str = "S1's verify passes `--top` to `python3 -m unittest`, which does not \
                           take it (its --help lists no `--top`)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_the_verify_program_does_not_take_is_repaired_and_else_warned() {
    if !sandboxed() {
        return;
    }
    let ws = wordfreq_project();
    // One of the benchmark's drafts: the script's flag handed to the test runner.
    let wrong = draft(
        "Add the --top option to wordfreq.py",
        "python3 -m unittest -q tests/test_wordfreq.py --top 10",
    );
    let (output, asked) = plan_top(&ws, &wrong, &wrong).await;
    assert_success(&output);
    assert_eq!(asked.len(), 2, "one plan call and one repair call");
    assert_contains(&asked[1], &format!("- {TOP_PROBLEM}"));
    insta::assert_snapshot!(warnings(&output).join("\n"), @"warning: tick's check of the draft, kept in it: S1's verify passes `--top` to `python3 -m unittest`, which does not take it (its --help lists no `--top`)");
    assert_contains(
        &ws.read(".tasks/draft/PLAN.md"),
        &format!("tick's check of this draft, not fixed by the model: {TOP_PROBLEM}"),
    );

    // Options unittest takes, and the script's own flag given to the script, are fine.
    let ws = wordfreq_project();
    let right = draft(
        "Add the --top option to wordfreq.py",
        "python3 -m unittest --locals -q tests.test_wordfreq && echo a a b | python3 wordfreq.py --top 1",
    );
    let (output, asked) = plan_top(&ws, &wrong, &right).await;
    assert_success(&output);
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert_eq!(warnings(&output), Vec::<String>::new());
    assert!(!ws.read(".tasks/draft/PLAN.md").contains("tick's check"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_no_help_runs_and_no_flag_is_flagged() {
    let ws = wordfreq_project();
    let wrong = draft(
        "Add the --top option to wordfreq.py",
        "python3 -m unittest -q tests/test_wordfreq.py --top 10",
    );
    let (output, asked) = plan(&ws, TOP_GOAL, vec![props(), json_answer(&wrong)], |cmd| {
        cmd.env("TICK_SANDBOX", "off");
    })
    .await;
    assert_success(&output);
    assert_eq!(asked.len(), 1, "no repair: {asked:#?}");
    assert_eq!(warnings(&output), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_the_goal_names_needs_a_step_that_names_it() {
    let goal = "`count_words` should ignore case";
    let ws = wordfreq_project();
    let unnamed = draft(
        "Lowercase the text",
        "python3 -m unittest tests.test_wordfreq",
    );
    let named = draft(
        "Lowercase the text in count_words",
        "python3 -m unittest tests.test_wordfreq",
    );
    let (output, asked) = plan(
        &ws,
        goal,
        vec![props(), json_answer(&unnamed), json_answer(&named)],
        |_| {},
    )
    .await;
    assert_success(&output);
    assert_eq!(asked.len(), 2, "one plan call and one repair call");
    assert_contains(
        &asked[1],
        "- the goal names `count_words`, but no step names it; say which step changes it",
    );
    assert_eq!(warnings(&output), Vec::<String>::new());
    assert_contains(
        &ws.read(".tasks/draft/PLAN.md"),
        "Lowercase the text in count_words",
    );

    // A repair that still names no step for it leaves the warning in the review.
    let ws = wordfreq_project();
    let (output, _) = plan(
        &ws,
        goal,
        vec![props(), json_answer(&unnamed), json_answer(&unnamed)],
        |_| {},
    )
    .await;
    assert_success(&output);
    insta::assert_snapshot!(warnings(&output).join("\n"), @"warning: tick's check of the draft, kept in it: the goal names `count_words`, but no step names it; say which step changes it");
}

/// A plan runs none of the repository's code: `python3 -m unittest --help` started in the
/// workspace would import a `unittest.py` the repository ships before the real one (Python
/// puts the directory it starts in first on `sys.path`). Here that module lists `--top` as
/// an option, so had it run, the wrong flag would pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_own_unittest_module_does_not_answer_for_the_real_one() {
    if !sandboxed() {
        return;
    }
    let ws = wordfreq_project();
    ws.write(
        "unittest.py",
        "print('usage: python -m unittest [-h] [--top TOP]\\n\\noptions:\\n  --top TOP  a flag')\n",
    );
    let wrong = draft(
        "Add the --top option to wordfreq.py",
        "python3 -m unittest -q tests/test_wordfreq.py --top 10",
    );
    let (output, asked) = plan_top(&ws, &wrong, &wrong).await;
    assert_success(&output);
    assert_eq!(asked.len(), 2, "the flag is flagged: {asked:#?}");
    assert_contains(&asked[1], &format!("- {TOP_PROBLEM}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_class_the_module_lacks_is_corrected_by_tick_and_said_in_the_context() {
    let goal = "count_words should ignore case; add a unit test";
    let ws = wordfreq_project();
    // The benchmark's drafts name the test class after the module; the module's is
    // `WordfreqTest`, and no repair call is needed for it.
    let guessed = json!({
        "title": "Ignore case",
        "summary": "count_words lowercases the text.",
        "steps": [
            {"title": "Lowercase the text in count_words", "files": ["wordfreq.py"],
             "new_files": [],
             "verify": "python3 -c \"from wordfreq import count_words; assert count_words('A a') == {'a': 2}\""},
            {"title": "Test count_words with mixed case", "files": ["tests/test_wordfreq.py"],
             "new_files": [],
             "verify": "python3 -m unittest tests.test_wordfreq.TestWordfreq.test_mixed_case"},
        ],
    });
    let (output, asked) = plan(&ws, goal, vec![props(), json_answer(&guessed)], |_| {}).await;
    assert_success(&output);
    assert_eq!(asked.len(), 1, "no repair call: {asked:#?}");
    assert_eq!(warnings(&output), Vec::<String>::new());
    let plan = ws.read(".tasks/draft/PLAN.md");
    assert_contains(
        &plan,
        "verify: `python3 -m unittest tests.test_wordfreq.WordfreqTest.test_mixed_case`",
    );
    assert_contains(
        &plan,
        "tick wrote `WordfreqTest` for `TestWordfreq` in S2's verify: `tests/test_wordfreq.py` \
         has no class `TestWordfreq`, and `WordfreqTest` is its test class.",
    );
    assert!(!plan.contains("TestWordfreq.test_mixed_case"), "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_the_goal_names_is_sent_back_when_no_step_says_it() {
    let goal = "count_words should raise TypeError for bytes";
    let ws = wordfreq_project();
    let silent = draft(
        "Return an empty count for bytes in count_words",
        "python3 -c \"from wordfreq import count_words; assert count_words(b'x') == {}\"",
    );
    let raises = draft(
        "Raise TypeError for bytes in count_words",
        "python3 -c \"from wordfreq import count_words; count_words(b'x')\" 2>&1 | grep TypeError",
    );
    let (output, asked) = plan(
        &ws,
        goal,
        vec![props(), json_answer(&silent), json_answer(&raises)],
        |_| {},
    )
    .await;
    assert_success(&output);
    assert_eq!(asked.len(), 2, "one plan call and one repair call");
    assert_contains(
        &asked[1],
        "- the goal says `TypeError`, but no step says it; name it in the title of the step that \
         does it, and check it in that step's verify",
    );
    assert_eq!(warnings(&output), Vec::<String>::new());
    assert_contains(
        &ws.read(".tasks/draft/PLAN.md"),
        "Raise TypeError for bytes in count_words",
    );
}
