//! The store: a single writer turns [`SourceEvent`]s into what readers see, per application.
//!
//! Spark's semantics (docs/diagnosis.md §1, §4): a watch event upserts (whatever its type); a full LIST
//! replaces and stamps `full_snapshot_at`. What the tool adds is labelled: a watch DELETED
//! makes a **tombstone** (Spark would keep the pod until the next poll); an executor absent
//! from a LIST that is newer (by resourceVersion) than the last version at which it was seen,
//! with no deletion seen, is **missing** — and the moment Spark's own time-based rule
//! (`missingPodDetectDelta` after registration, checked at its polls) reaches the same
//! verdict is computed beside it.
//!
//! Readers get cheap snapshots: apps and executor records sit behind `Arc`s, so cloning the
//! map is a reference-count bump per record and a write copies only what it touches.
//! Memory is bounded: per-executor history and events and the per-app timeline are capped.
//! Pure: no I/O, no clock; `now` is the newest event's time.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
    time::Duration,
};

use serde::{Deserialize, Serialize};

use crate::{
    classify::{ClassifyOptions, Resolved, classify},
    diagnose::{
        self, Code, Finding, SchedulingKind,
        verdict::{Evidence, PodGone, Verdict, verdict},
    },
    model::{
        DriverExecutor, ExecIdLabel, ExecutorPod, ExecutorState, PodEvent, Role, Time,
        driver::{DriverSeen, reason_headline},
    },
    source::{DriverView, Health, SourceEvent, SourceKind},
};

/// Transitions kept per executor.
pub const MAX_HISTORY: usize = 32;
/// Events kept per executor.
pub const MAX_EVENTS: usize = 16;
/// Timeline entries kept per application.
pub const MAX_TIMELINE: usize = 2000;
/// Executors whose captured log tails are kept (the oldest are dropped).
pub const MAX_LOGS: usize = 500;
/// Lines kept per captured log.
pub const LOG_LINES: usize = 200;

/// An executor that just reached a final state: its log should be captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// The container restarted: the evidence is in the previous instance.
    pub previous: bool,
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
    /// Whether it came from the driver's ConfigMap (else Spark's defaults).
    pub from_driver: bool,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            delete_on_termination: true,
            check_all_containers: None,
            spark_container: None,
            missing_pod_detect_delta: Duration::from_secs(30),
            api_polling_interval: Duration::from_secs(30),
            from_driver: false,
        }
    }
}

impl AppConfig {
    fn from_properties(p: &BTreeMap<String, String>) -> Self {
        let d = Self::default();
        let dur = |k: &str, default: Duration| {
            p.get(k).and_then(|v| spark_duration(v)).unwrap_or(default)
        };
        Self {
            delete_on_termination: p
                .get("spark.kubernetes.executor.deleteOnTermination")
                .is_none_or(|v| v.trim() != "false"),
            check_all_containers: p
                .get("spark.kubernetes.executor.checkAllContainers")
                .and_then(|v| v.trim().parse().ok()),
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
            from_driver: true,
        }
    }

    fn classify_options(&self) -> ClassifyOptions {
        ClassifyOptions {
            spark_container: self.spark_container.clone(),
            check_all_containers: self.check_all_containers,
        }
    }
}

/// Spark's time strings: `30s`, `500ms`, `2min`, `1h`, or bare milliseconds.
fn spark_duration(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(ms) = v.parse::<u64>() {
        return Some(Duration::from_millis(ms));
    }
    let split = v.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = v.split_at(split);
    let n: u64 = n.parse().ok()?;
    let secs = match unit {
        "ms" => return Some(Duration::from_millis(n)),
        "s" => n,
        "m" | "min" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
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
}

impl Gone {
    pub fn at(&self) -> Time {
        match self {
            Self::Deleted { at } | Self::Missing { at, .. } | Self::DriverOnly { at } => *at,
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
    pub first_deletion: Option<crate::model::Deletion>,
    /// Set once the pod is gone: the tombstone.
    pub gone: Option<Gone>,
    pub spark_container: String,
    /// The container log's tail, captured when it ended (bounded: see `MAX_LOGS`).
    #[serde(default)]
    pub log_tail: Option<Arc<Vec<String>>>,
    /// The driver's own view of this executor (its REST API), when read.
    #[serde(default)]
    pub driver: Option<DriverSeen>,
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
fn primary_scheduling_reason(reasons: &[diagnose::SchedulingReason]) -> Option<String> {
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
pub struct App {
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
}

impl App {
    fn new(namespace: &str, app_id: &str) -> Self {
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
        }
    }

    fn log(&mut self, at: Time, executor: Option<i64>, text: String) {
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    fn get_mut(&mut self, s: ExecutorState) -> &mut usize {
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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    #[serde(with = "pairs")]
    pub apps: BTreeMap<AppKey, Arc<App>>,
    /// When the last full LIST arrived, and its version.
    pub full_snapshot_at: Option<Time>,
    pub list_rv: Option<u64>,
    pub health: BTreeMap<SourceKind, Health>,
    /// The newest event time: the store's clock.
    pub now: Option<Time>,
    /// Events applied so far.
    pub applied: u64,
}

/// The single writer. Serializable whole: a recording's keyframe is a `Store`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Store {
    snap: Snapshot,
    /// Events about pods, by (namespace, pod name), until their pod is known.
    #[serde(with = "pairs")]
    events: BTreeMap<(String, String), VecDeque<PodEvent>>,
    /// Executors that reached a final state since the last `take_finished`.
    #[serde(skip)]
    finished: Vec<Finished>,
    /// Which executors hold a captured log, oldest first.
    logs: VecDeque<(AppKey, i64)>,
    /// Sources that failed after working, since when (for the outage's timeline lines).
    #[serde(default)]
    outages: BTreeMap<SourceKind, Time>,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// An outage of a pod or event source leaves a line in every app's timeline when it
    /// starts (a source that worked now fails) and when it ends (it works again): what
    /// happened meanwhile was seen late, or (a vanished pod) only by the next LIST.
    fn outage(&mut self, source: SourceKind, health: &Health, at: Time) {
        if !matches!(
            source,
            SourceKind::PodWatch | SourceKind::PodPoll | SourceKind::EventWatch
        ) {
            return;
        }
        let was_ok = matches!(self.snap.health.get(&source), Some(Health::Connected));
        let text = match health {
            Health::Retrying { error } if was_ok => {
                self.outages.insert(source, at);
                format!("{} lost: {error}", source.as_str())
            }
            Health::Forbidden { permission } if was_ok => {
                self.outages.insert(source, at);
                format!("{} lost: forbidden ({permission})", source.as_str())
            }
            Health::Connected => match self.outages.remove(&source) {
                Some(since) => format!(
                    "{} back after {}s",
                    source.as_str(),
                    (at - since).num_seconds().max(0)
                ),
                None => return,
            },
            _ => return,
        };
        for app in self.snap.apps.values_mut() {
            Arc::make_mut(app).log(at, None, text.clone());
        }
    }

    /// A cheap copy for readers.
    pub fn snapshot(&self) -> Snapshot {
        self.snap.clone()
    }

    pub fn view(&self) -> &Snapshot {
        &self.snap
    }

    /// Applies one event.
    pub fn apply(&mut self, ev: SourceEvent) {
        let at = ev.at();
        self.snap.now = Some(self.snap.now.map_or(at, |n| n.max(at)));
        self.snap.applied += 1;
        match ev {
            SourceEvent::PodUpserted { pod, at } => self.upsert(*pod, at, false),
            SourceEvent::PodDeleted { pod, at } => self.upsert(*pod, at, true),
            SourceEvent::PodsListed {
                pods,
                resource_version,
                at,
            } => self.replace(pods, resource_version, at),
            SourceEvent::EventSeen { event, at } => self.event(*event, at),
            SourceEvent::DriverConfig {
                namespace,
                app_id,
                properties,
                ..
            } => {
                let app = self.app_mut(&namespace, &app_id);
                app.config = AppConfig::from_properties(&properties);
                self.rediagnose_app(&(namespace, app_id), at);
            }
            SourceEvent::SourceHealth { source, health, at } => {
                self.outage(source, &health, at);
                self.snap.health.insert(source, health);
            }
            SourceEvent::LogCaptured {
                namespace,
                pod,
                lines,
                ..
            } => self.attach_log(&namespace, &pod, lines),
            SourceEvent::ActionTaken {
                namespace,
                app_id,
                text,
                killed,
                at,
            } => {
                let app = self.app_mut(&namespace, &app_id);
                app.log(at, killed, text);
                if let Some(id) = killed
                    && let Some(rec) = app.executors.get_mut(&id)
                {
                    Arc::make_mut(rec).killed_by_tool = true;
                    self.refresh_some(&(namespace, app_id), &[id], at);
                }
            }
            SourceEvent::DriverExecutors {
                namespace,
                app_id,
                view,
                at,
            } => self.driver_view(&namespace, &app_id, view, at),
            SourceEvent::Tick { at } => self.tick(at),
        }
    }

    /// Executors that reached a final state since the last call (for log capture).
    pub fn take_finished(&mut self) -> Vec<Finished> {
        std::mem::take(&mut self.finished)
    }

    fn attach_log(&mut self, namespace: &str, pod: &str, mut lines: Vec<String>) {
        if lines.len() > LOG_LINES {
            lines.drain(..lines.len() - LOG_LINES);
        }
        let mut found = None;
        for (k, app) in &self.snap.apps {
            if k.0 == namespace
                && let Some(rec) = app.executors.values().find(|e| e.pod.name == pod)
            {
                found = Some((k.clone(), rec.id));
                break;
            }
        }
        let Some((key, id)) = found else { return };
        if let Some(rec) = Arc::make_mut(self.snap.apps.get_mut(&key).expect("app exists"))
            .executors
            .get_mut(&id)
        {
            Arc::make_mut(rec).log_tail = Some(Arc::new(lines));
        }
        // The log is evidence: a JVM OutOfMemoryError in it can name the cause.
        let at = self.snap.now.unwrap_or_default();
        self.refresh_some(&key, &[id], at);
        self.logs.retain(|x| *x != (key.clone(), id));
        self.logs.push_back((key, id));
        while self.logs.len() > MAX_LOGS {
            if let Some((k, old)) = self.logs.pop_front()
                && let Some(app) = self.snap.apps.get_mut(&k)
                && let Some(rec) = Arc::make_mut(app).executors.get_mut(&old)
            {
                Arc::make_mut(rec).log_tail = None;
            }
        }
    }

    fn app_mut(&mut self, ns: &str, app_id: &str) -> &mut App {
        let app = self
            .snap
            .apps
            .entry((ns.to_owned(), app_id.to_owned()))
            .or_insert_with(|| Arc::new(App::new(ns, app_id)));
        Arc::make_mut(app)
    }

    fn upsert(&mut self, pod: ExecutorPod, at: Time, deleted: bool) {
        let Some(app_id) = pod.app_id().map(str::to_owned) else {
            return; // not a Spark pod
        };
        let ns = pod.namespace.clone();
        let pod_events: Vec<PodEvent> = self
            .events
            .get(&(ns.clone(), pod.name.clone()))
            .map(|q| q.iter().filter(|e| e.is_about(&pod)).cloned().collect())
            .unwrap_or_default();
        let app = self.app_mut(&ns, &app_id);
        if let Some(n) = pod.label(crate::model::LABEL_APP_NAME) {
            app.app_name = Some(n.to_owned());
        }
        match pod.role() {
            Some(Role::Driver) => {
                app.driver = Some(DriverInfo {
                    pod: pod.name.clone(),
                    phase: if deleted {
                        Some("Deleted".to_owned())
                    } else {
                        pod.phase().map(str::to_owned)
                    },
                    node: pod.node_name.clone(),
                    hold_until: pod.hold_expires(),
                    conf_config_map: pod.conf_config_map.clone(),
                    uid: pod.uid.clone(),
                });
                return;
            }
            Some(Role::Executor) => {}
            None => return,
        }
        let id = match pod.exec_id_label() {
            ExecIdLabel::Id(id) => id,
            other => {
                let why = match other {
                    ExecIdLabel::Placeholder => {
                        "spark-exec-id is EXECID (id not assigned yet)".to_owned()
                    }
                    ExecIdLabel::Invalid(v) => format!("spark-exec-id {v:?} is not a number"),
                    _ => "no spark-exec-id label".to_owned(),
                };
                if deleted {
                    app.unregistered.remove(&pod.name);
                } else {
                    app.unregistered.insert(pod.name.clone(), why);
                }
                return;
            }
        };
        let config = app.config.clone();
        let resolved = config.classify_options().resolve(&pod);
        let state = classify(&pod, &resolved.config);
        let rv = pod.rv();
        let gone = deleted.then_some(Gone::Deleted { at });
        let mut timeline = Vec::new();
        let mut finished = None;
        match app.executors.get_mut(&id) {
            Some(rec) => {
                let rec = Arc::make_mut(rec);
                // A resourceVersion older than what we have is a stale replay: keep ours.
                if let (Some(new), Some(old)) = (rv, rec.last_rv)
                    && new < old
                {
                    return;
                }
                let was_final = rec.pod_state.is_final() || rec.gone.is_some();
                if !was_final && (state.is_final() || deleted) {
                    finished = Some(Finished {
                        namespace: pod.namespace.clone(),
                        pod: pod.name.clone(),
                        container: resolved.config.spark_container.clone(),
                        previous: false,
                    });
                }
                if rec.pod_state != state || (deleted && rec.gone.is_none()) {
                    let note = if deleted {
                        Some("pod deleted".to_owned())
                    } else {
                        None
                    };
                    timeline.push((
                        id,
                        transition_text(id, state, &pod, &resolved, note.as_deref()),
                    ));
                    push_history(rec, Transition { at, state, note });
                }
                let pod = Arc::new(pod);
                if rec.ended.is_none() && is_ending(state) {
                    rec.ended = Some(pod.clone());
                }
                if rec.first_deletion.is_none() {
                    rec.first_deletion = pod.deletion.clone();
                }
                rec.pod = pod;
                rec.pod_state = state;
                rec.last_seen = at;
                rec.last_rv = rv.or(rec.last_rv);
                if deleted {
                    rec.gone = gone;
                } else if rec
                    .gone
                    .as_ref()
                    .is_some_and(|g| matches!(g, Gone::Missing { .. } | Gone::DriverOnly { .. }))
                {
                    rec.gone = None; // it was only late (or known from the driver first)
                }
                rec.spark_container = resolved.config.spark_container.clone();
                if let Some(note) = refresh(rec, &pod_events, &config, Some(&resolved), at) {
                    timeline.push((id, note));
                }
            }
            None => {
                timeline.push((id, format!("executor {id} added ({})", state)));
                if state != ExecutorState::Pending {
                    timeline.push((id, transition_text(id, state, &pod, &resolved, None)));
                }
                let mut rec = ExecutorRecord {
                    id,
                    spark_container: resolved.config.spark_container.clone(),
                    first_deletion: pod.deletion.clone(),
                    ended: None,
                    pod: Arc::new(pod),
                    pod_state: state,
                    first_seen: at,
                    last_seen: at,
                    last_rv: rv,
                    history: VecDeque::from([Transition {
                        at,
                        state,
                        note: deleted.then(|| "pod deleted".to_owned()),
                    }]),
                    events: VecDeque::new(),
                    gone,
                    log_tail: None,
                    // Not in the driver's last good read (it would have been created from
                    // it): say so, whichever of the read and the pod arrived first.
                    driver: app
                        .driver_api
                        .as_ref()
                        .and_then(|d| d.last_ok)
                        .map(|at| DriverSeen { at, exec: None }),
                    killed_by_tool: false,
                    verdict: Verdict::default(),
                };
                if is_ending(state) {
                    rec.ended = Some(rec.pod.clone());
                }
                refresh(&mut rec, &pod_events, &config, Some(&resolved), at);
                app.executors.insert(id, Arc::new(rec));
            }
        }
        for (id, text) in timeline {
            app.log(at, Some(id), text);
        }
        self.finished.extend(finished);
    }

    /// A full LIST: Spark replaces its snapshot; the tool keeps tombstones and decides
    /// which executors are missing.
    fn replace(&mut self, pods: Vec<ExecutorPod>, list_rv: Option<u64>, at: Time) {
        self.snap.full_snapshot_at = Some(at);
        self.snap.list_rv = list_rv;
        let mut present: std::collections::BTreeSet<(String, String, i64)> =
            std::collections::BTreeSet::new();
        let mut present_names: std::collections::BTreeSet<(String, String)> =
            std::collections::BTreeSet::new();
        for p in &pods {
            present_names.insert((p.namespace.clone(), p.name.clone()));
            if let (Some(app), Some(id)) = (p.app_id(), p.executor_id()) {
                present.insert((p.namespace.clone(), app.to_owned(), id));
            }
        }
        for p in pods {
            self.upsert(p, at, false);
        }
        let keys: Vec<AppKey> = self.snap.apps.keys().cloned().collect();
        for key in keys {
            let Some(app) = self.snap.apps.get(&key) else {
                continue;
            };
            let vanished: Vec<i64> = app
                .executors
                .values()
                .filter(|e| {
                    e.gone.is_none() && !present.contains(&(key.0.clone(), key.1.clone(), e.id))
                })
                // Precise: the list must be newer than the version at which we last saw it.
                .filter(|e| match (list_rv, e.last_rv) {
                    (Some(l), Some(seen)) => l > seen,
                    _ => true,
                })
                .map(|e| e.id)
                .collect();
            let app = Arc::make_mut(self.snap.apps.get_mut(&key).expect("app exists"));
            app.unregistered
                .retain(|name, _| present_names.contains(&(key.0.clone(), name.clone())));
            let delta = chrono::Duration::from_std(app.config.missing_pod_detect_delta)
                .unwrap_or(chrono::Duration::seconds(30));
            let poll = chrono::Duration::from_std(app.config.api_polling_interval)
                .unwrap_or(chrono::Duration::seconds(30));
            let config = app.config.clone();
            for id in vanished {
                let Some(rec) = app.executors.get_mut(&id) else {
                    continue;
                };
                let rec = Arc::make_mut(rec);
                let verdict = spark_missing_verdict(rec, at, delta, poll);
                rec.gone = Some(Gone::Missing {
                    at,
                    list_rv,
                    spark_verdict: verdict,
                });
                push_history(
                    rec,
                    Transition {
                        at,
                        state: rec.pod_state,
                        note: Some("missing".to_owned()),
                    },
                );
                let events = events_of(&self.events, &rec.pod.namespace, &rec.pod.name);
                let note = refresh(rec, &events, &config, None, at);
                let text = if rec.verdict.missing {
                    format!("executor {id} missing: absent from a full LIST with no deletion seen")
                } else {
                    format!(
                        "executor {id}: pod absent from a full LIST (its deletion was not seen); {}",
                        explained_by(rec)
                    )
                };
                app.log(at, Some(id), note.unwrap_or(text));
            }
        }
    }

    fn event(&mut self, event: PodEvent, at: Time) {
        let key = (event.namespace.clone(), event.object_name.clone());
        let q = self.events.entry(key.clone()).or_default();
        // An updated event (count, lastTimestamp) replaces the previous copy of itself.
        q.retain(|e| {
            !(e.reason == event.reason
                && e.message == event.message
                && e.first_seen == event.first_seen)
        });
        q.push_back(event.clone());
        while q.len() > MAX_EVENTS {
            q.pop_front();
        }
        // Attach to the executor it is about, and re-diagnose it.
        let mut found: Option<(AppKey, i64)> = None;
        for (k, app) in &self.snap.apps {
            if k.0 != key.0 {
                continue;
            }
            if let Some(rec) = app
                .executors
                .values()
                .find(|e| e.pod.name == key.1 && event.is_about(&e.pod))
            {
                found = Some((k.clone(), rec.id));
                break;
            }
        }
        if let Some((k, id)) = found {
            let events: Vec<PodEvent> = self
                .events
                .get(&key)
                .map(|q| q.iter().cloned().collect())
                .unwrap_or_default();
            let app = Arc::make_mut(self.snap.apps.get_mut(&k).expect("app exists"));
            let config = app.config.clone();
            if let Some(rec) = app.executors.get_mut(&id) {
                let rec = Arc::make_mut(rec);
                if let Some(note) = refresh(rec, &events, &config, None, at) {
                    app.log(at, Some(id), note);
                }
            }
        }
    }

    fn tick(&mut self, at: Time) {
        // Rules that depend on time (ContainerCreating stuck, finalizers overdue) refresh:
        // only the executors they can apply to.
        let keys: Vec<AppKey> = self.snap.apps.keys().cloned().collect();
        for k in keys {
            let due: Vec<i64> = self.snap.apps[&k]
                .executors
                .values()
                .filter(|e| {
                    e.gone.is_none()
                        && (e.pod_state == ExecutorState::Pending || e.pod.deletion.is_some())
                })
                .map(|e| e.id)
                .collect();
            if !due.is_empty() {
                self.refresh_some(&k, &due, at);
            }
        }
    }

    /// Recomputes the verdicts of these executors of one app.
    fn refresh_some(&mut self, key: &AppKey, ids: &[i64], at: Time) {
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = Arc::make_mut(app);
        let config = app.config.clone();
        let mut notes = Vec::new();
        for id in ids {
            let Some(rec) = app.executors.get_mut(id) else {
                continue;
            };
            let events = events_of(&self.events, &rec.pod.namespace, &rec.pod.name);
            let rec = Arc::make_mut(rec);
            notes.extend(refresh(rec, &events, &config, None, at).map(|n| (rec.id, n)));
        }
        for (id, text) in notes {
            app.log(at, Some(id), text);
        }
    }

    fn rediagnose_app(&mut self, key: &AppKey, at: Time) {
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = Arc::make_mut(app);
        let config = app.config.clone();
        let mut notes = Vec::new();
        for rec in app.executors.values_mut() {
            let events = events_of(&self.events, &rec.pod.namespace, &rec.pod.name);
            let rec = Arc::make_mut(rec);
            if !matches!(rec.gone, Some(Gone::DriverOnly { .. })) {
                let resolved = config.classify_options().resolve(&rec.pod);
                rec.pod_state = classify(&rec.pod, &resolved.config);
                rec.spark_container = resolved.config.spark_container.clone();
            }
            notes.extend(refresh(rec, &events, &config, None, at).map(|n| (rec.id, n)));
        }
        for (id, text) in notes {
            app.log(at, Some(id), text);
        }
    }

    /// The driver's executor list: attached per id, executors only the driver knows become
    /// tombstones with Spark's reason, and every executor of the app is reconciled.
    fn driver_view(&mut self, ns: &str, app_id: &str, view: DriverView, at: Time) {
        let app = self.app_mut(ns, app_id);
        let previous = app.driver_api.clone();
        let executors = match view {
            DriverView::Unavailable { reason } => {
                if previous.as_ref().and_then(|p| p.unavailable.as_ref()) != Some(&reason) {
                    app.log(at, None, format!("driver view unavailable: {reason}"));
                }
                app.driver_api = Some(DriverApiState {
                    at,
                    unavailable: Some(reason),
                    last_ok: previous.as_ref().and_then(|p| p.last_ok),
                    active: previous.as_ref().map_or(0, |p| p.active),
                });
                return;
            }
            DriverView::Ok { executors } => executors,
        };
        if previous.as_ref().is_some_and(|p| p.unavailable.is_some()) {
            app.log(at, None, "driver view available again".to_owned());
        }
        app.driver_api = Some(DriverApiState {
            at,
            unavailable: None,
            last_ok: Some(at),
            active: executors.iter().filter(|e| e.active).count(),
        });
        let prefix = app
            .executors
            .values()
            .find(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })))
            .and_then(|e| e.pod.name.rsplit_once("-exec-").map(|(p, _)| p.to_owned()))
            .or_else(|| app.app_name.clone())
            .unwrap_or_else(|| app_id.to_owned());
        let listed: std::collections::BTreeSet<i64> = executors.iter().map(|e| e.id).collect();
        // Executors whose verdict may change: what the driver says of them changed, or a
        // disagreement may have come due with time.
        let mut due = Vec::new();
        let mut fresh = Vec::new();
        for d in executors {
            match app.executors.get_mut(&d.id) {
                Some(rec) => {
                    let rec = Arc::make_mut(rec);
                    let changed = rec
                        .driver
                        .as_ref()
                        .is_none_or(|old| driver_gist(old.exec.as_ref()) != driver_gist(Some(&d)));
                    rec.driver = Some(DriverSeen { at, exec: Some(d) });
                    if changed || may_come_due(rec) {
                        due.push(rec.id);
                    }
                }
                None => fresh.push(d),
            }
        }
        let key = (ns.to_owned(), app_id.to_owned());
        for d in fresh {
            let id = d.id;
            let name = format!("{prefix}-exec-{id}");
            let text = match &d.remove_reason {
                Some(r) => format!(
                    "executor {id} known only from the driver: {}",
                    reason_headline(r)
                ),
                None => format!("executor {id} known only from the driver (active there)"),
            };
            let events = events_of(&self.events, ns, &name);
            let app = Arc::make_mut(self.snap.apps.get_mut(&key).expect("app exists"));
            let config = app.config.clone();
            app.executors.insert(
                id,
                Arc::new(driver_only(ns, app_id, &name, d, &events, &config, at)),
            );
            app.log(at, Some(id), text);
        }
        let app = Arc::make_mut(self.snap.apps.get_mut(&key).expect("app exists"));
        for rec in app.executors.values_mut() {
            if !listed.contains(&rec.id) {
                let rec = Arc::make_mut(rec);
                let changed = rec.driver.as_ref().is_none_or(|old| old.exec.is_some());
                rec.driver = Some(DriverSeen { at, exec: None });
                if changed || may_come_due(rec) {
                    due.push(rec.id);
                }
            }
        }
        self.refresh_some(&key, &due, at);
    }
}

/// What of the driver's entry can change a verdict (not task counts or memory figures).
fn driver_gist(d: Option<&DriverExecutor>) -> Option<(bool, Option<&str>, Option<Time>)> {
    d.map(|d| (d.active, d.remove_reason.as_deref(), d.remove_time))
}

/// A pod × driver disagreement that depends on elapsed time may appear now.
fn may_come_due(rec: &ExecutorRecord) -> bool {
    let exec = rec.driver.as_ref().and_then(|d| d.exec.as_ref());
    match exec {
        // Active in the driver, pod gone: `driver-lost-pod` after Spark's grace.
        Some(d) if d.active => rec.gone.is_some() && !rec.verdict.has(Code::DriverLostPod),
        // Removed, pod still Running: `zombie` after a while.
        Some(_) => {
            rec.gone.is_none()
                && rec.pod_state == ExecutorState::Running
                && !rec.verdict.has(Code::Zombie)
        }
        // Not listed, pod Running: `unregistered` after a while.
        None => {
            rec.gone.is_none()
                && rec.pod_state == ExecutorState::Running
                && !rec.verdict.has(Code::Unregistered)
        }
    }
}

/// A tombstone for an executor only the driver knows: its pod rebuilt from Spark's removal
/// message, so the same rules read its exit.
fn driver_only(
    ns: &str,
    app_id: &str,
    name: &str,
    d: DriverExecutor,
    events: &[PodEvent],
    config: &AppConfig,
    at: Time,
) -> ExecutorRecord {
    let pod = diagnose::driver::pod_from_reason(ns, app_id, name, &d);
    let resolved = config.classify_options().resolve(&pod);
    let state = classify(&pod, &resolved.config);
    let mut rec = ExecutorRecord {
        id: d.id,
        spark_container: resolved.config.spark_container.clone(),
        pod: Arc::new(pod),
        pod_state: state,
        first_seen: at,
        last_seen: at,
        last_rv: None,
        history: VecDeque::from([Transition {
            at,
            state,
            note: Some("known only from the driver".to_owned()),
        }]),
        events: VecDeque::new(),
        ended: None,
        first_deletion: None,
        gone: Some(Gone::DriverOnly { at }),
        log_tail: None,
        driver: Some(DriverSeen { at, exec: Some(d) }),
        killed_by_tool: false,
        verdict: Verdict::default(),
    };
    refresh(&mut rec, events, config, Some(&resolved), at);
    rec
}

/// Maps with `(String, String)` keys as lists of pairs (JSON keys must be strings).
mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<V: Serialize, S: Serializer>(
        m: &BTreeMap<(String, String), V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<(String, String), V>, D::Error> {
        let v: Vec<((String, String), V)> = Vec::deserialize(d)?;
        Ok(v.into_iter().collect())
    }
}

fn push_history(rec: &mut ExecutorRecord, t: Transition) {
    rec.history.push_back(t);
    while rec.history.len() > MAX_HISTORY {
        rec.history.pop_front();
    }
}

fn is_ending(state: ExecutorState) -> bool {
    matches!(state, ExecutorState::Failed | ExecutorState::Succeeded)
}

/// Recomputes the verdict from all the evidence the record holds. Returns a timeline line
/// when the verdict changed in a way worth saying: a missing verdict withdrawn because a
/// witness explained the disappearance, or a new pod × driver disagreement.
fn refresh(
    rec: &mut ExecutorRecord,
    events: &[PodEvent],
    config: &AppConfig,
    resolved: Option<&Resolved>,
    now: Time,
) -> Option<String> {
    let mut evs: Vec<PodEvent> = events
        .iter()
        .filter(|e| e.is_about(&rec.pod))
        .cloned()
        .collect();
    evs.sort_by(PodEvent::chronological);
    if evs.len() > MAX_EVENTS {
        evs.drain(..evs.len() - MAX_EVENTS);
    }
    let missing = match &rec.gone {
        Some(Gone::Missing {
            list_rv,
            spark_verdict,
            ..
        }) => Some(diagnose::missing(rec.last_rv, *list_rv, spark_verdict)),
        _ => None,
    };
    let running_since = (rec.pod_state == ExecutorState::Running)
        .then(|| {
            rec.history
                .iter()
                .rev()
                .take_while(|t| t.state == ExecutorState::Running)
                .last()
                .map(|t| t.at)
        })
        .flatten();
    let lost_grace =
        chrono::Duration::from_std(config.missing_pod_detect_delta + config.api_polling_interval)
            .unwrap_or(chrono::Duration::seconds(60));
    let options = config.classify_options();
    // The caller's resolution of this pod under this config, when it has one.
    let own;
    let resolved = match resolved {
        Some(r) => r,
        None => {
            own = options.resolve(&rec.pod);
            &own
        }
    };
    let before = std::mem::take(&mut rec.verdict);
    let v = verdict(&Evidence {
        id: rec.id,
        pod: &rec.pod,
        resolved,
        pod_state: rec.pod_state,
        ended: rec.ended.as_deref(),
        first_deletion: rec.first_deletion.as_ref(),
        events: &evs,
        options: &options,
        gone: match rec.gone {
            None => PodGone::No,
            Some(Gone::Deleted { .. }) => PodGone::Deleted,
            Some(Gone::Missing { .. }) => PodGone::Missing,
            Some(Gone::DriverOnly { .. }) => PodGone::DriverOnly,
        },
        missing: missing.as_ref(),
        driver: rec.driver.as_ref(),
        log_tail: rec.log_tail.as_deref().map(Vec::as_slice),
        killed_by_tool: rec.killed_by_tool,
        running_since,
        gone_at: rec.gone.as_ref().map(Gone::at),
        lost_grace,
        delete_on_termination: config.delete_on_termination,
        now,
    });
    rec.events = evs.into();
    let mut notes = Vec::new();
    if before.missing && !v.missing {
        notes.push(format!(
            "executor {} no longer missing: {}",
            rec.id,
            explained_by_verdict(&v)
        ));
    }
    for f in &v.findings {
        if matches!(
            f.code,
            Code::DriverLostPod | Code::Unregistered | Code::Zombie
        ) && !before.has(f.code)
        {
            notes.push(format!("executor {}: {}", rec.id, f.summary));
        }
    }
    rec.verdict = v;
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// What explains an executor's disappearance, for the timeline.
fn explained_by(rec: &ExecutorRecord) -> String {
    explained_by_verdict(&rec.verdict)
}

fn explained_by_verdict(v: &Verdict) -> String {
    match v.cause() {
        Some(f) => format!(
            "{} ({}; from the {})",
            v.ending.describe(),
            f.code,
            f.witness.as_str()
        ),
        None => v.ending.describe().to_owned(),
    }
}

/// The events kept about one pod (by namespace and name).
fn events_of(
    events: &BTreeMap<(String, String), VecDeque<PodEvent>>,
    namespace: &str,
    pod: &str,
) -> Vec<PodEvent> {
    events
        .get(&(namespace.to_owned(), pod.to_owned()))
        .map(|q| q.iter().cloned().collect())
        .unwrap_or_default()
}

/// When Spark's rule declares a vanished executor lost: the first poll more than
/// `missingPodDetectDelta` after its registration (approximated by the container start).
fn spark_missing_verdict(
    rec: &ExecutorRecord,
    at: Time,
    delta: chrono::Duration,
    poll: chrono::Duration,
) -> String {
    let registered = rec
        .pod
        .container_status(&rec.spark_container)
        .and_then(|c| match &c.state {
            crate::model::ContainerState::Running { started_at } => *started_at,
            _ => None,
        })
        .or_else(|| {
            rec.history
                .iter()
                .find(|t| t.state == ExecutorState::Running)
                .map(|t| t.at)
        })
        .unwrap_or(rec.first_seen);
    let threshold = registered + delta;
    if at > threshold {
        format!(
            "Spark declares it lost (exit -1, not counted against the app) at its first poll after {} (registration + missingPodDetectDelta); that moment has passed",
            crate::model::fmt_time(&threshold)
        )
    } else {
        format!(
            "Spark declares it lost at its first poll after {} (registration + missingPodDetectDelta, polls every {}s)",
            crate::model::fmt_time(&threshold),
            poll.num_seconds()
        )
    }
}

fn transition_text(
    id: i64,
    state: ExecutorState,
    pod: &ExecutorPod,
    resolved: &Resolved,
    note: Option<&str>,
) -> String {
    let mut s = format!("executor {id} {state}");
    let cs = pod.container_status(&resolved.config.spark_container);
    if let Some(t) = cs.and_then(|c| c.terminated()) {
        s.push_str(&format!(" (exit {}", t.exit_code));
        if let Some(r) = &t.reason {
            s.push_str(&format!(", {r}"));
        }
        s.push(')');
    } else if let Some(r) = cs.and_then(|c| c.waiting_reason()) {
        s.push_str(&format!(" ({r})"));
    } else if let Some(r) = pod.status.as_ref().and_then(|st| st.reason.as_deref()) {
        s.push_str(&format!(" ({r})"));
    }
    if let Some(n) = note {
        s.push_str(&format!(": {n}"));
    }
    s
}

#[cfg(test)]
mod tests;
