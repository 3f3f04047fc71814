//! A first run with nothing configured: one message names everything missing and every way
//! forward, and the failed command leaves no file behind.

use insta::assert_snapshot;

use crate::common::fake_model::closed_port_url;
use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::{Run, Workspace, filters};

fn unconfigured(ws: &Workspace, args: &[&str], vars: &[(&str, &str)]) -> Run {
    ws.run_with(args, |cmd| {
        cmd.env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(vars.iter().copied());
    })
}

#[test]
fn plan_with_nothing_configured_names_everything_missing_and_writes_nothing() {
    let ws = Workspace::new();
    let run = unconfigured(&ws, &["plan", "Add a --verbose flag"], &[]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        !ws.exists(".tasks"),
        "a failed first command leaves no `.tasks/`"
    );
    assert_eq!(
        run.stderr.matches("error:").count(),
        1,
        "one message: {}",
        run.stderr
    );
    filters(&ws).bind(|| assert_snapshot!("cli_first_run_nothing_configured", run.stderr));
}

#[test]
fn the_message_names_which_source_set_what() {
    let ws = Workspace::new();
    ws.write(
        ".tasks/config.yaml",
        "provider: openai\nbase_url: https://llm.example.com/v1\n",
    );
    // The person's own repository: they trust its file to choose the server.
    ws.ok(&["trust"]);
    let run = unconfigured(
        &ws,
        &["plan", "Add a --verbose flag"],
        &[("TICK_MODEL", "gpt-4.1")],
    );
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(!ws.exists(".tasks/.gitignore"));
    assert!(!ws.exists(".tasks/.lock"));
    filters(&ws).bind(|| assert_snapshot!("cli_first_run_key_missing", run.stderr));
}

#[test]
fn a_local_provider_needs_only_a_model() {
    let ws = Workspace::new();
    let run = unconfigured(
        &ws,
        &["plan", "--provider", "ollama", "Add a --verbose flag"],
        &[],
    );
    assert_eq!(run.code, 2, "{run:#?}");
    assert_contains(&run.stderr, "it needs a model\n");
    assert!(!run.stderr.contains("API key ("), "{}", run.stderr);
    assert_contains(
        &run.stderr,
        "provider `ollama` (flag `--provider`), base URL `http://127.0.0.1:11434/v1` (default)",
    );
}

#[test]
fn plan_from_a_file_needs_no_model() {
    let ws = Workspace::new();
    let mut cmd = ws.tick();
    cmd.args(["plan", "--from", "-"])
        .env_remove("OPENAI_API_KEY")
        .write_stdin(crate::common::workspace::PLAN);
    let output = cmd.output().unwrap();
    assert!(output.status.success(), "{output:#?}");
    assert!(ws.exists(".tasks/draft/PLAN.md"));
}

#[test]
fn init_leads_to_the_config_and_doctor() {
    let ws = Workspace::new();
    let run = ws.ok(&["init"]);
    assert_contains(
        &run.stderr,
        "hint: set the model in `.tasks/config.yaml` (or the environment), check it with `tick doctor`",
    );
    let config = ws.read(".tasks/config.yaml");
    assert_contains(
        &config,
        "#   2. this file: the repository's settings win over your own",
    );
}

#[test]
fn a_local_server_that_is_not_running_is_named_at_once() {
    let ws = Workspace::new();
    let (url, port) = closed_port_url();
    let run = unconfigured(
        &ws,
        &[
            "plan",
            "--provider",
            "ollama",
            "--model",
            "qwen3",
            "--base-url",
            &url,
            "Add a flag",
        ],
        &[],
    );
    assert_eq!(run.code, 3, "{run:#?}");
    assert_starts_with(
        &run.stderr,
        &format!("error: cannot connect to `127.0.0.1:{port}`"),
    );
    assert_contains(&run.stderr, "hint: start the server: `ollama serve`");
    assert_contains(&run.stderr, "nothing was written");
    assert!(
        !run.stderr.contains("attempts"),
        "no retries: {}",
        run.stderr
    );
    assert!(!ws.exists(".tasks"));
}
