//! Backlog.md's `backlog/tasks/<id> - <Title>.md`: YAML front matter (`id`, `title`, `status`,
//! `dependencies`, `modified_files`, ...), a description, and acceptance criteria
//! `- [ ] #1 text` between `<!-- AC:BEGIN -->` and `<!-- AC:END -->`. The task is the plan,
//! each criterion a step (source `task-12#1`), the files its front matter names the steps'
//! files. Backlog.md ticks with `[x]`.

use serde_yaml::Value;

use super::markdown::{self, Line};
use super::{ImportError, SourceFile, SourceTask};

pub fn parse(src: &str) -> Result<SourceFile, ImportError> {
    let (front, body_start, front_lines) = front_matter(src)?;
    let string = |key: &str| front.get(key).and_then(scalar);
    let list = |key: &str| -> Vec<String> {
        match front.get(key) {
            Some(Value::Sequence(items)) => items.iter().filter_map(scalar).collect(),
            Some(value) => scalar(value)
                .map(|s| super::text::list(&s))
                .unwrap_or_default(),
            None => Vec::new(),
        }
    };
    let id = string("id").unwrap_or_default();
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    for path in list("modified_files").into_iter().chain(list("files")) {
        let (inside, outside) = super::text::paths(&format!("`{path}`"));
        files.extend(
            inside
                .into_iter()
                .filter(|p| !files.contains(p))
                .collect::<Vec<_>>(),
        );
        for path in outside {
            warnings.push(format!(
                "front matter: `{path}` is outside the repository; it is not among the steps' files"
            ));
        }
    }
    let body = &src[body_start..];
    let lines = markdown::lines(body);
    let mut in_ac = false;
    let mut criteria = Vec::new();
    let mut description = Vec::new();
    let mut section = String::new();
    for at in &lines {
        let raw = at.raw.trim();
        if raw.starts_with("<!--") {
            if raw.contains("AC:BEGIN") {
                in_ac = true;
            } else if raw.contains("AC:END") {
                in_ac = false;
            }
            continue;
        }
        match &at.line {
            Line::Heading { text, .. } => section = text.to_ascii_lowercase(),
            Line::Check { marker, text, .. } if in_ac || section.starts_with("acceptance") => {
                let (number, title) = number(text);
                let mut mark = at.mark();
                if let Some(mark) = &mut mark {
                    mark.line += front_lines;
                }
                let mut task = SourceTask {
                    id: match (&number, id.is_empty()) {
                        (Some(n), false) => format!("{id}#{n}"),
                        (Some(n), true) => format!("#{n}"),
                        (None, _) => String::new(),
                    },
                    title,
                    done: markdown::is_done(*marker),
                    files: files.clone(),
                    line: at.number + front_lines,
                    mark,
                    ..SourceTask::default()
                };
                let title = task.title.clone();
                markdown::add_paths(&mut task, &title, &mut warnings);
                criteria.push(task);
            }
            Line::Bullet { text, .. } | Line::Text { text, .. } if section == "description" => {
                description.push((*text).to_owned());
            }
            _ => {}
        }
    }
    let deps = list("dependencies");
    if !deps.is_empty() {
        description.push(format!(
            "Depends on {} (not part of this import).",
            deps.join(", ")
        ));
    }
    Ok(SourceFile {
        title: string("title"),
        summary: (!description.is_empty()).then(|| description.join("\n")),
        tasks: criteria,
        warnings,
    })
}

/// The front matter as a map, where the body starts, and how many lines come before it.
fn front_matter(src: &str) -> Result<(serde_yaml::Mapping, usize, usize), ImportError> {
    let Some(rest) = src
        .strip_prefix("---\n")
        .or_else(|| src.strip_prefix("---\r\n"))
    else {
        return Ok((serde_yaml::Mapping::new(), 0, 0));
    };
    let open = src.len() - rest.len();
    let mut offset = open;
    let mut line = 1;
    for raw in rest.split_inclusive('\n') {
        line += 1;
        if raw.trim_end() == "---" {
            let yaml = &src[open..offset];
            let value: Value = crate::tasks::safe_yaml::from_str(
                yaml,
                1,
                "invalid front matter",
                "fix the YAML between the `---` lines",
            )
            .map_err(|err| ImportError {
                line: err.line,
                col: err.col,
                message: err.message,
                hint: format!("{}; nothing was imported", err.hint),
            })?;
            let map = match value {
                Value::Mapping(map) => map,
                Value::Null => serde_yaml::Mapping::new(),
                _ => {
                    return Err(ImportError {
                        line: 2,
                        col: 1,
                        message: "the front matter is not a mapping of keys".into(),
                        hint:
                            "write `key: value` lines between the `---` lines; nothing was imported"
                                .into(),
                    });
                }
            };
            return Ok((map, offset + raw.len(), line));
        }
        offset += raw.len();
    }
    Err(ImportError {
        line: 1,
        col: 1,
        message: "the front matter has no closing `---`".into(),
        hint: "end the front matter with a line of `---`; nothing was imported".into(),
    })
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `#1 text` as `1` and the text.
fn number(text: &str) -> (Option<String>, String) {
    if let Some(rest) = text.strip_prefix('#') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            return (
                Some(rest[..digits].to_owned()),
                rest[digits..].trim().to_owned(),
            );
        }
    }
    (None, text.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const TASK: &str = "---
id: task-12
title: Add login rate limiting
status: In Progress
assignee: []
created_date: '2026-11-28 10:00'
labels: [security]
dependencies: [task-3]
modified_files:
  - src/limits.rs
---

## Description

<!-- SECTION:DESCRIPTION:BEGIN -->
Stop brute-force logins.
<!-- SECTION:DESCRIPTION:END -->

## Acceptance Criteria
<!-- AC:BEGIN -->
- [x] #1 Failed logins are counted per account
- [ ] #2 The sixth failure within a minute is refused in src/login.rs
<!-- AC:END -->
";

    #[test]
    fn criteria_are_steps_with_the_front_matters_files() {
        let file = parse(TASK).unwrap();
        assert_eq!(file.title.as_deref(), Some("Add login rate limiting"));
        assert_eq!(
            file.summary.as_deref(),
            Some("Stop brute-force logins.\nDepends on task-3 (not part of this import).")
        );
        let ids: Vec<&str> = file.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["task-12#1", "task-12#2"]);
        assert!(file.tasks[0].done && !file.tasks[1].done);
        assert_eq!(file.tasks[1].files, ["src/limits.rs", "src/login.rs"]);
        assert_eq!(file.tasks[1].line, 22);
        assert_eq!(file.tasks[1].mark.as_ref().unwrap().line, 22);
    }

    #[test]
    fn broken_front_matter_is_an_error_with_its_line() {
        let err = parse("---\nid: [unclosed\n---\n").unwrap_err();
        assert!(err.line >= 2 && !err.message.is_empty(), "{err:?}");
        assert_eq!(
            parse("---\nid: x\n").unwrap_err().message,
            "the front matter has no closing `---`"
        );
    }

    #[test]
    fn the_write_back_finds_the_line_below_the_front_matter() {
        let file = parse(TASK).unwrap();
        let mark = file.tasks[1].mark.clone().unwrap();
        let out = super::super::write_back(super::super::Format::Backlog, TASK, &mark).unwrap();
        assert_eq!(out, TASK.replace("- [ ] #2", "- [x] #2"));
    }
}
