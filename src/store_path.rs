//! The store's folder name and how a path in it is shown in messages. A leaf below the error
//! type, the filesystem wrappers and the store, so all three agree on `.tasks/` without
//! depending on one another.

use std::path::{Path, PathBuf};

/// The store's folder, at the workspace root.
pub const TASKS_DIR: &str = ".tasks";

/// The store's settings file, in `.tasks/`.
pub const CONFIG_FILE: &str = "config.yaml";

/// `path` as a person reads it in an error: from `.tasks/` on for a file in the store (never
/// the absolute path of a temp directory or a home), else as given.
pub fn shown(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    match parts.iter().position(|part| part == TASKS_DIR) {
        Some(start) => parts[start..].join("/"),
        None => path.display().to_string(),
    }
}

/// The workspace a path in the store belongs to: the directory holding its `.tasks/`.
pub fn workspace_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|dir| dir.file_name().is_some_and(|n| n == TASKS_DIR))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}
