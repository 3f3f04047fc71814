//! The compact executor's requests within one step start with the same bytes (the system
//! prompt and the step's fixed context), so a local server can reuse its prompt cache from
//! one call to the next instead of reading the whole prompt again.

use serde_json::{Value, json};

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::openai_text;
use crate::common::workspace::Workspace;

/// The model's decision, as a schema-constrained server streams it.
pub(super) fn decide(action: &str, path: &str) -> Reply {
    openai_text(&json!({"action": action, "path": path}).to_string())
}

/// `lib.rs` with `fn one`, and an approved one-step plan to add its test: the task's id.
pub(super) fn one_fn_to_test(ws: &Workspace) -> String {
    ws.write("lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    ws.approve(
        "# Change\n\n## Summary\nOne step.\n\n## Steps\n- [ ] S1 Test one\n  - files: lib.rs\n  \
         - verify: `grep -q one_is_one lib.rs`\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_requests_share_a_byte_identical_prefix() {
    let ws = Workspace::new();
    let id = one_fn_to_test(&ws);
    let server = FakeModel::start().await;
    // A first answer the guards refuse (a second `fn one`), then a good one: four calls.
    server.push(decide("add", "lib.rs"));
    server.push(openai_text(
        "```rust\npub fn one() -> u32 {\n    2\n}\n```\n",
    ));
    server.push(decide("add", "lib.rs"));
    server.push(openai_text(
        "```rust\n#[test]\nfn one_is_one() {\n    assert_eq!(one(), 1);\n}\n```\n",
    ));
    let run = ws.run_compact(&server, &["run"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let bodies: Vec<Vec<Value>> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.messages().to_vec())
        .collect();
    assert_eq!(bodies.len(), 4, "{bodies:#?}");
    // What a server's cache sees: the messages in order, each role and text as sent.
    let prompt = |messages: &[Value]| -> String {
        let mut text = String::new();
        for m in messages {
            text.push('<');
            text.push_str(m["role"].as_str().unwrap());
            text.push('>');
            text.push_str(m["content"].as_str().unwrap());
        }
        text
    };
    let prompts: Vec<String> = bodies.iter().map(|b| prompt(b)).collect();
    let shared = prompts
        .iter()
        .skip(1)
        .fold(prompts[0].as_str(), |common, p| {
            let n = common
                .char_indices()
                .zip(p.chars())
                .take_while(|((_, a), b)| a == b)
                .count();
            let end = common
                .char_indices()
                .nth(n)
                .map_or(common.len(), |(i, _)| i);
            &common[..end]
        });
    // The system prompt whole, then the step's fixed context: every call of the step,
    // the one after a refused edit too, starts with it byte for byte.
    let system = bodies[0][0]["content"].as_str().unwrap();
    assert!(
        bodies.iter().all(|b| b[0]["content"] == system),
        "{bodies:#?}"
    );
    let after_system = shared
        .strip_prefix(&format!("<system>{system}"))
        .unwrap_or_else(|| panic!("the system prompt is not shared: {shared}"));
    insta::assert_snapshot!(after_system, @r"
    <user>Task: Change
    Step: S1 Test one
    After your edits tick runs `grep -q one_is_one lib.rs`; the step is done when they pass.

    The step's files:

    lib.rs:
    ```
    pub fn one() -> u32 {
        1
    }
    ```

    The step: S1 Test one
    First decide the edit of `lib.rs` that does this step, as JSON: `action` (`add` to add new code (a function, a method, a test) to it, `change` to change lines that are in it) and `path`. The code comes after.
    ");
    assert!(
        ws.todo(&id).contains("- [x] S1 Test one"),
        "{}",
        ws.todo(&id)
    );
}
