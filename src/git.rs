//! The little tick asks of git (which commit the workspace is on, what changed, a commit), run
//! so that nothing in the repository can make git execute anything, and so that whatever it
//! executes anyway is confined.
//!
//! The agent's commands may have written the repository's configuration, attributes,
//! submodules or nested repositories before (a cloned hostile repository, a run without the
//! sandbox, a `.git` *file* in the workspace pointing at a git directory the agent made):
//! `core.fsmonitor`, filters, textconv and merge drivers, hooks and the like would otherwise
//! run with tick's environment, API key included. Two guards, as for the agent's tools:
//!
//! 1. Settings. Every git tick runs goes through [`command`]: `git` from the fixed
//!    [`GIT_PATH`] only (never a relative or workspace `PATH` entry), a cleaned environment
//!    ([`inert_env`]: no `GIT_*` from outside but the identity, no system or global config, no
//!    pager, prompt, credentials, transports or lazy fetch, literal pathspecs), and the
//!    [`INERT_CONFIG`] overrides plus [`driver_overrides`] for every filter, diff, merge,
//!    protocol and submodule name the repository's configuration mentions. The settings travel
//!    through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` ([`config_env`]),
//!    never `-c key=value`, which git splits at the first `=` (a filter named `a=b` would
//!    escape). Status and diff never look into submodules (`--ignore-submodules=all`).
//! 2. The sandbox ([`Jail`]). Where the kernel offers it, git runs inside the read-only
//!    sandbox (`sandbox::Policy::read_only`): a setting missed still writes nothing and cannot
//!    reach tick's environment. A commit must write the git directory: it runs under a build
//!    policy whose only writable directories are the git directory and its common directory
//!    (plus the sandbox's private `/tmp`), without network; the work tree stays read-only.
//!    Without the sandbox (unavailable here) guard 1 holds alone.
//!
//! Around both: stdin closed, its own process group, and a timeout. A commit never records a
//! nested repository as a gitlink ([`CommitError::NestedRepository`]).

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::sandbox::{self, Kind, Policy};

/// Where tick's own git is looked for, in this order (the same order as `run_command`'s, so
/// the model's git and tick's are the same program). Absolute system directories only: a
/// `PATH` such as `node_modules/.bin:/usr/bin` must not make a file the agent wrote tick's git.
pub const GIT_PATH: [&str; 3] = ["/usr/local/bin", "/usr/bin", "/bin"];

/// Settings that keep git from running anything the repository configures: hooks, the
/// fsmonitor daemon, pagers, editors, signing programs, credential helpers, transports
/// (every protocol, by name too: a repository's `protocol.file.allow=always` beats a bare
/// `protocol.allow=never`), submodule recursion; and from writing the untracked cache or
/// starting a background gc. Passed as command-line-scope configuration through
/// [`config_env`], which wins over every config file. The model's own `git` calls (plan
/// mode's `run_command`) get the same list.
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
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
];

/// Flags every `diff`, `log -p`, `show` and `blame` must carry: `diff.external` cannot be
/// switched off with a setting (an empty value makes git try to run ""), only with
/// `--no-ext-diff`; textconv drivers likewise only with `--no-textconv` (or
/// [`driver_overrides`]).
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

/// `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>` and `GIT_CONFIG_VALUE_<n>` for `settings`: git
/// reads them as command-line configuration (above every file) and, unlike `-c key=value`,
/// takes the key whole, `=` and all.
pub fn config_env<K: AsRef<str>, V: AsRef<str>>(
    settings: impl IntoIterator<Item = (K, V)>,
) -> Vec<(OsString, OsString)> {
    let mut env = Vec::new();
    let mut count = 0usize;
    for (key, value) in settings {
        env.push((
            format!("GIT_CONFIG_KEY_{count}").into(),
            key.as_ref().into(),
        ));
        env.push((
            format!("GIT_CONFIG_VALUE_{count}").into(),
            value.as_ref().into(),
        ));
        count += 1;
    }
    env.push(("GIT_CONFIG_COUNT".into(), count.to_string().into()));
    env
}

/// Settings that switch off every driver named in the configuration keys `names` (as
/// `git config --name-only --list` prints them, or a `.gitmodules` file's): each filter's
/// `clean`, `smudge` and `process` emptied and `required` off (a required filter without a
/// command would stop git), each diff driver's `textconv` made `cat` and its `command`
/// `false`, each merge driver `false`, each protocol named `never`, and each submodule
/// ignored (its own `ignore` setting would beat `diff.ignoreSubmodules`). Names may hold any
/// character, `=` and `.` included: the section is before the first dot and the key after the
/// last, as git reads them.
pub fn driver_overrides<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(String, String)> {
    let mut subsections: Vec<(String, String)> = names
        .into_iter()
        .filter_map(|key| {
            let (section, rest) = key.split_once('.')?;
            let (name, _) = rest.rsplit_once('.')?;
            Some((section.to_ascii_lowercase(), name.to_owned()))
        })
        .collect();
    subsections.sort();
    subsections.dedup();
    let mut settings = Vec::new();
    for (section, name) in subsections {
        let pairs: &[(&str, &str)] = match section.as_str() {
            "filter" => &[
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ],
            "diff" => &[("textconv", "cat"), ("command", "false")],
            "merge" => &[("driver", "false")],
            "protocol" => &[("allow", "never")],
            "submodule" => &[("ignore", "all"), ("fetchRecurseSubmodules", "false")],
            _ => &[],
        };
        settings.extend(
            pairs
                .iter()
                .map(|(key, value)| (format!("{section}.{name}.{key}"), (*value).to_owned())),
        );
    }
    settings
}

/// The environment tick's git calls (and the model's, through `run_command`) start from,
/// given the variables they would otherwise inherit: no `GIT_*` but the identity, nothing
/// that looks like a credential, no system or global config or attributes, no pager, no
/// prompt, no locks that a read-only call would take, no lazy fetch of missing objects (a
/// partial clone's remote would run a program) and no protocol a user asks for.
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
            !git && !other && !crate::redact::looks_secret(&name)
        })
        .collect();
    for (name, value) in [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_ASKPASS", "false"),
        ("SSH_ASKPASS", "false"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_PROTOCOL_FROM_USER", "0"),
    ] {
        env.push((name.into(), value.into()));
    }
    env
}

/// Where tick's own git runs: inside the sandbox, or (the sandbox unavailable here) under the
/// settings of guard 1 alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jail {
    /// The read-only sandbox (a commit: the one that writes only the git directory), set up
    /// by `helper` (`None`: this process's own binary, which is tick).
    Sandbox { helper: Option<PathBuf> },
    /// No sandbox: the settings alone.
    SettingsOnly,
}

static PROCESS_JAIL: OnceLock<Jail> = OnceLock::new();

impl Jail {
    /// The jail of this process: the sandbox when tick's binary can set it up here (probed
    /// once, a few milliseconds), else the settings alone.
    pub fn current() -> Jail {
        PROCESS_JAIL
            .get_or_init(|| {
                if sandbox::available(Kind::ReadOnly).is_ok() {
                    Jail::Sandbox { helper: None }
                } else {
                    Jail::SettingsOnly
                }
            })
            .clone()
    }

    /// Fixes this process's jail before its first git call (a caller that is not tick's own
    /// binary names the helper, as tests do). `false` when it was already fixed.
    pub fn set_for_process(jail: Jail) -> bool {
        PROCESS_JAIL.set(jail).is_ok()
    }

    /// The read-only sandbox's `Command` for `program` in `root`, or the plain one.
    fn read_only(&self, root: &Path, program: &Path) -> Command {
        match self {
            Jail::Sandbox { helper } => {
                // Its checks must see a repository named outside the workspace to refuse it.
                let mut policy = Policy::read_only(root).with_shared_tmp();
                if let Some(helper) = helper {
                    policy = policy.with_helper(helper);
                }
                policy.command(program, std::iter::empty::<&str>())
            }
            Jail::SettingsOnly => Command::new(program),
        }
    }

    /// The sandbox's `Command` for `program` with writes allowed under `git_dirs` only (the
    /// first one its "workspace"), without network; or the plain one.
    fn writing(&self, git_dirs: &[PathBuf], program: &Path) -> Command {
        match (self, git_dirs.split_first()) {
            (Jail::Sandbox { helper }, Some((git_dir, others))) => {
                let mut policy = Policy::build(git_dir)
                    .with_network(false)
                    .with_writable(others.iter().cloned());
                if let Some(helper) = helper {
                    policy = policy.with_helper(helper);
                }
                policy.command(program, std::iter::empty::<&str>())
            }
            _ => Command::new(program),
        }
    }
}

/// The first executable `git` in [`GIT_PATH`].
pub fn program() -> Option<PathBuf> {
    GIT_PATH
        .iter()
        .map(|dir| Path::new(dir).join("git"))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What tick's git cannot do without.
fn git_or_missing() -> PathBuf {
    // A path that does not exist: spawning it fails with "not found", like a missing git.
    program().unwrap_or_else(|| PathBuf::from("/nonexistent/git"))
}

/// The names of every configuration key git sees in `root` (after `globals` such as
/// `--git-dir=…`), read with the settings of guard 1 (`git config` runs nothing). Empty when
/// git cannot say.
pub fn configured_names(jail: &Jail, root: &Path, globals: &[&str]) -> Vec<String> {
    config_names(jail, root, globals, &[])
}

/// The names of every key in the configuration file `file` (a `.gitmodules`), read as
/// [`configured_names`] reads.
pub fn names_in_file(jail: &Jail, root: &Path, file: &Path) -> Vec<String> {
    let file = file.to_string_lossy();
    config_names(jail, root, &[], &["--file", &file])
}

fn config_names(jail: &Jail, root: &Path, globals: &[&str], source: &[&str]) -> Vec<String> {
    let mut args: Vec<&str> = globals.to_vec();
    args.push("config");
    args.extend(source);
    args.extend(["--null", "--name-only", "--list"]);
    let command = base(jail, root, &args, INERT_CONFIG.iter().copied());
    let Ok(output) = run(command) else {
        return Vec::new();
    };
    names_of(&output.stdout)
}

/// The NUL-separated names of `git config --null --name-only`.
pub fn names_of(listed: &[u8]) -> Vec<String> {
    listed
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// `git <args>` in `root` under the sandbox of `jail`, with `settings` through the
/// environment: the fixed git, the inert environment, [`GIT_PATH`] as `PATH`, literal
/// pathspecs, stdin closed, its own process group.
fn base<'a>(
    jail: &Jail,
    root: &Path,
    args: &[&str],
    settings: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Command {
    let mut command = jail.read_only(root, &git_or_missing());
    configure(&mut command, root, args, settings);
    command
}

fn configure<'a>(
    command: &mut Command,
    root: &Path,
    args: &[&str],
    settings: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    command
        .arg("--no-pager")
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(inert_env(std::env::vars_os()))
        .envs(config_env(settings))
        .env("PATH", GIT_PATH.join(":"))
        .env("GIT_LITERAL_PATHSPECS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
}

/// Every setting of guard 1 for a git call in `root`: [`INERT_CONFIG`], then the
/// [`driver_overrides`] for what the repository configures.
fn settings_for(jail: &Jail, root: &Path) -> Vec<(String, String)> {
    let names = configured_names(jail, root, &[]);
    INERT_CONFIG
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .chain(driver_overrides(names.iter().map(String::as_str)))
        .collect()
}

/// `git <args>` in `root`, with both guards ([`Jail::current`]). Spawn it with [`run`] for
/// the timeout.
pub fn command(root: &Path, args: &[&str]) -> Command {
    command_in(&Jail::current(), root, args)
}

/// [`command`] in `jail`.
pub fn command_in(jail: &Jail, root: &Path, args: &[&str]) -> Command {
    let settings = settings_for(jail, root);
    base(
        jail,
        root,
        args,
        settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
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

/// Why [`commit_paths`] committed nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommitError {
    /// Paths that are (or are inside) a nested repository, or already a submodule: git would
    /// record them as a gitlink (mode 160000), a pointer to another repository's commit, and
    /// from then on every `git status` would look into it.
    #[error("{} a nested git repository, which tick does not commit: {}", if paths.len() == 1 { "this is" } else { "these are" }, paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "))]
    NestedRepository { paths: Vec<String> },
    /// git failed, or could not be run.
    #[error("{0}")]
    Git(String),
}

impl From<CommitError> for String {
    fn from(err: CommitError) -> String {
        err.to_string()
    }
}

/// Stages `paths` and commits exactly them (other staged or changed files are left alone),
/// without running any hook (`--no-verify`, and no hooks directory at all). The paths are
/// literal (a file named `:` is that file, not "everything"). A path that is a nested
/// repository, inside one, or a submodule stops the commit before anything is staged.
pub fn commit_paths(root: &Path, paths: &[String], message: &str) -> Result<(), CommitError> {
    commit_paths_in(&Jail::current(), root, paths, message)
}

/// [`commit_paths`] in `jail`.
pub fn commit_paths_in(
    jail: &Jail,
    root: &Path,
    paths: &[String],
    message: &str,
) -> Result<(), CommitError> {
    let mut nested = nested_repositories(root, paths);
    nested.extend(gitlinks(jail, root, paths)?);
    nested.sort();
    nested.dedup();
    if !nested.is_empty() {
        return Err(CommitError::NestedRepository { paths: nested });
    }
    let git_dirs = git_dirs(jail, root)?;
    let settings = settings_for(jail, root);
    let run_git = |args: Vec<&str>| -> Result<(), CommitError> {
        let mut command = jail.writing(&git_dirs, &git_or_missing());
        configure(
            &mut command,
            root,
            &args,
            settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let output = run(command).map_err(|err| not_run(&err))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(CommitError::Git(format!(
                "`git {}` failed: {}",
                args.iter()
                    .find(|a| !a.starts_with('-') && !a.contains('='))
                    .copied()
                    .unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr).trim()
            )))
        }
    };
    let identity = identity(jail, root);
    let mut add = vec!["add", "--all", "--"];
    add.extend(paths.iter().map(String::as_str));
    run_git(add)?;
    let mut commit: Vec<&str> = identity.iter().map(String::as_str).collect();
    commit.extend(["commit", "--quiet", "--no-verify", "-m", message, "--"]);
    commit.extend(paths.iter().map(String::as_str));
    run_git(commit)
}

/// Of `paths` (relative to `root`), those that are a directory holding a `.git` (a nested
/// repository) or lie inside one, named by the nested repository's own path. Read from the
/// file system, without git: a `.git` file or directory, whatever it points to.
pub fn nested_repositories(root: &Path, paths: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths {
        let mut prefix = PathBuf::new();
        for component in Path::new(path.trim_end_matches('/')).components() {
            let std::path::Component::Normal(part) = component else {
                continue;
            };
            prefix.push(part);
            let dir = root.join(&prefix);
            let is_dir = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
            if is_dir && std::fs::symlink_metadata(dir.join(".git")).is_ok() {
                found.push(prefix.to_string_lossy().into_owned());
                break;
            }
        }
    }
    found
}

/// A git that could not be started, saying where tick looks for it (it ignores `PATH`).
fn not_run(err: &io::Error) -> CommitError {
    CommitError::Git(format!(
        "could not run git: {err}; tick runs the first `git` in {} (install git there)",
        GIT_PATH.join(", ")
    ))
}

/// Of `paths`, those the index already records as a gitlink (a submodule): `git add` would
/// stage the commit its checkout is on now.
fn gitlinks(jail: &Jail, root: &Path, paths: &[String]) -> Result<Vec<String>, CommitError> {
    let mut args = vec!["ls-files", "--stage", "-z", "--"];
    args.extend(paths.iter().map(String::as_str));
    let output = run(command_in(jail, root, &args)).map_err(|err| not_run(&err))?;
    if !output.status.success() {
        return Err(CommitError::Git(format!(
            "`git ls-files` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output
        .stdout
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (meta, path) = entry.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_owned())
        })
        .collect())
}

/// The git directory of `root` and, when it differs (a linked worktree), the common one:
/// where a commit writes.
fn git_dirs(jail: &Jail, root: &Path) -> Result<Vec<PathBuf>, CommitError> {
    let listed = output_in(
        jail,
        root,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
        ],
    )
    .ok_or_else(|| CommitError::Git(format!("`{}` is not in a git repository", root.display())))?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in listed.lines().filter(|l| !l.is_empty()) {
        let dir = PathBuf::from(line);
        let dir = dir.canonicalize().unwrap_or(dir);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok(dirs)
}

/// `user.name=…` and `user.email=…` as `-c` arguments, as the person's own configuration says
/// (the repository's, else their global one), since the inert environment hides the global
/// file. Reading a value runs nothing. A value is data: `-c` splits at the first `=` of
/// `user.name=<value>`, after the key.
fn identity(jail: &Jail, root: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for key in ["user.name", "user.email"] {
        let mut config = base(
            jail,
            root,
            &["config", "--includes", "--get", key],
            INERT_CONFIG.iter().copied(),
        );
        config.env_remove("GIT_CONFIG_GLOBAL");
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

/// The repository's git directory (absolute), or `None` outside one.
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dir = output(root, &["rev-parse", "--path-format=absolute", "--git-dir"])?;
    Some(PathBuf::from(dir.trim()))
}

/// `git <args>` in `root` that may write the git directory and nothing else (the jail of a
/// commit), with `envs` set and `stdin` fed to it, for plumbing such as `update-index`,
/// `commit-tree` and `update-ref`; what it prints, or why it failed.
pub fn write_output(
    root: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> Result<String, CommitError> {
    use std::io::Write as _;
    let jail = Jail::current();
    let git_dirs = git_dirs(&jail, root)?;
    let settings = settings_for(&jail, root);
    let mut command = jail.writing(&git_dirs, &git_or_missing());
    let identity = identity(&jail, root);
    let mut all: Vec<&str> = identity.iter().map(String::as_str).collect();
    all.extend(args);
    configure(
        &mut command,
        root,
        &all,
        settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    command.envs(envs.iter().copied());
    command
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().map_err(|err| not_run(&err))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input)
            .map_err(|err| CommitError::Git(format!("could not talk to git: {err}")))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|err| CommitError::Git(format!("git did not finish: {err}")))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(CommitError::Git(format!(
            "`git {}` failed: {}",
            args.first().copied().unwrap_or_default(),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// What `git <args>` prints in `root`, or `None` when git is missing, fails (outside a
/// repository, say) or times out.
pub fn output(root: &Path, args: &[&str]) -> Option<String> {
    output_in(&Jail::current(), root, args)
}

/// [`output`] in `jail`.
pub fn output_in(jail: &Jail, root: &Path, args: &[&str]) -> Option<String> {
    let output = run(command_in(jail, root, args)).ok()?;
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
    #[test]
    fn a_git_that_cannot_start_names_where_tick_looks() {
        let err = super::not_run(&std::io::Error::from(std::io::ErrorKind::NotFound));
        let super::CommitError::Git(message) = err else {
            panic!("{err:?}");
        };
        assert!(
            message.contains("/usr/local/bin, /usr/bin, /bin"),
            "{message}"
        );
    }

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
}
