//! The command a repository states for running its tests, found the way a newcomer would:
//! what the README tells people to run, else a `test` target in the Makefile, else what the
//! manifest implies (`Cargo.toml`, `package.json`'s `test` script, pytest configured in
//! `pyproject.toml`/`setup.cfg`, `go.mod`), else the conventions of a `tests/` directory of
//! Python `test_*.py` files. Pure: it reads only the texts it is given.
//!
//! A README is the repository's text, not the person's: what is taken from it is one
//! recognised command, a program and plain arguments, never a shell line
//! (`make test; echo RAN > ran.txt` is passed over). The compact planner writes the command
//! into each step's `verify` while drafting, so the person approves it with the plan; the
//! executor runs nothing else.

use std::sync::LazyLock;

use regex::Regex;

/// A test command and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    pub command: String,
    /// The file (or convention) that states it, for people reading the plan.
    pub source: String,
}

static README_COMMAND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(?:^|[`$>]\s*|^\s{4})((?:cargo (?:test|nextest run)|python3? -m (?:pytest|unittest)|pytest|npm (?:run )?test|yarn test|pnpm test|make (?:test|check)|go test|tox|nox)\b[^`\n]*)",
    )
    .unwrap_or_else(|err| unreachable!("bad README pattern: {err}"))
});

/// Finds the repository's test command. `paths` are the repository's files (relative, `/`
/// separated); `read` gives the text of one of them, if it is text.
pub fn detect(paths: &[String], read: &dyn Fn(&str) -> Option<String>) -> Option<TestCommand> {
    let found = |command: &str, source: &str| {
        Some(TestCommand {
            command: command.to_owned(),
            source: source.to_owned(),
        })
    };
    let has = |name: &str| paths.iter().any(|p| p == name);
    for readme in [
        "README.md",
        "README.rst",
        "README.txt",
        "README",
        "CONTRIBUTING.md",
    ] {
        if has(readme)
            && let Some(text) = read(readme)
            && let Some(command) = readme_command(&text)
        {
            return found(&command, readme);
        }
    }
    if let Some(makefile) = ["Makefile", "makefile", "GNUmakefile"]
        .into_iter()
        .find(|name| has(name))
        && let Some(text) = read(makefile)
        && text.lines().any(|line| line.starts_with("test:"))
    {
        return found("make test", makefile);
    }
    if has("Cargo.toml") {
        return found("cargo test", "Cargo.toml");
    }
    if has("package.json")
        && let Some(text) = read("package.json")
        && let Ok(json) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(test) = json["scripts"]["test"].as_str()
        // What `npm init` writes: a script that only fails.
        && !test.contains("no test specified")
    {
        return found("npm test", "package.json");
    }
    for (config, marker) in [
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("pytest.ini", "[pytest]"),
        ("tox.ini", "[pytest]"),
    ] {
        if has(config) && read(config).is_some_and(|text| text.contains(marker)) {
            return found("python3 -m pytest", config);
        }
    }
    if has("go.mod") {
        return found("go test ./...", "go.mod");
    }
    python_tests_convention(paths, read)
}

/// `python3 -m pytest` when the tests import pytest, else unittest's discovery of the
/// directory that holds `test_*.py` files.
fn python_tests_convention(
    paths: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<TestCommand> {
    let tests: Vec<&String> = paths
        .iter()
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap_or(p);
            let dir = p.rsplit_once('/').map_or("", |(dir, _)| dir);
            (name.starts_with("test_") || name.ends_with("_test.py"))
                && std::path::Path::new(name)
                    .extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("py"))
                && (dir == "tests" || dir == "test")
        })
        .collect();
    let first = tests.first()?;
    let dir = first.rsplit_once('/').map_or(".", |(dir, _)| dir);
    let uses_pytest = tests.iter().any(|path| {
        read(path)
            .is_some_and(|text| text.contains("import pytest") || text.contains("from pytest"))
    });
    let source = format!("the `test_*.py` files in `{dir}/`");
    Some(TestCommand {
        command: if uses_pytest {
            "python3 -m pytest".to_owned()
        } else {
            format!("python3 -m unittest discover {dir}")
        },
        source,
    })
}

/// The first test command a README shows in code (a code span, a code block or an indented
/// line, or after a `$` prompt) that is one plain command ([`is_plain_command`]).
fn readme_command(text: &str) -> Option<String> {
    README_COMMAND.captures_iter(text).find_map(|caps| {
        let found = caps.get(1)?;
        let in_code_span = text[..found.start()].ends_with('`');
        // Outside a code span the command is the whole rest of its line: a backtick after
        // it is a substitution, not the end of the command.
        let rest = text[found.end()..].split('\n').next().unwrap_or("");
        if !in_code_span && !rest.trim().is_empty() {
            return None;
        }
        let command = found
            .as_str()
            .trim()
            .trim_end_matches(['`', '\'', '"'])
            .trim();
        is_plain_command(command).then(|| command.to_owned())
    })
}

/// Whether `command` is one program with plain arguments: words of letters, digits and
/// `-_./=:,+@%`, so no shell operator (`;`, `&&`, `|`, `>`), substitution, quote, glob or
/// variable can make it more than the one command it names.
pub fn is_plain_command(command: &str) -> bool {
    !command.trim().is_empty()
        && command.split_whitespace().all(|word| {
            word.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn detect_in(files: &[(&str, &str)]) -> Option<TestCommand> {
        let map: BTreeMap<String, String> = files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect();
        let paths: Vec<String> = map.keys().cloned().collect();
        detect(&paths, &|p| map.get(p).cloned())
    }

    fn command(files: &[(&str, &str)]) -> Option<String> {
        detect_in(files).map(|t| t.command)
    }

    #[test]
    fn the_readme_wins_over_the_manifest() {
        let found = detect_in(&[
            (
                "README.md",
                "# x\n\nRun the tests with `cargo test --all-features`.\n",
            ),
            ("Cargo.toml", "[package]\n"),
        ])
        .unwrap();
        assert_eq!(found.command, "cargo test --all-features");
        assert_eq!(found.source, "README.md");
        assert_eq!(
            command(&[(
                "README.md",
                "## Tests\n\n    python3 -m unittest discover tests\n"
            )]),
            Some("python3 -m unittest discover tests".to_owned())
        );
        assert_eq!(
            command(&[
                ("README.md", "```sh\n$ npm run test -- --watch\n```\n"),
                ("package.json", "{}")
            ]),
            Some("npm run test -- --watch".to_owned())
        );
    }

    /// Issue 25, finding 4: a README line with shell operators is never the test command.
    #[test]
    fn a_readme_shell_line_is_never_the_test_command() {
        for line in [
            "    make test; echo RAN > ran.txt",
            "    make test && curl x | sh",
            "`cargo test $(echo x)`",
            "$ pytest `rm -rf ~`",
            "    npm test > out.txt",
        ] {
            assert_eq!(
                command(&[("README.md", &format!("# x\n\n{line}\n"))]),
                None,
                "{line}"
            );
        }
        // The next plain one is taken; else what the manifest implies.
        assert_eq!(
            command(&[(
                "README.md",
                "    make test; echo RAN > ran.txt\n\nOr `cargo test --workspace`.\n"
            )]),
            Some("cargo test --workspace".to_owned())
        );
        assert_eq!(
            command(&[
                ("README.md", "    make test; echo RAN > ran.txt\n"),
                ("Makefile", "test:\n\t./run\n")
            ]),
            Some("make test".to_owned())
        );
        assert!(is_plain_command("python3 -m pytest -k login tests/"));
        assert!(!is_plain_command("pytest -k 'a or b'"));
    }

    #[test]
    fn a_readme_that_names_no_command_is_passed_over() {
        assert_eq!(
            command(&[
                (
                    "README.md",
                    "Counts words, like a small `wc`.\n\n    wordcount [-l]\n"
                ),
                ("Cargo.toml", "")
            ]),
            Some("cargo test".to_owned())
        );
        // "pytest" inside a word or prose is not a command.
        assert_eq!(command(&[("README.md", "We like testing a lot.\n")]), None);
    }

    #[test]
    fn a_makefile_test_target() {
        assert_eq!(
            command(&[
                ("Makefile", "all:\n\tcc x.c\n\ntest: all\n\t./run\n"),
                ("Cargo.toml", "")
            ]),
            Some("make test".to_owned())
        );
        assert_eq!(
            command(&[("Makefile", "all:\n\tcc x.c\n"), ("Cargo.toml", "")]),
            Some("cargo test".to_owned())
        );
    }

    #[test]
    fn package_json_needs_a_real_test_script() {
        assert_eq!(
            command(&[("package.json", r#"{"scripts": {"test": "vitest run"}}"#)]),
            Some("npm test".to_owned())
        );
        assert_eq!(
            command(&[(
                "package.json",
                r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#
            )]),
            None
        );
        assert_eq!(command(&[("package.json", "not json")]), None);
    }

    #[test]
    fn python_configs_and_conventions() {
        assert_eq!(
            command(&[("pyproject.toml", "[tool.pytest.ini_options]\n")]),
            Some("python3 -m pytest".to_owned())
        );
        assert_eq!(
            command(&[
                ("pyproject.toml", "[project]\nname = 'x'\n"),
                ("tests/test_cli.py", "import unittest\n")
            ]),
            Some("python3 -m unittest discover tests".to_owned())
        );
        assert_eq!(
            command(&[("tests/test_cli.py", "import pytest\n")]),
            Some("python3 -m pytest".to_owned())
        );
        let found = detect_in(&[("test/test_a.py", "import unittest\n")]).unwrap();
        assert_eq!(found.command, "python3 -m unittest discover test");
        assert_eq!(found.source, "the `test_*.py` files in `test/`");
        // A test file elsewhere is not the convention.
        assert_eq!(command(&[("src/test_helpers.py", "")]), None);
    }

    #[test]
    fn go_modules() {
        assert_eq!(
            command(&[("go.mod", "module x\n")]),
            Some("go test ./...".to_owned())
        );
    }
}
