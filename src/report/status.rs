//! What `tick status` reports of a task and the draft: its phase, progress and steps, what
//! state.yaml says of each step, and the other tasks that need a person. The JSON form is a
//! stable format, documented in `docs/json.md`; `ui` renders the human form. Built from a
//! loaded [`Task`], borrowing its texts.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::plan::{Phase, Risk, StepId, StepStatus};
use crate::tasks::state::{Actor, LastAttempt, LaterChange, Undone};
use crate::tasks::todo_md::Step;
use crate::tasks::{Attention, Draft, Store, Task};
use crate::watch::freshness::MissingFiles;

/// The version of the JSON below; bumped only when a field changes meaning or goes away.
pub const JSON_FORMAT: u32 = 1;

/// What `status` shows, borrowing the steps' texts from the task it reports on (a task of
/// 10,000 steps is not copied to be printed).
#[derive(Debug, Serialize)]
pub struct StatusReport<'a> {
    pub format: u32,
    pub draft: Option<DraftReport>,
    /// Why the draft waiting in `.tasks/draft/PLAN.md` does not parse (`` `file:line:col`:
    /// message ``, as `tick list --json` gives it); then `draft` is `None`.
    pub draft_error: Option<String>,
    pub task: Option<TaskReport<'a>>,
    /// Without a named task: the other tasks that need a person (blocked, stale, or left
    /// executing), newest first.
    pub attention: Vec<AttentionReport>,
    /// The last planning attempt, when it failed (`.tasks/draft/last_attempt.yaml`).
    pub plan_attempt: Option<AttemptReport>,
}

/// Another task that needs a look, for one line of `tick status`.
#[derive(Debug, Serialize)]
pub struct AttentionReport {
    pub id: String,
    /// `null` when the task's files do not parse; `error` says why.
    pub title: Option<String>,
    pub phase: Option<Phase>,
    pub done: usize,
    pub total: usize,
    pub blocked: usize,
    pub stale: usize,
    pub error: Option<String>,
}

/// One line of `tick status` for `other`, which needs a look.
pub fn attention_report(other: &Attention) -> AttentionReport {
    match other {
        Attention::Task(task) => {
            let progress = task.progress();
            AttentionReport {
                id: task.id.clone(),
                title: Some(task.title()),
                phase: Some(task.phase()),
                done: progress.done,
                total: progress.total,
                blocked: progress.blocked,
                stale: progress.stale,
                error: None,
            }
        }
        Attention::Unreadable { id, error } => AttentionReport {
            id: id.clone(),
            title: None,
            phase: None,
            done: 0,
            total: 0,
            blocked: 0,
            stale: 0,
            error: Some(error.clone()),
        },
    }
}

#[derive(Debug, Serialize)]
pub struct DraftReport {
    pub title: Option<String>,
    pub phase: Phase,
    pub path: String,
    pub steps: usize,
}

#[derive(Debug, Serialize)]
pub struct TaskReport<'a> {
    pub id: String,
    pub title: String,
    pub goal: Option<String>,
    pub phase: Phase,
    pub path: String,
    pub approved_at: Option<DateTime<Utc>>,
    pub progress: ProgressReport,
    pub plan_changed_since_approval: bool,
    /// state.yaml holds no approval at all (deleted or emptied): `plan_changed_since_approval`
    /// is true, since nothing shows PLAN.md is the plan approved.
    pub approval_missing: bool,
    /// The revision of PLAN.md waiting for approval, when there is one.
    pub revision_waiting: Option<RevisionWaiting>,
    /// The step blocked for a re-plan of the executor whose new PLAN.md is not there (tick
    /// was stopped before writing it, or a person restored the approved plan).
    pub replan_not_written: Option<String>,
    pub steps: Vec<StepReport<'a>>,
    /// Done steps this command found stale: files they relied on changed outside tick.
    /// `marked` says whether it also marked them `[~]` (not while another tick process holds
    /// the task).
    pub stale_found: Vec<StaleFound>,
    /// Pending steps whose `files` no longer exist: the plan may be out of date.
    pub plan_may_be_out_of_date: Vec<MissingFiles>,
    /// When a `tick run` of this task last ran the agent's commands without the sandbox.
    pub unsandboxed_run: Option<DateTime<Utc>>,
    /// The last run attempt, when it failed (from state.yaml).
    pub last_attempt: Option<AttemptReport>,
    /// How a hint names the task after a command: empty for the current task, else a space
    /// and the shortest unique prefix of its id ([`task_arg`]).
    #[serde(skip)]
    pub named: String,
}

/// A revision of PLAN.md waiting for approval: a re-plan (the executor's around `step`, with
/// its `reason`; or the planner's) or a person's edit.
#[derive(Debug, Serialize)]
pub struct RevisionWaiting {
    /// The number the revision gets once approved (the approved version is `version - 1`).
    pub version: usize,
    /// The step the executor re-planned around (`propose_replan`), if it was that.
    pub step: Option<String>,
    pub reason: Option<String>,
    /// Whether the revision is tick's own re-plan (`tick plan --revise`, or the executor's),
    /// unedited since: `false` for a person's edit.
    pub by_tick: bool,
}

/// A failed attempt's record, as `status` shows it.
#[derive(Debug, Serialize)]
pub struct AttemptReport {
    pub at: DateTime<Utc>,
    pub step: Option<String>,
    pub cause: String,
    pub hint: Option<String>,
    /// The line `status` prints.
    #[serde(skip)]
    pub summary: String,
}

impl From<&LastAttempt> for AttemptReport {
    fn from(attempt: &LastAttempt) -> Self {
        AttemptReport::named(attempt, "")
    }
}

impl AttemptReport {
    /// The attempt of task `named` ([`crate::tasks::naming::task_named`]), its hint as it
    /// reads now ([`LastAttempt::hint_for`]).
    pub fn named(attempt: &LastAttempt, named: &str) -> Self {
        AttemptReport {
            at: attempt.at,
            step: attempt.step.map(|s| s.to_string()),
            cause: attempt.cause.clone(),
            hint: (!attempt.hint.is_empty()).then(|| attempt.hint_for(named)),
            summary: attempt.summary(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct StaleFound {
    pub id: String,
    pub files: Vec<String>,
    pub marked: bool,
}

#[derive(Debug, Serialize)]
pub struct ProgressReport {
    pub done: usize,
    pub total: usize,
    pub in_progress: usize,
    pub blocked: usize,
    pub stale: usize,
    pub unverified: usize,
}

/// One step as `status` reports it: the step itself (its id, title and details, as TODO.md
/// has them) and what state.yaml says of it. Serialized with the step's fields inline; the
/// order of the fields is part of the JSON format (`docs/json.md`).
#[derive(Debug)]
pub struct StepReport<'a> {
    pub step: &'a Step,
    pub status: StepStatus,
    /// For a done step: whether the runner's verification backs the tick.
    pub verified: Option<bool>,
    /// Who last changed the step (`person` or `runner`), from state.yaml.
    pub changed_by: Option<Actor>,
    /// For a done step: the verification commands the runner ran, from state.yaml.
    pub evidence: Vec<EvidenceReport<'a>>,
    /// For a done step: changes tick made to its files later, while running other tasks
    /// (`changed by task <id> S2`). Not stale; `tick check --strict` reports them.
    pub later_changes: &'a [LaterChange],
    /// For a done step: the model claimed it done while no file changed and it ran no
    /// command.
    pub claimed_without_changes: bool,
    /// The step's verify passed before the step changed anything.
    pub verify_passed_before: bool,
    /// The step's undo history from state.yaml (`tick undo`, `tick redo`), oldest first.
    pub undone: Vec<UndoneReport<'a>>,
    pub substeps: Vec<StepReport<'a>>,
}

impl StepReport<'_> {
    /// The step's last undo, while no redo followed it.
    pub fn undone_now(&self) -> Option<&UndoneReport<'_>> {
        self.undone.last().filter(|u| u.redone_at.is_none())
    }
}

impl StepReport<'_> {
    /// `None` for a step a person added without an id (tick assigns one at its next write).
    pub fn id(&self) -> Option<StepId> {
        self.step.id
    }

    pub fn title(&self) -> &str {
        &self.step.title
    }
}

impl Serialize for StepReport<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let step = self.step;
        let mut out = serializer.serialize_struct("StepReport", 19)?;
        out.serialize_field("id", &step.id)?;
        out.serialize_field("status", &self.status)?;
        out.serialize_field("title", &step.title)?;
        out.serialize_field("verified", &self.verified)?;
        out.serialize_field("changed_by", &self.changed_by)?;
        out.serialize_field("evidence", &self.evidence)?;
        out.serialize_field("files", &step.files)?;
        out.serialize_field("verify", &step.verify)?;
        out.serialize_field("done_when", &step.done_when)?;
        out.serialize_field("risk", &step.risk.map(Risk::as_str))?;
        out.serialize_field("depends", &step.depends)?;
        if step.tools.is_empty() {
            out.skip_field("tools")?;
        } else {
            out.serialize_field("tools", &step.tools)?;
        }
        out.serialize_field("blocked", &step.blocked)?;
        out.serialize_field("stale", &step.stale)?;
        out.serialize_field("later_changes", self.later_changes)?;
        out.serialize_field("claimed_without_changes", &self.claimed_without_changes)?;
        out.serialize_field("verify_passed_before", &self.verify_passed_before)?;
        out.serialize_field("undone", &self.undone)?;
        out.serialize_field("substeps", &self.substeps)?;
        out.end()
    }
}

/// One undo of a step (`tick undo`), as `status` shows it: the evidence state.yaml keeps with
/// it left out.
#[derive(Debug, Serialize)]
pub struct UndoneReport<'a> {
    pub id: &'a str,
    pub at: DateTime<Utc>,
    pub files: &'a [String],
    pub kept: &'a [String],
    pub reverted: Option<&'a str>,
    pub made_stale: &'a [StepId],
    pub redone_at: Option<DateTime<Utc>>,
}

impl<'a> From<&'a Undone> for UndoneReport<'a> {
    fn from(u: &'a Undone) -> Self {
        UndoneReport {
            id: &u.id,
            at: u.at,
            files: &u.files,
            kept: &u.kept,
            reverted: u.reverted.as_deref(),
            made_stale: &u.made_stale,
            redone_at: u.redone_at,
        }
    }
}

/// Why a step is ticked: one verification command and how it ended.
#[derive(Debug, Serialize)]
pub struct EvidenceReport<'a> {
    pub command: &'a str,
    pub exit_code: i32,
    pub duration_ms: u64,
}

pub fn draft_report(store: &Store, draft: &Draft) -> DraftReport {
    DraftReport {
        title: draft.plan.title.clone(),
        phase: draft.plan.phase().unwrap_or(Phase::Draft),
        path: store.rel(&draft.path),
        steps: draft.plan.steps.all_steps().count(),
    }
}

fn step_report<'a>(task: &'a Task, step: &'a Step) -> StepReport<'a> {
    let status = step.effective_status();
    let record = step.id.and_then(|id| task.state.steps.get(&id));
    StepReport {
        step,
        status,
        verified: (status == StepStatus::Done).then(|| task.is_verified(step)),
        claimed_without_changes: status == StepStatus::Done
            && record.is_some_and(|r| r.claimed_without_changes),
        verify_passed_before: record.is_some_and(|r| r.verify_passed_before),
        undone: record
            .map(|r| r.undone.iter().map(UndoneReport::from).collect())
            .unwrap_or_default(),
        changed_by: record.and_then(|r| r.changed_by),
        evidence: if status == StepStatus::Done {
            record
                .map(|r| {
                    r.evidence
                        .iter()
                        .map(|e| EvidenceReport {
                            command: &e.command,
                            exit_code: e.exit_code,
                            duration_ms: e.duration_ms,
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        },
        later_changes: match (status, record) {
            (StepStatus::Done, Some(record)) => &record.later_changes,
            _ => &[],
        },
        substeps: step.substeps.iter().map(|s| step_report(task, s)).collect(),
    }
}

pub fn task_report<'a>(store: &Store, task: &'a Task) -> TaskReport<'a> {
    let progress = task.progress();
    TaskReport {
        id: task.id.clone(),
        title: task.title(),
        goal: task.plan.front.goal.clone(),
        phase: task.phase(),
        path: store.rel(&task.dir),
        approved_at: task.state.approval.as_ref().map(|a| a.approved_at),
        progress: ProgressReport {
            done: progress.done,
            total: progress.total,
            in_progress: progress.in_progress,
            blocked: progress.blocked,
            stale: progress.stale,
            unverified: task.unverified().len(),
        },
        plan_changed_since_approval: task.plan_changed(),
        approval_missing: task.approval_missing(),
        // Without an approval there is no approved version, so no revision of it.
        revision_waiting: (task.plan_changed() && !task.approval_missing()).then(|| {
            let pending = task.state.pending_replan.as_ref();
            RevisionWaiting {
                version: crate::planning::replan::versions_kept(&task.dir).max(1) + 1,
                step: pending.map(|p| p.step.to_string()),
                reason: pending.map(|p| p.reason.clone()),
                by_tick: pending.is_some() || task.replanned_by_tick(),
            }
        }),
        replan_not_written: crate::planning::approve::replan_not_written(task)
            .map(|step| step.to_string()),
        steps: task
            .todo
            .steps
            .iter()
            .map(|s| step_report(task, s))
            .collect(),
        stale_found: Vec::new(),
        plan_may_be_out_of_date: Vec::new(),
        last_attempt: task.state.last_attempt.as_ref().map(|attempt| {
            AttemptReport::named(attempt, &crate::tasks::naming::task_named(store, &task.id))
        }),
        unsandboxed_run: task.state.unsandboxed_run,
        named: String::new(),
    }
}

/// The next thing to do, as `tick status --json` gives it: the command to type, and the
/// hint line the human output ends with (or, for a revision waiting for approval, its
/// warning's hint).
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct NextReport {
    /// The first command the hint names (`tick run`, `tick approve 20261130-143012`).
    pub command: Option<String>,
    pub hint: String,
}

/// [`next_action`] as [`NextReport`]; for a revision waiting for approval, its approval.
pub fn next_report(report: &StatusReport<'_>) -> Option<NextReport> {
    let hint = next_action(report).or_else(|| {
        let task = report.task.as_ref()?;
        let t = &task.named;
        if task.approval_missing {
            Some(format!(
                "restore `state.yaml` from git, or read the plan with `tick show{t}` and `tick approve{t}`; `tick run{t}` refuses until then"
            ))
        } else if task.revision_waiting.is_some() {
            Some(format!(
                "review the new plan with `tick show{t}`, then `tick approve{t}`; `tick run{t}` refuses until then"
            ))
        } else {
            task.replan_not_written.as_ref().map(|step| {
                format!("`tick approve{t}` keeps the approved plan and makes `{step}` pending again")
            })
        }
    })?;
    let command = hint
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|span| span.starts_with("tick ") || *span == "tick")
        .map(str::to_owned);
    Some(NextReport { command, hint })
}

/// The next thing to do with no task and no draft.
const NO_TASKS_YET: &str = "write a plan with `tick plan \"goal\"` or `tick plan --from plan.md`";

/// The next thing to do with a draft that does not parse: `tick approve` and `tick plan`
/// refuse until it is fixed or gone.
pub const BROKEN_DRAFT: &str = "fix the draft with `tick edit` (checked when the editor closes), or throw it away with `tick discard`";

/// The next thing to do, for the last line of `tick status`: for the task (what blocks it,
/// or the run that goes on with it), else for the draft (review and approve it, or answer its
/// questions, or fix the one that does not parse), else how to start (with no task and no draft). `None` when a warning already
/// says it (a revision waiting for approval).
pub fn next_action(report: &StatusReport<'_>) -> Option<String> {
    if let Some(task) = &report.task {
        if task.revision_waiting.is_some()
            || task.replan_not_written.is_some()
            || task.approval_missing
        {
            return None;
        }
        let t = &task.named;
        let all = || {
            task.steps
                .iter()
                .flat_map(|s| std::iter::once(s).chain(s.substeps.iter()))
        };
        let with = |status: StepStatus| {
            all().find(|s| s.status == status && s.substeps.is_empty() && s.id().is_some())
        };
        if !task.phase.is_finished() {
            if let Some(step) = with(StepStatus::Blocked).and_then(StepReport::id) {
                return Some(format!(
                    "`{step}` waits for you: `tick answer {step} \"...\"{t}` answers it and `tick run{t}` goes on; or fix what blocks it and `tick mark {step} pending{t}`"
                ));
            }
            if let Some(step) = with(StepStatus::InProgress).and_then(StepReport::id) {
                return Some(format!(
                    "`tick run{t}` goes on with `{step}`, left in progress"
                ));
            }
            let progress = &task.progress;
            if progress.done < progress.total {
                // A stale step was done once: the run goes on with it, it does not start.
                return Some(if progress.done == 0 && with(StepStatus::Stale).is_none() {
                    format!(
                        "`tick run{t}` starts it, one verified step at a time (`tick next{t}` shows the first step)"
                    )
                } else {
                    match progress.total - progress.done {
                        1 => format!("`tick run{t}` goes on with the step left"),
                        left => format!("`tick run{t}` goes on with the {left} steps left"),
                    }
                });
            }
        }
        if report.draft.is_none() && report.draft_error.is_none() && task.phase == Phase::Completed
        {
            return Some(
                "done: commit `.tasks/` with the code, or plan the next task with `tick plan \"goal\"`"
                    .to_owned(),
            );
        }
    }
    if report.draft_error.is_some() {
        return Some(BROKEN_DRAFT.to_owned());
    }
    let Some(draft) = &report.draft else {
        // Nothing yet: the human output's "no tasks yet" ends with the way to start.
        return report.task.is_none().then(|| NO_TASKS_YET.to_owned());
    };
    Some(match draft.phase {
        Phase::NeedsInput => format!(
            "the planner has questions under `## Open questions` in `{}`: `tick plan --answer \"...\"` answers them",
            draft.path
        ),
        _ => "read the draft with `tick review` (or `tick show`), then `tick approve` or `tick plan --revise \"...\"`"
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use crate::tasks::naming::{short_prefix, task_arg};

    #[test]
    fn a_task_is_named_by_the_shortest_prefix_no_other_task_shares_and_the_current_one_not_at_all()
    {
        let ids: Vec<String> = [
            "20261130-143012-login",
            "20261130-143019-logout",
            "20261201-090000-docs",
            "20261201-090000-docs-2",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            short_prefix(&ids, "20261130-143012-login"),
            "20261130-143012"
        );
        assert_eq!(
            short_prefix(&ids, "20261201-090000-docs-2"),
            "20261201-090000-docs-"
        );
        // Its whole id is a prefix of another's: only the whole id names it (exactly).
        assert_eq!(
            short_prefix(&ids, "20261201-090000-docs"),
            "20261201-090000-docs"
        );
        let one = vec!["20261130-143012-login".to_owned()];
        assert_eq!(short_prefix(&one, "20261130-143012-login"), "20261130");
        assert_eq!(task_arg(&ids, &ids[0], Some(&ids[0])), "");
        assert_eq!(task_arg(&ids, &ids[0], Some(&ids[1])), " 20261130-143012");
        assert_eq!(task_arg(&ids, &ids[0], None), " 20261130-143012");
    }
}
