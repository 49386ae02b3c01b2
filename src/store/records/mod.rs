//! What the store holds: per app, its executors' records, driver, config and timeline;
//! the snapshot readers get.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    sync::Arc,
};

use serde::{Deserialize, Serialize};

use super::*;
use crate::source::{Health, SourceKind};
use spark_triage_core::{
    diagnose::{
        self, Code, Finding, SchedulingKind,
        verdict::{ToolKill, Verdict},
    },
    model::{
        ExecutorPod, ExecutorState, PodEvent, Time,
        driver::{DriverSeen, ExecutorList},
    },
};

/// The `Finished::id` of a driver pod.
pub const DRIVER: i64 = i64::MIN;

/// An executor (or a driver, with id [`DRIVER`]) that just reached a final state: its log
/// should be captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub namespace: String,
    pub app_id: String,
    /// The executor id (its record holds the verdict the capture policy reads).
    pub id: i64,
    pub pod: String,
    pub container: String,
    /// The container restarted: the evidence is in the previous instance.
    pub previous: bool,
}

/// The note kept for an executor pod whose `spark-exec-id` is not a number.
pub(super) fn invalid_id_note(value: &str) -> String {
    format!("spark-exec-id {value:?} is not a number")
}

/// The value back from [`invalid_id_note`]'s note.
pub(super) fn invalid_id_value(note: &str) -> Option<String> {
    let quoted = note
        .strip_prefix("spark-exec-id ")?
        .strip_suffix(" is not a number")?;
    Some(serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_owned()))
}

/// `(namespace, app id)`.
pub type AppKey = (String, String);

/// How an executor's pod went away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum Gone {
    /// A watch DELETED event was seen.
    Deleted { at: Time },
    /// Absent from a full LIST with no deletion seen (the tool's precise rule).
    Missing {
        at: Time,
        list_rv: Option<u64>,
        /// When Spark's time-based rule declares it lost (its poll after registration + delta).
        spark_verdict: String,
    },
    /// Never seen as a pod: known only from the driver's executor list (first named `at`).
    DriverOnly { at: Time },
    /// Its container restarted in place and the pod went on as executor `as_id` (a
    /// StatefulSet's or Deployment's pod): the record keeps the pod as this executor ended.
    Restarted { at: Time, as_id: i64 },
}

impl Gone {
    pub fn at(&self) -> Time {
        match self {
            Self::Deleted { at }
            | Self::Missing { at, .. }
            | Self::DriverOnly { at }
            | Self::Restarted { at, .. } => *at,
        }
    }
}

/// One state change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// When it happened: by the pod's own clocks where they say (`clock`), else when this
    /// process saw it.
    pub at: Time,
    pub state: ExecutorState,
    /// Extra: `missing`, `deleted`, the container reason.
    pub note: Option<String>,
    /// Whose clock `at` is (recordings from before it was kept: this process's sight).
    #[serde(default, skip_serializing_if = "super::times::Clock::is_seen")]
    pub clock: super::times::Clock,
    /// When this process saw it, when that is not `at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Time>,
}

impl Transition {
    /// A state change at `when` (the cluster's time where known), seen by this process at
    /// `seen`.
    pub fn new(
        (at, clock): (Time, super::times::Clock),
        seen: Time,
        state: ExecutorState,
        note: Option<String>,
    ) -> Self {
        Self {
            at,
            state,
            note,
            clock,
            seen: (seen != at).then_some(seen),
        }
    }

    /// When this process saw it.
    pub fn seen_at(&self) -> Time {
        self.seen.unwrap_or(self.at)
    }
}

/// Ended executors a store let go past its bound (`MAX_KEPT`), the first to end first:
/// what a report says of them, counted (they are no longer listed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trimmed {
    pub executors: usize,
    /// Failures among them (`Verdict::is_failure`: what `report` counts).
    pub failures: usize,
    /// By their verdict's cause (`none` when it named none).
    pub by_cause: BTreeMap<String, usize>,
    /// By every finding of their verdicts.
    pub by_finding: BTreeMap<spark_triage_core::diagnose::Code, usize>,
    /// Node-level SIGKILLs that were errors (the node's OOM killer): the one OOM kind a
    /// cause code alone does not tell.
    pub node_oom: usize,
    /// By the incident strip's label of their cause (`OOMKilled (137)`), those it counts:
    /// ended, with a cause that is not plain information.
    #[serde(default)]
    pub by_label: BTreeMap<String, usize>,
    /// When the first and the last of them ended.
    pub from: Option<Time>,
    pub to: Option<Time>,
}

impl Trimmed {
    pub fn is_empty(&self) -> bool {
        self.executors == 0
    }

    pub(super) fn add(&mut self, e: &ExecutorRecord) {
        use spark_triage_core::diagnose::{Severity, code::Oom};
        self.executors += 1;
        self.failures += usize::from(e.verdict.is_failure());
        *self
            .by_cause
            .entry(e.verdict.cause_code().to_owned())
            .or_default() += 1;
        for f in e.findings() {
            *self.by_finding.entry(f.code).or_default() += 1;
        }
        if e.verdict.cause().and_then(|f| f.code.oom(f.severity)) == Some(Oom::Node) {
            self.node_oom += 1;
        }
        if let Some(f) = e.verdict.cause()
            && e.state().is_final()
            && f.severity != Severity::Info
            && !e.is_missing()
        {
            *self
                .by_label
                .entry(super::cause_label(f.code, e.exit_code()))
                .or_default() += 1;
        }
        if let Some(at) = super::ended_at(e) {
            self.from = Some(self.from.map_or(at, |f| f.min(at)));
            self.to = Some(self.to.map_or(at, |t| t.max(at)));
        }
    }
}

/// Everything known about one executor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutorRecord {
    pub id: i64,
    /// The pod as last seen (a tombstone's last status; rebuilt from the driver's reason
    /// when no pod was ever seen). Shared: copying a record for a writer never copies it.
    pub pod: Arc<ExecutorPod>,
    /// Spark's state for the pod as last seen. What to show is `verdict.state`.
    #[serde(alias = "state")]
    pub pod_state: ExecutorState,
    pub first_seen: Time,
    /// When the pod last changed (a relist of it unchanged is not a change).
    pub last_seen: Time,
    /// The resourceVersion at which the pod was last seen.
    pub last_rv: Option<u64>,
    pub history: VecDeque<Transition>,
    pub events: VecDeque<PodEvent>,
    /// The pod as first seen failed or succeeded: the ending Spark acted on (a later deletion
    /// does not change what Spark counted).
    #[serde(default)]
    pub ended: Option<Arc<ExecutorPod>>,
    /// The pod's deletion as first seen: when it was requested (timestamp − grace).
    #[serde(default)]
    pub first_deletion: Option<spark_triage_core::model::Deletion>,
    /// Set once the pod is gone: the tombstone.
    pub gone: Option<Gone>,
    /// Shared (interned): every executor of an app names the same container.
    pub spark_container: spark_triage_core::model::Text,
    /// The container log's tail, captured when it ended (bounded: see `MAX_LOGS`).
    #[serde(default)]
    pub log_tail: Option<Arc<Vec<String>>>,
    /// The driver's own view of this executor (its REST API), when read.
    #[serde(default)]
    pub driver: Option<Box<DriverSeen>>,
    /// spark-triage's own kill deleted this pod: when, by whom (recordings from before
    /// these were kept say `true`).
    #[serde(default, deserialize_with = "tool_kill")]
    pub killed_by_tool: Option<ToolKill>,
    /// The one answer every output shows, computed from all of the above whenever any of
    /// it changes (never per frame).
    #[serde(default)]
    pub verdict: Verdict,
}

impl ExecutorRecord {
    /// When its last state change happened and by whose clock (`seen` when it has none).
    pub fn last_change(&self, seen: Time) -> (Time, super::times::Clock) {
        self.history
            .back()
            .map_or((seen, super::times::Clock::Seen), |t| (t.at, t.clock))
    }

    /// Vanished with nothing to explain it (the verdict's `missing`).
    pub fn is_missing(&self) -> bool {
        self.verdict.missing
    }

    /// The verdict's state: the one Spark assigned or would assign.
    pub fn state(&self) -> ExecutorState {
        self.verdict.state
    }

    /// The verdict's findings, primary first.
    pub fn findings(&self) -> &[Finding] {
        &self.verdict.findings
    }

    /// The driver's view in one word: `active`, `removed`, `unknown` (not in its list), `-`.
    pub fn driver_word(&self) -> &'static str {
        match &self.driver {
            None => "-",
            Some(d) => match &d.exec {
                None => "unknown",
                Some(x) if x.active => "active",
                Some(_) => "removed",
            },
        }
    }

    /// The pod and the driver disagree (`driver-lost-pod`, `unregistered`, `zombie`).
    pub fn driver_disagrees(&self) -> bool {
        self.verdict.driver_disagrees()
    }

    /// The exit code of the ending the verdict rests on (observed, or from Spark's reason).
    pub fn exit_code(&self) -> Option<i32> {
        self.verdict.exit_code
    }

    /// The terminated reason of the ending the verdict rests on, else the Spark container's
    /// waiting reason.
    pub fn container_reason(&self) -> Option<&str> {
        self.verdict.container_reason.as_deref().or_else(|| {
            self.pod
                .container_status(&self.spark_container)
                .and_then(|c| c.waiting_reason())
        })
    }

    /// Why it waits, in one phrase (for pending executors).
    pub fn pending_reason(&self) -> Option<String> {
        if self.verdict.state != ExecutorState::Pending || self.verdict.ending.is_gone() {
            return None;
        }
        if let Some(f) = self
            .findings()
            .iter()
            .find(|f| f.code == Code::Unschedulable)
        {
            return primary_scheduling_reason(&f.scheduling)
                .or_else(|| Some("Unschedulable".to_owned()));
        }
        // Held by something other than the nodes: who holds it.
        let held = self
            .findings()
            .iter()
            .filter(|f| f.severity != diagnose::Severity::Info)
            .find_map(|f| match f.code {
                Code::SchedulingGated
                    if self
                        .pod
                        .scheduling_gates
                        .iter()
                        .any(|g| g == spark_triage_core::model::KUEUE_GATE) =>
                {
                    Some("not admitted by Kueue")
                }
                Code::SchedulingGated => Some("scheduling gates"),
                Code::GangWaiting => Some("gang incomplete"),
                Code::QueueWaiting => Some("queue has no room"),
                Code::SchedulerSilent => Some("scheduler silent"),
                _ => None,
            });
        if let Some(h) = held {
            return Some(h.to_owned());
        }
        if let Some(r) = self.container_reason() {
            return Some(r.to_owned());
        }
        Some(
            if self.pod.node_name.is_some() {
                "ContainerCreating"
            } else {
                "Pending"
            }
            .to_owned(),
        )
    }
}

/// The blocking reason of a scheduling failure: nodes outside the pod's own node selection
/// (affinity) are not candidates, so among the others the reason most nodes gave.
pub(super) fn primary_scheduling_reason(reasons: &[diagnose::SchedulingReason]) -> Option<String> {
    let candidates: Vec<_> = reasons
        .iter()
        .filter(|r| r.kind != SchedulingKind::NodeAffinity)
        .collect();
    let pool = if candidates.is_empty() {
        reasons.iter().collect()
    } else {
        candidates
    };
    pool.into_iter()
        .max_by_key(|r| r.nodes.unwrap_or(0))
        .map(|r| r.text.clone())
}

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
    pub quotas: Vec<spark_triage_core::model::Quota>,
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
    pub forgotten_counted: BTreeMap<spark_triage_core::diagnose::Code, usize>,
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
    pub node_findings: Vec<spark_triage_core::diagnose::Finding>,
    /// The executors the running driver's log says `HeartbeatReceiver` removed
    /// (`SourceEvent::DriverHeartbeats`): kept with the app, so they hold before its driver
    /// pod is known and after a captured log's tail has lost the lines.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub heard_heartbeats: std::collections::BTreeSet<i64>,
    /// Findings, incident and trouble, computed on demand once per change.
    #[serde(skip)]
    pub(super) derived: super::derived::Derived,
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

impl Snapshot {
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
    pub quotas: BTreeMap<String, Vec<spark_triage_core::model::Quota>>,
    /// A quota list arrived (possibly empty).
    #[serde(default)]
    pub applied_quotas: bool,
    /// The batch schedulers' objects read, all namespaces, and the kinds that cannot be.
    #[serde(default, skip_serializing_if = "diagnose::GroupIndex::is_empty")]
    pub groups: diagnose::GroupIndex,
    /// The kinds of group objects Spark pods named (`status` waits for their lists).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub groups_wanted: std::collections::BTreeSet<spark_triage_core::model::GroupKind>,
    /// The scope looks wrong (shown where the apps would be).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_note: Option<String>,
    /// The scope switched to (`:ctx`, `:ns`); `None`: the one the view started with.
    #[serde(default)]
    pub scope: Option<ScopeLabel>,
    /// Nodes where executor failures cluster, across apps (docs/diagnosis.md, node patterns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_patterns: Vec<spark_triage_core::diagnose::nodes::NodePattern>,
}

fn is_no_groups(g: &Arc<diagnose::GroupIndex>) -> bool {
    g.is_empty()
}
