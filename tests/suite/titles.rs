//! A title is never trusted as a path: whatever a plan calls itself, its task folder is a safe
//! name inside `.tasks/`.

use std::fs;

use crate::common::text::assert_contains;
use crate::common::workspace::Workspace;

fn plan_titled(title: &str) -> String {
    // A YAML double-quoted scalar: the title arrives exactly as written.
    let quoted = serde_json::to_string(title).unwrap();
    format!("---\ntitle: {quoted}\n---\n# Heading\n\n## Steps\n\n- [ ] S1 Do it\n")
}

/// `YYYYMMDD-HHMMSS-slug`, the slug at most 60 characters of `a-z0-9-`, plus an optional
/// clash suffix.
fn assert_safe(id: &str) {
    let (stamp, slug) = id.split_at(16);
    assert!(
        stamp.len() == 16
            && stamp[..8].bytes().all(|b| b.is_ascii_digit())
            && &stamp[8..9] == "-"
            && stamp[9..15].bytes().all(|b| b.is_ascii_digit())
            && &stamp[15..] == "-",
        "{id}"
    );
    let slug = slug.trim_end_matches(|c: char| c.is_ascii_digit());
    let slug = slug.strip_suffix('-').unwrap_or(slug);
    assert!(!slug.is_empty() && slug.len() <= 60, "slug of {id}");
    assert!(
        id[16..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "{id}"
    );
    assert!(!id.ends_with('-') && !id.contains("--"), "{id}");
}

#[test]
fn hostile_titles_give_safe_folders_inside_tasks() {
    let ws = Workspace::new();
    // Every approval in the same second, so the ids differ by their titles alone.
    ws.pin_clock();
    let long = "Refactor ".repeat(34); // 306 characters
    let long_word = "x".repeat(300);
    let cases: [(&str, Option<&str>); 8] = [
        ("../../x", Some("x")),
        ("/etc", Some("etc")),
        ("..", Some("plan")),
        ("🚀🔥", None),
        ("重构登录模块", Some("zhong-gou-deng-lu-mo-kuai")),
        (&long, None),
        (&long_word, None),
        ("a/b\\c:d*e?f\"g<h>i|j\u{0}k", Some("a-b-c-d-e-f-g-h-i-j-k")),
    ];
    let mut seen = Vec::new();
    for (title, want) in cases {
        let id = ws.approve(&plan_titled(title));
        assert_safe(&id);
        if let Some(want) = want {
            assert_eq!(id, format!("20261130-143012-{want}"), "{title:?}");
        }
        // The task keeps its real title; only the folder name is cleaned.
        let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
        assert!(plan.contains(&format!("\nid: {id}\n")), "{plan}");
        let status: serde_json::Value =
            serde_json::from_str(&ws.ok(&["status", &id, "--json"]).stdout).unwrap();
        // ...with its whitespace folded to single spaces: a title is one line.
        let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(status["task"]["title"], one_line, "{title:?}");
        seen.push(id);
    }
    // "refactor-" seven times would pass 60; the cut falls between words.
    assert_eq!(
        seen[5],
        format!("20261130-143012-{}", ["refactor"; 6].join("-"))
    );
    assert!(seen[5].ends_with("refactor"), "cut at a word: {}", seen[5]);
    assert_eq!(seen[6].len() - 16, 60, "{}", seen[6]);

    // Nothing was written outside `.tasks/`: the repository and its parent hold what they did.
    let mut top: Vec<String> = fs::read_dir(ws.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    top.sort();
    assert_eq!(top, [".git", ".tasks", "README.md"]);
    let mut parent: Vec<String> = fs::read_dir(ws.temp())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    parent.sort();
    assert_eq!(parent, ["home", "repo"]);
    let mut tasks = ws.task_ids();
    tasks.sort();
    let mut seen_sorted = seen.clone();
    seen_sorted.sort();
    assert_eq!(tasks, seen_sorted);
}

#[test]
fn an_empty_title_falls_back_to_the_heading_and_no_title_is_refused() {
    let ws = Workspace::new();
    // Every approval in the same second, so the ids differ by their titles alone.
    ws.pin_clock();
    for front in ["title: ''", "title:", "title: \"   \""] {
        let plan = format!("---\n{front}\n---\n# From the heading\n\n## Steps\n- [ ] S1 one\n");
        let id = ws.approve(&plan);
        assert!(
            id.starts_with("20261130-143012-from-the-heading"),
            "{front}: {id}"
        );
        let plan_md = ws.read(&format!(".tasks/{id}/PLAN.md"));
        assert!(plan_md.contains("\ntitle: From the heading\n"), "{plan_md}");
    }
    for plan in [
        "---\ntitle: ''\n---\n\n## Steps\n- [ ] S1 one\n",
        "## Steps\n- [ ] S1 one\n",
        "---\ngoal: no title anywhere\n---\nSome prose.\n\n## Steps\n- [ ] S1 one\n",
    ] {
        let run = ws.run_stdin(&["plan", "--from", "-"], plan);
        assert_eq!(run.code, 2, "{plan:?}: {run:#?}");
        assert_contains(&run.stderr, "error: `<stdin>:1:1`: the plan has no title");
        assert!(!ws.exists(".tasks/draft/PLAN.md"));
    }
}

#[test]
fn approvals_in_the_same_second_with_the_same_title_count_up() {
    let ws = Workspace::new();
    ws.pin_clock();
    let plan = plan_titled("Same title");
    let ids: Vec<String> = (0..3).map(|_| ws.approve(&plan)).collect();
    assert_eq!(
        ids,
        [
            "20261130-143012-same-title",
            "20261130-143012-same-title-2",
            "20261130-143012-same-title-3",
        ]
    );
    // Titles that slug alike clash too.
    let alike = ws.approve(&plan_titled("SAME   title!"));
    assert_eq!(alike, "20261130-143012-same-title-4");
    for id in &ids {
        assert_safe(id);
        assert!(ws.exists(&format!(".tasks/{id}/TODO.md")));
    }
}

/// A title with a newline must not write markdown of its own into TODO.md (a smuggled step).
#[test]
fn a_multi_line_title_cannot_add_steps() {
    let ws = Workspace::new();
    let id = ws.approve("---\ntitle: \"Evil\\n- [ ] S9 injected\"\n---\n## Steps\n- [ ] S1 real\n");
    let todo = ws.todo(&id);
    assert!(
        todo.starts_with("# TODO: Evil - [ ] S9 injected\n"),
        "{todo}"
    );
    assert!(!todo.contains("\n- [ ] S9"), "{todo}");
    let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
    assert!(plan.contains("title: Evil - [ ] S9 injected\n"), "{plan}");
}
