//! Rendering steps into markdown: detail lines, code spans, and TODO.md through its template.
//! Whatever is rendered is parsed back and checked, so a step can never come out as something
//! else.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::plan::StepId;
use crate::tasks::todo_md::{self, Checklist, Step};
use crate::tasks::{Store, plan_md, templates};

#[derive(Serialize)]
struct TodoContext<'a> {
    id: &'a str,
    title: &'a str,
    steps: Vec<StepContext>,
}

#[derive(Serialize)]
struct StepContext {
    id: String,
    title: String,
    details: Vec<String>,
    substeps: Vec<StepContext>,
    files: Vec<String>,
    verify: Vec<String>,
    done_when: Option<String>,
    risk: Option<String>,
    depends: Vec<String>,
    tools: Vec<String>,
    notes: Vec<String>,
}

/// A command as a markdown code span that survives backticks inside it.
pub fn code_span(text: &str) -> String {
    let mut fence = "`".to_owned();
    while text.contains(&fence) {
        fence.push('`');
    }
    if fence.len() > 1 || text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// The detail lines of one step, as TODO.md and PLAN.md write them.
#[derive(Debug, Default)]
pub struct Details<'a> {
    pub source: Option<&'a str>,
    pub files: &'a [String],
    pub verify: &'a [String],
    pub done_when: Option<&'a str>,
    pub risk: Option<&'a str>,
    pub depends: Vec<String>,
    pub tools: &'a [String],
    pub reqs: &'a [String],
    pub proposed: Option<&'a str>,
    pub notes: &'a [String],
}

impl Details<'_> {
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(source) = self.source {
            lines.push(format!("source: {}", one_line(source)));
        }
        if !self.files.is_empty() {
            lines.push(format!("files: {}", one_line(&self.files.join(", "))));
        }
        if !self.verify.is_empty() {
            let commands: Vec<String> = self
                .verify
                .iter()
                .map(|c| code_span(&one_line(c)))
                .collect();
            lines.push(format!("verify: {}", commands.join(", ")));
        }
        if let Some(proposed) = self.proposed {
            lines.push(format!("proposed: {}", one_line(proposed)));
        }
        if let Some(done_when) = self.done_when {
            lines.push(format!("done when: {}", one_line(done_when)));
        }
        if let Some(risk) = self.risk {
            lines.push(format!("risk: {risk}"));
        }
        if !self.depends.is_empty() {
            lines.push(format!("depends: {}", self.depends.join(", ")));
        }
        if !self.tools.is_empty() {
            lines.push(format!("tools: {}", one_line(&self.tools.join(", "))));
        }
        if !self.reqs.is_empty() {
            lines.push(format!("reqs: {}", one_line(&self.reqs.join(", "))));
        }
        lines.extend(self.notes.iter().map(|n| one_line(n)));
        lines
    }
}

/// Text for a single markdown line: a newline would end the item and start markdown of its
/// own.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A step's detail lines as TODO.md writes them.
pub fn detail_lines(step: &Step) -> Vec<String> {
    Details {
        source: step.source.as_deref(),
        files: &step.files,
        verify: &step.verify,
        done_when: step.done_when.as_deref(),
        risk: step.risk.map(super::super::plan::step::Risk::as_str),
        depends: step.depends.iter().map(StepId::to_string).collect(),
        tools: &step.tools,
        reqs: &step.reqs,
        proposed: step.proposed.as_deref(),
        notes: &step.notes,
    }
    .lines()
}

fn step_context(step: &Step) -> StepContext {
    StepContext {
        id: step.id.map(|id| id.to_string()).unwrap_or_default(),
        title: step.title.clone(),
        details: detail_lines(step),
        substeps: step.substeps.iter().map(step_context).collect(),
        files: step.files.clone(),
        verify: step.verify.clone(),
        done_when: step.done_when.clone(),
        risk: step.risk.map(|r| r.as_str().to_owned()),
        depends: step.depends.iter().map(StepId::to_string).collect(),
        tools: step.tools.clone(),
        notes: step.notes.clone(),
    }
}

/// The error for what the `file` template made (`what`: "a checklist") that does not parse.
fn template_output(file: &'static str, what: &'static str, err: &impl std::fmt::Display) -> Error {
    super::error::Error::TemplateOutput {
        file,
        what,
        detail: err.to_string(),
    }
    .into()
}

/// TODO.md for `steps`, through the (overridable) template. The result must parse back to
/// the same steps, so a broken template override fails here rather than in a later run.
pub fn render_todo(store: &Store, id: &str, title: &str, steps: &Checklist) -> Result<String> {
    let context = TodoContext {
        id,
        title,
        steps: steps.steps.iter().map(step_context).collect(),
    };
    let text = templates::render(&store.template_dirs(), templates::TODO_MD, &context)?;
    let parsed =
        todo_md::parse(&text).map_err(|e| template_output("TODO.md", "a checklist", &e))?;
    let want: Vec<_> = steps.all_steps().map(|s| (s.id, &s.title)).collect();
    let got: Vec<_> = parsed.all_steps().map(|s| (s.id, &s.title)).collect();
    if want != got {
        return Err(Error::input("the TODO.md template lost or changed steps")
            .hint("fix or remove the TODO.md template (`TODO.md.j2` in `.tasks/templates/` or `~/.config/tick/templates/`); nothing was written"));
    }
    Ok(text)
}

#[derive(Serialize)]
struct PlanContext<'a> {
    title: String,
    summary: String,
    context: Option<String>,
    assumptions: Vec<String>,
    steps: Vec<StepContext>,
    risks: Vec<String>,
    verification: Option<String>,
    out_of_scope: &'a [String],
    open_questions: Vec<String>,
}

/// Free text from a model, made safe inside PLAN.md: a line that starts a heading would cut
/// the document into other sections (a `## Steps` in a summary would smuggle in steps), so
/// heading marks are escaped.
pub fn prose(text: &str) -> String {
    text.trim()
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            // `#` opens an ATX heading; a line of only `=` or `-` underlines the line above
            // into a setext heading.
            let setext = !trimmed.trim_end().is_empty()
                && trimmed.trim_end().chars().all(|c| c == '=' || c == '-');
            if trimmed.starts_with('#') || setext {
                let indent = &line[..line.len() - trimmed.len()];
                format!("{indent}\\{trimmed}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A plan to draft as PLAN.md, as the planner submitted it (`submit_plan`'s arguments,
/// validated). Its steps have no ids of their own: the n-th step is `S<n>`.
#[derive(Debug, Clone)]
pub struct PlanInput<'a> {
    pub title: &'a str,
    pub summary: &'a str,
    pub context: Option<&'a str>,
    pub assumptions: &'a [String],
    pub steps: Vec<StepInput<'a>>,
    pub risks: &'a [String],
    pub verification: Option<&'a str>,
    pub out_of_scope: &'a [String],
    pub open_questions: &'a [String],
}

/// One step of a [`PlanInput`].
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    pub title: &'a str,
    pub files: &'a [String],
    pub verify: &'a [String],
    pub done_when: Option<&'a str>,
    pub risk: Option<crate::plan::Risk>,
    pub depends: &'a [String],
    pub tools: &'a [String],
}

/// The markdown body of a draft PLAN.md for a submitted plan, through the (overridable)
/// template. The steps are parsed back from the result and must be exactly the submitted
/// ones.
pub fn plan_body<'a>(store: &Store, plan: impl Into<PlanInput<'a>>) -> Result<String> {
    let plan: PlanInput<'a> = plan.into();
    let steps: Vec<StepContext> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let details = Details {
                files: step.files,
                verify: step.verify,
                done_when: step.done_when,
                risk: step.risk.map(crate::plan::Risk::as_str),
                depends: step.depends.to_vec(),
                tools: step.tools,
                ..Details::default()
            };
            StepContext {
                id: format!("S{}", index + 1),
                title: one_line(step.title),
                details: details.lines(),
                substeps: Vec::new(),
                files: step.files.to_vec(),
                verify: step.verify.to_vec(),
                done_when: step.done_when.map(str::to_owned),
                risk: details.risk.map(str::to_owned),
                depends: step.depends.to_vec(),
                tools: step.tools.to_vec(),
                notes: Vec::new(),
            }
        })
        .collect();
    let context = PlanContext {
        title: one_line(plan.title),
        summary: prose(plan.summary),
        context: plan.context.map(prose),
        assumptions: plan.assumptions.iter().map(|a| one_line(a)).collect(),
        steps,
        risks: plan.risks.iter().map(|r| one_line(r)).collect(),
        verification: plan.verification.map(prose),
        out_of_scope: plan.out_of_scope,
        open_questions: plan.open_questions.iter().map(|q| one_line(q)).collect(),
    };
    let body = templates::render(&store.template_dirs(), templates::PLAN_MD, &context)?;
    let doc = plan_md::parse(&body).map_err(|e| template_output("PLAN.md", "a plan", &e))?;
    // The tools too: they are a step's capabilities, which a template must not change.
    let want: Vec<(String, String, Vec<String>)> = context
        .steps
        .iter()
        .map(|s| (s.id.clone(), s.title.clone(), s.tools.clone()))
        .collect();
    let got: Vec<(String, String, Vec<String>)> = doc
        .steps
        .all_steps()
        .map(|s| {
            (
                s.id.map(|i| i.to_string()).unwrap_or_default(),
                s.title.clone(),
                s.tools.clone(),
            )
        })
        .collect();
    if want != got {
        return Err(Error::input("the PLAN.md template lost or changed steps")
            .hint("fix or remove the PLAN.md template (`PLAN.md.j2` in `.tasks/templates/` or `~/.config/tick/templates/`); nothing was written"));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_cannot_open_sections() {
        assert_eq!(prose("a\n## Steps\n  # b"), "a\n\\## Steps\n  \\# b");
        assert_eq!(prose("Steps\n-----\nx"), "Steps\n\\-----\nx");
        assert_eq!(prose("Steps\n===="), "Steps\n\\====");
        let body = format!(
            "## Summary\n\n{}\n\n## Steps\n- [ ] S1 real\n",
            prose("Steps\n---\n- [ ] S9 smuggled")
        );
        let doc = plan_md::parse(&body).unwrap();
        let ids: Vec<String> = doc.steps.all_steps().map(|s| s.title.clone()).collect();
        assert_eq!(ids, ["real"]);
    }

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code_span("npm test"), "`npm test`");
        assert_eq!(code_span("echo `date`"), "`` echo `date` ``");
        assert_eq!(code_span("a``b"), "``` a``b ```");
        for text in ["npm test", "echo `date`", "a``b", "`x`"] {
            let md = format!("- [ ] S1 t\n  - verify: {}\n", code_span(text));
            let list = todo_md::parse(&md).unwrap();
            assert_eq!(list.steps[0].verify, [text], "{md}");
        }
    }
}
