//! What the store holds: per app, its executors' records, driver, config and timeline;
//! the snapshot readers get.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
    time::Duration,
};

use serde::{Deserialize, Serialize};

use super::*;
use crate::source::{Health, SourceKind};
use spark_triage_core::{
    classify::ClassifyOptions,
    diagnose::{self, Code, Finding, SchedulingKind, verdict::Verdict},
    model::{
        ExecutorPod, ExecutorState, PodEvent, Time,
        driver::{DriverSeen, ExecutorList},
    },
    spark::{spark_bool, spark_time},
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
fn invalid_id_value(note: &str) -> Option<String> {
    let quoted = note
        .strip_prefix("spark-exec-id ")?
        .strip_suffix(" is not a number")?;
    Some(serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_owned()))
}

/// `(namespace, app id)`.
pub type AppKey = (String, String);

/// What an application's driver configuration says (from `spark.properties`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppConfig {
    pub delete_on_termination: bool,
    pub check_all_containers: Option<bool>,
    pub spark_container: Option<String>,
    pub missing_pod_detect_delta: Duration,
    pub api_polling_interval: Duration,
    /// `spark.kubernetes.executor.enableApiPolling` (default true).
    #[serde(default = "yes")]
    pub api_polling: bool,
    /// `spark.network.timeout`: executors whose heartbeats stop are removed after it.
    #[serde(default = "network_timeout")]
    pub network_timeout: Duration,
    /// Whether it came from the driver's ConfigMap (else Spark's defaults).
    pub from_driver: bool,
    /// `spark.executor.maxNumFailures`, when set.
    #[serde(default)]
    pub max_failures: Option<u32>,
    /// `spark.executor.instances`, when set.
    #[serde(default)]
    pub executor_instances: Option<u32>,
    /// `spark.dynamicAllocation.enabled`.
    #[serde(default)]
    pub dynamic_allocation: bool,
    /// `spark.dynamicAllocation.maxExecutors`, when set.
    #[serde(default)]
    pub max_executors: Option<u32>,
    /// `spark.kubernetes.allocation.recoveryMode.enabled`, when set.
    #[serde(default)]
    pub recovery_mode: Option<bool>,
    /// `spark.kubernetes.allocation.pods.allocator` when set (`direct`, `statefulset`,
    /// `deployment` or a class name, matched as Spark does: exactly): with the two
    /// controllers' values a controller names the pods.
    #[serde(default)]
    pub allocator: Option<String>,
    /// The settings whose values predict failures (docs/diagnosis.md, configuration).
    #[serde(default)]
    pub settings: spark_triage_core::diagnose::config::Settings,
}

fn yes() -> bool {
    true
}

fn network_timeout() -> Duration {
    Duration::from_secs(120)
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            delete_on_termination: true,
            check_all_containers: None,
            spark_container: None,
            missing_pod_detect_delta: Duration::from_secs(30),
            api_polling_interval: Duration::from_secs(30),
            api_polling: true,
            network_timeout: network_timeout(),
            from_driver: false,
            max_failures: None,
            executor_instances: None,
            dynamic_allocation: false,
            max_executors: None,
            recovery_mode: None,
            allocator: None,
            settings: Default::default(),
        }
    }
}

impl AppConfig {
    pub(super) fn from_properties(p: &BTreeMap<String, String>) -> Self {
        let d = Self::default();
        // A bare number is the setting's own unit: milliseconds, but seconds for the
        // network timeout.
        let dur = |k: &str, default: Duration| {
            let unit = if k == "spark.network.timeout" {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(1)
            };
            p.get(k)
                .and_then(|v| spark_time(v, unit))
                .unwrap_or(default)
        };
        let number = |k: &str| p.get(k).and_then(|v| v.trim().parse::<u32>().ok());
        Self {
            delete_on_termination: p
                .get("spark.kubernetes.executor.deleteOnTermination")
                .is_none_or(|v| spark_bool(v) != Some(false)),
            check_all_containers: p
                .get("spark.kubernetes.executor.checkAllContainers")
                .and_then(|v| spark_bool(v)),
            spark_container: p
                .get("spark.kubernetes.executor.podTemplateContainerName")
                .cloned()
                .filter(|v| !v.is_empty()),
            missing_pod_detect_delta: dur(
                "spark.kubernetes.executor.missingPodDetectDelta",
                d.missing_pod_detect_delta,
            ),
            api_polling_interval: dur(
                "spark.kubernetes.executor.apiPollingInterval",
                d.api_polling_interval,
            ),
            api_polling: p
                .get("spark.kubernetes.executor.enableApiPolling")
                .is_none_or(|v| spark_bool(v) != Some(false)),
            network_timeout: dur("spark.network.timeout", d.network_timeout),
            from_driver: true,
            max_failures: number("spark.executor.maxNumFailures"),
            executor_instances: number("spark.executor.instances"),
            dynamic_allocation: p
                .get("spark.dynamicAllocation.enabled")
                .is_some_and(|v| spark_bool(v) == Some(true)),
            max_executors: number("spark.dynamicAllocation.maxExecutors"),
            recovery_mode: p
                .get("spark.kubernetes.allocation.recoveryMode.enabled")
                .and_then(|v| spark_bool(v)),
            allocator: p
                .get("spark.kubernetes.allocation.pods.allocator")
                .filter(|v| !v.is_empty())
                .cloned(),
            settings: spark_triage_core::diagnose::config::Settings::from_properties(p),
        }
    }

    pub(super) fn classify_options(&self) -> ClassifyOptions {
        ClassifyOptions {
            spark_container: self.spark_container.clone(),
            check_all_containers: self.check_all_containers,
            spark_version: None,
        }
    }
}

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
    pub at: Time,
    pub state: ExecutorState,
    /// Extra: `missing`, `deleted`, the container reason.
    pub note: Option<String>,
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
    /// spark-triage's own kill deleted this pod.
    #[serde(default)]
    pub killed_by_tool: bool,
    /// The one answer every output shows, computed from all of the above whenever any of
    /// it changes (never per frame).
    #[serde(default)]
    pub verdict: Verdict,
}

impl ExecutorRecord {
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

/// One line of an app's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub at: Time,
    pub executor: Option<i64>,
    pub text: String,
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
    /// What the app's Spark event log says of its end (an app read from its event log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_end: Option<String>,
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
    /// Findings, incident and trouble, computed on demand once per change.
    #[serde(skip)]
    pub(super) derived: super::derived::Derived,
}

impl AppRecord {
    /// Failures Spark counted, forgotten executors included.
    pub fn counted_failures(&self) -> usize {
        self.forgotten_counted.values().sum::<usize>()
            + self.forgotten_uncaused
            + self
                .executors
                .values()
                .filter(|e| e.verdict.counted())
                .count()
    }

    pub(super) fn compute_findings(&self) -> Vec<spark_triage_core::diagnose::Finding> {
        use spark_triage_core::diagnose::app::{AppFacts, app_findings};
        let spark_version = self
            .executors
            .values()
            .find_map(|e| spark_triage_core::version::SparkVersion::of(&e.pod));
        // The forgotten ones first: they are the oldest.
        let counted: Vec<spark_triage_core::diagnose::Code> = self
            .forgotten_counted
            .iter()
            .flat_map(|(c, n)| std::iter::repeat_n(*c, *n))
            .chain(
                self.executors
                    .values()
                    .filter(|e| e.verdict.spark.as_ref().is_some_and(|s| s.counted))
                    .filter_map(|e| e.verdict.cause().map(|f| f.code)),
            )
            .collect();
        let invalid_ids: Vec<(String, String)> = self
            .unregistered
            .iter()
            .filter_map(|(name, why)| Some((name.clone(), invalid_id_value(why)?)))
            .collect();
        let no_phase: Vec<String> = self
            .executors
            .values()
            .filter(|e| e.gone.is_none() && e.pod.deletion.is_none() && e.pod.phase().is_none())
            .map(|e| e.pod.name.clone())
            .collect();
        let oom_removals = self
            .executors
            .values()
            // Spark 4.2+ turns recovery mode on when a loss reason contains "OOM"
            // (`KubernetesClusterSchedulerBackend.doRemoveExecutor`, 4.3.0 bytecode): the
            // driver's own reason when it was read, else the one Spark logs for the pod
            // ("137(SIGKILL, possible container OOM)", "termination reason: OOMKilled").
            .filter(|e| {
                e.driver
                    .as_ref()
                    .and_then(|d| d.exec.as_ref())
                    .and_then(|d| d.remove_reason.as_deref())
                    .or_else(|| e.verdict.spark.as_ref().map(|s| s.message.as_str()))
                    .is_some_and(|r| r.contains("OOM"))
            })
            .count();
        let counts = self.counts();
        // An executor known only from the driver has no spec: its app's other pods (one
        // template) say its priority.
        let seen_priority = self
            .executors
            .values()
            .rev()
            .find(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })))
            .map(|e| (e.pod.priority_class.clone(), e.pod.priority));
        let preempted: Vec<spark_triage_core::diagnose::app::Preemption> = self
            .executors
            .values()
            .filter(|e| e.verdict.has(Code::Preempted))
            .map(|e| {
                let (class, priority) = match (&e.gone, &seen_priority) {
                    (Some(Gone::DriverOnly { .. }), Some((c, p))) => (c.clone(), *p),
                    _ => (e.pod.priority_class.clone(), e.pod.priority),
                };
                spark_triage_core::diagnose::app::Preemption {
                    by: e.verdict.preempted_by.as_deref().cloned(),
                    own_class: class.as_deref().map(str::to_owned),
                    own_priority: priority,
                }
            })
            .collect();
        // What the next executor pod would be charged: like the newest one.
        let quota_refusals: Vec<(String, spark_triage_core::model::Refusal)> = self
            .executors
            .values()
            .next_back()
            .map(|e| spark_triage_core::model::PodCharge::of(&e.pod))
            .map(|charge| {
                self.quotas
                    .iter()
                    .flat_map(|q| q.refusals(&charge).into_iter().map(|r| (q.name.clone(), r)))
                    .collect()
            })
            .unwrap_or_default();
        let held: Vec<spark_triage_core::diagnose::Finding> = self
            .executors
            .values()
            .filter(|e| e.pod_state == ExecutorState::Pending && e.gone.is_none())
            .filter_map(|e| e.verdict.cause())
            .filter(|f| spark_triage_core::diagnose::app::is_held(f))
            .cloned()
            .collect();
        let mut out = app_findings(&AppFacts {
            spark_version,
            counted: &counted,
            max_failures: self.config.max_failures,
            executor_instances: self.config.executor_instances,
            dynamic_allocation: self.config.dynamic_allocation,
            max_executors: self.config.max_executors,
            invalid_ids: &invalid_ids,
            no_phase: &no_phase,
            oom_removals,
            recovery_mode: self.config.recovery_mode,
            config_known: self.config.from_driver,
            driver_running: self
                .driver
                .as_ref()
                .is_some_and(|d| d.phase.as_deref() == Some("Running")),
            live_executors: (counts.pending + counts.running) as u32,
            quota_refusals: &quota_refusals,
            settings: Some(&self.config.settings),
            preempted: &preempted,
            held: &held,
        });
        out.extend(self.node_findings.iter().cloned());
        out.sort_by_key(spark_triage_core::diagnose::app_verdict::order);
        out
    }

    pub(super) fn compute_verdict(&self) -> diagnose::app_verdict::AppVerdict {
        use diagnose::app_verdict::{AppEvidence, ExecutorTally, app_verdict};
        let counts = self.counts();
        let ended_with_driver = self
            .executors
            .values()
            .filter(|e| {
                e.verdict
                    .cause()
                    .is_some_and(|f| f.code == Code::EndedWithDriver)
            })
            .count();
        let driver = self.driver.as_ref().and_then(|d| d.evidence(&self.groups));
        // A keyframe from before the driver's pod was kept knows its phase only.
        let driver_phase = driver
            .is_none()
            .then(|| self.driver.as_ref().and_then(|d| d.phase.as_deref()))
            .flatten();
        let now = self
            .as_of
            .or_else(|| driver.as_ref().and_then(|d| d.pod.created_at))
            .unwrap_or_default();
        // Executors that outlived the driver, as of the app's clock (ticks move it while
        // any executor of an ended driver is left).
        let orphans = self.find_orphans(now);
        let mut v = app_verdict(&AppEvidence {
            driver,
            driver_phase,
            logged_end: self.logged_end.as_deref(),
            app_findings: self.findings(),
            executors: ExecutorTally {
                running: counts.running,
                pending: counts.pending,
                errors: self.alerts(),
                ended_with_driver,
                orphans: &orphans,
                known: self.executors.len(),
            },
            now,
        });
        // One end: the one the executors' verdicts were told (first seen, kept stable).
        v.end.clone_from(&self.driver_end);
        v
    }

    /// Executor pods that outlived the driver, as of `now`.
    pub(super) fn find_orphans(&self, now: Time) -> Vec<String> {
        let Some(end) = &self.driver_end else {
            return Vec::new();
        };
        self.executors
            .values()
            .filter(|e| {
                diagnose::app_verdict::is_orphan(
                    end,
                    e.pod_state,
                    e.pod.deletion.is_some(),
                    e.gone.is_some(),
                    now,
                )
            })
            .map(|e| e.pod.name.clone())
            .collect()
    }

    /// Recomputes the driver's end from its evidence; true when it changed.
    pub(super) fn update_driver_end(&mut self, now: Time) -> bool {
        let mut end = self
            .driver
            .as_ref()
            .and_then(|d| d.evidence(&self.groups))
            .and_then(|d| diagnose::app_verdict::driver_end(&d, now));
        // The tool saw this driver's end once: later sights (a terminating pod's updates)
        // do not move it.
        if let (Some(new), Some(old)) = (&mut end, &self.driver_end)
            && new.pod == old.pod
            && new.uid == old.uid
        {
            new.seen_at = new.seen_at.min(old.seen_at);
            if new.cluster_at.is_none() {
                new.at = new.seen_at;
            }
        }
        if end == self.driver_end {
            return false;
        }
        self.driver_end = end;
        true
    }

    /// The app's pods (driver, executors) that name a batch scheduler's group.
    pub(super) fn pods_naming_groups(&self) -> impl Iterator<Item = &ExecutorPod> + Clone {
        self.driver
            .iter()
            .filter_map(|d| d.last.as_deref())
            .chain(self.executors.values().map(|e| &*e.pod))
            .filter(|p| !p.groups.is_empty())
    }

    /// Whether any of its pods names a batch scheduler's group.
    pub(super) fn names_groups(&self) -> bool {
        self.pods_naming_groups().next().is_some()
    }

    pub(super) fn new(
        namespace: &str,
        app_id: &str,
        quotas: Vec<spark_triage_core::model::Quota>,
    ) -> Self {
        Self {
            namespace: namespace.to_owned(),
            app_id: app_id.to_owned(),
            app_name: None,
            driver: None,
            config: AppConfig::default(),
            executors: BTreeMap::new(),
            unregistered: BTreeMap::new(),
            timeline: VecDeque::new(),
            driver_api: None,
            quotas,
            groups: Arc::default(),
            forgotten: Default::default(),
            forgotten_counted: BTreeMap::new(),
            forgotten_uncaused: 0,
            logged_end: None,
            logged_version: None,
            driver_end: None,
            as_of: None,
            node_findings: Vec::new(),
            derived: Default::default(),
        }
    }

    pub(super) fn log(&mut self, at: Time, executor: Option<i64>, text: String) {
        self.timeline
            .push_back(TimelineEntry { at, executor, text });
        while self.timeline.len() > MAX_TIMELINE {
            self.timeline.pop_front();
        }
    }

    /// Executors per state (missing ones only under `missing`).
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for e in self.executors.values() {
            if e.is_missing() {
                c.missing += 1;
                continue;
            }
            *c.get_mut(e.state()) += 1;
        }
        c
    }

    /// Pending executors by reason, most common first.
    pub fn pending_reasons(&self) -> Vec<(String, usize)> {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for e in self.executors.values() {
            if let Some(r) = e.pending_reason() {
                *m.entry(r).or_default() += 1;
            }
        }
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Executors whose verdict is an error.
    pub fn alerts(&self) -> usize {
        self.executors
            .values()
            .filter(|e| e.verdict.severity() == Some(diagnose::Severity::Error))
            .count()
    }
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
