//! The templates tick renders files from: embedded in the binary, and overridable by a file of
//! the same name in the person's own `~/.config/tick/templates/`, or in `.tasks/templates/` of
//! a repository the person trusts ([`crate::tasks::Store::template_dirs`]). An untrusted
//! clone's templates are never rendered: what TODO.md says is what was approved.

use std::path::PathBuf;

use minijinja::Environment;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fsx;

pub const TODO_MD: &str = "TODO.md.j2";
pub const PLAN_MD: &str = "PLAN.md.j2";

fn embedded(name: &str) -> Option<&'static str> {
    match name {
        TODO_MD => Some(include_str!("../../templates/TODO.md.j2")),
        PLAN_MD => Some(include_str!("../../templates/PLAN.md.j2")),
        _ => None,
    }
}

/// Renders template `name` with `context`, preferring `<dir>/<name>` of the first of
/// `overrides` that has one.
pub fn render(overrides: &[PathBuf], name: &str, context: impl Serialize) -> Result<String> {
    let mut found = None;
    for dir in overrides {
        let path = dir.join(name);
        if let Some(text) = fsx::read_optional(&path)? {
            found = Some((text, format!("`{}`", fsx::shown(&path))));
            break;
        }
    }
    let (source, origin) = match found {
        Some(found) => found,
        None => (
            embedded(name)
                .ok_or_else(|| super::error::Error::NoTemplate(name.to_owned()))?
                .to_owned(),
            format!("the built-in `{name}`"),
        ),
    };
    let fail = |err: minijinja::Error| {
        Error::from(super::error::Error::Template {
            origin: origin.clone(),
            detail: format!("{err:#}"),
        })
    };
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .map_err(fail)?,
    );
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_template_owned(name.to_owned(), source)
        .map_err(fail)?;
    let template = env.get_template(name).map_err(fail)?;
    template
        .render(minijinja::Value::from(minijinja::value::Serde(context)))
        .map_err(fail)
}
