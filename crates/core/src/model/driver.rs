//! The driver's own view of its executors: Spark's monitoring REST API
//! (`/api/v1/applications/{app}/allexecutors`, `ExecutorSummary` in Spark's `api.scala`),
//! and Spark's `removeReason` texts read back into an exit code and container states.
//!
//! Ref: <https://spark.apache.org/docs/latest/monitoring.html#rest-api> and, for the reason
//! texts, `ExecutorPodsLifecycleManager.scala` (docs/diagnosis.md §2).

use chrono::{NaiveDateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Time;
use crate::text;

/// One executor as the driver lists it (the `driver` entry is not kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverExecutor {
    /// The executor id.
    pub id: i64,
    /// Whether the driver counts it as active.
    pub active: bool,
    /// `host:port` it registered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<String>,
    /// Its pod's name, when the executor tells it (`attributes.POD_NAME`: Spark on
    /// Kubernetes sets it from the pod's name through the downward API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// When it was added.
    pub add_time: Option<Time>,
    /// When it was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_time: Option<Time>,
    /// The driver's removal reason, verbatim: the first one, as Spark's REST API and History
    /// Server keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_reason: Option<String>,
    /// Later removals of the same executor that only an event log keeps, verbatim. Spark 3.5
    /// to 4.3 remove an executor whose heartbeat expired twice at the same millisecond,
    /// "Executor killed by driver." first and "Executor heartbeat timed out after N ms"
    /// second (apache/spark#57494), and a third time when its pod is deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_again: Vec<String>,
    /// Tasks running.
    pub active_tasks: u64,
    /// Tasks failed.
    pub failed_tasks: u64,
    /// Tasks completed.
    pub completed_tasks: u64,
    /// Tasks that failed because this executor was lost (`ExecutorLostFailure` naming it),
    /// as an event log counts them (the REST API does not tell them from other failures).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tasks_lost: u64,
    /// Storage memory available to the executor (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<u64>,
    /// Peak memory, from the executor's metrics.
    #[serde(default)]
    pub peak: PeakMemory,
}

/// What the latest readable driver view said about one executor id, and when it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverSeen {
    /// When the driver was read.
    pub at: Time,
    /// `None`: the driver's list did not have this id at all.
    pub exec: Option<DriverExecutor>,
    /// Where the list came from: the driver's REST API, or its event log.
    #[serde(default, skip_serializing_if = "ExecutorList::is_driver_api")]
    pub from: ExecutorList,
}

/// Where a driver's executor list was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorList {
    /// The running driver's REST API (`allexecutors`), through the API server's proxy.
    #[default]
    DriverApi,
    /// The app's event log (`SparkListenerExecutorAdded`/`Removed`): what the driver wrote
    /// down, read after the fact.
    EventLog,
}

impl ExecutorList {
    /// Whether it is the default (recordings leave it out).
    pub fn is_driver_api(&self) -> bool {
        *self == Self::DriverApi
    }
}

/// `peakMemoryMetrics` (bytes); the process-tree figures need
/// `spark.executor.processTreeMetrics.enabled=true` and are absent otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PeakMemory {
    /// Peak JVM heap memory, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jvm_heap: Option<u64>,
    /// Peak JVM off-heap memory, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jvm_off_heap: Option<u64>,
    /// JVM + Python + other process-tree RSS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_tree_rss: Option<u64>,
}

impl PeakMemory {
    /// The largest figure that stands for the whole container's memory.
    pub fn container_estimate(&self) -> Option<u64> {
        self.process_tree_rss
            .or(match (self.jvm_heap, self.jvm_off_heap) {
                (Some(h), Some(o)) => Some(h + o),
                (h, o) => h.or(o),
            })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DriverExecutor {
    /// Whether the driver recorded the expiry of its heartbeat in a later removal (the first
    /// one's text is read by the diagnosis itself).
    pub fn heartbeat_expired_later(&self) -> bool {
        self.removed_again
            .iter()
            .any(|r| r.contains("heartbeat timed out"))
    }
}

/// Parses an `environment` answer (the driver's REST API or the History Server's): its Spark
/// properties, `[[key, value], …]`. Spark has already masked the ones its redaction regex
/// names; the caller masks again by its own rules.
pub fn parse_environment(body: &str) -> Result<std::collections::BTreeMap<String, String>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Environment {
        #[serde(default)]
        spark_properties: Vec<(String, String)>,
    }
    serde_json::from_str::<Environment>(body)
        .map(|e| e.spark_properties.into_iter().collect())
        .map_err(|e| {
            let head: String = body.chars().take(80).collect();
            format!("not Spark's environment ({e}): {head:?}")
        })
}

/// Spark's UI times: `2026-11-30T01:37:50.123GMT`.
pub fn parse_spark_time(s: &str) -> Option<Time> {
    let s = s.trim().strip_suffix("GMT").unwrap_or(s.trim());
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|n| Utc.from_utc_datetime(&n))
}

/// Parses an `allexecutors` (or `executors`) answer straight into the records, keeping
/// none of the wire's other fields (1,000 executors to a driver at scale). Unknown fields
/// are ignored, a field of another type is taken as absent; an entry that is not an object
/// with a numeric `id` is skipped (the `driver` entry among them).
pub fn parse_executors(body: &str) -> Result<Vec<DriverExecutor>, String> {
    if !body.trim_start().starts_with('[') && serde_json::from_str::<Value>(body).is_ok() {
        return Err("not Spark's executor list: not a JSON array".to_owned());
    }
    let Executors(mut out) = serde_json::from_str(body).map_err(|e| {
        let head: String = body.chars().take(80).collect();
        format!("not Spark's executor list ({e}): {head:?}")
    })?;
    out.sort_by_key(|e| e.id);
    Ok(out)
}

/// An `allexecutors` array converted entry by entry as it is read: no list of wire entries
/// is held (a `Vec` of them, collected in place, kept their larger buffer: 60 MB for 100
/// drivers of 1,000 at the first view's peak), and the list is as long as it needs.
struct Executors(Vec<DriverExecutor>);

impl<'de> Deserialize<'de> for Executors {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Executors;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                // serde's own word for a list: the error a body that is no list gets is
                // the one it always got.
                f.write_str("a sequence")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Executors, A::Error> {
                let mut out = Vec::new();
                while let Some(OrNot(e)) = seq.next_element::<OrNot<WireExecutor>>()? {
                    out.extend(e.and_then(WireExecutor::kept));
                }
                out.shrink_to_fit();
                Ok(Executors(out))
            }
        }
        d.deserialize_seq(Visit)
    }
}

impl WireExecutor {
    /// The record, when the entry has a numeric id (the `driver` entry has none).
    fn kept(self) -> Option<DriverExecutor> {
        let id = self.id?.parse::<i64>().ok()?;
        let peak = self.peak_memory_metrics.0.unwrap_or_default();
        let rss = [
            peak.process_tree_jvm_rss,
            peak.process_tree_python_rss,
            peak.process_tree_other_rss,
        ];
        Some(DriverExecutor {
            id,
            active: self.is_active.unwrap_or(false),
            host_port: self.host_port,
            pod_name: self
                .attributes
                .0
                .and_then(|a| a.pod_name)
                .filter(|n| !n.is_empty()),
            add_time: self.add_time.as_deref().and_then(parse_spark_time),
            remove_time: self.remove_time.as_deref().and_then(parse_spark_time),
            remove_reason: self.remove_reason.filter(|r| !r.is_empty()),
            removed_again: Vec::new(),
            active_tasks: self.active_tasks.unwrap_or(0),
            failed_tasks: self.failed_tasks.unwrap_or(0),
            completed_tasks: self.completed_tasks.unwrap_or(0),
            tasks_lost: 0,
            max_memory: self.max_memory,
            peak: PeakMemory {
                jvm_heap: peak.jvm_heap,
                jvm_off_heap: peak.jvm_off_heap,
                process_tree_rss: rss
                    .iter()
                    .any(|r| r.is_some_and(|r| r > 0))
                    .then(|| rss.iter().flatten().sum()),
            },
        })
    }
}

/// One entry of `allexecutors`, as read: the fields kept, each lenient.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireExecutor {
    #[serde(default, deserialize_with = "lenient")]
    id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    is_active: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    host_port: Option<String>,
    #[serde(default)]
    attributes: OrNot<WireAttributes>,
    #[serde(default, deserialize_with = "lenient")]
    add_time: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    remove_time: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    remove_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    active_tasks: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    failed_tasks: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    completed_tasks: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    max_memory: Option<u64>,
    #[serde(default)]
    peak_memory_metrics: OrNot<WirePeak>,
}

#[derive(Deserialize)]
struct WireAttributes {
    #[serde(rename = "POD_NAME", default, deserialize_with = "lenient")]
    pod_name: Option<String>,
}

#[derive(Default, Deserialize)]
struct WirePeak {
    #[serde(rename = "JVMHeapMemory", default, deserialize_with = "lenient")]
    jvm_heap: Option<u64>,
    #[serde(rename = "JVMOffHeapMemory", default, deserialize_with = "lenient")]
    jvm_off_heap: Option<u64>,
    #[serde(
        rename = "ProcessTreeJVMRSSMemory",
        default,
        deserialize_with = "lenient"
    )]
    process_tree_jvm_rss: Option<u64>,
    #[serde(
        rename = "ProcessTreePythonRSSMemory",
        default,
        deserialize_with = "lenient"
    )]
    process_tree_python_rss: Option<u64>,
    #[serde(
        rename = "ProcessTreeOtherRSSMemory",
        default,
        deserialize_with = "lenient"
    )]
    process_tree_other_rss: Option<u64>,
}

/// A scalar of the expected type, else none (a string where a number was, a null).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(T::deserialize(Value::deserialize(d)?).ok())
}

/// An object read as `T`, anything else (an array, a string, a null) as none.
struct OrNot<T>(Option<T>);

impl<T> Default for OrNot<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OrNot<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = OrNot<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<OrNot<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|t| OrNot(Some(t)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<OrNot<T>, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(OrNot(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_unit<E>(self) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
            fn visit_none<E>(self) -> Result<OrNot<T>, E> {
                Ok(OrNot(None))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// What a `removeReason` says, read back from Spark's texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemovalKind {
    /// "The executor with id N exited with exit code C(…)." with the container statuses.
    Exited,
    /// "The executor with id N was deleted by a user or the framework."
    Deleted,
    /// "… was not found in the cluster at the polling time …" (missing-pod detection).
    NotFound,
    /// "Executor killed by driver." (dynamic allocation releasing an idle executor, or a
    /// kill request): normal.
    KilledByDriver,
    /// "Executor decommission: …" (including executor rolling, "Rolling via …"): normal.
    Decommissioned,
    /// "Executor heartbeat timed out after N ms": the driver stopped hearing from it.
    HeartbeatTimeout,
    /// "Remote RPC client disassociated. …": the connection to the executor dropped.
    Disassociated,
    /// [`STOPPED_WITH_APP`]: an executor still registered when the application's event log
    /// ends with the application: Spark deletes executor pods when it stops and logs no
    /// removal for them. spark-triage's words, never Spark's.
    StoppedWithApp,
    /// Anything else.
    Other,
}

/// What an event log's reader gives as the removal of an executor still registered when
/// the application ended (Spark's own log has none for it).
pub const STOPPED_WITH_APP: &str = "Stopped with the application (spark-triage: the event log ends with the \
     application's end and has no removal for this executor; Spark deletes its executors' pods \
     when it stops)";

impl RemovalKind {
    /// Whether Spark itself decided to remove the executor (and so deleted its pod), as
    /// opposed to seeing the pod deleted or gone.
    pub fn by_spark(&self) -> bool {
        !matches!(self, Self::Deleted | Self::NotFound)
    }
}

/// One container from the status dump in a removal message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReasonContainer {
    /// The container's name.
    pub name: String,
    /// Its image.
    pub image: Option<String>,
    /// Its state (`terminated`, `running`, `waiting`).
    pub state: Option<String>,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// Its termination reason.
    pub reason: Option<String>,
    /// When it started, as Spark printed it.
    pub started_at: Option<String>,
    /// When it ended, as Spark printed it.
    pub finished_at: Option<String>,
}

/// A parsed `removeReason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovalReason {
    /// What kind of removal.
    pub kind: RemovalKind,
    /// The exit code Spark reported.
    pub exit_code: Option<i32>,
    /// "The API gave the following brief reason: …" (the pod's `status.reason`).
    pub pod_reason: Option<String>,
    /// The pod's message, when Spark included it.
    pub pod_message: Option<String>,
    /// The containers Spark listed.
    pub containers: Vec<ReasonContainer>,
}

/// Reads Spark's removal message (docs/diagnosis.md §2; `\n\t key: value` lines per container).
pub fn parse_removal(text: &str) -> RemovalReason {
    let kind = if text.contains("exited with exit code") {
        RemovalKind::Exited
    } else if text.contains("was deleted by a user or the framework") {
        RemovalKind::Deleted
    } else if text.contains("was not found in the cluster") {
        RemovalKind::NotFound
    } else if text.starts_with("Executor killed by driver") {
        RemovalKind::KilledByDriver
    } else if text.starts_with("Executor decommission") || text.contains("Rolling via") {
        RemovalKind::Decommissioned
    } else if text.contains("heartbeat timed out") {
        RemovalKind::HeartbeatTimeout
    } else if text.starts_with("Remote RPC client disassociated") {
        RemovalKind::Disassociated
    } else if text == STOPPED_WITH_APP {
        RemovalKind::StoppedWithApp
    } else {
        RemovalKind::Other
    };
    let exit_code = text.split("exit code ").nth(1).and_then(|rest| {
        let n: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        n.parse().ok()
    });
    let after = |prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty() && v != "N/A")
    };
    let mut containers: Vec<ReasonContainer> = Vec::new();
    for line in text.lines() {
        let Some((k, v)) = line.trim().split_once(": ") else {
            continue;
        };
        let v = v.trim();
        let val = (!v.is_empty() && v != "N/A").then(|| v.to_owned());
        match k {
            "container name" => containers.push(ReasonContainer {
                name: v.to_owned(),
                ..ReasonContainer::default()
            }),
            _ => {
                let Some(c) = containers.last_mut() else {
                    continue;
                };
                match k {
                    "container image" => c.image = val,
                    "container state" => c.state = val,
                    "exit code" => c.exit_code = v.parse().ok(),
                    "termination reason" => c.reason = val,
                    "container started at" => c.started_at = val,
                    "container finished at" => c.finished_at = val,
                    _ => {}
                }
            }
        }
    }
    RemovalReason {
        kind,
        exit_code,
        pod_reason: after("The API gave the following brief reason:"),
        pod_message: after("The API gave the following message:"),
        containers,
    }
}

/// The most of a removal message's first line a one-line display gives (Spark's own are
/// under 200 bytes; a hostile or wrapped one is cut, with an ellipsis).
pub const HEADLINE_MAX: usize = 240;

/// The first non-empty line of a removal message, for one-line displays, to
/// [`HEADLINE_MAX`] bytes.
pub fn reason_headline(text: &str) -> std::borrow::Cow<'_, str> {
    text::clipped(
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default(),
        HEADLINE_MAX,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const OOM: &str = "\nThe executor with id 2 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.3.0\n\t container state: terminated\n\t container started at: 2026-11-30T01:37:30Z\n\t container finished at: 2026-11-30T01:37:50Z\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";

    #[test]
    fn spark_exit_message_reads_back() {
        let r = parse_removal(OOM);
        assert_eq!(r.kind, RemovalKind::Exited);
        assert_eq!(r.exit_code, Some(137));
        assert_eq!(r.pod_reason, None);
        assert_eq!(
            r.containers,
            vec![ReasonContainer {
                name: "spark-kubernetes-executor".into(),
                image: Some("apache/spark:4.3.0".into()),
                state: Some("terminated".into()),
                exit_code: Some(137),
                reason: Some("OOMKilled".into()),
                started_at: Some("2026-11-30T01:37:30Z".into()),
                finished_at: Some("2026-11-30T01:37:50Z".into()),
            }]
        );
        assert_eq!(
            reason_headline(OOM),
            "The executor with id 2 exited with exit code 137(SIGKILL, possible container OOM)."
        );
    }

    #[test]
    fn other_removal_texts() {
        let d = parse_removal("The executor with id 4 was deleted by a user or the framework.");
        assert_eq!((d.kind, d.exit_code), (RemovalKind::Deleted, None));
        let m = parse_removal(
            "The executor with ID 1 (registered at 1796002655860 ms) was not found in the cluster at the polling time (1796002689537 ms) which is after the accepted detect delta time (30000 ms) configured by `spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the driver missed the deletion event. Marking this executor as failed.",
        );
        assert_eq!(m.kind, RemovalKind::NotFound);
        for (text, kind) in [
            (
                "Executor heartbeat timed out after 120000 ms",
                RemovalKind::HeartbeatTimeout,
            ),
            ("Executor killed by driver.", RemovalKind::KilledByDriver),
            (
                "Executor decommission: Rolling via TOTAL_DURATION",
                RemovalKind::Decommissioned,
            ),
            (
                "Executor decommission: worker decommissioned",
                RemovalKind::Decommissioned,
            ),
            (
                "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network issues. Check driver logs for WARN messages.",
                RemovalKind::Disassociated,
            ),
            ("Something new in Spark 5", RemovalKind::Other),
        ] {
            assert_eq!(parse_removal(text).kind, kind, "{text}");
        }
        let neg = parse_removal(
            "The executor with id 3 exited with exit code -1(unexpected).\nThe API gave the following brief reason: Evicted\nThe API gave the following message: The node was low on resource: memory.\n",
        );
        assert_eq!(neg.exit_code, Some(-1));
        assert_eq!(neg.pod_reason.as_deref(), Some("Evicted"));
        assert_eq!(
            neg.pod_message.as_deref(),
            Some("The node was low on resource: memory.")
        );
        // Garbage never panics.
        let _ = parse_removal("exit code \u{1F600}: : \n\t container name: \n exit code: x");
    }

    #[test]
    fn allexecutors_answer() {
        let body = r#"[{"id":"driver","isActive":true,"addTime":"2026-11-30T01:37:20.000GMT"},
            {"id":"1","hostPort":"10.0.0.1:7079","isActive":true,"addTime":"2026-11-30T01:37:25.120GMT",
             "activeTasks":1,"failedTasks":0,"completedTasks":7,"maxMemory":1000,
             "peakMemoryMetrics":{"JVMHeapMemory":300,"JVMOffHeapMemory":50,"ProcessTreeJVMRSSMemory":0}},
            {"id":"2","isActive":false,"addTime":"2026-11-30T01:37:25.000GMT","removeTime":"2026-11-30T01:37:50.500GMT",
             "removeReason":"x","failedTasks":1,"unknownField":{"a":1}},
            {"id":"zzz"}, 7,
            {"id":"3","isActive":"yes","maxMemory":"lots","activeTasks":-1,"attributes":[1],
             "peakMemoryMetrics":null,"removeReason":{"nested":[1,{"deep":true}]}}]"#;
        let e = parse_executors(body).unwrap();
        assert_eq!(e.len(), 3);
        // A field of another type is absent, never the entry's loss.
        assert!(!e[2].active && e[2].max_memory.is_none() && e[2].active_tasks == 0);
        assert!(e[2].pod_name.is_none() && e[2].remove_reason.is_none());
        assert_eq!(e[2].peak, PeakMemory::default());
        assert!(e[0].active && e[0].completed_tasks == 7 && e[0].active_tasks == 1);
        assert_eq!(e[0].peak.container_estimate(), Some(350));
        assert_eq!(e[0].peak.process_tree_rss, None);
        assert_eq!(
            e[1].remove_time.map(|t| t.to_rfc3339()),
            Some("2026-11-30T01:37:50.500+00:00".to_owned())
        );
        assert_eq!(e[1].remove_reason.as_deref(), Some("x"));
        assert!(
            parse_executors("<html>503</html>")
                .unwrap_err()
                .contains("not Spark's executor list")
        );
        assert_eq!(
            parse_executors("{}").unwrap_err(),
            "not Spark's executor list: not a JSON array"
        );
        // A body cut short that is no list says what serde says of any list read so.
        assert_eq!(
            parse_executors(r#"{"kind":"#).unwrap_err(),
            "not Spark's executor list (invalid type: map, expected a sequence at line 1 \
             column 0): \"{\\\"kind\\\":\""
        );
    }
}
