#!/usr/bin/env bash
# Benchmark (not a test): how long `tick status` and `tick list` take on
#   (a) a workspace with 1,000 task folders (most of them completed), and
#   (b) one task whose TODO.md has 10,000 steps (and `tick mark` there: one write),
# measured in the same run against `cat` of the same files, so the numbers say how much
# tick costs over merely reading what it reads. Targets (issue 8): on (b), `tick status`
# at most 10x `cat`, `tick mark` at most 2x `tick status`.
#
# Usage: benches/status.sh            (RUNS=20 TASKS=1000 STEPS=10000 to change the sizes)
# Uses hyperfine when it is installed (and NO_HYPERFINE is unset), else a bash timing loop.
# TICK_BIN=path/to/tick skips the release build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-20}
TASKS=${TASKS:-1000}
STEPS=${STEPS:-10000}

# shellcheck source=benches/setup.sh
source "$ROOT/benches/setup.sh"
export NO_COLOR=1

# A realistic plan: front matter, prose sections, steps with detail lines.
plan_text() { # $1 title, $2 number of steps
    printf -- '---\ntitle: %s\ngoal: %s, keeping the old behaviour and adding tests\n---\n' "$1" "$1"
    printf '# %s\n\n## Summary\n\nChange the code in small verified steps.\n\n' "$1"
    printf '## Context\n\nThe module lives in `src/`; its tests in `tests/`.\n\n## Steps\n\n'
    local i
    for ((i = 1; i <= $2; i++)); do
        printf -- '- [ ] S%d Change part %d of the module\n' "$i" "$i"
        printf -- '  - files: src/part%d.rs, tests/part%d.rs\n' "$i" "$i"
        printf -- '  - verify: `cargo test part%d`\n' "$i"
        printf -- '  - done when: the tests of part %d pass\n' "$i"
    done
    printf '\n## Risks\n\n- Callers outside the module.\n\n## Out of scope\n\n- Performance.\n'
}

# Ticks the first $2 boxes of TODO.md $1 (by hand, as a person would).
tick_boxes() {
    awk -v n="$2" '/^- \[ \] S/ && done < n { sub(/^- \[ \]/, "- [x]"); done++ } { print }' \
        "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

echo "generating $TASKS task folders..." >&2
MANY="$WORK/many"
mkdir -p "$MANY"
git -C "$MANY" init -q
plan_text "Refactor module" 8 >"$WORK/plan8.md"
for ((t = 0; t < TASKS; t++)); do
    # One approval a minute, from 2026-01-01.
    now=$(date -u -d "2026-01-01T00:00:00Z + $t minutes" +%Y-%m-%dT%H:%M:%SZ)
    TICK_NOW=$now "$TICK" -C "$MANY" plan --from "$WORK/plan8.md" 2>/dev/null
    TICK_NOW=$now "$TICK" -C "$MANY" approve 2>/dev/null
done
# Nine in ten completed; the rest half done. The newest ones are completed too, so finding
# the current task means looking past them.
t=0
for dir in "$MANY"/.tasks/2026*/; do
    if ((t % 10 == 3)); then tick_boxes "$dir/TODO.md" 4; else tick_boxes "$dir/TODO.md" 8; fi
    t=$((t + 1))
done
for dir in $(ls -d "$MANY"/.tasks/2026*/ | tail -n 25); do tick_boxes "$dir/TODO.md" 8; done

echo "generating one task with $STEPS steps..." >&2
BIG="$WORK/big"
mkdir -p "$BIG"
git -C "$BIG" init -q
plan_text "Huge plan" "$STEPS" >"$WORK/planbig.md"
TICK_NOW=2026-11-30T14:30:12Z "$TICK" -C "$BIG" plan --from "$WORK/planbig.md" 2>/dev/null
TICK_NOW=2026-11-30T14:30:12Z "$TICK" -C "$BIG" approve 2>/dev/null
tick_boxes "$BIG"/.tasks/2026*/TODO.md $((STEPS * 7 / 10))

# Both workspaces must read cleanly, or the timings would measure an error path.
"$TICK" -C "$MANY" status >/dev/null 2>&1
"$TICK" -C "$BIG" status >/dev/null 2>&1
[[ $("$TICK" -C "$MANY" list | grep -c completed) -ge $((TASKS * 8 / 10)) ]] ||
    { echo "error: the generated tasks are not mostly completed" >&2; exit 1; }

# median_ms LABEL COMMAND [PREPARE]: the median wall time of COMMAND (run by bash in its
# workspace), with PREPARE (not timed) run before each run, then the mean CPU time (user +
# system; `-` without hyperfine). On a shared machine the CPU time is the steadier number.
if [[ -z "${NO_HYPERFINE:-}" ]] && command -v hyperfine >/dev/null; then
    TIMER="hyperfine $(hyperfine --version | cut -d' ' -f2)"
    median_ms() {
        hyperfine --style none --warmup 3 --runs "$RUNS" --export-csv "$WORK/t.csv" \
            --prepare "${3:-true}" --shell bash "$2" >/dev/null 2>&1
        awk -F, 'NR == 2 { printf "%.2f %.2f\n", $4 * 1000, ($5 + $6) * 1000 }' "$WORK/t.csv"
    }
else
    TIMER="bash loop (hyperfine not installed)"
    median_ms() {
        local i t0 t1 times=()
        for ((i = 0; i < 3; i++)); do bash -c "${3:-true}" >/dev/null 2>&1; bash -c "$2" >/dev/null 2>&1; done
        for ((i = 0; i < RUNS; i++)); do
            bash -c "${3:-true}" >/dev/null 2>&1
            t0=$(date +%s%N)
            bash -c "$2" >/dev/null 2>&1
            t1=$(date +%s%N)
            times+=($(((t1 - t0) / 1000)))
        done
        printf '%s\n' "${times[@]}" | sort -n |
            awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f -\n", m / 1000 }'
    }
fi

row() { # case, label, command, cat median, [prepare]; sets LAST_MS
    local ms cpu
    read -r ms cpu < <(median_ms "$2" "$3" "${5:-true}")
    LAST_MS=$ms
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$ms" "$(awk -v a="$ms" -v b="$4" 'BEGIN { printf "%.1fx", a / b }')" "$cpu"
}

bytes() { cat "$@" | wc -c | awk '{ printf "%.1f MB", $1 / 1e6 }'; }

echo "timing ($RUNS runs each)..." >&2
many_files="$MANY/.tasks/2026*/PLAN.md $MANY/.tasks/2026*/TODO.md $MANY/.tasks/2026*/state.yaml"
big_files="$BIG/.tasks/2026*/PLAN.md $BIG/.tasks/2026*/TODO.md $BIG/.tasks/2026*/state.yaml"
read -r cat_many cat_many_cpu < <(median_ms cat "cat $many_files >/dev/null")
read -r cat_big cat_big_cpu < <(median_ms cat "cat $big_files >/dev/null")

echo "## tick status / list against cat"
echo
echo "- tick: \`$("$TICK" --version)\`, release build"
echo "- machine: $(nproc) cores, $(uname -sm), $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo 'cpu unknown')"
echo "- timer: $TIMER, $RUNS runs after 3 warm-ups, medians in milliseconds (each run includes starting a bash); CPU ms: mean user + system time"
# shellcheck disable=SC2086
echo "- (a) $TASKS task folders of 8 steps each, ~90% completed: $(bytes $many_files) in $((TASKS * 3)) files"
# shellcheck disable=SC2086
echo "- (b) one task of $STEPS steps, 70% done: $(bytes $big_files) in 3 files"
echo
echo "| case | command | median ms | vs cat | CPU ms |"
echo "|---|---|---:|---:|---:|"
printf '| (a) %s tasks | `cat` PLAN.md, TODO.md, state.yaml of every task | %s | 1.0x | %s |\n' "$TASKS" "$cat_many" "$cat_many_cpu"
row "(a) $TASKS tasks" '`tick status`' "cd $MANY && $TICK status >/dev/null 2>&1" "$cat_many"
row "(a) $TASKS tasks" '`tick status --json`' "cd $MANY && $TICK status --json >/dev/null 2>&1" "$cat_many"
row "(a) $TASKS tasks" '`tick list`' "cd $MANY && $TICK list >/dev/null 2>&1" "$cat_many"
row "(a) $TASKS tasks" '`tick list --json`' "cd $MANY && $TICK list --json >/dev/null 2>&1" "$cat_many"
printf '| (b) %s steps | `cat` PLAN.md, TODO.md, state.yaml | %s | 1.0x | %s |\n' "$STEPS" "$cat_big" "$cat_big_cpu"
row "(b) $STEPS steps" '`tick status`' "cd $BIG && $TICK status >/dev/null 2>&1" "$cat_big"
status_big=$LAST_MS
row "(b) $STEPS steps" '`tick status --json`' "cd $BIG && $TICK status --json >/dev/null 2>&1" "$cat_big"
row "(b) $STEPS steps" '`tick list`' "cd $BIG && $TICK list >/dev/null 2>&1" "$cat_big"
# One real write each run: the step is set back to pending before each timed `mark`.
mark_step="S$((STEPS * 9 / 10))"
row "(b) $STEPS steps" "\`tick mark $mark_step done\`" "cd $BIG && $TICK mark $mark_step done >/dev/null 2>&1" "$cat_big" \
    "cd $BIG && $TICK mark $mark_step pending >/dev/null 2>&1"
mark_big=$LAST_MS
echo
echo "- (b) \`tick status\` / \`cat\`: $(awk -v a="$status_big" -v b="$cat_big" 'BEGIN { printf "%.1fx", a / b }') (target at most 10x); \`tick mark\` / \`tick status\`: $(awk -v a="$mark_big" -v b="$status_big" 'BEGIN { printf "%.1fx", a / b }') (target at most 2x)"
