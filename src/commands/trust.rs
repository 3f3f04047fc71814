//! `tick trust`: the person trusts this repository's own files (or lists, or revokes), through
//! [`crate::trust`].

use super::{Ctx, Outcome};
use crate::cli::TrustArgs;
use crate::error::Result;
use crate::trust::{self, TrustState};

pub fn run(ctx: &Ctx<'_>, args: &TrustArgs) -> Result<Outcome> {
    let root = ctx.store().root();
    if args.list {
        let records = trust::list(ctx.env)?;
        if records.is_empty() {
            ctx.ui.note("no repository is trusted");
        }
        for record in records {
            let now = match trust::state(&record.root, ctx.env) {
                TrustState::Trusted => "as trusted".to_owned(),
                TrustState::Changed { files } => format!(
                    "changed since: {}",
                    files
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                TrustState::Untrusted => "not trusted".to_owned(),
            };
            ctx.ui.data(&format!(
                "{}  trusted {}  {now}",
                record.root.display(),
                record.trusted_at.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        return Ok(Outcome::Done);
    }
    if args.revoke {
        if trust::revoke(root, ctx.env)? {
            ctx.ui.note(&format!(
                "tick no longer trusts `{}`: its files decide only what tightens",
                root.display()
            ));
        } else {
            ctx.ui.note(&format!(
                "`{}` was not trusted; nothing changed",
                root.display()
            ));
        }
        return Ok(Outcome::Done);
    }
    let (record, path) = trust::grant(root, ctx.env)?;
    let files = if record.files.is_empty() {
        "no files of its own yet".to_owned()
    } else {
        record
            .files
            .keys()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ctx.ui.note(&format!(
        "trusted `{}` with {files} as they are now (recorded in `{}`)",
        root.display(),
        path.display()
    ));
    ctx.ui.hint(
        "a change to any of them needs `tick trust` again; `tick trust --revoke` takes it back",
    );
    Ok(Outcome::Done)
}

/// Before the interactive session opens (as Claude Code's "do you trust this folder?"): when
/// this repository's files would decide something the person has not trusted them with (where
/// requests go, what runs, a loosened limit: what [`crate::config::Config::trust_warning`]
/// names), ask once whether to trust them. Yes: trusted as `tick trust` does, and the store
/// that sees it is returned. No, no terminal, or settings that do not resolve: the session
/// opens as it would have, and the warning stands.
pub fn ask_for_session(ctx: &Ctx<'_>) -> Option<crate::tasks::Store> {
    use crate::person::Person as _;
    if !ctx.env.stdin_is_terminal {
        return None;
    }
    let config = ctx
        .engine
        .resolved_config(&crate::config::Flags::default())
        .ok()?;
    let warning = config.trust_warning()?;
    let root = ctx.store().root();
    ctx.ui.warn(&warning);
    let question = format!(
        "trust `{}` and let its files decide these (as `tick trust` does)?",
        root.display()
    );
    let mut terminal = super::terminal::Terminal::new(ctx.ui, true);
    if terminal.yes_no(&question, false) != Some(true) {
        ctx.ui
            .note("not trusted: its files decide only what tightens (`tick trust` later)");
        return None;
    }
    match trust::grant(root, ctx.env) {
        Ok((_, path)) => {
            ctx.ui.note(&format!(
                "trusted `{}` (recorded in `{}`)",
                root.display(),
                path.display()
            ));
            Some(ctx.store().clone().trusting(ctx.env))
        }
        Err(err) => {
            ctx.ui
                .warn(&format!("could not record the trust: {}", err.message));
            None
        }
    }
}
