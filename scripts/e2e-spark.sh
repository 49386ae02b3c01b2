#!/usr/bin/env bash
# A real Spark driver (PyPI's pyspark, 4.3.0 unless told) on the simulated cluster, with the
# process kubelet running its executors as JVMs, while spark-triage watches (`status --for` and
# `record`). See scripts/e2e/driver.py for the jobs and scripts/e2e/check.py for what is
# asserted (and which of it depends on the Spark version).
#
#   scripts/e2e-spark.sh [--spark-version 4.3.0|4.0.x|3.5.x] [--update-snapshot]
#
# --update-snapshot copies the run's recording to snapshots/real-spark-oom.ndjson.zst (4.3.0 only).
# The driver writes its event log to target/e2e/run/eventlog/ (E2E_EVENTLOG_CODEC: zstd, Spark
# 4's default, or lz4, snappy, lzf, none), and check.py compares spark-triage's verdicts from
# it with those from the recording of the same run.
# Needs Java 17+ and python3; pyspark==VERSION is installed once into target/e2e/venv (4.3.0)
# or target/e2e/venv-VERSION (E2E_VENV overrides).
# Where Java or PyPI is missing it says so and exits 0, or 1 when CI=true.
# SPARK_TRIAGE_BIN names a built binary (the cargo test wrapper sets it); otherwise it builds.
# Prints `N passed, M failed` last; the run's files stay in target/e2e/run.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
UPDATE=false
SPARK_VERSION=4.3.0
while [ $# -gt 0 ]; do
    case $1 in
        --update-snapshot) UPDATE=true ;;
        --spark-version)
            SPARK_VERSION=${2:-}
            shift
            ;;
        *)
            echo "usage: scripts/e2e-spark.sh [--spark-version X.Y.Z] [--update-snapshot]" >&2
            exit 2
            ;;
    esac
    shift
done
case $SPARK_VERSION in
    3.5.* | 4.*.*) ;;
    *)
        echo "e2e-spark: --spark-version wants 3.5.x or 4.x.y (got '$SPARK_VERSION')" >&2
        exit 2
        ;;
esac
if $UPDATE && [ "$SPARK_VERSION" != 4.3.0 ]; then
    echo "e2e-spark: --update-snapshot records with Spark 4.3.0 only" >&2
    exit 2
fi
export E2E_SPARK_VERSION=$SPARK_VERSION

skip() {
    echo "e2e-spark: SKIPPED: $*"
    if [ "${CI:-}" = "true" ]; then
        echo "e2e-spark: CI=true, so this is a failure"
        exit 1
    fi
    exit 0
}

command -v java >/dev/null 2>&1 || skip "no java on PATH (Spark 4 needs Java 17+)"
JAVA_MAJOR=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
[ "${JAVA_MAJOR:-0}" -ge 17 ] 2>/dev/null || skip "java ${JAVA_MAJOR:-?} found; the run needs 17+"
command -v python3 >/dev/null 2>&1 || skip "no python3"

SPARK_HOME_DIR=$("$ROOT/scripts/e2e/pyspark-venv.sh" "$SPARK_VERSION" 2>"$ROOT/target/e2e-pyspark-venv.err" | tail -1) ||
    skip "$(tail -1 "$ROOT/target/e2e-pyspark-venv.err")"
VENV=$(dirname "$(dirname "$(dirname "$(dirname "$SPARK_HOME_DIR")")")")

BIN=${SPARK_TRIAGE_BIN:-}
if [ -z "$BIN" ]; then
    cargo build --quiet --bin spark-triage || { echo "e2e-spark: build failed"; exit 1; }
    BIN=$ROOT/target/debug/spark-triage
fi

RUN=$ROOT/target/e2e/run
rm -rf "$RUN"
mkdir -p "$RUN"
NS=spark-jobs
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap cleanup EXIT

# start_sim DIR [FAULT…]: a process-kubelet simulator writing into DIR; sets SIM and URL.
start_sim() {
    local dir=$1
    shift
    "$BIN" sim --scenario empty --kubelet process --spark-home "$SPARK_HOME_DIR" "$@" \
        --work-dir "$dir/work" --kubeconfig-out "$dir/kubeconfig" >"$dir/sim.log" 2>&1 &
    SIM=$!
    PIDS+=("$SIM")
    URL=""
    for _ in $(seq 1 100); do
        URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$dir/sim.log")
        [ -n "$URL" ] && break
        sleep 0.1
    done
    [ -n "$URL" ] || { echo "e2e-spark: the simulator did not start:"; cat "$dir/sim.log"; exit 1; }
}
# The simulator's request log (Spark's DELETEs are checked against spark-triage's view).
save_requests() {
    "$VENV/bin/python" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + "/_sim/requests").read().decode())' \
        "$URL" >"$1" 2>/dev/null
}

T0=$(date +%s)
start_sim "$RUN"
echo "e2e-spark: Spark $SPARK_VERSION; simulator at $URL (process kubelet, Spark jars from $SPARK_HOME_DIR)"

WATCH=(--kubeconfig "$RUN/kubeconfig" -n "$NS" --poll-interval 5s)
"$BIN" status "${WATCH[@]}" --for 900s -o json >"$RUN/status.json" 2>"$RUN/status.err" &
STATUS=$!
PIDS+=("$STATUS")
"$BIN" record "$RUN/session.ndjson.zst" "${WATCH[@]}" >"$RUN/record.log" 2>&1 &
RECORD=$!
PIDS+=("$RECORD")
sleep 1

echo "e2e-spark: running the PySpark driver (log: $RUN/driver.log)"
timeout 480 "$VENV/bin/python" scripts/e2e/driver.py "$URL" "$NS" "$RUN" "$BIN" "$RUN/kubeconfig" >"$RUN/driver.log" 2>&1
DRIVER_RC=$?
echo "e2e-spark: driver exited $DRIVER_RC after $(($(date +%s) - T0)) s"
grep -o 'E2E {.*' "$RUN/driver.log" | sed 's/^/  /'

# One more of spark-triage's 5 s polls, then let both print and close their files.
sleep 6
kill -TERM "$STATUS" "$RECORD" 2>/dev/null
wait "$STATUS" "$RECORD" 2>/dev/null
"$BIN" status --recording "$RUN/session.ndjson.zst" -o json >"$RUN/status-recording.json" 2>&1
# The run as nobody recorded it: only Spark's event log (spark.eventLog.dir) is left.
"$BIN" status --recording "$RUN/eventlog" -o json >"$RUN/status-eventlog.json" 2>"$RUN/status-eventlog.err"
"$BIN" report "$RUN/eventlog" -o json >"$RUN/report-eventlog.json" 2>&1
"$BIN" report "$RUN/session.ndjson.zst" -o json >"$RUN/report-recording.json" 2>&1
# The same log as a team whose logs only the History Server reads would see it: Spark's own
# History Server over it, on loopback, and `report --history-server`.
history_server() {
    local port conf t0 id
    port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    conf="$RUN/history.conf"
    printf 'spark.history.fs.logDirectory file:%s\nspark.history.ui.port %s\nspark.history.fs.update.interval 1s\nspark.ui.bindAddress 127.0.0.1\n' \
        "$RUN/eventlog" "$port" >"$conf"
    SPARK_HOME=$SPARK_HOME_DIR SPARK_LOCAL_IP=127.0.0.1 "$SPARK_HOME_DIR/bin/spark-class" \
        org.apache.spark.deploy.history.HistoryServer --properties-file "$conf" >"$RUN/history.log" 2>&1 &
    HISTORY=$!
    t0=$(date +%s%N)
    id=$("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["apps"][0]["app_id"])' "$RUN/report-eventlog.json" 2>/dev/null)
    for _ in $(seq 1 120); do
        if "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$port/api/v1/applications/$id/allexecutors" >/dev/null 2>&1; then
            echo "e2e-spark: the History Server listed and loaded the log in $((($(date +%s%N) - t0) / 1000000)) ms (from its start)"
            "$BIN" report --history-server "http://127.0.0.1:$port" --app "$id" -o json >"$RUN/report-history.json" 2>"$RUN/report-history.err"
            break
        fi
        sleep 0.5
    done
    kill -TERM "$HISTORY" 2>/dev/null
    wait "$HISTORY" 2>/dev/null
}
history_server
save_requests "$RUN/requests.json"
kill -TERM "$SIM" 2>/dev/null
wait "$SIM" 2>/dev/null
# A real dynamic-allocation run with a 3 s idle timeout (scripts/cost-fixtures.py, on a
# local-cluster master): its report's idle tail against the gaps check.py counts in its log.
echo "e2e-spark: a dynamic-allocation run with an idle timeout (local-cluster)"
timeout 240 "$VENV/bin/python" scripts/cost-fixtures.py "$RUN" idle-timeout >"$RUN/idle.log" 2>&1
"$BIN" report "$RUN/idle-timeout.json" -o json >"$RUN/report-idle.json" 2>&1
# The same driver on a simulator that refuses WebSocket watches: fabric8 falls back to HTTP.
mkdir -p "$RUN/http"
start_sim "$RUN/http" --fault no-websocket
echo "e2e-spark: the driver again, WebSocket watches refused ($URL)"
timeout 240 "$VENV/bin/python" scripts/e2e/http_watch.py "$URL" "$NS" >"$RUN/http/driver.log" 2>&1
grep -o 'E2E {.*' "$RUN/http/driver.log" | sed 's/^/  /'
save_requests "$RUN/http/requests.json"
kill -TERM "$SIM" 2>/dev/null
wait "$SIM" 2>/dev/null

"$VENV/bin/python" scripts/e2e/check.py "$RUN"
RC=$?
echo "e2e-spark: whole run $(($(date +%s) - T0)) s"
if [ $RC -eq 0 ] && $UPDATE; then
    cp "$RUN/session.ndjson.zst" snapshots/real-spark-oom.ndjson.zst
    echo "e2e-spark: updated snapshots/real-spark-oom.ndjson.zst"
fi
exit $RC
