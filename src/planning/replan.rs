//! Re-planning an approved task (DESIGN §3, "Blocked is not the end"): the person asks for a
//! change (`tick plan --revise "feedback" TASK`), the planner works in plan mode from the
//! task as it stands, and its plan becomes the task's new PLAN.md, a revision waiting for
//! approval. Nothing runs until `tick approve TASK` merges it into TODO.md by step id.
//!
//! What this module decides, without I/O: the planner's first message ([`seed`]: the plan,
//! every step's status, evidence, block and answer), which step of the new plan is which step
//! of the old one ([`matched_ids`]: same title, same id, so an unchanged step keeps its
//! marker and evidence), and the new plan's text with those ids ([`with_ids`]). The version
//! the task was approved with is kept as `history/PLAN.v<N>.md` ([`history_path`]) so
//! `tick show --version N` can print any version.
//!
//! The executor's *local* re-plan (`propose_replan`, build mode) lands here too: [`check_local`]
//! decides whether a proposal touches only the step being executed and the place right before
//! it (every refusal is a line the model reads), [`local_plan_text`] rewrites that one step in
//! PLAN.md's text, byte for byte elsewhere, and [`write_revision`] writes the result exactly
//! as a global re-plan is written: a revision waiting for `tick approve`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{StepId, StepStatus};
use crate::tasks::plan_md::{self, PlanDoc};
use crate::tasks::render::{self, Details};
use crate::tasks::todo_md::Checklist;
use crate::tasks::{PLAN_FILE, Store, Task};
use crate::tools::{PlanStep, ReplanProposal};

/// The folder of a task's earlier approved plans.
pub const HISTORY_DIR: &str = "history";

/// `history/PLAN.v<version>.md` of the task in `task_dir`.
pub fn history_path(task_dir: &Path, version: usize) -> PathBuf {
    task_dir
        .join(HISTORY_DIR)
        .join(format!("PLAN.v{version}.md"))
}

/// How many earlier versions the task in `task_dir` keeps: the current one is this plus one.
///
/// A re-plan keeps the approved version first and writes the new PLAN.md second: a kill in
/// between leaves a last copy that reads like PLAN.md itself (its `status:` aside). That copy
/// is the current version, not an earlier one, and is not counted: the next revision writes
/// it again in its place.
pub fn versions_kept(task_dir: &Path) -> usize {
    let mut kept = 0;
    while history_path(task_dir, kept + 1).is_file() {
        kept += 1;
    }
    if kept > 0 && same_plan(&history_path(task_dir, kept), &task_dir.join(PLAN_FILE)) {
        kept -= 1;
    }
    kept
}

/// Whether the PLAN.md texts at `a` and `b` are the same but for the front matter's `status:`
/// (which tick keeps up to date itself). Unreadable is not the same.
fn same_plan(a: &Path, b: &Path) -> bool {
    let normal = |path: &Path| {
        fsx::read_optional(path).ok().flatten().map(|text| {
            plan_md::set_status_line(&text, crate::plan::Phase::Approved).unwrap_or(text)
        })
    };
    matches!((normal(a), normal(b)), (Some(a), Some(b)) if a == b)
}

/// The planner's first message: the goal, the person's feedback, and the task as it stands.
pub fn seed(task: &Task, feedback: &str) -> String {
    let goal = task.plan.front.goal.clone().unwrap_or_else(|| task.title());
    let mut out = format!(
        "Goal: {goal}\n\nThis plan was approved and is being carried out. The person asks to \
         change it:\n\n{feedback}\n\nRevise the plan as they ask, exploring the repository as \
         needed, then call `submit_plan` with the whole revised plan. Keep every step that \
         needs no change exactly as it is, with the same title: a step that keeps its title \
         keeps its progress. Change, add or remove only what the request needs. Number \
         `depends` by the position of the steps in your submission (S1 is your first step).\n\n\
         ## Where each step stands\n"
    );
    for step in task.todo.all_steps() {
        let id = step
            .id
            .map_or_else(|| "(new)".to_owned(), |id| id.to_string());
        let status = match step.status {
            StepStatus::Pending => "pending",
            status => status.as_str(),
        };
        out.push_str(&format!("- {id} [{status}] {}\n", step.title));
        if let Some(reason) = &step.blocked {
            out.push_str(&format!("  - blocked: {reason}\n"));
        }
        if let Some(answer) = &step.answer {
            out.push_str(&format!("  - the person answered: {answer}\n"));
        }
        if let Some(record) = step.id.and_then(|id| task.state.steps.get(&id)) {
            for evidence in &record.evidence {
                out.push_str(&format!(
                    "  - verified: `{}` exit {}\n",
                    evidence.command, evidence.exit_code
                ));
            }
        }
    }
    out.push_str(&format!(
        "\n## The approved plan\n\n{}",
        task.plan_src.as_str()
    ));
    out
}

/// The id of each step of a new plan whose top-level titles are `titles` (and whose `files`
/// are `files`, by position; missing entries count as none), in order:
///
/// 1. the id of the old top-level step with the same title (compared ignoring case and
///    spacing, each old step used once);
/// 2. else the id of the old step at the same position, when that one is unmatched too and
///    is recognisably the same step rewritten: the same `files`, or a title that mostly
///    reads the same ([`same_step_rewritten`]). A re-plan that rewords S3 keeps S3 (the
///    re-approval reopens it, its evidence kept as history) instead of removing S3 and
///    adding a new step;
/// 3. else a fresh id after every id the old plan or TODO.md used.
pub fn matched_ids(old: &Checklist, titles: &[String], files: &[Vec<String>]) -> Vec<StepId> {
    let key = |title: &str| {
        title
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let mut unused: Vec<(String, StepId)> = old
        .steps
        .iter()
        .filter_map(|step| Some((key(&step.title), step.id?)))
        .collect();
    let mut next = old
        .all_steps()
        .filter_map(|step| step.id)
        .map(|id| id.major)
        .max()
        .unwrap_or(0);
    let mut ids: Vec<Option<StepId>> = titles
        .iter()
        .map(|title| {
            let wanted = key(title);
            let at = unused.iter().position(|(k, _)| *k == wanted)?;
            Some(unused.remove(at).1)
        })
        .collect();
    let none = Vec::new();
    for (index, slot) in ids.iter_mut().enumerate() {
        if slot.is_some() {
            continue;
        }
        let Some(old_step) = old.steps.get(index) else {
            continue;
        };
        let Some(old_id) = old_step.id else { continue };
        let Some(at) = unused.iter().position(|(_, id)| *id == old_id) else {
            continue;
        };
        let new_files = files.get(index).unwrap_or(&none);
        if same_step_rewritten(&old_step.title, &old_step.files, &titles[index], new_files) {
            *slot = Some(unused.remove(at).1);
        }
    }
    ids.into_iter()
        .map(|id| {
            id.unwrap_or_else(|| {
                next += 1;
                StepId::top(next)
            })
        })
        .collect()
}

/// Whether a step at the same position of a re-plan is the old step rewritten rather than a
/// different step: it names the same files (and some), or its title keeps at least half of
/// the old title's words.
fn same_step_rewritten(
    old_title: &str,
    old_files: &[String],
    title: &str,
    files: &[String],
) -> bool {
    let set = |files: &[String]| -> BTreeSet<String> {
        files
            .iter()
            .map(|f| f.trim().trim_start_matches("./").to_owned())
            .filter(|f| !f.is_empty())
            .collect()
    };
    let (old_set, new_set) = (set(old_files), set(files));
    if !old_set.is_empty() && old_set == new_set {
        return true;
    }
    let words = |title: &str| -> BTreeSet<String> {
        title
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect()
    };
    let (old_words, new_words) = (words(old_title), words(title));
    if old_words.is_empty() {
        return false;
    }
    let kept = old_words.intersection(&new_words).count();
    kept * 2 >= old_words.len() && kept > 0
}

/// `body` (a plan body whose steps were rendered as `S1`..`Sn` in order) with the step ids
/// `ids` instead, in the step lines and in `depends`. The result is parsed back and must hold
/// exactly those ids in that order, or nothing is written.
pub fn with_ids(body: &str, ids: &[StepId]) -> Result<String> {
    let positional = |token: &str| -> Option<StepId> {
        let n: usize = token.strip_prefix('S')?.parse().ok()?;
        ids.get(n.checked_sub(1)?).copied()
    };
    let mut out = String::with_capacity(body.len());
    let mut seen = 0;
    for line in body.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        if let Some(after) = rest.strip_prefix("- [ ] ")
            && let Some(token) = after.split_whitespace().next()
            && seen < ids.len()
            && token == format!("S{}", seen + 1)
        {
            out.push_str(&line[..indent + 6]);
            out.push_str(&ids[seen].to_string());
            out.push_str(&after[token.len()..]);
            seen += 1;
        } else if let Some(list) = rest.strip_prefix("- depends:") {
            let mapped: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| positional(t).map_or_else(|| t.to_owned(), |id| id.to_string()))
                .collect();
            let eol = if line.ends_with("\r\n") {
                "\r\n"
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            };
            out.push_str(&format!(
                "{}- depends: {}{eol}",
                &line[..indent],
                mapped.join(", ")
            ));
        } else {
            out.push_str(line);
        }
    }
    let doc = crate::tasks::plan_md::parse(&out)
        .map_err(|e| Error::internal(format!("the re-planned PLAN.md does not parse: {e}")))?;
    let got: Vec<StepId> = doc.steps.steps.iter().filter_map(|s| s.id).collect();
    if got != ids {
        return Err(Error::internal(
            "the re-planned steps could not keep their ids (is `.tasks/templates/PLAN.md.j2` \
             overridden?); nothing was written",
        ));
    }
    Ok(out)
}

/// The ids of `old`'s top-level steps that `new` no longer has.
pub fn removed(old: &Checklist, new: &[StepId]) -> Vec<StepId> {
    let kept: BTreeSet<StepId> = new.iter().copied().collect();
    old.steps
        .iter()
        .filter_map(|s| s.id)
        .filter(|id| !kept.contains(id))
        .collect()
}

/// Writes `text` (parsed: `new`) as the PLAN.md of the approved task `current`, a revision
/// waiting for approval, as every re-plan is written: the approved version is kept first
/// ([`keep_approved`]), then PLAN.md is replaced. Returns the new version's number and the
/// step-level diff from the plan as it was.
pub fn write_revision(
    store: &Store,
    current: &Task,
    text: &str,
    new: &PlanDoc,
    now: DateTime<Utc>,
) -> Result<(usize, Option<String>)> {
    let version = keep_approved(current)?;
    let task_ref = store.task_ref(&current.id);
    // So `tick run` and `status` can tell tick's re-plan from a person's edit.
    let replanned = crate::tasks::state::Replanned {
        plan_hash: plan_md::approval_hash(new),
        at: now,
    };
    store.transact(
        &task_ref,
        now,
        "a global re-plan waits for approval",
        |tx| {
            tx.set_plan_as_is(text.to_owned());
            tx.record(|state| state.replanned = Some(replanned.clone()));
            Ok(())
        },
    )?;
    Ok((version, revision_diff(current, new)?))
}

/// Keeps the approved version of `current`'s plan as `history/PLAN.v<N>.md` before a revision
/// replaces PLAN.md (a revision not yet approved is replaced, not kept), and returns the number
/// the revision will have. Written before PLAN.md changes, so no instant loses the approved
/// version; a kill before the revision is written leaves a copy of PLAN.md as it stands,
/// which [`versions_kept`] does not count and the next revision writes again.
pub fn keep_approved(current: &Task) -> Result<usize> {
    let kept = versions_kept(&current.dir);
    if current.plan_changed() {
        return Ok(kept + 1);
    }
    let path = history_path(&current.dir, kept + 1);
    fsx::create_dir_all(&current.dir.join(HISTORY_DIR))?;
    crate::tasks::tx::crash::point()?;
    fsx::write_atomic(&path, current.plan_src.as_bytes())?;
    Ok(kept + 2)
}

/// The step-level diff from `current`'s plan to the revision `new`.
pub fn revision_diff(current: &Task, new: &PlanDoc) -> Result<Option<String>> {
    // A loaded task's plan is read without its steps: the diff needs them.
    let old = plan_md::parse(&current.plan_src)
        .map_err(|e| Error::internal(format!("the approved PLAN.md does not parse: {e}")))?;
    Ok(super::draft::step_diff(&old, new))
}

/// A local re-plan that fits the task: the step it rewrites, why, and the steps that take
/// its place in order (the new prerequisites, then the step's new content), each with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReplan {
    pub step: StepId,
    pub reason: String,
    pub steps: Vec<(StepId, PlanStep)>,
}

impl LocalReplan {
    /// The ids of the steps the re-plan adds (every one but the rewritten step).
    pub fn added(&self) -> Vec<StepId> {
        self.steps
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| *id != self.step)
            .collect()
    }
}

/// Whether `proposal` fits the task whose approved steps are `plan` (PLAN.md's, parsed with
/// its steps: a loaded task's plan is not) and whose
/// status is `todo` (TODO.md's), while step `current` is being executed: it must name
/// `current`, a top-level step of the plan that is not done and has no sub-steps; rewrite it
/// into at least one step; add at most `max_new` steps in all; depend only on steps before
/// it; repeat no other step; and change something. Every problem is named, for the model.
///
/// The first replacement step keeps `current`'s id (so its record stays with it), the others
/// get fresh ids after every id the plan and TODO.md use, in plan order.
pub fn check_local(
    plan: &Checklist,
    todo: &Checklist,
    current: StepId,
    proposal: &ReplanProposal,
    max_new: usize,
) -> std::result::Result<LocalReplan, Vec<String>> {
    let position = target(plan, current, proposal)?;
    let mut problems = shape_problems(&plan.steps[position], todo, proposal, max_new);
    problems.extend(new_step_problems(plan, todo, position, current, proposal));
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut next = plan
        .all_steps()
        .chain(todo.all_steps())
        .filter_map(|s| s.id)
        .map(|id| id.major)
        .max()
        .unwrap_or(0);
    let mut fresh = || {
        next += 1;
        StepId::top(next)
    };
    let mut steps: Vec<(StepId, PlanStep)> = proposal
        .insert_before
        .iter()
        .map(|s| (fresh(), s.clone()))
        .collect();
    for (index, new) in proposal.replace.iter().enumerate() {
        let id = if index == 0 { current } else { fresh() };
        steps.push((id, new.clone()));
    }
    Ok(LocalReplan {
        step: current,
        reason: proposal.reason.clone(),
        steps,
    })
}

/// The position in `plan` of the step the proposal names, which must be `current`, a
/// top-level step of the plan.
fn target(
    plan: &Checklist,
    current: StepId,
    proposal: &ReplanProposal,
) -> std::result::Result<usize, Vec<String>> {
    let named = proposal.step.parse::<StepId>().map_err(|_| {
        vec![format!(
            "`{}` is not a step id; name the step you are working on, `{current}`",
            proposal.step
        )]
    })?;
    if named != current {
        return Err(vec![format!(
            "the proposal changes `{named}`, but the step being executed is `{current}`: a \
             local re-plan may rewrite only `{current}` and add steps right before it; every \
             other step stays as approved"
        )]);
    }
    plan.steps
        .iter()
        .position(|s| s.id == Some(current))
        .ok_or_else(|| {
            let why = if current.is_sub() {
                "is a sub-step; a local re-plan rewrites a top-level step only"
            } else {
                "is not in the approved PLAN.md"
            };
            vec![format!(
                "`{current}` {why}; report it blocked with `update_step` instead"
            )]
        })
}

/// What is wrong with rewriting `step` as proposed, as a whole: a step with sub-steps, a done
/// step, no new content, too many new steps, no change at all.
fn shape_problems(
    step: &crate::tasks::todo_md::Step,
    todo: &Checklist,
    proposal: &ReplanProposal,
    max_new: usize,
) -> Vec<String> {
    let current = step.id.unwrap_or(StepId::top(0));
    let mut problems = Vec::new();
    if !step.substeps.is_empty() {
        problems.push(format!(
            "`{current}` has sub-steps; a local re-plan rewrites a step without sub-steps only, \
             so report it blocked with `update_step` instead"
        ));
    }
    if todo
        .find(current)
        .is_some_and(|s| s.status == StepStatus::Done)
    {
        problems.push(format!(
            "`{current}` is done; a re-plan never changes a done step"
        ));
    }
    if proposal.replace.is_empty() {
        problems.push(format!(
            "`replace` is empty; give `{current}`'s new content: one step, or a split into a few"
        ));
    }
    let added = proposal.insert_before.len() + proposal.replace.len().saturating_sub(1);
    if added > max_new {
        problems.push(format!(
            "the proposal adds {added} new steps, over the limit of {max_new} \
             (`limits.replan_max_new_steps`); propose the smallest change that unblocks the \
             step, or report it blocked"
        ));
    }
    if proposal.insert_before.is_empty()
        && proposal.replace.len() == 1
        && same_step(step, &proposal.replace[0])
    {
        problems.push(format!(
            "the proposal changes nothing: `replace` is `{current}` as it is, and nothing is \
             inserted"
        ));
    }
    problems
}

/// What is wrong with each proposed step against the rest of the plan: a `depends` on a step
/// that is not before the re-planned one (at `position`), a title that repeats another step.
fn new_step_problems(
    plan: &Checklist,
    todo: &Checklist,
    position: usize,
    current: StepId,
    proposal: &ReplanProposal,
) -> Vec<String> {
    let before: BTreeSet<StepId> = plan.steps[..position]
        .iter()
        .flat_map(|s| std::iter::once(s).chain(&s.substeps))
        .filter_map(|s| s.id)
        .collect();
    let key = |title: &str| render::one_line(title).to_lowercase();
    let labelled = proposal
        .insert_before
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("`insert_before[{i}]`"), s))
        .chain(
            proposal
                .replace
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("`replace[{i}]`"), s)),
        );
    let mut problems = Vec::new();
    for (label, new) in labelled {
        for dependency in &new.depends {
            problems.extend(match dependency.parse::<StepId>() {
                Ok(id) if before.contains(&id) => None,
                Ok(id) if id == current => Some(format!(
                    "{label} depends on `{current}`, the step being re-planned; the new steps \
                     come before it, so drop the dependency"
                )),
                Ok(id) if plan.find(id).is_some() => Some(format!(
                    "{label} depends on `{id}`, which comes after `{current}`; a step may \
                     depend only on steps before it"
                )),
                _ => Some(format!(
                    "{label} `depends`: `{dependency}` is not a step of the plan; name steps \
                     before `{current}` by their ids"
                )),
            });
        }
        let repeated = plan
            .all_steps()
            .filter(|s| s.id.is_some() && s.id != Some(current))
            .find(|s| key(&s.title) == key(&new.title));
        if let Some((other, id)) = repeated.and_then(|s| Some((s, s.id?))) {
            let status = match todo.find(id).map_or(StepStatus::Pending, |s| s.status) {
                StepStatus::Pending => "pending",
                status => status.as_str(),
            };
            problems.push(format!(
                "{label} repeats `{id}` (`{}`, {status}); a re-plan never edits another step: \
                 depend on it instead of repeating it",
                other.title
            ));
        }
    }
    problems
}

/// Whether the proposed `new` step says exactly what `old` says.
fn same_step(old: &crate::tasks::todo_md::Step, new: &PlanStep) -> bool {
    let depends: Vec<String> = old.depends.iter().map(ToString::to_string).collect();
    render::one_line(&old.title) == render::one_line(&new.title)
        && old.files == new.files
        && old.verify == new.verify
        && old.done_when == new.done_when
        && old.risk == new.risk
        && depends == new.depends
        && old.tools == new.tools
}

/// The PLAN.md text of `plan` (the task's approved plan, parsed with its steps) with `replan` applied: the
/// re-planned step's lines replaced by the new steps' lines, every other byte as it was. The
/// result is parsed back and must hold the old steps with the new ones in place of the
/// re-planned one, or nothing is written.
pub fn local_plan_text(plan: &PlanDoc, replan: &LocalReplan) -> Result<String> {
    let step = plan
        .steps
        .steps
        .iter()
        .find(|s| s.id == Some(replan.step))
        .ok_or_else(|| Error::internal(format!("`{}` is not in PLAN.md", replan.step)))?;
    let prefix = step.line_prefix();
    let indent: String = prefix
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let eol = step.eol();
    let mut lines = String::new();
    for (id, new) in &replan.steps {
        lines.push_str(&format!(
            "{prefix}[ ] {id} {}{eol}",
            render::one_line(&new.title)
        ));
        let details = Details {
            files: &new.files,
            verify: &new.verify,
            done_when: new.done_when.as_deref(),
            risk: new.risk.map(crate::plan::Risk::as_str),
            depends: new.depends.clone(),
            tools: &new.tools,
            ..Details::default()
        };
        for line in details.lines() {
            lines.push_str(&format!("{indent}- {line}{eol}"));
        }
    }
    let range = step.item_lines();
    let mut body = plan.body.to_string();
    if range.end == body.len() && !body.ends_with('\n') {
        // The step was the file's last line without a final newline: keep it so.
        lines.truncate(lines.len() - eol.len());
    }
    body.replace_range(range, &lines);
    let text = plan_md::render(&plan.front, &body)
        .map_err(|err| Error::internal(format!("could not render the plan: {err}")))?;
    let parsed = plan_md::parse(&text)
        .map_err(|e| Error::internal(format!("the re-planned PLAN.md does not parse: {e}")))?;
    let mut want: Vec<StepId> = Vec::new();
    for old in plan.steps.all_steps().filter_map(|s| s.id) {
        if old == replan.step {
            want.extend(replan.steps.iter().map(|(id, _)| *id));
        } else {
            want.push(old);
        }
    }
    let got: Vec<StepId> = parsed.steps.all_steps().filter_map(|s| s.id).collect();
    if got != want {
        return Err(Error::internal(
            "the re-planned steps did not come out as proposed; nothing was written",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tasks::todo_md;

    fn ids(list: &[StepId]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn unchanged_titles_keep_their_ids_and_new_steps_get_fresh_ones() {
        let old = todo_md::parse(
            "- [x] S1 Parse the flag\n- [!] S2 Print the  column\n  - [ ] S2.1 sub\n- [ ] S4 Docs\n",
        )
        .unwrap();
        let titles: Vec<String> = [
            "A new first step",
            "print the column",
            "Parse the flag",
            "Docs again",
        ]
        .map(str::to_owned)
        .to_vec();
        let got = matched_ids(&old, &titles, &[]);
        assert_eq!(ids(&got), ["S5", "S2", "S1", "S6"]);
        assert_eq!(ids(&removed(&old, &got)), ["S4"]);
    }

    /// Issue 31: a re-plan that rewords a step keeps its id when it is the same step (same
    /// position, and the same files or most of the title's words); a different step in that
    /// place, or a rewording at another position, gets a fresh id.
    #[test]
    fn a_rewritten_step_at_its_place_keeps_its_id() {
        let old = todo_md::parse(
            "- [x] S1 Parse the flag\n  - files: src/cli.rs\n- [x] S2 Print the column\n  - files: src/out.rs\n- [ ] S3 Write the docs\n  - files: README.md\n",
        )
        .unwrap();
        let titles: Vec<String> = [
            "Parse the flag",
            "Print the count column, right-aligned",
            "Something else entirely",
            "A new last step",
        ]
        .map(str::to_owned)
        .to_vec();
        let files = vec![
            vec!["src/cli.rs".to_owned()],
            vec!["src/other.rs".to_owned()],
            vec!["README.md".to_owned()],
            vec![],
        ];
        let got = matched_ids(&old, &titles, &files);
        // S2 by its words, S3 by its files; the new step is new.
        assert_eq!(ids(&got), ["S1", "S2", "S3", "S4"]);
        assert!(removed(&old, &got).is_empty());
        // Without the files, "Something else entirely" is not S3 any more.
        let got = matched_ids(&old, &titles, &[]);
        assert_eq!(ids(&got), ["S1", "S2", "S4", "S5"]);
        assert_eq!(ids(&removed(&old, &got)), ["S3"]);
    }

    #[test]
    fn a_title_twice_matches_once() {
        let old = todo_md::parse("- [x] S1 Same\n- [ ] S2 Same\n").unwrap();
        let got = matched_ids(
            &old,
            &["Same".to_owned(), "Same".to_owned(), "Same".to_owned()],
            &[],
        );
        assert_eq!(ids(&got), ["S1", "S2", "S3"]);
    }

    #[test]
    fn ids_and_depends_are_rewritten_and_nothing_else() {
        let body = "# T\n\n## Steps\n\n- [ ] S1 One\n  - files: a\n- [ ] S2 Two S1\n  - depends: S1\n- [ ] S3 Three\n  - depends: S1, S2\n\n## Risks\n\n- [ ] S1 not a step\n";
        let got = with_ids(body, &[StepId::top(4), StepId::top(1), StepId::top(7)]).unwrap();
        assert_eq!(
            got,
            "# T\n\n## Steps\n\n- [ ] S4 One\n  - files: a\n- [ ] S1 Two S1\n  - depends: S4\n- [ ] S7 Three\n  - depends: S4, S1\n\n## Risks\n\n- [ ] S1 not a step\n"
        );
    }

    const LOCAL: &str = "---\ntitle: Greet\n---\n# Greet\n\n## Steps\n\n- [ ] S1 Write the greeting\n  - files: hello.txt\n- [ ] S2 Write the farewell\n  - files: bye.txt\n  - verify: `grep -q bye bye.txt`\n  - depends: S1\n- [ ] S3 Write the docs\n  - [ ] S3.1 The README\n\n## Risks\n\nNone.\n";

    fn local_plan() -> PlanDoc {
        crate::tasks::plan_md::parse(LOCAL).unwrap()
    }

    /// TODO.md with S1 done and S2 in progress.
    fn local_todo() -> Checklist {
        todo_md::parse("- [x] S1 Write the greeting\n- [-] S2 Write the farewell\n- [ ] S3 Write the docs\n  - [ ] S3.1 The README\n").unwrap()
    }

    fn proposal(value: &serde_json::Value) -> ReplanProposal {
        ReplanProposal::from_arguments(value).unwrap()
    }

    fn refused(current: &str, value: &serde_json::Value) -> Vec<String> {
        let plan = local_plan();
        let mut todo = local_todo();
        if current == "S1" {
            todo = todo_md::parse("- [x] S1 Write the greeting\n").unwrap();
        }
        check_local(
            &plan.steps,
            &todo,
            current.parse().unwrap(),
            &proposal(value),
            2,
        )
        .unwrap_err()
    }

    #[test]
    fn a_local_replan_rewrites_the_step_and_adds_steps_before_it_with_fresh_ids() {
        let plan = local_plan();
        let replan = check_local(
            &plan.steps,
            &local_todo(),
            StepId::top(2),
            &proposal(&serde_json::json!({
                "step": "S2",
                "reason": "the farewell needs a config file",
                "insert_before": [{"title": "Add the config file", "files": ["greet.conf"], "depends": ["S1"]}],
                "replace": [
                    {"title": "Write the farewell", "files": ["bye.txt"], "verify": ["grep -q bye bye.txt"]},
                    {"title": "Check the farewell reads the config", "verify": ["grep -q conf bye.txt"]}
                ]
            })),
            3,
        )
        .unwrap();
        let ids: Vec<String> = replan.steps.iter().map(|(id, _)| id.to_string()).collect();
        assert_eq!(ids, ["S4", "S2", "S5"]);
        assert_eq!(ids_of(&replan.added()), ["S4", "S5"]);
        let text = local_plan_text(&plan, &replan).unwrap();
        insta::assert_snapshot!(text, @r"
        ---
        title: Greet
        ---
        # Greet

        ## Steps

        - [ ] S1 Write the greeting
          - files: hello.txt
        - [ ] S4 Add the config file
          - files: greet.conf
          - depends: S1
        - [ ] S2 Write the farewell
          - files: bye.txt
          - verify: `grep -q bye bye.txt`
        - [ ] S5 Check the farewell reads the config
          - verify: `grep -q conf bye.txt`
        - [ ] S3 Write the docs
          - [ ] S3.1 The README

        ## Risks

        None.
        ");
    }

    fn ids_of(list: &[StepId]) -> Vec<String> {
        ids(list)
    }

    #[test]
    fn a_proposal_for_another_step_is_refused() {
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S3", "reason": "r", "replace": [{"title": "x"}]})
            ),
            [
                "the proposal changes `S3`, but the step being executed is `S2`: a local re-plan may rewrite only `S2` and add steps right before it; every other step stays as approved"
            ]
        );
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "step 2", "reason": "r", "replace": [{"title": "x"}]})
            ),
            ["`step 2` is not a step id; name the step you are working on, `S2`"]
        );
    }

    #[test]
    fn a_sub_step_a_parent_and_a_step_outside_the_plan_are_refused() {
        assert_eq!(
            refused(
                "S3.1",
                &serde_json::json!({"step": "S3.1", "reason": "r", "replace": [{"title": "x"}]})
            ),
            [
                "`S3.1` is a sub-step; a local re-plan rewrites a top-level step only; report it blocked with `update_step` instead"
            ]
        );
        assert_eq!(
            refused(
                "S9",
                &serde_json::json!({"step": "S9", "reason": "r", "replace": [{"title": "x"}]})
            ),
            ["`S9` is not in the approved PLAN.md; report it blocked with `update_step` instead"]
        );
        assert_eq!(
            refused(
                "S3",
                &serde_json::json!({"step": "S3", "reason": "r", "replace": [{"title": "x"}]})
            ),
            [
                "`S3` has sub-steps; a local re-plan rewrites a step without sub-steps only, so report it blocked with `update_step` instead"
            ]
        );
    }

    #[test]
    fn a_done_step_is_never_changed() {
        assert_eq!(
            refused(
                "S1",
                &serde_json::json!({"step": "S1", "reason": "r", "replace": [{"title": "Greet again"}]})
            ),
            ["`S1` is done; a re-plan never changes a done step"]
        );
    }

    #[test]
    fn an_empty_rewrite_and_too_many_new_steps_are_refused() {
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S2", "reason": "r", "replace": []})
            ),
            ["`replace` is empty; give `S2`'s new content: one step, or a split into a few"]
        );
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S2", "reason": "r",
                "insert_before": [{"title": "a"}, {"title": "b"}],
                "replace": [{"title": "c"}, {"title": "d"}]})
            ),
            [
                "the proposal adds 3 new steps, over the limit of 2 (`limits.replan_max_new_steps`); propose the smallest change that unblocks the step, or report it blocked"
            ]
        );
    }

    #[test]
    fn dependencies_go_only_to_steps_before_the_step() {
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S2", "reason": "r",
                "insert_before": [{"title": "a", "depends": ["S2", "S3", "S9", "step one"]}],
                "replace": [{"title": "c", "depends": ["S1"]}]})
            ),
            [
                "`insert_before[0]` depends on `S2`, the step being re-planned; the new steps come before it, so drop the dependency",
                "`insert_before[0]` depends on `S3`, which comes after `S2`; a step may depend only on steps before it",
                "`insert_before[0]` `depends`: `S9` is not a step of the plan; name steps before `S2` by their ids",
                "`insert_before[0]` `depends`: `step one` is not a step of the plan; name steps before `S2` by their ids",
            ]
        );
    }

    #[test]
    fn another_step_is_never_repeated_and_a_proposal_must_change_something() {
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S2", "reason": "r",
                "insert_before": [{"title": "write the  greeting"}],
                "replace": [{"title": "c"}]})
            ),
            [
                "`insert_before[0]` repeats `S1` (`Write the greeting`, done); a re-plan never edits another step: depend on it instead of repeating it"
            ]
        );
        assert_eq!(
            refused(
                "S2",
                &serde_json::json!({"step": "S2", "reason": "r",
                "replace": [{"title": "Write the farewell", "files": ["bye.txt"],
                             "verify": ["grep -q bye bye.txt"], "depends": ["S1"]}]})
            ),
            ["the proposal changes nothing: `replace` is `S2` as it is, and nothing is inserted"]
        );
    }

    proptest! {
        /// Whatever the new titles, each old step is matched at most once, a new plan's ids
        /// are unique, and an old title that is still there keeps its id.
        #[test]
        fn matching_keeps_unchanged_steps_and_never_repeats_an_id(
            old_titles in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "e"]), 1..6),
            new_titles in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "x", "y"]), 1..8),
        ) {
            let mut src = String::new();
            for (i, t) in old_titles.iter().enumerate() {
                src.push_str(&format!("- [x] S{} {t}\n", i + 1));
            }
            let old = todo_md::parse(&src).unwrap();
            let titles: Vec<String> = new_titles.iter().map(|t| (*t).to_owned()).collect();
            let got = matched_ids(&old, &titles, &[]);
            let unique: BTreeSet<StepId> = got.iter().copied().collect();
            prop_assert_eq!(unique.len(), got.len());
            for (title, id) in titles.iter().zip(&got) {
                if let Some(old_step) = old.find(*id) {
                    prop_assert_eq!(&old_step.title, title);
                } else {
                    prop_assert!(id.major as usize > old_titles.len());
                }
            }
            // Every old title still wanted is kept by as many steps as both lists have.
            for title in ["a", "b", "c", "d"] {
                let before = old_titles.iter().filter(|t| **t == title).count();
                let after = new_titles.iter().filter(|t| **t == title).count();
                let kept = titles
                    .iter()
                    .zip(&got)
                    .filter(|(t, id)| *t == title && old.find(**id).is_some())
                    .count();
                prop_assert_eq!(kept, before.min(after));
            }
        }
    }

    #[test]
    fn a_global_replan_killed_at_any_write_keeps_the_approved_plan() {
        use crate::tasks::tx::crash;
        const PLAN: &str =
            "---\ntitle: T\nstatus: approved\n---\n# T\n\n## Steps\n\n- [ ] S1 One\n";
        const TODO: &str = "# TODO: T\n\n- [ ] S1 One\n";
        let revised = PLAN.replace("S1 One", "S1 One, done better");
        // The history copy, the commit's record, PLAN.md, state.yaml (tick's re-plan), the
        // record's removal.
        for writes in 0..=5 {
            let (_root, store, task_ref) = crate::tasks::test_task(PLAN, TODO);
            let current = store.load(&task_ref).unwrap();
            let new = plan_md::parse(&revised).unwrap();
            let now = "2026-11-30T14:30:12Z".parse().unwrap();
            crash::after(Some(writes));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                write_revision(&store, &current, &revised, &new, now)
            }))
            .unwrap_or_else(|_| Err(crate::error::Error::internal("killed")));
            crash::after(None);
            assert_eq!(result.is_ok(), writes == 5, "killed before write {writes}");
            drop(store.lock_task(&task_ref, "test").unwrap());
            let plan = std::fs::read_to_string(task_ref.dir.join(PLAN_FILE)).unwrap();
            let expected = if writes <= 1 { PLAN } else { revised.as_str() };
            assert_eq!(plan, expected, "killed before write {writes}");
            // Whenever the revision is on disk, the approved version is kept beside it.
            if plan != PLAN {
                let kept = std::fs::read_to_string(history_path(&task_ref.dir, 1)).unwrap();
                assert_eq!(kept, PLAN);
            }
            // state.yaml says tick re-planned it exactly when the revision is on disk.
            let replanned = store.load(&task_ref).unwrap().state.replanned;
            assert_eq!(
                replanned.is_some(),
                plan != PLAN,
                "killed before write {writes}"
            );
            assert!(!crate::tasks::tx::needs_cleanup(&task_ref.dir));
        }
    }
}
