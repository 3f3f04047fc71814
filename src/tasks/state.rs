//! state.yaml: the runner's own facts about a task, committed beside PLAN.md and TODO.md. The
//! approval (what was approved, when, on which commit) and, per step, when it changed, who
//! ticked it, and the evidence behind the tick. Small, deterministic, sorted.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::plan::{StepId, StepStatus};

pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steps: BTreeMap<StepId, StepRecord>,
    /// When a `tick run` of this task last ran the agent's commands without the sandbox
    /// (`--no-sandbox`, `sandbox: off`). Never cleared: what those commands did is not
    /// contained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsandboxed_run: Option<DateTime<Utc>>,
    /// The last run attempt that failed, until one succeeds: `status` shows it, `check`
    /// reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt: Option<LastAttempt>,
    /// A local re-plan the executor proposed (`propose_replan`) whose revision of PLAN.md
    /// waits for approval; `tick approve` reopens its step and clears it, and so does
    /// `tick answer` on its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_replan: Option<PendingReplan>,
    /// The plan `tick plan --revise` wrote over the approved one, until it is approved: while
    /// PLAN.md is still what tick wrote, `tick run` and `status` say tick re-planned it; once a
    /// person changes it, it reads "edited after approval" again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replanned: Option<Replanned>,
    /// Where the task was imported from (`tick import`): the source file, and per step the
    /// source task's id and the mark tick ticks back when it ticks the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportRecord>,
}

/// A task's source file, from `tick import`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The tool's format (`speckit`, `kiro`, ...).
    pub format: String,
    /// The source file, relative to the repository's root.
    pub path: String,
    /// Whether tick ticks the source when it ticks a step.
    pub write_back: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steps: BTreeMap<StepId, ImportedStep>,
}

/// One imported step: its source id and where its mark is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedStep {
    pub source: String,
    /// 1-based line of the mark, its byte offset in the line, the line's hash at import,
    /// and (Taskmaster) the task's `tag/id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub col: Option<usize>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// The executor's re-plan around `step`, waiting for a person's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingReplan {
    pub step: StepId,
    /// Why the step could not be done as planned, as the model said it (redacted).
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// A global re-plan written by tick (`tick plan --revise` of an approved task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replanned {
    /// The approval hash of the PLAN.md tick wrote (`plan_md::approval_hash`).
    pub plan_hash: String,
    pub at: DateTime<Utc>,
}

/// Why an attempt (a planning run, a run of a task) failed: when, the error, and what to do.
/// The draft's record lives in `.tasks/draft/last_attempt.yaml`, a task's in its state.yaml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastAttempt {
    pub at: DateTime<Utc>,
    /// The step the run was on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    pub cause: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hint: String,
}

impl LastAttempt {
    /// The record of `err`, the error the person saw, with its hints joined into one line.
    pub fn from_error(at: DateTime<Utc>, step: Option<StepId>, err: &crate::error::Error) -> Self {
        LastAttempt {
            at,
            step,
            cause: err.message.clone(),
            hint: err.hints.join("; "),
        }
    }

    /// The hint as it reads now, for task `named` ([`crate::tasks::naming::task_named`]): a
    /// bare `tick run` in it was written while the task was the current one, and would now
    /// run whichever task is current, so it names the task when that is not this one.
    pub fn hint_for(&self, named: &str) -> String {
        self.hint
            .replace("`tick run`", &format!("`tick run{named}`"))
    }

    /// One line for `status` and `check`: when, where, and why.
    pub fn summary(&self) -> String {
        let step = self.step.map(|s| format!(" at `{s}`")).unwrap_or_default();
        format!(
            "the last attempt failed{step} at {}: {}",
            self.at.format("%Y-%m-%d %H:%M UTC"),
            self.cause
        )
    }
}

/// What was approved: hashes of PLAN.md and of its steps, and the commit it was approved on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub approved_at: DateTime<Utc>,
    pub plan_hash: String,
    pub steps_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
    /// The hash of the draft's PLAN.md this task was approved from, so an approval cut short
    /// after the task folder appeared is finished (the draft removed) instead of repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_hash: Option<String>,
    /// The hooks that applied when the task was approved (`crate::hooks::approval`): a hook
    /// added, removed or changed since makes `tick run` refuse until approved again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<ApprovedHook>,
    /// Other active tasks whose steps change the same files, as the person was shown them
    /// when approving (`S2 and S4 of 20261201-...-auth both change src/lib.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<String>,
}

/// One hook as an approval records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovedHook {
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub command: String,
    /// The repository's files the command names, with their content hashes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub scripts: std::collections::BTreeMap<String, String>,
}

/// Who last changed a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// A person, through `tick mark`.
    Person,
    /// The runner, after verification.
    Runner,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StepStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<Actor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<DateTime<Utc>>,
    /// The verification that backs the tick; empty means done without verification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Files the step changed outside its declared `files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deviations: Vec<String>,
    /// Files a person changed while the step ran (not through tick's tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_edits: Vec<String>,
    /// What the model said it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Content hashes of the step's files when it was ticked, moved forward when tick itself
    /// changes one of them later.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fingerprints: BTreeMap<String, String>,
    /// After the tick, tick itself changed files of this done step while running another
    /// task: not stale, but worth a look (`tick check --strict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub later_changes: Vec<LaterChange>,
    /// The model claimed the step done while no file changed and it ran no command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub claimed_without_changes: bool,
    /// The step's verify passed before the step changed anything: it cannot tell done from
    /// not done on its own (a done claim then needs a change to the step's files).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_passed_before: bool,
    /// The step's blocks that a person lifted, oldest first: the question and, when given
    /// with `tick answer`, the answer. The next turn on the step is told the last one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unblocked: Vec<Unblock>,
    /// The evidence of the step's last tick before a re-approved plan changed the step and
    /// reopened it: history, not proof of the step as it now reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_evidence: Vec<Evidence>,
    /// Files the step changed whose before-image tick did not keep (larger than
    /// `limits.max_undo_bytes`, not a regular file, or with nothing to take it from):
    /// `tick undo` cannot put these back, and says so before it starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_images_not_kept: Vec<String>,
    /// The step's undos, oldest first (`tick undo`): what was put back, and the evidence the
    /// tick had. History: the step itself is open again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undone: Vec<Undone>,
}

/// One `tick undo` of a step: when, the files put back, the tick it took back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undone {
    /// Names this undo (its images in `runs/images/`, its write-ahead record).
    pub id: String,
    pub at: DateTime<Utc>,
    /// The files put back as they were before the step.
    pub files: Vec<String>,
    /// Files of the step left as they are (`--only` named others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// When the step had been ticked, and the evidence of that tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The step's commit, reverted by a commit with `Reverts-Step:` and `Task:` trailers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<String>,
    /// Steps that went stale because of this undo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made_stale: Vec<StepId>,
    /// When `tick redo` put the step's changes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redone_at: Option<DateTime<Utc>>,
}

/// A block a person lifted: `tick answer` (with the answer) or `tick mark … pending`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unblock {
    pub at: DateTime<Utc>,
    /// The `blocked:` reason the step had, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// A change tick made to a done step's file while running (another task's) step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaterChange {
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    pub at: DateTime<Utc>,
    pub files: Vec<String>,
}

/// One verification command the runner ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub command: String,
    pub exit_code: i32,
    pub duration_ms: u64,
    pub output_hash: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
}

impl StepRecord {
    /// Whether the runner's own verification passed for this step's last tick.
    /// Ticked by tick on evidence that can tell done from not done: every command of the
    /// step's verify passed, and that verify did not already pass before the step changed
    /// anything (then it passes whether or not the step is done).
    pub fn verified(&self) -> bool {
        self.changed_by == Some(Actor::Runner)
            && !self.evidence.is_empty()
            && self.evidence.iter().all(|e| e.exit_code == 0)
            && !self.verify_passed_before
    }
}

impl State {
    pub fn new() -> Self {
        State {
            format: FORMAT,
            ..State::default()
        }
    }

    pub fn verified(&self, id: StepId) -> bool {
        self.steps.get(&id).is_some_and(StepRecord::verified)
    }

    /// Whether step `id`'s verify passed before the step changed anything.
    pub fn verify_passed_before(&self, id: StepId) -> bool {
        self.steps.get(&id).is_some_and(|r| r.verify_passed_before)
    }

    /// The state as state.yaml records it: a file name holding something shaped like a
    /// secret (a token as a name, `notes/ghp_….txt`) is written with the secret redacted, in
    /// `files_changed`, `deviations`, `outside_edits`, `later_changes` and as a fingerprint's
    /// key (the hash beside it is the content's, which holds no name). A redacted fingerprint
    /// names no file on disk, so staleness leaves it out: such a file is not watched, the
    /// price of never committing the secret.
    pub fn with_paths_redacted(&self) -> std::borrow::Cow<'_, State> {
        let clean = |path: &String| crate::redact::redact(path, &[]);
        let needs = self.steps.values().any(|record| {
            record
                .files_changed
                .iter()
                .chain(&record.deviations)
                .chain(&record.outside_edits)
                .chain(record.fingerprints.keys())
                .chain(record.later_changes.iter().flat_map(|c| &c.files))
                .any(|path| clean(path) != *path)
        });
        if !needs {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut state = self.clone();
        for record in state.steps.values_mut() {
            for list in [
                &mut record.files_changed,
                &mut record.deviations,
                &mut record.outside_edits,
            ] {
                for path in list.iter_mut() {
                    *path = clean(path);
                }
            }
            for change in &mut record.later_changes {
                for path in &mut change.files {
                    *path = clean(path);
                }
            }
            record.fingerprints = std::mem::take(&mut record.fingerprints)
                .into_iter()
                .map(|(path, hash)| (clean(&path), hash))
                .collect();
        }
        std::borrow::Cow::Owned(state)
    }

    /// Records that the runner set step `id` to `status` at `now`, with the verification it
    /// ran (`evidence`). Only a done step keeps content `fingerprints`; for any other status
    /// they are dropped. Returns the record for the caller to add what else it knows.
    pub fn record_runner(
        &mut self,
        id: StepId,
        status: StepStatus,
        now: DateTime<Utc>,
        evidence: &[Evidence],
        fingerprints: BTreeMap<String, String>,
    ) -> &mut StepRecord {
        let record = self.steps.entry(id).or_default();
        record.status = Some(status);
        record.changed_at = Some(now);
        record.changed_by = Some(Actor::Runner);
        record.evidence = evidence.to_vec();
        let done = status == StepStatus::Done;
        record.done_at = done.then_some(now);
        record.fingerprints = if done { fingerprints } else { BTreeMap::new() };
        record.later_changes.clear();
        record.claimed_without_changes = false;
        record
    }

    /// Records a failed attempt (the runner calls this when a run ends in an error), replacing
    /// an older record.
    pub fn record_failure(&mut self, attempt: LastAttempt) {
        self.last_attempt = Some(attempt);
    }

    /// Forgets the failure record: an attempt since succeeded.
    pub fn clear_failure(&mut self) {
        self.last_attempt = None;
    }

    /// Records that a person lifted step `id`'s block at `now`: the question it had and the
    /// answer, if one was given. The step's own status is recorded with [`State::record_person`].
    pub fn record_unblock(
        &mut self,
        id: StepId,
        question: Option<&str>,
        answer: Option<&str>,
        now: DateTime<Utc>,
    ) {
        self.steps.entry(id).or_default().unblocked.push(Unblock {
            at: now,
            question: question.map(str::to_owned),
            answer: answer.map(str::to_owned),
        });
    }

    /// Records that a re-approved plan changed step `id` and reopened it at `now`: its
    /// evidence moves to `earlier_evidence`, its fingerprints go (nothing it relied on is
    /// vouched for any more).
    pub fn reopen(&mut self, id: StepId, now: DateTime<Utc>) {
        let record = self.steps.entry(id).or_default();
        if !record.evidence.is_empty() {
            record.earlier_evidence = std::mem::take(&mut record.evidence);
        }
        record.status = Some(StepStatus::Pending);
        record.changed_at = Some(now);
        record.changed_by = Some(Actor::Person);
        record.done_at = None;
        record.fingerprints.clear();
        record.later_changes.clear();
        // `verify_passed_before` stays: the verify passed on the code as it was before the
        // step, and the step's earlier change is still there for the next attempt to build on,
        // so no new baseline can be taken. Not verified is the safe side.
    }

    /// Records that a person set step `id` to `status` at `now`. A person's tick carries no
    /// evidence, so it counts as done without verification.
    pub fn record_person(&mut self, id: StepId, status: StepStatus, now: DateTime<Utc>) {
        let record = self.steps.entry(id).or_default();
        record.status = Some(status);
        record.changed_at = Some(now);
        record.changed_by = Some(Actor::Person);
        record.evidence.clear();
        record.done_at = (status == StepStatus::Done).then_some(now);
        record.later_changes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_numeric_step_order() {
        let mut state = State::new();
        let now: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        state.record_person(StepId::top(10), StepStatus::Done, now);
        state.record_person(StepId::top(2), StepStatus::Blocked, now);
        let yaml = serde_yaml::to_string(&state).unwrap();
        assert!(
            yaml.find("S2:").unwrap() < yaml.find("S10:").unwrap(),
            "{yaml}"
        );
        let back: State = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, state);
        assert!(!state.verified(StepId::top(10)));
    }

    #[test]
    fn a_replan_record_round_trips_and_a_file_without_it_still_reads() {
        let old: State = serde_yaml::from_str("format: 1\nsteps: {}\n").unwrap();
        assert_eq!(old.replanned, None);
        assert!(!serde_yaml::to_string(&old).unwrap().contains("replanned"));
        let mut state = State::new();
        state.replanned = Some(Replanned {
            plan_hash: "abc".into(),
            at: "2026-11-30T14:30:12Z".parse().unwrap(),
        });
        let yaml = serde_yaml::to_string(&state).unwrap();
        insta::assert_snapshot!(yaml, @r"
        format: 1
        replanned:
          plan_hash: abc
          at: 2026-11-30T14:30:12Z
        ");
        let back: State = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn a_failure_record_round_trips_and_old_files_still_read() {
        let old: State = serde_yaml::from_str("format: 1\n").unwrap();
        assert_eq!(old.last_attempt, None);
        let mut state = State::new();
        let err = crate::error::Error::new(crate::error::ErrorKind::Provider, "the model failed")
            .hint("try again")
            .hint("or change the model");
        let at: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        state.record_failure(LastAttempt::from_error(at, Some(StepId::top(2)), &err));
        let yaml = serde_yaml::to_string(&state).unwrap();
        assert!(
            yaml.contains("last_attempt:\n  at: 2026-11-30T14:30:12Z\n  step: S2\n  cause: the model failed\n  hint: try again; or change the model\n"),
            "{yaml}"
        );
        let back: State = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, state);
        assert_eq!(
            state.last_attempt.as_ref().unwrap().summary(),
            "the last attempt failed at `S2` at 2026-11-30 14:30 UTC: the model failed"
        );
        state.clear_failure();
        assert!(
            !serde_yaml::to_string(&state)
                .unwrap()
                .contains("last_attempt")
        );
    }

    #[test]
    fn a_failure_is_recorded_and_cleared_leaving_the_rest() {
        let mut state = State::new();
        let at: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        state.record_person(StepId::top(1), StepStatus::Done, at);
        let before = state.clone();
        let err = crate::error::Error::new(crate::error::ErrorKind::Provider, "cut");
        state.record_failure(LastAttempt::from_error(at, None, &err));
        let back: State = serde_yaml::from_str(&serde_yaml::to_string(&state).unwrap()).unwrap();
        assert_eq!(back.steps, before.steps, "the rest is kept");
        assert_eq!(back.last_attempt.as_ref().unwrap().cause, "cut");
        state.clear_failure();
        assert_eq!(state, before);
    }

    #[test]
    fn verified_needs_runner_evidence_that_passed() {
        let mut record = StepRecord {
            changed_by: Some(Actor::Runner),
            ..StepRecord::default()
        };
        assert!(!record.verified());
        record.evidence.push(Evidence {
            command: "cargo test".into(),
            exit_code: 0,
            duration_ms: 10,
            output_hash: "h".into(),
            output_tail: String::new(),
        });
        assert!(record.verified());
        record.changed_by = Some(Actor::Person);
        assert!(!record.verified());
    }
}
