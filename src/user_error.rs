//! The one place where the typed errors of the store (`tasks`), the settings (`config`) and
//! the filesystem (`fsx`) become the user-facing [`Error`]: each variant's exit code and what
//! to do next. The variants carry the facts (path, line, column, key) and their own one-line
//! message; the hints a person reads are worded here, as jj's `command_error.rs` does.

use crate::error::Error;
use crate::{fsx, tasks};

impl From<fsx::Error> for Error {
    fn from(err: fsx::Error) -> Error {
        let message = err.to_string();
        match err {
            fsx::Error::Missing(_) => Error::input(message),
            fsx::Error::Read { source, .. } if source.raw_os_error() == Some(libc::ELOOP) => {
                Error::input(message).hint(
                    "the path is a symlink loop; replace it with the file; nothing was changed",
                )
            }
            fsx::Error::Read { .. } => Error::input(message).hint("nothing was changed"),
            fsx::Error::NotAFile { name, .. } => Error::input(message).hint(format!(
                "tick reads only regular files here; remove or rename `{name}` and restore the \
                 file (`git checkout -- {name}`); nothing was changed"
            )),
            fsx::Error::LinkOutside(_) => Error::input(message).hint(
                "tick reads its files only inside the workspace; replace the link with the file \
                 itself; nothing was changed",
            ),
            fsx::Error::TooLarge { .. } => Error::input(message).hint(
                "tick refuses files this large rather than read them into memory; shorten or \
                 restore the file; nothing was changed",
            ),
            fsx::Error::InvalidUtf8 { .. } => Error::input(message).hint(
                "tick reads and writes UTF-8 text; save the file as UTF-8; it was not changed",
            ),
            fsx::Error::AppendToLink(_) => Error::input(message).hint(
                "tick appends only to its own files; remove the link (tick makes a new file); \
                 nothing was written",
            ),
            fsx::Error::FolderOutside(_) => Error::input(message).hint(
                "tick writes its files only inside the workspace; replace the link with a \
                 folder; nothing was written",
            ),
            fsx::Error::Move { .. } => Error::internal(message),
        }
    }
}

impl From<tasks::error::Error> for Error {
    fn from(err: tasks::error::Error) -> Error {
        use tasks::error::Error as E;
        let message = err.to_string();
        match err {
            E::NestedStore { rel, top } => Error::input(message).hint(format!(
                "if it is yours, move its tasks to the top level (`mv {rel}/* .tasks/` from `{}`) \
                 and remove it; if you did not make it, remove it (`rm -r {rel}`): its \
                 `config.yaml` may name a server of someone else's; nothing was read from it",
                top.display()
            )),
            E::NoTaskMatches(_) => {
                Error::input(message).hint("`tick list` shows the tasks and their ids")
            }
            E::Ambiguous { .. } => Error::input(message).hint("give more of the id"),
            E::NoSteps { todo, .. } => Error::input(message).hint(format!(
                "steps are lines like `- [ ] S1 Do one thing`; restore the file (`git checkout \
                 -- {todo}`) or add the steps; the file was not changed"
            )),
            E::Missing(_) => Error::input(message)
                .hint("restore it from git, or remove the task folder if it is left over"),
            E::Parse { hint, .. } if hint.is_empty() => {
                Error::input(message).hint("the file was not changed")
            }
            E::Parse { hint, .. } => {
                Error::input(message).hint(format!("{hint}; the file was not changed"))
            }
            E::NoStep { ids, .. } => Error::input(message).hint(format!(
                "its steps are {}; nothing was changed",
                ids.join(", ")
            )),
            E::NotCancellable { hint, .. } => Error::input(message).hint(hint),
            E::NotBlocked { blocked, .. } if blocked.is_empty() => {
                Error::input(message).hint("no step of this task is blocked; nothing was changed")
            }
            E::NotBlocked { blocked, .. } => Error::input(message).hint(format!(
                "blocked: {}; nothing was changed",
                blocked.join(", ")
            )),
            E::LockNotAFile(path) => Error::input(message).hint(format!(
                "remove `{path}` (tick makes a new one); nothing was changed"
            )),
            E::Template { origin, .. } => {
                Error::input(message).hint(format!("fix or remove {origin}; nothing was written"))
            }
            E::TemplateOutput { file, .. } => Error::input(message).hint(format!(
                "fix or remove the {file} template (`{file}.j2` in `.tasks/templates/` or \
                 `~/.config/tick/templates/`); nothing was written"
            )),
            E::NotRestorable(_) => {
                Error::input(message).hint("the step's record names it; nothing was changed")
            }
            E::BelowLink { .. } => {
                Error::input(message).hint("tick never writes through a link; nothing was changed")
            }
            E::FolderNow(_) => Error::input(message).hint("move it away and run the command again"),
            E::KeptCopyGone { .. } => Error::internal(message)
                .hint("`runs/images/` was cleaned; nothing more can be put back from it"),
            E::RecordUnreadable { .. } => Error::internal(message)
                .hint("it is tick's own record in `runs/`; remove it to start over"),
            E::NoTemplate(_) | E::EditUnparsed { .. } | E::Serialize { .. } | E::Render { .. } => {
                Error::internal(message)
            }
        }
    }
}
