//! Reading and typing in the session (issue 31): a bracketed paste is one message with its
//! lines, the input box grows with them, the plan view shows every step's contract (`p` in
//! the review, `/show`), the sidebar shows each step's verify, the timeline scrolls over its
//! whole history, the slash-command menu, hints in the session's words, and `/undo`. The
//! real binary in a pseudo-terminal against the fake model where the behaviour is the
//! terminal's; the app and its drawing where it is the widget's. Screens are snapshots at
//! 80×24 and 120×40.

use std::time::Duration;

use serde_json::json;
use tick::tui::mode::Mode;
use tick::tui::timeline::Entry;

use super::session::{Pty, app, screen};
use crate::common::fake_model::FakeModel;
use crate::common::scripts::claims_done;
use crate::common::scripts::{openai_call, openai_text, writes_file};
use crate::common::workspace::Workspace;

const SIZES: [(u16, u16); 2] = [(24, 80), (40, 120)];

fn snap(name: &str, (rows, cols): (u16, u16), screen: &str) {
    // Trailing blanks are the terminal's, not the session's.
    let screen: Vec<&str> = screen.lines().map(str::trim_end).collect();
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(format!("session_{name}_{cols}x{rows}"), screen.join("\n"));
    });
}

fn greeting_plan() -> serde_json::Value {
    json!({
        "title": "Greeting",
        "summary": "Greet people from the command line.",
        "steps": [
            {"title": "Create greeting.txt", "files": ["greeting.txt"], "verify": ["grep -q hello greeting.txt"], "risk": "low", "done_when": "greeting.txt says hello"},
            {"title": "Add a shout script", "files": ["shout.sh"], "verify": ["sh shout.sh | grep -q HELLO"], "depends": ["S1"], "risk": "medium"}
        ]
    })
}

const PASTE: &str =
    "Greet people from the command line.\nPrint hello in greeting.txt\nand shout it from shout.sh";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_three_line_goal_is_one_message_and_p_shows_the_whole_plan() {
    for size in SIZES {
        let server = FakeModel::start().await;
        let project = Workspace::sample();
        server.push(openai_text("Let me plan this.\n"));
        server.push(openai_call("call_1", "submit_plan", greeting_plan()));
        let url = format!("{}/v1", server.url());
        let root = project.root().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut pty = Pty::spawn_sized(&root, &url, &[], &[], size);
            pty.wait_for("PLAN ›");
            assert!(
                pty.screen.lock().unwrap().screen().bracketed_paste(),
                "the session asks the terminal for bracketed paste"
            );
            pty.send(&format!("\x1b[200~{PASTE}\x1b[201~"));
            // Nothing is sent before Enter; the box shows the three lines.
            let screen = pty.wait_for("and shout it from shout.sh");
            snap("paste_input", size, &screen);
            pty.send("\r");
            let screen = pty.wait_for("[p]lan in full");
            assert!(!screen.contains("is planning; wait"), "{screen}");
            snap("paste_review", size, &screen);
            pty.send("p");
            let screen = pty.wait_for("Esc or q closes");
            assert!(screen.contains("`sh shout.sh | grep -q HELLO`"), "{screen}");
            snap("plan_view", size, &screen);
            pty.send("q");
            pty.wait_until("the review menu again", |s| {
                s.contains("[a]pprove") && !s.contains("Esc or q closes")
            });
            pty.send("k");
            pty.quit();
            assert!(
                !pty.screen.lock().unwrap().screen().bracketed_paste(),
                "bracketed paste is off again when the session ends"
            );
        })
        .await
        .unwrap();
        let requests = server.requests();
        let goals: Vec<String> = requests[0]
            .user_texts()
            .into_iter()
            .filter(|text| text.contains("Greet people"))
            .collect();
        assert_eq!(goals.len(), 1, "{goals:?}");
        assert!(goals[0].contains(PASTE), "the whole goal: {goals:?}");
        assert_eq!(requests.len(), 2, "one planning turn, no second message");
    }
}

#[test]
fn alt_enter_and_ctrl_j_start_a_new_line_and_the_box_grows() {
    let ws = Workspace::new();
    let mut pty = Pty::spawn_sized(ws.root(), "", &[], &[], (24, 80));
    pty.wait_for("PLAN ›");
    pty.send("first");
    std::thread::sleep(Duration::from_millis(50));
    pty.send("\x1b\r");
    pty.send("second");
    std::thread::sleep(Duration::from_millis(50));
    pty.send("\n");
    pty.send("third");
    let screen = pty.wait_for("third");
    let rows: Vec<&str> = screen.lines().collect();
    let at = |text: &str| {
        rows.iter()
            .position(|r| r.starts_with(&format!("│{text} ")))
            .unwrap()
    };
    assert_eq!(at("second"), at("first") + 1, "{screen}");
    assert_eq!(at("third"), at("second") + 1, "{screen}");
    pty.send("\x15"); // Ctrl-U empties it
    pty.quit();
}

#[test]
fn show_opens_the_plan_view_of_the_task_and_it_scrolls_at_80_columns() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent};
    let ws = Workspace::new();
    ws.approve(super::session::PLAN);
    let mut app = app(&ws, Mode::Build);
    assert!(app.submit("/show").is_empty());
    let top = screen(&app, 80, 24);
    assert!(
        top.contains("`sh shout.sh | grep -q HELLO`"),
        "S2's verify:\n{top}"
    );
    snap("show", (24, 80), &top);
    // A short terminal: the view scrolls to the last step and back.
    let short = screen(&app, 80, 14);
    assert!(!short.contains("S3 Document it"), "{short}");
    app.on_key(KeyEvent::from(KeyCode::PageDown));
    app.on_key(KeyEvent::from(KeyCode::PageDown));
    let end = screen(&app, 80, 14);
    assert!(end.contains("S3 Document it"), "{end}");
    app.on_key(KeyEvent::from(KeyCode::Home));
    assert!(screen(&app, 80, 14).contains("Greeting —"));
    app.on_key(KeyEvent::from(KeyCode::Esc));
    assert!(app.plan_view.is_none());
}

#[test]
fn page_up_reaches_the_first_line_of_a_200_line_timeline() {
    for size in SIZES {
        let ws = Workspace::new();
        let mut pty = Pty::spawn_sized(ws.root(), "", &[], &[], size);
        pty.wait_for("PLAN ›");
        // `/help` writes 17 lines: twelve of them make 204 and the welcome.
        for _ in 0..12 {
            pty.line("/help");
        }
        pty.wait_until("twelve helps", |s| s.contains("/quit leave the session"));
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..40 {
            pty.send("\x1b[5~");
        }
        let screen = pty.wait_for("Plan first, approve, then run one verified step at a time.");
        snap("timeline_top", size, &screen);
        // One page down and back: a full pane each time, never an empty one.
        pty.send("\x1b[6~");
        let down = pty.wait_until("a page down", |s| !s.contains("Plan first, approve"));
        assert!(down.contains("/plan [goal]"), "{down}");
        pty.send("\x1b[5~");
        pty.wait_for("Plan first, approve");
        // End goes back to the last line.
        pty.send("\x1b[1;5F");
        let screen = pty.wait_until("the end", |s| {
            !s.contains("Plan first, approve") && s.contains("/quit leave the session")
        });
        snap("timeline_end", size, &screen);
        pty.quit();
    }
}

#[test]
fn the_slash_menu_opens_on_a_slash_and_filters_as_you_type() {
    let ws = Workspace::new();
    let mut app = app(&ws, Mode::Plan);
    let key =
        |c| ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(c));
    app.on_key(key('/'));
    for (rows, cols) in SIZES {
        snap("slash_menu", (rows, cols), &screen(&app, cols, rows));
    }
    app.on_key(key('d'));
    let filtered = screen(&app, 80, 24);
    assert!(
        filtered.contains("/diff") && filtered.contains("/discard"),
        "{filtered}"
    );
    assert!(!filtered.contains("/approve"), "{filtered}");
}

#[test]
fn the_wide_sidebar_shows_each_steps_verify() {
    let ws = Workspace::new();
    ws.approve(super::session::PLAN);
    let mut app = app(&ws, Mode::Build);
    app.timeline.push(Entry::Note("approved".into()));
    let wide = screen(&app, 120, 40);
    assert!(wide.contains("verify: `sh shout.sh |"), "{wide}");
    snap("sidebar_verify", (40, 120), &wide);
}

/// A repository with greeting.txt committed and two steps run by the runner (so their
/// before-images are kept), for `/undo`.
async fn two_steps_run(server: &FakeModel) -> Workspace {
    let project = Workspace::new();
    project.write("greeting.txt", "hi\n");
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "files"]);
    project
        .approve_plan(
            server,
            "# Greeting\n\n## Steps\n- [ ] S1 Write the greeting\n  - files: greeting.txt\n  - verify: `grep -q hello greeting.txt`\n- [ ] S2 Write the notes\n  - files: NOTES.md\n  - verify: `test -f NOTES.md`\n",
        )
        .await;
    for (id, path, content) in [
        ("S1", "greeting.txt", "hello\n"),
        ("S2", "NOTES.md", "notes\n"),
    ] {
        server.push(writes_file(&format!("call_{id}_write"), path, content));
        server.push(claims_done(
            &format!("call_{id}_done"),
            id,
            Some("wrote it"),
        ));
    }
    let output = project.tick_against(server, &["run"]).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_in_the_session_puts_back_the_last_done_step_or_the_one_named() {
    for size in SIZES {
        let server = FakeModel::start().await;
        let project = two_steps_run(&server).await;
        let root = project.root().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut pty = Pty::spawn_sized(&root, "", &[], &[], size);
            pty.wait_for("›");
            pty.line("/undo");
            let screen = pty.wait_for("undid `S2`");
            snap("undo_last", size, &screen);
            pty.line("/undo S1");
            let screen = pty.wait_for("undid `S1`");
            snap("undo_named", size, &screen);
            pty.line("/undo");
            pty.wait_for("no step is done: there is nothing to undo");
            pty.quit();
        })
        .await
        .unwrap();
        assert_eq!(project.read("greeting.txt"), "hi\n");
        assert!(!project.path("NOTES.md").exists());
        let todo = project.read(&format!(".tasks/{}/TODO.md", project.task_id()));
        assert!(
            todo.contains("- [ ] S1") && todo.contains("- [ ] S2"),
            "{todo}"
        );
    }
}

#[test]
fn a_timeline_scrolled_back_stays_put_while_the_model_writes() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent};
    let ws = Workspace::new();
    let mut app = app(&ws, Mode::Plan);
    for n in 1..=200 {
        app.timeline.push(Entry::Note(format!("line {n:03}")));
    }
    let _ = screen(&app, 80, 24);
    app.on_key(KeyEvent::from(KeyCode::PageUp));
    let before = screen(&app, 80, 24);
    assert!(before.contains("more below"), "{before}");
    for n in 0..5 {
        app.on_engine(tick::tui::EngineEvent::Agent(
            tick::agent::AgentEvent::ToolCall {
                name: "read_file".into(),
                detail: format!("f{n}.rs"),
            },
        ));
    }
    let after = screen(&app, 80, 24);
    let body = |s: &str| {
        s.lines()
            .skip(1)
            .take(12)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&before), body(&after), "{after}");
    // Ctrl+End goes back to the end, where the new lines are.
    app.on_key(KeyEvent::new(
        KeyCode::End,
        ratatui::crossterm::event::KeyModifiers::CONTROL,
    ));
    assert!(screen(&app, 80, 24).contains("read_file f4.rs"));
}
