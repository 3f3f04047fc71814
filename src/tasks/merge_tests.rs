use proptest::prelude::*;

use super::*;
use crate::plan::StepStatus;

const PLAN: &str = "\
- [ ] S1 Find the entry point
  - files: src/a.rs
  - verify: `cargo test a`
- [ ] S2 Add the layer
  - files: src/b.rs
  - risk: high
  - [ ] S2.1 First half
  - [ ] S2.2 Second half
- [ ] S3 Run the suite
  - verify: `cargo test`
";

/// TODO.md as a run left it: markers, runner lines, a person's note and prose.
const TODO: &str = "\
# TODO: Layer

Some prose a person wrote.

- [x] S1 Find the entry point
  - files: src/a.rs
  - verify: `cargo test a`
  - evidence: `cargo test a` exit 0
  - note from me: check the callers too
- [-] S2 Add the layer
  - files: src/b.rs
  - risk: high
  - [x] S2.1 First half
  - [!] S2.2 Second half
    - blocked: the schema is missing
- [~] S3 Run the suite
  - verify: `cargo test`
  - stale: src/a.rs changed outside tick at 2026-11-30 14:31 UTC
";

fn steps(text: &str) -> Checklist {
    todo_md::parse(text).unwrap()
}

fn merge(new_plan: &str) -> (String, StepDiff) {
    apply_plan(TODO, &steps(PLAN), &steps(new_plan)).unwrap()
}

fn id(s: &str) -> StepId {
    s.parse().unwrap()
}

#[test]
fn an_unchanged_plan_changes_nothing() {
    let (out, diff) = merge(PLAN);
    assert_eq!(out, TODO);
    assert!(diff.is_empty());
}

#[test]
fn a_changed_verify_replaces_only_that_line() {
    let (out, diff) = merge(&PLAN.replace("`cargo test a`", "`cargo test a -- --exact`"));
    assert_eq!(
        out,
        TODO.replacen(
            "  - verify: `cargo test a`\n",
            "  - verify: `cargo test a -- --exact`\n",
            1
        )
    );
    assert_eq!(
        diff.changed,
        [StepChange {
            id: id("S1"),
            fields: vec!["verify"]
        }]
    );
    assert_eq!(diff.to_string(), "~ S1: verify\n");
}

#[test]
fn a_changed_title_keeps_the_marker_and_id() {
    let (out, diff) = merge(&PLAN.replace("S3 Run the suite", "S3 Run the whole suite"));
    assert_eq!(
        out,
        TODO.replace("S3 Run the suite", "S3 Run the whole suite")
    );
    assert_eq!(diff.changed[0].fields, ["title"]);
}

#[test]
fn new_detail_keys_are_inserted_and_gone_ones_removed() {
    let plan = PLAN.replace("  - risk: high\n", "").replace(
        "- [ ] S3 Run the suite\n",
        "- [ ] S3 Run the suite\n  - done when: all green\n  - depends: S1\n",
    );
    let (out, diff) = merge(&plan);
    let expected = TODO.replace("  - risk: high\n", "").replace(
        "  - stale: src/a.rs changed outside tick at 2026-11-30 14:31 UTC\n",
        "  - stale: src/a.rs changed outside tick at 2026-11-30 14:31 UTC\n  - done when: all green\n  - depends: S1\n",
    );
    assert_eq!(out, expected);
    assert_eq!(
        diff.changed,
        [
            StepChange {
                id: id("S2"),
                fields: vec!["risk"]
            },
            StepChange {
                id: id("S3"),
                fields: vec!["done when", "depends"]
            }
        ]
    );
}

#[test]
fn several_verify_lines_become_the_new_ones() {
    let todo = TODO.replace(
        "  - verify: `cargo test`\n",
        "  - verify: `cargo test`\n  - verify: `cargo clippy`\n",
    );
    let old = PLAN.replace(
        "  - verify: `cargo test`\n",
        "  - verify: `cargo test`\n  - verify: `cargo clippy`\n",
    );
    let new = PLAN.replace("  - verify: `cargo test`\n", "  - verify: `make check`\n");
    let (out, _) = apply_plan(&todo, &steps(&old), &steps(&new)).unwrap();
    assert_eq!(
        out,
        TODO.replace("  - verify: `cargo test`\n", "  - verify: `make check`\n")
    );
}

#[test]
fn an_added_step_goes_after_its_neighbour_in_the_plan() {
    let plan = PLAN.replace(
        "- [ ] S3 Run the suite\n",
        "- [ ] S4 Document it\n  - files: README.md\n- [ ] S3 Run the suite\n",
    );
    let (out, diff) = merge(&plan);
    assert_eq!(
        out,
        TODO.replace(
            "- [~] S3 Run the suite\n",
            "- [ ] S4 Document it\n  - files: README.md\n- [~] S3 Run the suite\n"
        )
    );
    assert_eq!(diff.added, [id("S4")]);
}

#[test]
fn an_added_first_step_and_an_added_last_step() {
    let plan = format!("- [ ] S4 Before\n{PLAN}- [ ] S5 After\n  - [ ] S5.1 Child\n");
    let (out, diff) = merge(&plan);
    let expected = TODO.replace("- [x] S1 Find", "- [ ] S4 Before\n- [x] S1 Find")
        + "- [ ] S5 After\n  - [ ] S5.1 Child\n";
    assert_eq!(out, expected);
    assert_eq!(diff.added, [id("S4"), id("S5"), id("S5.1")]);
}

#[test]
fn an_added_sub_step_goes_among_its_siblings() {
    let plan = PLAN.replace(
        "  - [ ] S2.2 Second half\n",
        "  - [ ] S2.2 Second half\n  - [ ] S2.3 Third half\n    - verify: `true`\n",
    );
    let (out, diff) = merge(&plan);
    assert_eq!(
        out,
        TODO.replace(
            "    - blocked: the schema is missing\n",
            "    - blocked: the schema is missing\n  - [ ] S2.3 Third half\n    - verify: `true`\n"
        )
    );
    assert_eq!(diff.added, [id("S2.3")]);
}

#[test]
fn a_first_sub_step_goes_under_its_parent() {
    let plan = PLAN.replace(
        "  - verify: `cargo test`\n",
        "  - verify: `cargo test`\n  - [ ] S3.1 Unit tests\n",
    );
    let (out, _) = merge(&plan);
    assert_eq!(out, format!("{TODO}  - [ ] S3.1 Unit tests\n"));
    let list = steps(&out);
    assert_eq!(list.find(id("S3")).unwrap().substeps.len(), 1);
}

#[test]
fn a_removed_step_goes_with_its_lines_and_sub_steps() {
    let plan = PLAN.replace(
        "- [ ] S2 Add the layer\n  - files: src/b.rs\n  - risk: high\n  - [ ] S2.1 First half\n  - [ ] S2.2 Second half\n",
        "",
    );
    let (out, diff) = merge(&plan);
    assert_eq!(
        out,
        TODO.replace(
            "- [-] S2 Add the layer\n  - files: src/b.rs\n  - risk: high\n  - [x] S2.1 First half\n  - [!] S2.2 Second half\n    - blocked: the schema is missing\n",
            ""
        )
    );
    assert_eq!(diff.removed, [id("S2"), id("S2.1"), id("S2.2")]);
}

#[test]
fn a_removed_sub_step_goes_alone() {
    let (out, diff) = merge(&PLAN.replace("  - [ ] S2.1 First half\n", ""));
    assert_eq!(out, TODO.replace("  - [x] S2.1 First half\n", ""));
    assert_eq!(diff.removed, [id("S2.1")]);
}

#[test]
fn what_a_person_changed_in_todo_only_is_kept() {
    // They fixed S1's files in TODO.md; the plan changed S3's verify only.
    let todo = TODO.replace("  - files: src/a.rs\n", "  - files: src/a.rs, src/a2.rs\n");
    let new = PLAN.replace("`cargo test`\n", "`make test`\n");
    let (out, _) = apply_plan(&todo, &steps(PLAN), &steps(&new)).unwrap();
    assert_eq!(out, todo.replace("`cargo test`\n", "`make test`\n"));
    // A step a person added to TODO.md stays.
    let todo = format!("{TODO}- [ ] S9 Mine\n");
    let (out, _) = apply_plan(&todo, &steps(PLAN), &steps(PLAN)).unwrap();
    assert_eq!(out, todo);
}

#[test]
fn without_the_old_plan_todo_is_the_base() {
    let new = PLAN.replace("`cargo test a`", "`cargo test b`");
    let (out, diff) = apply_plan(TODO, &steps(TODO), &steps(&new)).unwrap();
    assert_eq!(
        out,
        TODO.replacen("verify: `cargo test a`", "verify: `cargo test b`", 1)
    );
    assert_eq!(diff.changed.len(), 1);
}

#[test]
fn crlf_and_no_final_newline_are_kept() {
    let todo = TODO.replace('\n', "\r\n");
    let new = PLAN.replace("`cargo test a`", "`cargo test b`");
    let (out, _) = apply_plan(&todo, &steps(PLAN), &steps(&new)).unwrap();
    assert_eq!(
        out,
        todo.replacen("verify: `cargo test a`", "verify: `cargo test b`", 1)
    );

    let todo = "- [x] S1 One\n  - verify: `a`";
    let old = "- [ ] S1 One\n  - verify: `a`\n";
    let new = "- [ ] S1 One\n  - verify: `b`\n  - files: x\n";
    let (out, _) = apply_plan(todo, &steps(old), &steps(new)).unwrap();
    assert_eq!(out, "- [x] S1 One\n  - verify: `b`\n  - files: x");
}

#[test]
fn a_depends_on_a_removed_step_is_an_error() {
    let todo = "- [ ] S1 One\n- [ ] S2 Two\n  - depends: S1\n";
    let old = todo;
    let new = "- [ ] S2 Two\n  - depends: S1\n";
    // The new plan itself would not parse; a TODO.md-only dependency is caught the same way.
    assert!(todo_md::parse(new).is_err());
    let new = "- [ ] S2 Two\n";
    let todo_with_dep = "- [ ] S1 One\n- [ ] S2 Two\n- [ ] S3 Mine\n  - depends: S1\n";
    assert!(apply_plan(todo_with_dep, &steps(old), &steps(new)).is_err());
    assert!(apply_plan(todo, &steps(old), &steps(new)).is_ok());
}

fn arb_status() -> impl Strategy<Value = char> {
    prop::sample::select(vec![' ', 'x', '-', '!', '~'])
}

fn arb_field() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z]{1,6}")
}

proptest! {
    /// Whatever the plan changes, every step still in it keeps its marker and runner lines,
    /// and a person's notes stay.
    #[test]
    fn markers_runner_lines_and_notes_survive(
        markers in prop::collection::vec(arb_status(), 4),
        old_verify in prop::collection::vec(arb_field(), 4),
        new_verify in prop::collection::vec(arb_field(), 4),
        new_titles in prop::collection::vec(arb_field(), 4),
        keep in prop::collection::vec(any::<bool>(), 4),
        add_after in prop::option::of(0usize..4),
    ) {
        let mut todo = String::from("# TODO: t\n\n");
        let mut old = String::new();
        let mut new = String::new();
        for i in 0..4 {
            let n = i + 1;
            todo.push_str(&format!("- [{}] S{n} Step {n}\n", markers[i]));
            old.push_str(&format!("- [ ] S{n} Step {n}\n"));
            if let Some(v) = &old_verify[i] {
                todo.push_str(&format!("  - verify: `{v}`\n"));
                old.push_str(&format!("  - verify: `{v}`\n"));
            }
            todo.push_str(&format!("  - evidence: run {n}\n  - a note {n}\n"));
            if markers[i] == '!' {
                todo.push_str(&format!("  - blocked: reason {n}\n"));
            }
            if keep[i] || i == 0 {
                let title = new_titles[i].clone().unwrap_or_else(|| format!("Step {n}"));
                new.push_str(&format!("- [ ] S{n} {title}\n"));
                if let Some(v) = &new_verify[i] {
                    new.push_str(&format!("  - verify: `{v}`\n"));
                }
            }
            if add_after == Some(i) {
                new.push_str("- [ ] S9 Added\n  - files: f\n");
            }
        }
        let before = steps(&todo);
        let (out, _) = apply_plan(&todo, &steps(&old), &steps(&new)).unwrap();
        let after = steps(&out);
        for step in before.all_steps() {
            let id = step.id.unwrap();
            let n = id.major;
            let kept = keep[(n - 1) as usize] || n == 1;
            match after.find(id) {
                Some(now) => {
                    prop_assert!(kept);
                    prop_assert_eq!(now.status, step.status);
                    prop_assert_eq!(&now.evidence, &step.evidence);
                    prop_assert_eq!(&now.blocked, &step.blocked);
                    prop_assert_eq!(&now.notes, &step.notes);
                    let want: Vec<String> = new_verify[(n - 1) as usize].iter().cloned().collect();
                    prop_assert_eq!(&now.verify, &want);
                }
                None => prop_assert!(!kept),
            }
        }
        prop_assert_eq!(after.find(StepId::top(9)).is_some(), add_after.is_some());
        if let Some(added) = after.find(StepId::top(9)) {
            prop_assert_eq!(added.status, StepStatus::Pending);
        }
        prop_assert!(out.starts_with("# TODO: t\n\n"));
    }
}
