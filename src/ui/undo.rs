//! How an undo, a redo and progress rebuilt from git are said: the files and what happens to
//! each (with the diff of a dry run), the steps that go stale, and a refusal as one error
//! naming each file and who changed it. The subcommands and the session say them alike.

use super::Ui;
use super::outcomes::Said;
use crate::error::Error;
use crate::plan::StepId;
use crate::report::status::UndoneReport;
use crate::runner::redo::Verdict;
use crate::undo::from_git::{ClaimResult, ClaimVerified, ClaimsReport, InGit, Report};
use crate::undo::{Change, Conflict, FileChange, Redo, Refusal, Undo};

/// The lines of the files of an undo or redo: one per file, then its diff when asked.
pub fn file_lines(files: &[FileChange], with_diff: bool) -> String {
    let mut out = String::new();
    for file in files {
        let what = match file.change {
            Change::Remove => "remove (the step created it)".to_owned(),
            Change::Recreate => format!("recreate ({})", file.becomes),
            Change::Restore => format!("restore ({} → {})", file.now, file.becomes),
        };
        out.push_str(&format!("  {}: {what}\n", file.path));
        if with_diff && let Some(diff) = &file.diff {
            for line in diff.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
    }
    out
}

fn ids(steps: &[StepId]) -> String {
    steps
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn conflict_list(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| format!("`{}` {}", c.path, c.why))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The error a refused undo or redo ends with: every file named, with who changed it.
pub fn refusal_error(command: &str, step: StepId, refusal: &Refusal) -> Error {
    match refusal {
        Refusal::ChangedSince { conflicts } => Error::input(format!(
            "`{step}` cannot be {command}ne: {}",
            conflict_list(conflicts)
        ))
        .hint(format!(
            "their changes are kept; put them back first, or {command} the other files with \
             `tick {command} {step} --only PATH…`; nothing was changed"
        )),
        Refusal::NotKept { conflicts } => Error::input(format!(
            "`{step}` cannot be {command}ne: {}",
            conflict_list(conflicts)
        ))
        .hint(format!(
            "`tick {command} {step} --only PATH…` does the other files; `limits.max_undo_bytes` \
             sets how much tick keeps per step; nothing was changed"
        )),
        Refusal::RevertConflicts { commit, conflicts } => Error::input(format!(
            "the revert of `{}` for `{step}` would conflict: {}",
            commit.get(..10).unwrap_or(commit),
            conflict_list(conflicts)
        ))
        .hint("nothing was changed, not the files, not the index; revert it by hand with `git revert`"),
    }
}

/// What tick says of an undo done (or, with `--dry-run`, of what it would do): the same
/// lines for `tick undo` and the session's `/undo` (which says its hints in its own words).
pub fn undone(undo: &Undo) -> Vec<Said> {
    let mut out = String::new();
    if undo.dry_run {
        out.push_str(&format!(
            "`tick undo {}` would put back {}:\n",
            undo.step,
            files_word(undo.files.len())
        ));
    } else {
        out.push_str(&format!(
            "undid `{}`: put back {}, the step is open again (`[ ]`)\n",
            undo.step,
            files_word(undo.files.len())
        ));
    }
    out.push_str(&file_lines(&undo.files, undo.dry_run));
    if !undo.kept.is_empty() {
        out.push_str(&format!(
            "  left as they are: {}\n",
            undo.kept
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !undo.stale.is_empty() {
        let verb = if undo.dry_run { "would go" } else { "went" };
        out.push_str(&format!(
            "  {verb} stale (`[~]`, \"{} was undone\"): {}\n",
            undo.step,
            ids(&undo.stale)
        ));
    }
    if let Some(commit) = &undo.reverts {
        let short = commit.get(..10).unwrap_or(commit);
        match (&undo.revert_commit, undo.dry_run) {
            (_, true) => out.push_str(&format!(
                "  its commit `{short}` would be reverted (trailers `Reverts-Step: {}`, `Task:`)\n",
                undo.step
            )),
            (Some(revert), false) => out.push_str(&format!(
                "  reverted its commit `{short}` with `{}`\n",
                revert.get(..10).unwrap_or(revert)
            )),
            (None, false) => {}
        }
    }
    let mut said = vec![Said::Data(out.trim_end().to_owned())];
    if undo.dry_run {
        said.push(Said::Hint(
            "nothing was changed; run it without `--dry-run` to undo".to_owned(),
        ));
    } else {
        said.push(Said::Hint(format!(
            "`tick redo {}` puts it back; `tick run` does the step again",
            undo.step
        )));
    }
    said
}

impl Ui {
    /// An undo done, or with `--dry-run` what it would do.
    pub fn undone(&self, undo: &Undo) {
        self.say(&undone(undo));
    }

    /// A redo: its files, and what its verification said.
    pub fn redone(&self, redo: &Redo, verdict: Option<Verdict>) {
        let mut out = format!(
            "redid `{}`: put back {}\n",
            redo.step,
            files_word(redo.files.len())
        );
        out.push_str(&file_lines(&redo.files, false));
        self.data(out.trim_end());
        match verdict {
            Some(Verdict::Passed) => self.note(&format!("`{}` verified: done (`[x]`)", redo.step)),
            Some(Verdict::Failed) => self.warn(&format!(
                "`{}` fails its verification: it stays open; `tick run` does it again",
                redo.step
            )),
            Some(Verdict::NothingToRun) => self.note(&format!(
                "`{}` has no `verify`: it stays open; `tick mark {} done` ticks it by hand",
                redo.step, redo.step
            )),
            Some(Verdict::Kept) => self.note(&format!(
                "`{}` was changed by hand meanwhile; yours is kept",
                redo.step
            )),
            None => {}
        }
    }

    /// Progress rebuilt from git, for one task.
    pub fn from_git(&self, report: &Report) {
        let mut out = format!("{} (from the commits of `{}`)\n", report.task, report.range);
        for step in &report.steps {
            let git = match &step.git {
                InGit::None => "no commit".to_owned(),
                InGit::Committed { commit } => {
                    format!("committed `{}`", commit.get(..10).unwrap_or(commit))
                }
                InGit::Reverted { revert, .. } => {
                    format!("reverted by `{}`", revert.get(..10).unwrap_or(revert))
                }
            };
            out.push_str(&format!(
                "[{}] {} {}: {git}\n",
                step.status.marker(),
                step.step,
                step.title
            ));
        }
        self.data(out.trim_end());
        for disagreement in &report.disagreements {
            self.warn(&disagreement.message);
        }
    }
}

/// The line under a step whose last undo was not redone (`tick status`, a re-approval):
/// when, what was put back and how to take it forward again.
pub fn undone_line(step: Option<StepId>, undone: &UndoneReport<'_>) -> String {
    let step = step.map(|s| s.to_string()).unwrap_or_default();
    let mut line = format!(
        "undone {}: put back {}",
        undone.at.format("%Y-%m-%d %H:%M UTC"),
        undone.files.join(", ")
    );
    if let Some(commit) = undone.reverted {
        line.push_str(&format!(
            " (reverted `{}`)",
            commit.get(..10).unwrap_or(commit)
        ));
    }
    if !undone.kept.is_empty() {
        line.push_str(&format!("; kept {}", undone.kept.join(", ")));
    }
    line.push_str(&format!("; `tick redo {step}` puts it back"));
    line
}

/// The steps of `task` undone and not redone, said when its plan is approved again: the new
/// approval does not bring their changes back.
pub fn undone_steps(task: &crate::tasks::Task) -> Vec<Said> {
    let lines: Vec<String> = task
        .state
        .steps
        .iter()
        .filter_map(|(id, record)| {
            let undone = record.undone.last().filter(|u| u.redone_at.is_none())?;
            Some(format!(
                "    {id}: {}",
                undone_line(Some(*id), &UndoneReport::from(undone))
            ))
        })
        .collect();
    if lines.is_empty() {
        return Vec::new();
    }
    vec![Said::Note(format!(
        "undone steps of `{}` (the approval keeps them open, their changes out):\n{}",
        task.id,
        lines.join("\n")
    ))]
}

/// One claimed step verified again (`tick verify --from-git`): its verdict, then each command
/// that ran with its exit, and the output of a failed one.
pub fn claim_lines(claim: &ClaimVerified) -> String {
    let commit = claim.commit.get(..10).unwrap_or(&claim.commit);
    let verdict = match claim.result {
        ClaimResult::Passed => "passed",
        ClaimResult::Failed => "FAILED",
        ClaimResult::NoVerify => "no `verify` to run",
        ClaimResult::NotFound => "no such step here to verify",
    };
    let title = claim
        .title
        .as_deref()
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let mut out = format!(
        "{}{title} (`{commit}`, task `{}`): {verdict}\n",
        claim.step, claim.task
    );
    for ran in &claim.commands {
        let end = match (ran.exit_code, ran.timed_out) {
            (_, true) => "timed out".to_owned(),
            (Some(code), _) => format!("exit {code}"),
            (None, _) => "killed".to_owned(),
        };
        out.push_str(&format!("    $ {}: {end}\n", ran.command));
        if !ran.passed {
            for line in ran.output_tail.lines() {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

/// The closing lines of `tick verify --from-git`: how many claims held.
pub fn claims_summary(report: &ClaimsReport) -> Vec<Said> {
    if report.steps.is_empty() {
        return vec![Said::Note(format!(
            "no commit of `{}` claims a step (no `Task:` and `Step:` trailers not reverted since)",
            report.range
        ))];
    }
    let count = |result| report.steps.iter().filter(|s| s.result == result).count();
    let mut parts = vec![format!("{} passed", count(ClaimResult::Passed))];
    for (result, word) in [
        (ClaimResult::Failed, "failed"),
        (ClaimResult::NoVerify, "without `verify`"),
        (ClaimResult::NotFound, "not found"),
    ] {
        if count(result) > 0 {
            parts.push(format!("{} {word}", count(result)));
        }
    }
    let steps = if report.steps.len() == 1 {
        "1 step".to_owned()
    } else {
        format!("{} steps", report.steps.len())
    };
    let mut said = vec![Said::Note(format!(
        "the commits of `{}` claim {steps}: {}",
        report.range,
        parts.join(", ")
    ))];
    if report.exit_code != 0 {
        said.push(Said::Hint(
            "nothing was written; `tick verify S…` checks a step of this clone again \
             and opens it when it fails"
                .to_owned(),
        ));
    }
    said
}

impl Ui {
    /// A claimed step verified again, as soon as it ends.
    pub fn claim_verified(&self, claim: &ClaimVerified) {
        self.data(claim_lines(claim).trim_end());
    }

    /// The undone steps of a task approved again.
    pub fn undone_steps(&self, task: &crate::tasks::Task) {
        self.say(&undone_steps(task));
    }

    /// The closing lines of `tick verify --from-git`.
    pub fn claims_verified(&self, report: &ClaimsReport) {
        self.say(&claims_summary(report));
    }
}

fn files_word(n: usize) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}
