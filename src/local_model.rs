//! The model on this machine, for people with no API key: `tick model setup | start | stop |
//! status | speed` run `scripts/local-model.sh`, which is embedded in the binary (so an
//! installed tick has it too), written into the cache directory it works in and run there
//! with bash. The script owns the work: idempotent phases (a finished one is skipped), a kill
//! resumed by the next run, everything heavy at low priority, a progress line per long phase
//! with the time it expects. Its output goes straight to the person's terminal, as a build
//! tool's does: tick adds nothing to it.

use std::path::{Path, PathBuf};

use crate::env::Env;
use crate::error::{Error, Result};
use crate::fsx;

/// `scripts/local-model.sh`, as this binary was built with it.
pub const SCRIPT: &str = include_str!("../scripts/local-model.sh");

/// What `tick model` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Build the server and put the model together, then start it.
    Setup,
    /// Start the server (setting up first when needed) and wait until it answers.
    Start,
    Stop,
    Status,
    Speed,
}

impl Action {
    /// The script's commands, in order, for this action.
    fn script_commands(self) -> &'static [&'static str] {
        match self {
            Action::Setup => &["setup", "start"],
            Action::Start => &["start"],
            Action::Stop => &["stop"],
            Action::Status => &["status"],
            Action::Speed => &["speed"],
        }
    }
}

/// Where the server, the model and their logs live: `TICK_LOCAL_DIR`, else
/// `$XDG_CACHE_HOME/tick-local`, else `~/.cache/tick-local` (the script's own default).
pub fn cache_dir(env: &Env) -> Result<PathBuf> {
    if let Some(dir) = env.var("TICK_LOCAL_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let base = env
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|home| Path::new(home).join(".cache")))
        .ok_or_else(|| {
            Error::input("tick cannot tell where to keep the local model: `HOME` is not set")
                .hint("set `TICK_LOCAL_DIR` to a directory with 2 GB free; nothing was written")
        })?;
    Ok(base.join("tick-local"))
}

/// Runs `action` through the embedded script in `dir`, with `env`'s variables; the script's
/// exit code (`status` exits 3 when the server is not running). Stops at the first command of
/// the action that fails.
pub fn run(action: Action, env: &Env) -> Result<u8> {
    let dir = cache_dir(env)?;
    let script = write_script(&dir)?;
    for command in action.script_commands() {
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(command)
            .current_dir(&env.cwd)
            .env_clear()
            .envs(&env.vars)
            .env("TICK_LOCAL_DIR", &dir)
            .env("TICK_LOCAL_FROM_TICK", "1")
            .status()
            .map_err(|err| {
                Error::input(format!("could not run `bash`: {err}")).hint(
                    "`tick model` runs its setup script with bash: install bash; nothing was \
                     written",
                )
            })?;
        let code = status
            .code()
            .map_or(1, |code| u8::try_from(code).unwrap_or(1));
        if code != 0 {
            return Ok(code);
        }
    }
    Ok(0)
}

/// The embedded script at `dir/local-model.sh`, written when it is missing or differs.
fn write_script(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|err| Error::io("create", dir, &err))?;
    let path = dir.join("local-model.sh");
    let current = fsx::read_capped(&path, 1 << 20).ok().flatten();
    if current.as_deref() != Some(SCRIPT) {
        fsx::write_atomic(&path, SCRIPT.as_bytes())?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::fixed(
            std::env::temp_dir(),
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            chrono::Utc::now(),
        )
    }

    #[test]
    fn the_cache_is_the_scripts_own_default_unless_told() {
        assert_eq!(
            cache_dir(&env(&[("HOME", "/home/p")])).unwrap(),
            Path::new("/home/p/.cache/tick-local")
        );
        assert_eq!(
            cache_dir(&env(&[("HOME", "/home/p"), ("XDG_CACHE_HOME", "/c")])).unwrap(),
            Path::new("/c/tick-local")
        );
        assert_eq!(
            cache_dir(&env(&[("TICK_LOCAL_DIR", "/d"), ("HOME", "/h")])).unwrap(),
            Path::new("/d")
        );
        assert!(cache_dir(&env(&[])).is_err());
    }

    #[test]
    fn the_script_is_written_once_and_again_when_it_differs() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_script(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SCRIPT);
        std::fs::write(&path, "old").unwrap();
        write_script(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SCRIPT);
    }
}
