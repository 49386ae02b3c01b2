#!/usr/bin/env bash
# Figures: the live view left running on a big cluster with churn. The TUI runs in a real
# pseudo-terminal (tmux, 200x50) against the simulator's `scale` scenario; after a warm-up,
# for SECONDS it measures the tool's CPU (utime+stime from /proc, as % of one core), its RSS
# (max), and the API requests it made per minute (the simulator's request log), by kind.
# With FORGET (the view's --forget-after, default 1h) shorter than SECONDS, it also prints
# the RSS each minute: flat after the first horizon when ended executors are forgotten.
# Usage: scripts/bench-steady.sh [EXECUTORS] [SECONDS] [CHURN_PER_SEC] [FORGET]
#        (default 10000 60 5 1h)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
secs=${2:-60}
churn=${3:-5}
forget=${4:-1h}
command -v tmux >/dev/null || { echo "tmux is needed" >&2; exit 1; }
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
session=bench-steady-$$
target/release/spark-triage sim --scenario scale --apps 1 --executors "$n" --churn "$churn" \
    --listen "127.0.0.1:$port" --kubeconfig-out "$dir/kc" >"$dir/sim.log" 2>&1 &
sim=$!
trap 'tmux kill-session -t "$session" 2>/dev/null; kill $sim 2>/dev/null; rm -rf "$dir"' EXIT
sleep 10
requests() { kubectl --kubeconfig "$dir/kc" get --raw /_sim/requests; }
requests >"$dir/start"
tmux new-session -d -s "$session" -x 200 -y 50 \
    "target/release/spark-triage --kubeconfig $dir/kc -A --no-driver-api --forget-after $forget"
sleep 15 # the first view, then steady state
pid=$(pgrep -f "^target/release/spark-triage --kubeconfig $dir/kc -A" | head -1)
[ -n "$pid" ] || { echo "the live view did not start" >&2; tmux capture-pane -t "$session" -p >&2; exit 1; }
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
requests >"$dir/before"
c0=$(cpu)
t0=$(date +%s.%N)
peak=0
end=$((SECONDS + secs))
minute=0
while [ $SECONDS -lt $end ]; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    if [ $(( (secs - (end - SECONDS)) / 60 )) -gt $minute ]; then
        minute=$((minute + 1))
        echo "  minute $minute: RSS $((rss / 1024)) MiB"
    fi
    sleep 1
done
c1=$(cpu)
t1=$(date +%s.%N)
requests >"$dir/after"
printf 'live view, %s executors, churn %s/s, %s s at 200x50: CPU %.1f %% of one core, peak RSS %d MiB\n' \
    "$n" "$churn" "$secs" "$(echo "($c1 - $c0) / $ticks / ($t1 - $t0) * 100" | bc -l)" $((peak / 1024))
echo "API requests per minute (method, path without query):"
python3 - "$dir/before" "$dir/after" "$secs" <<'PY'
import collections, json, sys
before, after, secs = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
c = collections.Counter()
for r in after[len(before) : -1]:
    uri = r.get("uri", "")
    path = uri.split("?")[0]
    if "/namespaces/" in path and "/pods/" in path:
        what = "one pod's log tail" if path.endswith("/log") else "one pod"
        path = f"/api/v1/namespaces/*/pods/* ({what})"
    kind = " (watch)" if "watch=" in uri else (" (list page)" if "limit=" in uri else "")
    c[(r.get("method", "?"), path + kind)] += 1
for (m, p), n in sorted(c.items(), key=lambda x: -x[1]):
    print(f"  {n * 60 / secs:7.1f}/min  {m} {p}")
PY
# Per-pod evidence reads (log tails, one pod's events) over the whole run, the first view
# included: bounded by src/app/evidence.rs (a few per app and cause per 10 min).
python3 - "$dir/start" "$dir/after" <<'PY'
import json, sys
start, after = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
logs = events = 0
for r in after[len(start) : -1]:
    uri = r.get("uri", "")
    path = uri.split("?")[0]
    logs += path.endswith("/log")
    events += path.endswith("/events") and "involvedObject.name" in uri
print(f"per-pod evidence reads over the whole run: {logs} log tails, {events} event reads")
PY
