//! SIGKILL at random instants of `tick mark` and `tick approve` (the real binary), then the next
//! command: never a torn file, never an `[x]` without its state.yaml record, never two tasks
//! from one draft, never a temp file left behind. Bounded: 100 kills of each, a few seconds.
//!
//! The workspaces live in `/dev/shm` when there is one: a kill (unlike a power cut) does not
//! depend on what reached the disk, and without fsync costs the loop stays fast on a busy
//! machine.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tick::plan::{StepId, StepStatus};
use tick::tasks::state::State;
use tick::tasks::todo_md;

use crate::common::workspace::Workspace;

const KILLS: usize = 100;

/// A workspace for the kill loops: a `.git` folder (no repository needed), in `/dev/shm` when
/// there is one.
fn workspace() -> Workspace {
    let shm = Path::new("/dev/shm");
    let ws = if shm.is_dir() {
        Workspace::bare_in(shm)
    } else {
        Workspace::bare()
    };
    std::fs::create_dir_all(ws.path(".git")).unwrap();
    ws
}

/// Writes `plan` as the draft, the way a person may.
fn draft(ws: &Workspace, plan: &str) {
    ws.write(".tasks/draft/PLAN.md", plan);
}

/// A small xorshift generator: random enough for kill instants, and its seed is printed so a
/// failure can be replayed (`TICK_KILL_SEED`).
struct Rng(u64);

impl Rng {
    #[allow(
        clippy::print_stderr,
        reason = "the seed, shown with a failure to replay it"
    )]
    fn new() -> Rng {
        let seed = std::env::var("TICK_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                u64::from(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .subsec_nanos(),
                ) | 1
            });
        eprintln!("kill test seed: {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn plan(title: &str, steps: usize) -> String {
    let mut text =
        format!("---\ntitle: {title}\n---\n# {title}\n\n## Summary\n\nS.\n\n## Steps\n\n");
    for i in 1..=steps {
        text.push_str(&format!(
            "- [ ] S{i} Change part {i}\n  - files: src/part{i}.rs\n  - verify: `true`\n"
        ));
    }
    text
}

/// Starts `tick args`, kills it after `delay` (if it still runs), and says whether it did.
fn kill_after(ws: &Workspace, args: &[&str], delay: Duration) -> bool {
    let mut child = ws
        .tick_process()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// How long `tick args` takes when nothing kills it.
fn duration_of(ws: &Workspace, args: &[&str]) -> Duration {
    let start = Instant::now();
    ws.run(args);
    start.elapsed()
}

/// Files an interrupted write leaves: temp files (`.<name>.<6 chars>`), write-ahead records,
/// staging folders, an approval note.
fn leftovers(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let temp = name.starts_with('.')
            && name.rsplit_once('.').is_some_and(|(_, tail)| {
                tail.len() == 6 && tail.bytes().all(|b| b.is_ascii_alphanumeric())
            });
        if temp || name == "tx.json" || name.starts_with(".staging-") || name == "approving" {
            out.push(path.display().to_string());
        }
        if path.is_dir() && !name.starts_with(".staging-") {
            leftovers(&path, out);
        }
    }
}

/// Every `[x]` in TODO.md has a state.yaml record saying done, and every file parses.
fn check_task(ws: &Workspace, id: &str) {
    let todo = ws.todo(id);
    let list = todo_md::parse(&todo).unwrap_or_else(|e| panic!("torn TODO.md: {e}\n{todo}"));
    let state_text = ws.read(&format!(".tasks/{id}/state.yaml"));
    let state: State = serde_yaml::from_str(&state_text)
        .unwrap_or_else(|e| panic!("torn state.yaml: {e}\n{state_text}"));
    let plan = ws.read(&format!(".tasks/{id}/PLAN.md"));
    tick::tasks::plan_md::parse(&plan).unwrap_or_else(|e| panic!("torn PLAN.md: {e}\n{plan}"));
    for step in list.all_steps() {
        let step_id: StepId = step.id.unwrap();
        let recorded = state.steps.get(&step_id).and_then(|r| r.status);
        if step.status == StepStatus::Done {
            assert_eq!(
                recorded,
                Some(StepStatus::Done),
                "`{step_id}` is [x] without a state.yaml record\n{todo}\n{state_text}"
            );
        }
    }
}

/// A delay uniform over a command's whole life (start-up included) of `typical`.
fn instant(rng: &mut Rng, typical: Duration) -> Duration {
    let micros = u64::try_from(typical.as_micros()).unwrap_or(u64::MAX);
    Duration::from_micros(rng.below(micros * 6 / 5))
}

fn assert_no_leftovers(ws: &Workspace) {
    let mut left = Vec::new();
    leftovers(&ws.path(".tasks"), &mut left);
    assert!(
        left.is_empty(),
        "left behind after the next command: {left:?}"
    );
}

#[test]
fn kill_9_during_mark_leaves_the_old_or_the_new_pair() {
    let mut rng = Rng::new();
    let ws = workspace();
    draft(&ws, &plan("Marks", 150));
    assert_eq!(ws.run(&["approve"]).code, 0);
    let id = ws.task_ids().remove(0);
    let typical = duration_of(&ws, &["mark", "S1", "done"]);
    let mut interrupted = 0;
    for _ in 0..KILLS {
        let step = format!("S{}", 1 + rng.below(150));
        let status = if rng.below(2) == 0 { "done" } else { "pending" };
        if kill_after(&ws, &["mark", &step, status], instant(&mut rng, typical)) {
            interrupted += 1;
        }
        // The next command finishes (or undoes) whatever the kill cut short.
        let next = ws.run(&["status"]);
        assert_eq!(next.code, 0, "{next:#?}");
        check_task(&ws, &id);
        assert_no_leftovers(&ws);
    }
    assert!(
        interrupted >= KILLS / 5,
        "only {interrupted} of {KILLS} marks were still running when killed"
    );
}

#[test]
fn kill_9_during_approve_never_makes_two_tasks_of_one_draft() {
    let mut rng = Rng::new();
    let ws = workspace();
    draft(&ws, &plan("Timing", 20));
    let typical = duration_of(&ws, &["approve"]);
    let mut interrupted = 0;
    for n in 1..=KILLS {
        draft(&ws, &plan(&format!("Draft {n}"), 20));
        if kill_after(&ws, &["approve"], instant(&mut rng, typical)) {
            interrupted += 1;
        }
        // Approving again finishes a cut-short approval (the draft goes) or approves it now;
        // either way one task for this draft.
        ws.run(&["approve"]);
        assert!(!ws.exists(".tasks/draft/PLAN.md"), "the draft survived");
        let ids = ws.task_ids();
        let titles: Vec<String> = ids
            .iter()
            .filter_map(|id| {
                ws.read(&format!(".tasks/{id}/PLAN.md"))
                    .lines()
                    .find_map(|l| l.strip_prefix("title: ").map(str::to_owned))
            })
            .collect();
        let unique: BTreeSet<&String> = titles.iter().collect();
        assert_eq!(
            unique.len(),
            titles.len(),
            "a draft became two tasks: {titles:?}"
        );
        assert_eq!(ids.len(), n + 1, "{titles:?}");
        assert_no_leftovers(&ws);
    }
    for id in ws.task_ids() {
        check_task(&ws, &id);
    }
    assert!(
        interrupted >= KILLS / 5,
        "only {interrupted} of {KILLS} approvals were still running when killed"
    );
}
