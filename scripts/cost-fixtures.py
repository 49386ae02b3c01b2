"""Captures real Spark event logs for the cost of executor losses (tests/fixtures/eventlog/cost/).

Run with PyPI's pyspark (scripts/e2e/pyspark-venv.sh makes the venv) and Java 17:

    target/e2e/venv/bin/python scripts/cost-fixtures.py tests/fixtures/eventlog/cost

Two apps on a `local-cluster[2,1,1024]` master (standalone workers: executors that can be
lost, and dynamic allocation's manager, which local mode has none of), each writing an
uncompressed single-file event log:

  shuffle-loss: a map stage writes shuffle output on both executors; the first reduce task
      SIGKILLs its own executor's JVM (as the kernel's OOM killer would), so the other
      executor's reduce tasks cannot fetch its output: Spark logs FetchFailed and resubmits
      the map stage for the lost partitions;
  shuffle-loss-rest: the same with the driver's UI on, and its REST API's answers saved
      beside its event log before it stops (`allexecutors`, `stages`, and the failed tasks
      of each stage attempt that had any), into shuffle-loss-rest/: the chain read live against the
      chain read from the log of the same run;
  idle-timeout: dynamic allocation with a 3 s `executorIdleTimeout`: two jobs of uneven
      tasks, a pause after each, so executors idle and are removed, then come back; then a
      job with a shuffle, whose executors shuffle tracking holds (its output is still
      referenced) until the app stops 20 s later.
"""

import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.request

from pyspark import TaskContext
from pyspark.sql import SparkSession

OUT = sys.argv[1]
WHICH = sys.argv[2:] or ["shuffle-loss", "idle-timeout"]


def session(name, logs, ui=False, **conf):
    b = (
        SparkSession.builder.master("local-cluster[2,1,1024]").appName(name)
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.port", "4057")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + logs)
        .config("spark.eventLog.compress", "false")
        .config("spark.eventLog.rolling.enabled", "false")
    )
    for k, v in conf.items():
        b = b.config(k, v)
    return b.getOrCreate()


def jvm_of_worker():
    """The executor JVM running this Python worker: the pyspark daemon's parent."""
    daemon = os.getppid()
    with open(f"/proc/{daemon}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def save_rest(sc, into):
    """The driver's REST answers the live chain reads: its executors, its stages, and the
    failed tasks of each attempt that had any."""
    os.makedirs(into, exist_ok=True)
    api = f"http://localhost:4057/api/v1/applications/{sc.applicationId}"
    with open(os.path.join(into, "allexecutors.json"), "wb") as f:
        f.write(get(api + "/allexecutors"))
    stages = get(api + "/stages")
    with open(os.path.join(into, "stages.json"), "wb") as f:
        f.write(stages)
    for s in json.loads(stages):
        if s["numFailedTasks"] > 0:
            body = get(f"{api}/stages/{s['stageId']}/{s['attemptId']}/taskList?status=FAILED&length=1000")
            name = f"tasks-failed-{s['stageId']}-{s['attemptId']}.json"
            with open(os.path.join(into, name), "wb") as f:
                f.write(body)


def shuffle_loss(logs, rest=False):
    spark = session("cost-shuffle-loss", logs, ui=rest)
    sc = spark.sparkContext
    # Both executors up before the map stage, so each holds shuffle output.
    deadline = time.time() + 60
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.time() < deadline:
        time.sleep(0.5)

    def mapper(i, it):
        time.sleep(0.5)
        return ((x % 8, x) for x in it)

    marker = os.path.join(logs, "killed")

    def reducer(i, it):
        if i == 0 and TaskContext.get().attemptNumber() == 0 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(jvm_of_worker(), signal.SIGKILL)
            time.sleep(30)
        time.sleep(0.3)
        return [sum(v for _, v in it)]

    pairs = sc.parallelize(range(8000), 8).mapPartitionsWithIndex(mapper)
    out = pairs.partitionBy(8).mapPartitionsWithIndex(reducer).collect()
    assert sum(out) == sum(range(8000)), out
    if rest:
        save_rest(sc, os.path.join(OUT, "shuffle-loss-rest"))
    spark.stop()


def idle_timeout(logs):
    spark = session(
        "cost-idle-timeout", logs,
        **{
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.dynamicAllocation.initialExecutors": "2",
            "spark.dynamicAllocation.maxExecutors": "2",
            "spark.dynamicAllocation.executorIdleTimeout": "3s",
            "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
        },
    )
    sc = spark.sparkContext

    def uneven(i, it):
        time.sleep(0.5 + 1.5 * (i % 2))
        return [sum(1 for _ in it)]

    for _ in range(2):
        assert sum(sc.parallelize(range(100), 4).mapPartitionsWithIndex(uneven).collect()) == 100
        time.sleep(9)
    # Kept referenced (a driver variable), so the shuffle is not cleaned before the stop.
    counted = sc.parallelize(range(100), 4).map(lambda x: (x % 4, 1)).reduceByKey(
        lambda a, b: a + b, 2)
    assert sum(v for _, v in counted.collect()) == 100
    time.sleep(20)
    spark.stop()


for which in WHICH:
    logs = tempfile.mkdtemp()
    {
        "shuffle-loss": shuffle_loss,
        "shuffle-loss-rest": lambda logs: shuffle_loss(logs, rest=True),
        "idle-timeout": idle_timeout,
    }[which](logs)
    [log] = [p for p in glob.glob(os.path.join(logs, "*")) if os.path.isfile(p) and "killed" not in p]
    if which == "shuffle-loss-rest":
        shutil.copy(log, os.path.join(OUT, which, "eventlog.json"))
    else:
        shutil.copy(log, os.path.join(OUT, which + ".json"))
    shutil.rmtree(logs, ignore_errors=True)
    print("captured", which)
