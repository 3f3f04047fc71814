//! Assertions on command output and messages that show the whole text when they fail.

/// Panics, showing `text`, unless it contains `wanted`.
#[track_caller]
pub fn assert_contains(text: &str, wanted: &str) {
    assert!(text.contains(wanted), "wanted {wanted:?} in:\n{text}");
}

/// Panics, showing `text`, unless it starts with `wanted`.
#[track_caller]
pub fn assert_starts_with(text: &str, wanted: &str) {
    assert!(
        text.starts_with(wanted),
        "wanted it to start with {wanted:?}:\n{text}"
    );
}
