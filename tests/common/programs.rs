//! Optional programs: tests of programs that are not on every machine (`tree`, `rg`, `file`,
//! `perl`, `python3`) leave their cases out with a printed reason when the program is missing.
//! The README's test command needs only what the README asks for (git and a Rust toolchain);
//! CI (`.ci/run`) installs the others, so CI still runs every case.

use std::path::{Path, PathBuf};

/// Whether `program` is an executable file in a directory of `PATH` (where a test's `bash`
/// and a person's shell find it).
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
    })
}

/// Whether `run_command` can run `program` and a person's shell too: on `PATH`, and in one of
/// the directories tick looks in (its fixed system directories and cargo's `bin`).
pub fn runnable_by_tick(program: &str) -> bool {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    on_path(program)
        && tick::tools::run_command::SAFE_PATH
            .iter()
            .map(PathBuf::from)
            .chain(cargo_home.map(|home| home.join("bin")))
            .any(|dir| is_executable(&dir.join(program)))
}

/// `found`, printing that `what` is left out because `program` is missing when it is not.
#[allow(
    clippy::print_stderr,
    reason = "a skipped case is told in the test's output"
)]
pub fn or_skip(found: bool, program: &str, what: &str) -> bool {
    if !found {
        eprintln!("skipped {what}: `{program}` is not installed (CI installs it)");
    }
    found
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Where cargo and rustup keep their toolchains, for the commands that need cargo: the tests
/// give tick a `HOME` inside the workspace, where no program may come from.
pub fn rust_homes() -> Vec<(String, String)> {
    let home = std::env::var("HOME").unwrap_or_default();
    let cargo = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{home}/.rustup"));
    vec![
        ("CARGO_HOME".to_owned(), cargo),
        ("RUSTUP_HOME".to_owned(), rustup),
    ]
}
