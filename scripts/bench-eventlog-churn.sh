#!/usr/bin/env bash
# Figures: peak RSS and wall time of `report`, `export --tables` and `mcp --recording` on
# a Spark event log of executors that come and go (dynamic allocation's churn, or a
# hostile log): N executors each added and removed (exit 137) 40 ms later, one every
# 50 ms of the run, zstd-compressed, built from the real lines of
# tests/fixtures/eventlog/real-spark-k8s. Fails when a command exits non-zero, when the
# skip is not said (past what one log holds), or when one takes 300 MB or more.
# Usage: scripts/bench-eventlog-churn.sh [N] (default 2000000: about 12 MB compressed).
# REASON_BYTES=2048 pads each removal reason to that length (the hostile shape: every
# reason at the converter's cap).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000000}
cargo build --release --quiet
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && cp "$log" "$KEEP"; rm -rf "$dir"' EXIT
log="$dir/churn-$n.zstd"
python3 - "$n" "$log" "${REASON_BYTES:-0}" <<'PY'
import json, glob, subprocess, sys
n, out, pad = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
src = glob.glob("tests/fixtures/eventlog/real-spark-k8s/*/events_1_*")[0]
lines = subprocess.run(["zstd", "-dc", src], capture_output=True, check=True).stdout.decode().splitlines()
ev = [json.loads(l) for l in lines]
head = [l for l, e in zip(lines, ev) if e["Event"] in ("SparkListenerLogStart", "SparkListenerResourceProfileAdded", "SparkListenerEnvironmentUpdate", "SparkListenerApplicationStart")]
added = next(e for e in ev if e["Event"] == "SparkListenerExecutorAdded")
t = next(e for e in ev if e["Event"] == "SparkListenerApplicationStart")["Timestamp"]
p = subprocess.Popen(["zstd", "-q", "-T2", "-3", "-o", out], stdin=subprocess.PIPE)
w = p.stdin
for l in head:
    w.write((l + "\n").encode())
for i in range(1, n + 1):
    t += 50
    w.write((json.dumps(dict(added, **{"Executor ID": str(i), "Timestamp": t}), separators=(",", ":")) + "\n").encode())
    w.write((json.dumps({"Event": "SparkListenerExecutorRemoved", "Timestamp": t + 40, "Executor ID": str(i),
        "Removed Reason": f"The executor with id {i} exited with exit code 137(SIGKILL, possible container OOM).".ljust(pad, "x")},
        separators=(",", ":")) + "\n").encode())
w.write((json.dumps({"Event": "SparkListenerApplicationEnd", "Timestamp": t + 1000, "ExitCode": 1}) + "\n").encode())
w.close()
sys.exit(p.wait())
PY
echo "log: $n executors added and removed, $(du -h "$log" | cut -f1) compressed"
fail=0
measure() { # name, then the command; stdout to $dir/out, stderr to $dir/err
  local name=$1; shift
  if ! /usr/bin/time -f "%e %M" -o "$dir/time" "$@" >"$dir/out" 2>"$dir/err"; then
    echo "$name: exit non-zero"; cat "$dir/err"; fail=1; return
  fi
  read -r secs kib <"$dir/time"
  echo "$name: ${secs} s, peak RSS $((kib / 1024)) MiB"
  grep -h "warning:" "$dir/err" | sed 's/^/  /' | cut -c1-200  || true
  if [ "$kib" -ge $((300 * 1024)) ]; then echo "  over 300 MB"; fail=1; fi
}
measure report target/release/spark-triage report "$log" -o json
python3 - "$dir/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["apps"][0]
nl = a.get("not_listed") or {}
print(f"  executors_seen {a['executors_seen']}, failures_counted {a['failures_counted']}, listed {len(a['failures'])}, counted not listed {nl.get('executors', 0)}")
PY
if [ "$n" -gt 300000 ] && ! grep -q "executors skipped" "$dir/err"; then echo "  the skip is not said"; fail=1; fi
measure "export --tables" target/release/spark-triage export "$log" --tables "$dir/tables" --cluster-name bench
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_apps","arguments":{}}}' >"$dir/in"
measure "mcp --recording (list_apps)" sh -c "target/release/spark-triage mcp --recording '$log' <'$dir/in'"
grep -q '"id":2' "$dir/out" || { echo "  list_apps not answered"; fail=1; }
exit $fail
