//! The `.tasks/` store: drafts and task folders, PLAN.md, TODO.md and state.yaml.

pub mod todo_md;
