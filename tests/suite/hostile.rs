//! Hostile files cost nothing: a cloned repository's `.tasks/` can hold an alias bomb, a line
//! of a hundred thousand `[`, a symlink to `/dev/zero`, a FIFO, bytes that are not UTF-8, a
//! directory or an empty file where tick expects its own files. Every command that reads them
//! fails fast (the test kills it after 10 s), names the file workspace-relative with its line
//! and column, says what to do, and leaves every byte where it was.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::scripts::claims_done;
use crate::common::text::assert_contains;
use crate::common::workspace::{PLAN, Workspace};

/// Generous: each of these takes milliseconds; before the fix some ran for minutes or forever.
const DEADLINE: Duration = Duration::from_secs(10);

struct Ended {
    code: i32,
    /// stdout and stderr together: `check` reports findings on stdout, the others on stderr.
    output: String,
}

/// Runs `tick args...` with stdin closed, killing it (and failing the test) after
/// [`DEADLINE`].
fn run_bounded(ws: &Workspace, args: &[&str]) -> Ended {
    let run = ws.run_bounded(args, DEADLINE);
    Ended {
        code: run.code,
        output: format!("{}{}", run.stdout, run.stderr),
    }
}

/// What a file or a stand-in for it is, byte for byte or by kind, so "unchanged" can be
/// checked for FIFOs and directories too.
fn snapshot(path: &Path) -> String {
    let meta = fs::symlink_metadata(path).unwrap();
    if meta.file_type().is_symlink() {
        format!("link to {}", fs::read_link(path).unwrap().display())
    } else if meta.is_file() {
        format!("file {}", blake3::hash(&fs::read(path).unwrap()).to_hex())
    } else {
        format!("{:?}", meta.file_type())
    }
}

/// A workspace with one approved task and the path of one of its files, about to be replaced
/// by something hostile.
struct Tampered {
    ws: Workspace,
    id: String,
    /// Workspace-relative, as every message names it.
    rel: String,
}

impl Tampered {
    /// A fresh task; `file` is the name of one of its files (`TODO.md`, `state.yaml`, ...).
    fn new(file: &str) -> Tampered {
        let ws = Workspace::new();
        let id = ws.approve(PLAN);
        let rel = format!(".tasks/{id}/{file}");
        Tampered { ws, id, rel }
    }

    /// The file removed, so something else can stand in its place.
    fn removed(file: &str) -> Tampered {
        let tampered = Tampered::new(file);
        fs::remove_file(tampered.path()).unwrap();
        tampered
    }

    fn path(&self) -> std::path::PathBuf {
        self.ws.path(&self.rel)
    }

    /// The file's path, opening a backtick, followed by `rest` (such as `:2:7` and a closing
    /// backtick).
    fn at(&self, rest: &str) -> String {
        format!("`{}{rest}", self.rel)
    }

    /// Runs every reading command against the task and checks each fails fast, with
    /// `location` and `message` in its output, no absolute path, and the file unchanged.
    fn assert_refused_everywhere(&self, location: &str, message: &str) {
        let Tampered { ws, id, rel } = self;
        let before = snapshot(&self.path());
        for args in [
            &["status"][..],
            &["status", id],
            &["check"],
            &["mark", "S1", "done"],
            &["run", "--dry-run"],
        ] {
            let ended = run_bounded(ws, args);
            assert_ne!(ended.code, 0, "{args:?} succeeded: {}", ended.output);
            assert!(
                ended.output.contains(location) && ended.output.contains(message),
                "{args:?}: wanted `{location}` and {message:?} in:\n{}",
                ended.output
            );
            assert!(
                !ended.output.contains(&*ws.temp().to_string_lossy()),
                "{args:?}: an absolute path in:\n{}",
                ended.output
            );
            assert_eq!(snapshot(&self.path()), before, "{args:?} changed `{rel}`");
        }
    }
}

/// A 1 MiB string referenced by 1,000 aliases: a gigabyte once expanded.
fn alias_bomb(string_bytes: usize) -> String {
    let mut yaml = format!("bomb: &a \"{}\"\nmore: [", "x".repeat(string_bytes));
    for _ in 0..1000 {
        yaml.push_str("*a, ");
    }
    yaml.push_str("]\n");
    yaml
}

fn with_front_matter(plan: &Tampered, yaml: &str) {
    let body = plan
        .ws
        .read(&plan.rel)
        .splitn(3, "---\n")
        .nth(2)
        .unwrap()
        .to_owned();
    plan.ws.write(&plan.rel, format!("---\n{yaml}---\n{body}"));
}

const ANCHORS: &str = "YAML anchors (`&name`) are not allowed";

#[test]
fn a_flat_alias_bomb_in_plan_front_matter_is_refused() {
    let plan = Tampered::new("PLAN.md");
    with_front_matter(&plan, &alias_bomb(1 << 20));
    plan.assert_refused_everywhere(&plan.at(":2:1`"), "front matter is larger than 64 KiB");
    // Under the front matter cap the alias itself is refused, where it stands.
    with_front_matter(&plan, &alias_bomb(32 * 1024));
    plan.assert_refused_everywhere(&plan.at(":2:7`"), ANCHORS);
}

#[test]
fn a_flat_alias_bomb_in_state_yaml_is_refused() {
    let state = Tampered::new("state.yaml");
    let bomb = format!("format: 1\n{}", alias_bomb(1 << 20));
    state.ws.write(&state.rel, bomb);
    state.assert_refused_everywhere(&state.at(":2:7`"), ANCHORS);
}

#[test]
fn deep_nesting_is_refused_after_a_few_levels() {
    let state = Tampered::new("state.yaml");
    let deep = format!("format: 1\nsteps: {}", "[".repeat(100_000));
    state.ws.write(&state.rel, deep);
    state.assert_refused_everywhere(&state.at(":2:"), "nested more than 64");
    // The config is read by every command too.
    let ws = &state.ws;
    ws.write(
        ".tasks/config.yaml",
        format!("model: {}", "[".repeat(100_000)),
    );
    let ended = run_bounded(ws, &["status"]);
    assert_eq!(ended.code, 2, "{}", ended.output);
    assert!(
        ended.output.contains("`.tasks/config.yaml:1:") || ended.output.contains("nested"),
        "{}",
        ended.output
    );
}

#[test]
fn a_list_nested_a_million_deep_is_refused_before_parsing() {
    let todo = Tampered::new("TODO.md");
    let text = todo.ws.read(&todo.rel);
    let line = text.lines().count() + 1;
    todo.ws
        .write(&todo.rel, format!("{text}{}deep\n", "- ".repeat(1_000_000)));
    todo.assert_refused_everywhere(
        &todo.at(&format!(":{line}:65`")),
        "nested more than 32 levels deep",
    );
}

#[test]
fn todo_md_linked_to_dev_zero_is_not_read() {
    let todo = Tampered::removed("TODO.md");
    std::os::unix::fs::symlink("/dev/zero", todo.path()).unwrap();
    todo.assert_refused_everywhere(&todo.at("` is a device"), "not a file");
}

#[test]
fn a_fifo_in_place_of_todo_md_never_blocks() {
    let todo = Tampered::removed("TODO.md");
    let made = std::process::Command::new("mkfifo")
        .arg(todo.path())
        .status()
        .unwrap();
    assert!(made.success());
    todo.assert_refused_everywhere(&todo.at("` is a named pipe (FIFO)"), "not a file");
}

#[test]
fn a_directory_in_place_of_todo_md_is_explained() {
    let todo = Tampered::removed("TODO.md");
    fs::create_dir(todo.path()).unwrap();
    todo.assert_refused_everywhere(&todo.at("` is a directory"), "not a file");
}

#[test]
fn invalid_utf8_is_located() {
    let todo = Tampered::new("TODO.md");
    let text = todo.ws.read(&todo.rel);
    let line = text
        .lines()
        .position(|l| l.starts_with("- [ ] S1 "))
        .unwrap();
    let offset: usize = text.lines().take(line).map(|l| l.len() + 1).sum();
    // Inside "- [ ] S1 Find": the bad bytes are the 13th character of the line.
    let mut bytes = text.into_bytes();
    bytes.splice(offset + 12..offset + 12, [0xff, 0xfe]);
    todo.ws.write(&todo.rel, &bytes);
    let location = todo.at(&format!(":{}:13`", line + 1));
    todo.assert_refused_everywhere(&location, "invalid UTF-8");
}

#[test]
fn an_empty_todo_md_is_an_error_for_run_and_check() {
    let Tampered { ws, rel, .. } = Tampered::new("TODO.md");
    for contents in ["", "# TODO: nothing here\n\nJust prose.\n"] {
        ws.write(&rel, contents);
        for args in [&["check"][..], &["run", "--dry-run"]] {
            let ended = run_bounded(&ws, args);
            assert_ne!(ended.code, 0, "{args:?}: {}", ended.output);
            assert!(
                ended
                    .output
                    .contains(&format!("`{rel}:1:1`: the checklist")),
                "{args:?}: {}",
                ended.output
            );
            if args[0] == "run" {
                assert_contains(&ended.output, "hint: steps are lines like `- [ ] S1");
            }
        }
        for args in [&["status"][..], &["mark", "S1", "done"]] {
            run_bounded(&ws, args);
        }
        assert_eq!(ws.read(&rel), contents);
    }
}

#[test]
fn a_link_out_of_the_workspace_is_not_followed() {
    let Tampered { ws, id, rel } = Tampered::new("TODO.md");
    let outside = ws.temp().join("elsewhere.md");
    fs::write(&outside, ws.read(&rel)).unwrap();
    fs::remove_file(ws.path(&rel)).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path(&rel)).unwrap();
    let ended = run_bounded(&ws, &["status", &id]);
    assert_eq!(ended.code, 2, "{}", ended.output);
    assert_contains(
        &ended.output,
        &format!("`{rel}` is a link to a file outside the workspace"),
    );
}

/// Tool payloads are capped with the documented defaults: a 5 MiB `write_file` (over 4 MiB) is
/// refused and never replayed to the model, a 90 KiB `read_file` result reaches the model cut
/// to 64 KiB with how to read on, and a 3 MiB write that is allowed is cut in the transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_payloads_are_capped() {
    use crate::common::fake_model::FakeModel;
    use crate::common::scripts::{openai_call, openai_calls};
    use crate::common::workspace::{Workspace, assert_success};
    use serde_json::json;

    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let line = format!("{}\n", "d".repeat(89));
    project.write("data.txt", line.repeat(1000));
    project
        .approve_plan(
            &server,
            "# Big files\n\n## Steps\n- [ ] S1 Write the big files\n  - files: big.txt, huge.txt\n",
        )
        .await;

    server.push(openai_calls(&[
        (
            "c1",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        (
            "c2",
            "write_file",
            json!({"path": "huge.txt", "content": "h".repeat(5 << 20)}),
        ),
    ]));
    server.push(openai_call(
        "c3",
        "write_file",
        json!({"path": "big.txt", "content": "b".repeat(3 << 20)}),
    ));
    server.push(openai_call("c4", "read_file", json!({"path": "data.txt"})));
    server.push(claims_done("c5", "S1", Some("wrote big.txt")));
    let output = project.tick_against(&server, &["run"]).await;
    assert_success(&output);
    assert!(!project.path("huge.txt").exists());
    assert_eq!(
        fs::metadata(project.path("big.txt")).unwrap().len(),
        3 << 20
    );

    let requests = server.requests();
    let tool_result = |request: usize, id: &str| -> String {
        requests[request]
            .tool_results()
            .into_iter()
            .find_map(|(call, content)| (call == id).then_some(content))
            .unwrap_or_else(|| panic!("no result for {id} in request {request}"))
    };
    let refused = tool_result(1, "c2");
    assert_contains(
        &refused,
        "`content` is 5242880 bytes, over the limit of 4194304 bytes",
    );
    // The refused 5 MiB is not sent back to the model with the conversation.
    let replayed = requests[1].body.to_string().len();
    assert!(replayed < 1 << 20, "request 2 is {replayed} bytes");
    let read = tool_result(3, "c4");
    assert!(read.len() <= 64 * 1024 + 1024, "{}", read.len());
    assert_contains(&read, "read_file with `offset` and `limit`");

    let runs = project.path(&format!(".tasks/{}/runs", project.task_id()));
    let transcript = fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-S1.jsonl"))
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .unwrap();
    for entry in transcript.lines() {
        assert!(
            entry.len() <= 257 * 1024,
            "an entry of {} bytes",
            entry.len()
        );
    }
    assert!(transcript.contains("bytes cut from the transcript"));
}
