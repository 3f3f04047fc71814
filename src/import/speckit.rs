//! Spec Kit's `specs/NNN-feature/tasks.md`: `## Phase N: Name` headings with
//! `- [ ] T001 [P] [US1] Description with src/exact/path.py` tasks under them. Each phase is a
//! step that depends on the phase before it, its tasks its sub-steps; `[P]` stays in the
//! title, `[US1]` is a requirement link. Spec Kit ticks with `[X]`.

use super::markdown;
use super::openspec::{flatten, groups};
use super::{ImportError, SourceFile, SourceTask};

pub fn parse(src: &str) -> Result<SourceFile, ImportError> {
    let lines = markdown::lines(src);
    let mut warnings = Vec::new();
    let mut tasks = Vec::new();
    let mut phases = 0;
    for (group, body) in groups(&lines, &|text| {
        text.to_ascii_lowercase().starts_with("phase")
    }) {
        let mut found = markdown::tasks(body, &head, &mut warnings);
        for task in &mut found {
            tags(task);
            for sub in &mut task.subtasks {
                tags(sub);
            }
        }
        match group {
            Some((heading, line)) => {
                let subtasks = flatten(found);
                phases += 1;
                tasks.push(SourceTask {
                    title: heading.to_owned(),
                    done: !subtasks.is_empty() && subtasks.iter().all(|t| t.done),
                    after_previous: phases > 1,
                    line,
                    subtasks,
                    ..SourceTask::default()
                });
            }
            None => tasks.extend(found),
        }
    }
    let title = markdown::title(&lines, |text| {
        let text = text.strip_prefix("Tasks:").unwrap_or(text).trim();
        (!text.is_empty() && !text.eq_ignore_ascii_case("tasks")).then(|| text.to_owned())
    });
    Ok(SourceFile::new(title, tasks, warnings))
}

/// `T001 rest` as `T001` and the rest.
fn head(text: &str) -> (String, String) {
    let bytes = text.as_bytes();
    let digits = bytes
        .iter()
        .skip(1)
        .take_while(|b| b.is_ascii_digit())
        .count();
    if bytes.first() == Some(&b'T')
        && digits > 0
        && bytes.get(1 + digits).is_none_or(|b| *b == b' ')
    {
        return (
            text[..=digits].to_owned(),
            text[1 + digits..].trim().to_owned(),
        );
    }
    (String::new(), text.trim().to_owned())
}

/// `[P]` and `[US1]` at the start of the title: parallel, and the user story it serves.
fn tags(task: &mut SourceTask) {
    let mut rest = task.title.as_str();
    let mut kept = Vec::new();
    while let Some(tag) = rest
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .map(|(tag, _)| tag)
    {
        if tag.is_empty() || tag.len() > 12 || tag.contains(' ') {
            break;
        }
        if tag == "P" {
            task.parallel = true;
            kept.push("[P]".to_owned());
        } else {
            task.reqs.push(tag.to_owned());
        }
        rest = rest[tag.len() + 2..].trim_start();
    }
    kept.push(rest.to_owned());
    task.title = kept.join(" ");
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const TASKS: &str = "# Tasks: Photo Albums

**Input**: Design documents from `/specs/001-photo-albums/`

## Phase 1: Setup

- [X] T001 Create project structure per implementation plan
- [ ] T002 [P] Configure linting in .eslintrc.json

## Phase 3: User Story 1 - Create albums (Priority: P1)

### Tests for User Story 1

- [ ] T010 [P] [US1] Contract test for POST /albums in tests/contract/test_albums.py

### Implementation for User Story 1

- [ ] T012 [US1] Create Album model in src/models/album.py

## Dependencies & Execution Order

- Setup (Phase 1): no dependencies
";

    #[test]
    fn phases_are_steps_in_order_and_tasks_keep_their_ids_tags_and_paths() {
        let file = parse(TASKS).unwrap();
        assert_eq!(file.title.as_deref(), Some("Photo Albums"));
        let shape: Vec<(&str, bool, Vec<&str>)> = file
            .tasks
            .iter()
            .map(|t| {
                (
                    t.title.as_str(),
                    t.after_previous,
                    t.subtasks.iter().map(|s| s.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("Phase 1: Setup", false, vec!["T001", "T002"]),
                (
                    "Phase 3: User Story 1 - Create albums (Priority: P1)",
                    true,
                    vec!["T010", "T012"]
                ),
            ]
        );
        let setup = &file.tasks[0].subtasks;
        assert!(setup[0].done && !setup[1].done);
        assert_eq!(setup[1].title, "[P] Configure linting in .eslintrc.json");
        assert!(setup[1].parallel);
        assert_eq!(setup[1].files, [".eslintrc.json"]);
        let story = &file.tasks[1].subtasks;
        assert_eq!(
            story[0].title,
            "[P] Contract test for POST /albums in tests/contract/test_albums.py"
        );
        assert_eq!(story[0].reqs, ["US1"]);
        assert_eq!(story[1].files, ["src/models/album.py"]);
        assert_eq!(story[1].mark.as_ref().unwrap().line, 18);
    }

    #[test]
    fn heads_and_tags() {
        assert_eq!(head("T001 Do"), ("T001".into(), "Do".into()));
        assert_eq!(head("Task 1"), (String::new(), "Task 1".into()));
        assert_eq!(head("T1x"), (String::new(), "T1x".into()));
        let mut task = SourceTask {
            title: "[P] [US2] [bad tag here] x".into(),
            ..SourceTask::default()
        };
        tags(&mut task);
        assert_eq!(
            (task.title.as_str(), task.reqs.as_slice()),
            ("[P] [bad tag here] x", &["US2".to_owned()][..])
        );
    }
}
