"""The real driver once more, on a simulator that refuses WebSocket watches (`--fault
no-websocket`): fabric8 must fall back to a plain HTTP watch, and Spark must still come up,
run a job on its executor and delete it at stop. Run by scripts/e2e-spark.sh."""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

API, NS = sys.argv[1], sys.argv[2]
SPARK_VERSION = os.environ.get("E2E_SPARK_VERSION", "4.3.0")
T0 = time.monotonic()


def fact(kind, **kw):
    kw["kind"] = kind
    print("E2E " + json.dumps(kw), flush=True)


def executor_pods(app_id):
    sel = urllib.parse.quote(f"spark-app-selector={app_id},spark-role=executor")
    with urllib.request.urlopen(f"{API}/api/v1/namespaces/{NS}/pods?labelSelector={sel}", timeout=10) as r:
        return json.loads(r.read())["items"]


os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession  # noqa: E402

spark = (
    SparkSession.builder.master("k8s://" + API)
    .appName("http-watch")
    .config("spark.kubernetes.namespace", NS)
    .config("spark.kubernetes.container.image", "apache/spark:" + SPARK_VERSION)
    .config("spark.executor.instances", "1")
    .config("spark.executor.memory", "512m")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.kubernetes.executor.apiPollingInterval", "5s")
    .getOrCreate()
)
app_id = spark.sparkContext.applicationId
fact("http-session-up", secs=round(time.monotonic() - T0, 2))
n = spark.range(0, 100_000, numPartitions=2).count()
fact("http-job", ok=n == 100_000)
spark.stop()
end = time.monotonic() + 60
while executor_pods(app_id) and time.monotonic() < end:
    time.sleep(0.2)
fact("http-stopped", executors_left=len(executor_pods(app_id)))
