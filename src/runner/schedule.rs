//! Which step runs next, decided from TODO.md alone: top to bottom, skipping done ones,
//! honouring `depends`; a step with sub-steps is worked through its sub-steps.

use std::collections::BTreeSet;

use crate::plan::{StepId, StepStatus};
use crate::tasks::todo_md::Checklist;

/// What to work on next, decided from TODO.md alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Step(StepId),
    AllDone,
    /// A blocked step stands in the way.
    Blocked {
        id: StepId,
        reason: String,
    },
    /// Open steps remain, but each waits on a step that is not done.
    Waiting {
        id: StepId,
        on: StepId,
    },
    /// The step asked for with `--step` is done already.
    AlreadyDone(StepId),
}

/// The units of work in order: a step, or the sub-steps of a step that has them. A sub-step
/// inherits its parent's `depends`.
fn units(todo: &Checklist) -> Vec<(StepId, StepStatus, Option<String>, Vec<StepId>)> {
    let mut units = Vec::new();
    for step in &todo.steps {
        let Some(id) = step.id else { continue };
        // A parent whose sub-steps are done but whose own check has not passed is the work
        // left (the runner runs that check before it gives the step to a model).
        if step.substeps.is_empty() || step.status == StepStatus::Blocked || step.awaits_its_check()
        {
            units.push((id, step.status, step.blocked.clone(), step.depends.clone()));
        } else {
            for sub in &step.substeps {
                let Some(sub_id) = sub.id else { continue };
                let mut depends = step.depends.clone();
                depends.extend(sub.depends.iter().copied());
                units.push((sub_id, sub.status, sub.blocked.clone(), depends));
            }
        }
    }
    units
}

/// The next unit to run: top to bottom, skipping done ones, honouring `depends`.
pub fn next_step(todo: &Checklist, only: Option<StepId>) -> Next {
    let done: BTreeSet<StepId> = todo
        .all_steps()
        .filter(|s| s.effective_status() == StepStatus::Done)
        .filter_map(|s| s.id)
        .collect();
    let units = units(todo);
    let mut waiting = None;
    for (id, status, blocked, depends) in &units {
        if let Some(only) = only
            && *id != only
            && id.parent() != only
        {
            continue;
        }
        match status {
            StepStatus::Done => continue,
            StepStatus::Blocked => {
                return Next::Blocked {
                    id: *id,
                    reason: blocked
                        .clone()
                        .unwrap_or_else(|| "no reason given".to_owned()),
                };
            }
            _ => {}
        }
        if let Some(dep) = depends.iter().find(|d| !done.contains(d)) {
            waiting.get_or_insert(Next::Waiting { id: *id, on: *dep });
            continue;
        }
        return Next::Step(*id);
    }
    match (waiting, only) {
        (Some(waiting), _) => waiting,
        (None, Some(only)) => Next::AlreadyDone(only),
        (None, None) => Next::AllDone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::todo_md;

    fn next(src: &str, only: Option<&str>) -> Next {
        next_step(
            &todo_md::parse(src).unwrap(),
            only.map(|s| s.parse().unwrap()),
        )
    }

    #[test]
    fn picks_the_first_open_step_in_order() {
        assert_eq!(
            next("- [x] S1 a\n- [ ] S2 b\n- [ ] S3 c\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(
            next("- [x] S1 a\n- [-] S2 b\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(
            next("- [x] S1 a\n- [~] S2 b\n", None),
            Next::Step(StepId::top(2))
        );
        assert_eq!(next("- [x] S1 a\n- [x] S2 b\n", None), Next::AllDone);
    }

    #[test]
    fn a_blocked_step_stops_the_run() {
        assert_eq!(
            next(
                "- [x] S1 a\n- [!] S2 b\n  - blocked: no key\n- [ ] S3 c\n",
                None
            ),
            Next::Blocked {
                id: StepId::top(2),
                reason: "no key".into()
            }
        );
    }

    #[test]
    fn depends_are_honoured() {
        let src = "- [ ] S1 a\n  - depends: S2\n- [ ] S2 b\n";
        assert_eq!(next(src, None), Next::Step(StepId::top(2)));
        let src = "- [ ] S1 a\n  - depends: S2\n- [!] S2 b\n";
        assert_eq!(
            next(src, None),
            Next::Blocked {
                id: StepId::top(2),
                reason: "no reason given".into()
            }
        );
    }

    #[test]
    fn sub_steps_are_the_units_of_a_parent() {
        let src = "- [x] S1 a\n- [ ] S2 b\n  - [x] S2.1 c\n  - [ ] S2.2 d\n";
        assert_eq!(next(src, None), Next::Step(StepId::sub(2, 2)));
        assert_eq!(next(src, Some("S2")), Next::Step(StepId::sub(2, 2)));
        assert_eq!(next(src, Some("S1")), Next::AlreadyDone(StepId::top(1)));
    }

    #[test]
    fn a_step_waiting_on_an_open_step_that_cannot_run_first_is_reported() {
        // Only S2 may run, and it waits on S1 (a cycle never parses: `todo_md`).
        let src = "- [ ] S1 a\n- [ ] S2 b\n  - depends: S1\n";
        assert_eq!(
            next(src, Some("S2")),
            Next::Waiting {
                id: StepId::top(2),
                on: StepId::top(1)
            }
        );
        // A sub-step inherits its parent's `depends`.
        let src = "- [ ] S1 a\n- [ ] S2 b\n  - depends: S1\n  - [ ] S2.1 c\n";
        assert_eq!(
            next(src, Some("S2")),
            Next::Waiting {
                id: StepId::sub(2, 1),
                on: StepId::top(1)
            }
        );
        assert_eq!(next(src, None), Next::Step(StepId::top(1)));
    }
}
