//! The command sandbox end to end: the real binary runs a real approved task, a fake model
//! issues `bash` calls an attacker would, and the test looks at what really happened (files,
//! `/proc`, the tool results the model got back).
//!
//! These tests need the sandbox (Linux with unprivileged user namespaces and Landlock): where
//! it cannot be set up they fail, naming what is missing, unless `TICK_TEST_NO_SANDBOX=1` says
//! explicitly to skip them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tick::sandbox::{self, Kind};
use tick::tasks::state::State;

use crate::common::fake_model::{FakeModel, RecordedRequest, Reply};
use crate::common::processes::{processes_with, unique};
use crate::common::programs;
use crate::common::scripts::{claims_done, writes_file};
use crate::common::scripts::{openai_call, openai_call_chunks, openai_calls};
use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::{Workspace, stderr};

const PLAN: &str = "# Sandboxed

## Summary
Do one thing, then another.

## Steps
- [ ] S1 Make a file
  - files: made.txt
  - verify: `test -f made.txt`
- [ ] S2 Never done
  - verify: `false`
";

const SECRET: &str = "sk-test-SANDBOXSECRET0123456789";

/// Whether the sandbox tests run: always, unless `TICK_TEST_NO_SANDBOX=1`. A machine where
/// the sandbox cannot be set up fails here, with the reason.
fn sandbox_required() -> bool {
    if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
        return false;
    }
    let tick = Path::new(env!("CARGO_BIN_EXE_tick"));
    for kind in [Kind::Build, Kind::ReadOnly] {
        if let Err(unavailable) = sandbox::available_with(kind, Some(tick)) {
            panic!(
                "the sandbox is not available ({unavailable}); set TICK_TEST_NO_SANDBOX=1 to skip \
                 the sandbox tests explicitly"
            );
        }
    }
    true
}

async fn approved(server: &FakeModel) -> (Workspace, String) {
    let project = Workspace::sample();
    let id = project.approve_plan(server, PLAN).await;
    (project, id)
}

fn bash(id: &str, command: &str) -> (String, String, Value) {
    (
        id.to_owned(),
        "bash".to_owned(),
        json!({"command": command, "timeout_s": 20}),
    )
}

fn push_calls(server: &FakeModel, calls: &[(String, String, Value)]) {
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    server.push(openai_calls(&calls));
}

/// Ends S1 blocked, so the run stops (exit 4) without needing S1's work.
fn push_block(server: &FakeModel) {
    server.push(openai_call(
        "block",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "test"}),
    ));
}

/// The tool results the model got, by call id, from the last request that has them.
fn tool_results(requests: &[RecordedRequest]) -> std::collections::BTreeMap<String, String> {
    requests
        .iter()
        .flat_map(RecordedRequest::tool_results)
        .collect()
}

fn state(project: &Workspace, id: &str) -> State {
    serde_yaml::from_str(&project.read(&format!(".tasks/{id}/state.yaml"))).unwrap()
}

/// Waits up to `within` for no process to carry `marker`; returns those still there.
fn survivors(marker: &str, within: Duration) -> Vec<(i32, String)> {
    let deadline = Instant::now() + within;
    loop {
        let found = processes_with(marker);
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(found: &[(i32, String)]) {
    for (pid, _) in found {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_cannot_read_ticks_environment() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server).await;
    push_calls(
        &server,
        &[
            bash(
                "parent",
                "tr '\\0' '\\n' </proc/$PPID/environ | grep API_KEY; echo parent-read-$?",
            ),
            // Every process the command can see, and tick's own pid from outside.
            bash(
                "all",
                "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null \
                 | grep -c SANDBOXSECRET; \
                 while [ ! -s tick.pid ]; do sleep 0.05; done; \
                 cat /proc/$(cat tick.pid)/environ; echo by-number-$?",
            ),
            bash(
                "env",
                "env | grep -c -e API_KEY -e SANDBOXSECRET; echo env-read",
            ),
        ],
    );
    push_block(&server);
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["run"]);
    cmd.env("OPENAI_API_KEY", SECRET)
        .env("SOME_SERVICE_TOKEN", SECRET)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    std::fs::write(project.path("tick.pid"), child.id().to_string()).unwrap();
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let results = tool_results(&server.requests());
    for (id, text) in &results {
        assert!(
            !text.contains("SANDBOXSECRET"),
            "{id} leaked the key: {text}"
        );
    }
    // The commands ran, and found nothing.
    assert_contains(&results["parent"], "parent-read-1");
    assert_starts_with(&results["all"], "0\n");
    assert_contains(&results["all"], "by-number-1");
    assert_starts_with(&results["env"], "0\nenv-read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_cannot_change_git_or_tasks() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let (project, id) = approved(&server).await;
    let config = project.read(".git/config");
    let todo = project.todo(&id);
    push_calls(
        &server,
        &[
            bash(
                "hook",
                "printf '#!/bin/sh\\nenv\\n' > .git/hooks/pre-commit",
            ),
            bash("config", "git config core.fsmonitor 'env > /tmp/x'"),
            bash("append", "echo '[alias]' >> .git/config"),
            bash(
                "tick-s2",
                "sed -i 's/^- \\[ \\] S2 /- [x] S2 /' .tasks/*/TODO.md",
            ),
            bash("new", "touch .tasks/new-file"),
            bash("rename", "mv .tasks .tasks-old"),
            bash("mount", "umount .git || mount -o remount,rw .git"),
            bash("ok", "echo fine > made.txt"),
        ],
    );
    push_block(&server);
    project.tick_ends(&server, &["run"], 4).await;

    assert_eq!(project.read(".git/config"), config);
    assert!(!project.path(".git/hooks/pre-commit").exists());
    assert!(!project.path(".tasks/new-file").exists());
    assert!(!project.path(".tasks-old").exists());
    let todo_after = project.todo(&id);
    assert_contains(&todo_after, "- [ ] S2 Never done");
    assert_eq!(
        todo_after.replace("- [!] S1", "- [ ] S1").lines().next(),
        todo.lines().next()
    );
    let results = tool_results(&server.requests());
    for call in [
        "hook", "config", "append", "tick-s2", "new", "rename", "mount",
    ] {
        let text = &results[call];
        assert!(
            !text.contains("\nexit code 0,") && !text.starts_with("(no output)\nexit code 0"),
            "{call} succeeded: {text}"
        );
    }
    assert_contains(&results["hook"], "Read-only file system");
    assert_contains(&results["ok"], "exit code 0");
    assert_eq!(project.read("made.txt"), "fine\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repositorys_fsmonitor_never_runs() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server).await;
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("ran");
    let script = outside.path().join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\nenv >> {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Written last: the test's own git calls would run it too.
    let mut config = project.read(".git/config");
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {0}\n\tpager = {0}\n\thooksPath = .git/hooks\n",
        script.display()
    ));
    std::fs::write(project.path(".git/config"), config).unwrap();
    push_calls(&server, &[bash("ok", "echo fine > made.txt")]);
    server.push(claims_done("done", "S1", None));
    push_calls(&server, &[bash("s2", "true")]);
    push_block(&server);
    let output = project
        .tick_with(&server, &["run", "--commit"], |cmd| {
            cmd.env("OPENAI_API_KEY", SECRET);
        })
        .await;
    assert!(
        stderr(&output).contains("S1"),
        "the run did not get to S1: {}",
        stderr(&output)
    );
    assert!(
        !marker.exists(),
        "fsmonitor ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// Every way a command tries to outlive its call, and `setsid` in a `verify` command: no
/// process is left after the call (while tick still runs) nor after tick exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_outlives_its_command() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let marker = unique();
    let plan = PLAN.replace(
        "verify: `test -f made.txt`",
        &format!(
            "verify: `setsid sleep 1000.{marker}9 & setsid -f sleep 1000.{marker}8; test -f made.txt`"
        ),
    );
    let project = Workspace::sample();
    project.approve_plan(&server, &plan).await;

    let mut escapes = vec![
        format!("setsid sleep 1000.{marker}1 &"),
        format!("setsid -f sleep 1000.{marker}2"),
        format!("(sleep 1000.{marker}3 &)"),
        format!("nohup sleep 1000.{marker}4 > /dev/null 2>&1 &"),
        format!("perl -e 'setpgrp; exec \"sleep\", \"1000.{marker}5\"' &"),
        format!(
            "python3 -c 'import os; os.setpgid(0, 0); os.execvp(\"sleep\", [\"sleep\", \"1000.{marker}6\"])' &"
        ),
        format!("sh -c 'sh -c \"sleep 1000.{marker}7 &\" &'"),
    ];
    // perl and python3 are optional programs: without them their escape proves nothing.
    escapes.retain(|command| {
        ["perl", "python3"].iter().all(|program| {
            !command.starts_with(&format!("{program} "))
                || programs::or_skip(
                    programs::on_path(program),
                    program,
                    &format!("the escape `{command}`"),
                )
        })
    });
    let calls: Vec<(String, String, Value)> = escapes
        .iter()
        .enumerate()
        .map(|(i, command)| {
            bash(
                &format!("escape{i}"),
                &format!("{command}\nsleep 0.3; echo started"),
            )
        })
        .collect();
    let mut calls = calls;
    // S1's file, which its verify checks for: it fails before the change and passes after.
    calls.push(bash("make", "touch made.txt"));
    push_calls(&server, &calls);
    // The next answer waits, so tick is still running while the test looks.
    let waiting =
        openai_call_chunks(&[("done", "update_step", json!({"id": "S1", "status": "done"}))])
            .into_iter()
            .fold(
                Reply::status(200)
                    .header("content-type", "text/event-stream")
                    .delay(Duration::from_secs(2)),
                Reply::chunk,
            );
    server.push(waiting);
    push_calls(&server, &[bash("s2", "true")]);
    server.push(openai_call(
        "block2",
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "test"}),
    ));
    let cmd = project.command(&format!("{}/v1", server.url()), &["run"]);
    let run = tokio::task::spawn_blocking(move || {
        let mut cmd = cmd;
        cmd.output().unwrap()
    });
    // Seven sandboxed calls on a busy machine can take longer than the server's own wait.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the escape calls did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // No grace period: the calls have returned, so their processes must be gone already.
    let during = processes_with(&marker);
    let output = run.await.unwrap();
    let after = survivors(&marker, Duration::from_secs(2));
    kill_all(&during);
    kill_all(&after);
    assert!(
        during.is_empty(),
        "left running after the calls: {during:?}"
    );
    assert!(after.is_empty(), "left running after tick: {after:?}");

    let results = tool_results(&server.requests());
    for i in 0..escapes.len() {
        let text = &results[&format!("escape{i}")];
        assert!(text.contains("started"), "escape{i} did not run: {text}");
        assert!(
            text.contains(
                "note: processes the command left running in the background were stopped"
            ),
            "escape{i} was not told: {text}"
        );
    }
    assert!(!results["s2"].contains("note:"), "{}", results["s2"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    // The verify command with its own escapes passed, and left nothing either.
    let recorded = state(&project, &project.task_id());
    assert!(
        recorded.steps[&"S1".parse().unwrap()].verified(),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_takes_its_escapees_with_it() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let (project, _id) = approved(&server).await;
    let marker = unique();
    server.push(openai_call(
        "slow",
        "bash",
        json!({"command": format!("setsid -f sleep 1000.{marker}1; sleep 1000.{marker}2"), "timeout_s": 1}),
    ));
    push_block(&server);
    let output = project.tick_against(&server, &["run"]).await;
    let left = survivors(&marker, Duration::from_secs(2));
    kill_all(&left);
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let results = tool_results(&server.requests());
    assert_contains(&results["slow"], "killed after 1 s (timeout)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_the_run_says_so_everywhere() {
    let server = FakeModel::start().await;
    let (project, id) = approved(&server).await;
    push_calls(&server, &[bash("w", "touch .tasks/written-unsandboxed")]);
    push_block(&server);
    let output = project
        .tick_against(&server, &["run", "--no-sandbox"])
        .await;
    let err = stderr(&output);
    assert_contains(&err, "without the sandbox");
    // Without the sandbox nothing stopped the write: the opt-out is real. The second guard
    // saw it, though: the file is removed again, the step is not ticked and the run stops
    // naming the file.
    assert!(!project.path(".tasks/written-unsandboxed").exists());
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_contains(
        &err,
        "something other than tick changed `.tasks/written-unsandboxed` added (removed)",
    );
    assert!(
        !project.todo(&id).contains("- [x] S1"),
        "the step was not ticked"
    );
    assert!(state(&project, &id).unsandboxed_run.is_some());
    let status = project.tick_against(&server, &["status"]).await;
    assert!(
        stderr(&status).contains("ran without the sandbox")
            || String::from_utf8_lossy(&status.stdout).contains("ran without the sandbox"),
        "{}",
        stderr(&status)
    );

    // An untrusted repository's own config cannot turn it off: it comes with every clone.
    // The setting is ignored, and said so.
    let (project, id) = approved(&server).await;
    project.write(".tasks/config.yaml", "sandbox: off\n");
    push_block(&server);
    let output = project.tick_against(&server, &["run"]).await;
    assert_contains(
        &stderr(&output),
        "warning: ignored `sandbox: off` from this repository",
    );
    assert!(
        !stderr(&output).contains("without the sandbox"),
        "{}",
        stderr(&output)
    );
    assert!(state(&project, &id).unsandboxed_run.is_none());
    std::fs::remove_file(project.path(".tasks/config.yaml")).unwrap();

    // `sandbox: off` in the person's own config does what `--no-sandbox` does.
    let user = project.path("user-config.yaml");
    std::fs::write(&user, "sandbox: off\n").unwrap();
    push_block(&server);
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("TICK_CONFIG", &user);
        })
        .await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_contains(&stderr(&output), "without the sandbox");
    assert!(state(&project, &id).unsandboxed_run.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_run_records_nothing_unsandboxed() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let (project, id) = approved(&server).await;
    push_block(&server);
    let output = project.tick_ends(&server, &["run"], 4).await;
    assert!(
        !stderr(&output).contains("without the sandbox"),
        "{}",
        stderr(&output)
    );
    assert!(state(&project, &id).unsandboxed_run.is_none());
}

/// Where the sandbox cannot be set up, `tick run` stops before anything, naming what is
/// missing and the opt-out; with the opt-out it runs. Two real ways to lose a feature: no
/// user namespaces left to create (`user.max_user_namespaces=0` in an enclosing namespace),
/// and no `/proc` (tick cannot start its helper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_sandbox_stops_the_run_before_anything() {
    if !sandbox_required() {
        return;
    }
    let tick = env!("CARGO_BIN_EXE_tick");
    for (setup, feature) in [
        (
            "echo 0 > /proc/sys/user/max_user_namespaces",
            "the command sandbox needs unprivileged user namespaces, which is not available: \
             unshare(CLONE_NEWUSER)",
        ),
        (
            "mount -t tmpfs none /proc",
            "the command sandbox needs tick's sandbox helper, which is not available",
        ),
    ] {
        let server = FakeModel::start().await;
        let (project, id) = approved(&server).await;
        let todo = project.todo(&id);
        let asked = server.requests().len();
        let base = project.command(&format!("{}/v1", server.url()), &[]);
        let enclosed = |args: &str| {
            let mut cmd = std::process::Command::new("unshare");
            cmd.args(["-Urm", "sh", "-c"])
                .arg(format!("{setup} && exec {tick} run {args}"))
                .current_dir(project.root())
                .env_clear()
                .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))));
            cmd
        };
        let mut cmd = enclosed("");
        let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{setup}: {err}");
        assert!(err.contains(feature), "{setup}: {err}");
        assert_contains(&err, "nothing was run");
        assert!(
            err.contains("--no-sandbox") && err.contains("sandbox: off"),
            "{err}"
        );
        assert_eq!(server.requests().len(), asked, "the model was asked");
        assert_eq!(project.todo(&id), todo);

        push_block(&server);
        let mut cmd = enclosed("--no-sandbox");
        let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(4),
            "{setup}: {}",
            stderr(&output)
        );
        assert_contains(&stderr(&output), "without the sandbox");
    }
}

/// The policy as the plan-mode command tool and the runner use it, without the runner.
mod policy {
    use std::io::ErrorKind;
    use std::net::TcpListener;
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::Output;

    use tick::sandbox::Policy;

    use super::sandbox_required;
    use crate::common::text::assert_contains;
    use crate::common::workspace::git;

    const TICK: &str = env!("CARGO_BIN_EXE_tick");

    fn run(policy: &Policy, script: &str) -> Output {
        policy
            .clone()
            .with_helper(TICK)
            .command("bash", ["-c", script])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap()
    }

    fn text(output: &Output) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        std::fs::create_dir(dir.path().join(".tasks")).unwrap();
        dir
    }

    /// Where a sandbox is required: a repository and a listener on this machine's loopback
    /// (with its port), for what a sandboxed command may reach.
    fn repo_and_listener() -> Option<(tempfile::TempDir, TcpListener, u16)> {
        if !sandbox_required() {
            return None;
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        Some((repo(), listener, port))
    }

    fn connected(listener: &TcpListener) -> bool {
        listener.set_nonblocking(true).unwrap();
        match listener.accept() {
            Ok(_) => true,
            Err(err) if err.kind() == ErrorKind::WouldBlock => false,
            Err(err) => panic!("{err}"),
        }
    }

    #[test]
    fn read_only_writes_nothing_anywhere_and_has_no_network() {
        let Some((ws, listener, port)) = repo_and_listener() else {
            return;
        };
        let output = run(
            &Policy::read_only(ws.path()),
            &format!(
                "cat .git/HEAD >/dev/null && echo can-read; \
                 echo > /dev/null && echo devnull-ok; \
                 touch new.txt; touch /tmp/x; touch /dev/shm/x; touch .tasks/x; \
                 (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected; echo end"
            ),
        );
        let out = text(&output);
        assert_contains(&out, "can-read\ndevnull-ok\n");
        // Refused by the read-only mounts (and Landlock behind them).
        let refused =
            out.matches("Permission denied").count() + out.matches("Read-only file system").count();
        assert_eq!(refused, 4, "{out}");
        assert!(!out.contains("connected"), "{out}");
        assert_contains(&out, "end");
        assert!(!ws.path().join("new.txt").exists());
        assert!(!connected(&listener));
    }

    #[test]
    fn build_writes_the_workspace_and_reaches_the_network_unless_told_not_to() {
        let Some((ws, listener, port)) = repo_and_listener() else {
            return;
        };
        let script = format!(
            "echo a > new.txt && mkdir -p sub && echo b > sub/c && echo > /tmp/t && echo wrote; \
             (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected; true"
        );
        let out = text(&run(&Policy::build(ws.path()), &script));
        assert_contains(&out, "wrote\nconnected");
        assert!(connected(&listener));
        assert_eq!(
            std::fs::read_to_string(ws.path().join("sub/c")).unwrap(),
            "b\n"
        );

        let out = text(&run(&Policy::build(ws.path()).with_network(false), &script));
        assert!(
            out.contains("wrote\n") && !out.contains("connected"),
            "{out}"
        );
        assert!(!connected(&listener));
    }

    /// Issue 25: without network the command's namespace still has its loopback interface
    /// up, so a verify that starts a server on 127.0.0.1 and talks to it works; this
    /// machine's own listeners stay out of reach. Plan mode the same.
    #[test]
    fn without_network_a_server_on_loopback_inside_is_reachable_and_nothing_outside() {
        let Some((ws, listener, port)) = repo_and_listener() else {
            return;
        };
        let script = format!(
            "python3 -c '
import socket
server = socket.socket()
server.bind((\"127.0.0.1\", 0))
server.listen()
client = socket.create_connection(server.getsockname(), timeout=5)
peer, _ = server.accept()
client.sendall(b\"ping\")
print(\"inside:\", peer.recv(4).decode())
'; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo outside-connected; \
             ip -o link 2>/dev/null | grep -c UP || true"
        );
        for policy in [
            Policy::build(ws.path()).with_network(false),
            Policy::read_only(ws.path()),
        ] {
            let out = text(&run(&policy, &script));
            assert_contains(&out, "inside: ping\n");
            assert!(!out.contains("outside-connected"), "{out}");
            assert!(!connected(&listener));
        }
    }

    /// Issue 25: a plan-mode command sees an empty `/tmp` of its own, not the person's (only
    /// the workspace, when it lives there, is bound back), and cannot write it.
    #[test]
    fn plan_mode_sees_an_empty_private_tmp() {
        if !sandbox_required() {
            return;
        }
        let ws = repo();
        let theirs = tempfile::Builder::new()
            .prefix("persons-file-")
            .tempfile_in("/tmp")
            .unwrap();
        std::fs::write(theirs.path(), "secret\n").unwrap();
        let top = ws
            .path()
            .strip_prefix("/tmp")
            .ok()
            .and_then(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let output = run(
            &Policy::read_only(ws.path()),
            &format!(
                "ls -A /tmp; cat {} && echo read-theirs; touch /tmp/new && echo wrote; echo end",
                theirs.path().display()
            ),
        );
        let out = text(&output);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let listed: Vec<&str> = stdout.lines().take_while(|l| *l != "end").collect();
        assert_eq!(
            listed,
            top.iter().map(String::as_str).collect::<Vec<_>>(),
            "{out}"
        );
        assert!(
            !out.contains("read-theirs") && !out.contains("wrote"),
            "{out}"
        );
        assert_contains(&out, "end");
        assert!(!std::path::Path::new("/tmp/new").exists());
    }

    #[test]
    fn configured_directories_are_writable_and_nothing_else_outside() {
        if !sandbox_required() {
            return;
        }
        let ws = repo();
        let outside = tempfile::tempdir().unwrap();
        let cache = outside.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let policy = Policy::build(ws.path()).with_writable([cache.clone()]);
        let out = text(&run(
            &policy,
            &format!(
                "echo c > {0}/cache/entry && echo cache-ok; echo d > {0}/other; true",
                outside.path().display()
            ),
        ));
        assert_contains(&out, "cache-ok");
        assert!(cache.join("entry").exists());
        assert!(!outside.path().join("other").exists(), "{out}");
    }

    #[test]
    fn the_callers_working_directory_is_kept() {
        if !sandbox_required() {
            return;
        }
        let ws = repo();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        for policy in [Policy::build(ws.path()), Policy::read_only(ws.path())] {
            let output = policy
                .with_helper(TICK)
                .command("pwd", [] as [&str; 0])
                .current_dir(ws.path().join("sub"))
                .output()
                .unwrap();
            let expected = ws.path().join("sub").canonicalize().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&output.stdout).trim(),
                expected.to_str().unwrap(),
                "{}",
                text(&output)
            );
        }
    }

    /// The command runs as the caller's own uid, not as the namespace's root. As root (CI),
    /// the caller is made `nobody` first, so the mapping is not the identity.
    #[test]
    fn the_command_runs_as_the_callers_own_user() {
        if !sandbox_required() {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        let uid = nix::unistd::Uid::current();
        let mut command = Policy::build(ws.path()).with_helper(TICK).command(
            "sh",
            ["-c", "id -u; id -g; echo x > made && stat -c %u made"],
        );
        let expected = if uid.is_root() {
            std::os::unix::fs::chown(ws.path(), Some(65534), Some(65534)).unwrap();
            let mut wrapped = std::process::Command::new("setpriv");
            wrapped
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(command.get_program())
                .args(command.get_args())
                .current_dir(ws.path());
            command = wrapped;
            "65534\n65534\n65534\n".to_owned()
        } else {
            let gid = nix::unistd::Gid::current();
            format!("{uid}\n{gid}\n{uid}\n")
        };
        let output = command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            expected,
            "{}",
            text(&output)
        );
    }

    #[test]
    fn the_exit_status_is_the_commands_own() {
        if !sandbox_required() {
            return;
        }
        let ws = repo();
        let policy = Policy::build(ws.path());
        assert_eq!(run(&policy, "exit 7").status.code(), Some(7));
        assert_eq!(run(&policy, "kill -9 $$").status.signal(), Some(9));
        assert_eq!(run(&policy, "kill -TERM $$").status.signal(), Some(15));
        assert_eq!(
            run(&policy, "no-such-program-here").status.code(),
            Some(127)
        );
        let output = policy
            .clone()
            .with_helper(TICK)
            .command("no-such-program-here", [] as [&str; 0])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(127), "{}", text(&output));
    }

    #[test]
    fn a_worktrees_git_directories_are_read_only() {
        if !sandbox_required() {
            return;
        }
        let main = repo();
        std::fs::write(main.path().join("a"), "a").unwrap();
        git(main.path(), &["add", "a"]);
        git(main.path(), &["commit", "-q", "-m", "a"]);
        let wt = main.path().join("wt");
        git(
            main.path(),
            &["worktree", "add", "-q", wt.to_str().unwrap()],
        );
        let gitdir = std::fs::read_to_string(wt.join(".git")).unwrap();
        let gitdir = Path::new(gitdir.trim().strip_prefix("gitdir: ").unwrap()).to_path_buf();
        let out = text(&run(
            &Policy::build(&wt),
            &format!(
                "echo x > {0}/HEAD; echo x >> {1}/config; echo x > .git; echo y > file && echo ok",
                gitdir.display(),
                main.path().join(".git").display()
            ),
        ));
        assert_contains(&out, "ok");
        assert_eq!(out.matches("Read-only file system").count(), 3, "{out}");
    }
}

/// `cargo build` and `cargo test` of the project's crate pass as a `verify` command in the
/// build sandbox, with the person's `CARGO_HOME` and `RUSTUP_HOME` read-only there (passed
/// to the command because the person's `sandbox.env` names them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_builds_and_tests_as_a_verify_command() {
    if !sandbox_required() {
        return;
    }
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    let cargo_home = std::env::var_os("CARGO_HOME").map_or(home.join(".cargo"), Into::into);
    let rustup_home = std::env::var_os("RUSTUP_HOME").map_or(home.join(".rustup"), Into::into);
    let server = FakeModel::start().await;
    let plan = PLAN.replace(
        "verify: `test -f made.txt`",
        // `test -f made.txt` first: a verify that passed before the change would be no evidence.
        "verify: `test -f made.txt && cargo build --offline --quiet && cargo test --offline --quiet`",
    );
    let project = Workspace::sample();
    project.approve_plan(&server, &plan).await;
    // Commands get only the allow-listed environment; the person adds what cargo needs.
    project.write_user_config(
        "sandbox:\n  env: [CARGO_HOME, RUSTUP_HOME, RUSTUP_TOOLCHAIN, RUSTUP_AUTO_INSTALL]\n",
    );
    // The step's own file first: a done claim with none of its files changed goes back.
    server.push(writes_file("make", "made.txt", "made\n"));
    server.push(claims_done("done", "S1", None));
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("CARGO_HOME", &cargo_home)
                .env("RUSTUP_HOME", &rustup_home);
            for name in ["RUSTUP_TOOLCHAIN", "RUSTUP_AUTO_INSTALL"] {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
        })
        .await;
    // Cargo.lock is new and outside S1's `files`: the run pauses after the verified step.
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let recorded = state(&project, &project.task_id());
    let s1 = &recorded.steps[&"S1".parse().unwrap()];
    assert!(s1.verified(), "{}\n{:?}", stderr(&output), s1.evidence);
    assert!(project.path("target/debug/app").exists());
}
