//! Two writers on one task: the lock keeps them apart, a busy task fails cleanly with exit 7,
//! and a killed writer's temp files are cleaned up by the next one.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tick::plan::{StepId, StepStatus};
use tick::tasks::state::State;
use tick::tasks::todo_md;

use crate::common::text::assert_contains;
use crate::common::workspace::Workspace;

fn plan_with_steps(n: usize) -> String {
    let mut steps = String::new();
    for i in 1..=n {
        let _ = writeln!(steps, "- [ ] S{i} Step number {i}");
    }
    format!("---\ntitle: Many steps\n---\n# Many steps\n\n## Steps\n\n{steps}")
}

#[test]
fn two_marks_at_once_never_lose_a_write() {
    let ws = Workspace::new();
    let id = ws.approve(&plan_with_steps(8));
    let todo_path = format!(".tasks/{id}/TODO.md");
    let mut marked: Vec<(StepId, StepStatus)> = Vec::new();
    for round in 0..4u32 {
        let (a, b) = (StepId::top(2 * round + 1), StepId::top(2 * round + 2));
        let mut first = ws.tick_process();
        first.args(["mark", &a.to_string(), "done"]);
        let mut second = ws.tick_process();
        second.args([
            "mark",
            &b.to_string(),
            "blocked",
            "--reason",
            &format!("round {round}"),
        ]);
        let children: Vec<_> = [first, second]
            .iter_mut()
            .map(|cmd| {
                cmd.stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<_> = children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect();
        for ((step, status), output) in [(a, StepStatus::Done), (b, StepStatus::Blocked)]
            .into_iter()
            .zip(&outputs)
        {
            let stderr = String::from_utf8_lossy(&output.stderr);
            match output.status.code() {
                Some(0) => marked.push((step, status)),
                Some(7) => assert!(stderr.contains("is working on"), "{stderr}"),
                other => panic!("mark {step} exited {other:?}: {stderr}"),
            }
        }
        // Whatever happened, the files parse and hold every mark that succeeded.
        let src = ws.read(&todo_path);
        let list = todo_md::parse(&src).unwrap_or_else(|err| panic!("torn TODO.md: {err}\n{src}"));
        let state: State =
            serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
        for (step, status) in &marked {
            assert_eq!(
                list.find(*step).unwrap().status,
                *status,
                "{step} in\n{src}"
            );
            assert_eq!(
                state.steps[step].status,
                Some(*status),
                "{step} in state.yaml"
            );
        }
        assert_eq!(list.steps.len(), 8);
    }
    assert!(!marked.is_empty());
    let leftovers: Vec<String> = std::fs::read_dir(ws.path(&format!(".tasks/{id}")))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with(".TODO.md.") || name.starts_with(".state.yaml."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_held_lock_makes_mark_fail_with_exit_7() {
    let ws = Workspace::new();
    let id = ws.approve(&plan_with_steps(2));
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(ws.path(&format!(".tasks/{id}/.lock")))
        .unwrap();
    lock.lock().unwrap();
    let before = ws.task_files(&id);

    let started = Instant::now();
    let run = ws.fails(&["mark", "S1", "done"], 7);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(30),
        "gave up in time: {waited:?}"
    );
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.starts_with(&format!(
            "error: another tick process is working on `.tasks/{id}`"
        )),
        "{}",
        run.stderr
    );
    assert_contains(&run.stderr, "nothing was changed");
    assert_eq!(ws.task_files(&id), before);
    // Readers are not kept out.
    ws.ok(&["status"]);

    drop(lock);
    ws.ok(&["mark", "S1", "done"]);
    assert!(ws.todo(&id).contains("- [x] S1 "));
}

#[test]
fn a_killed_writers_temp_files_are_removed_by_the_next_write() {
    let ws = Workspace::new();
    let id = ws.approve(&plan_with_steps(2));
    let dir = format!(".tasks/{id}");
    let strays = [".TODO.md.ab12Cd", ".state.yaml.Zz9900", ".PLAN.md.000aaa"];
    let kept = [".TODO.md.keep", "notes.txt", ".TODO.md.ab12Cd.bak"];
    for name in strays.iter().chain(&kept) {
        ws.write(&format!("{dir}/{name}"), "torn");
    }
    // Only a process holding the task's lock may judge them stray: `status` takes it for its
    // start-up check when it sees something to clean up, and so does every writer.
    ws.ok(&["status"]);
    for name in strays {
        assert!(
            !ws.exists(&format!("{dir}/{name}")),
            "{name} is removed by status"
        );
        ws.write(&format!("{dir}/{name}"), "torn");
    }

    ws.ok(&["mark", "S1", "done"]);
    for name in strays {
        assert!(!ws.exists(&format!("{dir}/{name}")), "{name} is removed");
    }
    for name in kept {
        assert_eq!(ws.read(&format!("{dir}/{name}")), "torn", "{name} is kept");
    }

    // The same in `.tasks/` and the draft folder, and a half-built task folder.
    ws.write(".tasks/.config.yaml.q1w2e3", "torn");
    ws.write(".tasks/draft/.PLAN.md.r4t5y6", "torn");
    ws.write(".tasks/.staging-4242-20261130-143012-x/PLAN.md", "half");
    ws.run_stdin(&["plan", "--from", "-"], &plan_with_steps(1));
    assert!(!ws.exists(".tasks/.config.yaml.q1w2e3"));
    assert!(!ws.exists(".tasks/draft/.PLAN.md.r4t5y6"));
    assert!(!ws.exists(".tasks/.staging-4242-20261130-143012-x"));
    assert!(ws.exists(".tasks/draft/PLAN.md"));
}
