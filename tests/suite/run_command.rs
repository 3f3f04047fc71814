//! `run_command` while planning, end to end: the real binary in a real git repository, the
//! fake model calling the tool, the read-only sandbox around every command.
//!
//! The hostile cases are run twice: with the allow-list (guard 1) and with it switched off
//! (a debug build's test switch), where the sandbox (guard 2) alone must hold. Either way the
//! workspace and a canary directory outside it stay byte-identical, no secret is shown, and
//! nothing reaches a loopback server standing in for the network.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, RecordedRequest};
use crate::common::programs;
use crate::common::programs::rust_homes;
use crate::common::scripts::{login_plan, openai_call, openai_calls, run_command_calls};
use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::planned_json;
use crate::common::workspace::{Workspace, assert_success, json_events, scripted, stderr};

const SECRET: &str = "sk-test-secret-canary-7d1f";
const NO_ALLOW_LIST: &str = "TICK_TEST_RUN_COMMAND_WITHOUT_ALLOW_LIST";

/// Whether this machine runs the tests that need the sandbox: always, unless
/// `TICK_TEST_NO_SANDBOX=1` says it cannot (then tick is not offered `run_command`).
fn sandbox_here() -> bool {
    std::env::var("TICK_TEST_NO_SANDBOX").map_or(true, |v| v != "1")
}

/// Every entry below `root` (not following symlinks) with its kind, mode and content; files
/// tick itself writes while planning are left out.
fn tree(root: &Path) -> BTreeMap<String, String> {
    const TICK_OWN: [&str; 6] = [
        ".tasks",
        ".tasks/.lock",
        ".tasks/.gitignore",
        ".tasks/draft",
        ".tasks/draft/PLAN.md",
        ".tasks/draft/session.jsonl",
    ];
    let mut entries = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            let value = if meta.file_type().is_symlink() {
                format!("link {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                format!("dir {mode:o}")
            } else {
                let hash = blake3::hash(&fs::read(&path).unwrap());
                format!("file {mode:o} {hash}")
            };
            if !TICK_OWN.contains(&rel.as_str()) {
                entries.insert(rel, value);
            }
        }
    }
    entries
}

/// The tool results an OpenAI-style request carries, by call id.
fn tool_results(request: &RecordedRequest) -> BTreeMap<String, String> {
    request.tool_results().into_iter().collect()
}

/// A loopback server that only counts the connections it gets.
async fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (port, count)
}

fn write_exec(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository primed to write through every door a read-only command has: a script that
/// writes into the workspace and outside it, repository configuration that would run it (an
/// fsmonitor, an external diff, textconv and clean filters, an alias), symlinks to the
/// outside and to `.git/hooks`, and a change in the work tree so diffs have something to do.
struct Hostile {
    project: Workspace,
    outside: tempfile::TempDir,
}

impl Hostile {
    fn new() -> Self {
        let project = Workspace::sample();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("canary.txt"), "canary\n").unwrap();
        let out = outside.path().display().to_string();
        let evil = format!(
            "#!/bin/sh\necho \"$@\" > \"pwned-$1\"\necho \"$@\" > \"{out}/pwned-$1\"\ncat \"$2\" 2>/dev/null\nexit 0\n"
        );
        write_exec(&project.path("evil.sh"), &evil);
        write_exec(&project.path("evilbin/git-x"), &evil);
        project.write("mymagic", "0 string fn\\x20 Rust source\n");
        project.write(
            ".gitattributes",
            "*.rs diff=evil filter=evil\n*.txt diff=evil\n",
        );
        project.write(
            "rgconfig",
            format!("--pre={}\n", project.path("evil.sh").display()),
        );
        let evil_path = project.path("evil.sh").display().to_string();
        project.git(&["add", "."]);
        project.git(&["commit", "-q", "-m", "tools"]);
        for (key, value) in [
            ("core.pager", format!("{evil_path} pager")),
            ("core.fsmonitor", format!("{evil_path} fsmonitor")),
            ("diff.external", format!("{evil_path} external")),
            ("diff.evil.textconv", format!("{evil_path} textconv")),
            ("filter.evil.clean", format!("{evil_path} clean")),
            ("filter.evil.smudge", format!("{evil_path} smudge")),
            ("alias.st", format!("!{evil_path} alias")),
            ("core.hooksPath", ".git/hooks".to_owned()),
        ] {
            project.git(&["config", key, &value]);
        }
        write_exec(
            &project.path(".git/hooks/post-index-change"),
            &format!("#!/bin/sh\n{evil_path} hook\n"),
        );
        std::os::unix::fs::symlink(outside.path(), project.path("out-link")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", project.path("hooks-link")).unwrap();
        std::os::unix::fs::symlink("/etc", project.path("etc-link")).unwrap();
        // Something for diff, status, textconv and the clean filter to work on.
        project.write(
            "src/login.rs",
            "pub fn login(user: &str) -> bool {\n    !user.is_empty()\n}\n",
        );
        Hostile { project, outside }
    }

    fn snapshot(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        (tree(self.project.root()), tree(self.outside.path()))
    }
}

/// The hostile argvs; `port` is a loopback server standing in for the network, `pid` tick's.
fn hostile_cases(port: u16, pid: u32, outside: &Path, evil: &Path) -> Vec<Value> {
    let url = format!("http://127.0.0.1:{port}/repo.git");
    let canary = format!("{}/canary.txt", outside.display());
    let environ = format!("/proc/{pid}/environ");
    let cases = [
        // Writes by flag.
        json!(["find", ".", "-fprint", "pwned-fprint"]),
        json!(["find", ".", "-fprint0", "pwned-fprint0"]),
        json!(["find", ".", "-fprintf", "pwned-fprintf", "%p"]),
        json!(["find", ".", "-fls", "out-link/canary.txt"]),
        json!(["find", ".", "-name", "*.rs", "-delete"]),
        json!(["git", "diff", "--output=pwned-diff"]),
        json!(["git", "diff", "--out=out-link/canary.txt"]),
        json!(["git", "log", "-p", "--outp=pwned-log"]),
        json!(["git", "show", "--output", "hooks-link/pre-commit", "HEAD"]),
        json!(["git", "log", "-S", "--", "--output=pwned-dashdash"]),
        json!(["rg", "--pre", "./evil.sh", "fn"]),
        json!(["rg", "--pre=./evil.sh", "--pre-glob=*", "fn"]),
        json!(["rg", "-z", "fn"]),
        json!(["tree", "-o", "pwned-tree"]),
        json!(["tree", "-R", "-H", ".", "-L", "1"]),
        json!(["file", "-C", "-m", "mymagic"]),
        json!(["sort", "-o", "pwned-sort", "src/main.rs"]),
        json!(["tee", "pwned-tee"]),
        json!(["cp", "src/main.rs", canary]),
        json!(["sh", "-c", "echo x > pwned-sh"]),
        // Writes by running a program through find.
        json!(["find", ".", "-exec", "touch", "pwned-exec", ";"]),
        json!(["find", "src", "-execdir", evil, "execdir", ";"]),
        json!([
            "find",
            ".",
            "-maxdepth",
            "0",
            "-ok",
            "touch",
            "pwned-ok",
            ";"
        ]),
        json!([
            "find",
            ".",
            "-maxdepth",
            "0",
            "-okdir",
            "touch",
            "pwned-okdir",
            ";"
        ]),
        // Writes by git configuration, given or in the repository.
        json!(["git", "-c", "core.pager=./evil.sh cpager", "-p", "log"]),
        json!(["git", "-c", "alias.x=!./evil.sh alias-c", "x"]),
        json!(["git", "--config-env=core.fsmonitor=PATH", "status"]),
        json!(["git", "-c", "diff.external=./evil.sh cext", "diff"]),
        json!(["git", "--exec-path=evilbin", "x"]),
        json!(["git", "status"]),
        json!(["git", "diff"]),
        json!(["git", "diff", "--ext-diff"]),
        json!(["git", "diff", "--textconv"]),
        json!(["git", "log", "-p", "-1"]),
        json!(["git", "show", "HEAD"]),
        json!(["git", "blame", "src/login.rs"]),
        json!(["git", "st"]),
        json!(["git", "grep", "-O./evil.sh", "fn"]),
        json!(["git", "grep", "--open-files-in-pager=./evil.sh", "fn"]),
        json!(["git", "branch", "pwned-branch"]),
        json!(["git", "tag", "pwned-tag"]),
        json!(["git", "--git-dir=out-link", "status"]),
        // By symlink.
        json!(["find", "hooks-link/", "-fprint", "hooks-link/pre-commit"]),
        json!(["tree", "-o", "hooks-link/post-checkout", "src"]),
        json!(["cat", "etc-link/passwd"]),
        json!(["ls", "out-link/"]),
        // The network.
        json!(["git", "ls-remote", url]),
        json!(["git", "fetch", url]),
        json!(["git", "-c", "protocol.allow=always", "ls-remote", url]),
        json!(["curl", "-s", url]),
        // tick's own secrets.
        json!(["cat", environ]),
        json!(["grep", "-a", "sk-", environ]),
        json!(["cat", "/proc/self/environ"]),
        json!(["cat", "/proc/1/environ"]),
    ];
    cases.to_vec()
}

/// Runs `tick plan` on the hostile repository with the model calling every hostile case,
/// and checks that nothing changed, leaked or connected.
async fn hostile_run(allow_list: bool) {
    let hostile = Hostile::new();
    let project = &hostile.project;
    let (port, connections) = counting_server().await;
    let server = FakeModel::start().await;
    let before = hostile.snapshot();

    let mut cmd = project.command(&format!("{}/v1", server.url()), &["plan", "Refactor login"]);
    cmd.env("OPENAI_API_KEY", SECRET)
        // By environment: none of this may reach a command.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "core.fsmonitor")
        .env(
            "GIT_CONFIG_VALUE_0",
            format!("{} envfsmonitor", project.path("evil.sh").display()),
        )
        .env("GIT_EXTERNAL_DIFF", project.path("evil.sh"))
        .env("GIT_PAGER", project.path("evil.sh"))
        .env("PAGER", project.path("evil.sh"))
        .env("RIPGREP_CONFIG_PATH", project.path("rgconfig"))
        .env("GIT_DIR", hostile.outside.path())
        .envs(rust_homes())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if !allow_list {
        cmd.env(NO_ALLOW_LIST, "1");
    }
    // The first answer lists files; the second, scripted once tick's pid is known, runs the
    // hostile commands.
    server.push(openai_call("call_0", "list_files", json!({})));
    let child = cmd.spawn().unwrap();
    let cases = hostile_cases(
        port,
        child.id(),
        hostile.outside.path(),
        &project.path("evil.sh"),
    );
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let calls: Vec<(String, &str, Value)> = cases
        .iter()
        .enumerate()
        .map(|(i, argv)| {
            (
                format!("call_{}", i + 1),
                "run_command",
                json!({"argv": argv, "timeout_s": 20}),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    server.push(openai_calls(&calls));
    server.push(openai_call("call_plan", "submit_plan", login_plan()));
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_success(&output);

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    assert!(requests[1].tool_names().contains(&"run_command".to_owned()));
    let results = tool_results(&requests[2]);
    for (i, argv) in cases.iter().enumerate() {
        let result = &results[&format!("call_{}", i + 1)];
        assert!(!result.contains(SECRET), "{argv}: {result}");
        assert!(!result.contains("OPENAI_API_KEY"), "{argv}: {result}");
        if allow_list {
            assert!(
                !result.contains("exit code 0,") || is_harmless_read(argv),
                "{argv} ran and succeeded: {result}"
            );
        }
    }
    assert_eq!(
        hostile.snapshot(),
        before,
        "a hostile command changed something"
    );
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a command reached the network"
    );
    let transcript = project.read(".tasks/draft/session.jsonl");
    assert!(!transcript.contains(SECRET));
}

/// Hostile-looking calls the allow-list lets through because, with tick's flags and
/// settings, they only read: the repository's drivers, filters and fsmonitor are off.
fn is_harmless_read(argv: &Value) -> bool {
    let argv: Vec<&str> = argv
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    matches!(
        argv.as_slice(),
        ["git", "status" | "diff" | "show" | "blame", ..] | ["git", "log", "-p", "-1"]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_write_nothing_with_both_guards() {
    if !sandbox_here() {
        return;
    }
    hostile_run(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_write_nothing_with_the_sandbox_alone() {
    if !sandbox_here() {
        return;
    }
    hostile_run(false).await;
}

/// `argv` run directly in `dir`, stdout and stderr together, with git's system and global
/// configuration off: what a person would see in a terminal.
fn direct(dir: &Path, argv: &[&str]) -> String {
    let output = Command::new("sh")
        .arg("-c")
        .arg("exec \"$@\" 2>&1")
        .arg("sh")
        .args(argv)
        .current_dir(dir)
        // The environment tick was given (see `Workspace::command`), so locale-dependent output
        // is the same.
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("NO_COLOR", "1")
        .envs(rust_homes())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{argv:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_commands_show_what_a_person_would_see() {
    if !sandbox_here() {
        return;
    }
    let project = Workspace::sample();
    // tick's own `.tasks/` would otherwise show in `git status`.
    project.write(".gitignore", "target/\n.tasks/\n");
    project.write(
        "src/login.rs",
        "pub fn login(user: &str) -> bool {\n    !user.is_empty()\n}\n",
    );
    project.git(&["commit", "-q", "-am", "one argument"]);
    project.write("README.md", "# app\n");
    project.git(&["tag", "v1"]);
    project.write(
        "src/main.rs",
        "mod login;\nfn main() { login::login(\"a\"); }\n",
    );
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["git", "log", "-5", "--stat"],
        vec!["git", "log", "--oneline"],
        vec!["git", "show", "HEAD:src/main.rs"],
        vec!["git", "show", "--stat", "HEAD"],
        vec!["git", "blame", "src/login.rs"],
        vec!["git", "diff", "HEAD~1"],
        vec!["git", "diff"],
        vec!["git", "status", "--short"],
        vec!["git", "ls-files"],
        vec!["git", "rev-parse", "HEAD"],
        vec!["git", "branch"],
        vec!["git", "tag", "--list"],
        vec!["git", "grep", "-n", "fn"],
        vec![
            "git",
            "-C",
            "src",
            "log",
            "-1",
            "--format=%s",
            "--",
            "login.rs",
        ],
        vec!["rg", "-n", "--sort", "path", "fn"],
        // Not `ls -l`: under the sandbox the command runs as a non-root user, so files a root
        // tick sees as root's are shown with that user's name.
        vec!["ls", "-1F", "src"],
        vec!["find", ".", "-name", "*.rs"],
        vec![
            "cargo",
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ],
        vec!["wc", "-l", "src/main.rs", "src/login.rs"],
        vec!["head", "-n", "1", "src/login.rs"],
        vec!["tail", "-n", "1", "src/login.rs"],
        vec!["cat", "Cargo.toml"],
        vec!["file", "src/main.rs"],
        vec!["stat", "-c", "%s %n", "src/main.rs"],
        vec!["tree", "src"],
        vec!["grep", "-rn", "login", "src"],
        vec!["pwd"],
    ];
    // git, cargo and coreutils are what the README asks for; the others are optional.
    cases.retain(|argv| {
        !["rg", "tree", "file"].contains(&argv[0])
            || programs::or_skip(
                programs::runnable_by_tick(argv[0]),
                argv[0],
                &format!("the case {argv:?}"),
            )
    });
    let expected: Vec<String> = cases
        .iter()
        .map(|argv| direct(project.root(), argv))
        .collect();

    let server = FakeModel::start().await;
    let calls: Vec<Value> = cases.iter().map(|argv| json!({"argv": argv})).collect();
    server.push(run_command_calls(&calls));
    server.push(openai_call("call_plan", "submit_plan", login_plan()));
    let output = project
        .tick_with(&server, &["plan", "--json", "Refactor login"], |cmd| {
            cmd.envs(rust_homes());
        })
        .await;
    assert_success(&output);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    for (i, argv) in cases.iter().enumerate() {
        let result = &results[&format!("call_{i}")];
        let want = format!("{}exit code 0, ", expected[i]);
        assert!(
            result.starts_with(&want),
            "{argv:?}:\n--- tick\n{result}\n--- direct\n{}",
            expected[i]
        );
    }
    assert!(!project.path("Cargo.lock").exists());

    // The evidence: each call and its exit code in the --json events and the transcript.
    let events = json_events(&output);
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_call" && e["name"] == "run_command")
        .collect();
    assert_eq!(calls.len(), cases.len());
    assert_eq!(calls[0]["detail"], "git log -5 --stat");
    let exits: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_result" && e["name"] == "run_command")
        .map(|e| &e["exit_code"])
        .collect();
    assert_eq!(exits.len(), cases.len());
    assert!(exits.iter().all(|code| **code == 0), "{exits:?}");
    let transcript = project.read(".tasks/draft/session.jsonl");
    assert_contains(&transcript, r#""argv":["git","log","-5","--stat"]"#);
    assert!(transcript.contains("exit code 0, "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_command_and_a_refusal_are_tool_errors_with_exit_codes() {
    if !sandbox_here() {
        return;
    }
    let project = Workspace::sample();
    let first = openai_calls(&[
        ("call_1", "run_command", json!({"argv": ["ls", "missing"]})),
        ("call_2", "run_command", json!({"argv": ["git", "push"]})),
        (
            "call_3",
            "run_command",
            json!({"argv": ["ls", "-1"], "cwd": "src", "timeout_s": 5}),
        ),
    ]);
    let second = openai_call("call_plan", "submit_plan", login_plan());
    let (events, server) = planned_json(&project, [first, second]).await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_result")
        .collect();
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["exit_code"], 2);
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1].get("exit_code").is_none(), "{}", results[1]);
    let request = &server.requests()[1];
    let results = tool_results(request);
    assert_contains(&results["call_1"], "exit code 2, ");
    // `cwd` holds inside the sandbox too.
    assert_starts_with(&results["call_3"], "login.rs\nmain.rs\nexit code 0, ");
    assert_starts_with(
        &results["call_2"],
        "`git push` is not allowed: run_command only reads",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_extends_the_table() {
    if !sandbox_here() {
        return;
    }
    let project = Workspace::sample();
    // The person's own file (`HOME` is the project here): a repository's may not add.
    project
        .write_user_config("run_command:\n  allow:\n    - {program: date, reject: [--set, -s]}\n");
    let first = openai_calls(&[
        (
            "call_1",
            "run_command",
            json!({"argv": ["date", "-u", "-d", "@0", "+%Y"]}),
        ),
        (
            "call_2",
            "run_command",
            json!({"argv": ["date", "--se=2000-01-01"]}),
        ),
    ]);
    let second = openai_call("call_plan", "submit_plan", login_plan());
    let (output, server) = scripted(&project, [first, second], &["plan", "Refactor login"]).await;
    assert_success(&output);
    let requests = server.requests();
    let description = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "run_command")
        .map(|t| t["function"]["description"].as_str().unwrap().to_owned())
        .unwrap();
    assert_contains(&description, "cargo (metadata, tree), date.");
    let results = tool_results(&requests[1]);
    assert_starts_with(&results["call_1"], "1970\nexit code 0, ");
    assert_starts_with(
        &results["call_2"],
        "`--se=2000-01-01` (read as `--set`) is refused for `date`",
    );
}

/// The model is offered `run_command` only when the read-only sandbox works here, which the
/// other tests rely on; this test pins that it is offered on this machine.
/// Where the read-only sandbox cannot be set up (no `/proc`, so tick cannot start its
/// helper), the planner plans without `run_command`, and tick says so once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_the_planner_is_not_offered_run_command() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    for json in [false, true] {
        server.push(openai_call(
            "call_1",
            "run_command",
            json!({"argv": ["find", ".", "-delete"]}),
        ));
        server.push(openai_call("call_plan", "submit_plan", login_plan()));
        let asked = server.requests().len();
        let mut args = vec!["plan", "--force", "Refactor login"];
        if json {
            args.insert(1, "--json");
        }
        let base = project.command(&format!("{}/v1", server.url()), &[]);
        let tick = env!("CARGO_BIN_EXE_tick");
        let mut wrapped = Command::new("unshare");
        wrapped
            .args(["-Urm", "sh", "-c"])
            .arg(format!("mount -t tmpfs none /proc && exec {tick} \"$@\""))
            .arg("sh")
            .args(&args)
            .current_dir(project.root())
            .env_clear()
            .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let output = tokio::task::spawn_blocking(move || wrapped.output().unwrap())
            .await
            .unwrap();
        assert_success(&output);
        let requests = server.requests();
        assert!(
            !requests[asked]
                .tool_names()
                .contains(&"run_command".to_owned())
        );
        let result = &tool_results(&requests[asked + 1])["call_1"];
        assert_starts_with(
            result,
            "`run_command` is not available in this planning run",
        );
        assert!(project.path("src/main.rs").exists());
        let err = stderr(&output);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let warning = "warning: the planner plans without `run_command` (git log, blame, ls...): ";
        if json {
            let mut lines = stdout.lines();
            let first: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(first["event"], "plan_started", "{stdout}");
            assert_eq!(first["format"], 1, "{stdout}");
            let event: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(event["event"], "run_command_unavailable", "{stdout}");
            assert!(event["reason"].as_str().unwrap().contains("sandbox"));
            assert!(!err.contains(warning), "{err}");
        } else {
            assert_eq!(err.matches(warning).count(), 1, "{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_offers_run_command_under_the_sandbox() {
    if !sandbox_here() {
        return;
    }
    let project = Workspace::sample();
    let first = openai_call("call_plan", "submit_plan", login_plan());
    let (output, server) = scripted(&project, [first], &["plan", "Refactor login"]).await;
    assert_success(&output);
    let names = server.requests()[0].tool_names();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "search_files",
            "run_command",
            "submit_plan",
            "ask_user"
        ]
    );
    assert!(!stderr(&output).contains("without `run_command`"));
}
