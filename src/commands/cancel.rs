//! `tick cancel`: a person gives a task up. Its phase becomes `cancelled` (in PLAN.md's
//! `status:` line, logged in the journal); every file stays, as a record.

use super::{Ctx, Outcome};
use crate::cli::CancelArgs;
use crate::error::{Error, Result};
use crate::fsx;
use crate::plan::{Event, Phase, transition};
use crate::tasks::PLAN_FILE;
use crate::tasks::plan_md;

pub fn run(ctx: &Ctx<'_>, args: &CancelArgs) -> Result<Outcome> {
    let store = ctx.store();
    let task_ref = store.resolve_or_current(args.task.as_deref())?;
    let _lock = store.lock_task(&task_ref, "tick cancel")?;
    let task = store.load(&task_ref)?;
    let phase = task.phase();
    let next = transition(phase, Event::Cancel).map_err(|r| {
        Error::input(format!("`{}` cannot be cancelled: {}", task.id, r.reason)).hint(r.hint)
    })?;
    let plan_path = task.dir.join(PLAN_FILE);
    let text = if let Some(text) = plan_md::set_status_line(&task.plan_src, next) {
        text
    } else {
        let mut front = task.plan.front.clone();
        front.status = Some(next);
        plan_md::render(&front, &task.plan.body)
            .map_err(|err| Error::internal(format!("could not render PLAN.md: {err}")))?
    };
    fsx::write_atomic(&plan_path, text.as_bytes())?;
    crate::tasks::journal::transition(
        &task.dir,
        phase,
        Phase::Cancelled,
        "a person cancelled the task",
        ctx.now(),
    );
    ctx.ui.note(&format!(
        "cancelled `{}` (was {phase}); its files stay in `{}/`",
        task.id,
        store.rel(&task.dir)
    ));
    ctx.ui.hint(
        "`tick run` and `tick check` skip it now; set `status: approved` in its PLAN.md to take it up again",
    );
    Ok(Outcome::Done)
}
