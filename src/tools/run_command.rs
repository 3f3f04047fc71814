//! `run_command`: run one allow-listed program from an argv, never through a shell, bounded in
//! time and output, and in plan mode inside the read-only sandbox.
//!
//! Two guards that do not depend on each other, like the tool registry's two:
//!
//! 1. The allow-list ([`super::allowlist`]) refuses any program, subcommand or flag outside its
//!    table before anything starts, and every argument that names a file must stay inside the
//!    workspace (the path policy of [`Workspace::resolve`], symlinks followed).
//! 2. The sandbox runs what passed: in plan mode under the read-only policy (no writes
//!    anywhere, the workspace included; no network; tick's processes out of sight; the whole
//!    process tree ended with the command). The registry does not offer this tool in plan
//!    mode without it. A mistake in the table therefore still writes nothing.
//!
//! Around both: the program is found on a fixed safe `PATH` (system directories and cargo's),
//! never in the workspace; the environment is rebuilt from a short list of harmless
//! variables (no API keys, no `GIT_*`, git's system and global configuration off); git gets
//! settings (through `GIT_CONFIG_COUNT`, see [`git_settings`]) that turn off pagers, hooks,
//! fsmonitor, signature programs, transports and lazy fetch, submodules, and every filter,
//! diff and merge driver the repository configures.
//! stdin is closed; the process group is stopped on timeout (default
//! [`DEFAULT_TIMEOUT_S`] s, at most [`MAX_TIMEOUT_S`]); output is kept head and tail like
//! `bash`'s.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::allowlist::{AllowList, Approved, GIT_EXTRA_CONFIG, Refusal};
use super::bash::{self, CommandEnv};
use super::workspace::{Access, PathError, Workspace};
use super::{ToolOutcome, parse_args};
use crate::llm::ToolSpec;
use crate::sandbox::{Kind, Sandboxing};

pub const NAME: &str = "run_command";

/// Seconds a command may run when the model does not say.
pub const DEFAULT_TIMEOUT_S: u64 = 30;
/// The most seconds a model may ask for.
pub const MAX_TIMEOUT_S: u64 = 120;

/// Where programs are looked up, in order; cargo's own directory is added after these.
pub const SAFE_PATH: [&str; 6] = [
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
    "/usr/local/sbin",
    "/usr/sbin",
    "/sbin",
];

/// The variables a command keeps from tick's environment: locale, time zone, who and where
/// the user is (git and cargo find their caches through `HOME`), and the Rust toolchain's
/// homes. Nothing else passes: no API keys, no `GIT_*`, no `RIPGREP_CONFIG_PATH`.
const KEPT_ENV: [&str; 10] = [
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "CARGO_HOME",
    "RUSTUP_HOME",
];

/// Set for every command besides what [`crate::git::inert_env`] sets (no system or global git
/// configuration, no pager, no prompt, no optional locks, so `git status` does not rewrite the
/// index).
const SET_ENV: [(&str, &str); 2] = [("GIT_ATTR_NOSYSTEM", "1"), ("NO_COLOR", "1")];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    argv: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_s: Option<f64>,
}

/// What `run_command` checks argvs against, resolved once per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    allow: AllowList,
    /// `false` only in tests of the sandbox alone (a debug build's switch): the argv then
    /// runs as given, with no table, no path checks and no added flags.
    allow_list_on: bool,
}

impl Setup {
    pub fn new(allow: AllowList) -> Self {
        Self {
            allow,
            allow_list_on: true,
        }
    }

    /// Turns guard 1 off, to show that the sandbox alone writes nothing. Exists only in debug
    /// builds, for tests; a release build has no such switch.
    #[cfg(debug_assertions)]
    #[must_use]
    pub fn without_allow_list_for_tests(mut self) -> Self {
        self.allow_list_on = false;
        self
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }
}

pub fn spec(setup: &Setup) -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "Run one read-only program and return its combined stdout and stderr and exit \
             code. `argv` is the program and its arguments as a list, e.g. [\"git\", \"log\", \
             \"-5\", \"--stat\"]; there is no shell: no pipes, redirects, globs or `&&`. \
             Allowed programs: {}. Flags that write files or run other programs are refused. \
             In plan mode the command runs in a read-only sandbox without network. It is \
             killed after `timeout_s` seconds (default {DEFAULT_TIMEOUT_S}, at most \
             {MAX_TIMEOUT_S}); output beyond the first and last {} lines is cut.",
            setup.allow.summary(),
            bash::HEAD_LINES,
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "argv": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "The program and its arguments, e.g. [\"git\", \"blame\", \"-L\", \"10,30\", \"src/main.rs\"]."
                },
                "cwd": {
                    "type": "string",
                    "description": "Directory to run in, relative to the workspace root (default: the root)."
                },
                "timeout_s": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT_S,
                    "description": format!("Seconds before the command is killed. Default {DEFAULT_TIMEOUT_S}, at most {MAX_TIMEOUT_S}.")
                }
            },
            "required": ["argv"],
            "additionalProperties": false
        }),
    }
}

/// Whether `sandbox` may carry `run_command` in plan mode: only the read-only policy.
pub fn read_only(sandbox: &Sandboxing) -> bool {
    sandbox
        .policy()
        .is_some_and(|policy| policy.kind() == Kind::ReadOnly)
}

pub fn run(
    workspace: &Workspace,
    env: &CommandEnv,
    setup: &Setup,
    arguments: &serde_json::Value,
) -> ToolOutcome {
    let args: Args = match parse_args(NAME, arguments) {
        Ok(args) => args,
        Err(message) => return ToolOutcome::error(message),
    };
    let mut notes = Vec::new();
    let timeout = match args.timeout_s {
        None => Duration::from_secs(DEFAULT_TIMEOUT_S),
        Some(s) => match bash::timeout(s, MAX_TIMEOUT_S) {
            Ok((timeout, note)) => {
                notes.extend(note);
                timeout
            }
            Err(message) => return ToolOutcome::error(message),
        },
    };
    let cwd = match working_dir(workspace, args.cwd.as_deref()) {
        Ok(cwd) => cwd,
        Err(message) => return ToolOutcome::error(message),
    };
    let approved = if setup.allow_list_on {
        match setup.allow.check(&args.argv) {
            Ok(approved) => approved,
            Err(Refusal(message)) => return ToolOutcome::error(message),
        }
    } else {
        let Some((program, rest)) = args.argv.split_first() else {
            return ToolOutcome::error("`argv` is empty");
        };
        Approved {
            program: program.clone(),
            subcommand: None,
            args: rest.to_vec(),
            dirs: Vec::new(),
            paths: Vec::new(),
            globals: Vec::new(),
        }
    };
    if setup.allow_list_on
        && let Err(message) = check_files(workspace, &cwd, &approved)
    {
        return ToolOutcome::error(message);
    }
    let path = safe_path(workspace, env);
    let Some(program) = find_program(&approved.program, &path) else {
        return ToolOutcome::error(format!(
            "`{}` is allowed but not installed on this machine (looked in {}); do without it",
            approved.program,
            path.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        ));
    };
    let git_settings = (setup.allow_list_on && approved.program == "git")
        .then(|| git_settings(workspace, &cwd, &approved.globals));
    let mut program_args: Vec<String> = Vec::new();
    let cargo = setup.allow_list_on && approved.program == "cargo";
    program_args.extend(approved.args);

    let mut cmd = if let Some(policy) = env.sandbox().policy() {
        // The helper enters the `Command`'s directory again once its mounts are in place.
        policy.command(&program, &program_args)
    } else {
        let mut cmd = Command::new(&program);
        cmd.args(&program_args);
        cmd
    };
    cmd.current_dir(&cwd);
    cmd.env_clear();
    cmd.envs(command_env(env, &path));
    if let Some(settings) = &git_settings {
        cmd.envs(crate::git::config_env(settings.iter().map(|(k, v)| (k, v))));
    }
    if cargo {
        cmd.envs(CARGO_ENV);
    }
    let sandboxed = env.sandbox().policy().is_some();
    match bash::supervise_in(cmd, sandboxed, timeout, env) {
        Ok(finished) => finished.into_outcome(timeout, MAX_TIMEOUT_S, notes),
        Err(e) => ToolOutcome::error(format!("`{}` could not be started: {e}", approved.program)),
    }
}

/// The whole output of the program `name` (looked up on `path`, never inside the workspace)
/// with `args`, run the way this tool runs a command in plan mode: under `env`'s read-only
/// sandbox, but started in `/` (never the workspace, whose files it would read as its own),
/// with the rebuilt environment and `path` as its `PATH`,
/// stopped at `timeout`. For checks that read what a program says of itself (its `--help`),
/// which no allow-list reads. `None` unless `env` has the read-only sandbox, the program is
/// found, exits 0 in time, and its output was kept whole.
pub fn read_only_output(
    workspace: &Workspace,
    env: &CommandEnv,
    name: &str,
    args: &[String],
    path: &[PathBuf],
    timeout: Duration,
) -> Option<String> {
    let policy = env
        .sandbox()
        .policy()
        .filter(|policy| policy.kind() == Kind::ReadOnly)?;
    let path: Vec<PathBuf> = path
        .iter()
        .filter(|dir| dir.is_absolute() && !inside(workspace, dir))
        .cloned()
        .collect();
    let program = find_program(name, &path)?;
    let mut cmd = policy.command(&program, args);
    // Not in the workspace: what a program reads of its own from the directory it starts in
    // (a `unittest.py` that `python3 -m` imports first, pytest's `conftest.py`) is the
    // repository's code, which a plan must not run; `/` holds none of a repository's files.
    cmd.current_dir("/");
    cmd.env_clear();
    cmd.envs(command_env(env, &path));
    // Python: no directory of the command line first on `sys.path` either.
    cmd.env("PYTHONSAFEPATH", "1");
    if name == "cargo" {
        cmd.envs(CARGO_ENV);
    }
    let finished = bash::supervise_in(cmd, true, timeout, env).ok()?;
    if finished.exit_code() != Some(0) {
        return None;
    }
    finished.whole_output().map(str::to_owned)
}

/// For `cargo`: no wrapper and no `rustc` but the one on the safe `PATH`, whatever a
/// `.cargo/config.toml` in the workspace says (the environment wins over config files).
const CARGO_ENV: [(&str, &str); 3] = [
    ("RUSTC_WRAPPER", ""),
    ("RUSTC_WORKSPACE_WRAPPER", ""),
    ("RUSTC", "rustc"),
];

/// The settings for the model's git command, passed through `GIT_CONFIG_COUNT` and friends
/// (never `-c key=value`: git splits that at the first `=`, and a filter named `a=b` would
/// keep its command): tick's own [`crate::git::INERT_CONFIG`], [`GIT_EXTRA_CONFIG`], and
/// [`crate::git::driver_overrides`] for every filter, diff and merge driver, protocol and
/// submodule the configuration names where the command will look (`globals`, such as `-C sub`
/// or `--git-dir=x.git`), and every submodule the workspace's `.gitmodules` names (its own
/// `ignore` would beat `diff.ignoreSubmodules`, and `git status` would run the submodule's
/// filters). The names are read with tick's own git, which runs nothing.
fn git_settings(workspace: &Workspace, cwd: &Path, globals: &[String]) -> Vec<(String, String)> {
    let jail = crate::git::Jail::current();
    let globals: Vec<&str> = globals.iter().map(String::as_str).collect();
    let mut names = crate::git::configured_names(&jail, cwd, &globals);
    let gitmodules = workspace.root().join(".gitmodules");
    if std::fs::symlink_metadata(&gitmodules).is_ok_and(|m| m.is_file()) {
        names.extend(crate::git::names_in_file(
            &jail,
            workspace.root(),
            &gitmodules,
        ));
    }
    crate::git::INERT_CONFIG
        .iter()
        .chain(GIT_EXTRA_CONFIG)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .chain(crate::git::driver_overrides(
            names.iter().map(String::as_str),
        ))
        .collect()
}

/// The directory the command runs in: `cwd` inside the workspace, or the root.
fn working_dir(workspace: &Workspace, cwd: Option<&str>) -> Result<PathBuf, String> {
    let Some(cwd) = cwd.filter(|c| !c.is_empty()) else {
        return Ok(workspace.root().to_path_buf());
    };
    let resolved = workspace
        .resolve(cwd, Access::Read)
        .map_err(|e| format!("cwd: {e}"))?;
    if !resolved.is_dir() {
        return Err(format!("cwd: `{cwd}` is not a directory"));
    }
    Ok(resolved)
}

/// Everything `approved` will read stays inside the workspace: the directories it changes
/// into, in order, then each file argument from the last of them; for git, the repository
/// it will use; for `cargo tree`, a `Cargo.lock` to read, since it cannot write one.
fn check_files(workspace: &Workspace, cwd: &Path, approved: &Approved) -> Result<(), String> {
    let program = approved.program.as_str();
    let dir = effective_dir(workspace, cwd, &approved.dirs, program)?;
    for path in &approved.paths {
        check_path(workspace, &dir, path, program)?;
    }
    if program == "git" {
        check_git_repository(workspace, cwd, &approved.globals)?;
    }
    if approved.program == "cargo" && approved.subcommand.as_deref() == Some("tree") {
        check_cargo_lock(workspace, &dir, &approved.args)?;
    }
    Ok(())
}

/// Where the program works after changing into `dirs` in order (`git -C sub -C up`), each
/// relative to the one before and inside the workspace, symlinks followed.
fn effective_dir(
    workspace: &Workspace,
    cwd: &Path,
    dirs: &[String],
    program: &str,
) -> Result<PathBuf, String> {
    let mut dir = cwd.to_path_buf();
    for next in dirs {
        // `git -C ""` stays where it is.
        if next.is_empty() {
            continue;
        }
        check_path(workspace, &dir, next, program)?;
        let joined = dir.join(next);
        dir = match joined.canonicalize() {
            Ok(real) if real.is_dir() => real,
            _ => {
                return Err(format!(
                    "`-C {next}`: there is no directory `{}`",
                    workspace.display(&joined)
                ));
            }
        };
    }
    Ok(dir)
}

/// An argument that names a file must stay inside the workspace: absolute paths only there,
/// no `..`, no symlink that leads out. A relative one that names nothing is left alone (a
/// revision, a pattern, a file the program will say is missing). `base` is the directory
/// the program resolves it from.
fn check_path(workspace: &Workspace, base: &Path, arg: &str, program: &str) -> Result<(), String> {
    if arg.is_empty() || arg == "-" {
        return Ok(());
    }
    let path = Path::new(arg);
    let relative = if path.is_absolute() {
        let Ok(inside) = path.strip_prefix(workspace.root()) else {
            let hint = match program {
                "git" => " If it is not a path but an option's value, attach it: `--grep=/api/`",
                "grep" | "rg" => " If it is the pattern, give it after `-e`: [\"-e\", \"/api/\"]",
                _ => "",
            };
            return Err(format!(
                "`{arg}` is outside the workspace; run_command reads only inside it (paths are \
                 relative to `cwd`, the workspace root by default).{hint}"
            ));
        };
        inside.to_path_buf()
    } else {
        let base = base.strip_prefix(workspace.root()).unwrap_or(Path::new(""));
        base.join(path)
    };
    if relative.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{arg}` is outside the workspace: paths may not contain `..`"
        ));
    }
    let shown = relative.to_string_lossy();
    let shown = if shown.is_empty() { "." } else { &shown };
    match workspace.resolve(shown, Access::Read) {
        Ok(_) | Err(PathError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// The repository a git command finds, as `git rev-parse` reports it.
#[derive(Debug, PartialEq, Eq)]
struct GitRepository {
    git_dir: PathBuf,
    common_dir: PathBuf,
    /// `None` for a bare repository, or from inside the git directory.
    work_tree: Option<PathBuf>,
}

/// What git finds started in `dir` with `globals` (`-C`, `--git-dir`, `--work-tree`), read
/// with tick's own inert git; `None` outside any repository.
fn git_repository(dir: &Path, globals: &[String]) -> Option<GitRepository> {
    let mut args: Vec<&str> = globals.iter().map(String::as_str).collect();
    args.extend([
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "--git-common-dir",
        "--show-toplevel",
    ]);
    let output = crate::git::run(crate::git::command(dir, &args)).ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let real = |line: &str| {
        let path = PathBuf::from(line);
        path.canonicalize().unwrap_or(path)
    };
    // `--show-toplevel` fails last, after the two directories were printed, where there is
    // no work tree.
    let mut lines = text.lines();
    let git_dir = real(lines.next()?);
    let common_dir = real(lines.next()?);
    let work_tree = lines.next().filter(|_| output.status.success()).map(real);
    Some(GitRepository {
        git_dir,
        common_dir,
        work_tree,
    })
}

/// A git command may use a repository inside the workspace, or the workspace's own (which
/// may live outside it: a worktree's git directory, a workspace inside a larger
/// repository); not one a committed gitfile (`gitdir: ../other/.git`), `core.worktree`, or
/// `objects/info/alternates` leads to elsewhere.
fn check_git_repository(
    workspace: &Workspace,
    cwd: &Path,
    globals: &[String],
) -> Result<(), String> {
    let Some(repository) = git_repository(cwd, globals) else {
        // Outside any repository: only `--no-index` commands work, on checked paths.
        return Ok(());
    };
    let root = workspace.root();
    let alternates = repository
        .common_dir
        .join("objects/info/alternates")
        .exists();
    let mut used: Vec<(&str, &Path)> = vec![
        ("git directory", &repository.git_dir),
        ("git directory", &repository.common_dir),
    ];
    if let Some(tree) = &repository.work_tree {
        used.push(("work tree", tree));
    }
    if !alternates && used.iter().all(|(_, path)| path.starts_with(root)) {
        return Ok(());
    }
    let own = git_repository(root, &[]);
    if own.as_ref() == Some(&repository) {
        return Ok(());
    }
    let command = if globals.is_empty() {
        "`git`".to_owned()
    } else {
        format!("`git {}`", globals.join(" "))
    };
    let hint = "run_command reads only inside the workspace and its own repository";
    if let Some((what, path)) = used.iter().find(|(_, path)| {
        !path.starts_with(root)
            && own.as_ref().is_none_or(|own| {
                ![
                    Some(&own.git_dir),
                    Some(&own.common_dir),
                    own.work_tree.as_ref(),
                ]
                .contains(&Some(&path.to_path_buf()))
            })
    }) {
        return Err(format!(
            "{command} would use the {what} `{}`, outside the workspace (a `.git` file or the \
             repository's configuration points there); {hint}",
            path.display()
        ));
    }
    if alternates && own.is_none_or(|own| own.common_dir != repository.common_dir) {
        return Err(format!(
            "{command} would use the repository `{}`, which borrows objects from elsewhere \
             (`objects/info/alternates`); {hint}",
            workspace.display(&repository.git_dir)
        ));
    }
    Ok(())
}

/// `cargo tree` resolves the dependency graph and writes `Cargo.lock` when there is none,
/// which the read-only sandbox refuses with an error that names no cause. Without a lock
/// file (beside the manifest or in a directory above it, where a cargo workspace keeps it)
/// it is refused before cargo starts, with what to do instead.
fn check_cargo_lock(workspace: &Workspace, dir: &Path, args: &[String]) -> Result<(), String> {
    let manifest = args.iter().enumerate().find_map(|(i, arg)| {
        if arg == "--manifest-path" {
            args.get(i + 1).cloned()
        } else {
            arg.strip_prefix("--manifest-path=").map(str::to_owned)
        }
    });
    let start = match &manifest {
        Some(manifest) => dir
            .join(manifest)
            .parent()
            .map_or_else(|| dir.to_path_buf(), Path::to_path_buf),
        None => dir.to_path_buf(),
    };
    if start.ancestors().any(|d| d.join("Cargo.lock").is_file()) {
        return Ok(());
    }
    Err(format!(
        "`cargo tree` needs a `Cargo.lock`, and there is none for `{}`: cargo would write one, \
         and run_command cannot write. Read the dependencies from `Cargo.toml`, or use \
         [\"cargo\", \"metadata\", \"--no-deps\", \"--format-version\", \"1\"]; a person can \
         create the lock file with `cargo generate-lockfile`",
        workspace.display(&start.join("Cargo.toml"))
    ))
}

/// [`SAFE_PATH`] plus cargo's `bin` directory, minus anything inside the workspace.
fn safe_path(workspace: &Workspace, env: &CommandEnv) -> Vec<PathBuf> {
    let cargo_home = env
        .var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|home| Path::new(&home).join(".cargo")));
    SAFE_PATH
        .iter()
        .map(PathBuf::from)
        .chain(cargo_home.map(|home| home.join("bin")))
        .filter(|dir| dir.is_absolute() && !inside(workspace, dir))
        .collect()
}

/// Whether `dir` is the workspace or inside it, symlinks followed.
fn inside(workspace: &Workspace, dir: &Path) -> bool {
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    real.starts_with(workspace.root())
}

/// The first executable file named `name` in `path`. The path found is returned as it is, not
/// canonicalised: rustup's `cargo` is a link that must be started under its own name.
fn find_program(name: &str, path: &[PathBuf]) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    path.iter().map(|dir| dir.join(name)).find(|candidate| {
        candidate
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The whole environment of a command: [`KEPT_ENV`] from the base, git's inert settings,
/// [`SET_ENV`], and the safe `PATH`.
fn command_env(env: &CommandEnv, path: &[PathBuf]) -> Vec<(OsString, OsString)> {
    let kept = KEPT_ENV
        .iter()
        .filter_map(|&name| env.var(name).map(|value| (name.into(), value.into())));
    let mut vars = crate::git::inert_env(kept);
    vars.extend(SET_ENV.iter().map(|&(k, v)| (k.into(), v.into())));
    let joined = std::env::join_paths(path).unwrap_or_default();
    vars.push(("PATH".into(), joined));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    fn env(extra: &[(&str, &str)]) -> CommandEnv {
        let vars = extra
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        CommandEnv::default().with_base(vars)
    }

    fn call(ws: &Workspace, env: &CommandEnv, args: &serde_json::Value) -> (String, bool) {
        let setup = Setup::new(AllowList::default());
        match run(ws, env, &setup, args) {
            ToolOutcome::Output { text, is_error, .. } => (text, is_error),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn runs_an_argv_without_a_shell_in_cwd() {
        let (_dir, ws) = setup();
        let env = env(&[]);
        let (text, is_error) = call(
            &ws,
            &env,
            &json!({"argv": ["cat", "main.rs"], "cwd": "src"}),
        );
        assert!(!is_error, "{text}");
        assert!(text.starts_with("fn main() {}\nexit code 0, "), "{text}");
        // A shell's syntax is just an argument.
        let (text, is_error) = call(&ws, &env, &json!({"argv": ["ls", "src;", "touch", "x"]}));
        assert!(is_error, "{text}");
        assert!(!ws.root().join("x").exists());
        let (text, is_error) = call(&ws, &env, &json!({"argv": ["pwd"], "cwd": "src"}));
        assert!(!is_error);
        assert!(
            text.starts_with(&format!("{}\n", ws.root().join("src").display())),
            "{text}"
        );
    }

    #[test]
    fn the_environment_is_rebuilt_from_a_short_list() {
        let (_dir, ws) = setup();
        let env = env(&[
            ("HOME", "/home/x"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GIT_DIR", "/elsewhere"),
            ("RIPGREP_CONFIG_PATH", "/x"),
            ("PATH", "/work/evil:/usr/bin"),
        ]);
        let vars = command_env(&env, &safe_path(&ws, &env));
        let names: Vec<String> = vars
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"HOME".to_owned()));
        for hidden in ["OPENAI_API_KEY", "GIT_DIR", "RIPGREP_CONFIG_PATH"] {
            assert!(!names.contains(&hidden.to_owned()), "{hidden}");
        }
        let path = vars
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .unwrap();
        assert_eq!(
            path,
            "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:/home/x/.cargo/bin"
        );
    }

    #[test]
    fn programs_are_never_found_in_the_workspace() {
        let (dir, ws) = setup();
        let bin = dir.path().join(".cargo/bin");
        fs::create_dir_all(&bin).unwrap();
        let home = dir.path().to_string_lossy().into_owned();
        let env = env(&[("HOME", &home)]);
        let path = safe_path(&ws, &env);
        assert!(!path.iter().any(|p| p.starts_with(dir.path())), "{path:?}");
        assert_eq!(find_program("../cat", &path), None);
        assert!(find_program("cat", &path).unwrap().is_absolute());
    }

    #[test]
    fn paths_must_stay_inside_the_workspace() {
        let (dir, ws) = setup();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc-link")).unwrap();
        let env = env(&[]);
        for (argv, expected) in [
            (
                json!(["cat", "/etc/passwd"]),
                "`/etc/passwd` is outside the workspace",
            ),
            (json!(["cat", "../x"]), "`../x` is outside the workspace"),
            (
                json!(["cat", "etc-link/passwd"]),
                "`etc-link/passwd` leads outside",
            ),
            (json!(["ls", "etc-link"]), "`etc-link` leads outside"),
            (
                json!(["git", "-C", "/", "log"]),
                "`/` is outside the workspace",
            ),
            (
                json!(["grep", "-f", "/etc/passwd", "x"]),
                "`/etc/passwd` is outside",
            ),
        ] {
            let (text, is_error) = call(&ws, &env, &json!({"argv": argv}));
            assert!(is_error, "{argv}: {text}");
            assert!(text.starts_with(expected), "{argv}: {text}");
        }
        let inside = format!("{}/src/main.rs", ws.root().display());
        let (text, is_error) = call(&ws, &env, &json!({"argv": ["cat", inside]}));
        assert!(!is_error, "{text}");
        let (text, is_error) = call(&ws, &env, &json!({"argv": ["cat", "x"], "cwd": "etc-link"}));
        assert!(is_error);
        assert!(text.starts_with("cwd: `etc-link` leads outside"), "{text}");
        let (text, _) = call(&ws, &env, &json!({"argv": ["ls"], "cwd": "src/main.rs"}));
        assert_eq!(text, "cwd: `src/main.rs` is not a directory");
    }

    #[test]
    fn argument_errors_and_timeouts() {
        let (_dir, ws) = setup();
        let env = env(&[]);
        for (args, expected) in [
            (
                json!({"argv": "git log"}),
                "invalid arguments for run_command: invalid type",
            ),
            (
                json!({"command": "ls"}),
                "invalid arguments for run_command: unknown field `command`",
            ),
            (
                json!({"argv": ["ls"], "timeout_s": 0}),
                "timeout_s must be a number of seconds above 0, at most 120",
            ),
            (json!({"argv": []}), "`argv` is empty"),
        ] {
            let (text, is_error) = call(&ws, &env, &args);
            assert!(is_error);
            assert!(text.starts_with(expected), "{args}: {text}");
        }
        let (text, is_error) = call(&ws, &env, &json!({"argv": ["ls"], "timeout_s": 1000}));
        assert!(!is_error);
        assert!(
            text.ends_with("note: timeout_s 1000 is above the maximum; 120 was used"),
            "{text}"
        );
    }

    /// `git` in `dir` for the test's own setup, with nothing configured outside.
    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// Guard 1 on its own (no sandbox here): a repository configured to run a script from
    /// every read-only git command still runs nothing, because of the flags and settings tick
    /// adds.
    #[test]
    fn repository_configuration_runs_nothing_without_the_sandbox() {
        let (dir, ws) = setup();
        let root = dir.path();
        let ran = tempfile::tempdir().unwrap();
        let script = root.join("evil.sh");
        fs::write(
            &script,
            format!("#!/bin/sh\ntouch {}/ran-$1\ncat\n", ran.path().display()),
        )
        .unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(root.join(".gitattributes"), "*.rs diff=evil filter=evil\n").unwrap();
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "init"]);
        let evil = script.display().to_string();
        for (key, value) in [
            ("core.pager", format!("{evil} pager")),
            ("core.fsmonitor", format!("{evil} fsmonitor")),
            ("diff.external", format!("{evil} external")),
            ("diff.evil.textconv", format!("{evil} textconv")),
            ("diff.evil.command", format!("{evil} command")),
            ("filter.evil.clean", format!("{evil} clean")),
            ("filter.evil.smudge", format!("{evil} smudge")),
            ("filter.evil.process", format!("{evil} process")),
            ("gpg.program", format!("{evil} gpg")),
            ("log.showSignature", "true".to_owned()),
            ("core.hooksPath", root.display().to_string()),
        ] {
            git(root, &["config", key, &value]);
        }
        // Same size, new time: status and diff must read the file, through the filter.
        std::thread::sleep(Duration::from_millis(1100));
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        let env = env(&[]);
        for argv in [
            json!(["git", "status"]),
            json!(["git", "diff"]),
            json!(["git", "diff", "HEAD", "--stat"]),
            json!(["git", "log", "-p", "--format=%H %G?"]),
            json!(["git", "show", "HEAD"]),
            json!(["git", "blame", "src/main.rs"]),
            json!(["git", "grep", "-n", "fn"]),
            json!(["git", "-C", "src", "diff"]),
        ] {
            let (text, is_error) = call(&ws, &env, &json!({ "argv": argv }));
            assert!(!is_error, "{argv}: {text}");
        }
        let ran: Vec<_> = fs::read_dir(ran.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            ran.is_empty(),
            "the repository's configuration ran: {ran:?}"
        );
    }

    /// A workspace for the hostile git cases of issue 17, item 11: `repo/` and, beside it,
    /// `ran/`, where `evil.sh <what>` leaves a file each time something runs it.
    struct Hostile {
        dir: tempfile::TempDir,
    }

    impl Hostile {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            fs::create_dir_all(dir.path().join("repo")).unwrap();
            fs::create_dir_all(dir.path().join("ran")).unwrap();
            let script = dir.path().join("evil.sh");
            fs::write(
                &script,
                format!(
                    "#!/bin/sh\ntouch {}/$1-$$\ncat\n",
                    dir.path().join("ran").display()
                ),
            )
            .unwrap();
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
            Hostile { dir }
        }

        fn root(&self) -> PathBuf {
            self.dir.path().join("repo")
        }

        fn evil(&self, what: &str) -> String {
            format!("{} {what}", self.dir.path().join("evil.sh").display())
        }

        fn repo(&self, files: &[(&str, &str)]) {
            let root = self.root();
            for (path, text) in files {
                fs::write(root.join(path), text).unwrap();
            }
            git(&root, &["init", "-q"]);
            git(&root, &["add", "."]);
            git(&root, &["commit", "-q", "-m", "init"]);
        }

        /// Runs each argv through `run_command` (no sandbox: the settings alone) and returns
        /// what ran.
        fn run(&self, argvs: &[serde_json::Value]) -> Vec<String> {
            let ws = Workspace::new(self.root()).unwrap();
            for argv in argvs {
                let (text, _) = call(&ws, &env(&[]), &json!({ "argv": argv }));
                assert!(!text.starts_with("`git` is allowed but"), "{text}");
            }
            let mut ran: Vec<String> = fs::read_dir(self.dir.path().join("ran"))
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            ran.sort();
            ran
        }
    }

    /// Same size, new time: git must read the files again, through their filters.
    fn touch_later(dir: &Path, names: &[&str]) {
        std::thread::sleep(Duration::from_millis(1100));
        for name in names {
            let path = dir.join(name);
            let text = fs::read(&path).unwrap();
            fs::write(&path, text).unwrap();
        }
    }

    #[test]
    fn a_filter_whose_name_holds_an_equals_sign_runs_nothing() {
        let h = Hostile::new();
        h.repo(&[(".gitattributes", "*.txt filter=a=b\n"), ("x.txt", "x\n")]);
        git(&h.root(), &["config", "filter.a=b.clean", &h.evil("clean")]);
        git(&h.root(), &["config", "filter.a=b.required", "true"]);
        touch_later(&h.root(), &["x.txt"]);
        let ran = h.run(&[json!(["git", "status"]), json!(["git", "diff"])]);
        assert_eq!(ran, Vec::<String>::new());
    }

    #[test]
    fn a_filter_inside_a_submodule_runs_nothing() {
        let h = Hostile::new();
        let source = h.dir.path().join("libsrc");
        fs::create_dir_all(&source).unwrap();
        fs::write(source.join(".gitattributes"), "* filter=x\n").unwrap();
        fs::write(source.join("a.txt"), "a\n").unwrap();
        git(&source, &["init", "-q"]);
        git(&source, &["add", "."]);
        git(&source, &["commit", "-q", "-m", "lib"]);
        h.repo(&[("README.md", "r\n")]);
        let root = h.root();
        let source = source.to_string_lossy().into_owned();
        git(
            &root,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                &source,
                "lib",
            ],
        );
        git(&root, &["commit", "-q", "-m", "lib"]);
        let lib = root.join("lib");
        git(&lib, &["config", "filter.x.clean", &h.evil("clean")]);
        // The submodule's own setting would beat `diff.ignoreSubmodules`.
        git(&root, &["config", "submodule.lib.ignore", "none"]);
        touch_later(&lib, &["a.txt"]);
        let ran = h.run(&[
            json!(["git", "status"]),
            json!(["git", "diff"]),
            json!(["git", "-C", "lib", "status"]),
        ]);
        assert_eq!(ran, Vec::<String>::new());
    }

    #[test]
    fn status_verbose_runs_no_textconv_driver() {
        let h = Hostile::new();
        h.repo(&[(".gitattributes", "*.txt diff=d\n"), ("x.txt", "x\n")]);
        git(
            &h.root(),
            &["config", "diff.d.textconv", &h.evil("textconv")],
        );
        fs::write(h.root().join("x.txt"), "y\n").unwrap();
        git(&h.root(), &["add", "x.txt"]);
        fs::write(h.root().join("x.txt"), "z\n").unwrap();
        let ran = h.run(&[
            json!(["git", "status", "-v"]),
            json!(["git", "status", "-vv"]),
        ]);
        assert_eq!(ran, Vec::<String>::new());
    }

    #[test]
    fn a_partial_clone_fetches_nothing_and_runs_no_upload_pack() {
        let h = Hostile::new();
        let source = h.dir.path().join("source");
        fs::create_dir_all(&source).unwrap();
        fs::write(source.join("a.txt"), "a\n").unwrap();
        git(&source, &["init", "-q"]);
        git(&source, &["add", "."]);
        git(&source, &["commit", "-q", "-m", "a"]);
        git(&source, &["config", "uploadpack.allowFilter", "true"]);
        fs::remove_dir_all(h.root()).unwrap();
        let url = format!("file://{}", source.display());
        let root = h.root().to_string_lossy().into_owned();
        git(
            h.dir.path(),
            &[
                "clone",
                "-q",
                "--no-checkout",
                "--filter=blob:none",
                &url,
                &root,
            ],
        );
        git(&h.root(), &["config", "protocol.file.allow", "always"]);
        git(
            &h.root(),
            &["config", "remote.origin.uploadpack", &h.evil("uploadpack")],
        );
        let ran = h.run(&[
            json!(["git", "show", "HEAD:a.txt"]),
            json!(["git", "log", "-p"]),
            json!(["git", "diff", "HEAD"]),
        ]);
        assert_eq!(ran, Vec::<String>::new());
    }

    #[test]
    fn remerge_diff_runs_no_merge_driver() {
        let h = Hostile::new();
        h.repo(&[(".gitattributes", "*.txt merge=m\n"), ("x.txt", "base\n")]);
        let root = h.root();
        git(&root, &["checkout", "-q", "-b", "side"]);
        fs::write(root.join("x.txt"), "side\n").unwrap();
        git(&root, &["commit", "-q", "-am", "side"]);
        git(&root, &["checkout", "-q", "-"]);
        fs::write(root.join("x.txt"), "main\n").unwrap();
        git(&root, &["commit", "-q", "-am", "main"]);
        let merged = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["merge", "-q", "side"])
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(!merged.success(), "the merge should conflict");
        fs::write(root.join("x.txt"), "both\n").unwrap();
        git(&root, &["commit", "-q", "-am", "merged"]);
        git(&root, &["config", "merge.m.driver", &h.evil("merge")]);
        let ran = h.run(&[
            json!(["git", "show", "--remerge-diff", "HEAD"]),
            json!(["git", "log", "--remerge-diff", "-1"]),
        ]);
        assert_eq!(ran, Vec::<String>::new());
    }

    #[test]
    fn a_committed_bare_repository_used_with_git_dir_runs_nothing() {
        let h = Hostile::new();
        h.repo(&[("x.txt", "x\n")]);
        let root = h.root();
        git(&root, &["init", "-q", "--bare", "evil.git"]);
        let config = root.join("evil.git/config");
        let config = config.to_string_lossy();
        git(&root, &["config", "--file", &config, "core.bare", "false"]);
        git(&root, &["config", "--file", &config, "core.worktree", ".."]);
        fs::write(root.join(".gitattributes"), "* filter=x=y diff=d\n").unwrap();
        // The bare repository tracks the work tree too, so its status must read the files.
        git(
            &root,
            &["--git-dir=evil.git", "add", "x.txt", ".gitattributes"],
        );
        for (key, value) in [
            ("filter.x=y.clean", h.evil("clean")),
            ("filter.x=y.required", "true".to_owned()),
            ("diff.d.textconv", h.evil("textconv")),
        ] {
            git(&root, &["config", "--file", &config, key, &value]);
        }
        git(&root, &["add", "."]);
        git(&root, &["commit", "-q", "-m", "evil.git"]);
        touch_later(&root, &["x.txt"]);
        let ran = h.run(&[
            json!(["git", "--git-dir=evil.git", "status"]),
            json!(["git", "--git-dir", "evil.git", "status", "-v"]),
            json!(["git", "--git-dir=evil.git", "diff"]),
        ]);
        assert_eq!(ran, Vec::<String>::new());
    }

    /// A workspace `ws` beside what it must not read: `outside.txt` and a repository `other`,
    /// both holding `SECRET`.
    struct Beside {
        _parent: tempfile::TempDir,
        parent: PathBuf,
        ws: Workspace,
    }

    const SECRET: &str = "secret-from-outside";

    fn beside() -> Beside {
        let parent_dir = tempfile::tempdir().unwrap();
        let parent = parent_dir.path().canonicalize().unwrap();
        fs::write(parent.join("outside.txt"), format!("{SECRET}\n")).unwrap();
        let other = parent.join("other");
        fs::create_dir_all(&other).unwrap();
        fs::write(other.join("s.txt"), format!("{SECRET}\n")).unwrap();
        git(&other, &["init", "-q"]);
        git(&other, &["add", "."]);
        git(&other, &["commit", "-q", "-m", SECRET]);
        let root = parent.join("ws");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("a.txt"), "a\n").unwrap();
        fs::write(root.join("sub/a.txt"), "a\n").unwrap();
        git(&root, &["init", "-q"]);
        git(&root, &["add", "."]);
        git(&root, &["commit", "-q", "-m", "init"]);
        Beside {
            _parent: parent_dir,
            parent,
            ws: Workspace::new(&root).unwrap(),
        }
    }

    /// Issue 17, item 12: each of these read outside the workspace with nothing but an argv
    /// (and files a clone can carry); each is refused before it runs.
    #[test]
    fn reads_outside_the_workspace_from_argv_alone_are_refused() {
        let b = beside();
        let root = b.ws.root();
        std::os::unix::fs::symlink("../..", root.join("sub/up")).unwrap();
        // A committed gitfile pointing at another repository.
        fs::create_dir_all(root.join("gf")).unwrap();
        fs::write(root.join("gf/.git"), "gitdir: ../../other/.git\n").unwrap();
        // A bare repository whose work tree is above the workspace.
        git(root, &["init", "-q", "--bare", "evil.git"]);
        git(
            root,
            &["--git-dir=evil.git", "config", "core.bare", "false"],
        );
        git(
            root,
            &["--git-dir=evil.git", "config", "core.worktree", "../.."],
        );
        // A nested repository borrowing the other one's objects.
        git(root, &["init", "-q", "alt"]);
        fs::write(
            root.join("alt/.git/objects/info/alternates"),
            format!("{}\n", b.parent.join("other/.git/objects").display()),
        )
        .unwrap();
        let head = String::from_utf8(
            Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(b.parent.join("other"))
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let env = env(&[]);
        for (argv, cwd) in [
            (
                json!(["git", "-C", "sub", "-C", "up", "grep", "--no-index", SECRET]),
                None,
            ),
            (
                json!([
                    "git",
                    "-C",
                    "sub",
                    "diff",
                    "--no-index",
                    "up/outside.txt",
                    "a.txt"
                ]),
                None,
            ),
            (
                json!(["git", "diff", "--no-index", "up/outside.txt", "a.txt"]),
                Some("sub"),
            ),
            (
                json!(["git", "blame", "--contents=../outside.txt", "a.txt"]),
                None,
            ),
            (
                json!(["git", "blame", "--contents=sub/up/outside.txt", "a.txt"]),
                None,
            ),
            (json!(["git", "blame", "-S../outside.txt", "a.txt"]), None),
            (
                json!(["git", "blame", "-wSsub/up/outside.txt", "a.txt"]),
                None,
            ),
            (json!(["file", "-kf../outside.txt"]), None),
            (json!(["file", "--files=../outside.txt"]), None),
            (json!(["file", "-m", "x:sub/up/outside.txt", "a.txt"]), None),
            (json!(["wc", "--files0-from=../outside.txt"]), None),
            (json!(["wc", "--files0=sub/up/outside.txt"]), None),
            (json!(["tree", "-H", ".", "--hintro=../outside.txt"]), None),
            (json!(["rg", "--files", ".."]), None),
            (json!(["rg", "--files", "up"]), Some("sub")),
            (json!(["git", "-C", "gf", "log", "-p"]), None),
            (json!(["git", "log", "-p"]), Some("gf")),
            (json!(["git", "-C", "gf", "grep", SECRET]), None),
            (json!(["git", "--git-dir=evil.git", "status"]), None),
            (
                json!(["git", "-C", "evil.git", "grep", "--untracked", SECRET]),
                None,
            ),
            (json!(["git", "-C", "alt", "show", head.trim()]), None),
        ] {
            let (text, is_error) = call(&b.ws, &env, &json!({"argv": argv, "cwd": cwd}));
            assert!(is_error, "{argv} ran: {text}");
            assert!(!text.contains(SECRET), "{argv}: {text}");
            assert!(
                text.contains("outside") || text.contains("elsewhere"),
                "{argv}: {text}"
            );
        }
    }

    /// Its own repository, nested ones inside the workspace, and a worktree's git directory
    /// (outside the workspace by design) stay usable.
    #[test]
    fn the_workspaces_own_and_nested_repositories_are_used() {
        let b = beside();
        let root = b.ws.root();
        git(root, &["init", "-q", "nested"]);
        let env = env(&[]);
        for (argv, cwd) in [
            (json!(["git", "log", "--oneline"]), None),
            (json!(["git", "-C", "sub", "log", "--oneline"]), None),
            (json!(["git", "status", "--short"]), Some("sub")),
            (json!(["git", "-C", "nested", "status"]), None),
            (json!(["git", "-C", ".git", "rev-parse", "--git-dir"]), None),
            (json!(["git", "grep", "--no-index", "a", "--", "sub"]), None),
        ] {
            let (text, is_error) = call(&b.ws, &env, &json!({"argv": argv, "cwd": cwd}));
            assert!(!is_error, "{argv}: {text}");
        }
        git(root, &["worktree", "add", "-q", "../wt"]);
        let wt = Workspace::new(b.parent.join("wt")).unwrap();
        for argv in [json!(["git", "log", "--oneline"]), json!(["git", "status"])] {
            let (text, is_error) = call(&wt, &env, &json!({ "argv": argv }));
            assert!(!is_error, "{argv}: {text}");
        }
    }

    /// `blame.ignoreRevsFile` in `.git/config` names a file anywhere; `git blame` does not
    /// read it (here it would fail on a line that is not a revision).
    #[test]
    fn blame_does_not_read_the_repositorys_ignore_revs_file() {
        let b = beside();
        git(
            b.ws.root(),
            &["config", "blame.ignoreRevsFile", "../outside.txt"],
        );
        let (text, is_error) = call(
            &b.ws,
            &env(&[]),
            &json!({"argv": ["git", "blame", "a.txt"]}),
        );
        assert!(!is_error, "{text}");
        assert!(!text.contains(SECRET), "{text}");
    }

    /// Issue 17, item 15: a value that starts with `/` after its option is a value; a path
    /// outside gets the `--grep=` hint from git only.
    #[test]
    fn separate_values_starting_with_a_slash_are_values() {
        let b = beside();
        fs::write(b.ws.root().join("api.txt"), "see /api/ here\n").unwrap();
        let env = env(&[]);
        for argv in [
            json!(["git", "log", "--grep", "/init/", "-i"]),
            json!(["grep", "-e", "/api/", "api.txt"]),
            json!(["git", "grep", "-e", "/api/"]),
        ] {
            let (text, _) = call(&b.ws, &env, &json!({ "argv": argv }));
            assert!(!text.contains("outside the workspace"), "{argv}: {text}");
        }
        let (text, _) = call(&b.ws, &env, &json!({"argv": ["git", "log", "/api/"]}));
        assert!(text.ends_with("attach it: `--grep=/api/`"), "{text}");
        for argv in [
            json!(["grep", "/api/", "/etc"]),
            json!(["cat", "/etc/hostname"]),
        ] {
            let (text, is_error) = call(&b.ws, &env, &json!({ "argv": argv }));
            assert!(is_error && !text.contains("--grep="), "{argv}: {text}");
        }
    }

    /// Issue 17, item 15: without a `Cargo.lock`, `cargo tree` would have to write one.
    #[test]
    fn cargo_tree_without_a_lock_file_is_refused_with_what_to_do() {
        let b = beside();
        let root = b.ws.root();
        fs::create_dir_all(root.join("c/src")).unwrap();
        fs::write(
            root.join("c/Cargo.toml"),
            "[package]\nname = \"c\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        fs::write(root.join("c/src/lib.rs"), "").unwrap();
        let env = env(&[]);
        for (argv, cwd) in [
            (json!(["cargo", "tree"]), Some("c")),
            (
                json!(["cargo", "tree", "--manifest-path", "c/Cargo.toml"]),
                None,
            ),
            (
                json!(["cargo", "tree", "--manifest-path=c/Cargo.toml"]),
                None,
            ),
        ] {
            let (text, is_error) = call(&b.ws, &env, &json!({"argv": argv, "cwd": cwd}));
            assert!(is_error, "{argv}: {text}");
            assert!(
                text.starts_with(
                    "`cargo tree` needs a `Cargo.lock`, and there is none for `c/Cargo.toml`"
                ),
                "{argv}: {text}"
            );
        }
        assert!(!root.join("c/Cargo.lock").exists());
    }

    #[test]
    fn a_persons_ctrl_c_stops_the_command_at_once() {
        let (_dir, ws) = setup();
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let env = env(&[]).with_interrupt(std::sync::Arc::clone(&flag));
        let setup = Setup::new(AllowList::default()).without_allow_list_for_tests();
        let pressed = std::sync::Arc::clone(&flag);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            pressed.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let started = std::time::Instant::now();
        let outcome = run(&ws, &env, &setup, &json!({"argv": ["sleep", "20"]}));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "waited {:?} for a command a person stopped",
            started.elapsed()
        );
        let ToolOutcome::Output { text, .. } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(text.contains("interrupted (Ctrl-C)"), "{text}");
    }

    #[test]
    fn a_failing_command_reports_its_exit_code() {
        let (_dir, ws) = setup();
        let setup = Setup::new(AllowList::default());
        let outcome = run(&ws, &env(&[]), &setup, &json!({"argv": ["ls", "missing"]}));
        assert_eq!(outcome.exit_code(), Some(2));
        let ToolOutcome::Output { text, is_error, .. } = outcome else {
            panic!()
        };
        assert!(is_error);
        assert!(text.contains("exit code 2, "), "{text}");
    }
}
