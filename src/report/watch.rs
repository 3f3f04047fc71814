//! What `tick watch` shows as a task changes: one [`WatchEvent`] per line, found by comparing
//! what the view last showed of each step with the task now.

use std::collections::BTreeMap;

use crate::plan::{StepId, StepStatus};
use crate::tasks::Task;

/// One line of the live view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A step's status changed. `detail` is the blocked/stale reason or how it was verified.
    Step {
        id: String,
        status: StepStatus,
        title: String,
        detail: Option<String>,
    },
    /// A step appeared (a person added it) or went away.
    Added {
        id: String,
        title: String,
    },
    Removed {
        id: String,
    },
    /// PLAN.md changed since approval.
    PlanChanged,
    /// A file could not be read or parsed; the view waits for the next save.
    Problem(String),
    /// The watcher lost events and re-checked everything.
    Rescan(String),
}

/// What the view last showed of each step.
pub type Shown = BTreeMap<String, (StepStatus, Option<String>, String)>;

/// What the view shows of each step of `task` now.
pub fn snapshot(task: &Task) -> Shown {
    task.todo
        .all_steps()
        .filter_map(|step| {
            let id = step.id?.to_string();
            let detail = match step.status {
                StepStatus::Blocked => step.blocked.clone(),
                StepStatus::Stale => step.stale.clone(),
                _ => None,
            };
            Some((id, (step.status, detail, step.title.clone())))
        })
        .collect()
}

/// The lines that tell a person what changed between two views of `task`.
pub fn diff(before: &Shown, after: &Shown, task: &Task) -> Vec<WatchEvent> {
    let mut events = Vec::new();
    for (id, (status, detail, title)) in after {
        match before.get(id) {
            None if !before.is_empty() => events.push(WatchEvent::Added {
                id: id.clone(),
                title: title.clone(),
            }),
            Some((old_status, old_detail, _)) if old_status == status && old_detail == detail => {}
            _ => {
                let detail = if *status == StepStatus::Done {
                    Some(verification(task, id))
                } else {
                    detail.clone()
                };
                events.push(WatchEvent::Step {
                    id: id.clone(),
                    status: *status,
                    title: title.clone(),
                    detail,
                });
            }
        }
    }
    for id in before.keys() {
        if !after.contains_key(id) {
            events.push(WatchEvent::Removed { id: id.clone() });
        }
    }
    events
}

/// "verified in 3.1s", or that nothing verified it.
fn verification(task: &Task, id: &str) -> String {
    let record = id
        .parse::<StepId>()
        .ok()
        .and_then(|id| task.state.steps.get(&id));
    // A parent checked by its sub-steps is verified when they are (`Task::is_verified`).
    let verified = id
        .parse::<StepId>()
        .ok()
        .and_then(|id| task.todo.find(id))
        .is_some_and(|step| task.is_verified(step));
    match record {
        Some(record) if verified => {
            let ms: u64 = record.evidence.iter().map(|e| e.duration_ms).sum();
            #[allow(clippy::cast_precision_loss, reason = "a duration shown to 0.1 s")]
            let secs = ms as f64 / 1000.0;
            format!("verified in {secs:.1}s")
        }
        Some(record) if record.changed_by == Some(crate::tasks::state::Actor::Runner) => {
            if record.verify_passed_before {
                "not verified: its verify passed before the change".to_owned()
            } else {
                "not verified: the step has no verification".to_owned()
            }
        }
        _ => "not verified: marked done by hand".to_owned(),
    }
}
