//! `tick man`: the man pages (roff), generated from the same clap definitions as `--help`:
//! `tick(1)`, whose subcommand section names `tick-plan(1)` and the others, and a page for
//! each of those, printed one at a time or all written into `DIR/man1/`.
//!
//! `clap_mangen` renders the sections it knows; a command's `Examples:` text (its
//! `after_long_help`) becomes an EXAMPLES section with its lines kept as written; every page
//! gains EXIT STATUS and SEE ALSO, and the top page ENVIRONMENT and FILES, which `--help` has
//! no place for.

mod render;
mod sections;

use clap::CommandFactory as _;

use super::{Ctx, Outcome};
use crate::cli::{Cli, ManArgs};
use crate::error::{Error, Result};
use crate::fsx;
use render::render;

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

    /// The codes in the first column of the README's exit-code table, a range (`10-14`)
    /// counted as each code in it.
    fn readme_exit_codes() -> Vec<u32> {
        let readme = include_str!("../../../README.md");
        let (_, table) = readme.split_once("## Exit codes\n").unwrap();
        let mut codes = Vec::new();
        for row in table.lines().skip_while(|l| !l.starts_with('|')) {
            let Some(first) = row.strip_prefix('|').and_then(|r| r.split('|').next()) else {
                break;
            };
            let first = first.trim();
            if !first.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            if let Some((low, high)) = first.split_once('-') {
                codes.extend(low.parse::<u32>().unwrap()..=high.parse::<u32>().unwrap());
            } else if let Ok(code) = first.parse() {
                codes.push(code);
            }
        }
        codes
    }

    #[test]
    fn the_man_pages_exit_codes_are_the_readmes() {
        let readme = readme_exit_codes();
        assert!(readme.contains(&130) && readme.contains(&13), "{readme:?}");
        let man: Vec<u32> = sections::EXIT_STATUS
            .iter()
            .map(|(code, _)| code.parse().unwrap())
            .collect();
        assert_eq!(man, readme);
    }

    #[test]
    fn the_top_pages_see_also_names_every_other_page() {
        let pages = pages().unwrap();
        let top = &pages[0].1;
        let see_also = top.split("\n.SH \"SEE ALSO\"\n").nth(1).unwrap();
        let see_also = see_also.split("\n.SH ").next().unwrap();
        assert!(pages.len() > 10, "{}", pages.len());
        for (file, _) in &pages[1..] {
            let name = file.trim_end_matches(".1").replace('-', "\\-");
            assert!(
                see_also.contains(&format!("\\fB{name}\\fR(1)")),
                "{name}: {see_also}"
            );
        }
    }

    #[test]
    fn every_page_has_examples_exit_status_and_see_also() {
        for (file, roff) in pages().unwrap() {
            for heading in ["EXAMPLES", "\"EXIT STATUS\"", "\"SEE ALSO\""] {
                assert!(
                    roff.contains(&format!("\n.SH {heading}\n")),
                    "{file}: {heading}"
                );
            }
        }
    }
}
