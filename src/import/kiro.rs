//! Kiro's `.kiro/specs/<feature>/tasks.md`: `- [ ] 1. Title` tasks, `- [ ] 1.1 Sub-task`
//! nested under them, `- [ ]* 3.4` optional ones, and detail bullets such as
//! `_Requirements: 1.1, 1.2_`. Kiro ticks with `[x]`.

use super::markdown;
use super::{ImportError, SourceFile};

pub fn parse(src: &str) -> Result<SourceFile, ImportError> {
    let lines = markdown::lines(src);
    let mut warnings = Vec::new();
    let tasks = markdown::tasks(&lines, &markdown::numbered_head, &mut warnings);
    let title = markdown::title(&lines, |text| {
        (!text.eq_ignore_ascii_case("implementation plan")).then(|| text.to_owned())
    });
    Ok(SourceFile::new(title, tasks, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = "# Implementation Plan

- [ ] 1. Set up project structure and core interfaces
  - Create directory structure for models, services and API in src/
  - _Requirements: 1.1_

- [x] 2. Implement data models
  - [x] 2.1 Create the User model in src/models/user.ts
    - Write validation functions
    - _Requirements: 1.2, 2.1_
  - [ ]* 2.2 Write unit tests for the User model
    - Verify: `npm test -- user`
    - _Requirements: 1.2_
";

    #[test]
    fn tasks_sub_tasks_optional_tasks_and_requirements() {
        let file = parse(TASKS).unwrap();
        assert_eq!(file.title, None, "Kiro's heading is not a title");
        let ids: Vec<(&str, Vec<&str>)> = file
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.subtasks.iter().map(|s| s.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(ids, [("1", vec![]), ("2", vec!["2.1", "2.2"])]);
        let one = &file.tasks[0];
        assert_eq!(one.title, "Set up project structure and core interfaces");
        assert_eq!(one.reqs, ["1.1"]);
        assert_eq!(one.files, ["src/**"]);
        assert_eq!(one.line, 3);
        assert!(!one.done);
        let two = &file.tasks[1];
        assert!(two.done && two.subtasks[0].done && !two.subtasks[1].done);
        assert_eq!(two.subtasks[0].files, ["src/models/user.ts"]);
        assert_eq!(two.subtasks[0].reqs, ["1.2", "2.1"]);
        assert!(two.subtasks[1].optional);
        assert_eq!(two.subtasks[1].verify, ["npm test -- user"]);
        assert_eq!(two.subtasks[1].mark.as_ref().unwrap().line, 11);
    }
}
