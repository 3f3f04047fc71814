//! What a new user met on a first try, each pinned: completions that know task and step ids,
//! a man page per subcommand, `tick show` showing where a task stands, and a missing editor
//! that fails instead of exiting 0.

use crate::common::text::assert_contains;
use crate::common::workspace::{PLAN, Run, Workspace};

/// What tick answers when bash asks for the completions of `words` (the last one being
/// typed).
fn bash_complete(ws: &Workspace, words: &[&str]) -> Vec<String> {
    let index = (words.len() - 1).to_string();
    let mut args = vec!["--"];
    args.extend_from_slice(words);
    let run: Run = ws.run_with(&args, |cmd| {
        cmd.env("TICK_COMPLETE", "bash")
            .env("_CLAP_IFS", "\n")
            .env("_CLAP_COMPLETE_INDEX", &index);
    });
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout.lines().map(str::to_owned).collect()
}

#[test]
fn completions_offer_subcommands_task_ids_and_step_ids() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    // `tick` then a word being typed: subcommands.
    let words = bash_complete(&ws, &["tick", "ans"]);
    assert_eq!(words, ["answer"]);
    // A task argument: the task ids, from `.tasks/` as it is now.
    let words = bash_complete(&ws, &["tick", "status", "2026"]);
    assert_eq!(words, std::slice::from_ref(&id));
    let words = bash_complete(&ws, &["tick", "mark", "S1", "done", ""]);
    assert!(words.contains(&id), "{words:?}");
    // A step argument: the current task's steps, sub-steps too.
    let words = bash_complete(&ws, &["tick", "mark", "S"]);
    assert_eq!(words, ["S1", "S2", "S2.1", "S2.2", "S3"]);
    let words = bash_complete(&ws, &["tick", "run", "--step", "S2"]);
    assert_eq!(words, ["S2", "S2.1", "S2.2"]);
    // Fish gets the title and status as help.
    let run = ws.run_with(&["--", "tick", "answer", "S3"], |cmd| {
        cmd.env("TICK_COMPLETE", "fish");
    });
    assert_eq!(run.stdout, "S3\t[pending] Update the login tests\n");
}

#[test]
fn completion_scripts_call_tick_back_and_parse() {
    let ws = Workspace::new();
    let run = ws.ok(&["completions", "bash"]);
    assert_contains(&run.stdout, "TICK_COMPLETE=\"bash\"");
    assert_contains(&run.stdout, "-F _clap_complete_tick tick");
    let script = ws.temp().join("tick.bash");
    std::fs::write(&script, &run.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:#?}");
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let run = ws.ok(&["completions", shell]);
        assert!(
            run.stdout.contains("TICK_COMPLETE"),
            "{shell}: {}",
            run.stdout
        );
    }
}

#[test]
fn every_subcommand_has_its_own_man_page() {
    let ws = Workspace::new();
    let top = ws.ok(&["man"]);
    assert_contains(&top.stdout, ".TH tick 1");
    assert_contains(&top.stdout, "tick\\-plan(1)");
    let plan = ws.ok(&["man", "plan"]);
    assert_contains(&plan.stdout, ".TH tick-plan 1");
    assert_contains(&plan.stdout, "\\-\\-revise");
    let missing = ws.fails(&["man", "nope"], 2);
    assert_contains(&missing.stderr, "there is no subcommand `nope`");
    assert_contains(&missing.stderr, "`plan`");

    let dir = ws.temp().join("man1");
    let run = ws.ok(&["man", "--dir", dir.to_str().unwrap()]);
    assert_contains(&run.stderr, "man pages to");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    for page in [
        "tick.1",
        "tick-plan.1",
        "tick-run.1",
        "tick-answer.1",
        "tick-man.1",
    ] {
        assert!(files.iter().any(|f| f == page), "{page} in {files:?}");
    }
    // Every page the top page names exists.
    let named: Vec<String> = top
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("tick\\-")?.strip_suffix("(1)"))
        .map(|name| format!("tick-{name}.1"))
        .collect();
    assert!(named.len() > 20, "{named:?}");
    for file in named {
        assert!(
            files.contains(&file),
            "{file} named by tick(1) in {files:?}"
        );
    }
}

/// Issue 31: `tick man --dir X` is a man directory as MANPATH names it: the pages go into
/// `X/man1/` and the hint names `X`, which is what MANPATH wants.
#[test]
fn man_dir_is_a_manpath_directory_and_the_hint_names_it() {
    let ws = Workspace::new();
    let root = ws.temp().join("share").join("man");
    let run = ws.ok(&["man", "--dir", root.to_str().unwrap()]);
    assert!(root.join("man1").join("tick.1").is_file(), "{run:#?}");
    assert!(root.join("man1").join("tick-plan.1").is_file());
    let hint = run
        .stderr
        .lines()
        .find(|line| line.contains("MANPATH"))
        .unwrap_or_default()
        .replace(root.to_str().unwrap(), "[DIR]");
    assert_eq!(
        hint,
        "hint: `man tick-plan` finds them when `[DIR]` is on your MANPATH"
    );
    // And the top page has what a script author looks for.
    let page = std::fs::read_to_string(root.join("man1").join("tick.1")).unwrap();
    for heading in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES"] {
        assert_contains(&page, heading);
    }
}

#[test]
fn show_on_a_task_shows_each_steps_marker() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S3", "blocked", "--reason", "waiting"]);
    let run = ws.ok(&["show"]);
    assert_contains(&run.stdout, "- [x] S1 Find the real login entry point");
    assert_contains(&run.stdout, "- [ ] S2 Add a compatibility layer");
    assert_contains(&run.stdout, "- [!] S3 Update the login tests");
}

#[test]
fn a_missing_editor_is_an_error_and_changes_nothing() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let before = ws.read(&format!(".tasks/{id}/PLAN.md"));
    let run = ws.run_with(&["edit"], |cmd| {
        cmd.env("EDITOR", "no-such-editor-anywhere")
            .env_remove("VISUAL");
    });
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_contains(
        &run.stderr,
        "could not run the editor `no-such-editor-anywhere`",
    );
    assert_contains(&run.stderr, "set `$VISUAL` or `$EDITOR`");
    assert_eq!(ws.read(&format!(".tasks/{id}/PLAN.md")), before);
}

/// A TODO.md broken in `tick edit --todo` is kept, and the hint names the command that opens
/// it again (`tick edit` opens PLAN.md).
#[test]
fn a_broken_todo_edit_names_the_command_that_fixes_it() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let editor = ws.path("break-it.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/- \\[ \\] S1/- [?] S1/' \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = ws.run_with(&["edit", "--todo"], |cmd| {
        cmd.env("EDITOR", &editor).env_remove("VISUAL");
    });
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_contains(&run.stderr, "unknown step marker `[?]`");
    assert_contains(
        &run.stderr,
        "your edit is kept as you left it; `tick edit --todo` to fix it",
    );
    assert_contains(&ws.read(&format!(".tasks/{id}/TODO.md")), "- [?] S1");
}

#[test]
fn with_only_a_draft_run_points_at_the_draft() {
    let ws = Workspace::new();
    ws.run_stdin(&["plan", "--from", "-"], PLAN);
    for command in [&["run"][..], &["next"], &["verify"]] {
        let run = ws.fails(command, 2);
        assert_contains(
            &run.stderr,
            "there is no approved task yet: a draft is waiting for review",
        );
        assert_contains(&run.stderr, "`tick show`, then `tick approve`");
    }
}

#[test]
fn run_names_problems_that_need_no_model_before_the_missing_model() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    // PLAN.md edited after approval: that, not the missing model, is what `run` says.
    let plan = format!(".tasks/{id}/PLAN.md");
    let text = ws.read(&plan);
    ws.write(
        &plan,
        text.replace("Update the login tests", "Update the login tests first"),
    );
    let run = ws.fails(&["run"], 2);
    assert_contains(&run.stderr, "was edited after approval");
    assert!(!run.stderr.contains("model"), "{}", run.stderr);
    ws.write(&plan, text);
    ws.ok(&["cancel"]);
    let run = ws.fails(&["run"], 2);
    assert_contains(&run.stderr, "the task was cancelled");
    assert!(!run.stderr.contains("model"), "{}", run.stderr);
}

/// `tick run` with no step to give a model (every step done, or a blocked step first) says
/// so and exits as it would with a model: nothing asks for one, or probes for one.
/// A path a person typed that is not a file is told as such, with the way on: never tick's
/// advice for its own files (remove it and `git checkout --` it), which for `/tmp` is harm.
#[test]
fn a_plan_or_import_path_that_is_no_file_gets_advice_for_what_was_typed() {
    let ws = Workspace::new();
    ws.write("specs/tasks.md/keep", "");
    for (args, message, hint) in [
        (
            &["plan", "--from", "/tmp"][..],
            "`/tmp` is a directory, not a file",
            "give the path of a plan you wrote",
        ),
        (
            &["plan", "--from", "/dev/null"][..],
            "`/dev/null` is a device, not a file",
            "give the path of a plan you wrote",
        ),
        (
            &["import", "/nonexistent/tasks.md"][..],
            "`/nonexistent/tasks.md` does not exist",
            "nothing was imported",
        ),
        (
            &["import", "specs/tasks.md", "--format", "kiro"][..],
            "`specs/tasks.md` is a directory, not a file",
            "name the tool's task file itself",
        ),
    ] {
        let run = ws.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_contains(&run.stderr, message);
        assert_contains(&run.stderr, hint);
        assert!(
            !run.stderr.contains("git checkout"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn run_with_nothing_to_run_needs_no_model() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    ws.ok(&[
        "mark",
        "S1",
        "blocked",
        "--reason",
        "needs the staging password",
    ]);
    let run = ws.fails(&["run"], 4);
    assert_contains(&run.stderr, "S1 is blocked: needs the staging password");
    assert!(!run.stderr.contains("model"), "{}", run.stderr);

    for step in ["S1", "S2.1", "S2.2", "S3"] {
        ws.ok(&["mark", step, "done"]);
    }
    let run = ws.ok(&["run"]);
    assert_contains(
        &run.stderr,
        "every step of this task is done; nothing to run",
    );
    assert!(!run.stderr.contains("model"), "{}", run.stderr);
    let run = ws.ok(&["run", "--json"]);
    assert_contains(&run.stdout, r#"{"event":"nothing_to_run","step":null}"#);
    assert_contains(&run.stdout, r#""exit_code":0"#);

    // A step a person opens again does need the model, and the run says so.
    ws.ok(&["mark", "S3", "pending"]);
    let run = ws.fails(&["run"], 2);
    assert_contains(&run.stderr, "tick cannot talk to a model yet");
}

/// A server that fails before answering is asked again, and the person sees each retry and
/// its wait, on screen and in `--json`: not minutes of "waiting for the model".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_retry_is_shown_with_its_wait() {
    use crate::common::fake_model::{FakeModel, Reply};
    use crate::common::scripts::submit_login_plan;
    use crate::common::workspace::Workspace;
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    server.push(Reply::status(500).header("retry-after", "0"));
    server.push(Reply::status(503).header("retry-after", "0"));
    server.push(submit_login_plan());
    let output = project
        .tick_against(&server, &["plan", "--json", "Refactor login"])
        .await;
    assert_eq!(output.status.code(), Some(0));
    let retries: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["event"] == "retry")
        .collect();
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert_eq!(retries[0]["attempt"], 2);
    assert_eq!(retries[1]["attempt"], 3);
    assert_eq!(retries[0]["wait_ms"], 0);
    assert!(
        retries[0]["reason"].as_str().unwrap().contains("500"),
        "{retries:?}"
    );

    // Piped human output says it too, one line per retry.
    project.git(&["clean", "-fdq", ".tasks"]);
    server.push(Reply::status(500).header("retry-after", "0"));
    server.push(submit_login_plan());
    let output = project
        .tick_against(&server, &["plan", "--force", "Refactor login"])
        .await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("asking again in 0.0 s (attempt 2 of"), "{err}");
}

/// A gateway in front of the model server that answers with its own error page: the person
/// reads the page's title, once per line, never kilobytes of its markup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateways_html_error_page_is_told_by_its_title() {
    use crate::common::fake_model::{FakeModel, Reply};
    use crate::common::workspace::Workspace;
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let page = format!(
        "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>\n<style>{}</style></head>\
         <body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>\n",
        "body{font-family:sans-serif}".repeat(200)
    );
    for _ in 0..10 {
        server.push(
            Reply::status(502)
                .header("content-type", "text/html")
                .header("retry-after", "0")
                .chunk(&page),
        );
    }
    let output = project
        .tick_against(&server, &["plan", "Refactor login"])
        .await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "(HTTP 502): an HTML page titled \"502 Bad Gateway\" instead of a model's answer"
        ),
        "{err}"
    );
    assert!(!err.contains("font-family") && !err.contains('<'), "{err}");
    assert!(err.len() < 2_000, "{} bytes: {err}", err.len());
}

/// Issue 31: `tick --version` names the commit and its date, so a bug report says which
/// build it is about (built from a git checkout, as this suite is).
#[test]
fn version_names_the_commit_and_its_date() {
    let ws = Workspace::new();
    let run = ws.ok(&["--version"]);
    let line = run.stdout.trim();
    let rest = line
        .strip_prefix(&format!("tick {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    let (commit, date) = rest.split_once(' ').unwrap_or_else(|| panic!("{line}"));
    assert!(
        commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{line}"
    );
    assert!(
        chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok(),
        "{line}"
    );
}

/// The codes in the first column of the README's exit-code table (`10-14` is each of them).
fn readme_exit_codes() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let (_, table) = readme.split_once("## Exit codes\n").unwrap();
    let cells = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|row| row.split('|').nth(1).map(str::trim))
        .filter(|cell| cell.starts_with(|c: char| c.is_ascii_digit()));
    let mut codes = Vec::new();
    for cell in cells {
        match cell.split_once('-') {
            Some((low, high)) => codes.extend(
                (low.parse::<u32>().unwrap()..=high.parse().unwrap()).map(|c| c.to_string()),
            ),
            None => codes.push(cell.to_owned()),
        }
    }
    codes
}

/// A new user's review: EXIT STATUS was on `tick.1` only (without 9-15 one by one), and 7 of
/// 29 subcommand pages had EXAMPLES.
#[test]
fn every_man_page_has_examples_and_exit_status_and_tick_1_lists_the_readmes_codes() {
    let ws = Workspace::new();
    let root = ws.temp().join("man");
    ws.ok(&["man", "--dir", root.to_str().unwrap()]);
    let mut pages = 0;
    for entry in std::fs::read_dir(root.join("man1")).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        for heading in [
            ".SH EXAMPLES\n",
            ".SH \"EXIT STATUS\"\n",
            ".SH \"SEE ALSO\"\n",
        ] {
            assert!(page.contains(heading), "{}: {heading}", path.display());
        }
        pages += 1;
    }
    assert_eq!(pages, 30);
    let top = std::fs::read_to_string(root.join("man1/tick.1")).unwrap();
    let (_, exit_status) = top.split_once(".SH \"EXIT STATUS\"\n").unwrap();
    let exit_status = exit_status.split("\n.SH ").next().unwrap();
    let listed: Vec<&str> = exit_status
        .lines()
        .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR"))
        .collect();
    let readme = readme_exit_codes();
    assert!(readme.len() > 10, "{readme:?}");
    for code in &readme {
        assert!(listed.contains(&code.as_str()), "{code} in {listed:?}");
    }
}
