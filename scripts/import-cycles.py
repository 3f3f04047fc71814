#!/usr/bin/env python3
"""Import cycles between tick's source files: every `crate::a::b` path in a file (a `use`
line or inline, tests excluded) is an arrow to the file that defines module `a::b` (or the
nearest enclosing module file). Prints each strongly connected group of more than one file;
run from the repository root: `python3 scripts/import-cycles.py`."""
import os, re, sys

SRC = "src"
files = {}
for dirpath, _, names in os.walk(SRC):
    for name in names:
        if name.endswith(".rs"):
            path = os.path.join(dirpath, name)
            text = open(path, encoding="utf-8").read()
            # Unit tests sit beside the code; their imports are not the code's.
            cut = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod tests", text, re.M)
            files[path] = text[: cut.start()] if cut else text

def module_file(parts):
    """The file that defines module path `parts` (the longest prefix that is a file)."""
    for n in range(len(parts), 0, -1):
        base = os.path.join(SRC, *parts[:n])
        for candidate in (base + ".rs", os.path.join(base, "mod.rs")):
            if candidate in files:
                return candidate
    return None

def module_of(path):
    """The module path of file `path`: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`."""
    rel = os.path.relpath(path, SRC).removesuffix(".rs").split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    return [] if rel in (["lib"], ["main"]) else rel

edges = {path: set() for path in files}
for path, text in files.items():
    parent = module_of(path)[:-1]
    for line in text.splitlines():
        if line.lstrip().startswith("//"):
            continue
        # `super::x` is `crate::<parent>::x`.
        line = re.sub(r"\bsuper::", "crate::" + "".join(p + "::" for p in parent), line)
        for match in re.finditer(r"crate::((?:\w+::)*\w+)", line):
            target = module_file(match.group(1).split("::"))
            if target and target != path:
                edges[path].add(target)
        # `use crate::a::{b, c::d}`: the grouped names too.
        group = re.match(r"\s*(?:pub(?:\([^)]*\))? )?use crate::((?:\w+::)*)\{(.*)\};?", line)
        if group:
            prefix = [p for p in group.group(1).split("::") if p]
            for item in re.split(r"[,{}]", group.group(2)):
                item = item.strip().split(" as ")[0]
                if item and item not in ("self", "*"):
                    target = module_file(prefix + item.split("::"))
                    if target and target != path:
                        edges[path].add(target)

# Tarjan's strongly connected components.
index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop(); on.discard(w); group.append(w)
            if w == v:
                break
        if len(group) > 1:
            groups.append(sorted(group))
for v in sorted(files):
    if v not in index:
        visit(v)

def folder(path):
    rel = os.path.relpath(path, SRC)
    return rel.split(os.sep)[0].removesuffix(".rs")

for group in sorted(groups, key=len, reverse=True):
    crosses = len({folder(p) for p in group}) > 1
    print(f"{len(group)} files{' (crosses folders)' if crosses else ''}: {' '.join(group)}")
print(f"{len(groups)} cycles")

if "--arrows" in sys.argv:
    for group in groups:
        members = set(group)
        for v in group:
            for w in sorted(edges[v] & members):
                print(f"  {v} -> {w}")

# The floors of docs/architecture.md, top (7) to bottom (1), by a file's top-level module.
FLOORS = {
    **dict.fromkeys(["main", "lib", "commands", "tui"], 7),
    "ui": 6,
    "engine": 5,
    **dict.fromkeys(["runner", "planning", "report"], 4),
    **dict.fromkeys(["compact", "agent", "cli"], 3),
    **dict.fromkeys(["watch", "config", "person", "tools", "sandbox", "editor", "tasks",
                     "pager", "hooks", "trust", "import", "undo", "local_model", "mcp",
                     "user_error"], 2),
    **dict.fromkeys(["fsx", "env", "rt", "error", "transcript", "plan", "llm", "git",
                     "redact", "store_path", "text", "hook_entry", "tls"], 1),
}

# Files that stand on another floor than their folder: `tick mcp serve` is a use case over
# the runner and the reports, while the rest of `mcp/` is the client the tools stand on.
FILE_FLOORS = {os.path.join("mcp", "serve.rs"): 4}

if "--up" in sys.argv:
    # An arrow is a file (tests excluded) naming a room on a higher floor than its own, in a
    # `use crate::…` line or inline (`crate::room::…`); counted once per file and room.
    up = []
    for path, text in sorted(files.items()):
        mine = FILE_FLOORS.get(os.path.relpath(path, SRC), FLOORS.get(folder(path), 0))
        seen = set()
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for match in re.finditer(r"crate::(\w+)", line):
                room = match.group(1)
                if FLOORS.get(room, 0) > mine and room not in seen:
                    seen.add(room)
                    up.append(f"{path}:{number}: -> {room}")
    print("\n".join(up))
    print(f"{len(up)} imports point up")
