//! The interactive session (`tick` alone in a terminal): what it draws in each phase of a task
//! at a narrow and a wide size (ratatui's `TestBackend`, state read from real task files), and
//! the real binary driven in a pseudo-terminal against the fake model.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use tick::plan::StepId;
use tick::planning::PlanEvent;
use tick::runner::RunEvent;
use tick::tasks::Store;
use tick::tui::app::{App, Busy, Effect, Prompt, Request};
use tick::tui::engine::TickEngine;
use tick::tui::mode::Mode;
use tick::tui::timeline::Entry;
use tick::tui::worker;
use tick::tui::{Engine, EngineEvent, render};
use tick::ui::outcomes::{self, Said};

use crate::common::fake_model::{FakeModel, Reply};
use crate::common::scripts::asks_user;
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_call, openai_calls, openai_text};
use crate::common::workspace::{NOW, Workspace};
use crate::suite::running::work;

pub(crate) const PLAN: &str = "# Greeting

## Summary
Greet people from the command line.

## Steps
- [ ] S1 Create greeting.txt
  - files: greeting.txt
  - verify: `grep -q hello greeting.txt`
  - risk: low
- [ ] S2 Add a shout script
  - files: shout.sh
  - verify: `sh shout.sh | grep -q HELLO`
  - risk: medium
- [ ] S3 Document it
  - files: NOTES.md
";

// ---------------------------------------------------------------------------------------------
// Rendering

pub(crate) fn engine(ws: &Workspace) -> TickEngine {
    let env = tick::env::Env::fixed(
        ws.root().to_path_buf(),
        std::collections::BTreeMap::new(),
        NOW.parse().unwrap(),
    );
    TickEngine::new(Store::discover(ws.root()).unwrap(), &env)
}

pub(crate) fn app(ws: &Workspace, mode: Mode) -> App {
    App::new(mode, engine(ws).status(), false)
}

pub(crate) fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| render::draw(f, app, 0)).unwrap();
    format!("{}", terminal.backend())
}

/// Snapshots the app at 100×30 (the card) and 160×40 (the sidebar).
fn snapshot_both(name: &str, app: &App) {
    let narrow = screen(app, 100, 30);
    let wide = screen(app, 160, 40);
    assert!(
        !narrow.contains("│ plan "),
        "narrow has no sidebar:\n{narrow}"
    );
    assert!(wide.contains(" plan "), "wide has the sidebar:\n{wide}");
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(format!("session_{name}_100x30"), narrow);
        insta::assert_snapshot!(format!("session_{name}_160x40"), wide);
    });
}

fn set_markers(ws: &Workspace, id: &str, edit: impl Fn(String) -> String) {
    let path = format!(".tasks/{id}/TODO.md");
    let todo = ws.read(&path);
    ws.write(&path, edit(todo));
}

#[test]
fn renders_an_empty_session() {
    let ws = Workspace::new();
    let app = app(&ws, Mode::Plan);
    snapshot_both("empty", &app);
}

#[test]
fn renders_drafting() {
    let ws = Workspace::new();
    let mut app = app(&ws, Mode::Plan);
    app.timeline
        .push(Entry::Person("Greet people from the command line".into()));
    app.busy = Some(Busy {
        what: "planning",
        detail: "read_file README.md".into(),
    });
    app.on_engine(EngineEvent::Agent(tick::agent::AgentEvent::Text {
        text: "Let me look at the repository first.\n".into(),
    }));
    for (name, detail) in [("list_files", "."), ("read_file", "README.md")] {
        app.on_engine(EngineEvent::Agent(tick::agent::AgentEvent::ToolCall {
            name: name.into(),
            detail: detail.into(),
        }));
    }
    app.on_engine(EngineEvent::Agent(tick::agent::AgentEvent::ToolResult {
        name: "list_files".into(),
        is_error: false,
        exit_code: None,
    }));
    snapshot_both("drafting", &app);
}

#[test]
fn renders_a_draft_under_review_with_the_menu() {
    let ws = Workspace::new();
    let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(run.code, 0, "{run:#?}");
    let mut app = app(&ws, Mode::Plan);
    app.timeline
        .push(Entry::Person("Greet people from the command line".into()));
    app.timeline.push(Entry::Tool {
        name: "submit_plan".into(),
        detail: "Greeting".into(),
        result: Some("ok".into()),
    });
    app.after_reload(true);
    assert!(matches!(app.prompt, Some(Prompt::Review)));
    snapshot_both("review", &app);
}

#[test]
fn renders_executing_with_a_step_in_progress() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    set_markers(&ws, &id, |todo| {
        todo.replace("- [ ] S1", "- [x] S1")
            .replace("- [ ] S2", "- [-] S2")
    });
    let mut app = app(&ws, Mode::Build);
    app.busy = Some(Busy {
        what: "running",
        detail: String::new(),
    });
    let s2: StepId = "S2".parse().unwrap();
    app.on_engine(EngineEvent::Run(RunEvent::StepStarted {
        step: s2,
        title: "Add a shout script".into(),
    }));
    app.on_engine(EngineEvent::Run(RunEvent::Agent {
        step: s2,
        agent: tick::agent::AgentEvent::ToolCall {
            name: "write_file".into(),
            detail: "shout.sh".into(),
        },
    }));
    snapshot_both("executing", &app);
}

#[test]
fn renders_a_blocked_step_with_its_question() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&[
        "mark",
        "S2",
        "blocked",
        "--reason",
        "should shout.sh be POSIX sh or bash?",
    ]);
    let _ = id;
    let mut app = app(&ws, Mode::Build);
    app.on_engine(EngineEvent::Run(RunEvent::StepBlocked {
        step: "S2".parse().unwrap(),
        reason: "should shout.sh be POSIX sh or bash?".into(),
        before_run: false,
    }));
    snapshot_both("blocked", &app);
}

#[test]
fn renders_a_stale_step() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    set_markers(&ws, &id, |todo| {
        todo.replace(
            "- [ ] S1 Create greeting.txt\n",
            "- [~] S1 Create greeting.txt\n  - stale: greeting.txt changed outside tick at 2026-11-30 14:31 UTC\n",
        )
    });
    let app = app(&ws, Mode::Build);
    snapshot_both("stale", &app);
}

#[test]
fn renders_a_completed_task() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    for step in ["S1", "S2", "S3"] {
        ws.ok(&["mark", step, "done"]);
    }
    let mut app = app(&ws, Mode::Build);
    app.on_engine(EngineEvent::Run(RunEvent::NothingToRun { step: None }));
    snapshot_both("completed", &app);
}

#[test]
fn the_panel_shows_the_draft_in_plan_mode_and_the_task_in_build_mode() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    let run = ws.run_stdin(
        &["plan", "--from", "-"],
        "# Second plan\n\n## Steps\n- [ ] S1 Another thing\n",
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let plan = screen(&app(&ws, Mode::Plan), 160, 40);
    assert!(plan.contains("draft · 0/1 done"), "{plan}");
    let build = screen(&app(&ws, Mode::Build), 160, 40);
    assert!(build.contains("approved · 0/3 done"), "{build}");
}

// ---------------------------------------------------------------------------------------------
// The real binary in a pseudo-terminal

/// `tick` running in a pseudo-terminal, its screen kept by a terminal emulator.
pub(crate) struct Pty {
    pub(crate) screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    master: Box<dyn portable_pty::MasterPty + Send>,
}

const ROWS: u16 = 40;
const COLS: u16 = 160;

impl Pty {
    fn spawn(root: &Path, base_url: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Pty {
        Pty::spawn_sized(root, base_url, args, extra_env, (ROWS, COLS))
    }

    /// [`Pty::spawn`] in a terminal of `(rows, cols)`.
    pub(crate) fn spawn_sized(
        root: &Path,
        base_url: &str,
        args: &[&str],
        extra_env: &[(&str, &str)],
        (rows, cols): (u16, u16),
    ) -> Pty {
        let pty = crate::common::pty::open((rows, cols));
        let env = [
            ("TICK_NOW", NOW),
            ("TICK_PROVIDER", "openai"),
            ("TICK_BASE_URL", base_url),
            ("TICK_MODEL", "test-model"),
            ("GIT_AUTHOR_NAME", "t"),
            ("GIT_AUTHOR_EMAIL", "t@example.com"),
            ("GIT_COMMITTER_NAME", "t"),
            ("GIT_COMMITTER_EMAIL", "t@example.com"),
        ];
        let env: Vec<(&str, &str)> = env.iter().chain(extra_env).copied().collect();
        let cmd = crate::common::pty::command(root, root, args, &env);
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            rows.try_into().unwrap(),
            cols.try_into().unwrap(),
            0,
        )));
        let shared = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shared.lock().unwrap().process(&buf[..n]);
            }
        });
        Pty {
            screen,
            writer,
            child,
            master: pty.master,
        }
    }

    pub(crate) fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub(crate) fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types a line and presses Enter.
    pub(crate) fn line(&mut self, text: &str) {
        self.send(text);
        std::thread::sleep(Duration::from_millis(50));
        self.send("\r");
    }

    /// Waits (up to 30 s) until the screen shows `text`; returns the screen.
    pub(crate) fn wait_for(&mut self, text: &str) -> String {
        self.wait_until(text, |screen| screen.contains(text))
    }

    /// Waits (up to 30 s) until the screen shows `text`; returns how long that took.
    fn time_until_shown(&mut self, text: &str) -> Duration {
        let start = Instant::now();
        while !self.contents().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {text:?}:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        start.elapsed()
    }

    pub(crate) fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.contents();
            if done(&screen) {
                // The rest of the frame being drawn, for the assertions that follow.
                std::thread::sleep(Duration::from_millis(150));
                let screen = self.contents();
                if done(&screen) {
                    return screen;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Its last output may still be on its way through the terminal.
                std::thread::sleep(Duration::from_millis(500));
                let screen = self.contents();
                if done(&screen) {
                    return screen;
                }
                panic!("tick exited ({status:?}) before showing {what:?}:\n{screen}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {what:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Spawns tick and waits for the first PLAN prompt.
    fn open(root: &Path, base_url: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Pty {
        let mut pty = Pty::spawn(root, base_url, args, extra_env);
        pty.wait_for("PLAN ›");
        pty
    }

    /// Types `/quit` and asserts the session ends with exit code 0.
    pub(crate) fn quit(&mut self) {
        self.line("/quit");
        assert_eq!(self.wait_exit(), 0);
    }

    /// Waits for the process to end; returns its exit code.
    pub(crate) fn wait_exit(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "tick did not exit:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn greeting_plan() -> serde_json::Value {
    json!({
        "title": "Greeting",
        "summary": "Greet people from the command line.",
        "steps": [
            {"title": "Create greeting.txt", "files": ["greeting.txt"], "verify": ["grep -q hello greeting.txt"], "risk": "low"},
            {"title": "Add a shout script", "files": ["shout.sh"], "verify": ["sh shout.sh | grep -q HELLO"], "depends": ["S1"]}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_is_planned_approved_with_a_key_and_run_step_by_step() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    server.push(openai_text("Let me plan this.\n"));
    server.push(openai_call("call_1", "submit_plan", greeting_plan()));
    work(&server, "S1", "greeting.txt", "hello\n");
    work(&server, "S2", "shout.sh", "echo HELLO\n");
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::spawn(&root, &url, &[], &[]);
        let screen = pty.wait_for("PLAN ›");
        assert!(screen.contains("No plan yet."), "{screen}");

        pty.line("Greet people from the command line");
        let screen = pty.wait_for("[a]pprove");
        assert!(screen.contains("Let me plan this."), "{screen}");
        assert!(screen.contains("[ ] S1 Create greeting.txt"), "{screen}");
        assert!(screen.contains("[ ] S2 Add a shout script"), "{screen}");
        assert!(screen.contains("→ submit_plan Greeting"), "{screen}");
        assert!(screen.contains("draft · 0/2 done"), "{screen}");

        // Approve with a key; the contract's questions take their defaults, and the task
        // folder is not committed (the review's last question, as `tick review` asks it).
        pty.send("a");
        pty.wait_for("without pausing? [y/N]");
        pty.send("\r");
        pty.wait_for("how many changed files? [no limit]");
        pty.send("\r");
        pty.wait_for("commit each verified step");
        pty.send("\r");
        pty.wait_for("commit the approved task folder now? [y/N]");
        pty.send("\r");
        let screen = pty.wait_for("approved `Greeting`");
        assert!(screen.contains("approved · 0/2 done"), "{screen}");

        pty.send("\t");
        let screen = pty.wait_for("Switched to Build mode. Implementation tools are active.");
        assert!(screen.contains("BUILD ›"), "{screen}");

        pty.line("/run");
        let screen = pty.wait_for("2/2 done; the run ended");
        assert!(screen.contains("[x] S1 Create greeting.txt"), "{screen}");
        assert!(screen.contains("[x] S2 Add a shout script"), "{screen}");
        assert!(screen.contains("completed · 2/2 done"), "{screen}");
        assert!(
            screen.contains("✓ S1 verify `grep -q hello greeting.txt` passed"),
            "{screen}"
        );
        assert!(
            screen.contains("→ write_file greeting.txt · ok"),
            "{screen}"
        );

        pty.line("/diff S1");
        pty.wait_for("S1 changed `greeting.txt`");

        pty.quit();
    })
    .await
    .unwrap();

    assert_eq!(project.read("greeting.txt"), "hello\n");
    let id = project.task_id();
    let todo = project.todo(&id);
    assert!(todo.contains("- [x] S1 Create greeting.txt"), "{todo}");
    assert!(todo.contains("- [x] S2 Add a shout script"), "{todo}");
    assert!(!project.path(".tasks/draft").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_chosen_with_tab_is_restored_by_the_next_session() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, &url, &[], &[]);
        pty.send("\t");
        pty.wait_for("Switched to Build mode.");
        pty.quit();

        let mut pty = Pty::spawn(&root, &url, &[], &[]);
        let screen = pty.wait_for("BUILD ›");
        assert!(screen.contains("no approved task"), "{screen}");
        pty.send("\t");
        pty.wait_for("Switched to Plan mode. Read-only planning is active.");
        pty.quit();

        let mut pty = Pty::open(&root, &url, &[], &[]);
        pty.quit();
    })
    .await
    .unwrap();
    let state = project.read(".tasks/session.yaml");
    assert_eq!(state, "mode: plan\n");
    let ignored = project.git(&["check-ignore", ".tasks/session.yaml"]);
    assert_eq!(ignored, ".tasks/session.yaml");
    // Switching modes approved nothing and wrote nothing else.
    assert!(!project.path(".tasks/draft").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_to_todo_md_from_another_editor_shows_in_the_panel() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let dir = root.display().to_string();
        let mut pty = Pty::open(Path::new("/"), &url, &["-C", &dir], &[]);
        pty.send("\t");
        pty.wait_for("BUILD ›");
        let screen = pty.wait_for("approved · 0/3 done");
        assert!(screen.contains("[ ] S1 Create greeting.txt"), "{screen}");

        let path = root.join(format!(".tasks/{id}/TODO.md"));
        let todo = std::fs::read_to_string(&path).unwrap();
        let edited = todo
            .replace("- [ ] S1", "- [x] S1")
            .replace("- [ ] S3 Document it", "- [ ] S3 Document it in the README");
        // Saved as editors save: a temp file renamed over the original.
        let temp = root.join(format!(".tasks/{id}/.TODO.md.swp"));
        std::fs::write(&temp, edited).unwrap();
        std::fs::rename(&temp, &path).unwrap();
        let seen = pty.time_until_shown("S3 Document it in the README");
        let screen = pty.wait_for("S3 Document it in the README");
        assert!(screen.contains("[x] S1 Create greeting.txt"), "{screen}");
        assert!(screen.contains("1/3 done"), "{screen}");
        assert!(seen < Duration::from_secs(1), "seen after {seen:?}");
        pty.quit();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_opens_without_a_model_and_says_how_to_configure_one() {
    let project = Workspace::sample();
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, "", &[], &[("TICK_MODEL", "")]);
        pty.line("/status");
        pty.wait_for("no draft and no task yet");
        pty.line("Greet people");
        let screen = pty.wait_for("tick cannot talk to a model yet: it needs a model");
        assert!(screen.contains("hint:"), "{screen}");
        // Still usable afterwards.
        pty.line("/help");
        pty.wait_for("/approve [--allow-deviation]");
        pty.quit();
    })
    .await
    .unwrap();
    assert!(!project.path(".tasks/draft/PLAN.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_twice_quits_and_the_terminal_is_restored() {
    let project = Workspace::sample();
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, "", &[], &[]);
        pty.send("\u{3}");
        pty.wait_for("press Ctrl-C again to quit");
        pty.send("\u{3}");
        assert_eq!(pty.wait_exit(), 0);
        // The alternate screen is left: the emulator shows the main screen again, and the
        // cursor is visible.
        let parser = pty.screen.lock().unwrap();
        assert!(!parser.screen().alternate_screen());
        assert!(!parser.screen().hide_cursor());
    })
    .await
    .unwrap();
}

#[test]
fn without_a_terminal_tick_alone_prints_the_usage_as_before() {
    let ws = Workspace::new();
    let run = ws.run(&[]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("'tick' requires a subcommand"),
        "{run:#?}"
    );
}

#[test]
fn a_blocked_step_shows_its_question_and_is_answered_inline() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&[
        "mark",
        "S2",
        "blocked",
        "--reason",
        "should shout.sh be POSIX sh or bash?",
    ]);
    let root = ws.root().to_path_buf();
    let mut pty = Pty::open(&root, "", &[], &[]);
    pty.send("\t");
    let screen = pty.wait_for("BUILD ›");
    assert!(
        screen.contains("blocked: should shout.sh be POSIX sh or"),
        "{screen}"
    );
    assert!(
        screen.contains("next: answer it: /answer S2 <text>, then /run"),
        "{screen}"
    );
    pty.line("/answer S2 POSIX sh, no bashisms");
    let screen = pty.wait_for("executing · 1/3 done");
    assert!(screen.contains("[ ] S2 Add a shout script"), "{screen}");
    // The hint in the session's words (issue 31), not "`tick run` goes on with it".
    let screen = pty.wait_for("hint: `/run` goes on with it");
    assert!(!screen.contains("`tick run`"), "{screen}");
    pty.quit();
    // Exactly what `tick answer` writes.
    let todo = ws.todo(&id);
    assert!(
        todo.contains("- [ ] S2 Add a shout script\n  - files: shout.sh\n  - verify: `sh shout.sh | grep -q HELLO`\n  - risk: medium\n  - answer: POSIX sh, no bashisms\n"),
        "{todo}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planners_questions_are_answered_in_the_timeline() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    server.push(asks_user(
        &json!([{"question": "Which greeting word?", "options": ["hello", "hi"]}]),
    ));
    server.push(openai_call("call_1", "submit_plan", greeting_plan()));
    let mut revised = greeting_plan();
    revised["steps"]
        .as_array_mut()
        .unwrap()
        .push(json!({"title": "Mention it in the README", "files": ["README.md"]}));
    server.push(openai_call("call_2", "submit_plan", revised));
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, &url, &[], &[]);
        pty.line("Greet people");
        let screen = pty.wait_for("? Which greeting word? (hello / hi)");
        assert!(screen.contains("your answers"), "{screen}");
        pty.line("hello, always lowercase");
        pty.wait_for("[a]pprove");
        // Revise from the menu: the feedback goes to the planner, the new draft comes back
        // to the menu.
        pty.send("r");
        pty.wait_for("what should change?");
        pty.line("add a README step");
        pty.wait_for("S3 Mention it in the README");
        pty.wait_for("[a]pprove");
        // Keep it for later: no approval happened.
        pty.send("k");
        pty.wait_for("kept the draft for later");
        pty.quit();
    })
    .await
    .unwrap();
    let results = server.requests()[1].tool_results();
    assert!(
        results
            .iter()
            .any(|(_, text)| text.contains("hello, always lowercase")),
        "{results:?}"
    );
    let revise = server.requests()[2].last_user_text();
    assert!(revise.contains("add a README step"), "{revise}");
    let draft = project.read(".tasks/draft/PLAN.md");
    assert!(draft.contains("S3 Mention it in the README"), "{draft}");
    assert!(draft.contains("status: draft"), "{draft}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_run_at_the_next_safe_point_and_leaves_the_step_in_progress() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    // The model never answers the first step's turn.
    server.push(Reply::silent());
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, &url, &[], &[]);
        pty.send("\t");
        pty.wait_for("BUILD ›");
        pty.line("continue");
        pty.wait_for("S1 Create greeting.txt: started [-]");
        pty.send("\u{3}");
        let screen = pty.wait_for("stopped: S1 stays in progress [-] for the next /run");
        assert!(screen.contains("[-] S1 Create greeting.txt"), "{screen}");
        // Still running: the session is usable.
        pty.line("/status");
        pty.wait_for("next: /run (next: S1 Create greeting.txt)");
        pty.quit();
    })
    .await
    .unwrap();
    let todo = project.todo(&id);
    assert!(todo.contains("- [-] S1 Create greeting.txt"), "{todo}");
}

#[test]
fn a_resize_redraws_with_the_card_instead_of_the_sidebar() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    let mut pty = Pty::spawn(ws.root(), "", &[], &[]);
    let screen = pty.wait_for("PLAN ›");
    assert!(screen.contains("┌ plan "), "{screen}");
    pty.master
        .resize(portable_pty::PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    pty.screen
        .lock()
        .unwrap()
        .screen_mut()
        .set_size(30.try_into().unwrap(), 100.try_into().unwrap());
    let screen = pty.wait_until("the card", |s| {
        s.contains("now: [ ] S1 Create greeting.txt") && !s.contains("┌ plan ")
    });
    assert!(screen.contains("approved · 0/3 done"), "{screen}");
    pty.quit();
}

#[test]
fn sigterm_ends_the_session_and_restores_the_terminal() {
    let ws = Workspace::new();
    let mut pty = Pty::open(ws.root(), "", &[], &[]);
    assert!(pty.screen.lock().unwrap().screen().alternate_screen());
    let pid = pty.child.process_id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(pty.wait_exit(), 0);
    let parser = pty.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
}

#[test]
fn an_edit_that_breaks_the_draft_shows_the_error_and_returns_to_the_menu() {
    let ws = Workspace::new();
    let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(run.code, 0, "{run:#?}");
    let editor = ws.script("break-plan", "printf -- '- [?] S9 Broken\\n' >> \"$1\"\n");
    let mut pty = Pty::open(ws.root(), "", &[], &[("EDITOR", editor.as_str())]);
    pty.line("/edit");
    let screen = pty.wait_for("unknown step marker");
    assert!(screen.contains("press `e` to edit it again"), "{screen}");
    assert!(screen.contains("[a]pprove"), "{screen}");
    pty.send("k");
    pty.wait_for("kept the draft for later");
    assert!(ws.read(".tasks/draft/PLAN.md").contains("[?] S9 Broken"));
    // A draft that does not parse can still be thrown away, after a question.
    pty.line("/discard");
    pty.wait_for("discard the draft? [y/N]");
    pty.send("y");
    pty.wait_for("discarded the draft");
    pty.quit();
    assert!(!ws.exists(".tasks/draft"));
}

#[test]
fn no_color_draws_without_colour_but_the_same_text() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    set_markers(&ws, &id, |todo| todo.replace("- [ ] S1", "- [x] S1"));
    let render = |color: bool| {
        let app = App::new(Mode::Build, engine(&ws).status(), color);
        let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap();
        terminal.draw(|f| render::draw(f, &app, 0)).unwrap();
        terminal.backend().buffer().clone()
    };
    let plain = render(false);
    let coloured = render(true);
    assert!(
        plain
            .content()
            .iter()
            .all(|cell| cell.fg == ratatui::style::Color::Reset
                && cell.bg == ratatui::style::Color::Reset),
        "NO_COLOR draws without colour"
    );
    assert!(
        coloured
            .content()
            .iter()
            .any(|cell| cell.fg == ratatui::style::Color::Green),
        "the done marker is green with colour"
    );
    let text = |buffer: &ratatui::buffer::Buffer| -> String {
        buffer
            .content()
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect()
    };
    assert_eq!(text(&plain), text(&coloured));
}

#[test]
fn a_panic_restores_the_terminal_before_its_message() {
    let ws = Workspace::new();
    let mut pty = Pty::open(ws.root(), "", &[], &[("TICK_TEST_SESSION_PANIC", "1")]);
    pty.line("panic");
    let code = pty.wait_exit();
    assert_ne!(code, 0);
    let parser = pty.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
    let screen = parser.screen().contents();
    assert!(screen.contains("a panic the tests asked for"), "{screen}");
}

#[test]
fn approving_in_the_session_writes_what_tick_approve_writes() {
    let by_command = Workspace::new();
    let by_session = Workspace::new();
    for ws in [&by_command, &by_session] {
        let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
        assert_eq!(run.code, 0, "{run:#?}");
    }
    // The session approves at the time `tick approve` did in the other workspace.
    let approve_at = by_session.next_time();
    by_command.ok(&["approve", "--max-files", "7", "--commit-steps"]);

    let now = [("TICK_NOW", approve_at.as_str())];
    let mut pty = Pty::open(by_session.root(), "", &[], &now);
    pty.line("/approve");
    pty.wait_for("without pausing? [y/N]");
    pty.send("n");
    pty.wait_for("how many changed files");
    pty.send("7\r");
    pty.wait_for("commit each verified step");
    pty.send("y");
    pty.wait_for("commit the approved task folder now?");
    pty.send("n");
    pty.wait_for("approved `Greeting`");
    pty.quit();

    let ids = by_command.task_ids();
    assert_eq!(ids, by_session.task_ids());
    assert_eq!(
        by_command.task_files(&ids[0]),
        by_session.task_files(&ids[0])
    );
    assert!(!by_session.exists(".tasks/draft"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deviation_asks_the_person_whether_the_run_goes_on() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    let id = project.approve_plan(&server, PLAN).await;
    server.push(openai_calls(&[
        (
            "call_start",
            "update_step",
            json!({"id": "S1", "status": "in_progress"}),
        ),
        (
            "call_write",
            "write_file",
            json!({"path": "greeting.txt", "content": "hello\n"}),
        ),
        (
            "call_extra",
            "write_file",
            json!({"path": "extra.txt", "content": "not in the plan\n"}),
        ),
    ]));
    server.push(claims_done("call_done", "S1", Some("wrote it")));
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, &url, &[], &[]);
        pty.send("\t");
        pty.wait_for("BUILD ›");
        pty.line("/run");
        let screen = pty.wait_for("go on? [y/N]");
        assert!(
            screen.contains("S1 changed files outside its `files` (extra.txt)"),
            "{screen}"
        );
        pty.send("n");
        let screen = pty.wait_for("paused after S1 for your review");
        assert!(screen.contains("[x] S1 Create greeting.txt"), "{screen}");
        assert!(screen.contains("[ ] S2 Add a shout script"), "{screen}");
        pty.quit();
    })
    .await
    .unwrap();
    let todo = project.todo(&id);
    assert!(todo.contains("- [ ] S2"), "{todo}");
    assert_eq!(server.requests().len(), 2, "S2 did not start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_in_the_session_writes_what_tick_run_writes() {
    let by_command = Workspace::sample();
    let by_session = Workspace::sample();
    let server = FakeModel::start().await;
    let id = by_command.approve_plan(&server, PLAN).await;
    assert_eq!(by_session.approve_plan(&server, PLAN).await, id);
    // Unsandboxed, so the record of that is compared too.
    let unsandboxed = |cmd: &mut std::process::Command| {
        cmd.env("TICK_SANDBOX", "off");
    };
    for (step, file, content) in [
        ("S1", "greeting.txt", "hello\n"),
        ("S2", "shout.sh", "echo HELLO\n"),
    ] {
        work(&server, step, file, content);
    }
    let output = by_command
        .tick_with(&server, &["run", "--steps", "2"], unsandboxed)
        .await;
    assert_eq!(output.status.code(), Some(0));
    for (step, file, content) in [
        ("S1", "greeting.txt", "hello\n"),
        ("S2", "shout.sh", "echo HELLO\n"),
    ] {
        work(&server, step, file, content);
    }
    let url = format!("{}/v1", server.url());
    let root = by_session.root().to_path_buf();
    // The session runs at the time `tick run` did in the other workspace.
    let run_at = by_session.next_time();
    tokio::task::spawn_blocking(move || {
        let env = [("TICK_SANDBOX", "off"), ("TICK_NOW", run_at.as_str())];
        let mut pty = Pty::open(&root, &url, &[], &env);
        pty.send("\t");
        pty.wait_for("BUILD ›");
        pty.line("/run 2");
        pty.wait_for("2/3 done; the run ended");
        pty.quit();
    })
    .await
    .unwrap();

    let durations = regex::Regex::new(r"duration_ms: \d+").unwrap();
    for file in ["PLAN.md", "TODO.md", "state.yaml"] {
        let path = format!(".tasks/{id}/{file}");
        let (a, b) = (by_command.read(&path), by_session.read(&path));
        assert_eq!(
            durations.replace_all(&a, "duration_ms: _"),
            durations.replace_all(&b, "duration_ms: _"),
            "{file}"
        );
    }
    let state = by_session.read(&format!(".tasks/{id}/state.yaml"));
    assert!(state.contains("unsandboxed_run:"), "{state}");
    assert_eq!(by_session.read("shout.sh"), "echo HELLO\n");
}

#[test]
fn a_done_steps_file_changed_outside_tick_turns_stale_in_the_panel() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.write("greeting.txt", "hello\n");
    ws.ok(&["mark", "S1", "done"]);
    let mut pty = Pty::open(ws.root(), "", &[], &[]);
    pty.send("\t");
    let screen = pty.wait_for("BUILD ›");
    assert!(screen.contains("[x] S1 Create greeting.txt"), "{screen}");
    ws.write("greeting.txt", "hello, world\n");
    let screen = pty.wait_for("[~] S1 Create greeting.txt");
    assert!(
        screen.contains("stale: greeting.txt changed outside tick"),
        "{screen}"
    );
    pty.quit();
    // Marked on disk, as `tick status` would have marked it.
    let todo = ws.todo(&id);
    assert!(todo.contains("- [~] S1 Create greeting.txt"), "{todo}");
}

#[test]
fn page_up_scrolls_the_timeline_back() {
    let ws = Workspace::new();
    let mut app = app(&ws, Mode::Plan);
    for n in 1..=60 {
        app.timeline.push(Entry::Note(format!("line {n}")));
    }
    let bottom = screen(&app, 100, 30);
    assert!(bottom.contains("line 60"), "{bottom}");
    assert!(!bottom.contains("line 40 "), "{bottom}");
    app.on_key(ratatui::crossterm::event::KeyEvent::from(
        ratatui::crossterm::event::KeyCode::PageUp,
    ));
    let scrolled = screen(&app, 100, 30);
    // A page is the pane's height less one line kept for context.
    assert!(scrolled.contains("line 30"), "{scrolled}");
    assert!(!scrolled.contains("line 60"), "{scrolled}");
}

/// The subcommands' menus in a terminal: a yes/no after a single-key choice takes one key
/// too, no Enter (`tick review`, then `d`, then `y`).
#[test]
fn the_review_menus_yes_no_takes_one_key() {
    let ws = Workspace::new();
    let run = ws.run_stdin(&["plan", "--from", "-"], PLAN);
    assert_eq!(run.code, 0, "{run:#?}");
    let now = [("TICK_NOW", crate::common::workspace::NOW)];
    let mut pty = Pty::spawn(ws.root(), "", &["review"], &now);
    pty.wait_for("[d]iscard");
    pty.send("d");
    pty.wait_for("discard the draft? [y/N]");
    // One key and no Enter: tick goes on (and ends) on `y` alone.
    pty.send("y");
    assert_eq!(pty.wait_exit(), 0);
    assert!(!ws.exists(".tasks/draft/PLAN.md"));
}

/// Long output at a terminal goes through the person's pager (`$PAGER`, like git); piped
/// output never does (every other test reads `tick show` piped).
#[test]
fn show_at_a_terminal_goes_through_the_pager() {
    let ws = Workspace::new();
    ws.approve(PLAN);
    let now = [
        ("TICK_NOW", crate::common::workspace::NOW),
        ("PAGER", "sed 's/^/PAGED: /'"),
    ];
    let mut pty = Pty::spawn(ws.root(), "", &["show"], &now);
    let screen = pty.wait_for("PAGED: - [ ] S1");
    assert!(screen.contains("PAGED: task:  Greeting"), "{screen}");
    assert_eq!(pty.wait_exit(), 0);
    let piped = ws.ok(&["show"]);
    assert!(!piped.stdout.contains("PAGED"), "{}", piped.stdout);
}

/// Issue 24: the session's `/run` warned about nothing that `tick run` warns about when files
/// of the workspace are hard links to files elsewhere. Both now ask the one engine, and both
/// say it before the first step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_leaving_the_workspace_is_warned_about_by_tick_run_and_by_the_session() {
    const WARNING: &str = "`cfg` has hard links outside the workspace (or into `.git/`, \
                           `.tasks/`): a command that writes them writes there too";
    let by_command = Workspace::sample();
    let by_session = Workspace::sample();
    let server = FakeModel::start().await;
    by_command.approve_plan(&server, PLAN).await;
    by_session.approve_plan(&server, PLAN).await;
    for ws in [&by_command, &by_session] {
        std::fs::hard_link(ws.path(".git/config"), ws.path("cfg")).unwrap();
    }
    let unsandboxed = |cmd: &mut std::process::Command| {
        cmd.env("TICK_SANDBOX", "off");
    };
    work(&server, "S1", "greeting.txt", "hello\n");
    let output = by_command
        .tick_with(&server, &["run", "--steps", "1"], unsandboxed)
        .await;
    let err = crate::common::workspace::stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("warning: {WARNING}\n")), "{err}");

    work(&server, "S1", "greeting.txt", "hello\n");
    let url = format!("{}/v1", server.url());
    let root = by_session.root().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::open(&root, &url, &[], &[("TICK_SANDBOX", "off")]);
        pty.send("\t");
        pty.wait_for("BUILD ›");
        pty.line("/run 1");
        let screen = pty.wait_for("1/3 done; the run ended");
        assert!(
            screen.contains("`cfg` has hard links outside the workspace"),
            "{screen}"
        );
        pty.quit();
    })
    .await
    .unwrap();
}

/// Issue 24: the panel picked the first pending step and ignored `depends`; `tick next` and
/// `tick run` take the step the runner's scheduler picks. On a plan whose first step waits on
/// its second, both now name the second.
#[test]
fn the_panels_next_step_is_tick_nexts_on_a_plan_reordered_by_depends() {
    let ws = Workspace::new();
    ws.approve(
        "# Reordered

## Summary
The first step needs the second.

## Steps
- [ ] S1 Use the helper
  - files: use.sh
  - depends: S2
- [ ] S2 Write the helper
  - files: helper.sh
",
    );
    let output = ws.tick().arg("next").output().unwrap();
    let next = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(next.lines().next(), Some("S2 Write the helper"), "{next}");
    let app = app(&ws, Mode::Build);
    let (card, sidebar) = (screen(&app, 100, 30), screen(&app, 160, 40));
    assert!(card.contains("now: [ ] S2 Write the helper"), "{card}");
    for screen in [card, sidebar] {
        assert!(
            screen.contains("next: /run (next: S2 Write the helper)"),
            "{screen}"
        );
    }
}

/// The terminal the session runs in, made by hand so the test holds the only copy of its
/// master side: closing it is the terminal going away (tmux killed, an ssh connection
/// dropped). tick is not the terminal's session leader here, so no SIGHUP tells it: only the
/// terminal itself can.
struct BareTerminal {
    master: Option<std::os::fd::OwnedFd>,
    screen: vt100::Parser,
    child: std::process::Child,
}

impl BareTerminal {
    fn spawn(root: &Path) -> BareTerminal {
        let size = nix::pty::Winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        // tick must not hold the master too, or closing it here would not close it.
        nix::fcntl::fcntl(
            &pty.master,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )
        .unwrap();
        let slave = std::fs::File::from(pty.slave);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_tick"))
            .current_dir(root)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", root)
            .env("TERM", "xterm-256color")
            .env("TICK_NOW", NOW)
            .env("NO_COLOR", "1")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave)
            .spawn()
            .unwrap();
        BareTerminal {
            master: Some(pty.master),
            screen: vt100::Parser::new(ROWS.try_into().unwrap(), COLS.try_into().unwrap(), 0),
            child,
        }
    }

    /// Reads what tick drew until the screen shows `text` (30 s at most).
    fn wait_for(&mut self, text: &str) {
        use std::os::fd::AsFd as _;
        let start = Instant::now();
        let mut buf = [0u8; 8192];
        while !self.screen.screen().contents().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {text:?}:\n{}",
                self.screen.screen().contents()
            );
            let master = self.master.as_ref().unwrap();
            let mut fds = [nix::poll::PollFd::new(
                master.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(50u16)).unwrap() > 0 {
                let n = nix::unistd::read(master.as_fd(), &mut buf).unwrap();
                self.screen.process(&buf[..n]);
            }
        }
    }
}

impl Drop for BareTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Issue 24: a session whose terminal went away kept running, a core busy, until killed by
/// hand. Closing the terminal now ends it within 2 s, with no process of it left.
#[test]
fn a_session_whose_terminal_is_closed_ends_within_two_seconds() {
    let ws = Workspace::new();
    let mut terminal = BareTerminal::spawn(ws.root());
    terminal.wait_for("PLAN ›");
    let pid = terminal.child.id();
    drop(terminal.master.take());
    let closed = Instant::now();
    let status = loop {
        if let Some(status) = terminal.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(2),
            "tick still runs {:?} after its terminal closed",
            closed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "{status:?}");
    let left = crate::common::processes::processes_with(env!("CARGO_BIN_EXE_tick"))
        .into_iter()
        .filter(|(p, _)| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .is_ok_and(|stat| stat.split_whitespace().nth(3) == Some(&pid.to_string()))
        })
        .collect::<Vec<_>>();
    assert!(left.is_empty(), "children of tick left: {left:?}");
}

/// Processes of the tick binary still working in `root` (the session, its sandbox helpers).
fn ticks_in(root: &Path) -> Vec<(i32, String)> {
    let root = root.canonicalize().unwrap();
    crate::common::processes::processes_with(env!("CARGO_BIN_EXE_tick"))
        .into_iter()
        .filter(|(pid, _)| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == root)
        })
        .collect()
}

/// Issue 24: SIGHUP (the terminal's session leader told the terminal closed) and SIGTERM
/// during a run end the session within 2 s, the run stopped at its next safe point: the step
/// stays in progress in a TODO.md that is whole, and no process of tick is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_and_sigterm_during_a_run_end_the_session_with_todo_md_whole() {
    for signal in [
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        let server = FakeModel::start().await;
        let project = Workspace::sample();
        let id = project.approve_plan(&server, PLAN).await;
        // The model never answers the first step's turn.
        server.push(Reply::silent());
        let url = format!("{}/v1", server.url());
        let root = project.root().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut pty = Pty::open(&root, &url, &[], &[]);
            pty.send("\t");
            pty.wait_for("BUILD ›");
            pty.line("/run");
            pty.wait_for("S1 Create greeting.txt: started [-]");
            let pid = pty.child.process_id().unwrap();
            let sent = Instant::now();
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
                signal,
            )
            .unwrap();
            let code = pty.wait_exit();
            assert!(
                sent.elapsed() < Duration::from_secs(2),
                "{signal}: {:?}",
                sent.elapsed()
            );
            assert_eq!(code, 130, "{signal}");
            assert!(
                ticks_in(&root).is_empty(),
                "{signal}: {:?}",
                ticks_in(&root)
            );
        })
        .await
        .unwrap();
        let todo = project.todo(&id);
        assert!(todo.contains("- [-] S1 Create greeting.txt"), "{todo}");
        assert!(todo.contains("- [ ] S2 Add a shout script"), "{todo}");
        let store = Store::discover(project.root()).unwrap();
        let task = store.load(&store.resolve(&id).unwrap());
        assert!(task.is_ok(), "{signal}: {:?}", task.err());
    }
}

/// Issue 25: the session asks once, before it opens, whether to trust a repository whose
/// files would decide what they may not untrusted (here its server); `n` keeps it untrusted
/// and asks again next time, `y` trusts it as `tick trust` does, and then nothing is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_asks_whether_to_trust_a_repository_whose_files_would_decide() {
    let server = FakeModel::start().await;
    let project = Workspace::sample();
    project.write(".tasks/config.yaml", "base_url: http://127.0.0.2:9/v1\n");
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    let record = root.join(".local/state/tick/trusted.yaml");
    tokio::task::spawn_blocking(move || {
        let mut pty = Pty::spawn(&root, &url, &[], &[]);
        let screen = pty.wait_for("[y/N]");
        assert!(screen.contains("ignored `base_url`"), "{screen}");
        assert!(
            screen.contains("and let its files decide these"),
            "{screen}"
        );
        pty.send("n");
        pty.wait_for("PLAN ›");
        pty.quit();
        assert!(!record.exists(), "not trusted on `n`");

        let mut pty = Pty::spawn(&root, &url, &[], &[]);
        pty.wait_for("[y/N]");
        pty.send("y");
        pty.wait_for("PLAN ›");
        pty.quit();
        let recorded = std::fs::read_to_string(&record).unwrap();
        assert!(recorded.contains(".tasks/config.yaml"), "{recorded}");

        // Trusted: the next session opens at once.
        let mut pty = Pty::spawn(&root, &url, &[], &[]);
        let screen = pty.wait_for("PLAN ›");
        assert!(!screen.contains("[y/N]"), "{screen}");
        pty.quit();
    })
    .await
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// The typed seam, without a terminal

/// Carries out the app's engine requests with `engine` on this thread, as the worker does:
/// every event and outcome reaches the app as a value. Returns the events seen.
fn carry_out(engine: &TickEngine, app: &mut App, effects: Vec<Effect>) -> Vec<EngineEvent> {
    let mut seen = Vec::new();
    let mut pending = effects;
    while !pending.is_empty() {
        let mut next = Vec::new();
        for effect in pending {
            match effect {
                Effect::Engine(request) => {
                    let mut events = Vec::new();
                    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let result = worker::carry_out(
                        engine,
                        &request,
                        &mut tick::person::Nobody,
                        &mut |event| events.push(event),
                        &stop,
                    );
                    for event in events {
                        next.extend(app.on_engine(event.clone()));
                        seen.push(event);
                    }
                    let planned =
                        result.is_ok() && matches!(request, Request::Plan(_) | Request::Revise(_));
                    next.extend(app.on_done(&request, result));
                    app.set_snapshot(engine.status());
                    app.after_reload(planned);
                }
                Effect::Reload => app.set_snapshot(engine.status()),
                Effect::Stop | Effect::Edit | Effect::SaveMode | Effect::Quit => {}
            }
        }
        pending = next;
    }
    seen
}

fn notes(app: &App) -> Vec<String> {
    app.timeline
        .iter()
        .filter_map(|entry| match entry {
            Entry::Note(note) => Some(note.clone()),
            _ => None,
        })
        .collect()
}

/// The lines `tick` says for `said`, as the timeline shows them.
/// The lines the timeline shows for what the builders say: the same lines, the hints in the
/// session's words (`/run` for `tick run`).
fn lines_of(said: &[Said]) -> Vec<String> {
    said.iter()
        .flat_map(Said::lines)
        .map(|line| tick::tui::timeline::in_session_words(&line))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_plans_approves_and_runs_over_typed_engine_events_without_a_terminal() {
    // A server that keeps each connection open for the next request, as llama.cpp's does: a
    // client whose pooled connection outlived the runtime it was made on fails its next
    // request on it ("connection closed before message completed") and asks again.
    let server = FakeModel::start_keep_alive(Duration::from_secs(5)).await;
    let project = Workspace::sample();
    server.push(openai_text("Let me plan this.\n"));
    server.push(openai_call("call_1", "submit_plan", greeting_plan()));
    work(&server, "S1", "greeting.txt", "hello\n");
    work(&server, "S2", "shout.sh", "echo HELLO\n");
    let url = format!("{}/v1", server.url());
    let root = project.root().to_path_buf();
    let driving = std::thread::spawn(move || {
        let vars: std::collections::BTreeMap<String, String> = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", root.display().to_string()),
            ("TICK_PROVIDER", "openai".to_owned()),
            ("TICK_BASE_URL", url),
            ("TICK_MODEL", "test-model".to_owned()),
            ("TICK_LOCAL_SERVERS", "none".to_owned()),
            // The sandbox's helper is the `tick` binary itself, which this process is not
            // (the pty tests run the sandbox); unsandboxed, the run says so as an event.
            ("TICK_SANDBOX", "off".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let env = tick::env::Env::fixed(root.clone(), vars, NOW.parse().unwrap());
        let engine = TickEngine::new(Store::discover(&root).unwrap(), &env);
        let mut app = App::new(Mode::Plan, engine.status(), false);

        // Plan: the planner's events arrive typed, and the draft's note is built from one.
        let effects = app.submit("Greet people from the command line");
        let events = carry_out(&engine, &mut app, effects);
        let mut retries = retries_in(&events);
        let drafted = events
            .iter()
            .find_map(|event| match event {
                EngineEvent::Plan(event @ PlanEvent::Draft { .. }) => Some(event.clone()),
                _ => None,
            })
            .expect("the planner's draft event");
        let said = lines_of(&outcomes::plan_event(&drafted));
        assert_eq!(
            said,
            ["drafted `Greeting` with 2 steps in `.tasks/draft/PLAN.md` (100 tokens in, 20 out)"]
        );
        assert!(notes(&app).ends_with(&said), "{:#?}", app.timeline);
        assert!(
            app.timeline
                .contains(&Entry::Model("Let me plan this.\n".into())),
            "{:#?}",
            app.timeline
        );
        assert!(matches!(app.prompt, Some(Prompt::Review)));

        // Approve with keys: the contract's questions take the draft's defaults, the folder
        // is not committed; the outcome comes back typed and is said as `tick approve` says it.
        for code in ["a", "\r", "\r", "\r"] {
            assert!(app.on_key(key(code)).is_empty(), "{code:?}");
        }
        let effects = app.on_key(key("\r"));
        assert_eq!(
            effects,
            vec![Effect::Engine(Request::Approve {
                contract: tick::planning::approve::Contract::default(),
                commit_folder: false,
            })]
        );
        carry_out(&engine, &mut app, effects);
        let id = engine.status().task.and_then(|t| t.id).unwrap();
        let folder = format!(".tasks/{id}");
        let tail = notes(&app).split_off(notes(&app).len() - 3);
        assert_eq!(
            tail,
            [
                format!("approved `Greeting` as `{folder}/` (2 steps)"),
                format!(
                    "hint: `/run` executes it; `/status` shows it; commit `{folder}/` to share it"
                ),
                "approved: Tab to BUILD mode, then /run".to_owned(),
            ]
        );
        assert_eq!(
            tail[1..2],
            lines_of(&outcomes::approved_next(&folder, false))
        );

        // Run: the runner's events arrive typed.
        app.on_key(key("\t"));
        assert_eq!(app.mode, Mode::Build);
        let effects = app.submit("/run");
        let events = carry_out(&engine, &mut app, effects);
        // Planning and running in one process: no request failed and none was asked again.
        retries.extend(retries_in(&events));
        assert_eq!(retries, Vec::<String>::new());
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EngineEvent::Run(RunEvent::Summary(s)) if s.done == 2)),
            "{events:#?}\n{:#?}",
            app.timeline
        );
        assert!(notes(&app).contains(&"2/2 done; the run ended".to_owned()));
        let warning = tick::engine::Warning::Unsandboxed;
        assert!(events.contains(&EngineEvent::Warning(warning.clone())));
        let said = lines_of(&[Said::Warning(tick::ui::warning_line(&warning))]);
        assert!(notes(&app).contains(&said[0]), "{said:?}");

        // A step's diff: the outcome is the typed diff, said with the builder `tick diff` uses.
        let before = app.timeline.len();
        let effects = app.submit("/diff S1");
        carry_out(&engine, &mut app, effects);
        let diff = tick::report::diff::step_diff(
            &Store::discover(&root).unwrap(),
            None,
            "S1".parse().unwrap(),
        )
        .unwrap();
        let shown: Vec<String> = app.timeline[before..]
            .iter()
            .map(|entry| match entry {
                Entry::Note(note) => note.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(shown, lines_of(&outcomes::step_diff(&diff)));
        assert!(
            shown
                .last()
                .unwrap()
                .starts_with("S1 changed `greeting.txt`"),
            "{shown:#?}"
        );
        // Nothing reached the timeline as printed text.
        assert!(
            !notes(&app)
                .iter()
                .any(|n| n.starts_with("unexpected output"))
        );
    });
    tokio::task::spawn_blocking(move || driving.join())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(project.read("greeting.txt"), "hello\n");
    assert_eq!(project.read("shout.sh"), "echo HELLO\n");
    // Exactly the six scripted answers were asked for: two to plan, two for each step.
    assert_eq!(server.requests().len(), 6);
}

/// The reasons of the model requests that failed and went out again, among `events`.
fn retries_in(events: &[EngineEvent]) -> Vec<String> {
    use tick::agent::AgentEvent;
    events
        .iter()
        .filter_map(|event| match event {
            EngineEvent::Plan(PlanEvent::Agent(AgentEvent::Retry { reason, .. }))
            | EngineEvent::Run(RunEvent::Agent {
                agent: AgentEvent::Retry { reason, .. },
                ..
            }) => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn key(text: &str) -> ratatui::crossterm::event::KeyEvent {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let code = match text {
        "\r" => KeyCode::Enter,
        "\t" => KeyCode::Tab,
        _ => KeyCode::Char(text.chars().next().unwrap()),
    };
    KeyEvent::new(code, KeyModifiers::NONE)
}
