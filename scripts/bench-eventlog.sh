#!/usr/bin/env bash
# Figures: wall time and peak RSS of `spark-triage report` on a large Spark event log,
# synthesised from the real lines of tests/fixtures/eventlog/real-spark-k8s (its header and
# environment, then executors added, OOM-killed and replaced, and task ends in between,
# with times moving on), written plain and zstd-compressed.
# Usage: scripts/bench-eventlog.sh [MEGABYTES] (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-1024}
cargo build --release --quiet
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$mb" "$dir/spark-bench" <<'EOF'
import json, glob, subprocess, sys
mb, out = int(sys.argv[1]), sys.argv[2]
src = glob.glob("tests/fixtures/eventlog/real-spark-k8s/*/events_1_*")[0]
lines = subprocess.run(["zstd", "-dc", src], capture_output=True, check=True).stdout.decode().splitlines()
ev = [json.loads(l) for l in lines]
head = [l for l, e in zip(lines, ev) if e["Event"] in ("SparkListenerLogStart", "SparkListenerResourceProfileAdded", "SparkListenerEnvironmentUpdate", "SparkListenerApplicationStart")]
task = next(e for e in ev if e["Event"] == "SparkListenerTaskEnd")
added = next(e for e in ev if e["Event"] == "SparkListenerExecutorAdded")
removed = next(e for e in ev if e["Event"] == "SparkListenerExecutorRemoved" and "137" in e["Removed Reason"])
t = next(e for e in ev if e["Event"] == "SparkListenerApplicationStart")["Timestamp"]
limit, size, n = mb << 20, 0, 0
with open(out, "w") as f:
    for l in head:
        f.write(l + "\n")
    while size < limit:
        n += 1
        t += 1000
        a = dict(added, **{"Executor ID": str(n), "Timestamp": t})
        f.write(json.dumps(a) + "\n")
        for i in range(200):
            task["Task Info"]["Executor ID"] = str(n)
            task["Task Info"]["Finish Time"] = t + i
            line = json.dumps(task) + "\n"
            f.write(line)
            size += len(line)
        if n % 3 == 0:
            r = dict(removed, **{"Executor ID": str(n), "Timestamp": t + 500,
                                 "Removed Reason": removed["Removed Reason"].replace("id 2 ", f"id {n} ")})
            f.write(json.dumps(r) + "\n")
    f.write(json.dumps({"Event": "SparkListenerApplicationEnd", "Timestamp": t + 1000, "ExitCode": 1}) + "\n")
print(f"{n} executors, {n // 3} OOM-killed")
EOF
zstd -q -T2 -3 "$dir/spark-bench" -o "$dir/spark-bench.zstd"
for f in "$dir/spark-bench" "$dir/spark-bench.zstd"; do
  /usr/bin/time -f "%e s, peak RSS %M KiB" target/release/spark-triage report "$f" -o json \
    >"$dir/out.json" 2>"$dir/time.txt" || { cat "$dir/time.txt"; exit 1; }
  counted=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(a["failures_counted"] for a in d["apps"]))' "$dir/out.json")
  echo "report $(basename "$f") ($(du -h "$f" | cut -f1)): $(tail -1 "$dir/time.txt"), $counted failures counted"
done

# Spark's own History Server loading the same (plain) log, when a pyspark venv is there
# (scripts/e2e-spark.sh makes target/e2e/venv): from its start to the app's executors
# answered, and `report --history-server` then.
venv=${E2E_VENV:-target/e2e/venv}
if [ -x "$venv/bin/python" ] && spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null); then
  mkdir "$dir/shs" && mv "$dir/spark-bench" "$dir/shs/"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'spark.history.fs.logDirectory file:%s\nspark.history.ui.port %s\nspark.history.fs.update.interval 1s\n' "$dir/shs" "$port" >"$dir/shs.conf"
  id=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["Event"] == "SparkListenerApplicationStart":
        print(e["App ID"]); break' "$dir/shs/spark-bench")
  t0=$(date +%s%N)
  SPARK_HOME=$spark_home SPARK_DAEMON_MEMORY=${SHS_MEMORY:-4g} /usr/bin/time -f "%M" -o "$dir/shs.rss" \
    "$spark_home/bin/spark-class" org.apache.spark.deploy.history.HistoryServer \
    --properties-file "$dir/shs.conf" >"$dir/shs.log" 2>&1 &
  shs=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 1200); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=600)' \
      "$url/api/v1/applications/$id/allexecutors" >/dev/null 2>&1; then
      echo "History Server (SPARK_DAEMON_MEMORY=${SHS_MEMORY:-4g}): the app's executors answered $((($(date +%s%N) - t0) / 1000000)) ms after its start"
      /usr/bin/time -f "%e s, peak RSS %M KiB" target/release/spark-triage report --history-server "$url" --app "$id" -o json \
        >"$dir/out.json" 2>"$dir/time.txt" || { cat "$dir/time.txt"; break; }
      echo "report --history-server: $(tail -1 "$dir/time.txt")"
      break
    fi
    kill -0 $shs 2>/dev/null || { echo "History Server died: $(tail -3 "$dir/shs.log")"; break; }
    sleep 0.5
  done
  kill -TERM $shs 2>/dev/null; wait $shs 2>/dev/null || true
  [ -s "$dir/shs.rss" ] && echo "History Server peak RSS $(tail -1 "$dir/shs.rss") KiB"
else
  echo "(no pyspark venv at $venv: the History Server's load time is not measured)"
fi
