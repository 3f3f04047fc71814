//! `tick list`: the draft and every task, newest first.

use serde::Serialize;

use super::status::{DraftReport, JSON_FORMAT, draft_report};
use super::{Ctx, Outcome};
use crate::cli::ListArgs;
use crate::error::Result;
use crate::plan::Phase;

#[derive(Debug, Serialize)]
pub struct ListReport {
    pub format: u32,
    pub draft: Option<DraftReport>,
    /// Why the draft does not parse, when there is one that does not (`draft` is then `null`).
    pub draft_error: Option<String>,
    pub tasks: Vec<ListedTask>,
}

#[derive(Debug, Serialize)]
pub struct ListedTask {
    pub id: String,
    pub path: String,
    /// `null` when the task's files do not parse; `error` says why.
    pub title: Option<String>,
    pub phase: Option<Phase>,
    pub done: usize,
    pub total: usize,
    pub error: Option<String>,
}

pub fn run(ctx: &Ctx<'_>, args: &ListArgs) -> Result<Outcome> {
    let store = &ctx.store;
    let (draft, draft_error) = match store.load_draft() {
        Ok(draft) => (draft, None),
        Err(err) => (None, Some(err.message)),
    };
    let mut tasks = Vec::new();
    for id in store.task_ids()?.iter().rev() {
        let task_ref = store.task_ref(id);
        let path = store.rel(&task_ref.dir);
        tasks.push(match store.load(&task_ref) {
            Ok(task) => {
                let progress = task.progress();
                ListedTask {
                    id: id.clone(),
                    path,
                    title: Some(task.title()),
                    phase: Some(task.phase()),
                    done: progress.done,
                    total: progress.total,
                    error: None,
                }
            }
            Err(err) => ListedTask {
                id: id.clone(),
                path,
                title: None,
                phase: None,
                done: 0,
                total: 0,
                error: Some(err.message),
            },
        });
    }
    let report = ListReport {
        format: JSON_FORMAT,
        draft: draft.as_ref().map(|d| draft_report(store, d)),
        draft_error,
        tasks,
    };
    if args.json {
        ctx.ui.json(&report);
    } else {
        ctx.ui.list(&report);
    }
    Ok(Outcome::Done)
}
