#!/usr/bin/env bash
# Benchmark (not a test): how long `tick doctor` takes to say the model server is not
# running, for a local provider whose port is closed (connection refused on 127.0.0.1), and
# how long `tick plan` takes to fail on the same port (it checks a local server first).
#
# Usage: benches/doctor.sh            (RUNS=10 to change the number of runs)
# TICK_BIN=path/to/tick skips the release build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-10}

# shellcheck source=benches/setup.sh
source "$ROOT/benches/setup.sh"
export NO_COLOR=1 HOME="$WORK"
git -C "$WORK" init -q

# A port nobody listens on: ask the kernel for a free one and let it go.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export TICK_PROVIDER=ollama TICK_MODEL=qwen3 TICK_BASE_URL="http://127.0.0.1:$PORT/v1"

ms() { # runs "$@" once, prints its wall time in milliseconds
    local start end
    start=$(date +%s%N)
    (cd "$WORK" && "$@" >/dev/null 2>&1) || true
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

doctor=$(for _ in $(seq "$RUNS"); do ms "$TICK" doctor; done | median)
plan=$(ms "$TICK" plan "benchmark")

echo "tick: $("$TICK" --version), port 127.0.0.1:$PORT closed"
echo "| command | runs | median ms |"
echo "|---|---:|---:|"
echo "| \`tick doctor\` (connection refused) | $RUNS | $doctor |"
echo "| \`tick plan\` (connection refused) | 1 | $plan |"
if ((doctor >= 2000)); then
    echo "error: doctor took ${doctor} ms on a closed port; the budget is 2000 ms" >&2
    exit 1
fi
