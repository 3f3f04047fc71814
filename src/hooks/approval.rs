//! Hooks are part of what a person approves: the approval records each hook that applies to
//! the task (event, matcher, command, and the content hash of every file of the repository
//! the command names, such as `./scripts/fmt.sh`), and `tick run` refuses, with the
//! difference, when one was added, removed or changed since (`tick approve` takes it).

use std::path::Path;

use super::HookSet;
use crate::tasks::state::ApprovedHook;

/// The record of `set` as an approval keeps it, in declared order.
pub fn record(set: &HookSet, root: &Path) -> Vec<ApprovedHook> {
    set.hooks()
        .iter()
        .map(|hook| ApprovedHook {
            event: hook.entry.event.as_str().to_owned(),
            matcher: hook.entry.matcher.clone().filter(|m| !m.trim().is_empty()),
            command: hook.entry.command.clone(),
            scripts: scripts(&hook.entry.command, root),
        })
        .collect()
}

/// The files of the repository at `root` that `command` names (any word that is the path of
/// a regular file inside it), each with its content hash: a script edited after approval is
/// a changed hook.
fn scripts(command: &str, root: &Path) -> std::collections::BTreeMap<String, String> {
    let mut found = std::collections::BTreeMap::new();
    for word in command.split_whitespace() {
        let word = word.trim_matches(|c| c == '"' || c == '\'' || c == ';');
        let word = word
            .strip_prefix("$CLAUDE_PROJECT_DIR/")
            .or_else(|| word.strip_prefix("$TICK_PROJECT_DIR/"))
            .unwrap_or(word);
        if word.is_empty() || word.starts_with('-') {
            continue;
        }
        let path = root.join(word);
        let Ok(canonical) = path.canonicalize() else {
            continue;
        };
        let inside = root
            .canonicalize()
            .is_ok_and(|root| canonical.starts_with(root));
        if inside && canonical.is_file() {
            let rel = word.trim_start_matches("./").to_owned();
            found.insert(rel, crate::watch::fingerprint::hash_file(&canonical));
        }
    }
    found
}

/// How `now` differs from what was `approved`, one line each (`+` added, `-` removed, `~`
/// changed); empty when they are the same.
pub fn difference(approved: &[ApprovedHook], now: &[ApprovedHook]) -> Vec<String> {
    let key = |h: &ApprovedHook| (h.event.clone(), h.matcher.clone(), h.command.clone());
    let show = |h: &ApprovedHook| {
        let matcher = h
            .matcher
            .as_deref()
            .map_or(String::new(), |m| format!(" (matcher `{m}`)"));
        format!("{}{matcher} `{}`", h.event, h.command)
    };
    let mut lines = Vec::new();
    for hook in now {
        match approved.iter().find(|a| key(a) == key(hook)) {
            None => lines.push(format!("+ {} (added)", show(hook))),
            Some(before) if before.scripts != hook.scripts => {
                let changed: Vec<String> = hook
                    .scripts
                    .iter()
                    .filter(|(path, hash)| before.scripts.get(*path) != Some(hash))
                    .map(|(path, _)| format!("`{path}`"))
                    .chain(
                        before
                            .scripts
                            .keys()
                            .filter(|p| !hook.scripts.contains_key(*p))
                            .map(|p| format!("`{p}`")),
                    )
                    .collect();
                lines.push(format!(
                    "~ {} (changed: {})",
                    show(hook),
                    changed.join(", ")
                ));
            }
            Some(_) => {}
        }
    }
    for hook in approved {
        if !now.iter().any(|n| key(n) == key(hook)) {
            lines.push(format!("- {} (removed)", show(hook)));
        }
    }
    // Same hooks in another order run in another order.
    if lines.is_empty() && approved != now {
        lines.push("~ the hooks run in another order than approved".to_owned());
    }
    lines
}

/// Records `hooks` as approved for task `id` (`tick approve`), in one transaction with its
/// state.yaml. Returns the difference from what was approved before (empty: nothing was
/// written).
pub fn approve(
    store: &crate::tasks::Store,
    id: &str,
    hooks: &[ApprovedHook],
    now: chrono::DateTime<chrono::Utc>,
) -> crate::error::Result<Vec<String>> {
    let task_ref = store.task_ref(id);
    let _lock = store.lock_task(&task_ref, "tick approve")?;
    let task = store.load(&task_ref)?;
    let Some(approval) = &task.state.approval else {
        return Ok(Vec::new());
    };
    let changes = difference(&approval.hooks, hooks);
    if changes.is_empty() {
        return Ok(changes);
    }
    store.transact(&task_ref, now, "a person approved the hooks", |tx| {
        tx.record(|state| {
            if let Some(approval) = state.approval.as_mut() {
                approval.hooks = hooks.to_vec();
            }
        });
        Ok(())
    })?;
    Ok(changes)
}

/// [`approve`] with the hooks that apply now, as the configuration in `env` has them: what
/// every way of approving task `id` calls once the approval is written (`tick approve`,
/// `tick review`, the session).
pub fn approve_configured(
    store: &crate::tasks::Store,
    env: &crate::env::Env,
    id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> crate::error::Result<Vec<String>> {
    let config = crate::config::for_workspace(store, env, &crate::config::Flags::default())?;
    let set = HookSet::resolve(&config.hooks, store.root());
    approve(store, id, &record(&set, store.root()), now)
}
