#!/usr/bin/env bash
# Figures: wall time and peak RSS of `spark-triage status` watching the simulator's `scale`
# scenario with N executors (default 10,000) for a while, with churn.
# Usage: scripts/bench-status-rss.sh [EXECUTORS] [SECONDS] [CHURN_PER_SEC]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
secs=${2:-20}
churn=${3:-5}
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
kc=$(mktemp)
target/release/spark-triage sim --scenario scale --apps 1 --executors "$n" --churn "$churn" \
  --listen "127.0.0.1:$port" --kubeconfig-out "$kc" >/dev/null 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -f "$kc"' EXIT
sleep 8
out=$(mktemp)
start=$(date +%s.%N)
target/release/spark-triage status --kubeconfig "$kc" -A --for "${secs}s" -o json >"$out" &
st=$!
peak=0
while kill -0 $st 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$st/status 2>/dev/null || echo 0)
  [ "${rss:-0}" -gt "$peak" ] && peak=$rss
  sleep 0.2
done
wait $st
end=$(date +%s.%N)
execs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(a["executors"]) for a in d["apps"]))' "$out")
printf 'status --for %ss on %s executors (churn %s/s): %.1f s wall, peak RSS %d MiB, %s executors reported (incl. tombstones)\n' \
  "$secs" "$n" "$churn" "$(echo "$end - $start" | bc)" $((peak / 1024)) "$execs"
rm -f "$out"
