//! What can be wrong with the settings, with the facts (the file as shown, line, column, the
//! key and the closest known one, the variable); `crate::user_error` words the hints.

/// A settings failure; `shown` is a config file as the person knows it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config file that does not read as settings, at `line`:`col`. For an unknown key,
    /// `closest` is the known key nearest to it (a typo's correction).
    #[error("`{shown}:{line}:{col}`: {message}")]
    File {
        shown: String,
        line: usize,
        col: usize,
        message: String,
        closest: Option<String>,
    },
    /// The file's `hooks:`, `run_command:` or `mcp_servers:` (`section`) that do not check.
    #[error("`{shown}`: {detail}")]
    Section {
        shown: String,
        section: Section,
        detail: String,
    },
    #[error("`sandbox.writable` entry `{0}` is not an absolute path")]
    WritableNotAbsolute(String),
    /// A variable of tick's (`TICK_PROVIDER`, ...) whose value is not one it takes; `not` is
    /// what the value is not ("a provider").
    #[error("`{var}={value}` is not {not}")]
    Variable {
        var: &'static str,
        value: String,
        not: &'static str,
    },
    /// `TICK_LOCAL_SERVERS` (`var`) that does not parse.
    #[error("`{var}`: {detail}")]
    Candidates { var: &'static str, detail: String },
    #[error("no API key: `{0}` is not set")]
    NoApiKey(String),
    #[error("`{shown}` already has an MCP server `{name}`")]
    McpServerExists { shown: String, name: String },
    /// An MCP server's entry that did not serialize (a bug).
    #[error("could not write the entry: {0}")]
    Entry(String),
    /// An MCP server tick cannot add to the file `shown` itself, and why.
    #[error("`{shown}`: {why}")]
    McpByHand { shown: String, why: ByHand },
}

/// Why tick cannot add an MCP server's entry to a config file (the person adds it by hand).
#[derive(Debug, thiserror::Error)]
pub enum ByHand {
    #[error("its `mcp_servers:` is not a block tick can add to")]
    NotABlock,
    /// The parser's message.
    #[error("with the new entry the file would not read: {0}")]
    WouldNotRead(String),
    #[error("tick could not add the entry so that it reads back the same")]
    NotTheSame,
}

/// The part of a config file that [`Error::Section`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Hooks,
    RunCommand,
    McpServers,
}

/// The key of `expected` (serde's "expected one of `a`, `b`" list in `message`) nearest to the
/// unknown key `message` names, if one is near enough to be a typo of it.
pub fn closest_key(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|key| !key.is_empty());
    nearest(unknown, expected).map(str::to_owned)
}

/// The one of `known` nearest to `unknown`, if one is near enough to be a typo of it: the
/// "did you mean" of a config file's unknown key and of `tick config get|set`'s.
pub fn nearest<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for key in known {
        let distance = edit_distance(unknown, key);
        if best.is_none_or(|(least, _)| distance < least) {
            best = Some((distance, key));
        }
    }
    // Near enough: at most a third of the letters differ (rounded up: two letters swapped in
    // a five-letter key, `modle`, are near).
    let (distance, key) = best?;
    let near = unknown.chars().count().max(key.chars().count()).div_ceil(3);
    (distance <= near).then_some(key)
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_names_the_nearest_key_and_a_stranger_none() {
        let message = "unknown field `modle`, expected one of `provider`, `model`, `plan_model`";
        assert_eq!(closest_key(message).as_deref(), Some("model"));
        let message = "limits: unknown field `max_turn`, expected `max_turns` or `max_tokens`";
        assert_eq!(closest_key(message).as_deref(), Some("max_turns"));
        let message = "unknown field `colour`, expected one of `provider`, `model`";
        assert_eq!(closest_key(message), None);
        assert_eq!(closest_key("invalid type: string, expected a map"), None);
        assert_eq!(
            nearest("limits.max_turn", ["model", "limits.max_turns"]),
            Some("limits.max_turns")
        );
        assert_eq!(nearest("colour", ["model", "provider"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
