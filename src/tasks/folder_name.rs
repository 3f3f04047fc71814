//! Task folder names: `<UTC YYYYMMDD-HHMMSS>-<slug of the title>`. A title is never trusted as
//! a path: it is transliterated to `a-z0-9-`, cut to 60 characters, and `plan` when nothing is
//! left. Nor is it trusted to be free of secrets: a key pasted into a title is redacted before
//! it can become part of a folder name.

use chrono::{DateTime, Utc};

const MAX_SLUG: usize = 60;

pub fn slug(title: &str) -> String {
    let full = slug::slugify(crate::redact::redact(title, &[]));
    let mut cut = String::with_capacity(MAX_SLUG);
    for part in full.split('-').filter(|part| !part.is_empty()) {
        let extra = if cut.is_empty() {
            part.len()
        } else {
            part.len() + 1
        };
        if cut.len() + extra > MAX_SLUG {
            if cut.is_empty() {
                cut.push_str(&part[..MAX_SLUG]);
            }
            break;
        }
        if !cut.is_empty() {
            cut.push('-');
        }
        cut.push_str(part);
    }
    // slugify promises this already; the folder name is a path, so check rather than trust.
    if cut.is_empty()
        || !cut
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return "plan".to_owned();
    }
    cut
}

/// The folder name for a plan approved at `now`, before clash handling.
pub fn base_name(now: DateTime<Utc>, title: &str) -> String {
    format!("{}-{}", now.format("%Y%m%d-%H%M%S"), slug(title))
}

/// The `n`th candidate for `base`: `base`, `base-2`, `base-3`...
pub fn candidate(base: &str, n: usize) -> String {
    if n <= 1 {
        base.to_owned()
    } else {
        format!("{base}-{n}")
    }
}

/// Whether `name` looks like a task folder (so `draft/`, `templates/` and the like are not).
pub fn is_task_folder(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() > 16
        && bytes[..8].iter().all(u8::is_ascii_digit)
        && bytes[8] == b'-'
        && bytes[9..15].iter().all(u8::is_ascii_digit)
        && bytes[15] == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_titles_give_safe_names() {
        for (title, want) in [
            ("Refactor login module", "refactor-login-module"),
            ("../../x", "x"),
            ("/etc", "etc"),
            ("", "plan"),
            ("   ", "plan"),
            ("..", "plan"),
            ("重构登录模块", "zhong-gou-deng-lu-mo-kuai"),
            ("a/b\\c:d*e?f\"g<h>i|j", "a-b-c-d-e-f-g-h-i-j"),
            ("NUL\0byte", "nul-byte"),
        ] {
            assert_eq!(slug(title), want, "{title:?}");
        }
        let emoji = slug("🚀🔥");
        assert!(emoji == "plan" || emoji.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
    }

    #[test]
    fn secrets_in_titles_never_reach_the_name() {
        for title in [
            "Rotate sk_live_51HcQ2pLkT9vWb3XyZaQ8mN4rS7tU now",
            "Use ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXyZ in CI",
            "Fix AKIAIOSFODNN7EXAMPLE access",
        ] {
            let name = slug(title);
            for part in ["51hcq2", "r4nd0m", "akiaiosfodnn7"] {
                assert!(!name.contains(part), "{title}: {name}");
            }
            assert!(name.contains("redacted"), "{name}");
        }
    }

    #[test]
    fn long_titles_are_cut_at_a_word() {
        let title = "word ".repeat(60);
        let s = slug(&title);
        assert!(s.len() <= 60, "{s}");
        assert!(!s.ends_with('-'));
        let one_long_word = "x".repeat(300);
        assert_eq!(slug(&one_long_word).len(), 60);
    }

    #[test]
    fn names_and_clashes() {
        let now: DateTime<Utc> = "2026-11-30T14:30:12Z".parse().unwrap();
        let base = base_name(now, "Refactor login");
        assert_eq!(base, "20261130-143012-refactor-login");
        assert!(is_task_folder(&base));
        assert_eq!(candidate(&base, 1), base);
        assert_eq!(candidate(&base, 2), format!("{base}-2"));
        for not in ["draft", "templates", "20261130-143012", "2026113x-143012-a"] {
            assert!(!is_task_folder(not), "{not}");
        }
    }
}
