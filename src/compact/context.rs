//! The context tick builds for a small model instead of letting it explore: the repository's
//! file list, the text of files that fit, outlines of the ones that do not, the files that
//! match identifiers in the goal first, and the test command the repository states, all
//! within a token budget.
//!
//! [`scan`] reads the repository once (the same walk as the tools: `.gitignore` honoured,
//! `.git` and `.tasks` never entered); everything after it is pure.

use std::collections::BTreeSet;
use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{Searcher, sinks::UTF8};

use super::outline;
use super::test_command::{self, TestCommand};

/// Files larger than this are never read whole into a context (their outline may be).
pub const MAX_READ_BYTES: u64 = 64 * 1024;
/// The most bytes [`scan`] reads in all: a huge repository is listed whole, but only this much
/// of it is read to match the goal and outline (in walk order, so top-level files first).
pub const MAX_SCAN_BYTES: u64 = 32 * 1024 * 1024;

/// One file of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Relative to the root, `/` separated.
    pub path: String,
    pub bytes: u64,
    /// The text, for a UTF-8 file of at most [`MAX_READ_BYTES`].
    pub text: Option<String>,
}

/// What the planner knows of the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repo {
    /// Sorted by path.
    pub files: Vec<RepoFile>,
    /// Every directory that holds a listed file, and `""` for the root.
    pub dirs: BTreeSet<String>,
}

impl Repo {
    /// A repository from its files, for tests and for callers that read files themselves.
    pub fn from_files(mut files: Vec<RepoFile>) -> Repo {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut dirs = BTreeSet::from([String::new()]);
        for file in &files {
            let mut path = file.path.as_str();
            while let Some((dir, _)) = path.rsplit_once('/') {
                dirs.insert(dir.to_owned());
                path = dir;
            }
        }
        Repo { files, dirs }
    }

    pub fn file(&self, path: &str) -> Option<&RepoFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }

    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// The repository's test command, if it states one.
    pub fn test_command(&self) -> Option<TestCommand> {
        test_command::detect(&self.paths(), &|path| {
            self.file(path).and_then(|f| f.text.clone())
        })
    }
}

/// Reads the repository at `root` as the planner's tools would see it.
pub fn scan(root: &Path) -> Repo {
    let mut files = Vec::new();
    let mut scanned = 0;
    let walker = crate::tools::walk::workspace_walker(root);
    let filter_root = root.to_path_buf();
    let mut builder = walker;
    builder.filter_entry(move |entry| {
        entry
            .path()
            .strip_prefix(&filter_root)
            .is_ok_and(|rel| !crate::tools::walk::is_hidden_from_tools(rel))
    });
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let path = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = entry.metadata().map_or(0, |m| m.len());
        let text = if bytes <= MAX_READ_BYTES && scanned + bytes <= MAX_SCAN_BYTES {
            scanned += bytes;
            crate::fsx::read_capped(entry.path(), MAX_READ_BYTES)
                .ok()
                .flatten()
                .filter(|text| !text.contains('\0'))
        } else {
            None
        };
        files.push(RepoFile { path, bytes, text });
    }
    Repo::from_files(files)
}

/// About how many tokens `text` costs: code runs about three characters a token with the
/// tokenizers of small models, so this errs on the side of more.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(3)
}

/// How a file appears in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Whole,
    Outline,
    Listed,
}

/// The context for one goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The text that goes into the prompt.
    pub text: String,
    /// Every file and how it is shown, in list order.
    pub files: Vec<(String, Shown)>,
    /// Every text file is in the context whole: the model has seen everything there is.
    pub complete: bool,
    pub test: Option<TestCommand>,
    /// Files whose path or text matches an identifier of the goal, best first.
    pub matched: Vec<String>,
    pub tokens: usize,
    /// About how many tokens the text files not shown whole hold.
    pub left_out: usize,
}

impl Context {
    pub fn count(&self, shown: Shown) -> usize {
        self.files.iter().filter(|(_, s)| *s == shown).count()
    }
}

/// Words of a goal worth searching the code for: identifiers (`format_counts`, `stats.mean`,
/// `csvStat`), flags (`--delimiter` → `delimiter`), file names, and other words of four
/// letters or more that are not common English.
#[allow(
    clippy::too_many_lines,
    reason = "a word list and one pass over the goal; to be split"
)]
pub fn goal_terms(goal: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "about",
        "adds",
        "after",
        "also",
        "and",
        "another",
        "before",
        "body",
        "bug",
        "change",
        "changes",
        "code",
        "crate",
        "each",
        "every",
        "everywhere",
        "file",
        "files",
        "fix",
        "flag",
        "from",
        "function",
        "have",
        "into",
        "make",
        "makes",
        "more",
        "need",
        "needs",
        "only",
        "option",
        "other",
        "print",
        "prints",
        "read",
        "return",
        "returns",
        "should",
        "so",
        "some",
        "that",
        "than",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "unit",
        "update",
        "used",
        "uses",
        "using",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "without",
        "would",
        "your",
        "instead",
        "document",
        "describe",
        "rename",
        "tests",
        "test",
        "covering",
        "comments",
        "public",
        "item",
        "items",
        "count",
        "extra",
        "support",
    ];
    let mut terms: Vec<String> = Vec::new();
    for raw in goal.split(|c: char| !(c.is_alphanumeric() || "_-./:".contains(c))) {
        let word = raw.trim_matches(|c: char| ".:-/".contains(c));
        if word.is_empty() {
            continue;
        }
        let flag = raw.starts_with("--") || raw.starts_with('-') && raw.len() == 2;
        let code_like = word.contains(['_', '.', '/', ':'])
            || word.chars().skip(1).any(char::is_uppercase)
            || flag;
        let lower = word.to_ascii_lowercase();
        let keep = code_like
            || word.chars().count() >= 4
                && word.chars().all(char::is_alphanumeric)
                && !COMMON.contains(&lower.as_str());
        // `count` is common English but also the name of a function in the goal
        // "rename the function count": a word right after "function"/"method" is kept.
        if (keep || follows_code_noun(goal, word)) && !terms.contains(&word.to_owned()) {
            terms.push(word.to_owned());
        }
    }
    terms
}

fn follows_code_noun(goal: &str, word: &str) -> bool {
    let words: Vec<&str> = goal.split_whitespace().collect();
    words.windows(2).any(|pair| {
        matches!(
            pair[0].to_ascii_lowercase().as_str(),
            "function" | "method" | "class" | "struct" | "type" | "module" | "variable"
        ) && pair[1].trim_matches(|c: char| !c.is_alphanumeric() && c != '_') == word
    })
}

/// Files that match the goal's terms, best first: a term in the path counts three, each term
/// found in the text (as a word, case-insensitively, with ripgrep's engine) one.
pub fn rank_matches(repo: &Repo, terms: &[String]) -> Vec<String> {
    let matchers: Vec<_> = terms
        .iter()
        .filter_map(|term| {
            // The last part of a dotted name is what code spells: `stats.mean` → `mean` too.
            let last = term.rsplit(['.', ':', '/']).next().unwrap_or(term);
            let pattern = if last == term {
                format!(r"\b{}\b", regex::escape(term))
            } else {
                format!(r"\b(?:{}|{})\b", regex::escape(term), regex::escape(last))
            };
            RegexMatcherBuilder::new()
                .case_insensitive(true)
                .build(&pattern)
                .ok()
        })
        .collect();
    let mut scored: Vec<(usize, &str)> = Vec::new();
    for file in &repo.files {
        let lower = file.path.to_ascii_lowercase();
        let mut score = 0;
        for term in terms {
            let term_lower = term.to_ascii_lowercase();
            let stem = term_lower.rsplit('/').next().unwrap_or(&term_lower);
            if lower.contains(stem) {
                score += 3;
            }
        }
        if let Some(text) = &file.text {
            for matcher in &matchers {
                let mut hit = false;
                let _ = Searcher::new().search_slice(
                    matcher,
                    text.as_bytes(),
                    UTF8(|_, _| {
                        hit = true;
                        Ok(false)
                    }),
                );
                score += usize::from(hit);
            }
        }
        if score > 0 {
            scored.push((score, &file.path));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().map(|(_, p)| p.to_owned()).collect()
}

/// Builds the context for `goal` within `budget` tokens.
///
/// The file list comes first (whole when it takes less than half the budget), then the test
/// command, then file texts: the files matching the goal, best first, then the others
/// smallest first. A file that does not fit whole is shown as its outline when that fits.
#[allow(
    clippy::too_many_lines,
    reason = "the context filled in priority order, one block per kind of content; to be split"
)]
pub fn build(repo: &Repo, goal: &str, budget: usize) -> Context {
    let matched = rank_matches(repo, &goal_terms(goal));
    let test = repo.test_command();
    let mut text = String::new();

    text.push_str(&format!(
        "Files in the repository ({}):\n",
        repo.files.len()
    ));
    let list_budget = budget / 2;
    let mut listed = 0;
    for file in &repo.files {
        let line = match &file.text {
            Some(t) => format!("{} ({} lines)\n", file.path, t.lines().count()),
            None => format!(
                "{} ({} bytes, not text or too large)\n",
                file.path, file.bytes
            ),
        };
        if estimate_tokens(&text) + estimate_tokens(&line) > list_budget {
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    if listed < repo.files.len() {
        text.push_str(&format!(
            "... and {} more files\n",
            repo.files.len() - listed
        ));
    }
    match &test {
        Some(test) => text.push_str(&format!(
            "\nThe tests run with: {} (stated in {})\n",
            test.command, test.source
        )),
        None => text.push_str("\nThe repository states no test command.\n"),
    }

    let mut order: Vec<&RepoFile> = matched.iter().filter_map(|p| repo.file(p)).collect();
    let mut rest: Vec<&RepoFile> = repo
        .files
        .iter()
        .filter(|f| f.text.is_some() && !matched.contains(&f.path))
        .collect();
    rest.sort_by_key(|f| (f.bytes, f.path.clone()));
    order.extend(rest);

    let mut shown: Vec<(String, Shown)> = repo
        .files
        .iter()
        .map(|f| (f.path.clone(), Shown::Listed))
        .collect();
    let mut used = estimate_tokens(&text);
    for file in order {
        let Some(body) = &file.text else {
            continue;
        };
        let whole = format!("\n=== {} ===\n{}\n", file.path, body.trim_end());
        let cost = estimate_tokens(&whole);
        let slot = shown.iter_mut().find(|(p, _)| *p == file.path);
        if used + cost <= budget {
            text.push_str(&whole);
            used += cost;
            if let Some(slot) = slot {
                slot.1 = Shown::Whole;
            }
            continue;
        }
        let definitions = outline::outline(&file.path, body);
        if definitions.is_empty() {
            continue;
        }
        let sketch = format!(
            "\n=== {} (outline: its definitions by line) ===\n{}",
            file.path,
            outline::render(&definitions)
        );
        let cost = estimate_tokens(&sketch);
        if used + cost <= budget {
            text.push_str(&sketch);
            used += cost;
            if let Some(slot) = slot {
                slot.1 = Shown::Outline;
            }
        }
    }
    let complete = listed == repo.files.len()
        && repo
            .files
            .iter()
            .zip(&shown)
            .all(|(f, (_, s))| f.text.is_none() || *s == Shown::Whole);
    let left_out = repo
        .files
        .iter()
        .zip(&shown)
        .filter(|(_, (_, s))| *s != Shown::Whole)
        .filter_map(|(f, _)| f.text.as_deref().map(estimate_tokens))
        .sum();
    Context {
        text,
        files: shown,
        complete,
        test,
        matched,
        tokens: used,
        left_out,
    }
}

/// The text of `paths` for the model, each whole when it fits in `budget` tokens, else its
/// outline unless `context` showed that already; paths that are not text files of the
/// repository are skipped.
pub fn read_files(
    repo: &Repo,
    context: &Context,
    paths: &[String],
    budget: usize,
) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut read = Vec::new();
    for path in paths {
        let Some(body) = repo.file(path).and_then(|f| f.text.as_ref()) else {
            continue;
        };
        let whole = format!("=== {path} ===\n{}\n\n", body.trim_end());
        let outlined = context
            .files
            .iter()
            .any(|(p, shown)| p == path && *shown == Shown::Outline);
        let piece = if estimate_tokens(&text) + estimate_tokens(&whole) <= budget {
            whole
        } else {
            let sketch = outline::render(&outline::outline(path, body));
            if outlined || sketch.is_empty() {
                continue;
            }
            format!("=== {path} (outline: its definitions by line) ===\n{sketch}\n")
        };
        if estimate_tokens(&text) + estimate_tokens(&piece) > budget {
            continue;
        }
        text.push_str(&piece);
        read.push(path.clone());
    }
    (text, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> RepoFile {
        RepoFile {
            path: path.to_owned(),
            bytes: text.len() as u64,
            text: Some(text.to_owned()),
        }
    }

    fn repo() -> Repo {
        Repo::from_files(vec![
            file(
                "README.md",
                "# csvstat\n\nRun `python3 -m unittest discover tests`.\n",
            ),
            file(
                "csvstat/cli.py",
                "import argparse\n\ndef main(argv):\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--column')\n",
            ),
            file(
                "csvstat/stats.py",
                &format!(
                    "def mean(values):\n    return sum(values) / len(values)\n\ndef minimum(values):\n    return min(values)\n{}",
                    "# padding\n".repeat(200)
                ),
            ),
            file("tests/test_cli.py", "import unittest\n"),
            RepoFile {
                path: "logo.png".into(),
                bytes: 5000,
                text: None,
            },
        ])
    }

    #[test]
    fn directories_include_every_parent_and_the_root() {
        let repo = Repo::from_files(vec![file("a/b/c.rs", ""), file("d.rs", "")]);
        assert_eq!(
            repo.dirs.iter().map(String::as_str).collect::<Vec<_>>(),
            vec!["", "a", "a/b"]
        );
        assert!(repo.file("a/b/c.rs").is_some());
        assert!(repo.file("a/b").is_none());
    }

    #[test]
    fn goal_terms_keep_identifiers_flags_and_rare_words() {
        assert_eq!(
            goal_terms(
                "Add a --delimiter option to the csvstat CLI so it can read semicolon-separated files"
            ),
            vec!["delimiter", "csvstat", "CLI"]
        );
        assert_eq!(
            goal_terms("Rename the function count to count_text everywhere in the crate"),
            vec!["count", "count_text"]
        );
        assert_eq!(
            goal_terms("make `stats.mean` return None for an empty list"),
            vec!["stats.mean", "None", "empty", "list"]
        );
    }

    #[test]
    fn files_matching_the_goal_rank_first() {
        let repo = repo();
        assert_eq!(
            rank_matches(&repo, &["stats.mean".to_owned()]),
            vec!["csvstat/stats.py"]
        );
        let ranked = rank_matches(&repo, &goal_terms("Add a --column check to csvstat"));
        assert_eq!(ranked[0], "csvstat/cli.py", "{ranked:?}");
    }

    #[test]
    fn a_large_budget_shows_everything_whole() {
        let context = build(&repo(), "Add a --delimiter option", 10_000);
        assert!(context.complete, "{}", context.text);
        assert_eq!(context.count(Shown::Whole), 4);
        assert!(
            context
                .text
                .contains("logo.png (5000 bytes, not text or too large)")
        );
        assert!(context.text.contains(
            "The tests run with: python3 -m unittest discover tests (stated in README.md)"
        ));
        assert!(
            context
                .text
                .contains("=== csvstat/cli.py ===\nimport argparse")
        );
        assert!(context.tokens <= 10_000);
    }

    #[test]
    fn a_small_budget_outlines_large_files_and_is_not_complete() {
        let context = build(&repo(), "make stats.mean return None", 300);
        assert!(!context.complete);
        assert!(context.tokens <= 300, "{}", context.tokens);
        assert!(context.left_out > 600, "{}", context.left_out);
        let stats = context
            .files
            .iter()
            .find(|(p, _)| p == "csvstat/stats.py")
            .unwrap();
        assert_eq!(stats.1, Shown::Outline, "{}", context.text);
        assert!(context.text.contains("L1 def mean(values):"));
        assert!(context.text.contains("L4 def minimum(values):"));
        // The list is always there.
        assert!(context.text.contains("tests/test_cli.py (1 lines)"));
    }

    #[test]
    fn a_tiny_budget_cuts_the_list_and_says_so() {
        let context = build(&repo(), "x", 20);
        assert!(context.text.contains("more files"), "{}", context.text);
        assert!(!context.complete);
    }

    #[test]
    fn read_files_falls_back_to_outlines_and_skips_unknown_paths() {
        let repo = repo();
        let listed = build(&repo, "x", 60);
        let paths = [
            "csvstat/stats.py".into(),
            "nope.py".into(),
            "csvstat/cli.py".into(),
        ];
        let (text, read) = read_files(&repo, &listed, &paths, 200);
        assert_eq!(read, vec!["csvstat/stats.py", "csvstat/cli.py"]);
        assert!(text.contains("(outline: its definitions by line)"));
        assert!(text.contains("=== csvstat/cli.py ===\nimport argparse"));
        // An outline the context showed already is not sent again.
        let outlined = build(&repo, "make stats.mean return None", 300);
        let (_, read) = read_files(&repo, &outlined, &paths, 200);
        assert_eq!(read, vec!["csvstat/cli.py"]);
    }

    #[test]
    fn scan_honours_gitignore_and_skips_tasks_and_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.rs"), "fn x() {}").unwrap();
        std::fs::create_dir_all(root.join(".tasks/draft")).unwrap();
        std::fs::write(root.join(".tasks/draft/PLAN.md"), "# p").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("blob.bin"), b"a\0b").unwrap();
        let repo = scan(root);
        assert_eq!(repo.paths(), vec![".gitignore", "blob.bin", "src/main.rs"]);
        assert_eq!(repo.file("blob.bin").unwrap().text, None);
        assert_eq!(
            repo.file("src/main.rs").unwrap().text.as_deref(),
            Some("fn main() {}\n")
        );
    }
}
