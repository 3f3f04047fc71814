//! Finding a model server on this machine when nothing says which to use: the usual local
//! servers (llama.cpp, Ollama, LM Studio, vLLM at their default ports) are asked at once which
//! models they serve, within one short deadline, and the first of them (in the order given)
//! that answers with a model wins. A server that accepts a connection and never answers costs
//! the deadline, never more; a refused port costs nothing.
//!
//! The candidates are passed in: the binary reads them from [`CANDIDATES_VAR`] when it is set
//! (tests, and people whose servers listen elsewhere), else uses [`default_candidates`].

use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;

/// The environment variable that replaces the list of servers probed: `kind=url` pairs
/// separated by commas (`llamacpp=http://127.0.0.1:8081/v1,ollama=...`), or `none`.
pub const CANDIDATES_VAR: &str = "TICK_LOCAL_SERVERS";

/// How long the whole probe may take, all servers together.
pub const PROBE_BUDGET: Duration = Duration::from_millis(300);

/// Which kind of server a candidate is, for the settings it implies and for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Ollama,
    LmStudio,
    Vllm,
}

impl ServerKind {
    /// The name people know it by.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Ollama => "Ollama",
            ServerKind::LmStudio => "LM Studio",
            ServerKind::Vllm => "vLLM",
        }
    }

    /// The word for it in [`CANDIDATES_VAR`].
    pub fn key(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llamacpp",
            ServerKind::Ollama => "ollama",
            ServerKind::LmStudio => "lmstudio",
            ServerKind::Vllm => "vllm",
        }
    }

    fn from_key(key: &str) -> Option<ServerKind> {
        [
            ServerKind::LlamaCpp,
            ServerKind::Ollama,
            ServerKind::LmStudio,
            ServerKind::Vllm,
        ]
        .into_iter()
        .find(|kind| kind.key() == key.trim().to_ascii_lowercase())
    }
}

/// One server to ask: its kind and its OpenAI-compatible base URL (ending in `/v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub kind: ServerKind,
    pub base_url: String,
}

/// A server that answered with at least one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub kind: ServerKind,
    pub base_url: String,
    /// The models it serves, in the order it listed them.
    pub models: Vec<String>,
}

/// The usual local servers, in the order they are preferred: llama.cpp (what
/// `tick model setup` starts), Ollama, LM Studio, vLLM.
pub fn default_candidates() -> Vec<Candidate> {
    [
        (ServerKind::LlamaCpp, 8080),
        (ServerKind::Ollama, 11434),
        (ServerKind::LmStudio, 1234),
        (ServerKind::Vllm, 8000),
    ]
    .into_iter()
    .map(|(kind, port)| Candidate {
        kind,
        base_url: format!("http://127.0.0.1:{port}/v1"),
    })
    .collect()
}

/// The candidates [`CANDIDATES_VAR`] names: `none` (or nothing but spaces and commas) is none.
/// Only loopback URLs are accepted: this probe never leaves the machine.
pub fn parse_candidates(text: &str) -> Result<Vec<Candidate>, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut candidates = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((key, url)) = entry.split_once('=') else {
            return Err(format!("`{entry}` is not `kind=url`"));
        };
        let kind = ServerKind::from_key(key).ok_or_else(|| {
            format!("`{key}` is not a server kind (`llamacpp`, `ollama`, `lmstudio`, `vllm`)")
        })?;
        let url = url.trim().trim_end_matches('/');
        if !super::is_loopback_url(url) || !url.starts_with("http://") {
            return Err(format!(
                "`{url}` is not an `http://` URL on this machine (127.0.0.1, localhost)"
            ));
        }
        candidates.push(Candidate {
            kind,
            base_url: url.to_owned(),
        });
    }
    Ok(candidates)
}

/// Asks every candidate at once and returns the first, in the order given, that serves a
/// model; `None` when none does within `budget`. Returns as soon as the answer is settled: when
/// the first candidate answers, the others are not waited for.
pub async fn first_serving(candidates: &[Candidate], budget: Duration) -> Option<Found> {
    let deadline = tokio::time::Instant::now() + budget;
    let mut probes = JoinSet::new();
    for (index, candidate) in candidates.iter().enumerate() {
        let candidate = candidate.clone();
        probes.spawn(async move { (index, ask(&candidate).await) });
    }
    let mut answers: Vec<Option<Option<Found>>> = vec![None; candidates.len()];
    loop {
        // The best settled answer, once every candidate before it has answered or failed.
        for answer in &answers {
            match answer {
                Some(Some(found)) => return Some(found.clone()),
                Some(None) => {}
                None => break,
            }
        }
        match tokio::time::timeout_at(deadline, probes.join_next()).await {
            Ok(Some(Ok((index, found)))) => answers[index] = Some(found),
            Ok(Some(Err(_))) => {}
            // Everything answered, or the time is up: the first that served wins.
            Ok(None) | Err(_) => break,
        }
    }
    probes.abort_all();
    answers.into_iter().flatten().flatten().next()
}

/// [`first_serving`] from synchronous code, on a runtime of its own.
pub fn first_serving_now(candidates: &[Candidate], budget: Duration) -> Option<Found> {
    crate::rt::block_on(first_serving(candidates, budget))
        .ok()
        .flatten()
}

/// One server's models: its OpenAI-compatible `GET /v1/models`, and for Ollama also its own
/// `GET /api/tags` (the models pulled).
async fn ask(candidate: &Candidate) -> Option<Found> {
    let url = reqwest::Url::parse(&candidate.base_url).ok()?;
    let host = url.host_str()?.trim_matches(['[', ']']).to_owned();
    let port = url.port_or_known_default()?;
    let base = url.path().trim_end_matches('/').to_owned();
    let mut models = get_json(&host, port, &format!("{base}/models"))
        .await
        .map(|body| model_ids(&body))
        .unwrap_or_default();
    if models.is_empty() && candidate.kind == ServerKind::Ollama {
        let root = base.trim_end_matches("/v1");
        models = get_json(&host, port, &format!("{root}/api/tags"))
            .await
            .map(|body| model_ids(&body))
            .unwrap_or_default();
    }
    (!models.is_empty()).then(|| Found {
        kind: candidate.kind,
        base_url: candidate.base_url.clone(),
        models,
    })
}

/// The most of an answer read: a model list is a few kilobytes.
const MAX_ANSWER: u64 = 1 << 20;

/// A plain HTTP/1.0 `GET` on the loopback, its body as JSON when the status is 2xx. Written
/// out rather than through reqwest: building a client able to speak TLS took 90-170 ms here,
/// half the probe's budget, for a question asked in plain text to this machine.
async fn get_json(host: &str, port: u16, path: &str) -> Option<Value> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut socket = tokio::net::TcpStream::connect((host, port)).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    socket
        .take(MAX_ANSWER)
        .read_to_end(&mut answer)
        .await
        .ok()?;
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..split]).ok()?;
    let body = &answer[split + 4..];
    let status = head.split_whitespace().nth(1)?;
    if !status.starts_with('2') {
        return None;
    }
    let chunked = head.lines().any(|line| {
        let line = line.to_ascii_lowercase();
        line.starts_with("transfer-encoding:") && line.contains("chunked")
    });
    if chunked {
        serde_json::from_slice(&dechunk(body)?).ok()
    } else {
        serde_json::from_slice(body).ok()
    }
}

/// A chunked body's data (a server may chunk even an HTTP/1.0 answer).
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    loop {
        let end = body.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&body[..end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        body = &body[end + 2..];
        if size == 0 {
            return Some(data);
        }
        data.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

/// The model names in a model list: OpenAI's `data[].id`, or Ollama's `models[].name`.
fn model_ids(body: &Value) -> Vec<String> {
    let listed = |key: &str, field: &str| -> Vec<String> {
        body[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item[field].as_str())
                    .filter(|name| !name.trim().is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let ids = listed("data", "id");
    if ids.is_empty() {
        listed("models", "name")
    } else {
        ids
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    use super::*;

    /// A loopback server that answers every request with `body` (status 200, JSON).
    async fn serving(body: &'static str) -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut seen = Vec::new();
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        (url, task)
    }

    /// A loopback server that accepts connections and never answers.
    async fn silent() -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        (url, task)
    }

    /// A loopback URL where nothing listens (the port was bound, then released).
    fn refused() -> String {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("http://127.0.0.1:{port}/v1")
    }

    fn candidate(kind: ServerKind, base_url: &str) -> Candidate {
        Candidate {
            kind,
            base_url: base_url.to_owned(),
        }
    }

    const MODELS: &str =
        r#"{"object":"list","data":[{"id":"qwen2.5-coder-1.5b-instruct","object":"model"}]}"#;

    #[tokio::test]
    async fn the_serving_one_is_found_past_a_silent_and_a_refused_one_within_the_budget() {
        let (serving_url, _serving) = serving(MODELS).await;
        let (silent_url, _silent) = silent().await;
        let candidates = [
            candidate(ServerKind::LlamaCpp, &silent_url),
            candidate(ServerKind::Ollama, &refused()),
            candidate(ServerKind::Vllm, &serving_url),
        ];
        let started = Instant::now();
        let found = first_serving(&candidates, PROBE_BUDGET).await.unwrap();
        let took = started.elapsed();
        assert_eq!(found.kind, ServerKind::Vllm);
        assert_eq!(found.base_url, serving_url);
        assert_eq!(found.models, ["qwen2.5-coder-1.5b-instruct"]);
        assert!(took < PROBE_BUDGET + Duration::from_millis(150), "{took:?}");
    }

    #[tokio::test]
    async fn the_first_serving_in_order_wins_and_is_not_kept_waiting_for_a_silent_one() {
        let (first, _a) = serving(MODELS).await;
        let (second, _b) =
            serving(r#"{"models":[{"name":"qwen3:latest"}],"data":[{"id":"other"}]}"#).await;
        let (silent_url, _silent) = silent().await;
        let candidates = [
            candidate(ServerKind::LlamaCpp, &first),
            candidate(ServerKind::LmStudio, &silent_url),
            candidate(ServerKind::Ollama, &second),
        ];
        let started = Instant::now();
        let found = first_serving(&candidates, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(found.base_url, first);
        // It did not wait out the silent server's five seconds.
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn nothing_serving_is_none_within_the_budget() {
        let (silent_url, _silent) = silent().await;
        let (empty, _empty) = serving(r#"{"object":"list","data":[]}"#).await;
        let (not_json, _not_json) = serving("<html>hello</html>").await;
        let candidates = [
            candidate(ServerKind::LlamaCpp, &silent_url),
            candidate(ServerKind::Ollama, &refused()),
            candidate(ServerKind::LmStudio, &empty),
            candidate(ServerKind::Vllm, &not_json),
        ];
        let started = Instant::now();
        assert_eq!(first_serving(&candidates, PROBE_BUDGET).await, None);
        let took = started.elapsed();
        assert!(took < PROBE_BUDGET + Duration::from_millis(150), "{took:?}");
        assert_eq!(first_serving(&[], PROBE_BUDGET).await, None);
    }

    #[tokio::test]
    async fn ollama_is_also_asked_on_its_own_endpoint() {
        // A server without `/v1/models` models but with Ollama's list.
        let (url, _server) = serving(r#"{"models":[{"name":"qwen2.5-coder:1.5b"}]}"#).await;
        let found = first_serving(&[candidate(ServerKind::Ollama, &url)], PROBE_BUDGET)
            .await
            .unwrap();
        assert_eq!(found.models, ["qwen2.5-coder:1.5b"]);
    }

    #[test]
    fn a_chunked_body_is_read() {
        assert_eq!(
            dechunk(b"4\r\n{\"a\"\r\n3;x=1\r\n:1}\r\n0\r\n\r\n").as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(dechunk(b"9\r\nshort"), None);
    }

    #[test]
    fn the_defaults_are_the_usual_ports_and_the_variable_replaces_them() {
        let defaults: Vec<String> = default_candidates()
            .into_iter()
            .map(|c| format!("{}={}", c.kind.key(), c.base_url))
            .collect();
        assert_eq!(
            defaults,
            [
                "llamacpp=http://127.0.0.1:8080/v1",
                "ollama=http://127.0.0.1:11434/v1",
                "lmstudio=http://127.0.0.1:1234/v1",
                "vllm=http://127.0.0.1:8000/v1",
            ]
        );
        assert_eq!(parse_candidates("none"), Ok(Vec::new()));
        assert_eq!(
            parse_candidates(" ollama=http://localhost:9/v1/ , vllm=http://127.0.0.1:1/v1"),
            Ok(vec![
                candidate(ServerKind::Ollama, "http://localhost:9/v1"),
                candidate(ServerKind::Vllm, "http://127.0.0.1:1/v1"),
            ])
        );
        assert!(
            parse_candidates("ollama=https://api.example.com/v1")
                .unwrap_err()
                .contains("on this machine")
        );
        assert!(
            parse_candidates("kobold=http://127.0.0.1:5001/v1")
                .unwrap_err()
                .contains("not a server kind")
        );
        assert!(parse_candidates("http://127.0.0.1:8080/v1").is_err());
    }
}
