//! The finding codes: one table, from which the enum, its order, its names and what the
//! rules and views read of each code are made. A new code is one line here and one row
//! in docs/diagnosis.md §3 (a test fails when either is missing).
//!
//! Codes are a stable contract: add new ones, never rename. The table's order is the
//! rules' order (`Code::ALL`, the rank among findings of one standing and witness) and the
//! documentation's.

use serde::{Deserialize, Serialize};

/// What a code says of how a pod ended, for the verdict's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Read from the Spark container's exit.
    Exit,
    /// How the kubelet ended the pod (not an exit, but what Spark's removal reason can carry).
    PodEnding,
    /// Anything else (scheduling, the driver's view, the app).
    Other,
}

/// What a finding says about the executor, for ordering: primary first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// A cause.
    Cause,
    /// A weak cause: a generic exit that a log line can name better.
    Weak,
    /// A pod × driver disagreement: a consequence worth acting on.
    Disagreement,
    /// How it ended rather than why: never primary while anything else is known.
    Mechanism,
}

macro_rules! codes {
    (@exit exit) => { true };
    (@exit) => { false };
    (@rank $rank:literal) => { Some($rank) };
    (@rank) => { None };
    (@ends ends) => { true };
    (@ends) => { false };
    (@driver $driver:ident) => { Some(Self::$driver) };
    (@driver) => { None };
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, $kind:ident, $standing:ident, $label:literal $(+ $exit:ident)?
            $(, driver $driver:ident)? $(, app $rank:literal $($ends:ident)?)?;
    )*) => {
        /// A stable finding code (kebab-case in every output).
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            schemars::JsonSchema,
        )]
        pub enum Code {
            $( $(#[$doc])* #[serde(rename = $name)] $variant, )*
        }

        impl Code {
            /// Every code, in the table's order (the rules' rank, the documentation's).
            pub const ALL: [Self; [$($name),*].len()] = [$(Self::$variant),*];

            /// The kebab-case code every output uses.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }

            /// What the code says of how a pod ended.
            pub fn kind(self) -> Kind {
                match self { $(Self::$variant => Kind::$kind,)* }
            }

            /// Primary first: causes, weak causes, disagreements, then mechanisms.
            pub fn standing(self) -> Standing {
                match self { $(Self::$variant => Standing::$standing,)* }
            }

            /// The cause as the incident strip counts it ("OOMKilled (137)", "evicted"):
            /// the label, and whether the exit code goes with it.
            pub fn label(self) -> (&'static str, bool) {
                match self { $(Self::$variant => ($label, codes!(@exit $($exit)?)),)* }
            }

            /// The code of this name.
            pub fn parse(name: &str) -> Option<Self> {
                match name { $($name => Some(Self::$variant),)* _ => None }
            }

            /// Its rank among an application's findings of one severity (lower leads the
            /// app's verdict); `None` for a code that is never an app's finding (it ranks
            /// after every app code).
            pub fn app_rank(self) -> Option<u8> {
                match self { $(Self::$variant => codes!(@rank $($rank)?),)* }
            }

            /// The app code says how the driver ended (its run is over).
            pub fn ends_driver(self) -> bool {
                match self { $(Self::$variant => codes!(@ends $($($ends)?)?),)* }
            }

            /// The app code this executor code becomes when the driver pod is read by the
            /// executor rules (before the exceptions `driver_pod/driverize.rs` makes).
            pub fn as_driver(self) -> Option<Self> {
                match self { $(Self::$variant => codes!(@driver $($driver)?),)* }
            }
        }
    };
}

codes! {
    /// The container was OOM-killed by the kernel (exit 137, `OOMKilled`): the pod's memory limit.
    ContainerOomKilled = "container-oom-killed", Exit, Cause, "OOMKilled" + exit, driver DriverOomKilled;
    /// SIGKILL (137) without `OOMKilled`: killed by the node (memory pressure, a kill from outside).
    NodeSigkill = "node-sigkill", Exit, Cause, "SIGKILL" + exit, driver DriverFailed;
    /// Terminated with `ContainerStatusUnknown` (usually 137): the container was lost with its
    /// node, not OOM-killed.
    ContainerStatusUnknown = "container-status-unknown", Exit, Cause, "container status unknown", driver DriverNodeLost;
    /// The JVM ran out of heap (exit 52, `OutOfMemoryError`).
    JvmOom = "jvm-oom", Exit, Cause, "JVM OOM" + exit, driver DriverJvmOom;
    /// An uncaught exception ended the executor (exit 50, 51 or 10).
    UncaughtException = "uncaught-exception", Exit, Cause, "uncaught exception" + exit, driver DriverFailed;
    /// Spark could not create its local directories (exit 53).
    LocalDirFailure = "local-dir-failure", Exit, Cause, "local dir failure", driver DriverFailed;
    /// The executor could not reach the driver with heartbeats (exit 56).
    HeartbeatFailure = "heartbeat-failure", Exit, Cause, "heartbeat failure" + exit, driver DriverFailed;
    /// The task reaper killed the JVM (exit 57).
    TaskReaper = "task-reaper", Exit, Cause, "task reaper", driver DriverFailed;
    /// Exit 58: the block manager could not re-register with the driver.
    BlockManagerReregistration = "block-manager-reregistration", Exit, Cause, "block manager reregistration", driver DriverFailed;
    /// Exit 101: a class was not found (Spark's `CLASS_NOT_FOUND`).
    ClassNotFound = "class-not-found", Exit, Cause, "class not found", driver DriverFailed;
    /// Ended by SIGTERM (143): a kill, a deletion, a drain.
    Sigterm = "sigterm", Exit, Mechanism, "SIGTERM" + exit, driver DriverStopped;
    /// Segmentation fault (139).
    Sigsegv = "sigsegv", Exit, Cause, "sigsegv", driver DriverFailed;
    /// Aborted (134).
    Sigabrt = "sigabrt", Exit, Cause, "sigabrt", driver DriverFailed;
    /// The entrypoint could not be run (126/127).
    NotExecutable = "not-executable", Exit, Cause, "not executable", driver DriverFailed;
    /// Any other non-zero exit.
    GenericError = "generic-error", Exit, Weak, "error" + exit, driver DriverFailed;
    /// The executor exited 0.
    Succeeded = "succeeded", Exit, Cause, "succeeded", driver AppSucceeded;
    /// Evicted by the kubelet or the eviction API.
    Evicted = "evicted", PodEnding, Cause, "evicted", driver DriverEvicted;
    /// Evicted for exceeding its own ephemeral-storage limit or an emptyDir `sizeLimit`.
    LocalStorageExceeded = "local-storage-exceeded", PodEnding, Cause, "local storage exceeded", driver DriverEvicted;
    /// Preempted by a higher-priority pod.
    Preempted = "preempted", Other, Cause, "preempted", driver DriverPreempted;
    /// Terminated by the kubelet for a graceful node shutdown (spot reclaim, maintenance).
    NodeShutdown = "node-shutdown", PodEnding, Cause, "node shutdown", driver DriverEvicted;
    /// Deletion requested (by Spark, a user or a controller).
    Deleted = "deleted", Other, Mechanism, "deleted", driver DriverDeleted;
    /// The scheduler cannot place it (FailedScheduling).
    Unschedulable = "unschedulable", Other, Cause, "unschedulable", driver DriverPending;
    /// Held by scheduling gates (Kueue's admission gate, or another controller's).
    SchedulingGated = "scheduling-gated", Other, Cause, "scheduling gated", driver DriverPending;
    /// Held for its gang: a Volcano PodGroup, YuniKorn task groups, a native Workload.
    GangWaiting = "gang-waiting", Other, Cause, "gang waiting", driver DriverPending;
    /// Held by a batch scheduler's queue (YuniKorn's queue or user quota).
    QueueWaiting = "queue-waiting", Other, Cause, "queue waiting", driver DriverPending;
    /// Failed by a batch scheduler before it ran (YuniKorn: application rejected, gang
    /// reservation timed out).
    SchedulerRejected = "scheduler-rejected", Other, Cause, "scheduler rejected", driver DriverFailed;
    /// Stopped by Kueue: its Workload was evicted or deactivated.
    WorkloadEvicted = "workload-evicted", Other, Cause, "workload evicted", driver DriverFailed;
    /// A named scheduler has said nothing about the pod (not installed, not running).
    SchedulerSilent = "scheduler-silent", Other, Cause, "scheduler silent", driver DriverPending;
    /// The image cannot be pulled.
    ImagePull = "image-pull", Other, Cause, "image pull", driver DriverPending;
    /// The container cannot be created from its config (missing ConfigMap/Secret key, …).
    ContainerConfigError = "container-config-error", Other, Cause, "container config error", driver DriverPending;
    /// Stuck in ContainerCreating (volumes, network).
    ContainerCreatingStuck = "container-creating-stuck", Other, Cause, "container creating stuck", driver DriverPending;
    /// An init container failed.
    InitContainerFailed = "init-container-failed", Other, Cause, "init container failed", driver DriverPending;
    /// The kubelet refused the pod on admission (`OutOfcpu`, `OutOfmemory`, `OutOfpods`,
    /// `UnexpectedAdmissionError`, `NodeAffinity`): it failed before any container ran.
    AdmissionRejected = "admission-rejected", PodEnding, Cause, "admission rejected", driver DriverFailed;
    /// The pod's node was lost.
    NodeLost = "node-lost", Other, Cause, "node lost", driver DriverNodeLost;
    /// A sidecar failed while the Spark container ran.
    SidecarFailed = "sidecar-failed", Other, Cause, "sidecar failed", driver SidecarFailed, app 22;
    /// The executor's process exited, but Spark looks at another container and still calls it running.
    StuckRunning = "stuck-running", Other, Cause, "stuck running", driver StuckRunning;
    /// Vanished from a full LIST with no deletion seen.
    Missing = "missing", Other, Cause, "missing";
    /// The driver still counts the executor active while its pod is gone.
    DriverLostPod = "driver-lost-pod", Other, Disagreement, "driver lost pod";
    /// Running for over a minute, and the driver has no such executor.
    Unregistered = "unregistered", Other, Disagreement, "unregistered";
    /// Failed within seconds and never listed by the driver: it could not reach the driver.
    DriverUnreachable = "driver-unreachable", Other, Cause, "driver unreachable";
    /// Removed by the driver, its pod still running.
    Zombie = "zombie", Other, Disagreement, "zombie";
    /// The driver removed the executor after its heartbeats timed out.
    HeartbeatTimeout = "heartbeat-timeout", Other, Cause, "heartbeat timeout";
    /// The driver removed the executor when its RPC connection dropped.
    RpcDisassociated = "rpc-disassociated", Other, Cause, "rpc disassociated";
    /// "Executor killed by driver." where that is not a scale-down: dynamic allocation off or
    /// not known, tasks lost on it, or a JVM that needed SIGKILL after its grace. Spark 3.5 to
    /// 4.3 write this text for some heartbeat timeouts (apache/spark#57494).
    KilledByDriver = "killed-by-driver", Other, Cause, "killed by driver";
    /// The driver lists the executor as removed, with Spark's reason verbatim.
    DriverRemoved = "driver-removed", Other, Mechanism, "driver removed";
    /// (app) Repeated failures with one cause, against Spark's failure budget.
    CrashLoop = "crash-loop", Other, Cause, "crash loop", app 12;
    /// (app) A pod whose `spark-exec-id` is not a number breaks Spark's snapshot updates.
    SnapshotUpdateFails = "snapshot-update-fails", Other, Cause, "snapshot update fails", app 19;
    /// (app, Spark 4.2+) An OOM removal put the app in recovery mode.
    OomRecoveryMode = "oom-recovery-mode", Other, Cause, "oom recovery mode", app 27;
    /// (app) The namespace's ResourceQuota refuses new executor pods: Spark's creations fail
    /// before any pod exists.
    QuotaExhausted = "quota-exhausted", Other, Cause, "quota exhausted", app 15;
    /// (app) Pending executors waiting on a gate, a gang, a queue or a silent scheduler.
    ExecutorsWaiting = "executors-waiting", Other, Cause, "executors waiting", app 17;
    /// (app) The driver's container was OOM-killed (137, `OOMKilled`).
    DriverOomKilled = "driver-oom-killed", Other, Cause, "driver oom killed", app 0 ends;
    /// (app) The driver's JVM ran out of heap (exit 52, or an `OutOfMemoryError` in its log).
    DriverJvmOom = "driver-jvm-oom", Other, Cause, "driver jvm oom", app 1 ends;
    /// (app) The driver gave up after too many executor failures (exit 11).
    ExecutorFailuresExceeded = "executor-failures-exceeded", Other, Cause, "executor failures exceeded", app 2 ends;
    /// (app) The driver was evicted (node pressure, the Eviction API, a node shutdown).
    DriverEvicted = "driver-evicted", Other, Cause, "driver evicted", app 3 ends;
    /// (app) The driver was preempted by a higher-priority pod.
    DriverPreempted = "driver-preempted", Other, Cause, "driver preempted", app 4 ends;
    /// (app) The driver's node was lost.
    DriverNodeLost = "driver-node-lost", Other, Cause, "driver node lost", app 5 ends;
    /// (app) The driver exited with an error (any other non-zero exit).
    DriverFailed = "driver-failed", Other, Cause, "driver failed", app 6 ends;
    /// (app) The driver pod vanished: absent from a full LIST, no deletion seen.
    DriverVanished = "driver-vanished", Other, Cause, "driver vanished", app 7 ends;
    /// (app) The driver pod was deleted before it finished (by its owner, a user or a controller).
    DriverDeleted = "driver-deleted", Other, Cause, "driver deleted", app 8 ends;
    /// (app) The driver waits: unschedulable, image pull, config error, volumes, admission.
    DriverPending = "driver-pending", Other, Cause, "driver pending", app 10;
    /// (app) Executors still run while their driver is gone.
    OrphanedExecutors = "orphaned-executors", Other, Cause, "orphaned executors", app 20;
    /// (app) The driver's container restarted.
    DriverRestarted = "driver-restarted", Other, Cause, "driver restarted", app 21;
    /// (app) The driver was stopped from outside (SIGTERM, 143): not a failure of the app.
    DriverStopped = "driver-stopped", Other, Cause, "driver stopped", app 23 ends;
    /// (app) The driver finished (exit 0).
    AppSucceeded = "app-succeeded", Other, Cause, "app succeeded", app 24 ends;
    /// (app) The driver runs and nothing above the executors is wrong.
    AppRunning = "app-running", Other, Cause, "app running", app 25;
    /// (app) No driver pod was seen (outside the scope or the selector): judged from executors only.
    DriverNotSeen = "driver-not-seen", Other, Cause, "driver not seen", app 26;
    /// The executor ended because its driver ended (deleted by Spark's stop or the garbage collector).
    EndedWithDriver = "ended-with-driver", Other, Cause, "ended with driver";
    /// The executor's pod was deleted by spark-triage's own kill (`K`, `spark-triage kill`):
    /// not a failure, not counted.
    KilledByTool = "killed-by-spark-triage", Other, Cause, "killed by spark-triage";
    /// (config) Dynamic allocation without a safe home for shuffle data.
    DynamicAllocationShuffle = "dynamic-allocation-shuffle", Other, Cause, "dynamic allocation shuffle", app 28;
    /// (config) `spark.executor.heartbeatInterval` not well below `spark.network.timeout`.
    HeartbeatSettings = "heartbeat-settings", Other, Cause, "heartbeat settings", app 29;
    /// (config) Executor pods requested faster than an API server should take them.
    AllocationFlood = "allocation-flood", Other, Cause, "allocation flood", app 30;
    /// (config) The task and executor failure budgets, told apart.
    FailureBudgets = "failure-budgets", Other, Cause, "failure budgets", app 31;
    /// (config) A setting whose value Spark cannot read.
    UnreadableSetting = "unreadable-setting", Other, Cause, "unreadable setting", app 32;
    /// (app) Executors failed (Spark counted them, or failed them and blamed the app), fewer
    /// than a crash loop's of one cause: by cause, against Spark's failure budget.
    ExecutorsFailed = "executors-failed", Other, Cause, "executors failed", app 13;
    /// (app) Executors vanished from a full LIST with no deletion seen.
    ExecutorsMissing = "executors-missing", Other, Cause, "executors missing", app 16;
    /// (app) Pending executors the nodes do not take (unschedulable, image pulls, config
    /// errors, volumes): by reason, the longest wait.
    ExecutorsPending = "executors-pending", Other, Cause, "executors pending", app 18;
    /// (app) The event log ends without the application's end: the driver is still running,
    /// or it died without stopping.
    AppUnfinished = "app-unfinished", Other, Cause, "app unfinished", app 9;
    /// (app) Executors preempted, by whom (the preemptor's app and priority).
    ExecutorsPreempted = "executors-preempted", Other, Cause, "executors preempted", app 14;
    /// (app) Several executors failed on one node within a window.
    NodeFailures = "node-failures", Other, Cause, "node failures", app 11;
    /// (app, operator) The operator's spark-submit was refused (a quota, a webhook, RBAC,
    /// an invalid pod): no pod was made.
    SubmissionFailed = "submission-failed", Other, Cause, "submission failed", app 33;
    /// (app, operator) The operator holds the application for admission (Kueue's Workload
    /// not admitted, `spec.suspend`): nothing is submitted yet.
    AdmissionWaiting = "admission-waiting", Other, Cause, "admission waiting", app 34;
    /// (app, operator) A run failed and the operator reruns it, as its restart policy allows.
    RerunPending = "rerun-pending", Other, Cause, "rerun pending", app 35;
    /// (app) The API server refuses every executor pod the driver asks for (its service
    /// account's RBAC, a webhook, an invalid pod): the driver runs with none.
    ExecutorsRefused = "executors-refused", Other, Cause, "executors refused", app 36;
    /// (app, operator) A ScheduledSparkApplication's run is due and not started (an earlier
    /// run still running under `Forbid`, no `concurrencyPolicy`, or no operator acting).
    RunsSkipped = "runs-skipped", Other, Cause, "runs skipped", app 37;
    /// (app, operator) A ScheduledSparkApplication failed validation: it runs nothing.
    ScheduleInvalid = "schedule-invalid", Other, Cause, "schedule invalid", app 38;
    /// (app) Dynamic allocation's target stands above the executors the app has for two
    /// minutes with no pending pod, quota refusal or refused creation to say why.
    ScaleUpStalled = "scale-up-stalled", Other, Cause, "scale-up stalled", app 39;
    /// (app) A Structured Streaming app's pods were preempted (its executors, or its driver:
    /// the query stops): its priority is below the pods that took their place.
    StreamingPreemptible = "streaming-preemptible", Other, Cause, "streaming preemptible", app 40;
    /// (app) Executor losses cost the app more than a tenth of its run in recomputation:
    /// their shuffle output lost, the stages that wrote it resubmitted (its event log).
    LossesRecomputed = "losses-recomputed", Other, Cause, "losses recomputed", app 41;
    /// (namespace) Finished driver pods kept: a pile, or one kept for a week.
    DriversKept = "drivers-kept", Other, Cause, "drivers kept";
}

/// Which memory an ending ran out of, as every OOM breakdown counts it (the report, the
/// fleet report, MCP): the three codes an OOM can be, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oom {
    /// The container's memory limit (`container-oom-killed`, 137).
    Container,
    /// The JVM's heap (`jvm-oom`, 52).
    Jvm,
    /// The node's OOM killer (`node-sigkill` as an error; as a warning it is a kill from
    /// outside).
    Node,
}

impl Code {
    /// The codes [`Code::oom`] reads (a table row's cause is matched against these
    /// before it is parsed).
    pub const OOM: [Self; 3] = [Self::ContainerOomKilled, Self::JvmOom, Self::NodeSigkill];

    /// The memory an ending of this code and severity ran out of, if it is an OOM.
    pub fn oom(self, severity: super::Severity) -> Option<Oom> {
        match (self, severity) {
            (Self::ContainerOomKilled, _) => Some(Oom::Container),
            (Self::JvmOom, _) => Some(Oom::Jvm),
            (Self::NodeSigkill, super::Severity::Error) => Some(Oom::Node),
            _ => None,
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::Severity;

    #[test]
    fn an_oom_is_one_of_three_codes_and_a_node_kill_only_as_an_error() {
        for code in Code::ALL {
            let oom = [Severity::Info, Severity::Warn, Severity::Error].map(|s| code.oom(s));
            assert_eq!(
                Code::OOM.contains(&code),
                oom.iter().any(Option::is_some),
                "{code:?}"
            );
        }
        assert_eq!(
            Code::ContainerOomKilled.oom(Severity::Info),
            Some(Oom::Container)
        );
        assert_eq!(Code::JvmOom.oom(Severity::Warn), Some(Oom::Jvm));
        assert_eq!(Code::NodeSigkill.oom(Severity::Warn), None);
        assert_eq!(Code::NodeSigkill.oom(Severity::Error), Some(Oom::Node));
    }
}
