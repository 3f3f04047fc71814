//! What the plan panel says beyond the files themselves: which plan it shows in which mode,
//! the progress, the step to look at, and the next action a person can take. Pure.

use crate::plan::{Phase, StepStatus};

use super::mode::Mode;
use super::seam::{PlanView, Snapshot, StepView};

/// The plan the panel shows: in PLAN mode the draft when there is one, in BUILD mode the
/// current task when there is one; otherwise whichever exists.
pub fn shown(snapshot: &Snapshot, mode: Mode) -> Option<&PlanView> {
    match mode {
        Mode::Plan => snapshot.draft.as_ref().or(snapshot.task.as_ref()),
        Mode::Build => snapshot.task.as_ref().or(snapshot.draft.as_ref()),
    }
}

/// Top-level steps done, and in all.
pub fn progress(view: &PlanView) -> (usize, usize) {
    let top = view.steps.iter().filter(|s| !s.sub);
    let (mut done, mut total) = (0, 0);
    for step in top {
        total += 1;
        if step.status == StepStatus::Done {
            done += 1;
        }
    }
    (done, total)
}

/// The step a person should look at: the one in progress, else the one `tick run` takes next
/// (or the blocked or waiting step in its way: [`PlanView::next`], `depends` and all); for a
/// view without one, a blocked one, else a stale one, else the first pending one.
pub fn current_step(view: &PlanView) -> Option<&StepView> {
    let open = |status| view.steps.iter().find(|s| s.status == status);
    let next = view
        .next
        .and_then(|id| view.steps.iter().find(|s| s.id == Some(id)));
    open(StepStatus::InProgress).or(next).or_else(|| {
        open(StepStatus::Blocked)
            .or_else(|| open(StepStatus::Stale))
            .or_else(|| {
                view.steps
                    .iter()
                    .find(|s| s.status == StepStatus::Pending && (s.sub || !has_subs(view, s)))
            })
    })
}

fn has_subs(view: &PlanView, step: &StepView) -> bool {
    let Some(id) = step.id else { return false };
    view.steps
        .iter()
        .any(|s| s.sub && s.id.is_some_and(|sub| sub.parent() == id && sub != id))
}

/// The marker as TODO.md writes it.
pub fn marker(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pending => "[ ]",
        StepStatus::Done => "[x]",
        StepStatus::InProgress => "[-]",
        StepStatus::Blocked => "[!]",
        StepStatus::Stale => "[~]",
    }
}

/// What the person can do next, in one line; `busy` is what the worker does now, if anything.
pub fn next_action(snapshot: &Snapshot, mode: Mode, busy: Option<&str>) -> String {
    match busy {
        Some("running") => {
            return "running: /stop (or Ctrl-C) stops at the next safe point".to_owned();
        }
        Some("planning") => {
            return "planning: the planner reads the repository; its draft shows here".to_owned();
        }
        _ => {}
    }
    let Some(view) = shown(snapshot, mode) else {
        return match mode {
            Mode::Plan => "type a goal and press Enter to plan it".to_owned(),
            Mode::Build => "no approved task: Tab to PLAN mode and describe a goal".to_owned(),
        };
    };
    if let Some(problem) = &view.problem {
        return format!("fix the file first: {problem}");
    }
    let phase = view.phase.unwrap_or(Phase::Draft);
    if view.id.is_none() {
        return match phase {
            Phase::NeedsInput => "answer the planner's questions: type your answers".to_owned(),
            _ => "review it: /show, /approve, /revise <feedback>, /edit or /discard".to_owned(),
        };
    }
    if view.plan_changed {
        return "PLAN.md changed since approval: /approve it again".to_owned();
    }
    let step = current_step(view);
    let build = |what: String| match mode {
        Mode::Build => what,
        Mode::Plan => format!("Tab to BUILD, then {what}"),
    };
    match (phase, step) {
        (Phase::Completed, _) => "done: every step is ticked; /plan a new goal".to_owned(),
        (Phase::Cancelled, _) => "the task is cancelled; /plan a new goal".to_owned(),
        (_, Some(step)) if step.status == StepStatus::Blocked => {
            let id = step_id(step);
            format!("answer it: /answer {id} <text>, then /run")
        }
        (_, Some(step)) if step.status == StepStatus::Stale => {
            build(format!("/run verifies {} again first", step_id(step)))
        }
        (_, Some(step)) => build(format!("/run (next: {} {})", step_id(step), step.title)),
        (_, None) => build("/run".to_owned()),
    }
}

pub fn step_id(step: &StepView) -> String {
    step.id
        .map_or_else(|| "(new)".to_owned(), |id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, status: StepStatus) -> StepView {
        StepView::bare(id, &format!("step {id}"), status)
    }

    fn task(steps: Vec<StepView>, phase: Phase) -> Snapshot {
        Snapshot {
            draft: None,
            task: Some(PlanView {
                id: Some("t".into()),
                title: "T".into(),
                phase: Some(phase),
                steps,
                ..PlanView::default()
            }),
        }
    }

    #[test]
    fn the_next_action_follows_the_task() {
        assert_eq!(
            next_action(&Snapshot::default(), Mode::Plan, None),
            "type a goal and press Enter to plan it"
        );
        assert!(next_action(&Snapshot::default(), Mode::Build, None).contains("no approved task"));
        let snap = task(
            vec![
                step("S1", StepStatus::Done),
                step("S2", StepStatus::Pending),
            ],
            Phase::Executing,
        );
        assert_eq!(
            next_action(&snap, Mode::Build, None),
            "/run (next: S2 step S2)"
        );
        assert_eq!(
            next_action(&snap, Mode::Plan, None),
            "Tab to BUILD, then /run (next: S2 step S2)"
        );
        let snap = task(
            vec![
                step("S1", StepStatus::Done),
                step("S2", StepStatus::Blocked),
            ],
            Phase::Blocked,
        );
        assert_eq!(
            next_action(&snap, Mode::Build, None),
            "answer it: /answer S2 <text>, then /run"
        );
        let snap = task(vec![step("S1", StepStatus::Done)], Phase::Completed);
        assert!(next_action(&snap, Mode::Build, None).starts_with("done"));
        assert!(next_action(&snap, Mode::Build, Some("running")).starts_with("running"));
    }

    #[test]
    fn progress_counts_top_level_steps() {
        let view = PlanView {
            steps: vec![
                step("S1", StepStatus::Done),
                step("S2", StepStatus::InProgress),
                step("S2.1", StepStatus::Done),
                step("S3", StepStatus::Pending),
            ],
            ..PlanView::default()
        };
        assert_eq!(progress(&view), (1, 3));
        assert_eq!(current_step(&view).unwrap().title, "step S2");
    }
}
