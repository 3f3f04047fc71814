//! The review menu, driven with `TICK_INTERACTIVE=1` and keys on a piped stdin (one per
//! line), and `$EDITOR` as a script that writes a bad edit, then a good one.

use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::{PLAN, Run, Workspace};

fn drafted() -> Workspace {
    let ws = Workspace::new();
    let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(run.code, 0, "{run:#?}");
    ws
}

/// `tick args` as a person at a terminal would, typing `keys`.
fn typed(ws: &Workspace, args: &[&str], keys: &str, vars: &[(&str, &str)]) -> Run {
    ws.run_with(args, |cmd| {
        cmd.env("TICK_INTERACTIVE", "1")
            .envs(vars.iter().copied())
            .write_stdin(keys.as_bytes().to_vec());
    })
}

const SHOWN: &str = "draft: Refactor login module";

/// An editor that breaks the draft on its first run and fixes it (with a change) on the next.
fn bad_then_good_editor(ws: &Workspace) -> Vec<(String, String)> {
    let script = ws.script(
        "editor.sh",
        "n=$(cat \"$EDITOR_RUNS\" 2>/dev/null || echo 0)\nn=$((n + 1))\necho $n > \"$EDITOR_RUNS\"\n\
         if [ $n -eq 1 ]; then sed -i 's/- \\[ \\] S3/- [?] S3/' \"$1\"\n\
         else sed -i 's/- \\[?\\] S3/- [ ] S3/; s/Move the login code/Move all login code/' \"$1\"; fi",
    );
    let counter = ws.temp().join("editor-runs");
    vec![
        ("EDITOR".to_owned(), script),
        ("EDITOR_RUNS".to_owned(), counter.display().to_string()),
    ]
}

fn vars(owned: &[(String, String)]) -> Vec<(&str, &str)> {
    owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[test]
fn enter_chooses_nothing_and_the_plan_is_printed_once() {
    let ws = drafted();
    let before = ws.read(".tasks/draft/PLAN.md");
    let run = typed(&ws, &["review"], "\n?\nx\nk\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout.matches(SHOWN).count(), 1, "{}", run.stdout);
    assert_contains(&run.stderr, "choose one (there is no default)");
    assert_contains(&run.stderr, "  e  edit: open the draft in $EDITOR");
    assert_contains(&run.stderr, "`x` is not a choice");
    assert!(run.stderr.contains("`tick review` comes back here"));
    assert_eq!(
        ws.read(".tasks/draft/PLAN.md"),
        before,
        "keep changes nothing"
    );
    crate::common::workspace::filters(&ws)
        .bind(|| insta::assert_snapshot!("cli_review_menu_session", run.stderr));
}

#[test]
fn p_prints_the_plan_again() {
    let ws = drafted();
    let run = typed(&ws, &["review"], "p\nk\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout.matches(SHOWN).count(), 2, "{}", run.stdout);
}

#[test]
fn approve_asks_for_the_contract_with_its_defaults() {
    let ws = drafted();
    let run = typed(&ws, &["review"], "a\ny\nmany\n7\ny\n\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&run.stderr, "without pausing? [y/N]");
    assert_contains(&run.stderr, "changed files? [no limit]");
    assert_contains(&run.stderr, "`many` is not a positive number");
    assert_contains(
        &run.stderr,
        "commit each verified step when the task runs? [y/N]",
    );
    assert!(
        run.stderr
            .contains("commit the approved task folder now? [y/N]")
    );
    let ids = ws.task_ids();
    assert_eq!(ids.len(), 1);
    let plan = ws.read(&format!(".tasks/{}/PLAN.md", ids[0]));
    assert_contains(&plan, "allow_deviation: true");
    assert_contains(&plan, "max_files_changed: 7");
    assert_contains(&plan, "commit_steps: true");
    assert!(!ws.exists(".tasks/draft"));
}

#[test]
fn approve_can_commit() {
    let ws = drafted();
    let identity = [
        ("GIT_AUTHOR_NAME", "t"),
        ("GIT_AUTHOR_EMAIL", "t@example.com"),
        ("GIT_COMMITTER_NAME", "t"),
        ("GIT_COMMITTER_EMAIL", "t@example.com"),
    ];
    let run = typed(&ws, &["review"], "a\n\n\n\ny\n", &identity);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&run.stderr, "committed `.tasks/");
    assert!(
        !run.stderr.contains("to share it"),
        "no commit hint after a commit: {}",
        run.stderr
    );
    let log = crate::common::workspace::git(ws.root(), &["log", "-1", "--format=%B"]);
    assert_starts_with(&log, "Approve plan: Refactor login module");
}

#[test]
fn a_bad_edit_is_shown_once_and_can_be_edited_again() {
    let ws = drafted();
    let editor = bad_then_good_editor(&ws);
    let run = typed(&ws, &["review"], "e\ne\nk\n", &vars(&editor));
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr.matches("error:").count(),
        1,
        "the error is shown once: {}",
        run.stderr
    );
    assert_contains(&run.stderr, "unknown step marker");
    assert!(
        !run.stderr.contains("the file was not changed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("[e]dit again [u]ndo the edit [k]eep it as it is")
    );
    assert_contains(&run.stderr, "the edited draft is valid");
    let draft = ws.read(".tasks/draft/PLAN.md");
    assert_contains(&draft, "Move all login code");
    assert_contains(&draft, "- [ ] S3");
}

#[test]
fn a_bad_edit_can_be_undone() {
    let ws = drafted();
    let before = ws.read(".tasks/draft/PLAN.md");
    let editor = bad_then_good_editor(&ws);
    let run = typed(&ws, &["review"], "e\nu\nk\n", &vars(&editor));
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr
            .contains("put the draft back as it was before the edit")
    );
    assert_eq!(ws.read(".tasks/draft/PLAN.md"), before);
}

#[test]
fn discard_from_the_menu_asks_first() {
    let ws = drafted();
    let run = typed(&ws, &["review"], "d\nn\nd\ny\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stderr.matches("discard the draft? [y/N]").count(), 2);
    assert!(!ws.exists(".tasks/draft"));
}

#[test]
fn review_needs_a_person_and_a_draft() {
    let ws = drafted();
    let run = ws.fails(&["review"], 2);
    assert_contains(&run.stderr, "needs a person at a terminal");
    ws.ok(&["discard", "--yes"]);
    let run = typed(&ws, &["review"], "k\n", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("there is no draft to review"));
}

#[test]
fn discard_asks_in_a_terminal_and_refuses_without_yes_elsewhere() {
    let ws = drafted();
    let run = ws.fails(&["discard"], 2);
    assert_contains(&run.stderr, "needs a confirmation");
    assert!(
        run.stderr
            .contains("pass `--yes`; the draft was not changed")
    );
    assert!(ws.exists(".tasks/draft/PLAN.md"));
    let run = typed(&ws, &["discard"], "\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains("kept the draft"),
        "the default is no: {}",
        run.stderr
    );
    assert!(ws.exists(".tasks/draft/PLAN.md"));
    let run = typed(&ws, &["discard"], "y\n", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!ws.exists(".tasks/draft"));
}

/// `r` in `tick review` plans again with the feedback, then the menu comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revise_from_review_plans_again_and_comes_back() {
    use crate::common::fake_model::FakeModel;
    use crate::common::scripts::submit_login_plan;
    use crate::common::workspace::Workspace;

    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let mut from = project.command(&format!("{}/v1", server.url()), &["plan", "--from", "-"]);
    let mut child = from
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), PLAN.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());

    server.push(submit_login_plan());
    let mut review = project.command(&format!("{}/v1", server.url()), &["review"]);
    review
        .env("TICK_INTERACTIVE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = review.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"r\nSplit S2 in two\nk\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.to_string().contains("Split S2 in two"));
    // The old draft once, then the revised one once: the menu came back after planning.
    assert_eq!(stdout.matches(SHOWN).count(), 1, "{stdout}");
    assert_eq!(
        stdout.matches("draft: Refactor the login module").count(),
        1,
        "{stdout}"
    );
    assert_eq!(stderr.matches("[a]pprove [r]evise").count(), 2, "{stderr}");
    assert!(
        project
            .read(".tasks/draft/PLAN.md")
            .contains("title: Refactor the login module")
    );
}

#[test]
fn a_broken_draft_can_be_fixed_from_review() {
    let ws = drafted();
    let draft = ".tasks/draft/PLAN.md";
    ws.write(draft, ws.read(draft).replace("- [ ] S3", "- [?] S3"));
    let editor = bad_then_good_editor(&ws);
    // The scripted editor's first run breaks S3 again (a no-op here); its second fixes it.
    let run = typed(&ws, &["review"], "e\ne\nk\n", &vars(&editor));
    assert_eq!(run.code, 0, "{run:#?}");
    assert_starts_with(&run.stderr, "error: `.tasks/draft/PLAN.md:");
    assert!(
        run.stderr
            .contains("`e` opens it in your editor; `d` discards it")
    );
    assert_eq!(
        run.stdout.matches(SHOWN).count(),
        0,
        "nothing to print: {}",
        run.stdout
    );
    assert_contains(&run.stderr, "the edited draft is valid");
    assert!(ws.read(draft).contains("- [ ] S3"));
}
