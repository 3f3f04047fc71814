//! `tick verify` in words: what became of each step verified again, the steps a dry run
//! would check, and why nothing was verified.

use crate::plan::{StepId, StepStatus};
use crate::runner::reverify::Reverified;
use crate::tasks::Task;
use crate::tasks::todo_md::Step;

/// The line saying what became of a step verified again.
pub fn reverified_line(outcome: &Reverified) -> String {
    match outcome {
        Reverified::Passed(id) => format!("{id} verified: done"),
        Reverified::PassedAsBefore(id) => format!(
            "{id}'s verify passed, as it did before the change: done, still not verified \
             (it cannot tell done from not done; `tick diff {id}` shows the change)"
        ),
        Reverified::Failed(id) => {
            format!("{id} fails its verification: open again, `tick run` redoes it")
        }
        Reverified::Unverifiable(id) => {
            format!("{id} has no verification to run; left as it is")
        }
        Reverified::Reopened(id) => {
            format!("{id} was stale and has no verification: open again, to be redone")
        }
        Reverified::Kept(id) => format!("{id} was changed by hand meanwhile; yours is kept"),
        Reverified::Unchecked(id) => format!(
            "{id}'s sub-steps are done, but its own verification fails: not ticked, `tick run` \
             works on it"
        ),
    }
}

/// `tick verify --dry-run`'s list: each step with its commands, or what having none would do.
pub fn to_verify_text(steps: &[&Step]) -> String {
    let mut out = String::new();
    for step in steps {
        let id = step.id.map(|id| id.to_string()).unwrap_or_default();
        let marker = step.status.marker();
        if step.verify.is_empty() {
            let what = if step.status == StepStatus::Stale {
                "no verification: would be opened again, to be redone"
            } else {
                "no verification: left as it is"
            };
            out.push_str(&format!("[{marker}] {id} {}\n    {what}\n", step.title));
            continue;
        }
        out.push_str(&format!("[{marker}] {id} {}\n", step.title));
        for command in &step.verify {
            out.push_str(&format!("    $ {command}\n"));
        }
    }
    out.trim_end().to_owned()
}

/// Why nothing was verified, true for the steps asked for: with no steps named, there is no
/// done or stale step; a named step is open, in progress or blocked (a failed verification,
/// `tick verify`'s own or the run's, opens a step again), which `tick run` does.
pub fn nothing_to_verify(task: &Task, only: &[StepId]) -> String {
    if only.is_empty() {
        return "no done or stale step to verify".to_owned();
    }
    let named: Vec<String> = only
        .iter()
        .filter_map(|id| task.todo.find(*id))
        .map(|step| {
            let id = step.id.map(|id| id.to_string()).unwrap_or_default();
            format!("{id} is `[{}]` {}", step.status.marker(), step.status)
        })
        .collect();
    format!(
        "{}: only a done or stale step is verified; `tick run` works on an open one",
        named.join(", ")
    )
}
