//! Approval, the only way from a draft to a task (DESIGN §3). [`approve`] is `tick approve`
//! and the session's approve without the talking: it picks one of the two below.
//! [`approve_draft`] makes the task folder (PLAN.md, TODO.md, state.yaml with the approval's
//! hashes) and moves it into place in one rename; [`reapprove`] approves a task's edited
//! PLAN.md again and merges its step changes into TODO.md by step id, keeping markers and
//! runner-owned lines. The files of the protocol and its recovery after a kill are
//! [`crate::tasks::approval`].

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Phase, StepId, StepStatus, transition};
use crate::tasks::approval::{self, APPROVED_COPY};
use crate::tasks::plan_md::{self, Approval, FrontMatter, PlanDoc};
use crate::tasks::render::render_todo;
use crate::tasks::state::{ApprovalRecord, State};
use crate::tasks::tx::SetStatus;
use crate::tasks::{
    PLAN_FILE, RUNS_DIR, SESSION_FILE, STATE_FILE, Store, TODO_FILE, draft_hash, folder_name,
    merge, steps_hash, todo_md,
};

/// What the person approves the run under; each setting adds to what the plan already says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contract {
    /// The run may change files outside a step's `files` without pausing.
    pub allow_deviation: bool,
    /// Stop the run after this many changed files (replaces the plan's limit).
    pub max_files_changed: Option<u32>,
    /// Commit each verified step.
    pub commit_steps: bool,
}

impl Contract {
    fn applied_to(self, existing: Option<&Approval>) -> Approval {
        let existing = existing.cloned().unwrap_or_default();
        Approval {
            allow_deviation: self.allow_deviation || existing.allow_deviation,
            max_files_changed: self.max_files_changed.or(existing.max_files_changed),
            commit_steps: self.commit_steps || existing.commit_steps,
        }
    }
}

/// A draft approved as a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    pub id: String,
    pub dir: PathBuf,
    pub title: String,
    /// Its steps, sub-steps included.
    pub steps: usize,
    /// Steps of other active tasks that change the same files, as recorded in the approval.
    pub overlaps: Vec<String>,
}

/// What [`approve`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproveOutcome {
    /// The draft is a task now.
    Draft(Approved),
    /// Task `id`'s PLAN.md was approved again, or found approved as it stands.
    Task { id: String, reapproved: Reapproved },
}

/// `tick approve` and the session's approve, without the talking: task `task`'s edited plan
/// when one is named; else the draft, when there is one; else the current task's plan when it
/// changed since approval. Refused when there is nothing to approve.
pub fn approve(
    store: &Store,
    task: Option<&str>,
    now: DateTime<Utc>,
    contract: Contract,
) -> Result<ApproveOutcome> {
    finish_cut_short(store)?;
    let again = |id: String| {
        let reapproved = reapprove(store, &id, now, contract)?;
        Ok(ApproveOutcome::Task { id, reapproved })
    };
    if let Some(task) = task {
        return again(store.resolve(task)?.id);
    }
    if store.draft_plan_path().exists() {
        return approve_draft(store, now, contract).map(ApproveOutcome::Draft);
    }
    if let Some(task) = store.current()?
        && store
            .load(&task)
            .is_ok_and(|t| t.plan_changed() || t.state.pending_replan.is_some())
    {
        return again(task.id);
    }
    Err(Error::input("there is no draft to approve")
        .hint("write one with `tick plan \"goal\"` or `tick plan --from plan.md`"))
}

/// Finishes an approval a kill cut short, before anything looks for a draft: taking the
/// store's lock does it (the rest of the draft folder goes), and removes the temp file a
/// killed write of `.tasks/.current` left.
pub fn finish_cut_short(store: &Store) -> Result<()> {
    if store.approving_path().exists()
        || fsx::has_stray_temps(store.dir(), &crate::tasks::WRITTEN_FILES)
    {
        drop(store.lock("tick approve")?);
    }
    Ok(())
}

/// Approves the draft under `contract`: the task folder is built beside its final place and
/// moved in with one rename, so a crash leaves either no task or a whole one. The task
/// becomes the current one.
pub fn approve_draft(store: &Store, now: DateTime<Utc>, contract: Contract) -> Result<Approved> {
    store.ensure()?;
    let _lock = store.lock("tick approve")?;
    let Some(draft) = store.load_draft()? else {
        return Err(Error::input("there is no draft to approve"));
    };
    let path = draft.path.clone();
    let phase = draft.plan.phase().unwrap_or(Phase::Draft);
    transition(phase, Event::Approve).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    plan_md::validate(&draft.plan).map_err(|e| store.parse_error(&path, &e))?;

    // Steps a person added to the draft without ids get them now, so PLAN.md and TODO.md
    // name the same steps.
    let body = with_ids(&draft.plan)?;
    let plan = plan_md::parse(&plan_md::render(&draft.plan.front, &body).map_err(render_error)?)
        .map_err(|e| store.parse_error(&path, &e))?;
    // A title is one line: a newline in it would write markdown of its own into TODO.md.
    let title = crate::tasks::render::one_line(&plan.title.clone().unwrap_or_default());

    let ids = store.task_ids()?;
    let base = folder_name::base_name(now, &title);
    let id = (1..=10_000)
        .map(|n| folder_name::candidate(&base, n))
        .find(|candidate| !ids.contains(candidate) && !store.dir().join(candidate).exists())
        .ok_or_else(|| Error::internal("no free task folder name"))?;

    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: Some(id.clone()),
        title: Some(title.clone()),
        goal: plan.front.goal.clone(),
        status: Some(Phase::Approved),
        created: plan.front.created.or(Some(now)),
        approved: Some(now),
        approval: Some(contract.applied_to(plan.front.approval.as_ref())),
        extra: plan.front.extra.clone(),
    };
    let plan_text = plan_md::render(&front, &body).map_err(render_error)?;
    let approved = plan_md::parse(&plan_text).map_err(|e| store.parse_error(&path, &e))?;
    let todo_text = render_todo(store, &id, &title, &approved.steps)?;
    refuse_other_checklist(&approved.steps, &todo_text)?;
    let todo_text = keep_draft_ticks(&approved.steps, todo_text);
    let overlaps = draft_overlaps(store, &approved.steps);
    let mut state = State::new();
    state.approval = Some(ApprovalRecord {
        approved_at: now,
        plan_hash: plan_md::approval_hash(&approved),
        steps_hash: steps_hash(&approved.steps),
        git_head: crate::git::head(store.root()),
        draft_hash: Some(draft_hash(&draft.src)),
        hooks: Vec::new(),
        overlaps: overlaps.clone(),
    });
    state.import = import_record(&approved, &super::import::draft_marks(store));
    let state_text = crate::tasks::tx::state_yaml(&state)?;

    let stage = store
        .dir()
        .join(format!(".staging-{}-{id}", std::process::id()));
    fsx::create_dir_all(&stage)?;
    fsx::write_atomic(&stage.join(PLAN_FILE), plan_text.as_bytes())?;
    fsx::write_atomic(&stage.join(TODO_FILE), todo_text.as_bytes())?;
    fsx::write_atomic(&stage.join(STATE_FILE), state_text.as_bytes())?;
    let runs = stage.join(RUNS_DIR);
    fsx::create_dir_all(&runs)?;
    fsx::write_atomic(&runs.join(APPROVED_COPY), plan_text.as_bytes())?;
    // Copied, not moved: until the task folder is in place, the draft stays whole.
    let session = store.draft_dir().join(SESSION_FILE);
    if let Some(text) = fsx::read_optional(&session)? {
        fsx::write_atomic(&runs.join("plan-session.jsonl"), text.as_bytes())?;
    }
    fsx::sync_dir(&stage)?;
    let task_dir = approval::install(store, &stage, &id)?;
    crate::tasks::journal::transition(
        &task_dir,
        phase,
        Phase::Approved,
        "a person approved the draft",
        now,
    );
    store.set_current(&store.task_ref(&id));
    Ok(Approved {
        id,
        dir: task_dir,
        title,
        steps: approved.steps.all_steps().count(),
        overlaps,
    })
}

/// The steps of the draft whose files steps of other active tasks also change (declared, or
/// seen changed), one line each: shown in the review, asked about in a terminal, recorded in
/// the approval.
pub fn draft_overlaps(store: &Store, steps: &todo_md::Checklist) -> Vec<String> {
    use crate::tasks::overlap;
    let mine = overlap::step_files(steps, None);
    if mine.is_empty() {
        return Vec::new();
    }
    let others = overlap::active_tasks(store, None, false);
    overlap::find(&mine, &others)
        .iter()
        .map(|o| o.line("this plan"))
        .collect()
}

/// Steps the draft has ticked (tasks `tick import` found done in their source) stay ticked in
/// TODO.md: done, not verified, until `tick verify` runs their checks.
fn keep_draft_ticks(steps: &todo_md::Checklist, todo: String) -> String {
    let mut todo = todo;
    for step in steps.all_steps().filter(|s| s.status == StepStatus::Done) {
        let Some(id) = step.id else { continue };
        let Ok(list) = todo_md::parse(&todo) else {
            break;
        };
        if let Some(ticked) = todo_md::edit_step(
            &todo,
            &list,
            id,
            &todo_md::StepEdit::status(StepStatus::Done, None),
        ) {
            todo = ticked;
        }
    }
    todo
}

/// The import record of a draft `tick import` made: its source, and each step's source id and
/// mark.
fn import_record(
    plan: &PlanDoc,
    marks: &crate::import::draft::Marks,
) -> Option<crate::tasks::state::ImportRecord> {
    use crate::tasks::state::{ImportRecord, ImportedStep};
    let meta = super::import::meta_of(&plan.front)?;
    let steps = plan
        .steps
        .all_steps()
        .filter_map(|step| {
            let source = step.source.clone()?;
            let mark = marks.get(&source);
            Some((
                step.id?,
                ImportedStep {
                    line: mark.map(|m| m.line),
                    col: mark.map(|m| m.col),
                    hash: mark.map(|m| m.hash.clone()).unwrap_or_default(),
                    key: mark.map(|m| m.key.clone()).unwrap_or_default(),
                    source,
                },
            ))
        })
        .collect();
    Some(ImportRecord {
        format: meta.format.as_str().to_owned(),
        path: meta.path,
        write_back: meta.write_back,
        steps,
    })
}

/// The rendered TODO.md must carry exactly the approved steps: the same ids and titles in the
/// same places, each `[ ]` (nothing has run yet), with the same files, verify commands,
/// done-when, risk and dependencies, and no runner-owned line. A template that adds a
/// `verify: true`, a command the person never saw, or renders `[x]` is refused, naming the
/// first difference.
fn refuse_other_checklist(approved: &todo_md::Checklist, todo_text: &str) -> Result<()> {
    let refused = |what: String| {
        Error::input(format!(
            "the TODO.md template changed the approved checklist: {what}"
        ))
        .hint(
            "fix or remove the TODO.md template (in `.tasks/templates/` or \
             `~/.config/tick/templates/`); nothing was written",
        )
    };
    let rendered =
        todo_md::parse(todo_text).map_err(|e| refused(format!("it does not parse ({e})")))?;
    if let Some(what) = checklist_difference(approved, &rendered) {
        return Err(refused(what));
    }
    Ok(())
}

/// The first way `rendered` is not the checklist `approved` starts as, in words; `None` when
/// it is exactly that.
pub fn checklist_difference(
    approved: &todo_md::Checklist,
    rendered: &todo_md::Checklist,
) -> Option<String> {
    // Compared as TODO.md writes a detail: on one line, runs of white space as one space
    // (`render::one_line`), which is tick's own rendering, not a template's.
    fn list(items: &[String]) -> String {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items
                .iter()
                .map(|i| format!("`{}`", one_line(i)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
    fn one(item: Option<&str>) -> String {
        item.map_or_else(|| "none".to_owned(), |i| format!("`{}`", one_line(i)))
    }
    use crate::tasks::render::one_line;
    fn steps_differ(want: &[todo_md::Step], got: &[todo_md::Step]) -> Option<String> {
        let name = |step: &todo_md::Step| {
            step.id
                .map_or_else(|| format!("`{}`", step.title), |id| format!("`{id}`"))
        };
        for (at, pair) in want.iter().zip(got).enumerate() {
            let (w, g) = pair;
            if w.id != g.id || w.title != g.title {
                return Some(format!(
                    "step {} is {} {:?} in TODO.md, {} {:?} in the approved plan",
                    at + 1,
                    name(g),
                    g.title,
                    name(w),
                    w.title
                ));
            }
            let step = name(w);
            if g.status != StepStatus::Pending {
                return Some(format!(
                    "{step} is marked `[{}]` in TODO.md; an approved task starts with every \
                     step `[ ]`",
                    g.status.marker()
                ));
            }
            let fields: [(&str, String, String); 10] = [
                ("files", list(&w.files), list(&g.files)),
                ("verify", list(&w.verify), list(&g.verify)),
                (
                    "done when",
                    one(w.done_when.as_deref()),
                    one(g.done_when.as_deref()),
                ),
                (
                    "risk",
                    one(w.risk.map(crate::plan::step::Risk::as_str)),
                    one(g.risk.map(crate::plan::step::Risk::as_str)),
                ),
                (
                    "depends",
                    list(&w.depends.iter().map(StepId::to_string).collect::<Vec<_>>()),
                    list(&g.depends.iter().map(StepId::to_string).collect::<Vec<_>>()),
                ),
                ("tools", list(&w.tools), list(&g.tools)),
                ("blocked", "none".to_owned(), one(g.blocked.as_deref())),
                ("stale", "none".to_owned(), one(g.stale.as_deref())),
                ("evidence", "none".to_owned(), one(g.evidence.as_deref())),
                ("notes", list(&w.notes), list(&g.notes)),
            ];
            for (field, want, got) in fields {
                if want != got {
                    return Some(format!(
                        "{step}'s {field} is {got} in TODO.md, {want} in the approved plan"
                    ));
                }
            }
            if let Some(what) = steps_differ(&w.substeps, &g.substeps) {
                return Some(what);
            }
        }
        match want.len().cmp(&got.len()) {
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(format!(
                "{} is missing from TODO.md",
                name(&want[got.len()])
            )),
            std::cmp::Ordering::Less => Some(format!(
                "TODO.md has a step the approved plan does not: {}",
                name(&got[want.len()])
            )),
        }
    }
    steps_differ(&approved.steps, &rendered.steps)
}

/// Commits the approved task's folder (and `.tasks/.gitignore`), and `.tasks/config.yaml`
/// when git does not track it yet (`tick init` wrote it; the README counts it among the
/// committed files). A tracked config.yaml with changes is the person's work in progress and
/// is left alone.
pub fn commit_task(store: &Store, approved: &Approved) -> Result<()> {
    let mut paths = vec![
        store.rel(&approved.dir),
        store.rel(&store.dir().join(".gitignore")),
    ];
    let config = store.dir().join("config.yaml");
    if config.is_file() {
        let rel = store.rel(&config);
        let tracked = crate::git::output(store.root(), &["ls-files", "-z", "--", &rel])
            .is_some_and(|out| !out.is_empty());
        if !tracked {
            paths.push(rel);
        }
    }
    let message = format!(
        "Approve plan: {}\n\nTask: {}\n",
        approved.title, approved.id
    );
    crate::git::commit_paths(store.root(), &paths, &message)
        .map_err(|err| Error::internal(err).hint("the task is approved; commit its folder by hand"))
}

/// How [`reapprove`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reapproved {
    /// Neither the plan nor the contract changed.
    Unchanged,
    /// Neither changed, and `step` was blocked for a re-plan whose new PLAN.md is not there
    /// (tick was stopped before it was written, or a person restored the approved plan): the
    /// approved plan stands and `step` is pending again.
    ReplanNotWritten { step: StepId },
    Approved {
        /// PLAN.md against the copy kept at the last approval, when that copy exists.
        plan_diff: Option<String>,
        /// The TODO.md the step changes were applied to.
        todo: PathBuf,
        /// The step changes applied to it, as lines; empty when the steps did not change.
        step_diff: String,
    },
}

/// Why the edited steps of `plan` cannot be applied to `todo`, with the merge's own hint.
fn not_applied(
    store: &Store,
    plan: &std::path::Path,
    todo: &std::path::Path,
    e: &crate::tasks::todo_md::ParseError,
) -> Error {
    Error::input(format!(
        "`{}`: the edited steps cannot be applied to `{}`: {}",
        store.rel(plan),
        store.rel(todo),
        e.message
    ))
    .hint(if e.hint.is_empty() {
        "fix the steps in PLAN.md (a `depends` on a removed step?); nothing was changed".to_owned()
    } else {
        format!("{}; nothing was changed", e.hint)
    })
}

/// A step without an id in the edited PLAN.md would be approved and never reach TODO.md:
/// refused, with the next free id.
fn every_step_has_an_id(
    store: &Store,
    task: &crate::tasks::Task,
    edited: &plan_md::PlanDoc,
    plan_path: &std::path::Path,
) -> Result<()> {
    let Some(step) = edited.steps.all_steps().find(|s| s.id.is_none()) else {
        return Ok(());
    };
    let free = edited
        .steps
        .all_steps()
        .chain(task.todo.all_steps())
        .filter_map(|s| s.id)
        .map(|id| id.major)
        .max()
        .unwrap_or(0)
        + 1;
    Err(Error::input(format!(
        "`{}:{}`: the step \"{}\" has no id, so it cannot be matched with TODO.md",
        store.rel(plan_path),
        step.line + edited.body_line,
        crate::tasks::render::one_line(&step.title)
    ))
    .hint(format!(
        "give it a free id (`- [ ] S{free} ...`) and approve again; nothing was changed"
    )))
}

/// Approves task `id`'s PLAN.md again (after a person edited it, or for a new `contract`):
/// its step changes are merged into TODO.md by step id, in one transaction with the new
/// approval record. The task becomes the current one.
pub fn reapprove(
    store: &Store,
    id: &str,
    now: DateTime<Utc>,
    contract: Contract,
) -> Result<Reapproved> {
    let task_ref = store.task_ref(id);
    let _lock = store.lock_task(&task_ref, "tick approve")?;
    store.set_current(&task_ref);
    let task = store.load(&task_ref)?;
    let phase = task.phase();
    transition(phase, Event::Approve).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    let approval = contract.applied_to(task.plan.front.approval.as_ref());
    let settings_changed = task.plan.front.approval.as_ref() != Some(&approval);
    if !task.plan_changed() && !settings_changed {
        return reopen_replan_not_written(store, &task, now);
    }
    let plan_path = task.dir.join(PLAN_FILE);
    let todo_path = task.dir.join(TODO_FILE);
    let copy = task.dir.join(RUNS_DIR).join(APPROVED_COPY);
    // The steps as PLAN.md has them now: the contract TODO.md must follow.
    let edited = plan_md::parse(&task.plan_src).map_err(|e| store.parse_error(&plan_path, &e))?;
    plan_md::validate(&edited).map_err(|e| store.parse_error(&plan_path, &e))?;
    every_step_has_an_id(store, &task, &edited, &plan_path)?;
    // The steps as last approved; without the local copy (a fresh clone), TODO.md stands in.
    let approved_copy = fsx::read_optional(&copy)?;
    let old_steps = approved_copy
        .as_deref()
        .and_then(|text| plan_md::parse(text).ok())
        .map_or_else(|| (*task.todo).clone(), |plan| plan.steps);
    let (merged, diff) = merge::apply_plan(&task.todo_src, &old_steps, &edited.steps)
        .map_err(|e| not_applied(store, &plan_path, &todo_path, &e))?;
    let reopened = reopened_steps(&task, &diff);
    let plan_diff = approval::changes_since_approval(&copy, &task.plan_src);
    let mut front = task.plan.front.clone();
    front.approved = Some(now);
    front.approval = Some(approval);
    front.status = Some(phase);
    let plan_text = plan_md::render(&front, &task.plan.body).map_err(render_error)?;
    let approved = plan_md::parse(&plan_text).map_err(|e| store.parse_error(&plan_path, &e))?;
    let record = ApprovalRecord {
        approved_at: now,
        plan_hash: plan_md::approval_hash(&approved),
        steps_hash: steps_hash(&approved.steps),
        git_head: crate::git::head(store.root()),
        draft_hash: task
            .state
            .approval
            .as_ref()
            .and_then(|a| a.draft_hash.clone()),
        // `tick approve` records the hooks it approves (`crate::hooks::approval`).
        hooks: task
            .state
            .approval
            .as_ref()
            .map(|a| a.hooks.clone())
            .unwrap_or_default(),
        overlaps: task
            .state
            .approval
            .as_ref()
            .map(|a| a.overlaps.clone())
            .unwrap_or_default(),
    };
    let ((), committed) =
        store.transact(&task_ref, now, "a person approved the edited plan", |tx| {
            tx.set_plan(plan_text.clone());
            tx.edit_todo(|src, _| {
                // A person may have saved TODO.md since it was read above: merge into theirs.
                if src == task.todo_src.as_str() {
                    Ok(merged.clone())
                } else {
                    merge::apply_plan(src, &old_steps, &edited.steps)
                        .map(|(text, _)| text)
                        .map_err(|e| store.parse_error(&todo_path, &e))
                }
            })?;
            tx.assign_ids()?;
            // A step whose contract changed is not what was verified or blocked: it starts
            // again, its earlier evidence kept in state.yaml.
            for id in &reopened {
                if tx.set_status(*id, None, StepStatus::Pending, None)? == SetStatus::Set {
                    tx.record(|state| state.reopen(*id, now));
                }
            }
            tx.record(|state| {
                state.approval = Some(record.clone());
                state.pending_replan = None;
                state.replanned = None;
            });
            Ok(())
        })?;
    fsx::create_dir_all(&task.dir.join(RUNS_DIR))?;
    fsx::write_atomic(&copy, committed.task.plan_src.as_bytes())?;
    Ok(Reapproved::Approved {
        plan_diff,
        todo: todo_path,
        step_diff: if diff.is_empty() {
            String::new()
        } else {
            diff.to_string()
        },
    })
}

/// `tick approve` of task `task` whose plan and contract did not change: nothing to approve,
/// but a re-plan recorded as waiting has no revision in PLAN.md to wait for (tick wrote none,
/// or a person restored the approved plan). The record goes, and its step, when the re-plan
/// still blocks it, is pending again with the block kept in its history: the hint on the step
/// said to approve, and the plan approved is the one that stands.
fn reopen_replan_not_written(
    store: &Store,
    task: &crate::tasks::Task,
    now: DateTime<Utc>,
) -> Result<Reapproved> {
    let Some(pending) = &task.state.pending_replan else {
        return Ok(Reapproved::Unchanged);
    };
    let step = pending.step;
    let task_ref = store.task_ref(&task.id);
    let reason = format!("`{step}` was blocked for a re-plan PLAN.md does not hold");
    let (reopened, _) = store.transact(&task_ref, now, &reason, |tx| {
        let Some(question) = tx
            .todo()?
            .find(step)
            .filter(|s| blocked_by_replan(s))
            .map(|s| s.blocked.clone())
        else {
            tx.record(|state| state.pending_replan = None);
            return Ok(false);
        };
        let reopened = tx.set_status(step, Some(StepStatus::Blocked), StepStatus::Pending, None)?
            == SetStatus::Set;
        tx.record(|state| {
            if reopened {
                state.record_unblock(step, question.as_deref(), None, now);
                state.reopen(step, now);
            }
            state.pending_replan = None;
        });
        Ok(reopened)
    })?;
    Ok(if reopened {
        Reapproved::ReplanNotWritten { step }
    } else {
        Reapproved::Unchanged
    })
}

/// The step of `task` blocked for a re-plan of the executor that PLAN.md does not hold: a
/// re-plan is recorded as waiting, its step's `blocked:` line says to approve it, and PLAN.md
/// is the approved plan (tick was stopped before writing the revision, or a person restored
/// the approved plan). `tick approve` reopens it.
pub fn replan_not_written(task: &crate::tasks::Task) -> Option<StepId> {
    let pending = task.state.pending_replan.as_ref()?;
    (!task.plan_changed() && task.todo.find(pending.step).is_some_and(blocked_by_replan))
        .then_some(pending.step)
}

/// Whether `step` is blocked by a re-plan of the executor (its `blocked:` line says so).
pub fn blocked_by_replan(step: &todo_md::Step) -> bool {
    step.status == StepStatus::Blocked
        && step
            .blocked
            .as_deref()
            .is_some_and(|b| b.starts_with(REPLANNED_PREFIX))
}

/// How the `blocked:` line of a step the executor re-planned around begins.
pub const REPLANNED_PREFIX: &str = "re-planned: ";

/// The steps a re-approval sets pending again: those whose contract changed (title, files,
/// verify, done when) and that were not pending, and the step the executor re-planned around,
/// blocked for this approval (approved, the plan around it is fixed and it runs again, after
/// the steps added before it).
fn reopened_steps(task: &crate::tasks::Task, diff: &merge::StepDiff) -> Vec<StepId> {
    let mut reopened: Vec<StepId> = diff
        .changed
        .iter()
        .filter(|change| {
            change
                .fields
                .iter()
                .any(|f| matches!(*f, "title" | "files" | "verify" | "done when"))
        })
        .map(|change| change.id)
        .filter(|id| {
            task.todo
                .find(*id)
                .is_some_and(|step| step.status != StepStatus::Pending)
        })
        .collect();
    // Only while the step is still blocked by the re-plan: a person who refused it and
    // answered the step may have seen it blocked since for another reason.
    if let Some(pending) = &task.state.pending_replan
        && !reopened.contains(&pending.step)
        && task.todo.find(pending.step).is_some_and(blocked_by_replan)
    {
        reopened.push(pending.step);
    }
    reopened
}

/// The draft's body with ids given to its id-less steps.
fn with_ids(plan: &PlanDoc) -> Result<String> {
    let Some(region) = plan.steps_region.clone() else {
        return Ok(plan.body.to_string());
    };
    let (body, _) = todo_md::assign_ids(&plan.body, &plan.steps);
    // The ids only add bytes inside the region; re-parse to be sure the result still reads.
    todo_md::parse_region(&body, region.start..body.len())
        .map_err(|e| Error::internal(format!("assigning step ids broke the plan: {e}")))?;
    Ok(body)
}

#[allow(
    clippy::needless_pass_by_value,
    reason = "used as `map_err(render_error)`"
)]
fn render_error(err: serde_yaml::Error) -> Error {
    Error::internal(format!("could not render PLAN.md: {err}"))
}

#[cfg(test)]
mod tests {
    use super::{ApproveOutcome, Contract, Reapproved, approve, approve_draft, reapprove};
    use crate::tasks::{PLAN_FILE, Store};

    const PLAN: &str = "---\ntitle: Greeting\n---\n# Greeting\n\n## Summary\nGreet.\n\n## Steps\n- [ ] S1 Create greeting.txt\n  - files: greeting.txt\n- [ ] Document it\n";

    fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn a_draft_becomes_a_task_and_an_edit_is_approved_again_into_todo() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        super::super::draft::from_text(&store, "plan.md", PLAN, false, at("2026-11-30T14:29:55Z"))
            .unwrap();
        let contract = Contract {
            max_files_changed: Some(5),
            ..Contract::default()
        };
        let approved = approve_draft(&store, at("2026-11-30T14:30:12Z"), contract).unwrap();
        assert_eq!(approved.id, "20261130-143012-greeting");
        assert_eq!(approved.steps, 2);
        assert!(!store.draft_dir().exists(), "the draft is gone");
        let plan = std::fs::read_to_string(approved.dir.join(PLAN_FILE)).unwrap();
        assert!(plan.contains("max_files_changed: 5"), "{plan}");
        assert!(
            plan.contains("- [ ] S2 Document it"),
            "the new step got its id: {plan}"
        );

        let later = at("2026-11-30T15:00:00Z");
        assert_eq!(
            reapprove(&store, &approved.id, later, Contract::default()).unwrap(),
            Reapproved::Unchanged
        );
        std::fs::write(
            approved.dir.join(PLAN_FILE),
            plan.replace("S2 Document it", "S2 Document it in README.md"),
        )
        .unwrap();
        let Reapproved::Approved { step_diff, .. } =
            reapprove(&store, &approved.id, later, Contract::default()).unwrap()
        else {
            panic!("the edited plan is approved again");
        };
        assert_eq!(step_diff.trim_end(), "~ S2: title");
        let todo = std::fs::read_to_string(approved.dir.join("TODO.md")).unwrap();
        assert!(todo.contains("- [ ] S2 Document it in README.md"), "{todo}");
    }

    #[test]
    fn approve_takes_the_named_task_else_the_draft_else_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let now = at("2026-11-30T14:30:12Z");
        let err = approve(&store, None, now, Contract::default()).unwrap_err();
        assert_eq!(err.message, "there is no draft to approve");
        super::super::draft::from_text(&store, "plan.md", PLAN, false, now).unwrap();
        let ApproveOutcome::Draft(approved) =
            approve(&store, None, now, Contract::default()).unwrap()
        else {
            panic!("the draft is approved");
        };
        assert!(approved.dir.join(PLAN_FILE).exists());
        // No draft now, and the task's plan did not change: nothing to approve unnamed.
        let err = approve(&store, None, now, Contract::default()).unwrap_err();
        assert_eq!(err.message, "there is no draft to approve");
        assert_eq!(
            approve(&store, Some(&approved.id), now, Contract::default()).unwrap(),
            ApproveOutcome::Task {
                id: approved.id.clone(),
                reapproved: Reapproved::Unchanged
            }
        );
    }
}

/// Re-approval on real files: whatever a person (or a re-plan) does to PLAN.md's steps, round
/// after round, every step the edits did not touch keeps its marker, its runner-owned lines
/// and its state.yaml record.
#[cfg(test)]
mod reapproval_properties {
    use proptest::prelude::*;

    use super::{Contract, approve_draft, reapprove};
    use crate::plan::{StepId, StepStatus};
    use crate::tasks::state::{Evidence, State};
    use crate::tasks::{PLAN_FILE, STATE_FILE, Store, TODO_FILE, todo_md};

    const STEPS: u32 = 4;

    /// One edit of PLAN.md's steps, naming a step by its position among the steps left.
    #[derive(Debug, Clone)]
    enum Edit {
        Rename(usize),
        /// A changed `files` line.
        Modify(usize),
        Insert(usize),
        Remove(usize),
    }

    fn arb_edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (0usize..8).prop_map(Edit::Rename),
            (0usize..8).prop_map(Edit::Modify),
            (0usize..8).prop_map(Edit::Insert),
            (0usize..8).prop_map(Edit::Remove),
        ]
    }

    /// A step of PLAN.md as the test keeps it: id, title, files.
    #[derive(Debug, Clone)]
    struct PlanStep {
        id: u32,
        title: String,
        files: String,
    }

    fn steps_text(steps: &[PlanStep]) -> String {
        let mut out = String::new();
        for s in steps {
            out.push_str(&format!(
                "- [ ] S{} {}\n  - files: {}\n",
                s.id, s.title, s.files
            ));
        }
        out
    }

    fn at(minute: u32) -> chrono::DateTime<chrono::Utc> {
        format!("2026-11-30T15:{minute:02}:00Z").parse().unwrap()
    }

    fn read(path: &std::path::Path) -> String {
        crate::fsx::read_optional(path).unwrap().unwrap()
    }

    /// The step the executor re-planned around is blocked until the approval; approved, it
    /// runs again even when the re-plan only added a step before it (its own lines did not
    /// change), and the re-plan no longer waits.
    #[test]
    fn approving_a_local_replan_reopens_its_step() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let steps: Vec<PlanStep> = (1..=2)
            .map(|n| PlanStep {
                id: n,
                title: format!("Step {n}"),
                files: format!("f{n}.txt"),
            })
            .collect();
        let head = "---\ntitle: T\n---\n# T\n\n## Summary\n\nS.\n\n## Steps\n\n";
        let text = format!("{head}{}", steps_text(&steps));
        crate::planning::draft::from_text(&store, "plan.md", &text, false, at(0)).unwrap();
        let task = approve_draft(&store, at(1), Contract::default()).unwrap();
        let todo_path = task.dir.join(TODO_FILE);
        let todo = read(&todo_path).replace(
            "- [ ] S2 Step 2\n",
            "- [!] S2 Step 2\n  - blocked: re-planned: needs a config\n",
        );
        std::fs::write(&todo_path, todo).unwrap();
        let state_path = task.dir.join(STATE_FILE);
        let mut state: State = serde_yaml::from_str(&read(&state_path)).unwrap();
        state.pending_replan = Some(crate::tasks::state::PendingReplan {
            step: StepId::top(2),
            reason: "needs a config".into(),
            at: at(2),
        });
        std::fs::write(&state_path, serde_yaml::to_string(&state).unwrap()).unwrap();
        let plan_path = task.dir.join(PLAN_FILE);
        let plan = read(&plan_path).replace(
            "- [ ] S2 Step 2",
            "- [ ] S3 Add the config\n  - files: c.txt\n- [ ] S2 Step 2",
        );
        std::fs::write(&plan_path, plan).unwrap();

        reapprove(&store, &task.id, at(3), Contract::default()).unwrap();
        let todo = read(&todo_path);
        assert!(
            todo.contains("- [ ] S1 Step 1\n  - files: f1.txt\n- [ ] S3 Add the config\n  - files: c.txt\n- [ ] S2 Step 2\n  - files: f2.txt\n"),
            "{todo}"
        );
        let mut state: State = serde_yaml::from_str(&read(&state_path)).unwrap();
        assert_eq!(state.pending_replan, None);
        assert_eq!(
            state.steps[&StepId::top(2)].status,
            Some(StepStatus::Pending)
        );

        // A re-plan record left behind (the person refused it and answered the step) does not
        // lift a block of another kind.
        state.pending_replan = Some(crate::tasks::state::PendingReplan {
            step: StepId::top(2),
            reason: "needs a config".into(),
            at: at(4),
        });
        std::fs::write(&state_path, serde_yaml::to_string(&state).unwrap()).unwrap();
        let todo = read(&todo_path).replace(
            "- [ ] S2 Step 2\n",
            "- [!] S2 Step 2\n  - blocked: which password?\n",
        );
        std::fs::write(&todo_path, todo).unwrap();
        let plan = read(&plan_path).replace("S3 Add the config", "S3 Add the config file");
        std::fs::write(&plan_path, plan).unwrap();
        reapprove(&store, &task.id, at(5), Contract::default()).unwrap();
        let todo = read(&todo_path);
        assert!(
            todo.contains("- [!] S2 Step 2\n  - blocked: which password?\n"),
            "{todo}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn unchanged_steps_keep_their_marker_and_evidence(
            markers in prop::collection::vec(prop::sample::select(vec![' ', 'x', '-', '!']), STEPS as usize),
            rounds in prop::collection::vec(prop::collection::vec(arb_edit(), 1..4), 1..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::at(dir.path());
            let mut steps: Vec<PlanStep> = (1..=STEPS)
                .map(|n| PlanStep { id: n, title: format!("Step {n}"), files: format!("f{n}.txt") })
                .collect();
            let head = "---\ntitle: T\n---\n# T\n\n## Summary\n\nS.\n\n## Steps\n\n";
            crate::planning::draft::from_text(&store, "plan.md", &format!("{head}{}", steps_text(&steps)), false, at(0)).unwrap();
            let task = approve_draft(&store, at(1), Contract::default()).unwrap();

            // Progress as a run leaves it: markers, runner-owned lines, records with evidence.
            let todo_path = task.dir.join(TODO_FILE);
            let mut todo = read(&todo_path);
            let state_path = task.dir.join(STATE_FILE);
            let mut state: State = serde_yaml::from_str(&read(&state_path)).unwrap();
            for (n, marker) in (1..=STEPS).zip(&markers) {
                let line = format!("- [ ] S{n} Step {n}\n");
                let mut with = format!("- [{marker}] S{n} Step {n}\n  - evidence: run {n}\n");
                if *marker == '!' {
                    with.push_str(&format!("  - blocked: reason {n}\n"));
                }
                todo = todo.replace(&line, &with);
                let record = state.steps.entry(StepId::top(n)).or_default();
                record.status = Some(StepStatus::from_marker(*marker).unwrap());
                record.changed_at = Some(at(2));
                record.evidence = vec![Evidence {
                    command: format!("check {n}"),
                    exit_code: 0,
                    duration_ms: 1,
                    output_hash: "h".into(),
                    output_tail: String::new(),
                }];
            }
            std::fs::write(&todo_path, &todo).unwrap();
            std::fs::write(&state_path, serde_yaml::to_string(&state).unwrap()).unwrap();
            let before = todo_md::parse(&todo).unwrap();
            let records = state.steps.clone();

            let mut touched = std::collections::BTreeSet::new();
            let mut fresh = 100;
            for (round, edits) in rounds.iter().enumerate() {
                for edit in edits {
                    let len = steps.len();
                    match *edit {
                        Edit::Rename(i) if len > 0 => {
                            let step = &mut steps[i % len];
                            step.title = format!("{} renamed", step.title);
                            touched.insert(step.id);
                        }
                        Edit::Modify(i) if len > 0 => {
                            let step = &mut steps[i % len];
                            step.files = format!("{}, more.txt", step.files);
                            touched.insert(step.id);
                        }
                        Edit::Insert(i) => {
                            fresh += 1;
                            let step = PlanStep { id: fresh, title: format!("Added {fresh}"), files: "new.txt".into() };
                            steps.insert(i % (len + 1), step);
                        }
                        Edit::Remove(i) if len > 1 => {
                            touched.insert(steps.remove(i % len).id);
                        }
                        _ => {}
                    }
                }
                let plan_path = task.dir.join(PLAN_FILE);
                let plan = read(&plan_path);
                let cut = plan.find("## Steps\n\n").unwrap() + "## Steps\n\n".len();
                std::fs::write(&plan_path, format!("{}{}", &plan[..cut], steps_text(&steps))).unwrap();
                let minute = u32::try_from(round).unwrap() + 3;
                reapprove(&store, &task.id, at(minute), Contract::default()).unwrap();

                let todo = read(&todo_path);
                let after = todo_md::parse(&todo).unwrap();
                let state: State = serde_yaml::from_str(&read(&state_path)).unwrap();
                for old in &before.steps {
                    let id = old.id.unwrap();
                    let now = after.find(id);
                    let in_plan = steps.iter().any(|s| s.id == id.major);
                    prop_assert_eq!(now.is_some(), in_plan, "{}: {}", id, todo);
                    if touched.contains(&id.major) {
                        continue;
                    }
                    let now = now.unwrap();
                    prop_assert_eq!(now.status, old.status, "{}: {}", id, todo);
                    prop_assert_eq!(&now.evidence, &old.evidence);
                    prop_assert_eq!(&now.blocked, &old.blocked);
                    prop_assert_eq!(&state.steps[&id], &records[&id]);
                }
                for step in &steps {
                    prop_assert!(after.find(StepId::top(step.id)).is_some(), "S{} in {}", step.id, todo);
                }
            }
        }
    }
}
