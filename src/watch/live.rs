//! The live watcher: file-system events for the workspace, debounced, filtered and turned into
//! workspace-relative paths, for `tick watch` and `tick run`. It says only *what may have
//! changed*; the consumer re-runs the pure staleness check, which decides by content.
//!
//! - Directories are watched, never single files: editors save by writing a temp file and
//!   renaming it over the original, after which a watch on the file itself is deaf. The root
//!   is watched on its own and each top-level directory recursively, except the ones
//!   `.gitignore` excludes and `.git`, so `target/` or `node_modules/` cost no watches. A
//!   top-level directory created later is added when it appears (with a rescan, since files
//!   may have landed in it before its watch).
//! - Events under `.git/`, in a task's `runs/`, on lock files, on ignored paths and on this
//!   process's own temp files ([`crate::fsx::is_own_temp`]) are dropped.
//! - A rescan flag (the kernel queue overflowed, events were lost) or a watcher error becomes
//!   [`Change::Rescan`]: the consumer re-checks everything.
//! - Where the native watcher cannot start (no inotify, the watch limit reached) it falls back
//!   to polling, comparing contents as well as times (the poller's times are whole seconds).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use notify::{PollWatcher, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, NoCache, new_debouncer_opt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::error::{Error, Result};
use crate::tasks::{RUNS_DIR, TASKS_DIR, lock::LOCK_FILE};

/// How the watcher runs.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    /// Events for one path within this long are merged into one.
    pub debounce: Duration,
    /// Poll instead of using the native watcher.
    pub force_poll: bool,
    /// How often the polling fallback looks.
    pub poll_interval: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            // Short enough that a change is marked well within a second; long enough to fold
            // an editor's write-temp-rename-chmod into one batch.
            debounce: Duration::from_millis(150),
            force_poll: false,
            poll_interval: Duration::from_millis(250),
        }
    }
}

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// These workspace-relative paths (`/`-separated, sorted, deduplicated) may have changed.
    Paths(Vec<String>),
    /// Events may have been lost: check everything.
    Rescan { reason: String },
}

/// What the event handler passes on; new top-level directories are handled by the watcher.
enum Raw {
    Change(Change),
    NewDir(PathBuf),
}

enum Backend {
    Native(Debouncer<RecommendedWatcher, NoCache>),
    Poll(Debouncer<PollWatcher, NoCache>),
}

impl Backend {
    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        match self {
            Backend::Native(d) => d.watch(path, mode),
            Backend::Poll(d) => d.watch(path, mode),
        }
    }
}

/// A running watcher; dropping it stops it.
pub struct LiveWatcher {
    backend: Backend,
    root: PathBuf,
    rx: UnboundedReceiver<Raw>,
    /// Why the native watcher was not used, if it was not.
    pub fallback: Option<String>,
}

impl std::fmt::Debug for LiveWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveWatcher")
            .field("root", &self.root)
            .field("polling", &self.is_polling())
            .finish_non_exhaustive()
    }
}

impl LiveWatcher {
    /// Starts watching the workspace at `root`. Events are delivered through [`Self::next`].
    pub fn start(root: &Path, options: LiveOptions) -> Result<LiveWatcher> {
        let root = root
            .canonicalize()
            .map_err(|err| Error::io("watch", root, &err))?;
        let filter = Filter::new(&root);
        let (tx, rx) = unbounded_channel();
        let fallback = if options.force_poll {
            "polling was asked for".to_owned()
        } else {
            match native(&root, &filter, tx.clone(), options) {
                Ok(backend) => {
                    return Ok(LiveWatcher {
                        backend,
                        root,
                        rx,
                        fallback: None,
                    });
                }
                Err(err) => err.to_string(),
            }
        };
        // The poller keeps modification times in whole seconds: without comparing contents, a
        // second save within the same second as the first would go unseen.
        let config = notify::Config::default()
            .with_poll_interval(options.poll_interval)
            .with_compare_contents(true);
        let debouncer = new_debouncer_opt::<_, PollWatcher, NoCache>(
            options.debounce,
            None,
            handler(root.clone(), filter.clone(), tx),
            NoCache,
            config,
        )
        .map_err(|err| Error::internal(format!("could not watch the workspace: {err}")))?;
        let mut backend = Backend::Poll(debouncer);
        add_watches(&mut backend, &root, &filter)
            .map_err(|err| Error::internal(format!("could not watch the workspace: {err}")))?;
        Ok(LiveWatcher {
            backend,
            root,
            rx,
            fallback: Some(fallback),
        })
    }

    pub fn is_polling(&self) -> bool {
        matches!(self.backend, Backend::Poll(_))
    }

    /// The next change; `None` once the watcher has stopped.
    pub async fn next(&mut self) -> Option<Change> {
        let raw = self.rx.recv().await?;
        self.handle(raw)
    }

    /// A change that is already waiting, without waiting for one (for a loop that is busy
    /// with other work and looks in between).
    pub fn try_next(&mut self) -> Option<Change> {
        let raw = self.rx.try_recv().ok()?;
        self.handle(raw)
    }

    fn handle(&mut self, raw: Raw) -> Option<Change> {
        match raw {
            Raw::Change(change) => Some(change),
            Raw::NewDir(dir) => {
                if let Err(err) = self.backend.watch(&dir, RecursiveMode::Recursive) {
                    return Some(Change::Rescan {
                        reason: format!("could not watch `{}`: {err}", dir.display()),
                    });
                }
                // Files may have been written into it before the watch was in place.
                Some(Change::Rescan {
                    reason: format!("new directory `{}`", rel(&self.root, &dir)?),
                })
            }
        }
    }
}

fn native(
    root: &Path,
    filter: &Filter,
    tx: UnboundedSender<Raw>,
    options: LiveOptions,
) -> notify::Result<Backend> {
    let debouncer = new_debouncer_opt::<_, RecommendedWatcher, NoCache>(
        options.debounce,
        None,
        handler(root.to_path_buf(), filter.clone(), tx),
        NoCache,
        notify::Config::default(),
    )?;
    let mut backend = Backend::Native(debouncer);
    add_watches(&mut backend, root, filter)?;
    Ok(backend)
}

/// The root alone, and each top-level directory that is neither `.git` nor ignored,
/// recursively.
fn add_watches(backend: &mut Backend, root: &Path, filter: &Filter) -> notify::Result<()> {
    backend.watch(root, RecursiveMode::NonRecursive)?;
    let entries = std::fs::read_dir(root).map_err(notify::Error::io)?;
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|dir| filter.wanted_dir(dir))
        .collect();
    dirs.sort();
    for dir in dirs {
        backend.watch(&dir, RecursiveMode::Recursive)?;
    }
    Ok(())
}

fn handler(
    root: PathBuf,
    filter: Filter,
    tx: UnboundedSender<Raw>,
) -> impl FnMut(DebounceEventResult) + Send + 'static {
    move |result: DebounceEventResult| match result {
        Ok(events) => {
            let mut paths = Vec::new();
            let mut rescan = false;
            for event in &events {
                rescan |= event.need_rescan();
                for path in &event.paths {
                    if path.parent() == Some(root.as_path())
                        && path.is_dir()
                        && filter.wanted_dir(path)
                        && event.kind.is_create()
                    {
                        let _ = tx.send(Raw::NewDir(path.clone()));
                    }
                    if let Some(rel) = rel(&root, path).filter(|r| filter.wanted(r, path)) {
                        paths.push(rel);
                    }
                }
            }
            if rescan {
                let _ = tx.send(Raw::Change(Change::Rescan {
                    reason: "the watcher lost events".to_owned(),
                }));
            }
            paths.sort();
            paths.dedup();
            if !paths.is_empty() {
                let _ = tx.send(Raw::Change(Change::Paths(paths)));
            }
        }
        Err(errors) => {
            let reason = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let _ = tx.send(Raw::Change(Change::Rescan { reason }));
        }
    }
}

/// `path` relative to `root` with `/` separators; `None` outside it.
fn rel(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    let parts = parts?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Which paths matter: not `.git`, not a task's `runs/`, not a lock, not ignored.
#[derive(Clone)]
struct Filter {
    ignore: Gitignore,
}

impl Filter {
    fn new(root: &Path) -> Filter {
        let mut builder = GitignoreBuilder::new(root);
        // Missing files are fine: there is simply nothing to ignore.
        let _ = builder.add(root.join(".gitignore"));
        let _ = builder.add(root.join(".ignore"));
        let _ = builder.add(root.join(".git/info/exclude"));
        Filter {
            ignore: builder.build().unwrap_or_else(|_| Gitignore::empty()),
        }
    }

    fn wanted_dir(&self, dir: &Path) -> bool {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        name != ".git" && !self.ignore.matched(dir, true).is_ignore()
    }

    fn wanted(&self, rel: &str, path: &Path) -> bool {
        let parts: Vec<&str> = rel.split('/').collect();
        // The temp file of one of this process's own atomic writes is tick's, never a change.
        if parts
            .last()
            .is_some_and(|name| crate::fsx::is_own_temp(name))
        {
            return false;
        }
        match parts.as_slice() {
            [".git", ..] => false,
            [TASKS_DIR, rest @ ..] => {
                !matches!(rest, [_, RUNS_DIR, ..] | [LOCK_FILE] | [_, LOCK_FILE])
            }
            _ => !self
                .ignore
                .matched_path_or_any_parents(path, path.is_dir())
                .is_ignore(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_drops_git_runs_locks_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        let filter = Filter::new(root);
        let wanted = |rel: &str| filter.wanted(rel, &root.join(rel));
        assert!(wanted("src/a.rs"));
        assert!(wanted(".tasks/t/TODO.md"));
        assert!(!wanted(".git/index"));
        assert!(!wanted(".tasks/t/runs/journal.jsonl"));
        assert!(!wanted(".tasks/t/.lock"));
        assert!(!wanted(".tasks/.lock"));
        assert!(!wanted("target/debug/x"));
        assert!(!wanted("app.log"));
        // Issue 25, finding 10: tick's own write's temp file is not a change.
        let own = format!(".tick-tmp.{}.aB3xY9.big.txt", std::process::id());
        assert!(!wanted(&format!("src/{own}")));
        assert!(wanted("src/.tick-tmp.1.aB3xY9.big.txt"));
        assert!(!filter.wanted_dir(&root.join(".git")));
        assert!(!filter.wanted_dir(&root.join("target")));
        assert!(filter.wanted_dir(&root.join("src")));
    }

    async fn next_paths(watcher: &mut LiveWatcher, want: &str) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while let Ok(Some(change)) = tokio::time::timeout_at(deadline, watcher.next()).await {
            if let Change::Paths(paths) = change
                && paths.iter().any(|p| p == want)
            {
                return true;
            }
        }
        false
    }

    async fn sees_a_rename_over(force_poll: bool) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "old").unwrap();
        let options = LiveOptions {
            force_poll,
            ..LiveOptions::default()
        };
        let mut watcher = LiveWatcher::start(root, options).unwrap();
        assert_eq!(watcher.is_polling(), force_poll);
        // Polling compares against a first scan; give it one interval.
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::write(root.join("src/.a.rs.swp"), "new").unwrap();
        std::fs::rename(root.join("src/.a.rs.swp"), root.join("src/a.rs")).unwrap();
        assert!(next_paths(&mut watcher, "src/a.rs").await);
    }

    #[tokio::test]
    async fn native_watcher_sees_an_editor_style_save() {
        sees_a_rename_over(false).await;
    }

    #[tokio::test]
    async fn polling_fallback_sees_an_editor_style_save() {
        sees_a_rename_over(true).await;
    }

    #[tokio::test]
    async fn a_new_top_level_directory_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut watcher = LiveWatcher::start(root, LiveOptions::default()).unwrap();
        std::fs::create_dir_all(root.join("lib")).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut rescanned = false;
        while let Ok(Some(change)) = tokio::time::timeout_at(deadline, watcher.next()).await {
            if matches!(change, Change::Rescan { .. }) {
                rescanned = true;
                break;
            }
        }
        assert!(rescanned);
        std::fs::write(root.join("lib/x.rs"), "x").unwrap();
        assert!(next_paths(&mut watcher, "lib/x.rs").await);
    }
}
