//! The runner below the CLI: one step against a loopback model server that answers from a
//! script, in a real temp workspace with real files and real verify commands.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::*;
use crate::llm::{ClientConfig, ProviderKind};
use crate::person::Nobody;
use crate::tools::{Mode, Workspace};

// The integration tests' fake model server and scripted replies, the one implementation both
// kinds of test share.
#[allow(
    dead_code,
    reason = "shared with the integration tests, which use the rest"
)]
#[path = "../../tests/common/fake_model.rs"]
mod fake_model;
#[allow(
    dead_code,
    reason = "shared with the integration tests, which use the rest"
)]
#[path = "../../tests/common/scripts.rs"]
mod scripts;

use fake_model::{FakeModel, Reply};
use scripts::openai_calls;

/// The fake model server on a runtime of its own, so it keeps serving while the runner blocks
/// this thread on its own runtime.
struct LoopbackModel {
    server: FakeModel,
    _runtime: tokio::runtime::Runtime,
}

impl LoopbackModel {
    /// A server that answers each request with the next of `replies`.
    fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(FakeModel::start());
        for reply in replies {
            server.push(reply);
        }
        LoopbackModel {
            server,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("{}/v1", self.server.url())
    }
}

const PLAN: &str =
    "---\ntitle: Greeting\nstatus: approved\n---\n# Greeting\n\n## Summary\nGreet.\n";
const TODO: &str = "# TODO: Greeting\n\n- [ ] S1 Create greeting.txt\n  - files: greeting.txt\n  - verify: `grep -q hello greeting.txt`\n- [ ] S2 Document it\n  - files: NOTES.md\n";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    task: TaskRef,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::at(dir.path());
    store.ensure().unwrap();
    let task = store.task_ref("20261130-143012-greeting");
    std::fs::create_dir_all(&task.dir).unwrap();
    std::fs::write(task.dir.join(PLAN_FILE), PLAN).unwrap();
    std::fs::write(task.dir.join(TODO_FILE), TODO).unwrap();
    crate::tasks::approved_for_test(&task.dir, PLAN);
    Fixture {
        _dir: dir,
        store,
        task,
    }
}

fn at() -> DateTime<Utc> {
    "2026-11-30T14:30:12Z".parse().unwrap()
}

/// Runs `body` with a runner on the fixture's task against `model`.
fn with_runner<T>(
    fx: &Fixture,
    model: &LoopbackModel,
    body: impl FnOnce(&mut Runner<'_>) -> T,
) -> T {
    let mut config = ClientConfig::new(ProviderKind::OpenAi, model.url());
    config.max_retries = 0;
    let client = Client::new(config).unwrap();
    let registry = Registry::for_mode(Mode::Build, Workspace::new(fx.store.root()).unwrap());
    let lock = fx.store.lock_task_now(&fx.task, "test").unwrap();
    let mut runner = Runner::new(RunnerDeps {
        store: &fx.store,
        task: fx.task.clone(),
        lock: &lock,
        client: &client,
        model: "test-model".into(),
        system: "You execute steps.".into(),
        registry: &registry,
        limits: Limits::default(),
        secrets: Vec::new(),
        clock: Clock::fixed(at()),
        interrupted: Arc::new(AtomicBool::new(false)),
        commit: false,
        watch: false,
        sandboxed: false,
        tool_calls: crate::config::ToolCalls::default(),
        compact: None,
        hooks: crate::hooks::HookSet::default(),
    })
    .unwrap();
    body(&mut runner)
}

/// The kind of each event; the model's own events as `agent:<kind>`.
fn kinds(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let value = serde_json::to_value(event).unwrap();
            match event {
                RunEvent::Agent { .. } => {
                    format!("agent:{}", value["agent"]["event"].as_str().unwrap())
                }
                _ => value["event"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

#[test]
fn one_step_emits_its_events_in_order_and_is_ticked_with_evidence() {
    let fx = fixture();
    let model = LoopbackModel::start([
        openai_calls(&[(
            "c1",
            "write_file",
            json!({"path": "greeting.txt", "content": "hello\n"}),
        )]),
        openai_calls(&[("c2", "update_step", json!({"id": "S1", "status": "done"}))]),
    ]);
    let mut events = Vec::new();
    let outcome = with_runner(&fx, &model, |runner| {
        let task = runner.load(&mut |e| events.push(e)).unwrap();
        assert_eq!(runner.next(&task, None), Next::Step(StepId::top(1)));
        runner
            .run_step(&task, StepId::top(1), &mut Nobody, &mut |e| {
                events.push(e);
            })
            .unwrap()
    });
    assert_eq!(outcome, StepOutcome::Done);
    assert_eq!(
        kinds(&events),
        [
            "step_started",
            "agent:request",
            "agent:usage",
            "agent:tool_call",
            "agent:tool_result",
            "agent:request",
            "agent:usage",
            "agent:tool_call",
            "verification",
            "agent:tool_result",
            "step_done"
        ]
    );
    assert_eq!(
        events.last().unwrap(),
        &RunEvent::StepDone {
            step: StepId::top(1),
            verified: true,
            passed_before: false,
            files_changed: vec!["greeting.txt".into()],
        }
    );
    let task = fx.store.load(&fx.task).unwrap();
    assert!(
        task.todo_src.contains("- [x] S1 Create greeting.txt"),
        "{}",
        task.todo_src
    );
    let record = &task.state.steps[&StepId::top(1)];
    assert!(record.verified());
    assert_eq!(record.done_at, Some(at()), "the passed-in clock");
    assert_eq!(record.evidence[0].command, "grep -q hello greeting.txt");
    assert!(record.fingerprints.contains_key("greeting.txt"));
    // The model got the step's context pack, with the tools of build mode.
    let requests = model.server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].messages()[1]["content"].as_str().unwrap();
    assert!(
        first.contains("## Your step: S1 Create greeting.txt"),
        "{first}"
    );
}

#[test]
fn a_failed_verification_goes_back_and_a_deviation_pauses_unless_confirmed() {
    struct Yes(Vec<(StepId, Vec<String>)>);
    impl Person for Yes {
        fn go_on_after_deviation(&mut self, step: StepId, files: &[String]) -> bool {
            self.0.push((step, files.to_vec()));
            true
        }
    }
    for go_on in [false, true] {
        let fx = fixture();
        // The first claim comes after a wrong write: the verification sends it back.
        let model = LoopbackModel::start([
            openai_calls(&[
                (
                    "c0",
                    "write_file",
                    json!({"path": "greeting.txt", "content": "goodbye\n"}),
                ),
                ("c1", "update_step", json!({"id": "S1", "status": "done"})),
            ]),
            openai_calls(&[
                (
                    "c2",
                    "write_file",
                    json!({"path": "greeting.txt", "content": "hello\n"}),
                ),
                (
                    "c3",
                    "write_file",
                    json!({"path": "extra.txt", "content": "x\n"}),
                ),
            ]),
            openai_calls(&[("c4", "update_step", json!({"id": "S1", "status": "done"}))]),
        ]);
        let mut events = Vec::new();
        let mut yes = Yes(Vec::new());
        let outcome = with_runner(&fx, &model, |runner| {
            let task = runner.load(&mut |e| events.push(e)).unwrap();
            let confirm: &mut dyn Person = if go_on { &mut yes } else { &mut Nobody };
            runner
                .run_step(&task, StepId::top(1), confirm, &mut |e| events.push(e))
                .unwrap()
        });
        let verdicts: Vec<bool> = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::Verification { passed, .. } => Some(*passed),
                _ => None,
            })
            .collect();
        assert_eq!(verdicts, [false, true]);
        assert!(events.contains(&RunEvent::Deviation {
            step: StepId::top(1),
            files: vec!["extra.txt".into()],
            allowed: false,
        }));
        let paused = events.iter().any(|e| {
            matches!(e, RunEvent::Paused { step, files, .. }
                if *step == StepId::top(1) && *files == ["extra.txt"])
        });
        if go_on {
            assert_eq!(outcome, StepOutcome::Done);
            assert!(!paused);
            assert_eq!(yes.0, [(StepId::top(1), vec!["extra.txt".to_owned()])]);
        } else {
            assert_eq!(outcome, StepOutcome::Paused);
            assert!(paused);
        }
        let record = &fx.store.load(&fx.task).unwrap().state.steps[&StepId::top(1)];
        assert_eq!(record.deviations, ["extra.txt"]);
        assert_eq!(record.files_changed, ["extra.txt", "greeting.txt"]);
    }
}

#[test]
fn a_blocked_step_is_marked_with_its_reason_and_the_run_stops_there() {
    let fx = fixture();
    let model = LoopbackModel::start([openai_calls(&[(
        "c1",
        "update_step",
        json!({"id": "S1", "status": "blocked", "reason": "hello or hi?"}),
    )])]);
    let mut events = Vec::new();
    let outcome = with_runner(&fx, &model, |runner| {
        runner
            .run(RunOptions::default(), &mut Nobody, &mut |e| {
                events.push(e);
            })
            .unwrap()
    });
    assert_eq!(outcome.ended, StepOutcome::Blocked);
    assert_eq!(outcome.steps_run, 1);
    let kinds: Vec<String> = kinds(&events)
        .into_iter()
        .filter(|k| !k.starts_with("agent:"))
        .collect();
    assert_eq!(
        kinds,
        ["run_started", "step_started", "step_blocked", "summary"]
    );
    assert_eq!(
        outcome.summary.blocked,
        [BlockedStep {
            step: StepId::top(1),
            reason: Some("hello or hi?".into())
        }]
    );
    let todo = fx.store.load(&fx.task).unwrap().todo_src;
    assert!(todo.contains("- [!] S1 Create greeting.txt"), "{todo}");
    assert!(todo.contains("  - blocked: hello or hi?\n"), "{todo}");
}
