//! What the formats share in a task's words: the paths it names (for `files:`), the check it
//! states (a `Verify:` line), requirement lists, and a title made from a path. Pure.

use std::sync::LazyLock;

use regex::Regex;

static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`([^`\n]+)`").unwrap_or_else(|err| unreachable!("bad pattern: {err}"))
});

static VERIFY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[_*]*\s*(?:verify|verification|check)\s*[_*]*\s*:\s*[_*]*\s*(.*?)[_*]*\s*$")
        .unwrap_or_else(|err| unreachable!("bad pattern: {err}"))
});

/// Paths named in `text` (in backticks, or words that look like paths), `/`-separated and
/// relative; a path that leaves the repository (absolute, or `..` above its start) is not
/// one of them and is returned second, for a warning.
pub fn paths(text: &str) -> (Vec<String>, Vec<String>) {
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    let spans: Vec<&str> = CODE_SPAN
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .collect();
    let plain = CODE_SPAN.replace_all(text, " ");
    let words = plain.split_whitespace().map(|w| {
        w.trim_start_matches(['(', '"', '\'', '['])
            .trim_end_matches(|c: char| {
                matches!(
                    c,
                    ',' | ';' | ':' | ')' | '"' | '\'' | '.' | '!' | '?' | ']'
                )
            })
    });
    for (word, quoted) in spans
        .iter()
        .map(|s| (s.trim(), true))
        .chain(words.map(|w| (w, false)))
    {
        if !looks_like_path(word, quoted) {
            continue;
        }
        match normalise(word) {
            Some(path) => {
                if !inside.contains(&path) {
                    inside.push(path);
                }
            }
            None => {
                if !outside.iter().any(|o| o == word) {
                    outside.push(word.to_owned());
                }
            }
        }
    }
    (inside, outside)
}

fn looks_like_path(word: &str, quoted: bool) -> bool {
    if word.is_empty() || word.len() > 300 || word.contains("://") || word.contains('@') {
        return false;
    }
    if !word
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'*' | b'~'))
    {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    let has_ext = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=10).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_alphanumeric())
            && ext.bytes().any(|b| b.is_ascii_alphabetic())
            && (ext.len() > 1 || word.contains('/'))
    });
    // A folder: `src/` anywhere, `src/models` only in backticks (a plain `and/or` is prose).
    let letters = word.bytes().filter(u8::is_ascii_alphabetic).count() >= 2;
    let dir = letters && (word.ends_with('/') || (quoted && word.contains('/')));
    // A climb out (`../../etc/passwd`) is a path whatever it looks like, to be warned of.
    has_ext || dir || word.starts_with("../")
}

/// `word` as a repository-relative path, `None` when it leaves the repository.
fn normalise(word: &str) -> Option<String> {
    if word.starts_with('/') || word.starts_with('~') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in word.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut path = parts.join("/");
    if word.ends_with('/') {
        path.push_str("/**");
    }
    Some(path)
}

/// The commands a `Verify:` (or `Check:`) line states, if `line` is one.
pub fn verify_line(line: &str) -> Option<Vec<String>> {
    let rest = VERIFY.captures(line.trim())?.get(1)?.as_str();
    let spans: Vec<String> = CODE_SPAN
        .captures_iter(rest)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    if !spans.is_empty() {
        return Some(spans);
    }
    let rest = rest.trim();
    (!rest.is_empty()).then(|| vec![rest.to_owned()])
}

/// The commands in backticks in `text` that look like something a shell runs (Taskmaster's
/// `testStrategy` names them among prose).
pub fn commands_in(text: &str) -> Vec<String> {
    CODE_SPAN
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().trim())
        .filter(|c| c.contains(' ') && !c.contains('\n'))
        .map(str::to_owned)
        .collect()
}

/// `1.1, 1.2` or `US1` as a list.
pub fn list(text: &str) -> Vec<String> {
    text.split([',', ';'])
        .map(|p| {
            p.trim()
                .trim_matches(|c| c == '_' || c == '*' || c == '`')
                .trim()
        })
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `_Requirements: 1.1, 1.2_` (Kiro's detail line) as its list.
pub fn requirements_line(line: &str) -> Option<Vec<String>> {
    let line = line.trim().trim_matches(|c| c == '_' || c == '*').trim();
    let (key, rest) = line.split_once(':')?;
    let key = key.trim().trim_matches(|c| c == '_' || c == '*').trim();
    if !key.eq_ignore_ascii_case("requirements") && !key.eq_ignore_ascii_case("requirement") {
        return None;
    }
    Some(list(rest))
}

/// A title from a path: the feature folder (`specs/001-photo-albums/tasks.md` → `001 photo
/// albums`), else the file's name.
pub fn title_from_path(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let Some(file) = parts.last().copied() else {
        return "Imported tasks".to_owned();
    };
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let name = if matches!(stem, "tasks" | "TASKS") && parts.len() >= 2 {
        parts[parts.len() - 2]
    } else {
        stem
    };
    let words = name.replace(['-', '_'], " ");
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.is_empty() {
        "Imported tasks".to_owned()
    } else {
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_from_words_and_backticks() {
        let (inside, outside) = paths(
            "Create User model in src/models/user.py and `tests/test_user.py`, see README.md",
        );
        assert_eq!(
            inside,
            ["tests/test_user.py", "src/models/user.py", "README.md"]
        );
        assert!(outside.is_empty());
    }

    #[test]
    fn words_that_are_not_paths_are_left_alone() {
        let (inside, _) =
            paths("Use v1.2 e.g. `npm test` and https://example.com/a.js or a@b.com, and 3.14");
        assert!(inside.is_empty(), "{inside:?}");
    }

    #[test]
    fn paths_outside_the_repository_are_set_apart() {
        let (inside, outside) =
            paths("Edit ../../etc/passwd, `/etc/hosts` and ./src/../lib/a.rs and src/");
        assert_eq!(inside, ["lib/a.rs", "src/**"]);
        assert_eq!(outside, ["/etc/hosts", "../../etc/passwd"]);
    }

    #[test]
    fn a_verify_line_gives_its_commands() {
        assert_eq!(
            verify_line("Verify: `cargo test login`").unwrap(),
            ["cargo test login"]
        );
        assert_eq!(verify_line("_Verify: `a` and `b`_").unwrap(), ["a", "b"]);
        assert_eq!(
            verify_line("**Verify**: make check").unwrap(),
            ["make check"]
        );
        assert_eq!(
            verify_line("Verification: `npm test`").unwrap(),
            ["npm test"]
        );
        assert_eq!(verify_line("Verify:"), None);
        assert_eq!(verify_line("Verified the thing"), None);
    }

    #[test]
    fn commands_in_prose_are_the_backticked_ones_with_arguments() {
        assert_eq!(
            commands_in("Run `pytest tests/test_auth.py` and check `auth.py`"),
            ["pytest tests/test_auth.py"]
        );
    }

    #[test]
    fn requirement_lines_and_titles() {
        assert_eq!(
            requirements_line("_Requirements: 1.1, 1.2_").unwrap(),
            ["1.1", "1.2"]
        );
        assert_eq!(requirements_line("- Requirements: 2.3"), None);
        assert_eq!(
            title_from_path("specs/001-photo-albums/tasks.md"),
            "001 photo albums"
        );
        assert_eq!(
            title_from_path("backlog/tasks/task-12 - Add login.md"),
            "task 12 Add login"
        );
        assert_eq!(title_from_path(""), "Imported tasks");
    }
}
