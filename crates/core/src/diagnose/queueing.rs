//! Who decides Pending when kube-scheduler is not alone: scheduling gates (Kueue's, or any
//! controller's), batch schedulers (Volcano, YuniKorn), and gangs (Volcano's PodGroup,
//! YuniKorn's task groups, the native Workload of Kubernetes 1.35). A pod they hold shows
//! no `FailedScheduling` of the default scheduler's, or none at all: the reason is on the
//! pod in their own words, or on their group object.
//!
//! Ref: kubernetes `pkg/registry/core/pod/strategy.go` (`SchedulingGated`); Volcano
//! `pkg/scheduler/plugins/gang/gang.go`, `api/job_info.go` (`FitError`), `cache/cache.go`;
//! yunikorn-k8shim `pkg/cache/task.go`, `application.go`, `context.go`, yunikorn-core
//! `ask_events.go`; Kueue `pkg/scheduler/flavorassigner`, `pkg/controller/core/
//! workload_controller.go`, `jobframework/stop_reason.go`; kubernetes v1.35
//! `pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Code, Finding, Severity, Subject, Witness, exit::first_line};
use crate::model::{
    ExecutorPod, GroupKind, GroupRef, KUEUE_GATE, KUEUE_QUEUE_LABEL, PodEvent, SchedGroup, fmt_time,
};
use crate::text::human_duration;

const REF_GATES: &str =
    "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/";
const REF_KUEUE: &str = "https://kueue.sigs.k8s.io/docs/concepts/workload/";
const REF_VOLCANO: &str = "https://volcano.sh/en/docs/podgroup/";
const REF_YUNIKORN: &str = "https://yunikorn.apache.org/docs/user_guide/gang_scheduling/";
const REF_GANG: &str = "https://kubernetes.io/docs/concepts/scheduling-eviction/gang-scheduling/";
const REF_SPARK_SCHEDULERS: &str = "https://spark.apache.org/docs/latest/running-on-kubernetes.html#customized-kubernetes-schedulers-for-spark-on-kubernetes";

/// How long a pod of a named scheduler may wait without a word from it before the tool
/// says so.
pub const SILENT_AFTER_SECS: i64 = 60;

/// The group objects the tool read, and the kinds it could not read (and why). Built by
/// the store from its lists (or by `explain` from a List's items); empty when nothing was
/// read, which leaves the rules to the pod's own words.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupIndex {
    /// Every group object read, all kinds.
    pub objects: Vec<SchedGroup>,
    /// Kinds the tool cannot read, with why (`forbidden: …`, `not served …`). A kind
    /// never asked for is absent: nothing is known of it, and nothing is claimed.
    pub unknown: BTreeMap<GroupKind, String>,
    /// Kinds the tool read (listed at least once): an object absent from them is absent
    /// from the cluster, unless the list was cut (`partial`).
    pub listed: Vec<GroupKind>,
    /// Kinds whose last list was cut at the page limit: absence from them says nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial: Vec<GroupKind>,
    /// Native gang: how many pods the tool sees per (namespace, workload, pod group).
    pub members: BTreeMap<(String, String, String), usize>,
    /// The pods' events are read (a live watch, or events in the input): a named
    /// scheduler's silence then means something. Without them it means nothing.
    #[serde(default)]
    pub events_read: bool,
}

/// The empty index (nothing read).
pub static NO_GROUPS: GroupIndex = GroupIndex {
    objects: Vec::new(),
    unknown: BTreeMap::new(),
    listed: Vec::new(),
    partial: Vec::new(),
    members: BTreeMap::new(),
    events_read: false,
};

/// What is known of one group a pod names.
enum Known<'a> {
    /// Read.
    Object(&'a SchedGroup),
    /// Listed, and not there.
    Absent,
    /// The kind cannot be read: why.
    Unknown(&'a str),
    /// Not asked for (a file without it, a source that does not read it).
    NotRead,
}

impl GroupIndex {
    /// Nothing read, nothing known unreadable.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
            && self.unknown.is_empty()
            && self.listed.is_empty()
            && !self.events_read
    }

    /// Whether a kind was listed or is known unreadable (its answer is in).
    pub fn answered(&self, kind: GroupKind) -> bool {
        self.listed.contains(&kind) || self.unknown.contains_key(&kind)
    }

    /// A list of `kind` (in `namespace`, or everywhere; `complete` unless cut at the page
    /// limit): replaces what was known of it.
    pub fn apply_list(
        &mut self,
        kind: GroupKind,
        namespace: Option<&str>,
        objects: Vec<SchedGroup>,
        unknown: Option<String>,
        complete: bool,
    ) {
        self.partial.retain(|k| *k != kind);
        if !complete {
            self.partial.push(kind);
        }
        self.objects
            .retain(|o| o.kind != Some(kind) || namespace.is_some_and(|ns| o.namespace != ns));
        self.objects.extend(objects);
        match unknown {
            Some(why) => {
                self.unknown.insert(kind, why);
            }
            None => {
                self.unknown.remove(&kind);
                if !self.listed.contains(&kind) {
                    self.listed.push(kind);
                }
            }
        }
    }

    /// What of this index concerns these pods (one app's): the objects they name, the
    /// kinds' answers, and the native gangs' member counts.
    pub fn slice<'a>(&self, pods: impl IntoIterator<Item = &'a ExecutorPod> + Clone) -> Self {
        let mut out = Self {
            objects: Vec::new(),
            unknown: self.unknown.clone(),
            listed: self.listed.clone(),
            partial: self.partial.clone(),
            members: BTreeMap::new(),
            events_read: self.events_read,
        };
        // Indexed once: an app of 10,000 single-pod Workloads is 10,000 lookups, not 10^8.
        let mut by_name: HashMap<(GroupKind, &str, &str), usize> = HashMap::new();
        let mut by_owner: HashMap<(&str, &str), usize> = HashMap::new();
        for (i, o) in self.objects.iter().enumerate() {
            if let Some(k) = o.kind {
                by_name.insert((k, o.namespace.as_str(), o.name.as_str()), i);
                if k == GroupKind::KueueWorkload {
                    for pod in &o.owner_pods {
                        by_owner.insert((o.namespace.as_str(), pod.as_str()), i);
                    }
                }
            }
        }
        let mut taken = std::collections::BTreeSet::new();
        for p in pods.clone() {
            for r in &p.groups {
                let found = if r.kind == GroupKind::KueueWorkload && r.name.is_empty() {
                    by_owner.get(&(p.namespace.as_str(), p.name.as_str()))
                } else {
                    by_name.get(&(r.kind, p.namespace.as_str(), r.name.as_str()))
                };
                if let Some(&i) = found
                    && taken.insert(i)
                {
                    out.objects.push(self.objects[i].clone());
                }
            }
        }
        out.count_members(pods);
        out
    }
    /// Counts, for the native gang, the pods naming each (workload, pod group).
    pub fn count_members<'a>(&mut self, pods: impl IntoIterator<Item = &'a ExecutorPod>) {
        self.members.clear();
        // The scheduler counts the gang's pods that exist: not ended, not being deleted.
        let live = |p: &&ExecutorPod| {
            p.deletion.is_none() && !matches!(p.phase(), Some("Failed" | "Succeeded"))
        };
        for p in pods.into_iter().filter(live) {
            for r in p.groups.iter().filter(|r| r.kind == GroupKind::Workload) {
                *self
                    .members
                    .entry((
                        p.namespace.to_string(),
                        r.name.to_string(),
                        r.pod_group.as_deref().unwrap_or_default().to_owned(),
                    ))
                    .or_default() += 1;
            }
        }
    }

    fn known(&self, r: &GroupRef, pod: &ExecutorPod) -> Known<'_> {
        if let Some(o) = self
            .objects
            .iter()
            .find(|o| o.is(r, &pod.namespace, &pod.name))
        {
            return Known::Object(o);
        }
        if let Some(why) = self.unknown.get(&r.kind) {
            return Known::Unknown(why);
        }
        if self.listed.contains(&r.kind) && !self.partial.contains(&r.kind) {
            Known::Absent
        } else {
            Known::NotRead
        }
    }

    /// The objects of one kind in one namespace (the app verdict's).
    pub fn of(&self, kind: GroupKind, namespace: &str) -> impl Iterator<Item = &SchedGroup> {
        self.objects
            .iter()
            .filter(move |o| o.kind == Some(kind) && o.namespace == namespace)
    }
}

/// The evidence line for a group that could not be read.
fn unknown_line(r: &GroupRef, why: &str) -> String {
    format!(
        "{} {}: unknown because {why}",
        r.kind.kind(),
        if r.name.is_empty() {
            "(found by its owner)"
        } else {
            r.name.as_str()
        }
    )
}

fn condition_line(what: &str, c: &crate::model::PodCondition) -> String {
    let mut s = format!(
        "{what} conditions[{}]: status={} reason={}",
        c.type_,
        c.status,
        c.reason.as_deref().unwrap_or("-")
    );
    if let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) {
        s.push_str(&format!(" message={:?}", first_line(m)));
    }
    if let Some(t) = &c.last_transition {
        s.push_str(&format!(" since {}", fmt_time(t)));
    }
    s
}

/// The pod waits for a scheduler to look at it: unbound, not final, not being deleted.
fn waiting(pod: &ExecutorPod) -> bool {
    pod.node_name.is_none()
        && pod.deletion.is_none()
        && matches!(pod.phase(), None | Some("Pending"))
}

/// A Volcano message about its gang rather than about nodes (the pod's condition or event,
/// the PodGroup's condition): `pod group is not ready, 1 Pending, 1 minAvailable; …`,
/// `3/3 tasks in gang unschedulable: …`, and before 1.11 `all nodes are unavailable`.
pub fn is_volcano_gang_message(m: &str) -> bool {
    m.contains("pod group is not ready")
        || m.contains("tasks in gang unschedulable")
        || m.trim() == "all nodes are unavailable"
        || m.contains("once minAvailable is satisfied")
}

/// Whether the `unschedulable` rule should leave this message to this module (a gang's,
/// not the nodes'). YuniKorn's `request is waiting for cluster resources become available`
/// is the nodes' (capacity), and stays there.
pub(super) fn owns_message(message: &str) -> bool {
    is_volcano_gang_message(message) || message.contains("at plugin GangScheduling")
}

/// Every rule of this module, one pass.
pub(super) fn who_decides(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if let Some(f) = scheduler_rejected(s) {
        out.push(f);
        return;
    }
    if let Some(f) = workload_evicted(s) {
        out.push(f);
    }
    if !waiting(s.pod) {
        return;
    }
    let before = out.len();
    gated(s, out);
    if out.len() == before {
        volcano(s, out);
        native_gang(s, out);
        yunikorn(s, out);
    }
    if out.len() == before
        && let Some(f) = silent(s)
    {
        out.push(f);
    }
}

/// YuniKorn failed the pod: its application was rejected, or (gangSchedulingStyle=Hard)
/// its gang's reservation timed out. The pod never ran.
fn scheduler_rejected(s: &Subject<'_>) -> Option<Finding> {
    let status = s.pod.status.as_ref()?;
    let reason = status.reason.as_deref()?;
    if s.pod.phase() != Some("Failed")
        || !matches!(reason, "ApplicationRejected" | "ResourceReservationTimeout")
    {
        return None;
    }
    // The shim cuts its message at the first colon; its `ApplicationFailed` event has it whole.
    let event = s
        .last_event(&["ApplicationFailed"])
        .filter(|e| e.message.as_deref().is_some_and(|m| m.contains(reason)));
    let full = event
        .and_then(|e| e.message.as_deref())
        .and_then(|m| m.split_once("reason: ").map(|(_, r)| r.trim()))
        .map(|r| r.strip_prefix(reason).unwrap_or(r))
        .map(|r| r.trim_start_matches(':').trim().to_owned())
        .filter(|r| !r.is_empty())
        .or_else(|| {
            status
                .message
                .as_deref()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
        });
    let policy = s
        .pod
        .scheduling_annotations
        .get("yunikorn.apache.org/schedulingPolicyParameters");
    let (summary, hint) = if reason == "ApplicationRejected" {
        (
            format!(
                "YuniKorn rejected the application{}: the pod never ran",
                full.as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
            "YuniKorn could not place the application in a queue (no placement rule matched, \
             the queue does not exist or cannot fit its task groups). Check the pod's queue \
             (label or annotation yunikorn.apache.org/queue, set with \
             spark.kubernetes.driver.label.queue / executor.label.queue) against YuniKorn's \
             queues and placement rules, then resubmit."
                .to_owned(),
        )
    } else {
        (
            format!(
                "YuniKorn's gang reservation timed out{}: {}",
                policy.map(|p| format!(" ({p})")).unwrap_or_default(),
                full.as_deref()
                    .unwrap_or("Scheduling has timed out due to insufficient resources")
            ),
            "The task groups' placeholders (minMember × minResource) did not all fit before \
             placeholderTimeoutInSeconds, and gangSchedulingStyle=Hard fails the application. \
             Lower minMember or minResource in yunikorn.apache.org/task-groups, give the queue \
             more room, raise the timeout, or use gangSchedulingStyle=Soft (falls back to \
             normal scheduling)."
                .to_owned(),
        )
    };
    let mut f = Finding::new(Code::SchedulerRejected, Severity::Error, summary)
        .evidence(format!(
            "status.phase=Failed status.reason={reason} status.message={:?}",
            status.message.as_deref().unwrap_or_default()
        ))
        .hint(hint)
        .reference(REF_YUNIKORN);
    if let Some(e) = event {
        f = f.evidence(e.describe());
    }
    Some(f)
}

/// Kueue stopped the pod: its Workload was evicted (preempted, PodsReady timeout, a stopped
/// queue) or deactivated; Kueue marks the pod `TerminationTarget` and deletes it.
fn workload_evicted(s: &Subject<'_>) -> Option<Finding> {
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
fn kueue_summary(w: &SchedGroup) -> Option<(String, Severity, String)> {
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
fn gated(s: &Subject<'_>, out: &mut Vec<Finding>) {
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

/// Volcano: the pod's own words (its condition, `FailedScheduling`) about its gang, and
/// the PodGroup's phase and conditions.
fn volcano(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.scheduler_name.as_deref() != Some("volcano") {
        return; // a leftover annotation on another scheduler's pod is not Volcano's hold
    }
    let r = s
        .pod
        .groups
        .iter()
        .find(|r| r.kind == GroupKind::VolcanoPodGroup);
    let own = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "False")
        .and_then(|c| c.message.as_deref())
        .filter(|m| !m.is_empty());
    // The nodes' words on the pod (Volcano's `0/3 nodes are unavailable: …`) are the
    // `unschedulable` rule's, whatever the PodGroup says.
    if own.is_some_and(|m| !is_volcano_gang_message(m)) {
        return;
    }
    let message = own;
    let known = r.map(|r| (r, s.groups.known(r, s.pod)));
    let group = match &known {
        Some((_, Known::Object(g))) => Some(*g),
        _ => None,
    };
    // A PodGroup not ready: Pending/Inqueue/Unknown with its Unschedulable condition newer
    // than any Scheduled one (the scheduler replaces conditions by type: both may stay).
    let stuck = group.filter(|g| {
        matches!(
            g.phase.as_deref(),
            Some("Pending" | "Inqueue" | "Unknown") | None
        ) && g.condition("Unschedulable").is_some_and(|u| {
            u.status == "True"
                && g.condition("Scheduled")
                    .is_none_or(|sc| sc.last_transition <= u.last_transition)
        })
    });
    if message.is_none() && stuck.is_none() {
        if let Some((r, Known::Absent)) = &known {
            out.push(
                Finding::new(
                    Code::GangWaiting,
                    Severity::Warn,
                    format!(
                        "Volcano cannot schedule the pod: its PodGroup {} was not in the last list of podgroups",
                        r.name
                    ),
                )
                .evidence(format!(
                    "metadata.annotations[scheduling.k8s.io/group-name]={}",
                    r.name
                ))
                .hint(
                    "Spark creates the PodGroup (<app id>-podgroup) before the driver pod when \
                     VolcanoFeatureStep is in spark.kubernetes.driver.pod.featureSteps; without \
                     it Volcano never schedules the pod. Check the driver's submission log.",
                )
                .reference(REF_SPARK_SCHEDULERS),
            );
        }
        return;
    }
    let name = r.map_or("(unnamed)", |r| r.name.as_str());
    let phase = group
        .and_then(|g| g.phase.as_deref())
        .unwrap_or("not ready");
    let words = stuck
        .and_then(|g| g.condition("Unschedulable"))
        .and_then(|c| c.message.as_deref())
        .or(message)
        .unwrap_or("pod group is not ready");
    let mut f = Finding::new(
        Code::GangWaiting,
        Severity::Warn,
        format!(
            "Volcano holds the pod: PodGroup {name} is {phase}: {}",
            first_line(words)
        ),
    )
    .reference(REF_VOLCANO);
    if let Some(m) = message {
        f = f.evidence(format!(
            "conditions[PodScheduled]: status=False message={:?}",
            first_line(m)
        ));
    }
    let mut hint = String::from(
        "Volcano schedules none of the group until minMember of its pods fit together \
         (and its queue admits the group's minResources). ",
    );
    if let Some(g) = group {
        f.witness = Witness::SchedulerObject;
        f = f.evidence(format!(
            "PodGroup {}: phase={} minMember={} queue={}",
            g.name,
            g.phase.as_deref().unwrap_or("-"),
            g.min_member.map_or("-".to_owned(), |m| m.to_string()),
            g.queue.as_deref().unwrap_or("default")
        ));
        for c in &g.conditions {
            f = f.evidence(condition_line(&format!("PodGroup {}", g.name), c));
        }
        if g.phase.as_deref() == Some("Pending") {
            hint.push_str(
                "Pending (not Inqueue) means the queue has not admitted it: the queue's \
                 capability or deserved share is used up, or the queue is closed (kubectl get \
                 queue). ",
            );
        }
        if g.min_member.is_some_and(|m| m > 1) && s.pod.role() == Some(crate::model::Role::Driver) {
            f.severity = Severity::Error;
            hint.push_str(&format!(
                "minMember is {}, but a Spark driver's PodGroup holds only the driver until it \
                 runs (the app's other pods are created by it, later): the gang cannot form. \
                 Set minMember: 1 in spark.kubernetes.scheduler.volcano.podGroupTemplateFile. ",
                g.min_member.unwrap_or_default()
            ));
        }
    } else if let Some((r, Known::Unknown(why))) = &known {
        f = f.evidence(unknown_line(r, why));
    }
    hint.push_str("kubectl describe podgroup NAME shows Volcano's events.");
    f.hint = hint;
    out.push(f);
}

/// The native gang (1.35 alpha): the scheduler holds each pod of a gang until `minCount`
/// of them exist (silently: no event, no condition), then until they all fit, for 5 min.
fn native_gang(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let Some(r) = s.pod.groups.iter().find(|r| r.kind == GroupKind::Workload) else {
        return;
    };
    let pg = r.pod_group.as_deref().unwrap_or_default();
    let timed_out = s
        .pod
        .condition("PodScheduled")
        .and_then(|c| c.message.as_deref())
        .filter(|m| m.contains("at plugin GangScheduling"));
    let members = s
        .groups
        .members
        .get(&(
            s.pod.namespace.to_string(),
            r.name.to_string(),
            pg.to_owned(),
        ))
        .copied();
    let nodes_say = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
        .and_then(|c| c.message.as_deref())
        .is_some_and(|m| !m.contains("at plugin GangScheduling"));
    let mut f = Finding::new(
        Code::GangWaiting,
        Severity::Warn,
        format!("Waiting for its gang: Workload {} pod group {pg}", r.name),
    )
    .evidence(format!("spec.workloadRef: name={} podGroup={pg}", r.name))
    .hint(
        "The scheduler's GangScheduling plugin holds a gang's pods until minCount of them exist \
         (it says nothing meanwhile), then until all of them fit at once, for at most 5 min \
         per attempt.",
    )
    .reference(REF_GANG);
    if let Some(m) = timed_out {
        f.summary = format!(
            "Its gang did not fit in time: Workload {} pod group {pg}: {}",
            r.name,
            first_line(m)
        );
        f = f.evidence(format!(
            "conditions[PodScheduled]: status=False message={:?}",
            first_line(m)
        ));
    }
    if nodes_say && timed_out.is_none() && !matches!(s.groups.known(r, s.pod), Known::Object(_)) {
        return; // the scheduler placed it in its queue and the nodes answered: not the gang's
    }
    match s.groups.known(r, s.pod) {
        Known::Object(w) => {
            f.witness = Witness::SchedulerObject;
            match w.pod_groups.iter().find(|(n, _)| n == pg) {
                Some((_, Some(min))) => {
                    let have = members.unwrap_or(1);
                    if nodes_say && have as i64 >= i64::from(*min) {
                        return; // the gang is whole: the nodes hold it, as `unschedulable` says
                    }
                    f = f.evidence(format!(
                        "Workload {}: podGroups[{pg}].policy.gang.minCount={min}; pods seen with it: {have}",
                        w.name
                    ));
                    if timed_out.is_none() && (have as i64) < i64::from(*min) {
                        f.summary = format!(
                            "Waiting for its gang: {have} of the {min} pods that pod group {pg} (Workload {}) needs exist",
                            w.name
                        );
                    }
                }
                Some((_, None)) => return, // a basic pod group: no gang
                None => {
                    f.severity = Severity::Error;
                    f.summary = format!(
                        "The pod names pod group {pg}, which Workload {} does not have: it is never scheduled",
                        w.name
                    );
                }
            }
        }
        Known::Absent => {
            f.summary = format!(
                "The pod names Workload {}, which was not in the last list of workloads: it is not scheduled without it",
                r.name
            );
        }
        Known::Unknown(why) => f = f.evidence(unknown_line(r, why)),
        Known::NotRead => {}
    }
    out.push(f);
}

/// The newest event of `reason` whose message contains one of `needles`.
fn newest<'a>(s: &'a Subject<'_>, reason: &str, needles: &[&str]) -> Option<&'a PodEvent> {
    s.events.iter().rev().copied().find(|e| {
        e.reason_is(reason)
            && e.message
                .as_deref()
                .is_some_and(|m| needles.iter().any(|n| m.contains(n)))
    })
}

fn later(a: &PodEvent, b: Option<&PodEvent>) -> bool {
    b.is_none_or(|b| PodEvent::chronological(a, b).is_gt())
}

/// YuniKorn: its queue's headroom and its gang's placeholders, from its events (the core's
/// `Informational` request events, the shim's `GangScheduling` ones).
fn yunikorn(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.scheduler_name.as_deref() != Some("yunikorn") {
        return;
    }
    let queue_full = newest(
        s,
        "Informational",
        &["does not fit in queue", "exceeds the available user quota"],
    );
    let fits = newest(
        s,
        "Informational",
        &[
            "has become schedulable in queue",
            "fits in the available user quota",
        ],
    );
    if let Some(e) = queue_full.filter(|e| later(e, fits)) {
        let msg = e.message.as_deref().unwrap_or_default();
        let user = msg.contains("user quota");
        out.push(
            Finding::new(
                Code::QueueWaiting,
                Severity::Warn,
                format!("YuniKorn holds the pod: {}", first_line(msg)),
            )
            .witness(Witness::Events)
            .evidence(e.describe())
            .hint(if user {
                "The submitting user's quota (YuniKorn limits on the queue) is used up: the pod \
                 waits until the user's other pods finish, or the limit is raised."
            } else {
                "The queue's headroom (its max resources minus what runs in it) is smaller than \
                 the request: the pod waits until the queue has room. Lower the request, or raise \
                 the queue's max in YuniKorn's queue config."
            })
            .reference(REF_YUNIKORN),
        );
        return;
    }
    let gang = s
        .events
        .iter()
        .rev()
        .copied()
        .find(|e| e.reason_is("GangScheduling"));
    if let Some(e) = gang {
        let action = e.action.as_deref().unwrap_or_default();
        let (summary, severity) = match action {
            "PlaceholderTimeOut" | "PlaceholderTimeout" => (
                "YuniKorn's gang reservation timed out: its placeholders were released",
                Severity::Warn,
            ),
            "GangSchedulingFailed" => (
                "YuniKorn gave up the gang reservation and schedules the app without it (Soft)",
                Severity::Info,
            ),
            "PlaceholderCreateFailed" => (
                "YuniKorn could not create the gang's placeholders: it falls back to normal scheduling",
                Severity::Warn,
            ),
            "TaskGroupsError" => (
                "YuniKorn cannot read the pod's task groups (yunikorn.apache.org/task-groups)",
                Severity::Error,
            ),
            "CreatingPlaceholders" | "PlaceholderAllocated" => (
                "YuniKorn reserves the gang's resources with placeholder pods first",
                Severity::Warn,
            ),
            _ => return,
        };
        let mut f = Finding::new(Code::GangWaiting, severity, summary)
            .witness(Witness::Events)
            .evidence(format!("{} (action {action})", e.describe()))
            .hint(
                "YuniKorn first runs one placeholder pod per task-group member \
                 (tg-<app>-<group>-…, pause image) and gives their place to the real pods; a \
                 reservation that does not fit within placeholderTimeoutInSeconds is released \
                 (Soft: normal scheduling follows; Hard: the app fails). kubectl get pods -l \
                 yunikorn.apache.org/app-id shows the placeholders.",
            )
            .reference(REF_YUNIKORN);
        for key in [
            "yunikorn.apache.org/task-group-name",
            "yunikorn.apache.org/schedulingPolicyParameters",
        ] {
            if let Some(v) = s.pod.scheduling_annotations.get(key) {
                f = f.evidence(format!("metadata.annotations[{key}]={v}"));
            }
        }
        out.push(f);
    }
}

/// A pod of a named scheduler that nothing has looked at: no condition, no event. The
/// scheduler may not be installed, or not be running.
fn silent(s: &Subject<'_>) -> Option<Finding> {
    let name = s.pod.scheduler_name.as_deref()?;
    if !s.groups.events_read {
        return None; // no events to hear the scheduler by: silence says nothing
    }
    let created = s.pod.created_at?;
    let waited = s.now - created;
    if s.pod.condition("PodScheduled").is_some()
        || !s.events.is_empty()
        || waited.num_seconds() < SILENT_AFTER_SECS
    {
        return None;
    }
    Some(
        Finding::new(
            Code::SchedulerSilent,
            Severity::Warn,
            format!(
                "No word from the scheduler {name:?} in {}: no PodScheduled condition, no event",
                human_duration(waited)
            ),
        )
        .evidence(format!("spec.schedulerName={name}"))
        .evidence(format!("created {}", fmt_time(&created)))
        .hint(format!(
            "Only the scheduler named {name:?} will place this pod (spark.kubernetes.scheduler.name, \
             or the pod template's schedulerName): check that it is installed and running \
             (kubectl get pods -A | grep {name}), and that its name is spelled as it is \
             deployed. The tool sees only Warning events and a few Normal ones, so a scheduler \
             that only logs stays silent here."
        ))
        .reference(REF_SPARK_SCHEDULERS),
    )
}

#[cfg(test)]
mod tests;
