//! Staleness end to end: the real binary in a temp git repository. A done step's files are
//! changed by hand, by an editor's rename-over save, by `git checkout`, and by tick itself
//! (journalled), and the next command (or a running `tick watch`) must mark exactly the
//! out-of-band ones `[~]`. Also `tick check`'s exit codes and the plan-freshness report.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tick::tasks::journal::{self, Entry, Record};
use tick::tasks::state::{Actor, Evidence, State};

use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, stderr, stdout};

/// Before the real clock, so journal times taken from the real clock come after the tick.
const NOW: &str = "2025-06-01T09:00:00Z";
const STALE_LINE: &str = "  - stale: src/login.rs changed outside tick at 2025-06-01 09:00 UTC\n";

const PLAN: &str = "\
---
title: Refactor login
goal: Refactor the login module
---
# Refactor login

## Summary

Split the login module.

## Steps

- [ ] S1 Rewrite login
  - files: src/login.rs
  - verify: `true`
- [ ] S2 Adjust the old module
  - files: src/old.rs
- [ ] S3 Add a new module
  - files: src/new.rs
";

/// A workspace with an approved task of three steps, its clock set before the real one.
struct Project {
    ws: Workspace,
}

impl std::ops::Deref for Project {
    type Target = Workspace;

    fn deref(&self) -> &Workspace {
        &self.ws
    }
}

impl Project {
    /// A git repository with an approved task of three steps.
    fn new() -> Self {
        let ws = Workspace::bare();
        ws.set_clock(NOW);
        let project = Project { ws };
        project.write("src/login.rs", "pub fn login() {}\n");
        project.write("src/old.rs", "pub fn old() {}\n");
        project.write(".gitignore", "target/\n");
        project.write("plan.md", PLAN);
        project.git(&["init", "-q"]);
        project.git(&["add", "."]);
        project.git(&["commit", "-q", "-m", "init"]);
        project.ok(&["plan", "--from", "plan.md"]);
        project.ok(&["approve"]);
        project
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.ws.tick_process();
        cmd.args(args).env("TICK_INTERACTIVE", "0");
        cmd
    }

    fn tick(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.tick(args);
        assert!(out.status.success(), "tick {args:?}: {}", stderr(&out));
        out
    }

    fn task_dir(&self) -> PathBuf {
        let tasks = self.path(".tasks");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(tasks)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.file_name().unwrap() != "draft")
            .collect();
        dirs.sort();
        dirs.pop().unwrap()
    }

    fn todo(&self) -> String {
        std::fs::read_to_string(self.task_dir().join("TODO.md")).unwrap()
    }

    fn state_text(&self) -> String {
        std::fs::read_to_string(self.task_dir().join("state.yaml")).unwrap()
    }

    /// Turns a person's tick of `id` into the runner's: verified, with passing evidence.
    fn make_verified(&self, id: &str) {
        let path = self.task_dir().join("state.yaml");
        let mut state: State = serde_yaml::from_str(&self.state_text()).unwrap();
        let record = state.steps.get_mut(&id.parse().unwrap()).unwrap();
        record.changed_by = Some(Actor::Runner);
        record.evidence = vec![Evidence {
            command: "true".into(),
            exit_code: 0,
            duration_ms: 3100,
            output_hash: "h".into(),
            output_tail: String::new(),
        }];
        std::fs::write(path, serde_yaml::to_string(&state).unwrap()).unwrap();
    }
}

/// TODO.md as it is after `S1` was ticked and then marked stale by a change to `src/login.rs`.
fn stale_s1(before: &str) -> String {
    let ticked = before.replacen("- [x] S1", "- [~] S1", 1);
    ticked.replacen(
        "  - verify: `true`\n",
        &format!("  - verify: `true`\n{STALE_LINE}"),
        1,
    )
}

#[test]
fn an_edit_while_nothing_ran_is_marked_at_the_next_command_start() {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    let todo = project.todo();
    let state = project.state_text();
    let plan = project.read(&format!(
        ".tasks/{}/PLAN.md",
        project.task_dir().file_name().unwrap().to_str().unwrap()
    ));
    assert!(state.contains("src/login.rs:"), "{state}");

    project.write("src/login.rs", "pub fn login() { todo!() }\n");
    let out = project.ok(&["status"]);
    assert_eq!(project.todo(), stale_s1(&todo));
    // Only TODO.md changes.
    assert_eq!(project.state_text(), state);
    assert_eq!(
        project.read(&format!(
            ".tasks/{}/PLAN.md",
            project.task_dir().file_name().unwrap().to_str().unwrap()
        )),
        plan
    );
    assert!(
        stdout(&out).contains("[~] S1 Rewrite login"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("warning: `S1` is stale: src/login.rs changed outside tick"),
        "{}",
        stderr(&out)
    );

    // Once marked, later commands leave it alone.
    let marked = project.todo();
    project.ok(&["status"]);
    assert_eq!(project.todo(), marked);
}

#[test]
fn an_editor_style_save_is_detected() {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    let todo = project.todo();
    // What vim does: write a new file beside it, then rename it over the original.
    project.write("src/.login.rs.swp", "pub fn login() { /* vim */ }\n");
    std::fs::rename(
        project.path("src/.login.rs.swp"),
        project.path("src/login.rs"),
    )
    .unwrap();
    project.ok(&["status"]);
    assert_eq!(project.todo(), stale_s1(&todo));
}

#[test]
fn a_git_checkout_of_an_old_version_is_detected() {
    let project = Project::new();
    project.write("src/login.rs", "pub fn login() -> bool { true }\n");
    project.git(&["commit", "-q", "-am", "v2"]);
    project.ok(&["mark", "S1", "done"]);
    let todo = project.todo();
    project.git(&["checkout", "-q", "HEAD~1", "--", "src/login.rs"]);
    project.ok(&["status"]);
    assert_eq!(project.todo(), stale_s1(&todo));
}

#[test]
fn a_deleted_file_is_a_change() {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    std::fs::remove_file(project.path("src/login.rs")).unwrap();
    project.ok(&["status"]);
    assert_contains(&project.todo(), "- [~] S1");
}

#[test]
fn ticks_own_writes_never_make_anything_stale() {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    // Ticking other steps (tick's own TODO.md and state.yaml writes) changes nothing.
    project.ok(&["mark", "S2", "done"]);
    project.ok(&["mark", "S3", "in-progress"]);
    assert!(!project.todo().contains("- [~]"), "{}", project.todo());

    // A file a tool wrote, with the hash it wrote.
    let written = "pub fn login() { /* by tick */ }\n";
    project.write("src/login.rs", written);
    let task = project.task_dir();
    journal::append(
        &task,
        &Entry::Write {
            path: "src/login.rs".into(),
            hash: hash(written),
            at: chrono::Utc::now(),
        },
    )
    .unwrap();
    // A file a `bash` command for a step that may touch it generated: the snapshots before
    // and after the command show the change.
    let before = hash("pub fn old() {}\n");
    let generated = "pub fn old() { /* generated */ }\n";
    project.write("src/old.rs", generated);
    command(
        &project,
        "S2",
        &["src/old.rs"],
        &[("src/old.rs", &before, &hash(generated))],
    );
    let todo = project.todo();
    let out = project.ok(&["status"]);
    assert_eq!(project.todo(), todo);
    assert!(!stderr(&out).contains("stale"), "{}", stderr(&out));
    // The fingerprints moved on to tick's content.
    assert!(
        project.state_text().contains(&hash(written)),
        "{}",
        project.state_text()
    );

    // A person's edit after all that is out of band again.
    project.write("src/login.rs", "pub fn login() { /* by hand */ }\n");
    let out = project.ok(&["status"]);
    let todo = project.todo();
    assert!(todo.contains("- [~] S1"), "{todo}\n{}", stderr(&out));
    assert!(todo.contains("- [x] S2"), "{todo}");
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Journals a command tick ran for `step` of the newest task with files `scope`, whose
/// snapshots saw each `(path, before, after)`.
fn command(project: &Project, step: &str, scope: &[&str], seen: &[(&str, &str, &str)]) {
    let now = chrono::Utc::now();
    let task = project.task_dir();
    journal::record(
        task.parent().unwrap(),
        &Record::Command {
            start: now,
            end: now,
            task: task.file_name().unwrap().to_str().unwrap().to_owned(),
            step: Some(step.into()),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            before: seen
                .iter()
                .map(|(p, b, _)| ((*p).to_owned(), (*b).to_owned()))
                .collect(),
            after: seen
                .iter()
                .map(|(p, _, a)| ((*p).to_owned(), (*a).to_owned()))
                .collect(),
        },
    )
    .unwrap();
}

#[test]
fn a_persons_edit_during_an_agents_command_for_another_step_is_stale() {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    project.make_verified("S1");
    let old = hash("pub fn login() {}\n");
    // While the agent's `bash` for S3 (files: src/new.rs) ran, a person saved src/login.rs,
    // S1's file. The command's snapshots see both changes; only src/new.rs is the command's.
    let by_hand = "pub fn login() { /* edited in an editor */ }\n";
    project.write("src/login.rs", by_hand);
    project.write("src/new.rs", "pub fn new() {}\n");
    command(
        &project,
        "S3",
        &["src/new.rs"],
        &[
            ("src/login.rs", &old, &hash(by_hand)),
            ("src/new.rs", "missing", &hash("pub fn new() {}\n")),
        ],
    );
    let out = project.tick(&["check"]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert_contains(&project.todo(), "- [~] S1");
}

/// The repro: task A is completed; task B, approved later, changes A's file through
/// tick's own tool write (journalled by the runner as task B's step S2). A stays completed,
/// `check` is clean, and A's step says who changed its file.
#[test]
fn a_later_tasks_own_write_does_not_make_an_earlier_task_stale() {
    let project = Project::new();
    for id in ["S1", "S2", "S3"] {
        project.ok(&["mark", id, "done"]);
        project.make_verified(id);
    }
    let task_a = project.task_dir();
    let a = task_a.file_name().unwrap().to_str().unwrap().to_owned();
    project.write(
        "plan-b.md",
        "---\ntitle: Wordcount\n---\n# Wordcount\n\n## Steps\n\n- [ ] S1 Read\n- [ ] S2 Touch login\n  - files: src/login.rs\n",
    );
    project.ok(&["plan", "--from", "plan-b.md"]);
    project.ok(&["approve"]);
    let task_b = project.task_dir();
    let b = task_b.file_name().unwrap().to_str().unwrap().to_owned();
    assert_ne!(a, b);

    // What the runner journals for B's S2 `edit_file` of src/login.rs, and the file it wrote.
    let written = "pub fn login() { /* task B */ }\n";
    project.write("src/login.rs", written);
    journal::record(
        &project.path(".tasks"),
        &Record::Write {
            path: "src/login.rs".into(),
            hash: hash(written),
            at: chrono::Utc::now(),
            task: b.clone(),
            step: Some("S2".into()),
        },
    )
    .unwrap();

    let out = project.tick(&["check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let list = stdout(&project.ok(&["list"]));
    let line_a = list.lines().find(|l| l.contains(&a)).unwrap();
    assert!(line_a.contains("completed"), "{list}");
    let todo_a = std::fs::read_to_string(task_a.join("TODO.md")).unwrap();
    assert!(!todo_a.contains("- [~]"), "{todo_a}");

    let status = stdout(&project.ok(&["status", &a]));
    assert!(
        status.contains(&format!("changed by task {b} S2: src/login.rs")),
        "{status}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&project.ok(&["status", &a, "--json"]))).unwrap();
    let change = &json["task"]["steps"][0]["later_changes"][0];
    assert_eq!(change["task"], b.as_str());
    assert_eq!(change["step"], "S2");
    assert_eq!(change["files"][0], "src/login.rs");

    // Only a strict check asks about it.
    let out = project.tick(&["check", "--strict", "--json"]);
    assert_eq!(out.status.code(), Some(9), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["findings"][0]["kind"], "changed_by_task");
    assert_eq!(report["findings"][0]["task"], a.as_str());

    // The fingerprint moved on: a person's edit after that is stale as ever.
    project.write("src/login.rs", "pub fn login() { /* by hand */ }\n");
    let out = project.tick(&["check"]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
}

#[test]
fn check_exit_codes_name_the_reason() {
    let project = Project::new();
    let code = |p: &Project| p.tick(&["check"]).status.code().unwrap();
    // Nothing done yet: all clear.
    assert_eq!(code(&project), 0);

    project.ok(&["mark", "S1", "done"]);
    assert_eq!(code(&project), 11, "done by hand, not verified");

    project.make_verified("S1");
    let out = project.tick(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 task checked: all clear"));

    project.write("src/login.rs", "changed\n");
    let out = project.tick(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(10));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["exit_code"], 10);
    assert_eq!(report["newly_stale"][0][1], "S1");
    assert_eq!(report["findings"][0]["kind"], "stale");
    assert_eq!(report["findings"][0]["step"], "S1");
    // Marked by the check itself.
    assert!(project.todo().contains("- [~] S1"));

    // Stale and unverified together: stale is the more severe.
    project.ok(&["mark", "S2", "done"]);
    assert_eq!(code(&project), 10);

    let plan_path = project.task_dir().join("PLAN.md");
    let plan = std::fs::read_to_string(&plan_path).unwrap();
    std::fs::write(
        &plan_path,
        plan.replace("Split the login module.", "Rewrite it all."),
    )
    .unwrap();
    assert_eq!(code(&project), 12, "plan changed since approval");

    let todo_path = project.task_dir().join("TODO.md");
    let todo = project.todo();
    std::fs::write(&todo_path, todo.replace("- [ ] S3", "- [?] S3")).unwrap();
    let out = project.tick(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(13));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["findings"][0]["kind"], "unparseable");
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("unknown step marker `[?]`")
    );
    // An unparseable file is left byte for byte.
    assert_eq!(
        std::fs::read_to_string(&todo_path).unwrap(),
        todo.replace("- [ ] S3", "- [?] S3")
    );
}

#[test]
fn status_flags_pending_steps_whose_files_are_gone() {
    let project = Project::new();
    std::fs::remove_file(project.path("src/old.rs")).unwrap();
    let out = project.ok(&["status", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // S3's file never existed: it is one the step will create, not a sign of an old plan.
    assert_eq!(
        report["task"]["plan_may_be_out_of_date"],
        serde_json::json!([{"id": "S2", "files": ["src/old.rs"]}])
    );
    let out = project.ok(&["status"]);
    assert!(
        stderr(&out).contains(
            "warning: `S2` names files that no longer exist: `src/old.rs`; the plan may be out of date"
        ),
        "{}",
        stderr(&out)
    );
}

/// A `tick watch` in the background, killed when dropped.
struct Watcher {
    child: Child,
    stdout: mpsc::Receiver<String>,
}

impl Watcher {
    fn start(project: &Project, poll: bool) -> Watcher {
        let mut cmd = project.command(&["watch"]);
        if poll {
            cmd.env("TICK_WATCH_POLL", "1");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (ready_tx, ready_rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.starts_with("watching ") {
                    let _ = ready_tx.send(());
                }
            }
        });
        let (line_tx, line_rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = line_tx.send(line);
            }
        });
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("tick watch did not start");
        Watcher {
            child,
            stdout: line_rx,
        }
    }

    /// Waits up to `limit` for a line of output containing `want`.
    fn wait_for_line(&self, want: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stdout.recv_timeout(left) {
                Ok(line) if line.contains(want) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls TODO.md until `S1` is stale; returns how long it took, if it happened within 5 s.
fn time_until_stale(project: &Project) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if project.todo().contains("- [~] S1") {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn watch_marks_an_edit_live(poll: bool) {
    let project = Project::new();
    project.ok(&["mark", "S1", "done"]);
    let watcher = Watcher::start(&project, poll);
    // The checklist comes first.
    assert!(
        watcher
            .wait_for_line("[x] S1 Rewrite login", Duration::from_secs(5))
            .is_some()
    );
    if poll {
        // The poller compares with its first scan; let it take one.
        std::thread::sleep(Duration::from_millis(400));
    }
    project.write("src/login.rs", "pub fn login() { /* edited */ }\n");
    let took = time_until_stale(&project).expect("not marked stale within 5 s");
    let limit = if poll { 2 } else { 1 };
    assert!(
        took < Duration::from_secs(limit),
        "marked after {took:?}, over {limit} s"
    );
    let line = watcher
        .wait_for_line("S1 stale", Duration::from_secs(5))
        .expect("no event line");
    assert!(
        line.contains("S1 stale: src/login.rs changed outside tick"),
        "{line}"
    );

    // A tick by a person in another terminal shows up as a line too.
    project.ok(&["mark", "S2", "done"]);
    let line = watcher
        .wait_for_line("S2 done", Duration::from_secs(5))
        .expect("no line for S2");
    // The check mark is for verified steps only (issue 31: `S2 done ✓ not verified`).
    assert_eq!(line, "S2 done (not verified: marked done by hand)");
}

#[test]
fn watch_marks_an_edit_within_a_second() {
    watch_marks_an_edit_live(false);
}

#[test]
fn watch_falls_back_to_polling() {
    watch_marks_an_edit_live(true);
}

#[test]
fn watch_exits_cleanly_on_ctrl_c() {
    let project = Project::new();
    let mut watcher = Watcher::start(&project, false);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(watcher.child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(status) = watcher.child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(Instant::now() < deadline, "tick watch did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
