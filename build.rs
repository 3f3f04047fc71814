//! Build facts for `tick --version`: the commit tick was built from and that commit's date
//! (not the time of the build, so the same source builds the same binary). Outside a git
//! checkout (a crates.io package) both are left out.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Rebuild when the checked-out commit moves: HEAD, the branch it names, packed refs.
    // Paths from git itself, so a worktree (whose `.git` is a file) works too.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let commit = git(&["rev-parse", "--short=9", "HEAD"]);
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]);
    let version = env!("CARGO_PKG_VERSION");
    let long = match (commit, date) {
        (Some(commit), Some(date)) => format!("{version} ({commit} {date})"),
        (Some(commit), None) => format!("{version} ({commit})"),
        _ => version.to_owned(),
    };
    println!("cargo:rustc-env=TICK_LONG_VERSION={long}");
}
