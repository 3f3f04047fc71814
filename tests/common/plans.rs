//! PLAN.md texts several suites approve, as macros that expand to string literals so that a
//! suite's plan stays a `const`.

/// A one-step plan titled `$title`: S1 makes `made.txt` and verifies that it exists.
macro_rules! one_step_plan {
    ($title:literal) => {
        concat!(
            "# ",
            $title,
            "\n\n## Summary\nOne step.\n\n## Steps\n",
            "- [ ] S1 Make a file\n",
            "  - files: made.txt\n",
            "  - verify: `test -f made.txt`\n",
        )
    };
}
pub(crate) use one_step_plan;

/// The steps of the greeting plans: S1 writes `hello.txt` and greps it for `$greeting`, S2
/// writes `bye.txt` with `$farewell` after its files line (a verify line, or nothing).
macro_rules! greet_steps {
    ($greeting:literal, $farewell:literal) => {
        concat!(
            "- [ ] S1 Write the greeting\n",
            "  - files: hello.txt\n",
            "  - verify: `grep -q ",
            $greeting,
            " hello.txt`\n",
            "- [ ] S2 Write the farewell\n",
            "  - files: bye.txt\n",
            $farewell,
        )
    };
}
pub(crate) use greet_steps;

/// The greeting plan ("# Greet", "Write a greeting file.") with [`greet_steps`].
macro_rules! greet_plan {
    ($greeting:literal, $farewell:literal) => {
        concat!(
            "# Greet\n\n## Summary\nWrite a greeting file.\n\n## Steps\n",
            $crate::common::plans::greet_steps!($greeting, $farewell),
        )
    };
}
pub(crate) use greet_plan;
