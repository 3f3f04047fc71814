//! The structured-output method each server and model got on its last probe (`tick doctor`),
//! kept as local state in `.tasks/.local/structured-output.yaml`. The folder ignores itself
//! with a `.gitignore` of its own (`*`), so the cache is never committed, whatever the
//! repository's other ignore files say.
//!
//! `.tasks/.local/` is this machine's. A clone cannot ship it: when git tracks a file in it
//! (someone force-added it), the folder is the repository's, not a measurement made here, and
//! it is neither read nor written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsx;
use crate::llm::structured::Probe;
use crate::llm::{ProviderKind, StructuredMethod};

const DIR: &str = ".local";
const FILE: &str = "structured-output.yaml";
const IGNORE_ALL: &str = "# Written by tick: local state, never committed.\n*\n";

/// Probe results by server and model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityCache {
    #[serde(default)]
    pub probes: BTreeMap<String, Probe>,
}

/// The key of one server and model.
pub fn key(base_url: &str, model: &str) -> String {
    format!("{} {model}", base_url.trim_end_matches('/'))
}

fn path(tasks_dir: &Path) -> PathBuf {
    tasks_dir.join(DIR).join(FILE)
}

/// Whether git tracks a file under `.tasks/.local/` of the workspace of `tasks_dir`: then
/// the folder came with the repository, and tick leaves it alone.
pub fn shipped_by_repository(tasks_dir: &Path) -> bool {
    let Some(root) = tasks_dir.parent() else {
        return false;
    };
    let local = format!("{}/{DIR}", crate::store_path::TASKS_DIR);
    crate::git::output(root, &["ls-files", "-z", "--", &local])
        .is_some_and(|listed| !listed.is_empty())
}

/// The cache in `tasks_dir` (`.tasks/`); empty when there is none, it does not parse (it is
/// only a cache: the next probe rewrites it), or git tracks it ([`shipped_by_repository`]).
pub fn load(tasks_dir: &Path) -> CapabilityCache {
    if !path(tasks_dir).exists() || shipped_by_repository(tasks_dir) {
        return CapabilityCache::default();
    }
    fsx::read_optional(&path(tasks_dir))
        .ok()
        .flatten()
        .and_then(|text| serde_yaml::from_str(&text).ok())
        .unwrap_or_default()
}

/// Records `probe` for `key`. Writes nothing when `tasks_dir` does not exist: a probe does not
/// create `.tasks/` in a repository that has none.
pub fn record(tasks_dir: &Path, key: &str, probe: &Probe) -> Result<()> {
    if !tasks_dir.is_dir() || shipped_by_repository(tasks_dir) {
        return Ok(());
    }
    let mut cache = load(tasks_dir);
    cache.probes.insert(key.to_owned(), probe.clone());
    let dir = tasks_dir.join(DIR);
    fsx::create_dir_all(&dir)?;
    fsx::write_new(&dir.join(".gitignore"), IGNORE_ALL.as_bytes())?;
    let text = serde_yaml::to_string(&cache)
        .map_err(|err| Error::internal(format!("could not record the probe: {err}")))?;
    fsx::write_atomic(&path(tasks_dir), text.as_bytes())
}

/// The method to use with a server: the one its last probe found held; else the first
/// candidate for its kind (the answer is checked against the schema either way).
pub fn method_for(
    cache: &CapabilityCache,
    key: &str,
    kind: ProviderKind,
    ollama: bool,
) -> StructuredMethod {
    match cache.probes.get(key) {
        Some(probe) if probe.held => probe.method,
        _ => StructuredMethod::candidates(kind, ollama)[0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_is_cached_locally_and_ignored_by_git() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = dir.path().join(".tasks");
        let probe = Probe {
            method: StructuredMethod::ForcedTool,
            held: true,
            detail: "answered {}".into(),
        };
        // No `.tasks/`: nothing is written.
        record(&tasks, "k", &probe).unwrap();
        assert!(!tasks.exists());
        std::fs::create_dir_all(&tasks).unwrap();
        record(&tasks, &key("http://127.0.0.1:8080/v1/", "m"), &probe).unwrap();
        let cache = load(&tasks);
        assert_eq!(cache.probes["http://127.0.0.1:8080/v1 m"], probe);
        assert_eq!(
            std::fs::read_to_string(tasks.join(".local/.gitignore")).unwrap(),
            IGNORE_ALL
        );
        assert_eq!(
            method_for(
                &cache,
                "http://127.0.0.1:8080/v1 m",
                ProviderKind::OpenAi,
                false
            ),
            StructuredMethod::ForcedTool
        );
        // Unknown, or probed and not held: the first candidate.
        assert_eq!(
            method_for(&cache, "other", ProviderKind::OpenAi, false),
            StructuredMethod::ResponseFormat
        );
        let mut failed = cache.clone();
        failed.probes.values_mut().for_each(|p| p.held = false);
        assert_eq!(
            method_for(
                &failed,
                "http://127.0.0.1:8080/v1 m",
                ProviderKind::OpenAi,
                true
            ),
            StructuredMethod::OllamaFormat
        );
    }

    /// Issue 25, finding 3: a force-added cache is the repository's, not this machine's.
    #[test]
    fn a_cache_git_tracks_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
        git(&["init", "-q"]);
        let tasks = root.join(".tasks");
        let probe = Probe {
            method: StructuredMethod::ForcedTool,
            held: true,
            detail: String::new(),
        };
        std::fs::create_dir_all(&tasks).unwrap();
        record(&tasks, "k", &probe).unwrap();
        assert_eq!(
            load(&tasks).probes.len(),
            1,
            "this machine's own cache is used"
        );
        git(&["add", "-f", ".tasks/.local/structured-output.yaml"]);
        assert!(shipped_by_repository(&tasks));
        assert_eq!(load(&tasks), CapabilityCache::default());
        let before = std::fs::read(tasks.join(".local/structured-output.yaml")).unwrap();
        record(&tasks, "other", &probe).unwrap();
        assert_eq!(
            std::fs::read(tasks.join(".local/structured-output.yaml")).unwrap(),
            before,
            "a tracked cache is not written either"
        );
    }

    #[test]
    fn git_does_not_see_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .output()
                .unwrap()
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(root.join(".tasks")).unwrap();
        let probe = Probe {
            method: StructuredMethod::ResponseFormat,
            held: false,
            detail: String::new(),
        };
        record(&root.join(".tasks"), "k", &probe).unwrap();
        let status = git(&["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(String::from_utf8_lossy(&status.stdout), "");
    }
}
