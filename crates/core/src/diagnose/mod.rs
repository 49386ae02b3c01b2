//! Diagnosis: small pure rules that turn a pod (and the events about it) into findings a
//! person can act on.
//!
//! Each rule is one function over a [`Subject`] with a `Ref:` to its source of truth. Rules
//! never do I/O, never read the clock (`now` is in the subject) and never panic on any
//! cluster data. Spark itself only reads the exit code (docs/diagnosis.md §2); everything else here
//! (OOMKilled vs node SIGKILL, eviction, preemption, pending reasons) is the tool's own
//! reading of the Kubernetes status and is labelled so in `docs/diagnosis.md`.
//!
//! Finding codes are a stable contract: add new ones, never rename.

pub mod app;
pub mod app_verdict;
pub mod budget;
pub mod config;
mod containers;
pub mod disruption;
pub mod driver;
mod exit;
pub mod nodes;
mod pending;
pub mod queueing;
pub mod scheduling;
pub mod verdict;

use std::fmt;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{
    classify::Resolved,
    model::{ExecutorPod, ExecutorState, PodEvent, Time},
};
pub use queueing::{GroupIndex, NO_GROUPS};
pub use scheduling::{SchedulingKind, SchedulingReason};

/// A stable finding code (kebab-case in every output).
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
pub enum Code {
    /// The container was OOM-killed by the kernel (exit 137, `OOMKilled`): the pod's memory limit.
    ContainerOomKilled,
    /// SIGKILL (137) without `OOMKilled`: killed by the node (memory pressure, a kill from outside).
    NodeSigkill,
    /// The JVM ran out of heap (exit 52, `OutOfMemoryError`).
    JvmOom,
    /// An uncaught exception ended the executor (exit 50, 51 or 10).
    UncaughtException,
    /// Spark could not create its local directories (exit 53).
    LocalDirFailure,
    /// The executor could not reach the driver with heartbeats (exit 56).
    HeartbeatFailure,
    /// The task reaper killed the JVM (exit 57).
    TaskReaper,
    /// Ended by SIGTERM (143): a kill, a deletion, a drain.
    Sigterm,
    /// Segmentation fault (139).
    Sigsegv,
    /// Aborted (134).
    Sigabrt,
    /// The entrypoint could not be run (126/127).
    NotExecutable,
    /// Any other non-zero exit.
    GenericError,
    /// The executor exited 0.
    Succeeded,
    /// Evicted by the kubelet or the eviction API.
    Evicted,
    /// Preempted by a higher-priority pod.
    Preempted,
    /// Deletion requested (by Spark, a user or a controller).
    Deleted,
    /// The scheduler cannot place it (FailedScheduling).
    Unschedulable,
    /// The image cannot be pulled.
    ImagePull,
    /// The container cannot be created from its config (missing ConfigMap/Secret key, …).
    ContainerConfigError,
    /// Stuck in ContainerCreating (volumes, network).
    ContainerCreatingStuck,
    /// An init container failed.
    InitContainerFailed,
    /// The pod's node was lost.
    NodeLost,
    /// A sidecar failed while the Spark container ran.
    SidecarFailed,
    /// The executor's process exited, but Spark looks at another container and still calls it running.
    StuckRunning,
    /// Vanished from a full LIST with no deletion seen.
    Missing,
    /// The driver still counts the executor active while its pod is gone.
    DriverLostPod,
    /// Running for over a minute, and the driver has no such executor.
    Unregistered,
    /// Removed by the driver, its pod still running.
    Zombie,
    /// The driver lists the executor as removed, with Spark's reason verbatim.
    DriverRemoved,
    /// The kubelet refused the pod on admission (`OutOfcpu`, `OutOfmemory`, `OutOfpods`,
    /// `UnexpectedAdmissionError`, `NodeAffinity`): it failed before any container ran.
    AdmissionRejected,
    /// Terminated with `ContainerStatusUnknown` (usually 137): the container was lost with its
    /// node, not OOM-killed.
    ContainerStatusUnknown,
    /// Exit 58: the block manager could not re-register with the driver.
    BlockManagerReregistration,
    /// Exit 101: a class was not found (Spark's `CLASS_NOT_FOUND`).
    ClassNotFound,
    /// Evicted for exceeding its own ephemeral-storage limit or an emptyDir `sizeLimit`.
    LocalStorageExceeded,
    /// Terminated by the kubelet for a graceful node shutdown (spot reclaim, maintenance).
    NodeShutdown,
    /// The driver removed the executor after its heartbeats timed out.
    HeartbeatTimeout,
    /// The driver removed the executor when its RPC connection dropped.
    RpcDisassociated,
    /// Failed within seconds and never listed by the driver: it could not reach the driver.
    DriverUnreachable,
    /// (app) Repeated failures with one cause, against Spark's failure budget.
    CrashLoop,
    /// (app) A pod whose `spark-exec-id` is not a number breaks Spark's snapshot updates.
    SnapshotUpdateFails,
    /// (app, Spark 4.2+) An OOM removal put the app in recovery mode.
    OomRecoveryMode,
    /// (app) The namespace's ResourceQuota refuses new executor pods: Spark's creations fail
    /// before any pod exists.
    QuotaExhausted,
    /// (app) The driver's container was OOM-killed (137, `OOMKilled`).
    DriverOomKilled,
    /// (app) The driver's JVM ran out of heap (exit 52, or an `OutOfMemoryError` in its log).
    DriverJvmOom,
    /// (app) The driver gave up after too many executor failures (exit 11).
    ExecutorFailuresExceeded,
    /// (app) The driver was evicted (node pressure, the Eviction API, a node shutdown).
    DriverEvicted,
    /// (app) The driver was preempted by a higher-priority pod.
    DriverPreempted,
    /// (app) The driver's node was lost.
    DriverNodeLost,
    /// (app) The driver exited with an error (any other non-zero exit).
    DriverFailed,
    /// (app) The driver pod vanished: absent from a full LIST, no deletion seen.
    DriverVanished,
    /// (app) The driver pod was deleted before it finished (by its owner, a user or a controller).
    DriverDeleted,
    /// (app) The driver waits: unschedulable, image pull, config error, volumes, admission.
    DriverPending,
    /// (app) Executors still run while their driver is gone.
    OrphanedExecutors,
    /// (app) The driver's container restarted.
    DriverRestarted,
    /// (app) The driver was stopped from outside (SIGTERM, 143): not a failure of the app.
    DriverStopped,
    /// (app) The driver finished (exit 0).
    AppSucceeded,
    /// (app) The driver runs and nothing above the executors is wrong.
    AppRunning,
    /// (app) No driver pod was seen (outside the scope or the selector): judged from executors only.
    DriverNotSeen,
    /// The executor ended because its driver ended (deleted by Spark's stop or the garbage collector).
    EndedWithDriver,
    /// (config) Dynamic allocation without a safe home for shuffle data.
    DynamicAllocationShuffle,
    /// (config) `spark.executor.heartbeatInterval` not well below `spark.network.timeout`.
    HeartbeatSettings,
    /// (config) Executor pods requested faster than an API server should take them.
    AllocationFlood,
    /// (config) The task and executor failure budgets, told apart.
    FailureBudgets,
    /// (config) A setting whose value Spark cannot read.
    UnreadableSetting,
    /// (app) Executors preempted, by whom (the preemptor's app and priority).
    ExecutorsPreempted,
    /// (app) Several executors failed on one node within a window.
    NodeFailures,
    /// Held by scheduling gates (Kueue's admission gate, or another controller's).
    SchedulingGated,
    /// Held for its gang: a Volcano PodGroup, YuniKorn task groups, a native Workload.
    GangWaiting,
    /// Held by a batch scheduler's queue (YuniKorn's queue or user quota).
    QueueWaiting,
    /// Failed by a batch scheduler before it ran (YuniKorn: application rejected, gang
    /// reservation timed out).
    SchedulerRejected,
    /// Stopped by Kueue: its Workload was evicted or deactivated.
    WorkloadEvicted,
    /// A named scheduler has said nothing about the pod (not installed, not running).
    SchedulerSilent,
    /// (app) Pending executors waiting on a gate, a gang, a queue or a silent scheduler.
    ExecutorsWaiting,
}

impl Code {
    /// Every code, in the order of the documentation.
    pub const ALL: [Self; 73] = [
        Self::ContainerOomKilled,
        Self::NodeSigkill,
        Self::ContainerStatusUnknown,
        Self::JvmOom,
        Self::UncaughtException,
        Self::LocalDirFailure,
        Self::HeartbeatFailure,
        Self::TaskReaper,
        Self::BlockManagerReregistration,
        Self::ClassNotFound,
        Self::Sigterm,
        Self::Sigsegv,
        Self::Sigabrt,
        Self::NotExecutable,
        Self::GenericError,
        Self::Succeeded,
        Self::Evicted,
        Self::LocalStorageExceeded,
        Self::Preempted,
        Self::NodeShutdown,
        Self::Deleted,
        Self::Unschedulable,
        Self::SchedulingGated,
        Self::GangWaiting,
        Self::QueueWaiting,
        Self::SchedulerRejected,
        Self::WorkloadEvicted,
        Self::SchedulerSilent,
        Self::ImagePull,
        Self::ContainerConfigError,
        Self::ContainerCreatingStuck,
        Self::InitContainerFailed,
        Self::AdmissionRejected,
        Self::NodeLost,
        Self::SidecarFailed,
        Self::StuckRunning,
        Self::Missing,
        Self::DriverLostPod,
        Self::Unregistered,
        Self::DriverUnreachable,
        Self::Zombie,
        Self::HeartbeatTimeout,
        Self::RpcDisassociated,
        Self::DriverRemoved,
        Self::CrashLoop,
        Self::SnapshotUpdateFails,
        Self::OomRecoveryMode,
        Self::QuotaExhausted,
        Self::ExecutorsWaiting,
        Self::DriverOomKilled,
        Self::DriverJvmOom,
        Self::ExecutorFailuresExceeded,
        Self::DriverEvicted,
        Self::DriverPreempted,
        Self::DriverNodeLost,
        Self::DriverFailed,
        Self::DriverVanished,
        Self::DriverDeleted,
        Self::DriverPending,
        Self::OrphanedExecutors,
        Self::DriverRestarted,
        Self::DriverStopped,
        Self::AppSucceeded,
        Self::AppRunning,
        Self::DriverNotSeen,
        Self::EndedWithDriver,
        Self::DynamicAllocationShuffle,
        Self::HeartbeatSettings,
        Self::AllocationFlood,
        Self::FailureBudgets,
        Self::UnreadableSetting,
        Self::ExecutorsPreempted,
        Self::NodeFailures,
    ];

    /// The kebab-case code every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContainerOomKilled => "container-oom-killed",
            Self::NodeSigkill => "node-sigkill",
            Self::JvmOom => "jvm-oom",
            Self::UncaughtException => "uncaught-exception",
            Self::LocalDirFailure => "local-dir-failure",
            Self::HeartbeatFailure => "heartbeat-failure",
            Self::TaskReaper => "task-reaper",
            Self::Sigterm => "sigterm",
            Self::Sigsegv => "sigsegv",
            Self::Sigabrt => "sigabrt",
            Self::NotExecutable => "not-executable",
            Self::GenericError => "generic-error",
            Self::Succeeded => "succeeded",
            Self::Evicted => "evicted",
            Self::Preempted => "preempted",
            Self::Deleted => "deleted",
            Self::Unschedulable => "unschedulable",
            Self::ImagePull => "image-pull",
            Self::ContainerConfigError => "container-config-error",
            Self::ContainerCreatingStuck => "container-creating-stuck",
            Self::InitContainerFailed => "init-container-failed",
            Self::NodeLost => "node-lost",
            Self::SidecarFailed => "sidecar-failed",
            Self::StuckRunning => "stuck-running",
            Self::Missing => "missing",
            Self::DriverLostPod => "driver-lost-pod",
            Self::Unregistered => "unregistered",
            Self::Zombie => "zombie",
            Self::DriverRemoved => "driver-removed",
            Self::AdmissionRejected => "admission-rejected",
            Self::ContainerStatusUnknown => "container-status-unknown",
            Self::BlockManagerReregistration => "block-manager-reregistration",
            Self::ClassNotFound => "class-not-found",
            Self::LocalStorageExceeded => "local-storage-exceeded",
            Self::NodeShutdown => "node-shutdown",
            Self::HeartbeatTimeout => "heartbeat-timeout",
            Self::RpcDisassociated => "rpc-disassociated",
            Self::DriverUnreachable => "driver-unreachable",
            Self::CrashLoop => "crash-loop",
            Self::SnapshotUpdateFails => "snapshot-update-fails",
            Self::OomRecoveryMode => "oom-recovery-mode",
            Self::QuotaExhausted => "quota-exhausted",
            Self::DriverOomKilled => "driver-oom-killed",
            Self::DriverJvmOom => "driver-jvm-oom",
            Self::ExecutorFailuresExceeded => "executor-failures-exceeded",
            Self::DriverEvicted => "driver-evicted",
            Self::DriverPreempted => "driver-preempted",
            Self::DriverNodeLost => "driver-node-lost",
            Self::DriverFailed => "driver-failed",
            Self::DriverVanished => "driver-vanished",
            Self::DriverDeleted => "driver-deleted",
            Self::DriverPending => "driver-pending",
            Self::OrphanedExecutors => "orphaned-executors",
            Self::DriverRestarted => "driver-restarted",
            Self::DriverStopped => "driver-stopped",
            Self::AppSucceeded => "app-succeeded",
            Self::AppRunning => "app-running",
            Self::DriverNotSeen => "driver-not-seen",
            Self::EndedWithDriver => "ended-with-driver",
            Self::DynamicAllocationShuffle => "dynamic-allocation-shuffle",
            Self::HeartbeatSettings => "heartbeat-settings",
            Self::AllocationFlood => "allocation-flood",
            Self::FailureBudgets => "failure-budgets",
            Self::UnreadableSetting => "unreadable-setting",
            Self::ExecutorsPreempted => "executors-preempted",
            Self::NodeFailures => "node-failures",
            Self::SchedulingGated => "scheduling-gated",
            Self::GangWaiting => "gang-waiting",
            Self::QueueWaiting => "queue-waiting",
            Self::SchedulerRejected => "scheduler-rejected",
            Self::WorkloadEvicted => "workload-evicted",
            Self::SchedulerSilent => "scheduler-silent",
            Self::ExecutorsWaiting => "executors-waiting",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad it is. Ordered worst first.
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
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The executor failed.
    Error,
    /// Worth a look.
    Warn,
    /// For the record.
    Info,
}

impl Severity {
    /// The lower-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
        }
    }
}

/// One explanation of what happened to a pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// Which rule.
    pub code: Code,
    /// How serious.
    pub severity: Severity,
    /// One line for people.
    pub summary: String,
    /// The exact fields and events it came from.
    pub evidence: Vec<String>,
    /// What to change.
    pub hint: String,
    /// The scheduler's reasons, parsed (only for `unschedulable`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling: Vec<SchedulingReason>,
    /// Where the rule's knowledge comes from.
    #[serde(rename = "ref")]
    pub reference: Cow<'static, str>,
    /// Which witness the finding's evidence came from.
    #[serde(default)]
    pub witness: Witness,
    /// Rebuilt from another witness's words (e.g. the pod from Spark's `removeReason`), not
    /// observed directly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconstructed: bool,
}

/// Where a piece of evidence came from. Ordered by precedence: an observed pod status
/// outranks the driver's reason, which outranks a log pattern, which outranks events, which
/// outrank the tool's own inference (`docs/diagnosis.md`, "One verdict per executor").
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
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
pub enum Witness {
    /// The pod's own status (from the watch, a LIST, or a file).
    #[default]
    Pod,
    /// A batch scheduler's or admission controller's object about the pod's group (a
    /// PodGroup, a Workload): observed like the pod, and only said of a waiting pod.
    SchedulerObject,
    /// The driver's executor list (its REST API): `removeReason`, `isActive`.
    Driver,
    /// The container log tail spark-triage captured.
    LogTail,
    /// Kubernetes events about the pod.
    Events,
    /// What spark-triage itself concluded (a pod absent from a full LIST) or did (a kill).
    Inference,
    /// The application's configuration (its driver's `spark.properties`).
    Config,
}

impl Witness {
    /// The kebab-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Driver => "driver",
            Self::LogTail => "log-tail",
            Self::Events => "events",
            Self::Inference => "inference",
            Self::Config => "config",
            Self::SchedulerObject => "scheduler-object",
        }
    }
}

impl Finding {
    fn new(code: Code, severity: Severity, summary: impl Into<String>) -> Self {
        Self {
            code,
            severity,
            summary: summary.into(),
            evidence: Vec::new(),
            hint: String::new(),
            scheduling: Vec::new(),
            reference: Cow::Borrowed(""),
            witness: Witness::Pod,
            reconstructed: false,
        }
    }

    fn witness(mut self, w: Witness) -> Self {
        self.witness = w;
        self
    }

    fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    fn evidence_all(mut self, lines: impl IntoIterator<Item = String>) -> Self {
        self.evidence.extend(lines);
        self
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    fn reference(mut self, r: &'static str) -> Self {
        self.reference = Cow::Borrowed(r);
        self
    }
}

/// What a rule looks at.
#[derive(Debug)]
pub struct Subject<'a> {
    /// The pod, as last seen.
    pub pod: &'a ExecutorPod,
    /// Events about this pod, oldest first.
    pub events: Vec<&'a PodEvent>,
    /// Which container is Spark's, and how that was decided.
    pub resolved: &'a Resolved,
    /// Spark's state for the pod under `resolved.config`.
    pub state: ExecutorState,
    /// The time the diagnosis is made at (ages, pending durations).
    pub now: Time,
    /// The batch schedulers' group objects read (empty when none were).
    pub groups: &'a GroupIndex,
}

impl Subject<'_> {
    /// The name of the container Spark treats as the executor.
    fn spark_container(&self) -> &str {
        &self.resolved.config.spark_container
    }

    /// Events with this reason, oldest first.
    fn events_with(&self, reason: &str) -> impl Iterator<Item = &PodEvent> {
        self.events
            .iter()
            .copied()
            .filter(move |e| e.reason_is(reason))
    }

    /// The newest event with one of these reasons.
    fn last_event(&self, reasons: &[&str]) -> Option<&PodEvent> {
        self.events
            .iter()
            .rev()
            .copied()
            .find(|e| reasons.iter().any(|r| e.reason_is(r)))
    }
}

type Rule = fn(&Subject<'_>, &mut Vec<Finding>);

/// Every rule, in the order their findings are listed (causes before consequences).
const RULES: &[Rule] = &[
    exit::spark_container_exit,
    containers::sidecar_failed,
    containers::init_container_failed,
    containers::stuck_running,
    disruption::evicted,
    disruption::preempted,
    disruption::node_lost,
    disruption::admission_rejected,
    queueing::who_decides,
    pending::unschedulable,
    pending::image_pull,
    pending::container_config_error,
    pending::container_creating_stuck,
    disruption::deleted,
];

/// All findings for one pod. `events` may hold events about other pods; only the ones
/// about `pod` are used.
pub fn diagnose(
    pod: &ExecutorPod,
    events: &[PodEvent],
    resolved: &Resolved,
    state: ExecutorState,
    now: Time,
) -> Vec<Finding> {
    diagnose_in(pod, events, resolved, state, now, &NO_GROUPS)
}

/// [`diagnose`], with the batch schedulers' group objects the tool read.
pub fn diagnose_in(
    pod: &ExecutorPod,
    events: &[PodEvent],
    resolved: &Resolved,
    state: ExecutorState,
    now: Time,
    groups: &GroupIndex,
) -> Vec<Finding> {
    let mut about: Vec<&PodEvent> = events.iter().filter(|e| e.is_about(pod)).collect();
    about.sort_by(|a, b| PodEvent::chronological(a, b));
    let subject = Subject {
        pod,
        events: about,
        resolved,
        state,
        now,
        groups,
    };
    let mut findings = Vec::new();
    for rule in RULES {
        rule(&subject, &mut findings);
    }
    // Worst first; within a severity, rule order (stable sort).
    findings.sort_by_key(|f| f.severity);
    findings
}

/// The store's verdict on an executor absent from a full LIST with no deletion seen (the
/// tool's precise rule), with when Spark's own time-based rule reaches the same verdict.
pub fn missing(last_rv: Option<u64>, list_rv: Option<u64>, spark_verdict: &str) -> Finding {
    let mut f = Finding::new(
        Code::Missing,
        Severity::Error,
        "The pod vanished: absent from a full LIST, with no deletion seen by the watch",
    )
    .hint(
        "Something removed the pod without a deletion event reaching watchers (a force delete \
         during a watch gap, etcd restore, a node or namespace cleanup). Spark declares the \
         executor lost only at a poll more than spark.kubernetes.executor.missingPodDetectDelta \
         after its registration, and replaces it after its next poll.",
    )
    .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala")
    .evidence(format!(
        "last seen at resourceVersion {}; the LIST at resourceVersion {} does not have it",
        last_rv.map_or_else(|| "?".to_owned(), |r| r.to_string()),
        list_rv.map_or_else(|| "?".to_owned(), |r| r.to_string())
    ));
    f = f.evidence(format!("Spark's view: {spark_verdict}"));
    f
}

/// A `std` duration for people, the same way (request timeouts, poll intervals).
pub fn human_std_duration(d: std::time::Duration) -> String {
    human_duration(chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX))
}

/// A duration for people: `45s`, `3m20s`, `2h05m`. The one format every output uses.
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

#[cfg(test)]
mod tests;
