//! PLAN.md is the approved contract, TODO.md its status: applying a re-approved plan's step
//! changes to TODO.md by step id. Pure: no I/O.
//!
//! For each step id, what changed between the steps as last approved (`old`) and as approved
//! now (`new`) is written into TODO.md: a changed title, `files`, `verify`, `done when`,
//! `risk` or `depends` replaces that line (or is inserted, or removed when it is gone), a new
//! step is inserted next to its neighbours in the new plan, a step gone from the plan is
//! removed. Everything else in TODO.md stays byte for byte: markers, the runner's `blocked:`,
//! `stale:` and `evidence:` lines, a person's notes, headings and prose, steps a person added
//! to TODO.md only, and what a person changed in TODO.md that the plan did not change. The
//! order of TODO.md's steps is the person's: a step the plan moved stays where it is.

use std::fmt;
use std::ops::Range;

use crate::plan::StepId;
use crate::tasks::render::{self, Details};
use crate::tasks::todo_md::{self, Checklist, PLANNED_KEYS, ParseError, Step};

/// What a merge changed, step by step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepDiff {
    pub added: Vec<StepId>,
    pub removed: Vec<StepId>,
    pub changed: Vec<StepChange>,
}

/// The planned parts of one step that changed: `title` and the detail keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepChange {
    pub id: StepId,
    pub fields: Vec<&'static str>,
}

impl StepDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl fmt::Display for StepDiff {
    /// One line per step: `+ S6`, `- S4`, `~ S2: verify, files`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for id in &self.added {
            writeln!(f, "+ {id} added")?;
        }
        for id in &self.removed {
            writeln!(f, "- {id} removed")?;
        }
        for change in &self.changed {
            writeln!(f, "~ {}: {}", change.id, change.fields.join(", "))?;
        }
        Ok(())
    }
}

/// A step a person added to TODO.md (not in the plan approved before) that PLAN.md now
/// gives a different step under the same id: taking PLAN.md's would replace theirs.
fn no_person_step_replaced(
    todo: &Checklist,
    old: &Checklist,
    new: &Checklist,
) -> Result<(), ParseError> {
    for step in new.all_steps() {
        let Some(id) = step.id else { continue };
        if old.find(id).is_none()
            && let Some(have) = todo.find(id)
            && have.title != step.title
        {
            return Err(ParseError {
                line: have.line,
                col: 1,
                message: format!(
                    "`{id}` in TODO.md is a step a person added (\"{}\"), and the edited PLAN.md \
                     has another `{id}` (\"{}\"): approving would replace the first",
                    render::one_line(&have.title),
                    render::one_line(&step.title)
                ),
                hint: format!(
                    "give PLAN.md's new step a free id, or copy TODO.md's `{id}` into PLAN.md"
                ),
            });
        }
    }
    Ok(())
}

/// `todo_src` with the step changes from `old` to `new` applied (see the module comment), and
/// what changed. Fails when the result would not parse (a `depends` on a removed step).
pub fn apply_plan(
    todo_src: &str,
    old: &Checklist,
    new: &Checklist,
) -> Result<(String, StepDiff), ParseError> {
    let todo = todo_md::parse(todo_src)?;
    let eol = todo.all_steps().next().map_or("\n", Step::eol);
    let mut diff = StepDiff::default();
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let in_new = |id: StepId| new.find(id).is_some();

    no_person_step_replaced(&todo, old, new)?;

    // Changed steps first: their detail insertions go before a step added after them.
    for step in new.all_steps() {
        let Some(id) = step.id else { continue };
        let (Some(have), Some(base)) = (todo.find(id), old.find(id).or_else(|| todo.find(id)))
        else {
            continue;
        };
        let mut fields = Vec::new();
        if base.title != step.title {
            fields.push("title");
            if have.title != step.title {
                edits.push((have.title_range(), render::one_line(&step.title)));
            }
        }
        for key in PLANNED_KEYS {
            let lines = key_lines(step, key);
            if key_lines(base, key) == lines {
                continue;
            }
            fields.push(key);
            if key_lines(have, key) != lines {
                edits.extend(replace_key(todo_src, have, key, &lines));
            }
        }
        if !fields.is_empty() {
            diff.changed.push(StepChange { id, fields });
        }
    }

    for step in old.all_steps() {
        let Some(id) = step.id else { continue };
        if in_new(id) {
            continue;
        }
        diff.removed.push(id);
        let parent_goes = id.is_sub() && !in_new(id.parent()) && todo.find(id.parent()).is_some();
        if let Some(have) = todo.find(id)
            && !parent_goes
        {
            edits.push((have.item_lines(), String::new()));
        }
    }

    let known = |id: StepId| todo.find(id).is_some() || old.find(id).is_some();
    // Neighbours in TODO.md an added step can be placed beside: there, and staying.
    let anchor = |id: Option<StepId>| id.filter(|id| in_new(*id)).and_then(|id| todo.find(id));
    for (index, step) in new.steps.iter().enumerate() {
        let Some(id) = step.id else { continue };
        if !known(id) {
            diff.added.push(id);
            diff.added.extend(step.substeps.iter().filter_map(|s| s.id));
            let before = new.steps[..index].iter().rev().find_map(|s| anchor(s.id));
            let after = new.steps[index + 1..].iter().find_map(|s| anchor(s.id));
            let prefix = before.or(after).map_or("- ", Step::line_prefix);
            let text = render_step(step, prefix, eol);
            edits.push(place(todo_src, before, after, None, text, eol));
            continue;
        }
        let Some(parent) = todo.find(id) else {
            continue;
        };
        for (sub_index, sub) in step.substeps.iter().enumerate() {
            let Some(sub_id) = sub.id else { continue };
            if known(sub_id) {
                continue;
            }
            diff.added.push(sub_id);
            let before = step.substeps[..sub_index]
                .iter()
                .rev()
                .find_map(|s| anchor(s.id));
            let after = step.substeps[sub_index + 1..]
                .iter()
                .find_map(|s| anchor(s.id));
            let prefix = before.or(after).map_or_else(
                || format!("{}- ", indent_of(parent.line_prefix())),
                |s| s.line_prefix().to_owned(),
            );
            let text = render_step(sub, &prefix, eol);
            edits.push(place(todo_src, before, after, Some(parent), text, eol));
        }
    }

    let merged = todo_md::apply_edits(todo_src, edits);
    todo_md::parse(&merged)?;
    Ok((merged, diff))
}

/// The detail lines `step` has for `key`, rendered as TODO.md writes them.
fn key_lines(step: &Step, key: &str) -> Vec<String> {
    let risk = step.risk.map(crate::plan::Risk::as_str);
    let depends: Vec<String> = step.depends.iter().map(StepId::to_string).collect();
    let details = match key {
        "files" => Details {
            files: &step.files,
            ..Details::default()
        },
        "verify" => Details {
            verify: &step.verify,
            ..Details::default()
        },
        "done when" => Details {
            done_when: step.done_when.as_deref(),
            ..Details::default()
        },
        "risk" => Details {
            risk,
            ..Details::default()
        },
        "source" => Details {
            source: step.source.as_deref(),
            ..Details::default()
        },
        "reqs" => Details {
            reqs: &step.reqs,
            ..Details::default()
        },
        "proposed" => Details {
            proposed: step.proposed.as_deref(),
            ..Details::default()
        },
        "tools" => Details {
            tools: &step.tools,
            ..Details::default()
        },
        _ => Details {
            depends,
            ..Details::default()
        },
    };
    details.lines()
}

/// Edits that make `step`'s `key` lines be `lines`: in place of the first existing one (the
/// others removed), or inserted where a new detail line goes.
fn replace_key(src: &str, step: &Step, key: &str, lines: &[String]) -> Vec<(Range<usize>, String)> {
    let mut text = String::new();
    for line in lines {
        text.push_str(step.detail_prefix());
        text.push_str(line);
        text.push_str(step.eol());
    }
    let existing = step.detail_lines_of(key);
    let Some((first, rest)) = existing.split_first() else {
        let at = step.detail_insert_at();
        if at == src.len() && !src.ends_with('\n') && !text.is_empty() {
            // The last line of a file without a final newline: it still has none after.
            let text = text.strip_suffix(step.eol()).unwrap_or(&text);
            return vec![(at..at, format!("{}{text}", step.eol()))];
        }
        return vec![(at..at, text)];
    };
    let text = if first.end == src.len() && !src.ends_with('\n') {
        text.strip_suffix(step.eol()).unwrap_or(&text).to_owned()
    } else {
        text
    };
    let mut edits = vec![(first.clone(), text)];
    edits.extend(rest.iter().map(|range| (range.clone(), String::new())));
    edits
}

/// Where an added step's `text` goes: after the step before it, else before the step after
/// it, else at the end of its parent (or of the file).
fn place(
    src: &str,
    before: Option<&Step>,
    after: Option<&Step>,
    parent: Option<&Step>,
    text: String,
    eol: &str,
) -> (Range<usize>, String) {
    let at = match (before, after, parent) {
        (Some(step), _, _) => step.item_lines().end,
        (None, Some(step), _) => step.item_lines().start,
        (None, None, Some(parent)) => parent.item_lines().end,
        (None, None, None) => src.len(),
    };
    let needs_eol = at == src.len() && !src.is_empty() && !src.ends_with('\n');
    let text = if needs_eol {
        format!("{eol}{text}")
    } else {
        text
    };
    (at..at, text)
}

/// A new pending step (and its sub-steps) as TODO.md lines, each starting with `prefix`'s
/// indentation.
fn render_step(step: &Step, prefix: &str, eol: &str) -> String {
    let id = step.id.map(|id| format!("{id} ")).unwrap_or_default();
    let mut out = format!("{prefix}[ ] {id}{}{eol}", render::one_line(&step.title));
    let inner = indent_of(prefix);
    for line in render::detail_lines(step) {
        out.push_str(&inner);
        out.push_str("- ");
        out.push_str(&line);
        out.push_str(eol);
    }
    for sub in &step.substeps {
        out.push_str(&render_step(sub, &format!("{inner}- "), eol));
    }
    out
}

/// Whitespace as wide as `prefix` (tabs kept), where an item's content starts.
fn indent_of(prefix: &str) -> String {
    prefix
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect()
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
