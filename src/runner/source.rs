//! The runner's hooks for tasks `tick import` made: when tick ticks a step, the source task's
//! mark is ticked too (hash-guarded, through the same atomic write as TODO.md, journaled as
//! tick's own write so staleness never takes it for a person's edit); and before a step
//! starts, the steps of other active tasks that change the same files are named.

use crate::fsx;
use crate::import::{self, Format, Mark, NotWritten};
use crate::plan::StepId;
use crate::tasks::journal::{self, Record};
use crate::tasks::{Store, TaskRef, overlap};

use super::RunEvent;

/// Ticks step `id`'s source task, if it was imported with write-back; the event to report.
pub fn tick_source(
    store: &Store,
    task: &TaskRef,
    id: StepId,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<RunEvent> {
    let loaded = store.load(task).ok()?;
    let record = loaded.state.import.as_ref()?;
    let step = record.steps.get(&id)?;
    // Only a tick that landed: a person's marker kept over the runner's is not tick's tick.
    let ticked = loaded.todo.find(id)?.effective_status() == crate::plan::StepStatus::Done;
    if !record.write_back || !ticked {
        return None;
    }
    let not = |reason: &str| {
        Some(RunEvent::SourceNotTicked {
            step: id,
            source: step.source.clone(),
            file: record.path.clone(),
            reason: reason.to_owned(),
        })
    };
    let (Ok(format), Some(line), Some(col)) =
        (record.format.parse::<Format>(), step.line, step.col)
    else {
        return None;
    };
    let root = store.root();
    let path = root.join(&record.path);
    let inside = match (path.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(root)) => real.starts_with(&root) && !real.starts_with(root.join(".git")),
        _ => false,
    };
    if !inside {
        return not("the file is not inside the repository (or is gone)");
    }
    let Ok(Some(src)) = fsx::read_capped(&path, fsx::MAX_TEXT_FILE) else {
        return not("the file could not be read");
    };
    let mark = Mark {
        line,
        col,
        hash: step.hash.clone(),
        key: step.key.clone(),
    };
    match import::write_back(format, &src, &mark) {
        Ok(ticked) => {
            if fsx::write_atomic(&path, ticked.as_bytes()).is_err() {
                return not("the file could not be written");
            }
            let _ = journal::record(
                store.dir(),
                &Record::Write {
                    path: record.path.clone(),
                    hash: crate::watch::fingerprint::hash_file(&path),
                    at: now,
                    task: task.id.clone(),
                    step: Some(id.to_string()),
                },
            );
            Some(RunEvent::SourceTicked {
                step: id,
                source: step.source.clone(),
                file: record.path.clone(),
            })
        }
        Err(NotWritten::AlreadyDone) => None,
        Err(NotWritten::Changed) => not("its line changed since the import"),
    }
}

/// The steps of other active tasks, still to be done, whose files step `id` of `task` also
/// changes; the event naming them, if there are any.
pub fn overlaps_before(store: &Store, task: &TaskRef, id: StepId) -> Option<RunEvent> {
    let loaded = store.load(task).ok()?;
    let step = loaded.todo.find(id)?;
    let mine: Vec<overlap::StepFiles> = overlap::step_files(&loaded.todo, None)
        .into_iter()
        .filter(|s| s.step == id || (id.is_sub() && s.step == id.parent() && step.files.is_empty()))
        .collect();
    if mine.is_empty() {
        return None;
    }
    let others = overlap::active_tasks(store, Some(&task.id), true);
    let found = overlap::find(&mine, &others);
    (!found.is_empty()).then(|| RunEvent::Overlap {
        step: id,
        overlaps: found.iter().map(|o| o.line("this task")).collect(),
    })
}
