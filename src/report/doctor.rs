//! What `tick doctor` reports, as data; its probes of the model server (does it accept a
//! connection, does the model call a tool); and the one check other commands need: whether the
//! model server accepts a connection ([`require_server`], run before a command that talks to a
//! model, so a local server that is not running fails at once instead of after retries).

use std::net::{TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::Config;
use crate::error::Result;
use crate::llm::{Client, Message, Request, ToolSpec};

/// How long the connection check may wait for the server to accept.
pub const CONNECT_BUDGET: Duration = Duration::from_millis(1500);
/// How long the tool-call check waits for the model to start answering.
pub const ANSWER_BUDGET: Duration = Duration::from_secs(20);

/// How the model answered the test tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCalls {
    Native,
    Text,
    None,
}

const TOOL: &str = "report_ready";

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub format: u32,
    pub ok: bool,
    pub settings: Vec<Setting>,
    pub checks: Vec<Check>,
    pub exit_code: u8,
}

/// One resolved setting and where it came from.
#[derive(Debug, Serialize)]
pub struct Setting {
    pub name: &'static str,
    pub value: Option<String>,
    pub source: crate::config::Source,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    /// `true` passed, `false` failed, `null` skipped (an earlier check failed).
    pub ok: Option<bool>,
    pub detail: String,
    pub hint: Option<String>,
    pub duration_ms: u64,
}

impl Check {
    pub fn new(
        name: &'static str,
        ok: Option<bool>,
        detail: String,
        hint: Option<String>,
    ) -> Check {
        Check {
            name,
            ok,
            detail,
            hint,
            duration_ms: 0,
        }
    }

    #[must_use]
    pub fn timed(mut self, started: Instant) -> Check {
        self.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self
    }
}

/// The server's host and port from its base URL.
pub(crate) fn host_port(url: &str) -> Option<(String, u16)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.trim_matches(['[', ']']).to_owned();
    let port = parsed.port_or_known_default()?;
    Some((host, port))
}

/// Can a TCP connection to the server be made within [`CONNECT_BUDGET`]? No retries.
pub fn connection(config: &Config) -> Check {
    let started = Instant::now();
    let url = &config.base_url;
    let Some((host, port)) = host_port(url) else {
        return Check::new(
            "connection",
            Some(false),
            format!("`{url}` is not a URL"),
            Some("`base_url` must look like `http://127.0.0.1:11434/v1`".to_owned()),
        );
    };
    let addrs = match (host.as_str(), port).to_socket_addrs() {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(err) => {
            return Check::new(
                "connection",
                Some(false),
                format!("cannot resolve `{host}`: {err}"),
                Some("check `base_url` and the network".to_owned()),
            )
            .timed(started);
        }
    };
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_BUDGET) {
            Ok(_) => {
                return Check::new(
                    "connection",
                    Some(true),
                    format!("`{host}:{port}` accepts connections"),
                    None,
                )
                .timed(started);
            }
            Err(err) => last = Some(err),
        }
    }
    let err = last.map_or_else(|| "no address".to_owned(), |e| e.to_string());
    let hint = if crate::config::is_loopback(url) {
        let start = match config.provider {
            crate::config::Provider::Ollama => "`ollama serve`".to_owned(),
            crate::config::Provider::LlamaCpp => {
                format!("`llama-server --jinja -m model.gguf --port {port}`")
            }
            _ => format!(
                "`ollama serve` (port 11434), or `llama-server --jinja -m model.gguf --port {port}`"
            ),
        };
        format!(
            "start the server: {start}; or fix `base_url` ({})",
            config.sources.base_url
        )
    } else {
        format!(
            "check the network and `base_url` ({})",
            config.sources.base_url
        )
    };
    Check::new(
        "connection",
        Some(false),
        format!("cannot connect to `{host}:{port}` ({url}): {err}"),
        Some(hint),
    )
    .timed(started)
}

/// The MCP servers, each started as planning would start it: its tools count and how long
/// it took, or its error. Informational: it does not change the exit code.
pub fn mcp_servers(launcher: Option<&crate::mcp::Launcher>, names: &[&str]) -> Check {
    let Some(launcher) = launcher else {
        return Check::new("mcp", None, "no MCP servers configured".to_owned(), None);
    };
    let started = launcher.started(names);
    let ok = started.iter().all(|(s, _)| s.tools.is_ok());
    let lines: Vec<String> = started
        .iter()
        .map(|(s, _)| match &s.tools {
            Ok(tools) => format!(
                "`{}`: {} tools in {:.1}s",
                s.server.name,
                tools.len(),
                s.took.as_secs_f64()
            ),
            Err(err) => format!("`{}`: {}", s.server.name, crate::text::visible(err)),
        })
        .collect();
    let hint = (!ok).then(|| {
        "`tick mcp list` shows each server's tools; `docs/mcp.md` has the keys and timeouts"
            .to_owned()
    });
    Check::new("mcp", Some(ok), lines.join("; "), hint)
}

/// For a command about to talk to the model: fails at once, with the advice of `tick doctor`,
/// when the server does not accept a connection (instead of retrying a refused connection).
pub fn require_server(config: &Config) -> Result<()> {
    let check = connection(config);
    if check.ok == Some(true) {
        return Ok(());
    }
    let mut error = crate::error::Error::new(crate::error::ErrorKind::Provider, check.detail);
    if let Some(hint) = check.hint {
        error = error.hint(hint);
    }
    Err(error.hint("nothing was written; `tick doctor` checks the whole setup"))
}

/// One tiny request with one tool: does the model call it, write it as text, or neither?
pub fn tool_call(config: &Config) -> Check {
    let started = Instant::now();
    let mut client_config = match config.client_config() {
        Ok(c) => c,
        Err(err) => {
            return Check::new(
                "tool_call",
                Some(false),
                err.message,
                err.hints.first().cloned(),
            );
        }
    };
    client_config.connect_timeout = CONNECT_BUDGET;
    client_config.idle_timeout = ANSWER_BUDGET;
    client_config.max_retries = 0;
    let client = match Client::new(client_config) {
        Ok(client) => client,
        Err(err) => return Check::new("tool_call", Some(false), err.to_string(), err.hint()),
    };
    let model = config
        .plan_model
        .clone()
        .or_else(|| config.model.clone())
        .unwrap_or_default();
    let request = Request {
        model: model.clone(),
        system: Some(
            "You are being tested. Answer only by calling the tool you are given.".to_owned(),
        ),
        messages: vec![Message::user(format!(
            "Call the tool `{TOOL}` with {{\"ready\": true}}. Do not write anything else."
        ))],
        tools: vec![ToolSpec {
            name: TOOL.to_owned(),
            description: "Say that you are ready.".to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"ready": {"type": "boolean"}},
                "required": ["ready"],
            }),
        }],
        max_tokens: Some(200),
        temperature: Some(0.0),
        structured: None,
        grammar: None,
    };
    let answer = crate::rt::block_on(async {
        let mut sink = |_event| {};
        tokio::time::timeout(ANSWER_BUDGET * 2, client.complete(&request, &mut sink)).await
    });
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => return Check::new("tool_call", Some(false), err.message, None),
    };
    let response = match answer {
        Err(_) => {
            return Check::new(
                "tool_call",
                Some(false),
                format!(
                    "`{model}` did not answer within {}s",
                    (ANSWER_BUDGET * 2).as_secs()
                ),
                Some("a local server may still be loading the model; try again".to_owned()),
            )
            .timed(started);
        }
        Ok(Err(err)) => {
            return Check::new("tool_call", Some(false), err.to_string(), err.hint())
                .timed(started);
        }
        Ok(Ok(response)) => response,
    };
    let kind = classify(&response);
    let (ok, detail, hint) = match kind {
        ToolCalls::Native => (true, format!("`{model}` makes native tool calls"), None),
        ToolCalls::Text => (
            true,
            format!("`{model}` writes tool calls as text"),
            Some("set `tool_calls: text` for this model; with llama.cpp, start the server with `--jinja` for native calls".to_owned()),
        ),
        ToolCalls::None => (
            false,
            format!(
                "`{model}` answered without calling the tool: {}",
                excerpt(&response.text)
            ),
            Some("tick needs a model that calls tools; try a larger or an instruction-tuned model".to_owned()),
        ),
    };
    Check::new("tool_call", Some(ok), detail, hint).timed(started)
}

/// Native when the tool call came as one; text when the answer spells the call out.
pub fn classify(response: &crate::llm::Response) -> ToolCalls {
    if response.tool_calls.iter().any(|c| c.name == TOOL) {
        ToolCalls::Native
    } else if response.text.contains(TOOL)
        && (response.text.contains("<tool_call>") || response.text.contains("\"name\""))
    {
        ToolCalls::Text
    } else {
        ToolCalls::None
    }
}

fn excerpt(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.is_empty() {
        return "(nothing)".to_owned();
    }
    let short: String = one.chars().take(120).collect();
    if short.len() < one.len() {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Response, ToolCall};

    fn config_for(url: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let vars = [
            ("TICK_PROVIDER", "ollama"),
            ("TICK_MODEL", "m"),
            ("TICK_BASE_URL", url),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let env =
            crate::env::Env::fixed(dir.path().to_path_buf(), vars, chrono::DateTime::UNIX_EPOCH);
        let path = dir.path().join("config.yaml");
        crate::config::resolve(
            &path,
            "config.yaml",
            &crate::trust::TrustState::Untrusted,
            &env,
            &crate::config::Flags::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_closed_loopback_port_fails_at_once_with_advice() {
        // A port just closed can be handed to another test's listener at once (the tests run
        // in parallel): then it answers, and another port is tried.
        let (port, err) = (0..20)
            .find_map(|_| {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                let url = format!("http://127.0.0.1:{port}/v1");
                assert!(require_server(&config_for(&url)).is_ok());
                drop(listener);
                require_server(&config_for(&url))
                    .err()
                    .map(|err| (port, err))
            })
            .expect("twenty closed ports, each taken again before it was tried");
        assert_eq!(err.kind, crate::error::ErrorKind::Provider);
        assert!(
            err.message
                .starts_with(&format!("cannot connect to `127.0.0.1:{port}`"))
        );
        assert!(
            err.hints[0].starts_with("start the server"),
            "{:?}",
            err.hints
        );
    }

    #[test]
    fn the_port_comes_from_the_url_or_its_scheme() {
        assert_eq!(
            host_port("http://127.0.0.1:11434/v1"),
            Some(("127.0.0.1".into(), 11434))
        );
        assert_eq!(
            host_port("https://api.openai.com/v1"),
            Some(("api.openai.com".into(), 443))
        );
        assert_eq!(host_port("http://[::1]:8080"), Some(("::1".into(), 8080)));
        assert_eq!(host_port("localhost:11434"), None);
    }

    fn answer(text: &str, calls: &[&str]) -> Response {
        Response {
            text: text.to_owned(),
            tool_calls: calls
                .iter()
                .map(|name| ToolCall {
                    id: "call_1".into(),
                    name: (*name).to_owned(),
                    arguments: serde_json::json!({"ready": true}),
                    arguments_error: None,
                })
                .collect(),
            ..Response::default()
        }
    }

    #[test]
    fn tool_calls_are_told_apart() {
        assert_eq!(classify(&answer("", &[TOOL])), ToolCalls::Native);
        assert_eq!(classify(&answer("", &["other"])), ToolCalls::None);
        let text = "<tool_call>{\"name\": \"report_ready\", \"arguments\": {}}</tool_call>";
        assert_eq!(classify(&answer(text, &[])), ToolCalls::Text);
        let fenced = "```json\n{\"name\": \"report_ready\", \"arguments\": {}}\n```";
        assert_eq!(classify(&answer(fenced, &[])), ToolCalls::Text);
        assert_eq!(
            classify(&answer("I am ready: report_ready", &[])),
            ToolCalls::None
        );
    }
}
