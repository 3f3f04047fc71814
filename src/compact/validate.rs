//! The checks a compact draft passes against the repository before it becomes a draft: each
//! step's files exist or are marked new in a directory that exists; each verify command names
//! a program that is on `PATH` (or a script in the repository) and only files, tests and cargo
//! features that exist or that this step or an earlier one creates (a reviewer reads the plan
//! in order); nothing is placeholder text or a sentence copied from the prompt; no two steps
//! are the same step; a verify passes no long option its program does not take (its `--help`
//! does not list it); a test a verify names is in the file it names; a function the goal names
//! is named by a step. Pure: the caller passes in what it knows of the repository, of `PATH`
//! and of each program's `--help`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::context::Repo;

/// A pattern of this file, compiled once; each is a literal, so a bad one is a bug.
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|err| unreachable!("bad pattern `{pattern}`: {err}"))
}
use super::flags;

/// A plan as the small model fills it in: the trimmed schema of [`super::plan_schema`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftPlan {
    pub title: String,
    pub summary: String,
    pub steps: Vec<DraftStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftStep {
    pub title: String,
    /// Existing files the step changes.
    #[serde(default)]
    pub files: Vec<String>,
    /// Files the step creates.
    #[serde(default)]
    pub new_files: Vec<String>,
    /// One shell command that checks the step.
    #[serde(default)]
    pub verify: String,
}

/// The long options a program takes after some subcommand words, if known ([`Facts`]).
pub type LongOptions<'a> = dyn Fn(&str, &[String]) -> Option<BTreeSet<String>> + 'a;

/// What the checks know besides the draft.
pub struct Facts<'a> {
    pub repo: &'a Repo,
    /// Whether a program of this name is on `PATH`.
    pub on_path: &'a dyn Fn(&str) -> bool,
    /// The texts the model was given as instructions; a field that copies a sentence of them
    /// is not the model's own work.
    pub prompts: &'a [&'a str],
    /// What the person asked for: a goal that asks for a test needs a step that writes one.
    pub goal: &'a str,
    /// The repository's own test command (the whole suite), when it states one.
    pub test_command: Option<&'a str>,
    /// The long options a program takes with these subcommand words (`cargo` and `["test"]`,
    /// `python3` and `["-m", "unittest"]`), as its `--help` lists them; `None` when that is
    /// not known (its `--help` could not run or listed nothing), and then nothing is said.
    pub long_options: &'a LongOptions<'a>,
}

/// Programs a shell runs without looking them up on `PATH`.
const BUILTINS: &[&str] = &[
    "cd", "echo", "printf", "test", "[", "true", "false", "export", "set", "exit", "read", "type",
    "command", ":", "source", ".",
];

/// File extensions that mark a verify word as a path that must exist.
const FILE_EXTENSIONS: &[&str] = &[
    "py", "rs", "js", "ts", "tsx", "jsx", "go", "rb", "java", "c", "h", "cpp", "json", "toml",
    "yaml", "yml", "md", "txt", "csv", "tsv", "sh", "cfg", "ini", "lock", "html", "css", "xml",
    "sql", "log",
];

/// A goal that asks for a test: "add a unit test", "with tests", "a spec for".
static ASKS_FOR_TEST: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(?:unit[ -])?(?:tests?|specs?)\b"));

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i:path/to/|/path/|<[a-z][a-z _-]*>|\{[a-z_]+\}|\b(?:your|my)_[a-z_]+\b|\blorem ipsum\b|\.\.\.)|\bfoo\.[a-z]+\b|\bxxx\b",
    )
});

/// Every problem with `plan`, one sentence each, written for the model (and for the person,
/// as warnings, if the repair does not fix them).
pub fn problems(plan: &DraftPlan, facts: &Facts<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    for (label, text) in [("the title", &plan.title), ("the summary", &plan.summary)] {
        copied(label, text, facts, &mut problems);
    }
    let mut titles: Vec<String> = Vec::new();
    for (index, step) in plan.steps.iter().enumerate() {
        let id = format!("S{}", index + 1);
        let normalized = normalize(&step.title);
        if normalized.is_empty() {
            problems.push(format!("{id} has no title"));
        } else if let Some(first) = titles.iter().position(|t| *t == normalized) {
            problems.push(format!(
                "{id} repeats S{} (`{}`); merge them or make each step do something different",
                first + 1,
                step.title.trim()
            ));
        }
        titles.push(normalized);
        copied(&format!("{id}'s title"), &step.title, facts, &mut problems);
        if step.files.is_empty() && step.new_files.is_empty() {
            problems.push(format!(
                "{id} names no file; list the files it changes (from the file list) or creates"
            ));
        }
        for path in &step.files {
            check_existing(&id, path, facts.repo, &mut problems);
        }
        for path in &step.new_files {
            check_new(&id, path, facts.repo, &mut problems);
        }
        // What the steps so far touch: a verify may read what this step or an earlier one
        // creates, never what only a later one does.
        let created: BTreeSet<&str> = plan.steps[..=index]
            .iter()
            .flat_map(|s| s.new_files.iter().chain(&s.files))
            .map(|p| clean(p))
            .collect();
        let later: BTreeSet<&str> = plan.steps[index + 1..]
            .iter()
            .flat_map(|s| s.new_files.iter())
            .map(|p| clean(p))
            .collect();
        check_verify(&id, &step.verify, facts, &created, &mut problems);
        for problem in named_in_verify(&id, &step.verify, facts.repo, &created) {
            problems.push(problem);
        }
        untaken_options(&id, &step.verify, facts, &mut problems);
        if let Some(last) = problems.last_mut()
            && last.starts_with(&format!("{id}'s verify reads `"))
            && last.ends_with("no step creates")
        {
            let path = last.split('`').nth(1).unwrap_or("").to_owned();
            if later.contains(path.as_str()) {
                *last = format!(
                    "{id}'s verify reads `{path}`, which only a later step creates; check it in \
                     that step, or create it in this one"
                );
            }
        }
        problems.extend(whole_suite_only(&id, step, facts));
        problems.extend(compares_with_error(&id, &step.verify));
        problems.extend(cut_programs(&id, &step.verify));
    }
    unsaid_terms(plan, facts.goal, &mut problems);
    for (name, adds) in goal_functions(facts.goal, facts.repo) {
        let named = plan.steps.iter().any(|s| {
            std::iter::once(&s.title)
                .chain(&s.files)
                .chain(&s.new_files)
                .chain(std::iter::once(&s.verify))
                .any(|text| has_word(&text.to_lowercase(), &name.to_lowercase()))
        });
        if !named {
            let verb = if adds { "adds" } else { "changes" };
            problems.push(format!(
                "the goal names `{name}`, but no step names it; say which step {verb} it"
            ));
        }
    }
    if ASKS_FOR_TEST.is_match(facts.goal)
        && !plan.steps.iter().any(|s| {
            s.files
                .iter()
                .chain(&s.new_files)
                .any(|p| is_test_file(clean(p), facts.repo))
        })
    {
        let existing = facts
            .repo
            .files
            .iter()
            .map(|f| f.path.as_str())
            .find(|p| is_test_file(p, facts.repo));
        let hint = existing.map_or_else(String::new, |p| format!(" (in `{p}`, say)"));
        problems.push(format!(
            "the goal asks for a test, but no step changes or creates a test file; add a step \
             that writes the test{hint}, with a verify that runs it"
        ));
    }
    problems
}

/// A problem for each of the goal's terms ([`goal_terms`]) that no step's title or verify
/// says, in any case.
fn unsaid_terms(plan: &DraftPlan, goal: &str, problems: &mut Vec<String>) {
    for term in goal_terms(goal) {
        let said = plan.steps.iter().any(|s| {
            let text = format!("{}\n{}", s.title, s.verify).to_lowercase();
            text.contains(&term.to_lowercase())
        });
        if !said {
            problems.push(format!(
                "the goal says `{term}`, but no step says it; name it in the title of the step \
                 that does it, and check it in that step's verify"
            ));
        }
    }
}

/// What a goal quotes (`'empty list'`, `"--top"`) and the exception types it names
/// (`ValueError`, `KeyError`: a capitalized word ending in `Error` or `Exception`, not the
/// bare word).
static GOAL_TERM: LazyLock<Regex> = LazyLock::new(|| {
    regex(r#"'([^'\n]{2,40})'|"([^"\n]{2,40})"|\b([A-Z][A-Za-z0-9]*(?:Error|Exception))\b"#)
});

/// The words a goal asks for that a plan must carry over: what it quotes (a message, an
/// option) and the exception types it names. A 1.5B model asked that `maximum` "raise
/// `ValueError` with the message 'empty list'" drafted steps that return `None` instead
/// (2026-12-04 benchmark, goal 3); each step was verified and the goal was not done.
/// Backticked code is [`goal_functions`]' to check.
fn goal_terms(goal: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for found in GOAL_TERM.captures_iter(goal) {
        let Some(term) = found.get(1).or(found.get(2)).or(found.get(3)) else {
            continue;
        };
        let term = term.as_str().trim();
        // An apostrophe is not a quote: "the list's end ... the user's" quotes nothing.
        if found.get(1).is_some()
            && goal[..found.get(0).map_or(0, |m| m.start())]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        if !term.is_empty() && !terms.iter().any(|t| t == term) {
            terms.push(term.to_owned());
        }
    }
    terms
}

/// What the goal quotes ([`goal_terms`]) that is not an exception type: `empty list`.
pub fn goal_quotes(goal: &str) -> Vec<String> {
    let errors = goal_errors(goal);
    goal_terms(goal)
        .into_iter()
        .filter(|t| !errors.contains(t))
        .collect()
}

/// The exception types the goal names ([`goal_terms`]): `ValueError`.
pub fn goal_errors(goal: &str) -> Vec<String> {
    goal_terms(goal)
        .into_iter()
        .filter(|t| IDENTIFIER.is_match(t) && (t.ends_with("Error") || t.ends_with("Exception")))
        .collect()
}

/// An identifier, whole.
static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| regex(r"^[A-Za-z_][A-Za-z0-9_]*$"));

/// How a goal names a function for sure: `` `mean` `` (or `` `stats.mean()` ``), `mean(...)`,
/// "the function mean".
static NAMED_FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"`([^`\s]+)`|\b([A-Za-z_][A-Za-z0-9_]*)\(|(?i:\b(?:function|method)\s+(?:called\s+|named\s+)?)([A-Za-z_][A-Za-z0-9_]*)",
    )
});

/// A `snake_case` word with an underscore (`parse_args`): a function only if the repository
/// defines one of that name.
static SNAKE_CASE: LazyLock<Regex> = LazyLock::new(|| regex(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"));

/// The goal asks to add what follows: "add a function", "implement `median`", "create a new
/// method".
static ADDS: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(?:add|create|write|implement|introduce|define)\s+(?:(?:a|an|the|new|public|private|helper|function|method|called|named)\s+)*$",
    )
});

/// "maximum in stats.py", "spread of `src/stats.py`": a word and the file it is in.
static IN_FILE: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"\b([A-Za-z_][A-Za-z0-9_]*)\s+(?:in|of|from)\s+`?([A-Za-z0-9_./-]+\.[A-Za-z0-9]+)`?")
});

/// Words that follow "function" in a sentence without naming one.
const NOT_A_NAME: &[&str] = &[
    "a",
    "an",
    "and",
    "by",
    "calls",
    "can",
    "for",
    "from",
    "in",
    "into",
    "is",
    "it",
    "its",
    "must",
    "name",
    "of",
    "on",
    "or",
    "returning",
    "returns",
    "should",
    "so",
    "that",
    "the",
    "to",
    "which",
    "will",
    "with",
];

/// The functions the goal names, each with whether the goal asks to add it: a name the goal
/// writes as code (backticked, called, after "function" or "method") that the repository
/// defines as a function or that the goal asks to add; a `snake_case` word with an underscore
/// that the repository defines as a function. Never a plain English word.
pub fn goal_functions(goal: &str, repo: &Repo) -> Vec<(String, bool)> {
    let mut named: Vec<(String, bool)> = Vec::new();
    let push = |name: &str, adds: bool, named: &mut Vec<(String, bool)>| match named
        .iter_mut()
        .find(|(n, _)| n == name)
    {
        Some(found) => found.1 |= adds,
        None => named.push((name.to_owned(), adds)),
    };
    for found in NAMED_FUNCTION.captures_iter(goal) {
        let (Some(all), Some(part)) =
            (found.get(0), found.get(1).or(found.get(2)).or(found.get(3)))
        else {
            continue;
        };
        let mut name = part.as_str();
        if found.get(1).is_some() {
            // `stats.mean()`, `Stats::mean`: the last name, not a file name.
            if path_like(name).is_some() {
                continue;
            }
            name = name.split('(').next().unwrap_or(name);
            name = name.rsplit(['.', ':']).next().unwrap_or(name);
        }
        if !IDENTIFIER.is_match(name) || NOT_A_NAME.contains(&name.to_lowercase().as_str()) {
            continue;
        }
        let adds = ADDS.is_match(&goal[..all.start()]);
        push(name, adds, &mut named);
    }
    for found in SNAKE_CASE.find_iter(goal) {
        push(found.as_str(), false, &mut named);
    }
    // "maximum in stats.py": a plain word is a function when the file it is said to be in
    // defines one of that name. The 2026-12-04 benchmark's drafts for "maximum in stats.py
    // should raise ValueError" changed `mean` instead, and nothing said so.
    for found in IN_FILE.captures_iter(goal) {
        let (Some(word), Some(file)) = (found.get(1), found.get(2)) else {
            continue;
        };
        let file = file.as_str().trim_start_matches("./");
        let defines = repo
            .files
            .iter()
            .filter(|f| f.path == file || f.path.rsplit('/').next() == Some(file))
            .filter_map(|f| Some((f.path.as_str(), f.text.as_deref()?)))
            .any(|(path, text)| {
                super::outline::outline(path, text)
                    .iter()
                    .any(|d| d.kind == super::outline::Kind::Function && d.name == word.as_str())
            });
        if defines {
            push(word.as_str(), false, &mut named);
        }
    }
    if named.is_empty() {
        return named;
    }
    let defined: BTreeSet<String> = repo
        .files
        .iter()
        .filter_map(|f| Some((f.path.as_str(), f.text.as_deref()?)))
        .flat_map(|(path, text)| super::outline::outline(path, text))
        .filter(|d| d.kind == super::outline::Kind::Function)
        .map(|d| d.name)
        .collect();
    named.retain(|(name, adds)| *adds || defined.contains(name));
    named
}

/// Whether `path` holds tests: under a `tests/` (or `test/`, `spec/`) directory, named as
/// tests (`test_*.py`, `*_test.py`, `*_test.rs`, `*_test.go`, `*.test.js`, `*.spec.ts`), or a
/// Rust file of the repository with a `#[cfg(test)]` module.
fn is_test_file(path: &str, repo: &Repo) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    parts
        .iter()
        .any(|d| matches!(*d, "tests" | "test" | "spec" | "__tests__"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || name.contains(".test.")
        || name.contains(".spec.")
        || (is_rust(name)
            && repo
                .file(path)
                .and_then(|f| f.text.as_deref())
                .is_some_and(|t| t.contains("#[cfg(test)]")))
}

fn is_rust(path: &str) -> bool {
    std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("rs"))
}

/// A step that writes a test but whose verify only runs the whole suite, which passed before
/// the change too, so the step could never be verified: it should run that test by name,
/// in the module's test class when it has one. Measured: 4 of 5 drafts for
/// "`maximum` ... should raise `ValueError`; add a unit test" verified every step with
/// `python3 -m unittest discover tests` alone.
fn whole_suite_only(id: &str, step: &DraftStep, facts: &Facts<'_>) -> Option<String> {
    let files = || step.new_files.iter().chain(&step.files).map(|p| clean(p));
    let verify = step.verify.split_whitespace().collect::<Vec<_>>().join(" ");
    let suite = facts
        .test_command
        .is_some_and(|c| c.split_whitespace().collect::<Vec<_>>().join(" ") == verify);
    let generic = verify.is_empty()
        || matches!(
            verify.as_str(),
            "cargo test"
                | "pytest"
                | "python -m pytest"
                | "python3 -m pytest"
                | "python -m unittest"
                | "python3 -m unittest"
                | "go test ./..."
                | "npm test"
        )
        || (verify.contains("-m unittest discover") && !verify.contains("-k "));
    let test_file = files().find(|p| is_test_file(p, facts.repo))?;
    // `python3 -m unittest tests.test_stats`, the module the step adds its test to: every
    // test already in it passes before the change too.
    let module_only = test_file.strip_suffix(".py").is_some_and(|module| {
        facts.repo.file(test_file).is_some()
            && verify.starts_with("python")
            && verify.split_whitespace().collect::<Vec<_>>()[1..]
                == ["-m", "unittest", &module.replace('/', ".")]
    });
    if !suite && !generic && !module_only {
        return None;
    }
    let shown = if verify.is_empty() {
        "none"
    } else {
        verify.as_str()
    };
    let named = if let Some(module) = test_file.strip_suffix(".py") {
        let class = facts
            .repo
            .file(test_file)
            .and_then(|f| f.text.as_deref())
            .and_then(super::mend::one_test_class);
        match class {
            _ if verify.contains("pytest") => format!("`pytest {test_file}::test_new`"),
            Some(class) => format!(
                "`python3 -m unittest {}.{class}.test_new`, the new test's name for `test_new`",
                module.replace('/', ".")
            ),
            None => format!(
                "`python3 -m unittest {}` and the new test's name",
                module.replace('/', ".")
            ),
        }
    } else if is_rust(test_file) {
        "`cargo test` and the new test's name".to_owned()
    } else {
        "the test it writes".to_owned()
    };
    Some(format!(
        "{id} writes the test file `{test_file}`, but its verify (`{shown}`) runs only {}, \
         which passes before the change too; verify with a command that runs the new test: \
         {named}",
        if module_only {
            "the tests already in it"
        } else {
            "the whole suite"
        }
    ))
}

/// A `python3 -c` program that the shell's quotes cut short: `python3 -c 'f(ValueError,
/// 'empty list')'` hands Python `f(ValueError, empty` and `list)` as another argument, a
/// syntax error however the step is done (the 2026-12-06 benchmark's drafts for goal 3, every
/// one). Read as the brackets of the program the shell passes, outside Python's strings and
/// comments: one that does not close, or closes what it never opened, was cut.
fn cut_programs(id: &str, verify: &str) -> Option<String> {
    for words in simple_commands(verify) {
        let python = words.first().is_some_and(|w| {
            let name = w.rsplit('/').next().unwrap_or(w);
            name == "python"
                || name
                    .strip_prefix("python")
                    .is_some_and(|v| v.starts_with('3'))
        });
        if !python {
            continue;
        }
        let Some(at) = words.iter().position(|w| w == "-c") else {
            continue;
        };
        let Some(program) = words.get(at + 1) else {
            continue;
        };
        if !brackets_close(program) {
            return Some(format!(
                "{id}'s verify runs a Python program whose brackets do not close (`{program}`): \
                 the shell's quotes end it early; inside a program in '...' use \"...\" for its \
                 strings, and the other way round"
            ));
        }
    }
    None
}

/// Whether the brackets of a Python program close, outside its strings and comments.
fn brackets_close(program: &str) -> bool {
    let mut open = Vec::new();
    let mut chars = program.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                // To the string's end (a backslash escapes); an unended string was cut too.
                let mut ended = false;
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == c {
                        ended = true;
                        break;
                    }
                }
                if !ended {
                    return false;
                }
            }
            '#' => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => open.push(c),
            ')' | ']' | '}' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if open.pop() != Some(want) {
                    return false;
                }
            }
            _ => {}
        }
    }
    open.is_empty()
}

/// `assert mean([]) == ValueError('empty list')`: a value compared with an exception, which
/// no call that raises ever returns, so the check fails however the step is done (the
/// 2026-12-04 benchmark's drafts for "raise `ValueError`", four steps so). `is` and `!=` too.
fn compares_with_error(id: &str, verify: &str) -> Option<String> {
    static COMPARED: LazyLock<Regex> = LazyLock::new(|| {
        regex(
            r"(?:==|!=|\bis(?:\s+not)?)\s*(?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Z][A-Za-z0-9]*(?:Error|Exception))\b",
        )
    });
    let error = COMPARED.captures(verify)?.get(1)?.as_str();
    Some(format!(
        "{id}'s verify compares a result with `{error}`, but a call that raises returns \
         nothing to compare, so it fails however the step is done; check the error with \
         `python3 -c \"import unittest, x; unittest.TestCase().assertRaisesRegex({error}, \
         'message', x.f, [])\"`"
    ))
}

/// What a verify names beyond files: the tests it selects (`python3 -m unittest a.b`,
/// `pytest f.py::name`, `cargo test name`) and the cargo features it turns on must exist in
/// the repository or in a file the steps so far (`created`) touch.
fn named_in_verify(id: &str, verify: &str, repo: &Repo, created: &BTreeSet<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    let rust = |path: &str| {
        std::path::Path::new(path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("rs"))
    };
    let touches_rust = created.iter().any(|p| rust(p));
    for words in simple_commands(verify) {
        let words: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        let program = words.first().copied().unwrap_or("");
        let python = program.starts_with("python");
        // `unittest discover DIR` names directories, not modules.
        let unittest = python
            && words.windows(2).any(|w| w == ["-m", "unittest"])
            && !words.contains(&"discover");
        let pytest =
            program == "pytest" || (python && words.windows(2).any(|w| w == ["-m", "pytest"]));
        // An option's value is not a test (`-k pattern`, `-m marker`).
        let values: &[&str] = if pytest {
            &["-k", "-m", "-c", "-o", "-W", "-r", "-n"]
        } else {
            &["-k", "-m", "-s", "-p", "-t"]
        };
        for (i, word) in words.iter().enumerate().skip(1) {
            if word.starts_with('-') || values.contains(&words[i - 1]) {
                continue;
            }
            if unittest
                && is_dotted_module(word)
                && let Some(problem) = unittest_name_problem(id, word, repo, created)
            {
                problems.push(problem);
            }
            if pytest && let Some((file, name)) = word.split_once("::") {
                let file = clean(file);
                let text = repo.file(file).and_then(|f| f.text.as_deref());
                let known = created.contains(file)
                    || text.is_some_and(|t| t.contains(name.split("::").last().unwrap_or(name)));
                if !known {
                    problems.push(format!(
                        "{id}'s verify runs the test `{word}`, which is not in `{file}` and no \
                         step so far changes that file"
                    ));
                }
            }
        }
        if program == "cargo" {
            let test = words.get(1) == Some(&"test");
            let own = words.get(2..).unwrap_or_default();
            let own = &own[..own.iter().position(|w| *w == "--").unwrap_or(own.len())];
            if test
                && let Some(name) = own
                    .iter()
                    .enumerate()
                    .find(|(i, w)| {
                        !w.starts_with('-') && (*i == 0 || !CARGO_VALUES.contains(&own[i - 1]))
                    })
                    .map(|(_, w)| w)
                && !touches_rust
                && !repo
                    .files
                    .iter()
                    .any(|f| rust(&f.path) && f.text.as_deref().is_some_and(|t| t.contains(*name)))
            {
                problems.push(format!(
                    "{id}'s verify runs `cargo test {name}`, but no Rust file has a test of that \
                     name and no step so far changes one"
                ));
            }
            for target in own
                .iter()
                .enumerate()
                .filter(|(i, _)| *i > 0 && own[i - 1] == "--test")
                .map(|(_, w)| *w)
                .chain(own.iter().filter_map(|w| w.strip_prefix("--test=")))
            {
                if test && !test_target_exists(target, repo, created) {
                    problems.push(format!(
                        "{id}'s verify runs `cargo test --test {target}`, but there is no \
                         `tests/{target}.rs` (nor a `[[test]]` of that name) and no step so far \
                         creates it"
                    ));
                }
            }
            for feature in features(&words) {
                if !cargo_feature_exists(feature, repo) {
                    problems.push(format!(
                        "{id}'s verify turns on the cargo feature `{feature}`, which `Cargo.toml` \
                         does not declare; drop `--features`, or add the feature in a step first"
                    ));
                }
            }
        }
    }
    problems
}

/// The long options `verify` passes where its program parses them itself, but which that
/// program's `--help` does not list; after `cargo test --`, those libtest does not take (unless
/// a manifest of the repository names a `harness` of its own).
fn untaken_options(id: &str, verify: &str, facts: &Facts<'_>, problems: &mut Vec<String>) {
    for words in simple_commands(verify) {
        let words: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        let Some(parsed) = flags::parsed(&words) else {
            continue;
        };
        if !parsed.options.is_empty() {
            let subcommand: Vec<String> =
                parsed.subcommand.iter().map(|w| (*w).to_owned()).collect();
            if let Some(known) = (facts.long_options)(parsed.program, &subcommand) {
                for option in parsed.options.iter().filter(|o| !flags::takes(&known, o)) {
                    problems.push(format!(
                        "{id}'s verify passes `{option}` to `{}`, which does not take it (its \
                         --help lists no `{option}`)",
                        parsed.shown()
                    ));
                }
            }
        }
        let own_harness = facts.repo.files.iter().any(|f| {
            (f.path == "Cargo.toml" || f.path.ends_with("/Cargo.toml"))
                && f.text.as_deref().is_none_or(|t| t.contains("harness"))
        });
        if own_harness {
            continue;
        }
        for option in parsed
            .test_options
            .iter()
            .filter(|o| !flags::LIBTEST.contains(o))
        {
            problems.push(format!(
                "{id}'s verify passes `{option}` after `--` to the tests `cargo test` builds, \
                 which do not take it (libtest has no `{option}`); drop it, or put it before \
                 `--` if it is cargo's"
            ));
        }
    }
}

/// `a.b.c`: a Python module path (not a file name with an extension tick knows, nor a number,
/// the value of an option: `--top 10`).
fn is_dotted_module(word: &str) -> bool {
    !word.contains('/')
        && word.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        && path_like(word).is_none()
}

/// cargo options whose value is the next word: `cargo test -p wc parse` selects `parse`.
const CARGO_VALUES: &[&str] = &[
    "-p",
    "--package",
    "-F",
    "--features",
    "--test",
    "--bin",
    "--example",
    "--bench",
    "-j",
    "--jobs",
    "--target",
    "--target-dir",
    "--manifest-path",
    "--profile",
    "--color",
    "--message-format",
    "--exclude",
    "-Z",
    "--config",
];

/// What is wrong with the tests `python3 -m unittest name` selects: a prefix of the dotted
/// `name` (`pkg.test_mod.Class.test`) must be a module file of the repository or of the steps
/// so far (or the whole name a package directory), and the rest (`Class`, `test`) must be in
/// that file unless a step so far changes it.
fn unittest_name_problem(
    id: &str,
    name: &str,
    repo: &Repo,
    created: &BTreeSet<&str>,
) -> Option<String> {
    let parts: Vec<&str> = name.split('.').collect();
    for n in 1..=parts.len() {
        let base = parts[..n].join("/");
        let file = format!("{base}.py");
        if created.contains(file.as_str()) {
            // A step so far changes the module: its new test may be anywhere in it, but a new
            // test method goes into the module's existing test class, so a class the verify
            // names must be one the module has.
            return repo
                .file(&file)
                .and_then(|found| found.text.as_deref())
                .and_then(|text| missing_class(id, name, &file, text, parts.get(n).copied()));
        }
        if n == parts.len() && repo.dirs.contains(&base) {
            return None;
        }
        let Some(found) = repo.file(&file) else {
            continue;
        };
        let text = found.text.as_deref()?;
        let missing = parts[n..].iter().find(|part| !has_word(text, part))?;
        return Some(format!(
            "{id}'s verify runs the test `{name}`, but `{file}` has no `{missing}` and no step \
             so far changes that file; name a test that is in it, or change the file in this \
             step"
        ));
    }
    Some(format!(
        "{id}'s verify runs the tests `{name}`, but no file of the repository or of the steps so \
         far is that module; name a test module that exists or that a step creates"
    ))
}

/// The problem when `class` (the part of the test name after the module `file`) looks like a
/// class and `text`, the module, defines no class of that name: the verify would fail with
/// "module has no attribute" however the step writes its test.
fn missing_class(
    id: &str,
    name: &str,
    file: &str,
    text: &str,
    class: Option<&str>,
) -> Option<String> {
    static CLASS: LazyLock<Regex> =
        LazyLock::new(|| regex(r"(?m)^class\s+([A-Za-z_][A-Za-z0-9_]*)"));
    let class = class.filter(|c| c.starts_with(|ch: char| ch.is_ascii_uppercase()))?;
    let classes: Vec<&str> = CLASS
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    if classes.is_empty() || classes.contains(&class) {
        return None;
    }
    let named = classes
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "{id}'s verify runs the test `{name}`, but `{file}` has no class `{class}` (its classes: \
         {named}); a new test method goes into the file's test class, so name that class"
    ))
}

/// Whether `text` holds `word` as a whole word (not inside a longer identifier).
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(ident)
            && !text[at + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Whether `cargo test --test name` has a target: `tests/name.rs`, `tests/name/main.rs`, or a
/// `[[test]]` of that name in `Cargo.toml`, in the repository or the steps so far. A manifest
/// tick could not read has every target.
fn test_target_exists(name: &str, repo: &Repo, created: &BTreeSet<&str>) -> bool {
    let files = [format!("tests/{name}.rs"), format!("tests/{name}/main.rs")];
    files
        .iter()
        .any(|f| repo.file(f).is_some() || created.contains(f.as_str()))
        || created.contains("Cargo.toml")
        || repo.file("Cargo.toml").is_none_or(|f| {
            f.text
                .as_deref()
                .is_none_or(|t| t.contains(&format!("\"{name}\"")))
        })
}

/// The features a cargo command line turns on: `--features a,b`, `--features=a`, `-F a`.
fn features<'w>(words: &[&'w str]) -> Vec<&'w str> {
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let value = if let Some(v) = word.strip_prefix("--features=") {
            Some(v)
        } else if matches!(*word, "--features" | "-F") {
            words.get(i + 1).copied()
        } else {
            None
        };
        found.extend(
            value
                .into_iter()
                .flat_map(|v| v.split([',', ' ']))
                .filter(|f| !f.is_empty()),
        );
    }
    found
}

/// Whether the repository's `Cargo.toml` declares `feature` (under `[features]`, or as an
/// optional dependency); a manifest tick could not read declares everything.
fn cargo_feature_exists(feature: &str, repo: &Repo) -> bool {
    let Some(text) = repo.file("Cargo.toml").and_then(|f| f.text.as_deref()) else {
        return true;
    };
    // `dep/feature` turns on a dependency's feature: only the dependency is checked.
    let feature = feature.split('/').next().unwrap_or(feature);
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let key = line
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        if key == feature
            && (section == "[features]"
                || (section.contains("dependencies") && line.contains("optional")))
        {
            return true;
        }
    }
    false
}

/// `./a/b` and `a/b` are one path.
fn clean(path: &str) -> &str {
    path.trim().trim_start_matches("./")
}

fn normalize(title: &str) -> String {
    title
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn copied(label: &str, text: &str, facts: &Facts<'_>, problems: &mut Vec<String>) {
    if placeholder(text, problems, |found| {
        format!("{label} holds placeholder text `{found}`; write what this repository needs")
    }) {
        return;
    }
    let lower = text.to_lowercase();
    for prompt in facts.prompts {
        for sentence in prompt.split(['.', '\n', ':']) {
            let sentence = sentence.trim().to_lowercase();
            if sentence.chars().count() >= 25 && lower.contains(&sentence) {
                problems.push(format!(
                    "{label} copies the instructions (`{sentence}`); write what this plan does"
                ));
                return;
            }
        }
    }
}

/// Whether `text` holds placeholder text (`TODO`, `<path>`); when it does, the problem
/// `problem` words with the placeholder found is pushed.
fn placeholder(
    text: &str,
    problems: &mut Vec<String>,
    problem: impl FnOnce(&str) -> String,
) -> bool {
    let Some(found) = PLACEHOLDER.find(text) else {
        return false;
    };
    problems.push(problem(found.as_str()));
    true
}

fn outside(path: &str) -> bool {
    path.starts_with('/') || path.split('/').any(|part| part == "..")
}

/// What is wrong with a step's file name before the repository is asked: it is empty, outside
/// the repository, or placeholder text. `new` for a file the step creates.
fn name_problem(id: &str, path: &str, new: bool) -> Option<String> {
    let (verb, new_word, not_a_file) = if new {
        ("creates", "new ", "")
    } else {
        ("names", "", ", not a file of this repository")
    };
    if path.is_empty() {
        return Some(format!("{id} lists an empty {new_word}file name"));
    }
    if outside(path) {
        return Some(format!(
            "{id} {verb} `{path}`, outside the repository; use paths relative to its root"
        ));
    }
    let found = PLACEHOLDER.find(path)?;
    Some(format!(
        "{id} {verb} `{path}`, placeholder text (`{}`){not_a_file}",
        found.as_str()
    ))
}

fn check_existing(id: &str, path: &str, repo: &Repo, problems: &mut Vec<String>) {
    let path = clean(path);
    if let Some(problem) = name_problem(id, path, false) {
        problems.push(problem);
    } else if crate::watch::fingerprint::is_glob(path) {
        let set = crate::watch::fingerprint::glob_set(&[path]);
        if !repo.files.iter().any(|f| set.is_match(&f.path)) {
            problems.push(format!("{id} names `{path}`, which matches no file"));
        }
    } else if repo.file(path).is_none() && !repo.dirs.contains(path) {
        problems.push(format!(
            "{id} names `{path}`, which does not exist; name a file from the file list, or put \
             it under `new_files` if the step creates it"
        ));
    }
}

fn check_new(id: &str, path: &str, repo: &Repo, problems: &mut Vec<String>) {
    let path = clean(path);
    if let Some(problem) = name_problem(id, path, true) {
        problems.push(problem);
        return;
    }
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    if repo.file(path).is_none() && !repo.dirs.contains(dir) {
        problems.push(format!(
            "{id} creates `{path}` in `{dir}/`, a directory that does not exist; put new files \
             in an existing directory"
        ));
    }
}

/// The words of a shell command, quotes removed, split into the simple commands of a list or
/// pipeline (`a && b | c; d`).
fn simple_commands(command: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    // The word after a redirection is its file, not an argument.
    let mut target = false;
    let end_word = |word: &mut String,
                    in_word: &mut bool,
                    target: &mut bool,
                    commands: &mut Vec<Vec<String>>| {
        if *in_word {
            let word = std::mem::take(word);
            if !std::mem::take(target)
                && let Some(last) = commands.last_mut()
            {
                last.push(word);
            }
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    in_word = true;
                }
            }
            // `2>&1`, `>out.txt`, `< in`, `&>log`, `>>log`: no command ends, no word is an
            // argument (`1` is not a program).
            (None, '>' | '<' | '&') if c != '&' || chars.peek() == Some(&'>') => {
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    end_word(&mut word, &mut in_word, &mut target, &mut commands);
                }
                while chars.peek().is_some_and(|n| matches!(n, '>' | '<' | '&')) {
                    chars.next();
                }
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    // `>&1`: a descriptor, not a file.
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                } else {
                    target = true;
                }
            }
            (None, '&' | '|' | ';' | '(' | ')') => {
                end_word(&mut word, &mut in_word, &mut target, &mut commands);
                while chars.peek().is_some_and(|n| matches!(n, '&' | '|')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            (None, c) if c.is_whitespace() => {
                end_word(&mut word, &mut in_word, &mut target, &mut commands);
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut target, &mut commands);
    commands.retain(|c| !c.is_empty());
    commands
}

fn check_verify(
    id: &str,
    verify: &str,
    facts: &Facts<'_>,
    created: &BTreeSet<&str>,
    problems: &mut Vec<String>,
) {
    let verify = verify.trim();
    if verify.is_empty() {
        problems.push(format!(
            "{id} has no verify command; give one command that shows the step works"
        ));
        return;
    }
    if placeholder(verify, problems, |found| {
        format!("{id}'s verify `{verify}` holds placeholder text `{found}`")
    }) {
        return;
    }
    for words in simple_commands(verify) {
        let mut words = words
            .iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'));
        let Some(program) = words.next() else {
            continue;
        };
        let program_ok = if program.contains('/') {
            let path = clean(program);
            facts.repo.file(path).is_some() || created.contains(path)
        } else {
            BUILTINS.contains(&program.as_str()) || (facts.on_path)(program)
        };
        if !program_ok {
            problems.push(format!(
                "{id}'s verify runs `{program}`, which is not a program on this machine's PATH \
                 nor a file of the repository; use the repository's test command or a program \
                 that is installed"
            ));
        }
        for word in words {
            if let Some(path) = path_like(word)
                && facts.repo.file(path).is_none()
                && !facts.repo.dirs.contains(path)
                && !created.contains(path)
            {
                problems.push(format!(
                    "{id}'s verify reads `{path}`, which does not exist and no step creates"
                ));
            }
        }
    }
}

/// The path a verify word names, if it looks like one: has a `/` or a known file extension,
/// and is not a flag, a URL, a Rust path (`a::b`) or a glob.
fn path_like(word: &str) -> Option<&str> {
    let word = word.split_once('=').map_or(
        word,
        |(key, value)| {
            if key.starts_with('-') { value } else { word }
        },
    );
    if word.starts_with('-')
        || word.contains("://")
        || word.contains("::")
        || word.contains(['*', '?', '$', '{'])
        || word.is_empty()
    {
        return None;
    }
    let path = clean(word).trim_end_matches('/');
    if !path
        .chars()
        .all(|c| c.is_alphanumeric() || "_-./@+".contains(c))
    {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let has_extension = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext));
    // `tests/` or `src/lib.rs`, but not `1/2` or `a/b` made of one letter each.
    let has_dir = clean(word).contains('/') && path.split('/').all(|p| p.len() > 1 || p == ".");
    (has_extension || has_dir).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::context::RepoFile;

    fn repo() -> Repo {
        Repo::from_files(
            [
                "csvstat/cli.py",
                "csvstat/stats.py",
                "tests/test_cli.py",
                "README.md",
            ]
            .iter()
            .map(|p| file(p, ""))
            .collect(),
        )
    }

    /// `found` is as many problems as `parts`, each saying its part.
    fn says(found: &[String], parts: &[&str]) {
        assert_eq!(found.len(), parts.len(), "{found:?}");
        for (problem, part) in found.iter().zip(parts) {
            assert!(problem.contains(part), "{found:?}");
        }
    }

    /// A file of a test repository, holding `text`.
    fn file(path: &str, text: &str) -> RepoFile {
        RepoFile {
            path: path.to_owned(),
            bytes: 10,
            text: Some(text.to_owned()),
        }
    }

    /// The problems of `plan` in `repo` where only `programs` are on `PATH`, with no goal, no
    /// instructions and no test command of the repository's.
    fn check_in(repo: &Repo, programs: &[&str], plan: &DraftPlan) -> Vec<String> {
        let on_path = |p: &str| programs.contains(&p);
        let facts = Facts {
            repo,
            on_path: &on_path,
            prompts: &[],
            goal: "",
            test_command: None,
            long_options: &|_, _| None,
        };
        problems(plan, &facts)
    }

    fn step(title: &str, files: &[&str], new_files: &[&str], verify: &str) -> DraftStep {
        DraftStep {
            title: title.to_owned(),
            files: files.iter().map(|s| (*s).to_owned()).collect(),
            new_files: new_files.iter().map(|s| (*s).to_owned()).collect(),
            verify: verify.to_owned(),
        }
    }

    fn plan(steps: Vec<DraftStep>) -> DraftPlan {
        DraftPlan {
            title: "Add a delimiter option".into(),
            summary: "Read semicolon-separated files.".into(),
            steps,
        }
    }

    fn check(plan: &DraftPlan) -> Vec<String> {
        let repo = repo();
        let on_path = |p: &str| ["python3", "grep", "git"].contains(&p);
        let facts = Facts {
            repo: &repo,
            on_path: &on_path,
            prompts: &["Answer with the plan for the goal as one JSON object."],
            goal: "Add a delimiter option",
            test_command: Some("python3 -m unittest discover tests"),
            long_options: &|_, _| None,
        };
        problems(plan, &facts)
    }

    /// The benchmark's fixture and goal: "`maximum` of an empty list should raise
    /// `ValueError` with a clear message; add a unit test".
    fn stats_facts_check(goal: &str, plan: &DraftPlan) -> Vec<String> {
        let repo = Repo::from_files(
            [
                ("stats.py", "def maximum(values):\n    return max(values)\n"),
                (
                    "tests/test_stats.py",
                    "import unittest\n\nclass StatsTest(unittest.TestCase):\n    pass\n",
                ),
                ("README.md", "Run `python3 -m unittest discover tests`.\n"),
            ]
            .iter()
            .map(|(p, t)| file(p, t))
            .collect(),
        );
        let on_path = |p: &str| p == "python3";
        let facts = Facts {
            repo: &repo,
            on_path: &on_path,
            prompts: &[],
            goal,
            test_command: Some("python3 -m unittest discover tests"),
            long_options: &|_, _| None,
        };
        problems(plan, &facts)
    }

    /// The fix of the benchmark's goal, verified by the whole suite.
    fn raise_step() -> DraftStep {
        step(
            "Raise ValueError in maximum for an empty list",
            &["stats.py"],
            &[],
            "python3 -m unittest discover tests",
        )
    }

    const MAXIMUM_GOAL: &str =
        "maximum of an empty list should raise ValueError with a clear message; add a unit test";

    #[test]
    fn what_a_goal_quotes_and_the_errors_it_names_are_carried_into_a_step() {
        let goal = "maximum in stats.py should raise ValueError with the message 'empty list' \
                    when the list is empty; add a unit test";
        let test_step = step(
            "Test maximum with no values",
            &["tests/test_stats.py"],
            &[],
            "python3 -m unittest tests.test_stats.StatsTest.test_maximum_empty",
        );
        // The benchmark's draft: `None` where the goal asks for an error.
        let none = plan(vec![
            step(
                "Return None from maximum when given no values",
                &["stats.py"],
                &[],
                "python3 -c \"from stats import maximum; assert maximum([]) is None\"",
            ),
            test_step.clone(),
        ]);
        assert_eq!(
            stats_facts_check(goal, &none),
            vec![
                "the goal says `ValueError`, but no step says it; name it in the title of the \
                 step that does it, and check it in that step's verify"
                    .to_owned(),
                "the goal says `empty list`, but no step says it; name it in the title of the \
                 step that does it, and check it in that step's verify"
                    .to_owned(),
            ]
        );
        // Said in a title or a verify, in any case, is enough.
        let raises = plan(vec![
            step(
                "Raise valueerror from maximum",
                &["stats.py"],
                &[],
                "python3 -c \"import stats; stats.maximum([])\" 2>&1 | python3 -c \"import sys; \
                 assert 'empty list' in sys.stdin.read()\"",
            ),
            test_step,
        ]);
        assert_eq!(stats_facts_check(goal, &raises), Vec::<String>::new());
        // An apostrophe quotes nothing, and a bare `Error` is no exception type.
        assert!(goal_terms("the list's end and the user's Error").is_empty());
        assert_eq!(
            goal_terms(r#"print "no words" and raise KeyError or a ParseException"#),
            ["no words", "KeyError", "ParseException"]
        );
    }

    #[test]
    fn a_python_program_cut_short_by_the_shells_quotes_is_a_problem() {
        for verify in [
            // The benchmark's draft, as tick had written it.
            "python3 -c 'from stats import mean; __import__(\"unittest\").TestCase().assertRaisesRegex(ValueError, 'empty list', mean, [])'",
            "python3 -c \"f(\"a b\")\"",
            "python3 -c 'print(1' && true",
            "/usr/bin/python3.12 -c 'x = [1, 2'",
            "python -c 'print(\"a)'",
        ] {
            let found = cut_programs("S1", verify);
            assert!(
                found.as_deref().is_some_and(|p| p
                    .starts_with("S1's verify runs a Python program whose brackets do not close")),
                "{verify}: {found:?}"
            );
        }
        for verify in [
            "python3 -c 'from stats import mean; __import__(\"unittest\").TestCase().assertRaisesRegex(ValueError, \"empty list\", mean, [])'",
            "python3 -c \"print('(')  # a ( in a comment\"",
            "python3 -c 'print(\"\\\")\")'",
            "python3 -m unittest tests.test_stats",
            "node -c 'f('",
            "python3 script.py '('",
        ] {
            assert_eq!(cut_programs("S1", verify), None, "{verify}");
        }
    }

    #[test]
    fn a_verify_comparing_a_result_with_an_exception_is_a_problem() {
        for verify in [
            "python3 -c \"from stats import mean; assert mean([]) == ValueError('empty list')\"",
            "python3 -c 'from stats import mean; assert mean([]) == ValueError'",
            "python3 -c 'import stats; assert stats.maximum([]) is builtins.ValueError'",
        ] {
            let found = compares_with_error("S1", verify);
            assert!(
                found.as_deref().is_some_and(|p| p.starts_with(
                    "S1's verify compares a result with `ValueError`, but a call that raises"
                )),
                "{verify}: {found:?}"
            );
        }
        for verify in [
            "python3 -c \"import unittest, stats; unittest.TestCase().assertRaisesRegex(ValueError, 'empty list', stats.maximum, [])\"",
            "python3 -c 'from stats import mean; assert mean([]) is None'",
            "python3 -c 'assert type(e) == 1'",
        ] {
            assert_eq!(compares_with_error("S1", verify), None, "{verify}");
        }
    }

    #[test]
    fn a_goal_asking_for_a_test_needs_a_step_that_writes_one() {
        // One of the benchmark's drafts, as the model wrote it: no step touches a test.
        let draft = plan(vec![
            raise_step(),
            step(
                "Document the error",
                &["README.md"],
                &[],
                "python3 -m unittest discover tests",
            ),
        ]);
        assert_eq!(
            stats_facts_check(MAXIMUM_GOAL, &draft),
            vec![
                "the goal asks for a test, but no step changes or creates a test file; add a \
                 step that writes the test (in `tests/test_stats.py`, say), with a verify that \
                 runs it"
                    .to_owned()
            ]
        );
        // The same draft for a goal that asks for no test is fine.
        assert_eq!(
            stats_facts_check("maximum of an empty list should raise ValueError", &draft),
            Vec::<String>::new()
        );
        // A test step that runs its own test satisfies both checks.
        let with_test = plan(vec![
            draft.steps[0].clone(),
            step(
                "Test that maximum raises ValueError for an empty list",
                &["tests/test_stats.py"],
                &[],
                "python3 -m unittest tests.test_stats.StatsTest.test_maximum_of_nothing",
            ),
        ]);
        assert_eq!(
            stats_facts_check(MAXIMUM_GOAL, &with_test),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_step_writing_a_test_must_verify_with_more_than_the_whole_suite() {
        let draft = plan(vec![
            raise_step(),
            step(
                "Test that maximum raises ValueError for an empty list",
                &["tests/test_stats.py"],
                &[],
                "python3  -m unittest discover tests",
            ),
        ]);
        assert_eq!(
            stats_facts_check(MAXIMUM_GOAL, &draft),
            vec![
                "S2 writes the test file `tests/test_stats.py`, but its verify (`python3 -m \
                 unittest discover tests`) runs only the whole suite, which passes before the \
                 change too; verify with a command that runs the new test: `python3 -m \
                 unittest tests.test_stats.StatsTest.test_new`, the new test's name for \
                 `test_new`"
                    .to_owned()
            ]
        );
        // The module alone runs the tests already in it.
        let mut module = draft.clone();
        module.steps[1].verify = "python3 -m unittest tests.test_stats".to_owned();
        assert_eq!(
            stats_facts_check(MAXIMUM_GOAL, &module),
            vec![
                "S2 writes the test file `tests/test_stats.py`, but its verify (`python3 -m \
                 unittest tests.test_stats`) runs only the tests already in it, which passes \
                 before the change too; verify with a command that runs the new test: `python3 \
                 -m unittest tests.test_stats.StatsTest.test_new`, the new test's name for \
                 `test_new`"
                    .to_owned()
            ]
        );
        // `-k` names the test, and so does pytest with the file.
        for named in [
            "python3 -m unittest discover tests -k test_maximum_of_empty",
            "python3 -m unittest tests.test_stats.StatsTest.test_maximum_of_empty",
        ] {
            let mut ok = draft.clone();
            ok.steps[1].verify = named.to_owned();
            assert_eq!(
                stats_facts_check(MAXIMUM_GOAL, &ok),
                Vec::<String>::new(),
                "{named}"
            );
        }
        // A Rust test file verified by a bare `cargo test` is told to name its test.
        let mut rust = draft.clone();
        rust.steps[1].new_files = vec!["tests/maximum_test.rs".to_owned()];
        rust.steps[1].files = Vec::new();
        rust.steps[1].verify = "cargo test".to_owned();
        let found = stats_facts_check(MAXIMUM_GOAL, &rust);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[1].ends_with("the new test: `cargo test` and the new test's name"),
            "{found:?}"
        );
    }

    #[test]
    fn a_grounded_plan_has_no_problems() {
        let ok = plan(vec![
            step(
                "Add the option",
                &["csvstat/cli.py"],
                &[],
                "python3 -m unittest discover tests",
            ),
            step(
                "Test it",
                &["tests/test_cli.py"],
                &["tests/test_delimiter.py"],
                "python3 -m unittest tests.test_delimiter && grep -n delimiter csvstat/cli.py",
            ),
            step(
                "Check the readme",
                &["./README.md"],
                &[],
                "FOO=1 python3 -c 'print(1/2)'",
            ),
        ]);
        assert_eq!(check(&ok), Vec::<String>::new());
    }

    #[test]
    fn a_missing_file_is_named_and_a_new_one_needs_its_directory() {
        let found = check(&plan(vec![step(
            "Add the option",
            &["src/cli/options.rs"],
            &["csvstat/delimiter.py", "lib/new.py"],
            "python3 -m unittest",
        )]));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("S1 names `src/cli/options.rs`, which does not exist"));
        assert!(
            found[1]
                .starts_with("S1 creates `lib/new.py` in `lib/`, a directory that does not exist")
        );
    }

    #[test]
    fn verify_needs_an_installed_program_and_existing_files() {
        let found = check(&plan(vec![step(
            "Add the option",
            &["csvstat/cli.py"],
            &[],
            "printf 'a;b\\n' | csvstat --delimiter ';' data.csv && cargo test",
        )]));
        says(
            &found,
            &["runs `csvstat`", "reads `data.csv`", "runs `cargo`"],
        );
        // A script of the repository is a program too, and a file a step creates may be read.
        let repo_script = check(&plan(vec![step(
            "Add data",
            &["csvstat/cli.py"],
            &["tests/data.csv"],
            "./csvstat/cli.py tests/data.csv",
        )]));
        assert_eq!(repo_script, Vec::<String>::new());
    }

    #[test]
    fn a_verify_may_read_only_what_this_step_or_an_earlier_one_creates() {
        let found = check(&plan(vec![
            step(
                "Check the data",
                &["csvstat/cli.py"],
                &[],
                "grep -q a tests/data.csv",
            ),
            step("Add data", &["csvstat/cli.py"], &["tests/data.csv"], "true"),
        ]));
        assert_eq!(
            found,
            [
                "S1's verify reads `tests/data.csv`, which only a later step creates; check it in \
              that step, or create it in this one"
            ]
        );
    }

    #[test]
    fn the_tests_a_verify_selects_must_exist_or_be_created_so_far() {
        let repo = Repo::from_files(vec![
            file("stats.py", "def mean(values):\n    pass\n"),
            file(
                "tests/test_stats.py",
                "class TestMean(unittest.TestCase):\n    def test_empty(self):\n        pass\n",
            ),
            file("tests/test_cli.py", "def test_top():\n    pass\n"),
            file("README.md", ""),
        ]);
        let programs = ["python3", "pytest"];
        // A step that only documents: the tests it runs must already be there.
        let documents = |verify: &str| {
            let plan = plan(vec![step("Document it", &["README.md"], &[], verify)]);
            check_in(&repo, &programs, &plan)
        };
        for (verify, expected) in [
            ("python3 -m unittest tests.test_stats", None),
            (
                "python3 -m unittest tests.test_stats.TestMean.test_empty",
                None,
            ),
            (
                "python3 -m unittest -k test_none tests.test_stats.TestMean",
                None,
            ),
            ("python3 -m unittest tests", None),
            (
                "python3 -m pytest tests/test_stats.py::TestMean::test_empty",
                None,
            ),
            ("pytest -k mean tests/test_cli.py::test_top", None),
            (
                "python3 -m unittest tests.test_wordfreq",
                Some("`tests.test_wordfreq`, but no file of the repository"),
            ),
            (
                "python3 -m unittest tests.test_stats.TestMean.test_none",
                Some("`tests/test_stats.py` has no `test_none`"),
            ),
            (
                "python3 -m unittest tests.test_stats.TestMedian",
                Some("`tests/test_stats.py` has no `TestMedian`"),
            ),
            // `test_empty` holds `test_e` but is not it.
            (
                "python3 -m unittest tests.test_stats.TestMean.test_e",
                Some("has no `test_e`"),
            ),
            (
                "pytest tests/test_stats.py::test_median",
                Some("`tests/test_stats.py::test_median`, which is not in `tests/test_stats.py`"),
            ),
            (
                "python3 -m pytest tests/test_x.py::test_top",
                Some("`tests/test_x.py::test_top`, which is not in `tests/test_x.py`"),
            ),
        ] {
            let found = documents(verify);
            match expected {
                None => assert_eq!(found, Vec::<String>::new(), "{verify}"),
                Some(part) => says(&found, &[part]),
            }
        }
        // A step that changes or creates the test file may add the test it runs.
        for (files, new_files, verify) in [
            (
                &["tests/test_stats.py"][..],
                &[][..],
                "python3 -m unittest tests.test_stats.TestMean.test_none",
            ),
            (
                &["stats.py"],
                &["tests/test_median.py"],
                "python3 -m unittest tests.test_median.TestMedian",
            ),
            (
                &["tests/test_stats.py"],
                &[],
                "pytest tests/test_stats.py::test_median",
            ),
        ] {
            let plan = plan(vec![step("Test it", files, new_files, verify)]);
            assert_eq!(
                check_in(&repo, &programs, &plan),
                Vec::<String>::new(),
                "{verify}"
            );
        }
        // The benchmark's case: the step adds its test method to `tests/test_stats.py`, whose
        // test class is `TestMean`, and its verify names a class the module does not have, so
        // it fails however the test is written.
        let plan = plan(vec![step(
            "Test it",
            &["tests/test_stats.py"],
            &[],
            "python3 -m unittest tests.test_stats.TestStats.test_mean_empty",
        )]);
        says(
            &check_in(&repo, &programs, &plan),
            &[
                "S1's verify runs the test `tests.test_stats.TestStats.test_mean_empty`, but \
               `tests/test_stats.py` has no class `TestStats` (its classes: `TestMean`); a new \
               test method goes into the file's test class, so name that class",
            ],
        );
    }

    #[test]
    fn cargo_features_and_test_names_must_be_in_the_crate() {
        let repo = Repo::from_files(vec![
            file(
                "Cargo.toml",
                "[package]\nname = \"wc\"\n\n[features]\nfast = []\n\n[dependencies]\nserde = { version = \"1\", optional = true }\n",
            ),
            file("src/lib.rs", "#[test]\nfn counts_words() {}\n"),
            file("README.md", ""),
        ]);
        let verify = |v: &str| {
            let plan = plan(vec![step("Document it", &["README.md"], &[], v)]);
            check_in(&repo, &["cargo"], &plan)
        };
        assert_eq!(
            verify("cargo check --features fast,serde"),
            Vec::<String>::new()
        );
        for named in [
            "cargo test counts_words",
            "cargo test -p wc counts_words",
            "cargo test --features fast counts_words -- --exact",
            "cargo test --lib counts_words",
        ] {
            assert_eq!(verify(named), Vec::<String>::new(), "{named}");
        }
        let found = verify("cargo test -p wc counts_lines");
        says(&found, &["`cargo test counts_lines`"]);
        // `--test` names an integration test target: a file under `tests/` or a `[[test]]`.
        let found = verify("cargo test --test cli counts_words");
        says(
            &found,
            &["`cargo test --test cli`, but there is no `tests/cli.rs`"],
        );
        let found = verify("cargo test --test=cli");
        says(&found, &["`cargo test --test cli`"]);
        let adds_target = plan(vec![step(
            "Add it",
            &[],
            &["tests/cli.rs"],
            "cargo test --test cli",
        )]);
        let mut with_tests = repo.files.clone();
        with_tests.push(file("tests/words.rs", ""));
        let with_tests = Repo::from_files(with_tests);
        assert_eq!(
            check_in(&with_tests, &["cargo"], &adds_target),
            Vec::<String>::new()
        );
        let existing = plan(vec![step(
            "Document it",
            &["README.md"],
            &[],
            "cargo test --test words",
        )]);
        assert_eq!(
            check_in(&with_tests, &["cargo"], &existing),
            Vec::<String>::new()
        );
        let found = verify("cargo check --features=version");
        says(&found, &["the cargo feature `version`"]);
        let found = verify("cargo test counts_lines -- --nocapture");
        says(&found, &["`cargo test counts_lines`"]);
        // A step that changes a Rust file may add the test.
        let adds = plan(vec![step(
            "Add it",
            &["src/lib.rs"],
            &[],
            "cargo test counts_lines",
        )]);
        let adds = check_in(&repo, &["cargo"], &adds);
        assert_eq!(adds, Vec::<String>::new());
    }

    /// What `--help` lists in [`a_verify_passes_only_options_its_program_takes`]: cargo test's
    /// and build's, unittest's (and discover's), pytest's; `python3 -m pytest --help` cannot
    /// run.
    fn long_options(program: &str, subcommand: &[String]) -> Option<BTreeSet<String>> {
        let listed: &[&str] = match (program, subcommand.join(" ").as_str()) {
            ("cargo", "test") => &["--no-run", "--features", "--release", "--lib", "--test"],
            ("cargo", "build") => &["--release"],
            ("python3", "-m unittest") => &["--verbose", "--quiet", "--locals", "--failfast"],
            ("python3", "-m unittest discover") => &["--start-directory", "--top-level-directory"],
            ("pytest", "") => &["--tb", "--lf", "--verbose"],
            _ => return None,
        };
        Some(listed.iter().map(|o| (*o).to_owned()).collect())
    }

    #[test]
    fn a_verify_passes_only_options_its_program_takes() {
        let repo = Repo::from_files(vec![
            file("Cargo.toml", "[package]\nname = \"wc\"\n"),
            file("src/lib.rs", "#[test]\nfn parse_empty() {}\n"),
            file("test_wordfreq.py", "def test_top():\n    pass\n"),
        ]);
        let problems_of = |repo: &Repo, verify: &str| {
            let plan = plan(vec![step("Check it", &["src/lib.rs"], &[], verify)]);
            let on_path = |p: &str| ["cargo", "python3", "pytest"].contains(&p);
            let facts = Facts {
                repo,
                on_path: &on_path,
                prompts: &[],
                goal: "",
                test_command: None,
                long_options: &long_options,
            };
            problems(&plan, &facts)
        };
        for (verify, expected) in [
            (
                "python3 -m unittest -q test_wordfreq.py --top 10",
                vec![
                    "S1's verify passes `--top` to `python3 -m unittest`, which does not take it \
                     (its --help lists no `--top`)",
                ],
            ),
            (
                "cargo test --no-such-flag",
                vec![
                    "S1's verify passes `--no-such-flag` to `cargo test`, which does not take it \
                     (its --help lists no `--no-such-flag`)",
                ],
            ),
            (
                "pytest --frobnicate test_wordfreq.py::test_top",
                vec![
                    "S1's verify passes `--frobnicate` to `pytest`, which does not take it (its \
                     --help lists no `--frobnicate`)",
                ],
            ),
            (
                "cargo build --release && cargo test --release --top=3 parse_empty",
                vec![
                    "S1's verify passes `--top` to `cargo test`, which does not take it (its \
                     --help lists no `--top`)",
                ],
            ),
            (
                "cargo test parse_empty -- --nocapture --frob",
                vec![
                    "S1's verify passes `--frob` after `--` to the tests `cargo test` builds, \
                     which do not take it (libtest has no `--frob`); drop it, or put it before \
                     `--` if it is cargo's",
                ],
            ),
            // What the programs take, prefixes argparse takes, and `--help` itself.
            (
                "cargo test --release --lib parse_empty -- --exact --test-threads=1",
                vec![],
            ),
            ("python3 -m unittest --loc -v test_wordfreq", vec![]),
            (
                "python3 -m unittest discover --top-level-directory . --start=x",
                vec![],
            ),
            ("pytest --tb=short --lf --help", vec![]),
            // A script's options are the script's; after `cargo run --` the program's.
            ("python3 test_wordfreq.py --top 10", vec![]),
            ("cargo run -- --top 10", vec![]),
            // A program whose --help cannot run, or that tick does not read, is not flagged.
            ("python3 -m pytest --frobnicate", vec![]),
            ("cargo clippy --frobnicate", vec![]),
            ("cargo doc --frobnicate", vec![]),
        ] {
            assert_eq!(problems_of(&repo, verify), expected, "{verify}");
        }
        // A crate with a harness of its own takes what it wants after `--`.
        let harness = Repo::from_files(vec![
            file(
                "Cargo.toml",
                "[package]\nname = \"wc\"\n\n[[test]]\nname = \"cli\"\nharness = false\n",
            ),
            file("src/lib.rs", "#[test]\nfn parse_empty() {}\n"),
        ]);
        assert_eq!(
            problems_of(&harness, "cargo test parse_empty -- --frob"),
            Vec::<String>::new()
        );
    }

    /// A repository defining `mean`, `parse_args`, `Stats.spread` and `count_words`.
    fn functions_repo() -> Repo {
        Repo::from_files(vec![
            file(
                "stats.py",
                "def mean(values):\n    pass\n\n\ndef parse_args(argv):\n    pass\n\n\n\
                 class Stats:\n    def spread(self):\n        pass\n",
            ),
            file(
                "src/lib.rs",
                "pub fn count_words(text: &str) -> usize {\n    0\n}\n",
            ),
            file("README.md", "Use the mean.\n"),
        ])
    }

    #[test]
    fn the_functions_a_goal_names() {
        let repo = functions_repo();
        // The functions each goal names, and whether it asks to add them.
        for (goal, expected) in [
            (
                "`mean` of an empty list should return None",
                vec![("mean", false)],
            ),
            ("make mean() return None", vec![("mean", false)]),
            (
                "the function mean should return None",
                vec![("mean", false)],
            ),
            (
                "`stats.mean()` and `Stats.spread` should agree",
                vec![("mean", false), ("spread", false)],
            ),
            (
                "parse_args should accept --top",
                vec![("parse_args", false)],
            ),
            ("count_words counts hyphens", vec![("count_words", false)]),
            (
                "Add a function median(values) to stats.py",
                vec![("median", true)],
            ),
            (
                "add a new method `variance` to Stats",
                vec![("variance", true)],
            ),
            ("implement mode() in stats.py", vec![("mode", true)]),
            // Plain English, names the repository does not define, files and flags: none.
            // A word the file it is said to be in defines as a function.
            ("mean in stats.py should return None", vec![("mean", false)]),
            (
                "parse_args from `./stats.py` and mean of stats.py",
                vec![("parse_args", false), ("mean", false)],
            ),
            ("the mean should be rounded", vec![]),
            ("mean in other.py should return None", vec![]),
            ("the median in stats.py should be added", vec![]),
            ("raise `ValueError` from `stats.py` for `--top 0`", vec![]),
            ("the helper parse_flags should go", vec![]),
            ("call median() from mean", vec![]),
            ("Add a function that returns the median", vec![]),
            ("add a unit test for `variance`", vec![]),
        ] {
            let found = goal_functions(goal, &repo);
            let expected: Vec<(String, bool)> = expected
                .into_iter()
                .map(|(n, a)| (n.to_owned(), a))
                .collect();
            assert_eq!(found, expected, "{goal}");
        }
    }

    #[test]
    fn a_function_the_goal_names_is_named_by_a_step() {
        let repo = functions_repo();
        let problems_of = |goal: &str, steps: Vec<DraftStep>| {
            let on_path = |p: &str| ["python3", "grep"].contains(&p);
            let facts = Facts {
                repo: &repo,
                on_path: &on_path,
                prompts: &[],
                goal,
                test_command: None,
                long_options: &|_, _| None,
            };
            problems(&plan(steps), &facts)
        };
        let readme = || {
            step(
                "Say so in the README",
                &["README.md"],
                &[],
                "grep -q None README.md",
            )
        };
        assert_eq!(
            problems_of("`mean` of an empty list should return None", vec![readme()]),
            ["the goal names `mean`, but no step names it; say which step changes it"]
        );
        assert_eq!(
            problems_of("Add a function median(values) to stats.py", vec![readme()]),
            ["the goal names `median`, but no step names it; say which step adds it"]
        );
        // A title, a file or a verify that names it, in any case, is enough.
        for named in [
            step("Make Mean return None", &["stats.py"], &[], "true"),
            step(
                "Return None",
                &["stats.py"],
                &[],
                "python3 -c 'import stats; stats.mean([])'",
            ),
        ] {
            assert_eq!(
                problems_of(
                    "`mean` of an empty list should return None",
                    vec![readme(), named]
                ),
                Vec::<String>::new()
            );
        }
        // `meaning` is not `mean`.
        let near = step("Document the meaning", &["stats.py"], &[], "true");
        assert_eq!(problems_of("fix `mean`", vec![near]).len(), 1);
    }

    #[test]
    fn placeholders_copies_and_duplicates_are_problems() {
        let found = check(&DraftPlan {
            title: "Plan".into(),
            summary: "Answer with the plan for the goal as one JSON object".into(),
            steps: vec![
                step(
                    "Edit the file",
                    &["path/to/file.py"],
                    &[],
                    "python3 -m unittest",
                ),
                step(
                    "edit the  file!",
                    &["csvstat/cli.py"],
                    &[],
                    "python3 <test>",
                ),
                step("Third", &[], &[], ""),
            ],
        });
        assert_eq!(found.len(), 6, "{found:#?}");
        assert!(found[0].starts_with("the summary copies the instructions"));
        assert!(found[1].contains("`path/to/file.py`, placeholder text"));
        assert!(found[2].starts_with("S2 repeats S1"));
        assert!(found[3].contains("placeholder text `<test>`"));
        assert!(found[4].starts_with("S3 names no file"));
        assert!(found[5].starts_with("S3 has no verify command"));
    }

    #[test]
    fn paths_outside_and_globs() {
        let found = check(&plan(vec![step(
            "Edit",
            &["../etc/passwd", "csvstat/*.py", "docs/*.md"],
            &[],
            "python3 -m unittest",
        )]));
        says(
            &found,
            &[
                "outside the repository",
                "`docs/*.md`, which matches no file",
            ],
        );
    }

    #[test]
    fn shell_words_split_into_simple_commands() {
        assert_eq!(
            simple_commands("A=1 cargo test -- --nocapture && printf 'x y' | wc -l; (cd a)"),
            vec![
                vec!["A=1", "cargo", "test", "--", "--nocapture"],
                vec!["printf", "x y"],
                vec!["wc", "-l"],
                vec!["cd", "a"],
            ]
        );
        assert_eq!(
            simple_commands("echo \"a\\\"b\" ''"),
            vec![vec!["echo", "a\"b", ""]]
        );
        // Redirections end no command, and neither a descriptor nor a redirection's file is
        // an argument.
        assert_eq!(
            simple_commands("python3 -c 'x' 2>&1 | grep -q 'empty list'"),
            vec![vec!["python3", "-c", "x"], vec!["grep", "-q", "empty list"]]
        );
        assert_eq!(
            simple_commands("cargo test >out.txt 2> err.txt && wc -l < out.txt &>log; a>>b c"),
            vec![vec!["cargo", "test"], vec!["wc", "-l"], vec!["a", "c"]]
        );
        assert_eq!(
            simple_commands("echo 'a > b' \\> x 12x>&2"),
            vec![vec!["echo", "a > b", ">", "x", "12x"]]
        );
    }

    #[test]
    fn path_like_words() {
        for (word, expected) in [
            ("src/lib.rs", Some("src/lib.rs")),
            ("./data.csv", Some("data.csv")),
            ("tests/", Some("tests")),
            ("--file=src/a.rs", Some("src/a.rs")),
            ("tests.test_cli", None),
            ("format_counts", None),
            ("wordcount::count", None),
            ("https://x.y/z.md", None),
            ("1/2", None),
            ("-w", None),
            ("src/*.rs", None),
            ("print(1/2)", None),
        ] {
            assert_eq!(path_like(word), expected, "{word}");
        }
    }
}
