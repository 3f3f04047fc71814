//! YAML that costs nothing to refuse. Every YAML file tick reads (PLAN.md front matter,
//! state.yaml, config) may come from a cloned repository, and a YAML parser that expands
//! aliases can be made to build gigabytes out of kilobytes (one long string, a thousand `*a`),
//! and one that recurses can be made to spend a minute on a line of `[`. tick never writes
//! anchors or aliases, so they are refused outright, with their line and column, by a scan of
//! the parser's events before anything is deserialized; the same scan stops at
//! [`MAX_DEPTH`] levels of nesting, after reading only those levels.

use saphyr_parser::{Event, Parser, Span};
use serde::de::DeserializeOwned;

use super::todo_md::ParseError;

/// How deeply collections may nest in a file tick reads. tick's own files nest four levels.
pub const MAX_DEPTH: usize = 64;

const ALIASES: &str = "YAML aliases (`*name`) are not allowed in files tick reads";

fn nested() -> String {
    format!("YAML nested more than {MAX_DEPTH} levels deep")
}

/// Deserializes `text` after [`check`] passed. `lines_before` is how many lines of the file
/// come before `text` (the front matter's fence), so locations are the file's; `what` starts
/// the message ("invalid state") and `hint` says how to fix the file.
pub fn from_str<T: DeserializeOwned>(
    text: &str,
    lines_before: usize,
    what: &str,
    hint: &str,
) -> Result<T, ParseError> {
    check(text, lines_before, hint)?;
    serde_yaml::from_str(text).map_err(|err| ParseError::from_yaml(&err, lines_before, what, hint))
}

/// Refuses anchors (`&name`), aliases (`*name`), nesting deeper than [`MAX_DEPTH`], and YAML
/// that does not parse, at the first offending event.
pub fn check(text: &str, lines_before: usize, hint: &str) -> Result<(), ParseError> {
    let at = |span: &Span, message: &str| ParseError {
        line: span.start.line() + lines_before,
        col: span.start.col() + 1,
        message: message.to_owned(),
        hint: hint.to_owned(),
    };
    let refuse_anchor = |anchor: usize, span: &Span| {
        if anchor == 0 {
            Ok(())
        } else {
            Err(at(
                span,
                "YAML anchors (`&name`) are not allowed in files tick reads",
            ))
        }
    };
    let mut depth = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|err| {
            // The parser's own guards say it in its words; say what tick refuses.
            let message = if err.info().contains("unknown anchor") {
                ALIASES.to_owned()
            } else if err.info().contains("recursion limit") {
                nested()
            } else {
                format!("invalid YAML: {}", err.info())
            };
            ParseError {
                line: err.marker().line() + lines_before,
                col: err.marker().col() + 1,
                message,
                hint: hint.to_owned(),
            }
        })?;
        match event {
            Event::Alias(_) => {
                return Err(at(&span, ALIASES));
            }
            Event::Scalar(_, _, anchor, _) => refuse_anchor(anchor, &span)?,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                refuse_anchor(anchor, &span)?;
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(at(&span, &nested()));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn refused(text: &str) -> ParseError {
        check(text, 1, "fix it").unwrap_err()
    }

    #[test]
    fn anchors_and_aliases_are_refused_where_they_are() {
        let err = refused("title: x\nbase: &b\n  a: 1\nother: *b\n");
        assert_eq!((err.line, err.col), (3, 7), "{err:?}");
        assert!(err.message.contains("anchors"), "{err:?}");
        let err = refused("a: [1, 2]\nb: *x\n");
        assert!(err.message.contains("aliases"), "{err:?}");
        assert_eq!(err.line, 3, "{err:?}");
        let err = refused("a: &s text\n");
        assert!(err.message.contains("anchors"), "{err:?}");
        assert_eq!(err.hint, "fix it");
    }

    #[test]
    fn text_that_only_looks_like_an_anchor_is_fine() {
        for ok in [
            "title: \"&not an anchor\"\n",
            "title: 'x *y'\n",
            "note: a & b * c\n",
            "note: |\n  &literal\n  *block\n",
            "# &comment\nkey: v\n",
        ] {
            check(ok, 0, "").unwrap_or_else(|e| panic!("{ok:?}: {e:?}"));
        }
    }

    #[test]
    fn the_flat_alias_bomb_is_refused_at_the_first_alias() {
        let mut text = format!("a: &a \"{}\"\nb: [", "x".repeat(1 << 20));
        for _ in 0..1000 {
            text.push_str("*a,");
        }
        text.push_str("]\n");
        let started = Instant::now();
        let err = from_str::<serde_yaml::Value>(&text, 0, "invalid", "").unwrap_err();
        assert!(err.message.contains("anchors"), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn deep_nesting_stops_after_the_limit() {
        let text = format!("a: {}", "[".repeat(100_000));
        let started = Instant::now();
        let err = refused(&text);
        assert!(err.message.contains("nested more than 64"), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let mut block = String::new();
        for i in 0..70 {
            block.push_str(&" ".repeat(i));
            block.push_str(&format!("k{i}:\n"));
        }
        assert!(refused(&block).message.contains("nested"));
        let fine = format!("a: {}{}\n", "[".repeat(20), "]".repeat(20));
        check(&fine, 0, "").unwrap();
    }

    proptest::proptest! {
        /// Whatever tick writes, it can read back: the scan must accept every string the
        /// serializer emits (block scalars, quotes, escapes, `&` and `*` inside text).
        #[test]
        fn everything_tick_writes_passes_the_scan(
            note in "\\PC{0,80}|[&*!|>#:\\-\\[\\]{}\\n\\t ]{0,20}|\\p{Any}{0,40}",
            key in "[a-z&*\\[ ]{1,12}",
        ) {
            let mut map = std::collections::BTreeMap::new();
            map.insert(key, vec![note.clone(), format!("{note}\n{note}")]);
            let yaml = serde_yaml::to_string(&map).unwrap();
            let back: std::collections::BTreeMap<String, Vec<String>> =
                from_str(&yaml, 0, "invalid", "").map_err(|e| {
                    proptest::test_runner::TestCaseError::fail(format!("{e:?} in {yaml:?}"))
                })?;
            proptest::prop_assert_eq!(back, map);
        }
    }

    #[test]
    fn syntax_errors_are_located() {
        let err = refused("a: [1, 2\nb: c\n");
        assert!(err.message.starts_with("invalid YAML"), "{err:?}");
        assert!(err.line >= 2, "{err:?}");
    }
}
