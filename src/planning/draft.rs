//! Drafting `.tasks/draft/PLAN.md`: from the planner's submission or its open questions, and
//! from a plan a person wrote; secrets redacted before anything is written. Also what guards
//! a draft (it is never replaced unasked), the step diff of a revision, and discarding it.

use crate::agent::planner::PlanEnd;
use crate::error::{Error, Result};
use crate::fsx;
use crate::person::question_lines;
use crate::plan::{Event, Phase, transition};
use crate::redact::redact;
use crate::tasks::plan_md::{self, FrontMatter};
use crate::tasks::{Store, render};
use crate::tools::PlanSubmission;

use super::Drafted;
use super::conversation::Begun;

/// A draft rendered from a planning turn, not yet written.
#[derive(Debug)]
pub struct Planned {
    pub text: String,
    pub drafted: Drafted,
    /// How the steps changed from the draft it revises, if they did.
    pub step_diff: Option<String>,
}

/// The draft the planning turn `end` makes of the conversation `begun`: the submitted plan,
/// or (`needs-input`) a draft holding the planner's questions. `secrets` are redacted.
pub fn planned(
    store: &Store,
    begun: &Begun,
    end: &PlanEnd,
    secrets: &[&str],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Planned> {
    let goal = &begun.goal;
    let (status, body, title, steps, questions) = match end {
        PlanEnd::Submitted(plan) => (
            Phase::Draft,
            render::plan_body(store, plan)?,
            plan.title.clone(),
            plan.steps.len(),
            Vec::new(),
        ),
        PlanEnd::NeedsInput(questions) => {
            let waiting = PlanSubmission {
                title: render::one_line(goal).chars().take(100).collect(),
                summary: "The planner has questions it needs answered before it can plan."
                    .to_owned(),
                context: None,
                assumptions: Vec::new(),
                steps: Vec::new(),
                risks: Vec::new(),
                verification: None,
                out_of_scope: Vec::new(),
                open_questions: question_lines(questions),
            };
            (
                Phase::NeedsInput,
                render::plan_body(store, &waiting)?,
                waiting.title,
                0,
                question_lines(questions),
            )
        }
    };
    let old_draft = begun.old_draft.as_ref();
    // Redacted before rendering, so a key at the start of a value cannot turn the YAML into
    // something else (`title: [REDACTED] ...`); the rendered text is checked again below.
    let body = redact(&body, secrets);
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: None,
        title: Some(redact(&render::one_line(&title), secrets)),
        goal: Some(redact(goal, secrets)),
        status: Some(status),
        created: old_draft.and_then(|d| d.plan.front.created).or(Some(now)),
        approved: None,
        approval: old_draft.and_then(|d| d.plan.front.approval.clone()),
        extra: serde_yaml::Mapping::new(),
    };
    let text = plan_md::render(&front, &body)
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    let text = redact(&text, secrets);
    let step_diff = old_draft.and_then(|old| {
        let new = plan_md::parse(&text).ok()?;
        step_diff(&old.plan, &new)
    });
    Ok(Planned {
        text,
        drafted: Drafted {
            path: store.draft_plan_path(),
            status,
            title,
            steps,
            questions,
            usage: None,
        },
        step_diff,
    })
}

/// The steps of two drafts as a diff, one block per step; `None` when the steps are the same.
pub fn step_diff(old: &plan_md::PlanDoc, new: &plan_md::PlanDoc) -> Option<String> {
    let lines = |doc: &plan_md::PlanDoc| -> String {
        let mut out = String::new();
        for step in doc.steps.all_steps() {
            let id = step.id.map_or_else(|| "(new)".into(), |id| id.to_string());
            out.push_str(&format!("{id} {}\n", step.title));
            for detail in render::detail_lines(step) {
                out.push_str(&format!("    {detail}\n"));
            }
        }
        out
    };
    let (old, new) = (lines(old), lines(new));
    if old == new {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&old, &new);
    Some(
        diff.unified_diff()
            .context_radius(1)
            .header("steps before", "steps now")
            .to_string(),
    )
}

pub use super::conversation::check_no_draft;

/// Makes the draft of a plan a person wrote: `src`, read from `name` (for messages), checked,
/// its prose made the summary when it has none, redacted. An existing draft is refused unless
/// `replace`. A draft from a file has no planning conversation to continue.
pub fn from_text(
    store: &Store,
    name: &str,
    src: &str,
    replace: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Drafted> {
    let located = |err: crate::tasks::todo_md::ParseError| {
        Error::input(format!(
            "`{name}:{}:{}`: {}",
            err.line, err.col, err.message
        ))
        .hint(format!("{}; no draft was written", err.hint))
    };
    let mut doc = plan_md::parse(src).map_err(located)?;
    plan_md::validate(&doc).map_err(located)?;
    if let Some(body) = prose_as_summary(&doc.body) {
        doc.body = body.into();
    }

    store.ensure()?;
    let _lock = store.lock("tick plan")?;
    check_no_draft(store, replace)?;
    let title = doc
        .title
        .as_deref()
        .map(|title| redact(&render::one_line(title), &[]));
    let status = match doc.front.status {
        Some(Phase::NeedsInput) => Phase::NeedsInput,
        _ => Phase::Draft,
    };
    let front = FrontMatter {
        format: Some(plan_md::FORMAT),
        id: None,
        title: title.clone(),
        goal: doc.front.goal.as_deref().map(|goal| redact(goal, &[])),
        status: Some(status),
        created: doc.front.created.or(Some(now)),
        approved: None,
        approval: doc.front.approval.clone(),
        extra: doc.front.extra.clone(),
    };
    let text = plan_md::render(&front, &redact(&doc.body, &[]))
        .map_err(|err| Error::internal(format!("could not render the draft: {err}")))?;
    fsx::create_dir_all(&store.draft_dir())?;
    super::conversation::remove(store)?;
    super::attempt::clear(store)?;
    let path = store.draft_plan_path();
    fsx::write_atomic(&path, text.as_bytes())?;
    Ok(Drafted {
        path,
        status,
        title: title.unwrap_or_default(),
        steps: doc.steps.all_steps().count(),
        questions: Vec::new(),
        usage: None,
    })
}

/// A hand-written plan's prose between its title and its first section, under a
/// `## Summary` heading when it has none: the summary is what reaches the executor's context
/// pack. `None` when there is a summary already or no prose to make one of. Every byte of
/// the prose is kept.
fn prose_as_summary(body: &str) -> Option<String> {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag};
    if plan_md::section_range(body, "Summary").is_some() {
        return None;
    }
    let mut prose_start = 0;
    let mut first_section = body.len();
    for (event, range) in Parser::new(body).into_offset_iter() {
        if let Event::Start(Tag::Heading { level, .. }) = event {
            if level == HeadingLevel::H1 && prose_start == 0 && range.start < first_section {
                prose_start = range.end;
            } else if level <= HeadingLevel::H2 {
                first_section = range.start;
                break;
            }
        }
    }
    let prose = body.get(prose_start..first_section)?;
    if prose.trim().is_empty() {
        return None;
    }
    let lead = prose.len() - prose.trim_start().len();
    let at = prose_start + lead;
    Some(format!("{}## Summary\n\n{}", &body[..at], &body[at..]))
}

/// The draft as it was thrown away: its title, when it parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    pub title: Option<String>,
    pub path: std::path::PathBuf,
}

/// The title of the draft waiting, if there is one and it parses (for questions and messages).
pub fn waiting_title(store: &Store) -> Option<String> {
    store.load_draft().ok().flatten().and_then(|d| d.plan.title)
}

/// Fails unless there is a draft folder to discard.
pub fn require_draft(store: &Store) -> Result<()> {
    if store.draft_dir().exists() {
        return Ok(());
    }
    Err(Error::input("there is no draft to discard")
        .hint("`tick list` shows the draft and the tasks"))
}

/// Throws the draft folder away (a draft that does not parse too).
pub fn discard(store: &Store) -> Result<Discarded> {
    let path = store.draft_plan_path();
    require_draft(store)?;
    let draft = store.load_draft().ok().flatten();
    let _lock = store.lock("tick discard")?;
    let phase = draft
        .as_ref()
        .and_then(|d| d.plan.phase())
        .unwrap_or(Phase::Draft);
    transition(phase, Event::Discard).map_err(|r| Error::input(r.reason).hint(r.hint))?;
    fsx::remove_dir_all(&store.draft_dir())?;
    Ok(Discarded {
        title: draft.and_then(|d| d.plan.title),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::prose_as_summary;

    #[test]
    fn prose_before_the_first_section_becomes_the_summary() {
        let body = "# Greeting\n\nGreet people from the command line.\nKeep it **short**.\n\n## Steps\n- [ ] S1 Do it\n";
        assert_eq!(
            prose_as_summary(body).unwrap(),
            "# Greeting\n\n## Summary\n\nGreet people from the command line.\nKeep it **short**.\n\n## Steps\n- [ ] S1 Do it\n"
        );
        // Without a title the prose starts the body.
        assert_eq!(
            prose_as_summary("Some words.\n\n## Steps\n- [ ] S1 x\n").unwrap(),
            "## Summary\n\nSome words.\n\n## Steps\n- [ ] S1 x\n"
        );
    }

    #[test]
    fn a_plan_with_a_summary_or_without_prose_is_left_alone() {
        for body in [
            "# T\n\nWords.\n\n## Summary\nThe summary.\n\n## Steps\n- [ ] S1 x\n",
            "# T\n\n## Steps\n- [ ] S1 x\n",
            "# T\n\n   \n## Steps\n- [ ] S1 x\n",
        ] {
            assert_eq!(prose_as_summary(body), None, "{body}");
        }
    }
}
