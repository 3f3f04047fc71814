//! A local re-plan the executor proposed with `propose_replan` (DESIGN §3, "Blocked is not
//! the end"): checked against the task while the step's turn runs ([`Check`], a refusal goes
//! back to the model and the turn goes on), and once accepted written like every re-plan
//! ([`Runner::record_replanned`]): the step `[!]` with why and the new PLAN.md, a revision
//! waiting for `tick approve`, in one transaction; the re-plan in the task's log. Blocked may
//! repair the plan, never continue by itself: the run stops here.

use super::write::{self, StepWrite};
use super::{Attributed, RunEvent, Runner, Sink, StepOutcome};
use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::planning::approve::REPLANNED_PREFIX;
use crate::planning::replan::{check_local, keep_approved, local_plan_text, revision_diff};
use crate::tasks::state::PendingReplan;
use crate::tasks::{Task, plan_md};
use crate::tools::ReplanProposal;
use crate::tools::propose_replan::refusal;

/// What a proposal made during step `step` of `task` (as loaded before the step) is checked
/// against.
pub(super) struct Check<'t> {
    pub task: &'t Task,
    pub step: StepId,
    /// `limits.replan_max_new_steps`.
    pub max_new: usize,
}

impl Check<'_> {
    /// `Err` is the refusal for the model, naming every problem.
    pub fn check(&self, proposal: &ReplanProposal) -> std::result::Result<(), String> {
        // The task's PLAN.md was parsed and checked when it was loaded; its steps are read
        // only now, when a proposal needs them.
        let plan = plan_md::parse(&self.task.plan_src)
            .map_err(|e| refusal(&[format!("tick could not read PLAN.md's steps: {e}")]))?;
        check_local(
            &plan.steps,
            &self.task.todo,
            self.step,
            proposal,
            self.max_new,
        )
        .map(drop)
        .map_err(|problems| refusal(&problems))
    }
}

impl Runner<'_> {
    /// The model's accepted `proposal` for step `id`, written so that no instant of it is a
    /// lie, whenever a kill lands: first the approved plan is kept in `history/` (alone, it
    /// changes nothing a person reads: the copy reads like PLAN.md and is not counted as a
    /// version); then one transaction writes the step blocked with the reason, its record,
    /// the re-plan waiting in state.yaml and the new PLAN.md, all or nothing (a step that says
    /// "approve the new plan" always has one); then the re-plan is logged, and the run stops
    /// for the person.
    pub(super) fn record_replanned(
        &self,
        id: StepId,
        proposal: &ReplanProposal,
        evidence: &[crate::tasks::state::Evidence],
        changes: &Attributed,
        sink: &mut Sink<'_>,
    ) -> Result<StepOutcome> {
        let store = self.store();
        let task = store.load(&self.deps.task)?;
        let plan_path = task.dir.join(crate::tasks::PLAN_FILE);
        let plan = plan_md::parse(&task.plan_src).map_err(|e| store.parse_error(&plan_path, &e))?;
        // Checked again on the files as they are now: a person may have edited them meanwhile.
        let replan = check_local(
            &plan.steps,
            &task.todo,
            id,
            proposal,
            self.deps.limits.replan_max_new_steps,
        )
        .map_err(|problems| {
            Error::input(format!(
                "the re-plan proposed for `{id}` no longer fits the plan: {}",
                problems.join("; ")
            ))
            .hint(format!(
                "PLAN.md or TODO.md changed while the step ran; nothing was re-planned and \
                 `{id}` stays in progress; `tick run` picks it up again"
            ))
        })?;
        // The reason is the model's text: written only redacted, like every text tick writes.
        let secrets: Vec<&str> = self.deps.secrets.iter().map(String::as_str).collect();
        let reason = crate::redact::redact(&replan.reason, &secrets);
        let blocked = format!(
            "{REPLANNED_PREFIX}{reason}; approve the new plan with `tick approve {}`",
            task.id
        );
        let now = self.deps.clock.precise();
        let pending = PendingReplan {
            step: id,
            reason: reason.clone(),
            at: now,
        };
        let write = StepWrite {
            id,
            expected: Some(StepStatus::InProgress),
            status: StepStatus::Blocked,
            reason: Some(&blocked),
        };
        let version = keep_approved(&task)?;
        let mut new_plan = None;
        let written = write::step_with(
            store,
            &self.deps.task,
            now,
            write,
            |state, written| {
                super::blocked_record(state, written, id, now, evidence, changes);
                state.pending_replan = Some(pending.clone());
            },
            |tx| {
                // PLAN.md as this transaction read it, with the step rewritten; its `status:`
                // follows the phase the commit moves to.
                let plan = plan_md::parse(&tx.base().plan_src)
                    .map_err(|e| store.parse_error(&plan_path, &e))?;
                let text = crate::redact::redact(&local_plan_text(&plan, &replan)?, &secrets);
                new_plan =
                    Some(plan_md::parse(&text).map_err(|e| store.parse_error(&plan_path, &e))?);
                tx.set_plan(text);
                Ok(())
            },
        )?;
        self.write_events(id, StepStatus::Blocked, written, sink);
        let diff = match &new_plan {
            Some(new) => revision_diff(&task, new)?,
            None => None,
        };
        crate::tasks::journal::replanned(&task.dir, id, &reason, version, now);
        sink(RunEvent::Replanned {
            task: task.id.clone(),
            named: crate::tasks::naming::task_named(store, &task.id),
            step: id,
            reason,
            added: replan.added(),
            version,
            diff,
        });
        Ok(StepOutcome::Blocked)
    }
}
