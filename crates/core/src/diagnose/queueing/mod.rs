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

use gangs::{native_gang, scheduler_rejected, volcano, yunikorn};
pub(crate) use kueue::kueue_summary;
use kueue::{gated, workload_evicted};
use serde::{Deserialize, Serialize};

use super::exit::first_line;
use super::{Code, Finding, Severity, Subject};
use crate::model::{ExecutorPod, GroupKind, GroupRef, PodCondition, SchedGroup, fmt_time};
use crate::text::human_duration;

mod gangs;
mod kueue;

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

fn condition_line(what: &str, c: &PodCondition) -> String {
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
