#!/usr/bin/env bash
# Figures: the live view left running on a big cluster with churn. The TUI runs in a real
# pseudo-terminal (tmux, 200x50) against the simulator's `scale` scenario; after a warm-up,
# for SECONDS it measures the tool's CPU (utime+stime from /proc, as % of one core), its RSS
# (max), and the API requests it made per minute (the simulator's request log), by kind.
# With FORGET (the view's --forget-after, default 1h) shorter than SECONDS, it also prints
# the RSS each minute: flat after the first horizon when ended executors are forgotten.
# Usage: scripts/bench-steady.sh [EXECUTORS] [SECONDS] [CHURN_PER_SEC] [FORGET]
#        (default 10000 60 5 1h)
# APPS=100 spreads the executors over that many apps (default 1); DRIVER_API=1 reads the
# drivers' REST API too (the default view; without it, --no-driver-api); WARMUP is the seconds
# given to the first view before measuring (default 15; more at 100,000). At the end it prints
# what Spark's own drivers cost the same API server: one LIST of their executors per driver per
# 30 s (spark.kubernetes.executor.apiPollingInterval), measured on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
secs=${2:-60}
churn=${3:-5}
forget=${4:-1h}
apps=${APPS:-1}
per=$((n / apps))
warmup=${WARMUP:-15}
driver_flag=--no-driver-api
[ "${DRIVER_API:-0}" = 1 ] && driver_flag=
command -v tmux >/dev/null || { echo "tmux is needed" >&2; exit 1; }
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
session=bench-steady-$$
target/release/spark-triage sim --scenario scale --apps "$apps" --executors "$per" --churn "$churn" \
    --listen "127.0.0.1:$port" --kubeconfig-out "$dir/kc" >"$dir/sim.log" 2>&1 &
sim=$!
trap 'tmux kill-session -t "$session" 2>/dev/null; kill $sim 2>/dev/null; rm -rf "$dir"' EXIT
SIM_PID=$sim scripts/sim-wait.sh "$dir/kc" $((apps * per + apps))
requests() { kubectl --kubeconfig "$dir/kc" get --raw /_sim/requests; }
ms_start=$(date +%s%3N)
tmux new-session -d -s "$session" -x 200 -y 50 \
    "target/release/spark-triage --kubeconfig $dir/kc -A $driver_flag --forget-after $forget"
sleep "$warmup" # the first view, then steady state
pid=$(pgrep -f "^target/release/spark-triage --kubeconfig $dir/kc -A" | head -1)
[ -n "$pid" ] || { echo "the live view did not start" >&2; tmux capture-pane -t "$session" -p >&2; exit 1; }
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
c0=$(cpu)
t0=$(date +%s.%N)
ms0=$(date +%s%3N)
peak=0
first=0
end=$((SECONDS + secs))
minute=0
while [ $SECONDS -lt $end ]; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    if [ $(( (secs - (end - SECONDS) + 1) / 60 )) -gt $minute ]; then
        minute=$((minute + 1))
        echo "  minute $minute: RSS $((rss / 1024)) MiB"
        [ $minute = 1 ] && first=$rss
    fi
    sleep 1
done
c1=$(cpu)
t1=$(date +%s.%N)
ms1=$(date +%s%3N)
last=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
requests >"$dir/after"
printf 'live view, %s apps × %s executors, churn %s/s, %s s at 200x50: CPU %.1f %% of one core, peak RSS %d MiB\n' \
    "$apps" "$per" "$churn" "$secs" "$(echo "($c1 - $c0) / $ticks / ($t1 - $t0) * 100" | bc -l)" $((peak / 1024))
[ "$first" -gt 0 ] && printf 'RSS at the end %d MiB against %d MiB at minute 1: %+.1f %%\n' \
    $((last / 1024)) $((first / 1024)) "$(echo "($last - $first) * 100 / $first" | bc -l)"
echo "API requests per minute (method, path without query; bytes of whole answers):"
python3 - "$dir/after" "$secs" "$ms0" "$ms1" <<'PY'
import collections, json, re, sys
after, secs, ms0, ms1 = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
c = collections.Counter()
b = collections.Counter()
for r in after:
    if not ms0 <= r.get("at_ms", 0) < ms1 or r.get("uri", "").startswith("/_sim/"):
        continue
    uri = r.get("uri", "")
    path = uri.split("?")[0]
    if "/namespaces/" in path and "/pods/" in path:
        what = "one pod's log tail" if path.endswith("/log") else "one pod"
        path = f"/api/v1/namespaces/*/pods/* ({what})"
    elif "/proxy/" in path:
        # A driver's REST API through its service: one line per endpoint, not per driver.
        path = "/api/v1/namespaces/*/services/*/proxy" + re.sub(r"/applications/[^/]+", "/applications/*", path.split("/proxy", 1)[1])
    kind = " (watch)" if "watch=" in uri else (" (list page)" if "limit=" in uri else "")
    c[(r.get("method", "?"), path + kind)] += 1
    b[(r.get("method", "?"), path + kind)] += r.get("bytes") or 0
for (m, p), n in sorted(c.items(), key=lambda x: -x[1]):
    mb = b[(m, p)] * 60 / secs / 1e6
    print(f"  {n * 60 / secs:7.1f}/min  {mb:8.2f} MB/min  {m} {p}")
total = sum(b.values()) * 60 / secs / 1e6
print(f"  in all {sum(c.values()) * 60 / secs:.1f} requests/min, {total:.2f} MB/min (watch streams not counted)")
PY
# Spark's own cost to the same API server: each driver LISTs its executors every 30 s
# (unpaged, with its selector). One such LIST measured here, times the drivers, twice a minute.
sel='spark-app-selector=spark-scale-app-0,spark-role=executor,spark-exec-inactive!=true'
id=$(kubectl --kubeconfig "$dir/kc" get pods -n spark-scale -l spark-role=driver -o name 2>/dev/null | head -1 || true)
app=$(kubectl --kubeconfig "$dir/kc" get -n spark-scale "$id" -o jsonpath='{.metadata.labels.spark-app-selector}' 2>/dev/null || true)
[ -n "$app" ] && sel="spark-app-selector=$app,spark-role=executor,spark-exec-inactive!=true"
bytes=$(kubectl --kubeconfig "$dir/kc" get --raw "/api/v1/namespaces/spark-scale/pods?labelSelector=$sel" 2>/dev/null | wc -c || true)
[ "${bytes:-0}" -gt 0 ] && printf "Spark's own polling, for comparison: %s drivers × 2 LISTs/min of %.2f MB (one app's executors) = %d requests/min, %.1f MB/min, beside each driver's watch\n" \
    "$apps" "$(echo "$bytes / 1000000" | bc -l)" $((apps * 2)) "$(echo "$apps * 2 * $bytes / 1000000" | bc -l)"
# Per-pod evidence reads (log tails, one pod's events) over the whole run, the first view
# included: bounded by src/app/evidence.rs (a few per app and cause per 10 min).
python3 - "$dir/after" "$ms_start" <<'PY'
import json, sys
after, ms_start = json.load(open(sys.argv[1])), int(sys.argv[2])
if after and after[0].get("at_ms", 0) > ms_start:
    print("(the simulator's request log no longer reaches back to the start: these are a part)")
logs = events = 0
for r in after:
    if r.get("at_ms", 0) < ms_start:
        continue
    uri = r.get("uri", "")
    path = uri.split("?")[0]
    logs += path.endswith("/log")
    events += path.endswith("/events") and "involvedObject.name" in uri
print(f"per-pod evidence reads over the whole run: {logs} log tails, {events} event reads")
PY
