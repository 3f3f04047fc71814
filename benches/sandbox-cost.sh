#!/usr/bin/env bash
# Sandbox cost benchmark (not a test): the time one sandboxed `bash -c true` takes, per
# policy, for two tick binaries side by side (runs interleaved, so both see the same load),
# against `bash -c true` alone. Issue 25 added mounts (a tmpfs on /run, /tmp for read-only,
# the home's agent directories, each submodule's `.git`); this says what they cost.
# Usage: benches/sandbox-cost.sh OLD_TICK NEW_TICK   (RUNS=40 SUBMODULES=0)
# The workspace is a fresh git repository under $TMPDIR-free /var/tmp (not /tmp, which the
# sandbox replaces), with SUBMODULES gitlinks and a `lib/.git` file each.
set -euo pipefail
OLD=${1:?usage: sandbox-cost.sh OLD_TICK NEW_TICK} NEW=${2:?usage: sandbox-cost.sh OLD_TICK NEW_TICK}
RUNS=${RUNS:-40} SUBMODULES=${SUBMODULES:-0}
export OLD NEW RUNS SUBMODULES
exec python3 - <<'PY'
import json, os, statistics, subprocess, tempfile, time

old, new = (os.path.abspath(os.environ[k]) for k in ("OLD", "NEW"))
runs, subs = int(os.environ["RUNS"]), int(os.environ["SUBMODULES"])
root = tempfile.mkdtemp(prefix="tick-sandbox-bench-", dir="/var/tmp")
env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)
git("init", "-q")
os.makedirs(os.path.join(root, ".tasks"))
sha = "0123456789abcdef0123456789abcdef01234567"
for i in range(subs):
    path = f"lib{i}"
    os.makedirs(os.path.join(root, path))
    with open(os.path.join(root, path, ".git"), "w") as f:
        f.write(f"gitdir: ../.git/modules/{path}\n")
    git("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")

def policy(kind):
    if kind == "build":
        return {"kind": "build", "workspace": root, "network": False, "writable": []}
    return {"kind": "read-only", "workspace": root, "network": False, "writable": []}

def once(argv):
    start = time.perf_counter()
    subprocess.run(argv, cwd=root, env=env, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000

cases = {"plain": ["bash", "-c", "true"]}
for name, binary in (("old", old), ("new", new)):
    for kind in ("build", "read-only"):
        cases[f"{name} {kind}"] = [binary, "__sandbox", json.dumps(policy(kind)), "--",
                                   "/bin/bash", "-c", "true"]
for argv in cases.values():
    once(argv)  # warm the page cache
times = {case: [] for case in cases}
for _ in range(runs):
    for case, argv in cases.items():
        times[case].append(once(argv))
load = os.getloadavg()[0]
print(f"{runs} runs each, {subs} submodules, load average {load:.1f}")
for case, ms in times.items():
    print(f"{case:16} median {statistics.median(ms):6.1f} ms   p90 "
          f"{sorted(ms)[int(len(ms) * 0.9) - 1]:6.1f} ms")
for kind in ("build", "read-only"):
    delta = statistics.median(times[f"new {kind}"]) - statistics.median(times[f"old {kind}"])
    print(f"new - old ({kind}): {delta:+.1f} ms")
subprocess.run(["rm", "-rf", root])
PY
