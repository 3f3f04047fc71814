#!/usr/bin/env bash
# The goals benchmark of issue 29 (a Python fixture this script makes, acceptance checks written
# per goal, drafts and executions of the model's own drafts, rates over runs) is the sibling
# benches/local-model-goals.sh.
# Benchmark (not a test): five planning goals on a small real crate (tests/fixtures/wordcount),
# each planned by `tick plan` against a model on this machine, by default the llama-server
# that scripts/local-model.sh starts. Per goal it prints whether a valid draft came out
# (exit 0, `tick show` reads it, at least one step; a draft that is the reminders' example
# call submitted as it is gets flagged), whether it is grounded (every file a step names
# exists, or is new in a directory that exists; every verify command's programs are on PATH),
# how many requests the model got (the `request` events of `--json`), the wall time, and the
# prompt, cached and generated tokens (the `draft` event's usage); then the totals.
#
# Usage: scripts/local-model.sh start && benches/local-model.sh
#   TICK_BIN=path/to/tick   use this binary instead of building one (debug build by default)
#   GOAL_TIMEOUT=600        seconds one plan may take before it is stopped (counts as failed)
#   GOALS=1,3               run only these goals
#   BENCH_OUT=dir           keep each goal's stdout, stderr and workspace there (default: a
#                           new dir under /tmp, printed at the end)
#   TICK_BASE_URL, TICK_MODEL, TICK_PROVIDER  another server (default: local-model.sh env)
#   PLANNER=agent|compact|auto  the planner (default: tick's default for the provider, which
#                           is `auto` for llamacpp: compact on a context under 32k tokens)
#   BUILD=0                 skip the build benchmark (GOALS=none skips the planning goals)
#   EXECUTOR=agent|compact|auto  how `tick run` executes (default: the planner's setting)
#   BUILD_TIMEOUT=1800      seconds the build benchmark's `tick run` may take
#   BUILD_PLAN=file         run this plan (`tick plan --from`) instead of the model's draft;
#                           benches/build-plan.md is a reviewed two-step plan for the goal
#
# The build benchmark: on a fresh copy of the fixture (with its Cargo.lock committed), plan
# BUILD_GOAL with the same model, approve the draft as it is, `tick run --json` it, and report
# each step's outcome and seconds, then whether the crate's own `cargo test` still passes.
# Inference runs at the server's niceness; tick itself runs under `nice -n 19`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIXTURE="$ROOT/tests/fixtures/wordcount"
GOAL_TIMEOUT=${GOAL_TIMEOUT:-600}

GOAL_TEXT=(
    "Add a --version flag to wordcount that prints the package name and version from Cargo.toml"
    "Add unit tests for format_counts in src/lib.rs, covering each selection and the file name"
    "Rename the function count to count_text everywhere in the crate"
    "Document every public item of src/lib.rs with doc comments and describe the flags in README.md"
    "Fix the bug: printf 'one\\ntwo\\n' | wordcount -w prints 1 instead of 2, and two spaces in a row count as an extra word"
)

PROVIDER=${TICK_PROVIDER:-llamacpp}
PLANNER=${PLANNER:-}
if [[ -z "${TICK_BASE_URL:-}" || -z "${TICK_MODEL:-}" ]]; then
    eval "$("$ROOT/scripts/local-model.sh" env)"
fi
BASE_URL=$TICK_BASE_URL
MODEL=$TICK_MODEL

health="${BASE_URL%/v1}/health"
if ! curl -fsS --max-time 5 "$health" >/dev/null 2>&1; then
    echo "error: no model server answers at $health" >&2
    echo "  hint: start one with: scripts/local-model.sh start" >&2
    exit 1
fi

TICK="${TICK_BIN:-}"
if [[ -z "$TICK" ]]; then
    echo "building tick..." >&2
    nice -n 19 cargo build --locked --quiet --manifest-path "$ROOT/Cargo.toml"
    TICK="${CARGO_TARGET_DIR:-$ROOT/target}/debug/tick"
fi
TICK=$(cd "$(dirname "$TICK")" && pwd)/$(basename "$TICK")
[[ -x "$TICK" ]] || { echo "error: no tick binary at \`$TICK\`" >&2; exit 1; }

# HOME is each workspace's own; cargo and rustup keep finding the person's toolchain.
RUSTUP_HOME_REAL=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME_REAL=${CARGO_HOME:-$HOME/.cargo}
EXECUTOR=${EXECUTOR:-}
BUILD_GOAL="Add unit tests for format_counts in src/lib.rs, covering each selection and the file name"
BUILD_TIMEOUT=${BUILD_TIMEOUT:-1800}

OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tick-local-bench.XXXXXX")}
mkdir -p "$OUT"

# None of the caller's TICK_* settings or config files reach the runs.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TICK_' || true)
export NO_COLOR=1 TICK_INTERACTIVE=0

run_tick() { # $1 workspace, then tick's arguments
    local dir=$1
    shift
    # CARGO_TARGET_DIR (where tick itself was built) would send the fixture's builds there.
    # RUST_BACKTRACE=1 (set on this machine) filled the 30 lines of a failed test the model is
    # shown with a backtrace, hiding the assertion's left and right values.
    (cd "$dir" && env -u CARGO_TARGET_DIR -u RUST_BACKTRACE HOME="$dir/.home" TICK_PROVIDER="$PROVIDER" TICK_BASE_URL="$BASE_URL" \
        TICK_MODEL="$MODEL" ${PLANNER:+TICK_PLANNER=$PLANNER} ${EXECUTOR:+TICK_EXECUTOR=$EXECUTOR} \
        RUSTUP_HOME="$RUSTUP_HOME_REAL" CARGO_HOME="$CARGO_HOME_REAL" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
        GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com "$@")
}

selected() { # $1 goal number
    [[ -z "${GOALS:-}" ]] && return 0
    [[ $GOALS == none ]] && return 1
    [[ ",$GOALS," == *",$1,"* ]]
}

echo "tick:   $("$TICK" --version) ($TICK)"
echo "server: $BASE_URL, model $MODEL ($PROVIDER)"
echo "limit:  $GOAL_TIMEOUT s per goal; planner: ${PLANNER:-the default for the provider}"
echo
printf '%-4s %-6s %-8s %5s %7s %7s %7s %7s  %s\n' goal draft grounded turns seconds prompt cached output "result"

# Whether the draft in $1 (a workspace) is grounded: prints `yes`, or `no: <first problem>`.
grounded() {
    python3 - "$1" <<'PY'
import os, re, shlex, shutil, sys
root = sys.argv[1]
plan = open(os.path.join(root, ".tasks/draft/PLAN.md"), encoding="utf-8").read()
problems = []
for line in plan.splitlines():
    m = re.match(r"\s+- files: (.*)$", line)
    if m:
        for path in [p.strip() for p in m.group(1).split(",") if p.strip()]:
            full = os.path.join(root, path)
            if not os.path.exists(full) and not os.path.isdir(os.path.dirname(full) or root):
                problems.append(f"`{path}` does not exist, nor its directory")
    m = re.match(r"\s+- verify: `(.*)`$", line)
    if m:
        try:
            words = shlex.split(m.group(1))
        except ValueError:
            problems.append(f"verify `{m.group(1)}` is not a command")
            continue
        command, start = [], True
        for word in words + ["&&"]:
            if word in ("&&", "||", "|", ";"):
                start = True
                continue
            if start and "=" not in word:
                start = False
                if word not in ("cd", "echo", "printf", "test", "[", "true") and shutil.which(word) is None \
                        and not os.path.exists(os.path.join(root, word)):
                    problems.append(f"verify runs `{word}`, not on PATH")
print("yes" if not problems else "no: " + problems[0])
PY
}

valid=0
groundedn=0
copied=0
ran=0
for i in "${!GOAL_TEXT[@]}"; do
    n=$((i + 1))
    selected "$n" || continue
    ran=$((ran + 1))
    goal=${GOAL_TEXT[$i]}
    dir="$OUT/goal$n"
    rm -rf "$dir"
    mkdir -p "$dir/.home"
    cp -R "$FIXTURE/." "$dir/"
    printf '.home/\ntarget/\n' >"$dir/.gitignore"
    git -C "$dir" init -q
    git -C "$dir" add .
    run_tick "$dir" git commit -q -m "wordcount 0.3.1"

    started=$(date +%s.%N)
    set +e
    run_tick "$dir" timeout --signal=INT --kill-after=10 "$GOAL_TIMEOUT" \
        nice -n 19 "$TICK" plan --json "$goal" >"$OUT/goal$n.jsonl" 2>"$OUT/goal$n.stderr"
    code=$?
    set -e
    seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    turns=$(grep -c '"event":"request"' "$OUT/goal$n.jsonl" || true)
    read -r prompt cached output < <(python3 -c '
import json, sys
usage = {}
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("event") in ("usage", "draft") and "usage" in event:
        usage = event["usage"]
print(usage.get("input_tokens", "-"), usage.get("cached_tokens", "-"), usage.get("output_tokens", "-"))
' "$OUT/goal$n.jsonl")

    draft=no
    steps=0
    if [[ $code == 0 && -f "$dir/.tasks/draft/PLAN.md" ]]; then
        steps=$(grep -cE '^[[:space:]]*- \[[ x~!-]\] S[0-9]' "$dir/.tasks/draft/PLAN.md" || true)
        if run_tick "$dir" "$TICK" show >"$OUT/goal$n.show" 2>&1 && ((steps >= 1)); then
            draft=yes
            valid=$((valid + 1))
        fi
    fi
    ground=-
    if [[ $draft == yes ]]; then
        ground=$(grounded "$dir")
        if [[ $ground == yes ]]; then
            groundedn=$((groundedn + 1))
        else
            echo "goal $n: not grounded: ${ground#no: }" >>"$OUT/grounding.txt"
            ground=no
        fi
        title=$(sed -n 's/^title: //p' "$dir/.tasks/draft/PLAN.md" | head -n1)
        result="$steps steps: $title"
        # The reminders show a minimal valid call; a small model may submit it as it is.
        if [[ $title == "Short title" ]] && grep -q '^- \[ \] S1 First step$' "$dir/.tasks/draft/PLAN.md"; then
            copied=$((copied + 1))
            result="$result (the reminder's example call, copied)"
        fi
    elif [[ $code == 124 || $code == 130 ]]; then
        result="stopped after $GOAL_TIMEOUT s"
    elif [[ $code == 0 ]]; then
        result="exit 0 but no draft with steps"
    else
        result="exit $code: $(grep -m1 '^error' "$OUT/goal$n.stderr" || tail -n1 "$OUT/goal$n.stderr")"
    fi
    printf '%-4s %-6s %-8s %5s %7s %7s %7s %7s  %s\n' "$n" "$draft" "$ground" "$turns" "$seconds" \
        "$prompt" "$cached" "$output" "${result:0:90}"
done
echo
echo "valid drafts: $valid of $ran ($copied of them the reminder's example copied); grounded: $groundedn"
[[ -f "$OUT/grounding.txt" ]] && cat "$OUT/grounding.txt"
echo "logs and workspaces: $OUT"

[[ ${BUILD:-1} == 0 ]] && exit 0

# The build benchmark.
echo
if [[ -n "${BUILD_PLAN:-}" ]]; then
    BUILD_PLAN=$(cd "$(dirname "$BUILD_PLAN")" && pwd)/$(basename "$BUILD_PLAN")
    echo "build: the plan in $BUILD_PLAN, approved, tick run (limit $BUILD_TIMEOUT s)"
else
    echo "build: plan \"$BUILD_GOAL\", approve the draft, tick run (limit $BUILD_TIMEOUT s)"
fi
dir="$OUT/build"
rm -rf "$dir"
mkdir -p "$dir/.home"
cp -R "$FIXTURE/." "$dir/"
printf '.home/\ntarget/\n' >"$dir/.gitignore"
run_tick "$dir" cargo generate-lockfile --offline --quiet
git -C "$dir" init -q
git -C "$dir" add .
run_tick "$dir" git commit -q -m "wordcount 0.3.1"
started=$(date +%s)
set +e
if [[ -n "${BUILD_PLAN:-}" ]]; then
    run_tick "$dir" "$TICK" plan --from "$BUILD_PLAN" >"$OUT/build-plan.jsonl" 2>"$OUT/build-plan.stderr"
else
    run_tick "$dir" timeout --signal=INT --kill-after=10 "$GOAL_TIMEOUT" \
        nice -n 19 "$TICK" plan --json "$BUILD_GOAL" >"$OUT/build-plan.jsonl" 2>"$OUT/build-plan.stderr"
fi
code=$?
set -e
echo "plan: exit $code in $(($(date +%s) - started)) s"
if [[ $code != 0 ]]; then
    echo "no draft to run: $(grep -m1 '^error' "$OUT/build-plan.stderr" || tail -n1 "$OUT/build-plan.stderr")"
    exit 0
fi
sed -n '/^## Steps/,$p' "$dir/.tasks/draft/PLAN.md" | sed 's/^/  /'
run_tick "$dir" "$TICK" approve >"$OUT/build-approve.txt" 2>&1
started=$(date +%s)
set +e
# Each event line with the second it arrived, for the steps' times.
run_tick "$dir" timeout --signal=INT --kill-after=10 "$BUILD_TIMEOUT" \
    nice -n 19 "$TICK" run --json 2>"$OUT/build-run.stderr" |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$OUT/build-run.jsonl"
code=${PIPESTATUS[0]}
set -e
echo "run: exit $code in $(($(date +%s) - started)) s"
python3 - "$OUT/build-run.jsonl" "$started" <<'PY'
import json, sys
steps, order, started = {}, [], float(sys.argv[2])
requests = 0
for line in open(sys.argv[1], encoding="utf-8"):
    at, _, text = line.partition(" ")
    try:
        event = json.loads(text)
    except ValueError:
        continue
    kind, at = event.get("event"), float(at)
    step = event.get("step")
    if kind == "step_started":
        steps[step] = {"title": event.get("title", ""), "start": at, "checks": [], "requests": 0,
                       "refused": 0, "outcome": "did not end"}
        order.append(step)
    elif step in steps:
        s = steps[step]
        agent = event.get("agent") or {}
        if kind == "agent" and agent.get("kind", agent.get("event")) == "request":
            s["requests"] += 1
        if kind == "agent" and agent.get("kind", agent.get("event")) == "reminder":
            s["refused"] += 1
        if kind == "verification":
            s["checks"].append(f"`{event['command']}` {'pass' if event['passed'] else 'fail'} {event['duration_ms'] / 1000:.0f} s")
        if kind == "step_done":
            s["outcome"], s["end"] = ("verified" if event.get("verified") else "done, unverified"), at
        if kind == "step_blocked":
            s["outcome"], s["end"] = "blocked: " + (event.get("reason") or "")[:120], at
print(f"{'step':<5} {'seconds':>7} {'requests':>8} {'refused':>7}  outcome; checks; title")
verified = 0
for step in order:
    s = steps[step]
    seconds = s.get("end", s["start"]) - s["start"]
    verified += s["outcome"] == "verified"
    print(f"{step:<5} {seconds:>7.0f} {s['requests']:>8} {s['refused']:>7}  {s['outcome']}; {', '.join(s['checks']) or '-'}; {s['title']}")
print(f"steps verified: {verified} of {len(order)} run")
PY
set +e
(cd "$dir" && unset CARGO_TARGET_DIR && RUSTUP_HOME="$RUSTUP_HOME_REAL" CARGO_HOME="$CARGO_HOME_REAL" HOME="$dir/.home" \
    nice -n 19 cargo test --offline --quiet >"$OUT/build-cargo-test.txt" 2>&1)
code=$?
set -e
echo "the crate's tests after the run (cargo test): $([[ $code == 0 ]] && echo pass || echo "FAIL (exit $code)"); $(grep -E '^test result' "$OUT/build-cargo-test.txt" | head -n1)"
git -C "$dir" diff --stat | tail -n1
echo "build logs: $OUT/build-*, workspace $dir"
