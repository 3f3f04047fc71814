//! The HTTP side of a model call: which endpoint, which headers, the streaming read loop, and
//! the retry policy (backoff with jitter, `Retry-After`, and never a second request once part
//! of an answer was handed on).

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};
use futures_util::StreamExt as _;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};

use super::error::{ConnectCause, StatusContext, from_status};
use super::sse::{SseEvent, SseParser};
use super::{LlmError, Request, Response, StreamEvent, anthropic, openai};

/// Which wire format the server at `base_url` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Chat Completions: OpenAI, Ollama, llama.cpp, vLLM, OpenRouter, DeepSeek...
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

impl ProviderKind {
    /// The environment variable people usually keep this provider's key in.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// Everything the client needs, resolved before any call (the config module reads the
/// environment; this module never does).
#[derive(Clone)]
pub struct ClientConfig {
    pub kind: ProviderKind,
    /// `http://127.0.0.1:11434/v1` for OpenAI-compatible servers (the client appends
    /// `/chat/completions`); `https://api.anthropic.com` for Anthropic (the client appends
    /// `/v1/messages`, and tolerates a base that already ends in `/v1`).
    pub base_url: String,
    /// `None` for local servers that need no key.
    pub api_key: Option<String>,
    /// Where the key was supposed to come from, named in error messages.
    pub api_key_env: String,
    pub connect_timeout: Duration,
    /// Longest silence tolerated while waiting for the answer to start or continue.
    pub idle_timeout: Duration,
    /// Longest one attempt at an answer may take, streaming included: stops a model that
    /// loops while its tokens keep the idle timeout from ever firing.
    pub answer_timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub retry_base_delay: Duration,
    /// Upper bound on any wait between attempts, `Retry-After` included.
    pub retry_max_delay: Duration,
    /// The most kept of an answer's text and of each tool call's arguments while they stream
    /// (and of one line of the stream); beyond it the rest is dropped as it arrives and the
    /// call comes back as an error for the model. From `limits.max_write_bytes`
    /// ([`ClientConfig::answer_cap_for`]).
    pub max_answer_bytes: usize,
    /// How long a connection may wait in the pool for the next request; `None`: tick
    /// decides ([`LOCAL_POOL_IDLE`] for a server on this machine, reqwest's default for
    /// others).
    pub pool_idle: Option<Duration>,
}

/// How long a connection to a server on this machine waits in the pool for the next request:
/// under the 5 s after which llama.cpp's server (and Node's, under LM Studio) closes an idle
/// connection. A connection the server closed while nothing polled it (a step's commands run
/// between two model turns) looks open to the pool; reused, the request fails with
/// "connection closed before message completed".
pub const LOCAL_POOL_IDLE: Duration = Duration::from_secs(3);

/// What hyper says when the server closed a reused connection before it answered.
const CLOSED_BEFORE_ANSWER: &str = "connection closed before message completed";

impl ClientConfig {
    /// A config with tick's defaults: patient with slow local models, bounded retries.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            api_key: None,
            api_key_env: kind.default_api_key_env().to_owned(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            answer_timeout: Duration::from_secs(300),
            max_retries: 4,
            retry_base_delay: Duration::from_secs(1),
            retry_max_delay: Duration::from_secs(30),
            max_answer_bytes: super::assemble::DEFAULT_MAX_ANSWER_BYTES,
            pool_idle: None,
        }
    }

    /// The cap on a streamed answer for `max_write_bytes`: twice it (`edit_file` carries `old`
    /// and `new`, each up to the limit, and JSON escapes grow text), plus room for the rest
    /// of the call.
    pub fn answer_cap_for(max_write_bytes: usize) -> usize {
        max_write_bytes.saturating_mul(2).saturating_add(64 * 1024)
    }
}

// The key must never reach a log or a transcript through `{:?}`.
impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("answer_timeout", &self.answer_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("retry_max_delay", &self.retry_max_delay)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("pool_idle", &self.pool_idle)
            .finish()
    }
}

/// A streaming model client for one provider. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    config: ClientConfig,
    http: reqwest::Client,
    endpoint: String,
    loopback: bool,
}

const ANTHROPIC_VERSION: &str = "2023-06-01";

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        let base = reqwest::Url::parse(&config.base_url)
            .map_err(|err| err.to_string())
            .and_then(|url| match url.scheme() {
                "http" | "https" => Ok(url),
                // `localhost:11434` parses, with `localhost` as its scheme.
                _ => Err("it must start with `http://` or `https://`".to_owned()),
            })
            .map_err(|why| LlmError::Setup {
                message: format!("`base_url` `{}` is not a URL: {why}", config.base_url),
            })?;
        let base_path = config.base_url.trim_end_matches('/');
        let endpoint = match config.kind {
            ProviderKind::OpenAi => format!("{base_path}/chat/completions"),
            ProviderKind::Anthropic => format!(
                "{}/v1/messages",
                base_path.strip_suffix("/v1").unwrap_or(base_path)
            ),
        };
        crate::tls::install_crypto_provider();
        // Only connect and idle timeouts: a total timeout would kill a long, healthy stream.
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.idle_timeout);
        // A proxy cannot reach this machine's loopback; HTTP_PROXY must not break Ollama.
        let loopback = is_loopback(&base);
        if loopback {
            builder = builder.no_proxy();
        }
        match (config.pool_idle, loopback) {
            (Some(idle), _) => builder = builder.pool_idle_timeout(idle),
            (None, true) => builder = builder.pool_idle_timeout(LOCAL_POOL_IDLE),
            (None, false) => {}
        }
        let http = builder.build().map_err(|err| LlmError::Setup {
            message: error_chain(&err),
        })?;
        Ok(Self {
            config,
            http,
            endpoint,
            loopback,
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The server's root: `base_url` without a trailing `/v1`, where llama.cpp's `/props` and
    /// Ollama's `/api/show` live.
    pub fn server_root(&self) -> &str {
        let base = self.config.base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base)
    }

    /// A JSON document from the server (a GET, or a POST of `body`), within `timeout`, no
    /// retries; `None` on any failure. For optional facts about the server, such as its
    /// context size.
    pub async fn fetch_json(
        &self,
        path: &str,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Option<serde_json::Value> {
        let url = format!("{}{path}", self.server_root());
        let mut request = match body {
            Some(body) => self.http.post(&url).json(body),
            None => self.http.get(&url),
        };
        request = self.with_key(request);
        let response = tokio::time::timeout(timeout, request.send())
            .await
            .ok()?
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let bytes = tokio::time::timeout(timeout, response.bytes())
            .await
            .ok()?
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// `request` with the API key, if one is set, as the provider expects it.
    fn with_key(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some(key) = &self.config.api_key else {
            return request;
        };
        match self.config.kind {
            ProviderKind::OpenAi => request.bearer_auth(key),
            ProviderKind::Anthropic => request.header("x-api-key", key),
        }
    }

    /// Sends `req`, passes the answer to `sink` as it streams in, and returns it once whole.
    ///
    /// Transient failures (429, 5xx, connection errors, a stream that broke before anything
    /// reached `sink`) are retried with backoff; after the first event reached `sink` a
    /// failure is final, so the caller never sees one answer's beginning glued to another's
    /// end. A stream that stops early is [`LlmError::StreamCut`] and returns no tool call.
    /// An idle timeout is not retried: the silence (a huge prompt, a model loading) would
    /// most likely repeat and double the wait.
    pub async fn complete(
        &self,
        req: &Request,
        sink: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Response, LlmError> {
        let body = match self.config.kind {
            ProviderKind::OpenAi => openai::request_body(req),
            ProviderKind::Anthropic => anthropic::request_body(req),
        };
        let body = serde_json::to_vec(&body).map_err(|err| LlmError::Setup {
            message: format!("could not encode the request: {err}"),
        })?;
        let mut delays = ExponentialBuilder::new()
            .with_min_delay(self.config.retry_base_delay)
            .with_max_delay(self.config.retry_max_delay)
            .with_jitter()
            .with_max_times(usize::try_from(self.config.max_retries).unwrap_or(usize::MAX))
            .build();
        let mut attempts = 0_u32;
        let mut asked_again = false;
        loop {
            attempts += 1;
            let mut used = false;
            let attempt = self.attempt(&body, sink, &mut used);
            let err = match tokio::time::timeout(self.config.answer_timeout, attempt).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(err)) => err,
                // Not retried: the same question would most likely loop the same way.
                Err(_) => {
                    return Err(LlmError::AnswerTimeout {
                        after: self.config.answer_timeout,
                    });
                }
            };
            if used || !err.is_retryable() {
                return Err(err.with_attempts(attempts));
            }
            // A pooled connection the server had closed: the request never reached it, and a
            // new connection will do. Asked again at once, once, and not counted.
            if !asked_again && closed_before_answer(&err) {
                asked_again = true;
                attempts -= 1;
                continue;
            }
            // Nothing listening, or a name that does not resolve: waiting through every
            // retry would only delay saying so (`LlmError::is_final`).
            if err.is_final(self.loopback, attempts) {
                return Err(err.with_attempts(attempts));
            }
            let Some(backoff) = delays.next() else {
                return Err(err.with_attempts(attempts));
            };
            let delay = err
                .retry_after()
                .unwrap_or(backoff)
                .min(self.config.retry_max_delay);
            // Said before the wait, so a person (or a `--json` reader) knows why nothing comes.
            sink(StreamEvent::Retrying {
                attempt: attempts + 1,
                of: self.config.max_retries.saturating_add(1),
                wait: delay,
                reason: err.to_string(),
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// One request. `used` turns true as soon as any part of the answer reached `sink`.
    async fn attempt(
        &self,
        body: &[u8],
        sink: &mut (dyn FnMut(StreamEvent) + Send),
        used: &mut bool,
    ) -> Result<Response, LlmError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.to_vec());
        request = self.with_key(request);
        if self.config.kind == ProviderKind::Anthropic {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let response = request.send().await.map_err(|err| self.send_error(&err))?;

        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            // The body only explains the failure; if it cannot be read, the status still does.
            let text = response.text().await.unwrap_or_default();
            return Err(from_status(
                status.as_u16(),
                &text,
                retry_after,
                &StatusContext {
                    url: &self.endpoint,
                    key_env: &self.config.api_key_env,
                },
            ));
        }

        let mut decoder = Decoder::with_cap(self.config.kind, self.config.max_answer_bytes);
        // One line of the stream carries at most one event: a fragment, or a whole answer from
        // a server that does not stream. Room for a whole call at the cap, JSON-escaped again.
        let mut parser = SseParser::with_max_line(self.config.max_answer_bytes.saturating_mul(2));
        let mut events = Vec::new();
        let mut out = Vec::new();
        let mut bytes = response.bytes_stream();
        loop {
            let ended = match bytes.next().await {
                Some(Ok(chunk)) => {
                    parser.push(&chunk, &mut events);
                    if let Some(line) = parser.oversized() {
                        return Err(LlmError::Protocol {
                            message: format!(
                                "one line of the answer was over {line} bytes; tick stopped \
                                 reading it rather than hold it in memory"
                            ),
                        });
                    }
                    false
                }
                Some(Err(err)) if err.is_timeout() => {
                    return Err(LlmError::IdleTimeout {
                        after: self.config.idle_timeout,
                    });
                }
                // The answer was whole; only the goodbye (`[DONE]`, usage) went missing.
                Some(Err(_)) if decoder.is_complete() => true,
                Some(Err(err)) => {
                    return Err(LlmError::StreamCut {
                        reason: format!("the connection failed: {}", error_chain(&err)),
                        attempts: 1,
                    });
                }
                None => {
                    parser.finish(&mut events);
                    true
                }
            };
            for event in events.drain(..) {
                decoder.on_event(&event, &mut out)?;
                for item in out.drain(..) {
                    // Usage is accounting, not answer: it does not stop a retry.
                    *used |= !matches!(item, StreamEvent::Usage(_));
                    sink(item);
                }
            }
            if ended {
                return decoder.finish();
            }
        }
    }

    fn send_error(&self, err: &reqwest::Error) -> LlmError {
        if err.is_connect() {
            LlmError::Connect {
                url: self.endpoint.clone(),
                message: error_chain(err),
                attempts: 1,
                cause: ConnectCause::of(err),
            }
        } else if err.is_timeout() {
            LlmError::IdleTimeout {
                after: self.config.idle_timeout,
            }
        } else {
            LlmError::Transport {
                url: self.endpoint.clone(),
                message: error_chain(err),
                attempts: 1,
            }
        }
    }
}

/// Whether `err` is the server closing a reused connection before it answered.
fn closed_before_answer(err: &LlmError) -> bool {
    matches!(err, LlmError::Transport { message, .. } if message.contains(CLOSED_BEFORE_ANSWER))
}

/// The stream decoder of a provider's wire format.
pub(crate) enum Decoder {
    OpenAi(openai::Decoder),
    Anthropic(anthropic::Decoder),
}

impl Decoder {
    #[cfg(test)]
    pub(crate) fn new(kind: ProviderKind) -> Self {
        Self::with_cap(kind, super::assemble::DEFAULT_MAX_ANSWER_BYTES)
    }

    /// A decoder keeping at most `cap` bytes of the text and of each call's arguments.
    pub(crate) fn with_cap(kind: ProviderKind, cap: usize) -> Self {
        match kind {
            ProviderKind::OpenAi => Self::OpenAi(openai::Decoder::with_cap(cap)),
            ProviderKind::Anthropic => Self::Anthropic(anthropic::Decoder::with_cap(cap)),
        }
    }

    fn is_complete(&self) -> bool {
        match self {
            Self::OpenAi(d) => d.is_complete(),
            Self::Anthropic(d) => d.is_complete(),
        }
    }

    pub(crate) fn on_event(
        &mut self,
        ev: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        match self {
            Self::OpenAi(d) => d.on_event(ev, out),
            Self::Anthropic(d) => d.on_event(ev, out),
        }
    }

    pub(crate) fn finish(self) -> Result<Response, LlmError> {
        match self {
            Self::OpenAi(d) => d.finish(),
            Self::Anthropic(d) => d.finish(),
        }
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `Retry-After` in seconds (the HTTP-date form is rare from model APIs and falls back to
/// backoff), or OpenAI's `retry-after-ms`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    header("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// reqwest's own message is "error sending request for url (...)"; the cause underneath is
/// the part that helps.
fn error_chain(err: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    if parts.is_empty() {
        err.to_string()
    } else {
        parts.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn endpoints_follow_each_providers_convention() {
        let openai = Client::new(ClientConfig::new(
            ProviderKind::OpenAi,
            "http://127.0.0.1:11434/v1/",
        ))
        .unwrap();
        assert_eq!(
            openai.endpoint(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        for base in ["https://api.anthropic.com", "https://api.anthropic.com/v1"] {
            let anthropic = Client::new(ClientConfig::new(ProviderKind::Anthropic, base)).unwrap();
            assert_eq!(
                anthropic.endpoint(),
                "https://api.anthropic.com/v1/messages"
            );
        }
    }

    #[test]
    fn a_bad_base_url_is_a_setup_error() {
        let err =
            Client::new(ClientConfig::new(ProviderKind::OpenAi, "localhost:11434")).unwrap_err();
        assert!(matches!(err, LlmError::Setup { .. }), "{err:?}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let mut config = ClientConfig::new(ProviderKind::OpenAi, "http://127.0.0.1/v1");
        config.api_key = Some("sk-secret".into());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for (url, expected) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost:11434/v1", true),
            ("http://[::1]:8080/v1", true),
            ("https://api.openai.com/v1", false),
        ] {
            assert_eq!(
                is_loopback(&reqwest::Url::parse(url).unwrap()),
                expected,
                "{url}"
            );
        }
    }
}

/// Decoding fixtures the way a stream arrives, for the decoders' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Decoder, LlmError, ProviderKind, Response, StreamEvent};
    use crate::llm::sse::tests::parse_chunks;

    pub(crate) type Outcome = (Vec<StreamEvent>, Result<Response, LlmError>);

    /// Decodes `chunks` as one stream: the events that reached the sink, and the result.
    pub(crate) fn decode_chunks(kind: ProviderKind, chunks: &[&[u8]]) -> Outcome {
        let mut decoder = Decoder::new(kind);
        let mut events = Vec::new();
        for ev in parse_chunks(chunks) {
            if let Err(e) = decoder.on_event(&ev, &mut events) {
                return (events, Err(e));
            }
        }
        (events, decoder.finish())
    }

    /// Decodes the fixture whole, split at every byte, and one byte at a time; all must agree.
    pub(crate) fn decode_every_split(kind: ProviderKind, fixture: &str) -> Outcome {
        let input = fixture.as_bytes();
        let whole = decode_chunks(kind, &[input]);
        for at in 0..=input.len() {
            let (a, b) = input.split_at(at);
            assert_eq!(decode_chunks(kind, &[a, b]), whole, "split at byte {at}");
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(decode_chunks(kind, &bytes), whole, "one byte at a time");
        whole
    }
}
