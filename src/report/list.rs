//! What `tick list` reports: the draft and every task, newest first, each task with its phase
//! and progress, or why its files do not parse.

use serde::Serialize;

use super::status::{DraftReport, JSON_FORMAT, draft_report};
use crate::error::Result;
use crate::plan::Phase;
use crate::tasks::Store;

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

/// The draft and every task in `store`, newest first.
pub fn list_report(store: &Store) -> Result<ListReport> {
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
    Ok(ListReport {
        format: JSON_FORMAT,
        draft: draft.as_ref().map(|d| draft_report(store, d)),
        draft_error,
        tasks,
    })
}
