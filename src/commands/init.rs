//! `tick init`: the `.tasks/` folder, a commented config, and a `.gitignore`.

use super::{Ctx, Outcome};
use crate::cli::InitArgs;
use crate::config::CONFIG_TEMPLATE;
use crate::error::Result;
use crate::fsx;

pub fn run(ctx: &Ctx<'_>, _args: &InitArgs) -> Result<Outcome> {
    let store = ctx.store();
    let mut created = store.ensure()?;
    let config = store.config_path();
    if fsx::write_new(&config, CONFIG_TEMPLATE.as_bytes())? {
        created.push(config);
    }
    for path in [store.dir().join(".gitignore"), store.config_path()] {
        if created.contains(&path) {
            ctx.ui.note(&format!("created `{}`", store.rel(&path)));
        } else {
            ctx.ui
                .note(&format!("kept `{}` as it is", store.rel(&path)));
        }
    }
    ctx.ui.hint(&format!(
        "set the model in `{}` (or the environment), check it with `tick doctor`, then write a \
         plan with `tick plan \"goal\"` (or `tick plan --from plan.md`, no model needed)",
        store.rel(&store.config_path())
    ));
    Ok(Outcome::Done)
}
