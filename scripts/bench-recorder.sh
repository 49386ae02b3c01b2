#!/usr/bin/env bash
# Figures for the flight recorder (docs/flight-recorder.md, "Sizing"): `record DIR --rotate 1h`
# against the simulator's `scale` scenario (EXECUTORS over APPS apps, CHURN executors dying and
# replaced per second). After a 60 s warm-up (the first LIST and the opening keyframe), for
# SECONDS it measures the recorder's CPU (utime+stime, % of one core), its peak RSS, and the
# bytes the directory grows by (zstd-compressed segments), then extrapolates per hour, per
# day and per 1,000 executors per day.
# Usage: scripts/bench-recorder.sh [EXECUTORS] [SECONDS] [CHURN_PER_SEC]   (default 10000 600 5)
# FORGET_AFTER=10m (default 1h, the recorder's default) sets --forget-after: with churn, the
# recorder's memory and keyframes level off once executors are forgotten as fast as they
# end, after that long plus a keyframe interval. DRIVER_POLL=60s (default 10s) sets
# --driver-poll-interval: Spark's own executor list, read from every driver, is most of the
# bytes when executors are many. APPS=100 spreads the executors over that many apps
# (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
secs=${2:-600}
churn=${3:-5}
apps=${APPS:-10}
per=$((n / apps))
n=$((per * apps))
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
target/release/spark-triage sim --scenario scale --apps "$apps" --executors "$per" --churn "$churn" \
    --listen "127.0.0.1:$port" --kubeconfig-out "$dir/kc" >"$dir/sim.log" 2>&1 &
sim=$!
rec=
trap 'kill ${rec:-} $sim 2>/dev/null; rm -rf "$dir"' EXIT
# Wait for the executors to run (a 10k cluster takes a while to schedule).
SIM_PID=$sim scripts/sim-wait.sh "$dir/kc" $((n + apps))
forget=${FORGET_AFTER:-1h}
driver_poll=${DRIVER_POLL:-10s}
target/release/spark-triage record --kubeconfig "$dir/kc" -A "$dir/rec" --rotate 1h --forget-after "$forget" \
    --driver-poll-interval "$driver_poll" \
    --metrics-addr 127.0.0.1:0 2>"$dir/rec.log" &
rec=$!
sleep 60
du_bytes() { du -sb "$dir/rec" | cut -f1; }
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$rec/stat"; }
b0=$(du_bytes)
c0=$(cpu)
t0=$(date +%s.%N)
peak=0
end=$((SECONDS + secs))
while [ $SECONDS -lt $end ]; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$rec/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 1
done
c1=$(cpu)
t1=$(date +%s.%N)
b1=$(du_bytes)
executors=$(target/release/spark-triage status --recording "$dir/rec" -o json 2>/dev/null |
    python3 -c 'import json,sys; print(sum(len(a["executors"]) for a in json.load(sys.stdin)["apps"]))')
python3 - "$n" "$churn" "$secs" "$b0" "$b1" "$c0" "$c1" "$ticks" "$t0" "$t1" "$peak" "$executors" "$forget" "$driver_poll" "$apps" <<'PY'
import sys
n, churn, secs, b0, b1, c0, c1, ticks, t0, t1, peak, known, forget, driver_poll, apps = sys.argv[1:]
n, secs, b0, b1 = int(n), int(secs), int(b0), int(b1)
wall = float(t1) - float(t0)
per_hour = (b1 - b0) / wall * 3600
cpu = (int(c1) - int(c0)) / int(ticks) / wall * 100
print(f"recorder, {n} executors over {apps} apps, churn {churn}/s, {secs} s measured (rotation 1h, a keyframe every 15 min, forget after {forget}, driver poll {driver_poll}):")
print(f"  CPU {cpu:.1f} % of one core, peak RSS {int(peak) // 1024} MiB, {known} executors known at the end")
print(f"  {per_hour / 2**20:.1f} MiB per hour, {per_hour * 24 / 2**30:.2f} GiB per day, "
      f"{per_hour * 24 / 2**20 / (n / 1000):.0f} MiB per 1,000 executors per day")
print(f"  7 days: {per_hour * 24 * 7 / 2**30:.1f} GiB")
PY
