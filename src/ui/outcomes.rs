//! How the person is told what a change they asked for did: an answer to a blocked step, an
//! approval, a discarded draft, a step's diff, an editor that failed, a step found stale. The
//! subcommands and the interactive session say these the same way (in the session they show
//! in the timeline). Paths come workspace-relative, as the caller shows them.

use super::Ui;
use crate::editor::Closed;
use crate::engine::Warning;
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

impl Ui {
    /// A step found stale while tick was not looking.
    pub fn stale(&self, stale: &StaleStep) {
        self.warn(&format!(
            "`{}` is stale: {} changed outside tick",
            stale.id,
            stale.files.join(", ")
        ));
    }

    /// A blocked step, answered.
    pub fn answered(&self, answered: &Answered) {
        self.note(&format!(
            "`{}` answered and pending again; {}/{} done, {}",
            answered.id, answered.progress.done, answered.progress.total, answered.next
        ));
        self.hint("`tick run` goes on with it");
    }

    /// A draft approved as the task in `folder`.
    pub fn approved(&self, approved: &Approved, folder: &str) {
        self.note(&format!(
            "approved `{}` as `{folder}/` ({} {})",
            approved.title,
            approved.steps,
            if approved.steps == 1 { "step" } else { "steps" }
        ));
    }

    /// What comes after an approval: the task folder `folder` is `committed`, or still to share.
    pub fn approved_next(&self, folder: &str, committed: bool) {
        if committed {
            self.note(&format!("committed `{folder}/`"));
            self.hint("`tick run` executes it; `tick status` shows it");
        } else {
            self.hint(&format!(
                "`tick run` executes it; `tick status` shows it; commit `{folder}/` to share it"
            ));
        }
    }

    /// Task `id`'s plan approved again; `todo` is its TODO.md as shown.
    /// The hooks `tick approve` approved for task `id`, as they differ from before.
    pub fn hooks_approved(&self, id: &str, changes: &[String]) {
        self.note(&format!("approved the hooks of `{id}`:"));
        for change in changes {
            self.note(&format!("    {change}"));
        }
    }

    pub fn reapproved(&self, id: &str, reapproved: &Reapproved, todo: &str) {
        match reapproved {
            Reapproved::Unchanged => {
                self.note(&format!("`{id}` is approved as it stands; nothing to do"));
            }
            Reapproved::ReplanNotWritten { step } => {
                self.note(&format!(
                    "`{step}` was blocked for a re-plan, but PLAN.md holds no new plan (tick was \
                     stopped before writing it, or the approved plan was restored): `{id}`'s \
                     approved plan stands and `{step}` is pending again"
                ));
                self.hint("`tick run` runs it as approved");
            }
            Reapproved::Approved {
                plan_diff,
                step_diff,
                ..
            } => {
                if let Some(diff) = plan_diff {
                    self.data(diff);
                }
                self.note(&format!("approved the edited plan of `{id}`"));
                if step_diff.is_empty() {
                    self.note("the steps did not change");
                } else {
                    self.note(&format!("applied to `{todo}`:\n{}", step_diff.trim_end()));
                }
            }
        }
    }

    /// The draft thrown away; `shown` is its PLAN.md.
    pub fn discarded(&self, discarded: &Discarded, shown: &str) {
        self.note(&format!(
            "discarded the draft{} (`{shown}`)",
            titled(discarded.title.as_deref())
        ));
    }

    /// The changes a step made.
    pub fn step_diff(&self, diff: &StepDiff) {
        match diff {
            StepDiff::Committed { step, sha, shown } => {
                self.data(shown);
                self.note(&format!(
                    "{step} as committed in {}",
                    &sha[..sha.len().min(12)]
                ));
            }
            StepDiff::Tried { step, task, diff } => {
                self.data(diff);
                self.note(&format!(
                    "`{step}` of `{task}` ended blocked and its files were put back as they were; \
                     above is what it tried"
                ));
            }
            StepDiff::Nothing { step, task } => self.note(&format!(
                "`{step}` has no recorded changes in `{task}`: it has not run, or it changed no file"
            )),
            StepDiff::WorkingTree {
                step,
                files,
                diff,
                untracked,
                base,
            } => {
                if !diff.is_empty() {
                    self.data(diff);
                }
                for file in untracked {
                    self.note(&format!("`{file}` is new and not in git yet"));
                }
                let since = if base == "HEAD" {
                    "HEAD".to_owned()
                } else {
                    format!(
                        "the commit it was approved on ({})",
                        &base[..base.len().min(12)]
                    )
                };
                self.note(&format!(
                    "{step} changed {}: the working tree against {since} (the run did not commit \
                     it, so other changes to the same files show too)",
                    files
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
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
