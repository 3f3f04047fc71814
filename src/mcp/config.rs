//! `mcp_servers:` in a config file: each MCP server the person lets tick start or reach, as
//! written ([`FileServer`]) and resolved ([`Server`]).
//!
//! ```yaml
//! mcp_servers:
//!   docs:                          # a stdio server: tick starts it, inside its sandbox
//!     command: docs-mcp
//!     args: [--root, .]
//!     env: {DOCS_LANG: en}         # set for the server
//!     env_vars: [DOCS_TOKEN]       # passed from tick's own environment
//!     network: false               # may the sandboxed server reach the network?
//!     read_only_tools: [search]    # the only tools planning may call
//!   tracker:                       # a streamable HTTP server
//!     url: https://tracker.example/mcp
//!     bearer_token_env_var: TRACKER_TOKEN
//!     headers: {X-Team: core}
//!     startup_timeout_s: 10
//!     call_timeout_s: 60
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a server has to start and list its tools, unless its entry says.
pub const DEFAULT_STARTUP_TIMEOUT_S: u64 = 10;
/// How long one tool call may take, unless the server's entry says.
pub const DEFAULT_CALL_TIMEOUT_S: u64 = 60;
/// The longest timeout an entry may set (an hour): a larger number is a typo.
const MAX_TIMEOUT_S: u64 = 3600;

/// One server's entry as a config file writes it. Unknown keys are errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileServer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_vars: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_s: Option<u64>,
}

/// How tick reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program tick starts and talks to over its stdin and stdout, inside the sandbox.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set for the server, over what it gets from tick's environment.
        env: BTreeMap<String, String>,
        /// Names passed from tick's own environment besides the commands' allow-list.
        env_vars: Vec<String>,
        /// Whether the sandboxed server may reach the network (off unless the entry says).
        network: bool,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// The variable holding the bearer token, read when tick connects.
        bearer_token_env_var: Option<String>,
        headers: BTreeMap<String, String>,
    },
}

/// One server, resolved and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub name: String,
    pub transport: Transport,
    /// The server's tools that planning may call: the person's word, never the server's.
    pub read_only_tools: Vec<String>,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    /// The config file the entry came from, as people see it (for messages).
    pub file: String,
}

impl Server {
    /// The stdio server's command line, or the HTTP server's URL, for `tick mcp list`.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut words = vec![command.clone()];
                words.extend(args.iter().cloned());
                words.join(" ")
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// Whether `name` can name a server: letters, digits, `-` and `_`, at most 32, no `__` (which
/// separates the server from the tool in the names the model sees).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `entry` as a [`Server`] named `name`, from `file`; the error names the key at fault
/// (`mcp_servers.docs.url`) and what is wrong.
#[allow(
    clippy::too_many_lines,
    reason = "one check per key, in the order a person reads the entry"
)]
pub fn resolve(name: &str, entry: &FileServer, file: &str) -> Result<Server, String> {
    let at = |key: &str| {
        if key.is_empty() {
            format!("`mcp_servers.{name}`")
        } else {
            format!("`mcp_servers.{name}.{key}`")
        }
    };
    if !valid_server_name(name) {
        return Err(format!(
            "{}: a server's name is letters, digits, `-` and `_` (at most 32, no `__`)",
            at("")
        ));
    }
    let transport = match (&entry.command, &entry.url) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{}: set `command` (a stdio server) or `url` (streamable HTTP), not both",
                at("")
            ));
        }
        (None, None) => {
            return Err(format!(
                "{}: set `command` (a stdio server) or `url` (streamable HTTP)",
                at("")
            ));
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(format!("{}: is empty", at("command")));
            }
            for key in [
                ("bearer_token_env_var", entry.bearer_token_env_var.is_some()),
                ("headers", !entry.headers.is_empty()),
            ] {
                if key.1 {
                    return Err(format!(
                        "{}: is for an HTTP server (`url`), not a stdio one",
                        at(key.0)
                    ));
                }
            }
            for var in entry.env.keys().chain(&entry.env_vars) {
                if !valid_env_name(var) {
                    return Err(format!("{}: `{var}` is not a variable name", at("env")));
                }
            }
            Transport::Stdio {
                command: command.clone(),
                args: entry.args.clone(),
                env: entry.env.clone(),
                env_vars: entry.env_vars.clone(),
                network: entry.network.unwrap_or(false),
            }
        }
        (None, Some(url)) => {
            for key in [
                ("args", !entry.args.is_empty()),
                ("env", !entry.env.is_empty()),
                ("env_vars", !entry.env_vars.is_empty()),
                ("network", entry.network.is_some()),
            ] {
                if key.1 {
                    return Err(format!(
                        "{}: is for a stdio server (`command`), not an HTTP one",
                        at(key.0)
                    ));
                }
            }
            let parsed = reqwest::Url::parse(url)
                .map_err(|err| format!("{}: `{url}` is not a URL: {err}", at("url")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("{}: `{url}` is not an http(s) URL", at("url")));
            }
            if let Some(var) = &entry.bearer_token_env_var
                && !valid_env_name(var)
            {
                return Err(format!(
                    "{}: `{var}` is not a variable name",
                    at("bearer_token_env_var")
                ));
            }
            for (header, value) in &entry.headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err()
                    || reqwest::header::HeaderValue::from_str(value).is_err()
                {
                    return Err(format!(
                        "{}: `{header}` is not a valid header",
                        at("headers")
                    ));
                }
            }
            Transport::Http {
                url: url.clone(),
                bearer_token_env_var: entry.bearer_token_env_var.clone(),
                headers: entry.headers.clone(),
            }
        }
    };
    for tool in &entry.read_only_tools {
        if tool.trim().is_empty() || tool.contains('.') {
            return Err(format!(
                "{}: `{tool}` is not a tool name (write the server's own name for it, without \
                 `{name}.`)",
                at("read_only_tools")
            ));
        }
    }
    let seconds = |key: &str, value: Option<u64>, default: u64| match value {
        Some(0) => Err(format!("{}: must be at least 1 (seconds)", at(key))),
        Some(s) if s > MAX_TIMEOUT_S => Err(format!(
            "{}: {s} seconds is more than the most, {MAX_TIMEOUT_S}",
            at(key)
        )),
        Some(s) => Ok(Duration::from_secs(s)),
        None => Ok(Duration::from_secs(default)),
    };
    Ok(Server {
        name: name.to_owned(),
        transport,
        read_only_tools: entry.read_only_tools.clone(),
        startup_timeout: seconds(
            "startup_timeout_s",
            entry.startup_timeout_s,
            DEFAULT_STARTUP_TIMEOUT_S,
        )?,
        call_timeout: seconds(
            "call_timeout_s",
            entry.call_timeout_s,
            DEFAULT_CALL_TIMEOUT_S,
        )?,
        file: file.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(yaml: &str) -> FileServer {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn stdio_and_http_entries_resolve_with_defaults() {
        let docs = resolve(
            "docs",
            &entry("command: docs-mcp\nargs: [--root, .]\nread_only_tools: [search]\n"),
            "f.yaml",
        )
        .unwrap();
        assert_eq!(
            docs.transport,
            Transport::Stdio {
                command: "docs-mcp".to_owned(),
                args: vec!["--root".to_owned(), ".".to_owned()],
                env: BTreeMap::new(),
                env_vars: Vec::new(),
                network: false,
            }
        );
        assert_eq!(docs.startup_timeout, Duration::from_secs(10));
        assert_eq!(docs.call_timeout, Duration::from_secs(60));
        assert_eq!(docs.describe(), "docs-mcp --root .");
        let web = resolve(
            "web",
            &entry("url: http://127.0.0.1:9/mcp\nbearer_token_env_var: T\ncall_timeout_s: 5\n"),
            "f.yaml",
        )
        .unwrap();
        assert_eq!(web.call_timeout, Duration::from_secs(5));
        assert!(matches!(web.transport, Transport::Http { .. }));
    }

    #[test]
    fn bad_entries_name_the_key_and_the_fault() {
        let cases = [
            (
                "x",
                "{}",
                "`mcp_servers.x`: set `command` (a stdio server) or `url`",
            ),
            ("x", "command: a\nurl: http://h/", "not both"),
            ("a.b", "command: a", "`mcp_servers.a.b`: a server's name"),
            ("a__b", "command: a", "no `__`"),
            (
                "x",
                "command: a\nheaders: {A: b}",
                "`mcp_servers.x.headers`: is for an HTTP",
            ),
            (
                "x",
                "url: http://h/\nargs: [a]",
                "`mcp_servers.x.args`: is for a stdio",
            ),
            (
                "x",
                "url: ftp://h/",
                "`mcp_servers.x.url`: `ftp://h/` is not an http(s) URL",
            ),
            ("x", "url: nope", "`mcp_servers.x.url`: `nope` is not a URL"),
            (
                "x",
                "command: a\ncall_timeout_s: 0",
                "`mcp_servers.x.call_timeout_s`: must be",
            ),
            (
                "x",
                "command: a\nread_only_tools: [x.y]",
                "`mcp_servers.x.read_only_tools`",
            ),
            (
                "x",
                "command: a\nenv: {'A B': c}",
                "`A B` is not a variable name",
            ),
        ];
        for (name, yaml, expected) in cases {
            let err = resolve(name, &entry(yaml), "f").unwrap_err();
            assert!(err.contains(expected), "{yaml}: {err}");
        }
        assert!(serde_yaml::from_str::<FileServer>("comand: a\n").is_err());
    }

    #[test]
    fn an_entry_written_back_reads_the_same() {
        let written = FileServer {
            command: Some("npx".to_owned()),
            args: vec!["-y".to_owned(), "pkg".to_owned()],
            ..FileServer::default()
        };
        let text = serde_yaml::to_string(&written).unwrap();
        assert_eq!(text, "command: npx\nargs:\n- -y\n- pkg\n");
        assert_eq!(entry(&text), written);
    }
}
