#!/usr/bin/env bash
# MCP start-up cost (not a test): the time from starting `tick plan` to the first request the
# model server receives, with no MCP servers configured and with three stdio servers (each
# named read-only for one tool, so planning starts all three inside the read-only sandbox).
# The model is a loopback HTTP server that records the moment of the first request and
# answers 500 (tick is then stopped); the MCP servers are a minimal MCP server in Python.
# Usage: benches/mcp-startup.sh TICK   (RUNS=10)
set -euo pipefail
TICK=${1:?usage: mcp-startup.sh TICK}
RUNS=${RUNS:-10}
export TICK RUNS
exec python3 - <<'PY'
import http.server, json, os, signal, statistics, subprocess, tempfile, threading, time

tick, runs = os.path.abspath(os.environ["TICK"]), int(os.environ["RUNS"])
root = tempfile.mkdtemp(prefix="tick-mcp-bench-", dir="/var/tmp")
home = os.path.join(root, "home")
work = os.path.join(root, "work")
os.makedirs(os.path.join(home, ".config", "tick"))
os.makedirs(work)
subprocess.run(["git", "init", "-q"], cwd=work, check=True)
with open(os.path.join(work, "README.md"), "w") as f:
    f.write("# bench\n")

server = os.path.join(root, "mcp_server.py")
with open(server, "w") as f:
    f.write('''import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    sys.stdout.flush()
''')

first = {}
class Model(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        first.setdefault("at", time.monotonic())
        self.send_response(500)
        self.end_headers()
    def log_message(self, *args):
        pass
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"

def config(servers):
    text = "limits:\n  max_retries: 0\n"
    if servers:
        text += "mcp_servers:\n"
        for i in range(servers):
            text += f"  s{i}:\n    command: python3\n    args: [{server!r}]\n    read_only_tools: [search]\n"
    with open(os.path.join(home, ".config", "tick", "config.yaml"), "w") as f:
        f.write(text)

def once():
    first.clear()
    env = {"PATH": os.environ["PATH"], "HOME": home, "TICK_PROVIDER": "openai",
           "TICK_BASE_URL": url, "TICK_MODEL": "m", "TICK_LOCAL_SERVERS": "none",
           "TICK_INTERACTIVE": "0", "NO_COLOR": "1"}
    begun = time.monotonic()
    proc = subprocess.Popen([tick, "plan", "bench"], cwd=work, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while "at" not in first and proc.poll() is None and time.monotonic() - begun < 30:
        time.sleep(0.002)
    took = first.get("at", float("nan")) - begun
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    subprocess.run(["rm", "-rf", os.path.join(work, ".tasks")], check=True)
    return took * 1000

results = {}
for servers in (0, 3):
    config(servers)
    once()  # warm the page cache
    results[servers] = [once() for _ in range(runs)]
for servers, times in results.items():
    print(f"{servers} stdio MCP servers: median {statistics.median(times):.0f} ms, "
          f"min {min(times):.0f} ms, max {max(times):.0f} ms over {runs} runs")
PY
