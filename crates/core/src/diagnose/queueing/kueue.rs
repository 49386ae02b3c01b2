//! Scheduling gates and Kueue: a gated pod (Kueue's gate read with its Workload's
//! conditions), and a pod Kueue stopped (its Workload evicted or deactivated).

use super::*;
use crate::diagnose::Witness;
use crate::model::{KUEUE_GATE, KUEUE_QUEUE_LABEL};

/// Kueue stopped the pod: its Workload was evicted (preempted, PodsReady timeout, a stopped
/// queue) or deactivated; Kueue marks the pod `TerminationTarget` and deletes it.
pub(super) fn workload_evicted(s: &Subject<'_>) -> Option<Finding> {
    let c = s
        .pod
        .condition("TerminationTarget")
        .filter(|c| c.status == "True")?;
    let reason = c.reason.as_deref().unwrap_or("-");
    let why = reason
        .strip_prefix("WorkloadEvictedDueTo")
        .unwrap_or(reason);
    let hint = match why {
        "Preempted" => {
            "Kueue preempted the app's Workload for a higher-priority or borrowing workload in \
             its ClusterQueue or cohort: give the app a higher WorkloadPriorityClass, or a queue \
             with guaranteed (nominal) quota."
        }
        "PodsReadyTimeout" => {
            "Kueue's waitForPodsReady timed out: the pods were admitted but not all became ready \
             in time (image pulls, volumes, node capacity); fix what kept them pending, or raise \
             waitForPodsReady.timeout."
        }
        _ => {
            "Kueue stopped the Workload (its queue was stopped, it was deactivated or deleted): \
             see the Workload's Evicted condition (kubectl get workloads -n NS)."
        }
    };
    Some(
        Finding::new(
            Code::WorkloadEvicted,
            Severity::Error,
            format!(
                "Kueue stopped the pod: {}",
                c.message
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .unwrap_or(reason)
            ),
        )
        .evidence(condition_line("pod", c))
        .hint(hint)
        .reference(REF_KUEUE),
    )
}

/// Kueue's Workload verdict for a gated pod: not admitted and why, waiting on its checks,
/// or admitted with the gate left behind.
pub(crate) fn kueue_summary(w: &SchedGroup) -> Option<(String, Severity, String)> {
    let reserved = w.condition("QuotaReserved");
    let admitted = w.condition("Admitted");
    if admitted.is_some_and(|c| c.status == "True") {
        return Some((
            format!(
                "Kueue admitted the Workload {} (ClusterQueue {}), but the pod's gate is still there",
                w.name,
                w.cluster_queue.as_deref().unwrap_or("?")
            ),
            Severity::Warn,
            "Kueue removes its gate right after admission; a gate that stays means Kueue's \
             pod controller is not reconciling the pod (its logs), or a webhook re-adds it."
                .to_owned(),
        ));
    }
    let queue = w.queue.as_deref().unwrap_or("(none)");
    match reserved {
        Some(c) if c.status == "True" => Some((
            format!(
                "Kueue reserved quota (ClusterQueue {}) but has not admitted the Workload {}: {}",
                w.cluster_queue.as_deref().unwrap_or("?"),
                w.name,
                admitted
                    .and_then(|a| a.message.as_deref())
                    .unwrap_or("admission checks pending")
            ),
            Severity::Warn,
            "The Workload waits on its admission checks (provisioning requests, MultiKueue): \
             kubectl get workloads -n NS -o yaml shows each check's state."
                .to_owned(),
        )),
        Some(c) => {
            let msg = c.message.as_deref().unwrap_or_default();
            let reason = c.reason.as_deref().unwrap_or_default();
            let never = matches!(reason, "Misconfigured" | "Suspended" | "ExceedsMaxQuota")
                || msg.contains("doesn't exist")
                || msg.contains("not found")
                || msg.contains("is inactive")
                || msg.contains("is stopped")
                || msg.contains("doesn't match ClusterQueue selector")
                || msg.contains("> maximum capacity");
            let hint = if never {
                "This does not resolve by waiting: the queue is missing, inactive or stopped, \
                 or the request exceeds what the ClusterQueue can ever give. Check the pod's \
                 kueue.x-k8s.io/queue-name label (spark.kubernetes.driver.label.* / \
                 executor.label.*) against kubectl get localqueues,clusterqueues."
            } else {
                "The ClusterQueue has no unused quota for the request now: the Workload is \
                 admitted when running workloads finish, or when the queue can borrow from its \
                 cohort. Lower the pod's request (spark.executor.memory, spark.executor.cores) \
                 or raise the ClusterQueue's nominalQuota."
            };
            Some((
                format!(
                    "Kueue has not admitted the Workload {} (LocalQueue {queue}): {}",
                    w.name,
                    if msg.is_empty() { reason } else { msg }
                ),
                if never {
                    Severity::Error
                } else {
                    Severity::Warn
                },
                hint.to_owned(),
            ))
        }
        None => Some((
            format!(
                "Kueue has not yet looked at the Workload {} (LocalQueue {queue})",
                w.name
            ),
            Severity::Warn,
            "Kueue has not evaluated the Workload: is kueue-controller-manager running, and \
             does the LocalQueue exist?"
                .to_owned(),
        )),
    }
}

/// Scheduling gates: no scheduler considers the pod until every gate is removed.
pub(super) fn gated(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let gates = &s.pod.scheduling_gates;
    if gates.is_empty() {
        return;
    }
    let names: Vec<&str> = gates.iter().map(|g| g.as_str()).collect();
    let mut f = Finding::new(
        Code::SchedulingGated,
        Severity::Warn,
        format!("Held by scheduling gates: {}", names.join(", ")),
    )
    .evidence(format!("spec.schedulingGates: {}", names.join(", ")))
    .hint(
        "No scheduler looks at a pod while it has scheduling gates; the controller that added \
         each gate must remove it. Find it by the gate's name.",
    )
    .reference(REF_GATES);
    if let Some(c) = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.reason.as_deref() == Some("SchedulingGated"))
    {
        f = f.evidence(condition_line("pod", c));
    }
    if let Some(since) = s.pod.created_at {
        f = f.evidence(format!(
            "gated since its creation {} ({} ago)",
            fmt_time(&since),
            human_duration(s.now - since)
        ));
    }
    if gates.iter().any(|g| g == KUEUE_GATE) {
        let queue = s.pod.label(KUEUE_QUEUE_LABEL).unwrap_or("(no queue label)");
        f.summary = format!("Held by Kueue until its Workload is admitted (LocalQueue {queue})");
        f.hint = "Kueue removes its gate (kueue.x-k8s.io/admission) when the pod's Workload is \
                  admitted: kubectl get workloads -n NS shows why it is not (its QuotaReserved \
                  condition)."
            .to_owned();
        f.reference = REF_KUEUE.into();
        if let Some(r) = s
            .pod
            .groups
            .iter()
            .find(|r| r.kind == GroupKind::KueueWorkload)
        {
            match s.groups.known(r, s.pod) {
                Known::Object(w) => {
                    f.witness = Witness::SchedulerObject;
                    for c in &w.conditions {
                        f = f.evidence(condition_line(&format!("Workload {}", w.name), c));
                    }
                    if let Some((summary, severity, hint)) = kueue_summary(w) {
                        f.summary = summary;
                        f.severity = severity;
                        f.hint = hint;
                    }
                }
                Known::Absent => {
                    f.summary = format!(
                        "Held by Kueue, and no Workload exists for the pod (LocalQueue {queue})"
                    );
                    f.hint = "Kueue creates a Workload for each managed pod; none exists: is \
                              kueue-controller-manager running, and is the pod integration \
                              enabled (integrations.frameworks: pod)?"
                        .to_owned();
                }
                Known::Unknown(why) => f = f.evidence(unknown_line(r, why)),
                Known::NotRead => {}
            }
        }
    }
    out.push(f);
}
