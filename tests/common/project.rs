//! A tiny project in a real git repository in a temp dir, and the real `tick` binary run in
//! it with a fixed clock, no colour, and a fake model server's URL.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::fake_model::{FakeModel, RecordedRequest, Reply};
use super::workspace::git;

pub const NOW: &str = "2026-11-30T14:29:55Z";

/// A tiny Rust project in a git repository.
pub struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/main.rs"),
            "mod login;\nfn main() { login::login(\"a\", \"b\"); }\n",
        )
        .unwrap();
        std::fs::write(root.join("src/login.rs"), "pub fn login(user: &str, pass: &str) -> bool {\n    !user.is_empty() && !pass.is_empty()\n}\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        for args in [
            &["init", "-q"][..],
            &["add", "."],
            &["commit", "-q", "-m", "init"],
        ] {
            git(root, args);
        }
        Project { dir }
    }

    /// Runs git in the project with a fixed identity and clock; panics if it fails.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.root(), args)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn command(&self, base_url: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tick"));
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .env("TICK_NOW", NOW)
            .env("TICK_PROVIDER", "openai")
            .env("TICK_BASE_URL", base_url)
            .env("TICK_MODEL", "test-model")
            .env("TICK_INTERACTIVE", "0")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("NO_COLOR", "1");
        // A machine without the sandbox runs the suite only when told so explicitly.
        if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
            cmd.env("TICK_SANDBOX", "off");
        }
        cmd
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

    /// The id of the (first) task folder under `.tasks/`.
    pub fn task_id(&self) -> String {
        std::fs::read_dir(self.path(".tasks"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with("2026"))
            .unwrap()
    }

    /// Plans `plan` (PLAN.md text) from a file, approves it and commits, so a run starts from
    /// a clean tree; returns the task's id.
    pub async fn approve_plan(&self, server: &FakeModel, plan: &str) -> String {
        self.write("plan.md", plan);
        assert_success(&self.tick(server, &["plan", "--from", "plan.md"]).await);
        assert_success(&self.tick(server, &["approve"]).await);
        std::fs::remove_file(self.path("plan.md")).unwrap();
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "approve"]);
        self.task_id()
    }

    /// Runs tick off the async runtime, so the fake server keeps serving meanwhile.
    pub async fn tick(&self, server: &FakeModel, args: &[&str]) -> Output {
        self.tick_with(server, args, |_| {}).await
    }

    /// [`Project::tick`] with the Anthropic provider, its base URL the server's root (the
    /// Anthropic client adds `/v1/messages` itself).
    pub async fn tick_anthropic(&self, server: &FakeModel, args: &[&str]) -> Output {
        let url = server.url();
        self.tick_with(server, args, |cmd| {
            cmd.env("TICK_PROVIDER", "anthropic")
                .env("TICK_BASE_URL", &url);
        })
        .await
    }

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
}

/// What a finished command wrote to stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What a finished command wrote to stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Panics with the command's stderr unless it succeeded.
pub fn assert_success(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}

/// A scripted conversation: a fake model that answers with `replies` in turn, and `tick args`
/// run against it in `project`. Returns how tick ended and the server (its requests recorded,
/// more replies can be pushed).
pub async fn scripted(
    project: &Project,
    replies: impl IntoIterator<Item = Reply>,
    args: &[&str],
) -> (Output, FakeModel) {
    let server = FakeModel::start().await;
    for reply in replies {
        server.push(reply);
    }
    (project.tick(&server, args).await, server)
}

/// A scripted planning conversation ([`scripted`]) of `tick plan "Refactor login"`, which must
/// succeed. Returns the requests the model received.
pub async fn planned(
    project: &Project,
    replies: impl IntoIterator<Item = Reply>,
) -> Vec<RecordedRequest> {
    let (output, server) = scripted(project, replies, &["plan", "Refactor login"]).await;
    assert_success(&output);
    server.requests()
}

/// `tick plan "Refactor login"` against a model that never calls a tool: it says `text` to
/// the request and to both reminders. Checks that tick gave up (exit 3); returns its output
/// and the server.
pub async fn planned_without_a_call(project: &Project, text: &str) -> (Output, FakeModel) {
    let talk = std::iter::repeat_n(super::scripts::openai_text(text), 3);
    let (output, server) = scripted(project, talk, &["plan", "Refactor login"]).await;
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
