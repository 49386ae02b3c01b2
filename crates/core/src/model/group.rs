//! The objects a batch scheduler or an admission controller keeps for a group of pods, and
//! which decide whether a pod may be scheduled at all: Volcano's PodGroup, Kueue's Workload,
//! and the native Workload of gang scheduling (Kubernetes 1.35, alpha). Projected like pods:
//! only what diagnosis reads, from the JSON the API serves, never failing.
//!
//! Ref: volcano-sh/apis `pkg/apis/scheduling/v1beta1/types.go`; kubernetes-sigs/kueue
//! `apis/kueue/v1beta1/workload_types.go`; k8s.io/api `scheduling/v1alpha1/types.go`.

use serde::{Deserialize, Serialize};

use super::{PodCondition, Text, Time, wire};

/// Which kind of group object.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    /// `podgroups.scheduling.volcano.sh` (v1beta1): Volcano's gang and queue.
    VolcanoPodGroup,
    /// `workloads.kueue.x-k8s.io` (v1beta1): Kueue's admission of a pod or pod group.
    KueueWorkload,
    /// `workloads.scheduling.k8s.io` (v1alpha1): the native gang's Workload.
    Workload,
}

impl GroupKind {
    /// Every kind, in the order they are read.
    pub const ALL: [Self; 3] = [Self::VolcanoPodGroup, Self::KueueWorkload, Self::Workload];

    /// The API group.
    pub fn group(self) -> &'static str {
        match self {
            Self::VolcanoPodGroup => "scheduling.volcano.sh",
            Self::KueueWorkload => "kueue.x-k8s.io",
            Self::Workload => "scheduling.k8s.io",
        }
    }

    /// The served version read.
    pub fn version(self) -> &'static str {
        match self {
            Self::VolcanoPodGroup | Self::KueueWorkload => "v1beta1",
            Self::Workload => "v1alpha1",
        }
    }

    /// The object kind.
    pub fn kind(self) -> &'static str {
        match self {
            Self::VolcanoPodGroup => "PodGroup",
            Self::KueueWorkload | Self::Workload => "Workload",
        }
    }

    /// The resource's plural.
    pub fn plural(self) -> &'static str {
        match self {
            Self::VolcanoPodGroup => "podgroups",
            Self::KueueWorkload | Self::Workload => "workloads",
        }
    }

    /// `podgroups.scheduling.volcano.sh`: how RBAC and kubectl name the resource.
    pub fn resource(self) -> String {
        format!("{}.{}", self.plural(), self.group())
    }

    /// Who reads the object: `Volcano`, `Kueue`, `gang scheduling`.
    pub fn owner(self) -> &'static str {
        match self {
            Self::VolcanoPodGroup => "Volcano",
            Self::KueueWorkload => "Kueue",
            Self::Workload => "the scheduler's gang scheduling",
        }
    }
}

/// What a pod says about the group it belongs to (the object's name is known; the object
/// itself may not be).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupRef {
    /// Which kind of object.
    pub kind: GroupKind,
    /// The object's name (in the pod's namespace). Empty for Kueue's single-pod Workload,
    /// whose name is a hash: it is found through its owner reference to the pod.
    pub name: Text,
    /// Native gang: `spec.workloadRef.podGroup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group: Option<Text>,
}

/// A group object, projected.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SchedGroup {
    /// Which kind of object (`None` only in a default value).
    pub kind: Option<GroupKind>,
    /// Its namespace.
    pub namespace: Text,
    /// Its name.
    pub name: Text,
    /// `metadata.creationTimestamp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// Volcano: `status.phase` (`Pending`, `Inqueue`, `Running`, `Unknown`, `Completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Text>,
    /// Volcano: `spec.minMember`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_member: Option<i32>,
    /// Volcano `spec.queue`, Kueue `spec.queueName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<Text>,
    /// Kueue: `status.admission.clusterQueue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<Text>,
    /// `status.conditions` (Volcano's and Kueue's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodCondition>,
    /// Kueue: the pods owning the Workload (its owner references of kind Pod).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_pods: Vec<Text>,
    /// Kueue: the Spark operators' applications owning the Workload (its owner references
    /// of kind SparkApplication: Kueue's integration admits the object, not its pods).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_apps: Vec<Text>,
    /// Native Workload: `spec.podGroups[]` as (name, gang minCount; `None` for `basic`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_groups: Vec<(Text, Option<i32>)>,
}

/// The most owners, conditions and pod groups kept of one object (a hostile object may
/// list thousands).
const MAX_LIST: usize = 256;

impl SchedGroup {
    /// Projects an object of `kind` from the JSON the API served. Never fails: absent or
    /// malformed fields become empty.
    pub fn from_value(kind: GroupKind, v: &serde_json::Value) -> Self {
        let text = |p: &str| wire::text_at(v, p, 256);
        let conditions = v
            .pointer("/status/conditions")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
            .take(MAX_LIST)
            .map(|c| PodCondition {
                type_: Text::from(c["type"].as_str().unwrap_or_default()),
                status: Text::from(c["status"].as_str().unwrap_or_default()),
                reason: c["reason"].as_str().map(Text::from),
                message: c["message"]
                    .as_str()
                    .map(|m| Text::from(wire::bounded(m, 4096))),
                last_transition: c["lastTransitionTime"].as_str().and_then(wire::parse_time),
            })
            .collect();
        let owner_pods = v
            .pointer("/metadata/ownerReferences")
            .and_then(|o| o.as_array())
            .into_iter()
            .flatten()
            .filter(|o| o["kind"] == "Pod")
            .filter_map(|o| o["name"].as_str().map(Text::from))
            .take(MAX_LIST)
            .collect();
        let owner_apps = v
            .pointer("/metadata/ownerReferences")
            .and_then(|o| o.as_array())
            .into_iter()
            .flatten()
            .filter(|o| o["kind"] == "SparkApplication")
            .filter_map(|o| o["name"].as_str().map(Text::from))
            .take(MAX_LIST)
            .collect();
        let pod_groups = v
            .pointer("/spec/podGroups")
            .and_then(|g| g.as_array())
            .into_iter()
            .flatten()
            .take(MAX_LIST)
            .filter_map(|g| {
                let name = g["name"].as_str()?;
                let min = g
                    .pointer("/policy/gang/minCount")
                    .and_then(serde_json::Value::as_i64)
                    .and_then(|m| i32::try_from(m).ok());
                Some((Text::from(name), min))
            })
            .collect();
        let queue = match kind {
            GroupKind::VolcanoPodGroup => text("/spec/queue"),
            GroupKind::KueueWorkload => text("/spec/queueName"),
            GroupKind::Workload => None,
        };
        Self {
            kind: Some(kind),
            namespace: text("/metadata/namespace").unwrap_or_default(),
            name: text("/metadata/name").unwrap_or_default(),
            created_at: v
                .pointer("/metadata/creationTimestamp")
                .and_then(|t| t.as_str())
                .and_then(wire::parse_time),
            phase: text("/status/phase"),
            min_member: v
                .pointer("/spec/minMember")
                .and_then(serde_json::Value::as_i64)
                .and_then(|m| i32::try_from(m).ok()),
            queue,
            cluster_queue: text("/status/admission/clusterQueue"),
            conditions,
            owner_pods,
            owner_apps,
            pod_groups,
        }
    }

    /// A condition by type.
    pub fn condition(&self, type_: &str) -> Option<&PodCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether this object is the one `r` names for a pod called `pod` in `namespace`.
    pub fn is(&self, r: &GroupRef, namespace: &str, pod: &str) -> bool {
        self.kind == Some(r.kind)
            && self.namespace == namespace
            && match r.kind {
                // A single pod's Workload is named by a hash: its owner says whose it is; a
                // pod group's is the group's name.
                GroupKind::KueueWorkload if r.name.is_empty() => {
                    self.owner_pods.iter().any(|o| o == pod)
                }
                _ => self.name == r.name.as_str(),
            }
    }
}
