//! `tick log` tells the whole story (issue 31): a person's Ctrl-C, staleness found by
//! `status`/the watcher, a person's unticking (with `tick mark` or in TODO.md) and each
//! `--revise`'s feedback; and its last phase line is the phase the task really has.

use crate::common::fake_model::FakeModel;
use crate::common::scripts::openai_text;
use crate::common::workspace::{Workspace, filters, scripted};
use crate::suite::running::{PLAN, approved, stderr, stopped_in_its_first_step};

fn log(project: &Workspace) -> String {
    let output = project.ok(&["log"]);
    output.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_has_the_stop_the_staleness_the_unticking_and_the_phase_now() {
    let server = FakeModel::start().await;
    let (project, id, _) = stopped_in_its_first_step(&server).await;
    project.write("greeting.txt", "hello\n");
    project.ok(&["mark", "S1", "done"]);
    project.ok(&["mark", "S2", "done"]);
    // Changed outside tick: `status` marks S1 stale.
    project.write("greeting.txt", "hello, world\n");
    project.ok(&["status"]);
    project.ok(&["mark", "S1", "pending"]);
    // A person unticks S2 in their editor; no tick command has written since.
    let todo = format!(".tasks/{id}/TODO.md");
    project.write(&todo, project.read(&todo).replace("- [x] S2", "- [ ] S2"));
    let shown = log(&project);
    filters(&project).bind(|| insta::assert_snapshot!("log_whole_story", shown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_keeps_the_feedback_of_each_revise() {
    let server = FakeModel::start().await;
    let (project, _) = approved(&server, PLAN).await;
    // The planner never submits a plan: the revision fails, and the person's request is
    // still on record.
    let talk = std::iter::repeat_n(openai_text("I would rather chat."), 3);
    let (output, _) = scripted(
        &project,
        talk,
        &["plan", "--revise", "Use French greetings"],
    )
    .await;
    assert!(!output.status.success(), "{}", stderr(&output));
    assert!(
        log(&project).contains("revise     a person asked for a revision: Use French greetings"),
        "{}\n{}",
        log(&project),
        stderr(&output)
    );
}
