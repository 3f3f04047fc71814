//! Secrets never reach a committed file: anything shaped like an API key or token, and the
//! configured key itself, is replaced before tick writes text a model produced.

use std::sync::LazyLock;

use regex::Regex;

pub const REDACTED: &str = "[REDACTED]";

static PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // OpenAI, Anthropic, OpenRouter, DeepSeek style keys.
        r"\bsk-[A-Za-z0-9_\-]{16,}",
        // GitHub tokens.
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",
        r"\bgithub_pat_[A-Za-z0-9_]{30,}",
        // AWS access key ids.
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        // Slack tokens.
        r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
        // Google API keys.
        r"\bAIza[0-9A-Za-z_\-]{35}",
        // Bearer tokens in pasted headers.
        r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}",
        // PEM private keys.
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// `text` with secrets replaced by `[REDACTED]`. `known` are secrets tick holds (the API key):
/// they go whatever their shape.
pub fn redact(text: &str, known: &[&str]) -> String {
    let mut out = text.to_owned();
    for secret in known {
        if secret.len() >= 8 {
            out = out.replace(secret, REDACTED);
        }
    }
    for pattern in PATTERNS.iter() {
        if pattern.is_match(&out) {
            out = pattern.replace_all(&out, REDACTED).into_owned();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_prose_is_not() {
        let text = "key sk-proj-abcdefghijklmnopqrstuvwx and ghp_abcdefghijklmnopqrstuvwxyz0123456789 \
                    AKIAABCDEFGHIJKLMNOP xoxb-1234567890-abc Authorization: Bearer abcdefghijklmnopqrstuvwxyz";
        let out = redact(text, &[]);
        for secret in [
            "sk-proj",
            "ghp_",
            "AKIA",
            "xoxb-",
            "abcdefghijklmnopqrstuvwxyz",
        ] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        let prose = "Refactor the task-runner; keep sk- prefixes documented in docs/keys.md";
        assert_eq!(redact(prose, &[]), prose);
        assert_eq!(
            redact("my key is hunter2hunter2", &["hunter2hunter2"]),
            "my key is [REDACTED]"
        );
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(redact(pem, &[]), "a\n[REDACTED]\nb");
    }
}
