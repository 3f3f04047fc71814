//! What `tick check` reports: every task's findings (stale, unverified, plan changed,
//! unparseable, failed attempts) and the exit code the most severe sets. The codes are in
//! `tick check --help`; the JSON form is documented in `docs/json.md`.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::plan::StepStatus;
use crate::tasks::{Store, Task};
use crate::watch::{self, Refreshed};

/// The version of the JSON below.
pub const JSON_FORMAT: u32 = 1;

/// Why a task needs a look. The exit code of each is documented in `tick check --help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    // Ordered from least to most severe: the most severe finding sets the exit code.
    /// The last planning or run attempt failed (a warning: the files are consistent).
    FailedAttempt,
    /// Steps still to do in two active tasks change the same files.
    Overlap,
    /// Only with `--strict`: tick changed a done step's files later, running another task.
    ChangedByTask,
    Unverified,
    Stale,
    PlanChanged,
    Unparseable,
}

impl FindingKind {
    pub fn exit_code(self) -> u8 {
        match self {
            FindingKind::FailedAttempt => 14,
            FindingKind::Overlap => 16,
            FindingKind::ChangedByTask => 9,
            FindingKind::Stale => 10,
            FindingKind::Unverified => 11,
            FindingKind::PlanChanged => 12,
            FindingKind::Unparseable => 13,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub task: String,
    pub kind: FindingKind,
    /// The step, for `stale` and `unverified`.
    pub step: Option<String>,
    /// What a person reads: the `stale:` reason, the parse error, ...
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub format: u32,
    pub tasks_checked: usize,
    /// Steps this check itself marked `[~]`, per task: `(task, step)`.
    pub newly_stale: Vec<(String, String)>,
    pub findings: Vec<Finding>,
    pub exit_code: u8,
}

/// Steps still to do in two active tasks that change the same files, one finding per pair
/// of steps (named under the older task).
pub fn overlap_findings(store: &Store) -> Vec<Finding> {
    let tasks = crate::tasks::overlap::active_tasks(store, None, true);
    let mut out = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        for found in crate::tasks::overlap::find(&task.steps, &tasks[index + 1..]) {
            out.push(Finding {
                task: task.id.clone(),
                kind: FindingKind::Overlap,
                step: Some(found.step.to_string()),
                message: found.line("this task"),
            });
        }
    }
    out
}

/// What needs a person in `task`, which this check has just refreshed (`refreshed`): a changed
/// plan, stale and unverified steps, the failed last attempt, and with `strict` the changes
/// tick made to done steps' files later.
pub fn task_findings(
    store: &Store,
    task: &Task,
    refreshed: &Refreshed,
    strict: bool,
    now: DateTime<Utc>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    if task.plan_changed() {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::PlanChanged,
            step: None,
            message: if task.approval_missing() {
                format!(
                    "`{}/state.yaml` holds no approval of `PLAN.md` (missing or emptied): \
                     restore it from git, or approve the plan again",
                    store.rel(&task.dir)
                )
            } else {
                format!(
                    "`{}/PLAN.md` changed since it was approved",
                    store.rel(&task.dir)
                )
            },
        });
    }
    for step in task.todo.all_steps() {
        if step.status == StepStatus::Stale {
            findings.push(Finding {
                task: task.id.clone(),
                kind: FindingKind::Stale,
                step: step.id.map(|id| id.to_string()),
                message: step.stale.clone().unwrap_or_else(|| "stale".to_owned()),
            });
        }
    }
    // Found while another tick process held the task: not marked yet, still stale.
    if !refreshed.marked {
        for stale in &refreshed.stale {
            findings.push(Finding {
                task: task.id.clone(),
                kind: FindingKind::Stale,
                step: Some(stale.id.to_string()),
                message: watch::stale::reason(&stale.files, now),
            });
        }
    }
    if strict {
        for step in task.todo.all_steps() {
            let Some(id) = step
                .id
                .filter(|_| step.effective_status() == StepStatus::Done)
            else {
                continue;
            };
            let changes = task
                .state
                .steps
                .get(&id)
                .map(|r| r.later_changes.as_slice());
            for change in changes.unwrap_or_default() {
                findings.push(Finding {
                    task: task.id.clone(),
                    kind: FindingKind::ChangedByTask,
                    step: Some(id.to_string()),
                    message: format!(
                        "{}: {}",
                        watch::stale::later_change_text(change),
                        change.files.join(", ")
                    ),
                });
            }
        }
    }
    for step in task.unverified() {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::Unverified,
            step: step.id.map(|id| id.to_string()),
            message: "done without verification".to_owned(),
        });
    }
    if let Some(attempt) = &task.state.last_attempt {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::FailedAttempt,
            step: attempt.step.map(|id| id.to_string()),
            message: attempt_message(attempt, &crate::tasks::naming::task_named(store, &task.id)),
        });
    }
    findings
}

/// The line a failed attempt of task `named` gets, with its hint as it reads now
/// ([`crate::tasks::state::LastAttempt::hint_for`]).
pub fn attempt_message(attempt: &crate::tasks::state::LastAttempt, named: &str) -> String {
    if attempt.hint.is_empty() {
        attempt.summary()
    } else {
        format!("{} (hint: {})", attempt.summary(), attempt.hint_for(named))
    }
}
