//! What a verify's program says it takes: the long options its `--help` lists, for
//! [`super::validate`]'s check that a draft's verify passes none its program does not take.
//!
//! `--help` runs the way plan mode's `run_command` runs a command (the read-only sandbox, a
//! rebuilt environment, never a program inside the workspace), for at most [`TIMEOUT`], its
//! output kept only when it was not cut; never outside the sandbox. Each program and subcommand
//! is asked once per planning run (the draft and its repair share the answers). A `--help` that
//! cannot run, fails, times out or lists no option says nothing, and nothing is flagged.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::flags;
use crate::sandbox::{Policy, Sandboxing};
use crate::tools::bash::CommandEnv;
use crate::tools::workspace::Workspace;

/// How long one `--help` may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Runs `program` (a name to look up) with these arguments; its whole output, or `None`.
type Run = dyn Fn(&str, &[String]) -> Option<String> + Send + Sync;

/// What each program and subcommand's `--help` listed, once asked.
type Asked = BTreeMap<(String, Vec<String>), Option<BTreeSet<String>>>;

/// The long options of the programs a planning run's verifies name, asked as they come up.
pub struct Help {
    run: Box<Run>,
    known: Mutex<Asked>,
}

impl Help {
    /// `--help` in the read-only sandbox of the workspace at `root`, programs looked up on
    /// `path_var` (the person's `PATH`, the one a verify runs with) outside the workspace.
    /// The caller says the sandbox can be set up here; `None` when `root` is not a workspace.
    pub fn sandboxed(root: &Path, path_var: Option<&OsStr>) -> Option<Help> {
        let workspace = Workspace::new(root).ok()?;
        let env =
            CommandEnv::default().with_sandbox(Sandboxing::On(Policy::read_only(workspace.root())));
        let path: Vec<PathBuf> = path_var
            .map(std::env::split_paths)
            .into_iter()
            .flatten()
            .collect();
        Some(Help::with_runner(move |program, args| {
            crate::tools::run_command::read_only_output(
                &workspace, &env, program, args, &path, TIMEOUT,
            )
        }))
    }

    /// With `run` in place of the sandbox, for tests.
    pub fn with_runner(
        run: impl Fn(&str, &[String]) -> Option<String> + Send + Sync + 'static,
    ) -> Help {
        Help {
            run: Box::new(run),
            known: Mutex::new(BTreeMap::new()),
        }
    }

    /// The long options `program` takes after `subcommand`, as `program subcommand… --help`
    /// lists them; `None` when that cannot tell. A program with a `/` in its name (a script of
    /// the repository) is never run.
    pub fn long_options(&self, program: &str, subcommand: &[String]) -> Option<BTreeSet<String>> {
        if program.is_empty() || program.contains('/') {
            return None;
        }
        let key = (program.to_owned(), subcommand.to_vec());
        if let Some(known) = self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return known.clone();
        }
        let mut args = subcommand.to_vec();
        args.push("--help".to_owned());
        let found = (self.run)(program, &args).and_then(|help| flags::listed(&help));
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, found.clone());
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn each_program_and_subcommand_is_asked_once() {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&asked);
        let help = Help::with_runner(move |program, args| {
            counter.fetch_add(1, Ordering::Relaxed);
            match (program, args.join(" ").as_str()) {
                ("cargo", "test --help") => Some("  --no-run  Compile only\n".to_owned()),
                ("pytest", "--help") => Some("usage: pytest [options]\n".to_owned()),
                _ => None,
            }
        });
        let test = ["test".to_owned()];
        let expected = Some(BTreeSet::from(["--no-run".to_owned()]));
        assert_eq!(help.long_options("cargo", &test), expected);
        assert_eq!(help.long_options("cargo", &test), expected);
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        // A help that lists no option, or none at all, says nothing, and is not asked again.
        assert_eq!(help.long_options("pytest", &[]), None);
        assert_eq!(help.long_options("pytest", &[]), None);
        assert_eq!(help.long_options("cargo", &["build".to_owned()]), None);
        assert_eq!(asked.load(Ordering::Relaxed), 3);
        // A script of the repository is never run.
        assert_eq!(help.long_options("./run_tests.sh", &[]), None);
        assert_eq!(asked.load(Ordering::Relaxed), 3);
    }
}
