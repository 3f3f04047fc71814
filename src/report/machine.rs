//! What `tick doctor` finds about this machine and workspace beyond the model: whether the
//! sandbox works, files that are hard links to files elsewhere, whether the person trusts the
//! repository, and the hooks that apply.

use std::time::Instant;

use super::doctor::Check;
use crate::config::Config;
use crate::error::Result;
use crate::tasks::Store;

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

/// Whether the person trusts this repository's files, and what was ignored because they do
/// not. A report, never a failure of `tick doctor`.
pub fn trust(store: &Store, config: &Config) -> Check {
    use crate::trust::TrustState;
    let shipped = crate::trust::shipped(store.root());
    let named = |files: &mut dyn Iterator<Item = &String>| {
        files
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ignored = config
        .ignored
        .as_ref()
        .map(|i| i.keys.join(", "))
        .unwrap_or_default();
    let hint = Some("`tick trust` trusts its files as they are now".to_owned());
    match store.trust() {
        TrustState::Trusted => Check::new(
            "trust",
            Some(true),
            format!(
                "trusted, its files as trusted ({})",
                named(&mut shipped.keys())
            ),
            None,
        ),
        TrustState::Changed { files } => Check::new(
            "trust",
            Some(false),
            format!(
                "trusted once, changed since: {}; ignored {ignored}",
                named(&mut files.iter())
            ),
            hint,
        ),
        TrustState::Untrusted if ignored.is_empty() => Check::new(
            "trust",
            Some(true),
            if shipped.is_empty() {
                "not trusted; the repository ships no files of tick's".to_owned()
            } else {
                "not trusted; its files set only what tightens".to_owned()
            },
            None,
        ),
        TrustState::Untrusted => Check::new(
            "trust",
            Some(false),
            format!("not trusted: ignored {ignored}"),
            hint,
        ),
    }
}

/// The hooks that apply here (`crate::hooks`), in the order they run, and whether each
/// command exists; the repository's that do not run because it is not trusted are named.
pub fn hooks(store: &Store, config: &Config) -> Check {
    let root = store.root();
    let set = crate::hooks::HookSet::resolve(&config.hooks, root);
    let env = crate::tools::bash::CommandEnv::default();
    let missing = set.missing_commands(root, &env);
    let mut lines: Vec<String> = set
        .hooks()
        .iter()
        .map(|hook| {
            let matcher = hook
                .entry
                .matcher
                .as_deref()
                .map_or(String::new(), |m| format!(" [{m}]"));
            let problem = missing
                .iter()
                .find(|(entry, _)| *entry == hook.entry)
                .map_or(String::new(), |(_, why)| format!(": {why}"));
            format!(
                "{}{matcher} `{}`{problem}",
                hook.entry.event, hook.entry.command
            )
        })
        .collect();
    if let Some(warning) = set.ignored_warning() {
        lines.push(warning);
    }
    if lines.is_empty() {
        return Check::new("hooks", None, "none configured".to_owned(), None);
    }
    let ok = missing.is_empty();
    Check::new(
        "hooks",
        Some(ok),
        lines.join("; "),
        (!ok).then(|| {
            "fix the `command` of each hook named above (`hooks:` in your config)".to_owned()
        }),
    )
}
