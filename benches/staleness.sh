#!/usr/bin/env bash
# Staleness benchmark (not a test). Measures, with the binary in $TICK_BIN:
#   1. detection latency: from an out-of-band edit to `[~]` in TODO.md while `tick watch`
#      runs (median and p95 over $EDITS edits);
#   2. the start-up check: `tick status` on a task whose done step has 1,000 fingerprinted
#      files, against the same task with nothing done and against `cat` of the same files.
# Usage: benches/staleness.sh   (TICK_BIN=path/to/tick EDITS=100 FILES=1000 RUNS=20)
set -euo pipefail
TICK_BIN=${TICK_BIN:-${CARGO_TARGET_DIR:-target}/release/tick}
EDITS=${EDITS:-100} FILES=${FILES:-1000} RUNS=${RUNS:-20}
export TICK_BIN EDITS FILES RUNS
exec python3 - <<'PY'
import os, statistics, subprocess, tempfile, time

tick = os.path.abspath(os.environ["TICK_BIN"])
edits, files, runs = (int(os.environ[k]) for k in ("EDITS", "FILES", "RUNS"))
env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
       "NO_COLOR": "1", "TICK_INTERACTIVE": "0"}

def sh(args, cwd, **kw):
    return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, **kw)

def project(files_pattern, setup):
    root = tempfile.mkdtemp(prefix="tick-bench-")
    setup(root)
    plan = f"""---
title: Bench
goal: Bench
---
# Bench

## Summary

Bench.

## Steps

- [ ] S1 Work
  - files: {files_pattern}
- [ ] S2 Other
"""
    open(os.path.join(root, "plan.md"), "w").write(plan)
    sh(["git", "init", "-q"], root)
    sh([tick, "plan", "--from", "plan.md"], root)
    sh([tick, "approve"], root)
    task = [d for d in os.listdir(os.path.join(root, ".tasks")) if d[0].isdigit()][0]
    return root, os.path.join(root, ".tasks", task, "TODO.md")

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]

# 1. Latency with `tick watch` running.
def one_file(root):
    os.makedirs(os.path.join(root, "src"))
    open(os.path.join(root, "src/login.rs"), "w").write("fn login() {}\n")
root, todo = project("src/login.rs", one_file)
sh([tick, "mark", "S1", "done"], root)
watch = subprocess.Popen([tick, "watch"], cwd=root, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
for line in watch.stderr:
    if line.startswith("watching "):
        break
latencies = []
try:
    for i in range(edits):
        sh([tick, "mark", "S1", "done"], root)
        time.sleep(0.3)  # let the watcher settle on the re-tick
        start = time.perf_counter()
        with open(os.path.join(root, "src/login.rs"), "w") as f:
            f.write(f"fn login() {{ /* edit {i} */ }}\n")
        while "- [~] S1" not in open(todo).read():
            if time.perf_counter() - start > 5:
                raise SystemExit(f"edit {i}: not marked within 5 s")
            time.sleep(0.001)
        latencies.append((time.perf_counter() - start) * 1000)
finally:
    watch.terminate()
    watch.wait()
print(f"latency edit -> [~] over {edits} edits: median {statistics.median(latencies):.0f} ms, "
      f"p95 {pct(latencies, 95):.0f} ms, max {max(latencies):.0f} ms")

# 2. Start-up check with many fingerprinted files.
def many_files(root):
    gen = os.path.join(root, "src/gen")
    os.makedirs(gen)
    for i in range(files):
        open(os.path.join(gen, f"f{i:04}.rs"), "w").write(f"// file {i}\n" + "x" * 4000 + "\n")
root, todo = project("src/gen/**", many_files)

def timed(args, shell=False):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, cwd=root, env=env, check=True, shell=shell,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)

baseline = timed([tick, "status"])
start = time.perf_counter()
sh([tick, "mark", "S1", "done"], root)
mark = (time.perf_counter() - start) * 1000
checked = timed([tick, "status"])
cat = timed("cat src/gen/* > /dev/null", shell=True)
print(f"start-up check, {files} fingerprinted files (~4 KB each), median of {runs}:")
print(f"  tick status, nothing done:        {baseline:.1f} ms")
print(f"  tick status, {files} files checked: {checked:.1f} ms  (+{checked - baseline:.1f} ms)")
print(f"  cat of the same files:            {cat:.1f} ms")
print(f"  tick mark S1 done (fingerprints {files} files, once): {mark:.1f} ms")
PY
