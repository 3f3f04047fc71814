//! Staleness end to end: the real binary in a temp git repository. A done step's files are
//! changed by hand, by an editor's rename-over save, by `git checkout`, and by tick itself
//! (journalled), and the next command (or a running `tick watch`) must mark exactly the
//! out-of-band ones `[~]`. Also `tick check`'s exit codes and the plan-freshness report.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tick::tasks::journal::{self, Entry};
use tick::tasks::state::{Actor, Evidence, State};

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

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// A git repository with an approved task of three steps.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = Project { dir };
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

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn git(&self, args: &[&str]) {
        crate::common::workspace::git(self.root(), args);
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tick"));
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .env("TICK_NOW", NOW)
            .env("TICK_INTERACTIVE", "0")
            .env("NO_COLOR", "1");
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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
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
    assert!(project.todo().contains("- [~] S1"), "{}", project.todo());
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
            hash: blake3::hash(written.as_bytes()).to_hex().to_string(),
            at: chrono::Utc::now(),
        },
    )
    .unwrap();
    // A file a `bash` command generated, inside the command's window.
    let start = chrono::Utc::now();
    project.write("src/old.rs", "pub fn old() { /* generated */ }\n");
    journal::append(
        &task,
        &Entry::Command {
            start,
            end: chrono::Utc::now(),
            step: Some("S3".into()),
        },
    )
    .unwrap();
    let todo = project.todo();
    let out = project.ok(&["status"]);
    assert_eq!(project.todo(), todo);
    assert!(!stderr(&out).contains("stale"), "{}", stderr(&out));

    // A person's edit after all that is out of band again.
    std::thread::sleep(Duration::from_millis(1100));
    project.write("src/login.rs", "pub fn login() { /* by hand */ }\n");
    let out = project.ok(&["status"]);
    let todo = project.todo();
    assert!(
        todo.contains("- [~] S1"),
        "{todo}\n{}\n{}",
        stderr(&out),
        std::fs::read_to_string(journal::path(&task)).unwrap()
    );
    assert!(todo.contains("- [x] S2"), "{todo}");
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
    assert!(line.contains("S2 done ✓ not verified"), "{line}");
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
