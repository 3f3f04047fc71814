//! The verification of a step `tick redo` put back ([`crate::undo`]): the step's `verify`
//! runs again, under the same sandbox, journal and write path as `tick verify`, and only a
//! pass ticks it `[x]` (with new evidence and fingerprints).

use super::reverify::reverify_step;
use super::{Clock, Sink};
use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::tasks::{Store, TaskRef};
use crate::tools::bash::CommandEnv;

/// What the verification of a redone step showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It passed: `[x]`.
    Passed,
    /// It failed: the step stays open.
    Failed,
    /// The step has no `verify`: it stays open, for a person to tick (`tick mark`).
    NothingToRun,
    /// A person changed its marker meanwhile; theirs is kept.
    Kept,
}

/// Verifies step `id` of `task_ref` (open, its changes just put back). The caller holds the
/// task's lock.
pub fn verify_redone(
    store: &Store,
    task_ref: &TaskRef,
    env: &CommandEnv,
    hooks: &crate::hooks::HookSet,
    clock: &Clock,
    id: StepId,
    sink: &mut Sink<'_>,
) -> Result<Verdict> {
    let task = store.load(task_ref)?;
    let step = task
        .todo
        .find(id)
        .ok_or_else(|| Error::internal(format!("step `{id}` vanished")))?;
    if step.verify.is_empty() {
        return Ok(Verdict::NothingToRun);
    }
    let again = reverify_step(store, task_ref, &task.id, (env, hooks), clock, step, sink)?;
    Ok(match again.written {
        super::write::StatusWrite::Kept { .. } | super::write::StatusWrite::Missing => {
            Verdict::Kept
        }
        super::write::StatusWrite::Written(_)
            if again.passed && again.status == StepStatus::Done =>
        {
            Verdict::Passed
        }
        super::write::StatusWrite::Written(_) => Verdict::Failed,
    })
}
