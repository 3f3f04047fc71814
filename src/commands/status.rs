//! `tick status`: one task's phase, progress and steps, and what needs a person. The report and
//! its JSON format are [`crate::report::status`]'s.

use super::{Ctx, Outcome};
use crate::cli::StatusArgs;
use crate::error::Result;
use crate::report::status::{
    AttemptReport, JSON_FORMAT, StaleFound, StatusReport, attention_report, draft_report,
    task_report,
};
use crate::tasks::naming::task_arg;
use crate::watch;

pub fn run(ctx: &Ctx<'_>, args: &StatusArgs) -> Result<Outcome> {
    if let Some(range) = &args.from_git {
        return super::from_git::status(ctx, args.task.as_deref(), range, args.json);
    }
    let store = ctx.store();
    let (task_ref, loaded) = match &args.task {
        Some(query) => (Some(store.resolve(query)?), None),
        None => match store.current_loaded()? {
            Some((task, loaded)) => (Some(task), loaded),
            None => (None, None),
        },
    };
    // Like every command, status first marks what went stale while tick was not looking (and
    // moves forward the fingerprints tick's own later work changed).
    let refreshed = match (&task_ref, &loaded) {
        // Nothing went stale: no need to take the lock and read the task again.
        (Some(_), Some(task)) if !watch::needs_refresh(store, task)? => None,
        (Some(task), _) => Some(watch::refresh_or_detect(store, task, ctx.now())?),
        (None, _) => None,
    };
    // Anything written (stale markers, restored steps, moved fingerprints) is shown as it is
    // now; the store's parse cache makes a reload of unchanged files free.
    let marked = refreshed.as_ref().is_some_and(|r| r.marked);
    let task = match (task_ref, loaded) {
        (Some(_), Some(task)) if !marked => Some(task),
        (Some(task), _) => Some(store.load(&task)?),
        (None, _) => None,
    };
    // A broken draft is the draft's problem, not the task's: one warning, and status goes on.
    let (draft, draft_error) = if args.task.is_none() {
        match store.load_draft() {
            Ok(draft) => (draft, None),
            Err(err) => (None, Some(err.message)),
        }
    } else {
        (None, None)
    };
    let attention = if args.task.is_none() {
        let shown = task.as_ref().map(|t| t.id.as_str());
        store
            .needing_attention(shown)?
            .iter()
            .map(attention_report)
            .collect()
    } else {
        Vec::new()
    };
    let plan_attempt = if args.task.is_none() {
        super::plan::last_plan_attempt(store)
            .as_ref()
            .map(AttemptReport::from)
    } else {
        None
    };
    // A hint names the task only when a bare command would not reach it.
    let named = match (&args.task, &task) {
        (Some(_), Some(task)) => {
            let current = store.current()?.map(|t| t.id);
            task_arg(&store.task_ids()?, &task.id, current.as_deref())
        }
        (None, Some(task)) if draft.is_some() || draft_error.is_some() => {
            crate::tasks::naming::task_named(store, &task.id)
        }
        _ => String::new(),
    };
    let report = StatusReport {
        format: JSON_FORMAT,
        attention,
        plan_attempt,
        draft: draft.as_ref().map(|d| draft_report(store, d)),
        draft_error,
        task: task.as_ref().map(|t| {
            let mut report = task_report(store, t);
            if let Some(refreshed) = &refreshed {
                report.stale_found = refreshed
                    .stale
                    .iter()
                    .map(|s| StaleFound {
                        id: s.id.to_string(),
                        files: s.files.clone(),
                        marked: refreshed.marked,
                    })
                    .collect();
            }
            let approved_on = t
                .state
                .approval
                .as_ref()
                .and_then(|a| a.git_head.as_deref());
            report.plan_may_be_out_of_date =
                watch::freshness::missing_files(store.root(), &t.todo, approved_on);
            report.named.clone_from(&named);
            report
        }),
    };
    if args.json {
        json_with_next(ctx, &report);
    } else {
        ctx.ui.status(&report);
    }
    Ok(Outcome::Done)
}

/// `status --json`: the report and, beside its fields, the next thing to do.
fn json_with_next(ctx: &Ctx<'_>, report: &StatusReport<'_>) {
    #[derive(serde::Serialize)]
    struct WithNext<'r, 'a> {
        #[serde(flatten)]
        report: &'r StatusReport<'a>,
        next: Option<crate::report::status::NextReport>,
    }
    let next = crate::report::status::next_report(report);
    ctx.ui.json(&WithNext { report, next });
}
