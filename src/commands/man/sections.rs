//! The sections of the man pages that `--help` has no place for, as data: what a script sees
//! (EXIT STATUS, on every page), the environment tick reads (ENVIRONMENT) and the files it reads and writes
//! (FILES), each a table of (name, meaning).

/// The exit codes a script sees, for EXIT STATUS on every page: (code, meaning), one code a
/// row. The README's exit-code table says the same (a test holds them together).
pub const EXIT_STATUS: &[(&str, &str)] = &[
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
        "9",
        "`tick check --strict`: a done step's files were changed later by tick, running \
         another task.",
    ),
    ("10", "`tick check`: a step is stale."),
    (
        "11",
        "`tick check`: a step is done but unverified; `tick verify --from-git`: a claimed \
         step has no `verify`.",
    ),
    ("12", "`tick check`: a PLAN.md changed since approval."),
    ("13", "`tick check`: a task file does not parse."),
    (
        "14",
        "`tick check`: the last planning or run attempt failed.",
    ),
    (
        "15",
        "`tick check --from-git`: the ticks and the history disagree; `tick verify \
         --from-git`: a claimed step fails its `verify`.",
    ),
    (
        "16",
        "`tick check`: steps still to do in two active tasks change the same files.",
    ),
    (
        "130",
        "Interrupted (Ctrl-C, SIGTERM, SIGHUP); every file is left whole.",
    ),
];

/// The environment tick reads, for ENVIRONMENT: (variable, meaning).
pub const ENVIRONMENT: &[(&str, &str)] = &[
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
pub const FILES: &[(&str, &str)] = &[
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
