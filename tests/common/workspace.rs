//! The one throwaway workspace for driving the real `tick` binary: a temp git repository with
//! one commit made with a fixed author and date, and `tick` commands that run in it with no
//! colour, none of the caller's `TICK_*` variables, and a test clock that moves one second per
//! command (as jj's test environment does), so two commands in a row never share a time.
//! Commands can also be pointed at a fake model server ([`Workspace::tick_against`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

use assert_cmd::Command;
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use tempfile::TempDir;

use super::fake_model::{FakeModel, RecordedRequest, Reply};

/// The time the first command of a workspace sees; each later command sees one second more,
/// unless a test pins or sets the clock ([`Workspace::pin_clock`], [`Workspace::set_clock`]).
pub const NOW: &str = "2026-11-30T14:30:12Z";

/// A hand-written plan in the PLAN.md format: details, sub-steps, `depends`.
pub const PLAN: &str = "---
title: Refactor login module
goal: Refactor the login module, keep the old API, add tests
---
# Refactor login module

## Summary

Move the login code behind a compatibility layer.

## Steps

- [ ] S1 Find the real login entry point and its callers
  - files: src/routes.ts, src/login.ts
  - verify: `npm test -- login`
  - done when: every caller of `login(` is listed in PLAN.md
- [ ] S2 Add a compatibility layer for the old endpoint
  - files: src/compat/**
  - risk: high
  - [ ] S2.1 Write the shim
  - [ ] S2.2 Route the old endpoint through it
- [ ] S3 Update the login tests
  - depends: S2

## Risks

- The session store may need a migration.
";

pub struct Workspace {
    dir: TempDir,
    root: PathBuf,
    home: PathBuf,
    clock: Mutex<TestClock>,
}

/// The time the next command sees, and how far each command moves it.
struct TestClock {
    next: DateTime<Utc>,
    step: TimeDelta,
}

impl TestClock {
    fn new() -> Self {
        TestClock {
            next: parse_time(NOW),
            step: TimeDelta::seconds(1),
        }
    }

    /// The time for one command (RFC 3339, to the second); moves the clock on by a step.
    fn tick(&mut self) -> String {
        let now = self.next;
        self.next += self.step;
        now.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

fn parse_time(at: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(at)
        .unwrap_or_else(|err| panic!("{at} is not an RFC 3339 time: {err}"))
        .with_timezone(&Utc)
}

/// What a finished command printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// What a person sees at the terminal for `tick args…`: the command, stdout, stderr and
    /// the exit code.
    pub fn shown(&self, args: &[&str]) -> String {
        format!(
            "$ tick {}\n{}{}exit {}\n",
            args.join(" "),
            self.stdout,
            self.stderr,
            self.code
        )
    }

    /// Runs `output` (a command's `.output()`) off the async runtime, so a fake server keeps
    /// serving meanwhile.
    pub async fn off_runtime(output: impl FnOnce() -> Output + Send + 'static) -> Run {
        Run::from(&tokio::task::spawn_blocking(output).await.unwrap())
    }

    fn from(output: &Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// `git` in `dir` with a fixed identity and clock, so the commit's sha is the same every run.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", "2026-11-30T12:00:00Z")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_DATE", "2026-11-30T12:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

impl Workspace {
    /// A git repository with one commit (a README).
    pub fn new() -> Workspace {
        let ws = Workspace::bare();
        git(&ws.root, &["init", "-q", "-b", "main"]);
        fs::write(ws.root.join("README.md"), "# demo\n").unwrap();
        git(&ws.root, &["add", "README.md"]);
        git(&ws.root, &["commit", "-q", "-m", "initial"]);
        ws
    }

    /// A tiny Rust project (`Cargo.toml`, `src/main.rs` calling `src/login.rs`'s `login`)
    /// in a git repository with one commit: what a model is asked to "Refactor login" in.
    pub fn sample() -> Workspace {
        let ws = Workspace::bare();
        ws.write(
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        );
        ws.write(
            "src/main.rs",
            "mod login;\nfn main() { login::login(\"a\", \"b\"); }\n",
        );
        ws.write(
            "src/login.rs",
            "pub fn login(user: &str, pass: &str) -> bool {\n    !user.is_empty() && !pass.is_empty()\n}\n",
        );
        ws.write(".gitignore", "target/\n");
        ws.git(&["init", "-q", "-b", "main"]);
        ws.git(&["add", "."]);
        ws.git(&["commit", "-q", "-m", "init"]);
        ws
    }

    /// A plain directory, not a repository.
    pub fn bare() -> Workspace {
        Workspace::bare_in(&std::env::temp_dir())
    }

    /// A plain directory in `parent` (say `/dev/shm`), not a repository.
    pub fn bare_in(parent: &Path) -> Workspace {
        let dir = tempfile::Builder::new()
            .prefix("tick-test")
            .tempdir_in(parent)
            .unwrap();
        // Canonical, so paths the binary prints can be filtered by prefix.
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("repo");
        let home = base.join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        Workspace {
            dir,
            root,
            home,
            clock: Mutex::new(TestClock::new()),
        }
    }

    /// The next command sees `at` (RFC 3339); the ones after it, a second more each (unless
    /// the clock is pinned).
    pub fn set_clock(&self, at: &str) {
        self.clock.lock().unwrap().next = parse_time(at);
    }

    /// Stops the clock: every later command sees the time the next one would have.
    pub fn pin_clock(&self) {
        self.clock.lock().unwrap().step = TimeDelta::zero();
    }

    /// The time the next command will see, without moving the clock.
    pub fn next_time(&self) -> String {
        let clock = self.clock.lock().unwrap();
        clock.next.to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// The time for a command about to start: the clock's, moved on by a step.
    fn now_for_command(&self) -> String {
        self.clock.lock().unwrap().tick()
    }

    /// Runs git in the workspace with a fixed identity and clock; panics if it fails.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The temp directory holding the workspace, for filtering it out of output.
    pub fn temp(&self) -> &Path {
        self.dir.path()
    }

    pub fn head(&self) -> String {
        git(&self.root, &["rev-parse", "HEAD"])
    }

    /// `tick` in the workspace, not yet run.
    pub fn tick(&self) -> Command {
        Command::from_std(self.tick_process())
    }

    /// `tick ARGS` with the compact executor against the fake model `server`, run off the
    /// async runtime so the server goes on answering.
    pub async fn run_compact(&self, server: &FakeModel, args: &[&str]) -> Run {
        let mut cmd = self.tick();
        cmd.args(args)
            .write_stdin("")
            .env("TICK_PROVIDER", "openai")
            .env("TICK_BASE_URL", format!("{}/v1", server.url()))
            .env("TICK_MODEL", "test-model")
            .env("TICK_API_KEY", "test-key")
            .env("TICK_EXECUTOR", "compact");
        Run::off_runtime(move || cmd.output().unwrap()).await
    }

    /// `tick` in the workspace as a plain process, for tests that start several at once.
    pub fn tick_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("tick"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("TICK_") {
                cmd.env_remove(name);
            }
        }
        self.set_up(&mut cmd);
        cmd
    }

    /// What every `tick` a workspace starts gets: its directory, the next time on the test
    /// clock, no colour, a home of its own, a fixed terminal width.
    fn set_up(&self, cmd: &mut std::process::Command) {
        cmd.current_dir(&self.root)
            .env("TICK_NOW", self.now_for_command())
            .env("NO_COLOR", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            // Trust records (`tick trust`) stay in the workspace's own home.
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env_remove("CLICOLOR_FORCE")
            // Help text wraps at the terminal's width: fix it, so snapshots do not depend on
            // the shell the tests run from.
            .env("COLUMNS", "100")
            // Never the real local servers on 8080 and so on: a test that wants one names it.
            .env("TICK_LOCAL_SERVERS", "none");
        // A machine without the sandbox runs the suite only when told so explicitly.
        if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
            cmd.env("TICK_SANDBOX", "off");
        }
    }

    /// `tick args...` against the OpenAI-compatible model at `base_url` (`.../v1`), not yet
    /// run. It starts from an empty environment (only `PATH` is kept), so no key or setting
    /// of the caller's reaches it, and commits with a fixed identity.
    pub fn command(&self, base_url: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("tick"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        self.set_up(&mut cmd);
        cmd.env("TICK_PROVIDER", "openai")
            .env("TICK_BASE_URL", base_url)
            .env("TICK_MODEL", "test-model")
            .env("TICK_INTERACTIVE", "0")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        cmd
    }

    /// Runs `tick args...` against `server` off the async runtime, so the fake server keeps
    /// serving meanwhile.
    pub async fn tick_against(&self, server: &FakeModel, args: &[&str]) -> Output {
        self.tick_with(server, args, |_| {}).await
    }

    /// [`Workspace::tick_against`], which must end with exit code `code` (else the test fails
    /// showing tick's stderr).
    pub async fn tick_ends(&self, server: &FakeModel, args: &[&str], code: i32) -> Output {
        let output = self.tick_against(server, args).await;
        assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
        output
    }

    /// [`Workspace::tick_against`] with the Anthropic provider, its base URL the server's root
    /// (the Anthropic client adds `/v1/messages` itself).
    pub async fn tick_anthropic(&self, server: &FakeModel, args: &[&str]) -> Output {
        let url = server.url();
        self.tick_with(server, args, |cmd| {
            cmd.env("TICK_PROVIDER", "anthropic")
                .env("TICK_BASE_URL", &url);
        })
        .await
    }

    /// [`Workspace::tick_against`] after `adjust` set the command up.
    pub async fn tick_with(
        &self,
        server: &FakeModel,
        args: &[&str],
        adjust: impl FnOnce(&mut std::process::Command),
    ) -> Output {
        let mut cmd = self.command(&format!("{}/v1", server.url()), args);
        adjust(&mut cmd);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap()
    }

    /// Plans `plan` (PLAN.md text) from a file against `server`, approves it and commits, so a
    /// run starts from a clean tree; returns the task's id.
    pub async fn approve_plan(&self, server: &FakeModel, plan: &str) -> String {
        self.write("plan.md", plan);
        assert_success(
            &self
                .tick_against(server, &["plan", "--from", "plan.md"])
                .await,
        );
        assert_success(&self.tick_against(server, &["approve"]).await);
        fs::remove_file(self.path("plan.md")).unwrap();
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "approve"]);
        self.task_id()
    }

    /// The id of the (first) task folder under `.tasks/`.
    pub fn task_id(&self) -> String {
        self.task_ids()
            .into_iter()
            .next()
            .expect("a task folder under .tasks/")
    }

    /// Panics unless every file outside `.tasks/` is as the last commit has it: none written,
    /// changed or deleted (what a planning turn promises).
    pub fn assert_untouched_outside_tasks(&self) {
        let listed = self.git(&[
            "ls-files",
            "--modified",
            "--deleted",
            "--others",
            "--exclude-standard",
        ]);
        let touched: Vec<&str> = listed
            .lines()
            .filter(|path| !path.starts_with(".tasks/"))
            .collect();
        assert!(
            touched.is_empty(),
            "files changed outside `.tasks/`: {touched:?}"
        );
    }

    /// Runs `tick args...` with nothing on stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(&self.tick().args(args).write_stdin("").output().unwrap())
    }

    /// Runs `tick args...` with `stdin`.
    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Run {
        Run::from(
            &self
                .tick()
                .args(args)
                .write_stdin(stdin.as_bytes().to_vec())
                .output()
                .unwrap(),
        )
    }

    /// Runs `tick args...` after `adjust` set the command up (variables, stdin); nothing on
    /// stdin unless `adjust` gives it some.
    pub fn run_with(&self, args: &[&str], adjust: impl FnOnce(&mut Command)) -> Run {
        let mut cmd = self.tick();
        cmd.args(args).write_stdin("");
        adjust(&mut cmd);
        Run::from(&cmd.output().unwrap())
    }

    /// Runs `tick args...` with stdin closed; fails the test (killing tick) when it still runs
    /// after `deadline`.
    pub fn run_bounded(&self, args: &[&str], deadline: std::time::Duration) -> Run {
        let out = tempfile::NamedTempFile::new().unwrap();
        let err = tempfile::NamedTempFile::new().unwrap();
        let mut child = self
            .tick_process()
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(out.reopen().unwrap())
            .stderr(err.reopen().unwrap())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`tick {args:?}` still ran after {deadline:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        Run {
            code: status.code().unwrap_or(-1),
            stdout: fs::read_to_string(out.path()).unwrap(),
            stderr: fs::read_to_string(err.path()).unwrap(),
        }
    }

    /// An executable `sh` script `name` outside the repository, running `body`; returns its
    /// path (for `$EDITOR` and the like).
    pub fn script(&self, name: &str, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.temp().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    /// Runs `tick args...` and asserts it succeeded.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, 0, "tick {args:?} failed: {run:#?}");
        run
    }

    /// Runs `tick args...` and asserts it failed with `code`.
    pub fn fails(&self, args: &[&str], code: i32) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, code, "tick {args:?}: {run:#?}");
        run
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, contents).unwrap();
    }

    /// The person's own config file (`$XDG_CONFIG_HOME/tick/config.yaml`), outside the
    /// repository.
    pub fn user_config(&self) -> PathBuf {
        self.home.join(".config/tick/config.yaml")
    }

    /// Writes the person's own config file ([`Workspace::user_config`]).
    pub fn write_user_config(&self, yaml: &str) {
        let path = self.user_config();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, yaml).unwrap();
    }

    /// Marks by hand, in the current task of the sample [`PLAN`], S2.1 in progress and S3
    /// blocked on the staging credentials.
    pub fn mark_started_and_blocked(&self) {
        self.ok(&["mark", "S2.1", "in-progress"]);
        self.ok(&[
            "mark",
            "S3",
            "blocked",
            "--reason",
            "the staging credentials are missing",
        ]);
    }

    /// Adds the repository at `source` as a submodule at `path` (a local one: git refuses
    /// the file protocol unless told).
    pub fn add_submodule(&self, source: &str, path: &str) {
        self.git(&[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            source,
            path,
        ]);
    }

    /// The TODO.md of task `id`.
    pub fn todo(&self, id: &str) -> String {
        self.read(&format!(".tasks/{id}/TODO.md"))
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_else(|err| panic!("read {rel}: {err}"))
    }

    pub fn bytes(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap_or_else(|err| panic!("read {rel}: {err}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The names of the task folders in `.tasks/`, sorted.
    pub fn task_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = fs::read_dir(self.path(".tasks"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|name| name.starts_with(|c: char| c.is_ascii_digit()))
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// Drafts `plan` (through stdin) and approves it; returns the new task's id.
    pub fn approve(&self, plan: &str) -> String {
        self.approve_with(plan, |_| {})
    }

    /// [`Workspace::approve`] with both commands at `now` (RFC 3339).
    pub fn approve_at(&self, plan: &str, now: &str) -> String {
        self.approve_with(plan, |cmd| {
            cmd.env("TICK_NOW", now);
        })
    }

    /// [`Workspace::approve`] with `adjust` setting up both commands.
    fn approve_with(&self, plan: &str, adjust: impl Fn(&mut Command)) -> String {
        let before = self.task_ids();
        let run = self.run_with(&["plan", "--from", "-"], |cmd| {
            cmd.write_stdin(plan.as_bytes().to_vec());
            adjust(cmd);
        });
        assert_eq!(run.code, 0, "plan --from -: {run:#?}");
        let run = self.run_with(&["approve"], &adjust);
        assert_eq!(run.code, 0, "approve: {run:#?}");
        let after = self.task_ids();
        let new: Vec<&String> = after.iter().filter(|id| !before.contains(id)).collect();
        assert_eq!(new.len(), 1, "approve made one folder: {after:?}");
        new[0].clone()
    }

    /// Every file under `.tasks/<id>/` that is not local (`runs/`, `.lock`), with its bytes.
    pub fn task_files(&self, id: &str) -> Vec<(String, Vec<u8>)> {
        let dir = self.path(&format!(".tasks/{id}"));
        let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name != ".lock")
            .map(|name| {
                let bytes = fs::read(dir.join(&name)).unwrap();
                (name, bytes)
            })
            .collect();
        files.sort();
        files
    }
}

/// The id a task approved at `at` (RFC 3339) with folder name `slug` gets:
/// `YYYYMMDD-HHMMSS-slug`.
pub fn task_id_at(at: &str, slug: &str) -> String {
    format!("{}-{slug}", parse_time(at).format("%Y%m%d-%H%M%S"))
}

/// What a finished command wrote to stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What a finished command wrote to stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The JSON events a `--json` command wrote to stdout, one a line; panics naming a line that
/// is not JSON.
pub fn json_events(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The `event` field of each event, in order.
pub fn event_kinds(events: &[serde_json::Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

/// Panics with the command's stderr unless it succeeded.
pub fn assert_success(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}

/// A scripted conversation: a fake model that answers with `replies` in turn, and `tick args`
/// run against it in `ws`. Returns how tick ended and the server (its requests recorded, more
/// replies can be pushed).
pub async fn scripted(
    ws: &Workspace,
    replies: impl IntoIterator<Item = Reply>,
    args: &[&str],
) -> (Output, FakeModel) {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    (ws.tick_against(&server, args).await, server)
}

/// A scripted planning conversation ([`scripted`]) of `tick plan "Refactor login"`, which must
/// succeed. Returns the requests the model received.
pub async fn planned(
    ws: &Workspace,
    replies: impl IntoIterator<Item = Reply>,
) -> Vec<RecordedRequest> {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    plans_login(ws, &server).await
}

/// A server that answers `tick plan "Refactor login"` with the login plan at once, after
/// that plan (which must succeed) drafted it: more replies can be pushed.
pub async fn login_planned(ws: &Workspace) -> FakeModel {
    let server = FakeModel::start().await;
    server.push(super::scripts::submit_login_plan());
    plans_login(ws, &server).await;
    server
}

/// `tick plan "Refactor login"` against `server`, which must succeed. Returns the requests
/// the model received.
pub async fn plans_login(ws: &Workspace, server: &FakeModel) -> Vec<RecordedRequest> {
    let output = ws.tick_against(server, &["plan", "Refactor login"]).await;
    assert_success(&output);
    server.requests()
}

/// [`planned`] as `tick plan --json "Refactor login"`: returns its events and the server.
pub async fn planned_json(
    ws: &Workspace,
    replies: impl IntoIterator<Item = Reply>,
) -> (Vec<serde_json::Value>, FakeModel) {
    let (output, server) = scripted(ws, replies, &["plan", "--json", "Refactor login"]).await;
    assert_success(&output);
    (json_events(&output), server)
}

/// `tick plan "Refactor login"` against a model that never calls a tool: it says `text` to
/// the request and to both reminders. Checks that tick gave up (exit 3); returns its output
/// and the server.
pub async fn planned_without_a_call(ws: &Workspace, text: &str) -> (Output, FakeModel) {
    let talk = std::iter::repeat_n(super::scripts::openai_text(text), 3);
    let (output, server) = scripted(ws, talk, &["plan", "Refactor login"]).await;
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    (output, server)
}

/// Starts `cmd`, waits until the fake model has received `requests` requests (the command is
/// then inside a model call), presses Ctrl-C on it, and returns how it ended.
pub async fn interrupted_after(
    mut cmd: std::process::Command,
    server: &FakeModel,
    requests: usize,
) -> Output {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for_requests(requests).await;
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap()
}

/// insta settings that hide what changes from run to run: the temp directory and pids.
pub fn filters(ws: &Workspace) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    let temp = regex_escape(&ws.temp().display().to_string());
    settings.add_filter(&format!("{temp}/repo"), "[REPO]");
    settings.add_filter(&temp, "[TEMP]");
    settings.add_filter(r"\(pid \d+\)", "(pid [PID])");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[GIT_HEAD]");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The task's `state.yaml`, parsed.
pub fn task_state(ws: &Workspace, id: &str) -> tick::tasks::state::State {
    serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

/// `plan` (PLAN.md text) drafted with `tick plan --from` and approved against `server`, both
/// of which must succeed, then committed so a run starts from a clean tree.
pub async fn approve_committed(ws: &Workspace, server: &FakeModel, plan: &str) {
    ws.write("plan.md", plan);
    let output = ws
        .tick_against(server, &["plan", "--from", "plan.md"])
        .await;
    assert_success(&output);
    let output = ws.tick_against(server, &["approve"]).await;
    assert_success(&output);
    fs::remove_file(ws.path("plan.md")).unwrap();
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "approve"]);
}

/// `tick plan --revise "name the new module auth"` (with `extra` flags before `--revise`)
/// after the login plan was drafted: the model answers with the login plan whose S2 is
/// renamed to "Move login into src/auth". Returns how the revision ended and the server.
pub async fn revised_login(ws: &Workspace, extra: &[&str]) -> (Output, FakeModel) {
    let server = login_planned(ws).await;
    let mut revised = super::scripts::login_plan();
    revised["steps"][1]["title"] = serde_json::json!("Move login into src/auth");
    server.push(super::scripts::openai_call(
        "call_2",
        "submit_plan",
        revised,
    ));
    let mut args = vec!["plan"];
    args.extend_from_slice(extra);
    args.extend(["--revise", "name the new module auth"]);
    (ws.tick_against(&server, &args).await, server)
}

/// [`plans_login`] against an Anthropic-shaped `server`.
pub async fn plans_login_anthropic(ws: &Workspace, server: &FakeModel) -> Vec<RecordedRequest> {
    let output = ws.tick_anthropic(server, &["plan", "Refactor login"]).await;
    assert_success(&output);
    server.requests()
}
