//! A task's history in time order, for `tick log`: built from what the task keeps, with no
//! I/O of its own. PLAN.md gives when it was created and approved, state.yaml when steps were
//! done, blocked, and unblocked (with the question and the answer), and the last failed
//! attempt; the task's journal (`runs/journal.jsonl`, local) adds each phase change and its
//! reason. A fresh clone has no journal: the committed files still tell most of the story.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Task;
use super::journal::Entry;
use super::state::Actor;
use crate::plan::StepStatus;

/// The version of `tick log --json`.
pub const FORMAT: u32 = 1;

/// `tick log --json`: one document, documented in `docs/json.md`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub format: u32,
    pub task: String,
    pub title: String,
    pub events: Vec<Event>,
}

/// What happened, one kind per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Created,
    Approved,
    Phase,
    Blocked,
    Unblocked,
    Answered,
    Done,
    Failed,
    Replanned,
    Undone,
    Redone,
    Stale,
    Reopened,
    Unticked,
    Edited,
    Interrupted,
    Revised,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Created => "created",
            Kind::Approved => "approved",
            Kind::Phase => "phase",
            Kind::Blocked => "blocked",
            Kind::Unblocked => "unblocked",
            Kind::Answered => "answered",
            Kind::Done => "done",
            Kind::Failed => "failed",
            Kind::Replanned => "replanned",
            Kind::Undone => "undone",
            Kind::Redone => "redone",
            Kind::Stale => "stale",
            Kind::Reopened => "reopened",
            Kind::Unticked => "unticked",
            Kind::Edited => "edited",
            Kind::Interrupted => "stopped",
            Kind::Revised => "revise",
        }
    }
}

/// One row of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub at: DateTime<Utc>,
    pub kind: Kind,
    pub step: Option<String>,
    pub text: String,
}

/// The history of `task` (with its journal `entries`, and when each earlier version of its
/// plan in `history/` was approved: `earlier[0]` is version 1), oldest first; rows at the
/// same instant keep the order of [`Kind`] (created before approved before the rest).
pub fn of(task: &Task, entries: &[Entry], earlier: &[Option<DateTime<Utc>>]) -> Vec<Event> {
    let mut events = plan_events(task, earlier);
    for entry in entries {
        match entry {
            Entry::Transition {
                at,
                from,
                to,
                reason,
            } => events.push(event(
                *at,
                Kind::Phase,
                None,
                format!("{from} → {to}: {reason}"),
            )),
            Entry::Replanned {
                at,
                step,
                reason,
                version,
            } => events.push(replanned(*at, step, reason, *version)),
            Entry::Step {
                at,
                step,
                from,
                to,
                reason,
                by_hand,
            } => events.extend(step_changed(*at, step, *from, *to, reason, *by_hand)),
            Entry::Interrupted { at, step, how } => {
                let text = match step {
                    Some(_) => {
                        format!("a person stopped the run ({how}); the step stays in progress")
                    }
                    None => format!("a person stopped the run ({how}) after the step"),
                };
                events.push(event(*at, Kind::Interrupted, step.clone(), text));
            }
            Entry::Revised { at, feedback } => events.push(event(
                *at,
                Kind::Revised,
                None,
                format!("a person asked for a revision: {feedback}"),
            )),
            Entry::Write { .. } | Entry::Command { .. } => {}
        }
    }

    // The re-plan waiting is in state.yaml (committed) before it is in the journal (local,
    // written last): a fresh clone, or a run killed in between, still shows it, once.
    if let Some(pending) = &task.state.pending_replan
        && task.plan_changed()
    {
        let step = pending.step.to_string();
        let logged = entries.iter().any(|entry| {
            matches!(entry, Entry::Replanned { at, step: s, .. } if *at == pending.at && *s == step)
        });
        if !logged {
            let version = earlier.len().max(1) + 1;
            events.push(replanned(pending.at, &step, &pending.reason, version));
        }
    }
    events.extend(step_events(task));
    if let Some(attempt) = &task.state.last_attempt {
        events.push(event(
            attempt.at,
            Kind::Failed,
            attempt.step.map(|s| s.to_string()),
            attempt.cause.clone(),
        ));
    }
    // Stable: rows of one instant keep the order they were gathered in, by kind.
    events.sort_by(|a, b| a.at.cmp(&b.at).then(a.kind.cmp(&b.kind)));
    if let Some(mut now) = phase_now(task, entries) {
        now.at = events.last().map_or(now.at, |last| last.at.max(now.at));
        events.push(now);
    }
    events
}

/// A marker change worth a row: a step gone stale, reopened by tick, unticked or otherwise
/// changed by a person. Ticks and blocks have their rows from state.yaml; a start has none.
fn step_changed(
    at: DateTime<Utc>,
    step: &str,
    from: StepStatus,
    to: StepStatus,
    reason: &str,
    by_hand: bool,
) -> Option<Event> {
    let was_done = matches!(from, StepStatus::Done | StepStatus::Stale);
    let moved = format!("[{}] → [{}]", from.marker(), to.marker());
    let person = by_hand || reason.starts_with("a person");
    let (kind, text) = match to {
        StepStatus::Stale if !by_hand => (Kind::Stale, format!("{moved}: {reason}")),
        StepStatus::Pending | StepStatus::InProgress if was_done && person => {
            let how = if by_hand {
                "by a person, in TODO.md".to_owned()
            } else {
                reason.to_owned()
            };
            (Kind::Unticked, format!("{moved}: {how}"))
        }
        StepStatus::Pending if was_done => (Kind::Reopened, format!("{moved}: {reason}")),
        _ if by_hand => (Kind::Edited, format!("{moved}: by a person, in TODO.md")),
        _ => return None,
    };
    Some(event(at, kind, Some(step.to_owned()), text))
}

/// The phase the task is in now, when TODO.md moved it since the last phase change logged (a
/// person's edit tick has not written back yet): a row saying so, so the last phase line is
/// the phase the task really has.
fn phase_now(task: &Task, entries: &[Entry]) -> Option<Event> {
    let (at, last) = entries.iter().rev().find_map(|entry| match entry {
        Entry::Transition { at, to, .. } => Some((*at, *to)),
        _ => None,
    })?;
    let progress = crate::plan::Progress::from_statuses(
        task.todo
            .steps
            .iter()
            .map(super::todo_md::Step::progress_status),
    );
    let now = crate::plan::transition(last, crate::plan::Event::StepsChanged(progress)).ok()?;
    (now != last).then(|| {
        event(
            at,
            Kind::Phase,
            None,
            format!("{last} → {now}: TODO.md as it is now (changed since, not by tick)"),
        )
    })
}

/// The executor's re-plan around `step`, which wrote `version` of the plan.
fn replanned(at: DateTime<Utc>, step: &str, reason: &str, version: usize) -> Event {
    event(
        at,
        Kind::Replanned,
        Some(step.to_owned()),
        format!(
            "the agent re-planned around {step} because {reason} (version {version} of the plan)"
        ),
    )
}

/// The plan's own events: created, each version approved, a revision waiting.
fn plan_events(task: &Task, earlier: &[Option<DateTime<Utc>>]) -> Vec<Event> {
    let mut events = Vec::new();
    let front = &task.plan.front;
    if let Some(at) = front.created {
        let goal = front.goal.clone().unwrap_or_else(|| task.title());
        events.push(event(at, Kind::Created, None, format!("planned: {goal}")));
    }
    for (index, at) in earlier.iter().enumerate() {
        if let Some(at) = at {
            events.push(event(
                *at,
                Kind::Approved,
                None,
                format!("version {} of the plan approved by a person", index + 1),
            ));
        }
    }
    let on_record = task.state.approval.as_ref().map(|a| a.approved_at);
    // A revision waiting for approval (a re-plan keeps the approved version in `history/`
    // as it writes the new one): the approval on record is the last version kept.
    let pending = task.plan_changed();
    let approved_at = on_record
        .or(front.approved)
        .filter(|_| !pending || earlier.is_empty());
    if let Some(at) = approved_at {
        let mut text = if earlier.is_empty() {
            String::from("approved by a person")
        } else {
            format!(
                "version {} of the plan approved by a person (re-planned)",
                earlier.len() + 1
            )
        };
        if let Some(approval) = &front.approval {
            if approval.allow_deviation {
                text.push_str("; files outside a step's `files` allowed");
            }
            if let Some(max) = approval.max_files_changed {
                text.push_str(&format!("; at most {max} files changed"));
            }
        }
        events.push(event(at, Kind::Approved, None, text));
    }
    // A revision (a re-plan or a hand edit) has no time of its own: it shows after the
    // approval it revises.
    if pending && let Some(at) = on_record {
        events.push(event(
            at,
            Kind::Replanned,
            None,
            format!(
                "version {} of the plan waits for approval (`tick approve`)",
                earlier.len().max(1) + 1
            ),
        ));
    }
    events
}

/// Each step's blocks lifted (answered or not), its block now, and its tick.
fn step_events(task: &Task) -> Vec<Event> {
    let mut events = Vec::new();
    for (id, record) in &task.state.steps {
        let step = Some(id.to_string());
        for lifted in &record.unblocked {
            let question = lifted.question.as_deref().unwrap_or("(no reason given)");
            let (kind, text) = match &lifted.answer {
                Some(answer) => (Kind::Answered, format!("{question} → {answer}")),
                None => (
                    Kind::Unblocked,
                    format!("{question} → made pending without an answer"),
                ),
            };
            events.push(event(lifted.at, kind, step.clone(), text));
        }
        if let (Some(at), Some(StepStatus::Blocked)) = (record.changed_at, record.status) {
            let reason = task
                .todo
                .find(*id)
                .and_then(|s| s.blocked.clone())
                .unwrap_or_else(|| "(no reason given)".to_owned());
            events.push(event(at, Kind::Blocked, step.clone(), reason));
        }
        for undone in &record.undone {
            let mut text = format!(
                "undone by a person (`tick undo`): put back {}",
                undone.files.join(", ")
            );
            if let Some(commit) = &undone.reverted {
                text.push_str(&format!(
                    "; reverted {}",
                    commit.get(..10).unwrap_or(commit)
                ));
            }
            if !undone.made_stale.is_empty() {
                let stale: Vec<String> =
                    undone.made_stale.iter().map(ToString::to_string).collect();
                text.push_str(&format!("; made stale: {}", stale.join(", ")));
            }
            events.push(event(undone.at, Kind::Undone, step.clone(), text));
            if let Some(at) = undone.redone_at {
                events.push(event(
                    at,
                    Kind::Redone,
                    step.clone(),
                    "redone by a person (`tick redo`): its changes put back".to_owned(),
                ));
            }
        }
        if let Some(at) = record.done_at {
            // A parent checked by its sub-steps is verified when they are (`Task::is_verified`).
            let verified =
                record.verified() || task.todo.find(*id).is_some_and(|s| task.is_verified(s));
            let how = match record.changed_by {
                Some(Actor::Runner) if verified => "verified by tick",
                Some(Actor::Runner) if record.verify_passed_before => {
                    "done, not verified: its verify passed before the change"
                }
                Some(Actor::Runner) => "done without verification",
                _ => "marked done by a person (not verified)",
            };
            events.push(event(at, Kind::Done, step.clone(), how.to_owned()));
        }
    }
    events
}

fn event(at: DateTime<Utc>, kind: Kind, step: Option<String>, text: String) -> Event {
    Event {
        at,
        kind,
        step,
        text,
    }
}
