//! What the store holds: per app, its executors' records, driver, config and timeline;
//! the snapshot readers get.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use spark_triage_core::diagnose::housekeeping::{self, Keeper, KeptBy, KeptDrivers};
use spark_triage_core::diagnose::nodes::NodePattern;
use spark_triage_core::diagnose::verdict::{ToolKill, Verdict};
use spark_triage_core::diagnose::{self, Code, Finding, SchedulingKind};
use spark_triage_core::model::cost::AppCost;
use spark_triage_core::model::driver::{DriverSeen, ExecutorList};
use spark_triage_core::model::driver_state::{Allocation, StreamingQuery};
use spark_triage_core::model::{
    ExecutorPod, ExecutorState, GroupKind, OperatorApp, OperatorKind, PodEvent, Quota, SchedGroup,
    Time,
};

use super::*;
use crate::source::{Health, SourceKind};

mod executor;

pub use executor::*;
pub(in crate::store) use executor::{invalid_id_note, invalid_id_value};

/// A driver pod, as shown per app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverInfo {
    pub pod: String,
    pub phase: Option<String>,
    pub node: Option<String>,
    /// The app-level hold (the tool's annotation on the driver), until when.
    pub hold_until: Option<Time>,
    /// The ConfigMap holding the driver's `spark.properties`, when it has one.
    #[serde(default)]
    pub conf_config_map: Option<String>,
    /// The driver pod's uid: executors Spark created name it as their owner.
    #[serde(default)]
    pub uid: Option<String>,
    /// The driver pod as last seen (the app verdict reads it).
    #[serde(default)]
    pub last: Option<Arc<ExecutorPod>>,
    /// Its first final (failed/succeeded) observation.
    #[serde(default)]
    pub ended: Option<Arc<ExecutorPod>>,
    /// When the tool first saw it final.
    #[serde(default)]
    pub ended_seen: Option<Time>,
    /// Gone: deleted (a watch DELETED) or missing (absent from a full LIST), and when.
    #[serde(default)]
    pub gone: Option<DriverGoneAt>,
    /// Events about the driver pod, oldest first (bounded like an executor's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<PodEvent>,
    /// The captured tail of the driver's log (read when it ends badly).
    #[serde(default)]
    pub log_tail: Option<Arc<Vec<String>>>,
    /// The executors that log says `HeartbeatReceiver` removed (read once, when it came).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub heartbeat_removals: Arc<std::collections::BTreeSet<i64>>,
}

/// How the driver pod went away.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DriverGoneAt {
    /// Absent from a full LIST with no deletion seen (else a watch DELETED).
    pub missing: bool,
    pub at: Time,
}

impl DriverInfo {
    /// The evidence the app verdict reads.
    pub fn evidence<'a>(
        &'a self,
        groups: &'a diagnose::GroupIndex,
    ) -> Option<diagnose::app_verdict::DriverEvidence<'a>> {
        use diagnose::app_verdict::{DriverEvidence, DriverGone};
        let pod = self.last.as_deref()?;
        Some(DriverEvidence {
            pod,
            ended: self.ended.as_deref(),
            ended_seen: self.ended_seen,
            events: &self.events,
            gone: match self.gone {
                None => DriverGone::No,
                Some(g) if g.missing => DriverGone::Missing,
                Some(_) => DriverGone::Deleted,
            },
            gone_at: self.gone.map(|g| g.at),
            log_tail: self.log_tail.as_deref().map(Vec::as_slice),
            groups,
        })
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How reading the driver's executor list goes, per app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverApiState {
    /// The last attempt.
    pub at: Time,
    /// Why the last attempt failed ("driver view unavailable: …"); `None` when it worked.
    pub unavailable: Option<String>,
    /// The last attempt that worked.
    pub last_ok: Option<Time>,
    /// At the last good read: executors the driver counts as active.
    pub active: usize,
    /// Where the list was read: the driver's REST API, or (a post-mortem) its event log.
    #[serde(default, skip_serializing_if = "ExecutorList::is_driver_api")]
    pub from: ExecutorList,
}

/// `killed_by_tool` as recorded: `true`/`false` before its time and author were kept.
fn tool_kill<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ToolKill>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Flag(bool),
        Kill(ToolKill),
    }
    Ok(match Option::<Either>::deserialize(d)? {
        None | Some(Either::Flag(false)) => None,
        Some(Either::Flag(true)) => Some(ToolKill::default()),
        Some(Either::Kill(k)) => Some(k),
    })
}

/// Who made an action, from its timeline text (`action by USER: …`).
pub(super) fn actor(text: &str) -> Option<String> {
    let rest = text.strip_prefix("action by ")?;
    let (user, _) = rest.split_once(": ")?;
    (!user.is_empty()).then(|| user.to_owned())
}

/// One line of an app's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// When it happened: by the cluster's clocks where they say (`clock`), else when this
    /// process saw it.
    pub at: Time,
    pub executor: Option<i64>,
    pub text: String,
    /// Whose clock `at` is (recordings from before it was kept: this process's sight).
    #[serde(default, skip_serializing_if = "super::times::Clock::is_seen")]
    pub clock: super::times::Clock,
    /// When this process learned it, when that is not `at` (a view opened late learns at
    /// once what happened minutes before): a replay goes where it was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Time>,
}

/// Everything known about one application.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppRecord {
    pub namespace: String,
    pub app_id: String,
    pub app_name: Option<String>,
    pub driver: Option<DriverInfo>,
    pub config: AppConfig,
    pub executors: BTreeMap<i64, Arc<ExecutorRecord>>,
    /// Executor pods that are not in Spark's snapshot (no numeric id): name → why.
    pub unregistered: BTreeMap<String, String>,
    pub timeline: VecDeque<TimelineEntry>,
    /// Reading the driver's REST API.
    #[serde(default)]
    pub driver_api: Option<DriverApiState>,
    /// The ResourceQuotas of the app's namespace, as last listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<Quota>,
    /// The batch schedulers' objects its pods name, and the kinds that cannot be read.
    #[serde(default, skip_serializing_if = "is_no_groups")]
    pub groups: Arc<diagnose::GroupIndex>,
    /// Executors forgotten by a long-running recorder (`SourceEvent::Forget`): the driver's
    /// list naming them again does not bring them back as driver-only tombstones.
    #[serde(default, skip_serializing_if = "rangemap::RangeInclusiveSet::is_empty")]
    pub forgotten: rangemap::RangeInclusiveSet<i64>,
    /// The failures Spark counted among the forgotten executors, by cause: the failure
    /// budget and the loop findings still count them (Spark does, for the app's life).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub forgotten_counted: BTreeMap<Code, usize>,
    /// Of those, the ones whose verdict named no cause.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forgotten_uncaused: usize,
    /// The ended executors let go past the store's bound (`MAX_KEPT`), counted as a
    /// report counts them.
    #[serde(default, skip_serializing_if = "Trimmed::is_empty")]
    pub trimmed: Trimmed,
    /// What the app's Spark event log says of its end (an app read from its event log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_end: Option<String>,
    /// Its Spark operator's `SparkApplication`, when submitted through one (joined by the
    /// operator's pod label; an app with no pod yet is known by it alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<Arc<OperatorApp>>,
    /// The operator's object its pods name by label (`operator_key`), when an operator made
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_label: Option<String>,
    /// An app known only by its operator's object (no pod of it seen): the store makes and
    /// drops it with the object.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator_only: bool,
    /// The running driver's log line saying the API server refused an executor pod (RBAC, a
    /// webhook), when its log was read for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_refusal: Option<String>,
    /// Dynamic allocation as the running driver's metrics had it at its last read, and since
    /// when its target stood above the executors it had (pending or running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationSeen>,
    /// Its Structured Streaming query, when its driver's jobs named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<StreamingQuery>,
    /// What its executor losses cost it and what it left idle, from its event log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Arc<AppCost>>,
    /// Kueue's Workload for that object (owned by it), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<SchedGroup>,
    /// When the app ended by its event log (`SparkListenerApplicationEnd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_end_at: Option<Time>,
    /// Its event log ended without the application's end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logged_unfinished: bool,
    /// The Spark version its event log names (its executors' rebuilt pods carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_version: Option<String>,
    /// When the driver ended (what the executors' verdicts are told), kept up to date with
    /// the driver's evidence.
    #[serde(default)]
    pub driver_end: Option<diagnose::app_verdict::DriverEnd>,
    /// The newest time the app's evidence was looked at (the app verdict's `now`).
    #[serde(default)]
    pub as_of: Option<Time>,
    /// Node patterns this app's executors are part of (the store sets them across apps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_findings: Vec<Finding>,
    /// The executors the running driver's log says `HeartbeatReceiver` removed
    /// (`SourceEvent::DriverHeartbeats`): kept with the app, so they hold before its driver
    /// pod is known and after a captured log's tail has lost the lines.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub heard_heartbeats: std::collections::BTreeSet<i64>,
    /// Findings, incident and trouble, computed on demand once per change.
    #[serde(skip)]
    pub(super) derived: super::derived::Derived,
}

/// One read of a driver's dynamic allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocationSeen {
    pub allocation: Allocation,
    /// When it was read.
    pub at: Time,
    /// Since when (a read) its target stood above the executors it had, while it still does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_since: Option<Time>,
}

/// Counts by Spark state, plus missing.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Counts {
    pub pending: usize,
    pub running: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub deleted: usize,
    pub terminating: usize,
    pub unknown: usize,
    pub missing: usize,
}

impl Counts {
    pub(super) fn get_mut(&mut self, s: ExecutorState) -> &mut usize {
        match s {
            ExecutorState::Pending => &mut self.pending,
            ExecutorState::Running => &mut self.running,
            ExecutorState::Succeeded => &mut self.succeeded,
            ExecutorState::Failed => &mut self.failed,
            ExecutorState::Deleted => &mut self.deleted,
            ExecutorState::Terminating => &mut self.terminating,
            ExecutorState::Unknown => &mut self.unknown,
        }
    }

    pub fn get(&self, s: ExecutorState) -> usize {
        let mut c = *self;
        *c.get_mut(s)
    }
}

/// What readers see.
/// Which context and scope the store's contents are of, after a switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeLabel {
    pub context: String,
    pub scope: String,
    /// When the view switched to it.
    pub since: Time,
}

/// How current the view is: the one rule for "stale" (the live view's header, the flight
/// recorder's `/readyz`). Stale: no complete LIST of the pods within `after` (two relists
/// and a request's timeout: `Connection::stale_after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// No complete LIST yet.
    Waiting,
    /// The last complete LIST is this old, within the limit.
    Fresh(chrono::Duration),
    /// The last complete LIST is this old, past the limit.
    Stale(chrono::Duration),
}

/// Finished driver pods by namespace, then pod: when each ended, and the pod's
/// resourceVersion when seen (a LIST older than it does not remove it).
pub type KeptDriverPods = Arc<BTreeMap<String, BTreeMap<String, KeptDriver>>>;

/// One finished driver pod kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptDriver {
    pub ended: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rv: Option<u64>,
    /// The operator's object its pod names by label (`operator_key`), when an operator
    /// made it: what keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// It failed (Apache's `OnFailure` keeps only those).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

fn is_empty_kept(k: &KeptDriverPods) -> bool {
    k.is_empty()
}

impl Snapshot {
    /// The namespaces whose finished driver pods are worth a word at `now`, with it.
    pub fn housekeeping(&self, now: Time) -> Vec<(KeptDrivers, Finding)> {
        self.kept_drivers
            .iter()
            .filter_map(|(ns, pods)| {
                let mut by = KeptBy::default();
                for p in pods.values() {
                    let keeper = match &p.operator {
                        None => Keeper::Submit,
                        Some(k) => self.operators.get(k).map_or(Keeper::Unread, |o| {
                            Keeper::Operator(o.keeps_driver(p.failed))
                        }),
                    };
                    by.count(keeper, p.ended, now);
                }
                let k = KeptDrivers {
                    namespace: ns.clone(),
                    count: pods.len(),
                    oldest: pods.values().map(|p| p.ended).min(),
                    by,
                };
                let f = housekeeping::kept_drivers(&k, now)?;
                Some((k, f))
            })
            .collect()
    }

    /// The view's freshness at `now` (the cluster's clock), stale past `after`.
    pub fn freshness(&self, now: Time, after: std::time::Duration) -> Freshness {
        let Some(at) = self.full_snapshot_at else {
            return Freshness::Waiting;
        };
        let age = (now - at).max(chrono::Duration::zero());
        match chrono::Duration::from_std(after) {
            Ok(limit) if age > limit => Freshness::Stale(age),
            _ => Freshness::Fresh(age),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    #[serde(with = "pairs")]
    pub apps: BTreeMap<AppKey, Arc<AppRecord>>,
    /// When the last full LIST arrived, and its version.
    pub full_snapshot_at: Option<Time>,
    pub list_rv: Option<u64>,
    pub health: BTreeMap<SourceKind, Health>,
    /// The newest event time: the store's clock.
    pub now: Option<Time>,
    /// Events applied so far.
    pub applied: u64,
    /// Executors forgotten so far (`SourceEvent::Forget`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub forgotten: u64,
    /// Ended executors let go past the store's bound (`MAX_KEPT`), counted by their apps.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub trimmed: u64,
    /// The ResourceQuotas by namespace, as last listed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quotas: BTreeMap<String, Vec<Quota>>,
    /// A quota list arrived (possibly empty).
    #[serde(default)]
    pub applied_quotas: bool,
    /// The batch schedulers' objects read, all namespaces, and the kinds that cannot be.
    #[serde(default, skip_serializing_if = "diagnose::GroupIndex::is_empty")]
    pub groups: diagnose::GroupIndex,
    /// The Spark operators' `SparkApplication`s read, by `group/namespace/name`
    /// (`operator_key`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operators: BTreeMap<String, Arc<OperatorApp>>,
    /// Operator kinds listed once or said unreadable (`status` waits for both).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub operators_read: BTreeSet<OperatorKind>,
    /// Operator kinds the tool cannot read, with why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operators_unknown: BTreeMap<OperatorKind, String>,
    /// The kinds of group objects Spark pods named (`status` waits for their lists).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub groups_wanted: std::collections::BTreeSet<GroupKind>,
    /// Finished driver pods still present, by namespace and pod: when each ended
    /// (`diagnose::housekeeping`). Kept apart from the apps, which are forgotten.
    #[serde(default, skip_serializing_if = "is_empty_kept")]
    pub kept_drivers: KeptDriverPods,
    /// The scope looks wrong (shown where the apps would be).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_note: Option<String>,
    /// The scope switched to (`:ctx`, `:ns`); `None`: the one the view started with.
    #[serde(default)]
    pub scope: Option<ScopeLabel>,
    /// Nodes where executor failures cluster, across apps (docs/diagnosis.md, node patterns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_patterns: Vec<NodePattern>,
}

fn is_no_groups(g: &Arc<diagnose::GroupIndex>) -> bool {
    g.is_empty()
}

/// The key of an operator's object among `Snapshot::operators`.
pub fn operator_key(kind: OperatorKind, namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", kind.resource())
}
