//! Endings that come from outside the executor: eviction, preemption, node loss, deletion.
//!
//! Ref: Kubernetes pod disruption conditions (`DisruptionTarget` reasons
//! `PreemptionByScheduler`, `TerminationByKubelet`, `EvictionByEvictionAPI`,
//! `DeletionByTaintManager`, `DeletionByPodGC`), kubelet eviction status (`reason: Evicted`).

use super::{Code, Finding, Severity, Subject};
use crate::model::{
    ContainerState, ExecutorPod, ExecutorState, PodCondition, PodEvent, Related, fmt_time,
};
use crate::text::human_duration;

const REF_DISRUPTION: &str =
    "https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions";
const REF_EVICTION: &str =
    "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/";
const REF_PREEMPTION: &str =
    "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/";
const REF_DELETION: &str =
    "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination";

/// `DisruptionTarget=True` with one of these reasons.
fn disruption<'a>(s: &'a Subject<'_>, reasons: &[&str]) -> Option<&'a PodCondition> {
    s.pod
        .condition("DisruptionTarget")
        .filter(|c| c.status == "True" && c.reason.as_deref().is_some_and(|r| reasons.contains(&r)))
}

fn describe_condition(c: &PodCondition) -> String {
    let mut s = format!(
        "conditions[{}]: status={} reason={}",
        c.type_,
        c.status,
        c.reason.as_deref().unwrap_or("-")
    );
    if let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) {
        s.push_str(&format!(" message={m:?}"));
    }
    s
}

/// Graceful node shutdown: the kubelet ends every pod before the node goes (spot/preemptible
/// reclaim, maintenance). Kubelet 1.21+: `status.reason: Terminated` and "imminent node
/// shutdown"; before: `Shutdown`, "Node is shutting, evicting pods".
fn node_shutdown(s: &Subject<'_>) -> Option<Finding> {
    let st = s.pod.status.as_ref()?;
    let message = st.message.as_deref().unwrap_or_default();
    let shutdown = matches!(st.reason.as_deref(), Some("Terminated" | "Shutdown"))
        && (message.contains("node shutdown") || message.contains("Node is shutting"));
    let cond = disruption(s, &["TerminationByKubelet"]).filter(|c| {
        c.message
            .as_deref()
            .is_some_and(|m| m.contains("node shutdown"))
    });
    if !shutdown && cond.is_none() {
        return None;
    }
    let mut f = Finding::new(
        Code::NodeShutdown,
        Severity::Warn,
        "Terminated by the kubelet for a node shutdown (spot or preemptible reclaim, maintenance)",
    )
    .hint(
        "The node was going away, not the executor failing. Spark replaces it; to keep its \
         shuffle and cached blocks, enable decommissioning (spark.decommission.enabled, \
         spark.storage.decommission.enabled with shuffleBlocks/rddBlocks) and give executors a \
         terminationGracePeriodSeconds that the node's shutdownGracePeriod allows.",
    )
    .reference("https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/");
    if shutdown {
        f = f.evidence(format!(
            "status.reason={} status.message={message:?}",
            st.reason.as_deref().unwrap_or_default()
        ));
    }
    if let Some(c) = cond {
        f = f.evidence(describe_condition(c));
    }
    Some(f)
}

/// Evicted for its own storage use: a container's or the pod's ephemeral-storage limit, or an
/// emptyDir `sizeLimit` — the pod's limits, not node pressure.
fn storage_limit(message: &str) -> Option<&'static str> {
    if message.contains("exceeded its local ephemeral storage limit") {
        Some("a container exceeded its ephemeral-storage limit")
    } else if message.contains("ephemeral local storage usage exceeds the total limit") {
        Some("the pod's ephemeral-storage use exceeded its containers' total limit")
    } else if message.contains("Usage of EmptyDir volume") {
        Some("an emptyDir volume exceeded its sizeLimit")
    } else {
        None
    }
}

pub(super) fn evicted(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if let Some(f) = node_shutdown(s) {
        out.push(f);
        return;
    }
    let status = s.pod.status.as_ref();
    let by_kubelet = status.and_then(|st| st.reason.as_deref()) == Some("Evicted");
    let kubelet_cond = disruption(s, &["TerminationByKubelet"]);
    let api_cond = disruption(s, &["EvictionByEvictionAPI"]);
    let event = s.last_event(&["Evicted"]);
    if !by_kubelet && kubelet_cond.is_none() && api_cond.is_none() && event.is_none() {
        return;
    }
    let message = status
        .and_then(|st| st.message.as_deref())
        .or_else(|| event.and_then(|e| e.message.as_deref()))
        .unwrap_or_default();
    let mut f = if let Some(what) = storage_limit(message).filter(|_| by_kubelet || event.is_some())
    {
        Finding::new(
            Code::LocalStorageExceeded,
            Severity::Error,
            format!("Evicted by the kubelet: {what}"),
        )
        .hint(
            "Spark's shuffle and spill files go under spark.local.dir (the spark-local-dir-* \
             volumes, an emptyDir unless configured). Raise the executor's ephemeral-storage \
             request and limit (pod template), raise the emptyDir sizeLimit, or mount a real \
             volume for local dirs (spark.kubernetes.executor.volumes.persistentVolumeClaim.\
             spark-local-dir-1.*). This is the pod's own limit, not node pressure.",
        )
        .reference(REF_EVICTION)
    } else if api_cond.is_some() && !by_kubelet {
        Finding::new(
            Code::Evicted,
            Severity::Warn,
            "Evicted through the Eviction API (a node drain or the cluster autoscaler removing the node)",
        )
        .hint(
            "Something asked for this pod's eviction, usually `kubectl drain` or an autoscaler \
             scale-down. Spark replaces the executor, but cached blocks and shuffle files on it \
             are lost: consider spark.decommission.enabled with \
             spark.storage.decommission.shuffleBlocks.enabled, or the annotation \
             cluster-autoscaler.kubernetes.io/safe-to-evict=false on executors.",
        )
        .reference(REF_DISRUPTION)
    } else {
        let resource = low_resource(message);
        let summary = match resource {
            Some(r) => format!("Evicted by the kubelet: the node was low on {r}"),
            None => "Evicted by the kubelet (node pressure)".to_owned(),
        };
        let hint = match resource {
            Some("ephemeral-storage") => {
                "The node ran out of local disk; Spark's shuffle and spill files live under \
                 spark.local.dir. Request ephemeral-storage for executors, mount a larger volume \
                 for local dirs (spark.kubernetes.executor.volumes.*, spark-local-dir-* names), or \
                 use memory-backed dirs with care (spark.kubernetes.local.dirs.tmpfs)."
            }
            _ => {
                "The kubelet evicts pods that use more than they request when the node runs low. \
                 Spark already sets the executor's memory request equal to its limit; for \
                 Guaranteed QoS (evicted last) also set spark.kubernetes.executor.limit.cores equal \
                 to the CPU request and give every sidecar and init container limits, or move \
                 executors to nodes with headroom."
            }
        };
        Finding::new(Code::Evicted, Severity::Warn, summary)
            .hint(hint)
            .reference(REF_EVICTION)
    };
    if by_kubelet {
        f = f.evidence(format!("status.reason=Evicted status.message={message:?}"));
    }
    for c in [kubelet_cond, api_cond].into_iter().flatten() {
        f = f.evidence(describe_condition(c));
    }
    f = f.evidence_all(s.events_with("Evicted").map(|e| e.describe()));
    if !by_kubelet && kubelet_cond.is_none() && api_cond.is_none() {
        f = f.witness(super::Witness::Events);
    }
    out.push(f);
}

/// The kubelet refused the pod before running it (admission): `OutOfcpu`, `OutOfmemory`,
/// `OutOfpods`, `OutOf<extended resource>`, `UnexpectedAdmissionError`, `NodeAffinity`. The
/// pod is Failed with no container ever started; Spark counts a failed executor
/// (kubernetes/website#47264).
pub(super) fn admission_rejected(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let Some(st) = s.pod.status.as_ref() else {
        return;
    };
    let Some(reason) = st.reason.as_deref() else {
        return;
    };
    let rejected = reason.starts_with("OutOf")
        || matches!(
            reason,
            "UnexpectedAdmissionError"
                | "NodeAffinity"
                | "NodeSelectorMismatching"
                | "InvalidNodeInfo"
        );
    let ran = st.container_statuses.iter().any(|c| {
        !matches!(
            c.state,
            ContainerState::None | ContainerState::Waiting { .. }
        ) || c.restart_count > 0
    });
    if !rejected || ran || st.phase.as_deref() != Some("Failed") {
        return;
    }
    let message = st.message.as_deref().unwrap_or_default();
    let hint = if reason.starts_with("OutOf") {
        "The scheduler placed the pod, but the kubelet found the node short of the resource \
         when admitting it: pods the scheduler did not account for (static pods, pods bound \
         directly), a device plugin that lost its devices, or a race after a kubelet restart. \
         Spark counts a failed executor and asks for another; if it repeats, look at the node's \
         allocatable vs. what runs there."
    } else {
        "The kubelet refused the pod on admission (its node no longer matched, or a device or \
         topology manager could not allocate). Look at the node named in the message; Spark \
         counts a failed executor and asks for another."
    };
    out.push(
        Finding::new(
            Code::AdmissionRejected,
            Severity::Error,
            format!("The kubelet rejected the pod on admission ({reason}): no container ever ran"),
        )
        .evidence(format!(
            "status.phase=Failed status.reason={reason} status.message={message:?}"
        ))
        .hint(hint)
        .reference("https://github.com/kubernetes/website/issues/47264"),
    );
}

/// `memory` from `The node was low on resource: memory. Threshold quantity: …`.
fn low_resource(message: &str) -> Option<&str> {
    let rest = message.split("low on resource: ").nth(1)?;
    let r = rest
        .split(|c: char| c == '.' || c == ',' || c.is_whitespace())
        .next()?;
    (!r.is_empty()).then_some(r)
}

/// Who preempted the pod, from its newest `Preempted` event: the event's `related` object
/// (the scheduler records the preemptor there), else its message: "Preempted by pod <uid> on
/// node <node>" (kube-scheduler since 1.2x) or "Preempted by <namespace>/<name> on node
/// <node>" (older).
pub fn preemptor_of<'a>(events: impl IntoIterator<Item = &'a PodEvent>) -> Option<Related> {
    let e = events
        .into_iter()
        .filter(|e| e.reason_is("Preempted"))
        .max_by(|a, b| PodEvent::chronological(a, b))?;
    if let Some(r) = &e.related {
        return Some(r.clone());
    }
    let m = e.message.as_deref()?;
    let who = m
        .split("Preempted by ")
        .nth(1)?
        .split(" on node ")
        .next()?
        .trim();
    let who = who.strip_prefix("pod ").unwrap_or(who);
    if who.is_empty() || who.contains(' ') {
        return None;
    }
    Some(match who.split_once('/') {
        Some((ns, name)) => Related {
            kind: Some("Pod".to_owned()),
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            ..Related::default()
        },
        None => Related {
            kind: Some("Pod".to_owned()),
            uid: Some(who.to_owned()),
            ..Related::default()
        },
    })
}

/// Who preempted the pod: its events' word ([`preemptor_of`]), else the disruption
/// condition's (Kubernetes 1.26: "…to accommodate a higher priority pod: ns/name").
pub fn preemptor<'a>(
    pod: &ExecutorPod,
    events: impl IntoIterator<Item = &'a PodEvent>,
) -> Option<Related> {
    preemptor_of(events).or_else(|| {
        let c = pod.condition("DisruptionTarget")?;
        let m = c.message.as_deref()?;
        let (ns, name) = m.split("priority pod: ").nth(1)?.trim().split_once('/')?;
        Some(Related {
            kind: Some("Pod".to_owned()),
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            ..Related::default()
        })
    })
}

/// Whether `r` names this pod (by uid, else by namespace and name).
pub fn names_pod(r: &Related, p: &ExecutorPod) -> bool {
    match (&r.uid, &r.name) {
        (Some(u), _) if p.uid.as_deref() == Some(u.as_str()) => true,
        (_, Some(n)) => {
            p.name == *n
                && r.namespace
                    .as_deref()
                    .is_none_or(|ns| ns == p.namespace.as_str())
        }
        _ => false,
    }
}

/// Completes a preemptor with what is known of its pod: its Spark app, priority class and value.
pub fn complete_preemptor(r: &mut Related, p: &ExecutorPod, app: Option<String>) {
    r.app = app;
    r.namespace = Some(p.namespace.to_string());
    r.name = Some(p.name.clone());
    r.uid = r.uid.take().or_else(|| p.uid.clone());
    r.priority_class = p.priority_class.as_deref().map(str::to_owned);
    r.priority = p.priority;
}

/// Each `Preempted` event's preemptor made explicit (`related`) and completed from these pods.
pub fn resolve_preemptors(events: &mut [PodEvent], pods: &[ExecutorPod]) {
    for e in events.iter_mut().filter(|e| e.reason_is("Preempted")) {
        let Some(mut r) = preemptor_of([&*e]) else {
            continue;
        };
        if let Some(p) = pods.iter().find(|p| names_pod(&r, p)) {
            let app = p
                .label("spark-app-name")
                .or_else(|| p.app_id())
                .map(str::to_owned);
            complete_preemptor(&mut r, p, app);
        }
        e.related = Some(r);
    }
}

/// What to do about preemptions, by whom they were (another Spark app, or a pod not named):
/// one hint for the executor's finding and the app's.
pub fn preemption_hint(by_app: Option<&str>) -> String {
    match by_app {
        Some(app) => format!(
            "Another Spark application ({app}) has a higher priority, and the scheduler took \
             this app's nodes for it. If this app must not lose executors to it, give it a \
             PriorityClass at least as high (priorityClassName in \
             spark.kubernetes.executor.podTemplateFile); otherwise expect it while {app} runs. \
             Spark does not count a preemption as a failure, but the executor's work (and its \
             shuffle output) is lost and recomputed."
        ),
        None => "A pod with a higher priority needed this node. Give the Spark application a \
                 PriorityClass (priorityClassName in spark.kubernetes.executor.podTemplateFile), \
                 or run it on nodes where preemption is not expected."
            .to_owned(),
    }
}

/// `spark-high = 1000`, `priority 1000`, `class spark-high`.
pub fn priority_text(class: Option<&str>, value: Option<i32>) -> Option<String> {
    match (class, value) {
        (Some(c), Some(v)) => Some(format!("{c} = {v}")),
        (None, Some(v)) => Some(format!("priority {v}")),
        (Some(c), None) => Some(format!("class {c}")),
        (None, None) => None,
    }
}

/// The preemptor for people: `spark-jobs/urgent-sql-driver (app urgent-sql, spark-high = 1000)`.
pub fn describe_preemptor(r: &Related) -> String {
    let who = match (&r.namespace, &r.name, &r.uid) {
        (Some(ns), Some(n), _) => format!("{ns}/{n}"),
        (None, Some(n), _) => n.clone(),
        (_, None, Some(u)) => format!("pod {u}"),
        _ => "a pod".to_owned(),
    };
    let mut about = Vec::new();
    if let Some(a) = &r.app {
        about.push(format!("app {a}"));
    }
    if let Some(p) = priority_text(r.priority_class.as_deref(), r.priority) {
        about.push(p);
    }
    if about.is_empty() {
        who
    } else {
        format!("{who} ({})", about.join(", "))
    }
}

pub(super) fn preempted(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let cond = disruption(s, &["PreemptionByScheduler", "PreemptionByKubeScheduler"]);
    let events: Vec<String> = s
        .events_with("Preempted")
        .chain(s.events_with("Preempting"))
        .map(|e| e.describe())
        .collect();
    if cond.is_none() && events.is_empty() {
        return;
    }
    let by = preemptor(s.pod, s.events.iter().copied());
    let own = match (s.pod.priority_class.as_deref(), s.pod.priority) {
        (Some(c), Some(v)) => format!("priority {c} = {v}"),
        (None, Some(v)) => format!("priority {v} (no priority class)"),
        (Some(c), None) => format!("priority class {c}"),
        // Admission always sets spec.priority (0 without a class): none means the pod's
        // spec was not seen (a recording from before it was kept, a rebuilt pod).
        (None, None) => "a priority not known".to_owned(),
    };
    let summary = match &by {
        Some(r) => format!(
            "Preempted by {} to make room; this pod had {own}",
            describe_preemptor(r)
        ),
        None => format!(
            "Preempted by the scheduler to make room for a higher-priority pod; this pod had {own}"
        ),
    };
    let spark = by.as_ref().and_then(|r| r.app.as_deref());
    let hint = preemption_hint(spark);
    let mut f = Finding::new(Code::Preempted, Severity::Warn, summary)
        .hint(hint)
        .reference(REF_PREEMPTION);
    match cond {
        Some(c) => f = f.evidence(describe_condition(c)),
        None => f = f.witness(super::Witness::Events),
    }
    if let Some(r) = &by
        && r.app.is_none()
        && r.priority.is_none()
    {
        f = f.evidence(
            "the preemptor is not a pod spark-triage watches: its priority is not known (the \
             scheduler preempts only for a higher one)",
        );
    }
    out.push(f.evidence_all(events));
}

pub(super) fn node_lost(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let phase_unknown = s.pod.phase() == Some("Unknown");
    let reason_lost = s.pod.status.as_ref().and_then(|st| st.reason.as_deref()) == Some("NodeLost");
    let taint = disruption(s, &["DeletionByTaintManager"]);
    let events: Vec<String> = s
        .events_with("NodeNotReady")
        .chain(s.events_with("TaintManagerEviction"))
        .map(|e| e.describe())
        .collect();
    if !phase_unknown && !reason_lost && taint.is_none() && events.is_empty() {
        return;
    }
    let node = s.pod.node_name.as_deref().unwrap_or("its node");
    let mut f = Finding::new(
        Code::NodeLost,
        Severity::Error,
        format!("Node {node} stopped reporting; the pod's real state is unknown"),
    )
    .hint(
        "The node is NotReady or gone. Spark asks for a replacement of a pod in phase Unknown but \
         keeps the old one; the node controller deletes it after the not-ready toleration \
         (300s by default). Check `kubectl describe node` and the node's cloud instance.",
    )
    .reference(REF_DISRUPTION);
    if phase_unknown {
        f = f.evidence("status.phase=Unknown");
    }
    if reason_lost {
        f = f.evidence("status.reason=NodeLost");
    }
    if let Some(c) = taint {
        f = f.evidence(describe_condition(c));
    }
    out.push(f.evidence_all(events));
}

pub(super) fn deleted(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let Some(d) = &s.pod.deletion else {
        return;
    };
    let grace = d.grace_period_seconds.unwrap_or(30);
    // Any i64 can arrive here; chrono panics on out-of-range durations, so check.
    let overdue = chrono::Duration::try_seconds(grace)
        .and_then(|g| (s.now - d.at).checked_sub(&g))
        .unwrap_or(chrono::Duration::zero());
    let mut summary = format!("Deletion requested at {} (grace {grace}s)", fmt_time(&d.at));
    let mut severity = Severity::Info;
    if !s.pod.finalizers.is_empty() {
        summary.push_str(&format!(
            "; kept by finalizers [{}]",
            s.pod.finalizers.join(", ")
        ));
        if overdue > chrono::Duration::seconds(60) {
            summary.push_str(&format!(
                ", Terminating for {} past its grace period",
                human_duration(overdue)
            ));
            severity = Severity::Warn;
        }
    }
    // Spark's `isDeleted` is false while the phase is Running: to Spark the executor is
    // still running, and a pod that disappears in that phase is only noticed at a poll.
    let still_running = matches!(s.state, ExecutorState::Running | ExecutorState::Terminating);
    if still_running {
        summary.push_str("; Spark still counts the executor as running");
    }
    let hint = if still_running {
        "A pod being deleted while its phase is Running is not \"deleted\" to Spark: the executor \
         stays running for it. If the pod disappears in that phase, Spark keeps the executor until \
         its next full poll (spark.kubernetes.executor.apiPollingInterval, 30s) and then removes \
         it as \"not found in the cluster\" (exit -1, not counted against the application). A \
         Spark container that exits meanwhile is a failure Spark counts."
    } else {
        "Spark logs such an executor as \"deleted by a user or the framework\" and does not \
         count it against the application. Spark deletes executors it has removed (failure, \
         dynamic-allocation scale-down, kill, application end); otherwise an operator or a \
         controller did. A finalizer keeps the pod (and its status) until it is removed."
    };
    let mut f = Finding::new(Code::Deleted, severity, summary)
        .hint(hint)
        .reference(REF_DELETION)
        .evidence(format!(
            "metadata.deletionTimestamp={} deletionGracePeriodSeconds={}",
            fmt_time(&d.at),
            d.grace_period_seconds
                .map_or_else(|| "unset".to_owned(), |g| g.to_string())
        ));
    if !s.pod.finalizers.is_empty() {
        f = f.evidence(format!("metadata.finalizers={:?}", s.pod.finalizers));
    }
    out.push(f.evidence_all(s.events_with("Killing").map(|e| e.describe())));
}

#[cfg(test)]
mod tests {
    #[test]
    fn low_resource_parses_kubelet_messages() {
        use super::low_resource;
        assert_eq!(
            low_resource(
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."
            ),
            Some("memory")
        );
        assert_eq!(
            low_resource(
                "The node was low on resource: ephemeral-storage. Container x was using 10Gi"
            ),
            Some("ephemeral-storage")
        );
        assert_eq!(low_resource("Pod was evicted"), None);
        assert_eq!(low_resource("low on resource: "), None);
    }
}
