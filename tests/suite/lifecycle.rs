//! The by-hand lifecycle in real git repositories: init → plan --from → show → approve →
//! mark → status and list, and what happens to the draft along the way.

use serde_json::Value;

use crate::common::text::assert_contains;
use crate::common::text::assert_starts_with;
use crate::common::workspace::{PLAN, Workspace, filters, task_id_at};
use crate::suite::snapshots::both;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("not JSON ({err}): {text}"))
}

#[test]
fn init_creates_tasks_and_is_idempotent() {
    let ws = Workspace::new();
    let first = ws.ok(&["init"]);
    assert!(first.stdout.is_empty(), "init prints notes, not data");
    assert_contains(&first.stderr, "created `.tasks/config.yaml`");
    assert_contains(&first.stderr, "created `.tasks/.gitignore`");
    let gitignore = ws.read(".tasks/.gitignore");
    for local in [".lock", "draft/session.jsonl", "*/runs/"] {
        assert!(
            gitignore.lines().any(|l| l == local),
            "{local} in {gitignore}"
        );
    }
    let config = ws.read(".tasks/config.yaml");
    assert!(
        config
            .lines()
            .all(|l| l.trim().is_empty() || l.starts_with('#')),
        "the default config is all comments:\n{config}"
    );

    // A person's changes survive a second init, byte for byte.
    let mine = "# mine\nprovider: anthropic\nmodel: claude   \n";
    ws.write(".tasks/config.yaml", mine);
    ws.write(".tasks/.gitignore", "custom\n");
    let second = ws.ok(&["init"]);
    assert_contains(&second.stderr, "kept `.tasks/config.yaml` as it is");
    assert_eq!(ws.read(".tasks/config.yaml"), mine);
    assert_eq!(ws.read(".tasks/.gitignore"), "custom\n");

    // A deleted file comes back; the kept one stays.
    std::fs::remove_file(ws.path(".tasks/.gitignore")).unwrap();
    ws.ok(&["init"]);
    assert_eq!(ws.read(".tasks/.gitignore"), gitignore);
    assert_eq!(ws.read(".tasks/config.yaml"), mine);
}

#[test]
fn plan_from_a_file_approve_mark_status() {
    let ws = Workspace::new();
    ws.ok(&["init"]);
    ws.write("plans/login.md", PLAN);
    let drafted_at = ws.next_time();
    let drafted = ws.ok(&["plan", "--from", "plans/login.md"]);
    assert!(drafted.stdout.is_empty());
    assert_contains(
        &drafted.stderr,
        "drafted `Refactor login module` with 5 steps in `.tasks/draft/PLAN.md`",
    );
    let draft = ws.read(".tasks/draft/PLAN.md");
    assert!(draft.contains("\nstatus: draft\n"), "{draft}");
    assert!(
        draft.contains(&format!("\ncreated: {drafted_at}\n")),
        "{draft}"
    );
    assert!(
        draft.ends_with(PLAN.split_once("---\n# ").unwrap().1),
        "the body is kept"
    );

    let shown = ws.ok(&["show"]);
    assert_starts_with(
        &shown.stdout,
        "draft: Refactor login module (draft, 5 steps)\n",
    );
    assert_contains(&shown.stdout, "- [ ] S2.1 Write the shim\n");

    let draft_status = json(&ws.ok(&["status", "--json"]).stdout);
    assert_eq!(draft_status["task"], Value::Null);
    assert_eq!(draft_status["draft"]["title"], "Refactor login module");
    assert_eq!(draft_status["draft"]["steps"], 5);

    let approved_at = ws.next_time();
    let approved = ws.ok(&["approve"]);
    let task_id = task_id_at(&approved_at, "refactor-login-module");
    assert!(
        approved
            .stderr
            .contains(&format!("as `.tasks/{task_id}/` (5 steps)")),
        "{}",
        approved.stderr
    );
    assert_eq!(ws.task_ids(), [task_id.as_str()]);
    assert!(!ws.exists(".tasks/draft"), "approve consumes the draft");

    let plan = ws.read(&format!(".tasks/{task_id}/PLAN.md"));
    assert!(
        plan.starts_with(&format!(
            "---\nformat: 1\nid: {task_id}\ntitle: Refactor login module\n"
        )),
        "{plan}"
    );
    assert!(plan.contains("\nstatus: approved\n"), "{plan}");
    assert!(
        plan.contains(&format!("\napproved: {approved_at}\n")),
        "{plan}"
    );
    let todo = ws.todo(&task_id);
    assert!(
        todo.starts_with("# TODO: Refactor login module\n"),
        "{todo}"
    );
    let state = ws.read(&format!(".tasks/{task_id}/state.yaml"));
    assert!(
        state.contains(&format!("git_head: {}\n", ws.head())),
        "{state}"
    );

    let marked = ws.ok(&["mark", "S1", "done"]);
    assert!(marked.stdout.is_empty());
    assert_contains(
        &marked.stderr,
        "`S1` done (by hand: not verified); 1/3 done, executing",
    );
    ws.mark_started_and_blocked();
    let todo_after = ws.todo(&task_id);
    let expected = todo
        .replace("- [ ] S1 ", "- [x] S1 ")
        .replace("- [ ] S2.1 ", "- [-] S2.1 ")
        .replace("- [ ] S3 ", "- [!] S3 ")
        .replace(
            "  - depends: S2\n",
            "  - depends: S2\n  - blocked: the staging credentials are missing\n",
        );
    assert_eq!(
        todo_after, expected,
        "only the markers and the blocked line changed"
    );
    let plan_after = ws.read(&format!(".tasks/{task_id}/PLAN.md"));
    assert_eq!(
        plan_after,
        plan.replace("status: approved", "status: blocked")
    );

    let status = json(&ws.ok(&["status", "--json"]).stdout);
    assert_eq!(status["format"], 1);
    assert_eq!(status["draft"], Value::Null);
    let task = &status["task"];
    assert_eq!(task["id"], task_id);
    assert_eq!(task["phase"], "blocked");
    assert_eq!(task["progress"]["done"], 1);
    assert_eq!(task["progress"]["total"], 3);
    assert_eq!(task["progress"]["unverified"], 1);
    assert_eq!(task["steps"][0]["verified"], false);
    assert_eq!(task["steps"][1]["substeps"][0]["status"], "in_progress");
    assert_eq!(
        task["steps"][2]["blocked"],
        "the staging credentials are missing"
    );

    let human = ws.ok(&["status"]);
    filters(&ws).bind(|| insta::assert_snapshot!("lifecycle_status_blocked", both(&human)));

    // Unblock and finish: the phase follows the steps to completed.
    ws.ok(&["mark", "S2.1", "done"]);
    ws.ok(&["mark", "S2.2", "done"]);
    let all = ws.ok(&["mark", "S3", "done"]);
    assert_contains(&all.stderr, "3/3 done, completed");
    let todo_done = ws.todo(&task_id);
    assert!(
        !todo_done.contains("blocked:"),
        "the blocked line goes: {todo_done}"
    );
    assert!(
        todo_done.contains("- [x] S2 "),
        "a parent follows its sub-steps: {todo_done}"
    );
    assert!(
        ws.read(&format!(".tasks/{task_id}/PLAN.md"))
            .contains("\nstatus: completed\n")
    );

    let list = json(&ws.ok(&["list", "--json"]).stdout);
    assert_eq!(list["tasks"][0]["phase"], "completed");
    assert_eq!(list["tasks"][0]["done"], 3);
    let listed = ws.ok(&["list"]);
    assert_eq!(
        listed.stdout,
        format!("{task_id}  completed  3/3  Refactor login module\n")
    );
}

#[test]
fn plan_from_stdin_works_from_a_subdirectory_and_with_dash_c() {
    let ws = Workspace::new();
    ws.write("src/deep/keep.txt", "x");
    let run = ws
        .tick()
        .current_dir(ws.path("src/deep"))
        .args(["plan", "--from", "-"])
        .write_stdin(PLAN)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert!(
        ws.exists(".tasks/draft/PLAN.md"),
        "the store is at the repository root"
    );
    assert!(!ws.exists("src/deep/.tasks"));

    let elsewhere = tempfile::tempdir().unwrap();
    let approved_at = ws.next_time();
    let run = ws
        .tick()
        .current_dir(elsewhere.path())
        .args(["-C"])
        .arg(ws.root())
        .args(["approve"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let task_id = task_id_at(&approved_at, "refactor-login-module");
    assert_eq!(ws.task_ids(), [task_id.as_str()]);
}

#[test]
fn a_second_plan_never_replaces_the_draft_without_force() {
    let ws = Workspace::new();
    ws.ok(&["init"]);
    ws.write("first.md", PLAN);
    ws.ok(&["plan", "--from", "first.md"]);
    // A person's edit to the draft is what --force would throw away.
    let edited = ws
        .read(".tasks/draft/PLAN.md")
        .replace("Move the login", "Carefully move the login");
    ws.write(".tasks/draft/PLAN.md", &edited);

    let other = PLAN.replace("Refactor login module", "Something else");
    let refused = ws.run_stdin(&["plan", "--from", "-"], &other);
    assert_eq!(refused.code, 2, "{refused:#?}");
    assert!(
        refused.stderr.contains(
            "error: a draft `Refactor login module` is already waiting in `.tasks/draft/PLAN.md`"
        ),
        "{}",
        refused.stderr
    );
    assert_contains(&refused.stderr, "--force");
    assert_eq!(
        ws.read(".tasks/draft/PLAN.md"),
        edited,
        "the draft is byte-identical"
    );

    let forced = ws.run_stdin(&["plan", "--from", "-", "--force"], &other);
    assert_eq!(forced.code, 0, "{forced:#?}");
    let replaced = ws.read(".tasks/draft/PLAN.md");
    assert!(replaced.contains("title: Something else\n"), "{replaced}");
    assert!(!replaced.contains("Carefully"));

    let discarded = ws.ok(&["discard", "--yes"]);
    assert_contains(&discarded.stderr, "discarded the draft `Something else`");
    assert!(!ws.exists(".tasks/draft"));
    let again = ws.fails(&["discard", "--yes"], 2);
    assert_contains(&again.stderr, "error: there is no draft to discard");
    ws.fails(&["approve"], 2);
    assert!(ws.task_ids().is_empty());
}

#[test]
fn an_invalid_plan_writes_no_draft() {
    let ws = Workspace::new();
    for (plan, message) in [
        (
            "# Title only\n\nno steps here\n",
            "the plan has no `## Steps` section",
        ),
        ("# T\n\n## Steps\n\nnothing yet\n", "has no steps"),
        ("## Steps\n- [ ] S1 one\n", "the plan has no title"),
    ] {
        let run = ws.run_stdin(&["plan", "--from", "-"], plan);
        assert_eq!(run.code, 2, "{run:#?}");
        assert!(run.stderr.contains(message), "{message}: {}", run.stderr);
        assert_contains(&run.stderr, "no draft was written");
        assert!(!ws.exists(".tasks/draft/PLAN.md"));
    }
    let missing = ws.fails(&["plan", "--from", "nope.md"], 2);
    assert_contains(&missing.stderr, "nope.md");
}

#[test]
fn show_status_and_list_name_tasks_by_prefix_or_slug() {
    let ws = Workspace::new();
    let first = ws.approve(PLAN);
    let later = PLAN.replace("Refactor login module", "Migrate the session store");
    ws.approve_at(&later, "2026-11-30T15:00:00Z");
    let second = "20261130-150000-migrate-the-session-store";
    assert_eq!(ws.task_ids(), [first.as_str(), second]);

    // The current task is the newest one not completed.
    let status = json(&ws.ok(&["status", "--json"]).stdout);
    assert_eq!(status["task"]["id"], second);
    for query in [
        "20261130-1430",
        "login",
        first.as_str(),
        &format!(".tasks/{first}/"),
    ] {
        let status = json(&ws.ok(&["status", query, "--json"]).stdout);
        assert_eq!(status["task"]["id"], first.as_str(), "{query}");
    }
    let ambiguous = ws.fails(&["status", "20261130"], 2);
    assert_contains(&ambiguous.stderr, "matches 2 tasks");
    let unknown = ws.fails(&["status", "nothing-like-it"], 2);
    assert_contains(&unknown.stderr, "error: no task matches `nothing-like-it`");

    let shown = ws.ok(&["show", "login"]);
    assert_starts_with(
        &shown.stdout,
        "task:  Refactor login module (approved, 0/3 done)\n",
    );

    ws.ok(&["mark", "S1", "done", "--task", "login"]);
    let todo = ws.todo(&first);
    assert!(todo.contains("- [x] S1 "), "--task picks the task");
    assert!(!ws.todo(second).contains("- [x]"));

    let list = ws.ok(&["list"]);
    assert_eq!(
        list.stdout,
        format!(
            "{second}  approved   0/3  Migrate the session store\n{first:41}  executing  1/3  Refactor login module\n"
        )
    );
}

#[test]
fn empty_workspace_status_and_list_say_so() {
    let ws = Workspace::new();
    let status = ws.ok(&["status"]);
    assert!(status.stdout.is_empty());
    assert_contains(&status.stderr, "warning: no tasks yet");
    let list = ws.ok(&["list"]);
    assert!(list.stdout.is_empty());
    assert_contains(&list.stderr, "no draft and no tasks yet");
    let json = json(&ws.ok(&["list", "--json"]).stdout);
    assert_eq!(
        json,
        serde_json::json!({"format": 1, "draft": null, "draft_error": null, "tasks": []})
    );
    let mark = ws.fails(&["mark", "S1", "done"], 2);
    assert_contains(&mark.stderr, "error: there are no tasks yet");
    assert!(!ws.exists(".tasks"), "read-only commands create nothing");
}

#[test]
fn outside_a_repository_there_is_no_git_head() {
    let ws = Workspace::bare();
    let id = ws.approve(PLAN);
    let state = ws.read(&format!(".tasks/{id}/state.yaml"));
    assert!(!state.contains("git_head"), "{state}");
}

#[test]
fn mark_checks_its_arguments_before_touching_anything() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let before = ws.task_files(&id);
    let no_reason = ws.fails(&["mark", "S1", "blocked"], 2);
    assert_contains(&no_reason.stderr, "error: a blocked step needs a reason");
    let stray_reason = ws.fails(&["mark", "S1", "done", "--reason", "x"], 2);
    assert_contains(&stray_reason.stderr, "`--reason` goes with `blocked`");
    let unknown = ws.fails(&["mark", "S9", "done"], 2);
    assert_contains(&unknown.stderr, "there is no step `S9`");
    assert_contains(&unknown.stderr, "`S1`, `S2`, `S2.1`, `S2.2`, `S3`");
    let open_subs = ws.fails(&["mark", "S2", "done"], 2);
    assert_contains(&open_subs.stderr, "`S2` has open sub-steps: `S2.1`, `S2.2`");
    ws.fails(&["mark", "nonsense", "done"], 2);
    ws.fails(&["mark", "S1", "finished"], 2);
    assert_eq!(ws.task_files(&id), before);

    ws.ok(&["mark", "S1", "done"]);
    let after = ws.task_files(&id);
    let again = ws.ok(&["mark", "S1", "done"]);
    assert_contains(&again.stderr, "`S1` is already done");
    assert_eq!(ws.task_files(&id), after, "a no-op mark writes nothing");
}

/// Regression: `tick mark S2 pending` on a parent whose sub-steps were all done rewrote its
/// marker and said "`S2` pending", while the step stayed done (a parent is done when all its
/// sub-steps are). It is refused now, and nothing is written.
#[test]
fn marking_a_parent_with_all_sub_steps_done_open_is_refused() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S2.1", "done"]);
    ws.ok(&["mark", "S2.2", "done"]);
    let before = ws.task_files(&id);
    for args in [
        &["mark", "S2", "pending"][..],
        &["mark", "S2", "in-progress"],
        &["mark", "S2", "blocked", "--reason", "r"],
    ] {
        let run = ws.fails(args, 2);
        assert_starts_with(
            &run.stderr,
            "error: `S2` is done because all its sub-steps are",
        );
        assert_contains(&run.stderr, "nothing was changed");
        assert_eq!(ws.task_files(&id), before, "{args:?}");
    }
    // Reopening a sub-step reopens the parent.
    ws.ok(&["mark", "S2.2", "pending"]);
    let todo = ws.todo(&id);
    assert!(todo.contains("- [ ] S2 Add"), "{todo}");
    assert!(todo.contains("  - [x] S2.1 "), "{todo}");
}

/// PLAN.md is the contract: an edited step re-approved reaches TODO.md (by step id, markers and
/// runner lines kept) and so what `tick run` would do.
#[test]
fn a_reapproved_plan_edit_reaches_todo_and_the_next_run() {
    let ws = Workspace::new();
    let plan = "---\ntitle: Counter\n---\n# Counter\n\n## Summary\n\nCount.\n\n## Steps\n\n\
- [ ] S1 Write the counter\n  - files: count.py\n  - verify: `python3 -m pytest -q`\n\
- [ ] S2 Print the version\n  - files: count.py\n  - verify: `grep -q version count.py`\n\
- [ ] S3 Old step\n";
    let id = ws.approve(plan);
    ws.ok(&["mark", "S1", "done"]);
    let plan_path = format!(".tasks/{id}/PLAN.md");
    let todo_path = format!(".tasks/{id}/TODO.md");
    let before = ws.read(&todo_path);

    let edited = ws
        .read(&plan_path)
        .replace("`grep -q version count.py`", "`python3 count.py --version`")
        .replace(
            "- [ ] S3 Old step\n",
            "- [ ] S4 Document it\n  - files: README.md\n",
        );
    ws.write(&plan_path, &edited);
    let refused = ws.run(&["check"]);
    assert_eq!(
        refused.code, 12,
        "plan changed since approval: {refused:#?}"
    );

    let approved = ws.ok(&["approve", &id]);
    assert!(
        approved.stderr.contains("~ S2: verify")
            && approved.stderr.contains("- S3 removed")
            && approved.stderr.contains("+ S4 added"),
        "{}",
        approved.stderr
    );
    let todo = ws.read(&todo_path);
    let expected = before
        .replace("`grep -q version count.py`", "`python3 count.py --version`")
        .replace(
            "- [ ] S3 Old step\n",
            "- [ ] S4 Document it\n  - files: README.md\n",
        );
    assert_eq!(todo, expected);
    assert!(todo.contains("- [x] S1 Write the counter"), "{todo}");

    let dry = ws.ok(&["run", "--dry-run"]);
    assert_contains(&dry.stdout, "python3 count.py --version");
    assert!(!dry.stdout.contains("grep -q version"), "{}", dry.stdout);
    // Approved as it stands now: nothing more to do.
    let again = ws.ok(&["approve", &id]);
    assert_contains(&again.stderr, "approved as it stands");
}

/// An approval cut short after its task folder appeared (the draft still there) is finished by
/// the next command, never repeated into a second task; one cut short before is simply redone.
#[test]
fn a_half_done_approval_is_finished_not_repeated() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let draft = ws.read(".tasks/draft/PLAN.md");
    ws.ok(&["approve"]);
    let ids = ws.task_ids();
    assert_eq!(ids.len(), 1);
    // What a kill between the rename and the draft's removal leaves.
    ws.write(".tasks/draft/PLAN.md", &draft);
    ws.write(".tasks/draft/approving", &ids[0]);
    let status = ws.ok(&["status", "--json"]);
    assert_eq!(
        json(&status.stdout)["draft"],
        Value::Null,
        "{}",
        status.stdout
    );
    let again = ws.run(&["approve"]);
    assert_eq!(again.code, 2, "{again:#?}");
    assert_contains(&again.stderr, "no draft to approve");
    assert_eq!(ws.task_ids(), ids);
    assert!(!ws.exists(".tasks/draft"));

    // A note naming a task that never appeared (killed before the rename): the draft stays
    // and approves once.
    ws.write(
        ".tasks/draft/PLAN.md",
        draft.replace("Refactor login module", "Second"),
    );
    ws.write(".tasks/draft/approving", "20261130-143012-never-made");
    ws.ok(&["approve"]);
    assert_eq!(ws.task_ids().len(), 2);
    assert!(!ws.exists(".tasks/draft"));
}
