//! Facts a server states about itself that requests do not carry: its context size, which
//! sizes the context tick builds for a small model (`compact`).

use std::time::Duration;

use serde_json::{Value, json};

use super::Client;

/// How long a question about the server may take; it is optional, so it must be quick.
const ASK_BUDGET: Duration = Duration::from_secs(5);

/// Ollama's context when a model sets no `num_ctx` (it truncates longer prompts silently).
const OLLAMA_DEFAULT_CONTEXT: u32 = 4096;

/// The server's context size in tokens, if it says: llama.cpp's `GET /props`
/// (`default_generation_settings.n_ctx`, per slot), or with `ollama`, Ollama's
/// `POST /api/show` (`num_ctx` among the model's parameters, else Ollama's default).
pub async fn context_tokens(client: &Client, model: &str, ollama: bool) -> Option<u32> {
    if ollama {
        let shown = client
            .fetch_json("/api/show", Some(&json!({"model": model})), ASK_BUDGET)
            .await?;
        return Some(ollama_context(&shown));
    }
    let props = client.fetch_json("/props", None, ASK_BUDGET).await?;
    llama_cpp_context(&props)
}

fn llama_cpp_context(props: &Value) -> Option<u32> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

fn ollama_context(shown: &Value) -> u32 {
    let parameters = shown["parameters"].as_str().unwrap_or("");
    let set = parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse::<u32>().ok())
            .flatten()
    });
    let trained = shown["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
            .and_then(|n| u32::try_from(n).ok())
    });
    let used = set.unwrap_or(OLLAMA_DEFAULT_CONTEXT);
    trained.map_or(used, |trained| used.min(trained))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_states_its_context_per_slot() {
        assert_eq!(
            llama_cpp_context(&json!({"default_generation_settings": {"n_ctx": 8192}})),
            Some(8192)
        );
        assert_eq!(llama_cpp_context(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(llama_cpp_context(&json!({"model_path": "x"})), None);
    }

    #[test]
    fn ollama_uses_num_ctx_else_its_default_within_what_the_model_was_trained_for() {
        let shown = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 16384",
            "model_info": {"qwen2.context_length": 32768},
        });
        assert_eq!(ollama_context(&shown), 16384);
        let default = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_context(&default), OLLAMA_DEFAULT_CONTEXT);
        let small =
            json!({"parameters": "num_ctx 65536", "model_info": {"x.context_length": 2048}});
        assert_eq!(ollama_context(&small), 2048);
    }
}
