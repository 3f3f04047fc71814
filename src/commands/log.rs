//! `tick log [TASK]`: the task's history in time order (approvals, phase changes, blocks,
//! answers, steps done, failed attempts), for a person or as JSON.

use super::{Ctx, Outcome};
use crate::cli::LogArgs;
use crate::error::Result;
use crate::tasks::{history, journal};

pub fn run(ctx: &Ctx<'_>, args: &LogArgs) -> Result<Outcome> {
    let store = ctx.store();
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let task = store.load(&task_ref)?;
    let entries = journal::read(&task.dir)?;
    // When each earlier version of the plan was approved, from its copy in `history/`.
    let kept = crate::planning::replan::versions_kept(&task.dir);
    let mut earlier = Vec::with_capacity(kept);
    for version in 1..=kept {
        let path = crate::planning::replan::history_path(&task.dir, version);
        let approved = crate::fsx::read_capped(&path, crate::fsx::MAX_TEXT_FILE)?
            .and_then(|text| crate::tasks::plan_md::parse(&text).ok())
            .and_then(|plan| plan.front.approved);
        earlier.push(approved);
    }
    let report = history::Report {
        format: history::FORMAT,
        task: task.id.clone(),
        title: task.title(),
        events: history::of(&task, &entries, &earlier),
    };
    if args.json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.log(&report);
    }
    Ok(Outcome::Done)
}
