//! Progress rebuilt from git (`tick status --from-git`, `tick check --from-git`): each step's
//! state as the commits of a revision range say it (`Task:` / `Step:` trailers of `--commit`,
//! `Task:` / `Reverts-Step:` of an undo's revert), compared with TODO.md. Where they disagree
//! is a finding: a tick with no commit, a commit with no tick, a revert TODO.md does not
//! reflect, a commit whose files are not the step's record. Read-only: git is only asked.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::plan::{StepId, StepStatus};
use crate::tasks::Task;

/// The `format` of the JSON report.
pub const FORMAT: u32 = 1;
/// The exit code of `tick check --from-git` when the history and the ticks disagree.
pub const EXIT_DISAGREES: u8 = 15;

/// One commit of the range, with the trailers tick writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitCommit {
    pub id: String,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverts_step: Option<String>,
}

/// The commits of `range` (default `HEAD`) that carry a `Task:` trailer, newest first.
pub fn read_trailers(root: &Path, range: Option<&str>) -> Result<Vec<GitCommit>> {
    let range = range.unwrap_or("HEAD");
    if range.starts_with('-') {
        return Err(Error::input(format!("`{range}` is not a revision range"))
            .hint("give one like `main..HEAD` or `HEAD~10..`"));
    }
    let text = crate::git::output(root, &["log", "--format=%H%x1f%s%x1f%B%x1e", range, "--"])
        .ok_or_else(|| {
            Error::input(format!("git cannot read the range `{range}`"))
                .hint("run it inside a git repository with commits, with a range like `main..HEAD`")
        })?;
    Ok(text
        .split('\x1e')
        .filter_map(|entry| {
            let mut parts = entry.trim_start_matches('\n').splitn(3, '\x1f');
            let id = parts.next()?.trim().to_owned();
            let subject = parts.next()?.to_owned();
            let body = parts.next().unwrap_or_default();
            let trailer = |key: &str| {
                body.lines().rev().find_map(|line| {
                    line.strip_prefix(key)
                        .and_then(|rest| rest.strip_prefix(':'))
                        .map(|v| v.trim().to_owned())
                })
            };
            let task = trailer("Task");
            (!id.is_empty() && task.is_some()).then(|| GitCommit {
                id,
                subject,
                task,
                step: trailer("Step"),
                reverts_step: trailer("Reverts-Step"),
            })
        })
        .collect())
}

/// What git says of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum InGit {
    /// No commit of the range names it.
    None,
    /// Its newest commit is the step's own.
    Committed { commit: String },
    /// Its newest commit is a revert of it.
    Reverted { commit: String, revert: String },
}

/// Why the history and TODO.md disagree about a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DisagreementKind {
    TickWithoutCommit,
    CommitWithoutTick,
    RevertNotReflected,
    FilesDiffer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    pub kind: DisagreementKind,
    pub step: StepId,
    pub message: String,
}

/// One step: TODO.md's marker and git's word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepInGit {
    pub step: StepId,
    pub title: String,
    pub status: StepStatus,
    pub git: InGit,
}

/// The report of `--from-git`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub format: u32,
    pub task: String,
    pub range: String,
    pub steps: Vec<StepInGit>,
    pub disagreements: Vec<Disagreement>,
    pub exit_code: u8,
}

/// Compares `task`'s TODO.md with the commits of `range` in `root`.
pub fn compare(root: &Path, task: &Task, range: Option<&str>) -> Result<Report> {
    let commits: Vec<GitCommit> = read_trailers(root, range)?
        .into_iter()
        .filter(|c| c.task.as_deref() == Some(task.id.as_str()))
        .collect();
    let mut steps = Vec::new();
    let mut disagreements = Vec::new();
    for step in task.todo.all_steps() {
        let Some(id) = step.id else { continue };
        let name = id.to_string();
        let git = in_git(&commits, &name);
        let status = step.effective_status();
        let ticked = matches!(status, StepStatus::Done | StepStatus::Stale);
        let mut say = |kind, message: String| {
            disagreements.push(Disagreement {
                kind,
                step: id,
                message,
            });
        };
        match &git {
            InGit::None if ticked && !commits.is_empty() && step.substeps.is_empty() => say(
                DisagreementKind::TickWithoutCommit,
                format!(
                    "`{id}` is ticked, but no commit carries `Task: {}` and `Step: {id}`",
                    task.id
                ),
            ),
            InGit::Committed { commit } if !ticked => say(
                DisagreementKind::CommitWithoutTick,
                format!(
                    "{} commits `{id}`, but TODO.md has it `[{}]`",
                    short(commit),
                    status.marker()
                ),
            ),
            InGit::Committed { commit } => {
                let recorded: BTreeSet<String> = task
                    .state
                    .steps
                    .get(&id)
                    .map(|r| r.files_changed.iter().cloned().collect())
                    .unwrap_or_default();
                let committed = commit_files(root, commit);
                if !recorded.is_empty() && committed != recorded {
                    let list = |s: &BTreeSet<String>| {
                        s.iter()
                            .map(|p| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    say(
                        DisagreementKind::FilesDiffer,
                        format!(
                            "{} commits {} for `{id}`, whose record says {}",
                            short(commit),
                            list(&committed),
                            list(&recorded)
                        ),
                    );
                }
            }
            InGit::Reverted { revert, .. } if ticked => say(
                DisagreementKind::RevertNotReflected,
                format!(
                    "{} reverts `{id}`, but TODO.md still has it `[{}]`",
                    short(revert),
                    status.marker()
                ),
            ),
            _ => {}
        }
        steps.push(StepInGit {
            step: id,
            title: step.title.clone(),
            status,
            git,
        });
    }
    let exit_code = if disagreements.is_empty() {
        0
    } else {
        EXIT_DISAGREES
    };
    Ok(Report {
        format: FORMAT,
        task: task.id.clone(),
        range: range.unwrap_or("HEAD").to_owned(),
        steps,
        disagreements,
        exit_code,
    })
}

/// A step the range claims done: its newest commit there is its own (`Task:` and `Step:`),
/// not a revert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub task: String,
    pub step: String,
    pub commit: String,
}

/// The steps the commits of `range` claim, oldest claim first, each once.
pub fn claims(root: &Path, range: Option<&str>) -> Result<Vec<Claim>> {
    let commits = read_trailers(root, range)?;
    let mut seen = BTreeSet::new();
    let mut claims = Vec::new();
    for commit in commits.iter().rev() {
        let (Some(task), Some(step)) = (&commit.task, &commit.step) else {
            continue;
        };
        if !seen.insert((task.clone(), step.clone())) {
            continue;
        }
        let of_task: Vec<GitCommit> = commits
            .iter()
            .filter(|c| c.task.as_ref() == Some(task))
            .cloned()
            .collect();
        if let InGit::Committed { commit } = in_git(&of_task, step) {
            claims.push(Claim {
                task: task.clone(),
                step: step.clone(),
                commit,
            });
        }
    }
    Ok(claims)
}

/// The report of `tick verify --from-git`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimsReport {
    pub format: u32,
    /// The range read (`HEAD` when none was given).
    pub range: String,
    /// Each claimed step, oldest claim first.
    pub steps: Vec<ClaimVerified>,
    /// 15 when a step failed or names none here, else 11 when one has no `verify`, else 0.
    pub exit_code: u8,
}

/// What the verification of one claimed step showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimResult {
    /// Every `verify` command of the step exits 0 now.
    Passed,
    /// A `verify` command failed (the ones after it did not run).
    Failed,
    /// The step has no `verify` to run: the claim rests on the tick alone.
    NoVerify,
    /// No task or step of that name here: nothing to verify the claim with.
    NotFound,
}

/// One verify command as it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRan {
    pub command: String,
    pub passed: bool,
    /// `None` when it was killed (timeout or signal) or could not start.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Its last lines of output (secrets redacted).
    pub output_tail: String,
}

/// One claimed step, verified again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimVerified {
    pub task: String,
    pub step: String,
    /// The step's title in TODO.md; none when TODO.md has no such step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The claiming commit, in full.
    pub commit: String,
    pub result: ClaimResult,
    /// The commands that ran, up to the first that failed.
    pub commands: Vec<CommandRan>,
}

/// The exit code of `tick verify --from-git` when a claimed step has no `verify` (and none
/// failed): `tick check`'s "done without verification".
pub const EXIT_NO_VERIFY: u8 = 11;

/// Which claims to verify: those of `task` (an id) when given, of the steps `only` when not
/// empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaimFilter<'a> {
    pub task: Option<&'a str>,
    pub only: &'a [StepId],
}

/// Runs again, in `env` (the sandbox of a run), the `verify` commands TODO.md gives each step
/// the commits of `range` claim, stopping a step at its first failing command; `said` hears
/// each step as it ends. Writes nothing: a claim is checked, not ticked or opened.
pub fn verify_claims(
    store: &crate::tasks::Store,
    range: Option<&str>,
    filter: ClaimFilter<'_>,
    env: &crate::tools::bash::CommandEnv,
    timeout: std::time::Duration,
    said: &mut dyn FnMut(&ClaimVerified),
) -> Result<ClaimsReport> {
    let root = store.root();
    let known = store.task_ids()?;
    let mut tasks = std::collections::BTreeMap::<String, Option<Task>>::new();
    let mut steps = Vec::new();
    for claim in claims(root, range)? {
        if filter.task.is_some_and(|t| t != claim.task) {
            continue;
        }
        let id = claim.step.parse::<StepId>().ok();
        if !filter.only.is_empty() && !id.is_some_and(|id| filter.only.contains(&id)) {
            continue;
        }
        let task = tasks.entry(claim.task.clone()).or_insert_with(|| {
            known
                .contains(&claim.task)
                .then(|| store.load(&store.task_ref(&claim.task)).ok())
                .flatten()
        });
        let step = task
            .as_ref()
            .zip(id)
            .and_then(|(task, id)| task.todo.find(id));
        let mut verified = ClaimVerified {
            task: claim.task,
            step: claim.step,
            title: step.map(|s| s.title.clone()),
            commit: claim.commit,
            result: ClaimResult::NotFound,
            commands: Vec::new(),
        };
        if let Some(step) = step {
            verified.result = if step.verify.is_empty() {
                ClaimResult::NoVerify
            } else {
                ClaimResult::Passed
            };
            for command in &step.verify {
                let ran = run_one(root, env, command, timeout);
                let passed = ran.passed;
                verified.commands.push(ran);
                if !passed {
                    verified.result = ClaimResult::Failed;
                    break;
                }
            }
        }
        said(&verified);
        steps.push(verified);
    }
    let exit_code = if steps
        .iter()
        .any(|s| matches!(s.result, ClaimResult::Failed | ClaimResult::NotFound))
    {
        EXIT_DISAGREES
    } else if steps.iter().any(|s| s.result == ClaimResult::NoVerify) {
        EXIT_NO_VERIFY
    } else {
        0
    };
    Ok(ClaimsReport {
        format: FORMAT,
        range: range.unwrap_or("HEAD").to_owned(),
        steps,
        exit_code,
    })
}

fn run_one(
    root: &Path,
    env: &crate::tools::bash::CommandEnv,
    command: &str,
    timeout: std::time::Duration,
) -> CommandRan {
    match crate::tools::bash::run_command(root, env, command, timeout) {
        Ok(run) => CommandRan {
            command: command.to_owned(),
            passed: run.passed(),
            exit_code: run.exit_code,
            timed_out: run.timed_out,
            duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
            output_tail: crate::redact::redact(&tail(&run.output, 20), &[]),
        },
        Err(err) => CommandRan {
            command: command.to_owned(),
            passed: false,
            exit_code: None,
            timed_out: false,
            duration_ms: 0,
            output_tail: format!("could not run it: {err}"),
        },
    }
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The newest word of `commits` (newest first) on step `name`.
fn in_git(commits: &[GitCommit], name: &str) -> InGit {
    for (at, commit) in commits.iter().enumerate() {
        if commit.reverts_step.as_deref() == Some(name) {
            let reverted = commits[at + 1..]
                .iter()
                .find(|c| c.step.as_deref() == Some(name))
                .map(|c| c.id.clone())
                .unwrap_or_default();
            return InGit::Reverted {
                commit: reverted,
                revert: commit.id.clone(),
            };
        }
        if commit.step.as_deref() == Some(name) {
            return InGit::Committed {
                commit: commit.id.clone(),
            };
        }
    }
    InGit::None
}

/// The files a commit changed, outside `.tasks/`.
pub(super) fn commit_files(root: &Path, commit: &str) -> BTreeSet<String> {
    crate::git::output(
        root,
        &[
            "diff-tree",
            "--no-commit-id",
            "-r",
            "-z",
            "--name-only",
            "--root",
            commit,
        ],
    )
    .unwrap_or_default()
    .split('\0')
    .filter(|p| !p.is_empty() && !p.starts_with(crate::store_path::TASKS_DIR))
    .map(str::to_owned)
    .collect()
}

fn short(commit: &str) -> String {
    format!("`{}`", commit.get(..10).unwrap_or(commit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(id: &str, step: Option<&str>, reverts: Option<&str>) -> GitCommit {
        GitCommit {
            id: id.into(),
            subject: String::new(),
            task: Some("t".into()),
            step: step.map(Into::into),
            reverts_step: reverts.map(Into::into),
        }
    }

    #[test]
    fn the_newest_commit_of_a_step_decides() {
        let commits = [
            commit("c3", None, Some("S2")),
            commit("c2", Some("S2"), None),
            commit("c1", Some("S1"), None),
        ];
        assert_eq!(
            in_git(&commits, "S2"),
            InGit::Reverted {
                commit: "c2".into(),
                revert: "c3".into()
            }
        );
        assert_eq!(
            in_git(&commits, "S1"),
            InGit::Committed {
                commit: "c1".into()
            }
        );
        assert_eq!(in_git(&commits, "S3"), InGit::None);
    }
}
