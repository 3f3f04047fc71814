//! The little tick asks of git (which commit the workspace is on, what changed, a commit), run
//! so that nothing in the repository can make git execute anything.
//!
//! The agent's commands may have written the repository's configuration before (a cloned
//! hostile repository, or a run without the sandbox): `core.fsmonitor`, `core.pager`,
//! `diff.external` (see [`INERT_DIFF_FLAGS`]), hooks and the like would otherwise run with tick's environment, API key
//! included, and no timeout. So every git tick runs goes through [`command`]: the
//! [`INERT_CONFIG`] overrides on the command line (they win over every config file), a cleaned
//! environment (no `GIT_*` from outside but the author and committer identity, no system or
//! global config, no pager, no prompt, no credentials), stdin closed, its own process group,
//! and a timeout.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// `-c` overrides that keep git from running anything the repository configures: hooks,
/// the fsmonitor daemon, pagers, external diff and textconv drivers, editors, signing
/// programs, credential helpers, `ext::` transports; and from writing the untracked cache.
/// The same list is meant for the model's own `git` calls (plan mode's `run_command`), as
/// `git -c key=value …` in this order ([`inert_args`]).
pub const INERT_CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.attributesFile", "/dev/null"),
    ("diff.noprefix", "false"),
    ("color.ui", "false"),
    ("credential.helper", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("protocol.ext.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
];

/// Flags every `diff`, `log -p`, `show` and `blame` must carry: `diff.external` cannot be
/// switched off with `-c` (an empty value makes git try to run ""), only with
/// `--no-ext-diff`; textconv drivers likewise only with `--no-textconv`.
pub const INERT_DIFF_FLAGS: &[&str] = &["--no-ext-diff", "--no-textconv"];

/// How long one of tick's git calls may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Variables from outside that still reach git: who the author is, and when. Data, never code.
const PASSED_GIT_VARS: [&str; 6] = [
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
];

/// `-c key=value` for each of [`INERT_CONFIG`], to put before a git subcommand.
pub fn inert_args() -> Vec<String> {
    INERT_CONFIG
        .iter()
        .flat_map(|(key, value)| ["-c".to_owned(), format!("{key}={value}")])
        .collect()
}

/// The environment tick's git calls (and the model's, through `run_command`) start from,
/// given the variables they would otherwise inherit: no `GIT_*` but the identity, nothing
/// that looks like a credential, no system or global config, no pager, no prompt, no locks
/// that a read-only call would take.
pub fn inert_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            let git = name.starts_with("GIT_") && !PASSED_GIT_VARS.contains(&name.as_ref());
            let other = matches!(
                name.as_ref(),
                "PAGER" | "EDITOR" | "VISUAL" | "SSH_ASKPASS" | "SSH_AUTH_SOCK" | "XDG_CONFIG_HOME"
            );
            !git && !other && !crate::tools::bash::looks_secret(&name)
        })
        .collect();
    for (name, value) in [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_ASKPASS", "false"),
        ("SSH_ASKPASS", "false"),
    ] {
        env.push((name.into(), value.into()));
    }
    env
}

/// `git <INERT_CONFIG> <args>` in `root`, with the inert environment, stdin closed, in its
/// own process group. Spawn it with [`run`] for the timeout.
pub fn command(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .arg("--no-pager")
        .args(inert_args())
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(inert_env(std::env::vars_os()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}

/// Runs `command` (from [`command`]) to its end or [`TIMEOUT`], whichever comes first; on
/// timeout its whole process group is killed.
pub fn run(mut command: Command) -> io::Result<Output> {
    let mut child = command.spawn()?;
    drop(command);
    let stdout = read_in_thread(child.stdout.take());
    let stderr = read_in_thread(child.stderr.take());
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            kill_group(&mut child);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("git did not finish in {} s", TIMEOUT.as_secs()),
            ));
        }
        thread::sleep(Duration::from_millis(5));
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn read_in_thread(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        buf
    })
}

fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Stages `paths` and commits exactly them (other staged or changed files are left alone),
/// without running any hook (`--no-verify`, and no hooks directory at all).
pub fn commit_paths(root: &Path, paths: &[String], message: &str) -> Result<(), String> {
    let run_git = |args: Vec<&str>| -> Result<(), String> {
        let output =
            run(command(root, &args)).map_err(|err| format!("could not run git: {err}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`git {}` failed: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    let identity = identity(root);
    let mut add = vec!["add", "--all", "--"];
    add.extend(paths.iter().map(String::as_str));
    run_git(add)?;
    let mut commit: Vec<&str> = identity.iter().map(String::as_str).collect();
    commit.extend(["commit", "--quiet", "--no-verify", "-m", message, "--"]);
    commit.extend(paths.iter().map(String::as_str));
    run_git(commit)
}

/// `-c user.name=… -c user.email=…` as the person's own configuration says (the repository's,
/// else their global one), since the inert environment hides the global file. Reading a
/// value runs nothing.
fn identity(root: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for key in ["user.name", "user.email"] {
        let mut config = Command::new("git");
        config
            .args(["config", "--includes", "--get", key])
            .current_dir(root)
            .env_clear()
            .envs(
                inert_env(std::env::vars_os())
                    .into_iter()
                    .filter(|(name, _)| name != "GIT_CONFIG_GLOBAL"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        if let Ok(output) = run(config)
            && output.status.success()
        {
            let value = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if !value.is_empty() {
                args.push("-c".to_owned());
                args.push(format!("{key}={value}"));
            }
        }
    }
    args
}

/// What `git <args>` prints in `root`, or `None` when git is missing, fails (outside a
/// repository, say) or times out.
pub fn output(root: &Path, args: &[&str]) -> Option<String> {
    let output = run(command(root, args)).ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The commit `HEAD` points at, or `None` outside a repository or before the first commit.
pub fn head(root: &Path) -> Option<String> {
    let head = output(root, &["rev-parse", "--verify", "--quiet", "HEAD"])?
        .trim()
        .to_owned();
    (!head.is_empty()).then_some(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    /// A repository whose configuration tries every way to make git run `marker`'s script.
    fn hostile_repo() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir(&root).unwrap();
        let marker = dir.path().join("ran");
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(&root)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["config", "user.name", "Repo Person"]);
        git(&["config", "user.email", "repo@example.com"]);
        let script = dir.path().join("evil.sh");
        fs::write(
            &script,
            format!("#!/bin/sh\necho \"$0 $*\" >> {}\n", marker.display()),
        )
        .unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        let evil = script.display().to_string();
        for key in [
            "core.fsmonitor",
            "core.pager",
            "diff.external",
            "core.editor",
            "gpg.program",
        ] {
            git(&["config", key, &evil]);
        }
        git(&["config", "commit.gpgSign", "true"]);
        git(&["config", "core.hooksPath", ".git/hooks"]);
        for hook in [
            "pre-commit",
            "commit-msg",
            "post-commit",
            "prepare-commit-msg",
        ] {
            let path = root.join(".git/hooks").join(hook);
            fs::write(&path, format!("#!/bin/sh\n{evil} {hook}\n")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        fs::write(root.join("a.txt"), "a\n").unwrap();
        (dir, marker)
    }

    #[test]
    fn status_head_and_commit_run_nothing_the_repository_configures() {
        let (dir, marker) = hostile_repo();
        let root = dir.path().join("repo");
        let status = output(
            &root,
            &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
        )
        .unwrap();
        assert_eq!(status, "?? a.txt\0");
        commit_paths(&root, &["a.txt".to_owned()], "first").unwrap();
        let head = head(&root).unwrap();
        assert_eq!(head.len(), 40);
        let log = output(&root, &["log", "-1", "--format=%an <%ae> %s"]).unwrap();
        assert_eq!(log.trim(), "Repo Person <repo@example.com> first");
        fs::write(root.join("a.txt"), "b\n").unwrap();
        let mut diff_args = vec!["diff"];
        diff_args.extend(INERT_DIFF_FLAGS);
        let diff = output(&root, &diff_args).unwrap();
        assert!(diff.contains("-a\n+b\n"), "{diff}");
        assert!(
            !marker.exists(),
            "git ran {}",
            fs::read_to_string(&marker).unwrap()
        );
    }

    #[test]
    fn the_environment_keeps_no_git_override_and_no_secret() {
        let env = inert_env([
            ("GIT_DIR".into(), "/elsewhere".into()),
            ("GIT_CONFIG_GLOBAL".into(), "/home/x/.gitconfig".into()),
            ("GIT_EXTERNAL_DIFF".into(), "evil".into()),
            ("GIT_AUTHOR_NAME".into(), "A".into()),
            ("OPENAI_API_KEY".into(), "sk-x".into()),
            ("PATH".into(), "/usr/bin".into()),
            ("PAGER".into(), "less".into()),
        ]);
        let get = |name: &str| {
            env.iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert!(get("GIT_DIR").is_empty());
        assert!(get("GIT_EXTERNAL_DIFF").is_empty());
        assert!(get("OPENAI_API_KEY").is_empty());
        assert_eq!(get("GIT_CONFIG_GLOBAL"), ["/dev/null"]);
        assert_eq!(get("GIT_AUTHOR_NAME"), ["A"]);
        assert_eq!(get("PATH"), ["/usr/bin"]);
        assert_eq!(get("PAGER"), ["cat"]);
        assert_eq!(get("GIT_TERMINAL_PROMPT"), ["0"]);
    }

    #[test]
    fn inert_args_pair_each_override_with_c() {
        let args = inert_args();
        assert_eq!(args.len(), 2 * INERT_CONFIG.len());
        assert_eq!(args[0], "-c");
        assert_eq!(args[1], "core.hooksPath=/dev/null");
    }
}
