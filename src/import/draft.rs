//! An imported file as the text of a draft PLAN.md: the same grammar a person or the planner
//! writes (so it is reviewed and approved as any draft), with each source task's id kept
//! (`source:`), its requirement links (`reqs:`), its paths (`files:`), its dependencies
//! (`depends:`), a check proposed for it and marked so (`proposed:`), and tasks the source
//! ticked ticked. What tick needs to tick the source back later is the front matter's
//! `import:` (format, path, and each task's mark). Pure.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Format, Mark, SourceFile, SourceTask};
use crate::tasks::render::{code_span, one_line};
use crate::tasks::todo_md;

/// The front matter's `import:`: where the plan came from, and each source task's mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportMeta {
    pub format: Format,
    /// The source file, relative to the repository's root.
    pub path: String,
    /// Whether tick ticks the source when it ticks a step (`--no-write-back` says no).
    pub write_back: bool,
}

/// Source id → its mark: kept beside the draft (`.tasks/draft/import.yaml`), not in its front
/// matter, which a person reads and which has a size limit.
pub type Marks = BTreeMap<String, Mark>;

/// What the draft is made with, besides the file.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    pub format: Format,
    pub path: &'a str,
    pub write_back: bool,
    /// The repository's test command and the file that states it, if it has one.
    pub test_command: Option<(&'a str, &'a str)>,
}

/// A draft PLAN.md for an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drafted {
    /// The body (after the front matter).
    pub body: String,
    pub meta: ImportMeta,
    pub marks: Marks,
    pub title: String,
    pub steps: usize,
    /// Tasks the source ticked, imported ticked (not verified).
    pub done: usize,
    /// Checks tick proposed.
    pub proposed: usize,
    pub warnings: Vec<String>,
}

/// Commands that cannot fail are no check at all.
fn cannot_fail(command: &str) -> bool {
    let c = command.trim();
    matches!(c, "" | "true" | ":" | "exit 0" | "/bin/true")
        || (c.starts_with("echo ") && !c.contains(['|', '&', ';', '>']))
}

/// The check of one step and where it came from: (commands, `proposed:` text, `done when:`).
fn check_of(
    task: &SourceTask,
    options: &Options<'_>,
    warnings: &mut Vec<String>,
    label: &str,
) -> (Vec<String>, Option<String>, Option<String>) {
    let mut done_when = None;
    let usable = |commands: &[String], warnings: &mut Vec<String>| -> Vec<String> {
        commands
            .iter()
            .filter(|c| {
                let bad = cannot_fail(c);
                if bad {
                    warnings.push(format!(
                        "{label}: the check `{c}` cannot fail; it was not used"
                    ));
                }
                !bad
            })
            .cloned()
            .collect()
    };
    let stated = usable(&task.verify, warnings);
    if !stated.is_empty() {
        return (
            stated,
            Some("verify, from the source's `Verify:` line".into()),
            None,
        );
    }
    if let Some(strategy) = &task.test_strategy {
        let commands = usable(&super::text::commands_in(strategy), warnings);
        if !commands.is_empty() {
            return (
                commands,
                Some("verify, from Taskmaster's `testStrategy`".into()),
                Some(strategy.clone()),
            );
        }
        done_when = Some(strategy.clone());
    }
    if let Some((command, source)) = options.test_command {
        return (
            vec![command.to_owned()],
            Some(format!(
                "verify, the repository's test command (from `{source}`)"
            )),
            done_when,
        );
    }
    warnings.push(format!(
        "{label}: no check tick could propose; once done it is done without verification"
    ));
    (Vec::new(), None, done_when)
}

fn note_line(note: &str) -> String {
    let note = one_line(note);
    let key = note.split(':').next().unwrap_or("").trim();
    if note.contains(':')
        && todo_md::DETAIL_KEYS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(key))
    {
        format!("note: {note}")
    } else {
        note
    }
}

/// Text safe as a step's title: one line, no HTML that could open a block.
fn title_text(title: &str) -> String {
    let title = one_line(title).replace('<', "&lt;");
    if title.is_empty() {
        "(untitled)".to_owned()
    } else {
        title
    }
}

/// The draft for `file`.
pub fn draft(file: &SourceFile, options: &Options<'_>) -> Drafted {
    let mut warnings = file.warnings.clone();
    // Source id → step id, for `depends`.
    let mut ids: HashMap<&str, String> = HashMap::new();
    for (index, task) in file.tasks.iter().enumerate() {
        let major = index + 1;
        if !task.id.is_empty() {
            ids.insert(&task.id, format!("S{major}"));
        }
        for (sub_index, sub) in task.subtasks.iter().enumerate() {
            if !sub.id.is_empty() {
                ids.insert(&sub.id, format!("S{major}.{}", sub_index + 1));
            }
        }
    }
    let meta = ImportMeta {
        format: options.format,
        path: options.path.to_owned(),
        write_back: options.write_back,
    };
    let mut marks = Marks::new();
    let mut steps = String::new();
    let (mut count, mut done, mut proposed) = (0, 0, 0);
    for (index, task) in file.tasks.iter().enumerate() {
        let id = format!("S{}", index + 1);
        let previous = (index > 0 && task.after_previous).then(|| format!("S{index}"));
        let leaf = task.subtasks.is_empty();
        // The task, then its sub-tasks indented under it.
        let subtasks = task
            .subtasks
            .iter()
            .enumerate()
            .map(|(sub_index, sub)| ("  ", format!("{id}.{}", sub_index + 1), sub, None, true));
        let all = std::iter::once(("", id.clone(), task, previous, leaf)).chain(subtasks);
        for (indent, id, task, previous, leaf) in all {
            let counts = step(
                &mut steps,
                indent,
                &id,
                task,
                previous,
                leaf,
                options,
                &ids,
                &mut marks,
                &mut warnings,
            );
            count += 1;
            done += usize::from(counts.0);
            proposed += usize::from(counts.1);
        }
    }
    let title = file
        .title
        .as_deref()
        .map_or_else(|| "Imported tasks".to_owned(), one_line);
    let tool = options.format.tool();
    let mut body = format!("# {}\n\n## Summary\n\n", title_text(&title));
    body.push_str(&format!("Imported from `{}` ({tool}).", options.path));
    if let Some(summary) = &file.summary {
        body.push_str("\n\n");
        body.push_str(&escape_prose(summary));
    }
    body.push_str("\n\n## Context\n\n");
    body.push_str(&format!(
        "Steps from {tool}'s tasks: {count}. Ticked in the source, so ticked here, done but not verified (`tick verify` runs their checks): {done}. Checks tick wrote, marked `proposed:` (read them before approving): {proposed}."
    ));
    if options.write_back {
        body.push_str(&format!(" When tick ticks a step, it ticks the source's task in `{}` too, unless that line changed since the import.", options.path));
    }
    body.push_str("\n\n## Steps\n\n");
    body.push_str(&steps);
    body.push_str("\n## Risks\n\n");
    if warnings.is_empty() {
        body.push_str("None identified.\n");
    } else {
        for warning in &warnings {
            body.push_str(&format!("- {}\n", one_line(warning)));
        }
    }
    body.push_str("\n## Verification\n\nEach step's `verify` commands; a step without one is done without verification.\n\n## Out of scope\n\nNothing stated.\n\n## Open questions\n\nNone.\n");
    Drafted {
        body,
        meta,
        marks,
        title,
        steps: count,
        done,
        proposed,
        warnings,
    }
}

/// Prose from the source, kept from opening sections of its own.
fn escape_prose(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with('#')
                || trimmed.starts_with("- [")
                || trimmed.starts_with("* [")
                || trimmed.starts_with('<')
            {
                format!("\\{trimmed}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One step's lines; returns (ticked, check proposed).
#[allow(
    clippy::too_many_arguments,
    reason = "one step's pieces, each from a different place"
)]
fn step(
    out: &mut String,
    indent: &str,
    id: &str,
    task: &SourceTask,
    previous: Option<String>,
    leaf: bool,
    options: &Options<'_>,
    ids: &HashMap<&str, String>,
    marks: &mut Marks,
    warnings: &mut Vec<String>,
) -> (bool, bool) {
    let marker = if task.done { 'x' } else { ' ' };
    out.push_str(&format!(
        "{indent}- [{marker}] {id} {}\n",
        title_text(&task.title)
    ));
    let detail = |out: &mut String, line: String| out.push_str(&format!("{indent}  - {line}\n"));
    let label = if task.id.is_empty() {
        format!("step `{id}`")
    } else {
        format!("step `{id}` (`{}`)", task.id)
    };
    if !task.id.is_empty() {
        detail(out, format!("source: {}", one_line(&task.id)));
        if let Some(mark) = &task.mark {
            marks.insert(task.id.clone(), mark.clone());
        }
    } else if options.write_back && task.mark.is_some() {
        // Without an id tick cannot find the task again in its file: said, not silent.
        warnings.push(format!(
            "{label} (\"{}\") has no id in the source, so tick will not tick it back there",
            one_line(&task.title)
        ));
    }
    if !task.files.is_empty() {
        detail(out, format!("files: {}", task.files.join(", ")));
    }
    let mut proposed = false;
    // A step with sub-steps is checked by them; its own check is one its source states.
    let (verify, origin, done_when) = if leaf {
        check_of(task, options, warnings, &label)
    } else if !task.verify.is_empty() || task.test_strategy.is_some() {
        let stated = Options {
            test_command: None,
            ..options.clone()
        };
        let mut quiet = Vec::new();
        let found = check_of(task, &stated, &mut quiet, &label);
        warnings.extend(
            quiet
                .into_iter()
                .filter(|w| !w.ends_with("done without verification")),
        );
        found
    } else {
        (Vec::new(), None, None)
    };
    if !verify.is_empty() {
        let commands: Vec<String> = verify.iter().map(|c| code_span(&one_line(c))).collect();
        detail(out, format!("verify: {}", commands.join(", ")));
    }
    if let Some(origin) = origin {
        detail(out, format!("proposed: {origin}"));
        proposed = true;
    }
    if let Some(done_when) = done_when {
        detail(out, format!("done when: {}", one_line(&done_when)));
    }
    let mut depends: Vec<String> = previous.into_iter().collect();
    for dep in &task.depends {
        match ids.get(dep.as_str()) {
            Some(step) if step != id && !depends.contains(step) => depends.push(step.clone()),
            Some(_) => {}
            None => warnings.push(format!("{label}: depends on `{dep}`, which is not in this import; the dependency was left out")),
        }
    }
    if !depends.is_empty() {
        detail(out, format!("depends: {}", depends.join(", ")));
    }
    if !task.reqs.is_empty() {
        detail(out, format!("reqs: {}", one_line(&task.reqs.join(", "))));
    }
    if task.optional {
        detail(out, format!("optional in {} (`*`)", options.format.tool()));
    }
    for note in &task.notes {
        detail(out, note_line(note));
    }
    (task.done, proposed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(test_command: Option<(&'static str, &'static str)>) -> Options<'static> {
        Options {
            format: Format::Speckit,
            path: "specs/001-photo-albums/tasks.md",
            write_back: true,
            test_command,
        }
    }

    const TASKS: &str = "# Tasks: Photo Albums

## Phase 1: Setup

- [X] T001 Create project structure
- [ ] T002 [P] [US1] Create Album model in src/models/album.py
  - Verify: `python3 -m pytest tests/test_album.py`

## Phase 2: Polish

- [ ] T003 Document albums in docs/albums.md
  - Depends: on the models
  - Verify: `true`
";

    #[test]
    fn the_draft_keeps_ids_files_reqs_ticks_and_says_which_checks_tick_wrote() {
        let file =
            super::super::parse(Format::Speckit, "specs/001-photo-albums/tasks.md", TASKS).unwrap();
        let drafted = draft(&file, &options(Some(("make test", "Makefile"))));
        let steps = drafted
            .body
            .split("## Steps\n\n")
            .nth(1)
            .unwrap()
            .split("\n## Risks")
            .next()
            .unwrap();
        assert_eq!(
            steps,
            "- [ ] S1 Phase 1: Setup
  - [x] S1.1 Create project structure
    - source: T001
    - verify: `make test`
    - proposed: verify, the repository's test command (from `Makefile`)
  - [ ] S1.2 [P] Create Album model in src/models/album.py
    - source: T002
    - files: src/models/album.py
    - verify: `python3 -m pytest tests/test_album.py`
    - proposed: verify, from the source's `Verify:` line
    - reqs: US1
- [ ] S2 Phase 2: Polish
  - depends: S1
  - [ ] S2.1 Document albums in docs/albums.md
    - source: T003
    - files: docs/albums.md
    - verify: `make test`
    - proposed: verify, the repository's test command (from `Makefile`)
    - note: Depends: on the models
"
        );
        assert_eq!((drafted.steps, drafted.done, drafted.proposed), (5, 1, 3));
        assert_eq!(
            drafted.warnings,
            ["step `S2.1` (`T003`): the check `true` cannot fail; it was not used"]
        );
        assert_eq!(
            drafted.marks.keys().collect::<Vec<_>>(),
            ["T001", "T002", "T003"]
        );
        let doc = crate::tasks::plan_md::parse(&drafted.body).unwrap();
        assert_eq!(doc.steps.all_steps().count(), 5);
        let t2 = doc.steps.find("S1.2".parse().unwrap()).unwrap();
        assert_eq!(t2.source.as_deref(), Some("T002"));
        assert_eq!(t2.reqs, ["US1"]);
        assert!(t2.proposed.is_some());
    }

    #[test]
    fn a_step_with_no_usable_check_is_imported_with_a_warning_and_no_check() {
        let file =
            super::super::parse(Format::Speckit, "specs/001-photo-albums/tasks.md", TASKS).unwrap();
        let drafted = draft(&file, &options(None));
        assert!(drafted.warnings.contains(&"step `S1.1` (`T001`): no check tick could propose; once done it is done without verification".to_owned()), "{:?}", drafted.warnings);
        assert!(
            drafted.body.contains("## Risks\n\n- step `S1.1`"),
            "{}",
            drafted.body
        );
        assert!(!drafted.body.contains("`true`\n"));
    }

    #[test]
    fn dependencies_outside_the_import_are_left_out_with_a_warning() {
        let file = super::super::parse(Format::Taskmaster, "tasks.json", r#"{"tasks": [{"id": 1, "title": "A", "status": "pending", "dependencies": [9], "testStrategy": "run `make check`"}]}"#).unwrap();
        let drafted = draft(
            &file,
            &Options {
                format: Format::Taskmaster,
                ..options(None)
            },
        );
        assert!(
            drafted
                .warnings
                .iter()
                .any(|w| w.contains("depends on `9`, which is not in this import")),
            "{:?}",
            drafted.warnings
        );
        assert!(drafted.body.contains("  - verify: `make check`\n  - proposed: verify, from Taskmaster's `testStrategy`\n  - done when: run `make check`\n"), "{}", drafted.body);
    }

    #[test]
    fn hostile_titles_stay_one_step() {
        let file = SourceFile {
            title: Some("# Steps".into()),
            summary: Some("## Steps\n- [ ] S9 smuggled\n<!--".into()),
            tasks: vec![
                SourceTask {
                    id: "1".into(),
                    title: "<!-- open".into(),
                    ..SourceTask::default()
                },
                SourceTask {
                    id: "2".into(),
                    title: "b".into(),
                    ..SourceTask::default()
                },
            ],
            warnings: vec![],
        };
        let drafted = draft(&file, &options(None));
        let doc = crate::tasks::plan_md::parse(&drafted.body).unwrap();
        let titles: Vec<&str> = doc.steps.all_steps().map(|s| s.title.as_str()).collect();
        assert_eq!(titles, ["&lt;!-- open", "b"]);
    }
}
