//! `tick status` ends with the next thing to do in every phase, and a hint names a task only
//! when a bare command would not reach it (then by its shortest unique prefix).

use crate::common::workspace::{PLAN, Workspace, filters};

/// `tick args…` as a person sees it: stdout, stderr and the exit code.
fn shown(ws: &Workspace, args: &[&str]) -> String {
    ws.run(args).shown(args)
}

#[test]
fn status_gives_the_next_action_for_every_phase() {
    let ws = Workspace::new();
    let mut out = String::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    out.push_str(&shown(&ws, &["status"]));
    // A draft whose planner asked questions a terminal could not put to anyone.
    let asking = PLAN
        .replacen("---\n# ", "status: needs-input\n---\n# ", 1)
        .replacen(
            "## Risks",
            "## Open questions\n\n- Which session store?\n\n## Risks",
            1,
        );
    ws.write(".tasks/draft/PLAN.md", asking);
    out.push_str(&shown(&ws, &["status"]));
    ws.write(".tasks/draft/PLAN.md", PLAN);
    ws.ok(&["approve"]);
    out.push_str(&shown(&ws, &["status"]));
    ws.ok(&["mark", "S2.1", "blocked", "--reason", "which shim library?"]);
    out.push_str(&shown(&ws, &["status"]));
    ws.ok(&["mark", "S2.1", "pending"]);
    ws.ok(&["mark", "S1", "in-progress"]);
    out.push_str(&shown(&ws, &["status"]));
    for step in ["S1", "S2.1", "S2.2", "S3"] {
        ws.ok(&["mark", step, "done"]);
    }
    out.push_str(&shown(&ws, &["status"]));
    filters(&ws).bind(|| insta::assert_snapshot!("status_next_action", out));
}

#[test]
fn a_hint_names_a_task_that_is_not_the_current_one_by_its_shortest_unique_prefix() {
    let ws = Workspace::new();
    let first = ws.approve(PLAN);
    let second = ws.approve(&PLAN.replace("Refactor login module", "Rename the login module"));
    assert_ne!(first, second);
    let mut out = String::new();
    out.push_str(&shown(&ws, &["next"]));
    out.push_str(&shown(&ws, &["next", &first]));
    out.push_str(&shown(&ws, &["status", &first]));
    filters(&ws).bind(|| insta::assert_snapshot!("hint_short_task_names", out));
    // The prefix a hint gives names the task.
    let status = ws.ok(&["status", "20261130-143013"]);
    assert!(
        status.stdout.contains(&format!("task:   {first}\n")),
        "{status:?}"
    );
}

/// `-q` keeps what is wrong and drops what to do: no `hint:` lines from `tick status -q`.
#[test]
fn status_quiet_keeps_the_warnings_and_drops_the_hints() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    let run = ws.ok(&["-q", "status"]);
    insta::assert_snapshot!(run.stderr, @"warning: `S1` is done without verification");
}

/// The last `hint:` line of `stderr`, without `hint: `.
fn last_hint(stderr: &str) -> &str {
    stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("hint: "))
        .unwrap_or_else(|| panic!("no hint in {stderr}"))
}

#[test]
fn status_json_next_with_no_tasks_is_the_hint_the_human_output_ends_with() {
    let ws = Workspace::new();
    let human = ws.ok(&["status"]);
    let json: serde_json::Value =
        serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["next"]["hint"], last_hint(&human.stderr), "{json}");
    assert_eq!(json["next"]["command"], "tick plan \"goal\"", "{json}");
}

/// Regression: a draft that does not parse read as "no tasks yet", `tick plan` then refused
/// and pointed at `tick approve`, which refused too.
#[test]
fn a_broken_draft_waiting_gets_edit_or_discard_as_the_next_action_everywhere() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let draft = ".tasks/draft/PLAN.md";
    let broken = ws.read(draft).replace("- [ ] S3", "- [?] S3");
    ws.write(draft, &broken);
    let line = broken
        .lines()
        .position(|l| l.starts_with("- [?] S3"))
        .unwrap()
        + 1;
    let location = format!("`.tasks/draft/PLAN.md:{line}:3`: unknown step marker `[?]`");

    let human = ws.ok(&["status"]);
    assert!(
        human
            .stderr
            .starts_with(&format!("warning: the draft does not parse: {location}\n")),
        "{}",
        human.stderr
    );
    assert!(!human.stderr.contains("no tasks yet"), "{}", human.stderr);
    let hint = last_hint(&human.stderr);
    assert!(
        hint.contains("`tick edit`") && hint.contains("`tick discard`"),
        "{hint}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["draft"], serde_json::Value::Null, "{json}");
    assert_eq!(json["draft_error"], location.as_str(), "{json}");
    assert_eq!(json["next"]["command"], "tick edit", "{json}");
    assert_eq!(json["next"]["hint"], hint, "{json}");

    let plan = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(plan.code, 2, "{plan:#?}");
    assert!(plan.stderr.contains(&location), "{}", plan.stderr);
    assert!(
        plan.stderr.contains("`tick edit`") && plan.stderr.contains("`tick discard`"),
        "{}",
        plan.stderr
    );
    assert!(!plan.stderr.contains("tick approve"), "{}", plan.stderr);
    assert_eq!(ws.read(draft), broken);
}
