//! The context pack of one step: everything the executor needs, built fresh from PLAN.md and
//! TODO.md for every step, so no step depends on a long chat history. Bounded: long plans are
//! compressed (older done steps counted, later steps cut) so the prompt stays small.

use crate::plan::{StepId, StepStatus};
use crate::tasks::Task;
use crate::tasks::plan_md;
use crate::tasks::render::detail_lines;
use crate::tasks::todo_md::Step;

/// Done steps listed one line each; older ones are only counted.
const RECENT_DONE: usize = 12;
/// Upcoming steps listed by title; later ones are only counted.
const UPCOMING: usize = 8;
const MAX_SUMMARY: usize = 2_000;
const MAX_CONTEXT: usize = 3_000;

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(max).collect();
        format!("{kept}\n[... cut; the whole text is in PLAN.md]")
    }
}

fn id_of(step: &Step) -> String {
    step.id
        .map_or_else(|| "(new)".to_owned(), |id| id.to_string())
}

/// What a person said about the step's last block: the question it stopped on and their
/// answer (TODO.md's `answer:` line wins over the record, a person may have edited it), or
/// that they made it pending without one. Empty for a step that was never unblocked.
fn earlier_block(task: &Task, step: &Step) -> String {
    let lifted = step
        .id
        .and_then(|id| task.state.steps.get(&id))
        .and_then(|record| record.unblocked.last());
    let question = step
        .blocked
        .as_deref()
        .or_else(|| lifted.and_then(|u| u.question.as_deref()));
    let answer = step
        .answer
        .as_deref()
        .or_else(|| lifted.and_then(|u| u.answer.as_deref()));
    if question.is_none() && answer.is_none() {
        return String::new();
    }
    let mut out = String::from("\n### An earlier attempt at this step was blocked\n");
    if let Some(question) = question {
        out.push_str(&format!("It stopped on: {question}\n"));
    }
    match answer {
        Some(answer) => out.push_str(&format!("The person's answer (follow it): {answer}\n")),
        None => out.push_str(
            "The person made the step pending again without an answer: check whether what \
             blocked it still holds before you block again.\n",
        ),
    }
    out
}

/// The user message that starts the work on `current`.
pub fn pack(task: &Task, current: StepId) -> String {
    let mut out = String::new();
    out.push_str(&format!("# Task: {}\n", task.title()));
    if let Some(goal) = &task.plan.front.goal {
        out.push_str(&format!("Goal: {goal}\n"));
    }
    if let Some(summary) = plan_md::section(&task.plan.body, "Summary") {
        out.push_str(&format!("\n## Summary\n{}\n", cut(summary, MAX_SUMMARY)));
    }
    if let Some(context) = plan_md::section(&task.plan.body, "Context") {
        out.push_str(&format!(
            "\n## What the planner found\n{}\n",
            cut(context, MAX_CONTEXT)
        ));
    }

    let all: Vec<&Step> = task.todo.all_steps().collect();
    let position = all.iter().position(|s| s.id == Some(current)).unwrap_or(0);
    let done: Vec<&&Step> = all[..position]
        .iter()
        .filter(|s| s.status == StepStatus::Done)
        .collect();
    if !done.is_empty() {
        out.push_str("\n## Done so far\n");
        let skipped = done.len().saturating_sub(RECENT_DONE);
        if skipped > 0 {
            out.push_str(&format!("- ({skipped} earlier steps done)\n"));
        }
        for step in &done[skipped..] {
            out.push_str(&format!("- {} {} (done)\n", id_of(step), step.title));
        }
    }

    if let Some(step) = all.get(position) {
        out.push_str(&format!("\n## Your step: {} {}\n", id_of(step), step.title));
        if let Some(parent) = step
            .id
            .filter(|id| id.is_sub())
            .and_then(|id| task.todo.find(id.parent()))
        {
            out.push_str(&format!("Part of {} {}\n", id_of(parent), parent.title));
        }
        for line in detail_lines(step) {
            out.push_str(&format!("- {line}\n"));
        }
        if step.verify.is_empty() {
            out.push_str("- verify: (none given; tick ticks it unverified when you report done)\n");
        }
        out.push_str(&earlier_block(task, step));
    }

    let upcoming: Vec<&&Step> = all[position + 1..]
        .iter()
        .filter(|s| s.status != StepStatus::Done)
        .collect();
    if !upcoming.is_empty() {
        out.push_str("\n## Coming next (not now)\n");
        for step in upcoming.iter().take(UPCOMING) {
            out.push_str(&format!("- {} {}\n", id_of(step), step.title));
        }
        if upcoming.len() > UPCOMING {
            out.push_str(&format!("- (and {} more)\n", upcoming.len() - UPCOMING));
        }
    }
    out.push_str(&format!(
        "\nDo step {current} now. Start with `update_step` `in_progress`; finish with `done` or `blocked`.\n"
    ));
    out
}
