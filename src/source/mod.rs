//! One vocabulary of input. The pod watch, the poll, the event watch, the driver
//! configuration reader (and later replay files) all yield [`SourceEvent`]s, each stamped
//! with its time; the store cannot tell where one came from.

pub mod actions_log;
pub mod backoff;
pub mod bounds;
pub mod clock;
pub mod connection;
pub mod credentials;
mod driver_self;
pub mod driver_view;
pub mod errors;
pub mod extra;
pub mod groups;
pub mod lean;
pub mod live;
mod pod_stream;
mod poll;
pub mod proxy;
mod quotas;
pub mod scope;
pub mod switch;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use spark_triage_core::diagnose::memory::SettingsFrom;
use spark_triage_core::model::cost::AppCost;
use spark_triage_core::model::driver_state::{Allocation, StreamingQuery};
use spark_triage_core::model::{
    DriverExecutor, ExecutorPod, GroupKind, LABEL_APP_ID, OperatorApp, OperatorKind, PodEvent,
    Quota, SchedGroup, Text, Time, WireIdentityMeta,
};

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

impl Scope {
    pub fn describe(&self) -> String {
        match self {
            Self::Namespace(ns) => format!("namespace {ns}"),
            Self::All => "all namespaces".to_owned(),
        }
    }
}

/// Which source a health report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    PodWatch,
    PodPoll,
    EventWatch,
    DriverConfig,
    DriverApi,
    /// The namespace's ResourceQuotas.
    Quotas,
    /// The batch schedulers' group objects (PodGroups, Workloads).
    SchedulerObjects,
    /// Spark's event logs (`--event-log-dir`).
    EventLogs,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PodWatch => "pod watch",
            Self::PodPoll => "pod poll",
            Self::EventWatch => "event watch",
            Self::DriverConfig => "driver config",
            Self::DriverApi => "driver API",
            Self::Quotas => "quotas",
            Self::SchedulerObjects => "scheduler objects",
            Self::EventLogs => "event logs",
        }
    }
}

/// How a source is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Health {
    Connecting,
    Connected,
    /// Failing and retrying; the error as the API said it.
    Retrying {
        error: String,
    },
    /// The API refused: the permission that is missing.
    Forbidden {
        permission: String,
    },
}

/// How many lines of a container's log are fetched and kept as evidence, unless the
/// configuration file says otherwise (`log-tail-lines`, up to [`MAX_LOG_TAIL_LINES`]).
pub const LOG_TAIL_LINES: usize = 200;
/// The most lines of a log tail the store keeps (and the file may ask for).
pub const MAX_LOG_TAIL_LINES: usize = 5_000;

/// Everything the store learns, in one type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SourceEvent {
    /// A watch event about a pod (ADDED or MODIFIED): Spark upserts it.
    PodUpserted { pod: Arc<ExecutorPod>, at: Time },
    /// A watch DELETED event with the pod's last state.
    PodDeleted { pod: Arc<ExecutorPod>, at: Time },
    /// A complete LIST: replaces what the store knows and stamps `full_snapshot_at`.
    PodsListed {
        pods: Vec<Arc<ExecutorPod>>,
        /// The list's `metadata.resourceVersion`.
        resource_version: Option<u64>,
        at: Time,
    },
    /// Pods of a LIST being read, a page at a time: each is upserted as a watch event's
    /// would be; the LIST's end is a `PodsPresent` naming all it had.
    PodsListing {
        pods: Vec<Arc<ExecutorPod>>,
        at: Time,
    },
    /// A complete LIST's names (the periodic metadata-only relist, and the end of the pod
    /// watch's own LIST, whose pods came before as `PodsListing`): which pods exist at the
    /// list's version. It changes nothing about them; executors absent from it are missing.
    PodsPresent {
        pods: Vec<PresentPod>,
        /// The list's `metadata.resourceVersion`.
        resource_version: Option<u64>,
        at: Time,
    },
    /// A Kubernetes event about a pod.
    EventSeen { event: Box<PodEvent>, at: Time },
    /// A driver's `spark.properties`, read from its ConfigMap (or an event log's or the
    /// History Server's environment: `from` says which).
    DriverConfig {
        namespace: String,
        app_id: String,
        properties: BTreeMap<String, String>,
        /// Where they were read (absent in recordings made before it was kept: a ConfigMap).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<SettingsFrom>,
        at: Time,
    },
    SourceHealth {
        source: SourceKind,
        health: Health,
        at: Time,
    },
    /// The tail of an executor's container log, captured when it ended (evidence).
    LogCaptured {
        namespace: String,
        pod: String,
        lines: Vec<String>,
        at: Time,
    },
    /// An operator action and its result (kill, hold, release), for the timeline.
    ActionTaken {
        namespace: String,
        app_id: String,
        text: String,
        /// The executor this action deleted (a kill), so its verdict can say who did it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        killed: Option<i64>,
        at: Time,
    },
    /// The kills through spark-triage that the local actions log holds for this API server
    /// (read once at the start): a pod deleted before the view started has no mark left.
    KillsLogged { kills: Vec<LoggedKill>, at: Time },
    /// The executors a running driver's log says `HeartbeatReceiver` removed ("Removing
    /// executor N with no recent heartbeats"): read when the driver records removals as
    /// "Executor killed by driver.", which hides a heartbeat timeout on Spark 3.5 to 4.3.
    DriverHeartbeats {
        namespace: String,
        app_id: String,
        executors: Vec<i64>,
        at: Time,
    },
    /// The driver's own executor list (its REST API through the API server's proxy), or
    /// why it could not be read.
    DriverExecutors {
        namespace: String,
        app_id: String,
        view: DriverView,
        at: Time,
    },
    /// The ResourceQuotas in a namespace, or (`namespace` none) in every namespace.
    QuotasListed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        quotas: Vec<Quota>,
        at: Time,
    },
    /// The batch schedulers' objects of one kind, in a namespace or (`namespace` none) in
    /// every namespace; or (`unknown`) why that kind cannot be read (said once).
    GroupsListed {
        group_kind: GroupKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        objects: Vec<SchedGroup>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unknown: Option<String>,
        /// False when the list was cut at its page limit (absence from it says nothing).
        #[serde(default = "yes")]
        complete: bool,
        at: Time,
    },
    /// The running driver's log says the API server refused an executor pod (RBAC, a
    /// webhook, an invalid pod): its line.
    DriverRefused {
        namespace: String,
        app_id: String,
        line: String,
        at: Time,
    },
    /// Dynamic allocation as the running driver's metrics servlet has it: its target, what
    /// its tasks could use, what has registered.
    DriverAllocation {
        namespace: String,
        app_id: String,
        allocation: Allocation,
        at: Time,
    },
    /// The running driver runs a Structured Streaming query (its micro-batch jobs name it).
    DriverStreaming {
        namespace: String,
        app_id: String,
        query: StreamingQuery,
        at: Time,
    },
    /// The Spark operators' `SparkApplication`s of one kind, in a namespace or in every
    /// namespace; or (`unknown`) why they cannot be read (said once).
    OperatorAppsListed {
        operator_kind: OperatorKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        objects: Vec<OperatorApp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unknown: Option<String>,
        /// False when the list was cut at its page limit (absence from it says nothing).
        #[serde(default = "yes")]
        complete: bool,
        at: Time,
    },
    /// The scope looks wrong (a namespace that does not exist, or no Spark there while
    /// other namespaces have drivers): shown where the apps would be.
    ScopeNote { text: String, at: Time },
    /// The view was switched to another context or namespace (`:ctx`, `:ns`): what was
    /// known of the previous scope is dropped, and what follows is of this one.
    ScopeChanged {
        /// The kubeconfig context.
        context: String,
        /// The scope as the header says it (`namespace spark-jobs`, `all namespaces`).
        scope: String,
        at: Time,
    },
    /// What an application's Spark event log says of the application itself (its start,
    /// its end and exit code, a log cut short): a line in its timeline, and its name.
    AppNoted {
        namespace: String,
        app_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        app_name: Option<String>,
        text: String,
        /// The note is the app's end (or the log's end without it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        end: bool,
        /// The log ended without the application's end (`SparkListenerApplicationEnd`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unfinished: bool,
        /// The Spark version the log names (`SparkListenerLogStart`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spark_version: Option<String>,
        at: Time,
    },
    /// What an application's executor losses cost it and what it left idle, as its event
    /// log's stages and tasks tell (the whole run, at its end).
    AppCost {
        namespace: String,
        app_id: String,
        cost: Box<AppCost>,
        at: Time,
    },
    /// Time passes (for rules that depend on `now`).
    Tick { at: Time },
    /// A long-running recorder forgets executors whose pods were gone before `before`, so
    /// its memory stays bounded over days; recorded, so a replay forgets the same ones
    /// (the segments keep what they were).
    Forget { before: Time, at: Time },
}

/// A pod as a metadata-only LIST names it. The namespace and the app are shared with
/// every other pod's (interned): a LIST's 100,000 of these held two strings apiece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresentPod {
    pub namespace: Text,
    pub name: String,
    /// `spark-app-selector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<Text>,
    /// `spark-exec-id`, when it is a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_id: Option<i64>,
    /// `metadata.resourceVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<u64>,
    /// `metadata.uid` (a pod recreated under the same name is another pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

impl PresentPod {
    /// What a LIST says of `pod`.
    pub fn of(pod: &ExecutorPod) -> Self {
        Self {
            executor_id: pod.executor_id(),
            app_id: pod.labels.get(LABEL_APP_ID).cloned(),
            resource_version: pod.rv(),
            uid: pod.uid.clone(),
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
        }
    }

    /// What a metadata-only LIST's item says (the same as [`PresentPod::of`] its pod).
    pub fn from_identity(m: WireIdentityMeta) -> Self {
        Self {
            // Spark's reading: `EXECID` or anything not a 64-bit integer is no executor id.
            executor_id: m.labels.exec_id.and_then(|v| v.parse().ok()),
            app_id: m.labels.app_id.map(Text::from),
            resource_version: m.resource_version.and_then(|r| r.parse().ok()),
            uid: m.uid,
            namespace: m.namespace.map(Text::from).unwrap_or_default(),
            name: m.name.unwrap_or_default(),
        }
    }
}

/// One read of a driver's `allexecutors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum DriverView {
    Ok {
        executors: Vec<DriverExecutor>,
    },
    /// The driver's list as its event log tells it, up to a moment of the run (what
    /// `allexecutors` would have said then).
    Logged {
        executors: Vec<DriverExecutor>,
    },
    /// "driver view unavailable: <reason>" (forbidden, no endpoints, driver gone…).
    Unavailable {
        reason: String,
    },
}

/// One kill of an executor pod through spark-triage, as the actions log has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedKill {
    pub namespace: String,
    pub pod: String,
    /// When it was made (the log's time).
    pub at: Time,
    /// The kubeconfig user who made it.
    pub by: String,
}

impl SourceEvent {
    pub fn at(&self) -> Time {
        match self {
            Self::PodUpserted { at, .. }
            | Self::PodDeleted { at, .. }
            | Self::PodsListed { at, .. }
            | Self::PodsListing { at, .. }
            | Self::PodsPresent { at, .. }
            | Self::EventSeen { at, .. }
            | Self::DriverConfig { at, .. }
            | Self::SourceHealth { at, .. }
            | Self::LogCaptured { at, .. }
            | Self::ActionTaken { at, .. }
            | Self::KillsLogged { at, .. }
            | Self::DriverHeartbeats { at, .. }
            | Self::DriverExecutors { at, .. }
            | Self::QuotasListed { at, .. }
            | Self::GroupsListed { at, .. }
            | Self::OperatorAppsListed { at, .. }
            | Self::DriverRefused { at, .. }
            | Self::DriverAllocation { at, .. }
            | Self::DriverStreaming { at, .. }
            | Self::ScopeNote { at, .. }
            | Self::ScopeChanged { at, .. }
            | Self::AppNoted { at, .. }
            | Self::AppCost { at, .. }
            | Self::Tick { at }
            | Self::Forget { at, .. } => *at,
        }
    }
}

/// `complete`'s default: recordings from before it said nothing of cut lists.
fn yes() -> bool {
    true
}

/// Parses a Java properties file (the subset Spark writes: `key=value` or `key: value`,
/// `#`/`!` comments, backslash escapes for `=`, `:` and spaces).
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let mut key = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        key.push(n);
                    }
                }
                '=' | ':' => break,
                c if c.is_whitespace() => {
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                    if matches!(chars.peek(), Some('=' | ':')) {
                        chars.next();
                    }
                    break;
                }
                c => key.push(c),
            }
        }
        let value: String = chars
            .collect::<String>()
            .trim()
            .replace("\\:", ":")
            .replace("\\=", "=");
        out.insert(key, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_properties;

    #[test]
    fn properties() {
        let p = parse_properties(
            "# comment\nspark.app.name=etl\nspark.kubernetes.executor.deleteOnTermination = false\n\
             spark.master: k8s\\://https\\://10.0.0.1\\:443\nspark.a\\=b=c\n\n! other\n",
        );
        assert_eq!(p["spark.app.name"], "etl");
        assert_eq!(p["spark.kubernetes.executor.deleteOnTermination"], "false");
        assert_eq!(p["spark.master"], "k8s://https://10.0.0.1:443");
        assert_eq!(p["spark.a=b"], "c");
        assert_eq!(p.len(), 4);
    }
}
