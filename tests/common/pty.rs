//! `tick` in a pseudo-terminal, for what only a terminal shows: every byte the terminal
//! received, raw, and the screen a terminal emulator made of them.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// What reached the terminal while one command ran, and how it ended.
pub struct Shown {
    pub bytes: Vec<u8>,
    pub code: u32,
    pub screen: String,
}

/// A pseudo-terminal of `(rows, cols)`.
pub fn open((rows, cols): (u16, u16)) -> portable_pty::PtyPair {
    portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap()
}

/// `tick args...` in `root` with `env` and only `PATH`, a `HOME` of `home`,
/// `TERM=xterm-256color` and no colour besides (the sandbox off where the tests run without
/// one).
pub fn command(
    root: &Path,
    home: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> portable_pty::CommandBuilder {
    let mut cmd = portable_pty::CommandBuilder::new(env!("CARGO_BIN_EXE_tick"));
    cmd.args(args);
    cmd.cwd(root);
    cmd.env_clear();
    let path = std::env::var("PATH").unwrap_or_default();
    let home = home.display().to_string();
    for (name, value) in [
        ("PATH", path.as_str()),
        ("HOME", home.as_str()),
        ("TERM", "xterm-256color"),
        ("NO_COLOR", "1"),
    ] {
        cmd.env(name, value);
    }
    if std::env::var("TICK_TEST_NO_SANDBOX").is_ok_and(|v| v == "1") {
        cmd.env("TICK_SANDBOX", "off");
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd
}

/// Runs `tick args...` in `root` in a 40x160 pseudo-terminal with `env` (and `PATH`, a `HOME`
/// of `home`, `TERM=xterm-256color`, no colour), typing `input` once it started; fails the
/// test when it still runs after 30 s.
pub fn run(root: &Path, home: &Path, args: &[&str], env: &[(&str, &str)], input: &str) -> Shown {
    let pty = open((40, 160));
    let cmd = command(root, home, args, env);
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut writer = pty.master.take_writer().unwrap();
    if !input.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
        writer.write_all(input.as_bytes()).unwrap();
        writer.flush().unwrap();
    }
    let start = Instant::now();
    let mut bytes = Vec::new();
    let code = loop {
        while let Ok(chunk) = rx.try_recv() {
            bytes.extend(chunk);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status.exit_code();
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!(
                "`tick {args:?}` still ran after 30 s; the terminal showed:\n{}",
                String::from_utf8_lossy(&bytes)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its last output may still be on its way through the terminal.
    while let Ok(chunk) = rx.recv_timeout(Duration::from_millis(300)) {
        bytes.extend(chunk);
    }
    let rows = std::num::NonZeroU16::new(40).unwrap();
    let cols = std::num::NonZeroU16::new(160).unwrap();
    let mut parser = vt100::Parser::new(rows, cols, 0);
    parser.process(&bytes);
    let screen = parser.screen().contents();
    Shown {
        bytes,
        code,
        screen,
    }
}
