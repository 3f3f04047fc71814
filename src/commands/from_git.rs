//! `tick status --from-git [RANGE]` and `tick check --from-git [RANGE]`: each step's state
//! rebuilt from the commits' trailers and compared with TODO.md ([`crate::undo::from_git`]).

use super::{Ctx, Outcome};
use crate::error::Result;
use crate::undo::from_git;

/// One task's report; exit code 0 either way (it is a status).
pub fn status(ctx: &Ctx<'_>, task: Option<&str>, range: &str, json: bool) -> Result<Outcome> {
    let task_ref = ctx.store().resolve_or_current(task)?;
    let task = ctx.store().load(&task_ref)?;
    let report = from_git::compare(ctx.store().root(), &task, Some(range))?;
    if json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.from_git(&report);
    }
    Ok(Outcome::Done)
}

/// Every task's report; exit code 15 when one disagrees (for CI).
pub fn check(ctx: &Ctx<'_>, range: &str, json: bool) -> Result<Outcome> {
    let mut reports = Vec::new();
    for id in ctx.store().task_ids()? {
        let task = ctx.store().load(&ctx.store().task_ref(&id))?;
        reports.push(from_git::compare(ctx.store().root(), &task, Some(range))?);
    }
    let code = reports.iter().map(|r| r.exit_code).max().unwrap_or(0);
    if json {
        ctx.ui.json(&serde_json::json!({
            "format": from_git::FORMAT,
            "range": range,
            "tasks": reports,
            "exit_code": code,
        }));
    } else {
        for report in &reports {
            ctx.ui.from_git(report);
        }
        if code == 0 {
            ctx.ui.note(&format!(
                "the ticks of {} agree with the commits of `{range}`",
                plural(reports.len(), "task")
            ));
        }
    }
    Ok(if code == 0 {
        Outcome::Done
    } else {
        Outcome::Findings(code)
    })
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
