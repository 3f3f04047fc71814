//! A person edits TODO.md by hand between commands; tick reads what they wrote and, when it
//! writes, changes only the bytes it owns.

use serde_json::Value;

use crate::common::text::assert_contains;
use crate::common::workspace::{PLAN, Workspace, filters};
use crate::suite::snapshots::both;

fn todo_path(id: &str) -> String {
    format!(".tasks/{id}/TODO.md")
}

fn status_json(ws: &Workspace) -> Value {
    serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap()
}

fn ids_and_statuses(status: &Value) -> Vec<(String, String)> {
    status["task"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap_or("(new)").to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const SIMPLE: &str = "---\ntitle: Simple\n---\n# Simple\n\n## Steps\n\n- [ ] S1 First\n  - verify: `true`\n- [ ] S2 Second\n- [ ] S3 Third\n";

#[test]
fn reordered_steps_keep_their_ids_and_the_new_order() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let todo = ws.read(&todo_path(&id));
    let s1 = "- [ ] S1 First\n  - verify: `true`\n";
    let reordered = todo
        .replace(s1, "")
        .replace("- [ ] S3 Third\n", &format!("- [ ] S3 Third\n{s1}"));
    let reordered = reordered.replace(
        "- [ ] S2 Second\n- [ ] S3 Third\n",
        "- [ ] S3 Third\n- [ ] S2 Second\n",
    );
    ws.write(&todo_path(&id), &reordered);

    assert_eq!(
        ids_and_statuses(&status_json(&ws)),
        [
            ("S3".into(), "pending".into()),
            ("S2".into(), "pending".into()),
            ("S1".into(), "pending".into())
        ]
    );
    ws.ok(&["mark", "S2", "done"]);
    assert_eq!(
        ws.read(&todo_path(&id)),
        reordered.replace("- [ ] S2 ", "- [x] S2 ")
    );
    let human = ws.ok(&["status"]).stdout;
    let order: Vec<&str> = human.lines().filter(|l| l.starts_with("  [")).collect();
    assert_eq!(
        order,
        [
            "  [ ] S3 Third",
            "  [x] S2 Second  (not verified)",
            "  [ ] S1 First"
        ]
    );
}

#[test]
fn a_step_added_without_an_id_gets_the_next_free_id_and_nothing_else_changes() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let todo = ws.read(&todo_path(&id));
    // A new step between S1 and S2, a new sub-step of S2, and one at the end, written the way
    // a person would: odd spacing, a note, no ids.
    let edited = todo
        .replace(
            "- [ ] S2 Add",
            "- [ ]   Check the *old* endpoint by hand\n  - a note, not a detail\n- [ ] S2 Add",
        )
        .replace(
            "  - [ ] S2.2 Route the old endpoint through it\n",
            "  - [ ] S2.2 Route the old endpoint through it\n  - [ ] Remove the shim's debug logging\n",
        )
        + "\n- [ ] Tell the team\n";
    ws.write(&todo_path(&id), &edited);

    let status = status_json(&ws);
    assert_eq!(status["task"]["steps"][1]["id"], Value::Null);
    assert_eq!(
        status["task"]["steps"][1]["title"],
        "Check the *old* endpoint by hand"
    );
    assert_eq!(status["task"]["progress"]["total"], 5);
    let warned = ws.ok(&["status"]);
    assert_contains(&warned.stdout, "  [ ] (new) Tell the team\n");
    assert_contains(
        &warned.stderr,
        "warning: 3 new steps without an id; tick assigns ids at its next write",
    );
    assert_eq!(ws.read(&todo_path(&id)), edited, "status only reads");

    ws.ok(&["mark", "S1", "in-progress"]);
    let expected = edited
        .replace("- [ ] S1 ", "- [-] S1 ")
        .replace("- [ ]   Check", "- [ ]   S4 Check")
        .replace("- [ ] Remove", "- [ ] S2.3 Remove")
        .replace("- [ ] Tell", "- [ ] S5 Tell");
    assert_eq!(
        ws.read(&todo_path(&id)),
        expected,
        "only the id tokens and the marker were added"
    );

    // The new ids are real: they can be marked, and they are never renumbered.
    ws.ok(&["mark", "S5", "done"]);
    ws.ok(&["mark", "S2.3", "blocked", "--reason", "ask the team"]);
    let status = status_json(&ws);
    assert_eq!(
        ids_and_statuses(&status),
        [
            ("S1".into(), "in_progress".into()),
            ("S4".into(), "pending".into()),
            ("S2".into(), "pending".into()),
            ("S3".into(), "pending".into()),
            ("S5".into(), "done".into()),
        ]
    );
    assert_eq!(
        status["task"]["steps"][2]["substeps"][2]["blocked"],
        "ask the team"
    );
}

#[test]
fn a_box_ticked_by_hand_is_done_and_not_verified() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let ticked = ws.read(&todo_path(&id)).replace("- [ ] S1 ", "- [X] S1 ");
    ws.write(&todo_path(&id), &ticked);

    let status = status_json(&ws);
    let s1 = &status["task"]["steps"][0];
    assert_eq!(s1["status"], "done");
    assert_eq!(s1["verified"], false);
    assert_eq!(
        status["task"]["steps"][1]["verified"],
        Value::Null,
        "only done steps say"
    );
    assert_eq!(status["task"]["progress"]["unverified"], 1);
    assert_eq!(status["task"]["phase"], "executing");
    let human = ws.ok(&["status"]);
    filters(&ws).bind(|| insta::assert_snapshot!("todo_edits_status_ticked_by_hand", both(&human)));

    // Marking it done again keeps the person's `X`.
    let again = ws.ok(&["mark", "S1", "done"]);
    assert_contains(&again.stderr, "`S1` is already done");
    assert_eq!(ws.read(&todo_path(&id)), ticked);
    // Unticking by hand is as good as `mark pending`.
    ws.write(&todo_path(&id), ticked.replace("[X]", "[ ]"));
    assert_eq!(status_json(&ws)["task"]["progress"]["done"], 0);
}

#[test]
fn a_crlf_file_stays_crlf() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let crlf = ws.read(&todo_path(&id)).replace('\n', "\r\n");
    ws.write(&todo_path(&id), &crlf);

    ws.ok(&["mark", "S2", "blocked", "--reason", "waiting for review"]);
    let want = crlf.replace(
        "- [ ] S2 Second\r\n",
        "- [!] S2 Second\r\n  - blocked: waiting for review\r\n",
    );
    assert_eq!(ws.bytes(&todo_path(&id)), want.as_bytes());

    ws.ok(&["mark", "S2", "done"]);
    let want = crlf.replace("- [ ] S2 ", "- [x] S2 ");
    assert_eq!(
        ws.bytes(&todo_path(&id)),
        want.as_bytes(),
        "the blocked line went with its CRLF"
    );

    ws.write(&todo_path(&id), format!("{crlf}- [ ] Added by hand\r\n"));
    ws.ok(&["mark", "S3", "in-progress"]);
    let want = format!(
        "{}- [ ] S4 Added by hand\r\n",
        crlf.replace("- [ ] S3 ", "- [-] S3 ")
    );
    assert_eq!(ws.bytes(&todo_path(&id)), want.as_bytes());
    assert!(
        !String::from_utf8(ws.bytes(&todo_path(&id)))
            .unwrap()
            .replace("\r\n", "")
            .contains('\n')
    );
}

#[test]
fn a_bom_tabs_and_trailing_spaces_are_kept() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let hand = "\u{feff}# TODO: Simple   \n\nNotes\twith a tab.  \n\n- [ ] S1 First  \n\t- verify: `true`\t\n- [ ] S2 Second\t\n- [ ] S3 Third\n\n<!-- - [?] not a step -->\n```\n- [?] not a step either\n```\n> - [?] nor this\n";
    ws.write(&todo_path(&id), hand);
    let status = status_json(&ws);
    assert_eq!(status["task"]["steps"][0]["verify"][0], "true");
    assert_eq!(status["task"]["steps"].as_array().unwrap().len(), 3);

    ws.ok(&[
        "mark",
        "S1",
        "blocked",
        "--reason",
        "tabs\tand\nnewlines in a reason",
    ]);
    let want = hand.replace(
        "- [ ] S1 First  \n\t- verify: `true`\t\n",
        "- [!] S1 First  \n\t- verify: `true`\t\n\t- blocked: tabs and newlines in a reason\n",
    );
    assert_eq!(ws.bytes(&todo_path(&id)), want.as_bytes());
    ws.ok(&["mark", "S1", "pending"]);
    assert_eq!(
        ws.bytes(&todo_path(&id)),
        hand.as_bytes(),
        "back to the person's bytes"
    );
    ws.ok(&["mark", "S3", "done"]);
    assert_eq!(
        ws.bytes(&todo_path(&id)),
        hand.replace("- [ ] S3", "- [x] S3").as_bytes()
    );
}

#[test]
fn a_file_without_a_final_newline_still_has_none() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let todo = ws.read(&todo_path(&id));
    let bare = todo.trim_end_matches('\n').to_owned();
    ws.write(&todo_path(&id), &bare);
    ws.ok(&["mark", "S3", "blocked", "--reason", "r"]);
    let blocked = bare.replace("- [ ] S3 Third", "- [!] S3 Third\n  - blocked: r");
    assert_eq!(ws.read(&todo_path(&id)), blocked);
    ws.ok(&["mark", "S3", "pending"]);
    assert_eq!(ws.read(&todo_path(&id)), bare);
}

/// A plan of thousands of steps: TODO.md is read in two halves at once and the status is
/// written a piece at a time; neither may lose, repeat or reorder a step, or the blank line
/// before the draft.
#[test]
fn a_big_plan_shows_every_step_in_order_and_then_the_draft() {
    let ws = Workspace::new();
    let steps = 3_000;
    let mut plan = String::from("---\ntitle: Big\n---\n# Big\n\n## Steps\n\n");
    for i in 1..=steps {
        plan.push_str(&format!(
            "- [ ] S{i} Change part {i} of the module, keeping its callers working\n  - files: src/part{i}.rs, tests/part{i}.rs\n  - verify: `cargo test part{i}`\n"
        ));
    }
    let id = ws.approve(&plan);
    assert!(
        ws.read(&todo_path(&id)).len() > 256 * 1024,
        "big enough to be read in halves"
    );
    ws.write("draft.md", SIMPLE);
    ws.ok(&["plan", "--from", "draft.md"]);

    let out = ws.ok(&["status"]).stdout;
    let step_lines: Vec<&str> = out.lines().filter(|l| l.starts_with("  [ ] S")).collect();
    let want: Vec<String> = (1..=steps)
        .map(|i| format!("  [ ] S{i} Change part {i} of the module, keeping its callers working"))
        .collect();
    assert_eq!(step_lines, want);
    let tail: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains(&format!("S{steps} ")))
        .collect();
    assert_eq!(tail[1], "", "one blank line before the draft: {tail:?}");
    assert!(tail[2].starts_with("draft:  Simple"), "{tail:?}");

    let json = status_json(&ws);
    assert_eq!(json["task"]["steps"].as_array().unwrap().len(), steps);
    assert_eq!(json["task"]["steps"][2999]["files"][1], "tests/part3000.rs");
}

/// A step a person added to TODO.md (tick gave it `S4`) and a new step a person then wrote
/// into PLAN.md as `S4` are two steps: approving refuses to replace theirs, names both and
/// changes nothing. A PLAN.md step with no id is refused too: it would be approved and never
/// reach TODO.md.
#[test]
fn approving_an_edited_plan_never_replaces_a_step_a_person_added() {
    let ws = Workspace::new();
    let id = ws.approve(SIMPLE);
    let todo = ws.read(&todo_path(&id));
    ws.write(
        &todo_path(&id),
        format!("{todo}- [ ] My step\n  - verify: `true`\n"),
    );
    ws.ok(&["mark", "S1", "done"]);
    assert_contains(&ws.read(&todo_path(&id)), "- [ ] S4 My step");
    let plan_path = format!(".tasks/{id}/PLAN.md");
    let plan = ws.read(&plan_path);
    ws.write(
        &plan_path,
        format!("{plan}- [ ] S4 Deploy\n  - verify: `false`\n"),
    );
    let (todo_before, plan_before) = (ws.read(&todo_path(&id)), ws.read(&plan_path));

    let run = ws.run(&["approve", &id]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_contains(
        &run.stderr,
        "`S4` in TODO.md is a step a person added (\"My step\"), and the edited PLAN.md has another `S4` (\"Deploy\")",
    );
    assert_contains(&run.stderr, "give PLAN.md's new step a free id");
    assert_eq!(ws.read(&todo_path(&id)), todo_before);
    assert_eq!(ws.read(&plan_path), plan_before);

    ws.write(
        &plan_path,
        format!("{plan}- [ ] Deploy\n  - verify: `false`\n"),
    );
    let run = ws.run(&["approve", &id]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_contains(&run.stderr, "the step \"Deploy\" has no id");
    assert_contains(&run.stderr, "give it a free id (`- [ ] S5 ...`)");

    ws.write(
        &plan_path,
        format!(
            "{plan}- [ ] S4 My step\n  - verify: `true`\n- [ ] S5 Deploy\n  - verify: `false`\n"
        ),
    );
    ws.ok(&["approve", &id]);
    let todo = ws.read(&todo_path(&id));
    assert_contains(&todo, "- [ ] S4 My step");
    assert_contains(&todo, "- [ ] S5 Deploy");
}

/// `tick show` of a CRLF plan prints its lines, without a carriage return at the end of each
/// (a `^M` in a pager).
#[test]
fn show_prints_a_crlf_plan_as_lines() {
    let ws = Workspace::new();
    ws.write(
        "crlf.md",
        "# Crlf\r\n\r\n## Steps\r\n- [ ] S1 One\r\n  - verify: `true`\r\n",
    );
    ws.ok(&["plan", "--from", "crlf.md"]);
    let shown = ws.ok(&["show"]).stdout;
    assert_contains(&shown, "- [ ] S1 One\n  - verify: `true`\n");
    assert!(!shown.contains('\r'), "{shown:?}");
    ws.ok(&["approve"]);
    let shown = ws.ok(&["show"]).stdout;
    assert_contains(&shown, "## Steps\n");
    assert!(!shown.contains('\r'), "{shown:?}");
}
