//! `tick undo` / `tick redo` / `--from-git` end to end: the real binary, real git
//! repositories, a fake model that changes files with its tools and with `bash`. An undo puts
//! back exactly the bytes a step changed, refuses files someone changed since (naming who),
//! and a kill at any instant leaves the state before or after it.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::{openai_call, openai_calls};
use crate::common::workspace::task_state as state;
use crate::common::workspace::{Run, Workspace, stderr, stdout};

fn todo(project: &Workspace, id: &str) -> String {
    project.read(&format!(".tasks/{id}/TODO.md"))
}

fn mode(project: &Workspace, rel: &str) -> u32 {
    std::fs::metadata(project.path(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// A repository with `files` committed and `plan` approved (committed too).
async fn project(server: &FakeModel, files: &[(&str, &[u8])], plan: &str) -> (Workspace, String) {
    let project = Workspace::new();
    for (path, bytes) in files {
        project.write(path, bytes);
    }
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "files"]);
    let id = project.approve_plan(server, plan).await;
    (project, id)
}

/// One step's script: `calls` in one answer, then the done claim.
fn step(server: &FakeModel, id: &str, calls: &[(&str, serde_json::Value)]) {
    let calls: Vec<(String, &str, serde_json::Value)> = calls
        .iter()
        .enumerate()
        .map(|(n, (name, args))| (format!("call_{id}_{n}"), *name, args.clone()))
        .collect();
    let borrowed: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), *b, c.clone()))
        .collect();
    server.push(openai_calls(&borrowed));
    server.push(openai_call(
        &format!("call_{id}_done"),
        "update_step",
        json!({"id": id, "status": "done", "evidence": "did it"}),
    ));
}

fn write(path: &str, content: &str) -> (&'static str, serde_json::Value) {
    ("write_file", json!({"path": path, "content": content}))
}

fn bash(command: &str) -> (&'static str, serde_json::Value) {
    ("bash", json!({"command": command}))
}

async fn run_steps(project: &Workspace, server: &FakeModel, args: &[&str]) {
    let mut all = vec!["run"];
    all.extend(args);
    let output = project.tick_against(server, &all).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

const GREETING: &str = "# Greeting

## Steps
- [ ] S1 Write the greeting
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`
- [ ] S2 Shout it
  - files: shout.sh, greeting.txt
  - depends: S1
  - verify: `test -f shout.sh`
- [ ] S3 Document it
  - files: NOTES.md
  - verify: `test -f NOTES.md`
";

/// `plan` approved over `greeting.txt` "hi", and S1 run: it writes "hello" there.
async fn greeting_written(server: &FakeModel, plan: &str) -> (Workspace, String) {
    let (project, id) = project(server, &[("greeting.txt", b"hi\n")], plan).await;
    step(server, "S1", &[write("greeting.txt", "hello\n")]);
    run_steps(&project, server, &["--steps", "1"]).await;
    (project, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_after_a_tool_write_puts_the_bytes_back_and_reopens_the_step() {
    let server = FakeModel::start().await;
    let (project, id) = greeting_written(&server, GREETING).await;
    assert_eq!(project.read("greeting.txt"), "hello\n");

    let output = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.read("greeting.txt"), "hi\n");
    assert!(todo(&project, &id).contains("- [ ] S1 Write the greeting"));
    let record = state(&project, &id).steps[&"S1".parse().unwrap()].clone();
    assert_eq!(record.undone.len(), 1);
    assert_eq!(record.undone[0].files, ["greeting.txt"]);
    assert!(!record.undone[0].evidence.is_empty(), "{record:?}");
    assert!(record.evidence.is_empty() && record.fingerprints.is_empty());
    // tick's own write: nothing is reported as changed outside tick.
    let status = project.tick().args(["status"]).output().unwrap();
    assert!(
        !stderr(&status).contains("outside tick"),
        "{}",
        stderr(&status)
    );
    let check = project.tick().args(["check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    // The log says so.
    let log = project.tick().args(["log"]).output().unwrap();
    assert!(
        stdout(&log).contains("S1 undone by a person (`tick undo`): put back greeting.txt"),
        "{}",
        stdout(&log)
    );
}

const FILES: &str = "# Files

## Steps
- [ ] S1 Shuffle files
  - files: made.txt, greeting.txt, gone.txt, run.sh, bin.dat, notes.txt
  - verify: `test -x run.sh`
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_after_bash_puts_back_created_modified_deleted_chmodded_and_binary_files() {
    let server = FakeModel::start().await;
    let binary: &[u8] = &[0, 1, 2, 0xff, 0xfe, b'\n', 0x80];
    let (project, id) = project(
        &server,
        &[
            ("greeting.txt", b"hi\n"),
            ("gone.txt", b"bye\n"),
            ("run.sh", b"echo run\n"),
            ("bin.dat", binary),
        ],
        FILES,
    )
    .await;
    // Not committed: git cannot give it back, so tick keeps it at the start.
    project.write("notes.txt", "mine, uncommitted\n");
    let status_before = project.git(&["status", "--porcelain"]);
    step(
        &server,
        "S1",
        &[bash(
            "printf 'new\\n' > made.txt && printf 'hello\\n' > greeting.txt && rm gone.txt \
             && chmod +x run.sh && printf '\\377\\000\\001' > bin.dat && echo more >> notes.txt",
        )],
    );
    run_steps(&project, &server, &["--steps", "1"]).await;
    assert!(project.exists("made.txt") && !project.exists("gone.txt"));
    assert_eq!(mode(&project, "run.sh") & 0o111, 0o111);

    let dry = project
        .tick()
        .args(["undo", "S1", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    for wanted in [
        "made.txt: remove (the step created it)",
        "gone.txt: recreate",
        "-hello",
        "+hi",
    ] {
        assert!(out.contains(wanted), "{wanted}: {out}");
    }

    let output = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!project.exists("made.txt"));
    assert_eq!(project.read("greeting.txt"), "hi\n");
    assert_eq!(project.read("gone.txt"), "bye\n");
    assert_eq!(project.read("notes.txt"), "mine, uncommitted\n");
    assert_eq!(project.bytes("bin.dat"), binary);
    assert_eq!(mode(&project, "run.sh") & 0o111, 0);
    // Apart from the task's own files, git sees exactly what it saw before the step.
    let status_after = project.git(&["status", "--porcelain"]);
    let outside = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.contains(".tasks/"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(outside(&status_after), outside(&status_before));
    assert!(todo(&project, &id).contains("- [ ] S1 Shuffle files"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_is_refused_when_a_person_or_a_later_step_changed_a_file_since() {
    let server = FakeModel::start().await;
    let (project, id) = project(&server, &[("greeting.txt", b"hi\n")], GREETING).await;
    step(&server, "S1", &[write("greeting.txt", "hello\n")]);
    step(
        &server,
        "S2",
        &[
            write("greeting.txt", "hello world\n"),
            write("shout.sh", "echo HELLO\n"),
        ],
    );
    run_steps(&project, &server, &["--steps", "2"]).await;

    let output = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("`greeting.txt` changed since by step `S2`"),
        "{}",
        stderr(&output)
    );
    assert_eq!(project.read("greeting.txt"), "hello world\n");

    // A person's edit of S2's file: refused, and their bytes kept exactly.
    project.write("shout.sh", "echo mine\n");
    let output = project.tick().args(["undo", "S2"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("`shout.sh` changed outside tick (by a person)"),
        "{err}"
    );
    assert!(err.contains("--only PATH"), "{err}");
    assert_eq!(project.read("shout.sh"), "echo mine\n");
    assert!(!todo(&project, &id).contains("- [ ] S2"));

    // `--only` the other file: that one goes back, the person's stays theirs.
    let output = project
        .tick()
        .args(["undo", "S2", "--only", "greeting.txt"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.read("greeting.txt"), "hello\n");
    assert_eq!(project.read("shout.sh"), "echo mine\n");
    assert!(todo(&project, &id).contains("- [ ] S2 Shout it"));
}

/// GREETING approved, and S1 and S2 run by `tick run --steps 2` with `run_args`.
async fn two_steps_done(server: &FakeModel, run_args: &[&str]) -> (Workspace, String) {
    let (project, id) = project(server, &[("greeting.txt", b"hi\n")], GREETING).await;
    step(server, "S1", &[write("greeting.txt", "hello\n")]);
    step(server, "S2", &[write("shout.sh", "echo HELLO\n")]);
    let mut args = vec!["--steps", "2"];
    args.extend(run_args);
    run_steps(&project, server, &args).await;
    (project, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependent_step_goes_stale_and_a_dry_run_changes_nothing() {
    let server = FakeModel::start().await;
    let (project, id) = two_steps_done(&server, &[]).await;

    let before = (project.task_files(&id), project.read("greeting.txt"));
    let dry = project
        .tick()
        .args(["undo", "S1", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(
        stdout(&dry).contains("would go stale (`[~]`, \"S1 was undone\"): `S2`"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(
        (project.task_files(&id), project.read("greeting.txt")),
        before
    );

    let output = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let todo = todo(&project, &id);
    assert!(todo.contains("- [~] S2 Shout it"), "{todo}");
    assert!(todo.contains("stale: S1 was undone"), "{todo}");
    assert!(todo.contains("- [ ] S1 Write the greeting"), "{todo}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_puts_the_step_back_and_ticks_it_only_when_its_verify_passes() {
    let server = FakeModel::start().await;
    let (project, id) = greeting_written(&server, GREETING).await;
    let undo = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(undo.status.code(), Some(0), "{}", stderr(&undo));

    let redo = project.tick().args(["redo", "S1"]).output().unwrap();
    assert_eq!(redo.status.code(), Some(0), "{}", stderr(&redo));
    assert_eq!(project.read("greeting.txt"), "hello\n");
    assert!(todo(&project, &id).contains("- [x] S1 Write the greeting"));
    let record = state(&project, &id).steps[&"S1".parse().unwrap()].clone();
    assert!(record.verified(), "{record:?}");
    assert!(record.undone[0].redone_at.is_some());
    assert!(stderr(&redo).contains("`S1` verified"), "{}", stderr(&redo));
    let log = project.tick().args(["log"]).output().unwrap();
    assert!(
        stdout(&log).contains("S1 redone by a person (`tick redo`)"),
        "{}",
        stdout(&log)
    );

    // Redone, then a person puts back the text the undo had written: that is their change,
    // though tick once wrote the same bytes. The step goes stale, as without the undo.
    project.write("greeting.txt", "hi\n");
    let check = project.tick().args(["check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(10), "{}", stdout(&check));
    assert!(todo(&project, &id).contains("- [~] S1 Write the greeting"));
    project.write("greeting.txt", "hello\n");
    let verify = project.tick().args(["verify", "S1"]).output().unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));

    // Undone again, then its file changed by a person: the redo is refused.
    let undo = project.tick().args(["undo", "S1"]).output().unwrap();
    assert_eq!(undo.status.code(), Some(0), "{}", stderr(&undo));
    project.write("greeting.txt", "person\n");
    let redo = project.tick().args(["redo", "S1"]).output().unwrap();
    assert_eq!(redo.status.code(), Some(2), "{}", stderr(&redo));
    assert!(stderr(&redo).contains("by a person"), "{}", stderr(&redo));
    assert_eq!(project.read("greeting.txt"), "person\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_of_a_committed_step_reverts_it_and_leaves_the_persons_other_changes() {
    let server = FakeModel::start().await;
    let (project, id) = project(
        &server,
        &[("greeting.txt", b"hi\n"), ("other.txt", b"o\n")],
        GREETING,
    )
    .await;
    step(&server, "S1", &[write("greeting.txt", "hello\n")]);
    run_steps(&project, &server, &["--steps", "1", "--commit"]).await;
    let step_commit = project.head();
    // The person's own work: a staged change and an unstaged one, to other files.
    project.write("README.md", "# demo, staged\n");
    project.git(&["add", "README.md"]);
    project.write("other.txt", "o, unstaged\n");
    let cached = project.git(&["diff", "--cached"]);
    let unstaged = project.git(&["diff"]);

    // (Through the fake server's helper only for its git identity: an undo asks no model.)
    let output = project.tick_against(&server, &["undo", "S1"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(project.read("greeting.txt"), "hi\n");
    assert_eq!(project.git(&["diff", "--cached"]), cached);
    assert_eq!(project.git(&["diff"]), unstaged);
    let message = project.git(&["log", "-1", "--format=%B"]);
    assert!(message.contains("Reverts-Step: S1"), "{message}");
    assert!(message.contains(&format!("Task: {id}")), "{message}");
    assert!(message.contains(&step_commit), "{message}");
    assert_eq!(project.git(&["rev-parse", "HEAD^"]), step_commit);
    assert_eq!(project.git(&["show", "HEAD:greeting.txt"]), "hi");
    // The step's files and the task's are as committed.
    assert_eq!(
        project.git(&["status", "--porcelain", "--", "greeting.txt", ".tasks"]),
        ""
    );
}

const THREE: &str = "# Three

## Steps
- [ ] S1 One
  - files: one.txt
  - verify: `test -f one.txt`
- [ ] S2 Two
  - files: two.txt
  - verify: `test -f two.txt`
- [ ] S3 Three
  - files: three.txt
  - verify: `test -f three.txt`
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_from_git_names_a_tick_without_commit_a_commit_without_tick_and_a_revert() {
    let server = FakeModel::start().await;
    let (project, id) = project(&server, &[("base.txt", b"b\n")], THREE).await;
    step(&server, "S1", &[write("one.txt", "1\n")]);
    run_steps(&project, &server, &["--steps", "1", "--commit"]).await;
    step(&server, "S2", &[write("two.txt", "2\n")]);
    run_steps(&project, &server, &["--steps", "1"]).await;
    step(&server, "S3", &[write("three.txt", "3\n")]);
    run_steps(&project, &server, &["--steps", "1", "--commit"]).await;
    // S1 reverted, then ticked again by hand; S3 committed, then unticked by hand.
    let undo = project.tick_against(&server, &["undo", "S1"]).await;
    assert_eq!(undo.status.code(), Some(0), "{}", stderr(&undo));
    project.ok(&["mark", "S1", "done"]);
    project.ok(&["mark", "S3", "pending"]);

    let status = project
        .tick()
        .args(["status", "--from-git"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let err = stderr(&status);
    assert!(
        err.contains("reverts `S1`, but TODO.md still has it `[x]`"),
        "{err}"
    );
    assert!(
        err.contains("`S2` is ticked, but no commit carries"),
        "{err}"
    );
    assert!(
        err.contains("commits `S3`, but TODO.md has it `[ ]`"),
        "{err}"
    );

    let check = project
        .tick()
        .args(["check", "--from-git", "--json"])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(15), "{}", stderr(&check));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let kinds: Vec<&str> = report["tasks"][0]["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "revert_not_reflected",
            "tick_without_commit",
            "commit_without_tick"
        ]
    );
    assert_eq!(report["tasks"][0]["task"], id.as_str());
}

const MANY: &str = "# Many

## Steps
- [ ] S1 Rewrite the folder
  - files: f/**
  - verify: `test -f f/new-0.txt`
";

/// What `f/` holds: each file's bytes, by name.
fn folder(project: &Workspace) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(project.path("f"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .filter(|(name, _)| !name.starts_with('.'))
        .collect()
}

/// A kill -9 at any instant of an undo leaves the files and TODO.md as they were before it
/// or as they are after it, never half-restored; the next command finishes or rolls back
/// what the kill left and says which. 40 kills here (each costs a few tick processes);
/// `TICK_UNDO_KILLS=200` runs the 200 of `benches/undo_kills.sh`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_at_any_instant_of_an_undo_leaves_before_or_after() {
    let server = FakeModel::start().await;
    let originals: Vec<(String, Vec<u8>)> = (0..20)
        .map(|n| (format!("f/old-{n}.txt"), format!("old {n}\n").into_bytes()))
        .collect();
    let files: Vec<(&str, &[u8])> = originals
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let (project, id) = project(&server, &files, MANY).await;
    let before = folder(&project);
    step(
        &server,
        "S1",
        &[bash(
            "for n in $(seq 0 19); do echo new $n > f/new-$n.txt; echo changed $n > f/old-$n.txt; done",
        )],
    );
    run_steps(&project, &server, &["--steps", "1"]).await;
    let after = folder(&project);
    assert_ne!(before, after);

    // How long one undo takes, and how long from its write-ahead record to its end: half
    // the kills land anywhere in the whole run, half while it moves files.
    let record = project.path(&format!(".tasks/{id}/runs/restore.json"));
    let started = std::time::Instant::now();
    let mut child = project
        .tick_process()
        .args(["undo", "S1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut recorded = None;
    while child.try_wait().unwrap().is_none() {
        if recorded.is_none() && record.exists() {
            recorded = Some(started.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    let took = started.elapsed();
    let window = took.saturating_sub(recorded.unwrap_or_default());
    assert_eq!(folder(&project), before);
    let redo = project.tick().args(["redo", "S1"]).output().unwrap();
    assert_eq!(redo.status.code(), Some(0), "{}", stderr(&redo));
    assert_eq!(folder(&project), after);

    let kills: usize = std::env::var("TICK_UNDO_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let span = u64::try_from(took.as_micros()).unwrap().max(1);
    let inner = u64::try_from(window.as_micros()).unwrap().max(1);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut undone, mut kept, mut said) = (0, 0, 0);
    for kill in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = project
            .tick_process()
            .args(["undo", "S1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let wait = if kill % 2 == 0 {
            std::time::Duration::from_micros(seed % span)
        } else {
            // Once the record is there, files move: kill in the middle of that.
            let at = std::time::Instant::now();
            while !record.exists() && child.try_wait().unwrap().is_none() && at.elapsed() < took * 4
            {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            std::time::Duration::from_micros(seed % inner)
        };
        std::thread::sleep(wait);
        let _ = child.kill();
        let _ = child.wait();
        // The next command takes the task's lock and finishes or rolls back what was left.
        let next = project.tick().args(["status"]).output().unwrap();
        if stderr(&next).contains("was cut short") {
            said += 1;
        }
        let now = folder(&project);
        let todo = todo(&project, &id);
        if now == before {
            assert!(
                todo.contains("- [ ] S1"),
                "kill {kill}: files undone, TODO.md not: {todo}"
            );
            undone += 1;
            let redo = project.tick().args(["redo", "S1"]).output().unwrap();
            assert_eq!(
                redo.status.code(),
                Some(0),
                "kill {kill}: {}",
                stderr(&redo)
            );
        } else {
            assert_eq!(
                now, after,
                "kill {kill} after {wait:?}: a half-restored tree"
            );
            assert!(
                todo.contains("- [x] S1"),
                "kill {kill}: files kept, TODO.md not: {todo}"
            );
            kept += 1;
        }
        assert_eq!(folder(&project), after);
    }
    assert_eq!(undone + kept, kills);
    eprintln!(
        "{kills} kills over {span} µs ({inner} µs moving files): {undone} left it undone, \
         {kept} before it, {said} cut short and said so"
    );
}

/// The settings of this file's snapshots: the workspace's paths, commits and task ids, and
/// the durations of verify commands.
fn snapshot_filters(project: &Workspace, id: &str) -> insta::Settings {
    let mut settings = crate::common::workspace::filters(project);
    settings.add_filter(&format!(r"\b{}\b", id.replace('-', r"\-")), "[TASK]");
    settings.add_filter(r"\b[0-9a-f]{10}\b", "[COMMIT]");
    settings.add_filter(r"exit (\d+) in \d+\.\ds", "exit $1 in [S]");
    settings
}

/// What a command said, stdout then stderr, with its exit code.
fn said(run: &Run) -> String {
    format!(
        "exit {}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_from_git_reruns_each_claimed_step_and_fails_when_one_no_longer_holds() {
    let server = FakeModel::start().await;
    let (project, id) = two_steps_done(&server, &["--commit"]).await;
    step(&server, "S3", &[write("NOTES.md", "notes\n")]);
    run_steps(&project, &server, &["--steps", "1"]).await;
    let todo_before = project.task_files(&id);

    // S1 and S2 are claimed by their commits and still hold; S3 is not committed: not claimed.
    let holds = project.ok(&["verify", "--from-git"]);

    // A later commit of the person's breaks what S1 claimed.
    project.write("greeting.txt", "bye\n");
    project.git(&["commit", "-q", "-am", "bye"]);
    let broken = project.fails(&["verify", "--from-git", "HEAD~3..HEAD"], 15);
    let json = project
        .fails(&["verify", "--from-git", "--json"], 15)
        .stdout;
    // The report, then the result line of every `--json`.
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{json}");
    assert_eq!(lines[1]["event"], "result");
    let mut report = lines[0].clone();
    for step in report["steps"].as_array_mut().unwrap() {
        for ran in step["commands"].as_array_mut().unwrap() {
            ran["duration_ms"] = json!("[MS]");
        }
    }
    // Nothing written: a claim is checked, not ticked or reopened.
    assert_eq!(project.task_files(&id), todo_before);
    snapshot_filters(&project, &id).bind(|| {
        insta::assert_snapshot!(
            "verify_from_git",
            format!("{}\n{}", said(&holds), said(&broken))
        );
        insta::assert_json_snapshot!("verify_from_git_json", report);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_the_log_and_a_reapproval_show_an_undone_step() {
    let server = FakeModel::start().await;
    let (project, id) = two_steps_done(&server, &[]).await;
    project.ok(&["undo", "S2"]);
    project.ok(&["undo", "S1"]);
    project.ok(&["redo", "S2"]);
    let status = project.ok(&["status"]);
    let json = project.ok(&["status", "--json"]).stdout;
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let log = project.ok(&["log"]).stdout;

    // The plan edited and approved again: the approval says S1 stays undone.
    let plan = project.path(&format!(".tasks/{id}/PLAN.md"));
    let edited = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("- [ ] S3 Document it", "- [ ] S3 Document it well");
    std::fs::write(&plan, edited).unwrap();
    let approve = project.ok(&["approve", &id]);
    snapshot_filters(&project, &id).bind(|| {
        insta::assert_snapshot!("undone_status", said(&status));
        insta::assert_json_snapshot!("undone_status_json_s1", report["task"]["steps"][0]);
        insta::assert_snapshot!("undone_log", log);
        insta::assert_snapshot!("undone_reapproval", said(&approve));
    });
}

const GUARDED: &str = "# Guarded

## Steps
- [ ] S1 Write the greeting
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`, `test ! -e stop`
";

/// `tick redo` ticks the step only when its verify passes again: with a file the verify
/// minds changed since (not one of the step's), the changes come back, the step stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redo_whose_verify_now_fails_puts_the_changes_back_and_leaves_the_step_open() {
    let server = FakeModel::start().await;
    let (project, id) = greeting_written(&server, GUARDED).await;
    project.ok(&["undo", "S1"]);
    project.write("stop", "");

    let redo = project.fails(&["redo", "S1"], 4);
    assert_eq!(project.read("greeting.txt"), "hello\n");
    let todo = todo(&project, &id);
    assert!(todo.contains("- [ ] S1 Write the greeting"), "{todo}");
    let record = state(&project, &id).steps[&"S1".parse().unwrap()].clone();
    assert!(record.undone[0].redone_at.is_some(), "{record:?}");
    assert!(!record.verified(), "{record:?}");

    // Open, its undo redone: `tick status` has no undone line for it, `tick run` does it.
    let status = project.ok(&["status"]);
    snapshot_filters(&project, &id).bind(|| {
        insta::assert_snapshot!(
            "redo_verify_fails",
            format!("{}\n{}", said(&redo), said(&status))
        );
    });
}
