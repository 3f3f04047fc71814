//! Guard 1 of `run_command`: the one table of programs a model may run, their subcommands and
//! the flags that are refused in every spelling.
//!
//! The table ([`DEFAULT`]) is declarative: program → global options it may take → allowed
//! subcommands → rejected flags, plus the flags tick adds itself (`git --no-pager`,
//! `cargo metadata --offline --no-deps`). [`AllowList::check`] is pure: it reads an argv and
//! either refuses it with a message for the model that names what is allowed, or returns the
//! argv to run and the arguments that name files, which the caller checks inside the
//! workspace with the path policy.
//!
//! How a rejected flag is recognised, for a rejected long option `--output` and short `-o`:
//!
//! - `--output`, `--output=x`, and every prefix `--o`, `--ou`, `--out=x`: git's parse-options
//!   and GNU `getopt_long` accept any unambiguous abbreviation, and refusing an ambiguous one
//!   too costs nothing. A long option that is itself a prefix of a rejected one but a real,
//!   harmless option (`git diff --text` vs `--textconv`) is listed in `exact_ok`: both git and
//!   getopt prefer an exact match.
//! - `-o`, `-ofile`, and `-o` anywhere in a group of short flags (`-abo`, `-abofile`): the
//!   letter is refused wherever it appears after a single `-`. This also refuses a harmless
//!   argument that merely contains the letter (`rg -ez`, the pattern `z`); the model can write
//!   it as two arguments.
//! - Single-dash words (`find -exec`, `-fprint`) are matched exactly: `find` does not
//!   abbreviate, and `-o` (or) is a prefix of `-ok`.
//! - A rejected flag is refused **even after `--`**: `--` may be the value of the option before
//!   it (`git log -S -- --output=x` makes `--output=x` an option), and the table does not know
//!   every option that takes a value. After `--` the other arguments are operands: they are not
//!   read as flags, but those that name files are still checked inside the workspace.
//!
//! The table is extended from the person's own `~/.config/tick/config.yaml`
//! (`run_command.allow`) by additions only: a new program with its subcommands and rejected
//! flags, or more subcommands or rejected flags for a program the table has. No entry can
//! remove a rejected flag, a required flag or a program's global-option rules. A repository's
//! `.tasks/config.yaml` comes with every clone, so there an entry may only refuse more
//! (`config.rs` says so when it tries to add).
//!
//! Every option that names a file is known by its spellings (`--contents=x`, `--cont=x`,
//! `-Sx`, `-wSx`, `-S x`) and its value checked; an option that takes a separate value
//! (`--grep /api/`) makes that value a value, not a file.
//!
//! This guard is about what a command is *asked* to do. The sandbox (guard 2) is what makes a
//! mistake here harmless: a plan-mode command cannot write anywhere whatever its flags say.

use std::fmt;

use serde::Deserialize;

/// How a program's operands (the arguments that are not options) are read, to know which of
/// them name files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
    /// Every operand is a file or directory (`cat`, `ls`).
    Paths,
    /// The first operand is a pattern unless one was given with `-e`/`-f`; the rest are files
    /// (`grep`, `rg`).
    PatternThenPaths,
    /// Revisions, pathspecs and files (`git`): each is checked when it could name a file.
    Git,
    /// `find`: the starting points before the expression are directories; the expression is
    /// not.
    Find,
    /// No operands name files (`cargo`).
    None,
}

/// One flag refused in every spelling, and why, for the message to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    /// `--output` (long), `-o` (short) or `-exec` (a single-dash word).
    pub flag: &'static str,
    pub why: &'static str,
}

const fn no(flag: &'static str, why: &'static str) -> Rejected {
    Rejected { flag, why }
}

/// An option allowed before a program's subcommand (`git -C dir`, `cargo --offline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Global {
    pub flag: &'static str,
    /// The option takes a value: a separate argument, or after `=` for a long option.
    pub value: GlobalValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalValue {
    None,
    /// A directory the program changes into before anything else (`git -C`): every later
    /// path is relative to it, and several apply in order.
    Dir,
    /// A value that names a directory or file: checked inside the workspace.
    Path,
    /// Any other value.
    Word,
}

const fn global(flag: &'static str) -> Global {
    Global {
        flag,
        value: GlobalValue::None,
    }
}

const fn global_dir(flag: &'static str) -> Global {
    Global {
        flag,
        value: GlobalValue::Dir,
    }
}

const fn global_path(flag: &'static str) -> Global {
    Global {
        flag,
        value: GlobalValue::Path,
    }
}

const fn global_word(flag: &'static str) -> Global {
    Global {
        flag,
        value: GlobalValue::Word,
    }
}

/// One subcommand of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subcommand {
    pub name: &'static str,
    /// Refused for this subcommand, on top of the program's own list.
    pub reject: &'static [Rejected],
    /// Inserted right after the subcommand, before the model's arguments, always.
    pub inject: &'static [&'static str],
    /// Each entry is added after the subcommand unless one of its spellings is already there:
    /// `["--offline", "--frozen"]` adds `--offline` unless `--offline` or `--frozen` is given.
    pub ensure: &'static [&'static [&'static str]],
    /// Operands are allowed only together with one of these flags (`git branch --list`):
    /// without it, an operand would create something.
    pub operands_need: &'static [&'static str],
    /// Options of this subcommand whose value names a file, as for [`Program::path_options`].
    pub path_options: &'static [&'static str],
    /// Options of this subcommand that take a separate value, as for
    /// [`Program::value_options`].
    pub value_options: &'static [&'static str],
    /// Long options (without `--`) whose value must be attached with `=`, in every
    /// abbreviation: given alone, their value is the next argument whatever it is, so
    /// `git branch --format --list NAME` is not a listing but makes branch `NAME`.
    pub equals_only: &'static [&'static str],
}

const fn sub(name: &'static str) -> Subcommand {
    Subcommand {
        name,
        reject: &[],
        inject: &[],
        ensure: &[],
        operands_need: &[],
        path_options: &[],
        value_options: &[],
        equals_only: &[],
    }
}

/// One program of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    pub name: &'static str,
    /// Options allowed before the subcommand; any other option there is refused. Only
    /// meaningful for a program with subcommands.
    pub globals: &'static [Global],
    /// Empty: the program has no subcommands.
    pub subcommands: &'static [Subcommand],
    /// Refused everywhere after the program name (and after the subcommand).
    pub reject: &'static [Rejected],
    /// Long options (without `--`) that are prefixes of a rejected one but are themselves
    /// real, harmless options.
    pub exact_ok: &'static [&'static str],
    /// Inserted right after the program name, before everything else.
    pub inject: &'static [&'static str],
    /// Options whose value names a file (`--manifest-path`, `grep -f`): the value is checked
    /// inside the workspace in every spelling: `--file x`, `--file=x`, any abbreviation
    /// (`--fi=x`), `-fx`, and the letter anywhere in a group (`-kfx`, `-kf x`). A single-dash
    /// word (`-newer`) is matched whole; one ending in `*` (`-newer*`) by its start.
    pub path_options: &'static [&'static str],
    /// The values of [`Program::path_options`] are `:`-separated lists of files (`file -m`).
    pub path_lists: bool,
    /// Options that take their value as the next argument, which is then a value and not an
    /// operand (`grep -e /api/`, `git log --grep /api/`). Matched only as written (`-e`,
    /// `--regexp`): a letter inside a group could be another option's value, and an
    /// abbreviation could be another, valueless option; then the next argument is read as
    /// an operand, which only checks more. An option listed here that takes no value would
    /// let a file through unchecked: list only what the program's manual says takes one.
    pub value_options: &'static [&'static str],
    pub operands: Operands,
}

const fn program(name: &'static str, operands: Operands) -> Program {
    Program {
        name,
        globals: &[],
        subcommands: &[],
        reject: &[],
        exact_ok: &[],
        inject: &[],
        path_options: &[],
        path_lists: false,
        value_options: &[],
        operands,
    }
}

const WRITES: &str = "it writes a file";
/// Reading through the links a traversal meets could leave the workspace, where the paths the
/// model names are checked.
const FOLLOWS: &str = "it follows symbolic links, which may lead outside the workspace";
const FOLLOWS_USE_R: &str =
    "it follows symbolic links, which may lead outside the workspace; use -r";
const RUNS: &str = "it runs another program";
const DECOMPRESSES: &str = "it runs decompression programs";
const WAITS: &str = "it waits for more output until the timeout";
const GIT_CONFIG: &str = "configuration can make git run any program (a pager, an alias, a hook)";

/// `-c` settings for the model's git commands on top of [`crate::git::INERT_CONFIG`] (which
/// switches off hooks, fsmonitor, pagers, editors, credential helpers and the untracked cache
/// for every git tick runs): no transport at all, and no signature program even for
/// `log --show-signature`-like settings and `%G?` formats. Diff drivers and textconv are
/// switched off by the `--no-ext-diff`/`--no-textconv` the table adds.
pub const GIT_EXTRA_CONFIG: &[(&str, &str)] = &[
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("diff.external", ""),
];

/// Refused for every git subcommand.
const GIT_REJECT: &[Rejected] = &[
    no("--output", WRITES),
    no("--ext-diff", RUNS),
    no("--textconv", RUNS),
    no("--exec-path", RUNS),
    no("--upload-pack", RUNS),
    no("--receive-pack", RUNS),
    no("--exec", RUNS),
    no("--config-env", GIT_CONFIG),
    no("--show-signature", "it runs gpg to check signatures"),
    no("--open-files-in-pager", RUNS),
];

const DIFF_INJECT: &[&str] = &["--no-ext-diff", "--no-textconv"];

const GIT_BRANCH_REJECT: &[Rejected] = &[
    no("--delete", "it deletes a branch"),
    no("--move", "it renames a branch"),
    no("--copy", "it copies a branch"),
    no("--force", "it changes branches"),
    no("--set-upstream-to", "it changes the configuration"),
    no("--unset-upstream", "it changes the configuration"),
    no("--edit-description", "it runs an editor"),
    no("--track", "it creates a branch"),
    no("--no-track", "it creates a branch"),
    no("--create-reflog", "it creates a branch"),
    no("-d", "it deletes a branch"),
    no("-D", "it deletes a branch"),
    no("-m", "it renames a branch"),
    no("-M", "it renames a branch"),
    no("-c", "it copies a branch"),
    no("-C", "it copies a branch"),
    no("-f", "it changes branches"),
    no("-u", "it changes the configuration"),
    no("-t", "it creates a branch"),
];

const GIT_TAG_REJECT: &[Rejected] = &[
    no("--delete", "it deletes a tag"),
    no("--annotate", "it creates a tag"),
    no("--sign", "it creates a tag with gpg"),
    no("--no-sign", "it creates a tag"),
    no("--local-user", "it creates a tag with gpg"),
    no("--force", "it replaces a tag"),
    no("--message", "it creates a tag"),
    no("--file", "it creates a tag"),
    no("--edit", "it runs an editor"),
    no("--verify", "it runs gpg"),
    no("--create-reflog", "it creates a tag"),
    no("--cleanup", "it creates a tag"),
    no("--trailer", "it creates a tag"),
    no("-d", "it deletes a tag"),
    no("-a", "it creates a tag"),
    no("-s", "it creates a tag with gpg"),
    no("-u", "it creates a tag with gpg"),
    no("-f", "it replaces a tag"),
    no("-m", "it creates a tag"),
    no("-F", "it creates a tag"),
    no("-e", "it runs an editor"),
    no("-v", "it runs gpg"),
];

const LIST: &[&str] = &["--list", "-l"];

/// The options of `git branch` and `git tag` that take a value (git's `-h`: `<commit>`,
/// `<key>`, `<format>`, `<object>`); `--contains`, `--merged` and their `--no-` forms take
/// the next argument as well, unless they are last.
const REF_FILTER_VALUES: &[&str] = &[
    "format",
    "sort",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];

/// Options of `git log`, `show` and `diff` that take a separate value (revision.c and
/// diff.c read `--grep /api/` as `--grep=/api/`).
const GIT_LOG_VALUES: &[&str] = &[
    "--grep",
    "--author",
    "--committer",
    "-S",
    "-G",
    "-n",
    "--max-count",
    "--skip",
    "--since",
    "--after",
    "--until",
    "--before",
    "--find-object",
];

/// `-O<orderfile>`: diff.c reads the order of files from it.
const GIT_DIFF_FILES: &[&str] = &["-O"];

const GIT: Program = Program {
    name: "git",
    globals: &[
        global_dir("-C"),
        global("--no-pager"),
        global("-P"),
        global("--no-replace-objects"),
        global("--literal-pathspecs"),
        global("--no-literal-pathspecs"),
        global("--glob-pathspecs"),
        global("--noglob-pathspecs"),
        global("--icase-pathspecs"),
        global("--no-optional-locks"),
        global("--no-advice"),
        global("--bare"),
        global_path("--git-dir"),
        global_path("--work-tree"),
    ],
    subcommands: &[
        sub("status"),
        Subcommand {
            inject: DIFF_INJECT,
            path_options: GIT_DIFF_FILES,
            value_options: GIT_LOG_VALUES,
            ..sub("diff")
        },
        Subcommand {
            inject: DIFF_INJECT,
            path_options: GIT_DIFF_FILES,
            value_options: GIT_LOG_VALUES,
            ..sub("log")
        },
        Subcommand {
            inject: DIFF_INJECT,
            path_options: GIT_DIFF_FILES,
            value_options: GIT_LOG_VALUES,
            ..sub("show")
        },
        Subcommand {
            // `blame.ignoreRevsFile` in the repository's config names a file anywhere;
            // `--no-ignore-revs-file` empties the list (an empty `-c` value does not: the
            // config list is kept sorted, so `""` comes first).
            inject: &["--no-textconv", "--no-ignore-revs-file"],
            path_options: &["--contents", "-S", "--ignore-revs-file"],
            value_options: &["-L", "--since"],
            ..sub("blame")
        },
        Subcommand {
            inject: &["--no-textconv"],
            reject: &[no("-O", RUNS)],
            path_options: &["-f"],
            value_options: &[
                "-e",
                "-m",
                "--max-count",
                "-A",
                "-B",
                "-C",
                "--after-context",
                "--before-context",
                "--context",
                "--max-depth",
                "--threads",
            ],
            ..sub("grep")
        },
        Subcommand {
            path_options: &["-X", "--exclude-from", "--exclude-per-directory"],
            value_options: &["-x", "--exclude"],
            ..sub("ls-files")
        },
        Subcommand {
            path_options: &["--resolve-git-dir"],
            ..sub("rev-parse")
        },
        Subcommand {
            reject: GIT_BRANCH_REJECT,
            operands_need: LIST,
            equals_only: REF_FILTER_VALUES,
            ..sub("branch")
        },
        Subcommand {
            reject: GIT_TAG_REJECT,
            operands_need: LIST,
            equals_only: REF_FILTER_VALUES,
            ..sub("tag")
        },
    ],
    reject: GIT_REJECT,
    // `git diff --text` is a real option, not an abbreviation of `--textconv`.
    exact_ok: &["text"],
    inject: &["--no-pager", "--no-optional-locks"],
    path_options: &[],
    path_lists: false,
    value_options: &[],
    operands: Operands::Git,
};

const CARGO_REJECT: &[Rejected] = &[
    no(
        "--config",
        "it can set any configuration, including programs cargo runs",
    ),
    no("-Z", "unstable options are not allowed"),
    no("-C", "it changes the directory cargo works in"),
    no("--target-dir", WRITES),
];

const CARGO: Program = Program {
    name: "cargo",
    globals: &[
        global("--offline"),
        global("--frozen"),
        global("--locked"),
        global("-q"),
        global("--quiet"),
        global("-v"),
        global("-vv"),
        global("--verbose"),
        global_word("--color"),
    ],
    subcommands: &[
        Subcommand {
            ensure: &[&["--offline", "--frozen"], &["--no-deps"]],
            ..sub("metadata")
        },
        Subcommand {
            // `--locked`: a `Cargo.lock` that needs updating is an error that says so, not a
            // failed write (the sandbox is read-only); `run_command` refuses a manifest
            // without any `Cargo.lock` before starting cargo.
            ensure: &[&["--offline", "--frozen"], &["--locked", "--frozen"]],
            ..sub("tree")
        },
    ],
    reject: CARGO_REJECT,
    exact_ok: &[],
    inject: &[],
    path_options: &["--manifest-path"],
    path_lists: false,
    value_options: &[],
    operands: Operands::None,
};

const FIND: Program = Program {
    reject: &[
        no("-L", FOLLOWS),
        no("-follow", FOLLOWS),
        no("-exec", RUNS),
        no("-execdir", RUNS),
        no("-ok", RUNS),
        no("-okdir", RUNS),
        no("-delete", "it deletes files"),
        no("-fprint", WRITES),
        no("-fprint0", WRITES),
        no("-fprintf", WRITES),
        no("-fls", WRITES),
    ],
    // `-newerXY`: with any `Y` but `t`, the reference is a file.
    path_options: &["-files0-from", "-newer*", "-anewer", "-cnewer", "-samefile"],
    ..program("find", Operands::Find)
};

/// The options grep and ripgrep both take with a value: the pattern (`-e`), and the count
/// of matches and the lines of context around one.
const PATTERN_VALUES: &[&str] = &["-e", "--regexp"];
const COUNT_AND_CONTEXT_VALUES: &[&str] = &[
    "-m",
    "--max-count",
    "-A",
    "--after-context",
    "-B",
    "--before-context",
    "-C",
    "--context",
];

const RG_VALUES: [&str; 33] = joined(&[
    PATTERN_VALUES,
    &[
        "-g",
        "--glob",
        "--iglob",
        "-t",
        "--type",
        "-T",
        "--type-not",
        "--type-add",
    ],
    COUNT_AND_CONTEXT_VALUES,
    &[
        "-M",
        "--max-columns",
        "-d",
        "--max-depth",
        "-j",
        "--threads",
        "-r",
        "--replace",
        "-E",
        "--encoding",
        "--sort",
        "--sortr",
        "--color",
        "--colors",
        "--max-filesize",
    ],
]);

const GREP_VALUES: [&str; 20] = joined(&[
    PATTERN_VALUES,
    COUNT_AND_CONTEXT_VALUES,
    &[
        "--include",
        "--exclude",
        "--exclude-dir",
        "--label",
        "-d",
        "--directories",
        "-D",
        "--devices",
        "--binary-files",
        "--group-separator",
    ],
]);

/// `parts`, one after the other, as one list of `N` (a wrong `N` stops the build).
const fn joined<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut at = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            at += 1;
            i += 1;
        }
        part += 1;
    }
    assert!(at == N, "the parts are not `N` options long");
    out
}

const RG: Program = Program {
    reject: &[
        no("-L", FOLLOWS),
        no("--follow", FOLLOWS),
        no("--pre", RUNS),
        no("--pre-glob", RUNS),
        no("--search-zip", DECOMPRESSES),
        no("-z", DECOMPRESSES),
        no("--hostname-bin", RUNS),
    ],
    path_options: &["--file", "-f", "--ignore-file"],
    // ripgrep's `--help`: the flags written with a value (`-e PATTERN`, `-g GLOB`, ...).
    value_options: &RG_VALUES,
    ..program("rg", Operands::PatternThenPaths)
};

/// GNU grep has no option that writes a file or runs a program (checked against grep 3.8's
/// `--help`); only the files it reads are checked, and `-R` is refused because it follows
/// links.
const GREP: Program = Program {
    reject: &[
        no("-R", FOLLOWS_USE_R),
        no("--dereference-recursive", FOLLOWS_USE_R),
    ],
    path_options: &["--file", "-f", "--exclude-from"],
    // grep 3.8's `--help`: the options written with `=NUM`, `=PATTERNS`, `=GLOB`, ...
    value_options: &GREP_VALUES,
    ..program("grep", Operands::PatternThenPaths)
};

const TAIL: Program = Program {
    reject: &[
        no("--follow", WAITS),
        no("-f", WAITS),
        no("-F", WAITS),
        no("--retry", WAITS),
    ],
    ..program("tail", Operands::Paths)
};

const FILE: Program = Program {
    reject: &[
        no("--compile", WRITES),
        no("-C", WRITES),
        no("--uncompress", RUNS),
        no("--uncompress-noreport", RUNS),
        no("-z", RUNS),
        no("-Z", RUNS),
    ],
    path_options: &["--magic-file", "-m", "--files-from", "-f"],
    // `-m a.mgc:b.mgc`
    path_lists: true,
    ..program("file", Operands::Paths)
};

const TREE: Program = Program {
    reject: &[
        no("-l", FOLLOWS),
        no("-o", WRITES),
        no("-R", "with `-H` it writes a file into every directory"),
    ],
    // tree 2.x: `--gitfile`, `--infofile`, and the HTML intro and outro read a file.
    path_options: &["--gitfile", "--infofile", "--hintro", "--houtro"],
    value_options: &["-L", "-P", "-I", "-H", "-T"],
    ..program("tree", Operands::Paths)
};

const WC: Program = Program {
    path_options: &["--files0-from"],
    ..program("wc", Operands::Paths)
};

/// Every program `run_command` may run by default, in the order the model is told about them.
pub const DEFAULT: &[Program] = &[
    Program {
        reject: &[no("-L", FOLLOWS), no("--dereference", FOLLOWS)],
        ..program("ls", Operands::Paths)
    },
    program("pwd", Operands::None),
    program("cat", Operands::Paths),
    program("head", Operands::Paths),
    TAIL,
    WC,
    FILE,
    program("stat", Operands::Paths),
    TREE,
    FIND,
    RG,
    GREP,
    GIT,
    CARGO,
];

/// One `run_command.allow` entry of `.tasks/config.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowEntry {
    /// A program name, found on the safe `PATH` (never a path).
    pub program: String,
    /// Its allowed subcommands (the first argument must be one of them); none: the program
    /// takes no subcommand.
    #[serde(default)]
    pub subcommands: Vec<String>,
    /// More flags to refuse, spelled `--long`, `-s` or `-word`.
    #[serde(default)]
    pub reject: Vec<String>,
}

/// A flag as written in the table or the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Flag {
    Long(String),
    Short(char),
    Word(String),
}

impl Flag {
    fn parse(text: &str) -> Option<Flag> {
        if let Some(long) = text.strip_prefix("--") {
            return (!long.is_empty() && !long.contains('=')).then(|| Flag::Long(long.to_owned()));
        }
        let rest = text.strip_prefix('-')?;
        let mut chars = rest.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Some(Flag::Short(c)),
            (Some(_), Some(_)) => Some(Flag::Word(rest.to_owned())),
            _ => None,
        }
    }

    fn spelled(&self) -> String {
        match self {
            Flag::Long(name) => format!("--{name}"),
            Flag::Short(c) => format!("-{c}"),
            Flag::Word(word) => format!("-{word}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    flag: Flag,
    why: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SubRules {
    name: String,
    reject: Vec<Rule>,
    inject: Vec<String>,
    ensure: Vec<Vec<String>>,
    operands_need: Vec<String>,
    path_options: Vec<String>,
    value_options: Vec<String>,
    equals_only: Vec<String>,
}

/// A program of the resolved table: the default entry plus what the configuration added.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    globals: Vec<Global>,
    subcommands: Vec<SubRules>,
    reject: Vec<Rule>,
    exact_ok: Vec<String>,
    inject: Vec<String>,
    path_options: Vec<String>,
    path_lists: bool,
    value_options: Vec<String>,
    operands: Operands,
    /// From the configuration rather than tick's table.
    configured: bool,
}

fn rules(rejected: &[Rejected]) -> Vec<Rule> {
    rejected
        .iter()
        .filter_map(|r| {
            Flag::parse(r.flag).map(|flag| Rule {
                flag,
                why: r.why.to_owned(),
            })
        })
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&s| s.to_owned()).collect()
}

impl From<&Program> for Entry {
    fn from(program: &Program) -> Self {
        Entry {
            name: program.name.to_owned(),
            globals: program.globals.to_vec(),
            subcommands: program
                .subcommands
                .iter()
                .map(|sub| SubRules {
                    name: sub.name.to_owned(),
                    reject: rules(sub.reject),
                    inject: strings(sub.inject),
                    ensure: sub
                        .ensure
                        .iter()
                        .map(|spellings| strings(spellings))
                        .collect(),
                    operands_need: strings(sub.operands_need),
                    path_options: strings(sub.path_options),
                    value_options: strings(sub.value_options),
                    equals_only: strings(sub.equals_only),
                })
                .collect(),
            reject: rules(program.reject),
            exact_ok: strings(program.exact_ok),
            inject: strings(program.inject),
            path_options: strings(program.path_options),
            path_lists: program.path_lists,
            value_options: strings(program.value_options),
            operands: program.operands,
            configured: false,
        }
    }
}

/// A `run_command.allow` entry that cannot be used, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run_command.allow entry {index} (`{program}`): {message}")]
pub struct EntryError {
    /// 1-based position in the list.
    pub index: usize,
    pub program: String,
    pub message: String,
}

/// The resolved table: tick's defaults plus the configuration's additions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl Default for AllowList {
    fn default() -> Self {
        Self {
            entries: DEFAULT.iter().map(Entry::from).collect(),
        }
    }
}

/// An argv the table accepts: what to run, and which arguments name files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The program's name, to be found on the safe `PATH`.
    pub program: String,
    /// The subcommand, for a program that has them.
    pub subcommand: Option<String>,
    /// The arguments to run it with: the model's, with tick's own inserted.
    pub args: Vec<String>,
    /// Directories the program changes into first, in order (`git -C a -C b` works in
    /// `a/b`): each relative to the one before, the first to the command's working directory.
    pub dirs: Vec<String>,
    /// Arguments that name files or directories, relative to the directory the program ends
    /// up in after [`Approved::dirs`] (or absolute): each must stay inside the workspace.
    pub paths: Vec<String>,
    /// The model's options before the subcommand (`-C src`), as given: where the program
    /// will look for its repository.
    pub globals: Vec<String>,
}

/// Why an argv was refused; the text is for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

impl AllowList {
    /// The defaults plus `extra`. An entry for a program of the table can only add: more
    /// subcommands (with the program's rules) and more rejected flags.
    pub fn with_entries(extra: &[AllowEntry]) -> Result<Self, EntryError> {
        let mut list = Self::default();
        for (i, entry) in extra.iter().enumerate() {
            let error = |message: String| EntryError {
                index: i + 1,
                program: entry.program.clone(),
                message,
            };
            let name = entry.program.trim();
            if name.is_empty()
                || name.contains('/')
                || name.starts_with('-')
                || name.chars().any(char::is_whitespace)
            {
                return Err(error(
                    "`program` must be a program name such as `just`, found on the PATH; \
                     never a path"
                        .to_owned(),
                ));
            }
            let mut reject = Vec::new();
            for flag in &entry.reject {
                let Some(parsed) = Flag::parse(flag) else {
                    return Err(error(format!(
                        "`{flag}` in `reject` is not a flag; write `--long`, `-s` or `-word`"
                    )));
                };
                reject.push(Rule {
                    flag: parsed,
                    why: "the configuration refuses it".to_owned(),
                });
            }
            for subcommand in &entry.subcommands {
                if subcommand.trim().is_empty() {
                    return Err(error("an empty subcommand".to_owned()));
                }
            }
            let new_sub = |name: &String| SubRules {
                name: name.clone(),
                reject: Vec::new(),
                inject: Vec::new(),
                ensure: Vec::new(),
                operands_need: Vec::new(),
                path_options: Vec::new(),
                value_options: Vec::new(),
                equals_only: Vec::new(),
            };
            if let Some(existing) = list.entries.iter_mut().find(|e| e.name == name) {
                if existing.subcommands.is_empty() && !entry.subcommands.is_empty() {
                    return Err(error(format!(
                        "`{name}` takes no subcommands in tick's table; an entry may add \
                         rejected flags to it, nothing else"
                    )));
                }
                for subcommand in &entry.subcommands {
                    if !existing.subcommands.iter().any(|s| &s.name == subcommand) {
                        existing.subcommands.push(new_sub(subcommand));
                    }
                }
                existing.reject.extend(reject);
            } else {
                list.entries.push(Entry {
                    name: name.to_owned(),
                    globals: Vec::new(),
                    subcommands: entry.subcommands.iter().map(new_sub).collect(),
                    reject,
                    exact_ok: Vec::new(),
                    inject: Vec::new(),
                    path_options: Vec::new(),
                    path_lists: false,
                    value_options: Vec::new(),
                    operands: Operands::Paths,
                    configured: true,
                });
            }
        }
        Ok(list)
    }

    /// The programs the table allows, in order.
    pub fn programs(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// One line per program for the tool's description: `git (status, diff, …)`.
    pub fn summary(&self) -> String {
        self.entries
            .iter()
            .map(|e| {
                if e.subcommands.is_empty() {
                    e.name.clone()
                } else {
                    let subs: Vec<&str> = e.subcommands.iter().map(|s| s.name.as_str()).collect();
                    format!("{} ({})", e.name, subs.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether `program` is allowed with subcommand `subcommand`.
    pub fn has_subcommand(&self, program: &str, subcommand: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.name == program && e.subcommands.iter().any(|s| s.name == subcommand))
    }

    /// Whether `program` came from the configuration rather than tick's own table.
    pub fn is_configured(&self, program: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.name == program && e.configured)
    }

    /// Accept or refuse `argv` (program first).
    pub fn check(&self, argv: &[String]) -> Result<Approved, Refusal> {
        let Some((program, args)) = argv.split_first() else {
            return Err(Refusal(
                "`argv` is empty; give the program and its arguments, e.g. [\"git\", \"log\", \"-5\"]"
                    .to_owned(),
            ));
        };
        let Some(entry) = self.entries.iter().find(|e| &e.name == program) else {
            let hint = if program.contains('/') {
                " (give the program's name, not a path: it is looked up on a fixed safe PATH)"
            } else {
                ""
            };
            return Err(Refusal(format!(
                "`{program}` is not on run_command's allow-list{hint}; the allowed programs are: \
                 {}. A person can add programs under `run_command.allow` in their own \
                 `~/.config/tick/config.yaml`",
                self.programs().collect::<Vec<_>>().join(", ")
            )));
        };
        Checker { entry, args }.check()
    }
}

/// What an option argument says about the arguments' values.
enum Takes {
    /// Nothing this table knows of: a flag, or a value it carries itself.
    Nothing,
    /// A file, in the same argument: `--file=x`, `-fx`, `-kfx`.
    PathAttached(String),
    /// A file, in the next argument.
    PathNext,
    /// The next argument is a value, not an operand: `-e /api/`.
    ValueNext,
}

/// One argv being checked against one program's entry.
struct Checker<'a> {
    entry: &'a Entry,
    args: &'a [String],
}

impl Checker<'_> {
    #[allow(
        clippy::too_many_lines,
        reason = "one walk over the argv, left to right; each rule reads the position it shares"
    )]
    fn check(&self) -> Result<Approved, Refusal> {
        let entry = self.entry;
        let mut out: Vec<String> = entry.inject.clone();
        let mut paths = Vec::new();
        let mut dirs = Vec::new();
        let mut rest = self.args;
        let mut sub: Option<&SubRules> = None;
        let mut globals = Vec::new();
        if !entry.subcommands.is_empty() {
            // Global options, then the subcommand.
            loop {
                let Some((arg, tail)) = rest.split_first() else {
                    return Err(self.missing_subcommand());
                };
                if !arg.starts_with('-') || arg == "-" {
                    let Some(found) = entry.subcommands.iter().find(|s| &s.name == arg) else {
                        return Err(self.unknown_subcommand(arg));
                    };
                    sub = Some(found);
                    globals = out[entry.inject.len()..].to_vec();
                    out.push(arg.clone());
                    rest = tail;
                    break;
                }
                // An extension's "subcommand" may itself look like a flag (`just --list`).
                if let Some(found) = entry.subcommands.iter().find(|s| &s.name == arg) {
                    sub = Some(found);
                    globals = out[entry.inject.len()..].to_vec();
                    out.push(arg.clone());
                    rest = tail;
                    break;
                }
                rest = self.global(arg, tail, &mut out, &mut paths, &mut dirs)?;
            }
        }
        let sub_reject: &[Rule] = sub.map_or(&[], |s| &s.reject);
        if let Some(sub) = sub {
            self.refuse_detached_values(sub)?;
            out.extend(sub.inject.iter().cloned());
            for spellings in &sub.ensure {
                let present = spellings
                    .iter()
                    .any(|flag| self.args.iter().any(|a| a == flag));
                if !present && let Some(first) = spellings.first() {
                    out.push(first.clone());
                }
            }
        }

        let mut after_dashes = false;
        let mut operands: Vec<&String> = Vec::new();
        let mut pattern_given = false;
        let mut i = 0;
        while i < rest.len() {
            let arg = &rest[i];
            i += 1;
            out.push(arg.clone());
            // Refused wherever it stands, even after `--` (see the module documentation).
            self.refuse_rejected(arg, sub_reject, sub)?;
            if after_dashes {
                operands.push(arg);
                continue;
            }
            if arg == "--" && entry.operands != Operands::Find {
                after_dashes = true;
                continue;
            }
            if arg.starts_with('-') && arg != "-" {
                if self.gives_pattern(arg) {
                    pattern_given = true;
                }
                let takes = self.takes(arg, sub);
                match &takes {
                    Takes::PathAttached(value) => self.push_path(&mut paths, value),
                    Takes::PathNext | Takes::ValueNext => {
                        if let Some(next) = rest.get(i) {
                            i += 1;
                            out.push(next.clone());
                            // The table may be wrong about a value: a rejected flag stays
                            // refused there too.
                            self.refuse_rejected(next, sub_reject, sub)?;
                            if matches!(takes, Takes::PathNext) {
                                self.push_path(&mut paths, next);
                            }
                        }
                    }
                    Takes::Nothing => {}
                }
                continue;
            }
            operands.push(arg);
        }

        if let Some(sub) = sub
            && !sub.operands_need.is_empty()
            && !operands.is_empty()
            && !self.args.iter().any(|a| sub.operands_need.contains(a))
        {
            return Err(Refusal(format!(
                "`{} {}` with an argument ({}) would create or change something; to list, add \
                 `{}` (e.g. [\"{}\", \"{}\", \"{}\", \"{}\"])",
                entry.name,
                sub.name,
                operands[0],
                sub.operands_need[0],
                entry.name,
                sub.name,
                sub.operands_need[0],
                operands[0],
            )));
        }

        match entry.operands {
            Operands::Paths | Operands::Git => paths.extend(operands.into_iter().cloned()),
            Operands::PatternThenPaths => {
                let skip = usize::from(!pattern_given);
                paths.extend(operands.into_iter().skip(skip).cloned());
            }
            Operands::Find => paths.extend(self.find_starting_points()),
            Operands::None => {}
        }
        Ok(Approved {
            program: entry.name.clone(),
            subcommand: sub.map(|s| s.name.clone()),
            args: out,
            dirs,
            paths,
            globals,
        })
    }

    /// Reads one global option (and its value); returns what follows.
    fn global<'b>(
        &self,
        arg: &str,
        tail: &'b [String],
        out: &mut Vec<String>,
        paths: &mut Vec<String>,
        dirs: &mut Vec<String>,
    ) -> Result<&'b [String], Refusal> {
        let entry = self.entry;
        let (name, attached) = match arg.split_once('=') {
            Some((name, value)) if arg.starts_with("--") => (name, Some(value)),
            _ => (arg, None),
        };
        let Some(found) = entry.globals.iter().find(|g| g.flag == name) else {
            return Err(self.bad_global(arg));
        };
        out.push(arg.to_owned());
        match (found.value, attached) {
            (GlobalValue::None, None) => Ok(tail),
            (GlobalValue::None, Some(_)) => Err(Refusal(format!(
                "`{name}` takes no value; write it without `=`"
            ))),
            (value, Some(v)) => {
                match value {
                    GlobalValue::Path => paths.push(v.to_owned()),
                    GlobalValue::Dir => dirs.push(v.to_owned()),
                    GlobalValue::None | GlobalValue::Word => {}
                }
                Ok(tail)
            }
            (value, None) => {
                let Some((v, tail)) = tail.split_first() else {
                    return Err(Refusal(format!("`{name}` needs a value after it")));
                };
                match value {
                    GlobalValue::Path => paths.push(v.clone()),
                    GlobalValue::Dir => dirs.push(v.clone()),
                    GlobalValue::None | GlobalValue::Word => {}
                }
                out.push(v.clone());
                Ok(tail)
            }
        }
    }

    /// Refuses `arg` if it spells a rejected flag of the program or the subcommand.
    fn refuse_rejected(
        &self,
        arg: &str,
        sub_reject: &[Rule],
        sub: Option<&SubRules>,
    ) -> Result<(), Refusal> {
        let entry = self.entry;
        let all = entry.reject.iter().chain(sub_reject);
        let found = if let Some(long) = arg.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            if name.is_empty() || entry.exact_ok.iter().any(|ok| ok == name) {
                None
            } else {
                all.clone()
                    .find(|rule| matches!(&rule.flag, Flag::Long(r) if r.starts_with(name)))
            }
        } else if let Some(cluster) = arg.strip_prefix('-') {
            let word = cluster.split_once('=').map_or(cluster, |(word, _)| word);
            all.clone()
                .find(|rule| matches!(&rule.flag, Flag::Word(w) if w == word))
                .or_else(|| {
                    if entry.operands == Operands::Find {
                        // find's arguments are whole words; letters mean nothing, and `-L`
                        // is refused only as itself.
                        return all.clone().find(|rule| {
                            matches!(&rule.flag, Flag::Short(c) if word.len() == 1 && word.starts_with(*c))
                        });
                    }
                    all.clone()
                        .find(|rule| matches!(&rule.flag, Flag::Short(c) if cluster.contains(*c)))
                })
        } else {
            None
        };
        let Some(rule) = found else {
            return Ok(());
        };
        let context = match sub {
            Some(sub) => format!("{} {}", entry.name, sub.name),
            None => entry.name.clone(),
        };
        let spelled = rule.flag.spelled();
        let as_written = if arg == spelled {
            format!("`{arg}`")
        } else {
            format!("`{arg}` (read as `{spelled}`)")
        };
        Err(Refusal(format!(
            "{as_written} is refused for `{context}`: {}; run_command only reads. Refused for \
             `{context}`: {}",
            rule.why,
            self.rejected_list(sub_reject)
        )))
    }

    fn rejected_list(&self, sub_reject: &[Rule]) -> String {
        let mut flags: Vec<String> = self
            .entry
            .reject
            .iter()
            .chain(sub_reject)
            .map(|rule| rule.flag.spelled())
            .collect();
        flags.dedup();
        flags.join(", ")
    }

    /// Whether `arg` gives the pattern as an option (`-e`, `--regexp`, `-f`, `--file`), so that
    /// every operand is a file. Read generously: a wrong "yes" only checks one more operand.
    fn gives_pattern(&self, arg: &str) -> bool {
        if self.entry.operands != Operands::PatternThenPaths {
            return false;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            // `rg --files` lists files and takes no pattern: every operand is a directory.
            return (name.len() >= 2 && ("regexp".starts_with(name) || "file".starts_with(name)))
                || name == "files"
                || name == "type-list";
        }
        arg.strip_prefix('-')
            .is_some_and(|cluster| cluster.contains('e') || cluster.contains('f'))
    }

    /// What option `arg` says about values: a file attached or next, or a value next.
    fn takes(&self, arg: &str, sub: Option<&SubRules>) -> Takes {
        let entry = self.entry;
        let none: &[String] = &[];
        let path_options = || {
            entry
                .path_options
                .iter()
                .chain(sub.map_or(none, |s| &s.path_options))
        };
        let value_options = || {
            entry
                .value_options
                .iter()
                .chain(sub.map_or(none, |s| &s.value_options))
        };
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if name.is_empty() {
                return Takes::Nothing;
            }
            // Every abbreviation: git's parse-options and getopt_long take any unambiguous
            // prefix, and an ambiguous one is an error (reading it as a file checks more).
            // An exact match wins, as in getopt: `grep --exclude` is not `--exclude-from`.
            let long_name = |option: &String| option.strip_prefix("--").map(str::to_owned);
            let exact_path = path_options().any(|o| long_name(o).is_some_and(|o| o == name));
            let exact_value = value_options().any(|o| long_name(o).is_some_and(|o| o == name));
            let is_path = exact_path
                || (!exact_value
                    && path_options().any(|o| long_name(o).is_some_and(|o| o.starts_with(name))));
            return match (is_path, exact_value, attached) {
                (true, _, Some(value)) => Takes::PathAttached(value.to_owned()),
                (true, _, None) => Takes::PathNext,
                (false, true, None) => Takes::ValueNext,
                (false, _, _) => Takes::Nothing,
            };
        }
        let Some(cluster) = arg.strip_prefix('-') else {
            return Takes::Nothing;
        };
        // Single-dash words (`find -newer`): whole, or by their start for `-newer*`.
        let word = |option: &String| {
            option.len() > 2
                && match option.strip_suffix('*') {
                    Some(start) => arg.starts_with(start),
                    None => arg == option,
                }
        };
        if path_options().any(word) {
            return Takes::PathNext;
        }
        if entry.operands == Operands::Find {
            return Takes::Nothing;
        }
        let short = |option: &String, c: char| {
            option.len() == 2 && option.strip_prefix('-').is_some_and(|o| o.starts_with(c))
        };
        // A group of short options: the first that takes a value takes the rest of the group
        // (`-kfx`: `-k`, then `-f x`), or the next argument when it ends the group.
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            if path_options().any(|option| short(option, c)) {
                return if rest.is_empty() {
                    Takes::PathNext
                } else {
                    Takes::PathAttached(rest.to_owned())
                };
            }
            if value_options().any(|option| short(option, c)) {
                // Only `-e` alone vouches for the next argument: in `-ie`, `-i` could be an
                // option with a value this table does not know.
                return if rest.is_empty() && at == 0 {
                    Takes::ValueNext
                } else {
                    Takes::Nothing
                };
            }
        }
        Takes::Nothing
    }

    /// Adds a path option's `value`, split into its files where the program reads a list.
    fn push_path(&self, paths: &mut Vec<String>, value: &str) {
        if self.entry.path_lists {
            paths.extend(value.split(':').map(str::to_owned));
        } else {
            paths.push(value.to_owned());
        }
    }

    /// Refuses an option of `sub` that must carry its value after `=` but is written alone,
    /// in any abbreviation (`git branch --form --list x`).
    fn refuse_detached_values(&self, sub: &SubRules) -> Result<(), Refusal> {
        if sub.equals_only.is_empty() {
            return Ok(());
        }
        let found = self.args.iter().find_map(|arg| {
            let name = arg
                .strip_prefix("--")
                .filter(|n| !n.is_empty() && !n.contains('='))?;
            sub.equals_only
                .iter()
                .find(|option| option.starts_with(name))
                .map(|option| (arg, option))
        });
        let Some((arg, option)) = found else {
            return Ok(());
        };
        let (program, name) = (&self.entry.name, &sub.name);
        Err(Refusal(format!(
            "`{arg}` needs its value after `=` for `{program} {name}` (`--{option}=<value>`): \
             written alone it takes the next argument as its value, so `{program} {name} \
             --{option} --list x` would not list but create `x`"
        )))
    }

    /// find's starting points: after its leading options (`-H`, `-L`, `-P`, `-D x`, `-O3`),
    /// up to the first argument of the expression.
    fn find_starting_points(&self) -> Vec<String> {
        let mut points = Vec::new();
        let mut args = self.args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-H" | "-L" | "-P" => {}
                "-D" => {
                    args.next();
                }
                "--" => {}
                a if a.starts_with("-O") => {}
                a if a.starts_with('-') || a == "(" || a == "!" || a == ")" || a == "," => break,
                _ => points.push(arg.clone()),
            }
        }
        points
    }

    fn missing_subcommand(&self) -> Refusal {
        Refusal(format!(
            "`{}` needs a subcommand; the allowed ones are: {}",
            self.entry.name,
            self.subcommand_names()
        ))
    }

    fn unknown_subcommand(&self, arg: &str) -> Refusal {
        Refusal(format!(
            "`{} {arg}` is not allowed: run_command only reads; the allowed `{}` subcommands \
             are: {}",
            self.entry.name,
            self.entry.name,
            self.subcommand_names()
        ))
    }

    fn bad_global(&self, arg: &str) -> Refusal {
        let entry = self.entry;
        let why = match (
            entry.name.as_str(),
            arg.split_once('=').map_or(arg, |(n, _)| n),
        ) {
            ("git", "-c" | "--config-env") => format!(": {GIT_CONFIG}"),
            ("git", "-p" | "--paginate") => ": a pager runs a program".to_owned(),
            ("git", "--exec-path") => format!(": {RUNS}"),
            _ => String::new(),
        };
        let globals: Vec<&str> = entry.globals.iter().map(|g| g.flag).collect();
        Refusal(format!(
            "`{arg}` is refused before the `{}` subcommand{why}; the options allowed there \
             are: {}",
            entry.name,
            globals.join(", ")
        ))
    }

    fn subcommand_names(&self) -> String {
        self.entry
            .subcommands
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Operands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operands::Paths => "files",
            Operands::PatternThenPaths => "a pattern, then files",
            Operands::Git => "revisions and paths",
            Operands::Find => "starting points and an expression",
            Operands::None => "nothing",
        })
    }
}

#[cfg(test)]
#[path = "allowlist_tests.rs"]
mod tests;
