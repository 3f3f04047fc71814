//! What tick corrects in a compact draft itself, before the checks ([`super::validate`]) and
//! before a person reads it: a mistake a small model makes the same way every time, cannot
//! repair when told, and whose right text the repository makes certain. Each correction is
//! said in the draft's context, so the person sees what tick changed and why.
//!
//! One correction so far: a test class a verify names that its test module does not have.
//! Qwen2.5-Coder-1.5B names `tests.test_stats.TestStats.test_x` after the module's name while
//! the module's one test class is `StatsTest` (6 of 14 blocked executions of the 2026-12-04
//! benchmark), and it kept the name when the repair call pointed it out (measured). A new test
//! method goes into the module's one `TestCase` class ([`super::place`]), so the verify can
//! only mean that class.

use std::sync::LazyLock;

use regex::Regex;

use super::context::Repo;
use super::validate::DraftPlan;

/// A dotted name a `unittest` command may select: `tests.test_stats.StatsTest.test_x`.
static DOTTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
        .unwrap_or_else(|err| unreachable!("{err}"))
});

/// A pytest node id with a class: `tests/test_stats.py::StatsTest::test_x`.
static NODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z0-9_./-]+\.py)::([A-Za-z_][A-Za-z0-9_]*)")
        .unwrap_or_else(|err| unreachable!("{err}"))
});

/// A class line and its bases: `class StatsTest(unittest.TestCase):`.
static CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:")
        .unwrap_or_else(|err| unreachable!("{err}"))
});

/// Each step's verify with a test class its module lacks swapped for the module's one test
/// class; what was changed, one sentence each, for the draft's context. A class the plan's
/// own words name (a step that adds `class TestStats`) is left alone, and so is a module with
/// no test class or several.
pub fn test_classes(plan: &mut DraftPlan, repo: &Repo) -> Vec<String> {
    let words: String = plan
        .steps
        .iter()
        .map(|s| s.title.as_str())
        .chain([plan.title.as_str(), plan.summary.as_str()])
        .collect::<Vec<_>>()
        .join("\n");
    let mut notes = Vec::new();
    for (index, step) in plan.steps.iter_mut().enumerate() {
        let id = format!("S{}", index + 1);
        // Where in the verify, what goes there, the module, the class named, the class meant.
        let mut swaps: Vec<(std::ops::Range<usize>, String, String, String, String)> = Vec::new();
        if step.verify.contains("unittest") {
            for found in DOTTED.find_iter(&step.verify) {
                let parts: Vec<&str> = found.as_str().split('.').collect();
                let Some((at, file, class)) = (1..parts.len()).find_map(|n| {
                    let file = format!("{}.py", parts[..n].join("/"));
                    repo.file(&file).map(|_| (n, file, parts[n]))
                }) else {
                    continue;
                };
                if let Some(right) = the_test_class(repo, &file, class, &words) {
                    let mut fixed = parts.clone();
                    fixed[at] = &right;
                    swaps.push((
                        found.range(),
                        fixed.join("."),
                        file,
                        class.to_owned(),
                        right,
                    ));
                }
            }
        }
        for found in NODE.captures_iter(&step.verify) {
            let (Some(file), Some(class)) = (found.get(1), found.get(2)) else {
                continue;
            };
            let path = file.as_str().trim_start_matches("./");
            if let Some(right) = the_test_class(repo, path, class.as_str(), &words) {
                let named = class.as_str().to_owned();
                swaps.push((class.range(), right.clone(), path.to_owned(), named, right));
            }
        }
        // From the end, so the earlier ranges still hold.
        swaps.sort_by_key(|(range, ..)| std::cmp::Reverse(range.start));
        for (range, with, file, class, right) in swaps {
            step.verify.replace_range(range, &with);
            notes.push(format!(
                "tick wrote `{right}` for `{class}` in {id}'s verify: `{file}` has no class \
                 `{class}`, and `{right}` is its test class"
            ));
        }
    }
    notes
}

/// The class to write for `class` in a test of `file`: `None` when `file` defines `class`,
/// when `class` does not look like a class, when the plan's words name it (a step may add
/// it), or unless `file` has exactly one test class (one whose bases name `TestCase`, or
/// else whose name starts or ends with `Test`).
fn the_test_class(repo: &Repo, file: &str, class: &str, words: &str) -> Option<String> {
    if !is_class_like(class) || has_word(words, class) {
        return None;
    }
    let text = repo.file(file)?.text.as_deref()?;
    let classes: Vec<(&str, &str)> = CLASS
        .captures_iter(text)
        .filter_map(|c| {
            Some((
                c.get(1)?.as_str(),
                c.get(2).map_or("", |bases| bases.as_str()),
            ))
        })
        .collect();
    if classes.iter().any(|(name, _)| *name == class) {
        return None;
    }
    let by_base: Vec<&str> = classes
        .iter()
        .filter(|(_, bases)| bases.contains("TestCase"))
        .map(|(name, _)| *name)
        .collect();
    let by_name: Vec<&str> = classes
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| name.starts_with("Test") || name.ends_with("Test"))
        .collect();
    match (by_base.as_slice(), by_name.as_slice()) {
        ([one], _) => Some((*one).to_owned()),
        ([], [one]) => Some((*one).to_owned()),
        _ => None,
    }
}

/// `TestStats`, `StatsTest`: a capitalized identifier, as a class is named.
fn is_class_like(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `text` holds `word` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(ident)
            && !text[at + word.len()..].chars().next().is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::context::RepoFile;
    use crate::compact::validate::DraftStep;

    const TESTS: &str = "import unittest\n\nfrom stats import mean\n\n\nclass StatsTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";

    fn repo(test_text: &str) -> Repo {
        Repo::from_files(vec![
            RepoFile {
                path: "stats.py".into(),
                bytes: 10,
                text: Some("def mean(values):\n    return sum(values) / len(values)\n".into()),
            },
            RepoFile {
                path: "tests/test_stats.py".into(),
                bytes: test_text.len() as u64,
                text: Some(test_text.into()),
            },
        ])
    }

    fn plan(title: &str, verify: &str) -> DraftPlan {
        DraftPlan {
            title: "Mean of nothing".into(),
            summary: "mean returns None for an empty list".into(),
            steps: vec![
                DraftStep {
                    title: "Return None from mean for an empty list".into(),
                    files: vec!["stats.py".into()],
                    new_files: vec![],
                    verify: "python3 -c \"from stats import mean; assert mean([]) is None\"".into(),
                },
                DraftStep {
                    title: title.into(),
                    files: vec!["tests/test_stats.py".into()],
                    new_files: vec![],
                    verify: verify.into(),
                },
            ],
        }
    }

    #[test]
    fn a_unittest_verify_gets_the_modules_one_test_class() {
        let mut draft = plan(
            "Add a test for mean of an empty list",
            "python3 -m unittest tests.test_stats.TestStats.test_mean_empty",
        );
        let first = draft.steps[0].verify.clone();
        let notes = test_classes(&mut draft, &repo(TESTS));
        assert_eq!(
            draft.steps[1].verify,
            "python3 -m unittest tests.test_stats.StatsTest.test_mean_empty"
        );
        assert_eq!(draft.steps[0].verify, first, "S1 names no test class");
        assert_eq!(
            notes,
            [
                "tick wrote `StatsTest` for `TestStats` in S2's verify: `tests/test_stats.py` has \
              no class `TestStats`, and `StatsTest` is its test class"
            ]
        );
        // Once is enough: the mended draft has nothing left to mend.
        assert!(test_classes(&mut draft, &repo(TESTS)).is_empty());
    }

    #[test]
    fn a_pytest_node_id_gets_the_modules_one_test_class() {
        let mut draft = plan(
            "Add a test for mean of an empty list",
            "python3 -m pytest tests/test_stats.py::TestStats::test_mean_empty -q",
        );
        let notes = test_classes(&mut draft, &repo(TESTS));
        assert_eq!(
            draft.steps[1].verify,
            "python3 -m pytest tests/test_stats.py::StatsTest::test_mean_empty -q"
        );
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn what_is_not_certain_is_left_for_the_checks() {
        let cases = [
            // The class exists.
            (
                TESTS,
                "Add a test",
                "python3 -m unittest tests.test_stats.StatsTest.test_x",
            ),
            // A method name, not a class.
            (
                TESTS,
                "Add a test",
                "python3 -m unittest tests.test_stats.test_x",
            ),
            // The plan adds the class it names.
            (
                TESTS,
                "Add class TestStats with a test",
                "python3 -m unittest tests.test_stats.TestStats.test_x",
            ),
            // Not a unittest command.
            (TESTS, "Add a test", "python3 tests.test_stats.TestStats.py"),
            // Two test classes: which one is a guess.
            (
                "import unittest\nclass MeanTest(unittest.TestCase):\n    pass\nclass MaxTest(unittest.TestCase):\n    pass\n",
                "Add a test",
                "python3 -m unittest tests.test_stats.TestStats.test_x",
            ),
            // No class at all: top-level pytest functions.
            (
                "def test_mean():\n    pass\n",
                "Add a test",
                "python3 -m unittest tests.test_stats.TestStats.test_x",
            ),
            // A module the repository does not have.
            (
                TESTS,
                "Add a test",
                "python3 -m unittest tests.test_other.TestStats.test_x",
            ),
        ];
        for (text, title, verify) in cases {
            let mut draft = plan(title, verify);
            let notes = test_classes(&mut draft, &repo(text));
            assert_eq!(draft.steps[1].verify, verify, "{title}: {verify}");
            assert!(notes.is_empty(), "{verify}: {notes:?}");
        }
    }

    #[test]
    fn a_test_class_found_by_its_name_when_no_base_says_testcase() {
        let text = "from base import Case\n\nclass StatsTest(Case):\n    def test_mean(self):\n        pass\n\nclass Helper:\n    pass\n";
        let mut draft = plan(
            "Add a test",
            "python3 -m unittest tests.test_stats.TestStats.test_x && echo ok",
        );
        test_classes(&mut draft, &repo(text));
        assert_eq!(
            draft.steps[1].verify,
            "python3 -m unittest tests.test_stats.StatsTest.test_x && echo ok"
        );
    }
}
