//! The one write path for a task: a transaction over TODO.md, state.yaml and PLAN.md's
//! `status:` line. `run`, `mark`, `watch` (stale marking) and `approve` all change a task
//! through it, so "edit the marker → settle the parent → parse back → transition → PLAN.md
//! status → log" exists once.
//!
//! A commit is all or nothing, whatever instant a kill lands at. It first writes a
//! write-ahead record, `runs/tx.json` (local, not committed), holding the new contents of
//! every file it changes and the hash of the TODO.md it started from; then the files, each
//! atomically; then it removes the record. A record left behind by a killed commit is found
//! by the next command: under the task lock it is rolled forward (TODO.md on disk is the old
//! or the new text), or back when a person has since saved TODO.md themselves (their edit is
//! kept; state.yaml goes back to the old text, which the record also holds). A reader that
//! cannot take the lock sees the new pair from the record, never a mix.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::plan_md;
use super::state::State;
use super::todo_md::{self, Checklist, StepEdit};
use super::{PLAN_FILE, RUNS_DIR, STATE_FILE, Store, TODO_FILE, Task, TaskRef, journal};
use crate::error::{Error, ErrorKind, Result};
use crate::fsx;
use crate::plan::{Event, Phase, Progress, StepId, StepStatus, transition};

/// The write-ahead record in a task's `runs/`.
pub const TX_FILE: &str = "tx.json";

/// How many times [`Store::transact`] starts over when a person saves TODO.md mid-way.
const ATTEMPTS: usize = 3;

/// A change to one task, begun with [`Store::begin`] (under the task's lock) and written with
/// [`Tx::commit`].
#[derive(Debug)]
pub struct Tx<'s> {
    store: &'s Store,
    /// The task as it was read at the start.
    base: Task,
    todo_src: String,
    /// `todo_src` parsed; `None` after an edit, until it is needed again.
    todo: Option<Arc<Checklist>>,
    state: State,
    plan_src: Option<String>,
    /// `plan_src` is written byte for byte, and its `status:` is the phase the commit moves
    /// to ([`Tx::set_plan_as_is`]).
    plan_as_is: bool,
    /// The task's phase when the transaction began.
    base_phase: Phase,
    /// Each step's marker when the transaction began (the base's checklist is patched in
    /// place), for `tick log`.
    base_markers: Vec<(String, StepStatus)>,
}

/// What [`Tx::set_status`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetStatus {
    /// The marker (and its runner line) changed.
    Set,
    /// The step already had that status and line: nothing to write.
    Unchanged,
    /// A person changed this very step's marker away from what the caller expected (while a
    /// step ran, say): their version is kept and nothing was changed.
    KeptPersonEdit { current: StepStatus },
    /// There is no such step in TODO.md (a person removed it).
    Missing,
}

/// What a commit wrote.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The phase before and after (equal when it stayed).
    pub from: Phase,
    pub to: Phase,
    /// Whether anything changed on disk.
    pub wrote: bool,
    /// The task as it is now, parsed once.
    pub task: Task,
}

/// The record written before the files: enough to finish the commit, or to undo it.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// blake3 of the TODO.md the transaction read.
    old_todo_hash: String,
    todo: String,
    todo_hash: String,
    old_state: Option<String>,
    state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plan: Option<String>,
}

/// The first line of a record: the texts follow a header as they are, not escaped into JSON
/// (a TODO.md of megabytes is written and read back without being encoded). A record
/// without it is the whole-JSON form of earlier versions, still read.
const RECORD_MAGIC: &str = "tick-tx 2\n";

/// A record's second line: the hashes, and the lengths of the texts after it, in order.
#[derive(Debug, Serialize, Deserialize)]
struct RecordHeader {
    old_todo_hash: String,
    todo_hash: String,
    todo_len: usize,
    state_len: usize,
    old_state_len: Option<usize>,
    plan_len: Option<usize>,
}

impl Record {
    fn encode(
        old_todo_hash: String,
        todo_hash: String,
        todo: &str,
        old_state: Option<&str>,
        state: &str,
        plan: Option<&str>,
    ) -> Result<String> {
        let header = RecordHeader {
            old_todo_hash,
            todo_hash,
            todo_len: todo.len(),
            state_len: state.len(),
            old_state_len: old_state.map(str::len),
            plan_len: plan.map(str::len),
        };
        let header = serde_json::to_string(&header)
            .map_err(|err| super::error::Error::serialize("the transaction", err))?;
        let texts = [Some(todo), Some(state), old_state, plan];
        let mut out = String::with_capacity(
            RECORD_MAGIC.len()
                + header.len()
                + 1
                + texts.iter().flatten().map(|t| t.len()).sum::<usize>(),
        );
        out.push_str(RECORD_MAGIC);
        out.push_str(&header);
        out.push('\n');
        for text in texts.into_iter().flatten() {
            out.push_str(text);
        }
        Ok(out)
    }

    /// A record as [`Record::encode`] (or an earlier version) wrote it; `None` when it is not
    /// one (edited, or cut short: the lengths must add up exactly).
    fn decode(text: &str) -> Option<Record> {
        let Some(rest) = text.strip_prefix(RECORD_MAGIC) else {
            return serde_json::from_str(text).ok();
        };
        let (header, mut rest) = rest.split_once('\n')?;
        let header: RecordHeader = serde_json::from_str(header).ok()?;
        let mut take = |len: usize| -> Option<String> {
            let text = rest.get(..len)?;
            rest = &rest[len..];
            Some(text.to_owned())
        };
        let todo = take(header.todo_len)?;
        let state = take(header.state_len)?;
        let old_state = match header.old_state_len {
            Some(len) => Some(take(len)?),
            None => None,
        };
        let plan = match header.plan_len {
            Some(len) => Some(take(len)?),
            None => None,
        };
        (rest.is_empty() && hash(&todo) == header.todo_hash).then_some(Record {
            old_todo_hash: header.old_todo_hash,
            todo,
            todo_hash: header.todo_hash,
            old_state,
            state,
            plan,
        })
    }
}

impl Store {
    /// Starts a transaction on `task`, reading its files fresh. The caller holds the task's
    /// lock ([`Store::lock_task`]).
    pub fn begin(&self, task: &TaskRef) -> Result<Tx<'_>> {
        let base = self.load(task)?;
        Ok(Tx {
            store: self,
            todo_src: base.todo_src.to_string(),
            todo: Some(base.todo.clone()),
            state: base.state.clone(),
            plan_src: None,
            plan_as_is: false,
            base_phase: base.phase(),
            base_markers: markers(&base.todo),
            base,
        })
    }

    /// Runs `change` in a transaction and commits it with `reason`, starting over (at most a
    /// few times) when a person saved TODO.md between the read and the write, so their save
    /// is never overwritten. The caller holds the task's lock.
    pub fn transact<T>(
        &self,
        task: &TaskRef,
        now: DateTime<Utc>,
        reason: &str,
        mut change: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<(T, Committed)> {
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let mut tx = self.begin(task)?;
            let value = change(&mut tx)?;
            match tx.commit(now, reason) {
                Ok(committed) => return Ok((value, committed)),
                Err(err) if err.kind == ErrorKind::Busy => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| Error::internal("the transaction did not run")))
    }

    /// Finishes or undoes a commit a killed process left in `task` (its `runs/tx.json`).
    /// Called under the task's lock by every writer before it reads. Returns whether there
    /// was one.
    pub fn recover(&self, task: &TaskRef) -> Result<bool> {
        let runs = task.dir.join(RUNS_DIR);
        fsx::remove_stray_temps(&runs, &[TX_FILE], std::time::Duration::ZERO)?;
        let path = runs.join(TX_FILE);
        let Some(text) = fsx::read_optional(&path)? else {
            return Ok(false);
        };
        // Written atomically, so it is whole; unreadable means someone edited it: drop it.
        if let Some(record) = Record::decode(&text) {
            let todo_path = task.dir.join(TODO_FILE);
            let state_path = task.dir.join(STATE_FILE);
            let on_disk = fsx::read_optional(&todo_path)?.unwrap_or_default();
            let hash = hash(&on_disk);
            if hash == record.old_todo_hash || hash == record.todo_hash {
                write_if_changed(&state_path, &record.state)?;
                write_if_changed(&todo_path, &record.todo)?;
                if let Some(plan) = &record.plan {
                    write_if_changed(&task.dir.join(PLAN_FILE), plan)?;
                }
            } else {
                // A person saved TODO.md after the killed commit: theirs is kept, and the
                // state goes back with it (if it had been written at all).
                let state_now = fsx::read_optional(&state_path)?;
                if state_now.as_deref() == Some(record.state.as_str()) {
                    match &record.old_state {
                        Some(old) => fsx::write_atomic(&state_path, old.as_bytes())?,
                        None => fsx::remove_file(&state_path)?,
                    }
                }
            }
        }
        fsx::remove_file(&path)?;
        Ok(true)
    }
}

/// Writes a commit's new texts (`[state.yaml, TODO.md, PLAN.md]`, each when it changes) after
/// its record. When one fails the caller hears that the commit failed (an undo then puts its
/// files back), so it must not happen later either: what was written goes back, then the
/// record. Only when that fails too does the record stay, for the next command to finish.
fn write_or_put_back(
    dir: &Path,
    [state, todo, plan]: [Option<&str>; 3],
    todo_before: &str,
    plan_before: Option<&str>,
    state_before: Option<&str>,
) -> Result<()> {
    let written = (|| {
        for (text, file) in [(state, STATE_FILE), (todo, TODO_FILE), (plan, PLAN_FILE)] {
            if let Some(text) = text {
                crash::point()?;
                fsx::write_atomic(&dir.join(file), text.as_bytes())?;
            }
        }
        Ok(())
    })();
    if written.is_err() && put_back(dir, todo_before, plan_before, state_before).is_ok() {
        let _ = fsx::remove_file(&dir.join(RUNS_DIR).join(TX_FILE));
    }
    written
}

/// A failed commit's texts as they were before it, in the reverse order of its writes:
/// PLAN.md (when it was to change), TODO.md, state.yaml (or none).
fn put_back(dir: &Path, todo: &str, plan: Option<&str>, state: Option<&str>) -> Result<()> {
    if let Some(plan) = plan {
        fsx::write_atomic(&dir.join(PLAN_FILE), plan.as_bytes())?;
    }
    fsx::write_atomic(&dir.join(TODO_FILE), todo.as_bytes())?;
    match state {
        Some(old) => fsx::write_atomic(&dir.join(STATE_FILE), old.as_bytes()),
        None => fsx::remove_file(&dir.join(STATE_FILE)),
    }
}

/// Whether a killed writer left something in the task folder `dir` for the next writer to
/// finish or clean up: a commit's record, or a temp file of one of tick's atomic writes.
pub fn needs_cleanup(dir: &Path) -> bool {
    let runs = dir.join(RUNS_DIR);
    // `.tasks/.current` is written under a task's lock: its temp files are this task's to
    // clean as well.
    let store_dir = dir.parent().unwrap_or(dir);
    runs.join(TX_FILE).exists()
        || runs.join(super::restore::RESTORE_FILE).exists()
        || fsx::has_stray_temps(dir, &super::WRITTEN_FILES)
        || fsx::has_stray_temps(&runs, &[TX_FILE])
        || fsx::has_stray_temps(store_dir, &[super::CURRENT_FILE])
}

/// The new contents a pending record holds for a task, for a reader that does not hold the
/// lock: `(TODO.md, state.yaml, PLAN.md)`, when TODO.md on disk is the old or the new text.
/// A clone can ship the record, so it is read like any file of the store (bounded, never a
/// FIFO or a device): what cannot be read is an error naming it; what does not decode is no
/// record.
pub(super) type Pending = (String, String, Option<String>);

pub(super) fn pending(dir: &Path, todo_on_disk: &str) -> Result<Option<Pending>> {
    let Some(text) = fsx::read_optional(&dir.join(RUNS_DIR).join(TX_FILE))? else {
        return Ok(None);
    };
    let Some(record) = Record::decode(&text) else {
        return Ok(None);
    };
    let hash = hash(todo_on_disk);
    Ok(
        (hash == record.old_todo_hash || hash == record.todo_hash).then_some((
            record.todo,
            record.state,
            record.plan,
        )),
    )
}

impl Tx<'_> {
    /// The task as it was read when the transaction began; its checklist is the
    /// transaction's own once a status has changed (the two share it rather than copy it).
    pub fn base(&self) -> &Task {
        &self.base
    }

    /// TODO.md as the transaction has it so far.
    pub fn todo_src(&self) -> &str {
        &self.todo_src
    }

    /// The checklist as the transaction has it so far (parsed again after edits).
    pub fn todo(&mut self) -> Result<&Checklist> {
        Ok(self.parsed()?.1)
    }

    /// TODO.md's text and its parse, parsing again after an edit.
    fn parsed(&mut self) -> Result<(&str, &Checklist)> {
        if self.todo.is_none() {
            let parsed =
                todo_md::parse(&self.todo_src).map_err(|e| super::error::Error::EditUnparsed {
                    todo: self.store.rel(&self.todo_path()),
                    detail: e.to_string(),
                })?;
            self.todo = Some(Arc::new(parsed));
        }
        match &self.todo {
            Some(todo) => Ok((&self.todo_src, todo)),
            None => Err(Error::internal("TODO.md was not parsed")),
        }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    fn todo_path(&self) -> PathBuf {
        self.base.dir.join(TODO_FILE)
    }

    /// Sets step `id` to `status` (with `reason` as its `blocked:`/`stale:` line), editing
    /// only that marker and runner line. A sub-step's parent follows (ticked when all its
    /// sub-steps are done, unticked when one reopens). With `expected`, a marker that is not
    /// `expected` any more was changed by a person: it is kept and reported.
    pub fn set_status(
        &mut self,
        id: StepId,
        expected: Option<StepStatus>,
        status: StepStatus,
        reason: Option<&str>,
    ) -> Result<SetStatus> {
        let (src, todo) = self.parsed()?;
        let Some(current) = todo.find(id).map(|s| s.status) else {
            return Ok(SetStatus::Missing);
        };
        if let Some(expected) = expected
            && current != expected
        {
            return Ok(SetStatus::KeptPersonEdit { current });
        }
        let Some(mut src) = todo_md::edit_step(src, todo, id, &StepEdit::status(status, reason))
        else {
            return Ok(SetStatus::Missing);
        };
        if id.is_sub() {
            src = todo_md::settle_parent(&src, id.parent())
                .map_err(|e| self.store.parse_error(&self.todo_path(), &e))?;
        }
        if src == self.todo_src {
            return Ok(SetStatus::Unchanged);
        }
        // Only the marker changed (the common case): the parse stays good, no need to redo it.
        // The checklist is patched in place, not copied: the store's cache and the base let
        // go of it first (the base then shares the patched one).
        let patchable = !id.is_sub()
            && self.todo.as_ref().is_some_and(|list| {
                todo_md::can_patch_marker(list, &self.todo_src, &src, id, status)
            });
        if patchable && let Some(list) = self.todo.as_mut() {
            self.store.forget_parsed();
            self.base.todo = Arc::default();
            todo_md::patch_marker(Arc::make_mut(list), &self.todo_src, &src, id, status);
            self.base.todo = Arc::clone(list);
        } else {
            self.todo = None;
        }
        self.todo_src = src;
        Ok(SetStatus::Set)
    }

    /// Replaces TODO.md's text with `edit(text, checklist)` (stale markers, a merged plan);
    /// it is parsed back before the commit writes it.
    pub fn edit_todo(
        &mut self,
        edit: impl FnOnce(&str, &Checklist) -> Result<String>,
    ) -> Result<()> {
        let src = {
            let (src, todo) = self.parsed()?;
            edit(src, todo)?
        };
        if src != self.todo_src {
            self.todo_src = src;
            self.todo = None;
        }
        Ok(())
    }

    /// Gives steps a person added without ids their ids (only the id tokens are inserted).
    pub fn assign_ids(&mut self) -> Result<Vec<StepId>> {
        let (src, todo) = self.parsed()?;
        if !todo.needs_ids() {
            return Ok(Vec::new());
        }
        let (src, ids) = todo_md::assign_ids(src, todo);
        self.todo_src = src;
        self.todo = None;
        Ok(ids)
    }

    /// Changes state.yaml's facts.
    pub fn record<T>(&mut self, update: impl FnOnce(&mut State) -> T) -> T {
        update(&mut self.state)
    }

    /// Replaces PLAN.md (a re-approval); its `status:` is still set by the commit.
    pub fn set_plan(&mut self, src: String) {
        self.plan_src = Some(src);
        self.plan_as_is = false;
    }

    /// Replaces PLAN.md with `src` exactly, `status:` included (a cancel, a global re-plan's
    /// revision): a `status: cancelled` there cancels the task.
    pub fn set_plan_as_is(&mut self, src: String) {
        self.plan_src = Some(src);
        self.plan_as_is = true;
    }

    /// The progress and the phase the commit would move to, or why the move is refused.
    pub fn phase_after(&mut self) -> Result<(Progress, std::result::Result<Phase, Refused>)> {
        let from = self.base_phase;
        let plan_phase = self.plan_phase();
        let todo = self.todo()?;
        let progress =
            Progress::from_statuses(todo.steps.iter().map(todo_md::Step::progress_status));
        let next = match plan_phase {
            Some(Phase::Cancelled) => Ok(Phase::Cancelled),
            _ => transition(from, Event::StepsChanged(progress)).map_err(|r| Refused {
                reason: r.reason,
                hint: r.hint,
            }),
        };
        Ok((progress, next))
    }

    /// The phase PLAN.md's `status:` names: the new text's when it is set as it is.
    fn plan_phase(&self) -> Option<Phase> {
        match self.plan_src.as_deref().filter(|_| self.plan_as_is) {
            Some(src) => plan_md::parse_without_steps(src)
                .ok()
                .and_then(|plan| plan.phase()),
            None => self.base.plan.phase(),
        }
    }

    /// PLAN.md's new text, if it changes: the one set, or the one on disk, with the
    /// `status:` line of phase `to` (unless it is set as it is).
    fn plan_to_write(&mut self, to: Phase) -> Option<String> {
        let mut plan_src = self.plan_src.take();
        let replaced = plan_src.is_some();
        let plan_base = plan_src.as_deref().unwrap_or(&self.base.plan_src);
        let plan_phase = if replaced {
            plan_md::parse_without_steps(plan_base)
                .ok()
                .and_then(|plan| plan.phase())
        } else {
            self.base.plan.phase()
        };
        if plan_phase != Some(to)
            && !self.plan_as_is
            && to != Phase::Cancelled
            && let Some(text) = plan_md::set_status_line(plan_base, to)
        {
            plan_src = Some(text);
        }
        plan_src.filter(|text| *text != *self.base.plan_src)
    }

    /// Writes TODO.md and state.yaml together (and PLAN.md's `status:` when the phase moved),
    /// logs the transition with `reason`, and returns the task as it now is. Fails with
    /// [`ErrorKind::Busy`], having written nothing, when TODO.md changed on disk since the
    /// transaction read it (see [`Store::transact`]).
    pub fn commit(mut self, now: DateTime<Utc>, reason: &str) -> Result<Committed> {
        let store = self.store;
        let dir = self.base.dir.clone();
        let todo_path = self.todo_path();
        self.todo()?;
        let from = self.base_phase;
        let (_, next) = self.phase_after()?;
        let to = next.unwrap_or(from);

        let replaced = self.plan_src.is_some();
        let plan_src = self.plan_to_write(to);
        let old_state = state_yaml(&self.base.state)?;
        let state_src = state_yaml(&self.state)?;
        let todo_changed = self.todo_src != *self.base.todo_src;
        let state_changed = state_src != old_state;
        let todo = self.todo.take().unwrap_or_default();

        if !todo_changed && !state_changed && plan_src.is_none() {
            return Ok(Committed {
                from,
                to: from,
                wrote: false,
                task: self.base,
            });
        }
        // The lock keeps other tick processes out, not a person's editor.
        let on_disk = fsx::read_optional(&todo_path)?.unwrap_or_default();
        if on_disk != *self.base.todo_src {
            return Err(Error::new(
                ErrorKind::Busy,
                format!("`{}` changed while tick read it", store.rel(&todo_path)),
            )
            .hint("save it and try again; it was not changed"));
        }

        let runs = dir.join(RUNS_DIR);
        fsx::create_dir_all(&runs)?;
        let old_state = dir.join(STATE_FILE).exists().then_some(old_state);
        let record_text = Record::encode(
            hash(&self.base.todo_src),
            hash(&self.todo_src),
            &self.todo_src,
            old_state.as_deref(),
            &state_src,
            plan_src.as_deref(),
        )?;
        let record_path = runs.join(TX_FILE);
        crash::point()?;
        fsx::write_atomic(&record_path, record_text.as_bytes())?;
        write_or_put_back(
            &dir,
            [
                state_changed.then_some(state_src.as_str()),
                todo_changed.then_some(self.todo_src.as_str()),
                plan_src.as_deref(),
            ],
            &self.base.todo_src,
            plan_src.is_some().then_some(self.base.plan_src.as_str()),
            old_state.as_deref(),
        )?;
        // Everything is written: a record left now only makes the next command write the
        // same texts again.
        crash::point()?;
        let _ = fsx::remove_file(&record_path);
        let recorded = (!replaced).then(|| self.base.plan.phase()).flatten();
        let before = std::mem::take(&mut self.base_markers);
        log_story(&dir, &before, &todo, recorded, (from, to), reason, now);
        let went_stale = went_stale(&before, &todo);

        let mut task = self.base;
        if let Some(plan) = plan_src {
            let plan = Arc::new(plan);
            if replaced {
                task.plan = Arc::new(
                    plan_md::parse_shared_without_steps(&plan)
                        .map_err(|e| store.parse_error(&dir.join(PLAN_FILE), &e))?,
                );
            } else {
                // Only the `status:` value changed.
                Arc::make_mut(&mut task.plan).front.status = Some(to);
            }
            task.plan_src = plan;
        }
        task.todo_src = Arc::new(self.todo_src);
        task.todo = todo;
        task.state = self.state;
        // The runner reads the task again after each commit: it need not parse it.
        let state_on_disk = if state_changed {
            Some(state_src)
        } else {
            old_state
        };
        store.remember(&task, state_on_disk);
        if !went_stale.is_empty()
            && let Some(observe) = store.stale_observer()
        {
            observe(store, &task, &went_stale);
        }
        Ok(Committed {
            from,
            to,
            wrote: true,
            task,
        })
    }
}

/// The time a commit's story is logged at: a command's whole-second `now` taken from the
/// system clock `system` is logged to the clock's precision, since `tick log` orders it
/// among times state.yaml records precisely (a step verified and gone stale within one
/// second must read in that order). A fixed clock (`TICK_NOW`) is kept as it is.
fn story_time(now: DateTime<Utc>, system: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::SubsecRound;
    if now.timestamp_subsec_nanos() == 0 && system.trunc_subsecs(0) == now {
        system
    } else {
        now
    }
}

/// `tick log`'s story of a commit in the task at `dir`: what a person changed by hand since
/// tick last wrote TODO.md (markers, and the phase PLAN.md had `recorded`), then what this
/// commit changed from `before` to `todo`, then the phase `from` → `to`.
fn log_story(
    dir: &Path,
    before: &[(String, StepStatus)],
    todo: &Checklist,
    recorded: Option<Phase>,
    (from, to): (Phase, Phase),
    reason: &str,
    now: DateTime<Utc>,
) {
    let by_hand = "changed by hand in TODO.md";
    let now = story_time(now, Utc::now());
    if let Some(kept) = journal::last_markers(dir) {
        journal::steps_changed(dir, &kept, before, &|_| by_hand.to_owned(), true, now);
    }
    if let Some(recorded) = recorded
        && recorded != from
        && recorded != Phase::Cancelled
    {
        journal::transition(dir, recorded, from, by_hand, now);
    }
    let after = markers(todo);
    // A step gone stale says why in its own `stale:` line.
    let why = |id: &str| {
        id.parse::<StepId>()
            .ok()
            .and_then(|id| todo.find(id))
            .and_then(|step| step.stale.clone())
            .unwrap_or_else(|| reason.to_owned())
    };
    journal::steps_changed(dir, before, &after, &why, false, now);
    journal::keep_markers(dir, &after);
    journal::transition(dir, from, to, reason, now);
}

/// The steps that were done in `before` and are stale in `todo`: the transitions to `[~]`
/// this commit wrote, once each.
fn went_stale(before: &[(String, StepStatus)], todo: &Checklist) -> Vec<StepId> {
    markers(todo)
        .into_iter()
        .filter(|(id, to)| {
            *to == StepStatus::Stale
                && before
                    .iter()
                    .any(|(was, from)| was == id && *from == StepStatus::Done)
        })
        .filter_map(|(id, _)| id.parse().ok())
        .collect()
}

/// Each step's id and marker, in file order.
pub fn markers(todo: &Checklist) -> Vec<(String, StepStatus)> {
    todo.all_steps()
        .filter_map(|step| step.id.map(|id| (id.to_string(), step.status)))
        .collect()
}

/// Where a test stops a commit as a kill would: before each of its writes.
pub(crate) mod crash {
    use crate::error::Result;

    #[cfg(test)]
    thread_local! {
        static WRITES_LEFT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    }

    /// Lets the next `writes` writes of this thread's commits through, then stops at the
    /// next one as a kill would (an unwind past every error path, caught by the test),
    /// having written nothing more; `None`: every write goes through.
    #[cfg(test)]
    pub fn after(writes: Option<usize>) {
        WRITES_LEFT.set(writes);
    }

    /// Before a write: where a test has the commit killed.
    #[allow(
        clippy::unnecessary_wraps,
        reason = "the same signature as the test build's, which stops here as a kill would"
    )]
    pub fn point() -> Result<()> {
        #[cfg(test)]
        if let Some(left) = WRITES_LEFT.get() {
            if left == 0 {
                // As a kill -9 would: no error path, no put-back, runs here.
                std::panic::resume_unwind(Box::new("killed here by a test"));
            }
            WRITES_LEFT.set(Some(left - 1));
        }
        Ok(())
    }
}

/// Why the steps cannot move the task on (a cancelled or unapproved plan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub reason: String,
    pub hint: String,
}

/// state.yaml's text for `state`: deterministic (sorted keys), file names holding a secret
/// redacted ([`State::with_paths_redacted`]).
pub fn state_yaml(state: &State) -> Result<String> {
    serde_yaml::to_string(&*state.with_paths_redacted())
        .map_err(|err| super::error::Error::serialize("state.yaml", err).into())
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if fsx::read_optional(path)?.as_deref() != Some(text) {
        fsx::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_whole_second_is_logged_to_the_clocks_precision() {
        let system: DateTime<Utc> = "2026-12-06T22:33:56.700Z".parse().unwrap();
        let whole: DateTime<Utc> = "2026-12-06T22:33:56Z".parse().unwrap();
        assert_eq!(story_time(whole, system), system);
        // A fixed clock (another second), and a time with its own fraction, stay.
        let fixed: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        assert_eq!(story_time(fixed, system), fixed);
        let precise: DateTime<Utc> = "2026-12-06T22:33:56.100Z".parse().unwrap();
        assert_eq!(story_time(precise, system), precise);
    }

    const PLAN: &str = "---\ntitle: T\nstatus: approved\n---\n# T\n\n## Steps\n\n- [ ] S1 One\n";
    const TODO: &str = "# TODO: T\n\n- [ ] S1 One\n  - files: a.rs\n- [ ] S2 Two\n  - [ ] S2.1 Half\n  - [ ] S2.2 Other half\n";

    fn task() -> (tempfile::TempDir, Store, TaskRef) {
        crate::tasks::test_task(PLAN, TODO)
    }

    fn now() -> DateTime<Utc> {
        "2026-11-30T14:30:12Z".parse().unwrap()
    }

    fn read(task: &TaskRef, file: &str) -> String {
        std::fs::read_to_string(task.dir.join(file)).unwrap_or_default()
    }

    #[test]
    fn a_commit_writes_the_marker_the_state_and_the_phase_together() {
        let (_root, store, task) = task();
        let mut tx = store.begin(&task).unwrap();
        assert_eq!(
            tx.set_status(
                StepId::top(1),
                Some(StepStatus::Pending),
                StepStatus::Done,
                None
            )
            .unwrap(),
            SetStatus::Set
        );
        tx.record(|state| state.record_person(StepId::top(1), StepStatus::Done, now()));
        let done = tx.commit(now(), "a person marked `S1` done").unwrap();
        assert_eq!(
            (done.from, done.to, done.wrote),
            (Phase::Approved, Phase::Executing, true)
        );
        assert_eq!(
            read(&task, TODO_FILE),
            TODO.replacen("- [ ] S1", "- [x] S1", 1)
        );
        assert!(read(&task, STATE_FILE).contains("S1:"));
        assert!(read(&task, PLAN_FILE).contains("status: executing"));
        assert!(!task.dir.join(RUNS_DIR).join(TX_FILE).exists());
        // The step's move and the phase's, for `tick log`.
        let logged = journal::read(&task.dir).unwrap();
        assert!(
            matches!(&logged[..], [journal::Entry::Step { step, .. }, journal::Entry::Transition { .. }] if step == "S1"),
            "{logged:?}"
        );
    }

    #[test]
    fn a_marker_change_patches_the_checklist_in_place_and_the_next_load_sees_it() {
        let (_root, store, task) = task();
        // Found first (as `tick mark` finds the current task), then read under the lock.
        store.load(&task).unwrap();
        let mut tx = store.begin(&task).unwrap();
        let read = Arc::as_ptr(&tx.base().todo);
        tx.set_status(StepId::top(1), None, StepStatus::Done, None)
            .unwrap();
        let done = tx.commit(now(), "r").unwrap();
        assert!(
            std::ptr::eq(Arc::as_ptr(&done.task.todo), read),
            "not copied"
        );
        assert_eq!(done.from, Phase::Approved);
        let again = store.load(&task).unwrap();
        assert_eq!(again.todo.steps[0].status, StepStatus::Done);
        assert_eq!(*again.todo, todo_md::parse(&again.todo_src).unwrap());
    }

    #[test]
    fn a_second_load_of_the_same_texts_is_not_parsed_again_but_a_change_is() {
        let (_root, store, task) = task();
        let first = store.load(&task).unwrap();
        assert_eq!(store.load(&task).unwrap().todo, first.todo);
        std::fs::write(task.dir.join(TODO_FILE), TODO.replace("One", "Uno")).unwrap();
        assert_eq!(store.load(&task).unwrap().todo.steps[0].title, "Uno");
        std::fs::write(
            task.dir.join(STATE_FILE),
            "format: 1\nsteps:\n  S1:\n    status: done\n",
        )
        .unwrap();
        assert_eq!(store.load(&task).unwrap().state.steps.len(), 1);
    }

    #[test]
    fn a_sub_step_settles_its_parent() {
        let (_root, store, task) = task();
        let mut tx = store.begin(&task).unwrap();
        tx.set_status(StepId::sub(2, 1), None, StepStatus::Done, None)
            .unwrap();
        tx.set_status(StepId::sub(2, 2), None, StepStatus::Done, None)
            .unwrap();
        let done = tx.commit(now(), "r").unwrap();
        assert_eq!(
            done.task.todo.find(StepId::top(2)).unwrap().status,
            StepStatus::Done
        );
        let mut tx = store.begin(&task).unwrap();
        tx.set_status(StepId::sub(2, 2), None, StepStatus::Pending, None)
            .unwrap();
        let done = tx.commit(now(), "r").unwrap();
        assert_eq!(
            done.task.todo.find(StepId::top(2)).unwrap().status,
            StepStatus::Pending
        );
    }

    #[test]
    fn a_persons_marker_is_kept_and_reported() {
        let (_root, store, task) = task();
        let mut tx = store.begin(&task).unwrap();
        let got = tx
            .set_status(
                StepId::top(1),
                Some(StepStatus::InProgress),
                StepStatus::Done,
                None,
            )
            .unwrap();
        assert_eq!(
            got,
            SetStatus::KeptPersonEdit {
                current: StepStatus::Pending
            }
        );
        assert_eq!(
            tx.set_status(StepId::top(9), None, StepStatus::Done, None)
                .unwrap(),
            SetStatus::Missing
        );
        assert_eq!(
            tx.set_status(StepId::top(1), None, StepStatus::Pending, None)
                .unwrap(),
            SetStatus::Unchanged
        );
        assert!(!tx.commit(now(), "r").unwrap().wrote);
        assert_eq!(read(&task, TODO_FILE), TODO);
    }

    #[test]
    fn a_save_between_read_and_write_is_never_overwritten() {
        let (_root, store, task) = task();
        let mut tx = store.begin(&task).unwrap();
        tx.set_status(StepId::top(1), None, StepStatus::Done, None)
            .unwrap();
        let theirs = TODO.replace("Two", "Two, renamed");
        std::fs::write(task.dir.join(TODO_FILE), &theirs).unwrap();
        let err = tx.commit(now(), "r").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Busy);
        assert_eq!(read(&task, TODO_FILE), theirs);
        // `transact` reads again and applies the change to their text.
        store
            .transact(&task, now(), "r", |tx| {
                tx.set_status(StepId::top(1), None, StepStatus::Done, None)
            })
            .unwrap();
        assert_eq!(
            read(&task, TODO_FILE),
            theirs.replacen("- [ ] S1", "- [x] S1", 1)
        );
    }

    /// A commit killed after its record: the state and TODO.md as each step of the sequence
    /// may have left them.
    fn killed_after_record(
        store: &Store,
        task: &TaskRef,
        files_written: usize,
    ) -> (String, String) {
        let mut tx = store.begin(task).unwrap();
        tx.set_status(StepId::top(1), None, StepStatus::Done, None)
            .unwrap();
        tx.record(|state| state.record_person(StepId::top(1), StepStatus::Done, now()));
        let new_todo = tx.todo_src().to_owned();
        let new_state = state_yaml(tx.state()).unwrap();
        let record = Record::encode(
            hash(TODO),
            hash(&new_todo),
            &new_todo,
            None,
            &new_state,
            None,
        )
        .unwrap();
        let runs = task.dir.join(RUNS_DIR);
        std::fs::create_dir_all(&runs).unwrap();
        std::fs::write(runs.join(TX_FILE), record).unwrap();
        if files_written >= 1 {
            std::fs::write(task.dir.join(STATE_FILE), &new_state).unwrap();
        }
        if files_written >= 2 {
            std::fs::write(task.dir.join(TODO_FILE), &new_todo).unwrap();
        }
        (new_todo, new_state)
    }

    #[test]
    fn a_record_keeps_its_texts_as_they_are_and_refuses_a_cut_or_edited_one() {
        let texts = ("- [x] S1 \"quoted\" \\ 日本\r\n", "format: 1\n", "plan\n");
        let encoded = Record::encode(
            hash("old"),
            hash(texts.0),
            texts.0,
            Some("old state\n"),
            texts.1,
            Some(texts.2),
        )
        .unwrap();
        assert!(encoded.ends_with("- [x] S1 \"quoted\" \\ 日本\r\nformat: 1\nold state\nplan\n"));
        let record = Record::decode(&encoded).unwrap();
        assert_eq!(
            (
                record.todo.as_str(),
                record.state.as_str(),
                record.plan.as_deref()
            ),
            (texts.0, texts.1, Some(texts.2))
        );
        assert_eq!(record.old_state.as_deref(), Some("old state\n"));
        assert_eq!(
            Record::decode(&encoded[..encoded.len() - 1]),
            None,
            "cut short"
        );
        assert_eq!(Record::decode(&format!("{encoded}x")), None, "longer");
        assert_eq!(Record::decode(&encoded.replace("S1", "S2")), None, "edited");
        // A record in the form earlier versions wrote is still read.
        let old_form = serde_json::to_string(&record).unwrap();
        assert_eq!(Record::decode(&old_form), Some(record));
    }

    #[test]
    fn a_killed_commit_is_rolled_forward_from_any_point() {
        for written in 0..=2 {
            let (_root, store, task) = task();
            let (todo, state) = killed_after_record(&store, &task, written);
            // A reader without the lock already sees the new pair.
            let seen = store.load(&task).unwrap();
            assert_eq!(
                (seen.todo_src.as_str(), seen.state.steps.len()),
                (todo.as_str(), 1)
            );
            assert!(store.recover(&task).unwrap());
            assert_eq!(read(&task, TODO_FILE), todo, "after {written} files");
            assert_eq!(read(&task, STATE_FILE), state);
            assert!(!task.dir.join(RUNS_DIR).join(TX_FILE).exists());
            assert!(!store.recover(&task).unwrap());
        }
    }

    #[test]
    fn a_killed_commit_is_rolled_back_when_a_person_saved_todo_since() {
        let (_root, store, task) = task();
        killed_after_record(&store, &task, 2);
        let theirs = TODO.replace("One", "One, by hand");
        std::fs::write(task.dir.join(TODO_FILE), &theirs).unwrap();
        assert_eq!(*store.load(&task).unwrap().todo_src, theirs);
        store.recover(&task).unwrap();
        assert_eq!(read(&task, TODO_FILE), theirs);
        // There was no state.yaml before the commit: there is none after the undo.
        assert!(!task.dir.join(STATE_FILE).exists());
    }
}
