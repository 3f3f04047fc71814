//! Containment, second pass (issue 17): what a hostile command tries against the sandbox's
//! own processes, against other programs' IPC, against "read-only", and against tick's exit.
//!
//! The sandbox-level tests run commands the way the `bash` tool does
//! (`tick::tools::bash::run_command`), with the real tick binary as the sandbox helper; the
//! Ctrl-C and tamper tests run `tick run` against the fake model. Like `sandbox.rs`, they fail
//! where the sandbox cannot be set up unless `TICK_TEST_NO_SANDBOX=1`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tick::sandbox::{self, Kind, Policy, Sandboxing};
use tick::tools::CommandEnv;
use tick::tools::bash::{CommandRun, run_command};

use crate::common::fake_model::FakeModel;
use crate::common::plans::one_step_plan;
use crate::common::processes::{processes_with, unique};
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_call, openai_calls};
use crate::common::text::assert_contains;
use crate::common::text::assert_starts_with;
use crate::common::workspace::{Workspace, stderr};

const TICK: &str = env!("CARGO_BIN_EXE_tick");

fn sandbox_required() -> bool {
    if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
        return false;
    }
    for kind in [Kind::Build, Kind::ReadOnly] {
        if let Err(unavailable) = sandbox::available_with(kind, Some(Path::new(TICK))) {
            panic!("the sandbox is not available ({unavailable}); TICK_TEST_NO_SANDBOX=1 skips");
        }
    }
    true
}

/// Runs `command` with `bash -c` in `root` under `policy`, the way the `bash` tool does, with
/// `HOME` set to `home`.
fn sandboxed(policy: Policy, root: &Path, home: &Path, command: &str) -> CommandRun {
    let env = CommandEnv::default()
        .with_base(vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".to_owned(), home.display().to_string()),
        ])
        .with_sandbox(Sandboxing::On(policy.with_helper(TICK)));
    run_command(root, &env, command, Duration::from_secs(30)).unwrap()
}

/// A workspace (`ws/`, a git repository with `.tasks/`) beside a file outside it and a home
/// directory, all in one temporary directory.
struct Layout {
    dir: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        // Not under /tmp, which build mode replaces with its own: outside and home stay visible.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".tasks")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::write(ws.join("a.txt"), "a\n").unwrap();
        std::fs::write(ws.join(".tasks/t.txt"), "t\n").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "o\n").unwrap();
        std::fs::write(dir.path().join("home/h.txt"), "h\n").unwrap();
        Layout { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
}

fn kill_all(found: &[(i32, String)]) {
    for (pid, _) in found {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
}

/// `ipcmk args` from outside any sandbox: the id it printed.
fn ipcmk(args: &[&str]) -> String {
    let output = Command::new("ipcmk").args(args).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned()
}

/// Writes to a System V shared memory segment and sends to a message queue, by id, with perl.
const IPC_PERL: &str = r#"perl -e '
    print shmwrite($ARGV[0], "owned", 0, 5) ? "shm-written\n" : "shm-refused $!\n";
    print msgsnd($ARGV[1], pack("l! a*", 1, "owned"), 0) ? "queue-written\n" : "queue-refused $!\n";
'"#;

/// Issue 17, item 8: from inside, a command read and overwrote an outside process's System V
/// shared memory and read its message queue.
#[test]
fn other_programs_shared_memory_and_queues_are_out_of_reach() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    let shm = ipcmk(&["-M", "4096"]);
    let queue = ipcmk(&["-Q"]);
    let command = format!("{IPC_PERL} {shm} {queue}; ipcs -m -q");
    // The same command reaches both from outside: the ids are right.
    let outside = Command::new("bash")
        .arg("-c")
        .arg(&command)
        .output()
        .unwrap();
    let inside = sandboxed(
        Policy::build(layout.ws()),
        &layout.ws(),
        &layout.home(),
        &command,
    );
    let _ = Command::new("ipcrm")
        .args(["-m", &shm, "-q", &queue])
        .status();
    let outside = String::from_utf8_lossy(&outside.stdout);
    assert_contains(&outside, "shm-written");
    assert_contains(&outside, "queue-written");
    assert_contains(&inside.output, "shm-refused");
    assert_contains(&inside.output, "queue-refused");
    let listed = inside.output.lines().filter(|l| l.contains("0x")).count();
    assert_eq!(listed, 0, "{}", inside.output);
}

/// Issue 17, item 5: as root, the command ran as root in its user namespace with every
/// capability in it.
#[test]
fn the_command_runs_without_capabilities_and_not_as_root() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    for policy in [Policy::build(layout.ws()), Policy::read_only(layout.ws())] {
        let run = sandboxed(
            policy,
            &layout.ws(),
            &layout.home(),
            "id -u; id -g; grep -E '^(Cap|NoNewPrivs)' /proc/self/status",
        );
        let mut lines = run.output.lines();
        assert_ne!(lines.next(), Some("0"), "{}", run.output);
        assert_ne!(lines.next(), Some("0"), "{}", run.output);
        // The bounding set too: nothing the command execs can ever gain a capability.
        for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            assert_contains(&run.output, &format!("{cap}:\t0000000000000000"));
        }
        assert_contains(&run.output, "NoNewPrivs:\t1");
    }
}

/// Issue 17, item 5: a double-forked daemon attached to the sandbox's PID 1 with ptrace (to
/// clear its parent-death signal and keep it stopped), and outlived `tick run`.
#[test]
fn a_daemon_cannot_ptrace_the_sandboxs_init() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    let marker = unique();
    // PTRACE_SEIZE (0x4206) and PTRACE_ATTACH (16) on PID 1, from a daemon of its own session.
    let command = format!(
        r#"setsid -f perl -e '
            my $seize = syscall(101, 0x4206, 1, 0, 0) == 0 ? "seized" : "seize-refused $!";
            my $attach = syscall(101, 16, 1, 0, 0) == 0 ? "attached" : "attach-refused $!";
            open my $f, ">", "ptrace.txt"; print $f "$seize\n$attach\n"; close $f;
            exec "sleep", "1000.{marker}"'
        while [ ! -s ptrace.txt ]; do sleep 0.05; done; sleep 0.2; cat ptrace.txt"#
    );
    let run = sandboxed(
        Policy::build(layout.ws()),
        &layout.ws(),
        &layout.home(),
        &command,
    );
    let left = processes_with(&marker);
    kill_all(&left);
    assert_contains(&run.output, "seize-refused");
    assert_contains(&run.output, "attach-refused");
    assert!(left.is_empty(), "{left:?}");
}

/// Issue 17, item 5: as root, a command forged its own exit status by writing to the
/// helper's status pipe through `/proc/1/fd/0`.
#[test]
fn the_command_cannot_reach_the_helpers_status_pipe() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    let run = sandboxed(
        Policy::build(layout.ws()),
        &layout.ws(),
        &layout.home(),
        "(echo 'signal 9' > /proc/1/fd/0) 2>/dev/null && echo forged || echo refused; \
         ls -l /proc/1/fd/ 2>&1 | grep -c pipe; exit 3",
    );
    assert_eq!(run.exit_code, Some(3), "{}", run.output);
    assert_starts_with(&run.output, "refused\n0\n");
}

/// Issue 17, item 5: as root, a command left setuid-root files (`chmod 4755`) in the
/// workspace.
#[test]
fn setuid_and_setgid_bits_do_not_survive_the_command() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    for name in ["tool", "sub/other"] {
        let path = layout.ws().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "#!/bin/sh\nid -u\n").unwrap();
        std::fs::set_permissions(&path, PermissionsExt::from_mode(0o755)).unwrap();
    }
    let run = sandboxed(
        Policy::build(layout.ws()),
        &layout.ws(),
        &layout.home(),
        "chmod 4755 tool && chmod 6755 sub/other && echo set; ./tool",
    );
    assert_contains(&run.output, "set\n");
    for name in ["tool", "sub/other"] {
        let mode = std::fs::metadata(layout.ws().join(name)).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o755, "{name}: {mode:o}");
    }
    assert_contains(
        &run.output,
        "note: the setuid and setgid bits the command set were cleared: `sub/other`, `tool`",
    );
}

/// Each of `chmod`, `touch -d` and a `user.` xattr on `paths`, as one command that prints
/// what succeeded.
fn metadata_writes(python: &str, paths: &[&str]) -> String {
    let mut command = String::new();
    for path in paths {
        command.push_str(&format!(
            "chmod 600 {path} 2>/dev/null && echo \"chmod {path}\"; \
             touch -d 2001-01-01 {path} 2>/dev/null && echo \"touch {path}\"; \
             {python} -c 'import os,sys; os.setxattr(sys.argv[1], \"user.x\", b\"1\")' {path} \
             2>/dev/null && echo \"xattr {path}\"; "
        ));
    }
    command.push_str("echo end");
    command
}

fn python() -> String {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Issue 17, item 10: Landlock has no right for chmod, utimes or xattrs, so under the plan
/// mode sandbox they succeeded everywhere; build mode must hold `.git`/`.tasks` (and what
/// lies outside the workspace) the same way.
#[test]
fn read_only_covers_modes_times_and_xattrs() {
    if !sandbox_required() {
        return;
    }
    let python = python();
    let layout = Layout::new();
    let home = layout.home();
    let home_file = format!("{}/h.txt", home.display());
    let everywhere = [
        "a.txt",
        ".git/config",
        ".tasks/t.txt",
        home_file.as_str(),
        "../outside.txt",
    ];
    let stat = |rel: &str| {
        let meta = std::fs::metadata(layout.ws().join(rel)).unwrap();
        (meta.mode(), meta.mtime())
    };
    let before: Vec<_> = everywhere.iter().map(|p| stat(p)).collect();
    let run = sandboxed(
        Policy::read_only(layout.ws()),
        &layout.ws(),
        &home,
        &metadata_writes(&python, &everywhere),
    );
    assert_eq!(run.output, "end\n", "under the read-only policy");
    let after: Vec<_> = everywhere.iter().map(|p| stat(p)).collect();
    assert_eq!(before, after);

    // Build mode: the workspace's own files may change; nothing else may.
    let guarded = &everywhere[1..];
    let run = sandboxed(
        Policy::build(layout.ws()),
        &layout.ws(),
        &home,
        &metadata_writes(&python, &everywhere),
    );
    // When the target directory is under /tmp (a clone in /tmp), `../outside.txt` is in the
    // command's private /tmp: it may make a file of its own there, which is never the real
    // one; the real file's mode and time are checked below either way.
    let private_tmp = layout.dir.path().starts_with("/tmp");
    let mut output = String::new();
    for line in run.output.lines() {
        if !(private_tmp && line.ends_with(" ../outside.txt")) {
            output.push_str(line);
            output.push('\n');
        }
    }
    assert_eq!(
        output, "chmod a.txt\ntouch a.txt\nxattr a.txt\nend\n",
        "under the build policy"
    );
    let after: Vec<_> = guarded.iter().map(|p| stat(p)).collect();
    assert_eq!(before[1..], after[..]);
}

const PLAN: &str = one_step_plan!("Contained");

/// `tick run` whose first bash call is `sleep 6; echo x > slow.txt`; `signals` are sent to
/// tick once the sleep runs. Checks that tick ends within a few seconds, that no process of
/// the command is left when it has, and that `slow.txt` never appears; what tick said. Only
/// where a sandbox is required (elsewhere it says nothing and returns an empty string).
async fn interrupted_during_a_command(signals: &[Signal]) -> String {
    if !sandbox_required() {
        return String::new();
    }
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    let marker = unique();
    let sleep = format!("sleep 6.{marker}");
    server.push(openai_call(
        "slow",
        "bash",
        json!({"command": format!("{sleep}; echo x > slow.txt"), "timeout_s": 60}),
    ));
    server.push(openai_call(
        "block",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "test"}),
    ));
    let mut cmd = project.command(&format!("{}/v1", server.url()), &["run"]);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&sleep).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let tick = Pid::from_raw(i32::try_from(child.id()).unwrap());
    for &signal in signals {
        kill(tick, signal).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let took = started.elapsed();
    // On a second signal tick exits at once, and the kernel kills the namespace as it does
    // (the helpers' parent-death signals): give that a moment on a loaded machine (at a load
    // of 14 on 2 cores, 1 s was seen to be too short); 3 s is still half the command's 6 s.
    let exited = Instant::now();
    let mut left = processes_with(&marker);
    while !left.is_empty() && exited.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
        left = processes_with(&marker);
    }
    kill_all(&left);
    assert!(
        left.is_empty(),
        "left running 3 s after tick exited: {left:?}"
    );
    assert!(took < Duration::from_secs(4), "tick took {took:?} to stop");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    // Past the moment the command would have written it.
    tokio::time::sleep(Duration::from_secs(7).saturating_sub(started.elapsed())).await;
    assert!(!project.path("slow.txt").exists(), "the command went on");
    stderr(&output)
}

/// Issue 17, item 6: a single Ctrl-C waited for the command to finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ctrl_c_stops_the_running_command_at_once() {
    if !sandbox_required() {
        return;
    }
    let said = interrupted_during_a_command(&[Signal::SIGINT]).await;
    // Regression (issue 31): the person's Ctrl-C was announced as "bash failed".
    let bash: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("bash"))
        .collect();
    insta::assert_snapshot!(bash.join("\n"), @"bash interrupted by you");
}

/// Issue 17, item 6: a second Ctrl-C made tick exit at once and left the command running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_ctrl_cs_leave_no_command_behind() {
    interrupted_during_a_command(&[Signal::SIGINT, Signal::SIGINT]).await;
}

/// Issue 17, item 6: the same for Ctrl-C then SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_then_sigterm_leaves_no_command_behind() {
    interrupted_during_a_command(&[Signal::SIGINT, Signal::SIGTERM]).await;
}

/// A closed terminal (SIGHUP) stops the command like Ctrl-C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hangup_leaves_no_command_behind() {
    interrupted_during_a_command(&[Signal::SIGHUP]).await;
}

/// Issue 17, item 9: through a hard link to `.git/config` made before the run, the agent
/// added `core.fsmonitor`; tamper detection stopped the step but the line stayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_changed_through_a_hard_link_is_put_back() {
    if !sandbox_required() {
        return;
    }
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    std::fs::hard_link(project.path(".git/config"), project.path("cfg")).unwrap();
    let config = std::fs::read(project.path(".git/config")).unwrap();
    server.push(openai_calls(&[(
        "link",
        "bash",
        json!({"command": "printf '[core]\\n\\tfsmonitor = env\\n' >> cfg && echo appended"}),
    )]));
    server.push(claims_done("done", "S1", None));
    let output = project.tick_against(&server, &["run"]).await;
    assert_eq!(std::fs::read(project.path(".git/config")).unwrap(), config);
    let err = stderr(&output);
    assert_contains(&err, "`.git/config` modified (put back as it was)");
    // The person was told before the step ran.
    assert_contains(
        &err,
        "warning: `cfg` has hard links outside the workspace (or into `.git/`, `.tasks/`)",
    );
    assert_ne!(output.status.code(), Some(0), "{err}");
}

/// Without the sandbox, tamper detection is the guard that holds: a planted hook is removed
/// and a changed TODO.md is put back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_tampered_files_are_put_back() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    let todo = format!(".tasks/{id}/TODO.md");
    server.push(openai_calls(&[(
        "plant",
        "bash",
        json!({"command": format!(
            "printf '#!/bin/sh\\nenv\\n' > .git/hooks/pre-commit; echo '- [x] S9 planted' >> {todo}"
        )}),
    )]));
    server.push(claims_done("done", "S1", None));
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("TICK_SANDBOX", "off");
        })
        .await;
    let err = stderr(&output);
    assert!(!project.path(".git/hooks/pre-commit").exists(), "{err}");
    assert!(!project.read(&todo).contains("S9"), "{err}");
    assert_contains(&err, "`.git/hooks/pre-commit` added (removed)");
    assert_contains(&err, &format!("`{todo}` modified (put back as it was)"));
}

/// Issue 17, item 9: files whose other hard links lie outside the writable workspace (a
/// package store, `.git/config`) are named, so the person knows a write there goes further.
#[test]
fn hard_links_that_leave_the_workspace_are_named() {
    let layout = Layout::new();
    let ws = layout.ws();
    std::fs::hard_link(layout.dir.path().join("outside.txt"), ws.join("store.txt")).unwrap();
    std::fs::hard_link(ws.join(".git/config"), ws.join("sub-config")).unwrap();
    std::fs::write(ws.join("one.txt"), "1").unwrap();
    std::fs::hard_link(ws.join("one.txt"), ws.join("two.txt")).unwrap();
    assert_eq!(
        sandbox::links_leaving(&ws).unwrap(),
        ["store.txt", "sub-config"]
    );
}

// Issue 25: what the agent leaves behind and what its commands can reach.

/// A Python one-liner that connects to each UNIX socket path it is given (`@name`: the
/// abstract socket `name`) and prints `reached <path>` or `refused <path>`.
fn connect_all(python: &str, paths: &[String]) -> String {
    let mut command = format!(
        "{python} -c 'import socket, sys\nfor p in sys.argv[1:]:\n    s = socket.socket(socket.AF_UNIX)\n    \
         try:\n        s.connect(\"\\0\" + p[1:] if p.startswith(\"@\") else p)\n        print(\"reached\", p)\n    \
         except OSError as e:\n        print(\"refused\", p, e.errno)\n'"
    );
    for path in paths {
        command.push(' ');
        command.push_str(path);
    }
    command
}

/// A real listener at `path` (its directory made), kept open while the value lives.
fn listen(path: &Path) -> std::os::unix::net::UnixListener {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    std::os::unix::net::UnixListener::bind(path).unwrap()
}

/// Removes a directory (one made under `/run`) however the test ends.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether this kernel has Landlock ABI 6 (Linux 6.12), which scopes abstract UNIX sockets.
fn kernel_scopes_abstract_sockets() -> bool {
    let release = nix::sys::utsname::uname().unwrap();
    let release = release.release().to_string_lossy().into_owned();
    let mut parts = release
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 12)
}

/// Issue 25, finding 7: from a build-mode command, the sockets of daemons and agents outside
/// the sandbox accepted connections (docker's, Docker Desktop's, `/run/systemd/private`, a
/// database's, the ssh-agent's under `~/.ssh`), `network: false` too. Each is a real
/// listener here; a command of either policy reaches none of them, and still reaches one in
/// the workspace (so the client works).
#[test]
fn sockets_outside_the_sandbox_cannot_be_reached() {
    if !sandbox_required() {
        return;
    }
    let python = python();
    let layout = Layout::new();
    let ws = layout.ws();
    let home = layout.home();
    let marker = unique();
    let mut outside = vec![
        home.join(".ssh/agent.sock"),
        home.join(".gnupg/S.gpg-agent"),
        home.join(".docker/run/docker.sock"),
        home.join(".docker/desktop/docker.sock"),
    ];
    // The system's runtime directories, where tick may create them (as root, on CI).
    let run = PathBuf::from(format!("/run/tick-test-{marker}"));
    let _removed = Removed(run.clone());
    if std::fs::create_dir(&run).is_ok() {
        outside.push(run.join("docker.sock"));
        outside.push(run.join("systemd/private"));
        outside.push(run.join("postgresql/.s.PGSQL.5432"));
    }
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    outside.push(tmp.path().join("ssh-agent.sock"));
    let _listeners: Vec<_> = outside.iter().map(|p| listen(p)).collect();
    let _inside = listen(&ws.join("ok.sock"));
    let abstract_name = format!("tick-test-{marker}");
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let mut paths: Vec<String> = outside.iter().map(|p| p.display().to_string()).collect();
    paths.push(format!("{}/ok.sock", ws.display()));
    let abstract_path = format!("@{abstract_name}");
    paths.push(abstract_path.clone());
    let command = connect_all(&python, &paths);
    // Outside the sandbox every one of them answers.
    let plain = Command::new("bash")
        .args(["-c", &command])
        .output()
        .unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert_eq!(plain.matches("reached").count(), paths.len(), "{plain}");

    for (name, policy) in [
        ("build", Policy::build(&ws)),
        (
            "build without network",
            Policy::build(&ws).with_network(false),
        ),
        ("read-only", Policy::read_only(&ws)),
    ] {
        let run_ = sandboxed(policy, &ws, &home, &command);
        let out = &run_.output;
        for path in &outside {
            // Plan mode keeps the machine's /tmp (see docs/sandbox.md).
            if name == "read-only" && path.starts_with(tmp.path()) {
                continue;
            }
            assert_contains(out, &format!("refused {}", path.display()));
        }
        assert_contains(out, &format!("reached {}/ok.sock", ws.display()));
        if name != "build" || kernel_scopes_abstract_sockets() {
            assert_contains(out, &format!("refused {abstract_path}"));
        }
    }
}

/// Issue 25, finding 6: a build command rewrote a submodule's gitfile (`lib/.git` →
/// `gitdir: .evil`), `.gitmodules`, and the `.gitconfig` that `include.path` in `.git/config`
/// names, so the person's next `git status` ran what it chose. All are read-only now, and
/// so is a submodule's directory that has no `.git` yet.
#[test]
fn a_build_command_cannot_rewrite_what_git_reads() {
    if !sandbox_required() {
        return;
    }
    let layout = Layout::new();
    let ws = layout.ws();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    let sha = "0123456789abcdef0123456789abcdef01234567";
    git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{sha},lib"),
    ]);
    git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{sha},empty"),
    ]);
    std::fs::create_dir_all(ws.join("lib")).unwrap();
    std::fs::create_dir_all(ws.join("empty")).unwrap();
    std::fs::write(ws.join("lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
    std::fs::write(
        ws.join(".gitmodules"),
        "[submodule \"lib\"]\n\tpath = lib\n",
    )
    .unwrap();
    std::fs::write(ws.join(".gitconfig"), "[core]\n").unwrap();
    let config = ws.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[include]\n\tpath = ../.gitconfig\n");
    std::fs::write(&config, text).unwrap();
    let before: Vec<_> = ["lib/.git", ".gitmodules", ".gitconfig"]
        .iter()
        .map(|f| std::fs::read(ws.join(f)).unwrap())
        .collect();
    let out = sandboxed(
        Policy::build(&ws),
        &ws,
        &layout.home(),
        "for f in lib/.git .gitmodules .gitconfig empty/.git; do \
           printf '[core]\\n\\tfsmonitor = env\\ngitdir: .evil\\n' > $f 2>/dev/null && echo \"wrote $f\"; \
         done; mv lib/.git lib/old 2>/dev/null && echo moved; \
         echo x > a.txt && echo 'wrote a.txt'",
    )
    .output;
    assert_eq!(
        out.lines().filter(|l| l.starts_with("wrote")).count(),
        1,
        "{out}"
    );
    assert_contains(&out, "wrote a.txt");
    assert!(!out.contains("moved"), "{out}");
    let after: Vec<_> = ["lib/.git", ".gitmodules", ".gitconfig"]
        .iter()
        .map(|f| std::fs::read(ws.join(f)).unwrap())
        .collect();
    assert_eq!(before, after);
    assert!(!ws.join("empty/.git").exists());
}

/// Issue 25, findings 6, 7 and 9, through `tick run`: the person's ssh-agent (a real one,
/// with a key loaded, its socket where `SSH_AUTH_SOCK` says) cannot be asked to list or sign
/// from a build command; credentials under common names and an unusual name the person set
/// are not in the command's environment; without the sandbox, a rewritten submodule gitfile
/// and a `commondir` planted in `.git/` are put back and stop the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persons_agent_and_credentials_stay_out_of_reach() {
    if !sandbox_required() {
        return;
    }
    let keys = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let key = keys.path().join("id");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(&key)
        .status()
        .expect("ssh-keygen (openssh-client) is needed");
    assert!(made.success());
    let socket = keys.path().join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !socket.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let added = Command::new("ssh-add")
        .arg(&key)
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let listed = Command::new("ssh-add")
        .arg("-l")
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "the agent works outside: {listed:?}"
    );
    // The key lives in the agent only, as a person's usually does: signing needs the agent.
    std::fs::remove_file(&key).unwrap();
    std::fs::write(keys.path().join("m"), "x\n").unwrap();
    let signed = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", "file", "-f"])
        .arg(key.with_extension("pub"))
        .arg(keys.path().join("m"))
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(
        signed.status.success(),
        "the agent signs outside: {signed:?}"
    );

    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    let sock = socket.display().to_string();
    server.push(openai_calls(&[(
        "agent",
        "bash",
        json!({"command": format!(
            "env; SSH_AUTH_SOCK={sock} ssh-add -l; echo \"list=$?\"; echo x > m; \
             SSH_AUTH_SOCK={sock} ssh-keygen -Y sign -n file -f {} m; echo \"sign=$?\"; \
             echo made > made.txt",
            key.with_extension("pub").display()
        )}),
    )]));
    server.push(claims_done("done", "S1", None));
    let credentials = [
        "GITHUB_PAT",
        "GH_PAT",
        "GITLAB_PAT",
        "BW_SESSION",
        "OP_SESSION_my",
        "MYSQL_PWD",
        "NPM_CONFIG__AUTH",
        "DOCKER_AUTH_CONFIG",
        "PYPI_PASS",
        "CI_JOB_JWT",
        "AWS_ACCESS_KEY_ID",
        "SLACK_WEBHOOK_URL",
        "ZQX_PERSONS_OWN",
    ];
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("SSH_AUTH_SOCK", &socket);
            for name in credentials {
                cmd.env(name, format!("leaked-{name}"));
            }
        })
        .await;
    let _ = agent.kill();
    let _ = agent.wait();
    let results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(crate::common::fake_model::RecordedRequest::tool_results)
        .map(|(_, text)| text)
        .collect();
    let result = results
        .iter()
        .find(|t| t.contains("list="))
        .unwrap_or_else(|| panic!("{results:?}\n{}", stderr(&output)));
    assert!(!result.contains("leaked-"), "{result}");
    assert_contains(result, "HOME=");
    assert!(!result.contains("list=0"), "{result}");
    assert!(!result.contains("sign=0"), "{result}");
    assert!(!project.path("m.sig").exists());
}

/// Issue 25, finding 6, without the sandbox: `.git/commondir` escaped tamper detection, and
/// so did a submodule's gitfile. Both are put back, the step is not ticked, the run stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_a_planted_commondir_or_gitfile_is_put_back() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    // A real submodule, its git directory absorbed into `.git/modules/lib`.
    std::fs::create_dir_all(project.path("lib")).unwrap();
    crate::common::workspace::git(&project.path("lib"), &["init", "-q"]);
    crate::common::workspace::git(
        &project.path("lib"),
        &["commit", "-q", "--allow-empty", "-m", "lib"],
    );
    project.add_submodule("./lib", "lib");
    project.git(&["submodule", "absorbgitdirs"]);
    project.git(&["commit", "-q", "-m", "submodule"]);
    let gitfile = project.read("lib/.git");
    assert!(gitfile.starts_with("gitdir: "), "{gitfile}");
    project.approve_plan(&server, PLAN).await;
    server.push(openai_calls(&[(
        "plant",
        "bash",
        json!({"command": "mkdir -p lib/.evil && printf '[core]\\n\\tfsmonitor = env\\n' > lib/.evil/config; \
                           printf 'gitdir: .evil\\n' > lib/.git; echo ../evil > .git/commondir; \
                           echo made > made.txt"}),
    )]));
    server.push(claims_done("done", "S1", None));
    let output = project
        .tick_with(&server, &["run"], |cmd| {
            cmd.env("TICK_SANDBOX", "off");
        })
        .await;
    let err = stderr(&output);
    assert_eq!(project.read("lib/.git"), gitfile, "{err}");
    assert!(!project.path(".git/commondir").exists(), "{err}");
    assert_contains(&err, "`.git/commondir` added (removed)");
    assert_contains(&err, "`lib/.git` modified (put back as it was)");
    assert_ne!(output.status.code(), Some(0), "{err}");
}

/// Issue 25, finding 10: a kill during a `write_file` left `src/.big.txt.Oj8Vf1` in the work
/// tree for good. The temp file has tick's name and a note under `.tasks/.local/writing/`;
/// here both are what a killed writer (a real process, gone) leaves, and the next `tick`
/// command removes the file, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_command_removes_what_a_killed_write_left() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.approve_plan(&server, PLAN).await;
    let mut writer = Command::new("true").spawn().unwrap();
    let pid = writer.id();
    writer.wait().unwrap();
    let temp = format!(".tick-tmp.{pid}.Oj8Vf1.big.txt");
    std::fs::create_dir_all(project.path("src")).unwrap();
    project.write(&format!("src/{temp}"), "half of a large write");
    project.write(
        &format!(".tasks/.local/writing/{temp}"),
        format!("src/{temp}"),
    );
    let output = project.tick_against(&server, &["status"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!project.path(&format!("src/{temp}")).exists());
    assert!(
        !project
            .path(&format!(".tasks/.local/writing/{temp}"))
            .exists()
    );
    assert!(project.path("src").exists());
}
