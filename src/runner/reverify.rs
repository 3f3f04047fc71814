//! Verification without a model: `tick verify` runs the `verify` commands of done and stale
//! steps again, under the same sandbox, journal and write path as a run. A pass ticks the
//! step `[x]` with new evidence and fingerprints; a failure (or nothing to run for a stale
//! step) opens it again (`[ ]`), because a box that cannot be shown true is not left ticked.

use std::time::SystemTime;

use super::events::RunEvent;
use super::record::Recorder;
use super::verify::StepVerifier;
use super::write::{self, StatusWrite, StepWrite};
use super::{Clock, Sink};
use crate::agent::executor::Verdict;
use crate::error::Result;
use crate::plan::{StepId, StepStatus};
use crate::tasks::{Store, TaskRef};
use crate::tools::bash::CommandEnv;

/// What became of one step `tick verify` looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reverified {
    /// Its verification passed: `[x]` with new evidence.
    Passed(StepId),
    /// Its verification failed: open again (`[ ]`).
    Failed(StepId),
    /// Done, but with no `verify` to run: left as it is.
    Unverifiable(StepId),
    /// Stale with no `verify` to run: open again, to be redone.
    Reopened(StepId),
    /// A person changed its marker while the commands ran; theirs is kept.
    Kept(StepId),
}

/// Verifies the done (`[x]`) and stale (`[~]`) steps of `task_ref` again, or only `only`
/// when it is not empty, top to bottom. The caller holds the task lock.
pub fn verify_steps(
    store: &Store,
    task_ref: &TaskRef,
    env: &CommandEnv,
    only: &[StepId],
    clock: Clock,
    sink: &mut Sink<'_>,
) -> Result<Vec<Reverified>> {
    let task = store.load(task_ref)?;
    let mut outcomes = Vec::new();
    for step in task.todo.all_steps() {
        let Some(id) = step.id else { continue };
        if !only.is_empty() && !only.contains(&id) {
            continue;
        }
        let was = step.status;
        if !matches!(was, StepStatus::Done | StepStatus::Stale) {
            continue;
        }
        if step.verify.is_empty() && was == StepStatus::Done {
            outcomes.push(Reverified::Unverifiable(id));
            continue;
        }
        let mut verifier = StepVerifier::new(store.root(), env, id, &step.verify);
        let mut recorder =
            Recorder::new(store, &task.id, id, &step.files, clock, SystemTime::now());
        let passed = verifier.has_commands()
            && matches!(
                verifier.verify(&mut recorder, &mut *sink),
                Verdict::Passed { .. }
            );
        let status = if passed {
            StepStatus::Done
        } else {
            StepStatus::Pending
        };
        let prints = crate::watch::fingerprint(store.root(), &step.files, &[]);
        let now = clock.now();
        let written = write::step(
            store,
            task_ref,
            now,
            StepWrite {
                id,
                expected: Some(was),
                status,
                reason: None,
            },
            |state, written| {
                if written {
                    state.record_runner(id, status, now, verifier.evidence(), prints.clone());
                }
            },
        )?;
        if was == StepStatus::Stale {
            sink(RunEvent::StaleReverified {
                step: id,
                passed,
                has_verify: verifier.has_commands(),
            });
        }
        outcomes.push(match (written, passed, verifier.has_commands()) {
            (StatusWrite::Kept { .. } | StatusWrite::Missing, _, _) => Reverified::Kept(id),
            (_, true, _) => Reverified::Passed(id),
            (_, false, true) => Reverified::Failed(id),
            (_, false, false) => Reverified::Reopened(id),
        });
    }
    Ok(outcomes)
}
