//! The foundations below the commands: the one clock every timestamp comes from, read when it
//! is written; and the person's view of a mark (each warning once).

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use clap::Parser;
use tick::env::Env;
use tick::tasks::state::State;

use crate::common::workspace::{NOW, PLAN, Workspace};

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// `tick args...` run inside this test's process, as a long-lived process (the interactive
/// session) would run it, with `env`'s clock.
fn in_process(env: &Env, args: &[&str]) {
    let cli = tick::cli::Cli::try_parse_from(std::iter::once("tick").chain(args.iter().copied()))
        .unwrap();
    let ui = tick::ui::Ui::new();
    let outcome = tick::commands::dispatch(cli, env, &ui).unwrap();
    assert_eq!(outcome.exit_code(), 0, "tick {args:?}");
}

/// An hour into a long-lived process, a write is stamped an hour later than the first: the
/// clock is read when the timestamp is written, not once at start.
#[test]
fn a_timestamp_written_an_hour_into_a_process_is_that_later_time() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    let vars = BTreeMap::from([("NO_COLOR".to_owned(), "1".to_owned())]);
    let env = Env::fixed(ws.root().to_path_buf(), vars, at(NOW));

    in_process(&env, &["mark", "S1", "done"]);
    env.clock.advance(TimeDelta::hours(1));
    in_process(&env, &["mark", "S2.1", "done"]);

    let state: State = serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
    let done_at = |step: &str| state.steps[&step.parse().unwrap()].done_at;
    assert_eq!(done_at("S1"), Some(at(NOW)));
    assert_eq!(
        done_at("S2.1"),
        Some(at(NOW) + TimeDelta::hours(1)),
        "stamped with the time of the write"
    );
}

/// The test clock moves one second per command, as a person's clock moves between commands:
/// the approval, the mark after it and the mark after that are stamped in that order, each
/// later than the one before (a fixed clock stamps all three alike).
#[test]
fn commands_in_a_row_are_stamped_with_increasing_times() {
    let ws = Workspace::new();
    let id = ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S2.1", "done"]);

    let state: State = serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
    let approved_at = state.approval.unwrap().approved_at;
    let done_at = |step: &str| state.steps[&step.parse().unwrap()].done_at.unwrap();
    assert!(approved_at >= at(NOW), "{approved_at}");
    assert!(
        approved_at < done_at("S1"),
        "{approved_at} vs {}",
        done_at("S1")
    );
    assert!(
        done_at("S1") < done_at("S2.1"),
        "{} vs {}",
        done_at("S1"),
        done_at("S2.1")
    );
}

/// A test that needs two commands at the same time pins the clock; `set_clock` moves it to
/// a given time.
#[test]
fn a_pinned_clock_stamps_commands_alike_and_a_set_clock_starts_there() {
    let ws = Workspace::new();
    ws.set_clock("2026-12-24T18:00:00Z");
    let id = ws.approve(PLAN);
    ws.pin_clock();
    let pinned = ws.next_time();
    ws.ok(&["mark", "S1", "done"]);
    ws.ok(&["mark", "S2.1", "done"]);
    assert_eq!(ws.next_time(), pinned);

    let state: State = serde_yaml::from_str(&ws.read(&format!(".tasks/{id}/state.yaml"))).unwrap();
    let approved_at = state.approval.unwrap().approved_at;
    let done_at = |step: &str| state.steps[&step.parse().unwrap()].done_at.unwrap();
    assert_eq!(
        approved_at,
        at("2026-12-24T18:00:01Z"),
        "plan at :00, approve at :01"
    );
    assert_eq!(done_at("S1"), at(&pinned));
    assert_eq!(done_at("S2.1"), at(&pinned));
}

/// `tick mark` on a task with a stale step says so once, not once before and once after the
/// mark (it printed each `warning:` line twice).
#[test]
fn a_mark_on_a_task_with_a_stale_step_warns_once() {
    let ws = Workspace::new();
    ws.write("src/routes.ts", "export const routes = [];\n");
    ws.approve(PLAN);
    ws.ok(&["mark", "S1", "done"]);
    ws.write("src/routes.ts", "export const routes = ['/login'];\n");

    let marked = ws.ok(&["mark", "S2.1", "done"]);
    let warning = "warning: `S1` is stale: src/routes.ts changed outside tick";
    assert_eq!(
        marked.stderr.matches(warning).count(),
        1,
        "{}",
        marked.stderr
    );
    assert_eq!(
        marked.stderr.matches("warning:").count(),
        1,
        "{}",
        marked.stderr
    );
}
