//! Reconciliation: the pod (Kubernetes' view) against the driver's executor list (Spark's
//! view, its REST API). Each disagreement is one finding:
//!
//! - `driver-lost-pod`: active in the driver, but its pod is gone, for longer than Spark
//!   itself needs to notice (`missingPodDetectDelta` + `apiPollingInterval`);
//! - `unregistered`: the pod has been Running for [`UNREGISTERED_AFTER`] and the driver
//!   does not list the executor at all;
//! - `zombie`: removed in the driver, but the pod still Running [`ZOMBIE_AFTER`] later;
//! - `driver-removed`: Spark's own `removeReason`, verbatim, with what it says.
//!
//! Pure: the caller passes the times. Ref: Spark's `ExecutorSummary`
//! (<https://spark.apache.org/docs/latest/monitoring.html#executor-task-metrics>) and
//! `ExecutorPodsLifecycleManager.scala` for the reason texts.

use chrono::Duration;

use super::{Code, Finding, Severity};
use crate::model::driver::{DriverSeen, ExecutorList, RemovalKind, parse_removal, reason_headline};
use crate::model::{DriverExecutor, ExecutorPod, ExecutorState, Time, fmt_time};
use crate::text;
use crate::text::human_duration;
use crate::version::SparkVersion;

/// A Spark container that fails within this long of starting, never listed by the driver,
/// most likely could not reach the driver.
pub const QUICK_FAILURE: Duration = Duration::seconds(60);
/// A Running pod the driver has not heard of for this long never registered.
pub const UNREGISTERED_AFTER: Duration = Duration::seconds(60);
/// Spark deletes the pod of an executor it removes; Running this long after is a zombie
/// (the default `terminationGracePeriodSeconds`).
pub const ZOMBIE_AFTER: Duration = Duration::seconds(30);

const REF_REST: &str = "https://spark.apache.org/docs/latest/monitoring.html#rest-api";
const REF_LIFECYCLE: &str = "https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala";

/// What the pod side says, for reconciliation.
#[derive(Debug, Clone, Copy)]
pub struct PodSide {
    /// The executor id.
    pub id: i64,
    /// Spark's state of it, from the driver's side.
    pub state: ExecutorState,
    /// When the pod was deleted, went missing, or (never seen) when the driver first named it.
    pub gone_at: Option<Time>,
    /// The pod was never seen: only the driver knows this executor.
    pub never_seen: bool,
    /// Since when the pod is Running (its last transition to Running).
    pub running_since: Option<Time>,
    /// Spark's own time to notice a removed pod (`missingPodDetectDelta` + poll interval, or
    /// the heartbeat timeout when it does not poll).
    pub lost_grace: Duration,
    /// `spark.kubernetes.executor.enableApiPolling`: Spark polls (else [`LOST_RULE`]).
    pub api_polling: bool,
    /// The Spark container failed (non-zero) soon after it started: its exit code and how
    /// long it ran.
    pub quick_failure: Option<(i32, Duration)>,
    /// The app's Spark version (how executors find the driver depends on it).
    pub spark_version: SparkVersion,
    /// `spark.dynamicAllocation.enabled`, when the app's configuration was read.
    pub dynamic_allocation: Option<bool>,
    /// The Spark container was killed (137, not `OOMKilled`) after its deletion asked it to
    /// stop: its JVM did not stop on SIGTERM within the grace period.
    pub killed_after_grace: bool,
    /// The driver's log says `Removing executor N with no recent heartbeats`.
    pub heartbeat_logged: bool,
}

/// How Spark notices a removed pod: without polling, then with it.
const LOST_RULE: [&str; 2] = [
    "enableApiPolling=false, so only when the heartbeats time out (spark.network.timeout)",
    "missingPodDetectDelta + apiPollingInterval",
];

/// The reconciliation findings for one executor id.
pub fn reconcile(pod: &PodSide, seen: Option<&DriverSeen>) -> Vec<Finding> {
    let Some(seen) = seen else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match &seen.exec {
        // Active in an event log's list means registered at that moment of the run, and
        // the log has no pods: absence of a pod says nothing there.
        Some(d) if d.active => {
            if let Some(gone) = pod.gone_at
                && seen.from == ExecutorList::DriverApi
                && seen.at - gone > pod.lost_grace
            {
                out.push(lost_pod(pod, d, seen.at, gone));
            }
        }
        Some(d) => {
            out.push(removed(pod, d));
            if let Some(removed_at) = d.remove_time
                && pod.gone_at.is_none()
                && pod.state == ExecutorState::Running
                && seen.at - removed_at > ZOMBIE_AFTER
            {
                out.push(zombie(pod.id, d, seen.at, removed_at));
            }
        }
        None => {
            if pod.gone_at.is_none()
                && pod.state == ExecutorState::Running
                && let Some(since) = pod.running_since
                && seen.at - since > UNREGISTERED_AFTER
            {
                out.push(unregistered(pod.id, seen.at, since));
            }
            // An event log knows of a pod's end only once it was written past it.
            if let Some((code, ran)) = pod.quick_failure
                && (seen.from == ExecutorList::DriverApi
                    || pod.gone_at.is_some_and(|g| g < seen.at))
            {
                out.push(driver_unreachable(pod, code, ran, seen.at));
            }
        }
    }
    out
}

/// The executor died within seconds and the driver never listed it: it most likely never
/// reached the driver (kubeflow/spark-operator#1200).
fn driver_unreachable(pod: &PodSide, code: i32, ran: Duration, at: Time) -> Finding {
    let how = if pod.spark_version.uses_driver_pod_ip_by_default() {
        "From Spark 4.1 executors dial the driver's pod IP \
         (spark.kubernetes.executor.useDriverPodIP=true): check NetworkPolicies between executor \
         and driver pods (ports spark.driver.port 7078 and spark.blockManager.port 7079)"
    } else {
        "Executors dial the driver's headless service by DNS name: check that it resolves from \
         the executor (CoreDNS, the service's publishNotReadyAddresses when the driver is not \
         Ready yet), or set spark.kubernetes.executor.useDriverPodIP=true (4.1+); check \
         NetworkPolicies for ports 7078/7079"
    };
    Finding::new(
        Code::DriverUnreachable,
        Severity::Error,
        format!(
            "Executor {} failed {} after starting (exit {code}) and the driver never listed it: it most likely could not reach the driver",
            pod.id,
            human_duration(ran)
        ),
    )
    .evidence(format!(
        "driver at {}: no executor {} in its list",
        fmt_time(&at),
        pod.id
    ))
    .hint(format!(
        "{how}. A sidecar proxy (istio-proxy) that is not ready when the JVM starts also drops \
         the first connection: hold the application until the proxy starts. The executor log \
         names the address it tried."
    ))
    .reference("https://github.com/kubeflow/spark-operator/issues/1200")
}

fn lost_pod(pod: &PodSide, d: &DriverExecutor, at: Time, gone: Time) -> Finding {
    let how = if pod.never_seen {
        "has no pod (none was seen)"
    } else {
        "lost its pod"
    };
    Finding::new(
        Code::DriverLostPod,
        Severity::Error,
        format!(
            "Spark still counts executor {} as active {} after it {how}",
            pod.id,
            human_duration(at - gone)
        ),
    )
    .evidence(format!(
        "driver at {}: isActive=true, addTime={}",
        fmt_time(&at),
        d.add_time.map_or_else(|| "?".to_owned(), |t| fmt_time(&t))
    ))
    .evidence(format!(
        "pod gone since {} (Spark notices within {}: {})",
        fmt_time(&gone),
        human_duration(pod.lost_grace),
        LOST_RULE[usize::from(pod.api_polling)]
    ))
    .hint(
        "The driver did not process the pod's removal: its pod watch and polls may be failing \
         (driver log: KubernetesClient or watch errors; RBAC to list/watch pods). Until it does, \
         Spark schedules tasks onto an executor that is not there and does not request a \
         replacement.",
    )
    .reference(REF_LIFECYCLE)
}

/// "Executor killed by driver." said as what the evidence allows: a scale-down only when
/// dynamic allocation is on and nothing says otherwise; a heartbeat timeout when the driver's
/// log says so; else a kill that is not a scale-down, with why (Spark 3.5 to 4.3 write this
/// text for some heartbeat timeouts: the backend's `ExecutorKilled` arrives before
/// `HeartbeatReceiver`'s `ExecutorProcessLost`, apache/spark#57494, SPARK-56952, SPARK-58908).
fn killed_by_driver(pod: &PodSide, d: &DriverExecutor) -> Option<(Code, Severity, String, String)> {
    const AMBIGUOUS: &str = "Spark 3.5 to 4.3 record some heartbeat timeouts as \"Executor \
         killed by driver.\" (apache/spark#57494, SPARK-56952, SPARK-58908): the executor may \
         have stopped heartbeating (GC, a frozen node, the network). Read the driver's log for \
         \"Removing executor N with no recent heartbeats\"";
    if pod.heartbeat_logged {
        return Some((
            Code::HeartbeatTimeout,
            Severity::Error,
            "a heartbeat timeout, by the driver's own record".to_owned(),
            "The driver recorded its heartbeat's expiry (\"Removing executor N with no recent \
             heartbeats\" in its log, or \"Executor heartbeat timed out\" as a second removal \
             in its event log): a heartbeat timeout that Spark recorded as a kill first (Spark \
             3.5 to 4.3, apache/spark#57494). The executor stopped heartbeating for \
             spark.network.timeout: a long GC pause, a frozen or overloaded node, the network. \
             Look at its GC log and its node."
                .to_owned(),
        ));
    }
    let mut why = Vec::new();
    if pod.dynamic_allocation == Some(false) {
        why.push("dynamic allocation is off".to_owned());
    }
    if d.tasks_lost > 0 {
        why.push(format!(
            "{} task{} failed with it as lost (ExecutorLostFailure, the event log): dynamic \
             allocation releases only idle executors",
            d.tasks_lost,
            if d.tasks_lost == 1 { "" } else { "s" }
        ));
    }
    if pod.killed_after_grace {
        why.push(
            "its JVM did not stop on SIGTERM and was killed at the end of its grace period (a hung JVM)"
                .to_owned(),
        );
    }
    if why.is_empty() {
        // Dynamic allocation on: a scale-down, as the text says. Not known (the driver's
        // configuration was not read): said so, for the record, not as a warning.
        return pod.dynamic_allocation.is_none().then(|| {
            (
                Code::KilledByDriver,
                Severity::Info,
                "a scale-down or not: dynamic allocation is not known (the driver's configuration was not read)"
                    .to_owned(),
                format!(
                    "A scale-down when dynamic allocation is on; the driver's configuration was not \
                     read, so it is not known. {AMBIGUOUS}."
                ),
            )
        });
    }
    Some((
        Code::KilledByDriver,
        Severity::Warn,
        format!("not a scale-down: {}", why.join("; ")),
        format!(
            "Not a scale-down: {}. {AMBIGUOUS}; with dynamic allocation off only a kill request \
             (sc.killExecutors, spark-triage kill) releases an executor.",
            why.join("; ")
        ),
    ))
}

/// The most of one line of a removal reason its finding quotes (Spark's lines are short: a
/// container's status, the API's message): the reason is kept whole once, on the driver's
/// entry.
const EVIDENCE_LINE_MAX: usize = 512;

fn removed(pod: &PodSide, d: &DriverExecutor) -> Finding {
    let id = pod.id;
    let reason = d.remove_reason.as_deref().unwrap_or("");
    let parsed = parse_removal(reason);
    let headline = reason_headline(reason);
    let killed = (parsed.kind == RemovalKind::KilledByDriver)
        .then(|| killed_by_driver(pod, d))
        .flatten();
    let (code, severity, hint) = match parsed.kind {
        RemovalKind::Exited => (
            Code::DriverRemoved,
            if parsed.exit_code == Some(0) {
                Severity::Info
            } else {
                Severity::Warn
            },
            "Spark's reason is the container's exit: the exit finding (from the pod, or from \
             this text when the pod is gone) says what to change.",
        ),
        RemovalKind::StoppedWithApp => (
            Code::EndedWithDriver,
            Severity::Info,
            "Normal: the application ended and Spark stopped its executors with it (the event \
             log has no removal of its own for an executor still registered at the end).",
        ),
        RemovalKind::Deleted => (
            Code::DriverRemoved,
            Severity::Info,
            "Spark saw the pod deleted (dynamic-allocation scale-down, a kill, spark.stop(), or \
             someone else) and did not count it against the application.",
        ),
        RemovalKind::NotFound => (
            Code::DriverRemoved,
            Severity::Warn,
            "Spark's missing-pod detection: the pod vanished with no deletion event reaching the \
             driver (see the missing finding).",
        ),
        RemovalKind::KilledByDriver => (
            Code::DriverRemoved,
            Severity::Info,
            "Normal: the driver released the executor (dynamic allocation after \
             spark.dynamicAllocation.executorIdleTimeout, or a kill request). Nothing failed.",
        ),
        RemovalKind::Decommissioned => (
            Code::DriverRemoved,
            Severity::Info,
            "Normal: the executor was decommissioned (scale-down with decommissioning, a node \
             going away, or executor rolling via spark.kubernetes.executor.rollInterval); its \
             blocks were migrated when storage decommissioning is on.",
        ),
        RemovalKind::HeartbeatTimeout => (
            Code::HeartbeatTimeout,
            Severity::Error,
            "The driver stopped hearing the executor's heartbeats for spark.network.timeout \
             (120s by default): the executor in a long GC pause or frozen, its node overloaded \
             or gone, or the network between them. Look at the executor's GC log and its node; \
             raise spark.network.timeout only after ruling those out.",
        ),
        RemovalKind::Disassociated => (
            Code::RpcDisassociated,
            Severity::Warn,
            "The RPC connection to the executor dropped: the executor process died (look for an \
             exit finding or an OOM on its pod) or the network between them broke. Spark's own \
             text: \"Likely due to containers exceeding thresholds, or network issues\".",
        ),
        RemovalKind::Other => (
            Code::DriverRemoved,
            Severity::Warn,
            "Spark removed the executor for its own reason: read the driver log around the \
             removal time.",
        ),
    };
    // A kill that the evidence does not let be a scale-down says what it may be.
    let (code, severity) = killed
        .as_ref()
        .map_or((code, severity), |(c, s, _, _)| (*c, *s));
    let mut f = Finding::new(
        code,
        severity,
        format!(
            "Spark removed executor {id}: {}{}",
            if headline.is_empty() {
                "no reason given"
            } else {
                &headline
            },
            killed
                .as_ref()
                .map(|(_, _, why, _)| format!(" ({why})"))
                .unwrap_or_default()
        ),
    )
    .hint(killed.map_or_else(|| hint.to_owned(), |(_, _, _, h)| h))
    .reference(REF_REST)
    .evidence(format!(
        "driver: isActive=false, removeTime={}, failedTasks={}",
        d.remove_time
            .map_or_else(|| "?".to_owned(), |t| fmt_time(&t)),
        d.failed_tasks
    ));
    for line in reason
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(12)
    {
        f = f.evidence(format!(
            "removeReason: {}",
            text::clipped(line, EVIDENCE_LINE_MAX)
        ));
    }
    f
}

fn zombie(id: i64, d: &DriverExecutor, at: Time, removed_at: Time) -> Finding {
    Finding::new(
        Code::Zombie,
        Severity::Error,
        format!(
            "Spark removed executor {id} {} ago, but its pod is still Running: it holds its CPU and memory and does no work",
            human_duration(at - removed_at)
        ),
    )
    .evidence(format!(
        "driver: isActive=false, removeTime={}: {}",
        fmt_time(&removed_at),
        reason_headline(d.remove_reason.as_deref().unwrap_or("no reason given"))
    ))
    .hint(
        "Spark deletes the pod of an executor it removes; a Running pod after that means the \
         delete failed (RBAC to delete pods, an admission webhook) or the pod was kept \
         (spark.kubernetes.executor.deleteOnTermination=false, a finalizer). Delete it: \
         spark-triage kill --app APP ID.",
    )
    .reference(REF_LIFECYCLE)
}

fn unregistered(id: i64, at: Time, since: Time) -> Finding {
    Finding::new(
        Code::Unregistered,
        Severity::Error,
        format!(
            "Pod Running for {} but the driver does not know executor {id}: it never registered",
            human_duration(at - since)
        ),
    )
    .evidence(format!(
        "pod Running since {}; the driver's executor list at {} has no id {id}",
        fmt_time(&since),
        fmt_time(&at)
    ))
    .hint(
        "The executor JVM could not reach the driver: the driver URL (spark.driver.host, the \
         driver service's DNS, port 7078), a NetworkPolicy between executor and driver pods, or an \
         image whose entrypoint is not Spark's. Read the executor's log.",
    )
    .reference(REF_REST)
}

/// A pod as Spark's removal message describes it, for executors whose pod spark-triage
/// never saw: the same rules then read its exit (`container-oom-killed`, `jvm-oom`, …).
pub fn pod_from_reason(
    namespace: &str,
    app_id: &str,
    name: &str,
    d: &DriverExecutor,
) -> ExecutorPod {
    let parsed = d.remove_reason.as_deref().map(parse_removal);
    let statuses: Vec<serde_json::Value> = parsed
        .iter()
        .flat_map(|p| &p.containers)
        .map(|c| {
            let state = match (c.state.as_deref(), c.exit_code) {
                (Some("terminated"), Some(code)) | (None, Some(code)) => serde_json::json!({
                    "terminated": {"exitCode": code, "reason": c.reason, "startedAt": c.started_at, "finishedAt": c.finished_at}
                }),
                (Some("running"), _) => serde_json::json!({"running": {"startedAt": c.started_at}}),
                _ => serde_json::json!({"waiting": {}}),
            };
            serde_json::json!({"name": c.name, "image": c.image.clone().unwrap_or_default(),
                               "ready": false, "restartCount": 0, "state": state})
        })
        .collect();
    let containers: Vec<serde_json::Value> = statuses
        .iter()
        .map(|s| serde_json::json!({"name": s["name"], "image": s["image"]}))
        .collect();
    // Active in the driver: Running as far as anyone knows. Removed: what the reason says.
    // An exit code is the pod's end (Failed, or Succeeded for 0); anything else (a deletion,
    // a pod not found, a heartbeat timeout, a decommission) is Spark removing a running
    // executor and deleting its pod: never a failure Spark counts.
    let (phase, deleted) = match &parsed {
        None => ("Running", false),
        Some(p) => match (p.exit_code, &p.kind) {
            (Some(0), RemovalKind::Exited) => ("Succeeded", false),
            (Some(_), RemovalKind::Exited) => ("Failed", false),
            _ => ("Running", true),
        },
    };
    let mut status = serde_json::json!({"phase": phase, "containerStatuses": statuses});
    if let Some(r) = parsed.as_ref().and_then(|p| p.pod_reason.clone()) {
        status["reason"] = r.into();
    }
    if let Some(m) = parsed.as_ref().and_then(|p| p.pod_message.clone()) {
        status["message"] = m.into();
    }
    let mut v = serde_json::json!({
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"spark-app-selector": app_id, "spark-role": "executor",
                                "spark-exec-id": d.id.to_string()}},
        "spec": {"containers": containers, "restartPolicy": "Never"},
        "status": status
    });
    if deleted {
        // Spark deleted it at its removal (when the driver does not say, at its start).
        let t = d.remove_time.or(d.add_time).unwrap_or_default();
        v["metadata"]["deletionTimestamp"] =
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into();
    }
    match serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(v) {
        Ok(p) => ExecutorPod::from_pod(&p),
        // The JSON above is always a valid Pod; an empty projection is the safe fallback.
        Err(_) => ExecutorPod::from_pod(&k8s_openapi::api::core::v1::Pod::default()),
    }
}

#[cfg(test)]
mod tests;
