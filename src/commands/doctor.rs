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
        &ctx.store,
        ctx.env,
    )?;
    let shown = ctx.store.rel(&ctx.store.config_path());
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
    checks.push(sandbox());
    checks.push(structured_output(ctx, &config, reachable));
    checks.push(hard_links(ctx.store.root()));
    checks.push(trust(ctx, &config));
    checks.push(hooks(ctx, &config));
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
        ctx.ui.data(&report_text(&report));
    }
    Ok(if exit_code == 0 {
        Outcome::Done
    } else {
        Outcome::Findings(exit_code)
    })
}

/// The hooks that apply here (`crate::hooks`), in the order they run, and whether each
/// command exists; the repository's that do not run because it is not trusted are named.
fn hooks(ctx: &Ctx<'_>, config: &Config) -> Check {
    let root = ctx.store.root();
    let set = crate::hooks::HookSet::resolve(&config.hooks, root);
    let env = crate::tools::bash::CommandEnv::default();
    let missing = set.missing_commands(root, &env);
    let mut lines: Vec<String> = set
        .hooks()
        .iter()
        .map(|hook| {
            let matcher = hook
                .entry
                .matcher
                .as_deref()
                .map_or(String::new(), |m| format!(" [{m}]"));
            let problem = missing
                .iter()
                .find(|(entry, _)| *entry == hook.entry)
                .map_or(String::new(), |(_, why)| format!(": {why}"));
            format!(
                "{}{matcher} `{}`{problem}",
                hook.entry.event, hook.entry.command
            )
        })
        .collect();
    if let Some(warning) = set.ignored_warning() {
        lines.push(warning);
    }
    if lines.is_empty() {
        return Check::new("hooks", None, "none configured".to_owned(), None);
    }
    let ok = missing.is_empty();
    Check::new(
        "hooks",
        Some(ok),
        lines.join("; "),
        (!ok).then(|| {
            "fix the `command` of each hook named above (`hooks:` in your config)".to_owned()
        }),
    )
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
    let Ok(runtime) = crate::rt::runtime() else {
        return Check::new(
            "structured",
            Some(false),
            "no async runtime".to_owned(),
            None,
        );
    };
    let mut lines = Vec::new();
    let mut all_held = true;
    for model in &models {
        let mut tried = Vec::new();
        let mut held = None;
        for method in &candidates {
            let probe = runtime.block_on(structured::probe(
                &client,
                model,
                *method,
                ANSWER_BUDGET * 2,
            ));
            // Recording is best effort: the cache only saves a probe next time.
            let _ = cache::record(
                ctx.store.dir(),
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

/// Whether the kernel enforces Landlock: a ruleset that requires ABI v1 can be created (it is
/// never applied, so this process stays as it is).
/// The sandbox, set up for real in a throwaway helper process for each kind of policy: what
/// `tick run` (build) and `tick plan`'s `run_command` (read-only) will need.
fn sandbox() -> Check {
    use crate::sandbox::{Kind, Unavailable, available};
    let build = available(Kind::Build);
    let read_only = available(Kind::ReadOnly);
    let word = |r: &Result<(), Unavailable>| if r.is_ok() { "works" } else { "unavailable" };
    let detail = format!(
        "build policy {}, read-only policy {}",
        word(&build),
        word(&read_only)
    );
    let failure = build.as_ref().err().or(read_only.as_ref().err());
    Check::new(
        "sandbox",
        Some(failure.is_none()),
        detail,
        failure.map(|err| {
            format!(
                "{err}; `tick run` stops until this is fixed, and the planner works without \
                 `run_command`; {}",
                Unavailable::OPT_OUT_HINT
            )
        }),
    )
}

/// Files of the workspace that are also files elsewhere (hard links, as uv and pnpm make
/// them): a command that writes one writes the other, and no sandbox can stop that. A
/// warning, never a failure of `tick doctor`.
fn hard_links(root: &std::path::Path) -> Check {
    let started = Instant::now();
    let check = match crate::sandbox::links_leaving(root) {
        Ok(leaving) if leaving.is_empty() => Check::new(
            "hard_links",
            Some(true),
            "no file of the workspace is also a file outside it".to_owned(),
            None,
        ),
        Ok(leaving) => {
            let mut named: Vec<String> = leaving.iter().take(5).map(|p| format!("`{p}`")).collect();
            if leaving.len() > named.len() {
                named.push(format!("and {} more", leaving.len() - named.len()));
            }
            Check::new(
                "hard_links",
                Some(false),
                format!(
                    "{} {} hard links outside the workspace (or into `.git/`, `.tasks/`)",
                    named.join(", "),
                    if leaving.len() == 1 { "has" } else { "have" }
                ),
                Some(
                    "a command that writes them writes there too; let tools copy instead \
                     (`UV_LINK_MODE=copy`, pnpm's `package-import-method=copy`)"
                        .to_owned(),
                ),
            )
        }
        Err(err) => Check::new("hard_links", None, format!("could not look: {err}"), None),
    };
    check.timed(started)
}

/// Whether the person trusts this repository's files, and what was ignored because they do
/// not. A report, never a failure of `tick doctor`.
fn trust(ctx: &Ctx<'_>, config: &Config) -> Check {
    use crate::trust::TrustState;
    let shipped = crate::trust::shipped(ctx.store.root());
    let named = |files: &mut dyn Iterator<Item = &String>| {
        files
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ignored = config
        .ignored
        .as_ref()
        .map(|i| i.keys.join(", "))
        .unwrap_or_default();
    let hint = Some("`tick trust` trusts its files as they are now".to_owned());
    match ctx.store.trust() {
        TrustState::Trusted => Check::new(
            "trust",
            Some(true),
            format!(
                "trusted, its files as trusted ({})",
                named(&mut shipped.keys())
            ),
            None,
        ),
        TrustState::Changed { files } => Check::new(
            "trust",
            Some(false),
            format!(
                "trusted once, changed since: {}; ignored {ignored}",
                named(&mut files.iter())
            ),
            hint,
        ),
        TrustState::Untrusted if ignored.is_empty() => Check::new(
            "trust",
            Some(true),
            if shipped.is_empty() {
                "not trusted; the repository ships no files of tick's".to_owned()
            } else {
                "not trusted; its files set only what tightens".to_owned()
            },
            None,
        ),
        TrustState::Untrusted => Check::new(
            "trust",
            Some(false),
            format!("not trusted: ignored {ignored}"),
            hint,
        ),
    }
}

/// The human form: the settings with their sources, then one line per check.
pub fn report_text(report: &DoctorReport) -> String {
    let mut out = String::from("settings:\n");
    for s in &report.settings {
        out.push_str(&format!(
            "  {:<11} {:<34} {}\n",
            s.name,
            s.value.as_deref().unwrap_or("-"),
            s.source
        ));
    }
    out.push_str("checks:\n");
    for c in &report.checks {
        let mark = match c.ok {
            Some(true) => "ok  ",
            Some(false) => "FAIL",
            None => "skip",
        };
        out.push_str(&format!("  {mark} {:<13} {}\n", c.name, c.detail));
        if let Some(hint) = &c.hint {
            for line in hint.lines() {
                out.push_str(&format!("       {:<13} {line}\n", ""));
            }
        }
    }
    out
}
