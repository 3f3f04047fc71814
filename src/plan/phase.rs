//! A task's phase and the one table that says which events move it where. Every command asks
//! [`transition`] before it changes anything, so the rules live in one place.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::step::StepStatus;

/// Where a plan is in its life. Stored as `status:` in PLAN.md's front matter; for an approved
/// task the steps in TODO.md decide it (see [`Progress::phase`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Draft,
    NeedsInput,
    Approved,
    Executing,
    Blocked,
    Completed,
    Cancelled,
}

impl Phase {
    pub const ALL: [Phase; 7] = [
        Phase::Draft,
        Phase::NeedsInput,
        Phase::Approved,
        Phase::Executing,
        Phase::Blocked,
        Phase::Completed,
        Phase::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Draft => "draft",
            Phase::NeedsInput => "needs-input",
            Phase::Approved => "approved",
            Phase::Executing => "executing",
            Phase::Blocked => "blocked",
            Phase::Completed => "completed",
            Phase::Cancelled => "cancelled",
        }
    }

    /// Whether nothing more will happen to the task unless a person reopens it.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Completed | Phase::Cancelled)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Phase::ALL
            .into_iter()
            .find(|phase| phase.as_str() == text)
            .ok_or_else(|| {
                format!("`{text}` is not a status (draft, needs-input, approved, executing, blocked, completed, cancelled)")
            })
    }
}

/// How far the steps of a task are, counted over top-level steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub total: usize,
    pub done: usize,
    pub in_progress: usize,
    pub blocked: usize,
    pub stale: usize,
}

impl Progress {
    pub fn from_statuses(statuses: impl IntoIterator<Item = StepStatus>) -> Self {
        let mut progress = Progress::default();
        for status in statuses {
            progress.total += 1;
            match status {
                StepStatus::Done => progress.done += 1,
                StepStatus::InProgress => progress.in_progress += 1,
                StepStatus::Blocked => progress.blocked += 1,
                StepStatus::Stale => progress.stale += 1,
                StepStatus::Pending => {}
            }
        }
        progress
    }

    /// The phase these steps put an approved task in.
    pub fn phase(self) -> Phase {
        if self.total > 0 && self.done == self.total {
            Phase::Completed
        } else if self.blocked > 0 {
            Phase::Blocked
        } else if self.done + self.in_progress + self.stale > 0 {
            Phase::Executing
        } else {
            Phase::Approved
        }
    }
}

/// Something that happens to a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The planner asked questions a person must answer.
    AskQuestions,
    /// A person answered the planner's questions, or asked for a revision.
    Revise,
    /// A person approved the plan (a draft, or a task whose PLAN.md changed since approval).
    Approve,
    /// A person threw the draft away.
    Discard,
    /// A run starts executing steps.
    Run,
    /// Step statuses changed (a person's `mark`, the runner, a hand edit); the steps now stand
    /// as `Progress` says.
    StepsChanged(Progress),
    /// A person gave the task up.
    Cancel,
    /// A person asked the planner to re-plan an approved task (`tick plan --revise "..."
    /// TASK`): a new version of its PLAN.md waits for approval; the task keeps its phase and
    /// runs nothing until `tick approve TASK`.
    Replan,
}

/// Why an event is not allowed in a phase, and what the person can do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub hint: String,
}

fn refuse(reason: &str, hint: &str) -> Result<Phase, Refusal> {
    Err(Refusal {
        reason: reason.to_owned(),
        hint: hint.to_owned(),
    })
}

/// The transition table. `Ok(next)` is the phase after `event`; a refusal says why not.
/// `Discard` leads to `Cancelled`: the draft is gone.
pub fn transition(from: Phase, event: Event) -> Result<Phase, Refusal> {
    use Event as E;
    use Phase as P;
    match (from, event) {
        // Under review.
        (P::Draft | P::NeedsInput, E::AskQuestions) => Ok(P::NeedsInput),
        (P::Draft | P::NeedsInput, E::Revise) => Ok(P::Draft),
        (P::Draft, E::Approve) => Ok(P::Approved),
        (P::NeedsInput, E::Approve) => refuse(
            "the planner is waiting for answers to its open questions",
            "answer them with `tick plan --answer \"...\"`, or edit the draft and set `status: draft`",
        ),
        (P::Draft | P::NeedsInput, E::Discard | E::Cancel) => Ok(P::Cancelled),
        (P::Draft | P::NeedsInput, E::Run | E::StepsChanged(_)) => refuse(
            "the plan is not approved yet",
            "review it with `tick show`, then `tick approve`",
        ),

        // Approved and on the way.
        (P::Approved | P::Executing | P::Blocked | P::Completed, E::Approve) => Ok(from),
        (P::Approved | P::Executing | P::Blocked, E::Run) => Ok(P::Executing),
        (P::Approved | P::Executing | P::Blocked | P::Completed, E::StepsChanged(progress)) => {
            Ok(progress.phase())
        }
        (P::Approved | P::Executing | P::Blocked, E::Cancel) => Ok(P::Cancelled),
        // Nothing to run: the run ends at once, and the task stays completed.
        (P::Completed, E::Run) => Ok(P::Completed),
        (P::Completed, E::Cancel) => refuse(
            "the task is already completed",
            "a completed task stays as a record; `tick list` shows it",
        ),
        (P::Approved | P::Executing | P::Blocked | P::Completed, E::Replan) => Ok(from),
        (P::Draft | P::NeedsInput, E::Replan) => refuse(
            "the draft is not a task yet",
            "revise the draft with `tick plan --revise \"...\"`",
        ),
        (
            P::Approved | P::Executing | P::Blocked | P::Completed,
            E::AskQuestions | E::Revise | E::Discard,
        ) => refuse(
            "the plan was already approved; only drafts are revised or discarded",
            "re-plan it with `tick plan --revise \"...\" <task>`, or edit PLAN.md by hand, then `tick approve <task>` again",
        ),

        // Given up.
        (P::Cancelled, _) => refuse(
            "the task was cancelled",
            "set `status: approved` in its PLAN.md to take it up again",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(total: usize, done: usize, blocked: usize) -> Progress {
        Progress {
            total,
            done,
            blocked,
            ..Progress::default()
        }
    }

    /// Every phase against every kind of event: the whole table, written out once more so a
    /// change to one arm of `transition` shows up here.
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "the whole table written out, one row per phase: its length is the table's"
    )]
    fn the_whole_table() {
        use Event as E;
        use Phase as P;
        let some = progress(3, 1, 0);
        let events = [
            ("ask", E::AskQuestions),
            ("revise", E::Revise),
            ("approve", E::Approve),
            ("discard", E::Discard),
            ("run", E::Run),
            ("steps", E::StepsChanged(some)),
            ("cancel", E::Cancel),
            ("replan", E::Replan),
        ];
        let expected: [(P, [Option<P>; 8]); 7] = [
            (
                P::Draft,
                [
                    Some(P::NeedsInput),
                    Some(P::Draft),
                    Some(P::Approved),
                    Some(P::Cancelled),
                    None,
                    None,
                    Some(P::Cancelled),
                    None,
                ],
            ),
            (
                P::NeedsInput,
                [
                    Some(P::NeedsInput),
                    Some(P::Draft),
                    None,
                    Some(P::Cancelled),
                    None,
                    None,
                    Some(P::Cancelled),
                    None,
                ],
            ),
            (
                P::Approved,
                [
                    None,
                    None,
                    Some(P::Approved),
                    None,
                    Some(P::Executing),
                    Some(P::Executing),
                    Some(P::Cancelled),
                    Some(P::Approved),
                ],
            ),
            (
                P::Executing,
                [
                    None,
                    None,
                    Some(P::Executing),
                    None,
                    Some(P::Executing),
                    Some(P::Executing),
                    Some(P::Cancelled),
                    Some(P::Executing),
                ],
            ),
            (
                P::Blocked,
                [
                    None,
                    None,
                    Some(P::Blocked),
                    None,
                    Some(P::Executing),
                    Some(P::Executing),
                    Some(P::Cancelled),
                    Some(P::Blocked),
                ],
            ),
            (
                P::Completed,
                [
                    None,
                    None,
                    Some(P::Completed),
                    None,
                    Some(P::Completed),
                    Some(P::Executing),
                    None,
                    Some(P::Completed),
                ],
            ),
            (
                P::Cancelled,
                [None, None, None, None, None, None, None, None],
            ),
        ];
        for (from, row) in expected {
            for ((name, event), want) in events.iter().zip(row) {
                let got = transition(from, *event).ok();
                assert_eq!(got, want, "{from} --{name}-->");
            }
        }
    }

    #[test]
    fn refusals_say_what_to_do() {
        for phase in Phase::ALL {
            for event in [
                Event::Run,
                Event::Approve,
                Event::Discard,
                Event::Cancel,
                Event::Replan,
            ] {
                if let Err(refusal) = transition(phase, event) {
                    assert!(!refusal.reason.is_empty());
                    assert!(
                        refusal.hint.contains('`'),
                        "{phase} {event:?}: {}",
                        refusal.hint
                    );
                }
            }
        }
    }

    #[test]
    fn progress_decides_the_phase_of_a_task() {
        assert_eq!(progress(3, 0, 0).phase(), Phase::Approved);
        assert_eq!(progress(3, 1, 0).phase(), Phase::Executing);
        assert_eq!(progress(3, 1, 1).phase(), Phase::Blocked);
        assert_eq!(progress(3, 3, 0).phase(), Phase::Completed);
        assert_eq!(progress(0, 0, 0).phase(), Phase::Approved);
        let stale = Progress {
            total: 2,
            done: 1,
            stale: 1,
            ..Progress::default()
        };
        assert_eq!(stale.phase(), Phase::Executing);
        assert_eq!(
            transition(Phase::Completed, Event::StepsChanged(progress(3, 2, 0))),
            Ok(Phase::Executing),
            "unticking a step reopens a completed task"
        );
        assert_eq!(
            transition(Phase::Executing, Event::StepsChanged(progress(3, 3, 0))),
            Ok(Phase::Completed)
        );
    }

    #[test]
    fn phases_parse() {
        for phase in Phase::ALL {
            assert_eq!(phase.as_str().parse::<Phase>(), Ok(phase));
        }
        assert!("done".parse::<Phase>().is_err());
    }
}
