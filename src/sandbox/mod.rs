//! The sandbox every command tick runs for the agent goes through (`bash`, step `verify`
//! commands, plan mode's `run_command`): one [`Policy`] type, enforced by the kernel.
//!
//! How a command is contained (Linux; `docs/sandbox.md` says what each layer stops):
//!
//! 1. tick runs the command through its own binary, `tick __sandbox <policy> -- argv…`
//!    ([`Policy::command`]). That helper, still single-threaded, dies with tick
//!    (`PR_SET_PDEATHSIG`), unshares a user, mount, pid and IPC namespace (and a network
//!    namespace when the policy has no network), mounts a private tmpfs on `/tmp` (read-only in plan mode),
//!    bind-mounts the workspace `nosuid` and `.git` and `.tasks` read-only over themselves,
//!    and remounts every other mount read-only (all of them for the read-only policy).
//! 2. It starts `tick __sandbox-init`, PID 1 of the new pid namespace, which dies with stage
//!    1, is not dumpable, mounts a fresh `/proc` (tick's processes are not in it) and starts
//!    `tick __sandbox-exec`. It reaps every orphan, and when the command ends it exits: the
//!    kernel then kills whatever is left in the namespace, `setsid` and double forks
//!    included.
//! 3. `tick __sandbox-exec` enters a user namespace of its own as a uid other than 0, sets
//!    `PR_SET_NO_NEW_PRIVS` and a Landlock ruleset (read everywhere, write only where the
//!    policy says; Landlock also forbids any further mount or unmount, and ptrace or signals
//!    out of its domain, so PID 1 is out of reach), and `execve`s the command, which then has
//!    no capability.
//! 4. tick's own process is not dumpable (`PR_SET_DUMPABLE 0`, [`harden_this_process`]), and
//!    the command's environment is the cleaned one the caller gives the helper.
//!
//! No string checks anywhere: a command is not inspected, only confined.

pub mod gitfiles;
#[cfg(target_os = "linux")]
mod linux;
mod scan;
pub mod tamper;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde::{Deserialize, Serialize};

pub use scan::{clear_setuid, links_leaving};

/// The line the helper writes to its stdin pipe when the command left processes running,
/// which the sandbox then killed (see [`Policy::command`]).
pub const LEFTOVERS: &str = "leftovers";
/// The hidden subcommand of tick's binary that sets the sandbox up (stage 1).
pub const HELPER_ARG: &str = "__sandbox";
/// The hidden subcommand that runs as PID 1 inside the sandbox (stage 2).
pub const INIT_ARG: &str = "__sandbox-init";
/// The hidden subcommand that confines itself and becomes the command (stage 3).
pub const EXEC_ARG: &str = "__sandbox-exec";
/// The hidden subcommand that only checks the sandbox can be set up ([`available`]).
pub const PROBE_ARG: &str = "__sandbox-probe";

/// What a policy allows, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Build mode: writes inside the workspace (never `.git/` or `.tasks/`) and a private
    /// `/tmp`; network unless the configuration turns it off.
    Build,
    /// Plan mode: no writes anywhere, no network.
    ReadOnly,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Build => "build",
            Kind::ReadOnly => "read-only",
        }
    }
}

/// Where a sandboxed command may write, and whether it may reach the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    kind: Kind,
    /// The workspace root: the command's working directory, writable for [`Kind::Build`].
    workspace: PathBuf,
    network: bool,
    /// More writable directories (`sandbox.writable` in the config), for build only.
    writable: Vec<PathBuf>,
    /// Sockets to hide besides the known ones: those tick's own environment names
    /// (`SSH_AUTH_SOCK`), filled in by [`Policy::command`]. Left out of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    hidden: Vec<PathBuf>,
    /// The command talks over the caller's stdin (an MCP server, [`Policy::with_stdio`]);
    /// the helper then reports nothing on it. Left out of the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    stdio: bool,
    /// Read-only only: the person's `/tmp` stays in view (read-only) instead of an empty one
    /// ([`Policy::with_shared_tmp`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shared_tmp: bool,
    /// The binary that holds the helper subcommands; `None`: this process's own binary.
    #[serde(skip)]
    helper: Option<PathBuf>,
}

impl Policy {
    /// Build mode: writes only inside `workspace` (never under its `.git/` or `.tasks/`, which
    /// are read-only) and in a private `/tmp`; network allowed (see [`Policy::with_network`]).
    pub fn build(workspace: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::Build,
            workspace: workspace.into(),
            network: true,
            writable: Vec::new(),
            hidden: Vec::new(),
            stdio: false,
            shared_tmp: false,
            helper: None,
        }
    }

    /// Plan mode: no writes anywhere (only `/dev/null` and the like), no network.
    pub fn read_only(workspace: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::ReadOnly,
            workspace: workspace.into(),
            network: false,
            writable: Vec::new(),
            hidden: Vec::new(),
            stdio: false,
            shared_tmp: false,
            helper: None,
        }
    }

    /// Allow or forbid the network (`sandbox.network` in the config). A read-only policy
    /// never has network, whatever this says.
    #[must_use]
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network && self.kind == Kind::Build;
        self
    }

    /// Also allow writes under these absolute directories (`sandbox.writable` in the config:
    /// a cache such as `~/.cargo/registry`). Ignored by a read-only policy.
    #[must_use]
    pub fn with_writable(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        if self.kind == Kind::Build {
            self.writable.extend(paths);
        }
        self
    }

    /// The command's stdin is the caller's own (the returned `Command`'s), not `/dev/null`:
    /// for a server that talks over stdin and stdout (an MCP server). The helper then writes
    /// nothing to that stdin ([`LEFTOVERS`] is not reported), and the command still dies with
    /// every process it started.
    #[must_use]
    pub fn with_stdio(mut self) -> Self {
        self.stdio = true;
        self
    }

    /// Network or not for a server the person configured (`mcp_servers.NAME.network`), for
    /// either kind of policy: unlike [`Policy::with_network`], a read-only policy may have
    /// it, because the person said so for this one server. Commands of the agent never get a
    /// policy made with this.
    #[must_use]
    pub fn with_server_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Keep the person's `/tmp` in view, read-only, instead of the empty private one a
    /// read-only command gets: for tick's own git calls only, which must see a repository
    /// that a planning command names outside the workspace (under `/tmp` too) to refuse it.
    /// Ignored by a build policy.
    #[must_use]
    pub fn with_shared_tmp(mut self) -> Self {
        self.shared_tmp = self.kind == Kind::ReadOnly;
        self
    }

    /// Use `binary` (a tick executable) as the helper instead of this process's own binary:
    /// for callers that are not tick itself, such as tests.
    #[must_use]
    pub fn with_helper(mut self, binary: impl Into<PathBuf>) -> Self {
        self.helper = Some(binary.into());
        self
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn network(&self) -> bool {
        self.network
    }

    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// A `Command` that runs `program` with `args` inside this sandbox, with the workspace as
    /// its working directory (the caller may set another one inside the workspace, with
    /// `current_dir`, before spawning). The caller sets the environment (it is passed on unchanged, so
    /// clean it first), stdout/stderr, a process group and timeouts, then spawns it. The
    /// command's stdin is `/dev/null` (see below). `program` is looked up in the `PATH` the caller
    /// gives it, inside the sandbox.
    ///
    /// The exit status is the command's own: its exit code, or death by the same signal.
    /// When the returned process ends (or is killed), every process the command started is
    /// gone. Before relying on it, check [`available`] once: this function does not.
    ///
    /// The helper dies when the thread that spawns it ends (`PR_SET_PDEATHSIG` follows the
    /// thread, not the process), and the whole sandbox with it: spawn it from a thread that
    /// outlives the command, such as the one that waits for it. That is what kills the
    /// command when tick exits, however it exits.
    ///
    /// The command's own stdin is always `/dev/null`. A caller that wants to know more gives
    /// the returned `Command` the write end of a pipe as stdin: the helper writes one line per
    /// fact to it before it exits, today only [`LEFTOVERS`].
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Command {
        let helper = self
            .helper
            .clone()
            .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
        let mut policy = self.clone();
        policy
            .hidden
            .extend(agent_sockets(|name| std::env::var_os(name)));
        let mut command = Command::new(helper);
        command
            .arg(HELPER_ARG)
            .arg(policy.to_json())
            .arg("--")
            .arg(program)
            .args(args)
            .current_dir(&self.workspace);
        command
    }

    fn to_json(&self) -> String {
        // A struct of strings, paths and bools always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The sockets of agents that hold the person's keys, as `var` (tick's own environment: the
/// command's is already cleaned of them) names them: ssh's `SSH_AUTH_SOCK` and gpg's
/// `GPG_AGENT_INFO` (`path:pid:1`). The helper hides each, wherever it is.
fn agent_sockets(var: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut sockets = Vec::new();
    if let Some(ssh) = var("SSH_AUTH_SOCK") {
        sockets.push(PathBuf::from(ssh));
    }
    if let Some(gpg) = var("GPG_AGENT_INFO")
        && let Some(path) = gpg.to_string_lossy().split(':').next()
    {
        sockets.push(PathBuf::from(path));
    }
    sockets.retain(|p| p.is_absolute());
    sockets
}

/// A kernel feature the sandbox needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// The sandbox is built on Linux namespaces and Landlock.
    Linux,
    /// Unprivileged user namespaces (`kernel.unprivileged_userns_clone`,
    /// `user.max_user_namespaces`, `AppArmor`'s `apparmor_restrict_unprivileged_userns`).
    UserNamespaces,
    /// Mount namespaces and the read-only bind mounts, `/tmp` and `/proc` inside them.
    Mounts,
    /// A pid namespace, so that the command's whole process tree can be ended.
    PidNamespace,
    /// A network namespace, for a policy without network.
    NetworkNamespace,
    /// An IPC namespace (System V shared memory, semaphores, message queues).
    IpcNamespace,
    /// The Landlock LSM (Linux 5.13+, enabled in `lsm=`).
    Landlock,
    /// tick's own binary, which runs the sandbox helper.
    Helper,
}

impl Feature {
    pub fn as_str(self) -> &'static str {
        match self {
            Feature::Linux => "Linux",
            Feature::UserNamespaces => "unprivileged user namespaces",
            Feature::Mounts => "mount namespaces",
            Feature::PidNamespace => "pid namespaces",
            Feature::NetworkNamespace => "network namespaces",
            Feature::IpcNamespace => "IPC namespaces",
            Feature::Landlock => "Landlock",
            Feature::Helper => "tick's sandbox helper",
        }
    }
}

/// Why the sandbox cannot be set up here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub feature: Feature,
    /// What the kernel said, for the person.
    pub detail: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the command sandbox needs {}, which is not available: {}",
            self.feature.as_str(),
            self.detail
        )
    }
}

impl std::error::Error for Unavailable {}

impl Unavailable {
    /// The `hint:` line for a person: how to opt out, knowing what that means.
    pub const OPT_OUT_HINT: &str = "run without the sandbox only if you trust the model and the \
         repository: `--no-sandbox`, `TICK_SANDBOX=off`, or `sandbox: off` in \
         `~/.config/tick/config.yaml`; the run is then recorded as unsandboxed";
}

/// Whether commands can run under a policy of `kind` on this machine, by setting a sandbox
/// up for real in a throwaway helper process (a few milliseconds).
pub fn available(kind: Kind) -> Result<(), Unavailable> {
    available_with(kind, None)
}

/// [`available`], with `helper` as the tick binary (see [`Policy::with_helper`]).
pub fn available_with(kind: Kind, helper: Option<&Path>) -> Result<(), Unavailable> {
    #[cfg(target_os = "linux")]
    {
        linux::probe(kind, helper)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (kind, helper);
        Err(Unavailable {
            feature: Feature::Linux,
            detail: format!("this is {}", std::env::consts::OS),
        })
    }
}

/// How the commands of one run are contained: under a policy, or not at all because the
/// person opted out (`--no-sandbox`, `sandbox: off`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandboxing {
    On(Policy),
    Off,
}

impl Sandboxing {
    pub fn policy(&self) -> Option<&Policy> {
        match self {
            Sandboxing::On(policy) => Some(policy),
            Sandboxing::Off => None,
        }
    }
}

/// If `args` (the program name first) ask for one of the hidden sandbox subcommands, run it
/// and return its exit code; tick's `main` calls this before anything else, while the
/// process is still single-threaded (namespaces require it).
pub fn helper_main(args: &[OsString]) -> Option<ExitCode> {
    let sub = args.get(1)?.to_str()?;
    if ![HELPER_ARG, INIT_ARG, EXEC_ARG, PROBE_ARG].contains(&sub) {
        return None;
    }
    #[cfg(target_os = "linux")]
    {
        Some(linux::helper_main(sub, &args[2..]))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Some(ExitCode::from(125))
    }
}

/// Second layer for tick's own process: not dumpable, so other processes of the same user
/// cannot read its memory or `/proc/<pid>/environ` (where the API key is) or ptrace it.
/// Errors are ignored: the namespaces are the first layer.
pub fn harden_this_process() {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_dumpable(false);
    }
}

/// The sandbox settings of `.tasks/config.yaml` (or the user's config), resolved:
///
/// ```yaml
/// sandbox: off               # or `on` (the default)
/// sandbox:
///   network: false           # build mode without network (plan mode never has it)
///   writable: [~/.cargo/registry, /var/cache/ccache]
///   env: [CARGO_HOME, SSL_CERT_FILE]   # only in the person's own file
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    pub network: bool,
    /// Absolute paths (`~/` expanded) writable in build mode besides the workspace and /tmp.
    pub writable: Vec<PathBuf>,
    /// Variables commands get besides the allow-list (`tools::bash::PASSED_ENV`), from the
    /// person's own config only.
    pub env: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            network: true,
            writable: Vec::new(),
            env: Vec::new(),
        }
    }
}

impl Settings {
    /// The build-mode policy for `workspace` under these settings.
    pub fn build_policy(&self, workspace: impl Into<PathBuf>) -> Policy {
        Policy::build(workspace)
            .with_network(self.network)
            .with_writable(self.writable.iter().cloned())
    }

    /// How `tick run` contains its commands: these settings and `--no-sandbox` decide, and a
    /// sandbox that is on but cannot be set up here is an error that names what is missing.
    pub fn sandboxing(
        &self,
        workspace: impl Into<PathBuf>,
        no_sandbox_flag: bool,
    ) -> Result<Sandboxing, Unavailable> {
        if no_sandbox_flag || !self.enabled {
            return Ok(Sandboxing::Off);
        }
        let policy = self.build_policy(workspace);
        available(Kind::Build)?;
        Ok(Sandboxing::On(policy))
    }
}

/// What `tick run` says when its commands run without the sandbox.
pub const UNSANDBOXED_WARNING: &str = "the agent's commands run without the sandbox \
     (`--no-sandbox` or `sandbox: off`): they can write anywhere you can, read tick's \
     environment and outlive tick";

/// [`Settings::sandboxing`] for `tick run`, as a user-facing error that says nothing ran and
/// how to opt out.
pub fn for_run(
    settings: &Settings,
    workspace: &Path,
    no_sandbox_flag: bool,
) -> crate::error::Result<Sandboxing> {
    settings
        .sandboxing(workspace, no_sandbox_flag)
        .map_err(|unavailable| {
            crate::error::Error::input(format!("{unavailable}; nothing was run"))
                .hint(Unavailable::OPT_OUT_HINT)
        })
}

/// The most read of a `.git` file or a `commondir`: one path each. A clone controls both, so a
/// FIFO or a link to `/dev/zero` in their place is refused, never read.
const GIT_POINTER_MAX: u64 = 64 * 1024;

/// `root/.git` and, when that is a worktree's `.git` file, the git directory it points to and
/// that one's common directory. The last is where `config` and `hooks/` are.
fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let mut dirs = vec![dot_git.clone()];
    if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file())
        && let Ok(Some(text)) = crate::fsx::read_capped(&dot_git, GIT_POINTER_MAX)
        && let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:"))
    {
        let gitdir = root.join(target.trim());
        dirs.push(gitdir.clone());
        if let Ok(Some(common)) =
            crate::fsx::read_capped(&gitdir.join("commondir"), GIT_POINTER_MAX)
        {
            dirs.push(gitdir.join(common.trim()));
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone ships the `.git` file; the agent can make a FIFO or a link to `/dev/zero` as the
    /// `commondir` it points to. Reading them would hang tick before every command.
    #[test]
    fn git_dirs_never_block_or_read_without_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".git"), "gitdir: g\n").unwrap();
        std::fs::create_dir(root.join("g")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("g/commondir"))
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = root.to_path_buf();
        std::thread::spawn(move || tx.send(git_dirs(&owned)).unwrap());
        let dirs = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("git_dirs blocked on a FIFO");
        assert_eq!(dirs, [root.join(".git"), root.join("g")]);

        std::fs::remove_file(root.join("g/commondir")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("g/commondir")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = root.to_path_buf();
        std::thread::spawn(move || tx.send(git_dirs(&owned)).unwrap());
        let dirs = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("git_dirs read /dev/zero");
        assert_eq!(dirs, [root.join(".git"), root.join("g")]);
    }

    #[test]
    fn a_policy_travels_to_the_helper_unchanged() {
        let policy = Policy::build("/work/space")
            .with_network(false)
            .with_writable([PathBuf::from("/cache")]);
        let back: Policy = serde_json::from_str(&policy.to_json()).unwrap();
        assert_eq!(back, policy);
        let var = |name: &str| match name {
            "SSH_AUTH_SOCK" => Some(OsString::from("/tmp/ssh-x/agent.1")),
            "GPG_AGENT_INFO" => Some(OsString::from("/run/g/S.gpg-agent:12:1")),
            _ => None,
        };
        assert_eq!(
            agent_sockets(var),
            [
                PathBuf::from("/tmp/ssh-x/agent.1"),
                PathBuf::from("/run/g/S.gpg-agent")
            ]
        );
        assert!(agent_sockets(|_| Some(OsString::from("relative"))).is_empty());
        let command = policy.command("bash", ["-c", "true"]);
        let args: Vec<&OsStr> = command.get_args().collect();
        assert_eq!(args[0], HELPER_ARG);
        assert_eq!(&args[2..], ["--", "bash", "-c", "true"]);
        assert_eq!(command.get_program(), "/proc/self/exe");
        assert_eq!(command.get_current_dir(), Some(Path::new("/work/space")));
    }

    #[test]
    fn read_only_never_gets_network_or_writable_directories() {
        let policy = Policy::read_only("/w")
            .with_network(true)
            .with_writable([PathBuf::from("/cache")]);
        assert_eq!(policy.kind(), Kind::ReadOnly);
        assert!(!policy.network());
        assert!(policy.writable().is_empty());
        assert!(Policy::build("/w").network());
    }

    #[test]
    fn only_the_hidden_subcommands_are_taken_by_the_helper() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(helper_main(&args(&["tick", "run"])).is_none());
        assert!(helper_main(&args(&["tick"])).is_none());
        assert!(helper_main(&args(&["tick", "--", HELPER_ARG])).is_none());
    }

    #[test]
    fn a_helper_that_is_not_tick_is_reported_not_trusted() {
        // `/bin/true` exits 0 but never prints the probe's answer.
        let err = available_with(Kind::Build, Some(Path::new("/bin/true"))).unwrap_err();
        assert_eq!(err.feature, Feature::Helper);
        let err = available_with(Kind::ReadOnly, Some(Path::new("/no/such/tick"))).unwrap_err();
        assert_eq!(err.feature, Feature::Helper);
        assert!(err.to_string().starts_with(
            "the command sandbox needs tick's sandbox helper, which is not available: could not \
             start `/no/such/tick`"
        ));
    }

    #[test]
    fn the_opt_out_needs_no_kernel_feature() {
        let settings = Settings {
            enabled: false,
            ..Settings::default()
        };
        assert_eq!(settings.sandboxing("/w", false), Ok(Sandboxing::Off));
        assert_eq!(
            Settings::default().sandboxing("/w", true),
            Ok(Sandboxing::Off)
        );
    }
}
