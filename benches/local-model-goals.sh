#!/usr/bin/env bash
# Benchmark (not a test), issue 29's "Done when": on a fixture this script makes (a small
# Python package: `stats.py` with `mean`, `minimum`, `maximum`; `wordfreq.py`; unit tests in
# `tests/`; a README naming the test command), five goals planned by `tick plan` against the
# local model, and the model's own drafts of three of them approved as they are and run.
#
# Per draft: valid (exit 0, `tick show` reads it, at least one step), grounded (tick's own
# validation, `src/compact/validate.rs`, left no warning in the draft: the draft's open
# questions hold none of "tick's check of this draft"), seconds (limit GOAL_LIMIT, 120).
# Per execution: each step's outcome and seconds, the candidates it used, whether the
# repository's tests (`python3 -m unittest discover tests`) pass after the run, and whether the
# goal is achieved, judged by an ACCEPTANCE check written for each goal below, before any run,
# as a person would test the goal; never by the plan's own verify.
#
# Usage: scripts/local-model.sh start && benches/local-model-goals.sh
#   TICK_BIN=path     the tick binary (default: a debug build of this checkout)
#   RUNS=5            runs per goal        GOALS=1,2,3,4,5  the goals drafted
#   PHASE=drafts|exec|both  drafts only, executions only, or both (default both: one run is
#                     every goal once; an executed goal's own plan is its draft row)
#   EXEC_GOALS=1,2,3  the goals whose drafts are executed
#   GOAL_LIMIT=120    seconds per draft    EXEC_LIMIT=1200  seconds per execution
#   STOP_AT=epoch     start no new run after this time (a bounded session); what was not run
#                     is said at the end
#   BENCH_OUT=dir     logs and workspaces (default: a new dir under /tmp)
# Temperatures are tick's own (planner 0.2; executor 0.2, a retry 0.7, each further candidate
# +0.25); tick sends no seed, so llama-server draws one per request: runs differ.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-5}
GOAL_LIMIT=${GOAL_LIMIT:-120}
EXEC_LIMIT=${EXEC_LIMIT:-1200}
PHASE=${PHASE:-both}
EXEC_GOALS=${EXEC_GOALS:-1,2,3}
STOP_AT=${STOP_AT:-0}

GOAL_TEXT=(
    "mean in stats.py should return None for an empty list instead of raising; add a unit test for it"
    "Add a function median(values) to stats.py that returns the median of a list of numbers, with a unit test"
    "maximum in stats.py should raise ValueError with the message 'empty list' when the list is empty; add a unit test"
    "Add a --top N option to wordfreq.py that prints only the N most frequent words"
    "Rename the function minimum in stats.py to smallest, and update its callers and tests"
)
# What a person would test for each goal, written before the runs; run in the workspace after
# `tick run`, with the repository's tests required too.
ACCEPTANCE=(
    'from stats import mean; assert mean([]) is None; assert mean([1, 2, 3]) == 2'
    'from stats import median; assert median([3, 1, 2]) == 2; assert median([4, 1, 3, 2]) == 2.5; assert median([5]) == 5'
    'from stats import maximum
try:
    maximum([])
except ValueError as e:
    assert "empty list" in str(e), str(e)
else:
    raise AssertionError("no ValueError")
assert maximum([1, 3, 2]) == 3'
    'import subprocess, sys
out = subprocess.run([sys.executable, "wordfreq.py", "--top", "2", "words.txt"], capture_output=True, text=True, check=True).stdout
lines = [l for l in out.splitlines() if l.strip()]
assert len(lines) == 2, out
assert "b" in lines[0] and "3" in lines[0], out'
    'import stats; from stats import smallest; assert smallest([3, 1, 2]) == 1; assert not hasattr(stats, "minimum")'
)

if [[ -z "${TICK_BASE_URL:-}" || -z "${TICK_MODEL:-}" ]]; then
    eval "$("$ROOT/scripts/local-model.sh" env)"
fi
BASE_URL=$TICK_BASE_URL MODEL=$TICK_MODEL PROVIDER=${TICK_PROVIDER:-llamacpp}
curl -fsS --max-time 5 "${BASE_URL%/v1}/health" >/dev/null || {
    echo "error: no model server answers at ${BASE_URL%/v1}/health" >&2
    echo "hint: start one with: scripts/local-model.sh start" >&2
    exit 1
}
TICK=${TICK_BIN:-}
if [[ -z "$TICK" ]]; then
    nice -n 19 cargo build --locked --quiet --manifest-path "$ROOT/Cargo.toml"
    TICK="${CARGO_TARGET_DIR:-$ROOT/target}/debug/tick"
fi
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tick-goals.XXXXXX")}
mkdir -p "$OUT"
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TICK_' || true)
export NO_COLOR=1 TICK_INTERACTIVE=0

in_list() { [[ ",$2," == *",$1,"* ]]; }
late() { ((STOP_AT > 0 && $(date +%s) >= STOP_AT)); }

run_tick() { # $1 workspace, then the command
    local dir=$1
    shift
    (cd "$dir" && env -u CARGO_TARGET_DIR HOME="$dir/.home" TICK_PROVIDER="$PROVIDER" TICK_BASE_URL="$BASE_URL" \
        TICK_MODEL="$MODEL" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
        GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com "$@")
}

make_fixture() { # $1 directory
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir/.home" "$dir/tests"
    cat >"$dir/stats.py" <<'PY'
"""Small statistics helpers."""


def mean(values):
    return sum(values) / len(values)


def minimum(values):
    return min(values)


def maximum(values):
    return max(values)


def spread(values):
    return maximum(values) - minimum(values)
PY
    cat >"$dir/wordfreq.py" <<'PY'
"""Counts the words of a file and prints each with its count, most frequent first."""

import argparse
import collections


def count_words(text):
    return collections.Counter(text.split())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    args = parser.parse_args()
    with open(args.path, encoding="utf-8") as f:
        counts = count_words(f.read())
    for word, n in counts.most_common():
        print(f"{word} {n}")


if __name__ == "__main__":
    main()
PY
    printf 'a b b c b a d\n' >"$dir/words.txt"
    cat >"$dir/tests/test_stats.py" <<'PY'
import unittest

from stats import maximum, mean, minimum, spread


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_minimum(self):
        self.assertEqual(minimum([3, 1, 2]), 1)

    def test_maximum(self):
        self.assertEqual(maximum([3, 1, 2]), 3)

    def test_spread(self):
        self.assertEqual(spread([3, 1, 2]), 2)


if __name__ == "__main__":
    unittest.main()
PY
    cat >"$dir/tests/test_wordfreq.py" <<'PY'
import unittest

from wordfreq import count_words


class WordfreqTest(unittest.TestCase):
    def test_count_words(self):
        self.assertEqual(count_words("a b a")["a"], 2)


if __name__ == "__main__":
    unittest.main()
PY
    printf '# stats\n\nStatistics helpers and a word counter.\n\nTests:\n\n    python3 -m unittest discover tests\n' >"$dir/README.md"
    printf '.home/\n__pycache__/\n' >"$dir/.gitignore"
    git -C "$dir" init -q
    git -C "$dir" add .
    run_tick "$dir" git commit -q -m "stats 0.1"
}

repo_tests() { (cd "$1" && timeout 60 python3 -m unittest discover tests >/dev/null 2>&1); }

echo "tick:   $("$TICK" --version); server $BASE_URL, model $MODEL ($PROVIDER)"
echo "start:  $(date -u +%H:%M:%S) UTC; load: $(cut -d' ' -f1-3 /proc/loadavg); runs $RUNS; draft limit $GOAL_LIMIT s"
echo

judge_draft() { # $1 run, $2 goal, $3 workspace, $4 exit code, $5 seconds, $6 source (draft|exec)
    local run=$1 n=$2 dir=$3 code=$4 seconds=$5 source=$6 draft=no ground=- result=""
    local plan="$dir/.tasks/draft/PLAN.md" stderr=$dir.stderr
    [[ $source == exec ]] && stderr=$dir-plan.stderr
    if [[ $code == 0 && -f $plan ]] && run_tick "$dir" "$TICK" show >/dev/null 2>&1 &&
        grep -qE '^[[:space:]]*- \[[ x~!-]\] S[0-9]' "$plan"; then
        draft=yes
        # An execution's plan has the planner's usual limit; past GOAL_LIMIT it is valid but late.
        ((seconds > GOAL_LIMIT)) && draft=late
        if grep -q "tick's check of this draft" "$plan"; then
            ground=no
            result=$(grep -m1 -o "tick's check of this draft, not fixed by the model: .*" "$plan" | cut -c60-160)
        else
            ground=yes
            result="$(grep -cE '^[[:space:]]*- \[ \] S[0-9]' "$plan") steps: $(sed -n 's/^title: //p' "$plan" | head -n1)"
        fi
    elif [[ $code == 124 || $code == 130 ]]; then
        result="stopped at its limit"
    else
        result="exit $code: $(grep -m1 '^error' "$stderr" || tail -n1 "$stderr")"
    fi
    printf 'draft %-4s %-4s %-6s %-6s %-8s %7s  %s\n' "$run" "$n" "$source" "$draft" "$ground" "$seconds" "${result:0:100}"
    echo "$run $n $draft $ground $seconds $source" >>"$OUT/drafts.txt"
}

draft_run() { # $1 run, $2 goal: a draft with the GOAL_LIMIT
    local run=$1 n=$2 dir="$OUT/draft-$1-$2" started code seconds
    make_fixture "$dir"
    started=$(date +%s.%N)
    set +e
    run_tick "$dir" timeout --signal=INT --kill-after=10 "$GOAL_LIMIT" \
        nice -n 19 "$TICK" plan --json "${GOAL_TEXT[$((n - 1))]}" >"$dir.jsonl" 2>"$dir.stderr"
    code=$?
    set -e
    seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    judge_draft "$run" "$n" "$dir" "$code" "$seconds" draft
}

exec_run() { # $1 run, $2 goal: the model's own draft (also a draft row), approved as it is and run
    local run=$1 n=$2 dir="$OUT/exec-$1-$2" started code seconds summary total verified rest accept tests
    make_fixture "$dir"
    started=$(date +%s.%N)
    set +e
    # The planner's usual time (not the GOAL_LIMIT); the draft row judges it against GOAL_LIMIT.
    run_tick "$dir" timeout --signal=INT --kill-after=10 600 nice -n 19 "$TICK" plan --json \
        "${GOAL_TEXT[$((n - 1))]}" >"$dir-plan.jsonl" 2>"$dir-plan.stderr"
    code=$?
    set -e
    seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    judge_draft "$run" "$n" "$dir" "$code" "$seconds" exec
    if [[ $code != 0 ]]; then
        printf 'exec  %-4s %-4s %-8s %-8s %-10s %7s  %s\n' "$run" "$n" - - no "$seconds" "no draft (exit $code)"
        echo "$run $n 0 0 no -" >>"$OUT/exec.txt"
        return
    fi
    run_tick "$dir" "$TICK" approve >"$dir-approve.txt" 2>&1 || true
    set +e
    run_tick "$dir" timeout --signal=INT --kill-after=10 "$EXEC_LIMIT" nice -n 19 "$TICK" run --json 2>"$dir-run.stderr" |
        while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$dir-run.jsonl"
    set -e
    summary=$(python3 - "$dir-run.jsonl" "$dir" <<'PY'
import glob, json, sys
steps, order = {}, []
for line in open(sys.argv[1], encoding="utf-8"):
    at, _, text = line.partition(" ")
    try:
        e = json.loads(text)
    except ValueError:
        continue
    kind, step = e.get("event"), e.get("step")
    if kind == "step_started":
        steps[step] = {"start": float(at), "out": "unended"}
        order.append(step)
    elif step in steps and kind in ("step_done", "step_blocked"):
        steps[step]["end"] = float(at)
        steps[step]["out"] = "verified" if kind == "step_done" and e.get("verified") else kind[5:]
parts, verified = [], 0
for s in order:
    cands = 1
    for t in glob.glob(f"{sys.argv[2]}/.tasks/*/runs/*-{s}.jsonl"):
        cands = max(cands, 1 + open(t, encoding="utf-8").read().count("(tick) candidate ") // 2)
    d = steps[s]
    verified += d["out"] == "verified"
    parts.append(f"{s} {d['out']} {d.get('end', d['start']) - d['start']:.0f} {cands}")
print(len(order), verified, "; ".join(parts))
PY
)
    read -r total verified rest <<<"$summary"
    accept=no
    if repo_tests "$dir" && (cd "$dir" && timeout 60 python3 -c "${ACCEPTANCE[$((n - 1))]}" >/dev/null 2>&1); then
        accept=yes
    fi
    tests=$(repo_tests "$dir" && echo pass || echo FAIL)
    printf 'exec  %-4s %-4s %-8s %-8s %-10s %7s  %s; repo tests %s\n' "$run" "$n" "$total" "$verified" "$accept" \
        "$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')" "$rest" "$tests"
    echo "$run $n $total $verified $accept $tests" >>"$OUT/exec.txt"
}

# One run is every goal once: an executed goal's plan is also its draft row, so each case gets
# the same number of runs when STOP_AT ends the session early.
# The load average once a minute, so the table can say what the server ran next to.
(while sleep 60; do echo "$(date -u +%H:%M) $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/load.txt"; done) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
echo "draft run  goal source draft  grounded seconds  result"
echo "exec  run  goal steps    verified acceptance seconds  per step (outcome s candidates)"
for run in $(seq 1 "$RUNS"); do
    for n in 1 2 3 4 5; do
        executed=no drafted=no
        [[ $PHASE != drafts ]] && in_list "$n" "$EXEC_GOALS" && executed=yes
        [[ $PHASE != exec ]] && in_list "$n" "${GOALS:-1,2,3,4,5}" && drafted=yes
        [[ $executed == no && $drafted == no ]] && continue
        if late; then echo "run $run goal $n: not run (STOP_AT reached)"; continue; fi
        if [[ $executed == yes ]]; then exec_run "$run" "$n"; else draft_run "$run" "$n"; fi
    done
done
echo
[[ -f $OUT/drafts.txt ]] && python3 - "$OUT/drafts.txt" "$GOAL_LIMIT" <<'PY'
import statistics, sys
rows, limit = [l.split() for l in open(sys.argv[1])], int(sys.argv[2])
def line(name, g):
    ok = [int(r[4]) for r in g if r[2] == "yes"]
    print(f"{name}: valid within {limit} s {len(ok)} of {len(g)}, valid but later "
          f"{sum(r[2] == 'late' for r in g)}, grounded within {limit} s "
          f"{sum(r[2] == 'yes' and r[3] == 'yes' for r in g)} of {len(g)}; median seconds "
          f"{statistics.median(int(r[4]) for r in g)}")
for goal in sorted({r[1] for r in rows}):
    line(f"goal {goal}", [r for r in rows if r[1] == goal])
line("drafts", rows)
PY
[[ -f $OUT/exec.txt ]] && awk '{ s += $3; v += $4; a += ($5 == "yes"); t += ($6 == "pass"); n++ }
    END { printf "executions: %d; steps verified %d of %d; goals achieved %d of %d; repo tests pass after %d of %d\n", n, v, s, a, n, t, n }' "$OUT/exec.txt"
[[ -f $OUT/load.txt ]] && sort -n -k2 "$OUT/load.txt" | awk 'NR == 1 { lo = $2 } { hi = $2; n++ } END { printf "load average (1 min, sampled each minute): %s to %s over %d samples\n", lo, hi, n }'
echo "end: $(date -u +%H:%M:%S) UTC; load: $(cut -d' ' -f1-3 /proc/loadavg); logs: $OUT"
