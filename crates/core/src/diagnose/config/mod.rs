//! The configuration an application runs with, read from its driver's `spark.properties`:
//! settings that predict a failure before it happens (or that explain one afterwards).
//!
//! Ref (Spark 4.3.0's jars, `ConfigEntry.defaultValueString`, checked with PyPI's pyspark):
//! - `ExecutorAllocationManager.validateSettings`: dynamic allocation needs a shuffle
//!   service, shuffle tracking, shuffle-block decommission or a reliable ShuffleDataIO, else
//!   the SparkContext throws. `spark.dynamicAllocation.shuffleTracking.enabled` is `true`
//!   by default since 3.4.0 (SPARK-39846, apache/spark#37257), `false` in 3.0–3.3;
//!   `shuffleTracking.timeout` defaults to infinity.
//! - `SparkConf.validateSettings` (SPARK-22754): `spark.network.timeout` must be greater than
//!   `spark.executor.heartbeatInterval`, else the SparkContext throws.
//! - `spark.task.maxFailures` (default 4): one task's attempts before its job aborts; an
//!   executor loss counts only when Spark blames the app (`exitCausedByApp`).
//! - `spark.kubernetes.allocation.batch.size`: 5 before 4.0, 10 in 4.0/4.1 (SPARK-50996), 20
//!   from 4.2 (SPARK-54422); `batch.delay` 1s, below 100 ms refused from 4.0 (SPARK-49447).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::budget::FailureBudget;
use super::{Code, Finding, Severity, Witness};
use crate::spark::{spark_bool, spark_time};
use crate::version::SparkVersion;

/// The settings the predictions read (none of them secret), as the driver's properties say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `spark.dynamicAllocation.enabled`.
    pub dynamic_allocation: bool,
    /// `spark.shuffle.service.enabled`.
    pub shuffle_service: bool,
    /// `spark.dynamicAllocation.shuffleTracking.enabled`, when set.
    pub shuffle_tracking: Option<bool>,
    /// `spark.dynamicAllocation.shuffleTracking.timeout`, when set (ms).
    pub shuffle_tracking_timeout_ms: Option<u64>,
    /// `spark.decommission.enabled`.
    pub decommission: bool,
    /// `spark.storage.decommission.shuffleBlocks.enabled` (default true).
    pub decommission_shuffle: Option<bool>,
    /// `spark.shuffle.sort.io.plugin.class` is set (a ShuffleDataIO that may store reliably).
    pub shuffle_io_plugin: Option<String>,
    /// `spark.executor.heartbeatInterval` (ms; default 10s).
    pub heartbeat_interval_ms: Option<u64>,
    /// `spark.network.timeout` (ms; default 120s; a bare number is seconds).
    pub network_timeout_ms: Option<u64>,
    /// `spark.task.maxFailures`, when set.
    pub task_max_failures: Option<u32>,
    /// `spark.kubernetes.allocation.batch.size`, when set.
    pub batch_size: Option<u32>,
    /// `spark.kubernetes.allocation.batch.delay`, when set (ms; a bare number is ms).
    pub batch_delay_ms: Option<u64>,
    /// `spark.kubernetes.allocation.maxPendingPods`, when set.
    pub max_pending_pods: Option<u32>,
    /// `spark.executor.instances`, when set.
    pub executor_instances: Option<u32>,
    /// `spark.dynamicAllocation.maxExecutors`, when set.
    pub max_executors: Option<u32>,
    /// Settings that were there but could not be read: (key, value).
    pub unreadable: Vec<(String, String)>,
}

impl Settings {
    /// Reads them from a driver's properties (unknown keys are ignored; nothing else is kept).
    pub fn from_properties(p: &BTreeMap<String, String>) -> Self {
        let mut unreadable = Vec::new();
        let mut read = |k: &str, parse: &dyn Fn(&str) -> bool| {
            let v = p.get(k)?;
            if !parse(v) {
                unreadable.push((k.to_owned(), v.clone()));
                return None;
            }
            Some(v.trim().to_owned())
        };
        let flag = |v: &str| spark_bool(v).is_some();
        let number = |v: &str| v.trim().parse::<u32>().is_ok();
        let ms = |v: &str| spark_time(v, Duration::from_millis(1)).is_some();
        let secs = |v: &str| spark_time(v, Duration::from_secs(1)).is_some();
        let b = |v: Option<String>| v.as_deref().and_then(spark_bool);
        let n = |v: Option<String>| v.and_then(|v| v.parse::<u32>().ok());
        let t = |v: Option<String>, unit: Duration| {
            v.and_then(|v| spark_time(&v, unit))
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        };
        let one_ms = Duration::from_millis(1);
        let one_s = Duration::from_secs(1);
        let s = Self {
            dynamic_allocation: b(read("spark.dynamicAllocation.enabled", &flag)).unwrap_or(false),
            shuffle_service: b(read("spark.shuffle.service.enabled", &flag)).unwrap_or(false),
            shuffle_tracking: b(read(
                "spark.dynamicAllocation.shuffleTracking.enabled",
                &flag,
            )),
            shuffle_tracking_timeout_ms: t(
                read("spark.dynamicAllocation.shuffleTracking.timeout", &ms),
                one_ms,
            ),
            decommission: b(read("spark.decommission.enabled", &flag)).unwrap_or(false),
            decommission_shuffle: b(read(
                "spark.storage.decommission.shuffleBlocks.enabled",
                &flag,
            )),
            shuffle_io_plugin: p
                .get("spark.shuffle.sort.io.plugin.class")
                .map(|v| v.trim().to_owned())
                // Spark's own default is local disk: no more reliable than none.
                .filter(|v| {
                    !v.is_empty() && v != "org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO"
                }),
            heartbeat_interval_ms: t(read("spark.executor.heartbeatInterval", &ms), one_ms),
            network_timeout_ms: t(read("spark.network.timeout", &secs), one_s),
            task_max_failures: n(read("spark.task.maxFailures", &number)),
            batch_size: n(read("spark.kubernetes.allocation.batch.size", &number)),
            batch_delay_ms: t(read("spark.kubernetes.allocation.batch.delay", &ms), one_ms),
            max_pending_pods: n(read("spark.kubernetes.allocation.maxPendingPods", &number)),
            executor_instances: n(read("spark.executor.instances", &number)),
            max_executors: n(read("spark.dynamicAllocation.maxExecutors", &number)),
            unreadable: Vec::new(),
        };
        Self { unreadable, ..s }
    }

    fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.heartbeat_interval_ms.unwrap_or(10_000))
    }

    fn network_timeout(&self) -> Duration {
        Duration::from_millis(self.network_timeout_ms.unwrap_or(120_000))
    }

    /// How many executors the app asks for at most (`None`: no bound).
    fn target(&self) -> Option<u32> {
        if self.dynamic_allocation {
            self.max_executors
        } else {
            Some(self.executor_instances.unwrap_or(2))
        }
    }
}

/// A time as Spark's settings say it (`10min`, `30s`, `500ms`): what the user wrote, or can.
fn spark_text(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0ms".to_owned(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}min", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

/// `spark.kubernetes.allocation.batch.size`'s default in this version.
fn default_batch_size(v: Option<SparkVersion>) -> u32 {
    match v {
        Some(v) if !v.at_least(4, 0) => 5,
        Some(v) if !v.at_least(4, 2) => 10,
        _ => 20,
    }
}

/// What the configuration predicts, worst first. `budget` is the executor-failure budget the
/// app runs with; `counted` how many failures Spark counted so far.
pub fn config_findings(
    s: &Settings,
    version: Option<SparkVersion>,
    budget: FailureBudget,
    counted: usize,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = [
        dynamic_allocation(s, version),
        heartbeat(s),
        allocation_rate(s, version),
        budgets(s, version, budget, counted),
        unreadable(s),
    ]
    .into_iter()
    .flatten()
    .map(|f| f.witness(Witness::Config))
    .collect();
    out.sort_by_key(|f| f.severity);
    out
}

const REF_DYNAMIC: &str =
    "https://spark.apache.org/docs/latest/job-scheduling.html#dynamic-resource-allocation";

fn dynamic_allocation(s: &Settings, version: Option<SparkVersion>) -> Option<Finding> {
    if !s.dynamic_allocation {
        return None;
    }
    if s.shuffle_service {
        return Some(
            Finding::new(
                Code::DynamicAllocationShuffle,
                Severity::Warn,
                "Dynamic allocation relies on an external shuffle service, which Spark on \
                 Kubernetes does not provide",
            )
            .evidence("spark.dynamicAllocation.enabled=true, spark.shuffle.service.enabled=true")
            .hint(
                "Unless every node runs a shuffle service on spark.shuffle.service.port (7337), \
                 executors fail to register with it and die at start. On Kubernetes use shuffle \
                 tracking instead: --conf spark.shuffle.service.enabled=false (shuffle tracking \
                 is on by default from Spark 3.4).",
            )
            .reference(REF_DYNAMIC),
        );
    }
    if s.shuffle_io_plugin.is_some() {
        // A remote shuffle (Celeborn, Uniffle…) may store reliably: not the tool's to judge.
        return None;
    }
    let tracking = s
        .shuffle_tracking
        .or_else(|| version.map(|v| v.at_least(3, 4)));
    // Shuffle-block decommission moves an idle executor's blocks before it goes: the data
    // is kept either way, and Spark accepts it in place of tracking.
    if s.decommission && s.decommission_shuffle.unwrap_or(true) {
        return None;
    }
    match tracking {
        Some(true) => {
            let timeout = s.shuffle_tracking_timeout_ms?;
            let t = spark_text(Duration::from_millis(timeout));
            Some(
                Finding::new(
                    Code::DynamicAllocationShuffle,
                    Severity::Warn,
                    format!(
                        "Executors that hold shuffle data are released after {t}: a stage that \
                         reads that data later fails to fetch it and is recomputed"
                    ),
                )
                .evidence(format!(
                    "spark.dynamicAllocation.shuffleTracking.timeout={t} (default: never)"
                ))
                .hint(
                    "Shuffle tracking keeps an executor while its shuffle output may be read; the \
                     timeout releases it anyway, and a later read of that output fails \
                     (FetchFailed) and reruns the stages that wrote it. Unset the timeout, or \
                     move the blocks before the executor goes: spark.decommission.enabled, \
                     spark.storage.decommission.enabled and \
                     spark.storage.decommission.shuffleBlocks.enabled.",
                )
                .reference(REF_DYNAMIC),
            )
        }
        Some(false) => {
            let why = match (s.shuffle_tracking, version) {
                (None, Some(v)) => format!(
                    "spark.dynamicAllocation.shuffleTracking.enabled is unset, and its default in Spark {v} is false"
                ),
                _ => "spark.dynamicAllocation.shuffleTracking.enabled=false".to_owned(),
            };
            Some(
                Finding::new(
                    Code::DynamicAllocationShuffle,
                    Severity::Error,
                    "Dynamic allocation without a way to keep shuffle data: the driver refuses to \
                     start (\"Dynamic allocation of executors requires one of the following \
                     conditions\")",
                )
                .evidence(format!(
                    "spark.dynamicAllocation.enabled=true, spark.shuffle.service.enabled=false, {why}, \
                     no shuffle-block decommission"
                ))
                .hint(
                    "SparkContext fails at start with this configuration. On Kubernetes enable \
                     shuffle tracking: --conf spark.dynamicAllocation.shuffleTracking.enabled=true.",
                )
                .reference(REF_DYNAMIC),
            )
        }
        None => Some(
            Finding::new(
                Code::DynamicAllocationShuffle,
                Severity::Info,
                "Dynamic allocation relies on shuffle tracking's default, which depends on the \
                 Spark version (unknown here): from 3.4 it is on, before it the driver refuses \
                 to start",
            )
            .evidence(
                "spark.dynamicAllocation.enabled=true; shuffle service, shuffle tracking and \
                 decommission not set",
            )
            .hint(
                "Say it: --conf spark.dynamicAllocation.shuffleTracking.enabled=true, so the \
                 app does not depend on its Spark version's default.",
            )
            .reference(REF_DYNAMIC),
        ),
    }
}

fn heartbeat(s: &Settings) -> Option<Finding> {
    if s.heartbeat_interval_ms.is_none() && s.network_timeout_ms.is_none() {
        return None;
    }
    let (interval, timeout) = (s.heartbeat_interval(), s.network_timeout());
    let (i, t) = (spark_text(interval), spark_text(timeout));
    let evidence = format!(
        "spark.executor.heartbeatInterval={i}{}, spark.network.timeout={t}{}",
        if s.heartbeat_interval_ms.is_none() {
            " (default)"
        } else {
            ""
        },
        if s.network_timeout_ms.is_none() {
            " (default)"
        } else {
            ""
        },
    );
    let f = if interval >= timeout {
        Finding::new(
            Code::HeartbeatSettings,
            Severity::Error,
            format!(
                "The heartbeat interval ({i}) is not below spark.network.timeout ({t}): Spark \
                 refuses the configuration at start"
            ),
        )
        .hint(
            "SparkConf requires spark.network.timeout to be greater than \
             spark.executor.heartbeatInterval (SPARK-22754). Keep the interval well below the \
             timeout: Spark's defaults are 10s and 120s.",
        )
    } else if interval.saturating_mul(4) > timeout {
        let missed = timeout.as_millis() / interval.as_millis().max(1);
        Finding::new(
            Code::HeartbeatSettings,
            Severity::Warn,
            format!(
                "The heartbeat interval ({i}) is not well below spark.network.timeout ({t}): \
                 {missed} missed heartbeat{} and the driver removes the executor",
                if missed == 1 { "" } else { "s" }
            ),
        )
        .hint(
            "A long GC pause or a busy driver loses a heartbeat or two, and the driver then \
             removes a healthy executor (\"Executor heartbeat timed out\"), failing its tasks. \
             Keep the interval under a quarter of the timeout (Spark's defaults: 10s and 120s).",
        )
    } else {
        return None;
    };
    Some(
        f.evidence(evidence).reference(
            "https://spark.apache.org/docs/latest/configuration.html#execution-behavior",
        ),
    )
}

/// Pod creations per second this fast flood the API server when the app is big enough to
/// need several batches.
const FLOOD_RATE: f64 = 50.0;

fn allocation_rate(s: &Settings, version: Option<SparkVersion>) -> Option<Finding> {
    if s.batch_size.is_none() && s.batch_delay_ms.is_none() {
        return None;
    }
    let size = s.batch_size.unwrap_or_else(|| default_batch_size(version));
    let delay_ms = s.batch_delay_ms.unwrap_or(1000);
    let delay = spark_text(Duration::from_millis(delay_ms));
    let said = format!(
        "spark.kubernetes.allocation.batch.size={size}{}, batch.delay={delay}{}",
        if s.batch_size.is_none() {
            " (default)"
        } else {
            ""
        },
        if s.batch_delay_ms.is_none() {
            " (default)"
        } else {
            ""
        },
    );
    // Spark 4.0+ requires more than 100 ms ("must be greater than 0.1s", checked in 4.3.0's
    // jar), earlier versions more than 0.
    let four = version.is_none_or(|v| v.at_least(4, 0));
    if delay_ms == 0 || (four && delay_ms <= 100) {
        let spark = version.map_or_else(|| "Spark 4.0+".to_owned(), |v| format!("Spark {v}"));
        let least = if four { "100 ms" } else { "0" };
        return Some(
            Finding::new(
                Code::AllocationFlood,
                Severity::Error,
                format!(
                    "spark.kubernetes.allocation.batch.delay={delay} is not above {least}: \
                     {spark} refuses it at start"
                ),
            )
            .evidence(said)
            .hint(
                "A bare number is milliseconds: \"1\" means 1 ms, not 1 s (SPARK-49447). \
                 Say the unit: --conf spark.kubernetes.allocation.batch.delay=1s.",
            )
            .reference("https://github.com/apache/spark/pull/47913"),
        );
    }
    // Each round creates at most the batch, and no more than maxPendingPods allow.
    let size = s.max_pending_pods.map_or(size, |m| size.min(m));
    let rate = f64::from(size) * 1000.0 / delay_ms as f64;
    let target = s.target();
    let big = target.is_none_or(|t| t > size);
    if rate < FLOOD_RATE || !big {
        return None;
    }
    let size_text = match target {
        Some(t) => format!(
            "{t} executors requested within {}",
            // The first batch at once, then one a delay.
            spark_text(Duration::from_millis(
                u64::from(t.div_ceil(size.max(1)).saturating_sub(1)).saturating_mul(delay_ms)
            ))
        ),
        None => "dynamic allocation with no maxExecutors to bound it".to_owned(),
    };
    let pending = match s.max_pending_pods {
        Some(m) => format!("spark.kubernetes.allocation.maxPendingPods={m}"),
        None => "no spark.kubernetes.allocation.maxPendingPods bound".to_owned(),
    };
    Some(
        Finding::new(
            Code::AllocationFlood,
            Severity::Warn,
            format!(
                "The driver may create {rate:.0} executor pods a second ({size} every {delay}): \
                 {size_text}"
            ),
        )
        .evidence(said)
        .evidence(pending)
        .hint(
            "Each batch is that many pod creations at once, each one admitted, charged to \
             quota, scheduled and watched; at this size they crowd the API server and the \
             scheduler for every tenant (and the driver's own watch falls behind). Lower \
             spark.kubernetes.allocation.batch.size or raise batch.delay, and bound the pods \
             waiting on the scheduler with spark.kubernetes.allocation.maxPendingPods.",
        )
        .reference("https://spark.apache.org/docs/latest/running-on-kubernetes.html#configuration"),
    )
}

fn budgets(
    s: &Settings,
    version: Option<SparkVersion>,
    budget: FailureBudget,
    counted: usize,
) -> Option<Finding> {
    // Said only when the app sets the task budget: the executor budget alone is the
    // crash-loop finding's.
    let tasks = s.task_max_failures?;
    let no_retry = tasks <= 1;
    let executors = match budget {
        FailureBudget::Limit(n) => format!(
            "the app aborts (exit 11) after more than {n} executor failures \
             (spark.executor.maxNumFailures; {counted} counted)"
        ),
        FailureBudget::NoneBeforeSpark4 => format!(
            "{} has no executor-failure limit on Kubernetes ({counted} counted)",
            version.map_or_else(|| "Spark".to_owned(), |v| format!("Spark {v}"))
        ),
        FailureBudget::Unlimited => format!(
            "no executor-failure limit applies (dynamic allocation without maxExecutors; \
             {counted} counted)"
        ),
        FailureBudget::Unknown => {
            format!("the executor-failure limit is unknown ({counted} counted)")
        }
    };
    let task = format!(
        "a task's job aborts after {tasks} failed attempt{} (spark.task.maxFailures)",
        if tasks == 1 { "" } else { "s" },
    );
    let (severity, summary) = if no_retry {
        (
            Severity::Warn,
            format!(
                "No task is retried: one executor lost to the app's own failure fails its job; {executors}"
            ),
        )
    } else {
        (Severity::Info, format!("Two budgets: {task}; {executors}"))
    };
    Some(
        Finding::new(Code::FailureBudgets, severity, summary)
            .evidence(task)
            .evidence(executors)
            .hint(
                "The task budget ends a job, the executor budget the whole app. An executor loss \
                 uses the task budget of the tasks it ran when Spark blames the app \
                 (exitCausedByApp): every failed pod (an OOM, an exit, an eviction, a node \
                 shutdown); a deleted pod (a preemption, a kill, Spark's own removal) does not. \
                 Raise spark.task.maxFailures for flaky tasks, spark.executor.maxNumFailures for \
                 executors lost to failures.",
            )
            .reference("https://spark.apache.org/docs/latest/configuration.html#scheduling"),
    )
}

fn unreadable(s: &Settings) -> Option<Finding> {
    let (k, v) = s.unreadable.first()?;
    let mut f = Finding::new(
        Code::UnreadableSetting,
        Severity::Warn,
        format!("{k}={v:?} is not a value Spark can read: Spark throws when it reads it"),
    )
    .hint(
        "Spark parses a setting when it first reads it (these at the start of the SparkContext \
         or its allocator) and throws on a value it cannot read. Fix the value (numbers are \
         whole, booleans true/false, times take a unit: 30s, 500ms, 2min).",
    );
    for (k, v) in &s.unreadable {
        f = f.evidence(format!("{k}={v:?}"));
    }
    Some(f)
}

#[cfg(test)]
mod tests;
