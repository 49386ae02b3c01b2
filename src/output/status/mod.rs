//! `spark-triage status`: the store's view at one moment, as a stable JSON document or a
//! table. Pure: snapshot in, report out.

use serde::Serialize;
use spark_triage_core::diagnose::app_verdict::VerdictView;
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model;
use spark_triage_core::model::driver::ExecutorList;
use spark_triage_core::model::driver_state::{Allocation, StreamingQuery};
use spark_triage_core::model::{DriverExecutor, ExecutorState, OperatorKind, Time};

use crate::output::cost::{CostView, PodCostView};
use crate::output::{AppOrder, OperatorStatus};
use crate::source::{DriverView, Health, SourceEvent, SourceKind};
use crate::store;
use crate::store::times::Clock;
use crate::store::{AppRecord, BudgetView, Counts, Snapshot, times};

mod table;

pub use table::{budget_line, render_table};

// Its executors' rows borrow the store's records (`'a`): at 100 apps of 1,000 executors,
// rows of their own copies held 80 MB, the first view's peak.
/// The `status --output json` document (stable; fields may be added, never renamed).
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct StatusReport<'a> {
    pub apps: Vec<AppStatus<'a>>,
    /// When the last full LIST arrived.
    pub full_snapshot_at: Option<String>,
    /// Sources that are not connected: `source: state (detail)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// What the namespaces keep that nobody reads (finished driver pods).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub housekeeping: Vec<super::Housekeeping>,
}

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct AppStatus<'a> {
    pub namespace: String,
    pub app_id: String,
    pub app_name: Option<String>,
    pub driver: Option<DriverStatus>,
    /// The application's verdict: the cause first (the driver, or what above the
    /// executors ends or blocks them), with its witness and hint.
    pub verdict: VerdictView,
    /// Spark's failure budget as numbers: failures counted, allowed, where the limit comes
    /// from, the Spark version whose rules apply.
    pub failure_budget: BudgetView,
    pub delete_on_termination: bool,
    /// The driver's configuration was read (else `delete_on_termination` and the other
    /// settings are Spark's defaults, not known).
    pub config_read: bool,
    pub counts: Counts,
    pub pending_reasons: Vec<PendingReason>,
    /// Findings about the whole app (`crash-loop`, `snapshot-update-fails`,
    /// `oom-recovery-mode`), worst first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<AppFindingStatus>,
    /// Reading the driver's own executor list (absent when never tried).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_api: Option<DriverApiStatus>,
    pub executors: Vec<ExecutorStatus<'a>>,
    /// Its Spark operator's `SparkApplication`, when submitted through one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<OperatorStatus>,
    /// Dynamic allocation as the running driver's metrics had it at the last read: its
    /// target against what is registered and what its tasks could use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_allocation: Option<Allocation>,
    /// The Structured Streaming query the app runs, when its driver's jobs named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<StreamingQuery>,
    /// What its executor losses cost it and what it left idle (from its event log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostView>,
    /// What its pods cost beside: pods deleted before they ran, memory limited against the
    /// peak used (live, with no event log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_cost: Option<PodCostView>,
}

/// How reading the driver's REST API goes.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct DriverApiStatus {
    /// `ok` or `unavailable`.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_ok: Option<String>,
    /// At the last good read: executors the driver counts as active, and pods running.
    pub driver_active: usize,
    pub pods_running: usize,
    /// Where the list was read: `driver-api` (the running driver), or `event-log` (its
    /// Spark event log, after the run: no pods).
    pub from: &'static str,
}

/// The driver's view of one executor.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ExecutorDriverStatus<'a> {
    /// When this view was read.
    pub at: Stamp,
    /// Whether the driver lists this executor at all.
    pub known: bool,
    #[serde(flatten)]
    pub executor: Option<&'a DriverExecutor>,
}

/// A time held as the time and written as RFC 3339 ([`model::fmt_time`]): its schema is a
/// string's. A report's 100,000 rows held three of these as text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp(pub Time);

impl Serialize for Stamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&model::fmt_time(&self.0))
    }
}

impl schemars::JsonSchema for Stamp {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct DriverStatus {
    pub pod: String,
    pub phase: Option<String>,
}

/// A finding about the whole application.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct AppFindingStatus {
    pub code: Code,
    pub severity: Severity,
    pub summary: String,
    pub hint: String,
}

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct PendingReason {
    pub reason: String,
    pub count: usize,
}

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ExecutorStatus<'a> {
    pub id: i64,
    pub pod: &'a str,
    pub state: ExecutorState,
    /// When the pod was created, by the cluster's clock (RFC 3339): its
    /// `creationTimestamp`, else the driver's `addTime`; null when neither is known.
    pub created_at: Option<Stamp>,
    /// When the executor ended (RFC 3339; null while it runs), by the clock `ended_at_clock`
    /// names: `container` (`finishedAt`), `driver` (`removeTime`), `event` (the kubelet's),
    /// `deletion` (when it was asked), or `seen` (when this tool saw it: a bound, it ended
    /// before).
    pub ended_at: Option<Stamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at_clock: Option<&'static str>,
    /// The table's AGE, as the live view's: how long it has run, or `3m05s ago` once it
    /// ended, from the two times above and the cluster's clock at the report (`≥` where
    /// only first sight is known). Not in the JSON: it has the times.
    #[serde(skip)]
    #[schemars(skip)]
    pub age: String,
    pub missing: bool,
    /// The pod is gone (deleted or missing); this is its tombstone.
    pub gone: bool,
    pub exit_code: Option<i32>,
    pub container_reason: Option<&'a str>,
    pub node: Option<&'a str>,
    /// The verdict's findings, primary (the cause) first.
    pub findings: Vec<Code>,
    /// The primary finding's summary, for people.
    pub summary: Option<&'a str>,
    /// The verdict's severity (its cause's): `error`, `warn`, `info`; absent when healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// The primary finding's witness (`pod`, `driver`, `event-log`, `log-tail`, `events`,
    /// `inference`, `config`, `scheduler-object`),
    /// and whether it was rebuilt from another witness's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reconstructed: bool,
    /// How the pod ended: `present`, `terminating`, `held`, `deleted-by-spark`,
    /// `deleted-by-spark-triage`, `deleted-by-disruption`, `deleted`, `vanished`, `never-seen`,
    /// `restarted-as-another`.
    pub ending: &'static str,
    /// What Spark did about it (ended executors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spark: Option<SparkStatus>,
    /// The driver's own view (its REST API), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<ExecutorDriverStatus<'a>>,
}

/// What Spark did about an ended executor.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct SparkStatus {
    /// Counted toward `spark.executor.maxNumFailures`.
    pub counted: bool,
    /// `exitCausedByApp`.
    pub caused_by_app: bool,
    pub exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spark_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Builds the report, the most trouble first (`crate::store::Trouble`); `app` filters by
/// application id or name.
pub fn report<'a>(snap: &'a Snapshot, app: Option<&str>) -> StatusReport<'a> {
    let mut records: Vec<&std::sync::Arc<AppRecord>> = snap
        .apps
        .values()
        .filter(|a| app.is_none_or(|f| a.app_id == f || a.app_name.as_deref() == Some(f)))
        .collect();
    store::by_trouble(&mut records);
    let apps: Vec<AppStatus> = records.iter().map(|a| app_status(a, snap.now)).collect();
    let problems = snap
        .health
        .iter()
        .filter_map(|(k, h)| match h {
            Health::Connected | Health::Connecting => None,
            Health::Retrying { error } => Some(format!("{}: retrying ({error})", k.as_str())),
            Health::Forbidden { permission } => Some(format!(
                "{}: forbidden (missing permission: {permission})",
                k.as_str()
            )),
        })
        .collect();
    StatusReport {
        apps,
        full_snapshot_at: snap.full_snapshot_at.as_ref().map(model::fmt_time),
        problems,
        housekeeping: if app.is_some() {
            Vec::new()
        } else {
            super::housekeeping(snap, snap.now)
        },
    }
}

fn app_status(a: &AppRecord, now: Option<Time>) -> AppStatus<'_> {
    AppStatus {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        app_name: a.app_name.clone(),
        driver: a.driver.as_ref().map(|d| DriverStatus {
            pod: d.pod.clone(),
            phase: d.phase.clone(),
        }),
        verdict: a.verdict().into(),
        failure_budget: a.budget_view(),
        delete_on_termination: a.config.delete_on_termination,
        config_read: a.config.from_driver,
        counts: a.counts(),
        pending_reasons: a
            .pending_reasons()
            .into_iter()
            .map(|(reason, count)| PendingReason { reason, count })
            .collect(),
        findings: a
            .findings()
            .iter()
            .map(|f| AppFindingStatus {
                code: f.code,
                severity: f.severity,
                summary: f.summary.clone(),
                hint: f.hint.clone(),
            })
            .collect(),
        driver_api: driver_api_status(a),
        operator: a.operator.as_deref().map(OperatorStatus::of),
        dynamic_allocation: a.allocation.map(|a| a.allocation),
        streaming: a.streaming.clone(),
        cost: CostView::of(a),
        pod_cost: PodCostView::of(a),
        executors: a
            .executors
            .values()
            .map(|e| ExecutorStatus {
                id: e.id,
                pod: &e.pod.name,
                state: e.state(),
                created_at: match times::created(e) {
                    (_, Clock::Seen) => None,
                    (t, _) => Some(Stamp(t)),
                },
                ended_at: times::ended(e).map(|(t, _)| Stamp(t)),
                ended_at_clock: times::ended(e).map(|(_, c)| c.as_str()),
                age: times::age(e, now),
                missing: e.is_missing(),
                gone: e.verdict.ending.is_gone(),
                exit_code: e.exit_code(),
                container_reason: e.container_reason(),
                node: e.pod.node_name.as_deref(),
                findings: e.findings().iter().map(|f| f.code).collect(),
                summary: e.verdict.cause().map(|f| f.summary.as_str()),
                severity: e.verdict.severity(),
                witness: e.verdict.cause().map(|f| f.witness.as_str()),
                reconstructed: e.verdict.cause().is_some_and(|f| f.reconstructed),
                ending: e.verdict.ending.as_str(),
                spark: e.verdict.spark.as_ref().map(|s| SparkStatus {
                    counted: s.counted,
                    caused_by_app: s.caused_by_app,
                    exit_code: s.exit_code,
                    spark_version: s.spark_version.clone(),
                    note: s.note.clone(),
                }),
                driver: e.driver.as_ref().map(|d| ExecutorDriverStatus {
                    at: Stamp(d.at),
                    known: d.exec.is_some(),
                    executor: d.exec.as_ref(),
                }),
            })
            .collect(),
    }
}

fn driver_api_status(a: &AppRecord) -> Option<DriverApiStatus> {
    let d = a.driver_api.as_ref()?;
    Some(DriverApiStatus {
        state: if d.unavailable.is_some() {
            "unavailable"
        } else {
            "ok"
        },
        reason: d.unavailable.clone(),
        at: model::fmt_time(&d.at),
        last_ok: d.last_ok.as_ref().map(model::fmt_time),
        driver_active: d.active,
        pods_running: a.counts().running,
        from: match d.from {
            ExecutorList::DriverApi => "driver-api",
            ExecutorList::EventLog => "event-log",
        },
    })
}

/// "no application X … there: A, B": what an unknown app is told (`status`, the MCP tools).
pub fn unknown_app(snap: &Snapshot, want: &str, scope: &str) -> String {
    let mut names: Vec<String> = snap
        .apps
        .values()
        .map(|a| a.app_name.clone().unwrap_or_else(|| a.app_id.clone()))
        .collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        format!("no application {want:?}: no Spark applications in {scope}")
    } else {
        format!(
            "no application {want:?} (by id or name) in {scope}; there: {}",
            names.join(", ")
        )
    }
}

/// Whether every source needed for a first answer has reported in (the event watch may
/// also have failed: then the answer comes without events, and says why; with the driver
/// API on, every driver pod seen has been read once, or failed to be).
/// Whether the event logs (`--event-log-dir`) were looked for once: their reader said how
/// it went.
pub fn event_logs_read(snap: &Snapshot) -> bool {
    snap.health
        .get(&SourceKind::EventLogs)
        .is_some_and(|h| !matches!(h, Health::Connecting))
}

/// The apps whose driver has not answered its REST API yet (nor been found unreachable):
/// the driver's own answer counts, not an event log's; a driver pod gone has no API left
/// to answer (an operator deletes a failed run's driver before the rerun).
pub fn drivers_unanswered(snap: &Snapshot) -> impl Iterator<Item = &AppRecord> {
    snap.apps.values().map(|a| &**a).filter(|a| {
        !a.driver_api
            .as_ref()
            .is_some_and(|d| d.from == ExecutorList::DriverApi || d.unavailable.is_some())
            && a.driver.as_ref().is_some_and(|d| d.gone.is_none())
    })
}

/// How long a first answer (`status`, MCP) waits for a driver whose executor list has not
/// answered: 2 s from its start (the drivers are read beside the LIST), and not a moment
/// past the cluster's complete view when that took longer. A healthy driver answers in
/// well under a second, and one that does not (a long GC pause, a hung UI) must not hold
/// the pods' verdicts of every other app: its app says so, and it is read again next round.
pub const DRIVER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a first answer may be given: everything in ([`ready`], the drivers too); or,
/// the grace over, the cluster's view complete and every driver not in yet one whose
/// executor list has not answered (`listed`): one that answered it is finishing its other
/// reads (its settings, its log's words, the loss chain: each bounded), which its
/// executors' verdicts need.
pub fn ready_past_grace(
    snap: &Snapshot,
    driver_api: bool,
    grace_over: bool,
    listed: impl Fn(&str, &str) -> bool,
) -> bool {
    ready(snap, driver_api)
        || (driver_api
            && grace_over
            && ready(snap, false)
            && drivers_unanswered(snap).all(|a| !listed(&a.namespace, &a.app_id)))
}

/// What a driver whose executor list had not answered by the first answer is said to be.
pub fn still_reading(a: &AppRecord, at: chrono::DateTime<chrono::Utc>) -> SourceEvent {
    SourceEvent::DriverExecutors {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        view: DriverView::Unavailable {
            reason: "no answer yet: its REST API had not answered when this view was taken \
                     (it is read again next round)"
                .to_owned(),
        },
        at,
    }
}

pub fn ready(snap: &Snapshot, driver_api: bool) -> bool {
    let config_failed = snap
        .health
        .get(&SourceKind::DriverConfig)
        .is_some_and(|h| matches!(h, Health::Retrying { .. } | Health::Forbidden { .. }));
    snap.full_snapshot_at.is_some()
        && snap
            .health
            .get(&SourceKind::EventWatch)
            .is_some_and(|h| !matches!(h, Health::Connecting))
        // The quotas listed once (or their list failed and says so).
        && (snap.applied_quotas || snap.health.contains_key(&SourceKind::Quotas))
        // Every kind of group object a pod names listed once, or known unreadable (or
        // its list failing, which says so).
        // The operators' applications listed once, or known not served (or unreadable).
        && (snap.operators_read.len() == OperatorKind::ALL.len()
            || snap
                .health
                .get(&SourceKind::SchedulerObjects)
                .is_some_and(|h| matches!(h, Health::Retrying { .. })))
        && (snap.groups_wanted.iter().all(|k| snap.groups.answered(*k))
            || snap
                .health
                .get(&SourceKind::SchedulerObjects)
                .is_some_and(|h| matches!(h, Health::Retrying { .. })))
        && (!driver_api || drivers_unanswered(snap).next().is_none())
        // Every driver's configuration read (deleteOnTermination, checkAllContainers, the
        // container name change verdicts), or its reading failed and says so.
        && (config_failed
            || snap.apps.values().all(|a| {
                a.config.from_driver
                    || a.driver
                        .as_ref()
                        .is_none_or(|d| d.conf_config_map.is_none())
            }))
}

impl StatusReport<'_> {
    /// In the order asked for (`--sort`): trouble is how it is built.
    pub fn sorted(mut self, order: AppOrder) -> Self {
        order.apply(&mut self.apps);
        self
    }

    /// Any app or executor in the report with an error-severity verdict (`status --exit-code`).
    pub fn has_errors(&self) -> bool {
        self.apps
            .iter()
            .any(|a| a.verdict.severity == Severity::Error)
            || self
                .apps
                .iter()
                .flat_map(|a| &a.executors)
                .any(|e| e.severity == Some(Severity::Error))
    }

    /// `-o name`: `pod/NAME` for every executor whose pod still exists, as kubectl names
    /// objects (so `| xargs kubectl describe -n NS` works).
    pub fn names(&self) -> String {
        self.apps
            .iter()
            .flat_map(|a| &a.executors)
            .filter(|e| !e.gone)
            .map(|e| format!("pod/{}\n", e.pod))
            .collect()
    }
}
