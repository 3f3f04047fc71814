//! Transcripts (`draft/session.jsonl`, `runs/*.jsonl`): one JSON line per message, with every
//! string redacted before it is encoded (see [`crate::redact`]) and each entry capped, so one
//! enormous tool call or result cannot make a transcript of gigabytes. A cut entry is still a
//! valid message (the planner's session is read back by `tick plan --revise`); its long
//! strings keep their head and tail around a note saying how much was cut.

use serde_json::Value;

use crate::llm::Message;
use crate::redact;

/// The conversation as JSON lines, each at most about `max_entry_bytes`.
pub fn jsonl(messages: &[Message], secrets: &[&str], max_entry_bytes: usize) -> String {
    let mut text = String::new();
    for message in messages {
        let Ok(mut value) = serde_json::to_value(message) else {
            continue;
        };
        redact::redact_value(&mut value, secrets);
        let mut line = value.to_string();
        let mut budget = max_entry_bytes / 2;
        while line.len() > max_entry_bytes && budget >= 64 {
            cut_strings(&mut value, budget);
            line = value.to_string();
            budget /= 2;
        }
        text.push_str(&redact::redact(&line, secrets));
        text.push('\n');
    }
    text
}

/// Cuts every string in `value` longer than `budget` bytes to its head and tail.
fn cut_strings(value: &mut Value, budget: usize) {
    match value {
        Value::String(text) if text.len() > budget => {
            let head = floor(text, budget * 2 / 3);
            let tail = ceil(text, text.len() - budget / 3);
            *text = format!(
                "{}[… {} bytes cut from the transcript …]{}",
                &text[..head],
                tail - head,
                &text[tail..]
            );
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, budget)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, budget)),
        _ => {}
    }
}

fn floor(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    #[test]
    fn entries_are_capped_and_still_messages() {
        let huge = "é".repeat(1 << 20);
        let messages = vec![
            Message::user("short"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "write_file".into(),
                    arguments: serde_json::json!({"path": "a", "content": huge}),
                    arguments_error: None,
                }],
            },
            Message::tool_result("c1", format!("START{huge}END")),
        ];
        let text = jsonl(&messages, &[], 4096);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        for line in &lines {
            assert!(line.len() <= 4096, "{}", line.len());
            let back: Message = serde_json::from_str(line).unwrap();
            drop(back);
        }
        assert_eq!(lines[0], r#"{"role":"user","text":"short"}"#);
        assert!(lines[2].contains("START") && lines[2].contains("END"));
        assert!(lines[2].contains("bytes cut from the transcript"));
    }

    #[test]
    fn secrets_are_redacted_inside_the_strings() {
        let key = "sk-proj-Zq81Lm2Nx7Vb0Cd9Fg3Hj4Kk5Ll6Mm7Nn8Oo9Pp0QqRr1";
        let messages = vec![Message::tool_result("c", format!("out:\n{key}\n\tdone"))];
        let text = jsonl(&messages, &["my-own-key-123"], 1 << 20);
        assert!(!text.contains(key), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }
}
