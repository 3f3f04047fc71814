//! One man page in roff: `clap_mangen`'s sections in its order, a command's `Examples:` text
//! (its `after_long_help`) as an EXAMPLES section with its lines kept as written, EXIT STATUS
//! on every page, and on the top page the other sections for scripts (see
//! [`super::sections`]).

use roff::{Roff, bold, roman};

use super::sections;
use crate::error::{Error, Result};

/// One page: `clap_mangen`'s sections in its order, the command's examples as EXAMPLES in
/// place of its untitled EXTRA section, and on the top page the sections for scripts.
pub fn render(command: &clap::Command, top: bool) -> Result<(String, String)> {
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    let failed =
        |err: std::io::Error| Error::internal(format!("could not render the man page: {err}"));
    man.render_title(&mut out).map_err(failed)?;
    man.render_name_section(&mut out).map_err(failed)?;
    man.render_synopsis_section(&mut out).map_err(failed)?;
    man.render_description_section(&mut out).map_err(failed)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut out).map_err(failed)?;
    }
    if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
        man.render_subcommands_section(&mut out).map_err(failed)?;
    }
    let mut roff = Roff::new();
    if let Some(after) = command
        .get_after_long_help()
        .or_else(|| command.get_after_help())
    {
        after_help(&mut roff, &after.to_string());
    }
    // A script reads any page for the codes it may see.
    table(&mut roff, "EXIT STATUS", sections::EXIT_STATUS);
    if top {
        table(&mut roff, "ENVIRONMENT", sections::ENVIRONMENT);
        table(&mut roff, "FILES", sections::FILES);
        roff.control("SH", ["SEE ALSO"]);
        // Every subcommand's page, as man pages name one another: `tick-plan(1), ...`.
        let mut see = Vec::new();
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            if !see.is_empty() {
                see.push(roman(", "));
            }
            see.push(bold(
                sub.get_display_name().unwrap_or(sub.get_name()).to_owned(),
            ));
            see.push(roman("(1)"));
        }
        if !see.is_empty() {
            see.push(roman("; "));
        }
        see.push(roman(
            "the README and docs/commands.md in tick's repository; `tick COMMAND --help`.",
        ));
        roff.text(see);
    } else {
        roff.control("SH", ["SEE ALSO"]);
        roff.text([
            bold("tick"),
            roman("(1), for the environment and the files; `tick "),
            roman(command.get_name()),
            roman(" --help`."),
        ]);
    }
    out.extend_from_slice(roff.to_roff().as_bytes());
    if command.get_version().is_some() {
        man.render_version_section(&mut out).map_err(failed)?;
    }
    // Each section clap_mangen renders starts with the same apostrophe preamble; once, at
    // the top, is enough.
    Ok((
        man.get_filename(),
        once_preamble(&String::from_utf8_lossy(&out)),
    ))
}

/// A command's after-help: an `Examples:` block becomes EXAMPLES, its lines unfilled (each
/// example stays on its own line, its comment beside it); other text is a NOTES paragraph.
fn after_help(roff: &mut Roff, text: &str) {
    let (notes, examples) = match text.split_once("Examples:") {
        Some((notes, examples)) => (notes.trim(), Some(examples)),
        None => (text.trim(), None),
    };
    if !notes.is_empty() {
        roff.control("SH", ["NOTES"]);
        roff.text([roman(notes)]);
    }
    if let Some(examples) = examples {
        roff.control("SH", ["EXAMPLES"]);
        roff.control("nf", [] as [&str; 0]);
        for line in examples.lines().filter(|line| !line.trim().is_empty()) {
            roff.text([roman(line.trim_start())]);
        }
        roff.control("fi", [] as [&str; 0]);
    }
}

/// A section of tagged paragraphs: the name in bold, its meaning below.
fn table(roff: &mut Roff, heading: &str, rows: &[(&str, &str)]) {
    roff.control("SH", [heading]);
    for (name, meaning) in rows {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(*name)]);
        roff.text([roman(*meaning)]);
    }
}

/// The page with `clap_mangen`'s apostrophe preamble (two lines, written before every section
/// it renders) kept only where it first appears.
fn once_preamble(page: &str) -> String {
    const PREAMBLE: [&str; 2] = [".ie \\n(.g .ds Aq \\(aq", ".el .ds Aq '"];
    let mut seen = false;
    let mut out = String::with_capacity(page.len());
    let mut lines = page.lines().peekable();
    while let Some(line) = lines.next() {
        if line == PREAMBLE[0] && lines.peek() == Some(&PREAMBLE[1]) {
            lines.next();
            if seen {
                continue;
            }
            seen = true;
            out.push_str(PREAMBLE[0]);
            out.push('\n');
            out.push_str(PREAMBLE[1]);
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
