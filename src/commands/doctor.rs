//! `tick doctor`: is this machine ready to plan and run? Where each setting comes from, whether
//! the server answers (a few seconds at most, no retries), whether the model makes a tool call
//! (one tiny request with one tool), and whether the sandbox's kernel features are there.

use std::time::Instant;

use super::{Ctx, Outcome};
use crate::cli::DoctorArgs;
use crate::config::{Config, Missing};
use crate::error::Result;
use crate::llm::Client;
use crate::report::doctor::{
    ANSWER_BUDGET, CONNECT_BUDGET, Check, DoctorReport, Setting, connection, tool_call,
};

pub fn run(ctx: &Ctx<'_>, args: &DoctorArgs) -> Result<Outcome> {
    // With nothing configured, the server tick would find is what it would use.
    let config = crate::config::with_local_server(
        super::resolved_config(ctx, &args.model)?,
        ctx.store(),
        ctx.env,
    )?;
    let shown = ctx.store().rel(&ctx.store().config_path());
    let mut checks = vec![configuration(&config, &shown)];
    let connection = connection(&config);
    let reachable = connection.ok == Some(true);
    checks.push(connection);
    checks.push(if reachable && config.missing(true).is_empty() {
        tool_call(&config)
    } else {
        Check::new(
            "tool_call",
            None,
            "skipped: needs a reachable server and a complete configuration".to_owned(),
            None,
        )
    });
    checks.push(crate::report::machine::sandbox());
    checks.push(structured_output(ctx, &config, reachable));
    checks.push(crate::report::machine::hard_links(ctx.store().root()));
    checks.push(crate::report::machine::trust(ctx.store(), &config));
    checks.push(crate::report::machine::hooks(ctx.store(), &config));
    let exit_code = if checks[0].ok == Some(false) {
        2
    } else if checks[1..3].iter().any(|c| c.ok == Some(false)) {
        3
    } else {
        0
    };
    let report = DoctorReport {
        format: 1,
        ok: exit_code == 0,
        settings: settings(&config),
        checks,
        exit_code,
    };
    if args.json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.data(&crate::ui::doctor_text(&report));
    }
    Ok(if exit_code == 0 {
        Outcome::Done
    } else {
        Outcome::Findings(exit_code)
    })
}

fn settings(config: &Config) -> Vec<Setting> {
    let s = &config.sources;
    vec![
        Setting {
            name: "provider",
            value: Some(config.provider.as_str().to_owned()),
            source: s.provider.clone(),
        },
        Setting {
            name: "model",
            value: config.model.clone(),
            source: s.model.clone(),
        },
        Setting {
            name: "plan_model",
            value: config.plan_model.clone(),
            source: s.plan_model.clone(),
        },
        Setting {
            name: "base_url",
            value: Some(config.base_url.clone()),
            source: s.base_url.clone(),
        },
        Setting {
            name: "api_key",
            // Never the key itself: only whether there is one.
            value: config.api_key.as_ref().map(|_| "(set)".to_owned()),
            source: s.api_key.clone(),
        },
    ]
}

fn configuration(config: &Config, shown: &str) -> Check {
    let missing = config.missing(true);
    if missing.is_empty() {
        return Check::new("configuration", Some(true), "complete".to_owned(), None);
    }
    let err = config.missing_error(&missing, shown);
    let what: Vec<&str> = missing
        .iter()
        .map(|m| match m {
            Missing::Model => "no model",
            Missing::ApiKey => "no API key",
        })
        .collect();
    Check::new(
        "configuration",
        Some(false),
        what.join(", "),
        err.hints.get(1).cloned(),
    )
}

/// Which structured-output method each configured model gets for compact planning
/// (`src/compact/`), and whether it held on a probe: a question whose natural answer is prose,
/// under a schema it never mentions (`llm::structured::probe`). A server that accepts a method
/// but does not enforce it is found out and the next method tried. Probed only when the
/// planner can be compact; the result is cached in `.tasks/.local/`. Informational: it does not
/// change the exit code.
fn structured_output(ctx: &Ctx<'_>, config: &Config, reachable: bool) -> Check {
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
            let _ = cache::record(
                ctx.store().dir(),
                &cache::key(&config.base_url, model),
                &probe,
            );
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
