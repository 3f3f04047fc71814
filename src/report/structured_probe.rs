//! `tick doctor`'s structured-output probe: which method each configured model gets for
//! compact planning, tried on the server itself.

use std::time::Instant;

use super::doctor::{ANSWER_BUDGET, CONNECT_BUDGET, Check};
use crate::config::Config;
use crate::llm::Client;
use crate::tasks::Store;

/// Which structured-output method each configured model gets for compact planning
/// (`src/compact/`), and whether it held on a probe: a question whose natural answer is prose,
/// under a schema it never mentions (`llm::structured::probe`). A server that accepts a method
/// but does not enforce it is found out and the next method tried. Probed only when the
/// planner can be compact; the result is cached in `.tasks/.local/`. Informational: it does not
/// change the exit code.
pub fn structured_output(store: &Store, config: &Config, reachable: bool) -> Check {
    use crate::compact::cache;
    use crate::llm::structured::{self, StructuredMethod};
    let started = Instant::now();
    let ollama = config.provider == crate::config::Provider::Ollama;
    let candidates = StructuredMethod::candidates(config.provider.kind(), ollama);
    let mut models: Vec<String> = config
        .model
        .iter()
        .chain(&config.plan_model)
        .cloned()
        .collect();
    models.dedup();
    if config.planner == crate::config::Planner::Agent {
        let detail = format!(
            "not probed: `planner: agent`; compact planning would ask for {}",
            candidates[0].as_str()
        );
        return Check::new("structured", None, detail, None);
    }
    let client = match config
        .client_config()
        .map_err(|e| e.message)
        .and_then(|mut c| {
            c.connect_timeout = CONNECT_BUDGET;
            c.idle_timeout = ANSWER_BUDGET;
            c.max_retries = 0;
            Client::new(c).map_err(|e| e.to_string())
        }) {
        Ok(client) if reachable && !models.is_empty() => client,
        _ => {
            let detail = "skipped: needs a reachable server and a complete configuration";
            return Check::new("structured", None, detail.to_owned(), None);
        }
    };
    let mut lines = Vec::new();
    let mut all_held = true;
    for model in &models {
        let mut tried = Vec::new();
        let mut held = None;
        for method in &candidates {
            let Ok(probe) = crate::rt::block_on(structured::probe(
                &client,
                model,
                *method,
                ANSWER_BUDGET * 2,
            )) else {
                return Check::new(
                    "structured",
                    Some(false),
                    "no async runtime".to_owned(),
                    None,
                );
            };
            // Recording is best effort: the cache only saves a probe next time.
            let _ = cache::record(store.dir(), &cache::key(&config.base_url, model), &probe);
            tried.push(format!("{}: {}", probe.method.as_str(), probe.detail));
            if probe.held {
                held = Some(probe.method);
                break;
            }
        }
        all_held &= held.is_some();
        lines.push(match held {
            Some(method) => format!("`{model}`: {} held on a probe", method.as_str()),
            None => format!("`{model}`: no method held ({})", tried.join("; ")),
        });
    }
    let hint = (!all_held).then(|| {
        "compact planning still checks every answer against its schema, but a server that does          not enforce one makes small models fail often; llama.cpp's `llama-server` enforces          `response_format`"
            .to_owned()
    });
    Check::new("structured", Some(all_held), lines.join("; "), hint).timed(started)
}
