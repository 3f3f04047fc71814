//! How the person is told what a change they asked for did: an answer to a blocked step, an
//! approval, a discarded draft, a step's diff, a planning turn's outcome, a step found stale.
//! Each is a pure line builder returning [`Said`] lines: the subcommands print them
//! ([`Ui::say`]), the interactive session puts the same lines in its timeline, so the wording
//! lives here once. Paths come workspace-relative, as the caller shows them.

use super::Ui;
use crate::editor::Closed;
use crate::engine::Warning;
use crate::planning::PlanEvent;
use crate::planning::approve::{Approved, Reapproved};
use crate::planning::draft::Discarded;
use crate::report::diff::StepDiff;
use crate::tasks::by_hand::Answered;
use crate::watch::StaleStep;

/// What a [`Warning`] says (after `warning: `), in the CLI and in the session's timeline.
pub fn warning_line(warning: &Warning) -> String {
    match warning {
        Warning::Unsandboxed => crate::sandbox::UNSANDBOXED_WARNING.to_owned(),
        Warning::Untrusted(line) => line.clone(),
        Warning::HardLinks(leaving) => format!(
            "{}: a command that writes them writes there too",
            crate::report::machine::links_leaving_line(leaving)
        ),
    }
}

/// The title in backticks after a space, for a message; nothing without one.
pub fn titled(title: Option<&str>) -> String {
    title.map(|t| format!(" `{t}`")).unwrap_or_default()
}

/// One thing tick says, by kind: the CLI prints a note plain, a hint after `hint:` and a
/// warning after `warning:` (on stderr), data on stdout; the session shows each as a line of
/// its timeline, with the same prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    Note(String),
    Hint(String),
    Warning(String),
    Data(String),
}

impl Said {
    /// The lines as the person reads them, prefix and all (blank lines dropped): how the
    /// session's timeline shows them.
    pub fn lines(&self) -> Vec<String> {
        let (prefix, text) = match self {
            Said::Note(text) | Said::Data(text) => ("", text),
            Said::Hint(text) => ("hint: ", text),
            Said::Warning(text) => ("warning: ", text),
        };
        format!("{prefix}{}", crate::text::visible(text))
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// A step found stale while tick was not looking.
pub fn stale(stale: &StaleStep) -> Vec<Said> {
    vec![Said::Warning(format!(
        "`{}` is stale: {} changed outside tick",
        stale.id,
        stale.files.join(", ")
    ))]
}

/// A blocked step, answered.
pub fn answered(answered: &Answered) -> Vec<Said> {
    vec![
        Said::Note(format!(
            "`{}` answered and pending again; {}/{} done, {}",
            answered.id, answered.progress.done, answered.progress.total, answered.next
        )),
        Said::Hint("`tick run` goes on with it".to_owned()),
    ]
}

/// A draft approved as the task in `folder`.
pub fn approved(approved: &Approved, folder: &str) -> Vec<Said> {
    vec![Said::Note(format!(
        "approved `{}` as `{folder}/` ({} {})",
        approved.title,
        approved.steps,
        if approved.steps == 1 { "step" } else { "steps" }
    ))]
}

/// What comes after an approval: the task folder `folder` is `committed`, or still to share.
pub fn approved_next(folder: &str, committed: bool) -> Vec<Said> {
    if committed {
        vec![
            Said::Note(format!("committed `{folder}/`")),
            Said::Hint("`tick run` executes it; `tick status` shows it".to_owned()),
        ]
    } else {
        vec![Said::Hint(format!(
            "`tick run` executes it; `tick status` shows it; commit `{folder}/` to share it"
        ))]
    }
}

/// The hooks `tick approve` approved for task `id`, as they differ from before.
pub fn hooks_approved(id: &str, changes: &[String]) -> Vec<Said> {
    let mut said = vec![Said::Note(format!("approved the hooks of `{id}`:"))];
    said.extend(
        changes
            .iter()
            .map(|change| Said::Note(format!("    {change}"))),
    );
    said
}

/// Task `id`'s plan approved again; `todo` is its TODO.md as shown.
pub fn reapproved(id: &str, reapproved: &Reapproved, todo: &str) -> Vec<Said> {
    match reapproved {
        Reapproved::Unchanged => vec![Said::Note(format!(
            "`{id}` is approved as it stands; nothing to do"
        ))],
        Reapproved::ReplanNotWritten { step } => vec![
            Said::Note(format!(
                "`{step}` was blocked for a re-plan, but PLAN.md holds no new plan (tick was \
                 stopped before writing it, or the approved plan was restored): `{id}`'s \
                 approved plan stands and `{step}` is pending again"
            )),
            Said::Hint("`tick run` runs it as approved".to_owned()),
        ],
        Reapproved::Approved {
            plan_diff,
            step_diff,
            ..
        } => {
            let mut said: Vec<Said> = plan_diff.iter().cloned().map(Said::Data).collect();
            said.push(Said::Note(format!("approved the edited plan of `{id}`")));
            said.push(Said::Note(if step_diff.is_empty() {
                "the steps did not change".to_owned()
            } else {
                format!("applied to `{todo}`:\n{}", step_diff.trim_end())
            }));
            said
        }
    }
}

/// The draft thrown away; `shown` is its PLAN.md.
pub fn discarded(discarded: &Discarded, shown: &str) -> Vec<Said> {
    vec![Said::Note(format!(
        "discarded the draft{} (`{shown}`)",
        titled(discarded.title.as_deref())
    ))]
}

/// The changes a step made.
pub fn step_diff(diff: &StepDiff) -> Vec<Said> {
    match diff {
        StepDiff::Committed { step, sha, shown } => vec![
            Said::Data(shown.clone()),
            Said::Note(format!(
                "{step} as committed in {}",
                &sha[..sha.len().min(12)]
            )),
        ],
        StepDiff::Tried { step, task, diff } => vec![
            Said::Data(diff.clone()),
            Said::Note(format!(
                "`{step}` of `{task}` ended blocked and its files were put back as they were; \
                 above is what it tried"
            )),
        ],
        StepDiff::Nothing { step, task } => vec![Said::Note(format!(
            "`{step}` has no recorded changes in `{task}`: it has not run, or it changed no file"
        ))],
        StepDiff::WorkingTree {
            step,
            files,
            diff,
            untracked,
            base,
        } => {
            let mut said = Vec::new();
            if !diff.is_empty() {
                said.push(Said::Data(diff.clone()));
            }
            for file in untracked {
                said.push(Said::Note(format!("`{file}` is new and not in git yet")));
            }
            let since = if base == "HEAD" {
                "HEAD".to_owned()
            } else {
                format!(
                    "the commit it was approved on ({})",
                    &base[..base.len().min(12)]
                )
            };
            said.push(Said::Note(format!(
                "{step} changed {}: the working tree against {since} (the run did not commit \
                 it, so other changes to the same files show too)",
                files
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
            said
        }
    }
}

/// What a planning turn's event says to the person (`tick plan` without `--json`, and the
/// session). The model's own events ([`PlanEvent::Agent`]) and hook runs are shown live by
/// each front end; the questions asked and a failed attempt are said otherwise (at the
/// terminal or in the draft, and as the command's error).
pub fn plan_event(event: &PlanEvent) -> Vec<Said> {
    match event {
        PlanEvent::RunCommandUnavailable { reason } => vec![Said::Warning(format!(
            "the planner plans without `run_command` (git log, blame, ls...): {reason}"
        ))],
        PlanEvent::StepsChanged { diff } => vec![Said::Data(diff.clone())],
        PlanEvent::Draft {
            path,
            title,
            usage,
            steps,
            questions,
            ..
        } => {
            let tokens = tokens_note(*usage);
            if questions.is_empty() {
                return vec![Said::Note(format!(
                    "drafted `{}` with {steps} {} in `{path}`{tokens}",
                    crate::tasks::render::one_line(title),
                    if *steps == 1 { "step" } else { "steps" },
                ))];
            }
            let mut said = vec![Said::Note(format!(
                "the planner needs answers before it can plan; its questions are in `{path}`{tokens}"
            ))];
            said.extend(questions.iter().map(|q| Said::Note(format!("  - {q}"))));
            said.push(Said::Hint(
                "answer with `tick plan --answer \"...\"`".to_owned(),
            ));
            said
        }
        PlanEvent::McpWarning { text } => vec![Said::Warning(text.clone())],
        PlanEvent::CheckWarning { text } => vec![Said::Warning(format!(
            "tick's check of the draft, kept in it: {text}"
        ))],
        PlanEvent::Revised {
            task,
            named,
            path,
            version,
            usage,
        } => vec![
            Said::Note(format!(
                "re-planned `{task}`: version {version} of its plan is in `{path}`, waiting for your approval{}",
                tokens_note(*usage)
            )),
            Said::Hint(format!(
                "`tick approve{named}` to take it (unchanged steps keep their progress; the approved version is `history/PLAN.v{}.md`); nothing runs until then",
                version - 1
            )),
        ],
        PlanEvent::Agent(_)
        | PlanEvent::Hook(_)
        | PlanEvent::PlanStarted { .. }
        | PlanEvent::QuestionsAsked { .. }
        | PlanEvent::AttemptFailed { .. } => Vec::new(),
    }
}

/// ` (N tokens in, M out)` for a planning run's usage; empty without one.
fn tokens_note(usage: Option<crate::llm::Usage>) -> String {
    usage.map_or_else(String::new, |usage| {
        format!(
            " ({} tokens in, {} out)",
            usage.input_tokens, usage.output_tokens
        )
    })
}

impl Ui {
    /// Says `said`: notes, hints and warnings on stderr, data on stdout.
    pub fn say(&self, said: &[Said]) {
        for line in said {
            match line {
                Said::Note(text) => self.note(text),
                Said::Hint(text) => self.hint(text),
                Said::Warning(text) => self.warn(text),
                Said::Data(text) => self.data(text),
            }
        }
    }

    /// A step found stale while tick was not looking.
    pub fn stale(&self, found: &StaleStep) {
        self.say(&stale(found));
    }

    /// A blocked step, answered.
    pub fn answered(&self, done: &Answered) {
        self.say(&answered(done));
    }

    /// A draft approved as the task in `folder`.
    pub fn approved(&self, done: &Approved, folder: &str) {
        self.say(&approved(done, folder));
    }

    /// What comes after an approval: the task folder `folder` is `committed`, or still to share.
    pub fn approved_next(&self, folder: &str, committed: bool) {
        self.say(&approved_next(folder, committed));
    }

    /// The hooks `tick approve` approved for task `id`, as they differ from before.
    pub fn hooks_approved(&self, id: &str, changes: &[String]) {
        self.say(&hooks_approved(id, changes));
    }

    /// Task `id`'s plan approved again; `todo` is its TODO.md as shown.
    pub fn reapproved(&self, id: &str, done: &Reapproved, todo: &str) {
        self.say(&reapproved(id, done, todo));
    }

    /// The draft thrown away; `shown` is its PLAN.md.
    pub fn discarded(&self, done: &Discarded, shown: &str) {
        self.say(&discarded(done, shown));
    }

    /// The changes a step made.
    pub fn step_diff(&self, diff: &StepDiff) {
        self.say(&step_diff(diff));
    }

    /// An editor that ran, if it failed.
    pub fn editor_closed(&self, closed: &Closed) {
        if !closed.status.success() {
            self.warn(&format!(
                "the editor `{}` exited with {}",
                closed.editor, closed.status
            ));
        }
    }
}
