use proptest::prelude::*;

use super::*;

const DESIGN_EXAMPLE: &str = "# TODO: Refactor login module

- [x] S1 Find the real login entry point and its callers
  - files: src/routes.ts, src/login.ts
  - verify: `npm test -- login`
  - done when: every caller of `login(` is listed in PLAN.md
- [-] S2 Add a compatibility layer for the old endpoint
  - files: src/compat/**
  - risk: high
- [!] S3 Migrate the session store
  - blocked: the staging database credentials are not in the repository
- [~] S4 Update the login tests
  - stale: src/login.ts changed outside tick at 2026-11-30 14:31 UTC
- [ ] S5 Run the full test suite
  - verify: `npm test`
";

fn ids(checklist: &Checklist) -> Vec<String> {
    checklist
        .all_steps()
        .map(|s| s.id.map_or_else(|| "?".to_owned(), |id| id.to_string()))
        .collect()
}

fn err(src: &str) -> ParseError {
    parse(src).expect_err("should not parse")
}

#[test]
fn parses_the_design_example() {
    let list = parse(DESIGN_EXAMPLE).unwrap();
    assert_eq!(list.heading.as_deref(), Some("TODO: Refactor login module"));
    assert_eq!(ids(&list), ["S1", "S2", "S3", "S4", "S5"]);
    let statuses: Vec<_> = list.steps.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [
            StepStatus::Done,
            StepStatus::InProgress,
            StepStatus::Blocked,
            StepStatus::Stale,
            StepStatus::Pending
        ]
    );
    let s1 = &list.steps[0];
    assert_eq!(s1.title, "Find the real login entry point and its callers");
    assert_eq!(s1.files, ["src/routes.ts", "src/login.ts"]);
    assert_eq!(s1.verify, ["npm test -- login"]);
    assert_eq!(
        s1.done_when.as_deref(),
        Some("every caller of `login(` is listed in PLAN.md")
    );
    assert_eq!(s1.line, 3);
    assert_eq!(list.steps[1].files, ["src/compat/**"]);
    assert_eq!(list.steps[1].risk, Some(Risk::High));
    assert_eq!(
        list.steps[2].blocked.as_deref(),
        Some("the staging database credentials are not in the repository")
    );
    assert!(
        list.steps[3]
            .stale
            .as_deref()
            .unwrap()
            .starts_with("src/login.ts")
    );
}

#[test]
fn checkbox_text_outside_lists_is_not_a_step() {
    let src = "# Notes

```
- [ ] S9 not a step, in a code block
```

> - [ ] S8 not a step, in a quote
> - [?] nor an error

<div>
- [ ] S7 not a step, in HTML
</div>

    - [ ] S6 indented code

- [ ] S1 the only step
- a plain bullet is a note
  - [ ] under a note: not a step
  - [?] nor an error
Paragraph text [ ] with a box.
";
    let list = parse(src).unwrap();
    assert_eq!(ids(&list), ["S1"]);
}

#[test]
fn every_marker_and_upper_case_x() {
    let src = "- [ ] S1 a\n- [x] S2 b\n- [X] S3 c\n- [-] S4 d\n- [!] S5 e\n- [~] S6 f\n";
    let list = parse(src).unwrap();
    let statuses: Vec<_> = list.steps.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [
            StepStatus::Pending,
            StepStatus::Done,
            StepStatus::Done,
            StepStatus::InProgress,
            StepStatus::Blocked,
            StepStatus::Stale
        ]
    );
}

#[test]
fn unknown_markers_are_errors_with_line_and_column() {
    for (src, line, col, marker) in [
        ("- [?] S1 what\n", 1, 3, "[?]"),
        ("# T\n\n- [ ] S1 ok\n- [xx] S2 no\n", 4, 3, "[xx]"),
        ("- [ ] S1 ok\n  - [o] S1.1 no\n", 2, 5, "[o]"),
        ("* []  S1 empty\n", 1, 3, "[]"),
        ("1. [ x] S1 spaced\n", 1, 4, "[ x]"),
        ("- [é] S1 accent\n", 1, 3, "[é]"),
    ] {
        let e = err(src);
        assert_eq!((e.line, e.col), (line, col), "{src:?}: {e}");
        assert_eq!(
            e.message,
            format!("unknown step marker `{marker}`"),
            "{src:?}"
        );
        assert!(e.hint.contains("`[~]`"));
    }
}

#[test]
fn bracketed_words_and_links_are_not_markers() {
    let src = "- [WIP] a note\n- [link](http://x) a note\n- [OK] a note\n- [x]glued a note\n- [ ] S1 step\n";
    assert_eq!(ids(&parse(src).unwrap()), ["S1"]);
}

/// A new user's typo: `- [ ]S2` read as a note dropped S2 from the task without a word.
#[test]
fn a_marker_glued_to_a_step_id_is_an_error_at_the_id() {
    for (src, line, col, marker, id) in [
        ("- [ ] S1 a\n- [ ]S2 b\n", 2, 6, "[ ]", "S2"),
        ("- [x]S1 a\n", 1, 6, "[x]", "S1"),
        ("- [ ] S1 a\n  - [-]S1.1 b\n", 2, 8, "[-]", "S1.1"),
        ("* [~]S3\n", 1, 6, "[~]", "S3"),
    ] {
        let e = err(src);
        assert_eq!((e.line, e.col), (line, col), "{src:?}: {e}");
        assert_eq!(
            e.message,
            format!("the step marker `{marker}` has no space after it"),
            "{src:?}"
        );
        assert_eq!(
            e.hint,
            format!("write `{marker} {id}`: a marker, a space, then the step"),
            "{src:?}"
        );
    }
    // Glued to a word that is no step id, it stays a note, as before.
    for src in [
        "- [x]glued a note\n- [ ] S1 a\n",
        "- [ ]Sx a note\n- [ ] S1 a\n",
    ] {
        assert_eq!(ids(&parse(src).unwrap()), ["S1"], "{src:?}");
    }
}

/// `verfy:` read as a note left the step without its verify: ticked without verification.
#[test]
fn a_misspelt_detail_key_that_matters_is_an_error_with_the_key_it_means() {
    for (line, col, key, known) in [
        ("  - verfy: `cargo test`", 5, "verfy", "verify"),
        ("  - file: a.rs", 5, "file", "files"),
        ("  - Depend: S1", 5, "Depend", "depends"),
        ("  - done-when: it works", 5, "done-when", "done when"),
        ("  -   tool: gh.search", 7, "tool", "tools"),
    ] {
        let src = format!("- [ ] S1 a\n{line}\n");
        let e = err(&src);
        assert_eq!((e.line, e.col), (2, col), "{src:?}: {e}");
        assert_eq!(
            e.message,
            format!("unknown detail `{key}:`: did you mean `{known}:`?"),
            "{src:?}"
        );
        assert!(e.hint.starts_with(&format!("write `{known}:`")), "{src:?}");
    }
    // Notes that only look like details stay notes: other words, and near-misses of keys
    // whose loss changes nothing tick checks.
    for note in [
        "note: keep it short",
        "risks: the login may break",
        "see: #12",
        "why: speed",
    ] {
        let src = format!("- [ ] S1 a\n  - {note}\n");
        let list = parse(&src).unwrap();
        assert_eq!(list.steps[0].notes, [note], "{src:?}");
    }
}

#[test]
fn duplicate_ids_are_errors() {
    let e = err("- [ ] S1 a\n- [ ] S2 b\n- [x] S1 c\n");
    assert_eq!((e.line, e.col), (3, 7));
    assert!(
        e.message
            .contains("duplicate step id `S1` (also on line 1)"),
        "{e}"
    );
}

#[test]
fn id_levels_are_checked() {
    assert!(
        err("- [ ] S1.1 a\n")
            .message
            .contains("sub-step id on a top-level step")
    );
    assert!(
        err("- [ ] S1 a\n  - [ ] S2 b\n")
            .message
            .contains("step id on a sub-step")
    );
    assert!(
        err("- [ ] S1 a\n  - [ ] S2.1 b\n")
            .message
            .contains("is under `S1`")
    );
    assert!(
        err("- [ ] S1 a\n  - [ ] S1.1 b\n    - [ ] c\n")
            .message
            .contains("nested under a sub-step")
    );
}

#[test]
fn steps_need_titles() {
    let e = err("- [ ] S1\n");
    assert!(e.message.contains("without a title"), "{e}");
    assert!(err("- [ ]\n").message.contains("without a title"));
}

#[test]
fn bad_details_are_errors() {
    let e = err("- [ ] S1 a\n  - risk: extreme\n");
    assert_eq!((e.line, e.col), (2, 11));
    assert!(e.message.contains("`extreme` is not a risk level"));
    let e = err("- [ ] S1 a\n  - depends: S9\n");
    assert!(e.message.contains("depends on `S9`"), "{e}");
    let e = err("- [ ] S1 a\n  - depends: first\n");
    assert!(e.message.contains("not a step id"), "{e}");
}

#[test]
fn sub_steps_and_details() {
    let src = "- [ ] S1 parent
  - files: a.rs
  - [x] S1.1 first child
    - verify: `cargo test a`, `cargo test b`
    - note for the child
  - [ ] second child without id
- [ ] S2 other
  - depends: S1
  - some note: with a colon
";
    let list = parse(src).unwrap();
    assert_eq!(ids(&list), ["S1", "S1.1", "?", "S2"]);
    let s1 = &list.steps[0];
    assert_eq!(s1.files, ["a.rs"]);
    assert_eq!(s1.substeps[0].verify, ["cargo test a", "cargo test b"]);
    assert_eq!(s1.substeps[0].notes, ["note for the child"]);
    assert_eq!(list.steps[1].depends, [StepId::top(1)]);
    assert_eq!(list.steps[1].notes, ["some note: with a colon"]);
    assert_eq!(s1.effective_status(), StepStatus::Pending);
}

#[test]
fn verify_without_backticks_is_one_command() {
    let list = parse("- [ ] S1 a\n  - verify: cargo test -p x\n").unwrap();
    assert_eq!(list.steps[0].verify, ["cargo test -p x"]);
}

#[test]
fn parent_is_done_when_all_sub_steps_are() {
    let list = parse("- [ ] S1 p\n  - [x] S1.1 a\n  - [X] S1.2 b\n").unwrap();
    assert_eq!(list.steps[0].effective_status(), StepStatus::Done);
}

#[test]
fn a_parent_with_its_own_verify_is_not_done_by_its_sub_steps() {
    let src = "- [ ] S1 p\n  - verify: `test -f p`\n  - [x] S1.1 a\n  - [x] S1.2 b\n";
    let list = parse(src).unwrap();
    let parent = &list.steps[0];
    assert!(parent.checks_itself() && parent.awaits_its_check());
    assert_eq!(parent.effective_status(), StepStatus::Pending);
    // Its sub-steps do not tick it, and its own tick is kept while they are done.
    assert_eq!(settle_parent(src, StepId::top(1)).unwrap(), src);
    let ticked = src.replacen("- [ ] S1", "- [x] S1", 1);
    assert_eq!(settle_parent(&ticked, StepId::top(1)).unwrap(), ticked);
    assert!(!parse(&ticked).unwrap().steps[0].awaits_its_check());
    // One reopened sub-step unticks it, as any parent.
    let reopened = ticked.replacen("- [x] S1.2", "- [ ] S1.2", 1);
    assert_eq!(
        settle_parent(&reopened, StepId::top(1)).unwrap(),
        reopened.replacen("- [x] S1 p", "- [ ] S1 p", 1)
    );
    // Without a verify of its own, its sub-steps are its check.
    let plain = "- [ ] S1 p\n  - [x] S1.1 a\n";
    assert!(!parse(plain).unwrap().steps[0].awaits_its_check());
    assert_eq!(
        settle_parent(plain, StepId::top(1)).unwrap(),
        plain.replacen("- [ ] S1", "- [x] S1", 1)
    );
}

#[test]
fn a_verify_with_an_unclosed_backtick_is_an_error_at_its_value() {
    let err = parse("- [ ] S1 a\n  - verify: `cargo test\n").unwrap_err();
    assert_eq!((err.line, err.col), (2, 13));
    assert!(
        err.message.contains("opens a backtick that nothing closes"),
        "{}",
        err.message
    );
    // After a closed one too.
    let err = parse("- [ ] S1 a\n  - verify: `true` `false\n").unwrap_err();
    assert!(
        err.message.contains("opens a backtick that nothing closes"),
        "{}",
        err.message
    );
    // Closed ones (a double-backtick span holding one), and a command in plain words, are
    // commands.
    let list = parse("- [ ] S1 a\n  - verify: `` echo `x` ``\n").unwrap();
    assert_eq!(list.steps[0].verify, ["echo `x`"]);
    let list =
        parse("- [ ] S1 a\n  - verify: `a`, `b`\n- [ ] S2 b\n  - verify: make check\n").unwrap();
    assert_eq!(list.steps[0].verify, ["a", "b"]);
    assert_eq!(list.steps[1].verify, ["make check"]);
}

#[test]
fn a_dependency_cycle_is_an_error_at_its_first_step() {
    for (src, line, message) in [
        (
            "- [ ] S1 a\n  - depends: S2\n- [ ] S2 b\n  - depends: S1\n",
            1,
            "step `S1` waits on itself: `S1` waits on `S2` waits on `S1`, so no order can run it",
        ),
        (
            "- [ ] S1 a\n- [ ] S2 b\n  - depends: S2\n",
            2,
            "step `S2` waits on itself: `S2` waits on `S2`, so no order can run it",
        ),
        (
            "- [ ] S1 a\n  - [ ] S1.1 x\n    - depends: S1\n",
            1,
            "step `S1` waits on itself: `S1` waits on `S1.1` waits on `S1` (a parent is done",
        ),
        (
            "- [ ] S1 a\n  - depends: S1.1\n  - [ ] S1.1 x\n",
            3,
            "step `S1.1` waits on itself: `S1.1` waits on `S1.1` (a parent is done",
        ),
        (
            "- [ ] S1 a\n  - depends: S3\n- [ ] S2 b\n  - depends: S1\n- [ ] S3 c\n  - depends: S2\n",
            1,
            "`S1` waits on `S3` waits on `S2` waits on `S1`",
        ),
    ] {
        let err = parse(src).unwrap_err();
        assert_eq!(err.line, line, "{src}");
        assert!(err.message.contains(message), "{src}: {}", err.message);
    }
    // Chains and shared dependencies are no cycle, however long.
    assert!(parse("- [ ] S1 a\n- [ ] S2 b\n  - depends: S1\n  - [ ] S2.1 x\n    - depends: S1\n- [ ] S3 c\n  - depends: S2.1, S1\n").is_ok());
    let mut chain = String::from("- [ ] S1 a\n");
    for n in 2..=10_000 {
        chain.push_str(&format!("- [ ] S{n} s\n  - depends: S{}\n", n - 1));
    }
    assert!(parse(&chain).is_ok());
    chain.push_str("- [ ] S10001 s\n  - depends: S10001\n");
    assert!(parse(&chain).is_err());
}

#[test]
fn region_limits_steps() {
    let src = "## Risks\n- [?] a risk list that is not steps\n## Steps\n- [ ] S1 one\n## Verification\n- [ ] not a step\n";
    let start = src.find("## Steps").unwrap();
    let end = src.find("## Verification").unwrap();
    let list = parse_region(src, start..end).unwrap();
    assert_eq!(ids(&list), ["S1"]);
}

#[test]
fn set_status_rewrites_only_the_marker() {
    let list = parse(DESIGN_EXAMPLE).unwrap();
    let out = edit_step(
        DESIGN_EXAMPLE,
        &list,
        StepId::top(5),
        &StepEdit {
            status: Some(StepStatus::Done),
            ..StepEdit::default()
        },
    )
    .unwrap();
    assert_eq!(out, DESIGN_EXAMPLE.replace("- [ ] S5", "- [x] S5"));
}

#[test]
fn blocking_adds_a_reason_line_and_unblocking_removes_it() {
    let src = "# T\n\n- [ ] S1 one\n  - files: a.rs\n- [ ] S2 two\n";
    let list = parse(src).unwrap();
    let blocked = edit_step(
        src,
        &list,
        StepId::top(1),
        &StepEdit::status(StepStatus::Blocked, Some("needs the\nDB password")),
    )
    .unwrap();
    assert_eq!(
        blocked,
        "# T\n\n- [!] S1 one\n  - files: a.rs\n  - blocked: needs the DB password\n- [ ] S2 two\n"
    );
    let list = parse(&blocked).unwrap();
    assert_eq!(
        list.steps[0].blocked.as_deref(),
        Some("needs the DB password")
    );
    let reblocked = edit_step(
        &blocked,
        &list,
        StepId::top(1),
        &StepEdit::status(StepStatus::Blocked, Some("other reason")),
    )
    .unwrap();
    assert_eq!(
        reblocked,
        blocked.replace("needs the DB password", "other reason")
    );
    let back = edit_step(
        &blocked,
        &list,
        StepId::top(1),
        &StepEdit::status(StepStatus::Pending, None),
    )
    .unwrap();
    assert_eq!(back, src);
}

#[test]
fn an_answer_lifts_a_block_and_stays_through_later_status_changes() {
    let blocked = "# T\n\n- [!] S1 one\n  - files: a.rs\n  - blocked: which DB?\n- [ ] S2 two\n";
    let list = parse(blocked).unwrap();
    let mut edit = StepEdit::status(StepStatus::Pending, None);
    edit.set
        .push((RunnerKey::Answer, "the staging\none".to_owned()));
    let answered = edit_step(blocked, &list, StepId::top(1), &edit).unwrap();
    assert_eq!(
        answered,
        "# T\n\n- [ ] S1 one\n  - files: a.rs\n  - answer: the staging one\n- [ ] S2 two\n"
    );
    let list = parse(&answered).unwrap();
    assert_eq!(list.steps[0].answer.as_deref(), Some("the staging one"));
    assert_eq!(list.steps[0].blocked, None);
    assert!(list.steps[0].notes.is_empty(), "an answer is not a note");
    // Work on the step, blocking it again, finishing it: the answer stays.
    for status in [
        StepStatus::InProgress,
        StepStatus::Blocked,
        StepStatus::Done,
    ] {
        let edited = edit_step(
            &answered,
            &list,
            StepId::top(1),
            &StepEdit::status(status, Some("again")),
        )
        .unwrap();
        assert!(edited.contains("  - answer: the staging one\n"), "{edited}");
    }
    // A second answer replaces the first in place.
    let mut again = StepEdit::status(StepStatus::Pending, None);
    again.set.push((RunnerKey::Answer, "production".to_owned()));
    let replaced = edit_step(&answered, &list, StepId::top(1), &again).unwrap();
    assert_eq!(replaced, answered.replace("the staging one", "production"));
}

#[test]
fn reason_lines_follow_indentation_line_endings_and_eof() {
    let cases = [
        ("- [ ] S1 a", "- [!] S1 a\n  - blocked: r"),
        (
            "- [ ] S1 a\r\n- [ ] S2 b\r\n",
            "- [!] S1 a\r\n  - blocked: r\r\n- [ ] S2 b\r\n",
        ),
        ("1. [ ] S1 a\n", "1. [!] S1 a\n   - blocked: r\n"),
        ("  - [ ] S1 a\n", "  - [!] S1 a\n    - blocked: r\n"),
        (
            "- [ ] S1 a\n    * files: x\n",
            "- [!] S1 a\n    * files: x\n    * blocked: r\n",
        ),
        (
            "- [ ] S1 a\n  - [ ] S1.1 b\n",
            "- [!] S1 a\n  - blocked: r\n  - [ ] S1.1 b\n",
        ),
        (
            "- [ ] S1 a\n  - [ ] S1.1 b\n",
            "- [!] S1 a\n  - blocked: r\n  - [ ] S1.1 b\n",
        ),
    ];
    for (src, want) in cases {
        let list = parse(src).unwrap();
        let out = edit_step(
            src,
            &list,
            StepId::top(1),
            &StepEdit::status(StepStatus::Blocked, Some("r")),
        )
        .unwrap();
        assert_eq!(out, want, "{src:?}");
        let reparsed = parse(&out).unwrap();
        assert_eq!(reparsed.steps[0].blocked.as_deref(), Some("r"), "{out:?}");
    }
}

#[test]
fn sub_step_reason_lines() {
    let src = "- [ ] S1 a\n  - [ ] S1.1 b\n  - [ ] S1.2 c\n";
    let list = parse(src).unwrap();
    let out = edit_step(
        src,
        &list,
        StepId::sub(1, 1),
        &StepEdit::status(StepStatus::Blocked, Some("r")),
    )
    .unwrap();
    assert_eq!(
        out,
        "- [ ] S1 a\n  - [!] S1.1 b\n    - blocked: r\n  - [ ] S1.2 c\n"
    );
    assert_eq!(
        parse(&out).unwrap().steps[0].substeps[0].blocked.as_deref(),
        Some("r")
    );
}

#[test]
fn crlf_bom_tabs_and_trailing_spaces_survive() {
    let src = "\u{feff}# TODO: x  \r\n\r\n- [ ] S1 a\t \r\n  - files: a.rs  \r\n- [ ] S2 b\r\n";
    let list = parse(src).unwrap();
    assert_eq!(ids(&list), ["S1", "S2"]);
    assert_eq!(list.steps[0].title, "a");
    let out = edit_step(
        src,
        &list,
        StepId::top(2),
        &StepEdit::status(StepStatus::Done, None),
    )
    .unwrap();
    assert_eq!(out, src.replace("- [ ] S2", "- [x] S2"));
}

#[test]
fn new_steps_get_the_next_free_ids() {
    let src = "- [x] S1 a\n- [ ] added by hand\n- [ ] S5 b\n  - [ ] child\n  - [ ] S5.2 c\n- [ ]   another\n  - [ ] its child\n";
    let list = parse(src).unwrap();
    assert!(list.needs_ids());
    let (out, assigned) = assign_ids(src, &list);
    assert_eq!(
        out,
        "- [x] S1 a\n- [ ] S6 added by hand\n- [ ] S5 b\n  - [ ] S5.3 child\n  - [ ] S5.2 c\n- [ ]   S7 another\n  - [ ] S7.1 its child\n"
    );
    let names: Vec<_> = assigned.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["S6", "S5.3", "S7", "S7.1"]);
    assert!(!parse(&out).unwrap().needs_ids());
}

#[test]
fn error_columns_count_characters() {
    let e = err("- [ ] S1 日本\n  - risk: 高い\n");
    assert_eq!((e.line, e.col), (2, 11));
}

// ---- property tests: edits never touch bytes they do not own ----

fn line_strategy() -> impl Strategy<Value = String> {
    let marker = prop::sample::select(vec![' ', 'x', 'X', '-', '!', '~']);
    let word = prop::sample::select(vec![
        "fix",
        "the",
        "日本語",
        "🚀",
        "a_b",
        "*em*",
        "`code`",
        "[link](u)",
        "x  y",
        "tab\there",
        "ñ",
    ]);
    let title = prop::collection::vec(word, 1..4).prop_map(|w| w.join(" "));
    let trailing = prop::sample::select(vec!["", " ", "  ", "\t"]);
    let indent = prop::sample::select(vec!["", " ", "\t"]);
    prop_oneof![
        (
            indent.clone(),
            marker.clone(),
            title.clone(),
            trailing.clone()
        )
            .prop_map(|(i, m, t, tr)| format!("{i}- [{m}] {t}{tr}")),
        (marker.clone(), title.clone()).prop_map(|(m, t)| format!("  - [{m}] {t}")),
        title.clone().prop_map(|t| format!("  - files: {t}")),
        title.clone().prop_map(|t| format!("  - note {t}")),
        title.clone().prop_map(|t| format!("  - blocked: {t}")),
        title.clone().prop_map(|t| format!("# {t}")),
        title.clone().prop_map(|t| format!("prose {t}")),
        Just(String::new()),
        Just("```\n- [ ] S99 in code\n```".to_owned()),
        (marker, title).prop_map(|(m, t)| format!("> - [{m}] {t}")),
    ]
}

fn doc_strategy() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(line_strategy(), 1..14),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, bom, final_newline)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut doc = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            doc.push_str(&lines.join(eol));
            if final_newline {
                doc.push_str(eol);
            }
            doc
        })
}

/// A generated document that parses, with ids given to every step (tick's first write would
/// do the same); `None` when it does not parse.
fn parsed_with_ids(doc: String) -> Option<(String, Checklist)> {
    let list = parse(&doc).ok()?;
    if !list.needs_ids() {
        return Some((doc, list));
    }
    let (with_ids, _) = assign_ids(&doc, &list);
    let list = parse(&with_ids).expect("assigning ids keeps the file parseable");
    Some((with_ids, list))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    /// Changing a status changes the marker byte and nothing else.
    #[test]
    fn status_change_touches_only_the_marker(doc in doc_strategy(), pick in any::<prop::sample::Index>(), to in 0usize..5) {
        let Some((doc, list)) = parsed_with_ids(doc) else { return Ok(()) };
        let steps: Vec<_> = list.all_steps().collect();
        prop_assume!(!steps.is_empty());
        let step = steps[pick.index(steps.len())];
        let status = StepStatus::ALL[to];
        let edit = StepEdit { status: Some(status), ..StepEdit::default() };
        let out = edit_step(&doc, &list, step.id.unwrap(), &edit).unwrap();
        prop_assert_eq!(out.len(), doc.len());
        let diffs: Vec<usize> = doc.bytes().zip(out.bytes()).enumerate()
            .filter(|(_, (a, b))| a != b).map(|(i, _)| i).collect();
        prop_assert!(diffs.len() <= 1, "{:?}", diffs);
        if let Some(&at) = diffs.first() {
            prop_assert_eq!(at, step.span.marker);
        }
        let reparsed = parse(&out).unwrap();
        let after = reparsed.find(step.id.unwrap()).unwrap();
        prop_assert_eq!(after.status, status);
        prop_assert_eq!(&after.title, &step.title);
    }

    /// Blocking with a reason and unblocking again gives back the file it started from, and
    /// the reason line parses as the step's.
    #[test]
    fn block_then_unblock_round_trips(doc in doc_strategy(), pick in any::<prop::sample::Index>()) {
        let Some((doc, list)) = parsed_with_ids(doc) else { return Ok(()) };
        let steps: Vec<_> = list.all_steps()
            .filter(|s| s.blocked.is_none() && s.stale.is_none() && s.evidence.is_none())
            .filter(|s| !matches!(s.status, StepStatus::Blocked | StepStatus::Stale))
            .collect();
        prop_assume!(!steps.is_empty());
        let step = steps[pick.index(steps.len())];
        let id = step.id.unwrap();
        let original = step.status;
        let blocked = edit_step(&doc, &list, id, &StepEdit::status(StepStatus::Blocked, Some("why"))).unwrap();
        let list2 = parse(&blocked).unwrap();
        prop_assert_eq!(list2.all_steps().count(), list.all_steps().count());
        let b = list2.find(id).unwrap();
        prop_assert_eq!(b.blocked.as_deref(), Some("why"));
        prop_assert_eq!(b.status, StepStatus::Blocked);
        let back = edit_step(&blocked, &list2, id, &StepEdit::status(original, None)).unwrap();
        // `[X]` comes back as `[x]`: the one byte a round trip through another status may
        // normalise.
        let mut want = doc.clone();
        if original == StepStatus::Done {
            want.replace_range(step.span.marker..=step.span.marker, "x");
        }
        prop_assert_eq!(back, want);
    }

    /// The heading found during the checklist's parse is the one a parse of its own finds,
    /// and the one the old two-parse code found.
    #[test]
    fn heading_found_in_the_same_parse(doc in doc_strategy(), heading in prop::sample::select(vec![
        "", "# Title\n", "#  Two  words \n", "> # Quoted\n", "Setext\n===\n", "## Second\n# `code` h1\n",
    ])) {
        let doc = format!("{heading}{doc}");
        let Ok(list) = parse(&doc) else { return Ok(()) };
        prop_assert_eq!(&list.heading, &first_heading(&doc));
        prop_assert_eq!(&list.heading, &first_heading_two_parses(&doc));
    }

    /// The fast path of `collapse_whitespace` says what splitting and joining says.
    #[test]
    fn collapse_whitespace_is_split_and_join(parts in prop::collection::vec(prop::sample::select(vec![
        "a", "日本", " ", "  ", "\t", "\n", "\r\n", "\u{a0}", "\u{3000}", "x_y", "", "\u{b}", "\u{c}", "\u{1f}", "\u{85}",
    ]), 0..8)) {
        let text = parts.concat();
        prop_assert_eq!(collapse_whitespace(&text), text.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    /// The quicker trims trim what `str::trim_start` and `str::trim_end` trim.
    #[test]
    fn quick_trims_are_the_trims(parts in prop::collection::vec(prop::sample::select(vec![
        "a", "日本", " ", "\t", "\u{b}", "\u{c}", "\r\n", "\u{a0}", "\u{3000}", "\u{85}", "x:y", "",
    ]), 0..8)) {
        let text = parts.concat();
        prop_assert_eq!(trim_start_ws(&text), text.trim_start());
        prop_assert_eq!(trim_end_ws(&text), text.trim_end());
    }

    /// Splitting a collapsed list on bytes says what the splitting on characters said.
    #[test]
    fn split_list_is_split_and_trim(parts in prop::collection::vec(prop::sample::select(vec![
        "a", "日本", " ", "  ", ",", "`", "``", "\t", "\u{a0}", "x.rs", "",
    ]), 0..10)) {
        let text = parts.concat();
        let reference: Vec<String> = collapse_whitespace(&text)
            .split(',')
            .map(|part| part.trim().trim_matches('`').trim().to_owned())
            .filter(|part| !part.is_empty())
            .collect();
        prop_assert_eq!(split_list(&collapsed(&text)), reference);
    }

    /// Assigning ids inserts only id tokens: removing them gives back the original.
    #[test]
    fn assigning_ids_only_inserts_tokens(doc in doc_strategy()) {
        let Ok(list) = parse(&doc) else { return Ok(()) };
        let (out, assigned) = assign_ids(&doc, &list);
        let mut stripped = out.clone();
        for id in &assigned {
            stripped = stripped.replacen(&format!("{id} "), "", 1);
        }
        prop_assert_eq!(stripped, doc);
        prop_assert!(!parse(&out).unwrap().needs_ids());
    }
}

/// `first_heading` as it was before the checklist parse found the heading itself: the
/// reference the property above compares against.
fn first_heading_two_parses(src: &str) -> Option<String> {
    let mut in_h1 = false;
    let mut text = String::new();
    for event in Parser::new_ext(&src[bom_len(src)..], parser_options()) {
        match event {
            Event::Start(Tag::Heading {
                level: pulldown_cmark::HeadingLevel::H1,
                ..
            }) => in_h1 = true,
            Event::End(TagEnd::Heading(_)) if in_h1 => {
                return Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
            }
            Event::Text(t) | Event::Code(t) if in_h1 => text.push_str(&t),
            _ => {}
        }
    }
    None
}

/// pulldown-cmark starts a tab-indented nested item's range at the newline above it; the
/// detail line must still be indented like the sub-step, not copy the line above.
#[test]
fn regression_tab_indented_sub_step_and_bom() {
    let doc = "\u{feff}- [ ] fix\n- [ ] fix\n\t- [ ] fix";
    let list = parse(doc).unwrap();
    let (with, _) = assign_ids(doc, &list);
    assert_eq!(with, "\u{feff}- [ ] S1 fix\n- [ ] S2 fix\n\t- [ ] S2.1 fix");
    let list = parse(&with).unwrap();
    let out = edit_step(
        &with,
        &list,
        StepId::top(2),
        &StepEdit::status(StepStatus::Blocked, Some("why")),
    )
    .unwrap();
    assert_eq!(
        out,
        "\u{feff}- [ ] S1 fix\n- [!] S2 fix\n\t- blocked: why\n\t- [ ] S2.1 fix"
    );
    assert_eq!(parse(&out).unwrap().all_steps().count(), 3);
}

// ---- the line scanner against pulldown-cmark ----

fn scan_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        30 => prop::sample::select(vec!["fix", "the", "S1", "S2", "S2.1", "日本", "a_b", "x  y", "1."]),
        12 => prop::sample::select(vec![
            "*em*", "&amp;", "~~s~~", "[x]", "a|b", "|", "`a`", "``b`c``", "` d `", "`", "``",
            "` `", "`  `", "```x```", "[l]", "\u{a0}", "#", "-->", "<!--",
        ]),
        1 => prop::sample::select(vec!["\\`x`", "<b>`x`</b>", "[l](`u`)", "`[l](u)`", "\\", "<http://a>", "end\\"]),
    ]
}

fn scan_text() -> impl Strategy<Value = String> {
    prop::collection::vec(scan_word(), 1..4).prop_map(|w| w.join(" "))
}

/// A line that is not a step or a detail: mostly what the scanner reads, some that it must
/// leave to pulldown-cmark.
fn scan_other_line() -> impl Strategy<Value = String> {
    prop_oneof![
        24 => prop::sample::select(vec![
            "", "", "   ", "# TODO: Title", "#  Two  words ", "## Section", "# `c` h1", "#",
            "<!-- one -->", "<!-- open", "still in the comment", "end -->", "prose text",
            "Text | cell", "- [ ] S7 extra", "* note", "- [x] S3 done",
        ]).prop_map(str::to_owned),
        1 => prop::sample::select(vec![
            "#no", "####### seven", "<!-->", "<!--->", "1. ordered", "===", "---", "***",
            "> - [ ] S9 q", "```", "    code", "[ref]: /u", "- ", "-", "- [ ]", "- [x]foo",
            "  text", "- [ ]  ", "\tx", "a\rb", "   - [ ] S8 odd", "      - deep", "-  two spaces",
            "|---|---|", "- --", "<div>", "~~~",
        ]).prop_map(str::to_owned),
    ]
}

fn scan_item(depth: usize, detail: bool) -> impl Strategy<Value = String> {
    let indent = "  ".repeat(depth);
    let bullet = prop::sample::select(vec!["-", "-", "-", "*", "+"]);
    let marker = prop_oneof![
        30 => prop::sample::select(vec![' ', ' ', 'x', 'X', '-', '!', '~']),
        1 => Just('?'),
    ];
    let key = prop_oneof![
        30 => prop::sample::select(vec![
            "files: ", "verify: ", "verify: ", "done when: ", "risk: ", "depends: ",
            "blocked: ", "stale: ", "evidence: ", "answer: ", "note ", "tools: ",
        ]),
        1 => Just(""),
    ];
    let trailing = prop::sample::select(vec!["", "", "", " ", "  "]);
    (bullet, marker, key, scan_text(), trailing).prop_map(move |(b, m, k, t, tr)| {
        if detail {
            format!("{indent}{b} {k}{t}{tr}")
        } else {
            format!("{indent}{b} [{m}] {t}{tr}")
        }
    })
}

/// One step: its line, details and sub-steps with theirs, sometimes blank lines between, and
/// now and then a line of another kind anywhere.
fn scan_step() -> impl Strategy<Value = Vec<String>> {
    let sub = (
        scan_item(1, false),
        prop::collection::vec(scan_item(2, true), 0..3),
    )
        .prop_map(|(line, details)| std::iter::once(line).chain(details).collect::<Vec<_>>());
    (
        scan_item(0, false),
        prop::collection::vec(scan_item(1, true), 0..4),
        prop::collection::vec(sub, 0..3),
        prop::collection::vec((0usize..40, scan_other_line()), 0..2),
    )
        .prop_map(|(line, details, subs, others)| {
            let mut lines: Vec<String> = std::iter::once(line)
                .chain(details)
                .chain(subs.into_iter().flatten())
                .collect();
            for (at, other) in others {
                let at = at % (lines.len() + 1);
                lines.insert(at, other);
            }
            lines
        })
}

fn scan_doc_strategy() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(scan_other_line(), 0..4),
        prop::collection::vec(scan_step(), 0..6),
        prop::collection::vec(scan_other_line(), 0..2),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(head, steps, tail, crlf, final_newline)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let lines: Vec<String> = head
                .into_iter()
                .chain(steps.into_iter().flatten())
                .chain(tail)
                .collect();
            let mut doc = lines.join(eol);
            if final_newline {
                doc.push_str(eol);
            }
            doc
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    /// Read in two halves at once, a file gives the checklist it gives read in one go (and
    /// is read at all exactly when it is read in one go).
    #[test]
    fn halves_read_at_once_are_the_whole(doc in scan_doc_strategy()) {
        prop_assert_eq!(scan::checklist_split(&doc, 0), scan::checklist_split(&doc, usize::MAX), "{:?}", doc);
    }

    /// Wherever the line scanner reads a file, it builds the checklist (heading, steps,
    /// details, and every offset the edits use) that pulldown-cmark's reading builds.
    #[test]
    fn scanner_agrees_with_pulldown_cmark(doc in scan_doc_strategy()) {
        let Some(list) = scan::checklist(&doc) else { return Ok(()) };
        prop_assert_eq!(Ok(list), parse_by_pulldown(&doc), "{:?}", doc);
    }
}

/// The checklist as pulldown-cmark's reading makes it, for comparison with the scanner's.
fn parse_by_pulldown(src: &str) -> Result<Checklist, ParseError> {
    crate::tasks::markdown_depth::check(src, 0)?;
    let (items, heading) = collect_items(src);
    build(src, 0..src.len(), items, heading)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5_000, ..ProptestConfig::default() })]

    /// And the whole parse, errors included, is the same either way.
    #[test]
    fn parse_is_the_same_by_either_reader(doc in scan_doc_strategy()) {
        prop_assert_eq!(parse(&doc), parse_by_pulldown(&doc), "{:?}", doc);
    }
}

/// The generated files are mostly ones the scanner reads (or the properties above would test
/// little), and a fair share of them are checklists that parse.
#[test]
fn the_scanner_reads_most_generated_files() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = scan_doc_strategy();
    let (mut read, mut parsed) = (0, 0);
    for _ in 0..2_000 {
        let doc = strategy.new_tree(&mut runner).unwrap().current();
        if let Some(list) = scan::checklist(&doc) {
            read += 1;
            parsed += usize::from(!list.steps.is_empty());
        }
    }
    assert!(
        read > 400 && parsed > 120,
        "read {read}, parsed {parsed} of 2,000"
    );
}

/// What tick writes, and the usual hand edits of it, are read by the scanner.
#[test]
fn the_scanner_reads_what_tick_writes() {
    let crlf = DESIGN_EXAMPLE.replace('\n', "\r\n");
    let template = "# TODO: Title\n\n<!-- tick ticks a box only after the step's verification passes.\n     Markers: [ ] pending, [x] done, [-] in progress, [!] blocked, [~] stale.\n     Edit freely: untick, reorder, add steps (no id needed; tick assigns one). -->\n\n- [ ] S1 One\n  - files: a.rs\n  - verify: `cargo test`\n- [ ] S2 Two\n  - [x] S2.1 Half\n    - files: b.rs\n  - [ ] Added by hand\n\n- [ ] S3 After a blank line\n";
    for doc in [DESIGN_EXAMPLE, crlf.as_str(), template] {
        let list = scan::checklist(doc).expect("the scanner reads it");
        assert_eq!(Ok(list), parse_by_pulldown(doc));
    }
}

#[test]
fn a_step_names_its_mcp_tools() {
    let src = "# T\n\n- [ ] S1 File the issue\n  - tools: github.create_issue, `docs.search`\n  - tools: fs.read_text_file\n- [ ] S2 No tools\n";
    let list = parse(src).unwrap();
    assert_eq!(
        list.steps[0].tools,
        ["github.create_issue", "docs.search", "fs.read_text_file"]
    );
    assert!(list.steps[1].tools.is_empty());
    for (bad, message) in [
        (
            "create_issue",
            "`create_issue` is not a qualified tool name (`server.tool`)",
        ),
        ("git hub.x", "`git hub.x` is not a tool name"),
        ("a.b, a.b", "`a.b` is listed twice"),
    ] {
        let err = parse(&format!("- [ ] S1 x\n  - tools: {bad}\n")).unwrap_err();
        assert_eq!((err.line, err.col), (2, 12), "{bad}: {err:?}");
        assert!(err.message.starts_with(message), "{bad}: {err:?}");
        assert!(err.hint.contains("server.tool"), "{err:?}");
    }
}

/// A qualified MCP tool name: a server name, a dot, and a tool name (which may hold dots).
fn tool_name() -> impl Strategy<Value = String> {
    ("[a-z][a-z0-9_-]{0,8}", "[a-zA-Z_][a-zA-Z0-9_./-]{0,12}")
        .prop_map(|(server, tool)| format!("{server}.{tool}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// A step's tools as tick renders them (`tools:`) parse back to the same list, in order,
    /// and a step without tools renders no `tools:` line.
    #[test]
    fn tools_round_trip_through_their_detail_line(
        tools in prop::collection::btree_set(tool_name(), 0..5),
        crlf in any::<bool>(),
    ) {
        let tools: Vec<String> = tools.into_iter().collect();
        let details = crate::tasks::render::Details { tools: &tools, ..Default::default() };
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut doc = format!("# T{eol}{eol}- [ ] S1 Do it{eol}");
        for line in details.lines() {
            doc.push_str(&format!("  - {line}{eol}"));
        }
        prop_assert_eq!(doc.contains("tools:"), !tools.is_empty());
        let list = parse(&doc).unwrap();
        prop_assert_eq!(&list.steps[0].tools, &tools);
    }
}
