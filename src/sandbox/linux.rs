//! The Linux sandbox: the three helper stages and the probe behind [`super::available`].
//!
//! Stage 1 (`tick __sandbox`) runs in the caller's namespaces and builds new ones; stage 2
//! (`tick __sandbox-init`) is PID 1 of the new pid namespace, starts stage 3 and reaps; stage
//! 3 (`tick __sandbox-exec`) confines itself (a user namespace of its own, Landlock) and
//! becomes the command. Each stage is a fresh exec of tick's binary, so each is
//! single-threaded when it unshares, as the kernel requires. A stage that cannot set
//! something up prints one line `tick-sandbox: unavailable: <feature>: <detail>` on stderr
//! and exits with [`SETUP_FAILED`]; nothing of the command has run then.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read, Write as _};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::Signal;
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Gid, Pid, Uid};

use super::{EXEC_ARG, Feature, INIT_ARG, Kind, PROBE_ARG, Policy, Unavailable};

/// The exit code of a helper stage that could not set the sandbox up.
pub const SETUP_FAILED: u8 = 125;
/// What the probe command prints when it ran inside a complete sandbox.
const PROBE_OK: &str = "tick-sandbox-ok";
const PREFIX: &str = "tick-sandbox: unavailable: ";
/// The Landlock ABI whose access rights tick handles (9 adds connecting to pathname UNIX
/// sockets); kernels that know less enforce what they know (best effort), and a kernel
/// without Landlock is refused.
const LANDLOCK_ABI: ABI = ABI::V9;
const SHM: &str = "/dev/shm";
/// The uid and gid the command has inside its user namespace when tick runs as root: any
/// other than 0, so that it holds no capability after `execve`. Files of the caller show as
/// this id's inside (the namespace maps it to the caller).
const ROOT_STAND_IN: &str = "1000";
/// Where daemons keep their sockets (docker, containerd, podman, systemd's private socket and
/// the buses, snapd, libvirt, a devcontainer's `/var/run/docker-host.sock`, databases): an
/// empty tmpfs each.
const RUNTIME_DIRS: [&str; 2] = ["/run", "/var/run"];
/// Sockets of daemons that run what they are asked as someone else (root, often), outside
/// the runtime directories.
const DAEMON_SOCKETS: [&str; 4] = [
    "/var/snap/lxd/common/lxd/unix.socket",
    "/var/lib/lxd/unix.socket",
    "/var/lib/incus/unix.socket",
    "/var/lib/incus/unix.socket.user",
];
/// Below each home directory: agents' keys and sockets, and desktop container daemons'.
const HOME_SOCKET_DIRS: [&str; 9] = [
    ".ssh",
    ".gnupg",
    ".docker/run",
    ".docker/desktop",
    ".colima",
    ".lima",
    ".local/share/containers/podman/machine",
    ".rd",
    ".orbstack",
];
/// Files under `/dev` every command may read and write.
/// Not `/dev/tty`: the command has no controlling terminal (see [`stage2`]).
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// A setup failure, as the stages report it.
struct Failure(Feature, String);

impl Failure {
    fn new(feature: Feature, what: &str, err: impl std::fmt::Display) -> Self {
        Failure(feature, format!("{what}: {err}"))
    }
}

pub fn helper_main(sub: &str, rest: &[OsString]) -> ExitCode {
    let result = match sub {
        super::HELPER_ARG => stage1(rest),
        INIT_ARG => stage2(rest),
        EXEC_ARG => stage3(rest),
        PROBE_ARG => {
            // Inside the sandbox: everything was set up, or a stage before would have stopped.
            let _ = writeln!(io::stdout(), "{PROBE_OK}");
            Ok(ExitCode::SUCCESS)
        }
        _ => Ok(ExitCode::from(SETUP_FAILED)),
    };
    result.unwrap_or_else(|Failure(feature, detail)| {
        let _ = writeln!(io::stderr(), "{PREFIX}{}: {detail}", feature_id(feature));
        ExitCode::from(SETUP_FAILED)
    })
}

/// Sets a sandbox of `kind` up in a throwaway helper and runs the probe inside it.
pub fn probe(kind: Kind, helper: Option<&Path>) -> Result<(), Unavailable> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut policy = match kind {
        Kind::Build => Policy::build(cwd).with_network(false),
        Kind::ReadOnly => Policy::read_only(cwd),
    };
    if let Some(helper) = helper {
        policy = policy.with_helper(helper);
    }
    let inner = helper.map_or_else(|| PathBuf::from("/proc/self/exe"), Path::to_path_buf);
    let output = policy
        .command(&inner, [PROBE_ARG])
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|err| Unavailable {
            feature: Feature::Helper,
            detail: format!("could not start `{}`: {err}", inner.display()),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && stdout.trim() == PROBE_OK {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(stderr
        .lines()
        .find_map(|line| {
            let (id, detail) = line.strip_prefix(PREFIX)?.split_once(": ")?;
            Some(Unavailable {
                feature: feature_from_id(id)?,
                detail: detail.to_owned(),
            })
        })
        .unwrap_or_else(|| Unavailable {
            feature: Feature::Helper,
            detail: format!(
                "the helper `{}` did not set the sandbox up ({}): {}",
                inner.display(),
                output.status,
                stderr.trim()
            ),
        }))
}

fn feature_id(feature: Feature) -> &'static str {
    match feature {
        Feature::Linux => "linux",
        Feature::UserNamespaces => "user-namespaces",
        Feature::Mounts => "mounts",
        Feature::PidNamespace => "pid-namespace",
        Feature::NetworkNamespace => "network-namespace",
        Feature::IpcNamespace => "ipc-namespace",
        Feature::Landlock => "landlock",
        Feature::Helper => "helper",
    }
}

fn feature_from_id(id: &str) -> Option<Feature> {
    [
        Feature::Linux,
        Feature::UserNamespaces,
        Feature::Mounts,
        Feature::PidNamespace,
        Feature::NetworkNamespace,
        Feature::IpcNamespace,
        Feature::Landlock,
        Feature::Helper,
    ]
    .into_iter()
    .find(|&f| feature_id(f) == id)
}

/// `<policy-json> [extra…] -- <program> <args…>`: the policy, the `extra` arguments, argv.
fn parse_args(
    rest: &[OsString],
    extra: usize,
) -> Result<(Policy, Vec<String>, &[OsString]), Failure> {
    let bad = || Failure(Feature::Helper, "bad helper arguments".to_owned());
    let json = rest.first().and_then(|s| s.to_str()).ok_or_else(bad)?;
    let policy: Policy = serde_json::from_str(json)
        .map_err(|err| Failure::new(Feature::Helper, "bad policy", err))?;
    let extras = rest
        .get(1..=extra)
        .ok_or_else(bad)?
        .iter()
        .map(|s| s.to_str().map(str::to_owned).ok_or_else(bad))
        .collect::<Result<Vec<_>, _>>()?;
    if rest.get(extra + 1).map(OsString::as_os_str) != Some(OsStr::new("--")) {
        return Err(bad());
    }
    let argv = &rest[extra + 2..];
    if argv.is_empty() {
        return Err(bad());
    }
    Ok((policy, extras, argv))
}

/// Stage 1: new namespaces; every mount read-only but the writable directories (build:
/// the workspace without `.git`/`.tasks`, a private `/tmp`); then stage 2.
#[allow(
    clippy::too_many_lines,
    reason = "the namespaces, mounts and init of one sandbox, in the order they must happen"
)]
fn stage1(rest: &[OsString]) -> Result<ExitCode, Failure> {
    // When tick ends, however it ends (a second Ctrl-C, a signal, a panic, SIGKILL), this
    // process gets SIGKILL, and its death kills stage 2 and with it the whole namespace. The
    // signal follows the thread that spawned this process: see `Policy::command`.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|err| Failure::new(Feature::PidNamespace, "PR_SET_PDEATHSIG", err))?;
    let (policy, _, argv) = parse_args(rest, 0)?;
    // The caller's working directory (the workspace, or a directory in it), entered again by
    // path once the mounts are in place: a directory under /tmp is then the one bound back.
    let cwd = std::env::current_dir()
        .map_err(|err| Failure::new(Feature::Helper, "the working directory", err))?;
    let uid = Uid::current();
    let gid = Gid::current();

    unshare(CloneFlags::CLONE_NEWUSER)
        .map_err(|err| Failure::new(Feature::UserNamespaces, "unshare(CLONE_NEWUSER)", err))?;
    // Root inside, mapped to the caller: the mounts below need it; stage 2 maps back.
    map_ids("0", &uid.to_string(), "0", &gid.to_string())?;
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|err| Failure::new(Feature::Mounts, "unshare(CLONE_NEWNS)", err))?;
    unshare(CloneFlags::CLONE_NEWPID)
        .map_err(|err| Failure::new(Feature::PidNamespace, "unshare(CLONE_NEWPID)", err))?;
    // SysV shared memory, semaphores and message queues, and POSIX queues, of its own.
    unshare(CloneFlags::CLONE_NEWIPC)
        .map_err(|err| Failure::new(Feature::IpcNamespace, "unshare(CLONE_NEWIPC)", err))?;
    if !policy.network {
        own_network()?;
    }
    // Nothing done in here may reach the caller's mount namespace.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|err| Failure::new(Feature::Mounts, "making `/` private", err))?;

    let workspace = fs::canonicalize(&policy.workspace).map_err(|err| {
        Failure::new(
            Feature::Mounts,
            &format!("workspace `{}`", policy.workspace.display()),
            err,
        )
    })?;
    let protected = protected_paths(&workspace);
    // What stays visible under the fresh tmpfs on /tmp and /run: the workspace, the git
    // directories of a worktree (which may live under /tmp), the writable directories, and
    // the working directory where that is outside the workspace (tick's own commit runs with
    // the git directory as the workspace and the work tree as its directory).
    let mut keep = vec![workspace.clone(), cwd.clone()];
    keep.extend(policy.writable.iter().chain(&protected).cloned());
    // The program itself, named by its path: the directory it is in stays in view (an MCP
    // server or a tick binary installed under /tmp runs, its neighbours with it), read-only
    // unless it is writable anyway.
    keep.extend(program_dir(argv.first().map(PathBuf::from)));
    hide_runtime_dirs(&keep)?;
    // The mounts that stay writable; every other one is made read-only below.
    let mut writable = Vec::new();
    // Both modes get an empty /tmp of their own: a planning tool never reads the person's
    // (read-only, it stays empty). tick's own git checks alone keep it in view.
    if !policy.shared_tmp {
        private_tmp(&keep)?;
    }
    if policy.kind == Kind::Build {
        writable.push(workspace.clone());
        writable.extend(
            policy
                .writable
                .iter()
                .filter_map(|p| fs::canonicalize(p).ok()),
        );
        for path in &writable {
            bind_writable(path)?;
        }
        writable.push(PathBuf::from("/tmp"));
        writable.push(PathBuf::from(SHM));
        for path in protected {
            bind_read_only(&path)?;
        }
    }
    hide_sockets(&policy.hidden, uid)?;
    // Landlock has no right for chmod, utimes or extended attributes: a read-only mount
    // refuses them.
    read_only_except(&writable)?;

    let (mut status_reader, status_writer) =
        io::pipe().map_err(|err| Failure::new(Feature::Helper, "pipe", err))?;
    let mut init = Command::new("/proc/self/exe");
    init.arg(INIT_ARG)
        .arg(&rest[0])
        .arg(uid.to_string())
        .arg(gid.to_string())
        .arg("--")
        .args(argv)
        .current_dir(&cwd);
    if policy.stdio {
        // The command talks over this stdin: the init passes it on and reports nothing.
        drop(status_writer);
        init.stdin(Stdio::inherit());
    } else {
        init.stdin(status_writer);
    }
    let mut child = init
        .spawn()
        .map_err(|err| Failure::new(Feature::PidNamespace, "starting the sandbox's init", err))?;
    drop(init);
    let status = child
        .wait()
        .map_err(|err| Failure::new(Feature::Helper, "waiting for the sandbox's init", err))?;
    let mut message = String::new();
    let _ = status_reader.read_to_string(&mut message);
    if message.lines().any(|line| line == super::LEFTOVERS) {
        // The caller's report pipe, if it gave one as stdin (see `Policy::command`).
        let _ = nix::unistd::write(io::stdin(), format!("{}\n", super::LEFTOVERS).as_bytes());
    }
    // The init cannot die of the command's signal (PID 1 ignores it): it says which it was,
    // and this process dies of the same one, so the caller sees the command's own status.
    if let Some(signal) = message
        .lines()
        .find_map(|line| line.strip_prefix("signal "))
        .and_then(|n| n.parse::<i32>().ok())
        .and_then(|n| Signal::try_from(n).ok())
    {
        let _ = nix::sys::signal::raise(signal);
    }
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(SETUP_FAILED),
    ))
}

/// The directory of `program` when it is named by a path (not looked up in `PATH`), resolved.
fn program_dir(program: Option<PathBuf>) -> Option<PathBuf> {
    let program = program?;
    if program.components().count() < 2 {
        return None;
    }
    fs::canonicalize(program)
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

/// A network namespace of its own, with only its loopback interface, up.
fn own_network() -> Result<(), Failure> {
    unshare(CloneFlags::CLONE_NEWNET)
        .map_err(|err| Failure::new(Feature::NetworkNamespace, "unshare(CLONE_NEWNET)", err))?;
    loopback_up().map_err(|err| Failure::new(Feature::NetworkNamespace, "bringing up `lo`", err))
}

/// Brings up the loopback interface of the network namespace this process just made, as
/// root of its user namespace: a verify that starts a server on 127.0.0.1 and talks to it
/// works, and nothing outside is reachable (the namespace has no other interface). One
/// netlink `RTM_NEWLINK` request (`IFF_UP` on interface 1, the kernel's `LOOPBACK_IFINDEX` in
/// every namespace) and its acknowledgement: no ioctl, no `ip` program.
fn loopback_up() -> Result<(), nix::Error> {
    use nix::sys::socket::{
        AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, recv, send,
        socket,
    };
    use std::os::fd::AsRawFd;
    const RTM_NEWLINK: u16 = 16;
    const NLMSG_ERROR: u16 = 2;
    const NLM_F_REQUEST_ACK: u16 = 0x1 | 0x4;
    const LOOPBACK_IFINDEX: i32 = 1;
    const IFF_UP: u32 = 0x1;
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0))?;
    // struct nlmsghdr (len, type, flags, seq, pid), then struct ifinfomsg (family, pad, type,
    // index, flags, change), in the machine's byte order.
    let mut request = Vec::with_capacity(32);
    request.extend(32u32.to_ne_bytes());
    request.extend(RTM_NEWLINK.to_ne_bytes());
    request.extend(NLM_F_REQUEST_ACK.to_ne_bytes());
    request.extend(1u32.to_ne_bytes());
    request.extend(0u32.to_ne_bytes());
    request.extend([0u8, 0]);
    request.extend(0u16.to_ne_bytes());
    request.extend(LOOPBACK_IFINDEX.to_ne_bytes());
    request.extend(IFF_UP.to_ne_bytes());
    request.extend(IFF_UP.to_ne_bytes());
    send(fd.as_raw_fd(), &request, MsgFlags::empty())?;
    let mut answer = [0u8; 256];
    let n = recv(fd.as_raw_fd(), &mut answer, MsgFlags::empty())?;
    // struct nlmsgerr after the header: `error` is 0 for an acknowledgement, else -errno.
    let field = |at: usize| answer.get(at..at + 4).and_then(|b| b.try_into().ok());
    let kind = answer.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    match (n >= 20, kind, field(16).map(i32::from_ne_bytes)) {
        (true, Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (true, Some(NLMSG_ERROR), Some(code)) => Err(nix::Error::from_raw(-code)),
        _ => Err(nix::Error::EPROTO),
    }
}

/// Writes the one-line uid and gid maps of a user namespace this process just entered.
fn map_ids(
    inner_uid: &str,
    outer_uid: &str,
    inner_gid: &str,
    outer_gid: &str,
) -> Result<(), Failure> {
    // Kernel files, written once: nothing to make atomic.
    let write = |file: &str, text: String| {
        fs::write(format!("/proc/self/{file}"), text).map_err(|err| {
            Failure::new(
                Feature::UserNamespaces,
                &format!("writing /proc/self/{file}"),
                err,
            )
        })
    };
    write("setgroups", "deny".to_owned())?;
    write("uid_map", format!("{inner_uid} {outer_uid} 1\n"))?;
    write("gid_map", format!("{inner_gid} {outer_gid} 1\n"))
}

/// The paths that stay read-only in build mode: `.git` (a directory, or the file of a
/// worktree with the git directory it points to and that one's common directory), `.tasks`,
/// and the git files of the work tree ([`super::gitfiles`]: `.gitmodules`, each submodule's
/// `.git`, or its directory where that is missing, and the files `include.path` names).
fn protected_paths(workspace: &Path) -> Vec<PathBuf> {
    let mut paths = super::git_dirs(workspace);
    paths.push(workspace.join(".tasks"));
    for file in super::gitfiles::in_work_tree(workspace) {
        let dir = file.path.parent().filter(|dir| dir.is_dir());
        if fs::symlink_metadata(&file.path).is_ok() {
            paths.push(file.path);
        } else if let Some(dir) = dir.filter(|_| file.submodule) {
            // A submodule not checked out: a `.git` made in its directory would make the
            // person's git enter it.
            paths.push(dir.to_path_buf());
        }
    }
    let mut paths: Vec<PathBuf> = paths
        .into_iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .filter(|p| p != workspace)
        .collect();
    paths.dedup();
    paths
}

/// Hides the UNIX sockets through which a command could ask something outside the sandbox to
/// act for it (`/run/docker.sock`, `/run/systemd/private`, the D-Bus buses whose
/// `systemd-run` runs anything unconfined, ssh and gpg agents, a database's socket): `/run`
/// and `/var/run` (where it is a directory of its own) become an empty tmpfs. Kept there: the
/// links at the top of `/run` (NixOS's `/run/current-system` holds every program), the
/// resolver configuration `/etc/resolv.conf` points to, and the `keep` paths. Landlock closes
/// every pathname socket outside the writable directories on kernels with ABI 9; this covers
/// the known ones before that.
fn hide_runtime_dirs(keep: &[PathBuf]) -> Result<(), Failure> {
    let mut kept: Vec<PathBuf> = keep.to_vec();
    if let Ok(resolver) = fs::canonicalize("/etc/resolv.conf") {
        kept.push(resolver);
    }
    for dir in RUNTIME_DIRS {
        // `/var/run` is a link to `/run` on most systems: nothing more to hide then.
        if fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            fresh_tmpfs(Path::new(dir), "755", &kept, true)?;
        }
    }
    Ok(())
}

/// Hides the daemon sockets outside `/run` (LXD, Incus, a devcontainer's Docker), the
/// directories in each home where agents and desktop daemons keep theirs (`~/.ssh`,
/// `~/.gnupg`, Docker Desktop, Colima, Lima, Podman machines, Rancher Desktop, `OrbStack`), and
/// `extra`, the sockets tick's own environment names (`SSH_AUTH_SOCK`). A directory gets an
/// empty tmpfs, a socket (or any file) `/dev/null`. The homes are `HOME` as the command will
/// see it and the account's own, from the password database (which ssh uses).
fn hide_sockets(extra: &[PathBuf], uid: Uid) -> Result<(), Failure> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Ok(Some(user)) = nix::unistd::User::from_uid(uid) {
        homes.push(user.dir);
    }
    let mut paths: Vec<PathBuf> = DAEMON_SOCKETS.iter().map(PathBuf::from).collect();
    for home in homes.iter().filter(|h| h.is_absolute()) {
        paths.extend(HOME_SOCKET_DIRS.iter().map(|rel| home.join(rel)));
    }
    paths.extend(extra.iter().cloned());
    let mut paths: Vec<PathBuf> = paths
        .into_iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let hidden = if path.is_dir() {
            mount(
                Some("tmpfs"),
                &path,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("mode=700"),
            )
        } else {
            mount(
                Some("/dev/null"),
                &path,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
        };
        hidden.map_err(|err| mount_failed("hiding", &path, err))?;
    }
    Ok(())
}

/// Bind-mounts `path` read-only over itself.
fn bind_read_only(path: &Path) -> Result<(), Failure> {
    bind_over_itself(path)?;
    remount(path, MsFlags::MS_RDONLY).map_err(|err| mount_failed("remounting read-only", path, err))
}

/// Bind-mounts `path` over itself, `nosuid` and `nodev` (a setuid file the command makes
/// there does nothing): a mount of its own, which stays writable when every other one is
/// made read-only.
fn bind_writable(path: &Path) -> Result<(), Failure> {
    bind_over_itself(path)?;
    remount(path, MsFlags::MS_NOSUID | MsFlags::MS_NODEV)
        .map_err(|err| mount_failed("remounting nosuid", path, err))
}

fn mount_failed(what: &str, path: &Path, err: nix::Error) -> Failure {
    Failure::new(
        Feature::Mounts,
        &format!("{what} `{}`", path.display()),
        err,
    )
}

fn bind_over_itself(path: &Path) -> Result<(), Failure> {
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|err| mount_failed("bind-mounting", path, err))
}

/// Every mount of this namespace read-only, but those at or under `writable`. The kernel
/// can do this in one call (`mount_setattr` with `AT_RECURSIVE`), which neither `nix` nor
/// safe Rust offers: each mount of `/proc/self/mountinfo` is remounted on its own. A mount
/// point this process cannot reach by path is out of the command's reach too, and skipped.
fn read_only_except(writable: &[PathBuf]) -> Result<(), Failure> {
    // The kernel's own table of this namespace, not a file a repository can ship (and a
    // proc file, which the regular-file reader would refuse).
    #[allow(clippy::disallowed_methods)]
    let info = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|err| Failure::new(Feature::Mounts, "reading /proc/self/mountinfo", err))?;
    for line in info.lines() {
        let mut fields = line.split(' ');
        let (Some(point), Some(options)) = (fields.nth(4), fields.next()) else {
            continue;
        };
        let point = PathBuf::from(unescape_mount_point(point));
        if options.split(',').any(|o| o == "ro") || writable.iter().any(|w| point.starts_with(w)) {
            continue;
        }
        match remount(&point, MsFlags::MS_RDONLY) {
            Ok(()) | Err(nix::Error::ENOENT | nix::Error::EACCES) => {}
            Err(err) => return Err(mount_failed("remounting read-only", &point, err)),
        }
    }
    Ok(())
}

/// A mount point as `/proc/self/mountinfo` writes it, with `\040` for a space (and `\011`,
/// `\012`, `\134` for tab, newline and backslash).
fn unescape_mount_point(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        if let Some(byte) = code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            out.push(char::from(byte));
            rest = &rest[at + 4..];
        } else {
            out.push('\\');
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// Remounts the mount at `path` with `add` (read-only, nosuid...). Flags the kernel locked
/// on the original mount (nosuid, nodev, noexec, atime) must be kept, or it refuses.
fn remount(path: &Path, add: MsFlags) -> Result<(), nix::Error> {
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | add;
    let existing = statvfs(path)?.flags();
    for (st, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if existing.contains(st) {
            flags |= ms;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
}

/// A fresh tmpfs on `/tmp` and `/dev/shm` (both modes; read-only in plan mode): nothing left there by other
/// programs, an X server's or an ssh-agent's socket included, is in reach. The `keep` paths that lived under the old `/tmp`
/// (a workspace in a temporary directory, say) are bind-mounted back to the same path in it.
fn private_tmp(keep: &[PathBuf]) -> Result<(), Failure> {
    fresh_tmpfs(Path::new("/tmp"), "1777", keep, false)?;
    // Shared memory (POSIX semaphores, Python's multiprocessing) gets its own, too.
    if Path::new(SHM).is_dir() {
        fresh_tmpfs(Path::new(SHM), "1777", &[], false)?;
    }
    Ok(())
}

/// Mounts a fresh tmpfs (`mode`) on `dir`. The `keep` paths under `dir` (directories or files)
/// are bind-mounted back at the same path, from handles opened before the tmpfs hid them;
/// with `links`, so are the symbolic links directly in `dir`.
fn fresh_tmpfs(dir: &Path, mode: &str, keep: &[PathBuf], links: bool) -> Result<(), Failure> {
    let mut paths: Vec<PathBuf> = keep
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .filter(|p| p.starts_with(dir) && p != dir)
        .collect();
    // A path inside another kept one comes back with it.
    paths.sort_by_key(|p| p.components().count());
    let mut outermost: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !outermost.iter().any(|kept| path.starts_with(kept)) {
            outermost.push(path);
        }
    }
    #[allow(
        clippy::disallowed_methods,
        reason = "holds kept paths open across the mount; nothing is read"
    )]
    let keep: Vec<(PathBuf, fs::File)> = outermost
        .into_iter()
        .filter_map(|p| fs::File::open(&p).ok().map(|f| (p, f)))
        .collect();
    let symlinks: Vec<(PathBuf, PathBuf)> = if links {
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
                    .filter_map(|e| fs::read_link(e.path()).ok().map(|t| (e.path(), t)))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("mode={mode}").as_str()),
    )
    .map_err(|err| mount_failed("mounting a tmpfs on", dir, err))?;
    for (link, target) in symlinks {
        std::os::unix::fs::symlink(&target, &link).map_err(|err| {
            Failure::new(
                Feature::Mounts,
                &format!("linking `{}`", link.display()),
                err,
            )
        })?;
    }
    for (path, handle) in keep {
        let failed = |what: &str, err: &dyn std::fmt::Display| {
            Failure::new(
                Feature::Mounts,
                &format!("{what} `{}`", path.display()),
                err,
            )
        };
        // A mount point of the same kind: a directory for a directory, a file for a file.
        let is_dir = handle.metadata().is_ok_and(|m| m.is_dir());
        let created = if is_dir {
            fs::create_dir_all(&path)
        } else {
            path.parent()
                .map_or(Ok(()), fs::create_dir_all)
                .and_then(|()| fs::File::create(&path).map(drop))
        };
        created.map_err(|err| failed("creating", &err))?;
        // The open handle still names the original, hidden under the new tmpfs.
        let source = format!("/proc/self/fd/{}", handle.as_raw_fd());
        mount(
            Some(source.as_str()),
            &path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|err| failed("bind-mounting", &err))?;
    }
    Ok(())
}

/// Stage 2, PID 1 of the new pid namespace: `/proc`, then stage 3, which becomes the
/// command; it reaps every process of the namespace until the command ends.
///
/// It stays out of the command's reach: in stage 1's user namespace (the command's is a
/// child, so its capabilities, if any, count for nothing here), not dumpable, and outside
/// the command's Landlock domain, so neither `ptrace` nor `/proc/1/fd/0` (the status pipe
/// to stage 1) nor its parent-death signal can be touched.
fn stage2(rest: &[OsString]) -> Result<ExitCode, Failure> {
    let (policy, ids, argv) = parse_args(rest, 2)?;
    // If stage 1 dies (tick killed it, or tick died), this process dies, and with it the
    // namespace.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|err| Failure::new(Feature::PidNamespace, "PR_SET_PDEATHSIG", err))?;
    nix::sys::prctl::set_dumpable(false)
        .map_err(|err| Failure::new(Feature::PidNamespace, "PR_SET_DUMPABLE", err))?;
    // A session of its own, without the person's terminal: the command cannot open
    // `/dev/tty` and push keystrokes into the shell tick was started from (TIOCSTI).
    nix::unistd::setsid().map_err(|err| Failure::new(Feature::Helper, "setsid", err))?;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|err| Failure::new(Feature::PidNamespace, "mounting `/proc`", err))?;

    let mut command = Command::new("/proc/self/exe");
    command
        .arg(EXEC_ARG)
        .arg(&rest[0])
        .args(&ids)
        .arg("--")
        .args(argv)
        .stdin(if policy.stdio {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
    let child = command
        .spawn()
        .map_err(|err| Failure::new(Feature::Helper, "starting the command's stage", err))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    drop(command);
    // Reap every process that ends here (orphans are re-parented to this one) until the
    // command itself ends; returning then kills the rest of the namespace.
    let end = loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(p, code)) if p == pid => break Ok(code),
            Ok(WaitStatus::Signaled(p, signal, _)) if p == pid => break Err(signal),
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(err) => {
                return Err(Failure::new(Feature::Helper, "waitpid", err));
            }
        }
    };
    let mut report = String::new();
    if others_alive() {
        report.push_str(super::LEFTOVERS);
        report.push('\n');
    }
    let code = match end {
        Ok(code) => u8::try_from(code).unwrap_or(1),
        Err(signal) => {
            report.push_str(&format!("signal {}\n", signal as i32));
            128 + u8::try_from(signal as i32).unwrap_or(0)
        }
    };
    if !policy.stdio {
        let _ = nix::unistd::write(io::stdin(), report.as_bytes());
    }
    Ok(ExitCode::from(code))
}

/// Stage 3, the command's own process: a user namespace of its own in which it is not root
/// (so `execve` leaves it no capability), `no_new_privs`, Landlock, then `execve` of the
/// command. A setup failure here exits [`SETUP_FAILED`] like the other stages; a command
/// that cannot be run exits 127 (not found) or 126, like a shell.
fn stage3(rest: &[OsString]) -> Result<ExitCode, Failure> {
    let (policy, ids, argv) = parse_args(rest, 2)?;
    unshare(CloneFlags::CLONE_NEWUSER)
        .map_err(|err| Failure::new(Feature::UserNamespaces, "unshare(CLONE_NEWUSER)", err))?;
    let inner = |id: &str| if id == "0" { ROOT_STAND_IN } else { id }.to_owned();
    map_ids(&inner(&ids[0]), "0", &inner(&ids[1]), "0")?;
    drop_bounding_set()?;
    nix::sys::prctl::set_no_new_privs()
        .map_err(|err| Failure::new(Feature::Landlock, "PR_SET_NO_NEW_PRIVS", err))?;
    restrict_files(&policy)?;
    let err = std::os::unix::process::CommandExt::exec(Command::new(&argv[0]).args(&argv[1..]));
    let _ = writeln!(
        io::stderr(),
        "tick-sandbox: could not run `{}`: {err}",
        argv[0].to_string_lossy()
    );
    Ok(ExitCode::from(if err.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    }))
}

/// Empties this process's capability bounding set (it holds every capability of its new
/// user namespace for this moment, `CAP_SETPCAP` included): whatever the command execs, a
/// setuid file or a file with capabilities, can never gain one.
fn drop_bounding_set() -> Result<(), Failure> {
    use rustix::thread::{CapabilitySet, remove_capability_from_bounding_set};
    for capability in CapabilitySet::all().iter() {
        match remove_capability_from_bounding_set(capability) {
            // A capability this kernel does not know is in no bounding set.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(err) => {
                return Err(Failure::new(
                    Feature::UserNamespaces,
                    "PR_CAPBSET_DROP",
                    io::Error::from(err),
                ));
            }
        }
    }
    Ok(())
}

/// Whether anything but this process is still alive in the namespace. Everything left is a
/// descendant of one of this process's children (the command is gone, its orphans came
/// here), so a child that is still running is the question; the dead are reaped first.
fn others_alive() -> bool {
    loop {
        match waitpid(None::<Pid>, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// The Landlock ruleset: read and execute everywhere; write only in the workspace, the
/// private `/tmp` and the configured directories (build), or nowhere (read-only); a few
/// devices for both. Landlock also forbids the command any mount or unmount, so the
/// read-only binds and `/proc` cannot be undone, and (ABI 6) signals and abstract UNIX
/// sockets outside the sandbox.
fn restrict_files(policy: &Policy) -> Result<(), Failure> {
    let failed = |err: landlock::RulesetError| Failure::new(Feature::Landlock, "ruleset", err);
    let mut writable: Vec<PathBuf> = Vec::new();
    if policy.kind == Kind::Build {
        writable.push(policy.workspace.clone());
        writable.push(PathBuf::from("/tmp"));
        writable.push(PathBuf::from(SHM));
        writable.extend(policy.writable.iter().cloned());
    }
    writable.retain(|p| p.exists());
    let devices: Vec<&str> = DEVICES
        .into_iter()
        .filter(|d| Path::new(d).exists())
        .collect();
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .map_err(failed)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(failed)?
        .create()
        .map_err(failed)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(LANDLOCK_ABI)))
        .map_err(failed)?
        .add_rules(path_beneath_rules(
            devices,
            AccessFs::from_file(LANDLOCK_ABI),
        ))
        .map_err(failed)?
        .add_rules(path_beneath_rules(
            writable,
            AccessFs::from_all(LANDLOCK_ABI),
        ))
        .map_err(failed)?
        .restrict_self()
        .map_err(failed)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Failure(
            Feature::Landlock,
            "the kernel does not enforce Landlock (not built in, or not in `lsm=`)".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_as_the_kernel_escapes_them() {
        assert_eq!(unescape_mount_point("/a\\040b/c"), "/a b/c");
        assert_eq!(unescape_mount_point("/x\\134y\\011"), "/x\\y\t");
        assert_eq!(unescape_mount_point("/odd\\9"), "/odd\\9");
        assert_eq!(unescape_mount_point("/é\\040"), "/é ");
    }
}
