//! The one integration test binary: `suite/` holds the tests, `common/` what they share.

// clippy's `allow-unwrap-in-tests` covers `#[test]` functions only, not their helpers; in this
// binary a panic is how a test fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests read files they wrote; clippy.toml bans them in tick's own code"
)]
// An end-to-end test reads as one terminal session, top to bottom: its length is the story's.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test is one scenario told in order"
)]

mod common;
mod suite;
