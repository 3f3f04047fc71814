//! The connections to the configured MCP servers, on a thread of their own.
//!
//! tick's tools are synchronous and run inside a turn that already holds the thread's async
//! runtime, so the MCP clients cannot share it. A [`Hub`] owns one thread with its own
//! runtime: it starts every server at once (each within its startup timeout), lists their
//! tools, and then serves calls that come in over a channel, each within its call timeout.
//! Stdio servers are spawned from that thread, so the sandbox helper (whose parent-death
//! signal follows the spawning thread) lives exactly as long as the hub; when the hub is
//! dropped the thread ends and every server with it.
//!
//! Nothing here trusts a server: a server that does not start, dies, hangs, or answers
//! garbage gives an error message, never a hang (the caller's wait has its own bound too). A
//! stdio server that stopped is started again only when a call asks for it
//! ([`Hub::call_restarting`]); [`super::Offered`] asks once a step.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;

use super::config::{Server, Transport};
use crate::sandbox::Policy;

/// How much of a stdio server's stderr is kept, to say why it stopped.
const STDERR_TAIL: usize = 2048;
/// The longest result text a call keeps before the caller's own cap (which is smaller).
const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;
/// How much longer than the call timeout the caller waits for the hub's answer.
const GRACE: Duration = Duration::from_secs(5);

/// One tool a server lists, as tick uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    /// The JSON schema of its arguments, as the server sent it.
    pub input_schema: Value,
    /// The server's `readOnlyHint`: a suggestion for `tick mcp list`, never a decision.
    pub read_only_hint: Option<bool>,
}

/// How stdio servers are contained.
#[derive(Debug, Clone)]
pub enum Containment {
    /// Under this policy (read-only while planning, the run's while executing); the server's
    /// own `network` setting decides its network.
    Sandboxed(Policy),
    /// Without a sandbox: the person opted out (`--no-sandbox`, `sandbox: off`).
    Unsandboxed { workspace: PathBuf },
    /// The sandbox is on but cannot be set up here: stdio servers are not started.
    Unavailable(String),
}

/// A server after the hub tried to start it.
#[derive(Debug, Clone)]
pub struct Started {
    pub server: Server,
    /// Its tools, or why it could not be started.
    pub tools: Result<Vec<RemoteTool>, String>,
    /// How long starting (and listing) took.
    pub took: Duration,
}

struct Job {
    server: usize,
    tool: String,
    arguments: Value,
    /// Whether a server that stopped may be started again for this call.
    restart: bool,
    reply: std::sync::mpsc::Sender<Answer>,
}

/// A call's answer: the result text or the error for the model, and what befell the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub result: Result<String, String>,
    /// The server had stopped and was started again for this call.
    pub restarted: bool,
    /// The server stopped during this call (it crashed or exited).
    pub stopped: bool,
}

impl Answer {
    fn error(text: String) -> Answer {
        Answer {
            result: Err(text),
            restarted: false,
            stopped: false,
        }
    }
}

/// The running servers. Cheap to clone: clones share the servers.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    started: Vec<Started>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .inner
            .started
            .iter()
            .map(|s| s.server.name.as_str())
            .collect();
        f.debug_struct("Hub").field("servers", &names).finish()
    }
}

impl Hub {
    /// Starts `servers` (all at once) and waits until each has listed its tools or failed.
    /// `var` reads tick's environment: the allow-listed variables, `env_vars` and bearer
    /// tokens come from it.
    pub fn start(
        servers: &[Server],
        containment: Containment,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Hub {
        let prepared: Vec<Prepared> = servers.iter().map(|s| Prepared::new(s, var)).collect();
        let (jobs, receiver) = tokio::sync::mpsc::unbounded_channel();
        let (report, reported) = std::sync::mpsc::channel();
        let longest = servers
            .iter()
            .map(|s| s.startup_timeout)
            .max()
            .unwrap_or_default();
        let spawned = std::thread::Builder::new()
            .name("tick-mcp".to_owned())
            .spawn(move || serve(prepared, containment, receiver, report));
        let started = match spawned {
            Ok(_) => reported.recv_timeout(longest + GRACE).ok(),
            Err(_) => None,
        };
        let started = started.unwrap_or_else(|| {
            servers
                .iter()
                .map(|server| Started {
                    server: server.clone(),
                    tools: Err("tick's MCP thread did not start".to_owned()),
                    took: Duration::ZERO,
                })
                .collect()
        });
        Hub {
            inner: Arc::new(Inner { jobs, started }),
        }
    }

    /// Every server, started or not, in the order given.
    pub fn servers(&self) -> &[Started] {
        &self.inner.started
    }

    /// Calls `tool` of the server `server` with `arguments` (a JSON object): the result as
    /// text for the model, or an error message for it. Bounded by the server's call timeout.
    /// A server that stopped is not started again ([`Hub::call_restarting`] may).
    pub fn call(&self, server: &str, tool: &str, arguments: &Value) -> Result<String, String> {
        self.call_restarting(server, tool, arguments, false).result
    }

    /// [`Hub::call`]; with `restart`, a stdio server that stopped (it crashed or exited) is
    /// started again first, and the answer says so.
    pub fn call_restarting(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        restart: bool,
    ) -> Answer {
        let Some((index, started)) = self
            .inner
            .started
            .iter()
            .enumerate()
            .find(|(_, s)| s.server.name == server)
        else {
            return Answer::error(format!("there is no MCP server `{server}`"));
        };
        let (reply, answer) = std::sync::mpsc::channel();
        let job = Job {
            server: index,
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            restart,
            reply,
        };
        if self.inner.jobs.send(job).is_err() {
            return Answer::error(format!("the MCP server `{server}` is not running"));
        }
        // Starting again takes its startup time too.
        let wait = started.server.call_timeout
            + GRACE
            + if restart {
                started.server.startup_timeout
            } else {
                Duration::ZERO
            };
        answer.recv_timeout(wait).unwrap_or_else(|_| {
            Answer::error(format!(
                "the MCP server `{server}` did not answer `{tool}` within {}s",
                wait.as_secs()
            ))
        })
    }
}

/// What the hub thread needs of a server, with the environment already read.
struct Prepared {
    server: Server,
    /// The stdio server's environment.
    vars: Vec<(String, String)>,
    /// The HTTP server's bearer token, or why it is missing.
    token: Result<Option<String>, String>,
}

impl Prepared {
    fn new(server: &Server, var: &dyn Fn(&str) -> Option<String>) -> Prepared {
        let mut vars = Vec::new();
        let mut token = Ok(None);
        match &server.transport {
            Transport::Stdio { env, env_vars, .. } => {
                let names = crate::tools::bash::PASSED_ENV
                    .iter()
                    .map(|&n| n.to_owned())
                    .chain(env_vars.iter().cloned());
                for name in names {
                    if let Some(value) = var(&name) {
                        vars.push((name, value));
                    }
                }
                vars.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Transport::Http {
                bearer_token_env_var: Some(name),
                ..
            } => {
                token = match var(name) {
                    Some(value) if !value.is_empty() => {
                        crate::redact::register(&value);
                        Ok(Some(value))
                    }
                    _ => Err(format!(
                        "`{name}` (its `bearer_token_env_var`) is not set in tick's environment"
                    )),
                };
            }
            Transport::Http { .. } => {}
        }
        Prepared {
            server: server.clone(),
            vars,
            token,
        }
    }
}

/// A started server's client, and the tail of its stderr (stdio).
struct Connected {
    client: RunningService<RoleClient, ()>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

/// The hub thread: start, report, then serve calls until every [`Hub`] clone is gone.
fn serve(
    prepared: Vec<Prepared>,
    containment: Containment,
    mut jobs: tokio::sync::mpsc::UnboundedReceiver<Job>,
    report: std::sync::mpsc::Sender<Vec<Started>>,
) {
    // The hub thread's own runtime (`crate::rt`): its clients live and die on it.
    let _ = crate::rt::block_on(async move {
        let starts = prepared.iter().map(|p| start_one(p, &containment));
        let results = futures_util::future::join_all(starts).await;
        let mut clients = Vec::new();
        let mut started = Vec::new();
        for (p, (result, took)) in prepared.iter().zip(results) {
            let tools = match result {
                Ok((connected, tools)) => {
                    clients.push(Some(Arc::new(connected)));
                    Ok(tools)
                }
                Err(err) => {
                    clients.push(None);
                    Err(err)
                }
            };
            started.push(Started {
                server: p.server.clone(),
                tools,
                took,
            });
        }
        let errors: Vec<Option<String>> = started.iter().map(|s| s.tools.clone().err()).collect();
        let timeouts: Vec<Duration> = started.iter().map(|s| s.server.call_timeout).collect();
        let names: Vec<String> = started.iter().map(|s| s.server.name.clone()).collect();
        // Set by a call that saw its server stop, before its answer is sent: the next call
        // knows even before the transport says so.
        let dead: Arc<Vec<AtomicBool>> =
            Arc::new(started.iter().map(|_| AtomicBool::new(false)).collect());
        let _ = report.send(started);
        while let Some(job) = jobs.recv().await {
            let name = names[job.server].clone();
            let Some(mut connected) = clients[job.server].clone() else {
                let why = errors[job.server].clone().unwrap_or_default();
                let _ = job.reply.send(Answer::error(format!(
                    "the MCP server `{name}` is not running: {why}"
                )));
                continue;
            };
            let mut restarted = false;
            if dead[job.server].load(Ordering::SeqCst)
                || connected.client.peer().is_transport_closed()
                || connected.client.is_closed()
            {
                let stopped = with_stderr(
                    format!("the MCP server `{name}` stopped earlier"),
                    &connected.stderr,
                );
                if !job.restart {
                    let _ = job.reply.send(Answer::error(format!(
                        "{stopped}, and it was started again once in this step already: it \
                         stays stopped for the rest of the step"
                    )));
                    continue;
                }
                match start_one(&prepared[job.server], &containment).await.0 {
                    Ok((again, _)) => {
                        connected = Arc::new(again);
                        clients[job.server] = Some(connected.clone());
                        dead[job.server].store(false, Ordering::SeqCst);
                        restarted = true;
                    }
                    Err(err) => {
                        let mut answer = Answer::error(format!(
                            "{stopped}, and it could not be started again: {err}"
                        ));
                        answer.restarted = true;
                        let _ = job.reply.send(answer);
                        continue;
                    }
                }
            }
            let timeout = timeouts[job.server];
            let dead = dead.clone();
            tokio::spawn(async move {
                let result = call_one(&connected, &name, &job.tool, job.arguments, timeout).await;
                let stopped = result.as_ref().is_err_and(|e| e.contains("stopped during"))
                    || (result.is_err() && connected.client.peer().is_transport_closed());
                if stopped {
                    dead[job.server].store(true, Ordering::SeqCst);
                }
                let _ = job.reply.send(Answer {
                    result,
                    restarted,
                    stopped,
                });
            });
        }
    });
}

async fn start_one(
    prepared: &Prepared,
    containment: &Containment,
) -> (Result<(Connected, Vec<RemoteTool>), String>, Duration) {
    let begun = Instant::now();
    let server = &prepared.server;
    let result = tokio::time::timeout(server.startup_timeout, connect(prepared, containment)).await;
    let result = match result {
        Ok(result) => result,
        Err(_) => Err(format!(
            "did not start and list its tools within {}s (`startup_timeout_s`)",
            server.startup_timeout.as_secs()
        )),
    };
    (result, begun.elapsed())
}

async fn connect(
    prepared: &Prepared,
    containment: &Containment,
) -> Result<(Connected, Vec<RemoteTool>), String> {
    let server = &prepared.server;
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    let client = match &server.transport {
        Transport::Stdio {
            command,
            args,
            network,
            ..
        } => {
            let mut std_command = match containment {
                Containment::Sandboxed(policy) => policy
                    .clone()
                    .with_stdio()
                    .with_server_network(*network)
                    .command(command, args),
                Containment::Unsandboxed { workspace } => {
                    let mut c = std::process::Command::new(command);
                    c.args(args).current_dir(workspace);
                    c
                }
                Containment::Unavailable(why) => return Err(why.clone()),
            };
            std_command.env_clear().envs(prepared.vars.iter().cloned());
            let mut tokio_command = tokio::process::Command::from(std_command);
            tokio_command.kill_on_drop(true);
            let (transport, err_pipe) = rmcp::transport::TokioChildProcess::builder(tokio_command)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|err| format!("could not start `{command}`: {err}"))?;
            if let Some(mut pipe) = err_pipe {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if let Ok(mut tail) = tail.lock() {
                            tail.extend(&buf[..n]);
                            while tail.len() > STDERR_TAIL {
                                tail.pop_front();
                            }
                        }
                    }
                });
            }
            let client = ().serve(transport).await;
            client.map_err(|err| with_stderr(format!("did not start: {err}"), &stderr))?
        }
        Transport::Http { url, headers, .. } => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let token = prepared.token.clone()?;
            let mut map = std::collections::HashMap::new();
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(value),
                ) {
                    map.insert(name, value);
                }
            }
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(map)
                .max_json_response_size(MAX_RESULT_BYTES * 4);
            if let Some(token) = token {
                config = config.auth_header(token);
            }
            // rmcp builds its own reqwest client here, and that needs the provider too.
            crate::tls::install_crypto_provider();
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            ().serve(transport)
                .await
                .map_err(|err| format!("could not connect to `{url}`: {err}"))?
        }
    };
    let listed = client
        .list_all_tools()
        .await
        .map_err(|err| with_stderr(format!("did not list its tools: {err}"), &stderr))?;
    let tools = listed
        .into_iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .map(|tool| RemoteTool {
            name: tool["name"].as_str().unwrap_or_default().to_owned(),
            description: tool["description"].as_str().unwrap_or_default().to_owned(),
            input_schema: tool
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
            read_only_hint: tool["annotations"]["readOnlyHint"].as_bool(),
        })
        .filter(|tool| !tool.name.is_empty())
        .collect();
    Ok((Connected { client, stderr }, tools))
}

async fn call_one(
    connected: &Connected,
    server: &str,
    tool: &str,
    arguments: Value,
    timeout: Duration,
) -> Result<String, String> {
    let mut params = rmcp::model::CallToolRequestParams::new(tool.to_owned());
    params.arguments = match arguments {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => {
            return Err(format!(
                "the arguments of `{tool}` must be a JSON object, not {other}"
            ));
        }
    };
    let call = connected.client.peer().call_tool(params);
    let result = match tokio::time::timeout(timeout, call).await {
        Err(_) => {
            return Err(format!(
                "the MCP server `{server}` did not answer `{tool}` within {}s \
                 (`call_timeout_s`); nothing more is known of the call",
                timeout.as_secs()
            ));
        }
        Ok(Err(rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_))) => {
            return Err(with_stderr(
                format!("the MCP server `{server}` stopped during `{tool}` (it crashed or exited)"),
                &connected.stderr,
            ));
        }
        Ok(Err(err)) => return Err(format!("the MCP server `{server}` refused `{tool}`: {err}")),
        Ok(Ok(result)) => result,
    };
    let value = serde_json::to_value(&result).unwrap_or_default();
    let text = result_text(&value);
    if value["isError"].as_bool() == Some(true) {
        Err(format!("`{tool}` failed: {text}"))
    } else {
        Ok(text)
    }
}

/// The text of a `tools/call` result: its text blocks, others described in a line, the
/// structured content when there is nothing else. Bounded by [`MAX_RESULT_BYTES`].
pub fn result_text(result: &Value) -> String {
    let mut out = String::new();
    for block in result["content"].as_array().into_iter().flatten() {
        if out.len() >= MAX_RESULT_BYTES {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        match block["type"].as_str() {
            Some("text") => out.push_str(block["text"].as_str().unwrap_or_default()),
            Some("resource") => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => out.push_str(text),
                    None => out.push_str(&format!(
                        "[resource {}]",
                        resource["uri"].as_str().unwrap_or("?")
                    )),
                }
            }
            Some(kind @ ("image" | "audio")) => out.push_str(&format!(
                "[{kind} {}, {} bytes of base64, not shown]",
                block["mimeType"].as_str().unwrap_or("?"),
                block["data"].as_str().map_or(0, str::len)
            )),
            Some("resource_link") => {
                out.push_str(&format!("[link {}]", block["uri"].as_str().unwrap_or("?")));
            }
            _ => out.push_str(&block.to_string()),
        }
    }
    if out.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        out = structured.to_string();
    }
    if out.len() > MAX_RESULT_BYTES {
        let mut end = MAX_RESULT_BYTES;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

fn with_stderr(message: String, stderr: &Mutex<VecDeque<u8>>) -> String {
    let tail = stderr
        .lock()
        .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>()).into_owned())
        .unwrap_or_default();
    let last = tail.lines().rev().find(|l| !l.trim().is_empty());
    match last {
        Some(line) => format!(
            "{message}; its last words: {}",
            crate::text::visible(line.trim())
        ),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_text_joins_blocks_and_describes_the_rest() {
        let result = json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
        ]});
        assert_eq!(
            result_text(&result),
            "one\n[image image/png, 4 bytes of base64, not shown]\nbody"
        );
        assert_eq!(
            result_text(&json!({"content": [], "structuredContent": {"a": 1}})),
            "{\"a\":1}"
        );
        let big = "é".repeat(MAX_RESULT_BYTES);
        let text = result_text(&json!({"content": [{"type": "text", "text": big}]}));
        assert!(text.len() <= MAX_RESULT_BYTES);
    }

    #[test]
    fn a_server_that_cannot_start_is_an_error_not_a_hang() {
        let server = super::super::config::resolve(
            "gone",
            &serde_yaml::from_str("command: /no/such/program\nstartup_timeout_s: 2\n").unwrap(),
            "f",
        )
        .unwrap();
        let hub = Hub::start(
            &[server],
            Containment::Unsandboxed {
                workspace: std::env::temp_dir(),
            },
            &|_| None,
        );
        let err = hub.servers()[0].tools.clone().unwrap_err();
        assert!(
            err.starts_with("could not start `/no/such/program`"),
            "{err}"
        );
        let err = hub.call("gone", "x", &json!({})).unwrap_err();
        assert!(err.contains("is not running"), "{err}");
        assert_eq!(
            hub.call("other", "x", &json!({})).unwrap_err(),
            "there is no MCP server `other`"
        );
    }

    #[test]
    fn a_server_that_answers_garbage_times_out_at_startup() {
        let server = super::super::config::resolve(
            "noise",
            &serde_yaml::from_str(
                "command: sh\nargs: [-c, 'while true; do echo garbage; sleep 0.1; done']\n\
                 startup_timeout_s: 1\n",
            )
            .unwrap(),
            "f",
        )
        .unwrap();
        let begun = Instant::now();
        let hub = Hub::start(
            &[server],
            Containment::Unsandboxed {
                workspace: std::env::temp_dir(),
            },
            &|name| (name == "PATH").then(|| "/usr/bin:/bin".to_owned()),
        );
        let err = hub.servers()[0].tools.clone().unwrap_err();
        assert!(err.contains("within 1s"), "{err}");
        assert!(begun.elapsed() < Duration::from_secs(5));
    }
}
