//! The session's mode, PLAN or BUILD, and where it is kept between sessions:
//! `.tasks/session.yaml`, local (listed in `.tasks/.gitignore`). A view setting only: the
//! mode never approves, runs or changes a plan.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fsx;
use crate::tasks::Store;

/// The file under `.tasks/` that keeps the mode.
pub const SESSION_STATE_FILE: &str = "session.yaml";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Read-only planning: messages go to the planner.
    #[default]
    Plan,
    /// Implementation: messages drive the runner of the approved task.
    Build,
}

impl Mode {
    #[must_use]
    pub fn toggled(self) -> Mode {
        match self {
            Mode::Plan => Mode::Build,
            Mode::Build => Mode::Plan,
        }
    }

    pub fn badge(self) -> &'static str {
        match self {
            Mode::Plan => "PLAN",
            Mode::Build => "BUILD",
        }
    }

    /// The note the timeline shows on a switch.
    pub fn switched_note(self) -> &'static str {
        match self {
            Mode::Plan => "Switched to Plan mode. Read-only planning is active.",
            Mode::Build => "Switched to Build mode. Implementation tools are active.",
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct SessionState {
    #[serde(default)]
    mode: Mode,
}

/// The mode the last session left; PLAN when there is none (or it cannot be read: it is only
/// a view setting).
pub fn load(store: &Store) -> Mode {
    let path = store.dir().join(SESSION_STATE_FILE);
    fsx::read_optional(&path)
        .ok()
        .flatten()
        .and_then(|text| serde_yaml::from_str::<SessionState>(&text).ok())
        .map(|state| state.mode)
        .unwrap_or_default()
}

/// Keeps `mode` for the next session. Creates `.tasks/` (with its `.gitignore`) when needed,
/// and makes sure the file is listed there as local.
pub fn save(store: &Store, mode: Mode) -> Result<()> {
    store.ensure()?;
    store.keep_local(SESSION_STATE_FILE);
    let text = serde_yaml::to_string(&SessionState { mode }).map_err(|err| {
        crate::error::Error::internal(format!("could not write the session's mode: {err}"))
    })?;
    write(&store.dir().join(SESSION_STATE_FILE), &text)
}

fn write(path: &Path, text: &str) -> Result<()> {
    fsx::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_survives_a_restart_and_stays_local() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        assert_eq!(load(&store), Mode::Plan);
        save(&store, Mode::Build).unwrap();
        assert_eq!(load(&Store::at(dir.path())), Mode::Build);
        let ignore = std::fs::read_to_string(dir.path().join(".tasks/.gitignore")).unwrap();
        assert!(
            ignore.lines().any(|line| line == SESSION_STATE_FILE),
            "{ignore}"
        );
        save(&store, Mode::Plan).unwrap();
        assert_eq!(load(&store), Mode::Plan);
    }

    #[test]
    fn an_old_gitignore_gets_the_line_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".tasks")).unwrap();
        std::fs::write(dir.path().join(".tasks/.gitignore"), "# mine\n.lock\n").unwrap();
        let store = Store::at(dir.path());
        save(&store, Mode::Build).unwrap();
        save(&store, Mode::Plan).unwrap();
        let ignore = std::fs::read_to_string(dir.path().join(".tasks/.gitignore")).unwrap();
        assert_eq!(ignore, "# mine\n.lock\nsession.yaml\n");
    }

    #[test]
    fn an_unreadable_mode_is_plan() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".tasks")).unwrap();
        std::fs::write(dir.path().join(".tasks/session.yaml"), "mode: [").unwrap();
        assert_eq!(load(&Store::at(dir.path())), Mode::Plan);
    }
}
