//! Two tasks whose steps change the same files, found before they collide: a step's declared
//! `files` (globs allowed) against another active task's steps' declared files and the files
//! they were seen to change (state.yaml's `files_changed`). Approval shows and records them,
//! `tick run` names them before a step starts, `tick check` fails on them. The matching is
//! pure; [`active_tasks`] reads the store.

use globset::Glob;

use super::{Store, Task};
use crate::plan::{Phase, StepId, StepStatus};
use crate::tasks::todo_md::Checklist;

/// The files one step of a task declares or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFiles {
    pub step: StepId,
    pub files: Vec<String>,
    /// The step is done (its files are history, not work to come).
    pub done: bool,
}

/// An active task's steps and their files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFiles {
    pub id: String,
    pub steps: Vec<StepFiles>,
}

/// One step of this plan and one of another task that change the same files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub step: StepId,
    pub task: String,
    pub other: StepId,
    pub files: Vec<String>,
}

impl Overlap {
    /// "S2 of this plan and S4 of `20261201-…-auth` both change `src/lib.rs`".
    pub fn line(&self, this: &str) -> String {
        let files: Vec<String> = self.files.iter().map(|f| format!("`{f}`")).collect();
        format!(
            "{} of {this} and {} of `{}` both change {}",
            self.step,
            self.other,
            self.task,
            files.join(", ")
        )
    }
}

/// Whether two `files` entries (paths or globs) can name one file; the one they share, as
/// the more specific of the two.
fn shared(a: &str, b: &str) -> Option<String> {
    let a = a.trim_start_matches("./");
    let b = b.trim_start_matches("./");
    if a == b {
        return Some(a.to_owned());
    }
    let glob = |p: &str| p.contains(['*', '?', '[', '{']);
    let matches = |pattern: &str, path: &str| {
        Glob::new(pattern)
            .ok()
            .is_some_and(|g| g.compile_matcher().is_match(path))
    };
    match (glob(a), glob(b)) {
        (true, false) => matches(a, b).then(|| b.to_owned()),
        (false, true) => matches(b, a).then(|| a.to_owned()),
        (true, true) => {
            // Two globs: they can meet when one's fixed start begins the other's.
            let fixed = |p: &str| {
                p.split(['*', '?', '[', '{'])
                    .next()
                    .unwrap_or("")
                    .to_owned()
            };
            let (fa, fb) = (fixed(a), fixed(b));
            (fa.starts_with(&fb) || fb.starts_with(&fa)).then(|| {
                if fa.len() >= fb.len() {
                    a.to_owned()
                } else {
                    b.to_owned()
                }
            })
        }
        (false, false) => None,
    }
}

/// The overlaps of `steps` (one task's, each with its files) with `others`.
pub fn find(steps: &[StepFiles], others: &[TaskFiles]) -> Vec<Overlap> {
    let mut out = Vec::new();
    for mine in steps {
        for task in others {
            for theirs in &task.steps {
                let mut files: Vec<String> = Vec::new();
                for a in &mine.files {
                    for b in &theirs.files {
                        if let Some(file) = shared(a, b)
                            && !files.contains(&file)
                        {
                            files.push(file);
                        }
                    }
                }
                if !files.is_empty() {
                    out.push(Overlap {
                        step: mine.step,
                        task: task.id.clone(),
                        other: theirs.step,
                        files,
                    });
                }
            }
        }
    }
    out
}

/// A checklist's steps with their declared files (and, given the state's records, the files
/// they changed).
pub fn step_files(steps: &Checklist, state: Option<&super::state::State>) -> Vec<StepFiles> {
    steps
        .all_steps()
        .filter_map(|step| {
            let id = step.id?;
            let mut files = step.files.clone();
            if let Some(record) = state.and_then(|s| s.steps.get(&id)) {
                for file in &record.files_changed {
                    if !files.contains(file) {
                        files.push(file.clone());
                    }
                }
            }
            (!files.is_empty()).then_some(StepFiles {
                step: id,
                files,
                done: step.effective_status() == StepStatus::Done,
            })
        })
        .collect()
}

/// Whether a task is active: approved and not yet completed or cancelled.
pub fn is_active(task: &Task) -> bool {
    matches!(
        task.plan.phase(),
        Some(Phase::Approved | Phase::Executing | Phase::Blocked) | None
    )
}

/// Every active task but `except`, with its steps' files; `open_only` keeps only the steps
/// not done (the work still to come). A task that does not load is skipped: its own
/// commands report it.
pub fn active_tasks(store: &Store, except: Option<&str>, open_only: bool) -> Vec<TaskFiles> {
    let Ok(ids) = store.task_ids() else {
        return Vec::new();
    };
    ids.into_iter()
        .filter(|id| Some(id.as_str()) != except)
        .filter_map(|id| {
            let task = store.load(&store.task_ref(&id)).ok()?;
            if !is_active(&task) {
                return None;
            }
            let steps: Vec<StepFiles> = step_files(&task.todo, Some(&task.state))
                .into_iter()
                .filter(|s| !(open_only && s.done))
                .collect();
            (!steps.is_empty()).then_some(TaskFiles { id, steps })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, files: &[&str]) -> StepFiles {
        StepFiles {
            step: id.parse().unwrap(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            done: false,
        }
    }

    #[test]
    fn paths_and_globs_meet() {
        assert_eq!(
            shared("src/lib.rs", "./src/lib.rs").as_deref(),
            Some("src/lib.rs")
        );
        assert_eq!(
            shared("src/**", "src/lib.rs").as_deref(),
            Some("src/lib.rs")
        );
        assert_eq!(
            shared("src/lib.rs", "src/*.rs").as_deref(),
            Some("src/lib.rs")
        );
        assert_eq!(
            shared("src/compat/**", "src/**").as_deref(),
            Some("src/compat/**")
        );
        assert_eq!(shared("src/a.rs", "src/b.rs"), None);
        assert_eq!(shared("docs/**", "src/**"), None);
    }

    #[test]
    fn overlaps_name_both_steps_and_the_files() {
        let mine = [
            step("S1", &["README.md"]),
            step("S2", &["src/lib.rs", "src/main.rs"]),
        ];
        let others = [TaskFiles {
            id: "20261201-100000-auth".into(),
            steps: vec![step("S3", &["docs/a.md"]), step("S4", &["src/**"])],
        }];
        let found = find(&mine, &others);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].line("this plan"),
            "S2 of this plan and S4 of `20261201-100000-auth` both change `src/lib.rs`, `src/main.rs`"
        );
    }
}
