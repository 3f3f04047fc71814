#!/bin/sh
# 200 kill -9 at random instants of `tick undo` (half anywhere in the run, half while it moves
# files), each followed by the next command and a check that the tree and TODO.md are all
# before or all after the undo. The suite runs 40 of them; this runs 200.
set -eu
cd "$(dirname "$0")/.."
TICK_UNDO_KILLS="${TICK_UNDO_KILLS:-200}" cargo test --test all \
    suite::undo::a_kill_at_any_instant_of_an_undo_leaves_before_or_after -- --nocapture
