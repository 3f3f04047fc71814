//! What `tick plan` prints, pinned by snapshots: a plain draft, a draft whose planner has
//! questions and no terminal to ask them at (needs-input), a revision with its step diff, and
//! the planner without `run_command`. The real binary against the loopback fake model; temp
//! paths are filtered.

use serde_json::json;

use crate::common::scripts::asks_user;
use crate::common::scripts::{login_plan, openai_call, submit_login_plan};
use crate::common::workspace::revised_login;
use crate::common::workspace::{Workspace, event_kinds, json_events, scripted, stderr, stdout};

/// Exit code, stdout and stderr of one command, as a person reads them.
fn both(output: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        stdout(output),
        stderr(output)
    )
}

fn filters(project: &Workspace) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &regex_escape(&project.root().display().to_string()),
        "[REPO]",
    );
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escape = "\\.+*?()|[]{}^$#&-~".contains(c);
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_draft() {
    let project = Workspace::sample();
    let replies = [
        openai_call("call_1", "list_files", json!({})),
        openai_call("call_2", "read_file", json!({"path": "src/login.rs"})),
        openai_call("call_3", "submit_plan", login_plan()),
    ];
    let (output, _) = scripted(&project, replies, &["plan", "Refactor login"]).await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_plain_draft", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_with_questions_without_a_terminal() {
    let project = Workspace::sample();
    let ask = asks_user(&json!([
        {"question": "Keep sessions in Redis or in the database?", "why": "both exist", "options": ["redis", "database"]},
        {"question": "May the old endpoint go?"}
    ]));
    let (output, _) = scripted(&project, [ask], &["plan", "Move sessions"]).await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_needs_input", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_shows_the_step_diff() {
    let project = Workspace::sample();
    let (output, _) = revised_login(&project, &[]).await;
    filters(&project).bind(|| insta::assert_snapshot!("plan_output_revised", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_without_run_command() {
    let project = Workspace::sample();
    let server = crate::common::fake_model::FakeModel::start().await;
    server.push(submit_login_plan());
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_SANDBOX", "off");
        })
        .await;
    filters(&project)
        .bind(|| insta::assert_snapshot!("plan_output_without_run_command", both(&output)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_json_starts_with_its_format_and_stays_json_through_a_revision() {
    let project = Workspace::sample();
    let (output, server) = scripted(
        &project,
        [submit_login_plan()],
        &["plan", "--json", "Refactor login"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first: serde_json::Value =
        serde_json::from_str(stdout(&output).lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        json!({"event": "plan_started", "format": 1, "start": "new"})
    );

    let mut revised = login_plan();
    revised["steps"][1]["title"] = json!("Move login into src/auth");
    server.push(openai_call("call_2", "submit_plan", revised));
    let output = project
        .tick_against(
            &server,
            &["plan", "--json", "--revise", "name the new module auth"],
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    // The step diff is an event like the others, not raw text in the middle of the stream.
    let events = json_events(&output);
    let kinds = event_kinds(&events);
    assert_eq!(
        kinds,
        [
            "plan_started",
            "request",
            "usage",
            "tool_call",
            "tool_result",
            "steps_changed",
            "draft",
            "result"
        ]
    );
    assert_eq!(events[0]["start"], "revise");
    assert!(
        events[5]["diff"]
            .as_str()
            .unwrap()
            .contains("+S2 Move login into src/auth")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_json_of_a_draft_with_questions() {
    let project = Workspace::sample();
    let ask =
        asks_user(&json!([{"question": "Which database?", "options": ["redis", "postgres"]}]));
    let (output, _) = scripted(&project, [ask], &["plan", "--json", "Move sessions"]).await;
    let events = json_events(&output);
    filters(&project).bind(|| insta::assert_json_snapshot!("plan_output_needs_input_json", events));
}

/// The library below `tick plan`: a session driven with a scripted person, as the
/// interactive session will drive it.
mod session {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use serde_json::json;
    use tick::config::{Config, Flags};
    use tick::person::{Nobody, Person};
    use tick::plan::Phase;
    use tick::planning::{PlanDeps, PlanEvent, RunCommand, Session, Start, Target};
    use tick::tasks::Store;
    use tick::tools::Questions;

    use crate::common::fake_model::FakeModel;
    use crate::common::scripts::{asks_user, login_plan, openai_call};
    use crate::common::workspace::{NOW, Workspace};

    /// A person who answers every question with `answer`, and remembers what was asked.
    struct Scripted {
        answer: String,
        asked: Vec<String>,
    }

    impl Person for Scripted {
        fn answer_questions(&mut self, questions: &Questions) -> Option<String> {
            self.asked
                .extend(questions.questions.iter().map(|q| q.question.clone()));
            Some(self.answer.clone())
        }
    }

    fn config(project: &Workspace, server: &FakeModel) -> Config {
        let vars: BTreeMap<String, String> = [
            ("HOME", project.root().display().to_string()),
            ("TICK_PROVIDER", "openai".to_owned()),
            ("TICK_BASE_URL", format!("{}/v1", server.url())),
            ("TICK_MODEL", "test-model".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let env = tick::env::Env::fixed(project.root().to_path_buf(), vars, NOW.parse().unwrap());
        let store = Store::at(project.root());
        tick::config::resolve(
            &store.config_path(),
            "config",
            &tick::trust::TrustState::Untrusted,
            &env,
            &Flags::default(),
        )
        .unwrap()
    }

    /// Runs `body` with a session on the project's draft, off the async runtime (the session
    /// runs the planner's turn on a runtime of its own); returns its result and the events.
    async fn with_session<T: Send + 'static>(
        project: &Workspace,
        server: &FakeModel,
        body: impl FnOnce(&mut Session<'_>, &mut tick::planning::Sink<'_>) -> T + Send + 'static,
    ) -> (T, Vec<PlanEvent>) {
        let config = config(project, server);
        let root = project.root().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let store = Store::at(&root);
            let deps = PlanDeps {
                config: &config,
                run_command: RunCommand::Unavailable("not in this test".into()),
                clock: tick::env::Clock::fixed(NOW.parse().unwrap()),
                path_var: std::env::var_os("PATH"),
                mcp: None,
            };
            let mut session = Session::open(&store, Target::Draft, deps);
            let events = Mutex::new(Vec::new());
            let result = body(&mut session, &mut |event| {
                events.lock().unwrap().push(event);
            });
            (result, events.into_inner().unwrap())
        })
        .await
        .unwrap()
    }

    /// A model that asks "Which database?", then submits the login plan.
    async fn asks_then_plans() -> FakeModel {
        let server = FakeModel::start().await;
        server.push(asks_user(&json!([{"question": "Which database?"}])));
        server.push(openai_call("call_p", "submit_plan", login_plan()));
        server
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_person_answers_the_planners_questions_and_the_turn_goes_on() {
        let project = Workspace::sample();
        let server = asks_then_plans().await;
        let ((drafted, asked), events) = with_session(&project, &server, |session, sink| {
            let mut person = Scripted {
                answer: "Q: Which database?\nA: Postgres\n".into(),
                asked: Vec::new(),
            };
            let drafted = session.start("Move sessions", false, &mut person, sink);
            (drafted.unwrap(), person.asked)
        })
        .await;
        assert_eq!(asked, ["Which database?"]);
        assert_eq!(drafted.status, Phase::Draft);
        assert_eq!(drafted.steps, 3);
        assert_eq!(
            events[..2],
            [
                PlanEvent::PlanStarted {
                    format: 1,
                    start: Start::New
                },
                PlanEvent::RunCommandUnavailable {
                    reason: "not in this test".into()
                }
            ]
        );
        assert!(events.contains(&PlanEvent::QuestionsAsked {
            questions: vec!["Which database?".into()]
        }));
        assert!(matches!(
            events.last(),
            Some(PlanEvent::Draft {
                status: Phase::Draft,
                ..
            })
        ));
        let requests = server.requests();
        assert_eq!(
            requests[1].tool_results()[0].1,
            "Q: Which database?\nA: Postgres\n"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_a_person_the_draft_waits_and_an_answer_goes_on_in_the_same_session() {
        let project = Workspace::sample();
        let server = asks_then_plans().await;
        let ((waiting, drafted), events) = with_session(&project, &server, |session, sink| {
            let waiting = session
                .start("Move sessions", false, &mut Nobody, sink)
                .unwrap();
            let drafted = session.answer("Postgres", &mut Nobody, sink).unwrap();
            (waiting, drafted)
        })
        .await;
        assert_eq!(waiting.status, Phase::NeedsInput);
        assert_eq!(waiting.questions, ["Which database?"]);
        assert_eq!(drafted.status, Phase::Draft);
        let told = events
            .iter()
            .filter(|e| matches!(e, PlanEvent::RunCommandUnavailable { .. }))
            .count();
        assert_eq!(told, 1, "told once per session");
        let starts: Vec<&PlanEvent> = events
            .iter()
            .filter(|e| matches!(e, PlanEvent::PlanStarted { .. }))
            .collect();
        assert_eq!(starts.len(), 2);
        assert!(server.requests()[1].last_user_text().contains("Postgres"));
        assert!(
            project
                .read(".tasks/draft/PLAN.md")
                .contains("status: draft")
        );
    }
}
