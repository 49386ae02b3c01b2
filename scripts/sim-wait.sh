#!/usr/bin/env bash
# Waits until a `scale` simulator has WANT pods in spark-scale and (nearly) all of them run:
# at most SLACK not running (default one in fifty: churn keeps a few pending). Cheap at
# 100,000 pods, where a `kubectl get pods` costs a minute and gigabytes and loads the
# simulator it waits for: the count comes from one page's remainingItemCount (the simulator
# sets it without a selector), the pods not running from a field selector. A read that fails
# (a loaded simulator) is tried again; SIM_PID, when given, must stay alive.
# Prints the counts (events too); exits 1 after TIMEOUT seconds (default 900).
# Usage: scripts/sim-wait.sh KUBECONFIG WANT [SLACK]
set -uo pipefail
kc=$1
want=$2
slack=${3:-$((want / 50))}
deadline=$((SECONDS + ${TIMEOUT:-900}))
count='import json, sys
d = json.load(sys.stdin)
print(len(d["items"]) + d["metadata"].get("remainingItemCount", 0))'
raw() { kubectl --kubeconfig "$kc" get --raw "$1" 2>/dev/null; }
total=? waiting=?
while :; do
    if [ -n "${SIM_PID:-}" ] && ! kill -0 "$SIM_PID" 2>/dev/null; then
        echo "the simulator (pid $SIM_PID) is gone" >&2
        exit 1
    fi
    if total=$(raw "/api/v1/namespaces/spark-scale/pods?limit=1" | python3 -c "$count" 2>/dev/null) &&
        # Up to SLACK + 1 items: enough to know whether the rest are within the bound.
        waiting=$(raw "/api/v1/namespaces/spark-scale/pods?fieldSelector=status.phase%21%3DRunning&limit=$((slack + 1))" |
            python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))' 2>/dev/null) &&
        [ "$total" -ge "$want" ] && [ "$waiting" -le "$slack" ]; then
        events=$(raw "/api/v1/events?limit=1" | python3 -c "$count" 2>/dev/null || echo "?")
        echo "simulator: $total pods in spark-scale, $waiting of them not running; $events events"
        exit 0
    fi
    if [ $SECONDS -ge $deadline ]; then
        echo "simulator not settled after ${TIMEOUT:-900} s: $total of $want pods, $waiting not running" >&2
        exit 1
    fi
    sleep 5
done
