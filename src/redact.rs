//! Secrets never reach a file tick writes: anything shaped like an API key, a token, a private
//! key or a password, and the configured key itself, is replaced before tick writes text a
//! model or a command produced (PLAN.md, TODO.md lines, state.yaml, transcripts, folder names,
//! error messages).
//!
//! Redaction happens on the text itself, before it is JSON-encoded: inside a JSON string a
//! newline is `\n`, and a pattern anchored at a word boundary would not see `sk-…` after it.
//! [`json`] redacts every string of a value, then runs the patterns over the encoded line once
//! more as a second guard; the patterns also accept a JSON escape as their left boundary.
//!
//! The key tick holds is registered once ([`register`], by config resolution), so every call
//! redacts it, including those that have no config at hand.

use std::sync::{LazyLock, RwLock};

use regex::{Regex, RegexSet};
use serde::Serialize;
use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

/// What may stand right before a secret: the start of the text, a character that is not part
/// of a token, or a JSON string escape (`\n`, `\t`, `\"`, `\u001b`...) whose last letter would
/// otherwise hide the boundary.
const BEFORE: &str = r#"(?P<pre>^|[^A-Za-z0-9_]|\\[nrtbf"/\\]|\\u[0-9a-fA-F]{4})"#;

/// An AWS access key id, whose secret access key is redacted when it stands near.
const AWS_KEY_ID: &str = "(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}";
/// An AWS secret access key: 40 characters of base64 without padding.
const AWS_SECRET: &str = "[A-Za-z0-9/+]{40}";
/// What stands right before or after an AWS secret: a character not of base64, or a JSON
/// escape (whose last letter would otherwise look like the secret's first).
const AWS_EDGE: &str = r#"(?:[^A-Za-z0-9/+=\\]|\\[nrtbf"\\]|\\u[0-9a-fA-F]{4})"#;
/// How far apart an access key id and its secret may stand: a few lines.
const AWS_PAIR_GAP: usize = 200;

/// Each pattern's `secret` group is replaced; `pre`, `key` (what names the secret) and `post`
/// are kept.
static PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let anchored = |body: &str| format!("{BEFORE}(?P<secret>{body})");
    [
        // PEM private keys, also cut off before their END line.
        r"(?P<secret>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$))".to_owned(),
        // JSON Web Tokens: header.payload.signature, both first parts base64url of `{"`.
        anchored(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        // Anthropic, OpenAI (`sk-`, `sk-proj-`), OpenRouter, DeepSeek style keys.
        anchored(r"sk-(?:ant-|proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{16,}"),
        // Stripe secret and restricted keys.
        anchored(r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        // GitHub tokens.
        anchored(r"gh[pousr]_[A-Za-z0-9]{30,}"),
        anchored(r"github_pat_[A-Za-z0-9_]{30,}"),
        // AWS secret access keys without a name: 40 base64 characters within a few lines of an
        // access key id (a credentials CSV, `id:secret`, an env file, JSON), after it or
        // before it. Before the id's own pattern, which would hide the id.
        format!(
            r"(?P<key>{AWS_KEY_ID}[\s\S]{{0,{AWS_PAIR_GAP}}}?{AWS_EDGE})(?P<secret>{AWS_SECRET})(?P<post>[^A-Za-z0-9/+=]|$)"
        ),
        format!(
            r"(?P<pre>^|{AWS_EDGE})(?P<secret>{AWS_SECRET})(?P<post>(?:[^A-Za-z0-9/+=]|$)[\s\S]{{0,{AWS_PAIR_GAP}}}?{AWS_KEY_ID})"
        ),
        // AWS access key ids.
        anchored(r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"),
        // Slack tokens.
        anchored(r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
        // Google API keys.
        anchored(r"AIza[0-9A-Za-z_\-]{35}"),
        // Bearer tokens in pasted headers.
        r"(?i)(?P<key>bearer\s+)(?P<secret>[A-Za-z0-9_\-\.=+/]{20,})".to_owned(),
        // AWS secret access keys: 40 characters after a key that names them.
        r#"(?i)(?P<key>aws_?secret(?:_?access)?_?key\\?["']?\s*[:=]\s*\\?["']?)(?P<secret>[A-Za-z0-9/+=]{40})"#.to_owned(),
        // `user:password@` in URLs: the password goes, the user stays.
        r"(?P<key>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:)(?P<secret>[^\s@/]+)(?P<post>@)".to_owned(),
        // `password=...`, `token: ...`, `"api_key": "..."` and the like.
        r#"(?i)(?P<key>(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|auth|client[_\-]?secret|private[_\-]?key)\\?["']?\s*[:=]\s*\\?["']?)(?P<secret>[^\s"'\\,;&<>]{4,})"#.to_owned(),
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// All of [`PATTERNS`] at once: one scan tells which (if any) need a replacement pass, so
/// clean text (nearly all of it) is read once, not once per pattern.
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(PATTERNS.iter().map(Regex::as_str)).unwrap_or_else(|_| RegexSet::empty())
});

/// Secrets tick holds (the provider's key), redacted whatever their shape.
static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds a secret tick holds to those every redaction removes. Short strings are ignored: a
/// "key" of a few characters would redact ordinary words.
/// Whether a variable's name says it holds a credential (`*_API_KEY`, `*_TOKEN`,
/// `*_SECRET*`, `*PASSWORD*`...). Such variables never reach a command, whatever their
/// provider: the agent's commands need none of them, and a leaked one costs money.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "API_KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
    ]
    .iter()
    .any(|part| upper.contains(part))
        || ["_TOKEN", "_KEY"].iter().any(|end| upper.ends_with(end))
        || upper == "TOKEN"
}

pub fn register(secret: &str) {
    if secret.len() < 8 {
        return;
    }
    if let Ok(mut known) = KNOWN.write()
        && !known.iter().any(|k| k == secret)
    {
        known.push(secret.to_owned());
    }
}

/// `text` with secrets replaced by `[REDACTED]`. `known` are secrets the caller holds; they go
/// whatever their shape, like the [`register`]ed ones.
pub fn redact(text: &str, known: &[&str]) -> String {
    let mut out = text.to_owned();
    let registered = KNOWN.read().map(|k| k.clone()).unwrap_or_default();
    for secret in known
        .iter()
        .copied()
        .chain(registered.iter().map(String::as_str))
    {
        if secret.len() < 8 {
            continue;
        }
        out = out.replace(secret, REDACTED);
        // The same secret inside JSON text, if encoding changes it.
        if let Ok(encoded) = serde_json::to_string(secret) {
            let inner = &encoded[1..encoded.len() - 1];
            if inner != secret {
                out = out.replace(inner, REDACTED);
            }
        }
    }
    let matched = if ANY.len() == PATTERNS.len() {
        ANY.matches(&out).into_iter().collect()
    } else {
        (0..PATTERNS.len()).collect::<Vec<_>>()
    };
    for index in matched {
        out = PATTERNS[index]
            .replace_all(&out, format!("${{pre}}${{key}}{REDACTED}${{post}}"))
            .into_owned();
    }
    out
}

/// Every string in `value` (not the object keys: those are field names) redacted.
pub fn redact_value(value: &mut Value, known: &[&str]) {
    match value {
        Value::String(text) => {
            let clean = redact(text, known);
            if clean != *text {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, known)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, known)),
        _ => {}
    }
}

/// `value` as one line of JSON with its strings redacted before encoding, and the encoded line
/// redacted once more.
pub fn json<T: Serialize>(value: &T, known: &[&str]) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(value)?;
    redact_value(&mut value, known);
    Ok(redact(&serde_json::to_string(&value)?, known))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// One of each format, as they are shaped in the wild (made up, never real).
    pub const SAMPLES: [(&str, &str); 17] = [
        ("openai", "sk-4fQ9xT2mLr8VwZ1bN7cK3hJ6pD0sYeA5uGiO"),
        (
            "openai project",
            "sk-proj-Zq81Lm2Nx7Vb0Cd9Fg3Hj4Kk5Ll6Mm7Nn8Oo9Pp0QqRr1",
        ),
        (
            "anthropic",
            "sk-ant-api03-Xy7Zw6Vu5Ts4Rq3Po2Nm1Lk0Ji9Hg8Fe7Dc6Ba5-AAAA",
        ),
        (
            "github classic",
            "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXyZ",
        ),
        ("github oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
        ("github app", "ghs_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y"),
        (
            "github fine-grained",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFG",
        ),
        ("aws access key id", "AKIAIOSFODNN7EXAMPLE"),
        ("aws secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        (
            "slack",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        ("google", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
        ("stripe live", "sk_live_51HcQ2pLkT9vWb3XyZaQ8mN4rS7tU"),
        ("stripe restricted", "rk_live_51HcQ2pLkT9vWb3XyZaQ8mN4rS7tU"),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("url password", "hunter2-Corr3ct-Horse"),
        ("assignment", "s3cr3t-Pa55w0rd!x"),
        (
            "pem",
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
        ),
    ];

    /// Each sample in the context it is recognised in.
    fn in_context(name: &str, secret: &str) -> String {
        match name {
            "aws secret" => format!("aws_secret_access_key = {secret}"),
            "url password" => format!("git clone https://deploy:{secret}@example.com/repo.git"),
            "assignment" => format!("password={secret}"),
            "pem" => {
                format!("-----BEGIN EC PRIVATE KEY-----\n{secret}\n-----END EC PRIVATE KEY-----")
            }
            _ => secret.to_owned(),
        }
    }

    #[test]
    fn every_sample_is_redacted() {
        for (name, secret) in SAMPLES {
            let text = in_context(name, secret);
            let out = redact(&text, &[]);
            assert!(!out.contains(secret), "{name}: {out}");
            assert!(out.contains(REDACTED), "{name}: {out}");
        }
    }

    #[test]
    fn yaml_and_json_assignments_and_pem_blocks() {
        for text in [
            "token: abcd1234efgh",
            "\"api_key\": \"abcd1234efgh\"",
            "client_secret=abcd1234efgh",
            "PASSWORD: 'abcd1234efgh'",
        ] {
            let out = redact(text, &[]);
            assert!(!out.contains("abcd1234efgh"), "{text}: {out}");
        }
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(redact(pem, &[]), "a\n[REDACTED]\nb");
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA";
        assert_eq!(redact(cut, &[]), REDACTED);
        let url = redact("https://user:pw12345@host/x", &[]);
        assert_eq!(url, "https://user:[REDACTED]@host/x");
    }

    /// Issue 17, item 17: the secret beside its key id, in the shapes AWS hands it out.
    #[test]
    fn an_aws_secret_beside_its_key_id_is_redacted() {
        let (id, secret) = (SAMPLES[7].1, SAMPLES[8].1);
        for text in [
            format!("{id} {secret}"),
            format!("{id}:{secret}"),
            format!("Access key ID,Secret access key\n{id},{secret}\n"),
            format!("AWS_ACCESS_KEY_ID={id}\nAWS_SECRET={secret}\n"),
            format!("export KEY_ID={id}\nexport THE_OTHER_ONE=\"{secret}\""),
            format!(r#"{{"AccessKeyId": "{id}", "Secret": "{secret}"}}"#),
            format!("{secret} is the secret for {id}"),
            format!("[default]\nkey = {id}\nvalue = {secret}"),
        ] {
            let out = redact(&text, &[]);
            assert!(!out.contains(secret), "{text:?}: {out}");
            assert!(!out.contains(id), "{text:?}: {out}");
            // Inside JSON, where the newline is `\n`, too.
            let encoded = serde_json::to_string(&text).unwrap();
            let out = redact(&encoded, &[]);
            assert!(!out.contains(secret), "{encoded}: {out}");
        }
        // Without a key id near, 40 characters of base64 are just that: a hash, a word.
        let hash = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            redact(&format!("commit {hash}"), &[]),
            format!("commit {hash}")
        );
        let far = format!("{id}\n{}\n{hash}", "x".repeat(300));
        assert!(redact(&far, &[]).contains(hash));
        // A longer run is not a secret of 40.
        let long = format!("{id} {}", "A".repeat(41));
        assert!(redact(&long, &[]).contains(&"A".repeat(41)));
    }

    /// A token in a file name (a path tick records) goes like a token in text.
    #[test]
    fn a_token_in_a_path_is_redacted() {
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4).get(..36).unwrap());
        assert_eq!(
            redact(&format!("notes/{token}.txt"), &[]),
            "notes/[REDACTED].txt"
        );
        assert_eq!(redact(&format!("{token}.md"), &[]), "[REDACTED].md");
    }

    #[test]
    fn prose_and_tick_words_are_kept() {
        for prose in [
            "Refactor the task-runner; keep sk- prefixes documented in docs/keys.md",
            "ask-the-user-about-the-login-module-first",
            "max_tokens: 2000000 and tokens_used",
            "see https://example.com/path@v2 for details",
            "20261130-143012-refactor-login-module",
            "Use a token bucket for rate limiting",
        ] {
            assert_eq!(redact(prose, &[]), prose);
        }
        assert_eq!(
            redact("my key is hunter2hunter2", &["hunter2hunter2"]),
            "my key is [REDACTED]"
        );
    }

    #[test]
    fn a_registered_key_goes_everywhere() {
        register("Zm9vYmFyLXJlZ2lzdGVyZWQ");
        assert_eq!(
            redact("blocked: Zm9vYmFyLXJlZ2lzdGVyZWQ rejected", &[]),
            "blocked: [REDACTED] rejected"
        );
    }

    #[test]
    fn escapes_do_not_shield_a_secret_in_json() {
        let message = serde_json::json!({
            "content": format!("line\n{}\tnext\n\"{}\"", SAMPLES[0].1, SAMPLES[3].1),
            "args": {"command": format!("echo \u{1b}{}", SAMPLES[7].1)},
        });
        let line = json(&message, &[]).unwrap();
        for (_, secret) in [SAMPLES[0], SAMPLES[3], SAMPLES[7]] {
            assert!(!line.contains(secret), "{line}");
        }
        // The second guard alone also sees through the escapes.
        let encoded = serde_json::to_string(&message).unwrap();
        let guarded = redact(&encoded, &[]);
        for (_, secret) in [SAMPLES[0], SAMPLES[3], SAMPLES[7]] {
            assert!(!guarded.contains(secret), "{guarded}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A secret anywhere in arbitrary text, then JSON-escaped (once or twice, as tool call
        /// arguments are), never survives either the value walk or the line guard.
        #[test]
        fn an_embedded_secret_never_survives_json(
            before in "\\PC{0,40}",
            after in "\\PC{0,40}",
            sep_before in prop::sample::select(vec!["", " ", "\n", "\t", "\"", "\\", "\r\n", "=", "(", "\u{1b}"]),
            sep_after in prop::sample::select(vec!["", " ", "\n", "\t", "\"", "\\", ".", ")", ","]),
            which in 0..SAMPLES.len(),
        ) {
            let (name, secret) = SAMPLES[which];
            // A token is only a token after a boundary (`ask-...` is a word, not a key): when
            // the sample is the secret itself, what stands before it must not be a letter.
            let core = in_context(name, secret);
            let lead = format!("{before}{sep_before}");
            prop_assume!(
                !core.starts_with(secret)
                    || lead.chars().last().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            );
            let text = format!("{lead}{core}{sep_after}{after}");
            let value = serde_json::json!({ "content": text });
            let line = json(&value, &[]).unwrap();
            prop_assert!(!line.contains(secret), "{}", line);
            let twice = serde_json::to_string(&serde_json::to_string(&value).unwrap()).unwrap();
            let guarded = redact(&twice, &[]);
            prop_assert!(!guarded.contains(secret), "{}", guarded);
        }
    }
}
