//! tick's own git against a repository the agent (or a hostile clone) prepared: a submodule's
//! `.git` file pointed at a git directory with a filter, a nested repository under
//! `--commit`, a `git` of the agent's on a relative `PATH` entry, file names that are
//! pathspec magic. Each attack is first shown to work on plain git, then shown to run
//! nothing (and commit nothing it should not) through tick.
//!
//! The library-level tests run in this test binary, which is not tick: the sandbox helper
//! cannot be this binary, so `Jail::current()` is the settings alone here (guard 1 on its
//! own), and the tests that want the sandbox name tick's binary as the helper.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use tick::git::{self, CommitError, Jail};
use tick::runner::changes;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_call, openai_calls};
use crate::common::workspace::git as test_git;
use crate::common::workspace::{Workspace, stderr};

const TICK: &str = env!("CARGO_BIN_EXE_tick");

/// A temp directory with `repo/` (one commit) and `ran/`, where a planted program leaves a
/// file each time it runs.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("repo")).unwrap();
        fs::create_dir_all(dir.path().join("ran")).unwrap();
        let scene = Scene { dir };
        fs::write(scene.root().join("README.md"), "readme\n").unwrap();
        test_git(&scene.root(), &["init", "-q"]);
        test_git(&scene.root(), &["add", "."]);
        test_git(&scene.root(), &["commit", "-q", "-m", "init"]);
        scene
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// Writes an executable script at `path` that records `$1` in `ran/` and passes stdin
    /// through (as a filter must).
    fn evil_script(&self, path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(
            path,
            format!(
                "#!/bin/sh\ntouch \"{}/$1-$$\"\ncat\n",
                self.dir.path().join("ran").display()
            ),
        )
        .unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// What ran, then forgets it.
    fn ran(&self) -> Vec<String> {
        let ran = self.dir.path().join("ran");
        let mut names: Vec<String> = fs::read_dir(&ran)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for name in &names {
            fs::remove_file(ran.join(name)).unwrap();
        }
        names.sort();
        names
    }

    fn head(&self) -> String {
        test_git(&self.root(), &["rev-parse", "HEAD"])
    }

    /// Marks every file under `dir` changed in time only, so git must read it again (through
    /// its filter).
    fn touch_later(dir: &Path) {
        std::thread::sleep(std::time::Duration::from_millis(1100));
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_file() {
                let text = fs::read(&path).unwrap();
                fs::write(&path, text).unwrap();
            }
        }
    }
}

fn sandbox() -> Jail {
    Jail::Sandbox {
        helper: Some(PathBuf::from(TICK)),
    }
}

/// Plain git, with nothing configured outside the repository, as a person would run it.
fn plain_git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap()
}

/// A submodule `lib`, then what the agent does: `lib/.git` (a file in the workspace) pointed
/// at `lib/.evil`, a copy of the submodule's git directory with a clean filter, and
/// `lib/.gitattributes` naming it for every file.
fn planted_submodule(scene: &Scene) {
    let source = scene.dir.path().join("libsrc");
    fs::create_dir_all(&source).unwrap();
    fs::write(source.join("a.txt"), "a\n").unwrap();
    test_git(&source, &["init", "-q"]);
    test_git(&source, &["add", "."]);
    test_git(&source, &["commit", "-q", "-m", "lib"]);
    let root = scene.root();
    test_git(
        &root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &source.to_string_lossy(),
            "lib",
        ],
    );
    test_git(&root, &["commit", "-q", "-m", "submodule"]);
    let lib = root.join("lib");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(root.join(".git/modules/lib"))
        .arg(lib.join(".evil"))
        .status()
        .unwrap();
    assert!(copied.success());
    fs::write(lib.join(".git"), "gitdir: .evil\n").unwrap();
    let script = lib.join(".evil/f.sh");
    scene.evil_script(&script);
    let config = lib.join(".evil/config");
    for (key, value) in [
        ("core.worktree", ".."),
        ("filter.x.clean", &format!("{} clean", script.display())),
        ("filter.x.smudge", &format!("{} smudge", script.display())),
    ] {
        test_git(
            &root,
            &["config", "--file", &config.to_string_lossy(), key, value],
        );
    }
    fs::write(lib.join(".gitattributes"), "* filter=x\n").unwrap();
    Scene::touch_later(&lib);
}

/// Issue 17, item 1: tick's `git status` after a command recursed into `lib` and ran the
/// agent's filter outside the sandbox.
#[test]
fn ticks_status_runs_no_filter_planted_through_a_submodule() {
    let scene = Scene::new();
    planted_submodule(&scene);
    let root = scene.root();
    // The attack is real: a plain `git status` runs the filter.
    plain_git(&root, &["status", "--porcelain"]);
    assert!(!scene.ran().is_empty(), "the planted filter did not run");
    Scene::touch_later(&root.join("lib"));

    let dirty = changes::dirty_files(&root).unwrap();
    assert_eq!(scene.ran(), Vec::<String>::new());
    // The submodule is not looked into at all: nothing of it is listed.
    assert!(dirty.keys().all(|p| !p.starts_with("lib")), "{dirty:?}");
    for jail in [Jail::SettingsOnly, sandbox()] {
        let status = git::output_in(&jail, &root, &["status", "--porcelain=v1", "-z"]);
        assert!(status.is_some(), "{jail:?}");
        let mut diff = vec!["diff", "HEAD"];
        diff.extend(git::INERT_DIFF_FLAGS);
        assert!(git::output_in(&jail, &root, &diff).is_some(), "{jail:?}");
        assert_eq!(scene.ran(), Vec::<String>::new(), "{jail:?}");
    }
    // Nor is it ever committed as a changed gitlink.
    let head = scene.head();
    let err =
        git::commit_paths_in(&Jail::SettingsOnly, &root, &["lib".to_owned()], "x").unwrap_err();
    assert_eq!(
        err,
        CommitError::NestedRepository {
            paths: vec!["lib".to_owned()]
        }
    );
    assert_eq!(scene.head(), head);
    assert_eq!(scene.ran(), Vec::<String>::new());
}

/// Issue 17, item 2: under `--commit`, `git add` recorded a nested repository as a gitlink
/// (mode 160000), and from then on item 1 applied.
#[test]
fn a_nested_repository_is_named_and_never_committed() {
    let scene = Scene::new();
    let root = scene.root();
    let nested = root.join("vendor/x");
    fs::create_dir_all(&nested).unwrap();
    fs::write(nested.join("x.txt"), "x\n").unwrap();
    test_git(&nested, &["init", "-q"]);
    test_git(&nested, &["add", "."]);
    test_git(&nested, &["commit", "-q", "-m", "x"]);
    let script = root.join("vendor/x/.git/f.sh");
    scene.evil_script(&script);
    test_git(
        &nested,
        &[
            "config",
            "filter.y.clean",
            &format!("{} clean", script.display()),
        ],
    );
    fs::write(nested.join(".gitattributes"), "* filter=y\n").unwrap();
    fs::write(root.join("made.txt"), "made\n").unwrap();
    let head = scene.head();

    // What git status shows for it, and a path inside it: both refused, before any staging.
    for paths in [
        vec!["made.txt".to_owned(), "vendor/x/".to_owned()],
        vec!["vendor/x/x.txt".to_owned()],
    ] {
        let err = git::commit_paths(&root, &paths, "step").unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("nested git repository") && message.contains("`vendor/x`"),
            "{message}"
        );
        assert_eq!(scene.head(), head);
        let staged = test_git(&root, &["diff", "--cached", "--name-only"]);
        assert_eq!(staged, "", "something was staged");
    }
    assert_eq!(scene.ran(), Vec::<String>::new());
    assert_eq!(
        git::nested_repositories(&root, &["vendor/x/".to_owned(), "made.txt".to_owned()]),
        ["vendor/x"]
    );
}

/// Issue 17, item 4: a file named `:` made `git add --all -- :` add everything (the person's
/// uncommitted edit and an untracked secret); `:(attr:x)*` made the commit fail.
#[test]
fn file_names_that_look_like_pathspec_magic_are_committed_literally() {
    for name in [":", ":(attr:x)*", ":!README.md", "*"] {
        let scene = Scene::new();
        let root = scene.root();
        fs::write(root.join("README.md"), "the person's edit\n").unwrap();
        fs::write(root.join("personal-secrets.env"), "TOKEN=x\n").unwrap();
        fs::write(root.join(name), "made by the step\n").unwrap();
        git::commit_paths(&root, &[name.to_owned()], "step")
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let committed = test_git(&root, &["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(committed.trim_end(), name, "{name}");
        let status = test_git(&root, &["status", "--porcelain"]);
        assert!(status.contains("M README.md"), "{name}: {status:?}");
        assert!(
            status.contains("?? personal-secrets.env"),
            "{name}: {status}"
        );
    }
}

/// A commit in the sandbox that may write only the git directory, with the work tree (under
/// `/tmp`, hidden by the sandbox's private `/tmp` unless kept) read from where it is; and the
/// read-only sandbox really is around tick's other git calls: a write is refused.
#[test]
fn commits_run_in_the_sandbox_that_writes_only_the_git_directory() {
    let scene = Scene::new();
    let root = scene.root();
    fs::write(root.join("made.txt"), "made\n").unwrap();
    let head = scene.head();
    git::commit_paths_in(&sandbox(), &root, &["made.txt".to_owned()], "step").unwrap();
    assert_ne!(scene.head(), head);
    let committed = test_git(&root, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert_eq!(committed.trim_end(), "step\n\nmade.txt");

    assert!(git::output_in(&sandbox(), &root, &["config", "x.y", "z"]).is_none());
    assert!(git::output_in(&Jail::SettingsOnly, &root, &["config", "x.y", "z"]).is_some());
    assert!(git::output_in(&sandbox(), &root, &["config", "x.y"]).is_some());
}

/// A filter whose name holds `=` is switched off too: `-c filter.a=b.clean=` would be read by
/// git as the key `filter.a` with the value `b.clean=`.
#[test]
fn a_filter_named_with_an_equals_sign_is_switched_off() {
    let scene = Scene::new();
    let root = scene.root();
    let script = scene.dir.path().join("f.sh");
    scene.evil_script(&script);
    fs::write(root.join(".gitattributes"), "*.txt filter=a=b\n").unwrap();
    fs::write(root.join("x.txt"), "x\n").unwrap();
    test_git(&root, &["add", "."]);
    test_git(&root, &["commit", "-q", "-m", "attrs"]);
    test_git(
        &root,
        &[
            "config",
            "filter.a=b.clean",
            &format!("{} clean", script.display()),
        ],
    );
    test_git(&root, &["config", "filter.a=b.required", "true"]);
    Scene::touch_later(&root);
    fs::write(root.join("y.txt"), "y\n").unwrap();
    plain_git(&root, &["-c", "filter.a=b.clean=", "status", "--porcelain"]);
    assert!(
        !scene.ran().is_empty(),
        "`-c` should not have stopped the filter"
    );
    Scene::touch_later(&root);
    let dirty = changes::dirty_files(&root).unwrap();
    assert!(dirty.contains_key("y.txt"), "{dirty:?}");
    git::commit_paths(&root, &["y.txt".to_owned()], "step").unwrap();
    assert_eq!(scene.ran(), Vec::<String>::new());
}

// End to end: `tick run` with the fake model, whose `bash` plants the attack.

const PLAN: &str = "# Guarded

## Summary
Do one thing; the second can never pass.

## Steps
- [ ] S1 Make a file
  - files: made.txt, lib, f.sh.in, git.in, node_modules
  - verify: `test -f made.txt`
- [ ] S2 Never done
  - verify: `false`
";

/// A script that ticks S2 in the task's TODO.md and leaves a file in `ran`, then passes
/// stdin through: what a planted filter or `git` would do.
fn ticking_script(project: &Workspace, ran: &Path, id: &str) -> String {
    format!(
        "#!/bin/sh\ntouch '{ran}/ran-'$$\nsed -i 's/^- \\[ \\] S2/- [x] S2/' '{todo}'\ncat\n",
        ran = ran.display(),
        todo = project.path(&format!(".tasks/{id}/TODO.md")).display()
    )
}

async fn run_with_plant(project: &Workspace, server: &FakeModel, plant: &str, path: &str) {
    server.push(openai_calls(&[
        ("plant", "bash", json!({"command": plant, "timeout_s": 20})),
        (
            "make",
            "write_file",
            json!({"path": "made.txt", "content": "made\n"}),
        ),
    ]));
    server.push(claims_done("done", "S1", Some("made")));
    server.push(openai_call(
        "block",
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": "cannot pass"}),
    ));
    let output = project
        .tick_with(server, &["run"], |cmd| {
            cmd.env("PATH", path);
        })
        .await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
}

fn assert_s2_open(project: &Workspace, id: &str, ran: &Path) {
    let todo = project.todo(id);
    assert!(todo.contains("- [x] S1"), "{todo}");
    assert!(!todo.contains("- [x] S2"), "S2 was ticked:\n{todo}");
    let ran: Vec<_> = fs::read_dir(ran).unwrap().flatten().collect();
    assert!(ran.is_empty(), "a planted program ran {} times", ran.len());
}

/// Issue 17, item 1 end to end: the agent's `bash` points the submodule's `.git` at a git
/// directory with a filter that ticks S2; tick's status after the command must not run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_planted_in_a_submodule_does_not_tick_a_step() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let source = tempfile::tempdir().unwrap();
    fs::write(source.path().join("a.txt"), "a\n").unwrap();
    test_git(source.path(), &["init", "-q"]);
    test_git(source.path(), &["add", "."]);
    test_git(source.path(), &["commit", "-q", "-m", "lib"]);
    project.add_submodule(&source.path().to_string_lossy(), "lib");
    project.git(&["commit", "-q", "-m", "submodule"]);
    let id = project.approve_plan(&server, PLAN).await;
    let ran = tempfile::tempdir().unwrap();
    fs::write(
        project.path("f.sh.in"),
        ticking_script(&project, ran.path(), &id),
    )
    .unwrap();
    let plant = "cp -r .git/modules/lib lib/.evil && mv f.sh.in lib/.evil/f.sh && \
                 chmod +x lib/.evil/f.sh && printf 'gitdir: .evil\\n' > lib/.git && \
                 git config --file lib/.evil/config core.worktree .. && \
                 git config --file lib/.evil/config filter.x.clean \"$PWD/lib/.evil/f.sh\" && \
                 printf '* filter=x\\n' > lib/.gitattributes && sleep 1.1 && \
                 echo a > lib/a.txt && echo planted";
    let path = std::env::var("PATH").unwrap_or_default();
    run_with_plant(&project, &server, plant, &path).await;
    assert_s2_open(&project, &id, ran.path());
}

/// Issue 17, item 3: with `PATH=node_modules/.bin:/usr/bin:/bin` (an npm script's), a
/// `node_modules/.bin/git` the agent wrote became tick's git.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_on_a_relative_path_entry_is_not_ticks_git() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    let ran = tempfile::tempdir().unwrap();
    let script =
        ticking_script(&project, ran.path(), &id).replace("cat\n", "exec /usr/bin/git \"$@\"\n");
    fs::write(project.path("git.in"), script).unwrap();
    let plant = "mkdir -p node_modules/.bin && mv git.in node_modules/.bin/git && \
                 chmod +x node_modules/.bin/git && echo planted";
    let path = format!(
        "node_modules/.bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    run_with_plant(&project, &server, plant, &path).await;
    assert_s2_open(&project, &id, ran.path());
}
