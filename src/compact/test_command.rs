//! The command a repository states for running its tests, found the way a newcomer would:
//! what the README tells people to run, else a `test` target in the Makefile, else what the
//! manifest implies (`Cargo.toml`, `package.json`'s `test` script, pytest configured in
//! `pyproject.toml`/`setup.cfg`, `go.mod`), else the conventions of a `tests/` directory of
//! Python `test_*.py` files. Pure: it reads only the texts it is given.

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
/// line, or after a `$` prompt).
fn readme_command(text: &str) -> Option<String> {
    let caps = README_COMMAND.captures(text)?;
    let command = caps[1].trim().trim_end_matches(['`', '\'', '"']).trim();
    Some(command.to_owned())
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
