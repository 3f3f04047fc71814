//! `tick config list|get|set`: each setting's value and source, and a write that only a file
//! tick can load ever reaches.

use crate::common::workspace::{Workspace, filters};

/// One command of a session: its arguments and the variables it runs with.
type Step<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);

fn session(ws: &Workspace, steps: &[Step<'_>]) -> String {
    let mut out = String::new();
    for (args, vars) in steps {
        let run = ws.run_with(args, |cmd| {
            for (name, value) in *vars {
                cmd.env(name, value);
            }
        });
        out.push_str(&run.shown(args));
    }
    out
}

#[test]
fn config_list_get_and_set_name_each_value_and_where_it_came_from() {
    let ws = Workspace::new();
    ws.write(
        ".tasks/config.yaml",
        "# the team's settings\nlimits:\n  # a short leash\n  max_turns: 12\n",
    );
    let text = session(
        &ws,
        &[
            (&["config", "set", "model", "qwen2.5-coder", "--user"], &[]),
            (&["config", "set", "limits.max_retries", "2", "--repo"], &[]),
            (&["config", "set", "tool_calls", "text", "--repo"], &[]),
            (&["config", "list"], &[("TICK_PLANNER", "compact")]),
            (&["config", "get", "model"], &[("TICK_MODEL", "other")]),
            (&["config", "get", "limits.max_turns"], &[]),
        ],
    );
    let repo_file = std::fs::read_to_string(ws.path(".tasks/config.yaml")).unwrap();
    let user_file = std::fs::read_to_string(ws.user_config()).unwrap();
    let all = format!("{text}\n--- .tasks/config.yaml\n{repo_file}--- user config\n{user_file}");
    filters(&ws).bind(|| insta::assert_snapshot!("config_list_get_set", all));
}

#[test]
fn config_set_refuses_a_bad_value_or_a_file_that_would_not_load_and_leaves_it_byte_identical() {
    let ws = Workspace::new();
    let repo = "limits:\n  max_turns: 12 # ours\n";
    ws.write(".tasks/config.yaml", repo);
    // A typo already in the person's file: no write may go through until it is fixed.
    let user = "modle: qwen\n";
    ws.write_user_config(user);
    let text = session(
        &ws,
        &[
            (&["config", "set", "tool_calls", "fast", "--repo"], &[]),
            (
                &["config", "set", "limits.max_turns", "many", "--repo"],
                &[],
            ),
            (&["config", "set", "model", "qwen", "--user"], &[]),
            (&["config", "set", "hooks", "x", "--user"], &[]),
            (&["config", "set", "sandbox.network", "true", "--user"], &[]),
            (&["config", "get", "modle"], &[]),
            (&["config", "set", "model", "qwen"], &[]),
        ],
    );
    filters(&ws).bind(|| insta::assert_snapshot!("config_set_refused", text));
    assert_eq!(
        std::fs::read_to_string(ws.path(".tasks/config.yaml")).unwrap(),
        repo
    );
    assert_eq!(std::fs::read_to_string(ws.user_config()).unwrap(), user);
    let left: Vec<_> = std::fs::read_dir(ws.user_config().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["config.yaml"], "no candidate file is left behind");
}

#[test]
fn config_set_and_get_name_the_nearest_key_for_a_typo_before_the_list() {
    let ws = Workspace::new();
    let set = ws.fails(&["config", "set", "modle", "qwen", "--repo"], 2);
    let get = ws.fails(&["config", "get", "limits.max_turn"], 2);
    for (run, near) in [(&set, "model"), (&get, "limits.max_turns")] {
        let hints: Vec<&str> = run
            .stderr
            .lines()
            .filter(|line| line.starts_with("hint: "))
            .collect();
        assert_eq!(
            hints.first().copied(),
            Some(format!("hint: did you mean `{near}`?").as_str()),
            "{}",
            run.stderr
        );
        assert!(
            hints.iter().any(|hint| hint.contains("the settings are")),
            "{}",
            run.stderr
        );
    }
    // A word near no key gets the list alone.
    let far = ws.fails(&["config", "get", "colour"], 2);
    assert!(!far.stderr.contains("did you mean"), "{}", far.stderr);
    assert!(!ws.exists(".tasks/config.yaml"), "nothing was written");
}

/// A setting the repository's file may not decide until it is trusted (`sandbox: off`) is
/// not shown as coming from that file: the source names where the value in force came from,
/// and says the file's is ignored.
#[test]
fn an_ignored_repository_setting_is_not_named_as_the_source() {
    let ws = Workspace::new();
    ws.write(".tasks/config.yaml", "sandbox: off\n");
    let run = ws.run(&["config", "get", "sandbox"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "on\n");
    assert_eq!(
        run.stderr,
        "from default; `.tasks/config.yaml`'s is ignored until `tick trust`\n"
    );
    let run = ws.run(&["config", "list"]);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("sandbox "))
        .unwrap();
    assert!(
        line.ends_with("default; `.tasks/config.yaml`'s is ignored until `tick trust`"),
        "{line}"
    );
    assert!(
        run.stderr.contains("ignored `sandbox: off`"),
        "{}",
        run.stderr
    );
    // Setting one the file may not decide yet says so, with the value in force.
    let run = ws.run(&["config", "set", "limits.max_turns", "60", "--repo"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: `.tasks/config.yaml` is not trusted as it is now, so this takes effect \
             after `tick trust`; until then `limits.max_turns` is `40`, from default"
        ),
        "{}",
        run.stderr
    );
    let run = ws.run(&["trust"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // A change to a trusted file needs trust again, and says so too.
    let run = ws.run(&["config", "set", "limits.max_turns", "61", "--repo"]);
    assert!(
        run.stderr.contains("is `40`, from default"),
        "{}",
        run.stderr
    );
    let run = ws.run(&["trust"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = ws.run(&["config", "get", "sandbox"]);
    assert_eq!(run.stdout, "off\n");
    assert_eq!(run.stderr, "from `.tasks/config.yaml`\n");
}
