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
use crate::hooks::{Event, HookSet};
use crate::plan::{StepId, StepStatus};
use crate::tasks::todo_md::Step;
use crate::tasks::{Store, TaskRef};
use crate::tools::bash::CommandEnv;

/// What became of one step `tick verify` looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reverified {
    /// Its verification passed: `[x]` with new evidence.
    Passed(StepId),
    /// Its verification passed, but it passed before the step's change too, so it shows
    /// nothing: `[x]` with new evidence, still not verified.
    PassedAsBefore(StepId),
    /// Its verification failed: open again (`[ ]`).
    Failed(StepId),
    /// Done, but with no `verify` to run: left as it is.
    Unverifiable(StepId),
    /// Stale with no `verify` to run: open again, to be redone.
    Reopened(StepId),
    /// A person changed its marker while the commands ran; theirs is kept.
    Kept(StepId),
    /// A parent whose sub-steps are done: its own verification failed, so it is not ticked.
    Unchecked(StepId),
}

impl Reverified {
    /// The step verified again.
    pub fn step(&self) -> StepId {
        match self {
            Reverified::Passed(id)
            | Reverified::PassedAsBefore(id)
            | Reverified::Failed(id)
            | Reverified::Unverifiable(id)
            | Reverified::Reopened(id)
            | Reverified::Kept(id)
            | Reverified::Unchecked(id) => *id,
        }
    }

    /// Whether the step is open again, to be redone: `tick verify` ends blocked.
    pub fn reopens(&self) -> bool {
        matches!(
            self,
            Reverified::Failed(_) | Reverified::Reopened(_) | Reverified::Unchecked(_)
        )
    }
}

/// The steps `tick verify` checks again: the done and stale ones, and a parent whose
/// sub-steps are all done but whose own `verify` has not ticked it yet (of `only`, when it
/// names some), in file order but each parent after its sub-steps, since what they show
/// decides whether it is checked.
pub fn to_verify<'t>(
    todo: &'t crate::tasks::todo_md::Checklist,
    only: &[StepId],
) -> Vec<&'t crate::tasks::todo_md::Step> {
    let wanted = |step: &Step| {
        step.id
            .is_some_and(|id| only.is_empty() || only.contains(&id))
            && (matches!(step.status, StepStatus::Done | StepStatus::Stale)
                || step.awaits_its_check())
    };
    let mut steps = Vec::new();
    for step in &todo.steps {
        steps.extend(step.substeps.iter().filter(|sub| wanted(sub)));
        if wanted(step) {
            steps.push(step);
        }
    }
    steps
}

/// Verifies the steps [`to_verify`] names of `task_ref` again, each as the task reads just
/// before it (a sub-step reopened a moment ago unticks its parent, which is then not
/// checked). The caller holds the task lock.
pub fn verify_steps(
    store: &Store,
    task_ref: &TaskRef,
    env: &CommandEnv,
    hooks: &HookSet,
    only: &[StepId],
    clock: &Clock,
    sink: &mut Sink<'_>,
) -> Result<Vec<Reverified>> {
    let first = store.load(task_ref)?;
    let ids: Vec<StepId> = to_verify(&first.todo, only)
        .iter()
        .filter_map(|s| s.id)
        .collect();
    let mut outcomes = Vec::new();
    for id in ids {
        let task = store.load(task_ref)?;
        let Some(step) = task.todo.find(id) else {
            continue;
        };
        let was = step.status;
        let awaits = step.awaits_its_check();
        if !matches!(was, StepStatus::Done | StepStatus::Stale) && !awaits {
            continue;
        }
        if step.verify.is_empty() && was == StepStatus::Done {
            // A parent with no check of its own is checked by its sub-steps, just above.
            if step.substeps.is_empty() || !only.is_empty() {
                outcomes.push(Reverified::Unverifiable(id));
            }
            continue;
        }
        let again = reverify_step(store, task_ref, &task.id, (env, hooks), clock, step, sink)?;
        let (written, passed, has_verify) = (again.written, again.passed, again.has_verify);
        if was == StepStatus::Stale {
            sink(RunEvent::StaleReverified {
                step: id,
                passed,
                has_verify,
            });
        }
        outcomes.push(match (written, passed, has_verify) {
            (StatusWrite::Kept { .. } | StatusWrite::Missing, _, _) => Reverified::Kept(id),
            (_, true, _) if task.state.verify_passed_before(id) => Reverified::PassedAsBefore(id),
            (_, true, _) => Reverified::Passed(id),
            // A parent waiting for its check stays as it was: its sub-steps are done.
            (_, false, true) if awaits => Reverified::Unchecked(id),
            (_, false, true) => Reverified::Failed(id),
            (_, false, false) => Reverified::Reopened(id),
        });
    }
    Ok(outcomes)
}

/// The hooks of `event` for `step` (id given) of `task`, with its payload changed by `edit`:
/// what they decided. The one place a step's hooks are fired, for a run and for `tick verify`.
pub(super) fn fire_for_step(
    task: &crate::tasks::Task,
    root: &std::path::Path,
    checks: (&CommandEnv, &HookSet),
    step: &Step,
    event: Event,
    edit: impl FnOnce(&mut crate::hooks::Payload),
    sink: &mut Sink<'_>,
) -> crate::hooks::Fired {
    let (env, hooks) = checks;
    let Some(id) = step.id else {
        return crate::hooks::Fired::default();
    };
    let mut payload = crate::hooks::Payload::for_step(task, id, step, root);
    edit(&mut payload);
    let how = crate::hooks::Fire {
        root,
        env,
        read_only: false,
        runs_dir: task.dir.join(crate::tasks::RUNS_DIR),
        step: Some(id),
    };
    crate::hooks::fire(
        hooks,
        &how,
        event,
        &id.to_string(),
        &payload,
        &mut |report| sink(RunEvent::Hook(report)),
    )
}

/// What [`reverify_step`] did.
pub(super) struct StepReverified {
    /// The status it was given (unless `written` says a person's was kept).
    pub status: StepStatus,
    pub written: StatusWrite,
    pub passed: bool,
    /// Whether the step had a verification to run.
    pub has_verify: bool,
}

/// Runs the verification of `step` (done or stale, id given) of task `task_id` again and
/// writes what it showed: a pass is `[x]` with the new evidence and fingerprints; a failure, or
/// nothing to run, is `[ ]`. A person's change of the marker while the commands ran is kept.
/// The commands run in `checks`' environment, and its `step.verify` hooks after they pass, as
/// in a run: a hook that refuses is a failure, and its verdict is evidence.
/// The one re-verification of `tick verify`, `tick redo` and a run's stale steps.
pub(super) fn reverify_step(
    store: &Store,
    task_ref: &TaskRef,
    task_id: &str,
    checks: (&CommandEnv, &HookSet),
    clock: &Clock,
    step: &Step,
    sink: &mut Sink<'_>,
) -> Result<StepReverified> {
    let (env, hooks) = checks;
    let Some(id) = step.id else {
        return Err(crate::error::Error::internal(
            "a step without an id was verified again",
        ));
    };
    let mut verifier = StepVerifier::new(store.root(), env, id, &step.verify);
    let mut recorder = Recorder::new(
        store,
        task_id,
        id,
        &step.files,
        clock.clone(),
        SystemTime::now(),
    );
    let has_verify = verifier.has_commands();
    let mut passed = has_verify
        && matches!(
            verifier.verify(&mut recorder, &mut *sink),
            Verdict::Passed { .. }
        );
    if passed && hooks.has(Event::StepVerify) {
        let task = store.load(task_ref)?;
        let evidence = verifier.evidence().to_vec();
        let fired = fire_for_step(
            &task,
            store.root(),
            (env, hooks),
            step,
            Event::StepVerify,
            |p| p.evidence = evidence,
            sink,
        );
        verifier.add_evidence(fired.evidence);
        passed = fired.block.is_none();
    }
    let status = if passed {
        StepStatus::Done
    } else {
        StepStatus::Pending
    };
    let prints = crate::watch::fingerprint(store.root(), &step.files, &[]);
    let now = clock.precise();
    let written = write::step(
        store,
        task_ref,
        now,
        StepWrite {
            id,
            expected: Some(step.status),
            status,
            reason: None,
        },
        |state, written| {
            if written {
                state.record_runner(id, status, now, verifier.evidence(), prints.clone());
            }
        },
    )?;
    // Ticked on its evidence, as a run ticks a step: an imported source's task is ticked too.
    if passed
        && matches!(written, StatusWrite::Written(_))
        && let Some(ticked) = super::source::tick_source(store, task_ref, id, now)
    {
        sink(ticked);
    }
    Ok(StepReverified {
        status,
        written,
        passed,
        has_verify,
    })
}
