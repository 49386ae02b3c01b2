"""Captures a real Spark driver's REST answers for tests/fixtures/driver-rest/.

Run with PyPI's pyspark (scripts/e2e/pyspark-venv.sh makes the venv) and Java 17:

    target/e2e/venv/bin/python scripts/driver-rest-fixtures.py tests/fixtures/driver-rest

A `local-cluster` master (standalone workers, so dynamic allocation's manager runs; local
mode has none) with dynamic allocation on runs a Structured Streaming query named `clicks`
for a few seconds; the driver's `/metrics/json` and `jobs` are saved as they come, and its
event log (uncompressed) is kept for its `QueryStartedEvent` line.
"""

import glob
import os
import shutil
import sys
import tempfile
import time
import urllib.request

from pyspark.sql import SparkSession

OUT = sys.argv[1]
PORT = 4055
logs = tempfile.mkdtemp()
spark = (
    SparkSession.builder.master("local-cluster[2,1,1024]")
    .config("spark.dynamicAllocation.enabled", "true")
    .config("spark.dynamicAllocation.shuffleTracking.enabled", "true")
    .config("spark.dynamicAllocation.maxExecutors", "2")
    .config("spark.dynamicAllocation.initialExecutors", "1")
    .config("spark.ui.port", str(PORT))
    .config("spark.eventLog.enabled", "true")
    .config("spark.eventLog.dir", "file://" + logs)
    .config("spark.eventLog.compress", "false")
    .getOrCreate()
)
app = spark.sparkContext.applicationId
query = (
    spark.readStream.format("rate").option("rowsPerSecond", 5).load()
    .writeStream.queryName("clicks").format("memory")
    .trigger(processingTime="1 second").start()
)
time.sleep(12)


def get(path):
    return urllib.request.urlopen(f"http://localhost:{PORT}{path}", timeout=10).read()


with open(os.path.join(OUT, "metrics-dynamic-allocation.json"), "wb") as f:
    f.write(get("/metrics/json/"))  # the bare path is a 301 to this
with open(os.path.join(OUT, "jobs-streaming.json"), "wb") as f:
    f.write(get(f"/api/v1/applications/{app}/jobs"))
query.stop()
spark.stop()
# Spark 4 writes a rolling log: a directory of `events_N_…` files.
started = []
for log in glob.glob(os.path.join(logs, "**", "*"), recursive=True):
    if os.path.isfile(log):
        with open(log, errors="replace") as src:
            started += [line for line in src if "QueryStartedEvent" in line]
with open(os.path.join(OUT, "eventlog-query-started.json"), "w") as f:
    f.writelines(started[:1])
shutil.rmtree(logs, ignore_errors=True)
print("captured", app)
