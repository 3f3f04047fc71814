//! What a demanding user expects of a command line: completions, a man page, one way to name a
//! task, and `cancel`, `next`, `edit`, `diff`; `status` and `list` survive a broken draft.

use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::{PLAN, Run, Workspace, git};

#[test]
fn help_has_examples() {
    let ws = Workspace::new();
    for command in ["plan", "run", "status", "mark"] {
        let run = ws.ok(&[command, "--help"]);
        assert!(
            run.stdout.contains("Examples:\n  tick "),
            "{command}: {}",
            run.stdout
        );
    }
}

#[test]
fn cancel_keeps_the_files_and_logs_the_change() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let todo = ws.todo(&id);
    let run = ws.ok(&["cancel"]);
    assert_contains(&run.stderr, &format!("cancelled `{id}` (was approved)"));
    let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
    assert_contains(&plan, "status: cancelled\n");
    assert_eq!(ws.todo(&id), todo, "files kept");
    let journal = ws.read(&format!(".tasks/{id}/runs/journal.jsonl"));
    assert_contains(&journal, "\"to\":\"cancelled\"");
    assert_contains(&journal, "a person cancelled the task");
    let again = ws.fails(&["cancel", &id], 2);
    assert_contains(&again.stderr, "cannot be cancelled: the task was cancelled");
    ws.fails(&["next", &id], 2);
}

#[test]
fn next_names_the_step_and_the_command() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let run = ws.ok(&["next"]);
    assert_starts_with(
        &run.stdout,
        "S1 Find the real login entry point and its callers\n",
    );
    assert_contains(&run.stdout, "  verify: `npm test -- login`");
    // The current task needs no id in the hint.
    assert_contains(&run.stderr, "`tick run --step S1`");
    ws.ok(&["mark", "S1", "done"]);
    let run = ws.ok(&["next", &id]);
    assert_starts_with(&run.stdout, "S2.1 Write the shim");
    ws.ok(&["mark", "S2.1", "blocked", "--reason", "no shim library"]);
    let run = ws.ok(&["next"]);
    assert_contains(&run.stdout, "S2.1 is blocked: no shim library");
}

#[test]
fn mark_takes_the_task_as_every_command_does() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done", &id]);
    ws.ok(&["mark", "S3", "in-progress", "-t", &id]);
    ws.ok(&["mark", "S2.1", "done", "--task", "login"]);
    let todo = ws.todo(&id);
    assert_contains(&todo, "- [x] S1");
    assert_contains(&todo, "- [-] S3");
    assert_contains(&todo, "- [x] S2.1");
    ws.fails(&["mark", "S1", "done", &id, "-t", &id], 2);
}

/// An editor's change that keeps PLAN.md valid.
const GOOD_EDIT: &str = "sed -i 's/Move the login code/Move all login code/' \"$1\"";

fn with_editor(ws: &Workspace, args: &[&str], editor: &str, keys: Option<&str>) -> Run {
    ws.run_with(args, |cmd| {
        cmd.env("EDITOR", editor);
        if let Some(keys) = keys {
            cmd.env("TICK_INTERACTIVE", "1").write_stdin(keys);
        }
    })
}

#[test]
fn edit_validates_and_keeps_a_bad_edit_unless_told() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let todo_path = format!(".tasks/{id}/TODO.md");
    let before = ws.read(&todo_path);
    let bad = ws.script("bad.sh", "sed -i 's/- \\[ \\] S3/- [?] S3/' \"$1\"");

    // Not at a terminal: the error, and the edit stays as the person left it.
    let run = with_editor(&ws, &["edit", "--todo"], &bad, None);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_contains(&run.stderr, &format!("`{todo_path}:"));
    assert_contains(&run.stderr, "unknown step marker");
    assert_contains(&run.stderr, "your edit is kept");
    assert!(ws.read(&todo_path).contains("- [?] S3"));

    // At a terminal: undo puts the previous content back.
    ws.write(&todo_path, &before);
    let run = with_editor(&ws, &["edit", &id, "--todo"], &bad, Some("u\n"));
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr.matches("unknown step marker").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(ws.read(&todo_path), before);

    // A good edit of PLAN.md is checked and points at re-approval.
    let good = ws.script("good.sh", GOOD_EDIT);
    let run = with_editor(&ws, &["edit"], &good, None);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_contains(&run.stderr, "is valid");
    // The task is the current one: the hint names no id.
    assert_contains(
        &run.stderr,
        "hint: the plan changed since approval: `tick approve` before `tick run`",
    );
}

#[test]
fn edit_opens_the_draft_first() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let good = ws.script("good.sh", GOOD_EDIT);
    let run = with_editor(&ws, &["edit"], &good, None);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        ws.read(".tasks/draft/PLAN.md")
            .contains("Move all login code")
    );
    let run = with_editor(&ws, &["edit", "--todo"], &good, None);
    assert_eq!(run.code, 2);
    assert_contains(&run.stderr, "the draft has no TODO.md yet");
}

/// A task whose S1 changed `src/login.ts` (recorded as the runner records it).
fn task_with_changes(ws: &Workspace) -> String {
    ws.write("src/login.ts", "export function login() {}\n");
    git(ws.root(), &["add", "src/login.ts"]);
    git(ws.root(), &["commit", "-q", "-m", "login"]);
    let id = ws.approve(PLAN);
    ws.write(
        "src/login.ts",
        "export function login(user) { return user; }\n",
    );
    let state = format!(".tasks/{id}/state.yaml");
    ws.write(
        &state,
        ws.read(&state)
            + "steps:\n  S1:\n    status: done\n    files_changed:\n    - src/login.ts\n",
    );
    id
}

#[test]
fn diff_shows_the_files_a_step_changed() {
    let ws = Workspace::new();
    let id = task_with_changes(&ws);
    let run = ws.ok(&["diff", "S1"]);
    assert_contains(&run.stdout, "+export function login(user) { return user; }");
    assert_contains(&run.stderr, "S1 changed `src/login.ts`");
    // Committed by hand, without trailers: still S1's change, since the approval.
    git(ws.root(), &["commit", "-q", "-am", "wip"]);
    let run = ws.ok(&["diff", "S1"]);
    assert_contains(&run.stdout, "+export function login(user) { return user; }");
    assert_contains(&run.stderr, "against the commit it was approved on");
    let none = ws.ok(&["diff", "S3", &id]);
    assert_contains(&none.stderr, "has no recorded changes");
    let missing = ws.fails(&["diff", "S9"], 2);
    assert_contains(&missing.stderr, "has no step `S9`");
}

/// Commits `paths` (a `git add` pathspec) as tick commits a verified step: `subject`, then the
/// task's and the step's trailers.
fn commit_step(ws: &Workspace, paths: &str, subject: &str, id: &str, step: &str) {
    git(ws.root(), &["add", paths]);
    let message = format!("{subject}\n\nTask: {id}\nStep: {step}\n");
    git(ws.root(), &["commit", "-q", "-m", &message]);
}

#[test]
fn diff_shows_the_commit_of_a_committed_step() {
    let ws = Workspace::new();
    let id = task_with_changes(&ws);
    commit_step(&ws, "src/login.ts", "Find the login", &id, "S1");
    // A later step whose id starts the same is not S1's commit.
    ws.write("src/other.ts", "export const other = 1;\n");
    commit_step(&ws, "src/other.ts", "Other", &id, "S11");
    ws.write("src/login.ts", "export function login() { /* later */ }\n");
    let run = ws.ok(&["diff", "S1", &id]);
    assert!(!run.stdout.contains("other"), "{}", run.stdout);
    assert_contains(&run.stdout, &format!("Task: {id}"));
    assert_contains(&run.stdout, "+export function login(user) { return user; }");
    assert!(
        !run.stdout.contains("later"),
        "the commit, not the working tree: {}",
        run.stdout
    );
    assert_contains(&run.stderr, "S1 as committed in");
}

/// Issue 31: `tick diff S1` of a committed step shows the code, not tick's bookkeeping in the
/// same commit (TODO.md, state.yaml); `--all` shows both.
#[test]
fn diff_of_a_committed_step_leaves_bookkeeping_out_unless_all() {
    let ws = Workspace::new();
    let id = task_with_changes(&ws);
    commit_step(&ws, "-A", "Find the login", &id, "S1");
    let run = ws.ok(&["diff", "S1"]);
    assert_contains(&run.stdout, "+export function login(user) { return user; }");
    assert!(!run.stdout.contains("state.yaml"), "{}", run.stdout);
    let all = ws.ok(&["diff", "S1", "--all"]);
    assert_contains(&all.stdout, &format!(".tasks/{id}/state.yaml"));
    assert_contains(&all.stdout, "+export function login(user) { return user; }");
}

/// Issue 31: a new file a step made is shown whole, and a step ticked by hand shows the
/// changes to its declared files (it has no recorded ones).
#[test]
fn diff_shows_new_files_whole_and_hand_done_steps_by_their_files() {
    let ws = Workspace::new();
    ws.write("src/login.ts", "export function login() {}\n");
    git(ws.root(), &["add", "-A"]);
    git(ws.root(), &["commit", "-q", "-m", "login"]);
    let id = ws.approve(PLAN);
    ws.write("src/compat/old.ts", "export const old = true;\n");
    let state = format!(".tasks/{id}/state.yaml");
    ws.write(
        &state,
        ws.read(&state)
            + "steps:\n  S2:\n    status: done\n    files_changed:\n    - src/compat/old.ts\n",
    );
    let run = ws.ok(&["diff", "S2"]);
    assert_contains(&run.stdout, "+++ b/src/compat/old.ts");
    assert_contains(&run.stdout, "+export const old = true;");
    assert_contains(&run.stderr, "`src/compat/old.ts` is new and not in git yet");

    ws.write("src/login.ts", "export function login(a) { return a; }\n");
    ws.ok(&["mark", "S1", "done"]);
    let run = ws.ok(&["diff", "S1"]);
    assert_contains(&run.stdout, "+export function login(a) { return a; }");
}

#[test]
fn a_broken_draft_does_not_break_status_and_list_shows_it() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.run_stdin(
        &["plan", "--from", "-"],
        &PLAN.replace("Refactor login module", "Next"),
    );
    let draft = ".tasks/draft/PLAN.md";
    ws.write(draft, ws.read(draft).replace("- [ ] S3", "- [?] S3"));
    let status = ws.ok(&["status"]);
    assert_contains(&status.stdout, &format!("task:   {id}"));
    let warnings: Vec<&str> = status
        .stderr
        .lines()
        .filter(|l| l.contains("draft"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", status.stderr);
    assert!(warnings[0].starts_with("warning: the draft does not parse: `.tasks/draft/PLAN.md:"));
    let list = ws.ok(&["list"]);
    assert_starts_with(&list.stdout, "draft ");
    assert!(
        list.stdout.lines().next().unwrap().contains(" invalid "),
        "{}",
        list.stdout
    );
    let json = ws.ok(&["list", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(
        value["draft_error"]
            .as_str()
            .unwrap()
            .contains("unknown step marker")
    );
}

/// Regression (issue 31): `approve --allow-deviation` on an approved, unedited task said
/// "approved the edited plan", or with no draft "there is no draft to approve".
#[test]
fn allowing_deviation_on_an_unedited_task_says_so() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let run = ws.ok(&["approve", "--allow-deviation"]);
    insta::assert_snapshot!(run.stderr.replace(&id, "[ID]"), @"`[ID]`: deviation is now allowed: the run changes files outside a step's `files` without pausing (the plan itself is unchanged)");
    assert_contains(
        &ws.read(&format!(".tasks/{id}/PLAN.md")),
        "allow_deviation: true",
    );
}

/// Regression (issue 31): no `-q`, `-v` or `--no-pager`. `-q` keeps the data, warnings and
/// errors (with an error's hints) and drops the notes and hints; `-v` adds detail lines;
/// both and `--no-pager` go on every command, before or after it.
#[test]
fn quiet_and_verbose_on_every_command() {
    let ws = Workspace::new();
    ws.write("plan.md", PLAN);
    let quiet = ws.ok(&["-q", "plan", "--from", "plan.md"]);
    assert_eq!(quiet.stderr, "", "nothing but data, warnings and errors");
    let normal = ws.ok(&["show", "--no-pager"]);
    let quiet = ws.ok(&["show", "-q", "--no-pager"]);
    assert_eq!(quiet.stdout, normal.stdout, "the data is the same");
    let failed = ws.fails(&["-q", "mark", "S9", "done"], 2);
    assert_contains(&failed.stderr, "error:");
    assert_contains(&failed.stderr, "hint:");
    let verbose = ws.ok(&["status", "-v"]);
    assert_contains(&verbose.stderr, "· workspace `");
    ws.fails(&["status", "-q", "-v"], 2);
}

/// With no `EDITOR`, no `VISUAL` and no terminal, `vi` would read a pipe, edit nothing and
/// exit 0: tick refuses, saying how to set one, and leaves the file alone.
#[test]
fn edit_without_an_editor_or_a_terminal_refuses_with_the_fix() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
    let run = ws.run_with(&["edit"], |cmd| {
        cmd.env_remove("EDITOR").env_remove("VISUAL");
    });
    insta::assert_snapshot!(
        format!("{}{}exit {}", run.stdout, run.stderr.replace(&id, "[ID]"), run.code),
        @"
    error: no editor for `.tasks/[ID]/PLAN.md`: `EDITOR` and `VISUAL` are not set and there is no terminal for `vi`

    hint: set `EDITOR` (like `EDITOR=nano`, or `EDITOR='code --wait'`), or edit `.tasks/[ID]/PLAN.md` yourself; it was not changed
    exit 2
    "
    );
    assert_eq!(ws.read(&format!(".tasks/{id}/PLAN.md")), plan);
}

/// Regression (issue 31): `tick check` said "all clear" with a draft that does not parse, and
/// `tick show` refused to print it.
#[test]
fn a_broken_draft_is_a_check_finding_and_show_prints_it_with_the_error_located() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let draft = ".tasks/draft/PLAN.md";
    let broken = ws.read(draft).replace("- [ ] S3", "- [?] S3");
    ws.write(draft, &broken);
    let mut out = String::new();
    for args in [&["check"][..], &["show"][..]] {
        let run = ws.run(args);
        out.push_str(&format!(
            "$ tick {}\n{}{}exit {}\n",
            args.join(" "),
            run.stdout,
            run.stderr,
            run.code
        ));
    }
    insta::assert_snapshot!("broken_draft_check_and_show", out);
    assert_eq!(ws.read(draft), broken, "the draft is left as it was");
}

/// `--color always` colours the lines even into a pipe and past `NO_COLOR`; `--color never`
/// leaves them plain.
#[test]
fn color_always_and_never_override_the_terminal_check() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    let coloured = ws.ok(&["--color", "always", "status"]);
    assert!(coloured.stderr.contains("\u{1b}["), "{coloured:?}");
    let plain = ws.run_with(&["--color", "never", "status"], |cmd| {
        cmd.env_remove("NO_COLOR").env("CLICOLOR_FORCE", "1");
    });
    assert!(!plain.stderr.contains('\u{1b}'), "{plain:?}");
    assert_eq!(plain.code, 0);
}

/// A failed run's hint is stored while its task is the current one ("`tick run` picks it up
/// again"). Shown later for a task that is no longer current, a bare `tick run` would run the
/// other task: `status` and `check` name the task in it.
#[test]
fn a_stored_hint_names_its_task_once_another_is_current() {
    let ws = Workspace::new();
    let older = ws.approve_at(PLAN, "2026-11-30T10:00:00Z");
    let state = format!(".tasks/{older}/state.yaml");
    ws.write(
        &state,
        format!(
            "{}last_attempt:\n  at: 2026-11-30T10:05:00Z\n  cause: the server went away\n  hint: '`tick run` picks it up again'\n",
            ws.read(&state)
        ),
    );
    // While it is the current task, the hint is as written.
    assert_contains(&ws.ok(&["status"]).stderr, "`tick run` picks it up again");
    let newer = ws.approve_at(
        "# Other\n\n## Steps\n\n- [ ] S1 Another step\n",
        "2026-11-30T11:00:00Z",
    );
    assert_ne!(older, newer);
    let prefix = &older[..11];
    let status = ws.run(&["status", &older]);
    let shown = format!("{}{}", status.stdout, status.stderr);
    assert_contains(&shown, &format!("`tick run {prefix}"));
    assert!(!shown.contains("`tick run` picks"), "{shown}");
    let check = ws.run(&["check"]);
    let shown = format!("{}{}", check.stdout, check.stderr);
    assert_contains(&shown, &format!("(hint: `tick run {prefix}"));
    let json: serde_json::Value =
        serde_json::from_str(&ws.ok(&["status", &older, "--json"]).stdout).unwrap();
    assert_contains(
        json["task"]["last_attempt"]["hint"].as_str().unwrap(),
        &format!("`tick run {prefix}"),
    );
}

/// A new user's trial: the last step of the current task ticked by hand, `tick status` says
/// "`tick verify` runs their verify commands", and `tick verify` went to the other, open task
/// ("no done or stale step to verify") and made it the current one.
#[test]
fn verify_takes_the_task_status_shows_even_when_it_is_finished() {
    let ws = Workspace::new();
    let open = ws.approve_at(
        "# Open\n\n## Steps\n\n- [ ] S1 Not yet\n  - verify: `test -f later.txt`\n",
        "2026-11-30T10:00:00Z",
    );
    let finished = ws.approve_at(
        "# Greet\n\n## Steps\n\n- [ ] S1 Write hello\n  - verify: `grep -q hello hello.txt`\n",
        "2026-11-30T11:00:00Z",
    );
    ws.write("hello.txt", "hello\n");
    ws.ok(&["mark", "S1", "done"]);
    let status = ws.ok(&["status"]);
    assert_contains(
        &format!("{}{}", status.stdout, status.stderr),
        "tick verify",
    );
    let verify = ws.run(&["verify"]);
    let shown = format!("{}{}", verify.stdout, verify.stderr);
    assert!(!shown.contains("no done or stale step"), "{shown}");
    assert_contains(&shown, "S1 verified: done");
    assert!(
        ws.read(&format!(".tasks/{finished}/state.yaml"))
            .contains("command: grep -q hello hello.txt"),
        "the finished task's step has the evidence"
    );
    assert!(
        !ws.read(&format!(".tasks/{open}/state.yaml"))
            .contains("evidence")
    );
}

/// `tick run OTHER`, refused because OTHER's PLAN.md was edited after approval, made OTHER the
/// current task all the same: a refused command changes nothing, the current task included.
#[test]
fn a_refused_run_leaves_the_current_task_as_it_was() {
    let ws = Workspace::new();
    let other = ws.approve_at(PLAN, "2026-11-30T10:00:00Z");
    let current = ws.approve_at(
        "# Other\n\n## Steps\n\n- [ ] S1 Another step\n",
        "2026-11-30T11:00:00Z",
    );
    let plan = format!(".tasks/{other}/PLAN.md");
    ws.write(
        &plan,
        format!("{}\nEdited after approval.\n", ws.read(&plan)),
    );
    let refused = ws.run(&["run", &other]);
    assert_eq!(refused.code, 2, "{refused:#?}");
    // The hint names the task, which is not the current one.
    assert_contains(&refused.stderr, &format!("`tick approve {}", &other[..11]));
    let status: serde_json::Value =
        serde_json::from_str(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["task"]["id"], current.as_str(), "{status:#}");
}
