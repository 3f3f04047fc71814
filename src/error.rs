//! The one user-facing error: what went wrong, what was left unchanged, what to do next, and
//! which exit code a script sees. Module errors carry paths and line numbers and convert into
//! this at the command edge.

use std::fmt;
use std::path::Path;

/// Why a command failed, as far as a script calling tick needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Unexpected: I/O failed, a bug. Exit code 1.
    Internal,
    /// The person's input is wrong: arguments, a file that does not parse, a step that does not
    /// exist, an action the task's phase forbids. Exit code 2.
    Input,
    /// The model or its provider failed. Exit code 3.
    Provider,
    /// A limit (turns, tokens, files changed) stopped the work. Exit code 6.
    Limit,
    /// Another tick process holds the lock on the task. Exit code 7.
    Busy,
}

impl ErrorKind {
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Internal => 1,
            ErrorKind::Input => 2,
            ErrorKind::Provider => 3,
            ErrorKind::Limit => 6,
            ErrorKind::Busy => 7,
        }
    }
}

/// A failure worth telling a person about: one line of message, then hints.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn input(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Input, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// An I/O failure on `path`, for when `action` ("read", "write", ...) did not happen. A
    /// path in the store is shown from `.tasks/` on, never as an absolute path.
    pub fn io(action: &str, path: &Path, err: &std::io::Error) -> Self {
        Error::internal(format!(
            "could not {action} `{}`: {err}",
            crate::store_path::shown(path)
        ))
    }

    pub fn exit_code(&self) -> u8 {
        self.kind.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
