//! `tick doctor`'s report in words: the settings with their sources, then one line per check.

use crate::report::doctor::DoctorReport;

/// The human form: the settings with their sources, then one line per check.
pub fn doctor_text(report: &DoctorReport) -> String {
    let mut out = String::from("settings:\n");
    for s in &report.settings {
        out.push_str(&format!(
            "  {:<11} {:<34} {}\n",
            s.name,
            s.value.as_deref().unwrap_or("-"),
            s.source
        ));
    }
    out.push_str("checks:\n");
    for c in &report.checks {
        let mark = match c.ok {
            Some(true) => "ok  ",
            Some(false) => "FAIL",
            None => "skip",
        };
        out.push_str(&format!("  {mark} {:<13} {}\n", c.name, c.detail));
        if let Some(hint) = &c.hint {
            for line in hint.lines() {
                out.push_str(&format!("       {:<13} {line}\n", ""));
            }
        }
    }
    out
}
