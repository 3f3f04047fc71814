//! OpenSpec's `openspec/changes/<id>/tasks.md`: `## 1. Group` headings with `- [ ] 1.1 Task`
//! under them. Each group is a step and its tasks its sub-steps. OpenSpec ticks with `[x]`.

use super::markdown::{self, Line};
use super::{ImportError, SourceFile, SourceTask};

pub fn parse(src: &str) -> Result<SourceFile, ImportError> {
    let lines = markdown::lines(src);
    let mut warnings = Vec::new();
    let groups = groups(&lines, &|text| {
        text.starts_with(|c: char| c.is_ascii_digit())
    });
    let mut tasks = Vec::new();
    for (group, body) in groups {
        let found = markdown::tasks(body, &markdown::numbered_head, &mut warnings);
        match group {
            Some((heading, line)) => {
                // A group has no checkbox of its own: no source id, nothing to write back.
                let subtasks = flatten(found);
                tasks.push(SourceTask {
                    title: heading.to_owned(),
                    done: !subtasks.is_empty() && subtasks.iter().all(|t| t.done),
                    line,
                    subtasks,
                    ..SourceTask::default()
                });
            }
            None => tasks.extend(found),
        }
    }
    let title = markdown::title(&lines, |text| {
        (!text.eq_ignore_ascii_case("tasks")).then(|| text.to_owned())
    });
    Ok(SourceFile::new(title, tasks, warnings))
}

/// A group's heading and line (none for the lines before the first group), and its lines.
pub type Group<'l, 'a> = (Option<(&'a str, usize)>, &'l [markdown::At<'a>]);

/// The lines of a file cut at its level-2 headings that `is_group` accepts: the heading and
/// line of each group (none for what comes before the first), and its lines.
pub fn groups<'l, 'a>(
    lines: &'l [markdown::At<'a>],
    is_group: &dyn Fn(&str) -> bool,
) -> Vec<Group<'l, 'a>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut current: Option<(&'a str, usize)> = None;
    for (index, at) in lines.iter().enumerate() {
        if let Line::Heading { level, text } = at.line
            && level <= 2
        {
            out.push((current, &lines[start..index]));
            current = (level == 2 && is_group(text)).then_some((text, at.number));
            start = index + 1;
        }
    }
    out.push((current, &lines[start..]));
    out.retain(|(group, body)| {
        group.is_some() || body.iter().any(|at| matches!(at.line, Line::Check { .. }))
    });
    out
}

/// A group's tasks with their own sub-tasks lifted beside them: a step has one level of
/// sub-steps.
pub fn flatten(tasks: Vec<SourceTask>) -> Vec<SourceTask> {
    let mut out = Vec::with_capacity(tasks.len());
    for mut task in tasks {
        let subs = std::mem::take(&mut task.subtasks);
        out.push(task);
        out.extend(subs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = "## 1. Database

- [x] 1.1 Add the `otp_secret` column in migrations/0007_otp.sql
- [ ] 1.2 Backfill existing users

## 2. API

- [ ] 2.1 Add POST /login/otp in src/api/login.ts
  - Verify: `npm test -- otp`
";

    #[test]
    fn groups_are_steps_and_their_tasks_sub_steps() {
        let file = parse(TASKS).unwrap();
        let shape: Vec<(&str, &str, Vec<&str>)> = file
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.title.as_str(),
                    t.subtasks.iter().map(|s| s.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("", "1. Database", vec!["1.1", "1.2"]),
                ("", "2. API", vec!["2.1"])
            ]
        );
        assert!(file.tasks[0].mark.is_none());
        assert!(file.tasks[0].subtasks[0].done);
        assert_eq!(file.tasks[0].subtasks[0].files, ["migrations/0007_otp.sql"]);
        assert_eq!(file.tasks[1].subtasks[0].verify, ["npm test -- otp"]);
        assert_eq!(file.tasks[1].subtasks[0].files, ["src/api/login.ts"]);
    }

    #[test]
    fn tasks_before_any_group_are_steps_of_their_own() {
        let file = parse("# Tasks\n\n- [ ] 1 Alone\n\n## 2. Group\n- [ ] 2.1 In it\n").unwrap();
        assert_eq!(file.tasks.len(), 2);
        assert_eq!(file.tasks[0].id, "1");
        assert_eq!(file.tasks[1].subtasks[0].id, "2.1");
    }
}
