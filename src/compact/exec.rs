//! Executing a step with a small model (`executor: compact`): each edit of one of the step's
//! files takes two answers. First a decision, an object the server's grammar constrains
//! (`{action: add|change, path}`); then the code as plain text, never escaped inside JSON
//! (aider's finding: models write markedly worse code that way): for `add`, one fenced code
//! block (constrained by a llama.cpp GBNF grammar, [`FENCE_GRAMMAR`], when the server takes
//! one), placed in the file by [`super::place`] (a test into the test module, a method into
//! its `impl` or class, other code at the end) or written as the new file whole; for
//! `change`, aider's SEARCH/REPLACE blocks, parsed by tick ([`parse_search_replace`]). A 1.5B
//! model asked for the code inside a JSON edit object copied code it was shown instead of
//! writing the new test (10 measured runs, `benches/RESULTS.md`). What this module holds is pure: which
//! executor runs ([`resolve`] asks the server only under `auto`; a grammar goes only to
//! the `llamacpp` provider), the decision's schema, the texts the model gets, the parsers, and
//! [`check_edit`], the guards of [`super::guards`] applied to one edit. The runner
//! (`src/runner/compact.rs`) drives the turns, writes through the build-mode `write_file`
//! (its write policy and sandbox), and ticks the step only when its `verify` and the
//! repository's test command both pass.

use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::{self, Matched};
use super::{Choice, cache, choose};
use super::{imports, outline, place};
use crate::config::{Config, Planner, Provider, is_loopback};
use crate::llm::{Client, ProviderKind, StructuredMethod, context_tokens};
use crate::tasks::Store;

/// The system prompt of a compact step's turns.
pub const PROMPT: &str = include_str!("../../prompts/compact-execute.md");
/// Its name under `.tasks/prompts/`.
pub const PROMPT_FILE: &str = "compact-execute.md";

/// The text of a file shown to the model is cut here.
pub const SHOWN_BYTES: usize = 12_000;
/// Output tokens of one edit.
pub const EDIT_TOKENS: u32 = 2500;
/// Refused edits of one file the model may try again, before tick goes on without that edit.
pub const RETRIES_PER_FILE: u32 = 2;

/// What a compact step's turns need besides the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOptions {
    pub model: String,
    pub method: StructuredMethod,
    /// The server takes a llama.cpp GBNF `grammar` (the `llamacpp` provider): an `add`'s code is then constrained to one fenced block ([`FENCE_GRAMMAR`]); else the
    /// text is parsed, and a reply without a fence is asked for once more.
    pub grammar: bool,
    /// The system prompt ([`PROMPT`] or the repository's override).
    pub system: String,
}

/// The compact executor's options when `config.executor` (and, under `auto`, the server)
/// chooses it; `None`: the agent loop runs the steps.
pub async fn resolve(
    client: &Client,
    config: &Config,
    store: &Store,
    model: &str,
) -> crate::error::Result<Option<ExecOptions>> {
    let loopback = is_loopback(&config.base_url);
    let ollama = config.provider == Provider::Ollama;
    let asks = config.provider.kind() == ProviderKind::OpenAi && (loopback || ollama);
    let context = if config.executor == Planner::Auto && asks {
        context_tokens(client, model, ollama).await
    } else {
        None
    };
    if choose(config.executor, loopback, context) != Choice::Compact {
        return Ok(None);
    }
    let cached = cache::load(store.dir());
    let method = cache::method_for(
        &cached,
        &cache::key(&config.base_url, model),
        config.provider.kind(),
        ollama,
    );
    // Only the `llamacpp` provider says the server is llama.cpp, which takes a `grammar`;
    // other OpenAI-compatible servers (vLLM, LM Studio, `openai`) get plain text, parsed.
    let grammar = config.provider == Provider::LlamaCpp;
    Ok(Some(ExecOptions {
        model: model.to_owned(),
        method,
        grammar,
        system: store.prompt(PROMPT_FILE, PROMPT)?,
    }))
}

/// One edit, from a decision and its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditAnswer {
    /// `add` (new code placed in the file by [`place::added`], or a new file whole) or
    /// `change` (`search` replaced by `replace`).
    pub action: String,
    pub path: String,
    pub search: String,
    pub replace: String,
}

/// The schema of the decision that comes before the code: what kind of edit, of which file.
/// `paths` (the step's files that are not globs) become an `enum` the server's grammar
/// enforces; tick checks the path again whatever the server did. The code itself comes as
/// plain text in the next answer: models write worse code escaped inside JSON strings
/// (aider's finding, "LLMs are bad at returning code in JSON").
pub fn decision_schema(paths: &[String]) -> Value {
    let mut path = json!({"type": "string", "maxLength": 200});
    if !paths.is_empty() {
        path = json!({"type": "string", "enum": paths});
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["action", "path"],
        "properties": {
            "action": {"type": "string", "enum": ["add", "change"]},
            "path": path,
        },
    })
}

/// The decision as the model answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Decision {
    pub action: String,
    pub path: String,
}

impl Decision {
    pub fn adds(&self) -> bool {
        self.action.trim() == "add"
    }
}

/// A llama.cpp GBNF grammar for an `add` answer: one fenced code block and nothing else (the
/// body never holds three backticks in a row, so the first fence after it closes the block).
pub const FENCE_GRAMMAR: &str = "root ::= \"```\" [a-z]* \"\\n\" body \"```\"\n\
                                 body ::= ( [^`] | \"`\" [^`] | \"``\" [^`] )*\n";

/// A llama.cpp GBNF grammar for a `change` answer: one SEARCH/REPLACE block and nothing else
/// (a line of code never starts with `<`, `=`, `>` or a backtick, so only the markers can).
/// A 1.5B model asked for the block without it answered with a fenced block, twice; with it,
/// but backticks allowed, it closed a fence after the new lines and went on in prose instead
/// of the closing marker (measured).
pub const SEARCH_REPLACE_GRAMMAR: &str = "root ::= \"<<<<<<< SEARCH\\n\" line* \"=======\\n\" \
                                          line* \">>>>>>> REPLACE\\n\"\n\
                                          line ::= [^<=>`\\n] [^\\n]* \"\\n\" | \"\\n\"\n";

/// The code of the first fenced block of `text`: from the line after the opening fence to
/// the closing one (a line that starts with three backticks, or a line that ends with them,
/// as a grammar that allows a fence right after a brace writes it). An answer with no fence,
/// or an unclosed one, is an error for the model.
pub fn parse_fence(text: &str) -> Result<String, String> {
    let mut rest = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        if line.trim_start().starts_with("```") {
            rest = Some(&text[at..]);
            break;
        }
    }
    let rest = rest.ok_or_else(|| {
        "the answer has no fenced code block; answer with the code between a line ``` and a \
         line ```"
            .to_owned()
    })?;
    let mut body = String::new();
    for line in rest.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            return Ok(body);
        }
        if let Some(code) = line.trim_end().strip_suffix("```") {
            body.push_str(code);
            body.push('\n');
            return Ok(body);
        }
        body.push_str(line);
    }
    Err("the code block is not closed: end it with a line ```".to_owned())
}

/// One block of aider's SEARCH/REPLACE format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

/// Which marker line `line` is, if any: at least five `<`, `=` or `>` (aider accepts 5 to 9),
/// then `SEARCH`, nothing, or `REPLACE`.
fn marker(line: &str) -> Option<char> {
    let line = line.trim();
    for (mark, word) in [('<', "SEARCH"), ('=', ""), ('>', "REPLACE")] {
        let rest = line.trim_start_matches(mark);
        if line.len() - rest.len() >= 5 && rest.trim() == word {
            return Some(mark);
        }
    }
    None
}

/// The blocks of aider's SEARCH/REPLACE format in `text`, in order:
///
/// ```text
/// <<<<<<< SEARCH
/// lines copied from the file
/// =======
/// the new lines
/// >>>>>>> REPLACE
/// ```
///
/// Text around the blocks (a path line, a fence) is ignored. A marker out of place, a block
/// not closed, or no block at all is an error for the model.
pub fn parse_search_replace(text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    // `None` outside a block; else the search lines, and the replace lines once past `=`.
    let mut open: Option<(Vec<&str>, Option<Vec<&str>>)> = None;
    for (no, line) in text.lines().enumerate() {
        let mark = marker(line);
        let out_of_place = |what: &str| {
            format!(
                "line {} of the answer, `{}`, is out of place: {what}; each block is `<<<<<<< \
                 SEARCH`, the lines to replace, `=======`, the new lines, `>>>>>>> REPLACE`",
                no + 1,
                line.trim()
            )
        };
        open = match (open, mark) {
            (None, Some('<')) => Some((Vec::new(), None)),
            (None, Some(_)) => return Err(out_of_place("no block is open")),
            (None, None) => None,
            (Some((search, None)), Some('=')) => Some((search, Some(Vec::new()))),
            (Some((_, None)), Some(_)) => {
                return Err(out_of_place("the search lines must end with `=======`"));
            }
            (Some((search, Some(replace))), Some('>')) => {
                blocks.push(Block {
                    search: search.join("\n"),
                    replace: replace.join("\n"),
                });
                None
            }
            (Some((_, Some(_))), Some(_)) => {
                return Err(out_of_place(
                    "the new lines must end with `>>>>>>> REPLACE`",
                ));
            }
            (Some((mut search, None)), None) => {
                search.push(line);
                Some((search, None))
            }
            (Some((search, Some(mut replace))), None) => {
                replace.push(line);
                Some((search, Some(replace)))
            }
        };
    }
    if open.is_some() {
        return Err(
            "the last SEARCH/REPLACE block is not closed: end it with `>>>>>>> \
                    REPLACE`"
                .to_owned(),
        );
    }
    if blocks.is_empty() {
        return Err("the answer has no SEARCH/REPLACE block".to_owned());
    }
    Ok(blocks)
}

/// The code answer for `decision`, as the edits tick checks: for `add`, the fenced code
/// (placed in the file, or the new file whole); for `change`, one edit per SEARCH/REPLACE
/// block, in order.
pub fn parse_code(decision: &Decision, text: &str) -> Result<Vec<EditAnswer>, String> {
    let edit = |search: String, replace: String| EditAnswer {
        action: decision.action.trim().to_owned(),
        path: decision.path.clone(),
        search,
        replace,
    };
    if decision.adds() {
        return parse_fence(text).map(|code| vec![edit(String::new(), code)]);
    }
    Ok(parse_search_replace(text)?
        .into_iter()
        .map(|b| edit(b.search, b.replace))
        .collect())
}

/// The step's files as tick shows them: `(path, Some(text))`, or `None` for a file that does
/// not exist yet.
pub type Shown = Vec<(String, Option<String>)>;

/// The first message of a compact step: the task, the step, its checks and its files.
pub fn step_message(
    task_title: &str,
    step: &str,
    done_when: Option<&str>,
    checks: &[String],
    files: &Shown,
) -> String {
    let mut text = format!("Task: {task_title}\nStep: {step}\n");
    if let Some(done) = done_when {
        text.push_str(&format!("Done when: {done}\n"));
    }
    if !checks.is_empty() {
        let list: Vec<String> = checks.iter().map(|c| format!("`{c}`")).collect();
        text.push_str(&format!(
            "After your edits tick runs {}; the step is done when they pass.\n",
            list.join(" and ")
        ));
    }
    text.push_str("\nThe step's files:\n");
    for (path, body) in files {
        text.push_str(&file_block(path, body.as_deref()));
    }
    text
}

/// One file as shown to the model.
pub fn file_block(path: &str, body: Option<&str>) -> String {
    match body {
        None => format!("\n{path} (does not exist yet; write it whole)\n"),
        Some(body) => {
            let cut = if body.len() > SHOWN_BYTES {
                let mut end = SHOWN_BYTES;
                while !body.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}\n[... {} more bytes]\n", &body[..end], body.len() - end)
            } else {
                body.to_owned()
            };
            format!(
                "\n{path}:\n```\n{cut}{}```\n",
                if cut.ends_with('\n') { "" } else { "\n" }
            )
        }
    }
}

/// The ask for the decision on `path` for `step` (its id and title, said again next to the
/// ask: a small model follows what it read last).
pub fn decision_instruction(step: &str, path: &str, exists: bool) -> String {
    let how = if exists {
        "`add` to add new code (a function, a method, a test) to it, `change` to change lines \
         that are in it"
    } else {
        "`add`: it does not exist yet"
    };
    format!(
        "The step: {step}\nFirst decide the edit of `{path}` that does this step, as JSON: \
         `action` ({how}) and `path`. The code comes after."
    )
}

/// The ask for the code of `decision`, in plain text: a fenced block for `add`, aider's
/// SEARCH/REPLACE blocks for `change`. `step` and `done_when` are said again next to it.
pub fn code_instruction(
    step: &str,
    done_when: Option<&str>,
    decision: &Decision,
    exists: bool,
    one_of_many: bool,
) -> String {
    let path = decision.path.trim();
    let mut text = format!("The step: {step}\n");
    if let Some(done) = done_when {
        text.push_str(&format!("Done when: {done}\n"));
    }
    if decision.adds() && exists {
        text.push_str(&format!(
            "Write only the new code this step adds to `{path}`, in one fenced code block \
             (```), and nothing else. {} Do not repeat code that is already in the file.",
            where_added(path)
        ));
    } else if decision.adds() {
        text.push_str(&format!(
            "Write the whole of the new file `{path}` in one fenced code block (```), and \
             nothing else."
        ));
    } else {
        text.push_str(&format!(
            "Write the change to `{path}` as one SEARCH/REPLACE block, and nothing else:\n\
             <<<<<<< SEARCH\n\
             (the lines to change, copied exactly from the file, whole lines)\n\
             =======\n\
             (the new lines)\n\
             >>>>>>> REPLACE"
        ));
        // A way out only where the step names other files: a small model takes it whenever
        // it is offered.
        if one_of_many {
            text.push_str(&format!(
                "\nOnly if the step needs no change in `{path}`, give the same line in both \
                 halves."
            ));
        }
    }
    text
}

/// The test the step's `checks` run by name in the test module `path`, as a line for the
/// code ask: `python3 -m unittest tests.test_stats.StatsTest.test_mean_empty` or `pytest
/// tests/test_stats.py::test_mean_empty` names `test_mean_empty` of `tests/test_stats.py`. A
/// small model otherwise names its test as it likes (`test_mean_empty_list`), and the check
/// that selects the name tick approved finds no such test however right the test is.
pub fn test_name_hint(checks: &[String], path: &str) -> Option<String> {
    let path = path.trim().trim_start_matches("./");
    let named = checks
        .iter()
        .flat_map(|check| check.split_whitespace())
        .find_map(|word| {
            let word = word.trim_matches(|c| matches!(c, '"' | '\'' | '`'));
            let (module, test) = match word.split_once("::") {
                Some((file, rest)) => (
                    file.trim_start_matches("./").to_owned(),
                    rest.rsplit("::").next()?,
                ),
                None if check_is_unittest(checks) => {
                    let parts: Vec<&str> = word.split('.').collect();
                    let test = *parts.last()?;
                    let module = (1..parts.len())
                        .rev()
                        .map(|n| format!("{}.py", parts[..n].join("/")))
                        .find(|file| file == path)?;
                    (module, test)
                }
                None => return None,
            };
            (module == path
                && test.starts_with("test")
                && test.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then(|| test.to_owned())
        })?;
    Some(format!(
        "Name the new test `{named}`: the step's check runs it by that name."
    ))
}

fn check_is_unittest(checks: &[String]) -> bool {
    checks.iter().any(|c| c.contains("unittest"))
}

/// Where tick puts an `add`'s code in the existing file `path`, as [`place::added`] does,
/// in words for the model: where a small model's snippet lands decides whether it compiles.
fn where_added(path: &str) -> &'static str {
    match outline::Language::of(path) {
        Some(outline::Language::Rust) => {
            "tick puts a test function (`#[test]`) into the file's test module (a new \
             `#[cfg(test)] mod tests` if there is none), a method into the `impl` of its type; \
             a function, method or type that is already in the file is replaced by the new \
             version; other code goes at the end of the file, before a test module that ends \
             it."
        }
        Some(outline::Language::Python) => {
            "tick puts a method into its class (a test method into the `TestCase` class); a \
             function or method that is already in the file is replaced by the new version; \
             other code goes at the end of the file."
        }
        _ => "tick adds it at the end of the file.",
    }
}

/// The ask after a failed check: its output, the files as they are now, and a new decision.
pub fn fix_instruction(step: &str, report: &str, files: &Shown) -> String {
    let mut text = format!("{}\n\nThe step's files now:\n", report.trim_end());
    for (path, body) in files {
        text.push_str(&file_block(path, body.as_deref()));
    }
    text.push_str(&format!("\nThe step: {step}"));
    text.push_str(
        "\nFirst decide the edit that fixes this, as JSON: `action` (`add` or `change`) and \
         `path` (one of the step's files). The code comes after.",
    );
    text
}

/// What one answer does to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The new text of the file, how the search text matched, and where an `add` put its
    /// code in an existing file ([`place::Placed::note`]).
    Write {
        text: String,
        matched: Matched,
        placed: Option<String>,
    },
    /// `search` and `substitute` are the same: the model says the file needs no change.
    Unchanged,
}

/// The guards on one answer: only the step's files; an empty `search` writes a new file
/// whole, or adds `substitute` to an existing file where [`place::added`] puts it; flexible
/// matching; braces that
/// still balance; no definition removed that the step (`step_text`: its title, files and
/// done-when) does not name. `before` is the file's text (`None`: it does not exist).
pub fn check_edit(
    answer: &EditAnswer,
    before: Option<&str>,
    step_files: &[String],
    step_text: &str,
) -> Result<Checked, String> {
    let path = answer.path.trim().trim_start_matches("./");
    guards::check_allowed(path, step_files).map_err(|e| e.to_string())?;
    let add = answer.action.trim() == "add";
    if !add && answer.search == answer.replace {
        return Ok(Checked::Unchanged);
    }
    let mut new = answer.replace.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    let mut placed = None;
    let edited = match (before, add || answer.search.trim().is_empty()) {
        (None, false) => {
            return Err(format!(
                "`{path}` does not exist yet: answer with `action` `add` and the whole file in \
                 `substitute`"
            ));
        }
        (None, true) => guards::guarded_edit(path, "", None, &new, step_files, step_text),
        (Some(before), true) => {
            let added = place::added(path, before, &new, step_text)?;
            placed = Some(added.note);
            guards::guarded_edit(path, before, None, &added.text, step_files, step_text)
        }
        (Some(before), false) => {
            partial_line(path, before, &answer.search)?;
            guards::guarded_edit(
                path,
                before,
                Some(&answer.search),
                &answer.replace,
                step_files,
                step_text,
            )
        }
    };
    let (mut text, matched) = edited.map_err(|refusal| refusal.to_string())?;
    if matches!(outline::Language::of(path), Some(outline::Language::Python))
        && let Some((completed, names)) = imports::completed(&text, &new)
    {
        text = completed;
        let imported = format!(
            "imported {} on the file's `from` line",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        placed = Some(match placed {
            Some(note) => format!("{note}; {imported}"),
            None => imported,
        });
    }
    Ok(Checked::Write {
        text,
        matched,
        placed,
    })
}

/// [`check_edit`] on each of `answers` in turn (the blocks of one answer), each on the text
/// the one before left; one refused block refuses them all, naming it.
pub fn check_edits(
    answers: &[EditAnswer],
    before: Option<&str>,
    step_files: &[String],
    step_text: &str,
) -> Result<Checked, String> {
    let mut text = before.map(str::to_owned);
    let mut written = None;
    let mut notes: Vec<String> = Vec::new();
    for (i, answer) in answers.iter().enumerate() {
        match check_edit(answer, text.as_deref(), step_files, step_text) {
            Ok(Checked::Unchanged) => {}
            Ok(Checked::Write {
                text: new,
                matched,
                placed,
            }) => {
                text = Some(new);
                if !written.is_some_and(Matched::is_fuzzy) {
                    written = Some(matched);
                }
                notes.extend(placed);
            }
            Err(why) if answers.len() > 1 => return Err(format!("block {}: {why}", i + 1)),
            Err(why) => return Err(why),
        }
    }
    Ok(match (written, text) {
        (Some(matched), Some(text)) => Checked::Write {
            text,
            matched,
            placed: (!notes.is_empty()).then(|| notes.join("; ")),
        },
        _ => Checked::Unchanged,
    })
}

/// Refuses a search text that matches exactly once but inside a line: a 1.5B model replaced
/// a function's signature without its ` {` and left the old body behind (measured).
fn partial_line(path: &str, text: &str, search: &str) -> Result<(), String> {
    let Some(at) = text.find(search) else {
        return Ok(());
    };
    let end = at + search.len();
    // Only the line's indentation may come before it.
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let starts = text[line_start..at].trim().is_empty() || search.starts_with('\n');
    let ends = end == text.len() || text[end..].starts_with('\n') || search.ends_with('\n');
    if starts && ends {
        return Ok(());
    }
    let line_no = text[..at].matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("").trim();
    Err(format!(
        "the search text must be whole lines of `{path}`, but it matches part of line \
         {line_no}: `{line}`; copy whole lines, from their first character to their last"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(path: &str, search: &str, replace: &str) -> EditAnswer {
        EditAnswer {
            action: if search.is_empty() { "add" } else { "change" }.into(),
            path: path.into(),
            search: search.into(),
            replace: replace.into(),
        }
    }

    fn files(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn the_decision_schema_lists_the_steps_files_and_checks_an_answer() {
        let schema = decision_schema(&files(&["src/a.py"]));
        let mut problems = Vec::new();
        crate::llm::structured::check(
            &schema,
            &json!({"action": "change", "path": "src/a.py"}),
            "",
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        crate::llm::structured::check(
            &schema,
            &json!({"action": "move", "path": "src/b.py", "search": "x"}),
            "",
            &mut problems,
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn a_fence_gives_its_code_whatever_surrounds_it() {
        assert_eq!(
            parse_fence("```rust\nfn a() {}\n```").unwrap(),
            "fn a() {}\n"
        );
        assert_eq!(
            parse_fence("Here:\n```\nx\n\ny\n```\nDone.\n```\nz\n```").unwrap(),
            "x\n\ny\n"
        );
        // A grammar's `}```` closes on the code's last line.
        assert_eq!(
            parse_fence("```rs\nfn a() {\n}```").unwrap(),
            "fn a() {\n}\n"
        );
        assert_eq!(parse_fence("```\n```").unwrap(), "");
        let none = parse_fence("fn a() {}\n").unwrap_err();
        assert!(none.contains("no fenced code block"), "{none}");
        let open = parse_fence("```rust\nfn a() {}\n").unwrap_err();
        assert!(open.contains("not closed"), "{open}");
    }

    #[test]
    fn search_replace_blocks_parse_in_order_and_malformed_ones_say_where() {
        let text = "src/a.rs\n```\n<<<<<<< SEARCH\nlet a = 1;\n=======\nlet a = 2;\n>>>>>>> \
                    REPLACE\n```\n<<<<<<<< SEARCH\n=========\nnew\nlines\n>>>>>>>> REPLACE\n";
        assert_eq!(
            parse_search_replace(text).unwrap(),
            [
                Block {
                    search: "let a = 1;".into(),
                    replace: "let a = 2;".into()
                },
                Block {
                    search: String::new(),
                    replace: "new\nlines".into()
                },
            ]
        );
        let cases = [
            ("no block", "the answer has no SEARCH/REPLACE block"),
            (
                "=======\n",
                "line 1 of the answer, `=======`, is out of place: no block",
            ),
            (
                "<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n",
                "line 3 of the answer, `>>>>>>> REPLACE`, is out of place: the search lines must \
                 end with `=======`",
            ),
            (
                "<<<<<<< SEARCH\na\n=======\nb\n=======\n",
                "line 5 of the answer, `=======`, is out of place: the new lines must end",
            ),
            ("<<<<<<< SEARCH\na\n=======\nb\n", "is not closed"),
            // Four marks are not a marker: the block stays open.
            ("<<<<<<< SEARCH\na\n====\nb\n", "is not closed"),
        ];
        for (text, expected) in cases {
            let err = parse_search_replace(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    proptest::proptest! {
        /// Cut anywhere, a fenced answer parses to its code only when whole; a SEARCH/REPLACE
        /// answer likewise; neither parser panics on any prefix.
        #[test]
        fn every_prefix_of_an_answer_parses_only_when_whole(
            code in "[a-z {}();\n]{0,40}",
            cut in 0usize..200,
        ) {
            let code = format!("{}\n", code.trim_end_matches('\n'));
            let fenced = format!("```rust\n{code}```\n");
            let at = cut.min(fenced.len());
            let parsed = parse_fence(&fenced[..at]);
            if at == fenced.len() || at >= fenced.len() - 1 {
                proptest::prop_assert_eq!(parsed.unwrap(), code.clone());
            } else {
                proptest::prop_assert!(parsed.is_err(), "{:?}", &fenced[..at]);
            }
            let block = format!("<<<<<<< SEARCH\n{code}=======\n{code}>>>>>>> REPLACE\n");
            let at = cut.min(block.len());
            let parsed = parse_search_replace(&block[..at]);
            if at >= block.len() - 1 {
                let whole = code.trim_end_matches('\n').to_owned();
                proptest::prop_assert_eq!(
                    parsed.unwrap(),
                    vec![Block { search: whole.clone(), replace: whole }]
                );
            } else {
                proptest::prop_assert!(parsed.is_err(), "{:?}", &block[..at]);
            }
        }
    }

    #[test]
    fn a_change_answer_becomes_one_edit_per_block_and_an_add_one_appended_edit() {
        let change = Decision {
            action: "change".into(),
            path: "a.rs".into(),
        };
        let edits = parse_code(
            &change,
            "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nz\n=======\nw\n>>>>>>> REPLACE",
        )
        .unwrap();
        assert_eq!(edits.len(), 2);
        let step = files(&["a.rs"]);
        assert_eq!(
            check_edits(&edits, Some("x\nz\n"), &step, "").unwrap(),
            Checked::Write {
                text: "y\nw\n".into(),
                matched: Matched::Exactly,
                placed: None,
            }
        );
        let err = check_edits(&edits, Some("x\n"), &step, "").unwrap_err();
        assert!(
            err.starts_with("block 2: the search text was not found"),
            "{err}"
        );
        let add = Decision {
            action: "add".into(),
            path: "a.rs".into(),
        };
        let edits = parse_code(&add, "```\nfn g() {}\n```").unwrap();
        assert_eq!(
            check_edits(&edits, Some("fn f() {}\n"), &step, "").unwrap(),
            Checked::Write {
                text: "fn f() {}\n\nfn g() {}\n".into(),
                matched: Matched::Exactly,
                placed: Some("added at the end".into()),
            }
        );
        // An `add` answered in the other form has no fence.
        assert!(parse_code(&add, "<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE").is_err());
    }

    #[test]
    fn the_code_ask_names_the_test_the_check_runs() {
        let checks = |c: &[&str]| c.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let unittest = checks(&[
            "python3 -m unittest tests.test_stats.StatsTest.test_mean_empty",
            "python3 -m unittest discover tests",
        ]);
        assert_eq!(
            test_name_hint(&unittest, "tests/test_stats.py").as_deref(),
            Some("Name the new test `test_mean_empty`: the step's check runs it by that name.")
        );
        // Only for the module it names, and only a test's name.
        assert_eq!(test_name_hint(&unittest, "stats.py"), None);
        assert_eq!(
            test_name_hint(
                &checks(&["python3 -m unittest tests.test_stats"]),
                "tests/test_stats.py"
            ),
            None
        );
        assert_eq!(
            test_name_hint(
                &checks(&["python3 -c \"import tests.test_stats\""]),
                "tests/test_stats.py"
            ),
            None
        );
        let pytest = checks(&["pytest -q './tests/test_stats.py::StatsTest::test_max'"]);
        assert_eq!(
            test_name_hint(&pytest, "tests/test_stats.py").as_deref(),
            Some("Name the new test `test_max`: the step's check runs it by that name.")
        );
    }

    #[test]
    fn the_code_ask_names_the_form_and_says_the_step_again() {
        let add = Decision {
            action: "add".into(),
            path: "src/lib.rs".into(),
        };
        let text = code_instruction("S1 Add a test", Some("it passes"), &add, true, false);
        assert!(text.starts_with("The step: S1 Add a test\nDone when: it passes\n"));
        assert!(text.contains("only the new code this step adds to `src/lib.rs`, in one fenced"));
        // Where tick puts it, as `place` does, for the file's language.
        assert!(text.contains("a test function (`#[test]`) into the file's test module"));
        let py = Decision {
            path: "t.py".into(),
            ..add.clone()
        };
        let text = code_instruction("S1 Add a test", None, &py, true, false);
        assert!(
            text.contains("a test method into the `TestCase` class"),
            "{text}"
        );
        // Our words invite no `self` where it does not belong, and say what a repeated
        // definition does.
        assert!(!text.contains("taking `self`"), "{text}");
        assert!(
            text.contains("a function or method that is already in the file is replaced"),
            "{text}"
        );
        let go = Decision {
            path: "main.go".into(),
            ..add.clone()
        };
        let text = code_instruction("S1 Add", None, &go, true, false);
        assert!(
            text.contains("tick adds it at the end of the file."),
            "{text}"
        );
        let new = code_instruction("S1 Add a test", None, &add, false, false);
        assert!(
            new.contains("the whole of the new file `src/lib.rs`"),
            "{new}"
        );
        let change = Decision {
            action: "change".into(),
            ..add
        };
        let text = code_instruction("S1 Fix", None, &change, true, true);
        assert!(text.contains("<<<<<<< SEARCH\n"), "{text}");
        assert!(text.contains("same line in both halves"), "{text}");
        assert!(!code_instruction("S1 Fix", None, &change, true, false).contains("both halves"));
        let decide = decision_instruction("S1 Fix", "src/lib.rs", true);
        assert!(decide.starts_with("The step: S1 Fix\n"), "{decide}");
        assert!(
            decide.contains("`change` to change lines that are in it"),
            "{decide}"
        );
        assert!(decision_instruction("S1 Fix", "new.rs", false).contains("it does not exist yet"));
    }

    #[test]
    fn an_empty_search_writes_a_new_file_or_adds_to_one() {
        let step = files(&["a.rs", "new.py"]);
        let ok = check_edit(&edit("new.py", "", "print(1)"), None, &step, "").unwrap();
        assert_eq!(
            ok,
            Checked::Write {
                text: "print(1)\n".into(),
                matched: Matched::Exactly,
                placed: None,
            }
        );
        let err = check_edit(&edit("new.py", "a", "b"), None, &step, "").unwrap_err();
        assert!(err.contains("does not exist yet"), "{err}");
        let before = "pub fn f() -> u32 {\n    1\n}\n";
        let Checked::Write { text, .. } = check_edit(
            &edit(
                "a.rs",
                "",
                "#[test]\nfn f_is_one() {\n    assert_eq!(f(), 1);\n}",
            ),
            Some(before),
            &step,
            "Test f",
        )
        .unwrap() else {
            panic!("not written")
        };
        // A test goes into a test module ([`place`] has every rule).
        assert_eq!(
            text,
            "pub fn f() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    \
             #[test]\n    fn f_is_one() {\n        assert_eq!(f(), 1);\n    }\n}\n"
        );
        // `add` appends whatever `search` holds (a small model fills it anyway).
        let mut answer = edit("a.rs", "fn f", "fn g() {}");
        answer.action = "add".into();
        assert_eq!(
            check_edit(&answer, Some(before), &step, "").unwrap(),
            Checked::Write {
                text: format!("{before}\nfn g() {{}}\n"),
                matched: Matched::Exactly,
                placed: Some("added at the end".into()),
            }
        );
        // A search inside a line is refused, naming the line.
        let err = check_edit(
            &edit("a.rs", "pub fn f() -> u32", "pub fn f() -> u64"),
            Some(before),
            &step,
            "",
        )
        .unwrap_err();
        assert!(
            err.contains("matches part of line 1: `pub fn f() -> u32 {`"),
            "{err}"
        );
        assert!(check_edit(&edit("a.rs", "    1", "    2"), Some(before), &step, "").is_ok());
        assert!(check_edit(&edit("a.rs", "1", "2"), Some(before), &step, "").is_ok());
        // What is added must still balance.
        let err = check_edit(&edit("a.rs", "", "fn g() {"), Some(before), &step, "").unwrap_err();
        assert!(err.contains("unbalanced"), "{err}");
        assert_eq!(
            check_edit(&edit("a.rs", "x", "x"), Some("x\n"), &step, "").unwrap(),
            Checked::Unchanged
        );
    }

    #[test]
    fn the_guards_apply_to_an_answer() {
        let step = files(&["a.py"]);
        let err = check_edit(&edit("b.py", "x", "y"), Some("x\n"), &step, "").unwrap_err();
        assert!(err.contains("edit only `a.py`"), "{err}");
        let before = "def f():\n    return 1\n\ndef g():\n    return 2\n";
        let err = check_edit(
            &edit("a.py", before, "def f():\n    return 3\n"),
            Some(before),
            &step,
            "Change f",
        )
        .unwrap_err();
        assert!(err.contains("`function g`"), "{err}");
    }

    use crate::compact::fixtures::STATS;

    /// The benchmark run that blocked S1: its `add` of `def mean(self, values)` was refused
    /// as a copy, and its `change`, the file's functions with one blank line between them
    /// where the file has two, was not found. Both now land.
    #[test]
    fn the_benchmarks_add_and_change_of_mean_both_land() {
        let step = files(&["stats.py"]);
        let title = "S1 Add a check for empty list in mean function stats.py";
        let expected = STATS.replace(
            "def mean(values):\n",
            "def mean(values):\n    if not values:\n        return None\n",
        );
        let add = edit(
            "stats.py",
            "",
            "def mean(self, values):\n    if not values:\n        return None\n    return \
             sum(values) / len(values)",
        );
        assert_eq!(
            check_edit(&add, Some(STATS), &step, title).unwrap(),
            Checked::Write {
                text: expected.clone(),
                matched: Matched::Exactly,
                placed: Some("replaced `function mean`".into()),
            }
        );
        let one_blank = |text: &str| text.replace("\n\n\ndef", "\n\ndef");
        let functions = &STATS[STATS.find("def mean").unwrap()..];
        let change = edit(
            "stats.py",
            &one_blank(functions),
            &expected[expected.find("def mean").unwrap()..],
        );
        assert_eq!(
            check_edit(&change, Some(STATS), &step, title).unwrap(),
            Checked::Write {
                text: expected,
                matched: Matched::IgnoringBlankLines,
                placed: None,
            }
        );
    }

    #[test]
    fn an_add_that_replaces_a_function_the_step_does_not_name_is_refused() {
        let step = files(&["stats.py"]);
        let title = "S1 Add a check for empty list in mean function stats.py";
        let add = edit(
            "stats.py",
            "",
            "def maximum(values):\n    if not values:\n        return None\n    return max(values)\n",
        );
        let err = check_edit(&add, Some(STATS), &step, title).unwrap_err();
        assert_eq!(
            err,
            guards::EditRefusal::ChangesOthers {
                path: "stats.py".into(),
                changed: vec!["function maximum".into()],
            }
            .to_string()
        );
        // A `change` that writes a second `mean` is still refused as a copy.
        let change = edit(
            "stats.py",
            "def spread(values):\n    return maximum(values) - minimum(values)",
            "def spread(values):\n    return maximum(values) - minimum(values)\n\n\n\
             def mean(values):\n    return 0",
        );
        let err = check_edit(&change, Some(STATS), &step, title).unwrap_err();
        assert!(
            err.contains("defines `function mean` again, which the file already has"),
            "{err}"
        );
    }

    #[test]
    fn the_first_message_shows_the_step_its_checks_and_files() {
        let text = step_message(
            "Tests",
            "S1 Add a test",
            Some("the test passes"),
            &["python3 -m unittest".to_owned()],
            &vec![("a.py".into(), Some("x = 1".into())), ("t.py".into(), None)],
        );
        assert!(text.contains("Step: S1 Add a test\nDone when: the test passes\n"));
        assert!(text.contains("tick runs `python3 -m unittest`"));
        assert!(text.contains("\na.py:\n```\nx = 1\n```\n"));
        assert!(text.contains("t.py (does not exist yet; write it whole)"));
    }
}
