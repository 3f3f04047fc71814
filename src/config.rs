//! Settings, resolved once before any work: the user's config file, then the repository's
//! `.tasks/config.yaml`, then the environment, then flags. Later sources win, key by key (the
//! repository's file over the user's). `templates/config.yaml` says the same to people.
//!
//! The repository's file comes with every clone, so until the person trusts the repository
//! (`tick trust`, [`crate::trust`]) it decides only what tightens ([`tightening_only`]): a
//! lower limit, `sandbox.network: false`, the model's name. Where requests go and which
//! credential is sent (`provider`, `base_url`, `api_key_env`), what runs (`run_command.allow`)
//! and anything that loosens the sandbox or a limit are ignored, and [`Config::ignored`] names
//! them for the one warning a front end prints (`docs/config.md` has the table).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub mod error;
pub mod setting;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::fsx;
use crate::llm::{ClientConfig, ProviderKind};
use crate::tools::allowlist::{AllowEntry, AllowList};
use crate::trust::TrustState;
use error::{ByHand, Error as ConfigError, Section};

/// Which server to talk to. `ollama` and `llamacpp` are OpenAI-compatible servers on this
/// machine, at their usual ports, with no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    #[value(name = "openai")]
    OpenAi,
    Anthropic,
    Ollama,
    #[value(name = "llamacpp")]
    LlamaCpp,
}

impl Provider {
    pub fn parse(text: &str) -> Option<Provider> {
        match text.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            "ollama" => Some(Provider::Ollama),
            "llamacpp" | "llama.cpp" | "llama-cpp" => Some(Provider::LlamaCpp),
            _ => None,
        }
    }

    pub fn kind(self) -> ProviderKind {
        match self {
            Provider::Anthropic => ProviderKind::Anthropic,
            _ => ProviderKind::OpenAi,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::Ollama => "http://127.0.0.1:11434/v1",
            Provider::LlamaCpp => "http://127.0.0.1:8080/v1",
        }
    }

    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Ollama | Provider::LlamaCpp => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
            Provider::LlamaCpp => "llamacpp",
        }
    }
}

/// One config file as written. Unknown keys are errors: a typo must not be ignored silently.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<Provider>,
    model: Option<String>,
    plan_model: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    limits: Option<FileLimits>,
    tool_calls: Option<ToolCalls>,
    planner: Option<Planner>,
    executor: Option<Planner>,
    run_command: Option<FileRunCommand>,
    sandbox: Option<FileSandbox>,
    /// `hooks:` (`crate::hooks`); each file's are kept apart, the repository's need trust.
    hooks: Option<Vec<crate::hook_entry::HookEntry>>,
    /// `mcp_servers:` (`crate::mcp::config`); the repository's need trust.
    mcp_servers: Option<std::collections::BTreeMap<String, crate::mcp::config::FileServer>>,
}

/// `run_command:` in a config file: programs added to the command tool's allow-list.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRunCommand {
    #[serde(default)]
    allow: Vec<AllowEntry>,
}

/// `sandbox: off|on|false|true`, or a table of its settings.
#[derive(Debug, Clone)]
enum FileSandbox {
    Switch(bool),
    Table(FileSandboxTable),
}

/// Told apart by the value's kind, so a table's misspelt key is an error at that key (with
/// the keys it takes) and a wrong word says the words, where an untagged enum would say only
/// that nothing matched, at the key `sandbox`.
impl<'de> Deserialize<'de> for FileSandbox {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Kind;
        const EXPECTED: &str =
            "`off`, `on`, `false`, `true` or a table of `enabled`, `network`, `writable` and `env`";
        impl<'de> serde::de::Visitor<'de> for Kind {
            type Value = FileSandbox;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<FileSandbox, E> {
                Ok(FileSandbox::Switch(on))
            }
            fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<FileSandbox, E> {
                match word {
                    "on" => Ok(FileSandbox::Switch(true)),
                    "off" => Ok(FileSandbox::Switch(false)),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(word), &self)),
                }
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<FileSandbox, M::Error> {
                FileSandboxTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(FileSandbox::Table)
            }
        }
        deserializer.deserialize_any(Kind)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSandboxTable {
    enabled: Option<bool>,
    network: Option<bool>,
    writable: Option<Vec<String>>,
    /// More variables commands get (`sandbox.env`); only from the person's own file.
    env: Option<Vec<String>>,
}

impl FileSandbox {
    fn table(self) -> FileSandboxTable {
        let enabled = match self {
            FileSandbox::Table(table) => return table,
            FileSandbox::Switch(on) => on,
        };
        FileSandboxTable {
            enabled: Some(enabled),
            ..FileSandboxTable::default()
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_turns: Option<u32>,
    max_tokens: Option<u64>,
    idle_timeout_s: Option<u64>,
    max_retries: Option<u32>,
    max_write_bytes: Option<usize>,
    max_tool_result_bytes: Option<usize>,
    max_transcript_entry_bytes: Option<usize>,
    max_output_tokens: Option<u32>,
    answer_timeout_s: Option<u64>,
    max_reminders: Option<u32>,
    replan_max_new_steps: Option<usize>,
    max_undo_bytes: Option<u64>,
    compact_candidates: Option<u32>,
    compact_candidate_budget_s: Option<u64>,
}

/// How the model makes tool calls: through the API (`native`), written in the reply in the
/// grammar of `docs/text-tool-calls.md` (`text`), or native until the model writes one as
/// text, then text for the rest of that conversation (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalls {
    Native,
    Text,
    #[default]
    Auto,
}

/// How `tick plan` plans: the agent loop exploring with tools (`agent`), the fixed pipeline
/// for small models (`compact`, see `src/compact/`), or `auto`: compact when the server's
/// context is under 32k tokens, or it is on this machine and does not say; otherwise the
/// agent, switching to compact after an answer without a tool call. Unset, it is `auto` for
/// the local presets (`llamacpp`, `ollama`) and `agent` for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Planner {
    Compact,
    Agent,
    Auto,
}

/// Limits that stop a runaway model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model turns (requests) in one planning run or one step.
    pub max_turns: u32,
    /// Tokens, in and out, in one command.
    pub max_tokens: u64,
    pub idle_timeout: Duration,
    pub max_retries: u32,
    /// The most `write_file` writes, and `edit_file`'s `old`/`new` may hold, in bytes.
    pub max_write_bytes: usize,
    /// The most of one tool result sent to the model; a longer one keeps its head and tail,
    /// with a note saying how to get the rest.
    pub max_tool_result_bytes: usize,
    /// The most of one message kept in a transcript (`session.jsonl`, `runs/*.jsonl`).
    pub max_transcript_entry_bytes: usize,
    /// Output tokens of one answer, when set in the config; otherwise the mode's default
    /// ([`Limits::output_tokens`]).
    pub max_output_tokens: Option<u32>,
    /// Longest one answer may stream, even while tokens keep arriving.
    pub answer_timeout: Duration,
    /// Reminders sent when the model ends a turn without the call it must make.
    pub max_reminders: u32,
    /// The most steps one `propose_replan` may add around the step it rewrites (new
    /// prerequisites, and the parts of a split beyond the first).
    pub replan_max_new_steps: usize,
    /// The most bytes of before-images kept for one step (`tick undo`); a file beyond it is
    /// named in the step's record as not kept.
    pub max_undo_bytes: u64,
    /// The compact executor's further candidates for a step whose edit fails its checks,
    /// each tried from the step's files as they were, warmer than the one before.
    pub compact_candidates: u32,
    /// The wall time after which no further candidate is started.
    pub compact_candidate_budget: Duration,
}

impl From<&Limits> for crate::tools::PayloadLimits {
    fn from(limits: &Limits) -> Self {
        Self {
            max_write_bytes: limits.max_write_bytes,
        }
    }
}

/// The commented `.tasks/config.yaml` that `tick init` writes.
pub const CONFIG_TEMPLATE: &str = include_str!("../templates/config.yaml");

/// The default wall-clock limit of one answer from a server on this machine.
pub const LOCAL_ANSWER_TIMEOUT: Duration = Duration::from_secs(900);

/// Output tokens per answer while planning: a whole plan is one `submit_plan` call.
pub const PLAN_OUTPUT_TOKENS: u32 = 8192;
/// Output tokens per answer while executing: a large file is written in parts.
pub const BUILD_OUTPUT_TOKENS: u32 = 4096;

impl Limits {
    /// The output-token limit of one answer in `mode`.
    pub fn output_tokens(&self, mode: crate::tools::Mode) -> u32 {
        self.max_output_tokens.unwrap_or(match mode {
            crate::tools::Mode::Plan => PLAN_OUTPUT_TOKENS,
            crate::tools::Mode::Build => BUILD_OUTPUT_TOKENS,
        })
    }
}

pub use crate::tools::DEFAULT_MAX_WRITE_BYTES;
/// `limits.max_tool_result_bytes`: 64 KiB, about 16k tokens.
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: usize = 64 * 1024;
/// `limits.max_undo_bytes`: 512 MiB of before-images per step.
pub const DEFAULT_MAX_UNDO_BYTES: u64 = 512 * 1024 * 1024;
/// `limits.max_transcript_entry_bytes`: 256 KiB.
pub const DEFAULT_MAX_TRANSCRIPT_ENTRY_BYTES: usize = 256 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: 40,
            max_tokens: 2_000_000,
            idle_timeout: Duration::from_secs(120),
            max_retries: 4,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            max_transcript_entry_bytes: DEFAULT_MAX_TRANSCRIPT_ENTRY_BYTES,
            max_output_tokens: None,
            answer_timeout: Duration::from_secs(300),
            max_reminders: 2,
            replan_max_new_steps: 3,
            max_undo_bytes: DEFAULT_MAX_UNDO_BYTES,
            compact_candidates: 2,
            compact_candidate_budget: Duration::from_secs(600),
        }
    }
}

/// Overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub base_url: Option<String>,
}

/// The settings a command works with.
#[derive(Clone)]
pub struct Config {
    /// Where each setting came from, for messages and `tick doctor`.
    pub sources: Sources,
    pub provider: Provider,
    pub model: Option<String>,
    pub plan_model: Option<String>,
    pub base_url: String,
    /// Where `base_url` came from, for messages: `TICK_BASE_URL`, a config file, a preset.
    pub base_url_source: String,
    /// The variable the key is read from (for messages; the key itself is below).
    pub api_key_env: Option<String>,
    pub api_key: Option<String>,
    pub limits: Limits,
    pub tool_calls: ToolCalls,
    pub planner: Planner,
    /// How `tick run` executes a step: the agent loop with tools (`agent`), or one
    /// schema-constrained edit of one of the step's files at a time (`compact`, for small
    /// models); `auto` decides as it does for the planner. Unset, it is the planner's setting.
    pub executor: Planner,
    /// `run_command`'s allow-list: tick's table plus the user's additions (and the flags
    /// either file refuses).
    pub run_command: AllowList,
    pub sandbox: crate::sandbox::Settings,
    /// The MCP servers of the person's file and, in a trusted repository, of its file (whose
    /// entry wins for a name): `crate::mcp`.
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::Server>,
    /// The hooks of the user's file and of the repository's, apart: which may run is
    /// `crate::hooks::HookSet::resolve`'s decision.
    pub hooks: crate::hook_entry::Configured,
    /// What of the repository's files was ignored because the person does not trust it (or
    /// it changed since): a front end says so in one line ([`Config::trust_warning`]).
    pub ignored: Option<Ignored>,
}

/// What an untrusted repository would have decided, and was not allowed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The repository's config file, as people see it.
    pub file: String,
    /// The keys and files ignored, as people write them (`` `base_url` ``,
    /// `` `.tasks/templates/TODO.md.j2` ``).
    pub keys: Vec<String>,
    /// The repository was trusted, and a file changed since.
    pub changed: bool,
}

impl Config {
    /// The one line that says what an untrusted repository's files would have decided, and
    /// how to let them: `None` when nothing was ignored.
    pub fn trust_warning(&self) -> Option<String> {
        let ignored = self.ignored.as_ref()?;
        let why = if ignored.changed {
            "its files changed since you trusted it"
        } else {
            "you have not trusted it"
        };
        Some(format!(
            "ignored {} from this repository ({why}); run `tick trust` to let its files decide \
             them, or set them in `~/.config/tick/config.yaml`",
            ignored.keys.join(", ")
        ))
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("sources", &self.sources)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("plan_model", &self.plan_model)
            .field("base_url", &self.base_url)
            .field("base_url_source", &self.base_url_source)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("limits", &self.limits)
            .field("tool_calls", &self.tool_calls)
            .field("planner", &self.planner)
            .field("executor", &self.executor)
            .field("run_command", &self.run_command)
            .field("sandbox", &self.sandbox)
            .field("mcp_servers", &self.mcp_servers)
            .field("ignored", &self.ignored)
            .field("hooks", &self.hooks)
            .finish()
    }
}

/// The user's own config file: `$XDG_CONFIG_HOME/tick/config.yaml`, else
/// `~/.config/tick/config.yaml`.
pub fn user_config_path(env: &Env) -> Option<PathBuf> {
    if let Some(dir) = env.var("TICK_CONFIG") {
        return Some(PathBuf::from(dir));
    }
    let base = env
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|home| Path::new(home).join(".config")))?;
    Some(base.join("tick").join("config.yaml"))
}

pub use crate::env::user_config_dir;

/// The person's config file ([`user_config_path`]), or the error saying tick cannot tell
/// where it is, with `hint` (what to do instead).
pub fn user_config_path_or(env: &Env, hint: &str) -> Result<PathBuf> {
    user_config_path(env).ok_or_else(|| {
        Error::input(
            "tick cannot tell where your config file is: neither `HOME` nor `XDG_CONFIG_HOME` is set",
        )
        .hint(hint)
    })
}

fn read_file_config(path: &Path, shown: &str) -> Result<FileConfig> {
    let Some(text) = fsx::read_capped(path, fsx::MAX_CONFIG_FILE)? else {
        return Ok(FileConfig::default());
    };
    if text.trim().is_empty()
        || text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Ok(FileConfig::default());
    }
    let config: FileConfig =
        crate::tasks::safe_yaml::from_str(&text, 0, "", "").map_err(|err| ConfigError::File {
            shown: shown.to_owned(),
            line: err.line,
            col: err.col,
            closest: error::closest_key(&err.message),
            message: err.message,
        })?;
    let section = |section, detail: String| ConfigError::Section {
        shown: shown.to_owned(),
        section,
        detail,
    };
    if let Some(hooks) = &config.hooks {
        crate::hook_entry::HookEntry::validate(hooks)
            .map_err(|err| section(Section::Hooks, err))?;
    }
    mcp_servers(&config, shown)?;
    if let Some(run_command) = &config.run_command {
        AllowList::with_entries(&run_command.allow)
            .map_err(|err| section(Section::RunCommand, err.to_string()))?;
    }
    Ok(config)
}

/// The MCP servers of one config file, checked; the error names the file and the key.
fn mcp_servers(
    config: &FileConfig,
    shown: &str,
) -> Result<std::collections::BTreeMap<String, crate::mcp::Server>> {
    let mut servers = std::collections::BTreeMap::new();
    for (name, entry) in config.mcp_servers.iter().flatten() {
        let server = crate::mcp::config::resolve(name, entry, shown).map_err(|err| {
            ConfigError::Section {
                shown: shown.to_owned(),
                section: Section::McpServers,
                detail: err,
            }
        })?;
        servers.insert(name.clone(), server);
    }
    Ok(servers)
}

fn merge(into: &mut FileConfig, from: FileConfig) {
    into.provider = from.provider.or(into.provider);
    into.model = from.model.or(into.model.take());
    into.plan_model = from.plan_model.or(into.plan_model.take());
    into.base_url = from.base_url.or(into.base_url.take());
    into.api_key_env = from.api_key_env.or(into.api_key_env.take());
    into.tool_calls = from.tool_calls.or(into.tool_calls);
    into.planner = from.planner.or(into.planner);
    into.executor = from.executor.or(into.executor);
    if let Some(limits) = from.limits {
        let base = into.limits.get_or_insert_with(FileLimits::default);
        base.max_turns = limits.max_turns.or(base.max_turns);
        base.max_tokens = limits.max_tokens.or(base.max_tokens);
        base.idle_timeout_s = limits.idle_timeout_s.or(base.idle_timeout_s);
        base.max_retries = limits.max_retries.or(base.max_retries);
        base.max_write_bytes = limits.max_write_bytes.or(base.max_write_bytes);
        base.max_tool_result_bytes = limits.max_tool_result_bytes.or(base.max_tool_result_bytes);
        base.max_transcript_entry_bytes = limits
            .max_transcript_entry_bytes
            .or(base.max_transcript_entry_bytes);
        base.max_output_tokens = limits.max_output_tokens.or(base.max_output_tokens);
        base.answer_timeout_s = limits.answer_timeout_s.or(base.answer_timeout_s);
        base.max_reminders = limits.max_reminders.or(base.max_reminders);
        base.replan_max_new_steps = limits.replan_max_new_steps.or(base.replan_max_new_steps);
        base.max_undo_bytes = limits.max_undo_bytes.or(base.max_undo_bytes);
        base.compact_candidates = limits.compact_candidates.or(base.compact_candidates);
        base.compact_candidate_budget_s = limits
            .compact_candidate_budget_s
            .or(base.compact_candidate_budget_s);
    }
    // Allow-list entries only ever add, so both files' entries count.
    if let Some(run_command) = from.run_command {
        into.run_command
            .get_or_insert_with(FileRunCommand::default)
            .allow
            .extend(run_command.allow);
    }
    if let Some(sandbox) = from.sandbox {
        let from = sandbox.table();
        let mut base = into
            .sandbox
            .take()
            .map(FileSandbox::table)
            .unwrap_or_default();
        base.enabled = from.enabled.or(base.enabled);
        base.network = from.network.or(base.network);
        base.writable = from.writable.or(base.writable);
        base.env = from.env.or(base.env);
        into.sandbox = Some(FileSandbox::Table(base));
    }
}

/// What an untrusted repository's `.tasks/config.yaml` may decide: what only tightens. The
/// rest is taken out and named, as people write it, for the one warning line:
///
/// - `provider`, `base_url`, `api_key_env`: where requests go and which credential is sent;
/// - a limit above the person's own (their file's, else tick's default): it would loosen;
/// - `run_command.allow` entries that add a program or subcommand (refusing more flags of
///   what is already allowed is kept);
/// - `sandbox` off, `sandbox.writable`, `sandbox.env` (more variables for commands), and
///   `sandbox.network: true` over the person's `false`.
///
/// The model's name (`model`, `plan_model`), `tool_calls`, `planner` and `executor` choose
/// how tick talks to the person's own server, not where or with what, and are kept.
fn tightening_only(
    mut project: FileConfig,
    user: &FileConfig,
    person_limits: &Limits,
    person_network: bool,
) -> (FileConfig, Vec<String>) {
    let mut ignored = Vec::new();
    if project.provider.take().is_some() {
        ignored.push("`provider`".to_owned());
    }
    if project.base_url.take().is_some() {
        ignored.push("`base_url`".to_owned());
    }
    if project.api_key_env.take().is_some() {
        ignored.push("`api_key_env`".to_owned());
    }
    // A server is a program tick would start, or a place it would send the workspace's
    // contents to: the person's decision.
    if project.mcp_servers.take().is_some_and(|m| !m.is_empty()) {
        ignored.push("`mcp_servers`".to_owned());
    }
    if let Some(limits) = &mut project.limits {
        lower_limits_only(limits, person_limits, &mut ignored);
    }
    if let Some(run_command) = &mut project.run_command {
        let user_entries = user.run_command.as_ref().map_or(&[][..], |r| &r.allow[..]);
        // The user's entries were checked as that file was read.
        let allowed = AllowList::with_entries(user_entries).unwrap_or_default();
        run_command.allow.retain(|entry| {
            let program = entry.program.trim();
            let widens = if allowed.programs().any(|p| p == program) {
                entry
                    .subcommands
                    .iter()
                    .find(|sub| !allowed.has_subcommand(program, sub))
                    .map(|sub| format!("`{program} {sub}`"))
            } else {
                Some(format!("`{program}`"))
            };
            if let Some(what) = &widens {
                ignored.push(format!("`run_command.allow` {what}"));
            }
            widens.is_none()
        });
    }
    if let Some(sandbox) = project.sandbox.take() {
        let mut table = sandbox.table();
        if table.enabled == Some(false) {
            table.enabled = None;
            ignored.push("`sandbox: off`".to_owned());
        }
        if table.writable.take().is_some_and(|w| !w.is_empty()) {
            ignored.push("`sandbox.writable`".to_owned());
        }
        if table.env.take().is_some_and(|e| !e.is_empty()) {
            ignored.push("`sandbox.env`".to_owned());
        }
        if table.network == Some(true) {
            table.network = None;
            if !person_network {
                ignored.push("`sandbox.network: true`".to_owned());
            }
        }
        project.sandbox = Some(FileSandbox::Table(table));
    }
    (project, ignored)
}

/// Keeps each of the repository's limits that is at most the person's, and names the others.
fn lower_limits_only(limits: &mut FileLimits, person: &Limits, ignored: &mut Vec<String>) {
    fn keep<T: PartialOrd + Copy>(
        value: &mut Option<T>,
        person: T,
        name: &str,
        ignored: &mut Vec<String>,
    ) {
        if value.is_some_and(|v| v > person) {
            *value = None;
            ignored.push(format!("`limits.{name}`"));
        }
    }
    keep(
        &mut limits.max_turns,
        person.max_turns,
        "max_turns",
        ignored,
    );
    keep(
        &mut limits.max_tokens,
        person.max_tokens,
        "max_tokens",
        ignored,
    );
    keep(
        &mut limits.idle_timeout_s,
        person.idle_timeout.as_secs(),
        "idle_timeout_s",
        ignored,
    );
    keep(
        &mut limits.max_retries,
        person.max_retries,
        "max_retries",
        ignored,
    );
    keep(
        &mut limits.max_write_bytes,
        person.max_write_bytes,
        "max_write_bytes",
        ignored,
    );
    keep(
        &mut limits.max_tool_result_bytes,
        person.max_tool_result_bytes,
        "max_tool_result_bytes",
        ignored,
    );
    keep(
        &mut limits.max_transcript_entry_bytes,
        person.max_transcript_entry_bytes,
        "max_transcript_entry_bytes",
        ignored,
    );
    keep(
        &mut limits.max_output_tokens,
        person.max_output_tokens.unwrap_or(BUILD_OUTPUT_TOKENS),
        "max_output_tokens",
        ignored,
    );
    keep(
        &mut limits.answer_timeout_s,
        person.answer_timeout.as_secs(),
        "answer_timeout_s",
        ignored,
    );
    keep(
        &mut limits.max_reminders,
        person.max_reminders,
        "max_reminders",
        ignored,
    );
    keep(
        &mut limits.replan_max_new_steps,
        person.replan_max_new_steps,
        "replan_max_new_steps",
        ignored,
    );
    // Before-images are kept on the person's disk: a clone may not ask for more of them.
    keep(
        &mut limits.max_undo_bytes,
        person.max_undo_bytes,
        "max_undo_bytes",
        ignored,
    );
    // Each candidate runs the step's checks again on the person's machine.
    keep(
        &mut limits.compact_candidates,
        person.compact_candidates,
        "compact_candidates",
        ignored,
    );
    keep(
        &mut limits.compact_candidate_budget_s,
        person.compact_candidate_budget.as_secs(),
        "compact_candidate_budget_s",
        ignored,
    );
}

/// The sandbox settings from the files, with `~/` in `writable` expanded. Relative paths
/// are refused: what they would mean depends on where tick runs.
fn sandbox_settings(file: Option<FileSandbox>, env: &Env) -> Result<crate::sandbox::Settings> {
    let table = file.map(FileSandbox::table).unwrap_or_default();
    let defaults = crate::sandbox::Settings::default();
    let mut writable = Vec::new();
    for entry in table.writable.unwrap_or_default() {
        let path = match (entry.strip_prefix("~/"), env.var("HOME")) {
            (Some(rest), Some(home)) => Path::new(home).join(rest),
            _ => PathBuf::from(&entry),
        };
        if !path.is_absolute() {
            return Err(ConfigError::WritableNotAbsolute(entry).into());
        }
        writable.push(path);
    }
    Ok(crate::sandbox::Settings {
        enabled: table.enabled.unwrap_or(defaults.enabled),
        network: table.network.unwrap_or(defaults.network),
        writable,
        env: table.env.unwrap_or_default(),
    })
}

/// Resolves the settings for a workspace whose `.tasks/config.yaml` is `project_config`
/// (shown to people as `project_shown`), in a repository the person trusts as `trust` says.
pub fn resolve(
    project_config: &Path,
    project_shown: &str,
    trust: &TrustState,
    env: &Env,
    flags: &Flags,
) -> Result<Config> {
    let mut file = FileConfig::default();
    let mut user_shown = String::new();
    if let Some(user) = user_config_path(env) {
        user_shown = user.display().to_string();
        file = read_file_config(&user, &user_shown)?;
    }
    let user_file = file.clone();
    let env_provider = env_provider(env)?;
    // The repository's file is more specific than the user's: it wins, in what it may decide.
    let mut project_file = read_file_config(project_config, project_shown)?;
    let mut ignored = None;
    if !trust.is_trusted() {
        let (kept, keys) = untrusted_project(project_file, &user_file, env, flags, env_provider)?;
        project_file = kept;
        if !keys.is_empty() {
            ignored = Some(Ignored {
                file: project_shown.to_owned(),
                keys,
                changed: matches!(trust, TrustState::Changed { .. }),
            });
        }
    }
    // The repository's entry for a server replaces the person's of the same name.
    let mut mcp = mcp_servers(&user_file, &user_shown)?;
    mcp.extend(mcp_servers(&project_file, project_shown)?);
    merge(&mut file, project_file.clone());

    let provider = flags
        .provider
        .or(env_provider)
        .or(file.provider)
        .unwrap_or(Provider::OpenAi);
    let model = flags
        .model
        .clone()
        .or_else(|| env.var("TICK_MODEL").map(str::to_owned))
        .or(file.model);
    let plan_model = env
        .var("TICK_PLAN_MODEL")
        .map(str::to_owned)
        .or(file.plan_model);
    let (base_url, base_url_source) =
        base_url(flags, env, file.base_url.clone(), provider, env_provider);
    let api_key_env = file
        .api_key_env
        .clone()
        .or_else(|| provider.default_key_env().map(str::to_owned));
    let api_key = api_key_env
        .as_deref()
        .and_then(|name| env.var(name))
        .or_else(|| env.var("TICK_API_KEY"))
        .map(str::to_owned);
    // Whatever tick writes from here on, the key is not in it.
    if let Some(key) = &api_key {
        crate::redact::register(key);
    }
    let tool_calls = tool_calls(env, file.tool_calls)?;
    let planner = planner(env, file.planner, provider)?;
    let executor = executor(env, file.executor, planner)?;
    let allow = file.run_command.map(|r| r.allow).unwrap_or_default();
    // Each file's entries were checked as it was read; together they can only fail on a
    // conflict between the files, which is reported without a file.
    let run_command = AllowList::with_entries(&allow)
        .map_err(|err| Error::input(err.to_string()).hint("the file was not changed"))?;
    let sandbox = sandbox_from(file.sandbox, env)?;
    let limits = limits(&file.limits.unwrap_or_default(), &base_url);
    Ok(Config {
        sources: sources(
            &Layers {
                flags,
                env,
                env_provider,
                project: (&project_file, project_shown),
                user: (&user_file, &user_shown),
            },
            api_key_env.as_deref(),
        ),
        provider,
        model,
        plan_model,
        base_url: base_url.trim_end_matches('/').to_owned(),
        base_url_source,
        api_key_env,
        api_key,
        limits,
        tool_calls,
        planner,
        executor,
        run_command,
        sandbox,
        mcp_servers: mcp,
        ignored,
        hooks: crate::hook_entry::Configured {
            user: user_file.hooks.clone().unwrap_or_default(),
            project: project_file.hooks.clone().unwrap_or_default(),
            project_file: project_shown.to_owned(),
            project_trusted: trust.is_trusted(),
        },
    })
}

/// An untrusted repository's `project` file cut down to what tightens the person's own
/// settings (their file, the environment and flags, without the repository's): see
/// [`tightening_only`].
fn untrusted_project(
    project: FileConfig,
    user: &FileConfig,
    env: &Env,
    flags: &Flags,
    env_provider: Option<Provider>,
) -> Result<(FileConfig, Vec<String>)> {
    let provider = flags
        .provider
        .or(env_provider)
        .or(user.provider)
        .unwrap_or(Provider::OpenAi);
    let (base_url, _) = base_url(flags, env, user.base_url.clone(), provider, env_provider);
    let person_limits = limits(&user.limits.clone().unwrap_or_default(), &base_url);
    let person_sandbox = sandbox_from(user.sandbox.clone(), env)?;
    Ok(tightening_only(
        project,
        user,
        &person_limits,
        person_sandbox.network,
    ))
}

/// The error for tick's variable `var` set to `value`, which is not `not` ("a provider").
fn variable(var: &'static str, value: &str, not: &'static str) -> Error {
    let value = value.to_owned();
    ConfigError::Variable { var, value, not }.into()
}

/// `TICK_PROVIDER`, when set.
fn env_provider(env: &Env) -> Result<Option<Provider>> {
    match env.var("TICK_PROVIDER") {
        Some(text) => {
            Ok(Some(Provider::parse(text).ok_or_else(|| {
                variable("TICK_PROVIDER", text, "a provider")
            })?))
        }
        None => Ok(None),
    }
}

/// The server's URL and where it came from. A provider chosen on the command line or in the
/// environment brings its own server unless a URL is given at the same level or later.
fn base_url(
    flags: &Flags,
    env: &Env,
    file_url: Option<String>,
    provider: Provider,
    env_provider: Option<Provider>,
) -> (String, String) {
    if let Some(url) = flags.base_url.clone() {
        (url, "`--base-url`".to_owned())
    } else if let Some(url) = env.var("TICK_BASE_URL") {
        (url.to_owned(), "`TICK_BASE_URL`".to_owned())
    } else if let Some(url) =
        file_url.filter(|_| flags.provider.is_none() && env_provider.is_none())
    {
        (
            url,
            "`base_url` in `.tasks/config.yaml` or `~/.config/tick/config.yaml`".to_owned(),
        )
    } else {
        (
            provider.default_base_url().to_owned(),
            format!("the default of `provider: {}`", provider.as_str()),
        )
    }
}

/// How tool calls are read: `TICK_TOOL_CALLS`, else the files' `tool_calls`.
fn tool_calls(env: &Env, file_value: Option<ToolCalls>) -> Result<ToolCalls> {
    Ok(match env.var("TICK_TOOL_CALLS") {
        Some(text) => match text.trim().to_ascii_lowercase().as_str() {
            "native" => ToolCalls::Native,
            "text" => ToolCalls::Text,
            "auto" => ToolCalls::Auto,
            _ => {
                return Err(variable("TICK_TOOL_CALLS", text, "a tool-call mode"));
            }
        },
        None => file_value.unwrap_or_default(),
    })
}

/// The sandbox from the files' `sandbox:`, then `TICK_SANDBOX`.
fn sandbox_from(file: Option<FileSandbox>, env: &Env) -> Result<crate::sandbox::Settings> {
    let mut sandbox = sandbox_settings(file, env)?;
    match env.var("TICK_SANDBOX") {
        None => {}
        Some("on" | "1" | "true") => sandbox.enabled = true,
        Some("off" | "0" | "false") => sandbox.enabled = false,
        Some(other) => {
            return Err(variable("TICK_SANDBOX", other, "`on` or `off`"));
        }
    }
    Ok(sandbox)
}

/// The files' `limits:` over the defaults, each kept within what works.
fn limits(limits: &FileLimits, base_url: &str) -> Limits {
    let defaults = Limits::default();
    Limits {
        max_turns: limits.max_turns.unwrap_or(defaults.max_turns).max(1),
        max_tokens: limits.max_tokens.unwrap_or(defaults.max_tokens),
        idle_timeout: limits
            .idle_timeout_s
            .map_or(defaults.idle_timeout, Duration::from_secs),
        max_retries: limits.max_retries.unwrap_or(defaults.max_retries),
        max_write_bytes: limits.max_write_bytes.unwrap_or(defaults.max_write_bytes),
        // A result too small to say how to get the rest would only confuse the model.
        max_tool_result_bytes: limits
            .max_tool_result_bytes
            .unwrap_or(defaults.max_tool_result_bytes)
            .max(1024),
        max_transcript_entry_bytes: limits
            .max_transcript_entry_bytes
            .unwrap_or(defaults.max_transcript_entry_bytes)
            .max(1024),
        max_output_tokens: limits.max_output_tokens.map(|n| n.max(1)),
        answer_timeout: limits.answer_timeout_s.map_or_else(
            || {
                // A model on this machine may write a few tokens a second: a whole plan
                // can take minutes without looping.
                if is_loopback(base_url) {
                    LOCAL_ANSWER_TIMEOUT
                } else {
                    defaults.answer_timeout
                }
            },
            |s| Duration::from_secs(s.max(1)),
        ),
        max_reminders: limits.max_reminders.unwrap_or(defaults.max_reminders),
        replan_max_new_steps: limits
            .replan_max_new_steps
            .unwrap_or(defaults.replan_max_new_steps),
        max_undo_bytes: limits.max_undo_bytes.unwrap_or(defaults.max_undo_bytes),
        compact_candidates: limits
            .compact_candidates
            .unwrap_or(defaults.compact_candidates),
        compact_candidate_budget: limits
            .compact_candidate_budget_s
            .map_or(defaults.compact_candidate_budget, Duration::from_secs),
    }
}

/// The settings for the workspace of `store` as resolved, complete or not (`tick doctor`).
///
/// Adds the MCP server `name` to the person's own config file (`tick mcp add`): the entry
/// is checked, the whole file as it would be is read back, and only then is the file replaced
/// in one step. The file's other lines, comments included, are kept. Returns the file's path.
pub fn add_mcp_server(
    env: &Env,
    name: &str,
    entry: &crate::mcp::config::FileServer,
) -> Result<PathBuf> {
    let path = user_config_path_or(
        env,
        "set `TICK_CONFIG` to the file's path; nothing was written",
    )?;
    let shown = path.display().to_string();
    let unchanged = "the file was not changed";
    crate::mcp::config::resolve(name, entry, &shown)
        .map_err(|err| Error::input(err).hint(format!("see `docs/mcp.md`; {unchanged}")))?;
    let current = read_file_config(&path, &shown)?;
    if current
        .mcp_servers
        .as_ref()
        .is_some_and(|m| m.contains_key(name))
    {
        let (shown, name) = (shown, name.to_owned());
        return Err(ConfigError::McpServerExists { shown, name }.into());
    }
    let text = fsx::read_capped(&path, fsx::MAX_CONFIG_FILE)?.unwrap_or_default();
    let body = serde_yaml::to_string(entry).map_err(|err| ConfigError::Entry(err.to_string()))?;
    let by_hand = |why| ConfigError::McpByHand {
        shown: shown.clone(),
        why,
    };
    let new = with_mcp_entry(&text, name, &body).ok_or_else(|| by_hand(ByHand::NotABlock))?;
    // Read back as tick will read it: a file that would not load is never written.
    let parsed: FileConfig = crate::tasks::safe_yaml::from_str(&new, 0, "", "")
        .map_err(|err| by_hand(ByHand::WouldNotRead(err.message)))?;
    if parsed.mcp_servers.as_ref().and_then(|m| m.get(name)) != Some(entry) {
        return Err(by_hand(ByHand::NotTheSame).into());
    }
    if let Some(dir) = path.parent() {
        fsx::create_dir_all(dir)?;
    }
    fsx::write_atomic(&path, new.as_bytes())?;
    Ok(path)
}

/// `text` (a config file) with the server `name` (its entry as YAML, `body`) added under
/// `mcp_servers:`: after that line when the file has one in block style, else at the end.
/// `None` when the file's `mcp_servers:` is written in another style.
fn with_mcp_entry(text: &str, name: &str, body: &str) -> Option<String> {
    let key = serde_yaml::to_string(name).ok()?;
    let key = key.trim_end();
    let mut entry = format!("  {key}:\n");
    for line in body.lines() {
        entry.push_str("    ");
        entry.push_str(line);
        entry.push('\n');
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = lines.iter().position(|line| {
        line.strip_prefix("mcp_servers:")
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
    });
    if let Some(at) = at {
        // The entries must be indented as the first one already is.
        let first = lines[at + 1..]
            .iter()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if let Some(first) = first
            && first.starts_with(' ')
            && !first.starts_with("  ")
        {
            return None;
        }
        if let Some(first) = first
            && first.starts_with("   ")
        {
            return None;
        }
        let mut out: String = lines[..=at].concat();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&entry);
        out.push_str(&lines[at + 1..].concat());
        return Some(out);
    }
    if text.lines().any(|l| l.starts_with("mcp_servers:")) {
        return None;
    }
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("mcp_servers:\n");
    out.push_str(&entry);
    Some(out)
}

/// The repository's files count as far as the person trusts it ([`crate::tasks::Store::trust`]):
/// untrusted, its templates and prompts are named among what was ignored as well.
pub fn for_workspace(store: &crate::tasks::Store, env: &Env, flags: &Flags) -> Result<Config> {
    let path = store.config_path();
    let trust = store.trust();
    let mut config = resolve(&path, &store.rel(&path), trust, env, flags)?;
    if !trust.is_trusted() {
        let config_rel = store.rel(&path);
        let shipped: Vec<String> = crate::trust::shipped(store.root())
            .into_keys()
            .filter(|rel| *rel != config_rel)
            .map(|rel| format!("`{rel}`"))
            .collect();
        if !shipped.is_empty() {
            config
                .ignored
                .get_or_insert_with(|| Ignored {
                    file: config_rel,
                    keys: Vec::new(),
                    changed: matches!(trust, TrustState::Changed { .. }),
                })
                .keys
                .extend(shipped);
        }
    }
    Ok(config)
}

/// The settings for talking to a model, in the workspace of `store`: files, environment, then
/// `flags`. Every command that talks to a model and the session resolve them here.
///
/// Fails, before anything is written, with one message naming everything still missing (a
/// model, a key) and the ways to set it. Opens no connection: whether a server on this
/// machine listens is the engine's question (`engine::Engine::model_config`).
pub fn for_model(store: &crate::tasks::Store, env: &Env, flags: &Flags) -> Result<Config> {
    complete(for_workspace(store, env, flags)?, store)
}

/// `config` when it can talk to a model; else the error naming what is missing.
pub fn complete(config: Config, store: &crate::tasks::Store) -> Result<Config> {
    let missing = config.missing(true);
    if !missing.is_empty() {
        let path = store.config_path();
        return Err(config.missing_error(&missing, &store.rel(&path)));
    }
    Ok(config)
}

/// Local by default: with no provider, base URL or key set anywhere (files, environment,
/// flags), the settings for the first server on this machine that serves a model
/// ([`crate::llm::discover`], within its short budget), as if `--provider` and `--base-url`
/// (and `--model`, unless a model is set) had named it (flags name none of these here); `config` as it was when none does.
/// The servers asked are `TICK_LOCAL_SERVERS`, when set, else the usual ports.
pub fn with_local_server(config: Config, store: &crate::tasks::Store, env: &Env) -> Result<Config> {
    use crate::llm::discover::{self, ServerKind};
    let s = &config.sources;
    if !(s.provider == Source::Default
        && s.base_url == Source::Default
        && s.api_key == Source::Unset)
    {
        return Ok(config);
    }
    let candidates = match env.var(discover::CANDIDATES_VAR) {
        Some(text) => discover::parse_candidates(text).map_err(|err| ConfigError::Candidates {
            var: discover::CANDIDATES_VAR,
            detail: err,
        })?,
        None => discover::default_candidates(),
    };
    let Some(found) = discover::first_serving_now(&candidates, discover::PROBE_BUDGET) else {
        return Ok(config);
    };
    let provider = match found.kind {
        ServerKind::LlamaCpp => Provider::LlamaCpp,
        ServerKind::Ollama => Provider::Ollama,
        ServerKind::LmStudio | ServerKind::Vllm => Provider::OpenAi,
    };
    let model_found = config.model.is_none();
    let as_flags = Flags {
        provider: Some(provider),
        base_url: Some(found.base_url.clone()),
        model: config
            .model
            .clone()
            .or_else(|| found.models.first().cloned()),
    };
    let mut resolved = for_workspace(store, env, &as_flags)?;
    let by_probe = Source::Found(found.kind.name().to_owned());
    resolved.sources.provider = by_probe.clone();
    resolved.sources.base_url = by_probe.clone();
    resolved.sources.model = if model_found {
        by_probe
    } else {
        config.sources.model.clone()
    };
    resolved.base_url_source = format!("tick's probe of this machine ({})", found.kind.name());
    Ok(resolved)
}

impl Config {
    /// The one line that says a server was found rather than configured, when it was.
    pub fn found_line(&self) -> Option<String> {
        let Source::Found(name) = &self.sources.base_url else {
            return None;
        };
        let model = self.model.as_deref().unwrap_or("");
        Some(format!(
            "using {name} at `{}` with model `{model}`: found on this machine, as nothing is configured",
            self.base_url
        ))
    }
}

pub use crate::llm::is_loopback_url as is_loopback;

impl Config {
    /// The hint when the server cannot be reached: which URL, and what set it.
    pub fn server_hint(&self) -> String {
        if is_loopback(&self.base_url) {
            format!(
                "is the model server running? tick connects to `{}`, set by {}",
                self.base_url, self.base_url_source
            )
        } else {
            // A hosted API is not "running" or not: its name, the network or a proxy is wrong.
            format!(
                "check the address and this machine's network (DNS, proxy, firewall): tick \
                 connects to `{}`, set by {}",
                self.base_url, self.base_url_source
            )
        }
    }

    /// The model for planning: `plan_model` if set, else `model`.
    pub fn planner_model(&self) -> Result<String> {
        self.plan_model
            .clone()
            .or_else(|| self.model.clone())
            .ok_or_else(|| {
                Error::input("no model is configured").hint(
                    "set `model:` in `.tasks/config.yaml`, or `TICK_MODEL`, or pass `--model`",
                )
            })
    }

    /// The HTTP client settings, checking that a key is there when the server needs one.
    pub fn client_config(&self) -> Result<ClientConfig> {
        let key_env = self
            .api_key_env
            .clone()
            .unwrap_or_else(|| "TICK_API_KEY".to_owned());
        if self.api_key.is_none()
            && !is_loopback(&self.base_url)
            && self.provider.default_key_env().is_some()
        {
            return Err(ConfigError::NoApiKey(key_env).into());
        }
        let mut client = ClientConfig::new(self.provider.kind(), self.base_url.clone());
        client.api_key.clone_from(&self.api_key);
        client.api_key_env = key_env;
        client.idle_timeout = self.limits.idle_timeout;
        client.max_retries = self.limits.max_retries;
        client.answer_timeout = self.limits.answer_timeout;
        client.max_answer_bytes = ClientConfig::answer_cap_for(self.limits.max_write_bytes);
        Ok(client)
    }
}

/// Where one setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Source {
    /// A command-line flag, like `--model`.
    Flag(String),
    /// An environment variable, like `TICK_MODEL`.
    Env(String),
    /// A config file, as shown to people (`.tasks/config.yaml`).
    File(String),
    /// tick's default (for the provider, when it has one).
    Default,
    /// Set nowhere.
    Unset,
    /// Nothing set it: tick found this server (by its kind's name) answering on this machine.
    Found(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(name) => write!(f, "flag `{name}`"),
            Source::Env(name) => write!(f, "environment `{name}`"),
            Source::File(name) => write!(f, "`{name}`"),
            Source::Default => f.write_str("default"),
            Source::Unset => f.write_str("not set"),
            Source::Found(name) => write!(f, "found on this machine: {name}"),
        }
    }
}

/// Where each resolved setting came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Sources {
    pub provider: Source,
    pub model: Source,
    pub plan_model: Source,
    pub base_url: Source,
    pub api_key: Source,
}

/// A setting a model command needs and does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Model,
    ApiKey,
}

/// The sources `resolve` reads, for telling which one set a value.
struct Layers<'a> {
    flags: &'a Flags,
    env: &'a Env,
    env_provider: Option<Provider>,
    project: (&'a FileConfig, &'a str),
    user: (&'a FileConfig, &'a str),
}

impl Layers<'_> {
    /// The file that set a key: the repository's when it sets it, else the user's.
    fn file(&self, set: impl Fn(&FileConfig) -> bool) -> Source {
        if set(self.project.0) {
            Source::File(self.project.1.to_owned())
        } else if set(self.user.0) {
            Source::File(self.user.1.to_owned())
        } else {
            Source::Unset
        }
    }

    fn env(&self, name: &str) -> Option<Source> {
        self.env.var(name).map(|_| Source::Env(name.to_owned()))
    }
}

/// Where each setting `resolve` settles on comes from, by the same precedence.
fn sources(layers: &Layers<'_>, api_key_env: Option<&str>) -> Sources {
    let flag = |set: bool, name: &str| set.then(|| Source::Flag(name.to_owned()));
    let or_default = |source: Source| match source {
        Source::Unset => Source::Default,
        found => found,
    };
    let flags = layers.flags;
    let provider_chosen = flags.provider.is_some() || layers.env_provider.is_some();
    Sources {
        provider: flag(flags.provider.is_some(), "--provider")
            .or_else(|| layers.env("TICK_PROVIDER"))
            .unwrap_or_else(|| or_default(layers.file(|f| f.provider.is_some()))),
        model: flag(flags.model.is_some(), "--model")
            .or_else(|| layers.env("TICK_MODEL"))
            .unwrap_or_else(|| layers.file(|f| f.model.is_some())),
        plan_model: layers
            .env("TICK_PLAN_MODEL")
            .unwrap_or_else(|| layers.file(|f| f.plan_model.is_some())),
        base_url: flag(flags.base_url.is_some(), "--base-url")
            .or_else(|| layers.env("TICK_BASE_URL"))
            .unwrap_or_else(|| {
                // A provider chosen later brings its own server (see `resolve`).
                if provider_chosen {
                    Source::Default
                } else {
                    or_default(layers.file(|f| f.base_url.is_some()))
                }
            }),
        api_key: api_key_env
            .and_then(|name| layers.env(name))
            .or_else(|| layers.env("TICK_API_KEY"))
            .unwrap_or(Source::Unset),
    }
}

impl Config {
    /// What a model command cannot do without, all at once: a model (for planning, a
    /// `plan_model` is enough) and, for a server off this machine that needs one, a key.
    pub fn missing(&self, planning: bool) -> Vec<Missing> {
        let mut missing = Vec::new();
        let has_model = self.model.is_some() || (planning && self.plan_model.is_some());
        if !has_model {
            missing.push(Missing::Model);
        }
        if self.needs_key() {
            missing.push(Missing::ApiKey);
        }
        missing
    }

    /// Whether the server is off this machine, needs a key, and has none (as
    /// [`Config::client_config`] checks).
    fn needs_key(&self) -> bool {
        self.api_key.is_none()
            && !is_loopback(&self.base_url)
            && self.provider.default_key_env().is_some()
    }

    /// The one message for a model command that cannot start: everything missing, and every
    /// way to set it. `config_shown` is the repository's config file as people see it.
    pub fn missing_error(&self, missing: &[Missing], config_shown: &str) -> Error {
        let key_env = self
            .api_key_env
            .clone()
            .unwrap_or_else(|| "TICK_API_KEY".to_owned());
        let mut what = Vec::new();
        for item in missing {
            what.push(match item {
                Missing::Model => "a model".to_owned(),
                Missing::ApiKey => format!("an API key (`{key_env}` is not set)"),
            });
        }
        let nothing_chosen =
            self.sources.provider == Source::Default && self.sources.base_url == Source::Default;
        let message = if nothing_chosen && self.api_key.is_none() {
            // Local by default found nothing: say so before what a hosted API would need.
            "tick cannot talk to a model yet: no model server answers on this machine (tick \
             asked llama.cpp at port 8080, Ollama 11434, LM Studio 1234, vLLM 8000) and none is \
             configured"
                .to_owned()
        } else {
            format!(
                "tick cannot talk to a model yet: it needs {}",
                what.join(" and ")
            )
        };
        let mut settings = format!(
            "now: provider `{}` ({}), base URL `{}` ({}), model {}",
            self.provider.as_str(),
            self.sources.provider,
            self.base_url,
            self.sources.base_url,
            match &self.model {
                Some(model) => format!("`{model}` ({})", self.sources.model),
                None => "not set".to_owned(),
            },
        );
        if missing.contains(&Missing::ApiKey) {
            settings.push_str(&format!(", key from `{key_env}` (not set)"));
        }
        let ways = [
            "set it up in one of these ways:".to_owned(),
            "  1. no key: `tick model setup` builds and starts a model on this machine (once), \
             and tick finds it by itself"
                .to_owned(),
            format!(
                "  2. `tick init`, then edit `{config_shown}` (`provider`, `model`, `base_url`, `api_key_env`)"
            ),
            format!(
                "  3. environment: `TICK_PROVIDER`, `TICK_MODEL`, `TICK_BASE_URL`, and the key in `{key_env}`"
            ),
            "  4. flags: `--provider`, `--model`, `--base-url`".to_owned(),
            "a local server needs no key: `--provider ollama --model qwen3` (Ollama at \
             http://127.0.0.1:11434/v1) or `--provider llamacpp --model local` (llama.cpp at \
             http://127.0.0.1:8080/v1)"
                .to_owned(),
        ];
        Error::input(message)
            .hint(settings)
            .hint(ways.join("\n"))
            .hint(
                "to try tick without a model, write the plan yourself: `tick plan --from plan.md`; \
                 `tick doctor` checks the setup; nothing was written",
            )
    }
}

/// The planner: `TICK_PLANNER`, else the file's `planner:`, else `auto` for a local server
/// (`llamacpp`, `ollama`) and `agent` for the rest.
fn planner(env: &Env, from_file: Option<Planner>, provider: Provider) -> Result<Planner> {
    Ok(match env.var("TICK_PLANNER").map(str::trim) {
        Some("compact") => Planner::Compact,
        Some("agent") => Planner::Agent,
        Some("auto") => Planner::Auto,
        Some(other) => {
            return Err(variable("TICK_PLANNER", other, "a planner"));
        }
        None => from_file.unwrap_or(match provider {
            Provider::LlamaCpp | Provider::Ollama => Planner::Auto,
            Provider::OpenAi | Provider::Anthropic => Planner::Agent,
        }),
    })
}

/// The executor: `TICK_EXECUTOR`, else the file's `executor:`, else the planner's setting (a
/// model small enough to plan compactly executes compactly too).
fn executor(env: &Env, from_file: Option<Planner>, planner: Planner) -> Result<Planner> {
    Ok(match env.var("TICK_EXECUTOR").map(str::trim) {
        Some("compact") => Planner::Compact,
        Some("agent") => Planner::Agent,
        Some("auto") => Planner::Auto,
        Some(other) => {
            return Err(variable("TICK_EXECUTOR", other, "an executor"));
        }
        None => from_file.unwrap_or(planner),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn env(vars: &[(&str, &str)], home: &Path) -> Env {
        let mut map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        map.insert("HOME".into(), home.display().to_string());
        Env::fixed(home.to_path_buf(), map, chrono::DateTime::UNIX_EPOCH)
    }

    /// A home with the person's config file `user` and a repository's file `project` (its
    /// path returned) in one temporary directory.
    fn both_files(user: &str, project: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let user_path = dir.path().join(".config/tick/config.yaml");
        std::fs::create_dir_all(user_path.parent().unwrap()).unwrap();
        std::fs::write(&user_path, user).unwrap();
        let project_path = dir.path().join("config.yaml");
        std::fs::write(&project_path, project).unwrap();
        (dir, project_path)
    }

    /// Resolves `project` (shown as `config.yaml`) under `vars`, with no flags.
    fn resolve_project(project: &Path, vars: &[(&str, &str)], home: &Path) -> Result<Config> {
        resolve_trusted(project, &env(vars, home))
    }

    /// The settings from `project` as a trusted repository's file, in `env`.
    fn resolve_trusted(project: &Path, env: &Env) -> Result<Config> {
        resolve(
            project,
            "config.yaml",
            &TrustState::Trusted,
            env,
            &Flags::default(),
        )
    }

    #[test]
    fn a_hosted_api_that_cannot_be_reached_is_not_a_server_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let hint = |url: &str| {
            let config = resolve(
                &dir.path().join("none.yaml"),
                "none.yaml",
                &TrustState::Trusted,
                &env(&[("TICK_BASE_URL", url)], dir.path()),
                &Flags::default(),
            )
            .unwrap();
            config.server_hint()
        };
        let local = hint("http://127.0.0.1:8080/v1");
        assert!(local.starts_with("is the model server running?"), "{local}");
        let hosted = hint("https://api.example.com/v1");
        assert!(
            hosted.starts_with("check the address and this machine's network"),
            "{hosted}"
        );
        assert!(
            hosted.contains("`https://api.example.com/v1`, set by"),
            "{hosted}"
        );
    }

    /// Resolves `project` as an untrusted repository's file, under `vars`.
    fn untrusted(project: &Path, vars: &[(&str, &str)], home: &Path) -> Result<Config> {
        resolve(
            project,
            ".tasks/config.yaml",
            &TrustState::Untrusted,
            &env(vars, home),
            &Flags::default(),
        )
    }

    fn ignored_keys(config: &Config) -> Vec<String> {
        config
            .ignored
            .as_ref()
            .map(|i| i.keys.clone())
            .unwrap_or_default()
    }

    /// Issue 25, finding 1: an untrusted clone's file cannot send the person's key to its own
    /// server; the trusted one can choose its server.
    #[test]
    fn an_untrusted_repository_cannot_choose_the_server_or_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(
            &project,
            "provider: openai
base_url: http://203.0.113.9/v1
api_key_env: GITHUB_TOKEN
model: theirs
",
        )
        .unwrap();
        let vars = [
            ("GITHUB_TOKEN", "ghp-secret"),
            ("OPENAI_API_KEY", "sk-mine"),
        ];
        let config = untrusted(&project, &vars, dir.path()).unwrap();
        assert_eq!(config.base_url, "https://api.openai.com/v1");
        assert_eq!(config.api_key.as_deref(), Some("sk-mine"));
        assert_eq!(
            config.model.as_deref(),
            Some("theirs"),
            "the model name applies"
        );
        assert_eq!(
            ignored_keys(&config),
            ["`provider`", "`base_url`", "`api_key_env`"]
        );
        let warning = config.trust_warning().unwrap();
        assert_eq!(
            warning,
            "ignored `provider`, `base_url`, `api_key_env` from this repository (you have not \
             trusted it); run `tick trust` to let its files decide them, or set them in \
             `~/.config/tick/config.yaml`"
        );
        let changed = resolve(
            &project,
            ".tasks/config.yaml",
            &TrustState::Changed { files: vec![] },
            &env(&vars, dir.path()),
            &Flags::default(),
        )
        .unwrap();
        assert!(
            changed
                .trust_warning()
                .unwrap()
                .contains("changed since you trusted it")
        );
        let trusted = resolve(
            &project,
            ".tasks/config.yaml",
            &TrustState::Trusted,
            &env(&vars, dir.path()),
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(trusted.base_url, "http://203.0.113.9/v1");
        assert_eq!(trusted.api_key.as_deref(), Some("ghp-secret"));
        assert_eq!(trusted.ignored, None);
        assert_eq!(trusted.trust_warning(), None);
    }

    /// Issue 28: a repository's MCP servers start only once the person trusts it; trusted,
    /// its entry replaces the person's of the same name; a bad entry names file and key.
    #[test]
    fn mcp_servers_come_from_the_person_or_a_trusted_repository() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.yaml");
        std::fs::write(&user, "mcp_servers:\n  docs:\n    command: mine\n").unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(
            &project,
            "mcp_servers:\n  docs:\n    command: theirs\n  evil:\n    url: http://203.0.113.9/\n",
        )
        .unwrap();
        let user_var = user.display().to_string();
        let vars = [("TICK_CONFIG", user_var.as_str())];
        let config = untrusted(&project, &vars, dir.path()).unwrap();
        assert_eq!(config.mcp_servers.keys().collect::<Vec<_>>(), ["docs"]);
        assert_eq!(config.mcp_servers["docs"].describe(), "mine");
        assert_eq!(ignored_keys(&config), ["`mcp_servers`"]);
        let trusted = resolve_trusted(&project, &env(&vars, dir.path())).unwrap();
        assert_eq!(
            trusted.mcp_servers.keys().collect::<Vec<_>>(),
            ["docs", "evil"]
        );
        assert_eq!(trusted.mcp_servers["docs"].describe(), "theirs");
        assert_eq!(trusted.mcp_servers["docs"].file, "config.yaml");

        std::fs::write(
            &user,
            "mcp_servers:\n  docs:\n    command: a\n    url: http://h/\n",
        )
        .unwrap();
        let err = resolve_trusted(&project, &env(&vars, dir.path())).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "`{user_var}`: `mcp_servers.docs`: set `command` (a stdio server) or `url` \
                 (streamable HTTP), not both"
            )
        );
    }

    /// Issue 25, finding 3: limits that loosen are ignored untrusted; lower ones apply.
    #[test]
    fn an_untrusted_repository_only_lowers_limits() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.yaml");
        std::fs::write(&user, "limits:\n  max_turns: 10\n").unwrap();
        let user_var = user.display().to_string();
        let project = dir.path().join("config.yaml");
        std::fs::write(
            &project,
            "limits:\n  replan_max_new_steps: 50\n  max_turns: 5\n  max_retries: 1\n  max_write_bytes: 999999999\n  answer_timeout_s: 100000\n",
        )
        .unwrap();
        let config = untrusted(&project, &[("TICK_CONFIG", &user_var)], dir.path()).unwrap();
        let defaults = Limits::default();
        assert_eq!(
            config.limits.replan_max_new_steps,
            defaults.replan_max_new_steps
        );
        assert_eq!(config.limits.max_turns, 5);
        assert_eq!(config.limits.max_retries, 1);
        assert_eq!(config.limits.max_write_bytes, defaults.max_write_bytes);
        assert_eq!(config.limits.answer_timeout, defaults.answer_timeout);
        assert_eq!(
            ignored_keys(&config),
            [
                "`limits.max_write_bytes`",
                "`limits.answer_timeout_s`",
                "`limits.replan_max_new_steps`"
            ]
        );
        // More before-images than the person's (the default here) is loosening.
        std::fs::write(&project, "limits:\n  max_undo_bytes: 99999999999\n").unwrap();
        let config = untrusted(&project, &[("TICK_CONFIG", &user_var)], dir.path()).unwrap();
        assert_eq!(config.limits.max_undo_bytes, defaults.max_undo_bytes);
        assert_eq!(ignored_keys(&config), ["`limits.max_undo_bytes`"]);
        // Each compact candidate runs the checks again: a clone may ask for fewer, not more.
        std::fs::write(
            &project,
            "limits:\n  compact_candidates: 9\n  compact_candidate_budget_s: 60\n",
        )
        .unwrap();
        let config = untrusted(&project, &[("TICK_CONFIG", &user_var)], dir.path()).unwrap();
        assert_eq!(
            config.limits.compact_candidates,
            defaults.compact_candidates
        );
        assert_eq!(
            config.limits.compact_candidate_budget,
            std::time::Duration::from_secs(60)
        );
        assert_eq!(ignored_keys(&config), ["`limits.compact_candidates`"]);
        // Above the person's own 10 is loosening too.
        std::fs::write(&project, "limits:\n  max_turns: 20\n").unwrap();
        let config = untrusted(&project, &[("TICK_CONFIG", &user_var)], dir.path()).unwrap();
        assert_eq!(config.limits.max_turns, 10);
        assert_eq!(ignored_keys(&config), ["`limits.max_turns`"]);
    }

    #[test]
    fn an_untrusted_repository_cannot_loosen_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        for (text, key) in [
            ("sandbox: off\n", "`sandbox: off`"),
            ("sandbox:\n  enabled: false\n", "`sandbox: off`"),
            ("sandbox:\n  writable: [/root]\n", "`sandbox.writable`"),
            ("sandbox:\n  env: [GITHUB_TOKEN]\n", "`sandbox.env`"),
        ] {
            std::fs::write(&project, text).unwrap();
            let config = untrusted(&project, &[], dir.path()).unwrap();
            assert!(
                config.sandbox.enabled
                    && config.sandbox.writable.is_empty()
                    && config.sandbox.env.is_empty(),
                "{text}"
            );
            assert_eq!(ignored_keys(&config), [key], "{text}");
            let trusted = resolve_project(&project, &[], dir.path()).unwrap();
            assert!(
                !trusted.sandbox.enabled
                    || !trusted.sandbox.writable.is_empty()
                    || !trusted.sandbox.env.is_empty(),
                "a trusted repository decides: {text}"
            );
        }
        std::fs::write(&project, "sandbox:\n  network: false\n").unwrap();
        let config = untrusted(&project, &[], dir.path()).unwrap();
        assert!(config.sandbox.enabled && !config.sandbox.network);
        assert_eq!(config.ignored, None);
    }

    #[test]
    fn sandbox_settings_from_files_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.yaml");
        let user_var = user.display().to_string();
        let resolve_with = |text: &str, vars: &[(&str, &str)]| {
            std::fs::write(&user, text).unwrap();
            let mut vars = vars.to_vec();
            vars.push(("TICK_CONFIG", &user_var));
            resolve(
                &dir.path().join("none.yaml"),
                "none.yaml",
                &TrustState::Trusted,
                &env(&vars, dir.path()),
                &Flags::default(),
            )
            .map(|c| c.sandbox)
        };
        let on = crate::sandbox::Settings::default();
        assert!(on.enabled && on.network && on.writable.is_empty());
        assert_eq!(resolve_with("model: m\n", &[]).unwrap(), on);
        for off in [
            "sandbox: off\n",
            "sandbox: false\n",
            "sandbox:\n  enabled: false\n",
        ] {
            assert!(!resolve_with(off, &[]).unwrap().enabled, "{off}");
        }
        assert!(resolve_with("sandbox: on\n", &[]).unwrap().enabled);
        let table = resolve_with(
            "sandbox:\n  network: false\n  writable: [~/.cargo/registry, /var/cache/x]\n",
            &[],
        )
        .unwrap();
        assert!(table.enabled && !table.network);
        assert_eq!(
            table.writable,
            [
                dir.path().join(".cargo/registry"),
                PathBuf::from("/var/cache/x")
            ]
        );
        // The environment overrides the files, both ways.
        assert!(
            !resolve_with("model: m\n", &[("TICK_SANDBOX", "off")])
                .unwrap()
                .enabled
        );
        assert!(
            resolve_with("sandbox: off\n", &[("TICK_SANDBOX", "on")])
                .unwrap()
                .enabled
        );
        let err = resolve_with("model: m\n", &[("TICK_SANDBOX", "maybe")]).unwrap_err();
        assert!(err.to_string().contains("`TICK_SANDBOX=maybe`"), "{err}");
        let err = resolve_with("sandbox:\n  writable: [cache]\n", &[]).unwrap_err();
        assert!(
            err.to_string().contains("`cache` is not an absolute path"),
            "{err}"
        );
        let err = resolve_with("sandbox:\n  netwrk: false\n", &[]).unwrap_err();
        assert!(err.to_string().contains("user.yaml:"), "{err}");
    }

    #[test]
    fn later_sources_win_key_by_key() {
        let (dir, project) = both_files(
            "model: user-model\nplan_model: user-planner\nlimits:\n  max_turns: 7\n  max_write_bytes: 1000\n",
            "# comment\nprovider: anthropic\nmodel: project-model\nlimits:\n  max_retries: 1\n",
        );
        let e = env(&[("ANTHROPIC_API_KEY", "sk-ant")], dir.path());
        let config = resolve_trusted(&project, &e).unwrap();
        assert_eq!(config.provider, Provider::Anthropic);
        assert_eq!(config.model.as_deref(), Some("project-model"));
        assert_eq!(config.plan_model.as_deref(), Some("user-planner"));
        assert_eq!(config.base_url, "https://api.anthropic.com");
        assert_eq!(config.api_key.as_deref(), Some("sk-ant"));
        assert_eq!(config.limits.max_turns, 7);
        assert_eq!(config.limits.max_retries, 1);
        assert_eq!(config.limits.max_write_bytes, 1000);
        assert_eq!(
            config.limits.max_tool_result_bytes,
            DEFAULT_MAX_TOOL_RESULT_BYTES
        );
        assert_eq!(config.tool_calls, ToolCalls::Auto);
        assert_eq!(config.limits.answer_timeout, Duration::from_secs(300));
        assert_eq!(config.limits.max_reminders, 2);
        assert_eq!(config.limits.output_tokens(crate::tools::Mode::Plan), 8192);
        assert_eq!(config.limits.output_tokens(crate::tools::Mode::Build), 4096);

        let e = env(
            &[("TICK_MODEL", "env-model"), ("TICK_PROVIDER", "ollama")],
            dir.path(),
        );
        let flags = Flags {
            model: Some("flag-model".into()),
            ..Flags::default()
        };
        let config = resolve(&project, "config.yaml", &TrustState::Trusted, &e, &flags).unwrap();
        assert_eq!(config.provider, Provider::Ollama);
        assert_eq!(config.model.as_deref(), Some("flag-model"));
        assert_eq!(config.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(config.limits.answer_timeout, LOCAL_ANSWER_TIMEOUT);
        assert_eq!(config.base_url_source, "the default of `provider: ollama`");
        assert_eq!(
            config.server_hint(),
            "is the model server running? tick connects to `http://127.0.0.1:11434/v1`, set by \
             the default of `provider: ollama`"
        );
        let e = env(&[("TICK_BASE_URL", "http://127.0.0.1:9/v1")], dir.path());
        let config = resolve_trusted(&project, &e).unwrap();
        assert_eq!(config.base_url_source, "`TICK_BASE_URL`");
        assert!(
            config.client_config().is_ok(),
            "a local server needs no key"
        );
        assert!(!format!("{config:?}").contains("sk-"));
    }

    #[test]
    fn the_planner_defaults_by_provider_and_is_read_from_file_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(&project, "provider: llamacpp\nmodel: m\n").unwrap();
        let resolved = |vars: &[(&str, &str)]| resolve_project(&project, vars, dir.path());
        assert_eq!(resolved(&[]).unwrap().planner, Planner::Auto);
        assert_eq!(
            resolved(&[("TICK_PROVIDER", "openai")]).unwrap().planner,
            Planner::Agent
        );
        assert_eq!(
            resolved(&[("TICK_PLANNER", "compact")]).unwrap().planner,
            Planner::Compact
        );
        let err = resolved(&[("TICK_PLANNER", "small")]).unwrap_err();
        assert!(
            err.message.contains("TICK_PLANNER=small"),
            "{}",
            err.message
        );
        std::fs::write(&project, "provider: openai\nplanner: compact\n").unwrap();
        assert_eq!(resolved(&[]).unwrap().planner, Planner::Compact);
        std::fs::write(&project, "planner: tiny\n").unwrap();
        assert!(resolved(&[]).is_err());
    }

    #[test]
    fn the_executor_follows_the_planner_unless_set() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(&project, "provider: llamacpp\nmodel: m\n").unwrap();
        let resolved = |vars: &[(&str, &str)]| resolve_project(&project, vars, dir.path());
        assert_eq!(resolved(&[]).unwrap().executor, Planner::Auto);
        assert_eq!(
            resolved(&[("TICK_PLANNER", "agent")]).unwrap().executor,
            Planner::Agent
        );
        assert_eq!(
            resolved(&[("TICK_PLANNER", "compact"), ("TICK_EXECUTOR", "agent")])
                .unwrap()
                .executor,
            Planner::Agent
        );
        let err = resolved(&[("TICK_EXECUTOR", "tiny")]).unwrap_err();
        assert!(
            err.message.contains("TICK_EXECUTOR=tiny"),
            "{}",
            err.message
        );
        std::fs::write(
            &project,
            "provider: openai\nplanner: compact\nexecutor: agent\n",
        )
        .unwrap();
        let config = resolved(&[]).unwrap();
        assert_eq!(
            (config.planner, config.executor),
            (Planner::Compact, Planner::Agent)
        );
    }

    #[test]
    fn answer_limits_and_the_tool_call_mode_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(
            &project,
            "tool_calls: text\nlimits:\n  max_output_tokens: 512\n  answer_timeout_s: 9\n  max_reminders: 5\n  replan_max_new_steps: 1\n",
        )
        .unwrap();
        let e = env(&[], dir.path());
        let config = resolve_trusted(&project, &e).unwrap();
        assert_eq!(config.tool_calls, ToolCalls::Text);
        assert_eq!(config.limits.output_tokens(crate::tools::Mode::Plan), 512);
        assert_eq!(config.limits.output_tokens(crate::tools::Mode::Build), 512);
        assert_eq!(config.limits.answer_timeout, Duration::from_secs(9));
        assert_eq!(config.limits.max_reminders, 5);
        assert_eq!(config.limits.replan_max_new_steps, 1);
        assert_eq!(Limits::default().replan_max_new_steps, 3);
        let e = env(&[("TICK_TOOL_CALLS", "native")], dir.path());
        let config = resolve_trusted(&project, &e).unwrap();
        assert_eq!(config.tool_calls, ToolCalls::Native);
        let e = env(&[("TICK_TOOL_CALLS", "xml")], dir.path());
        let err = resolve_trusted(&project, &e).unwrap_err();
        assert!(
            err.message.contains("TICK_TOOL_CALLS=xml"),
            "{}",
            err.message
        );
        std::fs::write(&project, "tool_calls: json\n").unwrap();
        let err = resolve_trusted(&project, &e).unwrap_err();
        assert!(
            err.message.starts_with("`config.yaml:1:13`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_model_needs_a_complete_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::tasks::Store::at(dir.path());
        let e = env(&[("TICK_PROVIDER", "ollama")], dir.path());
        let err = for_model(&store, &e, &Flags::default()).unwrap_err();
        assert_eq!(
            err.message,
            "tick cannot talk to a model yet: it needs a model"
        );
        assert!(
            err.hints[1].contains("edit `.tasks/config.yaml`"),
            "{:?}",
            err.hints
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().unwrap().port()
        );
        let vars = [
            ("TICK_PROVIDER", "ollama"),
            ("TICK_MODEL", "m"),
            ("TICK_BASE_URL", url.as_str()),
        ];
        let flags = Flags {
            model: Some("from-flag".to_owned()),
            ..Flags::default()
        };
        let config = for_model(&store, &env(&vars, dir.path()), &flags).unwrap();
        assert_eq!(config.model.as_deref(), Some("from-flag"));
        drop(listener);
        // Resolving opens no connection: whether the server listens is the engine's probe.
        assert!(for_model(&store, &env(&vars, dir.path()), &flags).is_ok());
    }

    #[test]
    fn missing_key_and_model_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(&[], dir.path());
        let config = resolve(
            &dir.path().join("none.yaml"),
            "x",
            &TrustState::Trusted,
            &e,
            &Flags::default(),
        )
        .unwrap();
        let err = config.client_config().unwrap_err();
        assert_eq!(err.message, "no API key: `OPENAI_API_KEY` is not set");
        assert!(err.hints[0].contains("api_key_env"));
        let err = config.planner_model().unwrap_err();
        assert!(err.hints[0].contains("TICK_MODEL"));
    }

    #[test]
    fn run_command_entries_of_both_files_add_to_the_table() {
        // The repository's file may refuse more, of anything allowed.
        let (dir, project) = both_files(
            "run_command:\n  allow:\n    - program: jq\n    - {program: git, subcommands: [shortlog]}\n",
            "run_command:\n  allow:\n    - {program: jq, reject: [--from-file]}\n    - {program: git, subcommands: [shortlog, log], reject: [--follow]}\n",
        );
        let e = env(&[], dir.path());
        let config = resolve_trusted(&project, &e).unwrap();
        let programs: Vec<&str> = config.run_command.programs().collect();
        assert!(programs.ends_with(&["cargo", "jq"]), "{programs:?}");
        let argv = |items: &[&str]| items.iter().map(|&s| s.to_owned()).collect::<Vec<_>>();
        assert!(
            config
                .run_command
                .check(&argv(&["git", "shortlog"]))
                .is_ok()
        );
        assert!(
            config
                .run_command
                .check(&argv(&["jq", "--from-file", "x"]))
                .is_err()
        );
        assert!(
            config
                .run_command
                .check(&argv(&["git", "log", "--follow", "x"]))
                .is_err()
        );

        std::fs::write(&project, "run_command:\n  allow:\n    - program: ./x\n").unwrap();
        let err = resolve_trusted(&project, &e).unwrap_err();
        assert!(
            err.message
                .starts_with("`config.yaml`: run_command.allow entry 1 (`./x`): `program` must be"),
            "{}",
            err.message
        );
    }

    /// Issue 17, item 13: an untrusted repository's `.tasks/config.yaml` cannot widen the
    /// allow-list (`sh`, `python3`, `chmod`, git `commit`/`config`): those entries are ignored
    /// and named; refusing more flags of what is allowed applies.
    #[test]
    fn an_untrusted_repository_cannot_widen_the_allow_list() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.yaml");
        std::fs::write(&user, "run_command:\n  allow:\n    - program: jq\n").unwrap();
        let user_var = user.display().to_string();
        let vars = [("TICK_CONFIG", user_var.as_str())];
        let project = dir.path().join("config.yaml");
        let argv = |items: &[&str]| items.iter().map(|&s| s.to_owned()).collect::<Vec<_>>();
        for (entry, what, argv_widened) in [
            ("{program: sh}", "`sh`", &["sh", "-c", "x"][..]),
            (
                "{program: python3, reject: [-c]}",
                "`python3`",
                &["python3", "x.py"][..],
            ),
            ("{program: chmod}", "`chmod`", &["chmod", "+x", "x"][..]),
            (
                "{program: git, subcommands: [commit]}",
                "`git commit`",
                &["git", "commit"][..],
            ),
            (
                "{program: git, subcommands: [log, config]}",
                "`git config`",
                &["git", "config", "x"][..],
            ),
            (
                "{program: jq, subcommands: [x]}",
                "`jq x`",
                &["jq", "x"][..],
            ),
        ] {
            std::fs::write(&project, format!("run_command:\n  allow:\n    - {entry}\n")).unwrap();
            let config = untrusted(&project, &vars, dir.path()).unwrap();
            assert_eq!(
                ignored_keys(&config),
                [format!("`run_command.allow` {what}")],
                "{entry}"
            );
            if what != "`jq x`" {
                assert!(
                    config.run_command.check(&argv(argv_widened)).is_err(),
                    "{entry}"
                );
            }
        }
        std::fs::write(
            &project,
            "run_command:\n  allow:\n    - {program: jq, reject: [--from-file]}\n",
        )
        .unwrap();
        let config = untrusted(&project, &vars, dir.path()).unwrap();
        assert_eq!(config.ignored, None);
        assert!(
            config
                .run_command
                .check(&argv(&["jq", "--from-file", "x"]))
                .is_err()
        );
    }

    #[test]
    fn typos_are_errors_with_a_location() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        std::fs::write(&project, "model: x\nmodle: y\n").unwrap();
        let err = resolve(
            &project,
            ".tasks/config.yaml",
            &TrustState::Trusted,
            &env(&[], dir.path()),
            &Flags::default(),
        )
        .unwrap_err();
        assert!(
            err.message
                .starts_with("`.tasks/config.yaml:2:1`: unknown field `modle`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_wrong_sandbox_setting_is_an_error_at_its_key_naming_what_it_takes() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("config.yaml");
        // The repository's file with `text`, trusted, resolved.
        let trusted = |text: &str| {
            std::fs::write(&project, text).unwrap();
            resolve(
                &project,
                ".tasks/config.yaml",
                &TrustState::Trusted,
                &env(&[], dir.path()),
                &Flags::default(),
            )
        };
        for (text, starts, closest) in [
            (
                "model: x\nsandbox:\n  enabld: true\n",
                "`.tasks/config.yaml:3:3`: sandbox: unknown field `enabld`",
                Some("enabled"),
            ),
            (
                "sandbox: of\n",
                "`.tasks/config.yaml:1:10`: sandbox: invalid value: string \"of\", expected `off`, `on`",
                None,
            ),
            (
                "sandbox: 3\n",
                "`.tasks/config.yaml:1:10`: sandbox: invalid type: integer `3`, expected `off`",
                None,
            ),
            (
                "sandbox:\n  network: yes please\n",
                "`.tasks/config.yaml:2:12`: sandbox.network: invalid type: string",
                None,
            ),
        ] {
            let err = trusted(text).unwrap_err();
            assert!(err.message.starts_with(starts), "{text}: {}", err.message);
            assert!(!err.message.contains("untagged"), "{}", err.message);
            if let Some(key) = closest {
                let hint = format!("did you mean `{key}`?");
                assert_eq!(err.hints.first(), Some(&hint), "{text}");
            }
        }
        for (text, on) in [("sandbox: on\n", true), ("sandbox: false\n", false)] {
            assert_eq!(trusted(text).unwrap().sandbox.enabled, on, "{text}");
        }
    }

    #[test]
    fn the_config_template_states_the_real_precedence() {
        let template = CONFIG_TEMPLATE;
        let order = [
            "1. ~/.config/tick/config.yaml",
            "2. this file",
            "3. the environment",
            "4. command-line flags",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|needle| template.find(needle).unwrap_or_else(|| panic!("{needle}")))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");

        let (dir, project) = both_files("model: user\n", &format!("{template}model: project\n"));
        let shown = ".tasks/config.yaml";
        let config = resolve(
            &project,
            shown,
            &TrustState::Trusted,
            &env(&[], dir.path()),
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(config.model.as_deref(), Some("project"));
        assert_eq!(config.sources.model, Source::File(shown.into()));
        assert_eq!(config.sources.provider, Source::Default);
        let e = env(&[("TICK_MODEL", "env")], dir.path());
        let config = resolve(&project, shown, &TrustState::Trusted, &e, &Flags::default()).unwrap();
        assert_eq!(config.model.as_deref(), Some("env"));
        assert_eq!(config.sources.model, Source::Env("TICK_MODEL".into()));
        let flags = Flags {
            model: Some("flag".into()),
            ..Flags::default()
        };
        let config = resolve(&project, shown, &TrustState::Trusted, &e, &flags).unwrap();
        assert_eq!(config.model.as_deref(), Some("flag"));
        assert_eq!(config.sources.model, Source::Flag("--model".into()));
        std::fs::remove_file(&project).unwrap();
        let config = resolve(
            &project,
            shown,
            &TrustState::Trusted,
            &env(&[], dir.path()),
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(
            config.sources.model,
            Source::File(
                dir.path()
                    .join(".config/tick/config.yaml")
                    .display()
                    .to_string()
            )
        );
    }

    #[test]
    fn everything_missing_is_named_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = resolve(
            &dir.path().join("none.yaml"),
            "x",
            &TrustState::Trusted,
            &env(&[], dir.path()),
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(config.missing(true), vec![Missing::Model, Missing::ApiKey]);
        let e = env(&[("TICK_PROVIDER", "ollama")], dir.path());
        let config = resolve(
            &dir.path().join("none.yaml"),
            "x",
            &TrustState::Trusted,
            &e,
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(
            config.missing(true),
            vec![Missing::Model],
            "a local server needs no key"
        );
        let e = env(&[("TICK_PLAN_MODEL", "p")], dir.path());
        let config = resolve(
            &dir.path().join("none.yaml"),
            "x",
            &TrustState::Trusted,
            &e,
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(config.missing(true), vec![Missing::ApiKey]);
        assert_eq!(config.missing(false), vec![Missing::Model, Missing::ApiKey]);
    }

    #[test]
    fn loopback_hosts() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.1:8080",
            "http://127.example.com",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
