//! `tick import` end to end: real files of each tool's format in a real git repository,
//! imported, approved and run by the real binary against the fake model; the source file's
//! task ticked when tick ticks the step, and every other byte of it as it was. Also the
//! hostile inputs (a 50 MB tasks.md, JSON nested 10,000 levels, ids used twice, paths outside
//! the repository) and the overlap of two real tasks' files at review, approval, run and check.

use std::io::Write as _;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use tick::tasks::state::State;

use super::running::work;
use crate::common::fake_model::FakeModel;
use crate::common::text::assert_contains;
use crate::common::text::assert_starts_with;
use crate::common::workspace::{Workspace, assert_success, filters};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn state(ws: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

/// A repository holding `files`, committed.
fn repo(files: &[(&str, &str)]) -> Workspace {
    let ws = Workspace::new();
    for (path, text) in files {
        ws.write(path, text);
    }
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "--allow-empty", "-m", "source tasks"]);
    ws
}

/// `tick import args` and `tick approve`, committed; the new task's id.
async fn import_and_approve(ws: &Workspace, server: &FakeModel, args: &[&str]) -> String {
    let mut import = vec!["import"];
    import.extend_from_slice(args);
    let output = ws.tick_against(server, &import).await;
    assert_success(&output);
    let before = ws.task_ids();
    assert_success(&ws.tick_against(server, &["approve"]).await);
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "approve"]);
    ws.task_ids()
        .into_iter()
        .find(|id| !before.contains(id))
        .unwrap()
}

/// The bytes where `before` and `after` differ, as (offset, before, after).
fn changed_bytes(before: &str, after: &str) -> Vec<(usize, char, char)> {
    assert_eq!(
        before.len(),
        after.len(),
        "only marks change, so the length stays"
    );
    before
        .bytes()
        .zip(after.bytes())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, char::from(a), char::from(b)))
        .collect()
}

/// Imports `source` (at `path`) and runs it: `steps` are the steps the fake model works, the
/// first writing greeting.txt, the others NOTES.md. Returns the workspace, the task id and the
/// run's output.
async fn round_trip(
    files: &[(&str, &str)],
    path: &str,
    steps: &[&str],
) -> (Workspace, String, Output) {
    let server = FakeModel::start().await;
    let ws = repo(files);
    let id = import_and_approve(&ws, &server, &[path]).await;
    for (index, step) in steps.iter().enumerate() {
        let file = if index == 0 {
            "greeting.txt"
        } else {
            "NOTES.md"
        };
        work(&server, step, file, "hello\n");
    }
    let output = ws.tick_ends(&server, &["run"], 0).await;
    (ws, id, output)
}

const SPECKIT: &str = include_str!("../fixtures/import/speckit-tasks.md");
const KIRO: &str = include_str!("../fixtures/import/kiro-tasks.md");
const OPENSPEC: &str = include_str!("../fixtures/import/openspec-tasks.md");
const OPENSPEC_PROPOSAL: &str = include_str!("../fixtures/import/openspec-proposal.md");
const TASKMASTER: &str = include_str!("../fixtures/import/taskmaster-tasks.json");
const BACKLOG: &str = include_str!("../fixtures/import/backlog-task.md");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_kit_tasks_file_is_imported_run_and_ticked_back_with_a_capital_x() {
    let path = "specs/001-greeting/tasks.md";
    let (ws, id, output) = round_trip(&[(path, SPECKIT)], path, &["S2.1"]).await;
    let after = ws.read(path);
    let at = SPECKIT.find("- [ ] T002").unwrap() + 3;
    assert_eq!(changed_bytes(SPECKIT, &after), [(at, ' ', 'X')]);
    assert!(
        stderr(&output).contains("S2.1: ticked `T002` in `specs/001-greeting/tasks.md` too"),
        "{}",
        stderr(&output)
    );
    filters(&ws).bind(|| {
        insta::assert_snapshot!("import_speckit_source_after", after);
        insta::assert_snapshot!("import_speckit_todo", ws.todo(&id));
    });
    // The source ids are in state.yaml too, with the marks tick ticks back.
    let record = state(&ws, &id).import.unwrap();
    assert_eq!(
        (
            record.format.as_str(),
            record.path.as_str(),
            record.write_back
        ),
        ("speckit", path, true)
    );
    let sources: Vec<(String, String)> = record
        .steps
        .iter()
        .map(|(k, v)| (k.to_string(), v.source.clone()))
        .collect();
    assert_eq!(
        sources,
        [
            ("S1.1".into(), "T001".into()),
            ("S2.1".into(), "T002".into())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kiro_tasks_file_with_optional_and_nested_tasks_is_ticked_back_task_by_task() {
    let path = ".kiro/specs/greeting/tasks.md";
    let (ws, _id, _) = round_trip(&[(path, KIRO)], path, &["S2.1", "S2.2"]).await;
    let after = ws.read(path);
    let at = |needle: &str| KIRO.find(needle).unwrap() + needle.find('[').unwrap() + 1;
    assert_eq!(
        changed_bytes(KIRO, &after),
        [
            (at("- [ ] 2. "), ' ', 'x'),
            (at("  - [ ] 2.1"), ' ', 'x'),
            (at("  - [ ]* 2.2"), ' ', 'x')
        ]
    );
    filters(&ws).bind(|| insta::assert_snapshot!("import_kiro_source_after", after));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openspec_change_is_imported_run_and_ticked_back() {
    let path = "openspec/changes/add-greeting/tasks.md";
    let (ws, _id, _) = round_trip(
        &[
            (path, OPENSPEC),
            (
                "openspec/changes/add-greeting/proposal.md",
                OPENSPEC_PROPOSAL,
            ),
        ],
        // The change folder names the file.
        "openspec/changes/add-greeting",
        &["S2.1"],
    )
    .await;
    let after = ws.read(path);
    let at = OPENSPEC.find("- [ ] 2.1").unwrap() + 3;
    assert_eq!(changed_bytes(OPENSPEC, &after), [(at, ' ', 'x')]);
    filters(&ws).bind(|| insta::assert_snapshot!("import_openspec_source_after", after));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taskmaster_file_with_tags_and_subtasks_gets_status_done_and_nothing_else() {
    let path = ".taskmaster/tasks/tasks.json";
    let (ws, id, _) = round_trip(&[(path, TASKMASTER)], ".taskmaster", &["S2.1"]).await;
    let after = ws.read(path);
    // The sub-task (no check: done without verification) and its parent (its testStrategy
    // passes) are done; the other tag's task is not touched.
    let sub = r#""details": "",
            "status": "pending""#;
    let want = TASKMASTER
        .replacen(sub, &sub.replace("pending", "done"), 1)
        .replacen(
            r#""dependencies": [1],
        "status": "pending""#,
            r#""dependencies": [1],
        "status": "done""#,
            1,
        );
    assert_eq!(after, want);
    filters(&ws).bind(|| insta::assert_snapshot!("import_taskmaster_source_after", after));
    let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
    assert!(plan.contains("  - verify: `grep -q hello greeting.txt`\n  - proposed: verify, from Taskmaster's `testStrategy`\n"), "{plan}");
    assert!(
        !plan.contains("Shout the greeting"),
        "only the master tag: {plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_task_is_imported_with_the_repositorys_test_command_and_ticked_back() {
    let path = "backlog/tasks/task-7 - Greet-people.md";
    let makefile = "test:\n\tgrep -q hello greeting.txt\n";
    let (ws, id, output) =
        round_trip(&[(path, BACKLOG), ("Makefile", makefile)], path, &["S2"]).await;
    let after = ws.read(path);
    let at = BACKLOG.find("- [ ] #2").unwrap() + 3;
    assert_eq!(changed_bytes(BACKLOG, &after), [(at, ' ', 'x')]);
    filters(&ws).bind(|| insta::assert_snapshot!("import_backlog_source_after", after));
    let todo = ws.todo(&id);
    assert!(todo.contains("- [x] S2 greeting.txt says hello\n  - source: task-7#2\n  - files: greeting.txt\n  - verify: `make test`\n  - proposed: verify, the repository's test command (from `Makefile`)\n"), "{todo}");
    assert!(
        stderr(&output).contains("✓ S2 `make test` exit 0"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticked_source_task_is_done_but_not_verified_until_tick_verify_earns_the_tick() {
    let server = FakeModel::start().await;
    let path = "backlog/tasks/task-7 - Greet-people.md";
    let makefile = "test:\n\tgrep -q hello greeting.txt\n";
    let ws = repo(&[
        (path, BACKLOG),
        ("Makefile", makefile),
        ("greeting.txt", "hello\n"),
    ]);
    let id = import_and_approve(&ws, &server, &[path]).await;
    let todo = ws.todo(&id);
    assert!(todo.contains("- [x] S1 The wording is agreed\n"), "{todo}");
    let status = |ws: &Workspace| ws.ok(&["status"]).stdout;
    let before = status(&ws);
    assert!(
        before.contains("[x] S1 The wording is agreed  (not verified)"),
        "{before}"
    );
    assert_success(&ws.tick_against(&server, &["verify", "S1"]).await);
    let after = status(&ws);
    assert!(
        after.contains("[x] S1 The wording is agreed\n        verified: `make test` exit 0"),
        "{after}"
    );
}

/// A step ticked by `tick verify` (its verify passed) ticks its source's task, as a run's tick
/// does: no model is needed for the source to follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_tick_verify_ticks_ticks_the_source_too() {
    let server = FakeModel::start().await;
    let path = "specs/001-greeting/tasks.md";
    let ws = repo(&[(path, SPECKIT)]);
    let id = import_and_approve(&ws, &server, &[path]).await;
    ws.write("greeting.txt", "hello\n");
    assert_success(&ws.tick_against(&server, &["mark", "S2.1", "done"]).await);
    assert_eq!(ws.read(path), SPECKIT, "a hand tick is not tick's");
    let output = ws.tick_against(&server, &["verify", "S2.1"]).await;
    assert_success(&output);
    assert!(
        stderr(&output).contains("S2.1: ticked `T002` in `specs/001-greeting/tasks.md` too"),
        "{}",
        stderr(&output)
    );
    let at = SPECKIT.find("- [ ] T002").unwrap() + 3;
    assert_eq!(changed_bytes(SPECKIT, &ws.read(path)), [(at, ' ', 'X')]);
    assert!(ws.todo(&id).contains("- [x] S2.1"));
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_line_edited_after_the_import_is_not_written_back_and_the_person_is_told() {
    let server = FakeModel::start().await;
    let path = "specs/001-greeting/tasks.md";
    let ws = repo(&[(path, SPECKIT)]);
    import_and_approve(&ws, &server, &[path]).await;
    let edited = SPECKIT.replace(
        "Write the greeting in greeting.txt",
        "Write a warm greeting in greeting.txt",
    );
    ws.write(path, &edited);
    ws.git(&["commit", "-qam", "reword T002"]);
    work(&server, "S2.1", "greeting.txt", "hello\n");
    let output = ws.tick_ends(&server, &["run"], 0).await;
    assert_eq!(
        ws.read(path),
        edited,
        "the edited line is left as the person wrote it"
    );
    let err = stderr(&output);
    assert!(
        err.contains("warning: S2.1 is done, but `T002` in `specs/001-greeting/tasks.md` was not ticked: its line changed since the import"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_write_back_leaves_the_source_alone() {
    let path = "openspec/changes/add-greeting/tasks.md";
    let server = FakeModel::start().await;
    let ws = repo(&[(path, OPENSPEC)]);
    let id = import_and_approve(&ws, &server, &[path, "--no-write-back"]).await;
    assert!(!state(&ws, &id).import.unwrap().write_back);
    work(&server, "S2.1", "greeting.txt", "hello\n");
    assert_success(&ws.tick_against(&server, &["run"]).await);
    assert_eq!(ws.read(path), OPENSPEC);
}

/// A source task without an id is imported, but cannot be found again to be ticked back:
/// the import says so instead of leaving it out of the write-back without a word.
#[test]
fn a_source_task_without_an_id_is_imported_and_said_not_to_be_ticked_back() {
    let path = "specs/001-x/tasks.md";
    let ws = repo(&[(
        path,
        "# Tasks: X\n\n## Phase 1: Setup\n\n- [ ] T001 Real one\n-  [ ] T002 Odd indent\n- [ ] Write a.txt\n",
    )]);
    let run = ws.run(&["import", path, "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Odd indent"), "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "(\"Write a.txt\") has no id in the source, so tick will not tick it back there"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("step `S1.2` (`T002`)"),
        "{}",
        run.stderr
    );
}

#[test]
fn dry_run_prints_the_draft_and_writes_nothing() {
    let path = ".kiro/specs/greeting/tasks.md";
    let ws = repo(&[(path, KIRO)]);
    let run = ws.ok(&["import", path, "--dry-run"]);
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
    filters(&ws).bind(|| insta::assert_snapshot!("import_kiro_dry_run", run.stdout));
    assert_contains(&run.stderr, "nothing written (dry run)");
}

#[test]
fn a_path_without_a_known_place_needs_a_format() {
    let ws = repo(&[("plans/todo.md", "- [ ] 1. One\n")]);
    let run = ws.fails(&["import", "plans/todo.md"], 2);
    assert_eq!(
        run.stderr,
        "error: cannot tell which tool wrote `plans/todo.md`\n\nhint: name it with `--format kiro|speckit|openspec|taskmaster|backlog`; nothing was imported\n"
    );
    ws.ok(&["import", "plans/todo.md", "--format", "kiro"]);
    assert!(
        ws.read(".tasks/draft/PLAN.md")
            .contains("- [ ] S1 One\n  - source: 1\n")
    );
}

#[test]
fn a_fifty_megabyte_tasks_file_is_refused_at_once_with_a_clear_error() {
    let ws = repo(&[]);
    let mut big = String::with_capacity(50 * 1024 * 1024 + 64);
    let mut n = 0;
    while big.len() < 50 * 1024 * 1024 {
        n += 1;
        big.push_str(&format!("- [ ] T{n:07} Do task {n} in src/file{n}.py\n"));
    }
    ws.write("specs/001-big/tasks.md", &big);
    let started = Instant::now();
    let run = ws.run_bounded(
        &["import", "specs/001-big/tasks.md"],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_starts_with(
        &run.stderr,
        "error: `specs/001-big/tasks.md` is larger than 8192 KiB",
    );
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
}

#[test]
fn a_large_tasks_file_within_the_limits_is_imported_in_bounded_time() {
    let ws = repo(&[]);
    let mut big = String::from("# Tasks: Big\n\n## Phase 1: All\n\n");
    for n in 1..1_900 {
        big.push_str(&format!("- [ ] T{n:05} [P] [US1] Do task {n} in src/mod{n}/file{n}.py\n  - Verify: `grep -q x src/mod{n}/file{n}.py`\n"));
    }
    while big.len() < 7_900_000 {
        big.push_str("Prose that is not a task, only there to make the file large enough.\n");
    }
    ws.write("specs/001-big/tasks.md", &big);
    let started = Instant::now();
    let run = ws.run_bounded(
        &["import", "specs/001-big/tasks.md"],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_contains(&run.stderr, "imported 1900 steps");
    assert!(
        ws.read(".tasks/draft/PLAN.md")
            .contains("- [ ] S1.1899 [P] Do task 1899 in src/mod1899/file1899.py\n")
    );
}

#[test]
fn a_tasks_json_nested_ten_thousand_levels_is_an_error_not_a_crash() {
    let ws = repo(&[]);
    let deep = format!(
        "{{\"master\": {{\"tasks\": {}{}}}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    ws.write(".taskmaster/tasks/tasks.json", &deep);
    let run = ws.run_bounded(
        &["import", ".taskmaster/tasks/tasks.json"],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_starts_with(&run.stderr, "error: `.taskmaster/tasks/tasks.json:1:");
    assert_contains(&run.stderr, "recursion limit exceeded");
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
}

#[test]
fn task_ids_used_twice_are_an_error_naming_both_lines() {
    let ws = repo(&[(
        "specs/002-x/tasks.md",
        "## Phase 1: Setup\n\n- [ ] T001 Create a.py\n- [ ] T001 Create b.py\n",
    )]);
    let run = ws.fails(&["import", "specs/002-x/tasks.md"], 2);
    assert_eq!(
        run.stderr,
        "error: `specs/002-x/tasks.md:4:1`: task id `T001` is used twice (also on line 3)\n\nhint: give each task its own id; nothing was imported\n"
    );
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_repository_are_warned_of_and_never_written() {
    let server = FakeModel::start().await;
    let ws = repo(&[]);
    // A task naming a path outside the repository: warned of, not among the step's files.
    ws.write("specs/003-x/tasks.md", "## Phase 1: Setup\n\n- [ ] T001 Overwrite ../../outside.txt and write greeting.txt\n  - Verify: `grep -q hello greeting.txt`\n");
    let run = ws.ok(&["import", "specs/003-x/tasks.md"]);
    assert_contains(
        &run.stderr,
        "warning: line 3: task `T001` names `../../outside.txt`, outside the repository; it is not among the step's files",
    );
    assert!(
        ws.read(".tasks/draft/PLAN.md")
            .contains("  - files: greeting.txt\n")
    );
    ws.ok(&["discard", "--yes"]);
    // A source file outside the repository: imported, never ticked back.
    let outside = ws.temp().join("elsewhere/specs/004-y/tasks.md");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    let source = "## Phase 1: Setup\n\n- [ ] T001 Write greeting.txt\n  - Verify: `grep -q hello greeting.txt`\n";
    std::fs::write(&outside, source).unwrap();
    let named = outside.to_string_lossy().into_owned();
    let output = ws.tick_against(&server, &["import", &named]).await;
    assert_success(&output);
    assert!(
        stderr(&output).contains("is outside the repository: tick will not tick it back"),
        "{}",
        stderr(&output)
    );
    assert_success(&ws.tick_against(&server, &["approve"]).await);
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "approve"]);
    work(&server, "S1.1", "greeting.txt", "hello\n");
    assert_success(&ws.tick_against(&server, &["run"]).await);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), source);
}

/// `tick args` against `server` in a "terminal" (`TICK_INTERACTIVE=1`) answering `stdin`.
async fn interactive(ws: &Workspace, server: &FakeModel, args: &[&str], stdin: &str) -> Output {
    let mut cmd = ws.command(&format!("{}/v1", server.url()), args);
    cmd.env("TICK_INTERACTIVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let stdin = stdin.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

const AUTH: &str = "# Auth\n\n## Summary\nLog people in.\n\n## Steps\n- [ ] S1 Add the login check\n  - files: src/login.rs\n  - verify: `grep -q login src/login.rs`\n- [ ] S2 Document it\n  - files: README.md\n";
const LIMITS: &str = "# Limits\n\n## Summary\nRate-limit logins.\n\n## Steps\n- [ ] S1 Count failures\n  - files: src/limits.rs\n- [ ] S2 Refuse the sixth failure\n  - files: src/**\n  - verify: `grep -q refuse src/login.rs`\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_that_change_the_same_files_are_named_at_review_approval_run_and_check() {
    let server = FakeModel::start().await;
    let ws = Workspace::new();
    let auth = ws.approve_plan(&server, AUTH).await;
    ws.write("plan.md", LIMITS);
    assert_success(
        &ws.tick_against(&server, &["plan", "--from", "plan.md"])
            .await,
    );
    std::fs::remove_file(ws.path("plan.md")).unwrap();
    let line = format!("warning: S2 of this plan and S1 of `{auth}` both change `src/login.rs`");

    // The review shows it.
    let output = interactive(&ws, &server, &["review"], "k\n").await;
    assert!(stderr(&output).contains(&line), "{}", stderr(&output));

    // Approval asks in a terminal; no keeps the draft.
    let output = interactive(&ws, &server, &["approve"], "n\n").await;
    assert_success(&output);
    assert!(stderr(&output).contains(&line), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("approve it anyway?"),
        "{}",
        stderr(&output)
    );
    assert!(ws.exists(".tasks/draft/PLAN.md"), "not approved");
    assert_eq!(ws.task_ids().len(), 1);

    // Yes approves, and the approval records what the person was shown.
    let output = interactive(&ws, &server, &["approve"], "y\n").await;
    assert_success(&output);
    let limits = ws.task_ids().into_iter().find(|id| *id != auth).unwrap();
    let approval = state(&ws, &limits).approval.unwrap();
    assert_eq!(
        approval.overlaps,
        [line.trim_start_matches("warning: ").to_owned()]
    );
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "approve limits"]);

    // `tick check` fails with its own exit code for CI.
    let output = ws.tick_ends(&server, &["check"], 16).await;
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        out,
        format!(
            "{auth} `S1`: overlap: S1 of this task and S2 of `{limits}` both change `src/login.rs`\n"
        )
    );

    // `tick run` names the other task's pending step before the step starts.
    work(&server, "S1", "src/limits.rs", "pub fn count() {}\n");
    work(&server, "S2", "src/login.rs", "// refuse the sixth\n");
    let output = ws.tick_against(&server, &["run", &limits]).await;
    let err = stderr(&output);
    let overlap = format!("warning: S2 of this task and S1 of `{auth}` both change `src/login.rs`");
    assert_eq!(output.status.code(), Some(0), "{err}");
    let at = err.find(&overlap).unwrap_or_else(|| panic!("{err}"));
    let s1_done = err.find("S1 done").unwrap_or_else(|| panic!("{err}"));
    let s2_done = err.find("S2 done").unwrap_or_else(|| panic!("{err}"));
    assert!(
        s1_done < at && at < s2_done,
        "named before S2 starts, not for S1: {err}"
    );
    assert_eq!(err.matches(&overlap).count(), 1, "{err}");
}
