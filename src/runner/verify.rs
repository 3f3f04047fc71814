//! A step's verification: its `verify` commands, run the way the agent's `bash` runs them,
//! each result kept as evidence for state.yaml and reported as a [`RunEvent::Verification`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::events::RunEvent;
use super::record::Recorder;
use crate::agent::executor::Verdict;
use crate::plan::StepId;
use crate::tasks::state::Evidence;
use crate::text::tail;
use crate::tools::bash::{self, CommandEnv};

/// How often a step's verification may fail before the step is blocked.
pub const MAX_VERIFY_ATTEMPTS: u32 = 3;
/// How long one verify command may run.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs one step's verify commands, counting attempts and keeping the last attempt's evidence.
#[derive(Debug, Clone)]
pub struct StepVerifier {
    root: PathBuf,
    env: CommandEnv,
    step: StepId,
    commands: Vec<String>,
    attempts: u32,
    /// Failed attempts before it gives up ([`MAX_VERIFY_ATTEMPTS`] unless the executor tries
    /// several candidates, each with its own attempts).
    max_attempts: u32,
    evidence: Vec<Evidence>,
    timeout: Duration,
}

impl StepVerifier {
    pub fn new(root: &Path, env: &CommandEnv, step: StepId, commands: &[String]) -> Self {
        StepVerifier {
            root: root.to_path_buf(),
            env: env.clone(),
            step,
            commands: commands.to_vec(),
            attempts: 0,
            max_attempts: MAX_VERIFY_ATTEMPTS,
            evidence: Vec::new(),
            timeout: VERIFY_TIMEOUT,
        }
    }

    /// Gives up after `max` failed attempts instead of [`MAX_VERIFY_ATTEMPTS`] (at least that).
    #[must_use]
    pub fn with_max_attempts(mut self, max: u32) -> Self {
        self.max_attempts = max.max(MAX_VERIFY_ATTEMPTS);
        self
    }

    #[cfg(test)]
    fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    pub fn has_commands(&self) -> bool {
        !self.commands.is_empty()
    }

    /// The evidence of the last attempt: one entry per command that ran.
    pub fn evidence(&self) -> &[Evidence] {
        &self.evidence
    }

    /// How many attempts the claims of this step used.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Adds a hook's verdicts (`step.verify`, `step.claimed`) to this attempt's evidence.
    pub fn add_evidence(&mut self, evidence: impl IntoIterator<Item = Evidence>) {
        self.evidence.extend(evidence);
    }

    /// This attempt's evidence is only a hook's (a `step.claimed` hook refused the claim
    /// before the commands ran).
    pub fn set_evidence(&mut self, evidence: Vec<Evidence>) {
        self.evidence = evidence;
    }

    /// A hook refused the `done` claim (`step.claimed` before the commands, `step.verify`
    /// after them): the refusal counts toward the same limit as a failed verification
    /// (`count`: the commands did not already count this claim), so no hook keeps a step in
    /// a loop.
    pub fn refused(&mut self, count: bool, report: &str) -> Verdict {
        if count {
            self.attempts += 1;
        }
        if self.attempts >= MAX_VERIFY_ATTEMPTS {
            let first = report.lines().next().unwrap_or_default();
            return Verdict::GaveUp {
                reason: format!(
                    "the done claim was refused {} times; last: {first}",
                    self.attempts
                ),
            };
        }
        Verdict::Failed {
            report: format!(
                "{report}\nFix the problem and call `update_step` `done` again ({} of \
                 {MAX_VERIFY_ATTEMPTS} attempts used).",
                self.attempts
            ),
        }
    }

    /// Runs the commands in order, stopping at the first that fails. Each command is
    /// journaled through `recorder` and reported to `emit`.
    pub fn verify(&mut self, recorder: &mut Recorder, emit: &mut dyn FnMut(RunEvent)) -> Verdict {
        if self.commands.is_empty() {
            return Verdict::Passed {
                report: "This step has no verification; tick ticks it as done without \
                         verification."
                    .to_owned(),
            };
        }
        self.attempts += 1;
        self.evidence.clear();
        let mut report = String::new();
        for command in &self.commands {
            recorder.command_started();
            let run = match bash::run_command(&self.root, &self.env, command, self.timeout) {
                Ok(run) => run,
                Err(err) => {
                    return Verdict::GaveUp {
                        reason: format!("could not run the verification `{command}`: {err}"),
                    };
                }
            };
            recorder.command_ended();
            let duration_ms = u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX);
            let passed = run.passed();
            let output_tail = crate::redact::redact(&tail(&run.output, 20, 2_000), &[]);
            emit(RunEvent::Verification {
                step: self.step,
                command: command.clone(),
                passed,
                exit_code: run.exit_code,
                timed_out: run.timed_out,
                duration_ms,
                output_tail: output_tail.clone(),
            });
            self.evidence.push(Evidence {
                command: command.clone(),
                exit_code: run.exit_code.unwrap_or(-1),
                duration_ms,
                output_hash: blake3::hash(run.output.as_bytes()).to_hex().to_string(),
                output_tail,
            });
            if !passed {
                let outcome = if run.timed_out {
                    format!("timed out after {} s", self.timeout.as_secs())
                } else {
                    match run.exit_code {
                        Some(code) => format!("exit {code}"),
                        None => "killed".to_owned(),
                    }
                };
                report = format!(
                    "Verification failed: `{command}` ({outcome}).\n{}\n",
                    tail(&run.output, 60, 6_000)
                );
                break;
            }
        }
        if report.is_empty() {
            let summary: Vec<String> = self
                .evidence
                .iter()
                .map(|e| format!("`{}` exit 0 in {} ms", e.command, e.duration_ms))
                .collect();
            return Verdict::Passed {
                report: format!(
                    "Verification passed: {}. The step is done.",
                    summary.join(", ")
                ),
            };
        }
        if self.attempts >= self.max_attempts {
            let failed = self
                .evidence
                .last()
                .map_or(String::new(), |e| e.command.clone());
            return Verdict::GaveUp {
                reason: format!(
                    "verification failed {} times; last: `{failed}`",
                    self.attempts
                ),
            };
        }
        report.push_str(&format!(
            "Fix the problem and call `update_step` `done` again ({} of {} attempts used).",
            self.attempts, self.max_attempts
        ));
        Verdict::Failed { report }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Clock;
    use crate::tasks::Store;
    use crate::tasks::journal::{self, Record};
    use std::time::SystemTime;

    /// A recorder for `S2` (files: `a.txt`) of a task in the workspace `root`.
    fn recorder(root: &Path) -> Recorder {
        Recorder::new(
            &Store::at(root),
            "20261130-143012-t",
            StepId::top(2),
            &["a.txt".to_owned()],
            Clock::system(),
            SystemTime::now(),
        )
    }

    fn verifier(root: &Path, commands: &[&str]) -> StepVerifier {
        let commands: Vec<String> = commands.iter().map(|c| (*c).to_owned()).collect();
        StepVerifier::new(root, &CommandEnv::default(), StepId::top(2), &commands)
    }

    #[test]
    fn passing_commands_leave_evidence_events_and_journal_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let mut recorder = recorder(dir.path());
        let mut v = verifier(
            dir.path(),
            &["grep -q hello a.txt", "echo hello again > a.txt"],
        );
        let mut events = Vec::new();
        let verdict = v.verify(&mut recorder, &mut |e| events.push(e));
        assert!(matches!(verdict, Verdict::Passed { .. }), "{verdict:?}");
        assert_eq!(v.evidence().len(), 2);
        assert_eq!(v.evidence()[1].output_tail, "");
        assert_eq!(
            v.evidence()[0].output_hash,
            blake3::hash(b"").to_hex().to_string()
        );
        let passed: Vec<(String, bool, Option<i32>)> = events
            .iter()
            .map(|e| match e {
                RunEvent::Verification {
                    command,
                    passed,
                    exit_code,
                    step,
                    ..
                } => {
                    assert_eq!(*step, StepId::top(2));
                    (command.clone(), *passed, *exit_code)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            passed,
            [
                ("grep -q hello a.txt".to_owned(), true, Some(0)),
                ("echo hello again > a.txt".to_owned(), true, Some(0))
            ]
        );
        // Each command is journalled with the step's files before and after it: the second
        // one is what changed `a.txt`, and the record says so by content.
        let hash = |text: &str| blake3::hash(text.as_bytes()).to_hex().to_string();
        let journal = journal::read_workspace(&dir.path().join(".tasks")).unwrap();
        let seen: Vec<(Option<&String>, Option<&String>)> = journal
            .iter()
            .map(|record| match record {
                Record::Command {
                    before,
                    after,
                    step,
                    scope,
                    ..
                } => {
                    assert_eq!(
                        (step.as_deref(), scope.as_slice()),
                        (Some("S2"), &["a.txt".to_owned()][..])
                    );
                    (before.get("a.txt"), after.get("a.txt"))
                }
                other @ Record::Write { .. } => panic!("{other:?}"),
            })
            .collect();
        let (old, new) = (hash("hello\n"), hash("hello again\n"));
        assert_eq!(seen, [(Some(&old), Some(&old)), (Some(&old), Some(&new))]);
    }

    #[test]
    fn a_failure_stops_at_that_command_and_three_failures_give_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut recorder = recorder(dir.path());
        let mut v = verifier(dir.path(), &["echo no; exit 3", "echo never"]);
        let mut events = Vec::new();
        for attempt in 1..=2 {
            match v.verify(&mut recorder, &mut |e| events.push(e)) {
                Verdict::Failed { report } => {
                    assert!(
                        report.contains("Verification failed: `echo no; exit 3` (exit 3)"),
                        "{report}"
                    );
                    assert!(report.contains(&format!("({attempt} of 3 attempts used)")));
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(v.evidence().len(), 1, "the second command never ran");
            assert_eq!(v.evidence()[0].exit_code, 3);
        }
        let verdict = v.verify(&mut recorder, &mut |e| events.push(e));
        assert_eq!(
            verdict,
            Verdict::GaveUp {
                reason: "verification failed 3 times; last: `echo no; exit 3`".into()
            }
        );
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn a_timeout_is_a_failure_without_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let mut recorder = recorder(dir.path());
        let mut v = verifier(dir.path(), &["sleep 5"]).with_timeout(Duration::from_millis(200));
        let mut events = Vec::new();
        let verdict = v.verify(&mut recorder, &mut |e| events.push(e));
        assert!(
            matches!(verdict, Verdict::Failed { ref report } if report.contains("timed out")),
            "{verdict:?}"
        );
        assert!(matches!(
            events[0],
            RunEvent::Verification {
                exit_code: None,
                timed_out: true,
                passed: false,
                ..
            }
        ));
        assert_eq!(v.evidence()[0].exit_code, -1);
    }

    #[test]
    fn no_commands_pass_without_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let mut recorder = recorder(dir.path());
        let mut v = verifier(dir.path(), &[]);
        assert!(!v.has_commands());
        let verdict = v.verify(&mut recorder, &mut |_| panic!("no event"));
        assert!(matches!(verdict, Verdict::Passed { .. }));
        assert!(v.evidence().is_empty());
    }
}
