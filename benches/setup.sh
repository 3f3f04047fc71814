# Sourced by the benchmark scripts (after `set -euo pipefail` and ROOT=<checkout>): sets
# TICK to the binary to measure ($TICK_BIN, else a release build of this checkout, as an
# absolute path) and WORK to a scratch directory removed at exit, and clears the caller's
# TICK_* variables so that no setting of theirs changes what is measured.

TICK="${TICK_BIN:-}"
if [[ -z "$TICK" ]]; then
    echo "building tick in release mode..." >&2
    cargo build --release --locked --quiet --manifest-path "$ROOT/Cargo.toml"
    TICK="${CARGO_TARGET_DIR:-$ROOT/target}/release/tick"
fi
TICK=$(cd "$(dirname "$TICK")" && pwd)/$(basename "$TICK")
[[ -x "$TICK" ]] || { echo "error: no tick binary at \`$TICK\`" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tick-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TICK_' || true)
