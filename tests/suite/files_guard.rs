//! Files a clone can ship and files the agent writes: a hostile `runs/tx.json` (a FIFO, a link
//! to `/dev/zero`) costs nothing to read, a tool write cannot be raced out of the workspace
//! or into `.tasks/`, secrets in file names are not recorded, and a tool call's arguments
//! stop growing at the write cap while they stream.

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::workspace::{PLAN, Workspace};

/// Generous: each of these takes milliseconds; before the fix they never ended.
const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `tick args...` with stdin closed and returns its exit code and its stdout and stderr
/// together; fails the test (killing tick) after [`DEADLINE`].
fn run_bounded(ws: &Workspace, args: &[&str]) -> (i32, String) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = ws
        .tick_process()
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`tick {args:?}` still ran after {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = format!(
        "{}{}",
        fs::read_to_string(out.path()).unwrap(),
        fs::read_to_string(err.path()).unwrap()
    );
    (status.code().unwrap_or(-1), output)
}

/// An approved task whose `runs/tx.json` is replaced by what `plant` makes at the path given.
fn with_hostile_tx(plant: impl FnOnce(&std::path::Path)) -> (Workspace, String) {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let runs = ws.path(&format!(".tasks/{id}/runs"));
    fs::create_dir_all(&runs).unwrap();
    plant(&runs.join("tx.json"));
    (ws, format!(".tasks/{id}/runs/tx.json"))
}

fn assert_status_and_mark_end_naming(ws: &Workspace, rel: &str, what: &str) {
    for args in [&["status"][..], &["mark", "S1", "done"]] {
        let (code, output) = run_bounded(ws, args);
        assert_ne!(code, 0, "{args:?} succeeded: {output}");
        assert!(
            output.contains(&format!("`{rel}` is {what}")),
            "{args:?}: wanted `{rel}` is {what} in:\n{output}"
        );
    }
}

#[test]
fn a_fifo_as_the_pending_transaction_never_blocks() {
    let (ws, rel) = with_hostile_tx(|path| {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    });
    assert_status_and_mark_end_naming(&ws, &rel, "a named pipe (FIFO)");
}

#[test]
fn the_pending_transaction_linked_to_dev_zero_is_not_read() {
    let (ws, rel) = with_hostile_tx(|path| {
        std::os::unix::fs::symlink("/dev/zero", path).unwrap();
    });
    assert_status_and_mark_end_naming(&ws, &rel, "a device");
}
