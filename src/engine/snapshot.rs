//! The draft and the current task reduced to what a front end shows of them (the session's
//! plan panel): read from disk at each call, never failing (a file that does not parse is
//! the view's `problem`). The step to look at is the one the runner would take next.

use crate::plan::{Phase, StepId, StepStatus};
use crate::runner::{Next, next_step};
use crate::tasks::todo_md::{Checklist, Step};
use crate::tasks::{Store, Task};

/// The draft and the current task, as the panel shows them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub draft: Option<PlanView>,
    pub task: Option<PlanView>,
}

/// A draft or a task, reduced to what the panel shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanView {
    /// The task's id; `None` for the draft.
    pub id: Option<String>,
    pub title: String,
    pub goal: Option<String>,
    pub phase: Option<Phase>,
    pub steps: Vec<StepView>,
    /// Why the files could not be read, when they could not.
    pub problem: Option<String>,
    /// PLAN.md changed since its approval: it must be approved again.
    pub plan_changed: bool,
    /// The planner's open questions (a draft that needs input).
    pub questions: Vec<String>,
    /// The step `tick run` takes next (or the blocked or waiting step in its way), as
    /// [`next_step`] decides it, `depends` and all; `None` when none is open.
    pub next: Option<StepId>,
    /// The draft's own approval settings: where the review's contract questions start.
    pub approval: crate::planning::approve::Contract,
}

/// One step (or sub-step) as the panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepView {
    /// `None` for a step a person added without an id.
    pub id: Option<StepId>,
    pub sub: bool,
    pub status: StepStatus,
    pub title: String,
    pub files: Vec<String>,
    /// The commands that decide whether the step is done.
    pub verify: Vec<String>,
    pub done_when: Option<String>,
    pub depends: Vec<StepId>,
    pub risk: Option<String>,
    pub blocked: Option<String>,
    pub stale: Option<String>,
    pub answer: Option<String>,
}

#[cfg(test)]
impl StepView {
    /// A step with an id (a sub-step's has a dot), a title and a status and nothing else, for
    /// the tests of what shows steps.
    pub(crate) fn bare(id: &str, title: &str, status: StepStatus) -> Self {
        Self {
            id: Some(id.parse().expect("a step id")),
            sub: id.contains('.'),
            status,
            title: title.to_owned(),
            files: Vec::new(),
            verify: Vec::new(),
            done_when: None,
            depends: Vec::new(),
            risk: None,
            blocked: None,
            stale: None,
            answer: None,
        }
    }
}

/// The draft and the current task of `store`, as they are on disk now.
pub fn read(store: &Store) -> Snapshot {
    let draft = match store.load_draft() {
        Ok(Some(draft)) => Some(PlanView {
            id: None,
            title: draft.plan.title.clone().unwrap_or_default(),
            goal: draft.plan.front.goal.clone(),
            phase: Some(draft.plan.phase().unwrap_or(Phase::Draft)),
            steps: steps_view(&draft.plan.steps.steps),
            next: next_of(&draft.plan.steps),
            problem: None,
            plan_changed: false,
            questions: crate::tasks::plan_md::section_range(&draft.plan.body, "Open questions")
                .map(|range| question_lines(&draft.plan.body[range]))
                .unwrap_or_default(),
            approval: crate::planning::review::defaults(draft.plan.front.approval.as_ref()),
        }),
        Ok(None) => None,
        Err(err) => Some(PlanView {
            problem: Some(err.message),
            ..PlanView::default()
        }),
    };
    let task = match store.current_loaded() {
        Ok(Some((_, Some(task)))) => Some(task_view(&task)),
        Ok(Some((task, None))) => Some(PlanView {
            id: Some(task.id.clone()),
            problem: Some(
                store
                    .load(&task)
                    .err()
                    .map_or_else(|| "the task cannot be read".to_owned(), |e| e.message),
            ),
            ..PlanView::default()
        }),
        Ok(None) => None,
        Err(err) => Some(PlanView {
            problem: Some(err.message),
            ..PlanView::default()
        }),
    };
    Snapshot { draft, task }
}

fn task_view(task: &Task) -> PlanView {
    PlanView {
        id: Some(task.id.clone()),
        title: task.title(),
        goal: task.plan.front.goal.clone(),
        phase: Some(task.phase()),
        steps: steps_view(&task.todo.steps),
        next: next_of(&task.todo),
        problem: None,
        plan_changed: task.plan_changed(),
        questions: Vec::new(),
        approval: crate::planning::review::defaults(task.plan.front.approval.as_ref()),
    }
}

/// The step [`next_step`] points at.
fn next_of(todo: &Checklist) -> Option<StepId> {
    match next_step(todo, None) {
        Next::Step(id) | Next::Blocked { id, .. } | Next::Waiting { id, .. } => Some(id),
        Next::AllDone | Next::AlreadyDone(_) => None,
    }
}

fn steps_view(steps: &[Step]) -> Vec<StepView> {
    let mut out = Vec::new();
    for step in steps {
        out.push(step_view(step, false));
        out.extend(step.substeps.iter().map(|sub| step_view(sub, true)));
    }
    out
}

fn step_view(step: &Step, sub: bool) -> StepView {
    StepView {
        id: step.id,
        sub,
        status: if sub {
            step.status
        } else {
            step.progress_status()
        },
        title: step.title.clone(),
        files: step.files.clone(),
        verify: step.verify.clone(),
        done_when: step.done_when.clone(),
        depends: step.depends.clone(),
        risk: step.risk.map(|r| r.as_str().to_owned()),
        blocked: step.blocked.clone(),
        stale: step.stale.clone(),
        answer: step.answer.clone(),
    }
}

/// The bullet items of a draft's `## Open questions` section.
fn question_lines(section: &str) -> Vec<String> {
    section
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .map(str::to_owned)
        .collect()
}
