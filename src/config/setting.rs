//! The settings one at a time, as `tick config list|get|set` shows and changes them: the keys
//! with one value each, the resolved value of each and where it came from, and a checked way
//! to change one in the person's file or the repository's.
//!
//! The values are the resolved ones ([`super::for_workspace`]); a file [`set`] writes is read
//! back as tick reads it before it replaces the old one, so a value tick would refuse never
//! reaches the file.

use std::path::{Path, PathBuf};

use crate::config::{self, Config, Flags};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::fsx;
use crate::tasks::Store;

/// What values a setting takes.
#[derive(Clone, Copy)]
enum Kind {
    /// One of these words.
    Words(&'static [&'static str]),
    /// A whole number, 0 or more.
    Count,
    /// Any text.
    Text,
}

/// One setting `tick config` knows: its key in the file, the variable that overrides it.
struct Key {
    name: &'static str,
    env: Option<&'static str>,
    kind: Kind,
}

const MODES: &[&str] = &["compact", "agent", "auto"];

const fn key(name: &'static str, env: Option<&'static str>, kind: Kind) -> Key {
    Key { name, env, kind }
}

/// The settings with one value each, in the order the docs give them. `hooks`,
/// `mcp_servers`, `run_command` and a `sandbox:` table are lists and tables: edited by hand.
const KEYS: &[Key] = &[
    key(
        "provider",
        Some("TICK_PROVIDER"),
        Kind::Words(&["openai", "anthropic", "ollama", "llamacpp"]),
    ),
    key("model", Some("TICK_MODEL"), Kind::Text),
    key("plan_model", Some("TICK_PLAN_MODEL"), Kind::Text),
    key("base_url", Some("TICK_BASE_URL"), Kind::Text),
    key("api_key_env", None, Kind::Text),
    key(
        "tool_calls",
        Some("TICK_TOOL_CALLS"),
        Kind::Words(&["native", "text", "auto"]),
    ),
    key("planner", Some("TICK_PLANNER"), Kind::Words(MODES)),
    key("executor", Some("TICK_EXECUTOR"), Kind::Words(MODES)),
    key("sandbox", Some("TICK_SANDBOX"), Kind::Words(&["on", "off"])),
    key("limits.max_turns", None, Kind::Count),
    key("limits.max_tokens", None, Kind::Count),
    key("limits.max_output_tokens", None, Kind::Count),
    key("limits.answer_timeout_s", None, Kind::Count),
    key("limits.idle_timeout_s", None, Kind::Count),
    key("limits.max_retries", None, Kind::Count),
    key("limits.max_reminders", None, Kind::Count),
    key("limits.max_write_bytes", None, Kind::Count),
    key("limits.max_tool_result_bytes", None, Kind::Count),
    key("limits.max_transcript_entry_bytes", None, Kind::Count),
    key("limits.replan_max_new_steps", None, Kind::Count),
    key("limits.max_undo_bytes", None, Kind::Count),
    key("limits.compact_candidates", None, Kind::Count),
    key("limits.compact_candidate_budget_s", None, Kind::Count),
];

/// The keys that are lists or tables, and where they are explained.
const BY_HAND: &[(&str, &str)] = &[
    ("hooks", "docs/hooks.md"),
    ("mcp_servers", "docs/mcp.md"),
    ("run_command", "docs/config.md"),
];

/// One setting as shown: its key, its resolved value as it would be written in the file, and
/// where that value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub key: &'static str,
    pub value: String,
    /// Where the value in force came from.
    pub source: String,
    /// The repository's file, when it sets this key but is not trusted to decide it.
    pub ignored_in: Option<String>,
}

impl Shown {
    /// Where the value came from, as `tick config get|list` say it: with the repository's
    /// file it ignores, when there is one.
    pub fn described(&self) -> String {
        match &self.ignored_in {
            Some(file) => format!("{}; `{file}`'s is ignored until `tick trust`", self.source),
            None => self.source.clone(),
        }
    }
}

/// Every setting with one value, in the order the docs give them, and the warning about what
/// an untrusted repository's file would have decided ([`Config::trust_warning`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub settings: Vec<Shown>,
    pub trust_warning: Option<String>,
}

/// What [`set`] wrote: `written` (the value as YAML) for `key` in the file `shown`;
/// `overridden_by` is the variable set in the environment that wins over the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub key: &'static str,
    pub written: String,
    pub shown: String,
    pub overridden_by: Option<&'static str>,
}

/// Every setting with one value, resolved for the workspace of `store` (`tick config list`).
pub fn list(store: &Store, env: &Env) -> Result<Listed> {
    let files = Files::read(store, env)?;
    let config = config::for_workspace(store, env, &Flags::default())?;
    let settings = KEYS
        .iter()
        .map(|key| shown(store, env, &files, &config, key))
        .collect();
    Ok(Listed {
        settings,
        trust_warning: config.trust_warning(),
    })
}

/// The setting named `name` (`tick config get`), or the error listing the keys.
pub fn get(store: &Store, env: &Env, name: &str) -> Result<Shown> {
    let key = find(name)?;
    let files = Files::read(store, env)?;
    let config = config::for_workspace(store, env, &Flags::default())?;
    Ok(shown(store, env, &files, &config, key))
}

fn shown(store: &Store, env: &Env, files: &Files, config: &Config, key: &'static Key) -> Shown {
    let (source, ignored_in) = source(store, env, files, config, key);
    Shown {
        key: key.name,
        value: value(config, key.name),
        source,
        ignored_in,
    }
}

/// The two files, as parsed YAML (an absent or empty file is an empty mapping).
struct Files {
    user: Option<(PathBuf, serde_yaml::Value)>,
    repo: (PathBuf, serde_yaml::Value),
}

impl Files {
    fn read(store: &Store, env: &Env) -> Result<Files> {
        let user = match config::user_config_path(env) {
            Some(path) => {
                let parsed = parse(&path)?;
                Some((path, parsed))
            }
            None => None,
        };
        let repo = store.config_path();
        let parsed = parse(&repo)?;
        Ok(Files {
            user,
            repo: (repo, parsed),
        })
    }
}

/// A config file as YAML; the full check (unknown keys, values) is `config::resolve`'s.
fn parse(path: &Path) -> Result<serde_yaml::Value> {
    let text = fsx::read_capped(path, fsx::MAX_CONFIG_FILE)?.unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(serde_yaml::Value::Null);
    }
    serde_yaml::from_str(&text).map_err(|err| {
        Error::input(format!("`{}`: {err}", path.display()))
            .hint("fix the file by hand; it was not changed")
    })
}

/// The value of `key` (`limits.max_turns`) in a parsed file.
fn lookup<'v>(file: &'v serde_yaml::Value, key: &str) -> Option<&'v serde_yaml::Value> {
    let mut at = file;
    for part in key.split('.') {
        at = at.get(part)?;
    }
    (!at.is_null()).then_some(at)
}

/// Where the value of `key` came from, by `config::resolve`'s precedence.
/// Where the value of `key` in force came from, and the repository's file when it sets the key
/// but is ignored.
fn source(
    store: &Store,
    env: &Env,
    files: &Files,
    config: &Config,
    key: &Key,
) -> (String, Option<String>) {
    let resolved = match key.name {
        "provider" => Some(&config.sources.provider),
        "model" => Some(&config.sources.model),
        "plan_model" => Some(&config.sources.plan_model),
        "base_url" => Some(&config.sources.base_url),
        _ => None,
    };
    if let Some(source) = resolved {
        return (source.to_string(), None);
    }
    if let Some(name) = key.env.filter(|name| env.var(name).is_some()) {
        return (format!("environment `{name}`"), None);
    }
    // An ignored setting is named as written (`` `sandbox: off` ``, `` `limits.max_turns` ``).
    let ignored = config.ignored.as_ref().is_some_and(|ignored| {
        ignored.keys.iter().any(|k| {
            let k = k.trim_matches('`');
            let k = k.split_once(':').map_or(k, |(name, _)| name).trim();
            k == key.name || key.name.starts_with(&format!("{k}."))
        })
    });
    let repo = lookup(&files.repo.1, key.name).is_some();
    if !ignored && repo {
        return (format!("`{}`", store.rel(&files.repo.0)), None);
    }
    let source = if let Some((path, file)) = &files.user
        && lookup(file, key.name).is_some()
    {
        format!("`{}`", path.display())
    } else if key.name == "executor" {
        "default (the planner's)".to_owned()
    } else {
        "default".to_owned()
    };
    (source, (ignored && repo).then(|| store.rel(&files.repo.0)))
}

/// The resolved value of `key`, as it would be written in the file.
fn value(config: &Config, key: &str) -> String {
    let limits = &config.limits;
    let secs = |d: std::time::Duration| d.as_secs().to_string();
    match key {
        "provider" => config.provider.as_str().to_owned(),
        "model" => config
            .model
            .clone()
            .unwrap_or_else(|| "(not set)".to_owned()),
        "plan_model" => config
            .plan_model
            .clone()
            .unwrap_or_else(|| "(the model)".to_owned()),
        "base_url" => config.base_url.clone(),
        "api_key_env" => config
            .api_key_env
            .clone()
            .unwrap_or_else(|| "(none)".to_owned()),
        "tool_calls" => words(&config.tool_calls),
        "planner" => words(&config.planner),
        "executor" => words(&config.executor),
        "sandbox" => if config.sandbox.enabled { "on" } else { "off" }.to_owned(),
        "limits.max_turns" => limits.max_turns.to_string(),
        "limits.max_tokens" => limits.max_tokens.to_string(),
        "limits.max_output_tokens" => limits.max_output_tokens.map_or_else(
            || {
                format!(
                    "{} planning, {} executing",
                    config::PLAN_OUTPUT_TOKENS,
                    config::BUILD_OUTPUT_TOKENS
                )
            },
            |n| n.to_string(),
        ),
        "limits.answer_timeout_s" => secs(limits.answer_timeout),
        "limits.idle_timeout_s" => secs(limits.idle_timeout),
        "limits.max_retries" => limits.max_retries.to_string(),
        "limits.max_reminders" => limits.max_reminders.to_string(),
        "limits.max_write_bytes" => limits.max_write_bytes.to_string(),
        "limits.max_tool_result_bytes" => limits.max_tool_result_bytes.to_string(),
        "limits.max_transcript_entry_bytes" => limits.max_transcript_entry_bytes.to_string(),
        "limits.replan_max_new_steps" => limits.replan_max_new_steps.to_string(),
        "limits.max_undo_bytes" => limits.max_undo_bytes.to_string(),
        "limits.compact_candidates" => limits.compact_candidates.to_string(),
        "limits.compact_candidate_budget_s" => secs(limits.compact_candidate_budget),
        _ => String::new(),
    }
}

/// The word a setting is written as, from its serde name.
fn words(value: &impl serde::Serialize) -> String {
    serde_yaml::to_string(value)
        .map(|text| text.trim().to_owned())
        .unwrap_or_default()
}

/// The key named `name`, or the error listing the keys.
fn find(name: &str) -> Result<&'static Key> {
    if let Some(key) = KEYS.iter().find(|key| key.name == name) {
        return Ok(key);
    }
    let top = name.split('.').next().unwrap_or(name);
    if let Some((key, doc)) = BY_HAND.iter().find(|(key, _)| *key == top) {
        return Err(Error::input(format!(
            "`{key}` is a list or table, not one value `tick config` can show or set"
        ))
        .hint(format!(
            "edit it in the file (see `{doc}`); nothing was changed"
        )));
    }
    if let Some(rest) = name.strip_prefix("sandbox.") {
        return Err(Error::input(format!(
            "`sandbox.{rest}` is part of the `sandbox:` table, which `tick config` does not edit"
        ))
        .hint("edit it in the file (see `docs/config.md`), or set `sandbox` to `on` or `off`; nothing was changed"));
    }
    let error = Error::input(format!("`tick config` has no setting `{name}`"));
    let error = match config::error::nearest(name, KEYS.iter().map(|key| key.name)) {
        Some(near) => error.hint(format!("did you mean `{near}`?")),
        None => error,
    };
    Err(error.hint(format!(
        "the settings are {}; `tick config list` shows each with its value; nothing was changed",
        KEYS.iter()
            .map(|key| format!("`{}`", key.name))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// `value` checked against what `key` takes, as it is written in the file.
fn checked(key: &Key, value: &str) -> Result<String> {
    let unchanged = "the file was not changed";
    match key.kind {
        Kind::Words(words) => {
            if words.contains(&value) {
                Ok(value.to_owned())
            } else {
                Err(
                    Error::input(format!("`{}` cannot be `{value}`", key.name)).hint(format!(
                        "`{}` is one of {}; {unchanged}",
                        key.name,
                        words
                            .iter()
                            .map(|w| format!("`{w}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                )
            }
        }
        Kind::Count => match value.parse::<u64>() {
            Ok(n) => Ok(n.to_string()),
            Err(_) => Err(
                Error::input(format!("`{}` cannot be `{value}`", key.name)).hint(format!(
                    "`{}` is a whole number, 0 or more; {unchanged}",
                    key.name
                )),
            ),
        },
        Kind::Text => {
            if value.trim().is_empty() || value.contains('\n') {
                return Err(
                    Error::input(format!("`{}` cannot be empty or span lines", key.name))
                        .hint(format!("give one line of text; {unchanged}")),
                );
            }
            // Quoted when YAML would read it as something else (`yes`, `12`, `a: b`).
            serde_yaml::to_string(value)
                .map(|text| text.trim_end().to_owned())
                .map_err(|err| Error::internal(format!("could not write the value: {err}")))
        }
    }
}

/// Sets `name` to `value` in the person's file (`user`) or the repository's (`tick config
/// set`): the value is checked against what the key takes, the key's line is replaced or
/// added with the file's other lines kept, and the new file replaces the old one only when it
/// reads back the same and loads as tick reads its settings.
pub fn set(store: &Store, env: &Env, name: &str, value: &str, user: bool) -> Result<Written> {
    let key = find(name)?;
    let written = checked(key, value)?;
    let (path, shown) = if user {
        let path = config::user_config_path_or(
            env,
            "set `TICK_CONFIG` to the file's path, or use `--repo`; nothing was written",
        )?;
        let shown = path.display().to_string();
        (path, shown)
    } else {
        let path = store.config_path();
        let shown = store.rel(&path);
        (path, shown)
    };
    let unchanged = "the file was not changed";
    let text = fsx::read_capped(&path, fsx::MAX_CONFIG_FILE)?.unwrap_or_default();
    let new = with_value(&text, key.name, &written).ok_or_else(|| {
        Error::input(format!(
            "`{shown}`: its `{}` is not written in a form tick can edit in place",
            key.name.split('.').next().unwrap_or(key.name)
        ))
        .hint(format!("set `{}` by hand; {unchanged}", key.name))
    })?;
    let expected: serde_yaml::Value = serde_yaml::from_str(&written)
        .map_err(|err| Error::internal(format!("could not read the value back: {err}")))?;
    let reads_back = serde_yaml::from_str::<serde_yaml::Value>(&new)
        .ok()
        .is_some_and(|file| lookup(&file, key.name) == Some(&expected));
    if !reads_back {
        return Err(Error::input(format!(
            "`{shown}`: tick could not set `{}` so that the file reads back the same",
            key.name
        ))
        .hint(format!("set it by hand; {unchanged}")));
    }
    if let Some(dir) = path.parent() {
        fsx::create_dir_all(dir)?;
    }
    // The new file is written beside the old one and read as tick reads its settings; only a
    // file that loads replaces the old one.
    let candidate = path.with_file_name(format!(".tick-config-check.{}.yaml", std::process::id()));
    fsx::write_atomic(&candidate, new.as_bytes())?;
    let loaded = if user {
        let mut env = env.clone();
        env.vars
            .insert("TICK_CONFIG".to_owned(), candidate.display().to_string());
        let repo = store.config_path();
        config::resolve(
            &repo,
            &store.rel(&repo),
            store.trust(),
            &env,
            &Flags::default(),
        )
    } else {
        config::resolve(
            &candidate,
            &shown,
            &crate::trust::TrustState::Trusted,
            env,
            &Flags::default(),
        )
    };
    if let Err(err) = loaded {
        fsx::remove_file(&candidate)?;
        // The candidate's name means nothing to the person: the error names the file.
        let why = err
            .to_string()
            .replace(&candidate.display().to_string(), &shown);
        return Err(Error::input(format!(
            "`{shown}` would not load with `{}: {written}`: {why}",
            key.name
        ))
        .hint(unchanged));
    }
    fsx::rename(&candidate, &path)?;
    if let Some(dir) = path.parent() {
        fsx::sync_dir(dir)?;
    }
    Ok(Written {
        key: key.name,
        written,
        shown,
        overridden_by: key.env.filter(|name| env.var(name).is_some()),
    })
}

/// `text` (a config file) with `key` set to `value` (as YAML): the key's line replaced when
/// the file has it, else added (under its table for `limits.…`). The other lines, comments
/// included, are kept. `None` when the key is written in a form edited only by hand (a flow
/// table, a block under a one-value key).
fn with_value(text: &str, key: &str, value: &str) -> Option<String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    if let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
    {
        last.push('\n');
    }
    let (table, name) = match key.split_once('.') {
        Some((table, name)) => (Some(table), name),
        None => (None, key),
    };
    let Some(table) = table else {
        match lines.iter().position(|l| key_rest(l, name).is_some()) {
            Some(at) => {
                let rest = key_rest(&lines[at], name)?;
                if value_part(rest).is_empty() {
                    return None;
                }
                lines[at] = format!("{name}: {value}{}\n", comment_part(rest));
            }
            None => lines.push(format!("{name}: {value}\n")),
        }
        return Some(lines.concat());
    };
    let Some(at) = lines.iter().position(|l| key_rest(l, table).is_some()) else {
        lines.push(format!("{table}:\n  {name}: {value}\n"));
        return Some(lines.concat());
    };
    if !value_part(key_rest(&lines[at], table)?).is_empty() {
        return None;
    }
    // The table's lines: indented, or blank, or comments.
    let end = lines[at + 1..]
        .iter()
        .position(|l| {
            !(l.trim().is_empty() || l.starts_with(' ') || l.trim_start().starts_with('#'))
        })
        .map_or(lines.len(), |n| at + 1 + n);
    let indent = lines[at + 1..end]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map_or(2, |l| l.len() - l.trim_start().len());
    let pad = " ".repeat(indent);
    let child = lines[at + 1..end].iter().position(|l| {
        l.len() - l.trim_start().len() == indent && key_rest(l.trim_start(), name).is_some()
    });
    if let Some(n) = child {
        let line = &lines[at + 1 + n];
        let rest = key_rest(line.trim_start(), name)?;
        if value_part(rest).is_empty() {
            return None;
        }
        let comment = comment_part(rest);
        lines[at + 1 + n] = format!("{pad}{name}: {value}{comment}\n");
    } else {
        // After the table's last entry, so a comment above an entry stays with it.
        let last = lines[at + 1..end]
            .iter()
            .rposition(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map_or(at, |n| at + 1 + n);
        lines.insert(last + 1, format!("{pad}{name}: {value}\n"));
    }
    Some(lines.concat())
}

/// What follows `name:` on a line that starts with it.
fn key_rest<'l>(line: &'l str, name: &str) -> Option<&'l str> {
    let rest = line.strip_prefix(name)?.strip_prefix(':')?;
    (rest.is_empty() || rest.starts_with([' ', '\t', '\n', '\r'])).then_some(rest)
}

/// The value on a key's line, without a trailing comment.
fn value_part(rest: &str) -> &str {
    let rest = rest.trim();
    if rest.starts_with('#') {
        return "";
    }
    match rest.find(" #") {
        Some(at) if !rest.contains(['"', '\'']) => rest[..at].trim(),
        _ => rest,
    }
}

/// A trailing comment on a key's line (with its space), kept when the value changes.
fn comment_part(rest: &str) -> String {
    let rest = rest.trim_end();
    if rest.contains(['"', '\'']) {
        return String::new();
    }
    rest.find(" #")
        .map(|at| format!(" {}", rest[at..].trim_start()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::with_value;

    #[test]
    fn a_top_level_key_is_replaced_in_place_keeping_its_comment_and_the_rest() {
        let text = "# mine\nprovider: openai\nmodel: a # the small one\nlimits:\n  max_turns: 3\n";
        assert_eq!(
            with_value(text, "model", "b").as_deref(),
            Some("# mine\nprovider: openai\nmodel: b # the small one\nlimits:\n  max_turns: 3\n")
        );
    }

    #[test]
    fn a_missing_key_is_added_at_the_end_and_a_commented_one_is_left() {
        assert_eq!(
            with_value("# model: x\nprovider: openai", "model", "b").as_deref(),
            Some("# model: x\nprovider: openai\nmodel: b\n")
        );
        assert_eq!(with_value("", "model", "b").as_deref(), Some("model: b\n"));
    }

    #[test]
    fn a_limit_goes_into_the_limits_table_at_its_indentation() {
        let text = "limits:\n    # turns\n    max_turns: 3\nmodel: a\n";
        assert_eq!(
            with_value(text, "limits.max_turns", "9").as_deref(),
            Some("limits:\n    # turns\n    max_turns: 9\nmodel: a\n")
        );
        assert_eq!(
            with_value(text, "limits.max_retries", "1").as_deref(),
            Some("limits:\n    # turns\n    max_turns: 3\n    max_retries: 1\nmodel: a\n")
        );
        assert_eq!(
            with_value("model: a\n", "limits.max_retries", "1").as_deref(),
            Some("model: a\nlimits:\n  max_retries: 1\n")
        );
    }

    #[test]
    fn a_flow_table_or_a_block_under_a_value_key_is_left_to_the_person() {
        assert_eq!(
            with_value("limits: {max_turns: 3}\n", "limits.max_turns", "4"),
            None
        );
        assert_eq!(
            with_value("sandbox:\n  network: true\n", "sandbox", "off"),
            None
        );
    }
}
