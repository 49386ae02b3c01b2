#!/usr/bin/env bash
# Figures: `spark-triage mcp --http` under a flood of `initialize`s (each one asks for a
# session). Serves the shipped `mixed` recording on loopback; a client sends N initializes
# (one connection each), then the server's RSS is read, and read again after a pause.
# Printed: how many were answered 200 and how many refused, the RSS before, after, and
# after the pause. Usage: scripts/bench-mcp-flood.sh [N] (default 20000).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
cargo build --release --quiet
dir=$(mktemp -d)
target/release/spark-triage mcp --http 127.0.0.1:0 --recording tests/fixtures/mixed-session.ndjson \
    2>"$dir/err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do grep -q "serving MCP" "$dir/err" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$dir/err" | head -1)
python3 - "$url" "$n" "$pid" <<'PY'
import http.client, sys, time, urllib.parse
url, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
u = urllib.parse.urlparse(url)
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}'
before = rss()
ok = refused = other = 0
t0 = time.time()
for _ in range(n):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("POST", u.path, body, {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    r = c.getresponse(); r.read(); c.close()
    if r.status == 200: ok += 1
    elif r.status == 503: refused += 1
    else: other += 1
took = time.time() - t0
after = rss()
time.sleep(10)
print(f"{n} initializes in {took:.1f} s: {ok} answered 200, {refused} refused (sessions full), {other} other")
print(f"server RSS: {before} MiB before, {after} MiB after, {rss()} MiB 10 s later")
PY
