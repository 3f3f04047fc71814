//! Opt-in: `tick plan` against a real model server nobody here wrote (for instance the
//! llama-server of `scripts/local-model.sh start`). Skipped, with the reason printed, unless
//! `TICK_REAL_MODEL_URL` is set, so the default run never needs a model:
//!
//! ```text
//! scripts/local-model.sh start
//! TICK_REAL_MODEL_URL=http://127.0.0.1:8080/v1 cargo test --locked --test all real_model -- --nocapture
//! ```
//!
//! Whatever the model says, the test asserts what tick promises: the plan ends within a bound,
//! tick does not panic, it leaves either a valid draft or an error that says what went wrong,
//! it writes nothing outside `.tasks/` while planning, and every file under `.tasks/` parses.
//! `TICK_REAL_MODEL` (default `local`), `TICK_REAL_MODEL_PROVIDER` (default `llamacpp`) and
//! `TICK_REAL_MODEL_TIMEOUT_S` (default 900) adjust it.

#![allow(
    clippy::print_stderr,
    reason = "an opt-in test says why it skipped, and what the model did"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tick::tasks::{plan_md, todo_md};

use crate::common::workspace::git;

const GOAL: &str =
    "Add a --version flag to wordcount that prints the package name and version from Cargo.toml";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wordcount")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `root` but `.git/` and `.tasks/`, with its content.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel == Path::new(".git") || rel == Path::new(".tasks") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, into);
            } else {
                into.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(root, root, &mut files);
    files
}

/// Parses every file under `.tasks/` by its kind; returns what failed.
fn unparsable_task_files(tasks: &Path) -> Vec<String> {
    fn walk(dir: &Path, failures: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, failures);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let Ok(text) = std::fs::read_to_string(&path) else {
                failures.push(format!("{}: not UTF-8", path.display()));
                continue;
            };
            let problem = if name == "PLAN.md" {
                plan_md::parse(&text).err().map(|e| format!("{e:?}"))
            } else if name == "TODO.md" {
                todo_md::parse(&text).err().map(|e| format!("{e:?}"))
            } else if ext == "yaml" {
                serde_yaml::from_str::<serde_yaml::Value>(&text)
                    .err()
                    .map(|e| e.to_string())
            } else if ext == "jsonl" {
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .find_map(|l| serde_json::from_str::<serde_json::Value>(l).err())
                    .map(|e| e.to_string())
            } else {
                None
            };
            if let Some(problem) = problem {
                failures.push(format!("{}: {problem}", path.display()));
            }
        }
    }
    let mut failures = Vec::new();
    walk(tasks, &mut failures);
    failures
}

fn tick(root: &Path, url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tick"));
    cmd.args(args)
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join(".home"))
        .env(
            "TICK_PROVIDER",
            std::env::var("TICK_REAL_MODEL_PROVIDER").unwrap_or_else(|_| "llamacpp".to_owned()),
        )
        .env("TICK_BASE_URL", url)
        .env(
            "TICK_MODEL",
            std::env::var("TICK_REAL_MODEL").unwrap_or_else(|_| "local".to_owned()),
        )
        .env("TICK_INTERACTIVE", "0")
        .env("NO_COLOR", "1");
    cmd
}

/// Runs `cmd`, killing it if it is not done within `limit`; `None` when it was killed.
fn output_within(mut cmd: Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
fn a_real_model_plans_within_bounds_and_leaves_files_that_parse() {
    let Ok(url) = std::env::var("TICK_REAL_MODEL_URL") else {
        eprintln!(
            "skipped: TICK_REAL_MODEL_URL is not set (start a server with \
             `scripts/local-model.sh start` and set it to http://127.0.0.1:8080/v1)"
        );
        return;
    };
    let limit = Duration::from_secs(
        std::env::var("TICK_REAL_MODEL_TIMEOUT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(900),
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_tree(&fixture(), root);
    std::fs::create_dir_all(root.join(".home")).unwrap();
    std::fs::write(root.join(".gitignore"), ".home/\ntarget/\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "wordcount 0.3.1"]);
    let before = snapshot(root);

    let started = Instant::now();
    let plan = output_within(tick(root, &url, &["plan", "--json", GOAL]), limit);
    let elapsed = started.elapsed();
    let plan = plan.unwrap_or_else(|| panic!("`tick plan` did not end within {limit:?}"));
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let stderr = String::from_utf8_lossy(&plan.stderr);
    let turns = stdout
        .lines()
        .filter(|l| l.contains(r#""event":"request""#))
        .count();
    eprintln!(
        "tick plan: exit {:?} after {elapsed:.0?}, {turns} requests\n--- stderr ---\n{stderr}",
        plan.status.code()
    );

    let code = plan.status.code();
    assert!(
        code.is_some(),
        "tick was killed by a signal: {:?}",
        plan.status
    );
    assert_ne!(code, Some(101), "tick panicked:\n{stderr}");
    assert!(!stderr.contains("panicked at"), "tick panicked:\n{stderr}");

    if code == Some(0) {
        let show = output_within(tick(root, &url, &["show"]), Duration::from_secs(30)).unwrap();
        assert!(
            show.status.success(),
            "the draft does not show:\n{}",
            String::from_utf8_lossy(&show.stderr)
        );
        let draft = std::fs::read_to_string(root.join(".tasks/draft/PLAN.md")).unwrap();
        let draft = plan_md::parse(&draft).unwrap();
        let waiting = draft.phase() == Some(tick::plan::Phase::NeedsInput);
        assert!(
            waiting || !draft.steps.steps.is_empty(),
            "a draft with no steps:\n{}",
            draft.body
        );
    } else {
        // An error a person can act on: the `error:` line says what went wrong.
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_else(|| panic!("exit {code:?} with no `error:` line:\n{stderr}"));
        assert!(error.len() > "error: ".len() + 10, "a bare error: {error}");
    }

    assert_eq!(
        snapshot(root),
        before,
        "planning changed files outside .tasks/"
    );
    let failures = unparsable_task_files(&root.join(".tasks"));
    assert!(
        failures.is_empty(),
        "files under .tasks/ do not parse: {failures:#?}"
    );
    let status = output_within(tick(root, &url, &["status"]), Duration::from_secs(30)).unwrap();
    let status_err = String::from_utf8_lossy(&status.stderr);
    assert_ne!(
        status.status.code(),
        Some(101),
        "status panicked:\n{status_err}"
    );
    assert!(
        status.status.success() || status_err.lines().any(|l| l.starts_with("error:")),
        "status failed without an error line:\n{status_err}"
    );
}
