//! The `.tasks/` store: where it is, the draft, the task folders, and loading a task's three
//! files into one checked value. Parsing and editing of each file is pure and lives in its own
//! module; this one does the reading, and names the file in every error.

pub mod approval;
pub mod by_hand;
pub mod error;
pub mod folder_name;
pub mod history;
pub mod images;
pub mod journal;
pub mod lock;
pub mod markdown_depth;
pub mod merge;
pub mod naming;
pub mod overlap;
pub mod parse_error;
pub mod plan_md;
pub mod render;
pub mod restore;
pub mod safe_yaml;
pub mod state;
pub mod templates;
pub mod todo_md;
pub mod tx;

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Phase, Progress, StepId, StepStatus};
use error::Error as StoreError;
use plan_md::PlanDoc;
use state::State;
use todo_md::{Checklist, ParseError};

pub use approval::{APPROVING_FILE, draft_hash, remove_draft};

pub use crate::store_path::{CONFIG_FILE, TASKS_DIR};
pub const DRAFT_DIR: &str = "draft";
pub const PLAN_FILE: &str = "PLAN.md";
pub const TODO_FILE: &str = "TODO.md";
pub const STATE_FILE: &str = "state.yaml";
pub const SESSION_FILE: &str = "session.jsonl";
pub const RUNS_DIR: &str = "runs";
/// `.tasks/.current`: the id of the task a person last acted on (run, approve, mark). Local.
pub const CURRENT_FILE: &str = ".current";

/// The files tick writes atomically; a temp file of one of these is left only by a killed
/// writer.
pub const WRITTEN_FILES: [&str; 7] = [
    PLAN_FILE,
    TODO_FILE,
    STATE_FILE,
    CONFIG_FILE,
    ".gitignore",
    CURRENT_FILE,
    APPROVING_FILE,
];

/// What older versions wrote as `.tasks/.gitignore`, the start of today's.
macro_rules! old_gitignore {
    () => {
        "\
# Written by tick. Plans, checklists and state are committed; these stay local.
.lock
*/.lock
draft/session.jsonl
*/runs/
.staging-*/
"
    };
}

/// `.tasks/.gitignore`: what stays local.
pub const GITIGNORE: &str = concat!(
    old_gitignore!(),
    "\
.current
journal.jsonl
session.yaml
"
);

/// What older versions wrote as `.tasks/.gitignore`; [`Store::ensure`] brings it up to date
/// (one a person changed is theirs and is left alone).
const OLD_GITIGNORE: &str = old_gitignore!();

/// The workspace and its `.tasks/` folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
    /// Whether the person trusts this repository's files ([`Store::trusting`]); untrusted
    /// until told.
    trust: crate::trust::TrustState,
    /// The person's own config directory, where their template and prompt overrides are.
    person_dir: Option<PathBuf>,
    /// The task [`Store::load`] parsed last, with the text it parsed: a command that reads the
    /// same task again (to find it, then under its lock) parses it once.
    parsed: Arc<ParseCache>,
    /// What taking a task's lock found and finished (an undo cut short), for the command to
    /// say ([`Store::take_notices`]).
    notices: Arc<Mutex<Vec<String>>>,
    /// Told of the done steps each commit made stale ([`Store::on_stale`]).
    stale_observer: Arc<StaleObserver>,
}

/// What is told, once per commit, of the done steps it made stale `[~]` (the `step.stale`
/// hooks): the store, the task as written, and the steps' ids.
pub type OnStale = dyn Fn(&Store, &Task, &[crate::plan::StepId]) + Send + Sync;

#[derive(Default)]
struct StaleObserver(Mutex<Option<Arc<OnStale>>>);

impl std::fmt::Debug for StaleObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaleObserver")
    }
}

#[derive(Default)]
struct ParseCache(Mutex<Option<Parsed>>);

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParseCache")
    }
}

/// A task as parsed from exactly these texts.
struct Parsed {
    /// The state.yaml text the task was read from (the texts of PLAN.md and TODO.md are the
    /// task's own `plan_src` and `todo_src`).
    state_src: Option<String>,
    task: Task,
}

/// A task folder, found but not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    pub dir: PathBuf,
}

/// A task's three files, read and parsed.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub dir: PathBuf,
    /// The texts and their parses are shared with the store's parse cache: a task of 10,000
    /// steps is not copied to be kept.
    pub plan_src: Arc<String>,
    pub plan: Arc<PlanDoc>,
    pub todo_src: Arc<String>,
    pub todo: Arc<Checklist>,
    pub state: State,
}

/// The draft under review.
#[derive(Debug, Clone)]
pub struct Draft {
    pub path: PathBuf,
    pub src: String,
    pub plan: PlanDoc,
}

/// The most entries [`nested_stores`] looks at: a larger tree is not searched to its end.
const MAX_NESTED_SEARCH: usize = 200_000;

/// Every `.tasks/` folder below the workspace at `root` other than its own store, by path
/// from the root (`src/.tasks`), sorted: what a command the agent ran could have planted for
/// the person's next `tick` in that folder. The walk is the workspace's own (hidden files
/// included, ignore files honoured, links not followed, `.git/` and the store skipped).
pub fn nested_stores(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut walker = crate::tools::walk::workspace_walker(root);
    let top_store = root.join(TASKS_DIR);
    let top_git = root.join(".git");
    walker.filter_entry(move |entry| entry.path() != top_store && entry.path() != top_git);
    for entry in walker.build().take(MAX_NESTED_SEARCH).flatten() {
        if entry.depth() > 0
            && entry.file_name() == TASKS_DIR
            && entry.file_type().is_some_and(|t| t.is_dir())
            && let Ok(rel) = entry.path().strip_prefix(root)
        {
            found.push(rel.display().to_string());
        }
    }
    found.sort();
    found
}

/// The error for a `.tasks/` below the repository's top level `top`.
fn nested_store_error(top: &Path, nested: &Path) -> Error {
    let rel = nested
        .strip_prefix(top)
        .unwrap_or(nested)
        .display()
        .to_string();
    StoreError::NestedStore {
        rel,
        top: top.to_path_buf(),
    }
    .into()
}

impl Store {
    /// The store for the workspace containing `cwd`: `.tasks/` at the top level of the git
    /// repository `cwd` is in (the nearest ancestor with `.git`); outside git, the nearest
    /// ancestor with a `.tasks/` folder, else `cwd` itself.
    ///
    /// A `.tasks/` between `cwd` and the top level is refused, naming it: a store there was
    /// made by hand or planted (by a command the agent ran, say), and whatever its
    /// `config.yaml` names must not be where this person's requests go.
    pub fn discover(cwd: &Path) -> Result<Store> {
        let Some(top) = cwd.ancestors().find(|dir| dir.join(".git").exists()) else {
            let root = cwd
                .ancestors()
                .find(|dir| dir.join(TASKS_DIR).is_dir())
                .unwrap_or(cwd);
            return Ok(Store::at(root));
        };
        if let Some(nested) = cwd
            .ancestors()
            .take_while(|dir| *dir != top)
            .find(|dir| dir.join(TASKS_DIR).is_dir())
        {
            return Err(nested_store_error(top, &nested.join(TASKS_DIR)));
        }
        Ok(Store::at(top))
    }

    /// The store at `root`, trusting none of its files (see [`Store::trusting`]).
    pub fn at(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
            dir: root.join(TASKS_DIR),
            trust: crate::trust::TrustState::Untrusted,
            person_dir: None,
            parsed: Arc::default(),
            notices: Arc::default(),
            stale_observer: Arc::default(),
        }
    }

    /// This store as far as the person trusts its repository ([`crate::trust::state`]), with
    /// their own config directory for template and prompt overrides.
    #[must_use]
    pub fn trusting(mut self, env: &crate::env::Env) -> Store {
        self.trust = crate::trust::state(&self.root, env);
        self.person_dir = crate::env::user_config_dir(env);
        self
    }

    /// Whether the person trusts this repository's files.
    pub fn trust(&self) -> &crate::trust::TrustState {
        &self.trust
    }

    /// Where overrides of tick's embedded files of kind `kind` (`templates`, `prompts`) are
    /// looked for, most specific first: the repository's `.tasks/<kind>/` when the person
    /// trusts it, then their own config directory's `<kind>/`.
    pub fn override_dirs(&self, kind: &str) -> Vec<PathBuf> {
        let repo = self.trust.is_trusted().then(|| self.dir.join(kind));
        let person = self.person_dir.as_ref().map(|dir| dir.join(kind));
        repo.into_iter().chain(person).collect()
    }

    /// The one line for a front end when this repository ships template overrides that are
    /// not rendered because the person has not trusted it (as its files are now): each, and
    /// what renders in its place (the person's own, or the built-in one). `None` otherwise.
    pub fn untrusted_templates_line(&self) -> Option<String> {
        if self.trust.is_trusted() {
            return None;
        }
        let mut parts = Vec::new();
        for name in [templates::TODO_MD, templates::PLAN_MD] {
            let shipped = self.dir.join("templates").join(name);
            if !shipped.is_file() {
                continue;
            }
            let own = self
                .person_dir
                .as_ref()
                .map(|dir| dir.join("templates").join(name))
                .filter(|path| path.is_file());
            let instead = match own {
                Some(path) => format!("your own `{}`", fsx::shown(&path)),
                None => format!("the built-in `{name}`"),
            };
            parts.push(format!("`{}` (using {instead})", self.rel(&shipped)));
        }
        if parts.is_empty() {
            return None;
        }
        let why = if matches!(self.trust, crate::trust::TrustState::Changed { .. }) {
            "its files changed since you trusted it"
        } else {
            "you have not trusted this repository"
        };
        Some(format!(
            "not rendering {} ({why}); run `tick trust` to use the repository's templates",
            parts.join(", ")
        ))
    }

    /// What taking a lock found and did since the last call (an undo cut short, finished or
    /// rolled back), one line each.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Tells `observe` of the done steps each commit of this store (and its clones) makes
    /// stale, after the commit is written: every staleness transition goes through
    /// [`tx::Tx::commit`], so this is its one place.
    pub fn on_stale(&self, observe: Arc<OnStale>) {
        *self
            .stale_observer
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(observe);
    }

    /// The observer [`Store::on_stale`] installed, if any.
    fn stale_observer(&self) -> Option<Arc<OnStale>> {
        self.stale_observer
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn draft_dir(&self) -> PathBuf {
        self.dir.join(DRAFT_DIR)
    }

    pub fn draft_plan_path(&self) -> PathBuf {
        self.draft_dir().join(PLAN_FILE)
    }

    /// Where template overrides are looked for ([`Store::override_dirs`]).
    pub fn template_dirs(&self) -> Vec<PathBuf> {
        self.override_dirs("templates")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// A system prompt: `<dir>/<name>` from the first of [`Store::override_dirs`] that has
    /// one (a trusted repository's `.tasks/prompts/`, the person's own), else `builtin`.
    pub fn prompt(&self, name: &str, builtin: &str) -> Result<String> {
        for dir in self.override_dirs("prompts") {
            if let Some(text) = fsx::read_optional(&dir.join(name))? {
                return Ok(text);
            }
        }
        Ok(builtin.to_owned())
    }

    /// `path` as a person would type it from the workspace root, with `/` separators.
    pub fn rel(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let parts: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        }
    }

    /// Creates `.tasks/` and its `.gitignore` if they are missing. Returns what it created.
    pub fn ensure(&self) -> Result<Vec<PathBuf>> {
        let mut created = Vec::new();
        if !self.dir.is_dir() {
            fsx::create_dir_all(&self.dir)?;
            created.push(self.dir.clone());
        }
        let gitignore = self.dir.join(".gitignore");
        if fsx::write_new(&gitignore, GITIGNORE.as_bytes())? {
            created.push(gitignore);
        } else if fsx::read_optional(&gitignore)?.as_deref() == Some(OLD_GITIGNORE) {
            // The one an older version wrote, untouched by people: it gains the journal line.
            fsx::write_atomic(&gitignore, GITIGNORE.as_bytes())?;
        }
        Ok(created)
    }

    /// The lock for the draft and for creating task folders.
    pub fn lock(&self, holder: &str) -> Result<lock::Lock> {
        let lock = lock::acquire(
            &self.dir,
            &self.rel(&self.dir),
            holder,
            Duration::from_secs(5),
        )?;
        clean_up(&self.dir)?;
        clean_up(&self.draft_dir())?;
        approval::finish_cut_short(self)?;
        for stage in fsx::subdirs(&self.dir)? {
            let is_stage = stage
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".staging-"));
            if is_stage {
                fsx::remove_dir_all(&stage)?;
            }
        }
        Ok(lock)
    }

    /// The lock for one task. Short commands wait a little for another short command; a
    /// long-running holder (a run) makes them fail with its name.
    pub fn lock_task(&self, task: &TaskRef, holder: &str) -> Result<lock::Lock> {
        self.lock_task_within(task, holder, Duration::from_secs(5))
    }

    /// The lock for one task, waiting at most `wait`. Under it, what a killed writer left
    /// behind is cleaned up first: stray temp files, a half-done commit ([`Store::recover`]).
    pub fn lock_task_within(
        &self,
        task: &TaskRef,
        holder: &str,
        wait: Duration,
    ) -> Result<lock::Lock> {
        let lock = lock::acquire(&task.dir, &self.rel(&task.dir), holder, wait)?;
        clean_up(&task.dir)?;
        // `.current` is written under a task's lock (by whichever task was acted on), so a
        // killed writer's temp file of it is cleaned here too. Another task's command writing
        // it at this very moment may lose that one advisory write; nothing else depends on it.
        fsx::remove_stray_temps(&self.dir, &[CURRENT_FILE], Duration::ZERO)?;
        self.recover(task)?;
        if let Some(found) = restore::recover(self, task)? {
            self.notices
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(found.message());
        }
        Ok(lock)
    }

    /// The lock for one task, or an error at once if someone holds it: for long commands
    /// (`tick run`), where waiting would only hide that two runs were started.
    pub fn lock_task_now(&self, task: &TaskRef, holder: &str) -> Result<lock::Lock> {
        self.lock_task_within(task, holder, Duration::ZERO)
    }

    /// Task ids, oldest first.
    pub fn task_ids(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = fsx::subdirs(&self.dir)?
            .into_iter()
            .filter_map(|dir| dir.file_name()?.to_str().map(str::to_owned))
            .filter(|name| folder_name::is_task_folder(name))
            .collect();
        ids.sort();
        Ok(ids)
    }

    pub fn task_ref(&self, id: &str) -> TaskRef {
        TaskRef {
            id: id.to_owned(),
            dir: self.dir.join(id),
        }
    }

    /// The task `query` names: its id, a unique prefix of it, or a unique part of its slug.
    /// A path like `.tasks/<id>/` works too.
    pub fn resolve(&self, query: &str) -> Result<TaskRef> {
        let query = query
            .trim()
            .trim_start_matches("./")
            .trim_start_matches(".tasks/")
            .trim_end_matches('/');
        let ids = self.task_ids()?;
        if ids.iter().any(|id| id == query) {
            return Ok(self.task_ref(query));
        }
        let by_prefix: Vec<&String> = ids.iter().filter(|id| id.starts_with(query)).collect();
        let matches = if by_prefix.is_empty() {
            ids.iter()
                .filter(|id| {
                    !query.is_empty() && id.get(16..).is_some_and(|slug| slug.contains(query))
                })
                .collect()
        } else {
            by_prefix
        };
        match matches.as_slice() {
            [one] => Ok(self.task_ref(one)),
            [] => Err(StoreError::NoTaskMatches(query.to_owned()).into()),
            many => Err(StoreError::Ambiguous {
                query: query.to_owned(),
                ids: many.iter().map(ToString::to_string).collect(),
            }
            .into()),
        }
    }

    /// Remembers `task` as the one the person last acted on (`run`, `approve`, `mark`), for
    /// the commands that name no task. A convenience only: failing to write it (a read-only
    /// checkout) never fails the command.
    pub fn set_current(&self, task: &TaskRef) {
        if self.dir.is_dir() {
            self.ignore_current();
            let _ = fsx::write_atomic(
                &self.dir.join(CURRENT_FILE),
                format!("{}\n", task.id).as_bytes(),
            );
        }
    }

    /// A `.tasks/.gitignore` written before `.current` existed gets its line, so the file
    /// stays local.
    fn ignore_current(&self) {
        self.keep_local(CURRENT_FILE);
    }

    /// Lists `name` (a file directly under `.tasks/`) in `.tasks/.gitignore` when it is not
    /// there yet, so a file a newer tick writes stays local in a workspace an older one set up.
    /// Best effort, like `.current` itself.
    pub fn keep_local(&self, name: &str) {
        let path = self.dir.join(".gitignore");
        let Ok(Some(mut text)) = fsx::read_optional(&path) else {
            return;
        };
        if text.lines().any(|line| line.trim() == name) {
            return;
        }
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(name);
        text.push('\n');
        let _ = fsx::write_atomic(&path, text.as_bytes());
    }

    /// The task the person last acted on, if it is still there.
    pub fn last_acted(&self) -> Result<Option<TaskRef>> {
        let Some(text) = fsx::read_optional(&self.dir.join(CURRENT_FILE))? else {
            return Ok(None);
        };
        let id = text.trim();
        let known = folder_name::is_task_folder(id) && self.dir.join(id).is_dir();
        Ok(known.then(|| self.task_ref(id)))
    }

    /// The task a command that changes things means when none is named: the one the person
    /// last acted on while it is not completed or cancelled; else the most recent one that is
    /// not (one that does not parse counts as open: it needs a look), else the most recent one.
    pub fn current(&self) -> Result<Option<TaskRef>> {
        if let Some(task) = self.last_acted()?
            && self.load(&task).is_ok_and(|t| !t.phase().is_finished())
        {
            return Ok(Some(task));
        }
        Ok(self.newest_open()?.map(|(task, _)| task))
    }

    /// The task `tick status` shows when none is named, with its loaded files when they
    /// parse (so a caller need not read them twice): the one the person last acted on, in
    /// whatever phase (right after finishing a task, that task), else as [`Store::current`].
    pub fn current_loaded(&self) -> Result<Option<(TaskRef, Option<Task>)>> {
        if let Some(task) = self.last_acted()? {
            let loaded = self.load(&task).ok();
            return Ok(Some((task, loaded)));
        }
        self.newest_open()
    }

    /// The most recent task that is not completed or cancelled (or does not parse), else the
    /// most recent one.
    fn newest_open(&self) -> Result<Option<(TaskRef, Option<Task>)>> {
        let ids = self.task_ids()?;
        let mut newest = None;
        for id in ids.iter().rev() {
            let task = self.task_ref(id);
            match self.load(&task) {
                Ok(loaded) if loaded.phase().is_finished() => {
                    if newest.is_none() {
                        newest = Some((task, Some(loaded)));
                    }
                }
                Ok(loaded) => return Ok(Some((task, Some(loaded)))),
                Err(_) => return Ok(Some((task, None))),
            }
        }
        Ok(newest)
    }

    /// Tasks other than `except` that need a person: blocked, stale or executing (a run may
    /// have stopped half-way), or with files tick cannot read (a person must mend them
    /// before tick can run or check the task), newest first.
    ///
    /// Most tasks of a long-lived workspace are finished, so each TODO.md is first scanned
    /// for a marker that could mean attention (`[!]`, `[~]`, `[-]`, a done box beside an
    /// open one, or a box tick cannot read); only those tasks are parsed.
    pub fn needing_attention(&self, except: Option<&str>) -> Result<Vec<Attention>> {
        let mut tasks = Vec::new();
        for id in self.task_ids()?.iter().rev() {
            if Some(id.as_str()) == except {
                continue;
            }
            let task = self.task_ref(id);
            let Some(todo) = fsx::read_optional(&task.dir.join(TODO_FILE))? else {
                continue;
            };
            if !may_need_attention(&todo) {
                continue;
            }
            let task = match self.load(&task) {
                Ok(task) => task,
                Err(err) => {
                    tasks.push(Attention::Unreadable {
                        id: id.clone(),
                        error: err.message,
                    });
                    continue;
                }
            };
            let needs = match task.phase() {
                Phase::Blocked | Phase::Executing => true,
                Phase::Cancelled => false,
                _ => task.progress().stale > 0,
            };
            if needs {
                tasks.push(Attention::Task(Box::new(task)));
            }
        }
        Ok(tasks)
    }

    /// The named task, or the current one.
    pub fn resolve_or_current(&self, query: Option<&str>) -> Result<TaskRef> {
        match query {
            Some(query) => self.resolve(query),
            None => self.current()?.ok_or_else(|| self.no_task_error()),
        }
    }

    /// The task named by `query`, else the one `tick status` shows ([`Store::current_loaded`]:
    /// the one the person last acted on, finished or not). For commands that look at a task's
    /// done steps, as `tick verify` does: right after the last step is done, that task is the
    /// one meant, not the next open one.
    pub fn resolve_or_shown(&self, query: Option<&str>) -> Result<TaskRef> {
        match query {
            Some(query) => self.resolve(query),
            None => self
                .current_loaded()?
                .map(|(task, _)| task)
                .ok_or_else(|| self.no_task_error()),
        }
    }

    /// Why no task is meant: no approved one yet (a draft waits), or none at all.
    fn no_task_error(&self) -> Error {
        if self.draft_plan_path().is_file() {
            Error::input("there is no approved task yet: a draft is waiting for review")
                .hint("read it with `tick show`, then `tick approve` (or `tick review`)")
        } else {
            Error::input("there are no tasks yet")
                .hint("write a plan and `tick plan --from plan.md`, then `tick approve`")
        }
    }

    /// Reads and parses a task's PLAN.md, TODO.md and state.yaml.
    pub fn load(&self, task: &TaskRef) -> Result<Task> {
        let plan_path = task.dir.join(PLAN_FILE);
        let todo_path = task.dir.join(TODO_FILE);
        let state_path = task.dir.join(STATE_FILE);
        let mut plan_src = self.read_task_file(&plan_path)?;
        let mut todo_src = self.read_task_file(&todo_path)?;
        let mut state_src = fsx::read_capped(&state_path, fsx::MAX_STATE_FILE)?;
        // A commit a killed process left half done: read what it was writing (the writer that
        // next takes the lock finishes it on disk).
        if let Some((todo, state, plan)) = tx::pending(&task.dir, &todo_src)? {
            todo_src = todo;
            state_src = Some(state);
            if let Some(plan) = plan {
                plan_src = plan;
            }
        }
        if let Ok(cache) = self.parsed.0.lock()
            && let Some(hit) = cache.as_ref().filter(|hit| {
                hit.task.dir == task.dir
                    && *hit.task.todo_src == todo_src
                    && *hit.task.plan_src == plan_src
                    && hit.state_src == state_src
            })
        {
            return Ok(hit.task.clone());
        }
        let state_text = state_src.clone();
        // An approved task's checklist is TODO.md: PLAN.md's steps need not be read again. (The
        // parsers check how deeply the markdown nests before pulldown-cmark reads it.)
        let plan_src = Arc::new(plan_src);
        let plan = plan_md::parse_shared_without_steps(&plan_src)
            .map_err(|e| self.parse_error(&plan_path, &e))?;
        let todo = todo_md::parse(&todo_src).map_err(|e| self.parse_error(&todo_path, &e))?;
        let state = match state_src {
            Some(text) => safe_yaml::from_str(
                &text,
                0,
                "invalid state",
                "state.yaml is written by tick; restore it from git",
            )
            .map_err(|err| self.parse_error(&state_path, &err))?,
            None => State::new(),
        };
        let task = Task {
            id: task.id.clone(),
            dir: task.dir.clone(),
            plan_src,
            plan: Arc::new(plan),
            todo_src: Arc::new(todo_src),
            todo: Arc::new(todo),
            state,
        };
        self.remember(&task, state_text);
        Ok(task)
    }

    /// Lets go of the parse kept for the next [`Store::load`], so that a transaction can change
    /// its checklist in place.
    pub(crate) fn forget_parsed(&self) {
        if let Ok(mut cache) = self.parsed.0.lock() {
            *cache = None;
        }
    }

    /// Keeps `task` (as parsed from its texts and the state.yaml text `state_src`) for the next
    /// [`Store::load`] of the same texts.
    fn remember(&self, task: &Task, state_src: Option<String>) {
        if let Ok(mut cache) = self.parsed.0.lock() {
            *cache = Some(Parsed {
                state_src,
                task: task.clone(),
            });
        }
    }

    /// An error unless `task`'s TODO.md has a step: an empty checklist is a damaged or
    /// truncated file, never a task that is done.
    pub fn require_steps(&self, task: &Task) -> Result<()> {
        if !task.todo.steps.is_empty() {
            return Ok(());
        }
        let todo = self.rel(&task.dir.join(TODO_FILE));
        let what = if task.todo_src.trim().is_empty() {
            "is empty"
        } else {
            "has no steps"
        };
        Err(StoreError::NoSteps { todo, what }.into())
    }

    fn read_task_file(&self, path: &Path) -> Result<String> {
        fsx::read_optional(path)?.ok_or_else(|| StoreError::Missing(self.rel(path)).into())
    }

    /// The draft, if there is one.
    pub fn load_draft(&self) -> Result<Option<Draft>> {
        let path = self.draft_plan_path();
        let Some(src) = fsx::read_optional(&path)? else {
            return Ok(None);
        };
        if approval::approved_as(self, &src)?.is_some() {
            return Ok(None);
        }
        let plan = plan_md::parse(&src).map_err(|e| self.parse_error(&path, &e))?;
        Ok(Some(Draft { path, src, plan }))
    }

    /// Where an approval in progress notes the task it is creating, inside the draft folder.
    pub fn approving_path(&self) -> PathBuf {
        self.draft_dir().join(APPROVING_FILE)
    }

    /// A parse error as a person reads it: file, line and column, and that nothing changed.
    pub fn parse_error(&self, path: &Path, err: &ParseError) -> Error {
        StoreError::Parse {
            path: self.rel(path),
            line: err.line,
            col: err.col,
            message: err.message.clone(),
            hint: err.hint.clone(),
        }
        .into()
    }
}

/// The error for a step `id` that the checklist `list` of the task in `dir` does not have: it
/// names the steps there are.
pub fn no_step(store: &Store, dir: &Path, list: &Checklist, id: StepId) -> Error {
    let ids = list.all_steps();
    let ids = ids.filter_map(|s| s.id.map(|id| format!("`{id}`")));
    StoreError::NoStep {
        id,
        todo: store.rel(&dir.join(TODO_FILE)),
        ids: ids.collect(),
    }
    .into()
}

impl Task {
    /// The step `id`, or an error naming the steps there are (nothing was changed).
    pub fn step_or_error(&self, store: &Store, id: StepId) -> Result<&todo_md::Step> {
        self.todo
            .find(id)
            .ok_or_else(|| no_step(store, &self.dir, &self.todo, id))
    }

    /// Top-level steps as they stand (a parent with all sub-steps done counts as done).
    pub fn progress(&self) -> Progress {
        Progress::from_statuses(self.todo.steps.iter().map(todo_md::Step::progress_status))
    }

    /// The phase: `cancelled` if PLAN.md says so; otherwise what the steps say.
    pub fn phase(&self) -> Phase {
        match self.plan.phase() {
            Some(Phase::Cancelled) => Phase::Cancelled,
            _ => self.progress().phase(),
        }
    }

    /// Whether PLAN.md changed since it was approved. A task whose state.yaml holds no
    /// approval (deleted, emptied) cannot show that PLAN.md is the plan a person approved,
    /// so it counts as changed: it waits for `tick approve` like an edited plan.
    pub fn plan_changed(&self) -> bool {
        self.state
            .approval
            .as_ref()
            .is_none_or(|approval| approval.plan_hash != plan_md::approval_hash(&self.plan))
    }

    /// Whether state.yaml holds no approval of this task at all ([`Task::plan_changed`]).
    pub fn approval_missing(&self) -> bool {
        self.state.approval.is_none()
    }

    /// Whether PLAN.md, changed since approval, is the plan tick's own re-plan
    /// (`tick plan --revise`) wrote, untouched since: the change is tick's, not a person's.
    pub fn replanned_by_tick(&self) -> bool {
        self.plan_changed()
            && self
                .state
                .replanned
                .as_ref()
                .is_some_and(|r| r.plan_hash == plan_md::approval_hash(&self.plan))
    }

    /// The first step whose `tools:` in TODO.md are not the ones the approved PLAN.md names,
    /// in words: a step's MCP tools are capabilities, so a list changed in TODO.md needs an
    /// approval as one changed in PLAN.md does (whose hash covers them). `None` when they agree
    /// or TODO.md names no tools at all (then none are offered), without reading PLAN.md's
    /// steps.
    pub fn tools_changed(&self) -> Option<String> {
        if self.todo.all_steps().all(|step| step.tools.is_empty()) {
            return None;
        }
        let Ok(plan) = plan_md::parse(&self.plan_src) else {
            return Some("PLAN.md's steps do not parse".to_owned());
        };
        let none: &[String] = &[];
        let list = |tools: &[String]| {
            if tools.is_empty() {
                "none".to_owned()
            } else {
                tools
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        self.todo.all_steps().find_map(|step| {
            let id = step.id?;
            let approved = plan.steps.find(id).map_or(none, |s| s.tools.as_slice());
            (approved != step.tools.as_slice()).then(|| {
                format!(
                    "`{id}`'s tools are {} in TODO.md, {} in the approved PLAN.md",
                    list(&step.tools),
                    list(approved)
                )
            })
        })
    }

    /// Done steps (and sub-steps) without the runner's verification behind them.
    pub fn unverified(&self) -> Vec<&todo_md::Step> {
        self.todo
            .all_steps()
            .filter(|step| step.status == StepStatus::Done)
            .filter(|step| !self.is_verified(step))
            .collect()
    }

    /// Whether `step` was ticked on evidence ([`state::StepRecord::verified`]). A parent
    /// with no `verify` of its own is checked by its sub-steps: verified when every one of
    /// them is.
    pub fn is_verified(&self, step: &todo_md::Step) -> bool {
        let Some(id) = step.id else {
            return false;
        };
        if self.state.verified(id) {
            return true;
        }
        step.verify.is_empty()
            && !step.substeps.is_empty()
            && step.substeps.iter().all(|sub| {
                sub.status == StepStatus::Done && sub.id.is_some_and(|i| self.state.verified(i))
            })
    }

    pub fn title(&self) -> String {
        self.plan
            .title
            .clone()
            .or_else(|| self.todo.heading.clone())
            .unwrap_or_else(|| self.id.clone())
    }
}

/// Another task that needs a person, for `tick status`.
#[derive(Debug)]
pub enum Attention {
    Task(Box<Task>),
    /// Its PLAN.md, TODO.md or state.yaml does not parse: `error` says where and why.
    Unreadable {
        id: String,
        error: String,
    },
}

/// Whether a TODO.md's text has a marker that may put its task in need of attention: blocked,
/// stale or in progress, done and open boxes side by side (a run stopped half-way), or a box
/// the parser may refuse (an unknown marker, or one with no space after it). A cheap scan over
/// the lines, without parsing; `true` may be wrong (a marker in a code block), `false` is
/// wrong only for a PLAN.md or state.yaml that does not parse beside a readable TODO.md.
fn may_need_attention(todo: &str) -> bool {
    let (mut done, mut open) = (false, false);
    for line in todo.lines() {
        let Some(rest) = list_item_box(line) else {
            continue;
        };
        let bytes = rest.as_bytes();
        match bytes.get(..2) {
            Some([b'!' | b'~' | b'-', b']']) => return true,
            Some([b'x' | b'X' | b' ', b']']) if bytes.get(2) != Some(&b' ') => {
                return true;
            }
            Some([b'x' | b'X', b']']) => done = true,
            Some([b' ', b']']) => open = true,
            _ => return true,
        }
        if done && open {
            return true;
        }
    }
    false
}

/// The text after `[` of a list item that starts with a box (`- [`, `* [`, `+ [`, `1. [`).
fn list_item_box(line: &str) -> Option<&str> {
    let item = line.trim_start();
    let after_bullet = if let Some(rest) = item.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = item.len() - item.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        item.get(digits..)
            .filter(|_| digits > 0)?
            .strip_prefix(['.', ')'])?
    };
    let text = after_bullet.trim_start();
    (text.len() < after_bullet.len())
        .then_some(text)?
        .strip_prefix('[')
}

/// Removes temp files a killed writer left behind. Only called under the lock, so no writer is
/// active in `dir`.
fn clean_up(dir: &Path) -> Result<()> {
    fsx::remove_stray_temps(dir, &WRITTEN_FILES, Duration::ZERO)?;
    Ok(())
}

/// A hash of the steps as planned (ids, titles, details; not their status), recorded at
/// approval.
pub fn steps_hash(checklist: &Checklist) -> String {
    let mut hasher = blake3::Hasher::new();
    for step in checklist.all_steps() {
        let id = step.id.map(|id| id.to_string()).unwrap_or_default();
        for part in [id.as_str(), step.title.as_str()]
            .into_iter()
            .chain(step.files.iter().map(String::as_str))
            .chain(step.verify.iter().map(String::as_str))
            .chain(step.done_when.as_deref())
        {
            hasher.update(part.as_bytes());
            hasher.update(b"\0");
        }
        // Only when there are any: the hash of a step without tools stays what it was.
        if !step.tools.is_empty() {
            hasher.update(b"tools\0");
            for tool in &step.tools {
                hasher.update(tool.as_bytes());
                hasher.update(b"\0");
            }
        }
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// A task folder `20261130-143012-t` with `plan` and `todo` in a fresh temporary workspace,
/// for unit tests of what reads and writes a task's files.
#[cfg(test)]
pub(crate) fn test_task(plan: &str, todo: &str) -> (tempfile::TempDir, Store, TaskRef) {
    let root = tempfile::tempdir().unwrap();
    let store = Store::at(root.path());
    let task = store.task_ref("20261130-143012-t");
    std::fs::create_dir_all(&task.dir).unwrap();
    std::fs::write(task.dir.join(PLAN_FILE), plan).unwrap();
    std::fs::write(task.dir.join(TODO_FILE), todo).unwrap();
    approved_for_test(&task.dir, plan);
    (root, store, task)
}

/// A state.yaml for the task in `dir`: approved as `plan` stands, as `tick approve` leaves a
/// task (a plan that does not parse is some test's broken file: no record then).
#[cfg(test)]
pub(crate) fn approved_for_test(dir: &Path, plan: &str) {
    if let Ok(doc) = plan_md::parse(plan) {
        let mut state = State::new();
        state.approval = Some(state::ApprovalRecord {
            approved_at: "2026-11-30T14:30:12Z".parse().unwrap(),
            plan_hash: plan_md::approval_hash(&doc),
            steps_hash: steps_hash(&doc.steps),
            git_head: None,
            draft_hash: None,
            hooks: Vec::new(),
            overlaps: Vec::new(),
        });
        std::fs::write(dir.join(STATE_FILE), serde_yaml::to_string(&state).unwrap()).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25, finding 5: the store is the top level's; a nested one is refused, and a
    /// planted one is found wherever the workspace's walk goes.
    #[test]
    fn the_store_is_the_top_levels_and_nested_ones_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".tasks/draft")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        assert_eq!(
            Store::discover(&root.join("src/deep")).unwrap().root(),
            root
        );
        std::fs::create_dir_all(root.join("src/.tasks")).unwrap();
        let err = Store::discover(&root.join("src/deep")).unwrap_err();
        assert!(
            err.message
                .starts_with("`src/.tasks` is a task store below"),
            "{}",
            err.message
        );
        // From the top level, the nested one is not on the way: it is found by the walk.
        assert_eq!(Store::discover(root).unwrap().root(), root);
        std::fs::create_dir_all(root.join("lib/a/.tasks")).unwrap();
        std::fs::create_dir_all(root.join(".git/.tasks")).unwrap();
        assert_eq!(nested_stores(root), ["lib/a/.tasks", "src/.tasks"]);
        // Outside git, the nearest `.tasks/` is the store, as before.
        let plain = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(plain.path().join(".tasks")).unwrap();
        std::fs::create_dir_all(plain.path().join("x")).unwrap();
        assert_eq!(
            Store::discover(&plain.path().join("x")).unwrap().root(),
            plain.path()
        );
    }

    #[test]
    fn the_current_task_is_remembered_locally() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        std::fs::create_dir_all(store.dir()).unwrap();
        // A .gitignore from before `.current` existed.
        std::fs::write(store.dir().join(".gitignore"), ".lock\n*/runs/").unwrap();
        let task = store.task_ref("20261130-143012-login");
        std::fs::create_dir_all(&task.dir).unwrap();
        assert_eq!(store.last_acted().unwrap(), None);
        store.set_current(&task);
        assert_eq!(store.last_acted().unwrap(), Some(task.clone()));
        let ignore = std::fs::read_to_string(store.dir().join(".gitignore")).unwrap();
        assert_eq!(ignore, ".lock\n*/runs/\n.current\n");
        store.set_current(&task);
        let again = std::fs::read_to_string(store.dir().join(".gitignore")).unwrap();
        assert_eq!(again, ignore, "added once");
        // A task folder that is gone is forgotten.
        std::fs::remove_dir_all(&task.dir).unwrap();
        assert_eq!(store.last_acted().unwrap(), None);
        std::fs::write(store.dir().join(CURRENT_FILE), "../../etc\n").unwrap();
        assert_eq!(store.last_acted().unwrap(), None);
    }

    #[test]
    fn the_attention_scan_never_misses_a_marker_that_matters() {
        assert!(!may_need_attention("# TODO\n\n- [x] S1 a\n- [X] S2 b\n"));
        assert!(!may_need_attention("- [ ] S1 a\n  - [ ] S1.1 b\n"));
        assert!(may_need_attention("- [x] S1 a\n- [ ] S2 b\n"));
        assert!(may_need_attention("- [x] S1 a\n  - [!] S1.1 b\n"));
        assert!(may_need_attention("* [~] S1 a\n"));
        assert!(may_need_attention("+ [!] S1 a\n"));
        assert!(may_need_attention("1. [-] S1 a\n"));
        assert!(!may_need_attention("-[!] not a list item\n"));
        let header = "<!-- Markers: [ ] pending, [x] done, [-] in progress, [!] blocked -->\n";
        assert!(!may_need_attention(&format!("{header}- [x] S1 a\n")));
        assert!(may_need_attention("- [-] S1 a\n"));
        // A marker in a code block is a false alarm the full parse settles.
        assert!(may_need_attention("```\n- [!] not a step\n```\n"));
        // A box the parser refuses: the task is listed with why, never dropped.
        assert!(may_need_attention("- [x] S1 a\n- [x]S2 b\n"));
        assert!(may_need_attention("- [ ]S1 a\n"));
        assert!(may_need_attention("- [?] S1 a\n"));
        assert!(may_need_attention("- [x]\n"));
    }
}
