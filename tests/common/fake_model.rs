//! A scriptable model server on 127.0.0.1, written on raw tokio so it can do what mock
//! frameworks cannot: stream a body chunk by chunk (split anywhere, even inside a UTF-8
//! character), pause between chunks, stall, or cut the connection mid-body. Every request it
//! receives is recorded for assertions.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// A loopback URL (`http://127.0.0.1:PORT/v1`) nobody listens on: the port was bound, then
/// released. Returns the URL and the port.
pub fn closed_port_url() -> (String, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    (format!("http://127.0.0.1:{port}/v1"), port)
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The conversation a request carries; panics when it carries none.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("the request has no messages: {}", self.body))
    }

    /// The text of every user message, in order.
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The text of the last user message (empty when there is none).
    pub fn last_user_text(&self) -> String {
        self.user_texts().pop().unwrap_or_default()
    }

    /// The tool results an OpenAI-style request carries, in order: (call id, content).
    pub fn tool_results(&self) -> Vec<(String, String)> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// The names of the tools offered (OpenAI or Anthropic shape); panics when the request
    /// offers none, so "not offered" can never pass on a request without tools.
    pub fn tool_names(&self) -> Vec<String> {
        let tools = self.body["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("the request offers no tools: {}", self.body));
        tools
            .iter()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or(t["name"].as_str())
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

#[derive(Debug, Clone)]
enum Step {
    Chunk(Vec<u8>),
    Delay(Duration),
    /// Close the socket without finishing the chunked body.
    Cut,
    /// Keep the socket open and send nothing more.
    Stall,
    /// Send this chunk again and again, pausing between, until the client hangs up.
    Forever(Vec<u8>, Duration),
}

/// The scripted answer to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    steps: Vec<Step>,
    /// Read the request, then never answer it (a server loading a model).
    silent: bool,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            steps: Vec::new(),
            silent: false,
        }
    }

    /// Accepts the request and never sends a single byte back.
    pub fn silent() -> Self {
        Self {
            silent: true,
            ..Self::status(200)
        }
    }

    /// A 200 event stream sending each item as its own network chunk.
    pub fn sse<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        chunks.into_iter().fold(
            Self::status(200).header("content-type", "text/event-stream"),
            Reply::chunk,
        )
    }

    /// A complete JSON body, as providers send errors.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::status(status)
            .header("content-type", "application/json")
            .chunk(body.to_string())
    }

    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    #[must_use]
    pub fn chunk(mut self, bytes: impl AsRef<[u8]>) -> Self {
        self.steps.push(Step::Chunk(bytes.as_ref().to_vec()));
        self
    }

    #[must_use]
    pub fn delay(mut self, pause: Duration) -> Self {
        self.steps.push(Step::Delay(pause));
        self
    }

    /// Drops every step after the first `n` chunks and closes the connection there.
    #[must_use]
    pub fn cut_after(mut self, n: usize) -> Self {
        let mut seen = 0;
        let keep = self
            .steps
            .iter()
            .position(|s| {
                if matches!(s, Step::Chunk(_)) {
                    seen += 1;
                }
                seen > n
            })
            .unwrap_or(self.steps.len());
        self.steps.truncate(keep);
        self.steps.push(Step::Cut);
        self
    }

    /// Sends what was scripted so far, then `chunk` every `pause` until the client hangs up:
    /// a model that loops, whose tokens keep any idle timeout from firing.
    #[must_use]
    pub fn forever(mut self, chunk: impl AsRef<[u8]>, pause: Duration) -> Self {
        self.steps
            .push(Step::Forever(chunk.as_ref().to_vec(), pause));
        self
    }

    /// Sends what was scripted so far, then goes silent with the connection open.
    #[must_use]
    pub fn stall(mut self) -> Self {
        self.steps.push(Step::Stall);
        self
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    /// Set, a connection serves request after request and is closed by the server once it
    /// has been idle this long (as llama.cpp's server does after 5 s); unset, every answer
    /// ends with `connection: close`.
    keep_alive: Option<Duration>,
    /// Connections accepted so far.
    connections: usize,
}

/// The running server. Dropping it stops the server and every open connection.
pub struct FakeModel {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

/// An address of this machine that is not loopback, for a server that stands for someone
/// else's: the first IPv4 address `hostname -I` lists that is not loopback, else `127.0.0.2`
/// (still loopback, on a machine with no other interface; tick's checks do not treat it
/// differently, but the test then proves less).
pub fn this_machines_outside_address() -> std::net::IpAddr {
    std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|word| word.parse::<std::net::IpAddr>().ok())
                .find(|ip| ip.is_ipv4() && !ip.is_loopback())
        })
        .filter(|ip| std::net::TcpListener::bind((*ip, 0)).is_ok())
        .unwrap_or(std::net::IpAddr::from([127, 0, 0, 2]))
}

impl FakeModel {
    pub async fn start() -> Self {
        Self::start_on(std::net::IpAddr::from([127, 0, 0, 1])).await
    }

    /// A server on `ip` (say [`this_machines_outside_address`]), on a free port.
    pub async fn start_on(ip: std::net::IpAddr) -> Self {
        Self::serving(ip, None).await
    }

    /// A server that keeps each connection open for the next request and closes it once it
    /// has been idle for `idle`, as a local model server does (llama.cpp: 5 s).
    pub async fn start_keep_alive(idle: Duration) -> Self {
        Self::serving(std::net::IpAddr::from([127, 0, 0, 1]), Some(idle)).await
    }

    async fn serving(ip: std::net::IpAddr, keep_alive: Option<Duration>) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            keep_alive,
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            // Owned here so aborting this task also ends every connection, stalled ones too.
            let mut connections = JoinSet::new();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                shared.lock().unwrap().connections += 1;
                connections.spawn(serve_connection(socket, Arc::clone(&shared)));
            }
        });
        Self { addr, state, task }
    }

    /// Queues the answer to the next unanswered request. An unscripted request gets a 599.
    pub fn push(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().replies.push_back(reply);
        self
    }

    /// `http://127.0.0.1:<port>`, with no path.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many connections the server has accepted.
    pub fn connections(&self) -> usize {
        self.state.lock().unwrap().connections
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Waits (up to 5 s) until `n` requests have arrived: the client under test is then
    /// inside its model call.
    pub async fn wait_for_requests(&self, n: usize) {
        for _ in 0..250 {
            if self.requests().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{n} requests did not arrive within 5 s");
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves one connection: one request, or (keep-alive) requests until it is idle too long.
async fn serve_connection(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let keep_alive = state.lock().unwrap().keep_alive;
    let Some(idle) = keep_alive else {
        serve(&mut socket, &state, false).await;
        return;
    };
    loop {
        let readable = tokio::time::timeout(idle, socket.readable()).await;
        if !matches!(readable, Ok(Ok(()))) || !serve(&mut socket, &state, true).await {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

/// Answers one request; `true` when the connection may serve another.
async fn serve(socket: &mut TcpStream, state: &Mutex<State>, keep_alive: bool) -> bool {
    let Some(request) = read_request(socket).await else {
        return false;
    };
    let reply = {
        let mut state = state.lock().unwrap();
        state.requests.push(request);
        state.replies.pop_front()
    };
    let reply = reply.unwrap_or_else(|| Reply::status(599).chunk("no scripted reply"));
    if reply.silent {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return false;
    }

    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str(if keep_alive {
        "transfer-encoding: chunked\r\n\r\n"
    } else {
        "transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    });
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for step in reply.steps {
        match step {
            Step::Chunk(bytes) => {
                if bytes.is_empty() {
                    continue; // an empty chunk would end the body
                }
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                if socket.write_all(&frame).await.is_err() || socket.flush().await.is_err() {
                    return false;
                }
            }
            Step::Delay(pause) => tokio::time::sleep(pause).await,
            Step::Cut => return false,
            Step::Stall => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return false;
            }
            Step::Forever(bytes, pause) => loop {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                if socket.write_all(&frame).await.is_err() || socket.flush().await.is_err() {
                    return false;
                }
                tokio::time::sleep(pause).await;
            },
        }
    }
    if socket.write_all(b"0\r\n\r\n").await.is_err() || !keep_alive {
        let _ = socket.shutdown().await;
        return false;
    }
    true
}

async fn read_request(socket: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
