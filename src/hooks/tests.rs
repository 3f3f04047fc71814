use super::*;

fn entry(event: Event, matcher: Option<&str>, command: &str) -> HookEntry {
    HookEntry {
        event,
        matcher: matcher.map(str::to_owned),
        command: command.to_owned(),
        timeout_s: None,
    }
}

fn ran(exit_code: Option<i32>, stdout: &str, stderr: &str) -> exec::Ran {
    exec::Ran {
        exit_code,
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        timeout_s: 60.0,
        ..exec::Ran::default()
    }
}

#[test]
fn the_contract_exit_codes_and_stdout_json() {
    let ok = judge(Event::ToolPre, "g", &ran(Some(0), "", ""));
    assert_eq!(ok, Judged::default());
    let blocked = judge(Event::ToolPre, "g", &ran(Some(2), "", "no rm -rf\n"));
    assert_eq!(blocked.block.as_deref(), Some("no rm -rf"));
    // Any other exit is reported and does not block, except for an extra verifier.
    assert!(
        judge(Event::ToolPre, "g", &ran(Some(1), "", "oops"))
            .block
            .is_none()
    );
    assert!(
        judge(Event::StepVerify, "g", &ran(Some(1), "", "bad"))
            .block
            .is_some()
    );
    // A guard's JSON cut short is no verdict: it blocks. Elsewhere it is only output.
    let cut = judge(
        Event::StepVerify,
        "g",
        &ran(Some(0), "{\"decision\":\"block\"\n", ""),
    );
    assert!(
        cut.block
            .as_deref()
            .is_some_and(|b| b.contains("printed JSON that does not parse")),
        "{cut:?}"
    );
    assert!(
        judge(Event::StepDone, "g", &ran(Some(0), "{\"decision\"", ""))
            .block
            .is_none()
    );
    assert!(
        judge(Event::ToolPre, "g", &ran(Some(0), "plain words {", ""))
            .block
            .is_none()
    );
    let json = r#"{"decision":"block","reason":"lint first","systemMessage":"hi","additionalContext":"ctx"}"#;
    let said = judge(Event::StepClaimed, "g", &ran(Some(0), json, ""));
    assert_eq!(said.block.as_deref(), Some("lint first"));
    assert_eq!(said.message.as_deref(), Some("hi"));
    assert_eq!(said.context, ["ctx"]);
    let deny = r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no","updatedInput":{"command":"ls"}}}"#;
    assert_eq!(
        judge(Event::ToolPre, "g", &ran(Some(0), deny, ""))
            .block
            .as_deref(),
        Some("no")
    );
    // Text that is not JSON is no decision.
    assert_eq!(
        judge(Event::ToolPost, "g", &ran(Some(0), "formatted", "")),
        Judged::default()
    );
}

#[test]
fn a_missing_command_is_an_error_and_a_guard_without_a_verdict_blocks() {
    let missing = judge(
        Event::ToolPost,
        "nope",
        &ran(Some(127), "", "nope: not found"),
    );
    assert!(
        missing
            .error
            .as_deref()
            .unwrap()
            .contains("not found (exit 127)")
    );
    assert!(missing.block.is_none());
    let guard = judge(Event::ToolPre, "nope", &ran(Some(127), "", ""));
    assert!(guard.error.is_some() && guard.block.is_some());
    let mut hung = ran(None, "", "");
    hung.timed_out = true;
    assert!(judge(Event::StepVerify, "sleep", &hung).block.is_some());
    let notify = judge(Event::StepDone, "sleep", &hung);
    assert!(notify.block.is_none());
    assert!(notify.error.unwrap().contains("timeout"));
}

#[test]
fn matchers_are_whole_names_and_star_is_everything() {
    let set = HookSet::of(vec![
        entry(Event::ToolPost, Some("write_file|edit_file"), "a"),
        entry(Event::ToolPost, Some("*"), "b"),
        entry(Event::StepVerify, Some(r"S1(\..*)?"), "c"),
    ]);
    let names = |event, target: &str| -> Vec<String> {
        set.hooks()
            .iter()
            .filter(|h| h.applies(event, target))
            .map(|h| h.entry.command.clone())
            .collect()
    };
    assert_eq!(names(Event::ToolPost, "write_file"), ["a", "b"]);
    assert_eq!(names(Event::ToolPost, "write_file_x"), ["b"]);
    assert_eq!(names(Event::StepVerify, "S1.2"), ["c"]);
    assert!(names(Event::StepVerify, "S10").is_empty());
    assert!(HookEntry::validate(&[entry(Event::ToolPre, Some("("), "x")]).is_err());
    assert!(HookEntry::validate(&[entry(Event::ToolPre, None, " ")]).is_err());
}

#[test]
fn the_repositorys_hooks_do_not_run_untrusted_and_are_named() {
    let configured = Configured {
        user: vec![entry(Event::StepDone, None, "notify-send done")],
        project: vec![entry(Event::ToolPost, None, "./fmt.sh")],
        project_file: ".tasks/config.yaml".to_owned(),
        project_trusted: false,
    };
    let set = HookSet::resolve(&configured, Path::new("/w"));
    assert_eq!(set.hooks().len(), 1);
    assert_eq!(set.hooks()[0].origin, Origin::User);
    let warning = set.ignored_warning().unwrap();
    assert!(warning.contains("tool.post `./fmt.sh`"), "{warning}");
    assert!(warning.contains("`tick trust`"), "{warning}");
    // Trusted (`tick trust`): the repository's hooks run after the person's, none ignored.
    let trusted = Configured {
        project_trusted: true,
        ..configured
    };
    let set = HookSet::resolve(&trusted, Path::new("/w"));
    let origins: Vec<Origin> = set.hooks().iter().map(|h| h.origin).collect();
    assert_eq!(origins, [Origin::User, Origin::Project]);
    assert!(set.ignored_warning().is_none());
}

#[test]
fn a_command_that_cannot_run_is_found_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("fmt.sh"), "#!/bin/sh\n").unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let problem = |c: &str| exec::command_problem(c, root, Some(&path));
    assert!(problem("./fmt.sh").unwrap().contains("not executable"));
    assert!(problem("./nope.sh").unwrap().contains("does not exist"));
    assert!(
        problem("tick-no-such-program --x")
            .unwrap()
            .contains("`PATH`")
    );
    assert_eq!(problem("FOO=1 sh -c true"), None);
    assert_eq!(problem("echo hi >&2; exit 2"), None);
    assert_eq!(problem("\"$CLAUDE_PROJECT_DIR\"/x.sh"), None);
}

#[test]
fn the_payload_has_claude_codes_fields_and_ticks() {
    let mut payload = Payload {
        cwd: "/w".to_owned(),
        task_id: "t".to_owned(),
        session_id: "t".to_owned(),
        phase: "running".to_owned(),
        step_id: Some("S1".to_owned()),
        tool_name: Some("write_file".to_owned()),
        tool_input: Some(Payload::tool_input(
            &serde_json::json!({"path": "a.py", "content": "x"}),
        )),
        ..Payload::default()
    };
    payload.format = PAYLOAD_FORMAT;
    let value = serde_json::to_value(&payload).unwrap();
    assert_eq!(value["tool_input"]["file_path"], "a.py");
    assert_eq!(value["format"], 1);
    assert!(value.get("tool_response").is_none());
}

#[test]
fn an_approval_difference_names_added_removed_and_changed_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("fmt.sh"), "one\n").unwrap();
    let set = HookSet::of(vec![entry(Event::ToolPost, None, "bash ./fmt.sh")]);
    let approved = approval::record(&set, root);
    assert_eq!(approved[0].scripts.len(), 1);
    assert!(approval::difference(&approved, &approved).is_empty());
    std::fs::write(root.join("fmt.sh"), "two\n").unwrap();
    let now = approval::record(&set, root);
    assert_eq!(
        approval::difference(&approved, &now),
        ["~ tool.post `bash ./fmt.sh` (changed: `fmt.sh`)"]
    );
    let added = HookSet::of(vec![
        entry(Event::ToolPost, None, "bash ./fmt.sh"),
        entry(Event::ToolPre, Some("bash"), "guard"),
    ]);
    let diff = approval::difference(&now, &approval::record(&added, root));
    assert_eq!(diff, ["+ tool.pre (matcher `bash`) `guard` (added)"]);
    assert_eq!(
        approval::difference(&now, &[]),
        ["- tool.post `bash ./fmt.sh` (removed)"]
    );
}

#[test]
fn the_config_keeps_each_files_hooks_and_names_a_bad_one_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.yaml");
    std::fs::write(
        &user,
        "hooks:\n  - event: tool.post\n    matcher: write_file\n    command: ./fmt.sh\n",
    )
    .unwrap();
    let project = dir.path().join("config.yaml");
    std::fs::write(
        &project,
        "hooks:\n  - event: step.done\n    command: notify\n",
    )
    .unwrap();
    let vars = std::iter::once(("TICK_CONFIG".to_owned(), user.display().to_string())).collect();
    let env = crate::env::Env::fixed(dir.path().to_path_buf(), vars, chrono::DateTime::UNIX_EPOCH);
    let flags = crate::config::Flags::default();
    let resolve = || {
        crate::config::resolve(
            &project,
            ".tasks/config.yaml",
            &crate::trust::TrustState::Untrusted,
            &env,
            &flags,
        )
    };
    let config = resolve().unwrap();
    assert_eq!(config.hooks.user[0].command, "./fmt.sh");
    assert_eq!(config.hooks.project[0].event, Event::StepDone);
    assert_eq!(config.hooks.project_file, ".tasks/config.yaml");

    std::fs::write(&project, "hooks:\n  - event: tool.later\n    command: x\n").unwrap();
    let err = resolve().unwrap_err();
    assert!(
        err.message.starts_with("`.tasks/config.yaml:2:"),
        "{}",
        err.message
    );
    assert!(err.message.contains("tool.later"), "{}", err.message);
    std::fs::write(
        &project,
        "hooks:\n  - event: tool.pre\n    matcher: '('\n    command: x\n",
    )
    .unwrap();
    let err = resolve().unwrap_err();
    assert!(
        err.message.contains("is not a regular expression"),
        "{}",
        err.message
    );
}

#[test]
fn docs_hooks_md_has_every_event_in_its_table_with_a_payload_example() {
    let docs = include_str!("../../docs/hooks.md");
    for event in Event::ALL {
        let name = event.as_str();
        assert!(
            docs.contains(&format!("| `{name}` |")),
            "`{name}` is not in the events table of docs/hooks.md"
        );
        let wanted = format!("\"hook_event_name\":\"{name}\"");
        let example = docs
            .lines()
            .find(|line| line.contains(&wanted))
            .unwrap_or_else(|| panic!("docs/hooks.md has no payload example for `{name}`"));
        let example: serde_json::Value = serde_json::from_str(example).unwrap();
        assert_eq!(example["format"], PAYLOAD_FORMAT, "{name}");
        // Its keys are the payload's own.
        let payload = serde_json::to_value(Payload {
            step_id: Some(String::new()),
            ..Payload::default()
        })
        .unwrap();
        for key in example.as_object().unwrap().keys() {
            let known = payload.get(key).is_some()
                || [
                    "transcript_path",
                    "step_title",
                    "files",
                    "verify",
                    "evidence",
                    "tool_name",
                    "tool_input",
                    "tool_response",
                    "plan",
                    "reason",
                ]
                .contains(&key.as_str());
            assert!(
                known,
                "`{key}` of the `{name}` example is not a payload field"
            );
        }
    }
}
