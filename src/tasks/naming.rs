//! How a hint names a task for the command a person types next: nothing for the current
//! task, else the shortest prefix of its folder name that no other task shares. Below the
//! engines that word hints (planning, the runner, the reports), so each asks the same.

use super::Store;

/// How a hint names the task `id` after a command: nothing for the current task (`current`),
/// else a space and the shortest prefix of its folder name that no other task of `ids`
/// shares, at least its date (`20261130`).
pub fn task_arg(ids: &[String], id: &str, current: Option<&str>) -> String {
    if current == Some(id) {
        return String::new();
    }
    format!(" {}", short_prefix(ids, id))
}

/// How a hint names task `id` for the command a person types next, read from `store`: as
/// [`task_arg`], except that while a draft waits a bare `tick approve` takes the draft, so the
/// task is named then. The whole id when the store cannot be read.
pub fn task_named(store: &Store, id: &str) -> String {
    let Ok(ids) = store.task_ids() else {
        return format!(" {id}");
    };
    let current = if store.draft_plan_path().exists() {
        None
    } else {
        store.current().ok().flatten().map(|t| t.id)
    };
    task_arg(&ids, id, current.as_deref())
}

/// The shortest prefix of `id` (at least 8 characters, the date) that names only it among
/// `ids` by [`Store::resolve`]'s rule.
pub fn short_prefix(ids: &[String], id: &str) -> String {
    let mut end = id.len().min(8);
    while end < id.len() {
        let prefix = &id[..end];
        if id.is_char_boundary(end)
            && !ids
                .iter()
                .any(|other| other != id && other.starts_with(prefix))
        {
            return prefix.to_owned();
        }
        end += 1;
    }
    id.to_owned()
}
