//! A verify must be able to fail. Before the model's turn on a step that has not changed its
//! files yet, the runner runs the step's verify once (as every verify runs: sandboxed, with
//! its timeout). A verify that already passes cannot tell done from not done, so: the person
//! is told ([`RunEvent::VerifyPassedBefore`], and `tick status` from state.yaml's
//! `verify_passed_before`), and a `done` claim on the step needs a change to the step's own
//! files. A claim without one goes back to the model with the reason; a second blocks the step.
//! Every executor (the agent loop, the compact one) goes through the same [`Hooks`].

use std::collections::BTreeSet;

use super::changes::{self, Snapshot};
use super::events::RunEvent;
use super::{Hooks, Work};
use crate::agent::executor::Verdict;

/// What is known about a step whose verify passed before its first change.
#[derive(Debug)]
pub(super) struct PassedBefore {
    commands: Vec<String>,
    /// The step's files (and what git saw changed) once that verify had run.
    before: Snapshot,
    claims: u32,
}

impl Hooks<'_, '_, '_> {
    /// Runs the step's verify once before the model's turn, unless the step has none or an
    /// earlier attempt already changed its files; remembers it when it passes.
    pub(super) fn verify_before_change(&mut self) {
        if self.earlier_changed || !self.verifier.has_commands() {
            return;
        }
        let passed = matches!(
            self.verifier
                .clone()
                .verify(&mut self.recorder, &mut |_| {}),
            Verdict::Passed { .. }
        );
        if !passed {
            return;
        }
        let commands = self.verifier.commands().to_vec();
        self.emitter.emit(RunEvent::VerifyPassedBefore {
            step: self.step,
            commands: commands.clone(),
        });
        self.passed_before = Some(PassedBefore {
            commands,
            before: Snapshot::take(self.root, &self.scope, &BTreeSet::new()),
            claims: 0,
        });
    }

    /// A `done` claim on a step whose verify passed before the change: `None` when one of the
    /// step's files (any file, for a step that names none) changed since; else the verdict
    /// that sends it back to the model, or after a second such claim blocks it.
    pub(super) fn claim_after_passed_before(&mut self) -> Option<Verdict> {
        let step = self.step;
        let passed = self.passed_before.as_mut()?;
        let looked_at: BTreeSet<String> = passed.before.files.keys().cloned().collect();
        let after = Snapshot::take(self.root, &self.scope, &looked_at);
        let changed = passed.before.changed(&after);
        if changed_in_scope(&self.scope, &changed) {
            return None;
        }
        passed.claims += 1;
        let (verify, files) = (quoted(&passed.commands), scope_words(&self.scope));
        Some(if passed.claims >= 2 {
            Verdict::GaveUp {
                reason: format!(
                    "claimed done twice without changing {files}, and its verify {verify} \
                     passed before the change, so it cannot show the step done (if nothing \
                     needed changing, `tick mark {step} done`)"
                ),
            }
        } else {
            Verdict::Failed {
                report: format!(
                    "Not ticked: the verify {verify} already passed before any change, so it \
                     cannot tell done from not done, and none of {step}'s files ({files}) has \
                     changed. Make the change the step asks for in its files, then claim done \
                     again; or say blocked with why."
                ),
            }
        })
    }
}

/// Whether `changed` holds one of the step's files (`scope`), or any file for a step that
/// names none: the change a done claim after a passing baseline needs (`tick run` and
/// `tick mcp serve` alike).
pub(crate) fn changed_in_scope(scope: &[String], changed: &BTreeSet<String>) -> bool {
    (scope.is_empty() && !changed.is_empty())
        || changes::deviations(scope, changed).len() < changed.len()
}

/// The verify commands, each in backticks, for a sentence.
pub(crate) fn quoted(commands: &[String]) -> String {
    commands
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The step's files for a sentence: "any file" for a step that names none.
pub(crate) fn scope_words(scope: &[String]) -> String {
    if scope.is_empty() {
        "any file".to_owned()
    } else {
        scope.join(", ")
    }
}

impl Work {
    /// Whether the step's verify passed before its first change (for state.yaml).
    pub(super) fn verify_passed_before(&self) -> bool {
        self.passed_before
    }
}
