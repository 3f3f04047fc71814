//! A real MCP server for the tests, built with rmcp's server side: over stdio (this test
//! binary started again as the server, see [`stdio_entry`]) and over streamable HTTP on
//! 127.0.0.1 ([`HttpServer`]).
//!
//! Its tools: `search` (no annotations), `peek` (says `readOnlyHint: true`), `write_note`
//! (writes a file in its working directory, says `readOnlyHint: true` although it writes),
//! `sleep` (sleeps `seconds`), `crash` (the process exits; stdio only), `big` (10 MB of text)
//! and `leak` (a token-like secret in its answer).

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::json;

/// The variable that turns the test binary into the stdio server.
pub const SERVE_VAR: &str = "TICK_TEST_MCP_SERVER";
/// The bytes `big` answers with.
pub const BIG: usize = 10 * 1024 * 1024;
/// What `leak` answers with: a token tick must redact.
pub const LEAKED: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

#[derive(Clone)]
pub struct TestServer;

fn tools() -> serde_json::Value {
    let object = json!({"type": "object", "properties": {}});
    json!({"tools": [
        {"name": "search", "description": "Searches the notes.", "inputSchema":
            {"type": "object", "properties": {"query": {"type": "string"}}}},
        {"name": "peek", "description": "Peeks.", "inputSchema": object,
            "annotations": {"readOnlyHint": true}},
        {"name": "write_note", "description": "Writes a note.", "inputSchema":
            {"type": "object", "properties": {"path": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}},
        {"name": "sleep", "description": "Sleeps.", "inputSchema":
            {"type": "object", "properties": {"seconds": {"type": "number"}}}},
        {"name": "crash", "description": "Exits.", "inputSchema": object,
            "annotations": {"destructiveHint": true}},
        {"name": "big", "description": "Ten megabytes.", "inputSchema": object},
        {"name": "leak", "description": "Shows a token.", "inputSchema": object},
    ]})
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(serde_json::from_value(tools()).unwrap())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match &*request.name {
            "search" => format!("found notes for {}", args["query"]),
            "peek" => "peeked".to_owned(),
            "write_note" => {
                let path = args["path"].as_str().unwrap_or("note.txt");
                if let Err(err) = std::fs::write(path, "written by the MCP server\n") {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "could not write `{path}`: {err}"
                    ))])
                    .into());
                }
                format!("wrote {path}")
            }
            "sleep" => {
                let seconds = args["seconds"].as_f64().unwrap_or(30.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                "slept".to_owned()
            }
            "crash" => {
                // Its last words, which tick shows the model.
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"test server: crashing as asked\n",
                );
                std::process::exit(3);
            }
            "big" => "x".repeat(BIG),
            "leak" => format!("the token is {LEAKED}"),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The command and arguments that start this test binary as the stdio server: only the
/// entry test runs, and it serves when [`SERVE_VAR`] is set. libtest's own lines on stdout
/// are not JSON, which MCP clients skip.
pub fn stdio_entry() -> (String, Vec<String>) {
    let exe = std::env::current_exe().unwrap();
    (
        exe.to_string_lossy().into_owned(),
        [
            "suite::mcp_client::stdio_test_server",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(str::to_owned)
        .to_vec(),
    )
}

/// Serves [`TestServer`] on this process's stdin and stdout until the client goes, then
/// exits the process (the test harness must not print after it).
pub fn serve_stdio() -> ! {
    // libtest has written `test NAME ... ` without a newline: end its line, so that the first
    // message is a line of its own.
    {
        use std::io::Write as _;
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        if let Ok(service) = TestServer.serve(rmcp::transport::stdio()).await {
            let _ = service.waiting().await;
        }
    });
    std::process::exit(0);
}

/// [`TestServer`] over streamable HTTP on 127.0.0.1, on a thread of its own; stops when
/// dropped.
pub struct HttpServer {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HttpServer {
    pub fn start() -> HttpServer {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let (ready, url) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let service: StreamableHttpService<TestServer, LocalSessionManager> =
                    StreamableHttpService::new(
                        || Ok(TestServer),
                        std::sync::Arc::default(),
                        StreamableHttpServerConfig::default(),
                    );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                ready.send(format!("http://{addr}/mcp")).unwrap();
                let serve = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let service = service.clone();
                        tokio::spawn(async move {
                            let io = hyper_util::rt::TokioIo::new(stream);
                            let service = hyper_util::service::TowerToHyperService::new(service);
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, service)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
        });
        HttpServer {
            url: url.recv_timeout(Duration::from_secs(10)).unwrap(),
            stop: Some(stop),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
