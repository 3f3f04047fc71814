//! `tick check`: every task's health for CI and pre-commit hooks, as an exit code. Runs the
//! start-up staleness detection on each task first (marking what it finds, like every
//! command), then lists what needs a person ([`crate::report::check`]). The codes are in
//! `tick check --help`.

use super::{Ctx, Outcome};
use crate::cli::CheckArgs;
use crate::error::{ErrorKind, Result};
use crate::plan::Phase;
use crate::report::check::{
    CheckReport, Finding, FindingKind, JSON_FORMAT, attempt_message, task_findings,
};
use crate::tasks::TaskRef;
use crate::watch;

pub fn run(ctx: &Ctx<'_>, args: &CheckArgs) -> Result<Outcome> {
    if let Some(range) = &args.from_git {
        return super::from_git::check(ctx, range, args.json);
    }
    let store = ctx.store();
    let mut report = CheckReport {
        format: JSON_FORMAT,
        tasks_checked: 0,
        newly_stale: Vec::new(),
        findings: Vec::new(),
        exit_code: 0,
    };
    for id in store.task_ids()? {
        let task = store.task_ref(&id);
        check_task(ctx, &task, args.strict, &mut report)?;
    }
    report
        .findings
        .extend(crate::report::check::overlap_findings(store));
    if let Some(attempt) = super::plan::last_plan_attempt(store) {
        report.findings.push(Finding {
            task: "draft".to_owned(),
            kind: FindingKind::FailedAttempt,
            step: None,
            message: attempt_message(&attempt, ""),
        });
    }
    // A draft that does not parse cannot be approved: a finding, like a task's.
    if let Err(err) = store.load_draft()
        && err.kind == ErrorKind::Input
    {
        report.findings.push(Finding {
            task: "draft".to_owned(),
            kind: FindingKind::Unparseable,
            step: None,
            message: err.message,
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

fn check_task(
    ctx: &Ctx<'_>,
    task_ref: &TaskRef,
    strict: bool,
    report: &mut CheckReport,
) -> Result<()> {
    let store = ctx.store();
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
    report
        .findings
        .extend(task_findings(store, &task, &refreshed, strict, ctx.now()));
    Ok(())
}
