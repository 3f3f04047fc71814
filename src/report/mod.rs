//! What tick reports to a person, as data: the status of a task and the draft, the list of
//! tasks, the findings of `tick check`, the lines of `tick watch`, a step's diff and what
//! `tick doctor` found, with the functions that build them from the store. Below both the commands that gather them and `ui`, which renders
//! them (human or JSON), so a view such as the session's plan panel reads them without going
//! through a command.

pub mod check;
pub mod diff;
pub mod doctor;
pub mod list;
pub mod machine;
pub mod status;
pub mod structured_probe;
pub mod watch;
