//! Everything that can go wrong talking to a model provider, worded for the person running
//! tick, with the hint that tells them what to do next and the internal verdict on whether a
//! retry could help.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

/// A failed model call. Nothing in the workspace is changed by a failed call: the agent only
/// acts on a complete [`Response`](super::Response).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    #[error("the provider rejected the API key (HTTP 401){}", detail(.message))]
    Unauthorized { message: String, key_env: String },

    #[error("the provider refused access (HTTP 403){}", detail(.message))]
    Forbidden { message: String, key_env: String },

    #[error("the provider has no endpoint or model at `{url}` (HTTP 404){}", detail(.message))]
    NotFound { url: String, message: String },

    #[error("the provider rejected the request (HTTP {status}){}", detail(.message))]
    Rejected { status: u16, message: String },

    #[error("the provider account has no quota left (HTTP 429){}", detail(.message))]
    QuotaExhausted { message: String },

    #[error("the provider kept rate limiting requests (HTTP 429){}{}", after(*.attempts), detail(.message))]
    RateLimited {
        message: String,
        attempts: u32,
        retry_after: Option<Duration>,
    },

    #[error("the provider failed (HTTP {status}){}{}", after(*.attempts), detail(.message))]
    Server {
        status: u16,
        message: String,
        attempts: u32,
        retry_after: Option<Duration>,
    },

    #[error("could not connect to `{url}`{}: {message}", after(*.attempts))]
    Connect {
        url: String,
        message: String,
        attempts: u32,
        /// Why the connection failed, as far as the error chain tells: decides whether
        /// another attempt could help.
        cause: ConnectCause,
    },

    #[error("the request to `{url}` failed{}: {message}", after(*.attempts))]
    Transport {
        url: String,
        message: String,
        attempts: u32,
    },

    #[error("the provider sent nothing for {}; gave up waiting", seconds(*.after))]
    IdleTimeout { after: Duration },

    #[error("the answer was still streaming after {}, the limit for one answer; it was stopped", seconds(*.after))]
    AnswerTimeout { after: Duration },

    #[error("the provider's stream ended before the answer was complete{}: {reason}", after(*.attempts))]
    StreamCut { reason: String, attempts: u32 },

    #[error("the provider reported an error in the middle of its answer{}{}", code_of(.code.as_deref()), detail(.message))]
    InStream {
        code: Option<String>,
        message: String,
        /// Overload and rate-limit errors: worth another attempt if nothing was used yet.
        transient: bool,
    },

    #[error("the provider sent a stream tick cannot read: {message}")]
    Protocol { message: String },

    #[error("could not set up the HTTP client: {message}")]
    Setup { message: String },
}

/// Why a connection could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectCause {
    /// The host name did not resolve: asking again in a second resolves it no better.
    Dns,
    /// Something answered and refused: nothing listens on that port.
    Refused,
    /// The server's certificate was not trusted: another attempt gets the same certificate.
    Certificate,
    /// Anything else (a connect timeout, an unreachable network): may pass.
    Other,
}

impl ConnectCause {
    /// The cause read off an error's source chain: an [`std::io::Error`] of kind
    /// `ConnectionRefused`, rustls's verdict on the certificate, or hyper's resolver error,
    /// which says `dns error`. The TLS stream reports rustls's error as the payload of an
    /// `io::Error` that reqwest wraps in another: `source()` skips payloads, so they are
    /// opened here.
    pub(crate) fn of(err: &(dyn std::error::Error + 'static)) -> ConnectCause {
        let rejects_certificate =
            |err: &rustls::Error| matches!(err, rustls::Error::InvalidCertificate(_));
        let mut source = Some(err);
        while let Some(cause) = source {
            if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::ConnectionRefused {
                    return ConnectCause::Refused;
                }
                let mut payload = io.get_ref();
                while let Some(inner) = payload {
                    if inner
                        .downcast_ref::<rustls::Error>()
                        .is_some_and(rejects_certificate)
                    {
                        return ConnectCause::Certificate;
                    }
                    payload = inner
                        .downcast_ref::<std::io::Error>()
                        .and_then(std::io::Error::get_ref);
                }
            }
            if cause
                .downcast_ref::<rustls::Error>()
                .is_some_and(rejects_certificate)
            {
                return ConnectCause::Certificate;
            }
            if cause.to_string().starts_with("dns error") {
                return ConnectCause::Dns;
            }
            source = cause.source();
        }
        ConnectCause::Other
    }
}

impl LlmError {
    /// Whether this failure is final after `attempts`, although its kind is retryable: a name
    /// that does not resolve, or a hosted API that refuses the connection, is said at once
    /// (five waits would only delay it); a server on this machine that refuses gets one more
    /// try, for a server that is just binding its port.
    pub(crate) fn is_final(&self, loopback: bool, attempts: u32) -> bool {
        match self {
            Self::Connect {
                cause: ConnectCause::Dns | ConnectCause::Certificate,
                ..
            } => true,
            Self::Connect {
                cause: ConnectCause::Refused,
                ..
            } => !loopback || attempts >= 2,
            Self::Connect { .. } => loopback && attempts >= 2,
            _ => false,
        }
    }

    /// What the person should do next, for the `hint:` line.
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            Self::Unauthorized { key_env, .. } => {
                format!("set `{key_env}` or `api_key_env` in `.tasks/config.yaml`")
            }
            Self::Forbidden { key_env, .. } => {
                format!("check that the key in `{key_env}` may use this model")
            }
            Self::NotFound { .. } => "check `base_url` and `model` in `.tasks/config.yaml`; an \
                 OpenAI-compatible `base_url` usually ends in `/v1`"
                .to_owned(),
            Self::Rejected { message, .. }
                if message.to_ascii_lowercase().contains("context length")
                    || message.to_ascii_lowercase().contains("max_tokens") =>
            {
                "the request was not retried; the server's context may be smaller than the \
                 answer limit: lower `limits.max_output_tokens` in `.tasks/config.yaml`"
                    .to_owned()
            }
            Self::Rejected { message, .. } if message.to_ascii_lowercase().contains("tool") => {
                "the request was not retried; this server or model seems not to accept tools: \
                 set `tool_calls: text` in `.tasks/config.yaml`, or change the model"
                    .to_owned()
            }
            Self::Rejected { .. } => {
                "the request was not retried; check `model` and the provider's limits".to_owned()
            }
            Self::QuotaExhausted { .. } => {
                "add credit to the provider account or choose another provider".to_owned()
            }
            Self::RateLimited { .. } | Self::Server { .. } => {
                "nothing was changed; wait a little and run the command again".to_owned()
            }
            Self::Connect {
                cause: ConnectCause::Dns,
                ..
            } => "the host name of `base_url` does not resolve: check it, and this machine's \
                  network; nothing was retried"
                .to_owned(),
            Self::Connect {
                cause: ConnectCause::Certificate,
                ..
            } => "the server's certificate is not signed by a root this machine trusts; \
                  nothing was sent or retried; for a private CA, set `SSL_CERT_FILE` to a PEM \
                  file that holds it (its certificates then replace the system's)"
                .to_owned(),
            Self::Connect { .. } => {
                "is the model server running? check `base_url` in `.tasks/config.yaml`".to_owned()
            }
            Self::Transport { .. } => "nothing was changed; run the command again".to_owned(),
            Self::IdleTimeout { .. } => {
                "raise `limits.idle_timeout_s` in `.tasks/config.yaml` if the \
                 model is slow to start answering; no partial tool call was run"
                    .to_owned()
            }
            Self::AnswerTimeout { .. } => {
                "the model was most likely repeating itself; no partial tool call was run; \
                 lower `limits.max_output_tokens` or raise `limits.answer_timeout_s` in \
                 `.tasks/config.yaml`"
                    .to_owned()
            }
            Self::StreamCut { .. } => {
                "no partial tool call was run; run the command again".to_owned()
            }
            Self::InStream { .. } => "no partial tool call was run".to_owned(),
            Self::Protocol { .. } => "check that `provider` in `.tasks/config.yaml` matches the \
                 server at `base_url`"
                .to_owned(),
            Self::Setup { .. } => return None,
        };
        Some(hint)
    }

    /// Whether another attempt could succeed, provided no part of this answer was used yet.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Server { .. }
            | Self::Connect { .. }
            | Self::Transport { .. }
            | Self::StreamCut { .. } => true,
            Self::InStream { transient, .. } => *transient,
            _ => false,
        }
    }

    /// How long the provider asked us to wait before the next attempt.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// Records how many attempts were made, so the message can say the failure persisted.
    pub(crate) fn with_attempts(mut self, n: u32) -> Self {
        match &mut self {
            Self::RateLimited { attempts, .. }
            | Self::Server { attempts, .. }
            | Self::Connect { attempts, .. }
            | Self::Transport { attempts, .. }
            | Self::StreamCut { attempts, .. } => *attempts = n,
            _ => {}
        }
        self
    }
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

fn after(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

fn code_of(code: Option<&str>) -> String {
    code.map(|c| format!(" `{c}`")).unwrap_or_default()
}

fn seconds(d: Duration) -> String {
    let mut out = String::new();
    if d.subsec_millis() == 0 {
        let _ = write!(out, "{}s", d.as_secs());
    } else {
        let _ = write!(out, "{:.1}s", d.as_secs_f64());
    }
    out
}

/// The part of a provider's error body worth showing: its message and its machine-readable
/// code or type, whichever of the known shapes it comes in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ProviderError {
    pub code: Option<String>,
    pub message: String,
}

/// Longest provider message we repeat; an HTML error page should not flood the terminal.
const MAX_MESSAGE_CHARS: usize = 500;

impl ProviderError {
    /// Reads an error body: OpenAI and llama.cpp `{"error": {"message", "type", "code"}}`,
    /// Anthropic `{"type": "error", "error": {"type", "message"}}`, Ollama `{"error": "..."}`,
    /// or anything else as trimmed text.
    pub fn from_body(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Self::from_json(&value),
            Err(_) => Self {
                code: None,
                message: match html_page(body) {
                    Some(page) => page,
                    None => clip(&one_line(body)),
                },
            },
        }
    }

    pub fn from_json(value: &Value) -> Self {
        let error = value.get("error").unwrap_or(value);
        if let Value::String(message) = error {
            return Self {
                code: None,
                message: clip(message),
            };
        }
        let text = |key: &str| match error.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        // OpenAI's `code` is the precise one (`insufficient_quota`); its `type` is coarser.
        let code = text("code")
            .filter(|c| c.parse::<u64>().is_err())
            .or_else(|| text("type"));
        let message = text("message").unwrap_or_else(|| clip(&error.to_string()));
        Self {
            code,
            message: clip(&message),
        }
    }

    /// Overload and rate limits pass; other errors would fail the same way again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some(
                "overloaded_error"
                    | "rate_limit_error"
                    | "api_error"
                    | "server_error"
                    | "rate_limit_exceeded"
                    | "timeout"
            )
        )
    }
}

/// A body that is a web page (a proxy's or gateway's error page, not the model server's
/// answer) told by its title, or its first heading, instead of its markup.
fn html_page(body: &str) -> Option<String> {
    let start = body.trim_start();
    let head: String = start
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    if !(head.starts_with("<!doctype html")
        || head.starts_with("<html")
        || head.starts_with("<head"))
    {
        return None;
    }
    let title = ["title", "h1"]
        .iter()
        .find_map(|tag| element_text(start, tag))
        .filter(|title| !title.is_empty());
    if let Some(title) = title {
        return Some(format!(
            "an HTML page titled \"{}\" instead of a model's answer",
            clip_to(&title, 120)
        ));
    }
    let said = page_text(start);
    Some(if said.is_empty() {
        format!(
            "an HTML page of {} bytes instead of a model's answer",
            body.len()
        )
    } else {
        format!(
            "an HTML page saying \"{}\" instead of a model's answer",
            clip_to(&said, 120)
        )
    })
}

/// The text of the first `<tag>` element, its markup and entities read, on one line.
fn element_text(html: &str, tag: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find(&format!("<{tag}"))?;
    let from = open + lower[open..].find('>')? + 1;
    let to = from + lower[from..].find(&format!("</{tag}"))?;
    Some(page_text(&html[from..to]))
}

/// What a page says: its text without markup, styles or scripts, entities read, on one line.
fn page_text(html: &str) -> String {
    let mut html = html.to_owned();
    for tag in ["style", "script"] {
        while let Some(open) = html.to_ascii_lowercase().find(&format!("<{tag}")) {
            let lower = html.to_ascii_lowercase();
            let close = lower[open..]
                .find(&format!("</{tag}"))
                .and_then(|at| lower[open + at..].find('>').map(|end| open + at + end + 1))
                .unwrap_or(html.len());
            html.replace_range(open..close, " ");
        }
    }
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    one_line(&text)
}

/// Runs of white space, line breaks included, as one space: a message is one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(text: &str) -> String {
    clip_to(text, MAX_MESSAGE_CHARS)
}

fn clip_to(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// Where a failed response came from, for the error message.
pub(crate) struct StatusContext<'a> {
    pub url: &'a str,
    pub key_env: &'a str,
}

/// Turns a non-success HTTP answer into the error a person can act on.
pub(crate) fn from_status(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    ctx: &StatusContext<'_>,
) -> LlmError {
    let provider = ProviderError::from_body(body);
    let message = provider.message;
    match status {
        401 => LlmError::Unauthorized {
            message,
            key_env: ctx.key_env.to_owned(),
        },
        403 => LlmError::Forbidden {
            message,
            key_env: ctx.key_env.to_owned(),
        },
        404 => LlmError::NotFound {
            url: ctx.url.to_owned(),
            message,
        },
        429 if provider.code.as_deref() == Some("insufficient_quota") => {
            LlmError::QuotaExhausted { message }
        }
        429 => LlmError::RateLimited {
            message,
            attempts: 1,
            retry_after,
        },
        // 408 is the server giving up on a slow upload, as transient as a 5xx.
        408 | 500..=599 => LlmError::Server {
            status,
            message,
            attempts: 1,
            retry_after,
        },
        _ => LlmError::Rejected { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: StatusContext<'static> = StatusContext {
        url: "http://127.0.0.1:1/v1/chat/completions",
        key_env: "OPENAI_API_KEY",
    };

    #[test]
    fn unauthorized_names_the_key_variable() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let err = from_status(401, body, None, &CTX);
        assert_eq!(
            err.to_string(),
            "the provider rejected the API key (HTTP 401): Incorrect API key provided"
        );
        assert_eq!(
            err.hint().as_deref(),
            Some("set `OPENAI_API_KEY` or `api_key_env` in `.tasks/config.yaml`")
        );
        assert!(!err.is_retryable());
    }

    /// An error whose source is another, as hyper's connect errors nest.
    #[derive(Debug)]
    struct Wrapped(&'static str, Option<Box<dyn std::error::Error + 'static>>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref()
        }
    }

    fn connect(cause: ConnectCause) -> LlmError {
        LlmError::Connect {
            url: "https://api.example.test/v1/chat/completions".into(),
            message: "refused".into(),
            attempts: 1,
            cause,
        }
    }

    #[test]
    fn the_cause_of_a_connect_failure_is_read_off_the_chain() {
        let refused = Wrapped(
            "client error (Connect)",
            Some(Box::new(Wrapped(
                "tcp connect error",
                Some(Box::new(std::io::Error::from(
                    std::io::ErrorKind::ConnectionRefused,
                ))),
            ))),
        );
        assert_eq!(ConnectCause::of(&refused), ConnectCause::Refused);
        let dns = Wrapped(
            "client error (Connect)",
            Some(Box::new(Wrapped(
                "dns error",
                Some(Box::new(std::io::Error::other(
                    "failed to lookup address information: Name or service not known",
                ))),
            ))),
        );
        assert_eq!(ConnectCause::of(&dns), ConnectCause::Dns);
        let timeout = Wrapped(
            "client error (Connect)",
            Some(Box::new(std::io::Error::from(std::io::ErrorKind::TimedOut))),
        );
        assert_eq!(ConnectCause::of(&timeout), ConnectCause::Other);
        // As reqwest reports it: rustls's verdict inside tokio-rustls's `io::Error`, inside
        // reqwest's.
        let untrusted = Wrapped(
            "client error (Connect)",
            Some(Box::new(std::io::Error::other(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            )))),
        );
        assert_eq!(ConnectCause::of(&untrusted), ConnectCause::Certificate);
    }

    #[test]
    fn a_name_that_does_not_resolve_or_a_hosted_refusal_is_final_at_once() {
        // Hosted API: DNS and refused are said at once; a timeout is worth the retries.
        assert!(connect(ConnectCause::Dns).is_final(false, 1));
        assert!(connect(ConnectCause::Certificate).is_final(false, 1));
        assert!(connect(ConnectCause::Certificate).is_final(true, 1));
        assert!(connect(ConnectCause::Refused).is_final(false, 1));
        assert!(!connect(ConnectCause::Other).is_final(false, 1));
        assert!(!connect(ConnectCause::Other).is_final(false, 4));
        // This machine: one more try for a server binding its port, then final.
        assert!(!connect(ConnectCause::Refused).is_final(true, 1));
        assert!(connect(ConnectCause::Refused).is_final(true, 2));
        assert!(connect(ConnectCause::Other).is_final(true, 2));
        assert!(
            connect(ConnectCause::Dns)
                .hint()
                .unwrap()
                .contains("does not resolve")
        );
        // Other retryable failures are never final by this rule.
        let server = LlmError::Server {
            status: 503,
            message: String::new(),
            attempts: 1,
            retry_after: None,
        };
        assert!(!server.is_final(false, 9));
    }

    #[test]
    fn exhausted_quota_is_not_retried_but_rate_limit_is() {
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(
            from_status(429, quota, None, &CTX),
            LlmError::QuotaExhausted { .. }
        ));
        let limit = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        let err = from_status(429, limit, Some(Duration::from_secs(1)), &CTX);
        assert!(err.is_retryable());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn reads_every_known_error_shape() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let e = ProviderError::from_body(anthropic);
        assert_eq!(e.code.as_deref(), Some("overloaded_error"));
        assert_eq!(e.message, "Overloaded");
        assert!(e.is_transient());

        let ollama = r#"{"error":"model \"qwen\" not found, try pulling it first"}"#;
        let e = ProviderError::from_body(ollama);
        assert_eq!(e.message, "model \"qwen\" not found, try pulling it first");

        let llama =
            r#"{"error":{"code":500,"message":"Failed to parse input","type":"server_error"}}"#;
        let e = ProviderError::from_body(llama);
        assert_eq!(e.code.as_deref(), Some("server_error"));
        assert_eq!(e.message, "Failed to parse input");

        let html = "  <html>Bad Gateway</html>\n";
        assert_eq!(
            ProviderError::from_body(html).message,
            "an HTML page saying \"Bad Gateway\" instead of a model's answer"
        );
    }

    #[test]
    fn long_messages_are_clipped_on_a_char_boundary() {
        let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
        let e = ProviderError::from_body(&long);
        assert_eq!(e.message.chars().count(), MAX_MESSAGE_CHARS + 3);
    }

    #[test]
    fn attempts_appear_only_when_there_were_retries() {
        let err = from_status(500, "boom", None, &CTX);
        assert_eq!(err.to_string(), "the provider failed (HTTP 500): boom");
        assert_eq!(
            err.with_attempts(3).to_string(),
            "the provider failed (HTTP 500) after 3 attempts: boom"
        );
    }

    #[test]
    fn idle_timeout_reads_in_seconds() {
        let err = LlmError::IdleTimeout {
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            err.to_string(),
            "the provider sent nothing for 1.5s; gave up waiting"
        );
    }

    #[test]
    fn an_html_error_page_is_told_by_its_title_not_its_markup() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>502 Bad\n  Gateway &amp; co</title><style>{}</style></head>\
             <body><h1>Bad Gateway</h1></body></html>",
            "x{color:red}".repeat(500)
        );
        let err = from_status(502, &page, None, &CTX);
        assert_eq!(
            err.to_string(),
            "the provider failed (HTTP 502): an HTML page titled \"502 Bad Gateway & co\" instead of a model's answer"
        );
        // No title: the first heading; neither: the page's size, never its markup.
        let heading =
            ProviderError::from_body("<html><body><H1>Not <b>Found</b></H1></body></html>");
        assert_eq!(
            heading.message,
            "an HTML page titled \"Not Found\" instead of a model's answer"
        );
        let bare =
            ProviderError::from_body("  <HTML><body><p>gone</p><script>x()</script></body></HTML>");
        assert_eq!(
            bare.message,
            "an HTML page saying \"gone\" instead of a model's answer"
        );
        let empty = ProviderError::from_body("<html><style>p{}</style></html>");
        assert_eq!(
            empty.message,
            "an HTML page of 31 bytes instead of a model's answer"
        );
    }

    #[test]
    fn a_plain_text_body_is_one_line() {
        let e = ProviderError::from_body("upstream connect error\n\n  reset reason: overflow\r\n");
        assert_eq!(e.message, "upstream connect error reset reason: overflow");
        // Text that merely mentions a tag is not a page.
        let e = ProviderError::from_body("bad <title> field");
        assert_eq!(e.message, "bad <title> field");
    }
}
