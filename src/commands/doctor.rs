//! `tick doctor`: is this machine ready to plan and run? Where each setting comes from, whether
//! the server answers (a few seconds at most, no retries), whether the model makes a tool call
//! (one tiny request with one tool), and whether the sandbox's kernel features are there.

use super::{Ctx, Outcome};
use crate::cli::DoctorArgs;
use crate::config::{Config, Missing};
use crate::error::Result;
use crate::report::doctor::{Check, DoctorReport, Setting, connection, tool_call};

pub fn run(ctx: &Ctx<'_>, args: &DoctorArgs) -> Result<Outcome> {
    // With nothing configured, the server tick would find is what it would use.
    let config = crate::config::with_local_server(
        super::resolved_config(ctx, &args.model)?,
        ctx.store(),
        ctx.env,
    )?;
    let shown = ctx.store().rel(&ctx.store().config_path());
    let mut checks = vec![configuration(&config, &shown)];
    // Each probe can wait for seconds: the person sees what it waits for.
    let live = ctx.env.stderr_is_terminal && !args.json;
    let probing = |what: &str| ctx.ui.progress(what, live);
    probing(&format!(
        "probing `{}`: does it accept a connection? (gives up after 1.5 s)",
        config.base_url
    ));
    let connection = connection(&config);
    let reachable = connection.ok == Some(true);
    checks.push(connection);
    checks.push(if reachable && config.missing(true).is_empty() {
        probing(&format!(
            "probing `{}`: does the model make a tool call? (gives up after {} s of silence)",
            config.model.as_deref().unwrap_or(""),
            crate::report::doctor::ANSWER_BUDGET.as_secs()
        ));
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
    if reachable && config.planner != crate::config::Planner::Agent {
        probing("probing which structured output the server enforces");
    }
    checks.push(crate::report::structured_probe::structured_output(
        ctx.store(),
        &config,
        reachable,
    ));
    ctx.ui.end_live_text();
    checks.push(crate::report::machine::hard_links(ctx.store().root()));
    checks.push(crate::report::machine::trust(ctx.store(), &config));
    checks.push(crate::report::machine::hooks(ctx.store(), &config));
    // Only with servers configured: each is started, as planning would start it.
    if !config.mcp_servers.is_empty() {
        let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        let launcher = ctx.engine.mcp_launcher(&config, None);
        checks.push(crate::report::doctor::mcp_servers(
            launcher.as_deref(),
            &names,
        ));
    }
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
