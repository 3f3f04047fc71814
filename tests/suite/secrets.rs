//! Secrets appear in no file tick writes. A fake model puts 14 secrets in 12 formats (and the
//! configured API key, whatever its shape) into its plan, its title, a command's output it
//! reads back, its evidence and a blocked reason; afterwards no file anywhere under the
//! workspace, `.tasks/` and `.git/` included, holds any of them.

use std::path::Path;

use serde_json::json;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_call, openai_calls};
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr};

/// Made up, shaped as in the wild. The context a secret needs to be recognised (a key name,
/// a URL) is in [`contexts`].
const SECRETS: [(&str, &str); 14] = [
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
    ("stripe", "sk_live_51HcQ2pLkT9vWb3XyZaQ8mN4rS7tU"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "pem",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
    ),
    ("url password", "hunter2-Corr3ct-Horse"),
    ("password assignment", "s3cr3t-Pa55w0rd!x"),
];

/// The key tick is configured with: no pattern knows this shape, only the config does.
const CONFIGURED_KEY: &str = "cfgkey-Q7w8e9r0t1y2u3i4o5p6";

/// Each secret as it appears in text, separated by JSON-escaped characters (newline, tab,
/// quote), the shapes that hid them before.
fn contexts() -> String {
    let mut text = String::new();
    for (i, (name, secret)) in SECRETS.into_iter().enumerate() {
        let line = match name {
            "aws secret" => format!("aws_secret_access_key={secret}"),
            "pem" => {
                format!("-----BEGIN RSA PRIVATE KEY-----\n{secret}\n-----END RSA PRIVATE KEY-----")
            }
            "url password" => format!("https://deploy:{secret}@git.example.com/app.git"),
            "password assignment" => format!("password: \"{secret}\""),
            _ => secret.to_owned(),
        };
        text.push_str(&line);
        text.push_str(["\n", "\t\"", "\r\n"][i % 3]);
    }
    text.push_str(&format!("key={CONFIGURED_KEY}\n"));
    text
}

/// Every file under `dir`, recursively, with its bytes.
fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            every_file(&path, out);
        } else if kind.is_file() {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_any_file_tick_writes() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let all = contexts();
    let stripe = SECRETS[9].1;
    let with_key = |cmd: &mut std::process::Command| {
        cmd.env("OPENAI_API_KEY", CONFIGURED_KEY);
    };

    // The plan: secrets in the title (which names the folder; first, where a YAML value
    // starts), the summary, the context and a step.
    let plan = json!({
        "title": format!("{stripe} rotation and the deploy keys"),
        "summary": format!("Replace the leaked keys:\n{all}"),
        "context": format!("Found in CI logs:\t{all}"),
        "steps": [
            {"title": "Print the leaked keys", "files": ["notes.txt"], "verify": ["test -f notes.txt"]},
            {"title": format!("{} revoked", SECRETS[3].1), "files": ["notes.txt"]}
        ]
    });
    server.push(openai_call("p1", "submit_plan", plan));
    let output = project
        .tick_with(&server, &["plan", "Rotate the leaked keys"], with_key)
        .await;
    assert_success(&output);
    // The planning conversation, kept for `--revise` until approval.
    let session = project.read(".tasks/draft/session.jsonl");
    assert_contains(&session, "[REDACTED]");
    for (name, secret) in SECRETS {
        assert!(!session.contains(secret), "{name} in the session");
    }
    let output = project.tick_with(&server, &["approve"], with_key).await;
    assert_success(&output);

    // The run: a command prints every secret (from base64, so the command itself holds
    // none), the model claims done with the secrets as evidence, then blocks S2 quoting them.
    let encoded = {
        let out = std::process::Command::new("base64")
            .arg("-w0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(all.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    server.push(openai_calls(&[
        (
            "r1",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        (
            "r2",
            "bash",
            // The step's file changes too: a verify that passed before the change would not
            // count (issue 29), and `test -f notes.txt` fails before it.
            json!({"command": format!("echo {encoded} | base64 -d; echo printed > notes.txt")}),
        ),
    ]));
    server.push(claims_done(
        "r3",
        "S1",
        Some(&format!("printed them:\n{all}")),
    ));
    server.push(openai_call(
        "r4",
        "update_step",
        json!({"id": "S2", "status": "blocked", "reason": format!("need new keys for {all}")}),
    ));
    let output = project.tick_with(&server, &["run"], with_key).await;
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));

    // The command's output really reached the model: the secrets were there to leak.
    let requests = server.requests();
    let sent = requests
        .iter()
        .map(|r| r.body.to_string())
        .collect::<String>();
    assert!(
        sent.contains(SECRETS[0].1),
        "the tool result held the secrets"
    );

    let mut files = Vec::new();
    every_file(project.root(), &mut files);
    let mut found = Vec::new();
    for (path, bytes) in &files {
        for (name, secret) in SECRETS
            .iter()
            .copied()
            .chain([("configured key", CONFIGURED_KEY)])
        {
            if contains(bytes, secret) {
                found.push(format!("{name} in {path}"));
            }
        }
    }
    assert!(found.is_empty(), "secrets found:\n{}", found.join("\n"));

    // And the redaction is what removed them, in each kind of file.
    let id = std::fs::read_dir(project.path(".tasks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("2026"))
        .unwrap();
    assert!(
        id.ends_with("-redacted-rotation-and-the-deploy-keys"),
        "{id}"
    );
    let todo = project.todo(&id);
    assert_contains(&todo, "blocked: need new keys for [REDACTED]");
    let state = project.read(&format!(".tasks/{id}/state.yaml"));
    assert_contains(&state, "[REDACTED]");
    let plan = project.read(&format!(".tasks/{id}/PLAN.md"));
    assert!(plan.matches("[REDACTED]").count() >= 28, "{plan}");
    let transcripts: Vec<_> = files
        .iter()
        .filter(|(path, _)| path.contains("/runs/") && path.ends_with("-S1.jsonl"))
        .collect();
    assert_eq!(transcripts.len(), 1, "one transcript for S1");
    assert!(contains(&transcripts[0].1, "[REDACTED]"));
}
