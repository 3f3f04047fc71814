//! Where a file of the store failed to parse: line, column, message and hint. Below the
//! parsers that report it (`todo_md`, `markdown_depth`, `plan_md`), so none imports another
//! for it.

use std::fmt;

/// A parse failure, with the 1-based line and column (in characters) where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub hint: String,
}

impl ParseError {
    /// A YAML error as a parse error. `lines_before` is how many lines of the file come before
    /// the YAML text; `what`, if not empty, prefixes the message (`invalid front matter`). The
    /// location is cut out of serde's message, which would otherwise say it a second time.
    pub fn from_yaml(
        err: &serde_yaml::Error,
        lines_before: usize,
        what: &str,
        hint: impl Into<String>,
    ) -> Self {
        let (line, col) = err.location().map_or((lines_before + 1, 1), |loc| {
            (loc.line() + lines_before, loc.column())
        });
        let message = err.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        ParseError {
            line,
            col,
            message: if what.is_empty() {
                message.to_owned()
            } else {
                format!("{what}: {message}")
            },
            hint: hint.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}
