"""Checks one run of scripts/e2e-spark.sh: what the real Spark driver did (its `E2E` facts
and its log) against what spark-triage reported (live `status --for` JSON, and `status` read
back from the `record`ing). Prints one line per check, the timings, and `N passed, M failed`;
exits 1 if any check failed.

usage: check.py RUN_DIR
"""

import glob
import json
import subprocess
import os
import re
import sys

RUN = sys.argv[1]
# The Spark version the run used (scripts/e2e-spark.sh --spark-version): what spark-triage
# must say Spark did depends on it (failures count toward maxNumFailures only from 4.0).
VERSION = os.environ.get("E2E_SPARK_VERSION", "4.3.0")
COUNTS_FAILURES = tuple(int(x) for x in VERSION.split(".")[:2]) >= (4, 0)
info = []
results = []
# What a frozen executor may be called: Spark's removal text races (apache/spark#57494).
HEARTBEAT = {"killed-by-driver", "heartbeat-timeout"}


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f"  ({detail})" if detail and not ok else ""))


def read(name):
    try:
        with open(os.path.join(RUN, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(name):
    try:
        return json.loads(read(name))
    except ValueError as e:
        return {"error": str(e)}


driver_log = read("driver.log")
facts = {}
for m in re.finditer(r"E2E (\{.*\})", driver_log):
    f = json.loads(m.group(1))
    facts[f["kind"]] = f

live = load_json("status.json")
replayed = load_json("status-recording.json")


def app_of(report):
    want = facts.get("driver-pod", {}).get("app_id")
    return next((a for a in report.get("apps", []) if a.get("app_id") == want), None)


def app_of_any(report):
    return next(iter(report.get("apps", [])), None)


def executor(app, pod):
    return next((e for e in (app or {}).get("executors", []) if e.get("pod") == pod), None)


def exec_id(pod):
    return int(pod.rsplit("-", 1)[1]) if pod else None


check("driver pod created and ready", "driver-pod" in facts)
up = facts.get("session-up")
check("SparkContext up (no watch hang)", up and up["secs"] < 90, up)
check("no \"External scheduler cannot be instantiated\"",
      "External scheduler cannot be instantiated" not in driver_log)
check("job a (range aggregations) completes", facts.get("job-a", {}).get("ok"), facts.get("job-a"))

b = facts.get("job-b", {})
victim = b.get("victim")
check("job b completes after its task's retry", b.get("ok"), b)
check("job b's first attempt ran on an executor", victim and victim != "?", victim)
vid = exec_id(victim) if victim and victim != "?" else None
check("driver log: Spark's exit text for the OOM-killed executor",
      vid is not None and f"The executor with id {vid} exited with exit code 137(SIGKILL, possible container OOM)"
      in driver_log)
check("driver log: termination reason OOMKilled", "termination reason: OOMKilled" in driver_log)
check("replacement for the OOM-killed executor has the next id",
      b.get("replacement") and exec_id(b["replacement"]) == 3, b.get("replacement"))

c = facts.get("vanish", {})
target = c.get("target")
tid = exec_id(target)
check("vanished executor replaced after Spark's poll", c.get("replacement") and c.get("job_ok"), c)
check("driver log: Spark declares the vanished executor lost",
      tid is not None and f"The executor with ID {tid} " in driver_log
      and "was not found in the cluster at the polling time" in driver_log)
check("replacement for the vanished executor has the next id",
      c.get("replacement") and exec_id(c["replacement"]) == 4, c.get("replacement"))
d = facts.get("freeze", {})
kill_target = d.get("target")
check("frozen executor (SIGSTOP): expired by the driver, its pod gone, replaced",
      d.get("pids") and d.get("gone") and d.get("replacement"), d)
check("spark.stop(): every executor pod deleted", "all-gone" in facts, facts.get("stopped"))

requests = load_json("requests.json")
requests = requests if isinstance(requests, list) else []
deletes = [r["uri"] for r in requests if r["method"] == "DELETE"]
def is_executor_watch(r):
    """Spark's own executor watch (not spark-triage's, which selects drivers and executors)."""
    return r["method"] == "GET" and "watch=true" in r["uri"] and "spark-role%3Dexecutor" in r["uri"]


exec_watches = [r for r in requests if is_executor_watch(r)]
# fabric8 tries a WebSocket first in every Spark release run (3.5.7's 6.7.2, 4.0.1's 7.1.0,
# 4.3.0's 7.6.1).
check("Spark's executor watch is a WebSocket (answered 101)",
      any(r.get("websocket") for r in exec_watches), exec_watches)
# Spark 4.3.0's watch leaves out pods labelled spark-exec-inactive=true; 4.0.1's and 3.5.7's
# do not (their polls do): reported, for docs/diagnosis.md.
info.append(f"Spark {VERSION}'s executor watch "
            + ("excludes" if any("spark-exec-inactive" in r["uri"] for r in exec_watches) else "does not exclude")
            + " spark-exec-inactive pods")
check("Spark deleted the OOM-killed pod by name",
      victim and any(u.split("?")[0].endswith(f"/pods/{victim}") for u in deletes), deletes)
check("Spark sent no DELETE for the vanished pod",
      target and not any(u.split("?")[0].endswith(f"/pods/{target}") for u in deletes), deletes)
for kind in ("services", "persistentvolumeclaims", "pods", "configmaps"):
    check(f"spark.stop(): collection DELETE of {kind} by label",
          any(re.search(rf"/{kind}\?labelSelector=spark-app-selector%3D", u) for u in deletes), deletes)

for label, report in (("live status", live), ("status --recording", replayed)):
    app = app_of(report)
    check(f"{label}: the application is there", app, report.get("error") or report.get("problems"))
    v = executor(app, victim)
    check(f"{label}: OOM-killed executor is container-oom-killed with exit 137",
          v and "container-oom-killed" in v["findings"] and v["exit_code"] == 137, v)
    spark = (v or {}).get("spark") or {}
    check(f"{label}: Spark {VERSION} read from the pod label; the OOM kill "
          + ("counts" if COUNTS_FAILURES else "does not count") + " toward maxNumFailures",
          spark.get("spark_version") == VERSION and spark.get("counted") == COUNTS_FAILURES, spark)
    t = executor(app, target)
    check(f"{label}: vanished executor is flagged missing",
          t and t["missing"] and "missing" in t["findings"], t)
    seen = sorted(e["pod"] for e in (app or {}).get("executors", []))
    spark_pods = sorted(facts.get("all-gone", {}).get("executors", []))
    check(f"{label}: knows exactly the executors Spark created", seen and seen == spark_pods,
          f"{seen} vs {spark_pods}")
    check(f"{label}: every executor ended gone",
          app and all(e["gone"] for e in app["executors"]),
          [(e["id"], e["state"], e["gone"]) for e in (app or {}).get("executors", [])])
    ids = sorted(e["id"] for e in (app or {}).get("executors", []))
    check(f"{label}: executor ids 1..6 as Spark numbered them", ids == [1, 2, 3, 4, 5, 6], ids)
    k = executor(app, kill_target)
    check(f"{label}: the frozen executor is a heartbeat timeout or a kill by the driver that "
          "was not a scale-down (warn or error), never a normal ending",
          k and HEARTBEAT & set(k["findings"]) and k.get("severity") in ("warn", "error"), k)
    check(f"{label}: the client-mode driver's settings were read (its REST API's environment)",
          app and app.get("config_read"), app and {x: app.get(x) for x in ("config_read", "problems")})
    verdict = (app or {}).get("verdict") or {}
    check(f"{label}: the app's headline is the OOM kill with a value (not the driver's absence "
          "in client mode, not a configuration risk)",
          verdict.get("cause") in ("executors-failed", "crash-loop")
          and "OOMKilled (137)" in verdict.get("summary", "")
          and "--conf spark.executor.memoryOverhead=" in verdict.get("hint", ""), verdict)


# The same run as nobody recorded it: Spark's event log alone (status --recording DIR).
logged = load_json("status-eventlog.json")
app = app_of(logged)
check("event log: the application is there, named", app and app.get("app_name"),
      logged.get("error") or read("status-eventlog.err")[:300])
v = executor(app, victim)
check("event log: OOM-killed executor is container-oom-killed with exit 137, witness event-log",
      v and "container-oom-killed" in v["findings"] and v["exit_code"] == 137 and v.get("witness") == "event-log", v)
spark = (v or {}).get("spark") or {}
check("event log: the OOM kill " + ("counts" if COUNTS_FAILURES else "does not count")
      + " toward maxNumFailures, as from the pod", spark.get("counted") == COUNTS_FAILURES, spark)
t = executor(app, target)
check("event log: the vanished executor is missing (Spark's own detection)",
      t and "missing" in t["findings"], t)
k = executor(app, kill_target)
check("event log: the frozen executor is a heartbeat timeout or a kill by the driver that was "
      "not a scale-down (dynamic allocation off in the log's environment)",
      k and HEARTBEAT & set(k["findings"]) and k.get("severity") in ("warn", "error"), k)
verdict = (app or {}).get("verdict") or {}
check("event log: the app's headline is the OOM kill, with a value from the log's environment",
      verdict.get("cause") in ("executors-failed", "crash-loop")
      and "OOMKilled (137)" in verdict.get("summary", "")
      and "From the event log's environment" in verdict.get("hint", "")
      and "--conf spark.executor.memoryOverhead=" in verdict.get("hint", ""), verdict)
# An event log knows the executors that registered with the driver: every one the
# recording's driver reads knew, and none whose pod the recording never saw (one that
# registered after the last driver read is in the log and not in that read).
ids = sorted(e["id"] for e in (app or {}).get("executors", []))
recorded = (app_of(replayed) or {}).get("executors", [])
registered = sorted(e["id"] for e in recorded if (e.get("driver") or {}).get("known"))
check("event log: the executors that registered with the driver, no other",
      ids and set(registered) <= set(ids) <= {e["id"] for e in recorded},
      f"{ids} vs {registered} known to the driver reads, {sorted(e['id'] for e in recorded)} recorded")
rep_log, rep_rec = load_json("report-eventlog.json"), load_json("report-recording.json")
a_log, a_rec = app_of(rep_log), app_of(rep_rec)
check("report of the event log counts the failures by cause as the recording's",
      a_log and a_rec and a_log.get("by_finding", {}).get("container-oom-killed")
      == a_rec.get("by_finding", {}).get("container-oom-killed")
      and a_log.get("failures_counted") == a_rec.get("failures_counted"),
      ((a_log or {}).get("by_finding"), (a_rec or {}).get("by_finding"),
       (a_log or {}).get("failures_counted"), (a_rec or {}).get("failures_counted")))

# Spark's own History Server over the same log: `report --history-server` says the same.
rep_hist = load_json("report-history.json")
a_hist = app_of(rep_hist)
# The witness a value was read from is named apart (the settings are the same).
if a_hist is not None:
    a_hist = json.loads(json.dumps(a_hist).replace("From the History Server's environment",
                                                   "From the event log's environment"))
# The History Server keeps only the first of the frozen executor's removals ("Executor
# killed by driver."); the log has the heartbeat timeout beside it. That executor aside,
# the two reports are the same.
def without_frozen(a):
    if isinstance(a, dict):
        return {k: without_frozen(v) for k, v in a.items() if k not in HEARTBEAT}
    if isinstance(a, list):
        return [without_frozen(x) for x in a
                if not (isinstance(x, dict) and (x.get("finding") in HEARTBEAT
                                                 or x.get("executor") == exec_id(kill_target)))]
    return a


def verdict_gist(a):
    v = (a or {}).get("verdict") or {}
    return {k: v.get(k) for k in ("cause", "severity", "summary", "witness")}


check("the frozen executor: the log says heartbeat-timeout, the History Server (first removal "
      "only) killed-by-driver",
      (a_log or {}).get("by_cause", {}).get("heartbeat-timeout") == 1
      and (a_hist or {}).get("by_cause", {}).get("killed-by-driver") == 1,
      ((a_log or {}).get("by_cause"), (a_hist or {}).get("by_cause")))
# The cost comes from the log's stages and tasks, which `report --history-server` does not
# read (yet): it is left out of the comparison.
def without_cost(a):
    out = {k: v for k, v in (a or {}).items() if k not in ("verdict", "cost")}
    out["app_findings"] = [f for f in out.get("app_findings", [])
                           if not f.startswith("losses-recomputed")]
    return out


a_hist_cmp = without_frozen(without_cost(a_hist))
a_log_cmp = without_frozen(without_cost(a_log))
check("report --history-server (Spark's History Server over the log) equals the log's report",
      a_hist is not None and a_hist_cmp == a_log_cmp and verdict_gist(a_hist) == verdict_gist(a_log),
      read("report-history.err")[:300] or read("history.log")[-300:]
      or {k: (v, a_log_cmp.get(k)) for k, v in a_hist_cmp.items() if v != a_log_cmp.get(k)})


def processes_of(app_id):
    """Live processes (not zombies) whose environment names this application: the executor
    JVMs and the Python workers they forked."""
    found = []
    needle = f"SPARK_APPLICATION_ID={app_id}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ")[:100].decode(errors="replace")
            found.append(f"{pid}: {cmd}")
        except OSError:
            continue
    return found


app_id = facts.get("driver-pod", {}).get("app_id")
# The shuffle loss (job e): the OOM-killed executor lost its map output; the event log's
# report names it as the cause of the resubmission, with the rerun tasks Spark's own log
# counts (read here from its lines) and the time within 10 % of the added attempts' spans.
def log_lines():
    """The event log's lines, decompressed (zstd, Spark 4's default, or none)."""
    out = []
    for path in sorted(glob.glob(os.path.join(RUN, "eventlog", "**", "events_*"), recursive=True)
                       + glob.glob(os.path.join(RUN, "eventlog", "*.json"))):
        if path.endswith(".zstd") or path.endswith(".zst"):
            data = subprocess.run(["zstd", "-dcq", path], capture_output=True).stdout
        elif "." not in os.path.basename(path) or path.endswith(".json"):
            with open(path, "rb") as f:
                data = f.read()
        else:
            return None  # another codec: not read here
        for line in data.decode(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut at the end of an in-progress file
    return out


lines = log_lines()
loss = {}
victim_e = (facts.get("shuffle-loss") or {}).get("victim")
check("shuffle loss: the job completes with one executor OOM-killed under it",
      (facts.get("shuffle-loss") or {}).get("ok") and victim_e, facts.get("shuffle-loss"))
if lines is None:
    print("skip the shuffle loss's counts: the event log's codec is read only by spark-triage")
else:
    attempts = [l["Stage Info"] for l in lines if l.get("Event") == "SparkListenerStageCompleted"
                and l["Stage Info"].get("Stage Attempt ID", 0) > 0]
    rerun_tasks = sum(1 for l in lines if l.get("Event") == "SparkListenerTaskEnd"
                      and l.get("Stage Attempt ID", 0) > 0)
    spans = sum(a["Completion Time"] - a["Submission Time"] for a in attempts) / 1000
    cost = (a_log or {}).get("cost") or {}
    loss = next(iter(cost.get("losses", [])), {})
    check("shuffle loss: Spark resubmitted stages (its log has attempts after the first)",
          attempts and rerun_tasks, len(attempts))
    check("shuffle loss: the report charges the resubmission to the OOM-killed executor",
          victim_e and loss.get("executor") == exec_id(victim_e)
          and loss.get("cause") == "OOMKilled (137)", (victim_e, loss))
    # Job b's OOM kill cost its running task only: every added attempt is the shuffle's.
    check("shuffle loss: its recomputed tasks are those Spark's log counts",
          loss.get("rerun_tasks") == rerun_tasks
          and sum(l.get("rerun_tasks", 0) for l in cost.get("losses", [])) == rerun_tasks,
          (loss.get("rerun_tasks"), rerun_tasks, cost.get("losses")))
    check("shuffle loss: the time lost within 10 % of the added attempts' spans",
          spans > 0 and abs(loss.get("wall_seconds", 0) - spans) <= spans / 10,
          (loss.get("wall_seconds"), spans))
    print(f"  shuffle loss: {loss.get('line')}")
live_cost = app_of(load_json("status-live-cost.json")) or {}
live_loss = next(iter((live_cost.get("cost") or {}).get("losses", [])), {})
check("shuffle loss: the live view (status --event-log-dir, driver running) says the same loss",
      victim_e and live_loss.get("executor") == exec_id(victim_e)
      and live_loss.get("rerun_tasks") == (loss or {}).get("rerun_tasks"),
      (live_loss, facts.get("live-cost")))
rest_cost = (app_of(load_json("status-live-rest.json")) or {}).get("cost") or {}
rest_loss = next((l for l in rest_cost.get("losses", [])
                  if victim_e and l.get("executor") == exec_id(victim_e)), {})
check("shuffle loss: with no event log, the driver's REST API tells the same chain "
      "(the OOM-killed executor, the same recomputed tasks)",
      rest_cost.get("from") == "driver-api" and rest_loss
      and rest_loss.get("rerun_tasks") == (loss or {}).get("rerun_tasks")
      and rest_loss.get("cause") == "OOMKilled (137)",
      (rest_cost.get("from"), rest_loss, facts.get("live-rest")))

# The dynamic-allocation run (scripts/cost-fixtures.py idle-timeout), counted from its log in
# one pass: the idle tail is each removed executor's time from its last task's end (or
# registration) to its removal; its last job's shuffle has the executors that wrote its map
# output held by shuffle tracking until the app's end, and past their last task plus the
# 3 s timeout (more than the 10 s a removal may take) each counts.
def idle_facts(path):
    try:
        with open(path) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    except (OSError, ValueError):
        return None, None
    maps = {p for l in lines if l["Event"] == "SparkListenerStageSubmitted"
            for p in l["Stage Info"].get("Parent IDs", [])}
    last, wrote, removed, end, gaps = {}, set(), {}, None, 0
    for l in lines:
        if l["Event"] == "SparkListenerExecutorAdded":
            last[l["Executor ID"]] = l["Timestamp"]
        elif l["Event"] == "SparkListenerTaskEnd":
            x = l["Task Info"]["Executor ID"]
            last[x] = max(last.get(x, 0), l["Task Info"]["Finish Time"])
            if l["Stage ID"] in maps and l["Task End Reason"]["Reason"] == "Success":
                wrote.add(x)
        elif l["Event"] == "SparkListenerExecutorRemoved":
            removed[l["Executor ID"]] = l["Timestamp"]
            gaps += l["Timestamp"] - last[l["Executor ID"]]
        elif l["Event"] == "SparkListenerApplicationEnd":
            end = l["Timestamp"]
    past = [removed.get(x, end) - (last[x] + 3000) for x in wrote]
    return gaps / 1000, sum(p for p in past if p > 10000) / 1000


gaps, held = idle_facts(os.path.join(RUN, "idle-timeout.json"))
idle = ((app_of_any(load_json("report-idle.json")) or {}).get("cost") or {}).get("waste") or {}
check("dynamic allocation: the report's idle tail is the gaps from each executor's last task "
      "to its removal",
      gaps and abs(idle.get("idle_tail_executor_seconds", -1) - gaps) < 0.001
      and idle.get("idle_removed", 0) >= 2,
      (idle, gaps, read("idle.log")[-300:]))
check("dynamic allocation: the executors shuffle tracking held past the idle timeout are "
      "counted as the log says",
      held and abs(idle.get("held_by_shuffle_executor_seconds", -1) - held) < 0.001
      and idle.get("held_by_shuffle", 0) >= 1,
      (idle, held))

# The driver view: spark-triage's per-executor `driver` fields against the REST API read
# directly a moment before.
direct = load_json("rest-direct.json")
direct = {int(e["id"]): e for e in direct if isinstance(direct, list) and e.get("id") != "driver"} \
    if isinstance(direct, list) else {}
at_rest = app_of(load_json("status-at-rest-read.json"))
check("driver REST API read directly", direct, facts.get("driver-view"))
kid = exec_id(kill_target) if kill_target else None
info.append(f"Spark {VERSION} recorded the frozen executor's removal as "
            f"{(direct.get(kid) or {}).get('removeReason', '?')!r}")
check("spark-triage read the driver view through the service proxy",
      at_rest and (at_rest.get("driver_api") or {}).get("state") == "ok", (at_rest or {}).get("driver_api"))
mismatch = []
for i, d in direct.items():
    e = next((x for x in (at_rest or {}).get("executors", []) if x["id"] == i), None)
    mine = (e or {}).get("driver") or {}
    if mine.get("active") != d.get("isActive") or mine.get("remove_reason") != d.get("removeReason"):
        mismatch.append((i, d.get("isActive"), mine.get("active"), (d.get("removeReason") or "")[:60],
                         (mine.get("remove_reason") or "")[:60]))
check("spark-triage's driver view (active, removeReason) matches the REST API per executor",
      direct and not mismatch, mismatch)

# The HTTP-watch run (WebSocket refused).
http_log = read("http/driver.log")
http = {}
for m in re.finditer(r"E2E (\{.*\})", http_log):
    f = json.loads(m.group(1))
    http[f["kind"]] = f
http_requests = load_json("http/requests.json")
http_requests = http_requests if isinstance(http_requests, list) else []
pod_watches = [r for r in http_requests if is_executor_watch(r)]
check("WebSocket refused: Spark's watch tried a WebSocket, then plain HTTP",
      any(r.get("websocket") for r in pod_watches) and any(not r.get("websocket") for r in pod_watches),
      pod_watches)
check("WebSocket refused: SparkContext up", (http.get("http-session-up") or {}).get("secs", 999) < 90,
      http.get("http-session-up"))
check("WebSocket refused: the job completes", (http.get("http-job") or {}).get("ok"), http.get("http-job"))
check("WebSocket refused: executor pods deleted at stop",
      (http.get("http-stopped") or {}).get("executors_left") == 0, http.get("http-stopped"))

left = processes_of(app_id) if app_id else ["no app id"]
check("no executor process left after the simulator stopped", not left, left)
check("the recording was written", os.path.getsize(os.path.join(RUN, "session.ndjson.zst")) > 0
      if os.path.exists(os.path.join(RUN, "session.ndjson.zst")) else False)

print()
for line in info:
    print(f"info: {line}")
if up:
    print(f"timing: session up {up['secs']} s (driver start to getOrCreate)")
if "job-a" in facts:
    print(f"timing: job a {facts['job-a']['secs']} s")
if b:
    print(f"timing: job b {b['secs']} s (incl. OOM kill, replacement and retry)")
    if b.get("victim_ended") is not None and b.get("replacement_created") is not None:
        print(f"timing: OOM kill seen to replacement pod created {b['replacement_created'] - b['victim_ended']:.2f} s")
if c.get("replacement_created") is not None:
    print(f"timing: vanish to replacement pod created {c['replacement_created'] - c['at']:.2f} s, "
          f"running {c['replacement_running'] - c['at']:.2f} s (poll interval 5 s)")
if "http-session-up" in http:
    print(f"timing: session up over an HTTP watch (WebSocket refused) {http['http-session-up']['secs']} s")
if "stopped" in facts:
    print(f"timing: spark.stop() {facts['stopped']['secs']} s")


def shape(r):
    """A request with names and values taken out: what kind of call it was."""
    path, _, query = r["uri"].partition("?")
    path = re.sub(r"/namespaces/[^/]+", "/namespaces/NS", path)
    path = re.sub(r"/(pods|configmaps|services|persistentvolumeclaims)/[^/]+", r"/\1/NAME", path)
    keys = sorted(k.split("=")[0] for k in query.split("&") if k)
    return f"{r['method']} {path}" + (f"?{'&'.join(keys)}" if keys else "")


spark_calls = sorted({shape(r) for r in requests if "/_sim/" not in r["uri"]})
print("requests seen by the API server (Spark's and spark-triage's):")
for c in spark_calls:
    print("  " + c)
passed = sum(results)
failed = len(results) - passed
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
