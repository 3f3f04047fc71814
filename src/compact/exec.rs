//! Executing a step with a small model (`executor: compact`): each turn is one edit of one of
//! the step's files, an object the server's grammar constrains (`{path, search, substitute}`,
//! aider's search/replace; an empty `search` writes a new file whole, or adds `substitute` at
//! the end of an existing one: a 1.5B model asked to rewrite a file whole wrote only the new
//! function (measured), and asked for an anchor it replaced a block's first line).
//! The replacement is `substitute`, not `replace`, for the order of decoding: `serde_json`
//! writes a schema's properties sorted by name, and llama.cpp's grammar has the model write
//! them in that order; with `replace` the 1.5B model wrote the new text before the text it
//! replaces (measured); with `substitute` it copies the lines first. What this module holds
//! is pure: which executor runs ([`resolve`] asks the server only under `auto`), the edit's
//! schema, the texts the model gets, and [`check_edit`], the guards of [`super::guards`]
//! applied to one answer. The runner (`src/runner/compact.rs`) drives the turns, writes
//! through the build-mode `write_file` (its write policy and sandbox), and ticks the step only
//! when its `verify` and the repository's test command both pass.

use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::{self, Matched};
use super::{Choice, cache, choose};
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
    Ok(Some(ExecOptions {
        model: model.to_owned(),
        method,
        system: store.prompt(PROMPT_FILE, PROMPT)?,
    }))
}

/// One edit as the model answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EditAnswer {
    /// `add` (new code at the end of the file, or a new file whole) or `change` (`search`
    /// replaced by `substitute`). Decided first, before any code: the schema's properties are
    /// written in name order.
    #[serde(default)]
    pub action: String,
    pub path: String,
    #[serde(default)]
    pub search: String,
    #[serde(default, rename = "substitute")]
    pub replace: String,
}

/// The schema of an edit. `paths` (the step's files that are not globs) become an `enum`
/// the server's grammar enforces; tick checks the path again whatever the server did.
pub fn edit_schema(paths: &[String]) -> Value {
    let mut path = json!({"type": "string", "maxLength": 200});
    if !paths.is_empty() {
        path = json!({"type": "string", "enum": paths});
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["action", "path", "search", "substitute"],
        "properties": {
            "action": {"type": "string", "enum": ["add", "change"]},
            "path": path,
            "search": {"type": "string", "maxLength": 6000},
            "substitute": {"type": "string", "maxLength": 12000},
        },
    })
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

/// The ask for the edit of `path`.
/// The ask for the edit of `path` for `step` (its id and title, said again next to the ask:
/// a small model follows what it read last).
pub fn edit_instruction(step: &str, path: &str, exists: bool, one_of_many: bool) -> String {
    let how = if exists {
        "To add new code (a function, a test), set `action` to `add`, `search` to \"\" and \
         `substitute` to only the new code: tick adds it at the end of the file. To change \
         lines, set `action` to `change`, `search` to those lines copied exactly from the \
         file, and `substitute` to the new lines."
    } else {
        "It does not exist yet: set `action` to `add`, `search` to \"\" and `substitute` to \
         the whole file."
    };
    // A way out only where the step names other files: a small model takes it whenever it
    // is offered.
    let skip = if one_of_many {
        format!(
            " Only if the step needs no change in `{path}`, set `action` to `change` and \
             `search` and `substitute` to the same line."
        )
    } else {
        String::new()
    };
    format!(
        "The step: {step}\nAnswer with one edit of `{path}` that does this step, as JSON: \
         `action`, `path`, `search`, `substitute`. {how}{skip}"
    )
}

/// The ask after a failed check: its output, and one more edit.
pub fn fix_instruction(step: &str, report: &str, files: &Shown) -> String {
    let mut text = format!("{}\n\nThe step's files now:\n", report.trim_end());
    for (path, body) in files {
        text.push_str(&file_block(path, body.as_deref()));
    }
    text.push_str(&format!("\nThe step: {step}"));
    text.push_str(
        "\nAnswer with one edit that fixes this, as JSON: `action` (`add` or `change`), `path` \
         (one of the step's files), `search`, `substitute`.",
    );
    text
}

/// What one answer does to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The new text of the file, and how the search text matched.
    Write { text: String, matched: Matched },
    /// `search` and `substitute` are the same: the model says the file needs no change.
    Unchanged,
}

/// The guards on one answer: only the step's files; an empty `search` writes a new file
/// whole, or adds `substitute` at the end of an existing file; flexible matching; braces that
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
    let edited = match (before, add || answer.search.trim().is_empty()) {
        (None, false) => {
            return Err(format!(
                "`{path}` does not exist yet: answer with `action` `add` and the whole file in \
                 `substitute`"
            ));
        }
        (None, true) => guards::guarded_edit(path, "", None, &new, step_files, step_text),
        (Some(before), true) => {
            let gap = match before {
                "" => "",
                b if b.ends_with("\n\n") => "",
                b if b.ends_with('\n') => "\n",
                _ => "\n\n",
            };
            let appended = format!("{before}{gap}{new}");
            guards::guarded_edit(path, before, None, &appended, step_files, step_text)
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
    let (text, matched) = edited.map_err(|refusal| refusal.to_string())?;
    Ok(Checked::Write { text, matched })
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
    fn the_schema_lists_the_steps_files_and_checks_an_answer() {
        let schema = edit_schema(&files(&["src/a.py"]));
        let mut problems = Vec::new();
        crate::llm::structured::check(
            &schema,
            &json!({"action": "change", "path": "src/a.py", "search": "x", "substitute": "y"}),
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
    fn an_empty_search_writes_a_new_file_or_adds_to_the_end_of_one() {
        let step = files(&["a.rs", "new.py"]);
        let ok = check_edit(&edit("new.py", "", "print(1)"), None, &step, "").unwrap();
        assert_eq!(
            ok,
            Checked::Write {
                text: "print(1)\n".into(),
                matched: Matched::Exactly
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
        assert_eq!(
            text,
            "pub fn f() -> u32 {\n    1\n}\n\n#[test]\nfn f_is_one() {\n    assert_eq!(f(), 1);\n}\n"
        );
        // `add` appends whatever `search` holds (a small model fills it anyway).
        let mut answer = edit("a.rs", "fn f", "fn g() {}");
        answer.action = "add".into();
        assert_eq!(
            check_edit(&answer, Some(before), &step, "").unwrap(),
            Checked::Write {
                text: format!("{before}\nfn g() {{}}\n"),
                matched: Matched::Exactly
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
