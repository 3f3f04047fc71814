//! The person's MCP servers as tools of a turn (DESIGN §15), and tick's own tasks as MCP
//! tools for other agents (`tick mcp serve`, [`serve`]).
//!
//! Which MCP tools a turn gets is decided here, by the person's configuration and the
//! approved plan, never by a server: planning gets only the tools the person's config names
//! in `read_only_tools` (a server's `readOnlyHint` is shown by `tick mcp list` as a
//! suggestion and decides nothing), and a step gets only the tools its approved plan names
//! (`tools:`), so a step that names none gets none. [`Offered`] is that selection; the tool
//! registry sends its specs and refuses every other MCP name with the reason (two guards, as
//! for tick's own tools). Stdio servers run inside tick's sandbox ([`hub::Containment`]).
//!
//! The model sees a tool as `mcp__SERVER__TOOL` (the characters every provider accepts);
//! people and plans write `SERVER.TOOL`.

pub mod config;
pub mod hub;
pub mod serve;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use config::Server;
pub use hub::{Containment, Hub, RemoteTool, Started};

use crate::llm::ToolSpec;

/// The start of every MCP tool's name as the model sees it.
pub const PREFIX: &str = "mcp__";
/// The longest function name the providers accept.
const MAX_NAME: usize = 64;

/// `mcp__SERVER__TOOL`, or `None` when the tool's own name has characters a provider refuses
/// or the whole is too long (`tick mcp list` says so).
pub fn model_name(server: &str, tool: &str) -> Option<String> {
    let name = format!("{PREFIX}{server}__{tool}");
    let fits = name.len() <= MAX_NAME
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    fits.then_some(name)
}

/// `(server, tool)` of a name the model wrote in the `mcp__SERVER__TOOL` form.
pub fn split_model_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(PREFIX)?.split_once("__")
}

/// The configured servers of one command, started when a turn first needs them (planning
/// needs those with read-only tools, a step those its plan names) and kept for the command.
pub struct Launcher {
    servers: BTreeMap<String, Server>,
    containment: Containment,
    /// tick's environment, read once: what stdio servers may get and the bearer tokens.
    vars: BTreeMap<String, String>,
    hubs: Mutex<BTreeMap<String, Hub>>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Launcher {
    /// A launcher for `servers`, with stdio servers contained as `containment` says; `var`
    /// reads tick's environment (only the names the servers may get are kept).
    pub fn new(
        servers: &BTreeMap<String, Server>,
        containment: Containment,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Arc<Launcher> {
        let mut names: Vec<String> = crate::tools::bash::PASSED_ENV
            .iter()
            .map(|&n| n.to_owned())
            .collect();
        for server in servers.values() {
            match &server.transport {
                config::Transport::Stdio { env_vars, .. } => names.extend(env_vars.clone()),
                config::Transport::Http {
                    bearer_token_env_var,
                    ..
                } => names.extend(bearer_token_env_var.clone()),
            }
        }
        let vars = names
            .into_iter()
            .filter_map(|name| var(&name).map(|value| (name, value)))
            .collect();
        Arc::new(Launcher {
            servers: servers.clone(),
            containment,
            vars,
            hubs: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The servers named `names` that are configured, started (all not yet started at once).
    pub fn started(&self, names: &[&str]) -> Vec<(Started, Hub)> {
        let Ok(mut hubs) = self.hubs.lock() else {
            return Vec::new();
        };
        let missing: Vec<Server> = names
            .iter()
            .filter(|name| !hubs.contains_key(**name))
            .filter_map(|name| self.servers.get(*name).cloned())
            .collect();
        if !missing.is_empty() {
            let var = |name: &str| self.vars.get(name).cloned();
            let hub = Hub::start(&missing, self.containment.clone(), &var);
            for started in hub.servers() {
                hubs.insert(started.server.name.clone(), hub.clone());
            }
        }
        names
            .iter()
            .filter_map(|name| {
                let hub = hubs.get(*name)?;
                let started = hub.servers().iter().find(|s| s.server.name == *name)?;
                Some((started.clone(), hub.clone()))
            })
            .collect()
    }

    /// The MCP tools planning is offered: those the person's config names read-only, of the
    /// servers that started; with a line for the person for each problem.
    pub fn for_planning(&self) -> (Offered, Vec<String>) {
        let names: Vec<&str> = self
            .servers
            .values()
            .filter(|s| !s.read_only_tools.is_empty())
            .map(|s| s.name.as_str())
            .collect();
        let wanted: Vec<(String, String)> = self
            .servers
            .values()
            .flat_map(|s| {
                s.read_only_tools
                    .iter()
                    .map(|t| (s.name.clone(), t.clone()))
            })
            .collect();
        self.offer(&names, &wanted, Scope::Planning)
    }

    /// The MCP tools step `step` is offered: exactly those its approved plan names
    /// (`SERVER.TOOL`), of the servers that started; with a line for each problem.
    pub fn for_step(&self, step: &str, named: &[String]) -> (Offered, Vec<String>) {
        let mut wanted = Vec::new();
        let mut warnings = Vec::new();
        for qualified in named {
            match qualified.split_once('.') {
                Some((server, tool)) if self.servers.contains_key(server) => {
                    wanted.push((server.to_owned(), tool.to_owned()));
                }
                _ => warnings.push(format!(
                    "step {step} names the MCP tool `{qualified}`, but no configured server \
                     `{}` has it; the step runs without it",
                    qualified.split('.').next().unwrap_or_default()
                )),
            }
        }
        let mut names: Vec<&str> = wanted.iter().map(|(s, _)| s.as_str()).collect();
        names.dedup();
        let scope = Scope::Step {
            id: step.to_owned(),
            named: named.to_vec(),
        };
        let (offered, more) = self.offer(&names, &wanted, scope);
        warnings.extend(more);
        (offered, warnings)
    }

    fn offer(
        &self,
        names: &[&str],
        wanted: &[(String, String)],
        scope: Scope,
    ) -> (Offered, Vec<String>) {
        let mut warnings = Vec::new();
        let mut tools = Vec::new();
        if names.is_empty() {
            return (Offered::with(tools, scope), warnings);
        }
        for (started, hub) in self.started(names) {
            let server = &started.server.name;
            let listed = match &started.tools {
                Ok(listed) => listed,
                Err(err) => {
                    warnings.push(format!("MCP server `{server}` is not available: {err}"));
                    continue;
                }
            };
            for (_, tool) in wanted.iter().filter(|(s, _)| s == server) {
                let Some(remote) = listed.iter().find(|t| &t.name == tool) else {
                    warnings.push(format!(
                        "MCP server `{server}` has no tool `{tool}`; it is not offered"
                    ));
                    continue;
                };
                let Some(name) = model_name(server, tool) else {
                    warnings.push(format!(
                        "the MCP tool `{server}.{tool}` has a name models cannot call; it is \
                         not offered"
                    ));
                    continue;
                };
                let spec = ToolSpec {
                    name,
                    description: format!(
                        "{} (MCP tool `{tool}` of the server `{server}`)",
                        remote.description.trim()
                    )
                    .trim_start()
                    .to_owned(),
                    parameters: schema_object(&remote.input_schema),
                };
                tools.push(OfferedTool {
                    spec,
                    server: server.clone(),
                    tool: tool.clone(),
                    hub: hub.clone(),
                });
            }
        }
        (Offered::with(tools, scope), warnings)
    }
}

/// A server and its tools for `tick mcp list`: one line for the server, one per tool with
/// the modes that may call it. Planning may only if the person named it read-only; the
/// server's `readOnlyHint` is shown as a suggestion, never taken.
pub fn describe(started: &Started) -> String {
    let server = &started.server;
    let kind = match server.transport {
        config::Transport::Stdio { .. } => "stdio",
        config::Transport::Http { .. } => "http",
    };
    let mut out = format!(
        "{}  {kind} `{}` (`{}`)\n",
        server.name,
        crate::text::visible(&server.describe()),
        server.file
    );
    let tools = match &started.tools {
        Ok(tools) => tools,
        Err(err) => {
            out.push_str(&format!("  error: {}\n", crate::text::visible(err)));
            return out;
        }
    };
    if tools.is_empty() {
        out.push_str("  (no tools)\n");
    }
    let width = tools
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0);
    for tool in tools {
        let named = server.read_only_tools.contains(&tool.name);
        let modes = if named { "plan, steps" } else { "steps" };
        let note = match (named, tool.read_only_hint) {
            (true, _) => "read-only (your `read_only_tools`)".to_owned(),
            (false, Some(true)) => {
                "the server says read-only: add it to `read_only_tools` to plan with it".to_owned()
            }
            (false, _) => String::new(),
        };
        let note = if model_name(&server.name, &tool.name).is_none() {
            "its name is not one models can call: not offered".to_owned()
        } else {
            note
        };
        let line = format!(
            "  {:<width$}  {modes:<11}  {note}",
            crate::text::visible(&tool.name),
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for missing in server
        .read_only_tools
        .iter()
        .filter(|name| !tools.iter().any(|t| &t.name == *name))
    {
        out.push_str(&format!(
            "  {missing}: named in `read_only_tools`, but the server has no such tool\n"
        ));
    }
    out
}

/// A tool's input schema as a JSON object schema (some servers leave out `type`).
fn schema_object(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = match schema {
        serde_json::Value::Object(_) => schema.clone(),
        _ => serde_json::json!({}),
    };
    if schema.get("type").is_none() {
        schema["type"] = serde_json::json!("object");
    }
    if schema.get("properties").is_none() {
        schema["properties"] = serde_json::json!({});
    }
    schema
}

/// Why a turn has the MCP tools it has: for the refusal's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    Planning,
    Step { id: String, named: Vec<String> },
}

impl Scope {
    /// How often a stopped server is started again, as the person reads it.
    fn once_in(&self) -> &'static str {
        match self {
            Scope::Planning => "while planning",
            Scope::Step { .. } => "in a step",
        }
    }
}

#[derive(Debug, Clone)]
struct OfferedTool {
    spec: ToolSpec,
    server: String,
    tool: String,
    hub: Hub,
}

/// The MCP tools one turn is offered, and the refusal of every other.
#[derive(Debug, Clone)]
pub struct Offered {
    tools: Vec<OfferedTool>,
    scope: Scope,
    /// The servers started again in this turn (a stdio server that stopped is started again
    /// once per step; after that its tools stay failed with the reason).
    restarted: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Lines for the person: a server that stopped, or was started again.
    notices: Arc<Mutex<Vec<String>>>,
}

impl Offered {
    fn with(tools: Vec<OfferedTool>, scope: Scope) -> Offered {
        Offered {
            tools,
            scope,
            restarted: Arc::default(),
            notices: Arc::default(),
        }
    }

    /// No MCP tools while planning.
    pub fn none_for_planning() -> Offered {
        Offered::with(Vec::new(), Scope::Planning)
    }

    /// No MCP tools: a step that names none (`step` empty: the step is not known).
    pub fn none_for_step(step: &str) -> Offered {
        let scope = Scope::Step {
            id: step.to_owned(),
            named: Vec::new(),
        };
        Offered::with(Vec::new(), scope)
    }

    /// The lines for the person since the last call: servers that stopped or were started
    /// again.
    pub fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }

    /// The definitions sent to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec.clone()).collect()
    }

    /// Whether `name` (as the model writes it) is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.spec.name == name)
    }

    /// Runs the MCP tool `name` with `arguments`: its result text (secrets redacted), or the
    /// error for the model; a tool not offered is refused with the reason, and nothing runs.
    pub fn call(&self, name: &str, arguments: &serde_json::Value) -> Result<String, String> {
        let Some(tool) = self.tools.iter().find(|t| t.spec.name == name) else {
            return Err(refusal(name, &self.scope));
        };
        let server = &tool.server;
        let restarted_before = self
            .restarted
            .lock()
            .map_or(true, |r| r.contains(server.as_str()));
        let answer = tool
            .hub
            .call_restarting(server, &tool.tool, arguments, !restarted_before);
        let mut notices = Vec::new();
        if answer.restarted {
            if let Ok(mut restarted) = self.restarted.lock() {
                restarted.insert(server.clone());
            }
            notices.push(format!(
                "the MCP server `{server}` had stopped; tick started it again for `{}` (once \
                 {})",
                tool.tool,
                self.scope.once_in()
            ));
        }
        let result = answer
            .result
            .map(|text| crate::redact::redact(&text, &[]))
            .map_err(|text| crate::redact::redact(&text, &[]));
        if answer.stopped {
            let next = match (answer.restarted || restarted_before, &self.scope) {
                (true, Scope::Planning) => {
                    "it was started again once while planning already: its tools stay failed \
                     for the rest of the planning"
                }
                (true, Scope::Step { .. }) => {
                    "it was started again once in this step already: its tools stay failed for \
                     the rest of the step"
                }
                (false, Scope::Planning) => "its next call starts it again, once while planning",
                (false, Scope::Step { .. }) => "its next call starts it again, once in this step",
            };
            let why = result.as_ref().err().cloned().unwrap_or_default();
            notices.push(format!("{why}; {next}"));
        }
        if !notices.is_empty()
            && let Ok(mut all) = self.notices.lock()
        {
            all.extend(notices);
        }
        result
    }
}

/// Why the MCP tool `name` may not be called in a turn of `scope`.
fn refusal(name: &str, scope: &Scope) -> String {
    let shown = split_model_name(name).map_or_else(|| name.to_owned(), |(s, t)| format!("{s}.{t}"));
    match scope {
        Scope::Planning => format!(
            "`{name}` (`{shown}`) is not available while planning: planning may call only the \
             MCP tools the person's config names in `read_only_tools`; if a step needs it, \
             name it in that step's `tools:`"
        ),
        Scope::Step { id, named } => {
            let step = if id.is_empty() {
                "this step".to_owned()
            } else {
                format!("step {id}")
            };
            let names = if named.is_empty() {
                "none".to_owned()
            } else {
                named
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "`{name}` (`{shown}`) is not available in {step}: a step may call only the MCP \
                 tools its approved plan names (`tools:`), and {step} names {names}; if the step \
                 needs another, report it as blocked"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_says_which_mode_may_use_each_tool_and_never_takes_the_hint() {
        let server = config::resolve(
            "docs",
            &serde_yaml::from_str("command: docs-mcp\nread_only_tools: [search, gone]\n").unwrap(),
            "~/.config/tick/config.yaml",
        )
        .unwrap();
        let tool = |name: &str, hint: Option<bool>| RemoteTool {
            name: name.to_owned(),
            description: String::new(),
            input_schema: serde_json::json!({}),
            read_only_hint: hint,
        };
        let started = Started {
            server,
            tools: Ok(vec![
                tool("search", None),
                tool("peek", Some(true)),
                tool("write", Some(false)),
                tool("bad.name", None),
            ]),
            took: std::time::Duration::ZERO,
        };
        insta::assert_snapshot!(describe(&started), @r"
        docs  stdio `docs-mcp` (`~/.config/tick/config.yaml`)
          search    plan, steps  read-only (your `read_only_tools`)
          peek      steps        the server says read-only: add it to `read_only_tools` to plan with it
          write     steps
          bad.name  steps        its name is not one models can call: not offered
          gone: named in `read_only_tools`, but the server has no such tool
        ");
    }

    #[test]
    fn names_the_model_sees_go_both_ways() {
        assert_eq!(
            model_name("github", "create_issue").as_deref(),
            Some("mcp__github__create_issue")
        );
        assert_eq!(
            split_model_name("mcp__github__create_issue"),
            Some(("github", "create_issue"))
        );
        assert_eq!(model_name("a", "has.dot"), None);
        assert_eq!(model_name("a", &"x".repeat(60)), None);
        assert_eq!(split_model_name("read_file"), None);
    }

    #[test]
    fn a_step_that_names_no_tools_is_offered_none_and_refuses_with_the_reason() {
        let offered = Offered::none_for_step("S2");
        assert!(offered.specs().is_empty());
        let err = offered
            .call("mcp__docs__search", &serde_json::json!({}))
            .unwrap_err();
        assert_eq!(
            err,
            "`mcp__docs__search` (`docs.search`) is not available in step S2: a step may call \
             only the MCP tools its approved plan names (`tools:`), and step S2 names none; if \
             the step needs another, report it as blocked"
        );
    }

    #[test]
    fn a_launcher_without_servers_offers_nothing_and_starts_nothing() {
        let launcher = Launcher::new(
            &BTreeMap::new(),
            Containment::Unavailable("no".to_owned()),
            &|_| None,
        );
        let (offered, warnings) = launcher.for_planning();
        assert!(offered.specs().is_empty() && warnings.is_empty());
        let (offered, warnings) = launcher.for_step("S1", &["docs.search".to_owned()]);
        assert!(offered.specs().is_empty());
        assert_eq!(
            warnings,
            [
                "step S1 names the MCP tool `docs.search`, but no configured server `docs` has \
              it; the step runs without it"
            ]
        );
    }
}
