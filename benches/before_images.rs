//! The cost of keeping a step's before-images (issue 26), not a test. For each case, the
//! file work of one step (the runner's snapshot before, the step's writes, its snapshot
//! after) is timed without and with the before-images ([`Capture::start`] after the first
//! snapshot, [`Capture::finish`] after the last), each in a fresh git repository, and the
//! ratio of the medians is printed. No model turn and no verify are in the step: the ratio is
//! the worst case a real step can see.
//!
//! `cargo bench --bench before_images` (release), or `--profile dev` to reuse a debug build.
//! `RUNS=5` sets the runs per case. Not part of `cargo test` (a `harness = false` bench).

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a benchmark program: a failure is a panic, the table goes to stdout"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use tick::runner::changes::Snapshot;
use tick::runner::images::Capture;

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A file's content: bytes, or `count` MiB of one byte (written a MiB at a time).
#[derive(Clone)]
enum Content {
    Bytes(Vec<u8>),
    Fill(u8, usize),
}

fn put(path: &Path, content: &Content) {
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match content {
        Content::Bytes(bytes) => std::fs::write(path, bytes).unwrap(),
        Content::Fill(byte, count) => {
            let mut file = std::fs::File::create(path).unwrap();
            let chunk = vec![*byte; 1024 * 1024];
            for _ in 0..*count {
                file.write_all(&chunk).unwrap();
            }
        }
    }
}

fn repo(files: &[(String, Content)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    for (path, content) in files {
        put(&root.join(path), content);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "files"]);
    dir
}

struct Case {
    name: &'static str,
    scope: Vec<String>,
    committed: Vec<(String, Content)>,
    writes: Vec<(String, Content)>,
}

/// One step's file work in `root`, with or without the before-images; its duration.
fn step(root: &Path, case: &Case, keep: bool) -> Duration {
    let task_dir = root.join(".tasks/20261202-000000-bench");
    std::fs::create_dir_all(&task_dir).unwrap();
    let started = Instant::now();
    let before = Snapshot::take(root, &case.scope, &BTreeSet::new());
    let capture = keep.then(|| Capture::start(root, &task_dir, "S1", &before, u64::MAX));
    for (path, content) in &case.writes {
        put(&root.join(path), content);
    }
    let after = Snapshot::take(root, &case.scope, &before.files.keys().cloned().collect());
    let changed = before.changed(&after);
    assert_eq!(changed.len(), case.writes.len());
    if let Some(capture) = capture {
        let finished = capture.finish(&changed, &after);
        assert!(finished.not_kept.is_empty(), "{:?}", finished.not_kept);
    }
    started.elapsed()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    // tick's git calls run in its read-only sandbox, set up by the tick binary: this program
    // is not one (as its own helper it would start itself again, without end).
    tick::git::Jail::set_for_process(tick::git::Jail::Sandbox {
        helper: Some(env!("CARGO_BIN_EXE_tick").into()),
    });
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let thousand = |prefix: &str, text: &str| -> Vec<(String, Content)> {
        (0..1000)
            .map(|n| {
                let text = format!("{text} {n}\n").repeat(20).into_bytes();
                (format!("f/{prefix}{n:04}.txt"), Content::Bytes(text))
            })
            .collect()
    };
    let big = |fill: u8| vec![(String::from("big.bin"), Content::Fill(fill, 100))];
    let cases = [
        Case {
            name: "1,000 tracked files rewritten",
            scope: vec!["f/**".into()],
            committed: thousand("", "old"),
            writes: thousand("", "new"),
        },
        Case {
            name: "1,000 new files",
            scope: vec!["f/**".into()],
            committed: Vec::new(),
            writes: thousand("n", "new"),
        },
        Case {
            name: "a tracked 100 MB file rewritten",
            scope: vec!["big.bin".into()],
            committed: big(1),
            writes: big(2),
        },
        Case {
            name: "a new 100 MB file",
            scope: vec!["big.bin".into()],
            committed: Vec::new(),
            writes: big(2),
        },
    ];
    println!("| case | without (median ms) | with (median ms) | ratio |");
    println!("|---|---:|---:|---:|");
    for case in &cases {
        let mut without = Vec::new();
        let mut with = Vec::new();
        for _ in 0..runs {
            let dir = repo(&case.committed);
            without.push(step(dir.path(), case, false));
            let dir = repo(&case.committed);
            with.push(step(dir.path(), case, true));
        }
        let (a, b) = (median(without), median(with));
        println!(
            "| {} | {:.1} | {:.1} | {:.2} |",
            case.name,
            a.as_secs_f64() * 1000.0,
            b.as_secs_f64() * 1000.0,
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
}
