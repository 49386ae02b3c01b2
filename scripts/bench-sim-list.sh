#!/usr/bin/env bash
# Figures for the simulator at scale: time to serve a full LIST of N executor pods (the
# budget is under 1 s for 10,000), over loopback HTTP, plus the simulator's RSS.
# Usage: scripts/bench-sim-list.sh [EXECUTORS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
repeats=${2:-5}
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
kc=$(mktemp)
target/release/spark-triage sim --scenario scale --apps 1 --executors "$n" \
  --listen "127.0.0.1:$port" --kubeconfig-out "$kc" >/dev/null 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -f "$kc"' EXIT
url="http://127.0.0.1:$port/api/v1/namespaces/spark-scale/pods?labelSelector=spark-role%3Dexecutor"
count() { curl -sf "$url" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for p in d["items"] if p["status"].get("phase")=="Running"))'; }
start=$(date +%s)
until [ "$(count 2>/dev/null || echo 0)" -ge "$n" ]; do
  sleep 1
  if [ $(( $(date +%s) - start )) -gt 300 ]; then echo "timed out waiting for $n running executors" >&2; exit 1; fi
done
echo "executors running: $n (after $(( $(date +%s) - start )) s)"
for i in $(seq "$repeats"); do
  curl -s -o /dev/null -w "full LIST of $n pods: %{time_total} s, %{size_download} bytes\n" "$url"
done
echo "simulator RSS: $(( $(awk '/VmRSS/ {print $2}' /proc/$sim/status) / 1024 )) MiB"
