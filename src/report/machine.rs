//! What `tick doctor` finds about this machine and workspace beyond the model: whether the
//! sandbox works, and files that are hard links to files elsewhere.

use std::time::Instant;

use super::doctor::Check;
use crate::error::Result;

/// Up to five of `leaving` (workspace-relative), and how many more: "`a`, `b` have hard links
/// outside the workspace (or into `.git/`, `.tasks/`)"; what `tick doctor` and a run's
/// warning say.
pub fn links_leaving_line(leaving: &[String]) -> String {
    let mut named: Vec<String> = leaving.iter().take(5).map(|p| format!("`{p}`")).collect();
    if leaving.len() > named.len() {
        named.push(format!("and {} more", leaving.len() - named.len()));
    }
    format!(
        "{} {} hard links outside the workspace (or into `.git/`, `.tasks/`)",
        named.join(", "),
        if leaving.len() == 1 { "has" } else { "have" }
    )
}

/// The sandbox, set up for real in a throwaway helper process for each kind of policy: what
/// `tick run` (build) and `tick plan`'s `run_command` (read-only) will need.
pub fn sandbox() -> Check {
    use crate::sandbox::{Kind, Unavailable, available};
    let build = available(Kind::Build);
    let read_only = available(Kind::ReadOnly);
    let word = |r: &Result<(), Unavailable>| if r.is_ok() { "works" } else { "unavailable" };
    let detail = format!(
        "build policy {}, read-only policy {}",
        word(&build),
        word(&read_only)
    );
    let failure = build.as_ref().err().or(read_only.as_ref().err());
    Check::new(
        "sandbox",
        Some(failure.is_none()),
        detail,
        failure.map(|err| {
            format!(
                "{err}; `tick run` stops until this is fixed, and the planner works without \
                 `run_command`; {}",
                Unavailable::OPT_OUT_HINT
            )
        }),
    )
}

/// Files of the workspace that are also files elsewhere (hard links, as uv and pnpm make
/// them): a command that writes one writes the other, and no sandbox can stop that. A
/// warning, never a failure of `tick doctor`.
pub fn hard_links(root: &std::path::Path) -> Check {
    let started = Instant::now();
    let check = match crate::sandbox::links_leaving(root) {
        Ok(leaving) if leaving.is_empty() => Check::new(
            "hard_links",
            Some(true),
            "no file of the workspace is also a file outside it".to_owned(),
            None,
        ),
        Ok(leaving) => Check::new(
            "hard_links",
            Some(false),
            links_leaving_line(&leaving),
            Some(
                "a command that writes them writes there too; let tools copy instead \
                     (`UV_LINK_MODE=copy`, pnpm's `package-import-method=copy`)"
                    .to_owned(),
            ),
        ),
        Err(err) => Check::new("hard_links", None, format!("could not look: {err}"), None),
    };
    check.timed(started)
}
