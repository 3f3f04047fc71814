//! A throwaway workspace for driving the real `tick` binary: a temp git repository with one
//! commit made with a fixed author and date, and a `tick` command that runs in it with a fixed
//! clock, no colour and none of the caller's `TICK_*` variables.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use tempfile::TempDir;

/// The clock every command sees unless a test says otherwise.
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
}

/// What a finished command printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
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

    /// A plain directory, not a repository.
    pub fn bare() -> Workspace {
        let dir = tempfile::Builder::new()
            .prefix("tick-test")
            .tempdir()
            .unwrap();
        // Canonical, so paths the binary prints can be filtered by prefix.
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("repo");
        let home = base.join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        Workspace { dir, root, home }
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

    /// `tick` in the workspace as a plain process, for tests that start several at once.
    pub fn tick_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("tick"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("TICK_") {
                cmd.env_remove(name);
            }
        }
        cmd.current_dir(&self.root)
            .env("TICK_NOW", NOW)
            .env("NO_COLOR", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env_remove("CLICOLOR_FORCE")
            // Help text wraps at the terminal's width: fix it, so snapshots do not depend on
            // the shell the tests run from.
            .env("COLUMNS", "100");
        // A machine without the sandbox runs the suite only when told so explicitly.
        if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
            cmd.env("TICK_SANDBOX", "off");
        }
        cmd
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
        let before = self.task_ids();
        let run = self.run_stdin(&["plan", "--from", "-"], plan);
        assert_eq!(run.code, 0, "plan --from -: {run:#?}");
        self.ok(&["approve"]);
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
