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

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use evidence::*;
use noted::{AppNote, changes_verdicts};
use relist::Present;
use serde::{Deserialize, Serialize};
use spark_triage_core::classify::classify;
use spark_triage_core::diagnose::Finding;
use spark_triage_core::diagnose::nodes::node_patterns;
use spark_triage_core::diagnose::verdict::{ToolKill, Verdict, heartbeat_removals};
use spark_triage_core::model::driver::{DriverSeen, reason_headline};
use spark_triage_core::model::{ExecIdLabel, ExecutorPod, ExecutorState, PodEvent, Role, Time};

use crate::source::{Health, SourceEvent, SourceKind};

/// Transitions kept per executor.
pub const MAX_HISTORY: usize = 32;
/// Events kept per executor.
pub const MAX_EVENTS: usize = 16;
/// Timeline entries kept per application.
pub const MAX_TIMELINE: usize = 2000;
/// Executors whose captured log tails are kept (the oldest are dropped).
pub const MAX_LOGS: usize = 500;
/// Log lines kept per executor (as many as are fetched).
pub use crate::source::MAX_LOG_TAIL_LINES as LOG_LINES;

mod app_config;
mod app_record;
mod cluster;
mod derived;
mod evidence;
mod forget;
pub use forget::MAX_KEPT;
mod health_and_driver;
mod incident;
mod noted;
mod operators;
mod pod_cost;
mod pods;
mod records;
mod relist;
mod restart;
pub mod times;

pub use app_config::{AppConfig, SettingsFrom, Sizing};
pub use app_record::advice_case;
pub use incident::{
    BudgetView, Incident, Natural, Trouble, by_trouble, cause_label, ended_at, suggestion,
};
pub use records::{
    AllocationSeen, AppKey, AppRecord, Counts, DRIVER, DriverApiState, DriverInfo, ExecutorRecord,
    Finished, Freshness, Gone, KeptDriver, ScopeLabel, Snapshot, TimelineEntry, Transition,
    Trimmed,
};

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
    /// Kills through spark-triage the local actions log holds (`SourceEvent::KillsLogged`).
    #[serde(default, with = "arc_pairs")]
    logged_kills: LoggedKills,
    /// The most executors kept whole, when not [`MAX_KEPT`] (tests).
    #[serde(skip)]
    max_kept: Option<usize>,
    /// Past the bound with too few ended to let go: the total at which to look again.
    #[serde(skip)]
    bound_next: usize,
}

/// Kills through spark-triage by (namespace, pod), as the local actions log has them.
pub type LoggedKills = Arc<BTreeMap<(String, String), ToolKill>>;

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that keeps at most `max_kept` executors whole (not [`MAX_KEPT`]).
    #[cfg(test)]
    pub(crate) fn bounded(max_kept: usize) -> Self {
        Self {
            max_kept: Some(max_kept),
            ..Self::default()
        }
    }

    /// A store holding a snapshot (to report on it; it has no pending pod events).
    pub(crate) fn from_snapshot(snap: Snapshot) -> Self {
        Self {
            snap,
            ..Self::default()
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
        let changes_verdicts = changes_verdicts(&ev);
        self.snap.now = Some(self.snap.now.map_or(at, |n| n.max(at)));
        self.snap.applied += 1;
        match ev {
            SourceEvent::PodUpserted { pod, at } => self.upsert(pod, at, false),
            SourceEvent::PodDeleted { pod, at } => self.upsert(pod, at, true),
            SourceEvent::PodsListed {
                pods,
                resource_version,
                at,
            } => self.replace(pods, resource_version, at),
            SourceEvent::PodsListing { pods, at } => self.listing(pods, at),
            SourceEvent::PodsPresent {
                pods,
                resource_version,
                at,
            } => self.present(&pods, resource_version, at),
            SourceEvent::EventSeen { event, at } => self.event(*event, at),
            SourceEvent::DriverConfig {
                namespace,
                app_id,
                properties,
                from,
                ..
            } => {
                let app = self.app_mut(&namespace, &app_id);
                app.config = AppConfig::from_properties(&properties, from);
                self.rediagnose_app(&(namespace, app_id), at);
            }
            SourceEvent::SourceHealth { source, health, at } => self.health(source, health, at),
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
            } => self.action_taken((namespace, app_id), text, killed, at),
            SourceEvent::KillsLogged { kills, .. } => self.kills_logged(kills, at),
            SourceEvent::DriverHeartbeats {
                namespace,
                app_id,
                executors,
                at,
            } => {
                let app = self.app_mut(&namespace, &app_id);
                let before = app.heard_heartbeats.len();
                app.heard_heartbeats.extend(executors);
                if app.heard_heartbeats.len() > before {
                    self.rediagnose_app(&(namespace, app_id), at);
                }
            }
            SourceEvent::DriverExecutors {
                namespace,
                app_id,
                view,
                at,
            } => self.driver_view(&namespace, &app_id, view, at),
            SourceEvent::ScopeNote { text, .. } => self.snap.scope_note = Some(text),
            SourceEvent::ScopeChanged { context, scope, at } => {
                // Nothing of the previous scope is kept; the clock and the count go on.
                let (now, applied) = (self.snap.now, self.snap.applied);
                *self = Self::default();
                self.snap.now = now;
                self.snap.applied = applied;
                self.snap.scope = Some(ScopeLabel {
                    context,
                    scope,
                    since: at,
                });
            }
            SourceEvent::QuotasListed {
                namespace, quotas, ..
            } => self.quotas(namespace, quotas),
            SourceEvent::GroupsListed {
                group_kind,
                namespace,
                objects,
                unknown,
                complete,
                at,
            } => self.groups_listed(
                group_kind,
                namespace.as_deref(),
                objects,
                (unknown, complete),
                at,
            ),
            SourceEvent::DriverRefused {
                namespace,
                app_id,
                line,
                at,
            } => self.driver_refused((namespace, app_id), line, at),
            ev @ SourceEvent::AppCost { .. } => self.app_cost(ev),
            ev @ (SourceEvent::DriverAllocation { .. } | SourceEvent::DriverStreaming { .. }) => {
                self.driver_said(ev)
            }
            SourceEvent::OperatorAppsListed {
                operator_kind,
                namespace,
                objects,
                unknown,
                complete,
                at,
            } => self.operators_listed(
                operator_kind,
                namespace.as_deref(),
                objects,
                (unknown, complete),
                at,
            ),
            SourceEvent::AppNoted {
                namespace,
                app_id,
                app_name,
                text,
                end,
                unfinished,
                spark_version,
                at,
            } => self.app_noted(
                (namespace, app_id),
                AppNote {
                    app_name,
                    text,
                    end,
                    unfinished,
                    spark_version,
                },
                at,
            ),
            SourceEvent::Tick { at } => self.tick(at),
            SourceEvent::Forget { before, .. } => self.forget(before),
        }
        self.bound();
        if changes_verdicts {
            self.settle_nodes();
        }
    }

    /// Node patterns across apps: recomputed from each app's (memoized) node failures, and
    /// given to the apps they involve only when they change.
    fn settle_nodes(&mut self) {
        let patterns = node_patterns(self.snap.apps.values().flat_map(|a| a.node_failures()));
        if patterns == self.snap.node_patterns {
            return;
        }
        let mut touched: std::collections::BTreeSet<AppKey> = std::collections::BTreeSet::new();
        for p in self.snap.node_patterns.iter().chain(&patterns) {
            touched.extend(
                p.apps()
                    .into_iter()
                    .map(|(ns, id)| (ns.to_owned(), id.to_owned())),
            );
        }
        for key in touched {
            let findings: Vec<Finding> = patterns
                .iter()
                .filter(|p| p.apps().contains(&(key.0.as_str(), key.1.as_str())))
                .map(|p| p.finding(&key.0, &key.1))
                .collect();
            if let Some(app) = self.snap.apps.get_mut(&key)
                && app.node_findings != findings
            {
                derived::edit(app).node_findings = findings;
            }
        }
        self.snap.node_patterns = patterns;
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
        if found.is_none() {
            let driver_of: Option<AppKey> = self
                .snap
                .apps
                .iter()
                .find(|(k, a)| k.0 == namespace && a.driver.as_ref().is_some_and(|d| d.pod == pod))
                .map(|(k, _)| k.clone());
            if let Some(k) = driver_of {
                let at = self.snap.now.unwrap_or_default();
                let app = derived::edit(self.snap.apps.get_mut(&k).expect("app exists"));
                let removals = heartbeat_removals(&lines);
                let judges = !removals.is_empty();
                if let Some(d) = &mut app.driver {
                    // With what the running driver's log said before (its tail then may
                    // hold lines this one no longer does).
                    let mut all = (*d.heartbeat_removals).clone();
                    all.extend(removals);
                    d.heartbeat_removals = Arc::new(all);
                    d.log_tail = Some(Arc::new(lines));
                }
                self.driver_changed(&k, at);
                // Its words judge its executors too ("Removing executor N with no recent
                // heartbeats" settles a "killed by driver").
                if judges {
                    self.rediagnose_app(&k, at);
                }
            }
            return;
        }
        let Some((key, id)) = found else { return };
        if let Some(rec) = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"))
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
                && let Some(rec) = derived::edit(app).executors.get_mut(&old)
            {
                Arc::make_mut(rec).log_tail = None;
            }
        }
    }

    fn app_mut(&mut self, ns: &str, app_id: &str) -> &mut AppRecord {
        let quotas = &self.snap.quotas;
        let app = self
            .snap
            .apps
            .entry((ns.to_owned(), app_id.to_owned()))
            .or_insert_with(|| {
                let q = quotas.get(ns).cloned().unwrap_or_default();
                Arc::new(AppRecord::new(ns, app_id, q))
            });
        derived::edit(app)
    }

    /// These executors' pods are absent from the complete LIST at `at` with no deletion
    /// seen: missing (and what Spark will make of it).
    pub(super) fn executors_missing(
        &mut self,
        key: &AppKey,
        ids: Vec<i64>,
        list_rv: Option<u64>,
        at: Time,
    ) {
        if ids.is_empty() {
            return;
        }
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = derived::edit(app);
        let ctx = AppCtx::of(app, &self.logged_kills);
        for id in ids {
            let Some(rec) = app.executors.get_mut(&id) else {
                continue;
            };
            let rec = Arc::make_mut(rec);
            let verdict = spark_missing_verdict(rec, at, &ctx.config);
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
                    // Absent from this LIST: when it went is not known, only that it had.
                    clock: times::Clock::Seen,
                    seen: None,
                },
            );
            let events = events_of(&self.events, &rec.pod);
            let note = refresh(rec, &events, &ctx, None, at);
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

    /// A source's health (an outage is a line in every timeline).
    fn health(&mut self, source: SourceKind, health: Health, at: Time) {
        self.outage(source, &health, at);
        self.snap.health.insert(source, health);
    }

    fn tick(&mut self, at: Time) {
        // Rules that depend on time (ContainerCreating stuck, finalizers overdue) refresh:
        // only the executors they can apply to.
        let keys: Vec<AppKey> = self.snap.apps.keys().cloned().collect();
        for k in &keys {
            let a = &self.snap.apps[k];
            // A waiting driver's wait grows; executors that outlive the driver become orphans.
            let waiting = a.driver_end.is_none()
                && a.driver
                    .as_ref()
                    .and_then(|d| d.last.as_deref())
                    .is_some_and(|p| p.phase() == Some("Pending"));
            let outliving = a.driver_end.is_some()
                && a.executors
                    .values()
                    .any(|e| e.gone.is_none() && e.pod.deletion.is_none());
            if waiting || outliving {
                derived::edit(self.snap.apps.get_mut(k).expect("app exists")).as_of = Some(at);
            }
        }
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
        let app = derived::edit(app);
        let ctx = AppCtx::of(app, &self.logged_kills);
        let mut notes = Vec::new();
        for id in ids {
            let Some(rec) = app.executors.get_mut(id) else {
                continue;
            };
            let events = events_of(&self.events, &rec.pod);
            let rec = Arc::make_mut(rec);
            notes.extend(refresh(rec, &events, &ctx, None, at).map(|n| (rec.id, n)));
        }
        for (id, text) in notes {
            app.log(at, Some(id), text);
        }
    }

    fn rediagnose_app(&mut self, key: &AppKey, at: Time) {
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = derived::edit(app);
        let ctx = AppCtx::of(app, &self.logged_kills);
        let mut notes = Vec::new();
        for rec in app.executors.values_mut() {
            let events = events_of(&self.events, &rec.pod);
            let rec = Arc::make_mut(rec);
            if !matches!(rec.gone, Some(Gone::DriverOnly { .. })) {
                let resolved = ctx.config.classify_options().resolve(&rec.pod);
                rec.pod_state = classify(&rec.pod, &resolved.config);
                rec.spark_container = (&resolved.config.spark_container).into();
            }
            notes.extend(refresh(rec, &events, &ctx, None, at).map(|n| (rec.id, n)));
        }
        for (id, text) in notes {
            app.log(at, Some(id), text);
        }
    }
}

/// Maps with `(String, String)` keys as lists of pairs (JSON keys must be strings).
/// [`pairs`] behind an `Arc` (the logged kills, shared with every verdict's context).
mod arc_pairs {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type ByPair<V> = Arc<BTreeMap<(String, String), V>>;

    pub fn serialize<V: Serialize, S: Serializer>(m: &ByPair<V>, s: S) -> Result<S::Ok, S::Error> {
        super::pairs::serialize(m, s)
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<ByPair<V>, D::Error> {
        super::pairs::deserialize(d).map(Arc::new)
    }
}

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

#[cfg(test)]
mod tests;
