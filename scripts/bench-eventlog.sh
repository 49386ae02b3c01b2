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
