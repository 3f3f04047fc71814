//! `tick check`: every task's health for CI and pre-commit hooks, as an exit code. Runs the
//! start-up staleness detection on each task first (marking what it finds, like every
//! command), then lists what needs a person. The codes are in `tick check --help`.

use serde::Serialize;

use super::{Ctx, Outcome};
use crate::cli::CheckArgs;
use crate::error::{ErrorKind, Result};
use crate::plan::{Phase, StepStatus};
use crate::tasks::TaskRef;
use crate::watch;

/// The version of the JSON below.
pub const JSON_FORMAT: u32 = 1;

/// Why a task needs a look. The exit code of each is documented in `tick check --help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    // Ordered from least to most severe: the most severe finding sets the exit code.
    /// The last planning or run attempt failed (a warning: the files are consistent).
    FailedAttempt,
    Unverified,
    Stale,
    PlanChanged,
    Unparseable,
}

impl FindingKind {
    pub fn exit_code(self) -> u8 {
        match self {
            FindingKind::FailedAttempt => 14,
            FindingKind::Stale => 10,
            FindingKind::Unverified => 11,
            FindingKind::PlanChanged => 12,
            FindingKind::Unparseable => 13,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub task: String,
    pub kind: FindingKind,
    /// The step, for `stale` and `unverified`.
    pub step: Option<String>,
    /// What a person reads: the `stale:` reason, the parse error, ...
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub format: u32,
    pub tasks_checked: usize,
    /// Steps this check itself marked `[~]`, per task: `(task, step)`.
    pub newly_stale: Vec<(String, String)>,
    pub findings: Vec<Finding>,
    pub exit_code: u8,
}

pub fn run(ctx: &Ctx<'_>, args: &CheckArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let mut report = CheckReport {
        format: JSON_FORMAT,
        tasks_checked: 0,
        newly_stale: Vec::new(),
        findings: Vec::new(),
        exit_code: 0,
    };
    for id in store.task_ids()? {
        let task = store.task_ref(&id);
        check_task(ctx, &task, &mut report)?;
    }
    if let Some(attempt) = super::plan::last_plan_attempt(store) {
        report.findings.push(Finding {
            task: "draft".to_owned(),
            kind: FindingKind::FailedAttempt,
            step: None,
            message: attempt_message(&attempt),
        });
    }
    report.exit_code = report
        .findings
        .iter()
        .map(|f| f.kind)
        .max()
        .map_or(0, FindingKind::exit_code);
    if args.json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.check(&report);
    }
    Ok(match report.exit_code {
        0 => Outcome::Done,
        code => Outcome::Findings(code),
    })
}

fn check_task(ctx: &Ctx<'_>, task_ref: &TaskRef, report: &mut CheckReport) -> Result<()> {
    let store = &ctx.store;
    let unparseable = |message: String| Finding {
        task: task_ref.id.clone(),
        kind: FindingKind::Unparseable,
        step: None,
        message,
    };
    let refreshed = match watch::refresh_or_detect(store, task_ref, ctx.now()) {
        Ok(refreshed) => refreshed,
        Err(err) if err.kind == ErrorKind::Input => {
            report.tasks_checked += 1;
            report.findings.push(unparseable(err.message));
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    let task = match store
        .load(task_ref)
        .and_then(|task| store.require_steps(&task).map(|()| task))
    {
        Ok(task) => task,
        Err(err) if err.kind == ErrorKind::Input => {
            report.tasks_checked += 1;
            report.findings.push(unparseable(err.message));
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    if task.phase() == Phase::Cancelled {
        return Ok(());
    }
    report.tasks_checked += 1;
    if refreshed.marked {
        report.newly_stale.extend(
            refreshed
                .stale
                .iter()
                .map(|s| (task.id.clone(), s.id.to_string())),
        );
    }
    let mut findings = Vec::new();
    if task.plan_changed() {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::PlanChanged,
            step: None,
            message: format!(
                "`{}/PLAN.md` changed since it was approved",
                store.rel(&task.dir)
            ),
        });
    }
    for step in task.todo.all_steps() {
        if step.status == StepStatus::Stale {
            findings.push(Finding {
                task: task.id.clone(),
                kind: FindingKind::Stale,
                step: step.id.map(|id| id.to_string()),
                message: step.stale.clone().unwrap_or_else(|| "stale".to_owned()),
            });
        }
    }
    // Found while another tick process held the task: not marked yet, still stale.
    if !refreshed.marked {
        for stale in &refreshed.stale {
            findings.push(Finding {
                task: task.id.clone(),
                kind: FindingKind::Stale,
                step: Some(stale.id.to_string()),
                message: watch::stale::reason(&stale.files, ctx.now()),
            });
        }
    }
    for step in task.unverified() {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::Unverified,
            step: step.id.map(|id| id.to_string()),
            message: "done without verification".to_owned(),
        });
    }
    if let Some(attempt) = &task.state.last_attempt {
        findings.push(Finding {
            task: task.id.clone(),
            kind: FindingKind::FailedAttempt,
            step: attempt.step.map(|id| id.to_string()),
            message: attempt_message(attempt),
        });
    }
    report.findings.extend(findings);
    Ok(())
}

fn attempt_message(attempt: &crate::tasks::state::LastAttempt) -> String {
    if attempt.hint.is_empty() {
        attempt.summary()
    } else {
        format!("{} (hint: {})", attempt.summary(), attempt.hint)
    }
}
