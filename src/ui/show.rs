//! `tick show` in words: a task's plan with each step showing where it stands.

use crate::plan::StepId;
use crate::tasks::plan_md;
use crate::tasks::todo_md::Checklist;

/// The plan's body with each step of its `## Steps` section showing its marker in TODO.md:
/// PLAN.md is the contract and keeps `[ ]`, but a person asking to see a task wants to see
/// where it stands. Only the shown text changes, never the file.
pub fn with_status(body: &str, todo: &Checklist) -> String {
    let Some(range) = plan_md::section_range(body, "Steps") else {
        return body.to_owned();
    };
    let mut out = String::with_capacity(body.len());
    out.push_str(&body[..range.start]);
    for line in body[range.clone()].split_inclusive('\n') {
        out.push_str(&with_marker(line, todo));
    }
    out.push_str(&body[range.end..]);
    out
}

/// `line` with its step's marker from `todo`, when it is a step line whose id `todo` has.
fn with_marker(line: &str, todo: &Checklist) -> String {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    let Some(after_bullet) = rest
        .strip_prefix("- [")
        .or_else(|| rest.strip_prefix("* ["))
        .or_else(|| rest.strip_prefix("+ ["))
    else {
        return line.to_owned();
    };
    let mut chars = after_bullet.char_indices();
    let (Some((_, marker)), Some((close, ']'))) = (chars.next(), chars.next()) else {
        return line.to_owned();
    };
    let id_text = after_bullet[close + 1..]
        .split_whitespace()
        .next()
        .unwrap_or_default();
    let Some(status) = id_text
        .parse::<StepId>()
        .ok()
        .and_then(|id| todo.find(id))
        .map(|step| step.status)
    else {
        return line.to_owned();
    };
    let at = indent + 3;
    format!(
        "{}{}{}",
        &line[..at],
        status.marker(),
        &line[at + marker.len_utf8()..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::todo_md;

    #[test]
    fn steps_show_their_todo_markers_and_nothing_else_changes() {
        let body = "# T\n\n## Summary\n- [ ] S1 not a step here\n\n## Steps\n\n- [ ] S1 one\n  - files: a\n- [ ] S2 two\n  * [ ] S2.1 sub\n- [ ] S9 gone from TODO.md\n- [ ] no id\n\n## Risks\n- [ ] S2 not a step either\n";
        let todo =
            todo_md::parse("# TODO\n\n- [x] S1 one\n- [!] S2 two\n  - [~] S2.1 sub\n").unwrap();
        assert_eq!(
            with_status(body, &todo),
            "# T\n\n## Summary\n- [ ] S1 not a step here\n\n## Steps\n\n- [x] S1 one\n  - files: a\n- [!] S2 two\n  * [~] S2.1 sub\n- [ ] S9 gone from TODO.md\n- [ ] no id\n\n## Risks\n- [ ] S2 not a step either\n"
        );
    }

    #[test]
    fn a_body_without_steps_is_shown_as_it_is() {
        let todo = todo_md::parse("- [x] S1 one\n").unwrap();
        assert_eq!(with_status("# T\n\nprose\n", &todo), "# T\n\nprose\n");
        // A multi-byte marker a person typed is replaced whole.
        let body = "## Steps\n- [✓] S1 one\n";
        assert_eq!(with_status(body, &todo), "## Steps\n- [x] S1 one\n");
    }
}
