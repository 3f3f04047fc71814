//! The allow-list table, exhaustively: every rejected flag of every program in every spelling,
//! abbreviations, `--`, global options, required flags and the configuration's additions.

use super::*;

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|&s| s.to_owned()).collect()
}

fn allowed(list: &AllowList, items: &[&str]) -> Approved {
    list.check(&argv(items))
        .unwrap_or_else(|refusal| panic!("{items:?} was refused: {refusal}"))
}

fn refused(list: &AllowList, items: &[&str]) -> String {
    match list.check(&argv(items)) {
        Ok(approved) => panic!("{items:?} was allowed: {approved:?}"),
        Err(Refusal(message)) => message,
    }
}

/// Every way a model could write `rule` that git, getopt or the program itself reads as it.
fn spellings(rule: &Rule, entry: &Entry, shorts: &[char]) -> Vec<Vec<String>> {
    let exact_ok = &entry.exact_ok;
    let one = |s: String| vec![s];
    match &rule.flag {
        Flag::Long(name) => {
            let mut out = vec![
                one(format!("--{name}")),
                one(format!("--{name}=x")),
                vec![format!("--{name}"), "x".to_owned()],
            ];
            for end in 1..name.len() {
                let prefix = &name[..end];
                if exact_ok.iter().any(|ok| ok == prefix) {
                    continue;
                }
                out.push(one(format!("--{prefix}")));
                out.push(one(format!("--{prefix}=x")));
            }
            out
        }
        // GNU find reads `-L` only as itself (`-LH` is an unknown predicate).
        Flag::Short(c) if entry.operands == Operands::Find => vec![one(format!("-{c}"))],
        Flag::Short(c) => {
            // A letter that is not itself refused, to group with.
            let filler = ['n', 'q', 'k', '1', 'w']
                .into_iter()
                .find(|f| !shorts.contains(f))
                .unwrap();
            vec![
                one(format!("-{c}")),
                one(format!("-{c}file")),
                one(format!("-{filler}{c}")),
                one(format!("-{filler}{c}{filler}")),
                one(format!("-{filler}{c}value")),
            ]
        }
        Flag::Word(word) => vec![one(format!("-{word}"))],
    }
}

/// The program alone (`None`) when it has no subcommands, else each of its subcommands: the
/// rule sets a command line is checked against.
fn rule_sets(entry: &Entry) -> Vec<Option<&SubRules>> {
    if entry.subcommands.is_empty() {
        vec![None]
    } else {
        entry.subcommands.iter().map(Some).collect()
    }
}

#[test]
fn every_rejected_flag_is_refused_in_every_spelling() {
    let list = AllowList::default();
    let mut checked = 0;
    for entry in &list.entries {
        for sub in rule_sets(entry) {
            let rules: Vec<&Rule> = entry
                .reject
                .iter()
                .chain(sub.map_or(&[][..], |s| &s.reject))
                .collect();
            let shorts: Vec<char> = rules
                .iter()
                .filter_map(|r| match r.flag {
                    Flag::Short(c) => Some(c),
                    _ => None,
                })
                .collect();
            for rule in &rules {
                for spelling in spellings(rule, entry, &shorts) {
                    let mut base = vec![entry.name.clone()];
                    base.extend(sub.map(|s| s.name.clone()));
                    // First, among ordinary arguments, and after `--`.
                    let placements = [
                        [base.clone(), spelling.clone()].concat(),
                        [base.clone(), argv(&["."]), spelling.clone()].concat(),
                        [base.clone(), argv(&["--"]), spelling.clone()].concat(),
                    ];
                    for args in placements {
                        let result = list.check(&args);
                        assert!(result.is_err(), "{args:?} was allowed: {result:?}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} spellings were checked");
}

#[test]
fn abbreviations_git_and_getopt_accept_are_refused() {
    let list = AllowList::default();
    for args in [
        &["git", "diff", "--out=x"][..],
        &["git", "diff", "--outp", "x"],
        &["git", "diff", "--o=x"],
        &["git", "log", "-p", "--outpu=x"],
        &["git", "show", "--ext", "HEAD"],
        &["git", "diff", "--textc"],
        &["git", "grep", "--open", "vim", "x"],
        &["git", "grep", "--open-files", "x"],
        &["rg", "--pre=./x.sh", "fn"],
        &["rg", "--pre-g=*", "fn"],
        &["rg", "--search", "fn"],
        &["file", "--comp", "x"],
        &["file", "--uncompress-n", "x"],
        &["tail", "--fol", "x"],
    ] {
        let message = refused(&list, args);
        assert!(message.contains("is refused for"), "{message}");
    }
    // The message names the flag it was read as and what is refused.
    assert_eq!(
        refused(&list, &["git", "diff", "--out=x"]),
        "`--out=x` (read as `--output`) is refused for `git diff`: it writes a file; \
         run_command only reads. Refused for `git diff`: --output, --ext-diff, --textconv, \
         --exec-path, --upload-pack, --receive-pack, --exec, --config-env, \
         --show-signature, --open-files-in-pager"
    );
}

#[test]
fn exact_options_that_are_prefixes_of_rejected_ones_stay_allowed() {
    let list = AllowList::default();
    allowed(&list, &["git", "diff", "--text"]);
    allowed(&list, &["git", "diff", "--no-ext-diff", "--no-textconv"]);
    allowed(
        &list,
        &["git", "log", "--oneline", "--output-indicator-new=+"],
    );
    allowed(&list, &["rg", "--no-pre", "fn"]);
    allowed(&list, &["rg", "--pretty", "fn"]);
    allowed(
        &list,
        &["find", ".", "-name", "*.rs", "-o", "-name", "*.md"],
    );
    allowed(&list, &["find", ".", "-print0"]);
    allowed(&list, &["find", "-H", ".", "-name", "x"]);
    allowed(&list, &["ls", "--dereference-command-line", "src"]);
    allowed(&list, &["grep", "-rn", "x", "."]);
    allowed(&list, &["tree", "-L", "2"]);
}

#[test]
fn traversals_that_follow_links_are_refused() {
    let list = AllowList::default();
    for args in [
        &["find", "-L", ".", "-name", "x"][..],
        &["find", ".", "-follow"],
        &["rg", "-L", "x"],
        &["rg", "--follow", "x"],
        &["grep", "-R", "x", "."],
        &["grep", "-nR", "x", "."],
        &["grep", "--dereference-r", "x", "."],
        &["tree", "-l"],
        &["ls", "-laL"],
        &["ls", "--dereference", "."],
    ] {
        let message = refused(&list, args);
        assert!(message.contains("follows symbolic links"), "{message}");
    }
}

#[test]
fn ordinary_commands_are_allowed_with_tick_flags_added() {
    let list = AllowList::default();
    let git = allowed(&list, &["git", "log", "-5", "--stat"]);
    assert_eq!(git.program, "git");
    assert_eq!(
        git.args,
        argv(&[
            "--no-pager",
            "--no-optional-locks",
            "log",
            "--no-ext-diff",
            "--no-textconv",
            "-5",
            "--stat"
        ])
    );
    assert!(git.paths.is_empty());
    let show = allowed(
        &list,
        &["git", "--no-pager", "-C", "src", "show", "HEAD:src/main.rs"],
    );
    assert_eq!(show.dirs, argv(&["src"]));
    assert_eq!(show.paths, argv(&["HEAD:src/main.rs"]));
    allowed(&list, &["git", "blame", "-L", "1,5", "src/main.rs"]);
    allowed(&list, &["git", "diff", "HEAD~1"]);
    allowed(&list, &["git", "status", "--short"]);
    allowed(&list, &["git", "ls-files"]);
    allowed(&list, &["git", "rev-parse", "HEAD"]);
    allowed(&list, &["git", "grep", "-n", "fn"]);
    allowed(&list, &["git", "branch"]);
    allowed(&list, &["git", "branch", "-a", "-v"]);
    allowed(&list, &["git", "branch", "--list", "feat*"]);
    allowed(&list, &["git", "tag", "--list", "v*"]);
    allowed(&list, &["git", "tag", "-l"]);
    allowed(&list, &["git", "--git-dir=.git", "log"]);
    allowed(&list, &["ls", "-la", "src"]);
    allowed(&list, &["pwd"]);
    allowed(&list, &["cat", "src/main.rs"]);
    allowed(&list, &["head", "-n", "5", "src/main.rs"]);
    allowed(&list, &["tail", "-n", "+2", "src/main.rs"]);
    allowed(&list, &["wc", "-l", "src/main.rs"]);
    allowed(&list, &["file", "src/main.rs"]);
    allowed(&list, &["stat", "src"]);
    allowed(&list, &["tree", "-L", "2", "src"]);
    allowed(&list, &["grep", "-rn", "fn", "src"]);

    let rg = allowed(&list, &["rg", "-n", "fn", "src"]);
    assert_eq!(rg.paths, argv(&["src"]), "the pattern is not a path");
    let rg = allowed(&list, &["rg", "-n", "-e", "fn", "/etc"]);
    assert_eq!(
        rg.paths,
        argv(&["/etc"]),
        "with -e every operand is a file, and -e's value is not"
    );
    let grep = allowed(&list, &["grep", "-f", "/etc/patterns", "src"]);
    assert_eq!(grep.paths, argv(&["/etc/patterns", "src"]));
    let grep = allowed(&list, &["grep", "--file=../p", "x"]);
    assert_eq!(grep.paths, argv(&["../p", "x"]));

    let find = allowed(
        &list,
        &["find", "-H", ".", "src", "-name", "*.rs", "-type", "f"],
    );
    assert_eq!(find.paths, argv(&[".", "src"]));
    assert_eq!(
        find.args,
        argv(&["-H", ".", "src", "-name", "*.rs", "-type", "f"])
    );
}

#[test]
fn cargo_gets_offline_and_no_deps_unless_given() {
    let list = AllowList::default();
    let offline = [
        "metadata",
        "--offline",
        "--no-deps",
        "--format-version",
        "1",
    ];
    for given in [
        &["metadata", "--format-version", "1"][..],
        &offline,
        &["metadata", "--no-deps", "--format-version", "1"],
    ] {
        let metadata = allowed(&list, &[&["cargo"][..], given].concat());
        assert_eq!(metadata.args, argv(&offline), "{given:?}");
    }
    let tree = allowed(&list, &["cargo", "--frozen", "tree"]);
    assert_eq!(tree.args, argv(&["--frozen", "tree"]));
    let tree = allowed(
        &list,
        &["cargo", "tree", "--manifest-path", "sub/Cargo.toml"],
    );
    assert_eq!(
        tree.args,
        argv(&[
            "tree",
            "--offline",
            "--locked",
            "--manifest-path",
            "sub/Cargo.toml"
        ])
    );
    assert_eq!(tree.paths, argv(&["sub/Cargo.toml"]));
    let tree = allowed(&list, &["cargo", "tree", "--manifest-path=/x/Cargo.toml"]);
    assert_eq!(tree.paths, argv(&["/x/Cargo.toml"]));

    for args in [
        &["cargo", "build"][..],
        &["cargo", "run"],
        &["cargo", "--config", "build.rustc-wrapper='x'", "metadata"],
        &["cargo", "metadata", "--config=x"],
        &["cargo", "-Zunstable-options", "metadata"],
        &["cargo", "tree", "-Zx"],
        &["cargo", "--list"],
        &["cargo"],
    ] {
        refused(&list, args);
    }
}

#[test]
fn git_global_options_are_an_allow_list() {
    let list = AllowList::default();
    for (args, expected) in [
        (
            &["git", "-c", "core.pager=touch x", "log"][..],
            "`-c` is refused before the `git` subcommand: configuration can make git run any \
             program (a pager, an alias, a hook); the options allowed there are: -C, \
             --no-pager, -P, --no-replace-objects, --literal-pathspecs, \
             --no-literal-pathspecs, --glob-pathspecs, --noglob-pathspecs, --icase-pathspecs, \
             --no-optional-locks, --no-advice, --bare, --git-dir, --work-tree",
        ),
        (&["git", "-calias.x=!sh", "x"], "`-calias.x=!sh` is refused"),
        (
            &["git", "--config-env=core.pager=X", "log"],
            "`--config-env=core.pager=X` is refused",
        ),
        (
            &["git", "--exec-path=/tmp", "log"],
            "`--exec-path=/tmp` is refused",
        ),
        (
            &["git", "-p", "log"],
            "`-p` is refused before the `git` subcommand: a pager",
        ),
        (&["git", "--paginate", "log"], "`--paginate` is refused"),
        (
            &["git", "--namespace=x", "log"],
            "`--namespace=x` is refused",
        ),
        (&["git", "--help"], "`--help` is refused"),
        (
            &["git", "--no-pager=x", "log"],
            "`--no-pager` takes no value",
        ),
        (&["git", "-C"], "`-C` needs a value"),
    ] {
        let message = refused(&list, args);
        assert!(message.starts_with(expected), "{args:?}: {message}");
    }
    let approved = allowed(
        &list,
        &[
            "git",
            "--work-tree",
            "../elsewhere",
            "--git-dir=/x",
            "status",
        ],
    );
    assert_eq!(
        approved.paths,
        argv(&["../elsewhere", "/x"]),
        "checked by the caller"
    );
}

#[test]
fn subcommands_and_programs_outside_the_table_are_named_with_what_is_allowed() {
    let list = AllowList::default();
    assert_eq!(
        refused(&list, &["git", "push"]),
        "`git push` is not allowed: run_command only reads; the allowed `git` subcommands \
         are: status, diff, log, show, blame, grep, ls-files, rev-parse, branch, tag"
    );
    for sub in [
        "fetch",
        "ls-remote",
        "config",
        "commit",
        "checkout",
        "clone",
        "help",
        "am",
    ] {
        refused(&list, &["git", sub]);
    }
    assert_eq!(
        refused(&list, &["git"]),
        "`git` needs a subcommand; the allowed ones are: status, diff, log, show, blame, grep, \
         ls-files, rev-parse, branch, tag"
    );
    let message = refused(&list, &["sh", "-c", "touch x"]);
    assert_eq!(
        message,
        "`sh` is not on run_command's allow-list; the allowed programs are: ls, pwd, cat, \
         head, tail, wc, file, stat, tree, find, rg, grep, git, cargo. A person can add \
         programs under `run_command.allow` in their own `~/.config/tick/config.yaml`"
    );
    assert!(refused(&list, &["/usr/bin/git", "log"]).contains("not a path"));
    for program in [
        "sort", "tee", "sed", "awk", "xargs", "env", "bash", "python3", "make",
    ] {
        refused(&list, &[program, "x"]);
    }
    assert!(refused(&list, &[]).starts_with("`argv` is empty"));
}

#[test]
fn branch_and_tag_only_list() {
    let list = AllowList::default();
    let message = refused(&list, &["git", "branch", "evil"]);
    assert!(
        message.starts_with("`git branch` with an argument (evil) would create or change"),
        "{message}"
    );
    refused(&list, &["git", "tag", "v9"]);
    for args in [
        &["git", "branch", "-d", "main"][..],
        &["git", "branch", "--list", "-D", "x"],
        &["git", "branch", "-m", "x"],
        &["git", "branch", "--delete", "x"],
        &["git", "branch", "--set-upstream-to=x"],
        &["git", "branch", "--edit-description"],
        &["git", "tag", "-d", "v1"],
        &["git", "tag", "-a", "v1", "-m", "x"],
        &["git", "tag", "--list", "-v", "v1"],
        &["git", "tag", "-s", "v1"],
    ] {
        refused(&list, args);
    }
}

#[test]
fn find_actions_are_refused_as_whole_words_anywhere() {
    let list = AllowList::default();
    for args in [
        &["find", ".", "-exec", "touch", "x", ";"][..],
        &["find", ".", "-name", "x", "-execdir", "sh", "{}", "+"],
        &["find", ".", "-ok", "rm", "{}", ";"],
        &["find", "-okdir", "x"],
        &["find", ".", "-delete"],
        &["find", ".", "-fprint", "out"],
        &["find", ".", "-fprint0", "out"],
        &["find", ".", "-fprintf", "out", "%p"],
        &["find", ".", "-fls", "out"],
        &["find", "--", ".", "-exec", "x", ";"],
        &["find", ".", "(", "-name", "x", "-o", "-delete", ")"],
    ] {
        let message = refused(&list, args);
        assert!(message.contains("is refused for `find`"), "{message}");
    }
}

#[test]
fn after_double_dash_operands_are_files_but_rejected_flags_still_count() {
    let list = AllowList::default();
    // `-S --` makes `--` the value of -S, so `--output` after it would be an option.
    refused(&list, &["git", "log", "-S", "--", "--output=x"]);
    refused(&list, &["git", "diff", "--", "--out=x"]);
    let cat = allowed(&list, &["cat", "--", "-n", "/etc/passwd"]);
    assert_eq!(cat.paths, argv(&["-n", "/etc/passwd"]));
    let git = allowed(&list, &["git", "log", "--", "../outside", "src"]);
    assert_eq!(git.paths, argv(&["../outside", "src"]));
    let rg = allowed(&list, &["rg", "--", "-pattern", "src"]);
    assert_eq!(rg.paths, argv(&["src"]));
    let ls = allowed(&list, &["ls", "--", "/etc"]);
    assert_eq!(ls.paths, argv(&["/etc"]));
}

#[test]
fn configuration_adds_programs_and_subcommands_but_never_loosens() {
    let entries: Vec<AllowEntry> = serde_yaml::from_str(
        "- program: just\n  subcommands: [--list, --summary]\n  reject: [--unstable, -u]\n\
         - program: git\n  subcommands: [shortlog, diff]\n  reject: [--follow]\n\
         - program: jq\n\
         - program: cat\n  reject: [-v]\n",
    )
    .unwrap();
    let list = AllowList::with_entries(&entries).unwrap();
    let just = allowed(&list, &["just", "--list"]);
    assert_eq!(just.args, argv(&["--list"]));
    assert!(list.is_configured("just"));
    assert!(!list.is_configured("git"));
    refused(&list, &["just", "build"]);
    refused(&list, &["just"]);
    refused(&list, &["just", "--list", "--unst"]);
    refused(&list, &["just", "--list", "-qu"]);
    allowed(&list, &["jq", ".", "Cargo.json"]);
    // A new git subcommand has git's rules: the globals, the rejected flags, the injected
    // flags before it.
    let shortlog = allowed(&list, &["git", "shortlog", "-sn"]);
    assert_eq!(
        shortlog.args,
        argv(&["--no-pager", "--no-optional-locks", "shortlog", "-sn"])
    );
    refused(&list, &["git", "shortlog", "--output=x"]);
    refused(&list, &["git", "-c", "x=y", "shortlog"]);
    // Naming an existing subcommand again keeps its own rules.
    refused(&list, &["git", "diff", "--ext-diff"]);
    let diff = allowed(&list, &["git", "diff"]);
    assert!(diff.args.contains(&"--no-textconv".to_owned()));
    refused(&list, &["git", "log", "--follow", "x"]);
    refused(&list, &["cat", "-v", "x"]);
    allowed(&list, &["cat", "-n", "x"]);
    assert!(list.summary().contains(
        "git (status, diff, log, show, blame, grep, ls-files, rev-parse, branch, tag, shortlog)"
    ));

    for (yaml, expected) in [
        (
            "- program: /usr/bin/just\n",
            "run_command.allow entry 1 (`/usr/bin/just`): `program` must be a program name",
        ),
        (
            "- program: ls\n  subcommands: [x]\n",
            "run_command.allow entry 1 (`ls`): `ls` takes no subcommands in tick's table",
        ),
        (
            "- program: jq\n- program: just\n  reject: [output]\n",
            "run_command.allow entry 2 (`just`): `output` in `reject` is not a flag",
        ),
    ] {
        let entries: Vec<AllowEntry> = serde_yaml::from_str(yaml).unwrap();
        let err = AllowList::with_entries(&entries).unwrap_err().to_string();
        assert!(err.starts_with(expected), "{err}");
    }
    // There is no key that removes anything.
    let unknown: Result<Vec<AllowEntry>, _> =
        serde_yaml::from_str("- program: git\n  allow_flags: [--output]\n");
    assert!(unknown.is_err());
}

/// Every way a model could give option `option` the value `value` that the program reads as
/// that option: `--name=v`, `--name v` and every abbreviation; `-xv`, `-x v`, and the letter
/// after another in a group; a single-dash word whole.
/// An abbreviation that is exactly another option the table knows (`grep --exclude`, a prefix
/// of `--exclude-from`) is that option, as in getopt.
fn value_spellings(option: &str, value: &str, filler: char, others: &[String]) -> Vec<Vec<String>> {
    let v = value.to_owned();
    if let Some(name) = option.strip_prefix("--") {
        (1..=name.len())
            .filter(|&end| !others.contains(&format!("--{}", &name[..end])))
            .flat_map(|end| {
                let prefix = &name[..end];
                [
                    vec![format!("--{prefix}={value}")],
                    vec![format!("--{prefix}"), v.clone()],
                ]
            })
            .collect()
    } else if let Some(start) = option.strip_suffix('*') {
        vec![
            vec![format!("{start}mm"), v.clone()],
            vec![format!("{start}ac"), v],
        ]
    } else if option.len() > 2 {
        vec![vec![option.to_owned(), v]]
    } else {
        let c = &option[1..];
        vec![
            vec![format!("-{c}{value}")],
            vec![format!("-{c}"), v.clone()],
            vec![format!("-{filler}{c}{value}")],
            vec![format!("-{filler}{c}"), v],
        ]
    }
}

/// A short option of no consequence to group with, per program: it takes no value and is
/// not refused.
fn filler(program: &str) -> char {
    match program {
        "file" => 'k',
        "git" => 'w',
        "find" | "cargo" => 'q',
        _ => 'n',
    }
}

/// Issue 17, item 12: every spelling of every option that names a file gives that file to the
/// caller's path check (or is refused outright). A program whose option table forgot one
/// spelling would read `../outside` unchecked.
#[test]
fn every_option_that_names_a_file_is_checked_in_every_spelling() {
    let list = AllowList::default();
    let outside = "../outside";
    let mut checked = 0;
    for entry in &list.entries {
        for sub in rule_sets(entry) {
            let options = entry
                .path_options
                .iter()
                .chain(sub.map_or(&[][..], |s| &s.path_options));
            let others: Vec<String> = entry
                .value_options
                .iter()
                .chain(sub.map_or(&[][..], |s| &s.value_options))
                .cloned()
                .collect();
            for option in options {
                for spelling in value_spellings(option, outside, filler(&entry.name), &others) {
                    let mut args = vec![entry.name.clone()];
                    args.extend(sub.map(|s| s.name.clone()));
                    if entry.operands == Operands::Find {
                        args.push(".".to_owned());
                    }
                    args.extend(spelling);
                    if let Ok(approved) = list.check(&args) {
                        assert!(
                            approved.paths.iter().any(|p| p == outside),
                            "{args:?} reads `{outside}` unchecked: {approved:?}"
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} spellings were checked");
}

/// The spellings the issue found reading outside, each given to the path check.
#[test]
fn attached_clustered_and_abbreviated_file_options_name_files() {
    let list = AllowList::default();
    for (args, path) in [
        (
            &["git", "blame", "--contents=../outside.txt", "a.txt"][..],
            "../outside.txt",
        ),
        (&["git", "blame", "--cont", "../o", "a.txt"], "../o"),
        (&["git", "blame", "-S../x", "a.txt"], "../x"),
        (&["git", "blame", "-wS../x", "a.txt"], "../x"),
        (&["git", "blame", "--ignore-revs=../x", "a.txt"], "../x"),
        (&["git", "log", "-O../order"], "../order"),
        (&["git", "grep", "-f", "../patterns"], "../patterns"),
        (&["git", "ls-files", "--exclude-from=../x"], "../x"),
        (&["git", "ls-files", "-X../x"], "../x"),
        (
            &["git", "rev-parse", "--resolve-git-dir", "../x/.git"],
            "../x/.git",
        ),
        (&["file", "-kf../x"], "../x"),
        (&["file", "--files=../x"], "../x"),
        (&["file", "-m", "a.mgc:../x.mgc", "a"], "../x.mgc"),
        (&["file", "--magic=m:../x", "a"], "../x"),
        (&["wc", "--files0-from=../x"], "../x"),
        (&["wc", "--files0=../x"], "../x"),
        (&["tree", "-H", ".", "--hintro=../x"], "../x"),
        (&["tree", "--houtro", "../x"], "../x"),
        (&["find", ".", "-newerma", "../x"], "../x"),
        (&["grep", "--exclude-f=../x", "p", "."], "../x"),
        (&["rg", "-nf../x"], "../x"),
        (&["rg", "--files", ".."], ".."),
        (&["rg", "--files", "--", "/etc"], "/etc"),
    ] {
        let approved = allowed(&list, args);
        assert!(
            approved.paths.iter().any(|p| p == path),
            "{args:?}: {:?}",
            approved.paths
        );
    }
}

/// Issue 17, item 15: a separate value after an option that takes one is that option's value,
/// not a file, however it starts; grouped or unknown, it stays a file to check.
#[test]
fn a_separate_value_of_an_option_is_not_a_file() {
    let list = AllowList::default();
    for (args, paths) in [
        (&["git", "log", "--grep", "/api/"][..], &[][..]),
        (&["git", "log", "-S", "/api/", "--", "src"], &["src"]),
        (&["git", "log", "--author", "/x/", "-G", "/y/"], &[]),
        (&["git", "grep", "-e", "/api/", "--", "src"], &["src"]),
        (
            &["git", "blame", "-L", "/fn main/,+3", "src/main.rs"],
            &["src/main.rs"],
        ),
        (&["git", "ls-files", "--exclude", "/target/"], &[]),
        (&["grep", "-e", "/api/", "src"], &["src"]),
        (&["grep", "-rn", "--regexp", "/api/", "src"], &["src"]),
        (&["grep", "--exclude", "/x/*", "-r", "p", "src"], &["src"]),
        (&["rg", "-e", "/api/"], &[]),
        (&["rg", "-g", "/src/*.rs", "fn"], &[]),
        (&["rg", "-r", "/x/", "fn", "src"], &["src"]),
        (&["tree", "-P", "/x", "-I", "/y", "src"], &["src"]),
        // A value letter inside a group vouches for nothing: the next argument is checked.
        (&["grep", "-ie", "/api/", "src"], &["/api/", "src"]),
        // So does an abbreviation of a value option.
        (&["grep", "--regex", "/api/", "src"], &["/api/", "src"]),
    ] {
        let approved = allowed(&list, args);
        assert_eq!(approved.paths, argv(paths), "{args:?}");
    }
}

/// Issue 17, item 14: `git branch --format --list NAME` makes `--list` the format and branch
/// `NAME`; every option of branch and tag that takes a value must have it after `=`.
#[test]
fn branch_and_tag_options_with_a_value_need_it_attached() {
    let list = AllowList::default();
    let mut checked = 0;
    for sub in ["branch", "tag"] {
        for option in REF_FILTER_VALUES {
            for end in 1..=option.len() {
                let prefix = &option[..end];
                for args in [
                    vec!["git", sub, &format!("--{prefix}"), "--list", "NAME"],
                    vec![
                        "git",
                        sub,
                        "--list",
                        &format!("--{prefix}"),
                        "--list",
                        "NAME",
                    ],
                    vec!["git", sub, &format!("--{prefix}")],
                ] {
                    refused(&list, &args);
                    checked += 1;
                }
            }
            allowed(
                &list,
                &["git", sub, &format!("--{option}=HEAD"), "--list", "v*"],
            );
        }
    }
    assert!(checked > 100, "{checked}");
    assert_eq!(
        refused(&list, &["git", "branch", "--format", "--list", "NAME"]),
        "`--format` needs its value after `=` for `git branch` (`--format=<value>`): written \
         alone it takes the next argument as its value, so `git branch --format --list x` \
         would not list but create `x`"
    );
    allowed(
        &list,
        &[
            "git",
            "branch",
            "--format=%(refname)",
            "--sort=-committerdate",
        ],
    );
    allowed(&list, &["git", "tag", "--list", "--points-at=HEAD"]);
    allowed(&list, &["git", "branch", "--no-sort", "--show-current"]);
}

/// `git -C a -C b`: both directories, in order, for the caller to follow; the paths after
/// them are relative to where git ends up.
#[test]
fn git_directories_are_kept_in_order() {
    let list = AllowList::default();
    let grep = allowed(
        &list,
        &["git", "-C", "sub", "-C", "up", "grep", "--no-index", "x"],
    );
    assert_eq!(grep.dirs, argv(&["sub", "up"]));
    assert_eq!(grep.globals, argv(&["-C", "sub", "-C", "up"]));
    let diff = allowed(
        &list,
        &[
            "git",
            "-C",
            "sub",
            "diff",
            "--no-index",
            "up/outside.txt",
            "a.txt",
        ],
    );
    assert_eq!(diff.dirs, argv(&["sub"]));
    assert_eq!(diff.paths, argv(&["up/outside.txt", "a.txt"]));
    let blame = allowed(&list, &["git", "blame", "a.txt"]);
    assert!(
        blame.args.contains(&"--no-ignore-revs-file".to_owned()),
        "{:?}",
        blame.args
    );
}
