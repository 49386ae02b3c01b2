"""A real PySpark driver (client mode) against spark-triage's simulated cluster.

Run by scripts/e2e-spark.sh with the simulator's URL. It creates a driver pod and its
service (as spark-submit's cluster mode would), then, on two executors the simulator runs
as JVMs:

  a. a job that completes (range aggregations);
  b. a job whose first task attempt grows its Python worker past the executor pod's memory
     limit: the simulator OOM-kills the container (137), Spark replaces the executor and the
     retried task completes;
  c. an executor pod removed behind Spark's back with no watch event (the simulator's
     `vanish` endpoint): Spark replaces it after its next poll;
  d. an executor JVM frozen (SIGSTOP): its heartbeats stop, the driver kills it, replaces
     it, and its pod is SIGKILLed at the end of its grace;

then stops. Every fact the checker needs is printed as one `E2E {json}` line; a pod
monitor thread timestamps what the API server shows, for the latencies.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

API = sys.argv[1]
NS = sys.argv[2]
WORK = sys.argv[3]
TRIAGE = sys.argv[4]  # the spark-triage binary
KUBECONFIG = sys.argv[5]
EVENT_LOG_DIR = os.path.join(WORK, "eventlog")
# The event log's codec (E2E_EVENTLOG_CODEC: zstd, Spark 4's default, lz4, snappy, lzf, none).
CODEC = os.environ.get("E2E_EVENTLOG_CODEC", "zstd")
SPARK_VERSION = os.environ.get("E2E_SPARK_VERSION", "4.3.0")
APP_ID = "spark-e2e" + os.urandom(8).hex()
APP_NAME = "real-spark-oom"
DRIVER_POD = APP_NAME + "-driver"
T0 = time.monotonic()


def fact(kind, **kw):
    kw["kind"] = kind
    kw["t"] = round(time.monotonic() - T0, 2)
    print("E2E " + json.dumps(kw), flush=True)


def api(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(API + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def executor_pods():
    sel = urllib.parse.quote(f"spark-app-selector={APP_ID},spark-role=executor")
    return api("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={sel}")["items"]


class Monitor(threading.Thread):
    """First time each executor pod is seen, seen running, seen ended, seen gone."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen = {}
        self.lock = threading.Lock()
        self.stop = False

    def mark(self, name, what, t):
        with self.lock:
            self.seen.setdefault(name, {}).setdefault(what, t)

    def get(self, name, what):
        with self.lock:
            return self.seen.get(name, {}).get(what)

    def names(self):
        with self.lock:
            return list(self.seen)

    def run(self):
        while not self.stop:
            t = time.monotonic() - T0
            try:
                pods = executor_pods()
            except Exception:  # the API server may be busy; try again
                time.sleep(0.2)
                continue
            now = set()
            for p in pods:
                name = p["metadata"]["name"]
                now.add(name)
                self.mark(name, "created", t)
                phase = p.get("status", {}).get("phase")
                if phase == "Running":
                    self.mark(name, "running", t)
                if phase in ("Succeeded", "Failed"):
                    self.mark(name, "ended", t)
            for name in self.names():
                if name not in now:
                    self.mark(name, "gone", t)
            time.sleep(0.1)


def wait_for(what, cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    fact("timeout", what=what)
    raise SystemExit(f"timed out waiting for {what}")


def running_executors(mon):
    return sorted(
        n for n in mon.names() if mon.get(n, "running") is not None and mon.get(n, "gone") is None
        and mon.get(n, "ended") is None
    )


def exec_id(name):
    return int(name.rsplit("-", 1)[1])


def processes_of(pod):
    """The pids of an executor pod's processes (its JVM and Python workers): the process
    kubelet gives each the pod's name in SPARK_EXECUTOR_POD_NAME."""
    needle = b"SPARK_EXECUTOR_POD_NAME=" + pod.encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def create_driver_pod():
    labels = {"spark-app-selector": APP_ID, "spark-role": "driver", "spark-app-name": APP_NAME,
              "spark-version": SPARK_VERSION}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": DRIVER_POD, "labels": labels},
           "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "apache/spark:" + SPARK_VERSION,
                                    "args": ["driver"],
                                    "ports": [{"name": "driver-rpc-port", "containerPort": 7078},
                                              {"name": "spark-ui", "containerPort": 4040}],
                                    "resources": {"requests": {"cpu": "1", "memory": "1408Mi"},
                                                  "limits": {"memory": "1408Mi"}}}],
                    "restartPolicy": "Never"}}
    api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": APP_NAME + "-driver-svc", "labels": {"spark-app-selector": APP_ID}},
           "spec": {"clusterIP": "None", "selector": labels,
                    "ports": [{"name": "driver-rpc-port", "port": 7078},
                              {"name": "spark-ui", "port": 4040, "targetPort": 4040}]}}
    api("POST", f"/api/v1/namespaces/{NS}/services", svc)

    def ready():
        p = api("GET", f"/api/v1/namespaces/{NS}/pods/{DRIVER_POD}")
        conds = p.get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    wait_for("driver pod ready", ready, 30)


def main():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    create_driver_pod()
    fact("driver-pod", pod=DRIVER_POD, app_id=APP_ID)
    mon = Monitor()
    mon.start()

    os.makedirs(EVENT_LOG_DIR, exist_ok=True)
    from pyspark import TaskContext
    from pyspark.sql import SparkSession

    t = time.monotonic()
    spark = (
        SparkSession.builder.master("k8s://" + API)
        .appName(APP_NAME)
        .config("spark.app.id", APP_ID)
        .config("spark.kubernetes.namespace", NS)
        .config("spark.kubernetes.driver.pod.name", DRIVER_POD)
        .config("spark.kubernetes.container.image", "apache/spark:" + SPARK_VERSION)
        .config("spark.executor.instances", "2")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.port", "4040")
        .config("spark.port.maxRetries", "0")
        .config("spark.kubernetes.executor.apiPollingInterval", "5s")
        .config("spark.sql.shuffle.partitions", "4")
        # Every pod of the process kubelet runs on this one host, where Spark would read a
        # dead executor's shuffle files from its disk; on a cluster each executor is a host
        # of its own and the fetch goes to the executor, as here.
        .config("spark.shuffle.readHostLocalDisk", "false")
        # A frozen executor expires after 20 s without heartbeats (not 120), checked every 5 s.
        .config("spark.storage.blockManagerHeartbeatTimeoutMs", "20000")
        .config("spark.network.timeoutInterval", "5s")
        .config("spark.ui.showConsoleProgress", "false")
        # The event log a post-mortem reads when nobody recorded (report EVENTLOG): Spark 4's
        # defaults (rolling, zstd) on 4.x; one file on 3.5.
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + EVENT_LOG_DIR)
        .config("spark.eventLog.compress", "false" if CODEC == "none" else "true")
        .config("spark.eventLog.compression.codec", CODEC if CODEC != "none" else "zstd")
        .getOrCreate()
    )
    sc = spark.sparkContext
    fact("session-up", secs=round(time.monotonic() - t, 2), app_id=sc.applicationId,
         ui=sc.uiWebUrl)
    wait_for("2 running executors", lambda: len(running_executors(mon)) >= 2, 60)

    # a. A job that completes.
    t = time.monotonic()
    df = spark.range(0, 2_000_000, numPartitions=4)
    rows = df.selectExpr("id % 10 AS k", "id").groupBy("k").count().collect()
    total = df.selectExpr("sum(id) AS s").collect()[0]["s"]
    ok = sorted(r["count"] for r in rows) == [200_000] * 10 and total == 1_999_999 * 2_000_000 // 2
    fact("job-a", ok=ok, secs=round(time.monotonic() - t, 2))

    # b. The first attempt of partition 0 grows its Python worker past the pod's limit.
    marker = os.path.join(WORK, "oom-victim")
    before = set(mon.names())

    def hog(index, it):
        ctx = TaskContext.get()
        if index == 0 and ctx.attemptNumber() == 0:
            with open(marker, "w") as f:
                f.write(os.environ.get("SPARK_EXECUTOR_POD_NAME", "?"))
            held = []
            for _ in range(48):  # up to 3 GiB, 64 MiB at a time, every page touched
                held.append(b"\x01" * (64 << 20))
                time.sleep(0.05)
            time.sleep(60)
        return [sum(1 for _ in it)]

    t = time.monotonic()
    counts = sc.parallelize(range(1000), 4).mapPartitionsWithIndex(hog).collect()
    victim = open(marker).read().strip() if os.path.exists(marker) else None
    # The retry may finish on the other executor before Spark's allocator (a round per
    # second) has created the replacement: wait for it rather than race it.
    new = wait_for("a replacement for the OOM-killed executor",
                   lambda: set(mon.names()) - before, 60)
    replacement = next((n for n in sorted(new, key=exec_id)), None)
    fact("job-b", ok=sum(counts) == 1000, secs=round(time.monotonic() - t, 2), victim=victim,
         replacement=replacement,
         victim_ended=victim and mon.get(victim, "ended"),
         victim_gone=victim and mon.get(victim, "gone"),
         replacement_created=replacement and mon.get(replacement, "created"),
         replacement_running=replacement and mon.get(replacement, "running"))
    wait_for("2 running executors after the OOM", lambda: len(running_executors(mon)) >= 2, 60)

    # c. Remove the oldest running executor's pod with no watch event. Spark only declares
    # a registered executor lost when it is older than missingPodDetectDelta (30 s).
    target = min(running_executors(mon), key=lambda n: mon.get(n, "created"))
    wait_for("executor older than 35 s", lambda: time.monotonic() - T0 - mon.get(target, "running") > 35, 90)
    before = set(mon.names())
    t_vanish = time.monotonic() - T0
    api("POST", f"/_sim/namespaces/{NS}/pods/{target}/vanish")
    new = wait_for("a replacement for the vanished pod",
                   lambda: sorted(set(mon.names()) - before, key=exec_id), 60)[0]
    wait_for("the replacement running", lambda: mon.get(new, "running"), 60)
    t = time.monotonic()
    n = spark.range(0, 100_000, numPartitions=4).count()
    fact("vanish", target=target, at=round(t_vanish, 2), replacement=new,
         replacement_created=mon.get(new, "created"), replacement_running=mon.get(new, "running"),
         job_ok=n == 100_000, job_secs=round(time.monotonic() - t, 2))

    # d. A frozen executor JVM (SIGSTOP, as a GC storm or a frozen node would leave it):
    # HeartbeatReceiver expires it and the driver kills and replaces it. Spark 3.5 to 4.3
    # record that as "Executor killed by driver." or as the heartbeat timeout, whichever of
    # the two removals arrives first (apache/spark#57494); the pod, deleted while its JVM
    # cannot stop, is SIGKILLed at the end of its grace.
    victim_d = max(running_executors(mon), key=exec_id)

    def registered():
        active = json.loads(urllib.request.urlopen(
            f"http://127.0.0.1:4040/api/v1/applications/{APP_ID}/executors", timeout=10).read())
        return any(e["id"] == str(exec_id(victim_d)) for e in active)

    # A pod running is not yet an executor Spark knows.
    wait_for("the executor to freeze registered", registered, 60)
    before = set(mon.names())
    frozen = processes_of(victim_d)
    t_freeze = time.monotonic() - T0
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    wait_for("the frozen executor's pod gone", lambda: mon.get(victim_d, "gone"), 150)
    new_d = wait_for("a replacement for the frozen executor",
                     lambda: sorted(set(mon.names()) - before, key=exec_id), 60)[0]
    wait_for("the frozen executor's replacement running", lambda: mon.get(new_d, "running"), 60)
    fact("freeze", target=victim_d, pids=frozen, at=round(t_freeze, 2),
         gone=mon.get(victim_d, "gone"), replacement=new_d)

    # The driver's REST API read directly, and spark-triage's view of it right after (it
    # reads the same API through the API server's service proxy).
    direct = json.loads(urllib.request.urlopen(
        f"http://127.0.0.1:4040/api/v1/applications/{APP_ID}/allexecutors", timeout=10).read())
    with open(os.path.join(WORK, "rest-direct.json"), "w") as f:
        json.dump(direct, f, indent=1)
    st = subprocess.run([TRIAGE, "status", "--kubeconfig", KUBECONFIG, "-n", NS, "-o", "json",
                         "--poll-interval", "5s"], capture_output=True, text=True, timeout=90)
    with open(os.path.join(WORK, "status-at-rest-read.json"), "w") as f:
        f.write(st.stdout)
    fact("driver-view", direct_ids=sorted(int(e["id"]) for e in direct if e["id"] != "driver"),
         status_rc=st.returncode, status_err=st.stderr[-300:])

    # e. A shuffle whose map output one executor loses: the first attempt of reduce
    # partition 0 grows its Python worker past the pod's limit (OOMKilled, 137) while the
    # reduce stage reads, so the stage cannot fetch that executor's output: Spark logs
    # FetchFailed and resubmits the map stage for the partitions it held.
    wait_for("2 running executors before the shuffle", lambda: len(running_executors(mon)) >= 2, 90)

    def two_registered():
        active = json.loads(urllib.request.urlopen(
            f"http://127.0.0.1:4040/api/v1/applications/{APP_ID}/executors", timeout=10).read())
        return sum(1 for e in active if e["id"] != "driver") >= 2

    # Both registered, so both write map output.
    wait_for("2 executors registered before the shuffle", two_registered, 90)
    marker_e = os.path.join(WORK, "shuffle-victim")

    def mapper(index, it):
        time.sleep(0.5)
        return ((x % 8, x) for x in it)

    def reducer(index, it):
        if index == 0 and TaskContext.get().attemptNumber() == 0 and not os.path.exists(marker_e):
            with open(marker_e, "w") as f:
                f.write(os.environ.get("SPARK_EXECUTOR_POD_NAME", "?"))
            held = []
            for _ in range(48):
                held.append(b"\x01" * (64 << 20))
                time.sleep(0.05)
            time.sleep(60)
        time.sleep(0.3)
        return [sum(v for _, v in it)]

    t = time.monotonic()
    sums = (sc.parallelize(range(8000), 8).mapPartitionsWithIndex(mapper)
            .partitionBy(8).mapPartitionsWithIndex(reducer).collect())
    victim_e = open(marker_e).read().strip() if os.path.exists(marker_e) else None
    fact("shuffle-loss", ok=sum(sums) == sum(range(8000)), secs=round(time.monotonic() - t, 2),
         victim=victim_e)
    # The live view on the same run: `status` with the event-log directory reads the log as
    # it stands (Spark flushes it at each stage's end) beside the pods.
    st = subprocess.run([TRIAGE, "status", "--kubeconfig", KUBECONFIG, "-n", NS, "-o", "json",
                         "--poll-interval", "5s", "--event-log-dir", EVENT_LOG_DIR],
                        capture_output=True, text=True, timeout=90)
    with open(os.path.join(WORK, "status-live-cost.json"), "w") as f:
        f.write(st.stdout)
    fact("live-cost", status_rc=st.returncode, status_err=st.stderr[-300:])
    # And with no event log at all: the chain from the driver's REST API (its stages and
    # their failed tasks).
    st = subprocess.run([TRIAGE, "status", "--kubeconfig", KUBECONFIG, "-n", NS, "-o", "json",
                         "--poll-interval", "5s"],
                        capture_output=True, text=True, timeout=90)
    with open(os.path.join(WORK, "status-live-rest.json"), "w") as f:
        f.write(st.stdout)
    # What the driver told, kept for a failure's detail (the chain depends on the order of
    # its stages' times and its executors' removals).
    rest = f"http://127.0.0.1:4040/api/v1/applications/{APP_ID}"
    try:
        stages = json.loads(urllib.request.urlopen(f"{rest}/stages", timeout=10).read())
        execs = json.loads(urllib.request.urlopen(f"{rest}/allexecutors", timeout=10).read())
    except (OSError, ValueError) as e:
        stages, execs = [], [{"id": "?", "removeTime": "?", "removeReason": f"not read: {e}"}]
    fact("live-rest", status_rc=st.returncode, status_err=st.stderr[-300:],
         stages=sorted((s["stageId"], s["attemptId"], s["status"], s.get("submissionTime"),
                        s.get("completionTime")) for s in stages),
         removed=[(e["id"], e.get("removeTime"), (e.get("removeReason") or "")[:60])
                  for e in execs if e.get("removeTime")])

    # Stop: Spark deletes its executor pods by label.
    t = time.monotonic()
    spark.stop()
    fact("stopped", secs=round(time.monotonic() - t, 2))
    wait_for("no executor pods", lambda: not executor_pods(), 60)
    mon.stop = True
    fact("all-gone", executors=sorted(mon.names(), key=exec_id))


if __name__ == "__main__":
    main()
