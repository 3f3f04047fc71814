//! Files that do not parse: every command that reads them fails with exit 2, names the file,
//! line and column, says the file was not changed, and leaves every byte where it was.

use crate::common::text::{assert_contains, assert_starts_with};
use crate::common::workspace::{PLAN, Workspace};

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in {text}"))
        + 1
}

/// Runs `status`, `status --json`, `mark` and `list` against a task whose file was broken, and
/// checks they report `location` and change nothing.
fn assert_refused(ws: &Workspace, id: &str, location: &str, message: &str) {
    let before = ws.task_files(id);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["status", id],
        &["mark", "S1", "done"],
        &["mark", "S2", "blocked", "--reason", "r"],
        &["show", id],
        &["approve", id],
    ] {
        let run = ws.fails(args, 2);
        assert!(
            run.stdout.is_empty(),
            "{args:?}: nothing on stdout: {}",
            run.stdout
        );
        assert!(
            run.stderr
                .starts_with(&format!("error: `{location}`: {message}")),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("the file was not changed"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(ws.task_files(id), before, "{args:?} changed a file");
    }
    // `list` still lists the other tasks and says this one is invalid.
    let list = ws.ok(&["list", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    let entry = &list["tasks"][0];
    assert_eq!(entry["id"], id);
    assert_eq!(entry["title"], serde_json::Value::Null);
    assert!(
        entry["error"].as_str().unwrap().contains(location),
        "{entry}"
    );
    let human = ws.ok(&["list"]);
    assert_contains(&human.stdout, "  invalid  -  ");
    assert_eq!(ws.task_files(id), before);
}

#[test]
fn an_unknown_marker_is_an_error_with_its_position() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/TODO.md");
    let todo = ws.read(&path).replace("- [ ] S2 Add", "- [?] S2 Add");
    ws.write(&path, &todo);
    let line = line_of(&todo, "- [?] S2");
    assert_refused(
        &ws,
        &id,
        &format!("{path}:{line}:3"),
        "unknown step marker `[?]`",
    );
    // The hint names the markers.
    let run = ws.fails(&["status"], 2);
    assert_contains(
        &run.stderr,
        "hint: markers are `[ ]`, `[x]`, `[-]`, `[!]`, `[~]`; the file was not changed",
    );

    // A marker on a sub-step, indented, and a two-character marker: the column follows.
    let todo = ws
        .read(&path)
        .replace("- [?] S2", "- [ ] S2")
        .replace("  - [ ] S2.2", "  - [xx] S2.2");
    ws.write(&path, &todo);
    let line = line_of(&todo, "  - [xx] S2.2");
    assert_refused(
        &ws,
        &id,
        &format!("{path}:{line}:5"),
        "unknown step marker `[xx]`",
    );
}

#[test]
fn duplicate_ids_are_an_error() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/TODO.md");
    let todo = ws.read(&path).replace("- [ ] S3 Update", "- [ ] S1 Update");
    ws.write(&path, &todo);
    let first = line_of(&todo, "- [ ] S1 Find");
    let line = line_of(&todo, "- [ ] S1 Update");
    assert_refused(
        &ws,
        &id,
        &format!("{path}:{line}:7"),
        &format!("duplicate step id `S1` (also on line {first})"),
    );
}

#[test]
fn a_front_matter_status_tick_does_not_know_is_an_error() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/PLAN.md");
    let plan = ws
        .read(&path)
        .replace("status: approved", "status: finished");
    ws.write(&path, &plan);
    let line = line_of(&plan, "status: finished");
    assert_refused(
        &ws,
        &id,
        &format!("{path}:{line}:9"),
        "invalid front matter: status: unknown variant `finished`",
    );
}

#[test]
fn an_unclosed_front_matter_is_an_error() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/PLAN.md");
    let plan = ws.read(&path).replacen("\n---\n", "\n", 1);
    assert!(!plan[4..].contains("\n---\n"));
    ws.write(&path, &plan);
    assert_refused(
        &ws,
        &id,
        &format!("{path}:1:1"),
        "the front matter is not closed",
    );
}

#[test]
fn a_broken_draft_is_never_approved_or_replaced() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    let broken = ws
        .read(".tasks/draft/PLAN.md")
        .replace("- [ ] S3 Update", "- [?] S3 Update");
    ws.write(".tasks/draft/PLAN.md", &broken);
    let line = line_of(&broken, "- [?] S3");
    // `show` prints it, with the same error (`cli_conventions`); `approve` refuses it.
    let run = ws.fails(&["approve"], 2);
    assert!(
        run.stderr.starts_with(&format!(
            "error: `.tasks/draft/PLAN.md:{line}:3`: unknown step marker `[?]`"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(ws.read(".tasks/draft/PLAN.md"), broken);
    // Status is about tasks: the broken draft is one warning line.
    let status = ws.ok(&["status"]);
    assert_starts_with(
        &status.stderr,
        &format!(
            "warning: the draft does not parse: `.tasks/draft/PLAN.md:{line}:3`: unknown step marker `[?]`\n"
        ),
    );
    assert_eq!(ws.read(".tasks/draft/PLAN.md"), broken);
    assert!(ws.task_ids().is_empty());
    // A second plan is refused even though the draft does not parse.
    let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(ws.read(".tasks/draft/PLAN.md"), broken);
    // Discarding is how a person gets out.
    ws.ok(&["discard", "--yes"]);
    assert!(!ws.exists(".tasks/draft"));
}

#[test]
fn a_plan_from_a_file_with_broken_front_matter_names_the_file() {
    let ws = Workspace::new();
    ws.write(
        "bad.md",
        "---\ntitle: x\nstatus: finished\n---\n# x\n\n## Steps\n- [ ] S1 a\n",
    );
    let run = ws.fails(&["plan", "--from", "bad.md"], 2);
    assert_starts_with(&run.stderr, "error: `bad.md:3:9`: invalid front matter");
    assert_contains(&run.stderr, "no draft was written");
    ws.write("open.md", "---\ntitle: x\n# x\n\n## Steps\n- [ ] S1 a\n");
    let run = ws.fails(&["plan", "--from", "open.md"], 2);
    assert_starts_with(
        &run.stderr,
        "error: `open.md:1:1`: the front matter is not closed",
    );
    assert!(!ws.exists(".tasks/draft"));
}

#[test]
fn a_corrupt_state_yaml_names_its_line() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let path = format!(".tasks/{id}/state.yaml");
    ws.write(&path, "format: 1\napproval: [unclosed\n");
    let run = ws.fails(&["mark", "S1", "done"], 2);
    assert_starts_with(&run.stderr, &format!("error: `{path}:"));
    assert_contains(&run.stderr, "restore it from git; the file was not changed");
    assert_eq!(ws.read(&path), "format: 1\napproval: [unclosed\n");
}

#[test]
fn a_bad_clock_is_an_input_error() {
    let ws = Workspace::new();
    let run = ws
        .tick()
        .env("TICK_NOW", "yesterday")
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_starts_with(&stderr, "error: `TICK_NOW` is not an RFC 3339 time");
}
