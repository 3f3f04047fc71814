//! `tick config list` in words: one setting a line, its key, value and source in columns.

use crate::config::setting::Shown;

/// The settings as a table: key, value and where it came from, the columns as wide as their
/// widest entry.
pub fn settings_table(settings: &[Shown]) -> String {
    let key_width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
    let value_width = settings
        .iter()
        .map(|s| s.value.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for shown in settings {
        let (key, value, source) = (shown.key, &shown.value, shown.described());
        out.push_str(&format!(
            "{key:<key_width$}  {value:<value_width$}  {source}\n"
        ));
    }
    out.trim_end().to_owned()
}
