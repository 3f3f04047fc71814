//! Workspace trust (DESIGN §12): which repositories the person has said may decide what tick
//! does, as git's `safe.directory`, VS Code's workspace trust and Codex's trusted projects do.
//!
//! A repository ships files that would steer tick: `.tasks/config.yaml` (where requests go,
//! which credential is sent, what runs, the sandbox and the limits), `.tasks/templates/` (what
//! TODO.md and PLAN.md say) and `.tasks/prompts/` (what the model is told). Until the person
//! trusts the repository, those are data: config keys that only tighten apply, the rest is
//! ignored ([`crate::config`]), and templates and prompts come from the person's own config
//! directory or tick itself ([`crate::tasks::Store::trusting`]).
//!
//! `tick trust` records the repository's root and the hash of each of those files in the
//! person's state directory (`$XDG_STATE_HOME/tick/trusted.yaml`, else
//! `~/.local/state/tick/trusted.yaml`): a file changed, added or removed since needs trusting
//! again. Nothing here prints; [`state`] and [`grant`] are what a front end (the CLI, the
//! session's "trust this folder?" question) calls.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::{Error, Result};
use crate::fsx;
use crate::store_path::TASKS_DIR;

/// The record's name in the state directory.
pub const TRUST_FILE: &str = "trusted.yaml";

/// The folders under `.tasks/` whose files a repository ships to steer tick.
const SHIPPED_DIRS: [&str; 2] = ["templates", "prompts"];

/// What the person has said about one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Trusted, and every shipped file is as it was then.
    Trusted,
    /// Never trusted (or the trust was revoked).
    Untrusted,
    /// Trusted once, but these shipped files changed, appeared or went since: the repository
    /// needs trusting again.
    Changed { files: Vec<String> },
}

impl TrustState {
    pub fn is_trusted(&self) -> bool {
        matches!(self, TrustState::Trusted)
    }
}

/// One trusted repository, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The repository's root, canonical.
    pub root: PathBuf,
    /// Each shipped file (`.tasks/config.yaml`, `.tasks/templates/…`), by its path from the
    /// root, with the blake3 hash of its bytes when it was trusted.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    pub trusted_at: DateTime<Utc>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Records {
    #[serde(default)]
    trusted: Vec<Record>,
}

/// The person's state directory for tick: `$XDG_STATE_HOME/tick`, else
/// `~/.local/state/tick`; `None` without either.
pub fn state_dir(env: &Env) -> Option<PathBuf> {
    env.var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.var("HOME").map(|h| Path::new(h).join(".local/state")))
        .map(|base| base.join("tick"))
}

/// Where the record of trusted repositories is.
pub fn record_path(env: &Env) -> Option<PathBuf> {
    state_dir(env).map(|dir| dir.join(TRUST_FILE))
}

/// `root` as recorded: canonical when it exists, so `./repo` and `/home/me/repo` are one.
fn canonical(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

/// The files `root` ships to steer tick, by path from the root, with the hash of each:
/// `.tasks/config.yaml`, and the files directly in `.tasks/templates/` and `.tasks/prompts/`.
/// What is not a regular file there is hashed as what it is, never opened.
pub fn shipped(root: &Path) -> BTreeMap<String, String> {
    let tasks = root.join(TASKS_DIR);
    let mut files = BTreeMap::new();
    let mut add = |path: &Path, rel: String| {
        if let Some(hash) = hash_of(path) {
            files.insert(rel, hash);
        }
    };
    add(
        &tasks.join(crate::store_path::CONFIG_FILE),
        format!("{TASKS_DIR}/{}", crate::store_path::CONFIG_FILE),
    );
    for dir in SHIPPED_DIRS {
        let Ok(entries) = std::fs::read_dir(tasks.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            add(&entry.path(), format!("{TASKS_DIR}/{dir}/{name}"));
        }
    }
    files
}

/// The hash of what is at `path`, without following a final symlink; `None` when nothing is.
fn hash_of(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    Some(if kind.is_symlink() {
        let target = std::fs::read_link(path).ok()?;
        format!("symlink:{}", target.display())
    } else if kind.is_file() {
        crate::watch::fingerprint::hash_file(path)
    } else {
        "special:not a regular file".to_owned()
    })
}

fn load(env: &Env) -> Result<Records> {
    let Some(path) = record_path(env) else {
        return Ok(Records::default());
    };
    let Some(text) = fsx::read_capped(&path, fsx::MAX_CONFIG_FILE)? else {
        return Ok(Records::default());
    };
    serde_yaml::from_str(&text).map_err(|err| {
        Error::input(format!("`{}` does not parse: {err}", path.display())).hint(
            "it is tick's record of the repositories you trust; fix or remove it (then \
             `tick trust` again); nothing was changed",
        )
    })
}

fn save(env: &Env, records: &Records) -> Result<PathBuf> {
    let path = record_path(env).ok_or_else(|| {
        Error::input("tick has nowhere to record trust: neither `XDG_STATE_HOME` nor `HOME` is set")
            .hint("set `HOME`; nothing was changed")
    })?;
    if let Some(dir) = path.parent() {
        fsx::create_dir_all(dir)?;
    }
    let body = serde_yaml::to_string(records)
        .map_err(|err| Error::internal(format!("could not write the trust record: {err}")))?;
    let text = format!(
        "# Written by `tick trust`: the repositories you trust, and their files as you trusted them.\n{body}"
    );
    fsx::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// What the person has said about the repository at `root`, given its files now. A record that
/// cannot be read counts as no trust.
pub fn state(root: &Path, env: &Env) -> TrustState {
    let Ok(records) = load(env) else {
        return TrustState::Untrusted;
    };
    let root = canonical(root);
    let Some(record) = records.trusted.iter().find(|r| r.root == root) else {
        return TrustState::Untrusted;
    };
    let now = shipped(&root);
    let mut changed: Vec<String> = now
        .iter()
        .filter(|(path, hash)| record.files.get(*path) != Some(hash))
        .map(|(path, _)| path.clone())
        .chain(
            record
                .files
                .keys()
                .filter(|path| !now.contains_key(*path))
                .cloned(),
        )
        .collect();
    changed.sort();
    if changed.is_empty() {
        TrustState::Trusted
    } else {
        TrustState::Changed { files: changed }
    }
}

/// Trusts the repository at `root` with its files as they are now (replacing an earlier
/// record of it). Returns the record and where it was written.
pub fn grant(root: &Path, env: &Env) -> Result<(Record, PathBuf)> {
    let mut records = load(env)?;
    let root = canonical(root);
    let record = Record {
        files: shipped(&root),
        root: root.clone(),
        trusted_at: env.now(),
    };
    records.trusted.retain(|r| r.root != root);
    records.trusted.push(record.clone());
    records.trusted.sort_by(|a, b| a.root.cmp(&b.root));
    let path = save(env, &records)?;
    Ok((record, path))
}

/// Forgets the trust in the repository at `root`; `false` when it was not trusted.
pub fn revoke(root: &Path, env: &Env) -> Result<bool> {
    let mut records = load(env)?;
    let root = canonical(root);
    let before = records.trusted.len();
    records.trusted.retain(|r| r.root != root);
    if records.trusted.len() == before {
        return Ok(false);
    }
    save(env, &records)?;
    Ok(true)
}

/// Every trusted repository, by root.
pub fn list(env: &Env) -> Result<Vec<Record>> {
    Ok(load(env)?.trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Env {
        let vars = [("HOME".to_owned(), home.display().to_string())].into();
        Env::fixed(home.to_path_buf(), vars, chrono::DateTime::UNIX_EPOCH)
    }

    #[test]
    fn trust_holds_until_a_shipped_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".tasks/templates")).unwrap();
        std::fs::write(root.join(".tasks/config.yaml"), "model: m\n").unwrap();
        let e = env(&home);
        assert_eq!(state(&root, &e), TrustState::Untrusted);
        let (record, path) = grant(&root, &e).unwrap();
        assert_eq!(path, home.join(".local/state/tick/trusted.yaml"));
        assert_eq!(
            record.files.keys().collect::<Vec<_>>(),
            [".tasks/config.yaml"]
        );
        assert_eq!(state(&root, &e), TrustState::Trusted);
        // Unrelated files do not matter; a new template does.
        std::fs::write(root.join(".tasks/notes.md"), "x").unwrap();
        assert_eq!(state(&root, &e), TrustState::Trusted);
        std::fs::write(root.join(".tasks/templates/TODO.md.j2"), "x").unwrap();
        std::fs::write(root.join(".tasks/config.yaml"), "model: n\n").unwrap();
        assert_eq!(
            state(&root, &e),
            TrustState::Changed {
                files: vec![
                    ".tasks/config.yaml".into(),
                    ".tasks/templates/TODO.md.j2".into()
                ]
            }
        );
        grant(&root, &e).unwrap();
        assert_eq!(state(&root, &e), TrustState::Trusted);
        std::fs::remove_file(root.join(".tasks/config.yaml")).unwrap();
        assert!(matches!(state(&root, &e), TrustState::Changed { .. }));
        assert_eq!(list(&e).unwrap().len(), 1);
        assert!(revoke(&root, &e).unwrap());
        assert!(!revoke(&root, &e).unwrap());
        assert_eq!(state(&root, &e), TrustState::Untrusted);
        assert!(list(&e).unwrap().is_empty());
    }

    #[test]
    fn the_state_directory_follows_xdg() {
        let mut e = env(Path::new("/home/me"));
        assert_eq!(
            state_dir(&e),
            Some(PathBuf::from("/home/me/.local/state/tick"))
        );
        e.vars.insert("XDG_STATE_HOME".into(), "/st".into());
        assert_eq!(state_dir(&e), Some(PathBuf::from("/st/tick")));
        // A relative XDG path is not one (the spec says to ignore it).
        e.vars.insert("XDG_STATE_HOME".into(), "rel".into());
        assert_eq!(
            state_dir(&e),
            Some(PathBuf::from("/home/me/.local/state/tick"))
        );
    }
}
