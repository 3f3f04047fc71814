//! The record of a failed planning attempt, `.tasks/draft/last_attempt.yaml`: written when the
//! model or a limit stops a planning run, shown by `tick status` and `tick check`, removed when
//! a draft is written.

use crate::error::{Error, Result};
use crate::fsx;
use crate::tasks::Store;
use crate::tasks::state::LastAttempt;

/// Where a failed planning attempt is recorded until one succeeds.
const ATTEMPT_FILE: &str = "last_attempt.yaml";

/// The failed planning attempt recorded in `.tasks/draft/`, if any. A record that does not
/// parse is no record: it is only a report, and the next attempt replaces it.
pub fn last(store: &Store) -> Option<LastAttempt> {
    let text = fsx::read_optional(&store.draft_dir().join(ATTEMPT_FILE)).ok()??;
    serde_yaml::from_str(&text).ok()
}

pub fn record(store: &Store, attempt: &LastAttempt) -> Result<()> {
    let text = serde_yaml::to_string(attempt)
        .map_err(|err| Error::internal(format!("could not record the failed attempt: {err}")))?;
    fsx::create_dir_all(&store.draft_dir())?;
    fsx::write_atomic(&store.draft_dir().join(ATTEMPT_FILE), text.as_bytes())
}

/// Forgets the failed attempt: a draft was written.
pub fn clear(store: &Store) -> Result<()> {
    fsx::remove_file(&store.draft_dir().join(ATTEMPT_FILE))
}
