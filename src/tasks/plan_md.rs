//! PLAN.md: YAML front matter, then markdown whose `## Steps` section uses the TODO.md grammar.
//! Pure: parsing, validation, the approval hash and targeted edits. The body is kept byte for
//! byte; only the front matter is ever re-rendered.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};

use super::todo_md::{self, Checklist, ParseError};
use crate::plan::Phase;

/// The PLAN.md format this tick writes. Older versions are read and migrated.
pub const FORMAT: u32 = 1;

/// The most front matter tick reads: a plan's front matter is a dozen short keys.
pub const MAX_FRONT_MATTER: usize = 64 * 1024;

/// The front matter. Keys tick does not know are kept, after the known ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrontMatter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Phase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    #[serde(flatten)]
    pub extra: serde_yaml::Mapping,
}

/// What the person allowed when approving.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// May the run touch files outside a step's `files`?
    #[serde(default)]
    pub allow_deviation: bool,
    /// A hard limit on files changed by the whole task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files_changed: Option<u32>,
    /// Does every verified step get its own commit, as with `tick run --commit`?
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commit_steps: bool,
}

/// A parsed PLAN.md.
#[derive(Debug, Clone)]
pub struct PlanDoc {
    pub front: FrontMatter,
    /// Everything after the front matter, exactly as in the file.
    pub body: Body,
    /// How many lines come before the body (the front matter and its fences).
    pub body_line: usize,
    /// The plan's title: front matter `title`, else the first `# ` heading.
    pub title: Option<String>,
    pub steps: Checklist,
    /// Where the `## Steps` section is in `body`, if there is one.
    pub steps_region: Option<Range<usize>>,
}

/// PLAN.md's text after the front matter. A task's is a view into the file's text it keeps
/// anyway, not a copy of it (a plan of 10,000 steps is megabytes).
#[derive(Clone)]
pub struct Body {
    text: Arc<String>,
    start: usize,
}

/// Bodies are equal when their texts are, wherever they are kept.
impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        **self == **other
    }
}

impl Eq for Body {}

impl Deref for Body {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text[self.start..]
    }
}

impl From<String> for Body {
    fn from(text: String) -> Self {
        Body {
            text: Arc::new(text),
            start: 0,
        }
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PlanDoc {
    pub fn phase(&self) -> Option<Phase> {
        self.front.status
    }
}

fn error(
    line: usize,
    col: usize,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> ParseError {
    ParseError {
        line,
        col,
        message: message.into(),
        hint: hint.into(),
    }
}

/// Splits `src` into the front matter's YAML (if any), the body, and the body's first line.
fn split_front_matter(src: &str) -> Result<(Option<&str>, &str, usize), ParseError> {
    let text = src.strip_prefix('\u{feff}').unwrap_or(src);
    let skip = src.len() - text.len();
    let Some(after_open) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        // A byte-order mark is no part of the markdown (the title heading is the first line).
        return Ok((None, text, 0));
    };
    let yaml_start = skip + (text.len() - after_open.len());
    let mut offset = yaml_start;
    for (index, line) in src[yaml_start..].split_inclusive('\n').enumerate() {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            let yaml = &src[yaml_start..offset];
            let body = &src[offset + line.len()..];
            return Ok((Some(yaml), body, index + 2));
        }
        offset += line.len();
    }
    Err(error(
        1,
        1,
        "the front matter is not closed",
        "end it with a line `---` before the markdown",
    ))
}

/// Parses PLAN.md's front matter and keeps its body, without reading the steps: for an
/// approved task, whose checklist is TODO.md. [`parse`] reads everything.
pub fn parse_without_steps(src: &str) -> Result<PlanDoc, ParseError> {
    parse_with(src, false, None)
}

/// [`parse_without_steps`] of a text kept elsewhere: the body is a view into it.
pub fn parse_shared_without_steps(src: &Arc<String>) -> Result<PlanDoc, ParseError> {
    parse_with(src, false, Some(src))
}

/// Parses PLAN.md. Nothing is required here; see [`validate`] for what a plan must have.
pub fn parse(src: &str) -> Result<PlanDoc, ParseError> {
    parse_with(src, true, None)
}

fn parse_with(
    src: &str,
    with_steps: bool,
    shared: Option<&Arc<String>>,
) -> Result<PlanDoc, ParseError> {
    let (yaml, body, body_line) = split_front_matter(src)?;
    let front = match yaml {
        Some(yaml) if yaml.len() > MAX_FRONT_MATTER => {
            return Err(error(
                2,
                1,
                format!(
                    "the front matter is larger than {} KiB",
                    MAX_FRONT_MATTER / 1024
                ),
                "keep the front matter to the plan's few keys; put prose in the markdown below it",
            ));
        }
        Some(yaml) if !yaml.trim().is_empty() => super::safe_yaml::from_str::<FrontMatter>(
            yaml,
            1,
            "invalid front matter",
            "the front matter is YAML between two `---` lines",
        )?,
        _ => FrontMatter::default(),
    };
    if let Some(format) = front.format
        && format > FORMAT
    {
        return Err(error(
            2,
            1,
            format!("PLAN.md format {format} is newer than this tick understands ({FORMAT})"),
            "upgrade tick",
        ));
    }
    let title_in_front = front.title.as_deref().is_some_and(|t| !t.trim().is_empty());
    if with_steps || !title_in_front {
        // pulldown-cmark reads the body below: first the cheap bound on its nesting.
        super::markdown_depth::check(body, body_line)?;
    }
    let steps_region = if with_steps {
        section_range(body, "steps")
    } else {
        None
    };
    if let Some(region) = &steps_region
        && let Some(again) = section_range(&body[region.end..], "steps")
    {
        // A second `## Steps` would be dropped without a word: its steps are never run.
        let at = region.end + again.start;
        let line = body[..at].matches('\n').count() + body_line;
        return Err(error(
            line,
            1,
            "a second `## Steps` section: tick reads the steps of the first one only".to_owned(),
            "move its steps into the first `## Steps` section, or rename its heading",
        ));
    }
    let steps = match &steps_region {
        Some(region) => todo_md::parse_region(body, region.clone()),
        None => Ok(Checklist::default()),
    }
    .map_err(|mut err| {
        err.line += body_line;
        err
    })?;
    let title = front
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| todo_md::first_heading(body));
    let body = match shared {
        Some(text) => Body {
            text: Arc::clone(text),
            start: body.as_ptr() as usize - src.as_ptr() as usize,
        },
        None => Body::from(body.to_owned()),
    };
    Ok(PlanDoc {
        front,
        body,
        body_line,
        title,
        steps,
        steps_region,
    })
}

/// The byte range of the body's `## <name>` section: after its heading, up to the next
/// heading of level 1 or 2. `None` when there is no such heading.
pub fn section_range(body: &str, name: &str) -> Option<Range<usize>> {
    let mut in_heading = false;
    let mut heading_text = String::new();
    let mut start: Option<usize> = None;
    for (event, range) in Parser::new(body).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if let Some(start) = start
                    && level <= HeadingLevel::H2
                {
                    return Some(start..range.start);
                }
                in_heading = true;
                heading_text.clear();
            }
            Event::Text(text) | Event::Code(text) if in_heading => heading_text.push_str(&text),
            Event::End(TagEnd::Heading(level)) => {
                if level == HeadingLevel::H2
                    && start.is_none()
                    && heading_text.trim().eq_ignore_ascii_case(name)
                {
                    start = Some(range.end);
                }
                in_heading = false;
            }
            _ => {}
        }
    }
    start.map(|start| start..body.len())
}

/// The trimmed text of the body's `## <name>` section; `None` when it is missing or empty.
pub fn section<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let text = body[section_range(body, name)?].trim();
    (!text.is_empty()).then_some(text)
}

/// What a plan must have to be a draft or to be approved: a title and at least one step.
pub fn validate(doc: &PlanDoc) -> Result<(), ParseError> {
    if doc.title.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(error(
            1,
            1,
            "the plan has no title",
            "add `title:` to the front matter or start the plan with a `# Title` heading",
        ));
    }
    if doc.steps_region.is_none() {
        return Err(error(
            doc.body_line + 1,
            1,
            "the plan has no `## Steps` section",
            "add a `## Steps` heading followed by items like `- [ ] S1 Find the login entry point`",
        ));
    }
    if doc.steps.steps.is_empty() {
        return Err(error(
            doc.body_line + 1,
            1,
            "the plan's `## Steps` section has no steps",
            "write steps as items like `- [ ] S1 Find the login entry point`",
        ));
    }
    for step in doc.steps.all_steps() {
        if let Some((file, why)) = step
            .files
            .iter()
            .find_map(|f| unwatchable(f).map(|w| (f, w)))
        {
            return Err(error(
                doc.body_line + step.line,
                1,
                format!("`files: {file}` {why}, so tick could never see it change"),
                "name files by their path from the repository's top, like `src/login.ts` \
                 (a glob like `src/**` too)",
            ));
        }
    }
    Ok(())
}

/// Why a step's `files:` entry names nothing tick can watch: outside the repository, or not
/// a path as written. `None` for a path from the repository's top or a glob.
fn unwatchable(file: &str) -> Option<&'static str> {
    let quoted = |q: char| file.len() >= 2 && file.starts_with(q) && file.ends_with(q);
    if quoted('"') || quoted('\'') {
        return Some("is in quotes, which are no part of a file's name");
    }
    if file.starts_with('/') || file.starts_with('~') {
        return Some("is not inside the repository");
    }
    if file.split(['/', '\\']).any(|part| part == "..") {
        return Some("has a `..` in it");
    }
    None
}

/// PLAN.md's text for `front` and `body`. The front matter takes the body's line endings.
pub fn render(front: &FrontMatter, body: &str) -> Result<String, serde_yaml::Error> {
    let yaml = serde_yaml::to_string(front)?;
    let crlf = body.contains("\r\n");
    let mut out = String::with_capacity(yaml.len() + body.len() + 8);
    out.push_str("---\n");
    out.push_str(&yaml);
    out.push_str("---\n");
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    out.push_str(body);
    Ok(out)
}

/// A hash of what was approved: the front matter without `status` (which tick updates as the
/// task moves on) and the body. Line endings do not count, so an editor that converts them
/// does not un-approve the plan.
pub fn approval_hash(doc: &PlanDoc) -> String {
    let mut front = doc.front.clone();
    front.status = None;
    let yaml = serde_yaml::to_string(&front).unwrap_or_default();
    let mut hasher = blake3::Hasher::new();
    hasher.update(yaml.as_bytes());
    hasher.update(b"\0");
    if doc.body.contains('\r') {
        hasher.update(doc.body.replace("\r\n", "\n").as_bytes());
    } else {
        hasher.update(doc.body.as_bytes());
    }
    hasher.finalize().to_hex().to_string()
}

/// Rewrites only the value of the front matter's `status:` line. `None` when there is no such
/// line (the caller re-renders the front matter instead).
pub fn set_status_line(src: &str, phase: Phase) -> Option<String> {
    let (yaml, _, _) = split_front_matter(src).ok()?;
    let yaml = yaml?;
    let yaml_start = yaml.as_ptr() as usize - src.as_ptr() as usize;
    let mut offset = yaml_start;
    for line in yaml.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("status:") {
            let value_start = offset + "status:".len() + (rest.len() - rest.trim_start().len());
            let value = rest.trim_start();
            let value_len = value
                .find([' ', '\t', '\r', '\n', '#'])
                .unwrap_or(value.len());
            let mut out = src.to_owned();
            out.replace_range(value_start..value_start + value_len, phase.as_str());
            return Some(out);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_body_is_a_view_into_the_text_and_equals_a_copied_one() {
        let text = Arc::new("---\ntitle: T\n---\n# T\n\nBody text.\n".to_owned());
        let shared = parse_shared_without_steps(&text).unwrap();
        let copied = parse_without_steps(&text).unwrap();
        assert_eq!(&*shared.body, "# T\n\nBody text.\n");
        assert!(std::ptr::eq(
            shared.body.as_ptr(),
            text[text.len() - shared.body.len()..].as_ptr()
        ));
        assert_eq!(shared.body, copied.body);
        assert_eq!(approval_hash(&shared), approval_hash(&copied));
    }

    const PLAN: &str = "---
format: 1
title: Refactor login module
goal: Refactor the login module, keep the old API, add tests
status: draft
created: 2026-11-30T14:29:55Z
owner: sam
---
# Refactor login module

## Summary
Move the login code behind a compatibility layer.

## Steps
- [ ] S1 Find the real login entry point
  - files: src/login.ts
- [ ] Add a compatibility layer

## Risks
- [?] this is not a step list
";

    #[test]
    fn parses_front_matter_body_and_steps() {
        let doc = parse(PLAN).unwrap();
        assert_eq!(doc.front.title.as_deref(), Some("Refactor login module"));
        assert_eq!(doc.front.status, Some(Phase::Draft));
        assert_eq!(doc.body_line, 8);
        assert!(doc.body.starts_with("# Refactor login module\n"));
        assert_eq!(doc.steps.steps.len(), 2);
        assert_eq!(doc.steps.steps[1].id, None);
        assert_eq!(
            doc.front.extra.get("owner").and_then(|v| v.as_str()),
            Some("sam")
        );
        validate(&doc).unwrap();
    }

    #[test]
    fn render_keeps_the_body_and_unknown_keys() {
        let doc = parse(PLAN).unwrap();
        let out = render(&doc.front, &doc.body).unwrap();
        assert!(out.ends_with(&*doc.body));
        assert!(out.contains("owner: sam\n"), "{out}");
        let again = parse(&out).unwrap();
        assert_eq!(again.front, doc.front);
    }

    #[test]
    fn no_front_matter_takes_the_heading_as_title() {
        let doc = parse("# Do the thing\n\n## Steps\n- [ ] one\n").unwrap();
        assert_eq!(doc.title.as_deref(), Some("Do the thing"));
        assert_eq!(doc.body_line, 0);
        validate(&doc).unwrap();
    }

    #[test]
    fn validation_names_what_is_missing() {
        let no_title = parse("## Steps\n- [ ] one\n").unwrap();
        assert!(
            validate(&no_title)
                .unwrap_err()
                .message
                .contains("no title")
        );
        let no_steps = parse("# T\n\nsome prose\n").unwrap();
        assert!(
            validate(&no_steps)
                .unwrap_err()
                .message
                .contains("no `## Steps`")
        );
        let empty = parse("# T\n## Steps\nnothing yet\n## Risks\n").unwrap();
        assert!(
            validate(&empty)
                .unwrap_err()
                .message
                .contains("has no steps")
        );
    }

    #[test]
    fn front_matter_errors_have_file_lines() {
        let err = parse("---\ntitle: x\nstatus: finished\n---\n# x\n").unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
        assert!(
            err.message.contains("unknown variant `finished`"),
            "{err:?}"
        );
        let err = parse("---\ntitle: [unclosed\n---\n").unwrap_err();
        assert!(err.line >= 2, "{err:?}");
        let err = parse("---\ntitle: x\n# never closed\n").unwrap_err();
        assert!(err.message.contains("not closed"));
        let err = parse("---\nformat: 9\n---\n").unwrap_err();
        assert!(err.message.contains("newer"));
    }

    #[test]
    fn step_errors_count_front_matter_lines() {
        let err = parse("---\ntitle: x\n---\n## Steps\n- [?] bad\n").unwrap_err();
        assert_eq!((err.line, err.col), (5, 3));
    }

    #[test]
    fn a_files_entry_tick_could_never_watch_is_an_error_at_its_step() {
        for (files, why) in [
            ("../x", "has a `..` in it"),
            ("sub/../c.txt", "has a `..` in it"),
            ("/etc/passwd", "is not inside the repository"),
            ("~/notes.md", "is not inside the repository"),
            ("\"q.txt\"", "is in quotes"),
            ("a.txt, 'b.txt'", "is in quotes"),
        ] {
            let doc = parse(&format!(
                "# T\n## Steps\n- [ ] S1 a\n- [ ] S2 b\n  - files: {files}\n"
            ))
            .unwrap();
            let err = validate(&doc).unwrap_err();
            assert_eq!(err.line, 4, "{files}");
            assert!(err.message.contains(why), "{files}: {}", err.message);
        }
        for files in [
            "src/a.rs, src/**",
            "./a.txt",
            "a..b.txt",
            "dir/",
            "`src/x.rs`",
        ] {
            let doc = parse(&format!("# T\n## Steps\n- [ ] S1 a\n  - files: {files}\n")).unwrap();
            assert!(validate(&doc).is_ok(), "{files}");
        }
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_body() {
        let doc = parse("\u{feff}# Bom\n\nProse.\n\n## Steps\n- [ ] S1 a\n").unwrap();
        assert!(doc.body.starts_with("# Bom\n"), "{:?}", &doc.body[..]);
        assert_eq!(doc.title.as_deref(), Some("Bom"));
        assert_eq!(doc.steps.steps.len(), 1);
    }

    #[test]
    fn a_second_steps_section_is_an_error_at_its_heading() {
        let err = parse("# T\n## Steps\n- [ ] S1 a\n## Steps\n- [ ] S2 b\n").unwrap_err();
        assert_eq!((err.line, err.col), (4, 1));
        assert!(
            err.message.starts_with("a second `## Steps` section"),
            "{}",
            err.message
        );
        let err =
            parse("---\ntitle: x\n---\n## Steps\n- [ ] S1 a\n## Risks\n## STEPS\n").unwrap_err();
        assert_eq!(err.line, 7);
        // A `### Steps` inside the section, or another section's own steps heading, is not one.
        assert!(parse("# T\n## Steps\n- [ ] S1 a\n### Steps\n## Next steps\n").is_ok());
    }

    #[test]
    fn sections_by_name() {
        let doc = parse(PLAN).unwrap();
        assert_eq!(
            section(&doc.body, "Summary"),
            Some("Move the login code behind a compatibility layer.")
        );
        assert!(section(&doc.body, "Steps").unwrap().starts_with("- [ ] S1"));
        assert_eq!(section(&doc.body, "Context"), None);
    }

    #[test]
    fn status_line_edit_touches_only_the_value() {
        let out = set_status_line(PLAN, Phase::Approved).unwrap();
        assert_eq!(out, PLAN.replace("status: draft", "status: approved"));
        let crlf = "---\r\nstatus: approved # set by tick\r\n---\r\nbody\r\n";
        assert_eq!(
            set_status_line(crlf, Phase::Executing).unwrap(),
            crlf.replace("approved", "executing")
        );
        assert!(set_status_line("---\ntitle: x\n---\n", Phase::Draft).is_none());
    }

    #[test]
    fn approval_hash_ignores_status_and_line_endings_only() {
        let doc = parse(PLAN).unwrap();
        let hash = approval_hash(&doc);
        let executing = parse(&set_status_line(PLAN, Phase::Executing).unwrap()).unwrap();
        assert_eq!(approval_hash(&executing), hash);
        let crlf = parse(&PLAN.replace('\n', "\r\n")).unwrap();
        assert_eq!(approval_hash(&crlf), hash);
        let edited = parse(&PLAN.replace("compatibility layer", "shim")).unwrap();
        assert_ne!(approval_hash(&edited), hash);
        let front_edit = parse(&PLAN.replace("owner: sam", "owner: kim")).unwrap();
        assert_ne!(approval_hash(&front_edit), hash);
    }
}
