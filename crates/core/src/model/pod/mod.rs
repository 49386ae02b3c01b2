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
use serde::{Deserialize, Serialize};

use super::Text;
use super::group::GroupRef;

mod access;
mod decode;
mod labels;

pub use labels::Labels;

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
    pub labels: Labels,
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
    /// Ended. Boxed: it is the largest state by 32 bytes, and every container status holds
    /// two states (`state`, `lastState`), though few are terminated.
    Terminated(Box<Terminated>),
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

    /// A projected pod's lists hold what they have, not the wire lists' spare room (one
    /// container status held 1.6 KB, at 100,000 pods 140 MB).
    #[test]
    fn a_projected_pods_lists_hold_no_spare_room() {
        let pod = ExecutorPod::from_json(
            br#"{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}"#,
        )
        .expect("a pod");
        let status = pod.status.as_ref().expect("a status");
        assert_eq!(
            (
                pod.containers.capacity(),
                status.conditions.capacity(),
                status.container_statuses.capacity()
            ),
            (1, 1, 1)
        );
    }
}
