//! Scenario files: the cluster (nodes, namespaces, other pods), the Spark applications and
//! what happens to their executors, on a timeline. Format documented in `docs/simulator.md`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::resource::Resource;

mod load;
mod operator;
mod scale;

pub use load::{load, parse};
pub use operator::{OperatorKind, OperatorSpec, ScheduledSpec};
pub use scale::scale;

/// Built-in scenarios, embedded from `assets/scenarios/`.
pub const BUILT_IN: [(&str, &str); 13] = [
    (
        "mixed",
        include_str!("../../../../assets/scenarios/mixed.yaml"),
    ),
    (
        "oom-storm",
        include_str!("../../../../assets/scenarios/oom-storm.yaml"),
    ),
    (
        "pending-capacity",
        include_str!("../../../../assets/scenarios/pending-capacity.yaml"),
    ),
    (
        "churn",
        include_str!("../../../../assets/scenarios/churn.yaml"),
    ),
    (
        "empty",
        include_str!("../../../../assets/scenarios/empty.yaml"),
    ),
    (
        "disagreements",
        include_str!("../../../../assets/scenarios/disagreements.yaml"),
    ),
    (
        "failure-modes",
        include_str!("../../../../assets/scenarios/failure-modes.yaml"),
    ),
    (
        "driver-failures",
        include_str!("../../../../assets/scenarios/driver-failures.yaml"),
    ),
    (
        "scale-down",
        include_str!("../../../../assets/scenarios/scale-down.yaml"),
    ),
    (
        "cluster-pressure",
        include_str!("../../../../assets/scenarios/cluster-pressure.yaml"),
    ),
    (
        "batch-schedulers",
        include_str!("../../../../assets/scenarios/batch-schedulers.yaml"),
    ),
    (
        "allocators",
        include_str!("../../../../assets/scenarios/allocators.yaml"),
    ),
    (
        "operators",
        include_str!("../../../../assets/scenarios/operators.yaml"),
    ),
];

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    /// Pods that are not Spark's (must never show up as executors).
    #[serde(default)]
    pub pods: Vec<PlainPod>,
    #[serde(default)]
    pub apps: Vec<AppSpec>,
    /// Cluster-level steps (nodes arriving or failing).
    #[serde(default)]
    pub timeline: Vec<ClusterStep>,
    /// ResourceQuotas (enforced on pod creation, counted by the quota controller).
    #[serde(default)]
    pub quotas: Vec<QuotaSpec>,
}

/// A ResourceQuota: `hard` maps a resource name (`pods`, `requests.cpu`, `limits.memory`, …)
/// to a quantity.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QuotaSpec {
    pub namespace: String,
    pub name: String,
    pub hard: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    /// How many nodes like this (`name-1`, `name-2`, … when more than one).
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default = "default_cpu")]
    pub cpu: String,
    #[serde(default = "default_memory")]
    pub memory: String,
    #[serde(default = "default_max_pods")]
    pub pods: u32,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `key=value:Effect` or `key:Effect`.
    #[serde(default)]
    pub taints: Vec<String>,
}

fn one() -> u32 {
    1
}
fn default_cpu() -> String {
    "16".into()
}
fn default_memory() -> String {
    "64Gi".into()
}
fn default_max_pods() -> u32 {
    110
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlainPod {
    pub namespace: String,
    pub name: String,
    #[serde(default = "default_plain_image")]
    pub image: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn default_spark_version() -> String {
    "4.0.1".into()
}

fn default_plain_image() -> String {
    "nginx:1.27".into()
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    pub name: String,
    pub namespace: String,
    /// `spark.executor.instances`.
    pub executors: u32,
    #[serde(default = "default_true", rename = "deleteOnTermination")]
    pub delete_on_termination: bool,
    #[serde(default = "default_exec_cores")]
    pub cores: u32,
    /// `spark.executor.memory` in MiB.
    #[serde(default = "default_exec_memory", rename = "memoryMiB")]
    pub memory_mib: u64,
    /// `spark.executor.memoryOverhead` in MiB.
    #[serde(default = "default_overhead", rename = "overheadMiB")]
    pub overhead_mib: u64,
    /// The Spark release the app's pods are labelled with (`spark-version`).
    #[serde(default = "default_spark_version", rename = "sparkVersion")]
    pub spark_version: String,
    #[serde(default = "default_image")]
    pub image: String,
    /// `spark.executor.maxNumFailures`; default Spark's max(3, 2 × executors).
    #[serde(default, rename = "maxFailures")]
    pub max_failures: Option<u32>,
    /// When the app starts (scenario time).
    #[serde(default, with = "humantime_serde_opt")]
    pub start: Option<Duration>,
    #[serde(default)]
    pub fates: Vec<Fate>,
    /// `spark.kubernetes.allocation.batch.size`: executors requested per round (1 per tick).
    #[serde(default = "default_batch", rename = "allocationBatch")]
    pub allocation_batch: u32,
    /// More Spark properties for the driver's `spark.properties` (ConfigMap).
    #[serde(default)]
    pub conf: std::collections::BTreeMap<String, String>,
    /// What happens to the driver pod (an exit, an eviction, a deletion, an image pull
    /// failure), as an executor's fate without `executor`.
    #[serde(default, rename = "driverFate")]
    pub driver_fate: Option<DriverPodFate>,
    /// The driver pod's memory request and limit (default `1408Mi`: 1g + 384m); a size no
    /// node has keeps the driver Pending.
    #[serde(default, rename = "driverMemory")]
    pub driver_memory: Option<String>,
    /// Dynamic allocation: the executor target changes at these times (a lower target
    /// removes the newest executors, "Executor killed by driver.").
    #[serde(default)]
    pub scale: Vec<ScaleStep>,
    /// `spec.priorityClassName` of the app's pods (driver and executors).
    #[serde(default, rename = "priorityClass")]
    pub priority_class: Option<String>,
    /// `spec.priority` of the app's pods (what admission resolves the class to).
    #[serde(default)]
    pub priority: Option<i32>,
    /// Who besides the default scheduler decides whether its pods are scheduled.
    #[serde(default)]
    pub scheduling: Option<Scheduling>,
    /// `spark.kubernetes.allocation.pods.allocator`: `direct` (the driver creates the pods),
    /// `statefulset` or `deployment` (a controller the driver owns creates them).
    #[serde(default)]
    pub allocator: Allocator,
    /// The driver's service account may not create pods: every executor pod is refused
    /// (403), as the driver's log says.
    #[serde(default, rename = "executorsForbidden")]
    pub executors_forbidden: bool,
    /// The app runs a Structured Streaming query of this name: its driver's jobs are
    /// micro-batches ("name\nid = …\nrunId = …\nbatch = N"), and its event log would
    /// start the query.
    #[serde(default)]
    pub streaming: Option<String>,
    /// Submitted through an operator's `SparkApplication` (the simulator plays the operator:
    /// it submits, resubmits and reruns the app and writes the object's status).
    #[serde(default)]
    pub operator: Option<OperatorSpec>,
}

impl Scenario {
    /// The CRDs a cluster for this scenario has installed: an operator's, where an app is
    /// submitted through it.
    pub fn installed(&self) -> Vec<Resource> {
        let mut out: Vec<Resource> = Vec::new();
        for a in &self.apps {
            if let Some(op) = &a.operator {
                let scheduled = op
                    .scheduled
                    .as_ref()
                    .map(|_| Resource::KubeflowScheduledApps);
                for r in std::iter::once(op.kind.resource()).chain(scheduled) {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
            }
        }
        out
    }
}

/// Which of Spark's pod allocators the app runs with.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Allocator {
    /// `ExecutorPodsAllocator`: the driver creates and owns each executor pod.
    #[default]
    Direct,
    /// `StatefulSetPodsAllocator` (3.3+): StatefulSet `spark-s-<app id>-0` owns the pods.
    Statefulset,
    /// `DeploymentPodsAllocator` (4.2+): Deployment `spark-d-<app id>-0`, its ReplicaSet owns them.
    Deployment,
}

impl Allocator {
    /// The value of `spark.kubernetes.allocation.pods.allocator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Statefulset => "statefulset",
            Self::Deployment => "deployment",
        }
    }
}

/// A batch scheduler or admission controller in charge of an app's pods, played as far as
/// its words on the pods and its group objects go (docs/simulator.md).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scheduling {
    pub by: SchedulerKind,
    /// Kueue's LocalQueue, YuniKorn's or Volcano's queue.
    #[serde(default)]
    pub queue: Option<String>,
    /// Why it waits: Kueue's QuotaReserved message, YuniKorn's queue headroom.
    #[serde(default)]
    pub waiting: Option<String>,
    /// Kueue: when the Workload is admitted and the driver's gate removed.
    #[serde(default, rename = "admitAt", with = "humantime_serde_opt")]
    pub admit_at: Option<Duration>,
    /// Volcano's PodGroup `minMember`; the native gang's `minCount` of the executors' group.
    #[serde(default, rename = "minMember")]
    pub min_member: Option<u32>,
    /// YuniKorn rejects the application with this reason.
    #[serde(default)]
    pub rejected: Option<String>,
    /// `named`: the scheduler the pods ask for, which nothing runs as.
    #[serde(default, rename = "schedulerName")]
    pub scheduler_name: Option<String>,
}

/// Which one.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerKind {
    /// Kueue's pod integration: the driver is gated until its Workload is admitted.
    Kueue,
    /// Volcano: the pods name its PodGroup (`<app id>-podgroup`), which never gets ready.
    Volcano,
    /// YuniKorn: its queue keeps the driver waiting, or it rejects the application.
    Yunikorn,
    /// The native gang (1.35): the executors form a pod group of a Workload.
    Gang,
    /// A `schedulerName` nothing serves.
    Named,
}

/// A fate for the driver pod.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DriverPodFate {
    #[serde(default, with = "humantime_serde_opt")]
    pub at: Option<Duration>,
    #[serde(default)]
    pub after: Option<String>,
    #[serde(default)]
    pub exit: Option<i32>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub action: Option<FateAction>,
    #[serde(default)]
    pub image_pull_error: Option<String>,
    /// `preempt`: the app whose driver pod takes this driver's place.
    #[serde(default)]
    pub by: Option<String>,
    /// With a non-zero `exit`: the exception the application's main ended by, which
    /// Spark 4.1+ writes on the driver pod (`spark.exit-exception`,
    /// `spark.kubernetes.driver.annotateExitException`) as it exits.
    #[serde(default, rename = "exitException")]
    pub exit_exception: Option<String>,
}

impl DriverPodFate {
    /// The same as an executor's fate.
    pub fn as_fate(&self) -> Fate {
        Fate {
            at: self.at,
            after: self.after.clone(),
            exit: self.exit,
            reason: self.reason.clone(),
            action: self.action,
            image_pull_error: self.image_pull_error.clone(),
            by: self.by.clone(),
            ..Fate::default()
        }
    }
}

/// A change of the executor target (dynamic allocation).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScaleStep {
    #[serde(with = "humantime_serde_req")]
    pub at: Duration,
    pub executors: u32,
}

fn default_batch() -> u32 {
    10
}

fn default_true() -> bool {
    true
}
fn default_exec_cores() -> u32 {
    1
}
fn default_exec_memory() -> u64 {
    2048
}
fn default_overhead() -> u64 {
    384
}
fn default_image() -> String {
    "apache/spark:4.0.1".into()
}

/// What happens to an executor (or to every executor, with `executor: "*"`).
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Fate {
    /// An executor id, or `*` for all executors without a fate of their own.
    pub executor: ExecutorSel,
    /// At this scenario time…
    #[serde(default, with = "humantime_serde_opt")]
    pub at: Option<Duration>,
    /// …or this long after the executor started running (`*` fates: a range `5s..15s`).
    #[serde(default)]
    pub after: Option<String>,
    /// The container exits with this code (`137` + `reason: OOMKilled` for a cgroup OOM).
    #[serde(default)]
    pub exit: Option<i32>,
    #[serde(default)]
    pub reason: Option<String>,
    /// What happens to the pod instead of (or before) an exit.
    #[serde(default)]
    pub action: Option<FateAction>,
    /// The image pull fails with this registry error, forever.
    #[serde(default)]
    pub image_pull_error: Option<String>,
    /// Pod shape changes that make it unschedulable for real.
    #[serde(default)]
    pub memory: Option<String>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// The driver disagrees with the pod: `lost-pod` (it ignores the pod's removal and keeps
    /// the executor active), `unregistered` (the executor never registers), `zombie` (at
    /// `at`, it removes the executor for a heartbeat timeout but leaves the pod running),
    /// `heartbeat-kill` (at `at`, a heartbeat timeout recorded as "Executor killed by
    /// driver.", the pod deleted).
    #[serde(default)]
    pub driver: Option<DriverFate>,
    /// `preempt`: the app whose driver pod takes the executor's place (the `Preempted`
    /// event names it as the scheduler does: by uid, and as the event's `related` object).
    #[serde(default)]
    pub by: Option<String>,
    /// With an exit: the memory was resized in place to this before it (as Spark 4.2's
    /// ExecutorResizePlugin does through the `resize` subresource), and the node could not
    /// apply it: the container dies at its old limit, its spec asks this one.
    #[serde(default, rename = "resizedTo")]
    pub resized_to: Option<String>,
}

/// What a fate does to the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FateAction {
    /// Removed with no watch event (Spark notices at its next full poll).
    Vanish,
    /// Evicted by the kubelet for node memory pressure.
    Evict,
    /// Evicted by the kubelet for passing its own ephemeral-storage limit.
    EvictStorage,
    /// Ended by the kubelet for a graceful node shutdown (spot reclaim).
    Shutdown,
    /// Refused by the kubelet on admission (`reason`, default `OutOfcpu`): no container runs.
    Reject,
    /// Preempted by the scheduler.
    Preempt,
    /// Deleted (as `kubectl delete` would).
    Delete,
}

/// How the driver's own view departs from the pod's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverFate {
    LostPod,
    Unregistered,
    Zombie,
    /// At `at` the executor stops heartbeating: the driver's `HeartbeatReceiver` logs
    /// "Removing executor N with no recent heartbeats", and Spark 3.5 to 4.3 record the
    /// removal as "Executor killed by driver." (apache/spark#57494); the pod is deleted.
    HeartbeatKill,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum ExecutorSel {
    #[default]
    All,
    Id(i64),
}

impl<'de> Deserialize<'de> for ExecutorSel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(i64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Self::Id(n)),
            Raw::S(s) if s == "*" => Ok(Self::All),
            Raw::S(s) => s.parse().map(Self::Id).map_err(|_| {
                serde::de::Error::custom(format!("executor must be an id or \"*\", not {s:?}"))
            }),
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterStep {
    #[serde(with = "humantime_serde_req")]
    pub at: Duration,
    #[serde(default)]
    pub add_node: Option<NodeSpec>,
    #[serde(default)]
    pub lose_node: Option<String>,
}

mod humantime_serde_opt {
    use std::time::Duration;

    use serde::Deserialize;

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        s.map(|s| humantime::parse_duration(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

mod humantime_serde_req {
    use std::time::Duration;

    use serde::Deserialize;

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

impl Fate {
    /// The delay after running, for `after` (a fixed `10s` or a range `5s..15s`).
    pub fn after_running(&self, rng: &mut fastrand::Rng) -> Option<Duration> {
        let a = self.after.as_deref()?;
        match a.split_once("..") {
            Some((lo, hi)) => {
                let lo = humantime::parse_duration(lo.trim()).ok()?;
                let hi = humantime::parse_duration(hi.trim()).ok()?;
                let span = hi.saturating_sub(lo).as_millis() as u64;
                Some(lo + Duration::from_millis(if span == 0 { 0 } else { rng.u64(0..span) }))
            }
            None => humantime::parse_duration(a.trim()).ok(),
        }
    }
}

/// The largest value of an int Spark setting (`spark.executor.maxNumFailures`).
pub const SPARK_MAX_INT: u32 = i32::MAX as u32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_parse() {
        for (name, _) in BUILT_IN {
            let s = load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, name);
        }
    }

    #[test]
    fn bad_scenarios_are_clear() {
        let e = parse("name: x\nappz: []\n").unwrap_err();
        assert!(e.contains("appz"), "{e}");
        let e = load("/nonexistent.yaml").unwrap_err();
        assert!(e.contains("built-ins: mixed"), "{e}");
        let e = parse(
            "name: x\napps: [{name: a, namespace: n, executors: 1, fates: [{executor: seven}]}]\n",
        )
        .unwrap_err();
        assert!(e.contains("executor must be"), "{e}");
        let e = parse(
            "name: x\napps: [{name: a, namespace: n, executors: 1, maxFailures: 4294967295}]\n",
        )
        .unwrap_err();
        assert!(e.contains("which Spark refuses"), "{e}");
        // The scale scenario's "no limit" is one Spark accepts.
        assert!(
            scale(1, 10, 0.0)
                .apps
                .iter()
                .all(|a| a.max_failures.is_some_and(|m| i32::try_from(m).is_ok()))
        );
    }

    #[test]
    fn after_ranges() {
        let mut rng = fastrand::Rng::with_seed(1);
        let f = Fate {
            after: Some("5s..15s".into()),
            ..Fate::default()
        };
        for _ in 0..100 {
            let d = f.after_running(&mut rng).unwrap();
            assert!(d >= Duration::from_secs(5) && d < Duration::from_secs(15));
        }
    }

    #[test]
    fn a_preemptor_must_name_an_app_of_the_scenario() {
        let text = |by: &str, action: &str| {
            format!(
                "name: t\ndescription: d\nnamespaces: [ns]\nnodes: [{{name: n, count: 1}}]\napps:\n  \
                 - {{name: a, namespace: ns, executors: 1, fates: [{{executor: 1, at: 1s, action: {action}, by: {by}}}]}}\n  \
                 - {{name: b, namespace: ns, executors: 1}}\n"
            )
        };
        assert!(parse(&text("b", "preempt")).is_ok());
        let e = parse(&text("c", "preempt")).unwrap_err();
        assert!(e.contains("`by: c` names no app"), "{e}");
        let e = parse(&text("b", "evict")).unwrap_err();
        assert!(e.contains("needs `action: preempt`"), "{e}");
    }
}
