//! `tick man`: the man pages (roff), generated from the same clap definitions as `--help`:
//! `tick(1)`, whose subcommand section names `tick-plan(1)` and the others, and a page for
//! each of those, printed one at a time or all written into `DIR/man1/`.
//!
//! `clap_mangen` renders the sections it knows; a command's `Examples:` text (its
//! `after_long_help`) becomes an EXAMPLES section with its lines kept as written, and the top
//! page gains EXIT STATUS, ENVIRONMENT and FILES, which `--help` has no place for.

use clap::CommandFactory as _;
use roff::{Roff, bold, roman};

use super::{Ctx, Outcome};
use crate::cli::{Cli, ManArgs};
use crate::error::{Error, Result};
use crate::fsx;

/// The exit codes a script sees, for EXIT STATUS: (code, meaning).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success; for `tick check`, nothing to report."),
    ("1", "Something unexpected failed (I/O, a bug)."),
    (
        "2",
        "Your input is wrong: arguments, a file that does not parse, a step that does not \
         exist, an action the task's phase forbids.",
    ),
    ("3", "The model or its provider failed."),
    (
        "4",
        "A step is blocked and needs you (`tick answer`, `tick plan --revise`).",
    ),
    ("5", "The run paused for you to review a deviation."),
    (
        "6",
        "A limit (turns, tokens, files changed) stopped the work.",
    ),
    ("7", "Another tick process holds the task's lock."),
    (
        "9-16",
        "`tick check`: 9 (with `--strict`) a done step's files changed later by another \
         task, 10 a step is stale, 11 a step is done but unverified, 12 PLAN.md changed since \
         approval, 13 a task file does not parse, 14 the last attempt failed, 15 (with \
         `--from-git`) the ticks and the history disagree, 16 two active tasks change the same \
         files.",
    ),
    (
        "130",
        "Interrupted (Ctrl-C, SIGTERM, SIGHUP); every file is left whole.",
    ),
];

/// The environment tick reads, for ENVIRONMENT: (variable, meaning).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "TICK_MODEL, TICK_PROVIDER, TICK_BASE_URL",
        "The model, the provider (`openai`, `anthropic`, `ollama`, `llamacpp`, ...) and the \
         server's URL; they override the config files.",
    ),
    (
        "TICK_API_KEY",
        "The API key, when the provider's usual variable (`OPENAI_API_KEY`, \
         `ANTHROPIC_API_KEY`, ...) is not the one to use.",
    ),
    ("TICK_PLAN_MODEL", "A separate model for planning."),
    (
        "TICK_PLANNER, TICK_EXECUTOR",
        "`compact`, `agent` or `auto`: how a plan is drafted and a step is executed.",
    ),
    (
        "TICK_TOOL_CALLS",
        "`native`, `text` or `auto`: how the model writes tool calls.",
    ),
    (
        "TICK_SANDBOX",
        "`off` runs agent commands without the kernel sandbox (said on every run).",
    ),
    (
        "TICK_CONFIG",
        "The user config file, instead of `$XDG_CONFIG_HOME/tick/config.yaml`.",
    ),
    (
        "TICK_PAGER, PAGER",
        "The pager of `show`, `status` and `log` (default `less`; `cat` or empty turns it off).",
    ),
    (
        "EDITOR, VISUAL",
        "The editor of `tick edit` and the review's `e`.",
    ),
    ("NO_COLOR", "Any value turns colour off."),
    (
        "TICK_NOW",
        "An RFC 3339 time that fixes tick's clock (reproducible files in tests and demos).",
    ),
    (
        "TICK_INTERACTIVE",
        "`0` or `1`: turn questions off or on whatever stdin is.",
    ),
];

/// The files tick reads and writes, for FILES: (path, meaning).
const FILES: &[(&str, &str)] = &[
    (
        ".tasks/config.yaml",
        "The repository's settings (committed); keys that choose where requests go or what \
         runs are taken only from a repository you trust.",
    ),
    (
        ".tasks/draft/PLAN.md",
        "The plan under review; edit it by hand before `tick approve`.",
    ),
    (
        ".tasks/ID/PLAN.md, .tasks/ID/TODO.md",
        "An approved task: the contract and its checklist (edit TODO.md by hand at any time).",
    ),
    (
        ".tasks/ID/state.yaml",
        "The runner's facts: the approval, fingerprints, the evidence of each verification.",
    ),
    (
        ".tasks/ID/runs/, .tasks/.local/",
        "Transcripts and this machine's caches; not committed (`.tasks/.gitignore`).",
    ),
    (
        "~/.config/tick/config.yaml",
        "Your own settings: provider, model, key variable, limits, sandbox.",
    ),
];

/// Every page: (file name, roff), the top page first, then the subcommands in their order.
pub fn pages() -> Result<Vec<(String, String)>> {
    let mut command = Cli::command().disable_help_subcommand(true);
    // Building gives each subcommand its display name (`tick-plan`), which names its page.
    command.build();
    let mut pages = vec![render(&command, true)?];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(render(sub, false)?);
    }
    Ok(pages)
}

/// The page of `tick` (`None`) or of one subcommand, like `plan`.
pub fn page(subcommand: Option<&str>) -> Result<String> {
    let wanted = subcommand.map_or_else(|| "tick.1".to_owned(), |name| format!("tick-{name}.1"));
    let pages = pages()?;
    let names: Vec<String> = pages
        .iter()
        .skip(1)
        .map(|(file, _)| {
            format!(
                "`{}`",
                file.trim_start_matches("tick-").trim_end_matches(".1")
            )
        })
        .collect();
    pages
        .into_iter()
        .find(|(file, _)| *file == wanted)
        .map(|(_, roff)| roff)
        .ok_or_else(|| {
            Error::input(format!(
                "there is no subcommand `{}`",
                subcommand.unwrap_or_default()
            ))
            .hint(format!("the pages are for {}", names.join(", ")))
        })
}

/// One page: `clap_mangen`'s sections in its order, the command's examples as EXAMPLES in
/// place of its untitled EXTRA section, and on the top page the sections for scripts.
fn render(command: &clap::Command, top: bool) -> Result<(String, String)> {
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
    if top {
        table(&mut roff, "EXIT STATUS", EXIT_STATUS);
        table(&mut roff, "ENVIRONMENT", ENVIRONMENT);
        table(&mut roff, "FILES", FILES);
        roff.control("SH", ["SEE ALSO"]);
        roff.text([roman(
            "The README and docs/commands.md in tick's repository; `tick COMMAND --help`.",
        )]);
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

pub fn run(ctx: &Ctx<'_>, args: &ManArgs) -> Result<Outcome> {
    let Some(dir) = &args.dir else {
        ctx.ui.data(&page(args.command.as_deref())?);
        return Ok(Outcome::Done);
    };
    // `DIR` is a man directory, as MANPATH names them: the pages go in its `man1/`. A `DIR`
    // that already is a `man1` is taken as meant.
    let root = ctx.env.cwd.join(dir);
    let (root, section) = if root.file_name().is_some_and(|name| name == "man1") {
        let parent = root.parent().map(std::path::Path::to_path_buf);
        (parent.unwrap_or_else(|| root.clone()), root)
    } else {
        let section = root.join("man1");
        (root, section)
    };
    fsx::create_dir_all(&section)?;
    let pages = pages()?;
    for (file, roff) in &pages {
        fsx::write_atomic(&section.join(file), roff.as_bytes())?;
    }
    ctx.ui.note(&format!(
        "wrote {} man pages to `{}`",
        pages.len(),
        section.display()
    ));
    ctx.ui.hint(&format!(
        "`man tick-plan` finds them when `{}` is on your MANPATH",
        root.display()
    ));
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_keep_their_lines_and_the_top_page_says_what_scripts_need() {
        let plan = page(Some("plan")).unwrap();
        assert!(plan.contains(".SH EXAMPLES\n.nf\n"), "{plan}");
        assert!(!plan.contains(".SH EXTRA"), "{plan}");
        // One example a line, as written (roff escapes the dashes).
        assert!(
            plan.contains("\ntick plan \\-\\-revise \"Split S2 in two; no new dependencies\"\n")
        );
        let top = page(None).unwrap();
        for heading in ["\"EXIT STATUS\"", "ENVIRONMENT", "FILES", "NOTES"] {
            assert!(top.contains(&format!(".SH {heading}\n")), "{heading}");
        }
        assert!(
            top.contains("\\fBTICK_MODEL, TICK_PROVIDER, TICK_BASE_URL\\fR"),
            "{top}"
        );
        assert_eq!(top.matches(".el .ds Aq '").count(), 1, "{top}");
    }
}
