#!/usr/bin/env bash
# Figures for the fleet tables (docs/fleet.md): records the simulator's `scale` scenario
# (10,000 executors over 10 apps, churn 5/s) with `record --tables` for SECONDS (default 180),
# then `cargo bench --bench fleet` synthesises 30 days of that cluster's tables from those rows
# (12.96 million endings, one file per table and hour) and prints the bytes per 1,000 endings
# and the fleet report's time in-process; last, the CLI's `report --tables --since 30d` is
# timed with its peak RSS.
# Usage: scripts/bench-fleet.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-180}
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
target/release/spark-triage sim --scenario scale --apps 10 --executors 1000 --churn 5 \
    --listen "127.0.0.1:$port" --kubeconfig-out "$dir/kc" >"$dir/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -rf "$dir"' EXIT
until kubectl --kubeconfig "$dir/kc" get --raw /healthz >/dev/null 2>&1; do sleep 1; done
target/release/spark-triage record --kubeconfig "$dir/kc" -A "$dir/rec" --rotate 1h \
    --tables "$dir/sample" --tables-every 60s --cluster-name scale --duration "${secs}s" 2>"$dir/rec.log"
grep '^tables:' "$dir/rec.log" || { cat "$dir/rec.log"; exit 1; }
FLEET_SAMPLE="$dir/sample" FLEET_OUT="$dir/month" cargo bench --quiet --bench fleet
/usr/bin/time -f 'report --tables --since 30d (the CLI): %e s wall, %M KiB peak RSS' \
    target/release/spark-triage report --tables "$dir/month" --from 2026-11-01T00:00:00Z \
    --to 2026-12-01T00:00:00Z -o json >"$dir/report.json"
du -sh "$dir/month"/* | sed 's/^/size: /'
