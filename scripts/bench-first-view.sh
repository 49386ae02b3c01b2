#!/usr/bin/env bash
# Figures: the first complete view of a big cluster, spark-triage against kubectl, in the same
# run on one simulator. Alternating, RUNS times each: `spark-triage status -A -o json` and
# `kubectl get pods -A -o json`; prints each one's median wall time and peak RSS, and the ratio
# of the medians (below 1: the tool is faster). Then the requests one `status` made, from the
# simulator's request log.
# Usage: scripts/bench-first-view.sh [APPS] [EXECUTORS_PER_APP] [RUNS]   (default 10 1000 5)
# DRIVER_API=1 reads the drivers' REST API too (the default view; without it, --no-driver-api).
# SILENT=1 makes one driver (the second app's) never answer: the view must not wait for it.
set -euo pipefail
cd "$(dirname "$0")/.."
apps=${1:-10}
per=${2:-1000}
runs=${3:-5}
driver_flag=--no-driver-api
[ "${DRIVER_API:-0}" = 1 ] && driver_flag=
cargo build --release --quiet
command -v kubectl >/dev/null || { echo "kubectl is needed" >&2; exit 1; }
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
faults=()
[ "${SILENT:-0}" = 1 ] && faults=(--fault silent-driver=scale-app-1-)
target/release/spark-triage sim --scenario scale --apps "$apps" --executors "$per" ${faults[@]+"${faults[@]}"} \
    --listen "127.0.0.1:$port" --kubeconfig-out "$dir/kc" \
    >"$dir/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -rf "$dir"' EXIT
want=$((apps * per + apps))
# Wait until every pod runs (then each has its five events: Scheduled, Pulling, Pulled,
# Created, Started), so the view is of a settled cluster, not one still being created.
SIM_PID=$sim scripts/sim-wait.sh "$dir/kc" "$want" 0

# One measured run: wall seconds and peak RSS (KiB) from GNU time.
measure() {
    /usr/bin/time -f '%e %M' -o "$dir/time" "$@" >"$dir/out" 2>"$dir/err" || {
        echo "failed: $*" >&2
        cat "$dir/err" >&2
        exit 1
    }
    cat "$dir/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$dir/tool"
: >"$dir/kubectl"
for i in $(seq 1 "$runs"); do
    [ "$i" = 1 ] && kubectl --kubeconfig "$dir/kc" get --raw /_sim/requests >"$dir/requests.before"
    measure target/release/spark-triage status -A -o json $driver_flag --kubeconfig "$dir/kc" >>"$dir/tool"
    [ "$i" = 1 ] && kubectl --kubeconfig "$dir/kc" get --raw /_sim/requests >"$dir/requests.after"
    [ "$i" = 1 ] && cp "$dir/out" "$dir/tool.json"
    measure kubectl --kubeconfig "$dir/kc" get pods -A -o json >>"$dir/kubectl"
done
t_tool=$(cut -d' ' -f1 "$dir/tool" | median)
t_kubectl=$(cut -d' ' -f1 "$dir/kubectl" | median)
m_tool=$(cut -d' ' -f2 "$dir/tool" | sort -n | tail -1)
m_kubectl=$(cut -d' ' -f2 "$dir/kubectl" | sort -n | tail -1)
printf 'spark-triage status -A -o json%s: median %.2f s, peak RSS %d MiB  (runs: %s)\n' \
    "${driver_flag:+ $driver_flag}" "$t_tool" $((m_tool / 1024)) "$(cut -d' ' -f1 "$dir/tool" | tr '\n' ' ')"
printf 'kubectl get pods -A -o json:     median %.2f s, peak RSS %d MiB  (runs: %s)\n' \
    "$t_kubectl" $((m_kubectl / 1024)) "$(cut -d' ' -f1 "$dir/kubectl" | tr '\n' ' ')"
printf 'ratio (tool / kubectl): %.2f\n' "$(echo "$t_tool / $t_kubectl" | bc -l)"
python3 - "$dir/tool.json" <<'PY'
import collections, json, sys
apps = json.load(open(sys.argv[1]))["apps"]
states = collections.Counter()
for a in apps:
    d = a.get("driver_api") or {}
    states[d.get("state", "not read") + (": " + d["reason"] if d.get("reason") else "")] += 1
print(f"first status run: {len(apps)} apps, {sum(len(a['executors']) for a in apps)} executors; drivers:")
for s, n in states.most_common():
    print(f"  {n:5d}  {s[:110]}")
PY
echo "requests of the first status run (method, path without query, count, bytes, span):"
python3 - "$dir/requests.before" "$dir/requests.after" <<'PY'
import collections, json, sys
before = json.load(open(sys.argv[1]))
after = json.load(open(sys.argv[2]))
import re
c = collections.Counter()
size = collections.Counter()
span = {}
# The log is the newest 100,000 requests; the status run's are those after the first read
# (itself one request) and before the second.
run = after[len(before) + 1 : -1]
t0 = min((r.get("at_ms", 0) for r in run), default=0)
for r in run:
    uri = r.get("uri", "")
    path = uri.split("?")[0]
    if "/proxy/" in path:
        path = "…/proxy/" + path.split("/proxy/", 1)[1].split("/applications/")[-1].split("/", 1)[-1]
    path = re.sub(r"/(namespaces|configmaps|pods|services)/[^/]+", r"/\1/*", path)
    kind = " (watch)" if "watch=" in uri else (" (page)" if "limit=" in uri else "")
    key = (r.get("method", "?"), path + kind)
    c[key] += 1
    size[key] += r.get("bytes") or 0
    end = r.get("at_ms", 0) + (r.get("ms") or 0) - t0
    lo, hi = span.get(key, (end, end))
    span[key] = (min(lo, r.get("at_ms", 0) - t0), max(hi, end))
for key, n in sorted(c.items(), key=lambda x: span[x[0]][0]):
    lo, hi = span[key]
    print(f"  {n:5d}  {key[0]} {key[1][:60]:60s} {size[key] / 1e6:8.1f} MB  {lo / 1e3:6.2f}-{hi / 1e3:6.2f} s")
PY
