//! A compact edit whose answer loops while it streams: the stream is cut as soon as the loop
//! shows, the same question goes out once more (warmer), and the person sees one line saying
//! so.

use std::time::Duration;

use super::compact_prefix::{decide, one_fn_to_test};
use crate::common::fake_model::FakeModel;
use crate::common::scripts::{openai_looping, openai_text};
use crate::common::workspace::Workspace;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_answer_is_cut_and_asked_again_once_warmer() {
    let ws = Workspace::new();
    let id = one_fn_to_test(&ws);
    let server = FakeModel::start().await;
    server.push(decide("add", "lib.rs"));
    // Never ends by itself: only the cut stops it.
    server.push(openai_looping(
        "assert_eq!(one(), 1); ",
        Duration::from_millis(1),
    ));
    server.push(openai_text(
        "```rust\n#[test]\nfn one_is_one() {\n    assert_eq!(one(), 1);\n}\n```\n",
    ));
    let run = ws.run_compact(&server, &["run"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asked: Vec<(String, f64)> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| (r.last_user_text(), r.body["temperature"].as_f64().unwrap()))
        .collect();
    let code: Vec<&(String, f64)> = asked.iter().skip(1).collect();
    // The same question twice, the second warmer; nothing else asked.
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert_eq!(code[0].0, code[1].0);
    assert!(
        (code[0].1 - 0.2).abs() < 1e-6 && (code[1].1 - 0.7).abs() < 1e-6,
        "{asked:?}"
    );
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("asking again"))
        .collect();
    insta::assert_snapshot!(said.join("\n"), @"the answer repeated `assert_eq!(one(), 1);` over and over, cut; warmer at temperature 0.70; asking again in 0.0 s (attempt 2 of 2)");
    insta::assert_snapshot!(ws.todo(&id), @r"
    # TODO: Change

    <!-- tick ticks a box only after the step's verification passes.
         Markers: [ ] pending, [x] done, [-] in progress, [!] blocked, [~] stale.
         Edit freely: untick, reorder, add steps (no id needed; tick assigns one). -->

    - [x] S1 Test one
      - files: lib.rs
      - verify: `grep -q one_is_one lib.rs`
    ");
    insta::assert_snapshot!(ws.read("lib.rs"), @r"
    pub fn one() -> u32 {
        1
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn one_is_one() {
            assert_eq!(one(), 1);
        }
    }
    ");
}
