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

use crate::version::SparkVersion;

use super::{Code, Finding, Severity, human_duration};
use crate::model::{
    DriverExecutor, ExecutorPod, ExecutorState, Time,
    driver::{DriverSeen, RemovalKind, parse_removal, reason_headline},
    fmt_time,
};

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
    /// `spark.kubernetes.executor.enableApiPolling`: Spark polls (else only its watch and the
    /// executors' heartbeats tell it).
    pub api_polling: bool,
    /// The Spark container failed (non-zero) soon after it started: its exit code and how
    /// long it ran.
    pub quick_failure: Option<(i32, Duration)>,
    /// The app's Spark version (how executors find the driver depends on it).
    pub spark_version: SparkVersion,
}

/// The reconciliation findings for one executor id.
pub fn reconcile(pod: &PodSide, seen: Option<&DriverSeen>) -> Vec<Finding> {
    let Some(seen) = seen else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match &seen.exec {
        Some(d) if d.active => {
            if let Some(gone) = pod.gone_at
                && seen.at - gone > pod.lost_grace
            {
                out.push(lost_pod(pod, d, seen.at, gone));
            }
        }
        Some(d) => {
            out.push(removed(pod.id, d));
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
            if let Some((code, ran)) = pod.quick_failure {
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
        if pod.api_polling {
            "missingPodDetectDelta + apiPollingInterval"
        } else {
            "enableApiPolling=false, so only when the heartbeats time out (spark.network.timeout)"
        }
    ))
    .hint(
        "The driver did not process the pod's removal: its pod watch and polls may be failing \
         (driver log: KubernetesClient or watch errors; RBAC to list/watch pods). Until it does, \
         Spark schedules tasks onto an executor that is not there and does not request a \
         replacement.",
    )
    .reference(REF_LIFECYCLE)
}

fn removed(id: i64, d: &DriverExecutor) -> Finding {
    let reason = d.remove_reason.as_deref().unwrap_or("");
    let parsed = parse_removal(reason);
    let headline = reason_headline(reason);
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
    let mut f = Finding::new(
        code,
        severity,
        format!(
            "Spark removed executor {id}: {}",
            if headline.is_empty() {
                "no reason given"
            } else {
                headline
            }
        ),
    )
    .hint(hint)
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
        f = f.evidence(format!("removeReason: {line}"));
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
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::model::driver::PeakMemory;

    fn t(s: i64) -> Time {
        chrono::Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    fn exec(active: bool, removed: Option<i64>, reason: Option<&str>) -> DriverExecutor {
        DriverExecutor {
            id: 7,
            active,
            host_port: None,
            add_time: Some(t(0)),
            remove_time: removed.map(t),
            remove_reason: reason.map(str::to_owned),
            active_tasks: 0,
            failed_tasks: 2,
            completed_tasks: 5,
            max_memory: None,
            peak: PeakMemory::default(),
        }
    }

    fn side(state: ExecutorState, gone: Option<i64>, running: Option<i64>) -> PodSide {
        PodSide {
            id: 7,
            state,
            gone_at: gone.map(t),
            never_seen: false,
            running_since: running.map(t),
            lost_grace: Duration::seconds(60),
            api_polling: true,
            quick_failure: None,
            spark_version: SparkVersion::NEWEST_KNOWN,
        }
    }

    fn codes(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.code.as_str()).collect()
    }

    fn seen(at: i64, e: Option<DriverExecutor>) -> DriverSeen {
        DriverSeen { at: t(at), exec: e }
    }

    #[test]
    fn agreeing_views_say_nothing() {
        let running = side(ExecutorState::Running, None, Some(0));
        assert!(reconcile(&running, Some(&seen(500, Some(exec(true, None, None))))).is_empty());
        assert!(reconcile(&running, None).is_empty());
        // Absent from the driver, but not for long yet.
        assert!(
            reconcile(
                &side(ExecutorState::Running, None, Some(0)),
                Some(&seen(60, None))
            )
            .is_empty()
        );
        // Active, pod gone, within Spark's own time to notice.
        assert!(
            reconcile(
                &side(ExecutorState::Deleted, Some(100), None),
                Some(&seen(160, Some(exec(true, None, None))))
            )
            .is_empty()
        );
    }

    #[test]
    fn each_disagreement_is_its_finding() {
        let lost = reconcile(
            &side(ExecutorState::Deleted, Some(100), None),
            Some(&seen(161, Some(exec(true, None, None)))),
        );
        assert_eq!(codes(&lost), ["driver-lost-pod"]);
        assert!(
            lost[0].summary.contains("1m01s after it lost its pod"),
            "{}",
            lost[0].summary
        );

        let unreg = reconcile(
            &side(ExecutorState::Running, None, Some(0)),
            Some(&seen(61, None)),
        );
        assert_eq!(codes(&unreg), ["unregistered"]);

        let reason = "The executor with id 7 was deleted by a user or the framework.";
        let z = reconcile(
            &side(ExecutorState::Running, None, Some(0)),
            Some(&seen(131, Some(exec(false, Some(100), Some(reason))))),
        );
        assert_eq!(codes(&z), ["driver-removed", "zombie"]);
        assert_eq!(z[0].summary, format!("Spark removed executor 7: {reason}"));
        assert_eq!(z[0].severity, Severity::Info);

        let gone = reconcile(
            &side(ExecutorState::Failed, Some(100), None),
            Some(&seen(500, Some(exec(false, Some(100), Some(reason))))),
        );
        assert_eq!(codes(&gone), ["driver-removed"]);
    }

    #[test]
    fn a_pod_rebuilt_from_spark_reason_diagnoses_the_same() {
        let reason = "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.0.1\n\t container state: terminated\n\t container started at: 2026-11-30T01:37:30Z\n\t container finished at: 2026-11-30T01:37:50Z\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";
        let d = exec(false, Some(100), Some(reason));
        let pod = pod_from_reason("spark-jobs", "spark-1", "etl-exec-7", &d);
        assert_eq!(pod.executor_id(), Some(7));
        assert_eq!(pod.phase(), Some("Failed"));
        let resolved = crate::classify::ClassifyOptions::default().resolve(&pod);
        let state = crate::classify::classify(&pod, &resolved.config);
        let f = super::super::diagnose(&pod, &[], &resolved, state, t(200));
        assert_eq!(f[0].code, Code::ContainerOomKilled);

        let jvm = exec(
            false,
            Some(100),
            Some(
                &reason
                    .replace("137(SIGKILL, possible container OOM)", "52(JVM OOM)")
                    .replace("exit code: 137", "exit code: 52")
                    .replace("OOMKilled", "Error"),
            ),
        );
        let pod = pod_from_reason("spark-jobs", "spark-1", "etl-exec-7", &jvm);
        let resolved = crate::classify::ClassifyOptions::default().resolve(&pod);
        let f = super::super::diagnose(&pod, &[], &resolved, ExecutorState::Failed, t(200));
        assert_eq!(f[0].code, Code::JvmOom);

        // No reason at all (active in the driver): a valid executor tombstone, Running.
        let bare = pod_from_reason("ns", "a", "x-exec-7", &exec(true, None, None));
        assert_eq!(
            (bare.executor_id(), bare.phase()),
            (Some(7), Some("Running"))
        );
        // "Deleted by a user or the framework": a deleted pod, as Spark saw it.
        let del = pod_from_reason(
            "ns",
            "a",
            "x-exec-7",
            &exec(
                false,
                Some(100),
                Some("The executor with id 7 was deleted by a user or the framework."),
            ),
        );
        assert!(del.deletion.is_some());
    }

    #[test]
    fn driver_removal_reasons_that_are_normal_are_info() {
        for (text, code, severity) in [
            (
                "Executor killed by driver.",
                Code::DriverRemoved,
                Severity::Info,
            ),
            (
                "Executor decommission: Rolling via TOTAL_DURATION",
                Code::DriverRemoved,
                Severity::Info,
            ),
            (
                "Executor heartbeat timed out after 120000 ms",
                Code::HeartbeatTimeout,
                Severity::Error,
            ),
            (
                "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network issues. Check driver logs for WARN messages.",
                Code::RpcDisassociated,
                Severity::Warn,
            ),
            (
                "Something new in Spark 5",
                Code::DriverRemoved,
                Severity::Warn,
            ),
        ] {
            let f = removed(7, &exec(false, Some(1), Some(text)));
            assert_eq!((f.code, f.severity), (code, severity), "{text}");
        }
    }

    #[test]
    fn a_quick_failure_the_driver_never_listed_could_not_reach_it() {
        let seen = DriverSeen {
            at: t(300),
            exec: None,
        };
        let mut pod = side(ExecutorState::Failed, None, None);
        pod.quick_failure = Some((1, Duration::seconds(4)));
        let f = reconcile(&pod, Some(&seen));
        assert_eq!(codes(&f), vec!["driver-unreachable"]);
        assert!(
            f[0].summary.contains("failed 4s after starting (exit 1)"),
            "{}",
            f[0].summary
        );
        assert!(f[0].hint.contains("pod IP"), "4.1+: the pod IP");
        pod.spark_version = SparkVersion::new(3, 5, 7);
        assert!(
            reconcile(&pod, Some(&seen))[0]
                .hint
                .contains("publishNotReadyAddresses")
        );
        // Listed by the driver (it registered): not this.
        let listed = DriverSeen {
            at: t(300),
            exec: Some(exec(
                false,
                Some(10),
                Some("The executor with id 7 exited with exit code 1(unexpected)."),
            )),
        };
        assert!(!codes(&reconcile(&pod, Some(&listed))).contains(&"driver-unreachable"));
    }
}
