//! What people read, pinned by snapshots: the generated files, `status` and `list` in both
//! forms, and the errors people meet most. Temp paths, pids and the git sha are filtered.

use insta::{assert_json_snapshot, assert_snapshot};

use crate::common::workspace::{PLAN, Run, Workspace, filters};

/// The exit code, stdout and stderr of `run`, for a snapshot of a whole command.
pub(super) fn both(run: &Run) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    )
}

fn json(run: &Run) -> serde_json::Value {
    assert_eq!(
        run.stdout.lines().count(),
        1,
        "one JSON document on one line"
    );
    serde_json::from_str(&run.stdout).unwrap()
}

/// A task part-way through: done by hand, in progress, blocked, a hand-added step.
fn busy_task(ws: &Workspace) -> String {
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.mark_started_and_blocked();
    let path = format!(".tasks/{id}/TODO.md");
    ws.write(&path, ws.read(&path) + "- [ ] Tell the team\n");
    id
}

#[test]
fn generated_files() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let draft = ws.read(".tasks/draft/PLAN.md");
    ws.ok(&["approve", "--max-files", "12"]);
    let id = &ws.task_ids()[0];
    let state = ws.read(&format!(".tasks/{id}/state.yaml"));
    assert!(state.contains(&format!("git_head: {}\n", ws.head())));
    filters(&ws).bind(|| {
        assert_snapshot!("draft_plan_md", draft);
        assert_snapshot!("approved_plan_md", ws.read(&format!(".tasks/{id}/PLAN.md")));
        assert_snapshot!("todo_md", ws.todo(id));
        assert_snapshot!("state_yaml", state);
        assert_snapshot!("gitignore", ws.read(".tasks/.gitignore"));
    });
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S3", "blocked", "--reason", "waiting"]);
    filters(&ws).bind(|| {
        assert_snapshot!(
            "state_yaml_after_marks",
            ws.read(&format!(".tasks/{id}/state.yaml"))
        );
    });
}

#[test]
fn status_human_and_json() {
    let ws = Workspace::new();
    let id = busy_task(&ws);
    // PLAN.md edited after approval, and a new draft waiting.
    let plan = format!(".tasks/{id}/PLAN.md");
    ws.write(
        &plan,
        ws.read(&plan)
            .replace("Move the login code", "Move all login code"),
    );
    ws.run_stdin(
        &["plan", "--from", "-"],
        &PLAN.replace("Refactor login module", "Next plan"),
    );
    filters(&ws).bind(|| {
        assert_snapshot!("status_human", both(&ws.run(&["status"])));
        let run = ws.ok(&["status", "--json"]);
        assert_snapshot!("status_json_raw", run.stdout);
        assert_json_snapshot!("status_json", json(&run));
    });
}

#[test]
fn status_of_a_fresh_and_of_a_finished_task() {
    let ws = Workspace::new();
    ws.approve("# Small\n\n## Steps\n\n- [ ] S1 Only step\n  - verify: `true`\n");
    filters(&ws).bind(|| {
        assert_snapshot!("status_fresh", both(&ws.run(&["status"])));
    });
    ws.ok(&["mark", "S1", "done"]);
    filters(&ws).bind(|| {
        assert_snapshot!("status_completed", both(&ws.run(&["status"])));
        assert_snapshot!("status_empty", both(&Workspace::new().run(&["status"])));
    });
}

#[test]
fn list_human_and_json() {
    let ws = Workspace::new();
    busy_task(&ws);
    ws.approve_at(
        "# Finished work\n\n## Steps\n\n- [ ] S1 Done soon\n",
        "2026-12-01T09:00:00Z",
    );
    ws.ok(&["mark", "S1", "done", "--task", "finished-work"]);
    // A broken task is listed, with why.
    let broken = ws.approve("# Broken later\n\n## Steps\n\n- [ ] S1 One\n");
    let path = format!(".tasks/{broken}/TODO.md");
    ws.write(&path, ws.read(&path).replace("- [ ] S1", "- [?] S1"));
    ws.run_stdin(
        &["plan", "--from", "-"],
        "# Waiting draft\n\n## Steps\n\n- [ ] S1 a\n- [ ] S2 b\n",
    );
    filters(&ws).bind(|| {
        assert_snapshot!("list_human", both(&ws.run(&["list"])));
        assert_json_snapshot!("list_json", json(&ws.ok(&["list", "--json"])));
    });
}

#[test]
fn error_messages() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/TODO.md");
    let todo = ws.read(&path);
    ws.write(&path, todo.replace("- [ ] S2 Add", "- [?] S2 Add"));
    let unknown_marker = ws.run(&["mark", "S1", "done"]);
    // The space after the marker lost: read as a note, S2 would vanish from the task.
    ws.write(&path, todo.replace("- [ ] S2 Add", "- [ ]S2 Add"));
    let glued_marker = ws.run(&["status"]);
    // A misspelt `files:` read as a note would leave S2 without its files.
    ws.write(
        &path,
        todo.replace("  - files: src/compat/**", "  - file: src/compat/**"),
    );
    let misspelt_detail = ws.run(&["status"]);
    ws.write(&path, todo.replace("- [ ] S3 Update", "- [ ] S1 Update"));
    let duplicate = ws.run(&["status"]);
    ws.write(&path, &todo);
    let plan = format!(".tasks/{id}/PLAN.md");
    let plan_src = ws.read(&plan);
    ws.write(
        &plan,
        plan_src.replace("status: approved", "status: finished"),
    );
    let bad_status = ws.run(&["status"]);
    ws.write(&plan, &plan_src);
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let draft_waiting = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let no_title = ws.run_stdin(
        &["plan", "--from", "-", "--force"],
        "## Steps\n- [ ] S1 a\n",
    );
    let no_step = ws.run(&["mark", "S7", "done"]);
    let lock = std::fs::File::create(ws.path(&format!(".tasks/{id}/.lock"))).unwrap();
    lock.lock().unwrap();
    let busy = ws.run(&["mark", "S1", "done"]);
    drop(lock);
    filters(&ws).bind(|| {
        assert_snapshot!("error_unknown_marker", both(&unknown_marker));
        assert_snapshot!("error_glued_marker", both(&glued_marker));
        assert_snapshot!("error_misspelt_detail", both(&misspelt_detail));
        assert_snapshot!("error_duplicate_id", both(&duplicate));
        assert_snapshot!("error_front_matter_status", both(&bad_status));
        assert_snapshot!("error_draft_waiting", both(&draft_waiting));
        assert_snapshot!("error_no_title", both(&no_title));
        assert_snapshot!("error_no_such_step", both(&no_step));
        assert_snapshot!("error_busy", both(&busy));
    });
}

/// A typo in a config file (the repository's or the person's own) names the file, the line
/// and the known key nearest to it.
#[test]
fn a_config_key_typo_names_the_nearest_key() {
    let ws = Workspace::new();
    ws.write(".tasks/config.yaml", "model: x\nmodle: y\n");
    let project = ws.run(&["plan", "Add a greeting"]);
    ws.write(".tasks/config.yaml", "model: x\n");
    ws.write_user_config("provider: openai\nlimits:\n  max_turns: 3\n  max_token: 9\n");
    let user = ws.run(&["plan", "Add a greeting"]);
    ws.write_user_config("colour: blue\n");
    let far = ws.run(&["plan", "Add a greeting"]);
    filters(&ws).bind(|| {
        assert_snapshot!("error_config_key_typo", both(&project));
        assert_snapshot!("error_config_nested_key_typo", both(&user));
        assert_snapshot!("error_config_unknown_key", both(&far));
    });
}

/// `--help` is what a new user reads first: its text is reviewed like any other output.
#[test]
fn help_texts() {
    let ws = Workspace::new();
    for (name, args) in [
        ("help_top", vec!["--help"]),
        ("help_plan", vec!["plan", "--help"]),
        ("help_run", vec!["run", "--help"]),
        ("help_mark", vec!["mark", "--help"]),
        ("help_status", vec!["status", "--help"]),
    ] {
        let run = ws.ok(&args);
        insta::assert_snapshot!(name, run.stdout);
    }
}
