//! Re-planning an approved task (DESIGN §3, "Blocked is not the end"): the person asks for a
//! change (`tick plan --revise "feedback" TASK`), the planner works in plan mode from the
//! task as it stands, and its plan becomes the task's new PLAN.md, a revision waiting for
//! approval. Nothing runs until `tick approve TASK` merges it into TODO.md by step id.
//!
//! What this module decides, without I/O: the planner's first message ([`seed`]: the plan,
//! every step's status, evidence, block and answer), which step of the new plan is which step
//! of the old one ([`matched_ids`]: same title, same id, so an unchanged step keeps its
//! marker and evidence), and the new plan's text with those ids ([`with_ids`]). The version
//! the task was approved with is kept as `history/PLAN.v<N>.md` ([`history_path`]) so
//! `tick show --version N` can print any version.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::tasks::Task;
use crate::tasks::todo_md::Checklist;

/// The folder of a task's earlier approved plans.
pub const HISTORY_DIR: &str = "history";

/// `history/PLAN.v<version>.md` of the task in `task_dir`.
pub fn history_path(task_dir: &Path, version: usize) -> PathBuf {
    task_dir
        .join(HISTORY_DIR)
        .join(format!("PLAN.v{version}.md"))
}

/// How many earlier versions the task in `task_dir` keeps: the current one is this plus one.
pub fn versions_kept(task_dir: &Path) -> usize {
    let mut kept = 0;
    while history_path(task_dir, kept + 1).is_file() {
        kept += 1;
    }
    kept
}

/// The planner's first message: the goal, the person's feedback, and the task as it stands.
pub fn seed(task: &Task, feedback: &str) -> String {
    let goal = task.plan.front.goal.clone().unwrap_or_else(|| task.title());
    let mut out = format!(
        "Goal: {goal}\n\nThis plan was approved and is being carried out. The person asks to \
         change it:\n\n{feedback}\n\nRevise the plan as they ask, exploring the repository as \
         needed, then call `submit_plan` with the whole revised plan. Keep every step that \
         needs no change exactly as it is, with the same title: a step that keeps its title \
         keeps its progress. Change, add or remove only what the request needs. Number \
         `depends` by the position of the steps in your submission (S1 is your first step).\n\n\
         ## Where each step stands\n"
    );
    for step in task.todo.all_steps() {
        let id = step
            .id
            .map_or_else(|| "(new)".to_owned(), |id| id.to_string());
        let status = match step.status {
            StepStatus::Pending => "pending",
            status => status.as_str(),
        };
        out.push_str(&format!("- {id} [{status}] {}\n", step.title));
        if let Some(reason) = &step.blocked {
            out.push_str(&format!("  - blocked: {reason}\n"));
        }
        if let Some(answer) = &step.answer {
            out.push_str(&format!("  - the person answered: {answer}\n"));
        }
        if let Some(record) = step.id.and_then(|id| task.state.steps.get(&id)) {
            for evidence in &record.evidence {
                out.push_str(&format!(
                    "  - verified: `{}` exit {}\n",
                    evidence.command, evidence.exit_code
                ));
            }
        }
    }
    out.push_str(&format!(
        "\n## The approved plan\n\n{}",
        task.plan_src.as_str()
    ));
    out
}

/// The id of each step of a new plan whose top-level titles are `titles`, in order: the id of
/// the old top-level step with the same title (compared ignoring case and spacing, each old
/// step used once), else a fresh id after every id the old plan or TODO.md used.
pub fn matched_ids(old: &Checklist, titles: &[String]) -> Vec<StepId> {
    let key = |title: &str| {
        title
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let mut unused: Vec<(String, StepId)> = old
        .steps
        .iter()
        .filter_map(|step| Some((key(&step.title), step.id?)))
        .collect();
    let mut next = old
        .all_steps()
        .filter_map(|step| step.id)
        .map(|id| id.major)
        .max()
        .unwrap_or(0);
    titles
        .iter()
        .map(|title| {
            let wanted = key(title);
            if let Some(at) = unused.iter().position(|(k, _)| *k == wanted) {
                unused.remove(at).1
            } else {
                next += 1;
                StepId::top(next)
            }
        })
        .collect()
}

/// `body` (a plan body whose steps were rendered as `S1`..`Sn` in order) with the step ids
/// `ids` instead, in the step lines and in `depends`. The result is parsed back and must hold
/// exactly those ids in that order, or nothing is written.
pub fn with_ids(body: &str, ids: &[StepId]) -> Result<String> {
    let positional = |token: &str| -> Option<StepId> {
        let n: usize = token.strip_prefix('S')?.parse().ok()?;
        ids.get(n.checked_sub(1)?).copied()
    };
    let mut out = String::with_capacity(body.len());
    let mut seen = 0;
    for line in body.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        if let Some(after) = rest.strip_prefix("- [ ] ")
            && let Some(token) = after.split_whitespace().next()
            && seen < ids.len()
            && token == format!("S{}", seen + 1)
        {
            out.push_str(&line[..indent + 6]);
            out.push_str(&ids[seen].to_string());
            out.push_str(&after[token.len()..]);
            seen += 1;
        } else if let Some(list) = rest.strip_prefix("- depends:") {
            let mapped: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| positional(t).map_or_else(|| t.to_owned(), |id| id.to_string()))
                .collect();
            let eol = if line.ends_with("\r\n") {
                "\r\n"
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            };
            out.push_str(&format!(
                "{}- depends: {}{eol}",
                &line[..indent],
                mapped.join(", ")
            ));
        } else {
            out.push_str(line);
        }
    }
    let doc = crate::tasks::plan_md::parse(&out)
        .map_err(|e| Error::internal(format!("the re-planned PLAN.md does not parse: {e}")))?;
    let got: Vec<StepId> = doc.steps.steps.iter().filter_map(|s| s.id).collect();
    if got != ids {
        return Err(Error::internal(
            "the re-planned steps could not keep their ids (is `.tasks/templates/PLAN.md.j2` \
             overridden?); nothing was written",
        ));
    }
    Ok(out)
}

/// The ids of `old`'s top-level steps that `new` no longer has.
pub fn removed(old: &Checklist, new: &[StepId]) -> Vec<StepId> {
    let kept: BTreeSet<StepId> = new.iter().copied().collect();
    old.steps
        .iter()
        .filter_map(|s| s.id)
        .filter(|id| !kept.contains(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tasks::todo_md;

    fn ids(list: &[StepId]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn unchanged_titles_keep_their_ids_and_new_steps_get_fresh_ones() {
        let old = todo_md::parse(
            "- [x] S1 Parse the flag\n- [!] S2 Print the  column\n  - [ ] S2.1 sub\n- [ ] S4 Docs\n",
        )
        .unwrap();
        let titles: Vec<String> = [
            "A new first step",
            "print the column",
            "Parse the flag",
            "Docs again",
        ]
        .map(str::to_owned)
        .to_vec();
        let got = matched_ids(&old, &titles);
        assert_eq!(ids(&got), ["S5", "S2", "S1", "S6"]);
        assert_eq!(ids(&removed(&old, &got)), ["S4"]);
    }

    #[test]
    fn a_title_twice_matches_once() {
        let old = todo_md::parse("- [x] S1 Same\n- [ ] S2 Same\n").unwrap();
        let got = matched_ids(
            &old,
            &["Same".to_owned(), "Same".to_owned(), "Same".to_owned()],
        );
        assert_eq!(ids(&got), ["S1", "S2", "S3"]);
    }

    #[test]
    fn ids_and_depends_are_rewritten_and_nothing_else() {
        let body = "# T\n\n## Steps\n\n- [ ] S1 One\n  - files: a\n- [ ] S2 Two S1\n  - depends: S1\n- [ ] S3 Three\n  - depends: S1, S2\n\n## Risks\n\n- [ ] S1 not a step\n";
        let got = with_ids(body, &[StepId::top(4), StepId::top(1), StepId::top(7)]).unwrap();
        assert_eq!(
            got,
            "# T\n\n## Steps\n\n- [ ] S4 One\n  - files: a\n- [ ] S1 Two S1\n  - depends: S4\n- [ ] S7 Three\n  - depends: S4, S1\n\n## Risks\n\n- [ ] S1 not a step\n"
        );
    }

    proptest! {
        /// Whatever the new titles, each old step is matched at most once, a new plan's ids
        /// are unique, and an old title that is still there keeps its id.
        #[test]
        fn matching_keeps_unchanged_steps_and_never_repeats_an_id(
            old_titles in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "e"]), 1..6),
            new_titles in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "x", "y"]), 1..8),
        ) {
            let mut src = String::new();
            for (i, t) in old_titles.iter().enumerate() {
                src.push_str(&format!("- [x] S{} {t}\n", i + 1));
            }
            let old = todo_md::parse(&src).unwrap();
            let titles: Vec<String> = new_titles.iter().map(|t| (*t).to_owned()).collect();
            let got = matched_ids(&old, &titles);
            let unique: BTreeSet<StepId> = got.iter().copied().collect();
            prop_assert_eq!(unique.len(), got.len());
            for (title, id) in titles.iter().zip(&got) {
                if let Some(old_step) = old.find(*id) {
                    prop_assert_eq!(&old_step.title, title);
                } else {
                    prop_assert!(id.major as usize > old_titles.len());
                }
            }
            // Every old title still wanted is kept by as many steps as both lists have.
            for title in ["a", "b", "c", "d"] {
                let before = old_titles.iter().filter(|t| **t == title).count();
                let after = new_titles.iter().filter(|t| **t == title).count();
                let kept = titles
                    .iter()
                    .zip(&got)
                    .filter(|(t, id)| *t == title && old.find(**id).is_some())
                    .count();
                prop_assert_eq!(kept, before.min(after));
            }
        }
    }
}
