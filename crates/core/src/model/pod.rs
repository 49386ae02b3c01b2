//! `ExecutorPod`: the lean projection of a Kubernetes `Pod` that everything else works on.
//!
//! Why a projection: a full `Pod` of a Spark executor is 5–15 KB in memory (env, volumes,
//! managed fields); a 10k-executor application must fit in a few hundred MB with history,
//! so only what classification and diagnosis read is kept: the live sources deserialize
//! straight into it (`wire.rs`), never into a full `Pod`.
//!
//! Weak spot: resource quantities are kept as the strings the API returned (`4505Mi`);
//! they are shown to people, never compared.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1 as core;
use serde::{Deserialize, Serialize};

use super::Text;
use super::group::{GroupKind, GroupRef};
use super::wire::{
    self, WireContainer, WireContainerStatus, WirePod, WireQuantities, WireState, WireStatus,
};

/// A point in time as the API server reported it.
pub type Time = DateTime<Utc>;

/// The label Spark puts the application id in.
pub const LABEL_APP_ID: &str = "spark-app-selector";
/// `driver` or `executor`.
pub const LABEL_ROLE: &str = "spark-role";
/// The decimal executor id (or the placeholder `EXECID`).
pub const LABEL_EXEC_ID: &str = "spark-exec-id";
/// `true` on pods Spark keeps because `deleteOnTermination=false`.
pub const LABEL_INACTIVE: &str = "spark-exec-inactive";
/// The application name (newer Spark versions).
pub const LABEL_APP_NAME: &str = "spark-app-name";
/// The driver's Spark version, on every executor pod Spark creates.
pub const LABEL_SPARK_VERSION: &str = "spark-version";
/// The executor container name Spark looks for unless configured otherwise.
pub const DEFAULT_EXECUTOR_CONTAINER: &str = "spark-kubernetes-executor";
/// The domain of the tool's own finalizer and annotations.
pub const TOOL_DOMAIN: &str = "spark-triage.dev/";
/// The finalizer that holds executor pods after Spark deletes them.
pub const HOLD_FINALIZER: &str = "spark-triage.dev/hold";
/// On executor pods: when the hold expires (RFC 3339). On driver pods: the app is held until then.
pub const HOLD_EXPIRES: &str = "spark-triage.dev/hold-expires";
/// On an executor pod spark-triage killed: when (RFC 3339), set just before its deletion, so
/// every view of the cluster (another terminal, the recorder) says the kill was the tool's.
pub const KILLED_AT: &str = "spark-triage.dev/killed-at";
/// With [`KILLED_AT`]: the kubeconfig user who made the kill.
pub const KILLED_BY: &str = "spark-triage.dev/killed-by";
/// The driver container name Spark uses.
pub const DEFAULT_DRIVER_CONTAINER: &str = "spark-kubernetes-driver";
/// The pod annotation naming its Volcano PodGroup (Spark's `VolcanoFeatureStep`).
pub const VOLCANO_GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// Kueue's scheduling gate, removed when the pod's Workload is admitted.
pub const KUEUE_GATE: &str = "kueue.x-k8s.io/admission";
/// Kueue's queue label.
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue's pod-group name (label, or annotation from 0.18).
pub const KUEUE_POD_GROUP: &str = "kueue.x-k8s.io/pod-group-name";
/// The annotations of batch schedulers that are kept ([`ExecutorPod::scheduling_annotations`]).
const SCHEDULING_ANNOTATIONS: &[&str] = &[
    VOLCANO_GROUP_ANNOTATION,
    KUEUE_POD_GROUP,
    "yunikorn.apache.org/app-id",
    "yunikorn.apache.org/queue",
    "yunikorn.apache.org/task-group-name",
    "yunikorn.apache.org/placeholder",
    "yunikorn.apache.org/schedulingPolicyParameters",
];
/// The longest annotation value kept.
const MAX_ANNOTATION: usize = 512;
/// The annotation Spark (4.1+, `spark.kubernetes.driver.annotateExitException`; on by
/// default under Apache's spark-kubernetes-operator) writes on the driver pod when the
/// application's main ends by an exception: the exception and its stack, to 64 KiB
/// (`Constants.EXIT_EXCEPTION_ANNOTATION` in spark-kubernetes 4.3.0's jar).
pub const EXIT_EXCEPTION_ANNOTATION: &str = "spark.exit-exception";
/// The most of the exit exception kept: its head and the first causes (a stack's frames
/// say little that the exception's lines do not).
pub const MAX_EXIT_EXCEPTION: usize = 4 * 1024;

/// What diagnosis needs of a Pod. Deserialized from the API's JSON through the wire shapes
/// (`wire.rs`), or projected from a typed Pod by [`ExecutorPod::from_pod`]; never holds the Pod.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExecutorPod {
    /// The pod's namespace.
    pub namespace: Text,
    /// The pod's name.
    pub name: String,
    /// `metadata.uid` (ownership checks compare it).
    pub uid: Option<String>,
    /// `metadata.resourceVersion`, verbatim.
    pub resource_version: Option<String>,
    /// All labels (Spark's `spark-*` labels among them).
    pub labels: BTreeMap<Text, Text>,
    /// The controlling owner reference, if any.
    pub owner: Option<OwnerRef>,
    /// `metadata.creationTimestamp`.
    pub created_at: Option<Time>,
    /// Set once deletion was requested (`metadata.deletionTimestamp`).
    pub deletion: Option<Deletion>,
    /// `metadata.finalizers` (the hold adds the tool's own).
    pub finalizers: Vec<Text>,
    /// `spec.nodeName`: the node it was bound to.
    pub node_name: Option<Text>,
    /// `spec.restartPolicy`, verbatim (Spark compares it to the exact string `Never`).
    pub restart_policy: Option<Text>,
    /// `spec.terminationGracePeriodSeconds`: the grace a deletion gets unless it asks another
    /// (the kubelet's last update of a deleted pod sets `deletionGracePeriodSeconds` to 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// `spec.priority`: the value the admission resolved from its priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// `spec.priorityClassName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<Text>,
    /// `spec.schedulerName` when it is not `default-scheduler` (Volcano, YuniKorn, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<Text>,
    /// `spec.schedulingGates[].name`: while any is there, no scheduler looks at the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<Text>,
    /// The batch-scheduling groups the pod says it belongs to (Volcano's PodGroup, Kueue's
    /// Workload, the native gang's Workload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupRef>,
    /// The batch schedulers' annotations diagnosis reads (YuniKorn's task groups and
    /// placeholders), values bounded; others are not kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scheduling_annotations: BTreeMap<String, String>,
    /// `spec.containers`, in order.
    pub containers: Vec<ContainerSpec>,
    /// `spec.initContainers`, in order.
    pub init_containers: Vec<ContainerSpec>,
    /// `None` when the object has no `status` at all (Spark distinguishes this).
    pub status: Option<PodStatus>,
    /// Drivers: the ConfigMap behind the `spark-conf-volume-driver` volume (`spark.properties`).
    pub conf_config_map: Option<Text>,
    /// The tool's own annotations (`spark-triage.dev/…`): hold state. Others are not kept.
    #[serde(default)]
    pub tool_annotations: BTreeMap<String, String>,
    /// Drivers: the exception that ended the application's main, as Spark annotated it
    /// ([`EXIT_EXCEPTION_ANNOTATION`]), to [`MAX_EXIT_EXCEPTION`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_exception: Option<String>,
}

/// The controlling owner (for executors: the driver pod).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnerRef {
    /// The owner's kind (`Pod` for an executor created by its driver).
    pub kind: Text,
    /// The owner's name.
    pub name: Text,
    /// The owner's uid.
    pub uid: Text,
}

/// A requested deletion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deletion {
    /// `metadata.deletionTimestamp` as parsed (the epoch when unreadable: only its presence matters to Spark).
    pub at: Time,
    /// `metadata.deletionGracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
}

/// One container of the spec.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContainerSpec {
    /// The container's name.
    pub name: Text,
    /// Its image.
    pub image: Option<Text>,
    /// `resources.requests`.
    pub requests: Resources,
    /// `resources.limits`.
    pub limits: Resources,
    /// The container's env defines `SPARK_EXECUTOR_ID`: it runs Spark's executor entrypoint.
    pub runs_executor: bool,
}

/// CPU and memory quantities as the API wrote them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Resources {
    /// The CPU quantity.
    pub cpu: Option<Text>,
    /// The memory quantity.
    pub memory: Option<Text>,
}

/// `status` of the pod.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PodStatus {
    /// Verbatim; `None` when absent (Spark distinguishes null from any value).
    pub phase: Option<Text>,
    /// `status.reason` (`Evicted`, `OutOfcpu`, `NodeLost`, …).
    pub reason: Option<Text>,
    /// `status.message`.
    pub message: Option<Text>,
    /// `status.conditions`.
    pub conditions: Vec<PodCondition>,
    /// `status.containerStatuses`.
    pub container_statuses: Vec<ContainerStatus>,
    /// `status.initContainerStatuses`.
    pub init_container_statuses: Vec<ContainerStatus>,
    /// `status.startTime`.
    pub start_time: Option<Time>,
    /// `status.nominatedNodeName` (set by preemption).
    pub nominated_node_name: Option<Text>,
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodCondition {
    /// The condition type (`PodScheduled`, `Ready`, `DisruptionTarget`, …).
    pub type_: Text,
    /// `True`, `False` or `Unknown`.
    pub status: Text,
    /// A machine-readable reason.
    pub reason: Option<Text>,
    /// A human-readable message.
    pub message: Option<Text>,
    /// `lastTransitionTime`.
    pub last_transition: Option<Time>,
}

/// One entry of `status.containerStatuses` (or the init-container list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerStatus {
    /// The container's name.
    pub name: Text,
    /// The image it runs.
    pub image: Option<Text>,
    /// Whether it passes its readiness probe.
    pub ready: bool,
    /// How many times it restarted.
    pub restart_count: i32,
    /// Its current state.
    pub state: ContainerState,
    /// `lastState`: what the container was before its last restart.
    pub last_state: ContainerState,
    /// `resources.limits` as the runtime enacted them (1.27+, in-place resize): the limits
    /// the container had, which a resize may have left behind the spec's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enacted_limits: Option<Resources>,
    /// `allocatedResources` (requests the node admitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated: Option<Resources>,
}

/// A container's state. Spark's rule checks `terminated` first, so when a malformed status
/// sets several, terminated wins, then running, then waiting.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ContainerState {
    /// No state reported.
    #[default]
    None,
    /// Not started yet (image pull, config error, …).
    Waiting {
        /// Why it waits (`ErrImagePull`, `CreateContainerConfigError`, …).
        reason: Option<Text>,
        /// The kubelet's message.
        message: Option<Text>,
    },
    /// Started and not ended.
    Running {
        /// When it started.
        started_at: Option<Time>,
    },
    /// Ended.
    Terminated(Terminated),
}

/// `state.terminated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Terminated {
    /// The exit code (137 = SIGKILL, 143 = SIGTERM, 52 = Spark's JVM OOM, …).
    pub exit_code: i32,
    /// The signal, when the runtime reports one.
    pub signal: Option<i32>,
    /// `OOMKilled`, `Error`, `Completed`, `ContainerStatusUnknown`, …
    pub reason: Option<Text>,
    /// The termination message.
    pub message: Option<Text>,
    /// When it started.
    pub started_at: Option<Time>,
    /// When it ended.
    pub finished_at: Option<Time>,
}

/// Where a container's memory limit was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    /// `status.containerStatuses[].resources.limits`: what the runtime enacted.
    Enacted,
    /// `status.containerStatuses[].allocatedResources` (a request; Spark's equals the limit).
    Allocated,
    /// `spec.containers[].resources.limits`.
    Spec,
}

/// A container's memory limit as it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLimit {
    /// The limit it had.
    pub had: Text,
    /// Where that was read.
    pub source: LimitSource,
    /// The spec's limit, when it differs (resized in place and not applied).
    pub spec_asks: Option<Text>,
}

impl MemoryLimit {
    /// The evidence line for it, for container `name`.
    pub fn evidence(&self, name: &str) -> String {
        let mut s = match self.source {
            LimitSource::Enacted => format!(
                "status.containerStatuses[{name}].resources.limits.memory={} (the limit it ran with)",
                self.had
            ),
            LimitSource::Allocated => format!(
                "status.containerStatuses[{name}].allocatedResources.memory={} (the memory the node allocated it)",
                self.had
            ),
            LimitSource::Spec => format!(
                "spec.containers[{name}].resources.limits.memory={}",
                self.had
            ),
        };
        if let Some(asks) = &self.spec_asks {
            s.push_str(&format!(
                "; spec.containers[{name}].resources.limits.memory={asks} (resized in place, not applied)"
            ));
        }
        s
    }
}

/// Which Spark role a pod has, from its `spark-role` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The driver pod (`spark-role=driver`).
    Driver,
    /// An executor pod (`spark-role=executor`).
    Executor,
}

/// What the `spark-exec-id` label says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecIdLabel {
    /// A numeric id: the pod is an executor of Spark's snapshot.
    Id(i64),
    /// The `EXECID` placeholder of statefulset/deployment allocators: not yet assigned.
    Placeholder,
    /// No label.
    Missing,
    /// A value Spark would fail to parse.
    Invalid(String),
}

impl From<WirePod> for ExecutorPod {
    /// Projects a Pod as the API wrote it. Never fails: absent fields become `None`/empty.
    fn from(pod: WirePod) -> Self {
        let meta = pod.metadata;
        let spec = pod.spec.unwrap_or_default();
        let mut owners = meta.owner_references;
        let controller = owners
            .iter()
            .position(|o| o.controller == Some(true))
            .unwrap_or(0);
        let owner = (controller < owners.len()).then(|| {
            let o = owners.swap_remove(controller);
            OwnerRef {
                kind: o.kind,
                name: o.name,
                uid: o.uid,
            }
        });
        let scheduling_annotations: BTreeMap<String, String> = meta
            .annotations
            .iter()
            .filter(|(k, _)| SCHEDULING_ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| {
                (
                    k.clone(),
                    v[..crate::text::floor_boundary(v, MAX_ANNOTATION)].to_owned(),
                )
            })
            .collect();
        let scheduling_gates: Vec<Text> = spec
            .scheduling_gates
            .into_iter()
            .map(|g| Text::from(g.name))
            .take(16)
            .collect();
        let groups = group_refs(
            &meta.labels,
            &scheduling_annotations,
            &scheduling_gates,
            spec.workload_ref,
        );
        let conf_config_map = spec
            .volumes
            .into_iter()
            .find(|v| v.name == "spark-conf-volume-driver")
            .and_then(|v| v.config_map)
            .map(|c| Text::from(c.name));
        Self {
            namespace: meta.namespace.unwrap_or_default(),
            name: meta.name.unwrap_or_default(),
            uid: meta.uid,
            resource_version: meta.resource_version,
            labels: meta.labels,
            owner,
            created_at: meta.creation_timestamp,
            deletion: meta.deletion_timestamp.map(|t| Deletion {
                at: wire::parse_time(&t).unwrap_or(DateTime::UNIX_EPOCH),
                grace_period_seconds: meta.deletion_grace_period_seconds,
            }),
            finalizers: meta.finalizers,
            node_name: spec.node_name,
            restart_policy: spec.restart_policy,
            termination_grace_period_seconds: spec.termination_grace_period_seconds,
            priority: spec.priority,
            priority_class: spec.priority_class_name.filter(|c| !c.is_empty()),
            scheduler_name: spec
                .scheduler_name
                .filter(|s| !s.is_empty() && s != "default-scheduler"),
            scheduling_gates,
            groups,
            scheduling_annotations,
            containers: spec
                .containers
                .into_iter()
                .map(ContainerSpec::from)
                .collect(),
            init_containers: spec
                .init_containers
                .into_iter()
                .map(ContainerSpec::from)
                .collect(),
            status: pod.status.map(PodStatus::from),
            exit_exception: meta
                .annotations
                .get(EXIT_EXCEPTION_ANNOTATION)
                .filter(|v| !v.trim().is_empty())
                .map(|v| exit_exception(v)),
            tool_annotations: meta
                .annotations
                .into_iter()
                .filter(|(k, _)| k.starts_with(TOOL_DOMAIN))
                .collect(),
            conf_config_map,
        }
    }
}

/// Spark's exit exception as kept: its exception and causes without their stack frames
/// (Hadoop's `stringifyException` indents every frame, `... N more` and `Suppressed:`
/// blocks; the exception's own lines and its `Caused by:` start a line), credentials
/// redacted (a connection string's password), to [`MAX_EXIT_EXCEPTION`].
fn exit_exception(text: &str) -> String {
    let causes: Vec<&str> = text
        .trim()
        .lines()
        .filter(|l| !l.starts_with([' ', '\t']) && !l.trim().is_empty())
        .collect();
    let kept = crate::text::credentials(&causes.join("\n"));
    crate::text::clipped(&kept, MAX_EXIT_EXCEPTION).into_owned()
}

/// The groups a pod names: Kueue's (its gate, queue label or pod-group name), the native
/// gang's (`spec.workloadRef`), Volcano's (the group-name annotation).
fn group_refs(
    labels: &BTreeMap<Text, Text>,
    annotations: &BTreeMap<String, String>,
    gates: &[Text],
    workload: Option<wire::WireWorkloadRef>,
) -> Vec<GroupRef> {
    let mut out = Vec::new();
    let kueue_group = annotations
        .get(KUEUE_POD_GROUP)
        .map(String::as_str)
        .or_else(|| labels.get(KUEUE_POD_GROUP).map(Text::as_str))
        .filter(|g| !g.is_empty());
    if kueue_group.is_some()
        || labels.contains_key(KUEUE_QUEUE_LABEL)
        || gates.iter().any(|g| g == KUEUE_GATE)
    {
        out.push(GroupRef {
            kind: GroupKind::KueueWorkload,
            name: Text::from(kueue_group.unwrap_or_default()),
            pod_group: None,
        });
    }
    if let Some(w) = workload.filter(|w| !w.name.is_empty()) {
        out.push(GroupRef {
            kind: GroupKind::Workload,
            name: w.name,
            pod_group: w.pod_group.filter(|g| !g.is_empty()),
        });
    }
    if let Some(g) = annotations
        .get(VOLCANO_GROUP_ANNOTATION)
        .filter(|g| !g.is_empty())
    {
        out.push(GroupRef {
            kind: GroupKind::VolcanoPodGroup,
            name: Text::from(g.as_str()),
            pod_group: None,
        });
    }
    out
}

impl ExecutorPod {
    /// Projects a typed Pod (through its JSON: one projection for both ways in).
    pub fn from_pod(pod: &core::Pod) -> Self {
        serde_json::to_value(pod)
            .ok()
            .and_then(|v| Self::from_value(&v).ok())
            .unwrap_or_default()
    }

    /// Projects a Pod from its JSON bytes, reading only what the projection keeps.
    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice::<WirePod>(bytes).map(Self::from)
    }

    /// Projects a Pod straight from any serde input (a kube client's response, a watch
    /// event), reading only what the projection keeps.
    pub fn deserialize_api<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        WirePod::deserialize(d).map(Self::from)
    }

    /// Projects a Pod held as a JSON value (without copying it).
    pub fn from_value(v: &serde_json::Value) -> Result<Self, serde_json::Error> {
        WirePod::deserialize(v).map(Self::from)
    }

    /// Whether the tool's hold finalizer is on the pod.
    pub fn is_held(&self) -> bool {
        self.finalizers.iter().any(|f| f == HOLD_FINALIZER)
    }

    /// Whether the tool's hold is due for release at `now`: past its expiry, or an expiry
    /// that cannot be read, or the hold finalizer with no expiry at all (neither would ever
    /// expire by itself).
    pub fn hold_due(&self, now: Time) -> bool {
        match self.hold_expires() {
            Some(e) => e <= now,
            None => self.tool_annotations.contains_key(HOLD_EXPIRES) || self.is_held(),
        }
    }

    /// When the tool's hold expires, if one is set.
    pub fn hold_expires(&self) -> Option<Time> {
        self.tool_annotations
            .get(HOLD_EXPIRES)
            .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
            .map(|t| t.to_utc())
    }

    /// The pod's `metadata.resourceVersion` as a number (the simulator's and etcd's are).
    pub fn rv(&self) -> Option<u64> {
        self.resource_version
            .as_deref()
            .and_then(|r| r.parse().ok())
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(Text::as_str)
    }

    /// The app's id (`spark-app-selector`).
    pub fn app_id(&self) -> Option<&str> {
        self.label(LABEL_APP_ID)
    }

    /// The Spark role, from `spark-role`.
    pub fn role(&self) -> Option<Role> {
        match self.label(LABEL_ROLE)? {
            "driver" => Some(Role::Driver),
            "executor" => Some(Role::Executor),
            _ => None,
        }
    }

    /// Spark's reading of `spark-exec-id` (docs/diagnosis.md §1): absent or `EXECID` means "not an
    /// executor of the snapshot"; otherwise a 64-bit integer.
    pub fn exec_id_label(&self) -> ExecIdLabel {
        match self.label(LABEL_EXEC_ID) {
            None => ExecIdLabel::Missing,
            Some("EXECID") => ExecIdLabel::Placeholder,
            Some(v) => v
                .parse::<i64>()
                .map_or_else(|_| ExecIdLabel::Invalid(v.to_owned()), ExecIdLabel::Id),
        }
    }

    /// The executor id, when the pod is an executor of Spark's snapshot.
    pub fn executor_id(&self) -> Option<i64> {
        match self.exec_id_label() {
            ExecIdLabel::Id(id) => Some(id),
            _ => None,
        }
    }

    /// Spark keeps this pod because `deleteOnTermination=false` (label `spark-exec-inactive`).
    pub fn is_inactive(&self) -> bool {
        self.label(LABEL_INACTIVE) == Some("true")
    }

    /// `status.phase`, verbatim (`None` when absent).
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `status.containerStatuses` (empty without a status).
    pub fn container_statuses(&self) -> &[ContainerStatus] {
        self.status
            .as_ref()
            .map_or(&[][..], |s| s.container_statuses.as_slice())
    }

    /// `status.initContainerStatuses` (empty without a status).
    pub fn init_container_statuses(&self) -> &[ContainerStatus] {
        self.status
            .as_ref()
            .map_or(&[][..], |s| s.init_container_statuses.as_slice())
    }

    /// The first container status with this name (Spark takes the first).
    pub fn container_status(&self, name: &str) -> Option<&ContainerStatus> {
        self.container_statuses().iter().find(|c| c.name == name)
    }

    /// The spec of the container with this name.
    pub fn container_spec(&self, name: &str) -> Option<&ContainerSpec> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// The memory limit a container had: what the runtime enacted (status, 1.27+), else
    /// what the node allocated (Spark's memory request equals its limit), else the spec's;
    /// with where it came from and, when the spec asks otherwise (an in-place resize not
    /// applied), the spec's.
    pub fn memory_limit(&self, container: &str) -> Option<MemoryLimit> {
        let spec = self
            .container_spec(container)
            .and_then(|c| c.limits.memory.clone());
        let spec_request = self
            .container_spec(container)
            .and_then(|c| c.requests.memory.clone());
        let differs =
            |a: &str, b: &str| match (super::quantity::parse(a), super::quantity::parse(b)) {
                (Some(x), Some(y)) => (x - y).abs() > 0.5,
                _ => a != b,
            };
        let status = self.container_status(container);
        // The allocation is a request: it tells a resize only where it departs from the
        // spec's request (then, Spark's request being its limit, it is the limit it had).
        let allocated = status
            .and_then(|c| c.allocated.as_ref())
            .and_then(|r| r.memory.clone())
            .filter(|a| spec.is_some() && spec_request.as_deref().is_some_and(|r| differs(a, r)));
        let (had, source) = match (
            status
                .and_then(|c| c.enacted_limits.as_ref())
                .and_then(|r| r.memory.clone()),
            allocated,
        ) {
            (Some(m), _) => (m, LimitSource::Enacted),
            (None, Some(m)) => (m, LimitSource::Allocated),
            (None, None) => (spec.clone()?, LimitSource::Spec),
        };
        let spec_asks = spec.filter(|s| source != LimitSource::Spec && differs(s, &had));
        Some(MemoryLimit {
            had,
            source,
            spec_asks,
        })
    }

    /// The condition of this type, if reported.
    pub fn condition(&self, type_: &str) -> Option<&PodCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }
}

impl From<WireContainer> for ContainerSpec {
    fn from(c: WireContainer) -> Self {
        let pick = |q: WireQuantities| Resources {
            cpu: q.cpu,
            memory: q.memory,
        };
        Self {
            runs_executor: c.env.iter().any(|e| e.name == "SPARK_EXECUTOR_ID"),
            name: c.name,
            image: c.image,
            requests: pick(c.resources.requests),
            limits: pick(c.resources.limits),
        }
    }
}

impl From<WireStatus> for PodStatus {
    fn from(s: WireStatus) -> Self {
        let statuses =
            |l: Vec<WireContainerStatus>| l.into_iter().map(ContainerStatus::from).collect();
        Self {
            phase: s.phase,
            reason: s.reason,
            message: s.message,
            conditions: s
                .conditions
                .into_iter()
                .map(|c| PodCondition {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                    last_transition: c.last_transition_time,
                })
                .collect(),
            container_statuses: statuses(s.container_statuses),
            init_container_statuses: statuses(s.init_container_statuses),
            start_time: s.start_time,
            nominated_node_name: s.nominated_node_name,
        }
    }
}

impl From<WireContainerStatus> for ContainerStatus {
    fn from(c: WireContainerStatus) -> Self {
        Self {
            name: c.name,
            image: c.image.filter(|i| !i.is_empty()),
            ready: c.ready,
            restart_count: c.restart_count,
            state: c.state.map(ContainerState::from).unwrap_or_default(),
            last_state: c.last_state.map(ContainerState::from).unwrap_or_default(),
            enacted_limits: c
                .resources
                .map(|r| Resources {
                    cpu: r.limits.cpu,
                    memory: r.limits.memory,
                })
                .filter(|r| r.cpu.is_some() || r.memory.is_some()),
            allocated: c
                .allocated_resources
                .map(|q| Resources {
                    cpu: q.cpu,
                    memory: q.memory,
                })
                .filter(|r| r.cpu.is_some() || r.memory.is_some()),
        }
    }
}

impl ContainerStatus {
    /// The terminated state, if the container has ended.
    pub fn terminated(&self) -> Option<&Terminated> {
        self.state.terminated()
    }

    /// Why the container waits, if it does.
    pub fn waiting_reason(&self) -> Option<&str> {
        match &self.state {
            ContainerState::Waiting { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }
}

impl From<WireState> for ContainerState {
    fn from(s: WireState) -> Self {
        if let Some(t) = s.terminated {
            Self::Terminated(Terminated {
                exit_code: t.exit_code,
                signal: t.signal,
                reason: t.reason,
                // What the container wrote to its termination log (a driver's last words,
                // quoted in verdicts): never with a credential in it.
                message: t.message.map(|m| match crate::text::has_credentials(&m) {
                    true => Text::from(crate::text::credentials(&m)),
                    false => m,
                }),
                started_at: t.started_at,
                finished_at: t.finished_at,
            })
        } else if let Some(r) = s.running {
            Self::Running {
                started_at: r.started_at,
            }
        } else if let Some(w) = s.waiting {
            Self::Waiting {
                reason: w.reason,
                message: w.message,
            }
        } else {
            Self::None
        }
    }
}

impl ContainerState {
    /// The terminated state, if this is one.
    pub fn terminated(&self) -> Option<&Terminated> {
        match self {
            Self::Terminated(t) => Some(t),
            _ => None,
        }
    }
}

/// Converts the API's timestamp type to the project's clock type.
pub fn time(ts: &k8s_openapi::jiff::Timestamp) -> Time {
    // jiff gives a negative sub-second part before the epoch; chrono wants 0..1e9.
    let (mut secs, mut nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    DateTime::from_timestamp(secs, nanos.unsigned_abs()).unwrap_or(DateTime::UNIX_EPOCH)
}

/// RFC 3339 with seconds and `Z`, the way the API server writes times.
pub fn fmt_time(t: &Time) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(expires: Option<&str>, finalizer: bool) -> ExecutorPod {
        let mut meta = serde_json::json!({"name": "p", "namespace": "n", "labels": {
            "spark-role": "executor", "spark-app-selector": "spark-1", "spark-exec-id": "1"}});
        if let Some(e) = expires {
            meta["annotations"] = serde_json::json!({ HOLD_EXPIRES: e });
        }
        if finalizer {
            meta["finalizers"] = serde_json::json!([HOLD_FINALIZER]);
        }
        ExecutorPod::from_value(
            &serde_json::json!({"metadata": meta, "status": {"phase": "Failed"}}),
        )
        .expect("a pod")
    }

    /// `release --expired` takes a hold past its expiry, one whose expiry cannot be read (it
    /// would never expire by itself) and the finalizer with no expiry; not one still running.
    #[test]
    fn a_hold_is_due_past_its_expiry_or_when_its_expiry_cannot_be_read() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z")
            .unwrap()
            .to_utc();
        assert!(held(Some("2026-12-03T09:59:59Z"), true).hold_due(now));
        assert!(!held(Some("2026-12-03T10:00:01Z"), true).hold_due(now));
        assert!(held(Some("next tuesday"), true).hold_due(now));
        assert!(held(Some("next tuesday"), false).hold_due(now));
        assert!(held(None, true).hold_due(now));
        assert!(!held(None, false).hold_due(now), "not held at all");
    }
}
