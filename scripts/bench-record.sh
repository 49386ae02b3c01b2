#!/usr/bin/env bash
# Figures: size and CPU cost of recording the simulator's `scale` scenario (N executors,
# churn R/s) for D seconds, zstd-compressed; prints size per hour.
# Usage: scripts/bench-record.sh [EXECUTORS] [SECONDS] [CHURN_PER_SEC]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
secs=${2:-60}
churn=${3:-5}
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
kc=$(mktemp)
out=$(mktemp --suffix=.ndjson.zst)
target/release/spark-triage sim --scenario scale --apps 1 --executors "$n" --churn "$churn" \
  --listen "127.0.0.1:$port" --kubeconfig-out "$kc" >/dev/null 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -f "$kc" "$out"' EXIT
sleep 8
/usr/bin/time -f '%U %S %M' -o /tmp/record-time.$$ target/release/spark-triage record "$out" --kubeconfig "$kc" -A --duration "${secs}s" 2>/dev/null
read -r user sys maxrss < /tmp/record-time.$$
rm -f /tmp/record-time.$$
size=$(stat -c %s "$out")
printf 'record %ss of %s executors (churn %s/s, poll 30s): %d KiB (%.1f MiB/hour), CPU %.1fs user + %.1fs sys (%.1f%% of one core), peak RSS %d MiB\n' \
  "$secs" "$n" "$churn" $((size / 1024)) "$(echo "$size * 3600 / $secs / 1048576" | bc -l)" "$user" "$sys" \
  "$(echo "($user + $sys) * 100 / $secs" | bc -l)" $((maxrss / 1024))
