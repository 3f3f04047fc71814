//! Where a verify command's program parses long options itself, and which long options a
//! program's `--help` lists: what [`super::validate`] needs to say that a verify passes a flag
//! its program does not take (`python3 -m unittest tests.test_x --top 10`). Pure: running
//! `--help` is [`super::help`]'s.
//!
//! Only programs whose parsing is known are read: cargo's own subcommands (up to `--`; what
//! follows `cargo test --` goes to the test binaries, whose options are libtest's), `python -m
//! unittest` (and `discover`) and pytest, which both parse every word. Anything else, a
//! script's own arguments included (`python3 script.py --top 3`), is never read.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// What one simple command passes where its program parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'w> {
    pub program: &'w str,
    /// The words that select what `--help` describes: `["test"]` for `cargo test`, `["-m",
    /// "unittest"]` for `python3 -m unittest`.
    pub subcommand: Vec<&'w str>,
    /// The long options the program reads, as written up to any `=` (`--top=3` is `--top`).
    pub options: Vec<&'w str>,
    /// For `cargo test`: the long options after `--`, which go to the test binaries.
    pub test_options: Vec<&'w str>,
}

impl Parsed<'_> {
    /// The program as a person names it: `cargo test`, `python3 -m unittest`.
    pub fn shown(&self) -> String {
        std::iter::once(self.program)
            .chain(self.subcommand.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// cargo's subcommands whose `--help` lists every option they take (`cargo clippy --help`
/// does not list `cargo check`'s, which it takes too).
const CARGO_SUBCOMMANDS: &[&str] = &["build", "check", "test", "run", "bench", "doc"];

/// Options of cargo, unittest and pytest whose value is the next word, which may start with
/// `-` (`-k --top` selects tests by a pattern).
const CARGO_VALUES: &[&str] = &["-p", "-F", "-j", "-Z", "--config"];
const UNITTEST_VALUES: &[&str] = &["-k", "-s", "-p", "-t"];
const PYTEST_VALUES: &[&str] = &["-k", "-m", "-c", "-o", "-W", "-r", "-n"];

/// The options libtest's test binaries take (`cargo test -- --help`, Rust 1.8x), and
/// `--nocapture`, the older spelling of `--no-capture` that it still takes.
pub const LIBTEST: &[&str] = &[
    "--bench",
    "--color",
    "--ensure-time",
    "--exact",
    "--exclude-should-panic",
    "--fail-fast",
    "--force-run-in-process",
    "--format",
    "--help",
    "--ignored",
    "--include-ignored",
    "--list",
    "--logfile",
    "--no-capture",
    "--nocapture",
    "--quiet",
    "--report-time",
    "--show-output",
    "--shuffle",
    "--shuffle-seed",
    "--skip",
    "--test",
    "--test-threads",
];

static PYTHON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^python(?:\d+(?:\.\d+)?)?$")
        .unwrap_or_else(|err| unreachable!("bad python pattern: {err}"))
});

/// A long option in help text: `--top-level-directory`, and both spellings of `--[no-]color`.
static HELP_OPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"--(\[no-\])?([A-Za-z0-9][A-Za-z0-9_-]*)")
        .unwrap_or_else(|err| unreachable!("bad option pattern: {err}"))
});

/// Where the program of `words` (one simple command, its environment assignments removed)
/// parses long options itself; `None` for a program tick does not know to read.
pub fn parsed<'w>(words: &[&'w str]) -> Option<Parsed<'w>> {
    let (&program, rest) = words.split_first()?;
    if program == "cargo" {
        // `cargo +nightly test`: a toolchain first.
        let at = rest.iter().position(|w| !w.starts_with('+'))?;
        let subcommand = rest[at];
        if !CARGO_SUBCOMMANDS.contains(&subcommand) {
            return None;
        }
        let args = &rest[at + 1..];
        let (own, after) = match args.iter().position(|w| *w == "--") {
            Some(split) => (&args[..split], &args[split + 1..]),
            None => (args, &[][..]),
        };
        return Some(Parsed {
            program,
            subcommand: vec![subcommand],
            options: long_options(own, CARGO_VALUES),
            test_options: if subcommand == "test" {
                long_options(after, &[])
            } else {
                Vec::new()
            },
        });
    }
    let (subcommand, args): (Vec<&'w str>, &[&'w str]) = if PYTHON.is_match(program) {
        // The interpreter's own flags come before `-m`; anything else (`-c code`, a script)
        // means the words are not unittest's or pytest's.
        let m = rest.iter().position(|w| *w == "-m")?;
        if rest[..m].iter().any(|w| !w.starts_with('-') || *w == "-c") {
            return None;
        }
        let module = *rest.get(m + 1)?;
        if !matches!(module, "unittest" | "pytest") {
            return None;
        }
        let args = &rest[m + 2..];
        if module == "unittest" && args.first() == Some(&"discover") {
            (vec!["-m", module, "discover"], &args[1..])
        } else {
            (vec!["-m", module], args)
        }
    } else if matches!(program, "pytest" | "py.test") {
        (Vec::new(), rest)
    } else {
        return None;
    };
    let pytest = subcommand.last().is_none_or(|m| *m == "pytest");
    // A plugin loaded on the command line adds options its `--help` run would not know.
    if pytest && args.iter().any(|w| w.starts_with("-p")) {
        return None;
    }
    let values = if pytest {
        PYTEST_VALUES
    } else {
        UNITTEST_VALUES
    };
    Some(Parsed {
        program,
        subcommand,
        options: long_options(args, values),
        test_options: Vec::new(),
    })
}

/// The long options among `words` up to a `--`, each up to its `=`, leaving out the word
/// after an option of `values`.
fn long_options<'w>(words: &[&'w str], values: &[&str]) -> Vec<&'w str> {
    let mut found = Vec::new();
    let mut value_next = false;
    for &word in words {
        if word == "--" {
            break;
        }
        if std::mem::take(&mut value_next) {
            continue;
        }
        if values.contains(&word) {
            value_next = true;
            continue;
        }
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let name = name.split_once('=').map_or(name, |(name, _)| name);
        if name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            found.push(&word[..name.len() + 2]);
        }
    }
    found
}

/// Every long option `help` (a program's `--help` output) mentions, anywhere in it up to a
/// second `usage:` line (`python3 -m unittest --help` goes on with `discover`'s usage and
/// options, which the main command does not take); `None` when it mentions none, which says
/// nothing about what the program takes.
pub fn listed(help: &str) -> Option<BTreeSet<String>> {
    let mut usages = 0;
    let mut end = help.len();
    let mut at = 0;
    for line in help.split_inclusive('\n') {
        if line.trim_start().to_ascii_lowercase().starts_with("usage:") {
            usages += 1;
            if usages == 2 {
                end = at;
                break;
            }
        }
        at += line.len();
    }
    let mut options = BTreeSet::new();
    for found in HELP_OPTION.captures_iter(&help[..end]) {
        let name = &found[2];
        options.insert(format!("--{name}"));
        if found.get(1).is_some() {
            options.insert(format!("--no-{name}"));
        }
    }
    (!options.is_empty()).then_some(options)
}

/// Whether `option` is one of `known`, or a prefix of one: argparse (unittest, pytest) takes an
/// unambiguous prefix, and a check that cannot tell says nothing.
pub fn takes(known: &BTreeSet<String>, option: &str) -> bool {
    matches!(option, "--help" | "--version") || known.iter().any(|k| k.starts_with(option))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<&str> {
        command.split_whitespace().collect()
    }

    #[test]
    fn where_each_program_parses_its_long_options() {
        type Row<'a> = (&'a str, Option<(&'a str, &'a [&'a str], &'a [&'a str])>);
        let rows: &[Row<'_>] = &[
            (
                "cargo test --no-such-flag parse_empty",
                Some(("cargo test", &["--no-such-flag"], &[])),
            ),
            (
                "cargo test --features=fast -p --odd name -- --nocapture --frob",
                Some(("cargo test", &["--features"], &["--nocapture", "--frob"])),
            ),
            (
                "cargo +nightly build --release",
                Some(("cargo build", &["--release"], &[])),
            ),
            // Only cargo test's `--` goes to libtest; cargo run's goes to the program.
            (
                "cargo run --quiet -- --top 3",
                Some(("cargo run", &["--quiet"], &[])),
            ),
            ("cargo clippy --all-targets -- -D warnings", None),
            ("cargo nextest run --frob", None),
            ("cargo --locked test", None),
            (
                "python3 -m unittest -q test_wordfreq.py --top 10",
                Some(("python3 -m unittest", &["--top"], &[])),
            ),
            (
                "python -B -m unittest -k --top tests.test_x --locals",
                Some(("python -m unittest", &["--locals"], &[])),
            ),
            (
                "python3.12 -m unittest discover -s tests --top-level-directory=.",
                Some((
                    "python3.12 -m unittest discover",
                    &["--top-level-directory"],
                    &[],
                )),
            ),
            (
                "pytest --frobnicate tests/test_x.py::test_z --tb=short",
                Some(("pytest", &["--frobnicate", "--tb"], &[])),
            ),
            (
                "python3 -m pytest -k --x -q --lf",
                Some(("python3 -m pytest", &["--lf"], &[])),
            ),
            ("pytest -p xdist --numprocesses 2", None),
            ("pytest -pno:cacheprovider --frob", None),
            // A script's words are the script's.
            ("python3 wordfreq.py --top 3", None),
            ("python3 -c 'import x' -m unittest --frob", None),
            ("python3 -m http.server --bind 127.0.0.1", None),
            ("grep --frobnicate x file.py", None),
            ("./run_tests --frob", None),
            ("pytest -- --frob", Some(("pytest", &[], &[]))),
            ("pytest --x.y --=z ---a", Some(("pytest", &[], &[]))),
        ];
        for (command, expected) in rows {
            let found = parsed(&words(command));
            let found = found
                .as_ref()
                .map(|p| (p.shown(), p.options.clone(), p.test_options.clone()));
            let expected = expected
                .map(|(shown, options, test)| (shown.to_owned(), options.to_vec(), test.to_vec()));
            assert_eq!(found, expected, "{command}");
        }
    }

    #[test]
    fn the_subcommand_is_what_help_is_asked_of() {
        for (command, subcommand) in [
            ("cargo test x", vec!["test"]),
            (
                "python3 -m unittest discover",
                vec!["-m", "unittest", "discover"],
            ),
            ("python3 -m unittest tests", vec!["-m", "unittest"]),
            ("py.test", vec![]),
        ] {
            let found = parsed(&words(command)).map(|p| p.subcommand);
            assert_eq!(found, Some(subcommand), "{command}");
        }
    }

    #[test]
    fn options_listed_in_help_text() {
        let unittest = "usage: python3 -m unittest [-h] [-v] [-q] [--locals]\n\
                        \x20 -h, --help   show this help\n  -k TESTNAMEPATTERNS  Only run tests\n";
        assert_eq!(
            listed(unittest),
            Some(BTreeSet::from(["--help".to_owned(), "--locals".to_owned()]))
        );
        let cargo = "  -F, --features <FEATURES>  Space or comma separated list\n\
                     \x20     --no-fail-fast   Run all tests\n      --[no-]color\n";
        assert_eq!(
            listed(cargo),
            Some(
                ["--color", "--features", "--no-color", "--no-fail-fast"]
                    .map(str::to_owned)
                    .into()
            )
        );
        // Python 3.11's unittest: the main command's usage and options, then discover's.
        let unittest = "usage: python3 -m unittest [-h] [--locals]\n\n  --locals  Show locals\n\n\
                        usage: python3 -m unittest discover [-h] [--locals] [-t TOP]\n\
                        \x20 -t TOP, --top-level-directory TOP\n";
        assert_eq!(
            listed(unittest),
            Some(BTreeSet::from(["--locals".to_owned()]))
        );
        for nothing in ["", "usage: frob [-q] FILE\n", "-- is a separator\n"] {
            assert_eq!(listed(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn an_option_is_taken_when_listed_or_a_prefix_of_one() {
        let known: BTreeSet<String> = ["--top-level-directory", "--locals"]
            .map(str::to_owned)
            .into();
        for (option, taken) in [
            ("--locals", true),
            ("--top", true),
            ("--top-level-directory", true),
            ("--help", true),
            ("--version", true),
            ("--topx", false),
            ("--frobnicate", false),
            ("--local-x", false),
        ] {
            assert_eq!(takes(&known, option), taken, "{option}");
        }
    }
}
