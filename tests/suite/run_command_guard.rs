//! `run_command`'s argv guard, end to end (issue 17, items 12-15): the real binary planning in
//! a real repository under the read-only sandbox, the fake model calling the tool. Reads
//! outside the workspace from an argv alone are refused, a separate `/value` is a value, the
//! allow-list approves no ref creation, `cargo tree` says what it needs, and a repository's
//! `.tasks/config.yaml` cannot widen the table.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::fake_model::FakeModel;
use crate::common::programs::rust_homes;
use crate::common::scripts::{login_plan, openai_call, run_command_calls, submit_login_plan};
use crate::common::text::assert_starts_with;
use crate::common::workspace::{Workspace, assert_success, json_events, scripted, stderr};

const SECRET: &str = "secret-outside-4e9b";

/// Whether the read-only sandbox runs here (see `run_command.rs`).
fn sandbox_here() -> bool {
    std::env::var("TICK_TEST_NO_SANDBOX").map_or(true, |v| v != "1")
}

/// `git` in `dir`, nothing configured outside; panics if it fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Plans once with the model calling `run_command` with each of `argvs` (as `{argv, cwd?}`
/// objects); returns each call's result text and whether it was an error.
async fn run_all(project: &Workspace, calls: &[Value]) -> Vec<(String, bool)> {
    let server = FakeModel::start().await;
    server.push(run_command_calls(calls));
    server.push(openai_call("call_plan", "submit_plan", login_plan()));
    let output = project
        .tick_with(
            &server,
            &["plan", "--json", "--force", "Refactor login"],
            |cmd| {
                cmd.envs(rust_homes());
            },
        )
        .await;
    assert_success(&output);
    let events = json_events(&output);
    let errors: Vec<bool> = events
        .iter()
        .filter(|e| e["event"] == "tool_result" && e["name"] == "run_command")
        .map(|e| e["is_error"] == true)
        .collect();
    let results: BTreeMap<String, String> =
        server.requests()[1].tool_results().into_iter().collect();
    (0..calls.len())
        .map(|i| (results[&format!("call_{i}")].clone(), errors[i]))
        .collect()
}

/// A project beside a directory it must not read (a file and a repository holding
/// `SECRET`), with the doors issue 17 found: a link up from `sub`, a gitfile and a bare
/// repository pointing out, and `blame.ignoreRevsFile` naming the outside file.
fn beside() -> (Workspace, tempfile::TempDir) {
    let project = Workspace::sample();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path();
    fs::write(out.join("outside.txt"), format!("{SECRET}\n")).unwrap();
    fs::create_dir_all(out.join("other")).unwrap();
    fs::write(out.join("other/s.txt"), format!("{SECRET}\n")).unwrap();
    git(&out.join("other"), &["init", "-q"]);
    git(&out.join("other"), &["add", "."]);
    git(&out.join("other"), &["commit", "-q", "-m", SECRET]);
    project.write("sub/a.txt", "a\n");
    project.write("api.txt", "GET /api/login\n");
    std::os::unix::fs::symlink(out, project.path("sub/up")).unwrap();
    project.write(
        "gf/.git",
        format!("gitdir: {}\n", out.join("other/.git").display()),
    );
    git(project.root(), &["init", "-q", "--bare", "evil.git"]);
    let worktree = out.display().to_string();
    for (key, value) in [("core.bare", "false"), ("core.worktree", worktree.as_str())] {
        git(
            project.root(),
            &["--git-dir=evil.git", "config", key, value],
        );
    }
    let revs = out.join("outside.txt").display().to_string();
    project.git(&["config", "blame.ignoreRevsFile", &revs]);
    project.write(".gitignore", "target/\n.tasks/\n");
    project.git(&["add", "sub/a.txt", "api.txt", ".gitignore"]);
    project.git(&["commit", "-q", "-m", "document /api/ login"]);
    (project, outside)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_outside_from_an_argv_are_refused_under_the_sandbox() {
    if !sandbox_here() {
        return;
    }
    let (project, outside) = beside();
    let refused = [
        json!({"argv": ["git", "-C", "sub", "-C", "up", "grep", "--no-index", SECRET]}),
        json!({"argv": ["git", "-C", "sub", "diff", "--no-index", "up/outside.txt", "a.txt"]}),
        json!({"argv": ["git", "blame", "--contents=sub/up/outside.txt", "api.txt"]}),
        json!({"argv": ["git", "blame", "--cont", "sub/up/outside.txt", "api.txt"]}),
        json!({"argv": ["git", "blame", "-wSsub/up/outside.txt", "api.txt"]}),
        json!({"argv": ["file", "-kfsub/up/outside.txt"]}),
        json!({"argv": ["file", "--files=sub/up/outside.txt"]}),
        json!({"argv": ["wc", "--files0=sub/up/outside.txt"]}),
        json!({"argv": ["tree", "-H", ".", "--hintro=sub/up/outside.txt"]}),
        json!({"argv": ["rg", "--files", "up"], "cwd": "sub"}),
        json!({"argv": ["git", "-C", "gf", "log", "-p"]}),
        json!({"argv": ["git", "log", "-p"], "cwd": "gf"}),
        json!({"argv": ["git", "--git-dir=evil.git", "grep", "--untracked", SECRET]}),
    ];
    let results = run_all(&project, &refused).await;
    for ((text, is_error), call) in results.iter().zip(&refused) {
        assert!(is_error, "{call}: {text}");
        assert!(!text.contains(SECRET), "{call}: {text}");
        assert!(!text.contains("exit code"), "{call} ran: {text}");
    }
    assert!(outside.path().join("outside.txt").exists());

    // What reads only the workspace still runs, the outside file named by the repository's
    // `blame.ignoreRevsFile` unread.
    let allowed = [
        json!({"argv": ["git", "blame", "api.txt"]}),
        json!({"argv": ["git", "-C", "sub", "log", "--oneline"]}),
        json!({"argv": ["git", "log", "--grep", "/api/", "--format=%s"]}),
        json!({"argv": ["grep", "-n", "-e", "/api/", "api.txt"]}),
        json!({"argv": ["git", "grep", "-n", "-e", "/api/"]}),
    ];
    let results = run_all(&project, &allowed).await;
    for ((text, is_error), call) in results.iter().zip(&allowed) {
        assert!(!is_error, "{call}: {text}");
        assert!(!text.contains(SECRET), "{call}: {text}");
    }
    assert_starts_with(&results[2].0, "document /api/ login\nexit code 0, ");
    assert_starts_with(&results[3].0, "1:GET /api/login\nexit code 0, ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branch_and_tag_create_nothing_and_cargo_tree_says_what_it_needs() {
    if !sandbox_here() {
        return;
    }
    let project = Workspace::sample();
    let calls = [
        json!({"argv": ["git", "branch", "--format", "--list", "made"]}),
        json!({"argv": ["git", "tag", "--sort", "--list", "v9"]}),
        json!({"argv": ["git", "branch", "--contains", "-l", "made2"]}),
        json!({"argv": ["git", "branch", "--format=%(refname:short)", "--list", "zz*"]}),
        json!({"argv": ["cargo", "tree"]}),
    ];
    let results = run_all(&project, &calls).await;
    for (text, is_error) in &results[..3] {
        assert!(is_error, "{text}");
        assert!(text.contains("needs its value after `=`"), "{text}");
    }
    assert!(!results[3].1, "{:?}", results[3]);
    assert_starts_with(&results[3].0, "(no output)\nexit code 0, ");
    assert_eq!(project.git(&["branch", "--list", "made*"]), "");
    assert_eq!(project.git(&["tag", "--list"]), "");
    assert!(results[4].1);
    assert_starts_with(
        &results[4].0,
        "`cargo tree` needs a `Cargo.lock`, and there is none for `Cargo.toml`",
    );
    assert!(!project.path("Cargo.lock").exists());

    // With a lock file it runs, offline and locked, under the read-only sandbox.
    let lock = std::process::Command::new("cargo")
        .args(["generate-lockfile", "--offline"])
        .current_dir(project.root())
        .output()
        .unwrap();
    assert!(lock.status.success(), "{lock:?}");
    let results = run_all(&project, &[json!({"argv": ["cargo", "tree"]})]).await;
    assert_starts_with(&results[0].0, "app v0.1.0 (");
    assert!(!results[0].1, "{:?}", results[0]);
}

/// Issue 17, item 13 (and issue 25): an untrusted repository's `.tasks/config.yaml` adds
/// nothing to the allow-list, and says so in one warning; the person's own file does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_persons_config_adds_to_the_allow_list() {
    let project = Workspace::sample();
    project.write(
        ".tasks/config.yaml",
        "run_command:\n  allow:\n    - {program: sh}\n    - {program: git, subcommands: [config]}\n",
    );
    let (output, _server) =
        scripted(&project, [submit_login_plan()], &["plan", "Refactor login"]).await;
    let err = stderr(&output);
    assert_success(&output);
    assert!(
        err.contains(
            "warning: ignored `run_command.allow` `sh`, `run_command.allow` `git config` from \
             this repository (you have not trusted it); run `tick trust`"
        ),
        "{err}"
    );
    if sandbox_here() {
        let results = run_all(&project, &[json!({"argv": ["sh", "-c", "echo RAN"]})]).await;
        assert!(results[0].1, "{:?}", results[0]);
        assert!(!results[0].0.contains("RAN"), "{:?}", results[0]);
    }

    // Refusing more is fine there; adding is the person's, in their own file.
    project.write(
        ".tasks/config.yaml",
        "run_command:\n  allow:\n    - {program: git, reject: [--follow]}\n",
    );
    project.write_user_config("run_command:\n  allow:\n    - {program: date}\n");
    if !sandbox_here() {
        return;
    }
    let results = run_all(
        &project,
        &[
            json!({"argv": ["date", "-u", "-d", "@0", "+%Y"]}),
            json!({"argv": ["git", "log", "--follow", "src/main.rs"]}),
        ],
    )
    .await;
    assert_starts_with(&results[0].0, "1970\nexit code 0, ");
    assert!(results[1].1);
    assert_starts_with(
        &results[1].0,
        "`--follow` is refused for `git log`: the configuration refuses it",
    );
}
