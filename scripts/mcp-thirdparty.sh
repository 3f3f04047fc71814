#!/usr/bin/env bash
# tick against a third-party MCP server (not part of `cargo test`: it needs the npm registry):
# the reference filesystem server, `@modelcontextprotocol/server-filesystem`, installed into a
# temporary directory and configured as a stdio server. `tick mcp list` starts it inside the
# read-only sandbox and lists its tools; only the two named in `read_only_tools` may be used
# while planning, whatever the server's `readOnlyHint`s say; `tick doctor` reports it.
# Usage: scripts/mcp-thirdparty.sh [TICK]   (default: target/debug/tick)
set -euo pipefail
TICK=$(realpath "${1:-target/debug/tick}")
command -v npm >/dev/null || { echo "error: npm is needed" >&2; exit 2; }
root=$(mktemp -d /var/tmp/tick-mcp-thirdparty-XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/npm" "$root/home/.config/tick" "$root/work"
npm install --silent --prefix "$root/npm" @modelcontextprotocol/server-filesystem >/dev/null
entry="$root/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
[ -f "$entry" ] || { echo "error: the package has no dist/index.js" >&2; exit 1; }
git -C "$root/work" init -q
echo "hello" >"$root/work/notes.txt"
cat >"$root/home/.config/tick/config.yaml" <<EOF
mcp_servers:
  fs:
    command: node
    args: ["$entry", "$root/work"]
    read_only_tools: [list_directory, read_text_file]
    startup_timeout_s: 20
EOF
export HOME="$root/home" TICK_LOCAL_SERVERS=none NO_COLOR=1
cd "$root/work"
out=$("$TICK" mcp list)
echo "$out"
fail() { echo "error: $1" >&2; exit 1; }
grep -Eq '^  list_directory +plan, steps' <<<"$out" || fail "list_directory is not offered for planning"
grep -Eq '^  read_text_file +plan, steps' <<<"$out" || fail "read_text_file is not offered for planning"
grep -Eq '^  write_file +steps' <<<"$out" || fail "write_file must be for steps only"
"$TICK" doctor | grep -E '^.*mcp' || true
echo "ok: the filesystem server started in the sandbox; planning gets only the tools named read-only"
