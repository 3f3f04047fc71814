//! `tick verify`: done and stale steps verified again with no model configured at all.

use std::process::Output;

use crate::common::workspace::Workspace;

const PLAN: &str = "# Greeting

## Summary
A file that says hello.

## Steps
- [ ] S1 Write the greeting
  - files: a.txt
  - verify: `grep -q hello a.txt`
- [ ] S2 Nothing to check
";

/// Runs tick with no model anywhere: no provider, no URL, no model, no key.
fn tick(project: &Workspace, args: &[&str]) -> Output {
    let mut cmd = project.command("http://127.0.0.1:9/v1", args);
    cmd.env_remove("TICK_MODEL")
        .env_remove("TICK_BASE_URL")
        .env_remove("TICK_PROVIDER");
    cmd.output().unwrap()
}

/// The folder of the project's one task.
fn task_dir(project: &Workspace) -> std::path::PathBuf {
    std::fs::read_dir(project.path(".tasks"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("2026"))
        })
        .unwrap()
}

fn todo(project: &Workspace) -> String {
    std::fs::read_to_string(task_dir(project).join("TODO.md")).unwrap()
}

/// The greeting plan approved with `a.txt` saying hello, and S1 marked done by hand.
fn approved_with_s1_marked_done() -> Workspace {
    let project = Workspace::sample();
    project.write("a.txt", "hello\n");
    project.write("plan.md", PLAN);
    assert!(
        tick(&project, &["plan", "--from", "plan.md"])
            .status
            .success()
    );
    assert!(tick(&project, &["approve"]).status.success());
    assert!(tick(&project, &["mark", "S1", "done"]).status.success());
    project
}

#[test]
fn verify_ticks_what_passes_and_reopens_what_fails_without_a_model() {
    let project = approved_with_s1_marked_done();
    assert!(tick(&project, &["mark", "S2", "done"]).status.success());

    let out = tick(&project, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("✓ S1 `grep -q hello a.txt` exit 0"), "{err}");
    assert!(err.contains("S1 verified: done"), "{err}");
    assert!(err.contains("S2 has no verification to run"), "{err}");
    let status = tick(&project, &["status"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(shown.contains("[x] S1"), "{shown}");

    // The file changes outside tick: verify marks it stale, runs the check, and the box
    // opens again because the check fails.
    project.write("a.txt", "goodbye\n");
    let out = tick(&project, &["verify", "S1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("✗ S1"), "{err}");
    assert!(
        err.contains("S1 was stale and its verification fails"),
        "{err}"
    );
    assert!(
        todo(&project).contains("- [ ] S1 Write the greeting"),
        "{}",
        todo(&project)
    );
    assert!(todo(&project).contains("- [x] S2 Nothing to check"));

    let out = tick(&project, &["verify", "S9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no step `S9`"));
}

#[test]
fn a_stale_step_whose_files_are_back_is_done_again() {
    let project = approved_with_s1_marked_done();
    // Verified by tick: now it has fingerprints.
    assert!(tick(&project, &["verify", "S1"]).status.success());

    project.write("a.txt", "changed\n");
    let status = tick(&project, &["status"]);
    assert!(String::from_utf8_lossy(&status.stdout).contains("[~] S1"));
    assert!(todo(&project).contains("- [~] S1 Write the greeting"));

    // Put back as it was when S1 was ticked: what S1 relied on holds again.
    project.write("a.txt", "hello\n");
    let status = tick(&project, &["status"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(shown.contains("[x] S1"), "{shown}");
    let todo = todo(&project);
    assert!(todo.contains("- [x] S1 Write the greeting"), "{todo}");
    assert!(!todo.contains("stale:"), "{todo}");
    assert_eq!(tick(&project, &["check"]).status.code(), Some(0));
}

/// Regression (issue 31): each step was said twice (the event and a closing line), `--json`
/// ended without its `result` line, and `tick verify S1` on the step verify itself had just
/// opened again said "no done or stale step to verify".
#[test]
fn verify_says_each_step_once_and_json_ends_with_its_result() {
    let project = approved_with_s1_marked_done();
    project.write("a.txt", "goodbye\n");
    let out = tick(&project, &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "result", "{stdout}");
    assert_eq!(last["exit_code"], 4, "{stdout}");

    assert!(tick(&project, &["mark", "S1", "done"]).status.success());
    project.write("a.txt", "hello again\n");
    project.write("a.txt", "bye\n");
    let out = tick(&project, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let said = err
        .lines()
        .filter(|l| l.starts_with("S1 ") || l.contains(" S1 "))
        .map(|l| l.split(" in ").next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(said, @r"
    ✗ S1 `grep -q hello a.txt` exit 1
    S1 was stale and its verification fails: it will be redone
    ");
    let again = tick(&project, &["verify", "S1"]);
    insta::assert_snapshot!(String::from_utf8_lossy(&again.stderr), @"S1 is `[ ]` pending: only a done or stale step is verified; `tick run` works on an open one");
}

/// A parent with a `verify` of its own, both sub-steps ticked by hand.
const PARENT_PLAN: &str = "# Parent

## Steps
- [ ] S1 Build the pair
  - verify: `test -f pair.txt`
  - [ ] S1.1 One
    - files: one.txt
    - verify: `test -f one.txt`
  - [ ] S1.2 Two
    - files: two.txt
    - verify: `test -f two.txt`
";

/// `tick check` finds nothing to say.
fn check_is_clear(project: &Workspace) {
    let check = tick(project, &["check"]);
    let out = String::from_utf8_lossy(&check.stdout);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

fn approved(plan: &str) -> Workspace {
    let project = Workspace::sample();
    project.write("plan.md", plan);
    for args in [&["plan", "--from", "plan.md"][..], &["approve"]] {
        let out = tick(&project, args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    project
}

/// Sub-steps being done do not show that a parent's own check passes: the parent is not
/// `[x]` (in TODO.md, in `tick status`, in `tick check`) until that check passes, and a
/// failing check leaves it open with `tick verify` ending blocked.
#[test]
fn a_parent_with_its_own_verify_is_done_only_when_it_passes() {
    let project = approved(PARENT_PLAN);
    project.write("one.txt", "1\n");
    project.write("two.txt", "2\n");
    assert!(tick(&project, &["mark", "S1.1", "done"]).status.success());
    // And the other by hand, in the file.
    let text = todo(&project);
    let dir = task_dir(&project);
    std::fs::write(
        dir.join("TODO.md"),
        text.replace("- [ ] S1.2", "- [x] S1.2"),
    )
    .unwrap();
    assert!(
        todo(&project).contains("- [ ] S1 Build the pair"),
        "{}",
        todo(&project)
    );

    let status = tick(&project, &["status"]);
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(out.contains("[ ] S1 Build the pair"), "{out}");
    assert!(!out.contains("completed"), "{out}");
    let check = tick(&project, &["check", "--json"]);
    assert!(!String::from_utf8_lossy(&check.stdout).contains("\"completed\""));

    let out = tick(&project, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("S1's sub-steps are done, but its own verification fails: not ticked"),
        "{err}"
    );
    let text = todo(&project);
    assert!(text.contains("- [ ] S1 Build the pair"), "{text}");
    assert!(
        text.contains("- [x] S1.1 One") && text.contains("- [x] S1.2 Two"),
        "{text}"
    );

    project.write("pair.txt", "1 2\n");
    let out = tick(&project, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("S1 verified: done"), "{err}");
    assert!(todo(&project).contains("- [x] S1 Build the pair"));
    let status = tick(&project, &["status"]);
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(out.contains("phase:  completed, 1/1 done\n"), "{out}");
    check_is_clear(&project);
}

/// A parent with no `verify` of its own is checked by its sub-steps: once each is verified,
/// it is verified too, and `tick check` is clear (it said "done without verification").
#[test]
fn a_parent_checked_by_its_sub_steps_is_verified_when_they_are() {
    let project = approved(
        "# Parent\n\n## Steps\n- [ ] S1 Parent\n  - [ ] S1.1 Child\n    - files: c.txt\n    - verify: `test -f c.txt`\n",
    );
    project.write("c.txt", "c\n");
    assert!(tick(&project, &["mark", "S1.1", "done"]).status.success());
    let check = tick(&project, &["check"]);
    assert_eq!(
        check.status.code(),
        Some(11),
        "unverified until the sub-step is verified"
    );
    let out = tick(&project, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("S1 has no verification"), "{err}");
    check_is_clear(&project);
    let status = tick(&project, &["status"]);
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(!out.contains("not verified"), "{out}");
    let log = tick(&project, &["log"]);
    let out = String::from_utf8_lossy(&log.stdout);
    assert!(!out.contains("done without verification"), "{out}");
}

/// Deleting state.yaml (or emptying it) took away the only record of what was approved, and
/// with it the check that PLAN.md is still that plan: an edited verify then ran unapproved.
/// Without an approval record the task waits for `tick approve`, like an edited plan.
#[test]
fn a_task_whose_state_yaml_is_gone_waits_for_approval() {
    let project = approved(PLAN);
    let dir = task_dir(&project);
    for emptied in [false, true] {
        if emptied {
            std::fs::write(dir.join("state.yaml"), "format: 1\n").unwrap();
        } else {
            std::fs::remove_file(dir.join("state.yaml")).unwrap();
        }
        let plan = std::fs::read_to_string(dir.join("PLAN.md")).unwrap();
        std::fs::write(
            dir.join("PLAN.md"),
            plan.replace("`grep -q hello a.txt`", "`true`"),
        )
        .unwrap();

        let check = tick(&project, &["check"]);
        let out = String::from_utf8_lossy(&check.stdout);
        assert_eq!(check.status.code(), Some(12), "{out}");
        assert!(
            out.contains("state.yaml` holds no approval of `PLAN.md`"),
            "{out}"
        );
        let run = tick(&project, &["run"]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{err}");
        assert!(err.contains("holds no approval of"), "{err}");
        let status = tick(&project, &["status", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(report["task"]["approval_missing"], true, "{report}");
        assert_eq!(report["task"]["plan_changed_since_approval"], true);
        // No revision of an approved plan waits: there is no approved plan.
        assert_eq!(report["task"]["revision_waiting"], serde_json::Value::Null);
        assert_eq!(report["next"]["command"], "tick show", "{report}");
        let next = tick(&project, &["next"]);
        let err = String::from_utf8_lossy(&next.stderr);
        assert!(err.contains("has no approval in its state.yaml"), "{err}");

        let approve = tick(
            &project,
            &["approve", &dir.file_name().unwrap().to_string_lossy()],
        );
        let err = String::from_utf8_lossy(&approve.stderr);
        assert_eq!(approve.status.code(), Some(0), "{err}");
        assert!(!err.contains("nothing to do"), "{err}");
        check_is_clear(&project);
    }
}

/// A parent a person blocked stays blocked, whatever its own check says: `tick verify` does
/// not take it up (its reason is theirs to lift).
#[test]
fn a_blocked_parent_is_left_blocked_by_verify() {
    let project = approved(PARENT_PLAN);
    project.write("one.txt", "1\n");
    project.write("two.txt", "2\n");
    for step in ["S1.1", "S1.2"] {
        assert!(tick(&project, &["mark", step, "done"]).status.success());
    }
    let blocked = tick(
        &project,
        &["mark", "S1", "blocked", "--reason", "legal review"],
    );
    assert!(
        blocked.status.success(),
        "{}",
        String::from_utf8_lossy(&blocked.stderr)
    );
    for pair in [false, true] {
        if pair {
            project.write("pair.txt", "1 2\n");
        }
        tick(&project, &["verify"]);
        let text = todo(&project);
        assert!(text.contains("- [!] S1 Build the pair"), "{text}");
        assert!(text.contains("blocked: legal review"), "{text}");
    }
}
