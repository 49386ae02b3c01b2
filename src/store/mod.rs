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
};

use serde::{Deserialize, Serialize};

use crate::source::{SourceEvent, SourceKind};
use spark_triage_core::{
    classify::classify,
    diagnose::verdict::Verdict,
    model::{
        ExecIdLabel, ExecutorPod, ExecutorState, PodEvent, Role, Time,
        driver::{DriverSeen, reason_headline},
    },
};

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

mod derived;
mod evidence;
mod forget;
mod health_and_driver;
mod incident;
mod records;
mod restart;
pub mod times;

use evidence::*;
pub use incident::{Incident, cause_label, ended_at, suggestion};
pub use records::{
    AppConfig, AppKey, AppRecord, Counts, DRIVER, DriverApiState, DriverInfo, ExecutorRecord,
    Finished, Freshness, Gone, ScopeLabel, Snapshot, TimelineEntry, Transition,
};

/// A pod a complete LIST named.
struct Present<'a> {
    namespace: &'a str,
    name: &'a str,
    app_id: Option<&'a str>,
    executor_id: Option<i64>,
    uid: Option<&'a str>,
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
        // Events that can add or remove a node failure (so the node patterns): a pod that
        // failed or lost its node, a relist, the driver's list, an eviction or a kubelet's warning,
        // a forget, and every tick (the catch-all). Others (a running pod's update) cannot,
        // and at 10,000 executors a pass per event would cost the live view.
        let changes_verdicts = match &ev {
            SourceEvent::PodUpserted { pod, .. } | SourceEvent::PodDeleted { pod, .. } => {
                matches!(pod.phase(), Some("Failed" | "Unknown"))
            }
            // An eviction, or a kubelet's warning: the node (or time) of a gone executor.
            SourceEvent::EventSeen { event, .. } => {
                event.reason_is("Evicted") || (event.host.is_some() && event.is_warning())
            }
            SourceEvent::PodsListed { .. }
            | SourceEvent::PodsPresent { .. }
            | SourceEvent::DriverExecutors { .. }
            | SourceEvent::Tick { .. }
            | SourceEvent::Forget { .. } => true,
            _ => false,
        };
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
            SourceEvent::PodsPresent {
                pods,
                resource_version,
                at,
            } => {
                let present = pods
                    .iter()
                    .map(|p| Present {
                        namespace: &p.namespace,
                        name: &p.name,
                        app_id: p.app_id.as_deref(),
                        executor_id: p.executor_id,
                        uid: p.uid.as_deref(),
                    })
                    .collect();
                self.mark_missing(present, resource_version, at);
            }
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
            SourceEvent::Tick { at } => self.tick(at),
            SourceEvent::Forget { before, .. } => self.forget(before),
        }
        if changes_verdicts {
            self.settle_nodes();
        }
    }

    /// Node patterns across apps: recomputed from each app's (memoized) node failures, and
    /// given to the apps they involve only when they change.
    fn settle_nodes(&mut self) {
        use spark_triage_core::diagnose::nodes::node_patterns;
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
            let findings: Vec<spark_triage_core::diagnose::Finding> = patterns
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
                if let Some(d) = &mut app.driver {
                    d.log_tail = Some(Arc::new(lines));
                }
                self.driver_changed(&k, at);
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

    /// A list of ResourceQuotas: in one namespace, or (`None`) in all of them.
    fn quotas(&mut self, namespace: Option<String>, quotas: Vec<spark_triage_core::model::Quota>) {
        match namespace {
            Some(ns) => {
                self.snap.quotas.insert(ns, quotas);
            }
            None => {
                self.snap.quotas.clear();
                for q in quotas {
                    self.snap
                        .quotas
                        .entry(q.namespace.clone())
                        .or_default()
                        .push(q);
                }
            }
        }
        self.snap.quotas.retain(|_, v| !v.is_empty());
        self.snap.applied_quotas = true;
        for app in self.snap.apps.values_mut() {
            let now = self.snap.quotas.get(&app.namespace);
            if now.map_or(!app.quotas.is_empty(), |q| *q != app.quotas) {
                derived::edit(app).quotas = now.cloned().unwrap_or_default();
            }
        }
    }

    /// A list of batch schedulers' objects: each app whose pods name one gets its slice,
    /// and those pods' verdicts are recomputed when the slice changed.
    fn groups_listed(
        &mut self,
        kind: spark_triage_core::model::GroupKind,
        namespace: Option<&str>,
        objects: Vec<spark_triage_core::model::SchedGroup>,
        (unknown, complete): (Option<String>, bool),
        at: Time,
    ) {
        self.snap
            .groups
            .apply_list(kind, namespace, objects, unknown, complete);
        let keys: Vec<AppKey> = self
            .snap
            .apps
            .iter()
            .filter(|(k, a)| namespace.is_none_or(|ns| k.0 == ns) && a.names_groups())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.settle_groups(&key, at);
        }
    }

    /// Gives an app its slice of the group objects; re-verdicts its pods that name groups
    /// when the slice changed.
    fn settle_groups(&mut self, key: &AppKey, at: Time) {
        let Some(app) = self.snap.apps.get(key) else {
            return;
        };
        let mut slice = self.snap.groups.slice(app.pods_naming_groups());
        slice.events_read = true; // the store's sources watch the pods' events
        if slice == *app.groups {
            return;
        }
        let ids: Vec<i64> = app
            .executors
            .values()
            .filter(|e| !e.pod.groups.is_empty())
            .map(|e| e.id)
            .collect();
        derived::edit(self.snap.apps.get_mut(key).expect("app exists")).groups = Arc::new(slice);
        self.refresh_some(key, &ids, at);
        self.driver_changed(key, at);
    }

    /// A pod naming groups: their kinds are wanted, and its app's slice takes its objects.
    fn note_groups(&mut self, key: &AppKey, pod: &ExecutorPod) {
        if pod.groups.is_empty() && pod.scheduler_name.is_none() {
            return;
        }
        self.snap
            .groups_wanted
            .extend(pod.groups.iter().map(|r| r.kind));
        let mine = self.snap.groups.slice([pod]);
        let app = self.app_mut(&key.0, &key.1);
        let g = Arc::make_mut(&mut app.groups);
        g.events_read = true; // the store's sources watch the pods' events
        g.unknown = mine.unknown;
        g.listed = mine.listed;
        for o in mine.objects {
            if !g
                .objects
                .iter()
                .any(|x| x.kind == o.kind && x.namespace == o.namespace && x.name == o.name)
            {
                g.objects.push(o);
            }
        }
        // The native gang counts its members: only apps with such pods pay for it.
        if pod
            .groups
            .iter()
            .any(|r| r.kind == spark_triage_core::model::GroupKind::Workload)
        {
            let mut pods: Vec<ExecutorPod> = app
                .pods_naming_groups()
                .filter(|p| p.name != pod.name)
                .cloned()
                .collect();
            pods.push(pod.clone());
            Arc::make_mut(&mut app.groups).count_members(&pods);
        }
    }

    fn upsert(&mut self, pod: Arc<ExecutorPod>, at: Time, deleted: bool) {
        let Some(app_id) = pod.app_id().map(str::to_owned) else {
            return; // not a Spark pod
        };
        if !deleted && self.already_known(&app_id, &pod) {
            // A relist (or a repeated watch event) of an executor as it was: nothing to
            // recompute, and readers' copies of the app stay shared.
            return;
        }
        if !deleted {
            self.note_groups(&(pod.namespace.to_string(), app_id.clone()), &pod);
        }
        if pod.role() == Some(Role::Driver) {
            self.upsert_driver(&app_id, pod, at, deleted);
            return;
        }
        let ns = pod.namespace.clone();
        let pod_events: Vec<PodEvent> = self
            .events
            .get(&(ns.to_string(), pod.name.clone()))
            .map(|q| q.iter().filter(|e| e.is_about(&pod)).cloned().collect())
            .unwrap_or_default();
        let app = self.app_mut(&ns, &app_id);
        if let Some(n) = pod.label(spark_triage_core::model::LABEL_APP_NAME) {
            app.app_name = Some(n.to_owned());
        }
        if pod.role() != Some(Role::Executor) {
            return;
        }
        app.as_of = Some(at);
        let id = match pod.exec_id_label() {
            ExecIdLabel::Id(id) => id,
            other => {
                let why = match other {
                    ExecIdLabel::Placeholder => {
                        "spark-exec-id is EXECID (id not assigned yet)".to_owned()
                    }
                    ExecIdLabel::Invalid(v) => records::invalid_id_note(&v),
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
        let ctx = AppCtx::of(app);
        let resolved = ctx.config.classify_options().resolve(&pod);
        let state = classify(&pod, &resolved.config);
        let rv = pod.rv();
        let gone = deleted.then_some(Gone::Deleted { at });
        let mut timeline = Vec::new();
        let mut finished = None;
        // The pod of another executor, now labelled with this id: that executor ended there.
        if !deleted
            && let Some((notes, done)) =
                restart::end_predecessor(app, &pod, id, &resolved, &ctx, &pod_events, at)
        {
            timeline.extend(notes);
            finished = Some(done);
        }
        match app.executors.get_mut(&id) {
            // Ended by a restart in place: the pod lives on as the next executor, and a late
            // event still carrying this id must not bring it back to life.
            Some(rec) if !deleted && matches!(rec.gone, Some(Gone::Restarted { .. })) => return,
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
                        namespace: pod.namespace.to_string(),
                        app_id: app_id.clone(),
                        id,
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
                if rec.ended.is_none() && is_ending(state) {
                    rec.ended = Some(pod.clone());
                }
                if rec.first_deletion.is_none() {
                    rec.first_deletion = pod.deletion.clone();
                }
                // The same pod, updated after its DELETED: that deletion was false.
                let withdrawn = (!deleted
                    && matches!(rec.gone, Some(Gone::Deleted { .. }))
                    && (pod.uid.is_none() || rec.pod.uid.is_none() || pod.uid == rec.pod.uid))
                    .then_some(rv.zip(rec.last_rv))
                    .flatten()
                    .filter(|(new, old)| new > old)
                    .map(|(new, _)| new);
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
                } else if let Some(rv) = withdrawn {
                    evidence::withdraw_deletion(rec, at, rv);
                    timeline.push((
                        id,
                        format!("executor {id}: its deletion was false: the pod was updated after it (resourceVersion {rv})"),
                    ));
                }
                rec.spark_container = (&resolved.config.spark_container).into();
                if let Some(note) = refresh(rec, &pod_events, &ctx, Some(&resolved), at) {
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
                    spark_container: (&resolved.config.spark_container).into(),
                    first_deletion: pod.deletion.clone(),
                    ended: None,
                    pod,
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
                        .map(|at| Box::new(DriverSeen { at, exec: None })),
                    killed_by_tool: false,
                    verdict: Verdict::default(),
                };
                if is_ending(state) {
                    rec.ended = Some(rec.pod.clone());
                }
                refresh(&mut rec, &pod_events, &ctx, Some(&resolved), at);
                app.executors.insert(id, Arc::new(rec));
            }
        }
        for (id, text) in timeline {
            app.log(at, Some(id), text);
        }
        self.finished.extend(finished);
    }

    /// The driver pod: the app's driver info, its end told to the executors' verdicts.
    fn upsert_driver(&mut self, app_id: &str, pod: Arc<ExecutorPod>, at: Time, deleted: bool) {
        let key = (pod.namespace.to_string(), app_id.to_owned());
        // A relist of the driver as it was: readers' copies of the app stay shared.
        if !deleted
            && let Some(d) = self.snap.apps.get(&key).and_then(|a| a.driver.as_ref())
            && d.gone.is_none()
            && d.last.as_deref().is_some_and(|p| *p == *pod)
        {
            return;
        }
        // An older driver pod of the same app (a late event of a replaced one, an old failed
        // pod listed beside its resubmission) does not replace the newer one.
        if let Some(cur) = self
            .snap
            .apps
            .get(&key)
            .and_then(|a| a.driver.as_ref())
            .and_then(|d| d.last.as_deref())
            && cur.name != pod.name
            && let (Some(cur_at), Some(new_at)) = (cur.created_at, pod.created_at)
            && new_at < cur_at
        {
            return;
        }
        let events: Vec<PodEvent> = events_of(&self.events, &pod);
        let app = self.app_mut(&pod.namespace, app_id);
        if let Some(n) = pod.label(spark_triage_core::model::LABEL_APP_NAME) {
            app.app_name = Some(n.to_owned());
        }
        app.as_of = Some(at);
        // The same driver pod (same name and uid) keeps what was seen of it; another one (a
        // resubmission under the same app id) starts over.
        let prev = app
            .driver
            .take()
            .filter(|d| d.pod == pod.name && (d.uid.is_none() || d.uid == pod.uid));
        if let (Some(p), Some(new), Some(old)) = (
            prev.as_ref(),
            pod.rv(),
            prev.as_ref()
                .and_then(|p| p.last.as_ref())
                .and_then(|l| l.rv()),
        ) && new < old
        {
            app.driver = Some(p.clone()); // a stale replay: keep ours
            return;
        }
        let resolved = spark_triage_core::classify::ClassifyOptions::default().resolve(&pod);
        let state = classify(&pod, &resolved.config);
        let (mut ended, mut ended_seen, log_tail, gone) = match &prev {
            Some(p) => (p.ended.clone(), p.ended_seen, p.log_tail.clone(), p.gone),
            None => (None, None, None, None),
        };
        let was_over = ended.is_some() || gone.is_some();
        if ended.is_none() && state.is_final() {
            ended = Some(pod.clone());
        }
        // The tool's own sight of the end: final, deleting, or gone.
        if ended_seen.is_none() && (state.is_final() || pod.deletion.is_some() || deleted) {
            ended_seen = Some(at);
        }
        let now_over = ended.is_some() || deleted;
        let mut finished = None;
        if !was_over && now_over {
            // Its log is evidence of how it ended (read when the verdict is not a success).
            finished = Some(Finished {
                namespace: pod.namespace.to_string(),
                app_id: app_id.to_owned(),
                id: records::DRIVER,
                pod: pod.name.clone(),
                container: resolved.config.spark_container.clone(),
                previous: false,
            });
        }
        let phase_changed =
            prev.as_ref().and_then(|p| p.phase.clone()) != pod.phase().map(str::to_owned);
        app.driver = Some(DriverInfo {
            pod: pod.name.clone(),
            phase: if deleted {
                Some("Deleted".to_owned())
            } else {
                pod.phase().map(str::to_owned)
            },
            node: pod.node_name.as_deref().map(str::to_owned),
            hold_until: pod.hold_expires(),
            conf_config_map: pod.conf_config_map.as_deref().map(str::to_owned),
            uid: pod.uid.clone(),
            last: Some(pod.clone()),
            ended,
            ended_seen,
            gone: if deleted {
                Some(records::DriverGoneAt { missing: false, at })
            } else {
                None
            },
            events,
            log_tail,
        });
        if phase_changed || deleted {
            let text = format!(
                "driver {} {}",
                pod.name,
                if deleted {
                    "deleted".to_owned()
                } else {
                    state.as_str().to_owned()
                }
            );
            app.log(at, None, text);
        }
        self.finished.extend(finished);
        self.driver_changed(&key, at);
    }

    /// The driver's evidence changed: its end is recomputed and, when it changed, every
    /// executor's verdict too (an executor's end after the driver's is the driver's).
    fn driver_changed(&mut self, key: &AppKey, at: Time) {
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = derived::edit(app);
        if !app.update_driver_end(at) {
            return;
        }
        if let Some(end) = app.driver_end.clone() {
            app.log(
                at,
                None,
                format!("driver ended ({}): the application is over", end.label),
            );
        }
        self.rediagnose_app(key, at);
    }

    /// The executor's record already holds exactly this pod, at this resourceVersion.
    fn already_known(&self, app_id: &str, pod: &ExecutorPod) -> bool {
        let (Some(id), Some(rv)) = (pod.executor_id(), pod.rv()) else {
            return false;
        };
        self.snap
            .apps
            .get(&(pod.namespace.to_string(), app_id.to_owned()))
            .and_then(|app| app.executors.get(&id))
            .is_some_and(|rec| {
                rec.gone.is_none()
                    && rec.last_rv == Some(rv)
                    && rec.pod.role() == Some(Role::Executor)
                    && *rec.pod == *pod
            })
    }

    /// A full LIST: Spark replaces its snapshot; the tool keeps tombstones and decides
    /// which executors are missing.
    fn replace(&mut self, pods: Vec<Arc<ExecutorPod>>, list_rv: Option<u64>, at: Time) {
        type Key = (String, String, Option<String>, Option<i64>, Option<String>);
        let keys: Vec<Key> = pods
            .iter()
            .map(|p| {
                (
                    p.namespace.to_string(),
                    p.name.clone(),
                    p.app_id().map(str::to_owned),
                    p.executor_id(),
                    p.uid.clone(),
                )
            })
            .collect();
        for p in pods {
            self.upsert(p, at, false);
        }
        let present = keys
            .iter()
            .map(|(namespace, name, app_id, executor_id, uid)| Present {
                namespace,
                name,
                app_id: app_id.as_deref(),
                executor_id: *executor_id,
                uid: uid.as_deref(),
            })
            .collect();
        self.mark_missing(present, list_rv, at);
    }

    /// After a complete LIST (full or metadata-only) of the pods in `present`: executors
    /// not in it, newer than their last sighting and not seen deleted, are missing.
    fn mark_missing(&mut self, present: Vec<Present<'_>>, list_rv: Option<u64>, at: Time) {
        self.snap.full_snapshot_at = Some(at);
        self.snap.list_rv = list_rv;
        let mut present_ids: std::collections::BTreeSet<(&str, &str, i64)> =
            std::collections::BTreeSet::new();
        let mut present_names: std::collections::BTreeSet<(&str, &str)> =
            std::collections::BTreeSet::new();
        for p in &present {
            present_names.insert((p.namespace, p.name));
            if let (Some(app), Some(id)) = (p.app_id, p.executor_id) {
                present_ids.insert((p.namespace, app, id));
            }
        }
        self.withdraw_false_deletions(&present, list_rv, at);
        let keys: Vec<AppKey> = self.snap.apps.keys().cloned().collect();
        for key in keys {
            let Some(app) = self.snap.apps.get(&key) else {
                continue;
            };
            // Executors this scope lists pods of (a selector may leave them all out).
            let pods_in_scope = app
                .executors
                .values()
                .any(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })));
            // Known only from the driver, which still counts it active, and absent from a
            // LIST taken after the driver named it: its pod is gone and Spark has not
            // noticed yet (its next poll will). Never shown running meanwhile.
            let unnoticed = |e: &ExecutorRecord| {
                pods_in_scope
                    && matches!(e.gone, Some(Gone::DriverOnly { at: named }) if named < at)
                    && e.driver
                        .as_ref()
                        .and_then(|d| d.exec.as_ref())
                        .is_some_and(|x| x.active)
            };
            let vanished: Vec<i64> = app
                .executors
                .values()
                .filter(|e| {
                    (e.gone.is_none() || unnoticed(e))
                        && !present_ids.contains(&(key.0.as_str(), key.1.as_str(), e.id))
                })
                // Precise: the list must be newer than the version at which we last saw it.
                .filter(|e| match (list_rv, e.last_rv) {
                    (Some(l), Some(seen)) => l > seen,
                    _ => true,
                })
                .map(|e| e.id)
                .collect();
            let unregistered_gone = app
                .unregistered
                .keys()
                .any(|name| !present_names.contains(&(key.0.as_str(), name.as_str())));
            let driver_gone = app.driver.as_ref().is_some_and(|d| {
                d.gone.is_none()
                    && d.last.is_some()
                    && !present_names.contains(&(key.0.as_str(), d.pod.as_str()))
                    && match (list_rv, d.last.as_ref().and_then(|p| p.rv())) {
                        (Some(l), Some(seen)) => l > seen,
                        _ => true,
                    }
            });
            if driver_gone {
                let app = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
                if let Some(d) = &mut app.driver {
                    d.gone = Some(records::DriverGoneAt { missing: true, at });
                    let text = format!(
                        "driver {} missing: absent from a full LIST with no deletion seen",
                        d.pod
                    );
                    app.log(at, None, text);
                }
                self.driver_changed(&key, at);
            }
            if vanished.is_empty() && !unregistered_gone {
                continue; // nothing changed: what was derived from the app stays
            }
            let app = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
            app.unregistered
                .retain(|name, _| present_names.contains(&(key.0.as_str(), name.as_str())));
            self.executors_missing(&key, vanished, list_rv, at);
        }
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
        let ctx = AppCtx::of(app);
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

    /// Executors seen deleted that a complete LIST newer than the deletion still has (the
    /// same pod: its name, and its uid when both are known): the DELETED was false (a proxy's
    /// or a broken watch's), so the executor is not gone. Spark's own full snapshot would
    /// show the pod as listed too.
    fn withdraw_false_deletions(
        &mut self,
        present: &[Present<'_>],
        list_rv: Option<u64>,
        at: Time,
    ) {
        let Some(list_rv) = list_rv else {
            return; // no order between the list and the deletion: keep what was seen
        };
        for p in present {
            let (Some(app_id), Some(id)) = (p.app_id, p.executor_id) else {
                continue;
            };
            let key = (p.namespace.to_owned(), app_id.to_owned());
            let deleted = self
                .snap
                .apps
                .get(&key)
                .and_then(|a| a.executors.get(&id))
                .is_some_and(|e| {
                    matches!(e.gone, Some(Gone::Deleted { .. }))
                    && e.pod.name == p.name
                    // A real deletion's version is newer than any list that has the pod.
                    && e.last_rv.is_some_and(|seen| list_rv >= seen)
                    && match (p.uid, e.pod.uid.as_deref()) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
                });
            if !deleted {
                continue;
            }
            let app = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
            let ctx = AppCtx::of(app);
            let Some(rec) = app.executors.get_mut(&id) else {
                continue;
            };
            let rec = Arc::make_mut(rec);
            evidence::withdraw_deletion(rec, at, list_rv);
            let events = events_of(&self.events, &rec.pod);
            refresh(rec, &events, &ctx, None, at);
            app.log(
                at,
                Some(id),
                format!(
                    "executor {id}: its deletion was false: a full LIST at resourceVersion {list_rv} still has pod {}",
                    p.name
                ),
            );
        }
    }

    /// A `Preempted` event's preemptor, completed with what the store knows of that pod (its
    /// app, priority class and priority) when it is a Spark pod in scope.
    fn resolve_preemptor(&self, r: &mut spark_triage_core::model::Related) {
        use spark_triage_core::diagnose::disruption::{complete_preemptor, names_pod};
        for app in self.snap.apps.values() {
            let driver = app.driver.as_ref().and_then(|d| d.last.as_deref());
            let found = driver.filter(|p| names_pod(r, p)).or_else(|| {
                app.executors
                    .values()
                    .map(|e| &*e.pod)
                    .find(|p| names_pod(r, p))
            });
            if let Some(p) = found {
                let name = app.app_name.clone().unwrap_or_else(|| app.app_id.clone());
                complete_preemptor(r, p, Some(name));
                return;
            }
        }
    }

    fn event(&mut self, mut event: PodEvent, at: Time) {
        if event.reason_is("Preempted")
            && let Some(mut r) = spark_triage_core::diagnose::disruption::preemptor_of([&event])
        {
            self.resolve_preemptor(&mut r);
            event.related = Some(r);
        }
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
        if found.is_none() {
            let driver_of: Option<AppKey> = self
                .snap
                .apps
                .iter()
                .find(|(k, a)| {
                    k.0 == key.0
                        && a.driver.as_ref().is_some_and(|d| {
                            d.pod == key.1 && d.last.as_deref().is_some_and(|p| event.is_about(p))
                        })
                })
                .map(|(k, _)| k.clone());
            if let Some(k) = driver_of {
                let events = events_named(&self.events, &key.0, &key.1);
                let app = derived::edit(self.snap.apps.get_mut(&k).expect("app exists"));
                app.as_of = Some(at);
                if let Some(d) = &mut app.driver {
                    d.events = events;
                }
                self.driver_changed(&k, at);
            }
        }
        if let Some((k, id)) = found {
            let events: Vec<PodEvent> = self
                .events
                .get(&key)
                .map(|q| q.iter().cloned().collect())
                .unwrap_or_default();
            let app = derived::edit(self.snap.apps.get_mut(&k).expect("app exists"));
            let ctx = AppCtx::of(app);
            if let Some(rec) = app.executors.get_mut(&id) {
                let rec = Arc::make_mut(rec);
                if let Some(note) = refresh(rec, &events, &ctx, None, at) {
                    app.log(at, Some(id), note);
                }
            }
        }
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
        let ctx = AppCtx::of(app);
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
        let ctx = AppCtx::of(app);
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
