#!/usr/bin/env bash
# Hooks benchmark (not a test): the cost of an empty hook (`true`) per event on this machine.
#   1. one hook run as tick runs it (payload file, bash, with and without the sandbox);
#   2. per tool call in a real `tick run` against the fake model: a step of 20 writes with
#      and without a `tool.post` hook (the hook plus the journal's snapshots around it).
# Usage: benches/hooks.sh   (ROUNDS=50; PROFILE=--release for an optimised build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-50} exec cargo test ${PROFILE:-} --test all \
  suite::hooks::bench_an_empty_hook_per_event -- --ignored --nocapture 2>&1 | grep '^bench:'
