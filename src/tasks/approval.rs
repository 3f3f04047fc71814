//! The approval protocol's files, both halves side by side: how an approval moves a staged
//! task folder into place and removes the draft ([`install`]), and how the next command
//! finishes an approval a kill cut short ([`finish_cut_short`], [`approved_as`]); and the copy
//! of PLAN.md kept at each approval ([`APPROVED_COPY`]) to show later what changed.
//!
//! What an approval writes (the task's PLAN.md, TODO.md, state.yaml) is decided in
//! [`crate::planning::approve`]; this module is below the store's lock, which runs the
//! recovery before any command looks for a draft.

use std::path::Path;

use crate::error::Result;
use crate::fsx;

use super::state::State;
use super::{STATE_FILE, Store, folder_name};

/// The file an approval in progress writes into the draft folder: the id of the task the draft
/// becomes.
pub const APPROVING_FILE: &str = "approving";

/// Where the approved PLAN.md is kept (locally, in the task's `runs/`, not committed) to show
/// what changed later.
pub const APPROVED_COPY: &str = "approved-PLAN.md";

/// The hash recorded with a task of the draft's PLAN.md it was approved from.
pub fn draft_hash(src: &str) -> String {
    blake3::hash(src.as_bytes()).to_hex().to_string()
}

/// Removes the draft: its PLAN.md first, so a kill part-way leaves no draft to approve again.
pub fn remove_draft(store: &Store) -> Result<()> {
    fsx::remove_file(&store.draft_plan_path())?;
    fsx::remove_dir_all(&store.draft_dir())
}

/// Moves the whole task folder `stage` (synced) into place as task `id`, and removes the
/// draft it was approved from. The note written first says which task this draft becomes: a
/// kill after the rename leaves task and draft both, and the next command sees the note and
/// the task's `draft_hash`, and finishes by removing the draft instead of approving it again
/// ([`finish_cut_short`]). Returns the task's folder.
pub fn install(store: &Store, stage: &Path, id: &str) -> Result<std::path::PathBuf> {
    fsx::write_atomic(&store.approving_path(), id.as_bytes())?;
    let task_dir = store.dir().join(id);
    fsx::rename(stage, &task_dir)?;
    fsx::sync_dir(store.dir())?;
    remove_draft(store)?;
    Ok(task_dir)
}

/// The task the draft `src` was already approved as, when an approval was cut short after
/// its task folder appeared (the draft is then only waiting to be removed).
pub fn approved_as(store: &Store, src: &str) -> Result<Option<String>> {
    let Some(id) = fsx::read_optional(&store.approving_path())? else {
        return Ok(None);
    };
    let id = id.trim().to_owned();
    if !folder_name::is_task_folder(&id) {
        return Ok(None);
    }
    let state = fsx::read_optional(&store.dir().join(&id).join(STATE_FILE))?;
    let approved_from = state
        .and_then(|text| serde_yaml::from_str::<State>(&text).ok())
        .and_then(|state| state.approval)
        .and_then(|approval| approval.draft_hash);
    Ok((approved_from.as_deref() == Some(draft_hash(src).as_str())).then_some(id))
}

/// Finishes an approval a killed `tick approve` left behind: the task folder is there, so the
/// draft goes; or it is not, so the note goes and the draft stays to be approved. Under the
/// store lock.
pub fn finish_cut_short(store: &Store) -> Result<()> {
    let note = store.approving_path();
    if !note.exists() {
        return Ok(());
    }
    let approved = match fsx::read_optional(&store.draft_plan_path())? {
        Some(src) => approved_as(store, &src)?.is_some(),
        // Killed while removing the draft: PLAN.md went first, so the rest goes too.
        None => true,
    };
    if approved {
        remove_draft(store)
    } else {
        fsx::remove_file(&note)
    }
}

/// A unified diff of PLAN.md against the copy kept at the last approval, if there is one.
pub fn changes_since_approval(copy: &Path, current: &str) -> Option<String> {
    let old = fsx::read_optional(copy).ok()??;
    // tick keeps the front matter's `status:` up to date itself: not a change of the plan.
    let old = match (status_line(&old), status_line(current)) {
        (Some(was), Some(now)) => {
            format!("{}{}{}", &old[..was.start], &current[now], &old[was.end..])
        }
        _ => old,
    };
    if old == current {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&old, current);
    Some(
        diff.unified_diff()
            .context_radius(2)
            .header("PLAN.md (approved)", "PLAN.md (now)")
            .to_string(),
    )
}

/// Where the front matter's `status:` line of a PLAN.md text is, its line end included.
fn status_line(text: &str) -> Option<std::ops::Range<usize>> {
    let body = text.strip_prefix("---")?;
    let mut at = 3 + body.find('\n')? + 1;
    for line in text[at..].split_inclusive('\n') {
        if line.trim_end() == "---" {
            return None;
        }
        if line.starts_with("status:") {
            return Some(at..at + line.len());
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
mod status_line_tests {
    use super::*;

    #[test]
    fn ticks_own_status_line_is_no_change_and_the_rest_still_is() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("approved-PLAN.md");
        let approved = "---\nid: x\nstatus: approved\n---\n# T\n\n## Steps\n- [ ] S1 a\n";
        fsx::write_atomic(&copy, approved.as_bytes()).unwrap();
        let running = approved.replace("status: approved", "status: executing");
        assert_eq!(changes_since_approval(&copy, &running), None);
        let edited = running.replace("S1 a", "S1 b");
        let diff = changes_since_approval(&copy, &edited).unwrap();
        assert!(diff.contains("-- [ ] S1 a\n+- [ ] S1 b"), "{diff}");
        assert!(!diff.contains("status:"), "{diff}");
        // A `status:` line in the body is the body's.
        assert_eq!(status_line("# T\nstatus: x\n"), None);
    }
}
