//! Taskmaster's `.taskmaster/tasks/tasks.json`: tagged (`{"master": {"tasks": [...]}}`) or the
//! older untagged `{"tasks": [...]}`. Tasks have `id`, `title`, `description`, `details`,
//! `testStrategy`, `status`, `dependencies` and `subtasks` (ids within their task, so `3.1`).
//! The tag imported is `master`, or the only one. Write-back sets `"status"` to `"done"`,
//! changing only that value's bytes, for the task found by tag and id.

use serde_json::Value;

use super::json_spans::{self, Part};
use super::{ImportError, Mark, NotWritten, SourceFile, SourceTask, hash};

pub fn parse(src: &str) -> Result<SourceFile, ImportError> {
    let json: Value = serde_json::from_str(src).map_err(|err| ImportError {
        line: err.line().max(1),
        col: err.column().max(1),
        message: format!("not valid JSON: {err}"),
        hint: "fix the file (Taskmaster writes `{\"master\": {\"tasks\": [...]}}`); nothing was imported".into(),
    })?;
    let (tag, tasks) = tagged_tasks(&json)?;
    let spans = status_spans(src);
    let mut warnings = Vec::new();
    let mut out = Vec::new();
    for task in tasks {
        let Some(id) = id_of(task) else {
            warnings.push("a task without an `id` was left out".to_owned());
            continue;
        };
        let mut source = task_of(task, &id, &tag, &spans, src, &mut warnings);
        source.depends = ids(task.get("dependencies"), None);
        if let Some(Value::Array(subtasks)) = task.get("subtasks") {
            for sub in subtasks {
                let Some(sub_id) = id_of(sub) else { continue };
                let full = format!("{id}.{sub_id}");
                let mut sub_task = task_of(sub, &full, &tag, &spans, src, &mut warnings);
                sub_task.depends = ids(sub.get("dependencies"), Some(&id));
                source.subtasks.push(sub_task);
            }
        }
        out.push(source);
    }
    Ok(SourceFile::new(None, out, warnings))
}

/// The tag's name (empty for the untagged format) and its tasks.
fn tagged_tasks(json: &Value) -> Result<(String, &Vec<Value>), ImportError> {
    let bad = |message: String| {
        ImportError {
        line: 1,
        col: 1,
        message,
        hint: "Taskmaster's file is `{\"master\": {\"tasks\": [...]}}` (or `{\"tasks\": [...]}`); nothing was imported".into(),
    }
    };
    let Value::Object(top) = json else {
        return Err(bad("the file is not a JSON object".into()));
    };
    if let Some(Value::Array(tasks)) = top.get("tasks") {
        return Ok((String::new(), tasks));
    }
    let tags: Vec<&String> = top
        .iter()
        .filter(|(_, v)| v.get("tasks").is_some_and(Value::is_array))
        .map(|(k, _)| k)
        .collect();
    let tag = if tags.iter().any(|t| *t == "master") {
        "master".to_owned()
    } else if let [only] = tags.as_slice() {
        (*only).clone()
    } else if tags.is_empty() {
        return Err(bad("no `tasks` list in the file".into()));
    } else {
        let names: Vec<String> = tags.iter().map(|t| format!("`{t}`")).collect();
        return Err(bad(format!(
            "several tags ({}) and none is `master`",
            names.join(", ")
        )));
    };
    let tasks = top[&tag]["tasks"]
        .as_array()
        .ok_or_else(|| bad("no `tasks` list".into()))?;
    Ok((tag, tasks))
}

fn id_of(task: &Value) -> Option<String> {
    match task.get("id")? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

/// Dependencies as source ids; a sub-task's plain numbers are its siblings (`3.1`).
fn ids(value: Option<&Value>, parent: Option<&str>) -> Vec<String> {
    let Some(Value::Array(items)) = value else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item {
            Value::Number(n) => Some(match parent {
                Some(parent) => format!("{parent}.{n}"),
                None => n.to_string(),
            }),
            Value::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn text(task: &Value, key: &str) -> Option<String> {
    task.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A `tag/id` key and the span of its `"status"` value, for every task and sub-task.
type Spans = Vec<(String, std::ops::Range<usize>)>;

fn status_spans(src: &str) -> Spans {
    let Some(objects) = json_spans::objects(src) else {
        return Vec::new();
    };
    let raw_id = |members: &[(String, std::ops::Range<usize>)]| {
        members
            .iter()
            .find(|(k, _)| k == "id")
            .map(|(_, r)| src[r.clone()].trim_matches('"').to_owned())
    };
    // Task objects by path, for the parent ids of sub-tasks.
    let mut ids: std::collections::HashMap<Vec<Part>, String> = std::collections::HashMap::new();
    for object in &objects {
        if let Some(id) = raw_id(&object.members) {
            ids.insert(object.path.clone(), id);
        }
    }
    let mut out = Vec::new();
    for object in &objects {
        let Some(status) = object.members.iter().find(|(k, _)| k == "status") else {
            continue;
        };
        let Some(id) = raw_id(&object.members) else {
            continue;
        };
        let path = &object.path;
        let key = |p: &Part, name: &str| matches!(p, Part::Key(k) if k == name);
        // [root, tag?, "tasks", i] or [.., "tasks", i, "subtasks", j]
        let n = path.len();
        let full = if n >= 4 && key(&path[n - 2], "subtasks") && key(&path[n - 4], "tasks") {
            ids.get(&path[..n - 2])
                .map(|parent| (format!("{parent}.{id}"), &path[..n - 4]))
        } else if n >= 2 && key(&path[n - 2], "tasks") {
            Some((id, &path[..n - 2]))
        } else {
            None
        };
        let Some((full, above)) = full else { continue };
        let tag = match above {
            [_root] => String::new(),
            [_root, Part::Key(tag)] => tag.clone(),
            _ => continue,
        };
        out.push((format!("{tag}/{full}"), status.1.clone()));
    }
    out
}

fn task_of(
    task: &Value,
    id: &str,
    tag: &str,
    spans: &Spans,
    src: &str,
    warnings: &mut Vec<String>,
) -> SourceTask {
    let status = text(task, "status").unwrap_or_else(|| "pending".into());
    let title = text(task, "title").unwrap_or_default();
    let key = format!("{tag}/{id}");
    let mark = spans.iter().find(|(k, _)| *k == key).map(|(_, span)| {
        let line = src[..span.start].bytes().filter(|b| *b == b'\n').count() + 1;
        let line_start = src[..span.start].rfind('\n').map_or(0, |i| i + 1);
        Mark {
            line,
            col: span.start - line_start,
            hash: guard(id, &title, &src[span.clone()]),
            key: key.clone(),
        }
    });
    let mut source = SourceTask {
        id: id.to_owned(),
        title: title.clone(),
        done: status == "done" || status == "completed",
        line: mark.as_ref().map_or(1, |m| m.line),
        mark,
        test_strategy: text(task, "testStrategy"),
        ..SourceTask::default()
    };
    for key in ["description", "details"] {
        if let Some(value) = text(task, key) {
            for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
                super::markdown::add_detail(&mut source, line, warnings);
            }
        }
    }
    super::markdown::add_paths(&mut source, &title, warnings);
    if !matches!(
        status.as_str(),
        "pending" | "done" | "completed" | "in-progress"
    ) {
        source.notes.push(format!("Taskmaster status: {status}"));
    }
    source
}

/// What a write-back checks is as imported: the task's id, title and raw status value.
fn guard(id: &str, title: &str, status_raw: &str) -> String {
    hash(&format!("{id}\u{0}{title}\u{0}{status_raw}"))
}

/// `src` with the task `mark.key` names set `"status": "done"`.
pub fn write_back(src: &str, mark: &Mark) -> Result<String, NotWritten> {
    let spans = status_spans(src);
    let Some((_, span)) = spans.iter().find(|(k, _)| *k == mark.key) else {
        return Err(NotWritten::Changed);
    };
    let json: Value = serde_json::from_str(src).map_err(|_| NotWritten::Changed)?;
    let (tag, id) = mark.key.split_once('/').ok_or(NotWritten::Changed)?;
    let (task_id, sub_id) = match id.split_once('.') {
        Some((t, s)) => (t, Some(s)),
        None => (id, None),
    };
    let tasks = if tag.is_empty() {
        &json["tasks"]
    } else {
        &json[tag]["tasks"]
    };
    let find = |list: &Value, want: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|t| id_of(t).as_deref() == Some(want)))
            .cloned()
    };
    let task = find(tasks, task_id).ok_or(NotWritten::Changed)?;
    let task = match sub_id {
        Some(sub) => find(&task["subtasks"], sub).ok_or(NotWritten::Changed)?,
        None => task,
    };
    let raw = &src[span.clone()];
    if raw == "\"done\"" {
        return Err(NotWritten::AlreadyDone);
    }
    if guard(id, &text(&task, "title").unwrap_or_default(), raw) != mark.hash {
        return Err(NotWritten::Changed);
    }
    let mut out = String::with_capacity(src.len() + 4);
    out.push_str(&src[..span.start]);
    out.push_str("\"done\"");
    out.push_str(&src[span.end..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const TASKS: &str = r#"{
  "master": {
    "tasks": [
      {
        "id": 1,
        "title": "Set up the greeting",
        "description": "Create greeting.txt",
        "details": "Write hello into greeting.txt",
        "testStrategy": "Run `grep -q hello greeting.txt`",
        "status": "done",
        "dependencies": [],
        "priority": "high",
        "subtasks": []
      },
      {
        "id": 2,
        "title": "Shout it",
        "description": "A script that shouts",
        "details": "",
        "testStrategy": "Check it by hand",
        "status": "pending",
        "dependencies": [1],
        "subtasks": [
          {"id": 1, "title": "Write shout.sh", "description": "in shout.sh", "status": "pending", "dependencies": []},
          {"id": 2, "title": "Document it", "status": "pending", "dependencies": [1]}
        ]
      }
    ],
    "metadata": {"created": "2026-11-28T10:00:00Z"}
  },
  "feature-x": {"tasks": [{"id": 1, "title": "Other tag", "status": "pending"}]}
}
"#;

    #[test]
    fn tagged_tasks_with_sub_tasks_dependencies_and_test_strategies() {
        let file = parse(TASKS).unwrap();
        let shape: Vec<(&str, bool, Vec<&str>)> = file
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.done,
                    t.subtasks.iter().map(|s| s.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [("1", true, vec![]), ("2", false, vec!["2.1", "2.2"])]
        );
        assert_eq!(
            file.tasks[0].test_strategy.as_deref(),
            Some("Run `grep -q hello greeting.txt`")
        );
        assert_eq!(file.tasks[0].files, ["greeting.txt"]);
        assert_eq!(file.tasks[1].depends, ["1"]);
        assert_eq!(file.tasks[1].subtasks[1].depends, ["2.1"]);
        assert_eq!(file.tasks[1].subtasks[0].files, ["shout.sh"]);
        let mark = file.tasks[1].mark.as_ref().unwrap();
        assert_eq!((mark.line, mark.key.as_str()), (21, "master/2"));
    }

    #[test]
    fn the_write_back_changes_only_the_status_value() {
        let file = parse(TASKS).unwrap();
        let mark = file.tasks[1].subtasks[0].mark.clone().unwrap();
        let out = write_back(TASKS, &mark).unwrap();
        let want = TASKS.replace(r#"{"id": 1, "title": "Write shout.sh", "description": "in shout.sh", "status": "pending""#, r#"{"id": 1, "title": "Write shout.sh", "description": "in shout.sh", "status": "done""#);
        assert_eq!(out, want);
        assert_eq!(write_back(&out, &mark), Err(NotWritten::AlreadyDone));
        let renamed = TASKS.replace("Write shout.sh", "Write shout.py");
        assert_eq!(write_back(&renamed, &mark), Err(NotWritten::Changed));
    }

    #[test]
    fn the_untagged_format_and_a_lone_tag_are_read() {
        let file = parse(r#"{"tasks": [{"id": "7", "title": "Old style", "status": "pending"}]}"#)
            .unwrap();
        assert_eq!(file.tasks[0].id, "7");
        assert_eq!(file.tasks[0].mark.as_ref().unwrap().key, "/7");
        let file =
            parse(r#"{"feature": {"tasks": [{"id": 1, "title": "T", "status": "pending"}]}}"#)
                .unwrap();
        assert_eq!(file.tasks[0].mark.as_ref().unwrap().key, "feature/1");
        let err = parse(r#"{"a": {"tasks": []}, "b": {"tasks": []}}"#).unwrap_err();
        assert_eq!(err.message, "several tags (`a`, `b`) and none is `master`");
    }

    #[test]
    fn json_nested_ten_thousand_levels_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let err = parse(&deep).unwrap_err();
        assert!(err.message.contains("recursion limit"), "{}", err.message);
        let deep = format!(
            "{{\"tasks\": {}1{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(parse(&deep).is_err());
        let _ = json_spans::objects(&deep);
    }

    proptest::proptest! {
        #[test]
        fn write_back_changes_only_the_status_value(
            titles in proptest::collection::vec("[a-zA-Z0-9 é\\\\\"]{0,12}", 1..5),
            statuses in proptest::collection::vec(proptest::sample::select(vec!["pending", "done", "in-progress", "review"]), 1..5),
            space in "[ \n]{0,3}",
            pick in 0usize..5,
        ) {
            let tasks: Vec<String> = titles
                .iter()
                .zip(statuses.iter().cycle())
                .enumerate()
                .map(|(i, (title, status))| {
                    let title = serde_json::to_string(title).unwrap();
                    format!("{{\"id\":{space}{},{space}\"title\": {title}, \"status\":{space}\"{status}\"}}", i + 1)
                })
                .collect();
            let src = format!("{{\"master\": {{\"tasks\": [{}]}}}}", tasks.join(&format!(",{space}")));
            let file = parse(&src).unwrap();
            let task = &file.tasks[pick % file.tasks.len()];
            let mark = task.mark.clone().unwrap();
            match write_back(&src, &mark) {
                Ok(out) => {
                    let at = src.lines().take(mark.line - 1).map(|l| l.len() + 1).sum::<usize>() + mark.col;
                    let end = at + src[at + 1..].find('"').unwrap() + 2;
                    proptest::prop_assert_eq!(format!("{}\"done\"{}", &src[..at], &src[end..]), out.clone());
                    let again: Value = serde_json::from_str(&out).unwrap();
                    proptest::prop_assert!(again["master"]["tasks"].as_array().unwrap().len() == file.tasks.len());
                }
                Err(NotWritten::AlreadyDone) => proptest::prop_assert!(task.done),
                Err(NotWritten::Changed) => proptest::prop_assert!(false, "unchanged source refused"),
            }
        }
    }

    #[test]
    fn broken_json_names_its_line_and_column() {
        let err = parse("{\n  \"tasks\": [,]\n}").unwrap_err();
        assert_eq!((err.line, err.col), (2, 13));
    }
}
