//! What the store does with the sources' health (outages in every timeline) and with each
//! driver's own executor list (attached per executor; executors only the driver knows
//! become tombstones).

use std::sync::Arc;

use spark_triage_core::allocator::Controller;
use spark_triage_core::diagnose::app::STALL_AFTER;
use spark_triage_core::model::Time;
use spark_triage_core::model::driver::{DriverExecutor, ExecutorList};
use spark_triage_core::model::driver_state::{Allocation, StreamingQuery};

use super::*;
use crate::source::{DriverView, Health, SourceEvent, SourceKind};

impl Store {
    /// The running driver's log says the API server refused an executor pod (RBAC, a
    /// webhook): kept as its app's evidence (`executors-refused`).
    pub(super) fn driver_refused(&mut self, (namespace, app_id): AppKey, line: String, at: Time) {
        let app = self.app_mut(&namespace, &app_id);
        if app.driver_refusal.as_deref() != Some(line.as_str()) {
            app.driver_refusal = Some(line);
            app.as_of = Some(at);
        }
    }

    /// What a running driver says of itself (its allocation, its streaming query).
    pub(super) fn driver_said(&mut self, ev: SourceEvent) {
        match ev {
            SourceEvent::DriverAllocation {
                namespace,
                app_id,
                allocation,
                at,
            } => self.driver_allocation((namespace, app_id), allocation, at),
            SourceEvent::DriverStreaming {
                namespace,
                app_id,
                query,
                at,
            } => self.driver_streaming((namespace, app_id), query, at),
            _ => {}
        }
    }

    /// Dynamic allocation as the running driver's metrics have it: kept with the app, with
    /// since when its target stands above the executors it has (the stall's start).
    fn driver_allocation(&mut self, (namespace, app_id): AppKey, allocation: Allocation, at: Time) {
        let app = self.app_mut(&namespace, &app_id);
        let counts = app.counts();
        let has = (counts.pending + counts.running) as u32;
        let short_since = (allocation.target > has)
            .then(|| app.allocation.and_then(|a| a.short_since).unwrap_or(at));
        let before = app.allocation;
        app.allocation = Some(AllocationSeen {
            allocation,
            at,
            short_since,
        });
        // A finding changes with the numbers, or once the shortfall has lasted (its age
        // alone is read at each read).
        let stalled = |a: Option<AllocationSeen>| {
            a.and_then(|a| a.short_since.map(|s| a.at - s >= STALL_AFTER))
        };
        if before.map(|b| (b.allocation, b.short_since)) != Some((allocation, short_since))
            || stalled(before) != stalled(app.allocation)
        {
            app.as_of = Some(at);
        }
    }

    /// The running driver runs a Structured Streaming query: kept with the app (a streaming
    /// app's executors and driver are not batch work to be preempted).
    fn driver_streaming(&mut self, (namespace, app_id): AppKey, query: StreamingQuery, at: Time) {
        let app = self.app_mut(&namespace, &app_id);
        if app.streaming.as_ref() != Some(&query) {
            app.streaming = Some(query);
            app.as_of = Some(at);
        }
    }

    /// An outage of a pod or event source leaves a line in every app's timeline when it
    /// starts (a source that worked now fails) and when it ends (it works again): what
    /// happened meanwhile was seen late, or (a vanished pod) only by the next LIST.
    pub(super) fn outage(&mut self, source: SourceKind, health: &Health, at: Time) {
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
            super::derived::edit(app).log(at, None, text.clone());
        }
    }

    /// The driver's executor list: attached per id, executors only the driver knows become
    /// tombstones with Spark's reason, and every executor of the app is reconciled.
    pub(super) fn driver_view(&mut self, ns: &str, app_id: &str, view: DriverView, at: Time) {
        let kills = self.logged_kills.clone();
        let app = self.app_mut(ns, app_id);
        let Some((executors, from, beside)) = note_driver_api(app, view, at) else {
            return;
        };
        let pod_name = driver_only_pod_name(app, app_id);
        let listed: std::collections::BTreeSet<i64> = executors.iter().map(|e| e.id).collect();
        // Executors whose verdict may change: what the driver says of them changed, or a
        // disagreement may have come due with time.
        let Attached {
            mut due,
            fresh,
            rebuilt,
        } = attach(app, executors, from, at);
        let key = (ns.to_owned(), app_id.to_owned());
        // The complete LIST this store last had, if the app has pods in it: an executor the
        // driver counts active, registered well before that LIST, whose pod the LIST did
        // not have, is gone (Spark has not noticed yet; its next poll will). A fresh view
        // read the LIST a moment before the driver: never shown running meanwhile.
        let pods_in_scope = app
            .executors
            .values()
            .any(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })));
        let listed_at = self.snap.full_snapshot_at.filter(|_| pods_in_scope);
        let list_rv = self.snap.list_rv;
        let spare: std::collections::HashSet<i64> = due
            .iter()
            .copied()
            .chain(rebuilt.iter().map(|(_, d)| d.id))
            .collect();
        let only = DriverOnly {
            key: &key,
            from,
            at,
            kills: &kills,
        };
        let unnoticed = self.add_driver_only(&only, fresh, listed_at, &pod_name, &spare);
        due.extend(self.rebuild_driver_only(&only, rebuilt));
        if let Some(list) = listed_at {
            self.executors_missing(&key, unnoticed, list_rv, list);
        }
        let app = super::derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
        due.extend(unlisted(app, &listed, beside, from, at));
        self.refresh_some(&key, &due, at);
    }

    /// Executors only the driver knows, new: each a tombstone with the driver's words. The
    /// ones it counts active that the last complete LIST did not have are returned (gone,
    /// and Spark has not noticed yet).
    fn add_driver_only(
        &mut self,
        only: &DriverOnly<'_>,
        fresh: Vec<DriverExecutor>,
        listed_at: Option<Time>,
        pod_name: &dyn Fn(i64) -> String,
        spare: &std::collections::HashSet<i64>,
    ) -> Vec<i64> {
        let DriverOnly {
            key,
            from,
            at,
            kills,
        } = *only;
        let (ns, app_id) = (key.0.as_str(), key.1.as_str());
        let mut unnoticed = Vec::new();
        for d in fresh {
            // An event log is no live read (Spark buffers what it writes): an executor it
            // still has active may have gone since; only the driver's own answer says so.
            if d.active
                && from != ExecutorList::EventLog
                && let (Some(list), Some(added)) = (listed_at, d.add_time)
                && added + REGISTERED_BEFORE_LIST < list
            {
                unnoticed.push(d.id);
            }
            let id = d.id;
            // The name the executor gave, else the one Spark's allocator would have given.
            let name = d.pod_name.clone().unwrap_or_else(|| pod_name(id));
            let text = match &d.remove_reason {
                Some(r) => format!(
                    "executor {id} known only from the {}: {}",
                    from_words(from),
                    reason_headline(r)
                ),
                None => format!(
                    "executor {id} known only from the {} (active there)",
                    from_words(from)
                ),
            };
            let events = events_named(&self.events, ns, &name);
            let app = super::derived::edit(self.snap.apps.get_mut(key).expect("app exists"));
            let ctx = super::evidence::AppCtx::of(app, kills);
            let version = app.logged_version.clone();
            let rec = driver_only(
                ns,
                app_id,
                &name,
                (d, from, version.as_deref()),
                &events,
                &ctx,
                at,
            );
            // At the driver's time of it (its removal, else its addition).
            let when = rec.last_change(at);
            app.executors.insert(id, Arc::new(rec));
            app.log_when(when, at, Some(id), text);
            // A view may name thousands: the store's bound holds within it, not after, and
            // spares what the view still judges (its due and rebuilt executors).
            self.bound_sparing(Some((key, spare)));
        }
        unnoticed
    }

    /// Executors known only from the driver whose words changed: their pods rebuilt from
    /// the new words. Returned: their ids, to judge again with the app's whole context.
    fn rebuild_driver_only(
        &mut self,
        only: &DriverOnly<'_>,
        rebuilt: Vec<(String, DriverExecutor)>,
    ) -> Vec<i64> {
        let DriverOnly {
            key,
            from,
            at,
            kills,
        } = *only;
        let (ns, app_id) = (key.0.as_str(), key.1.as_str());
        let mut due = Vec::new();
        for (name, d) in rebuilt {
            let events = events_named(&self.events, ns, &name);
            let app = super::derived::edit(self.snap.apps.get_mut(key).expect("app exists"));
            let ctx = super::evidence::AppCtx::of(app, kills);
            let id = d.id;
            let text = d.remove_reason.as_deref().map(|r| {
                format!(
                    "executor {id} removed ({}): {}",
                    from_words(from),
                    reason_headline(r)
                )
            });
            let version = app.logged_version.clone();
            let new = driver_only(
                ns,
                app_id,
                &name,
                (d, from, version.as_deref()),
                &events,
                &ctx,
                at,
            );
            let when = new.last_change(at);
            if let Some(rec) = app.executors.get_mut(&id) {
                let rec = Arc::make_mut(rec);
                if new.pod_state != rec.pod_state {
                    super::evidence::push_history(
                        rec,
                        Transition::new(when, at, new.pod_state, None),
                    );
                }
                rec.pod = new.pod;
                rec.pod_state = new.pod_state;
                rec.spark_container = new.spark_container;
                rec.driver = new.driver;
                rec.verdict = new.verdict;
                rec.last_seen = at;
            }
            if let Some(text) = text {
                app.log_when(when, at, Some(id), text);
            }
            // Judged again below with the app's whole context (its driver's end, groups).
            due.push(id);
        }
        due
    }
}

/// The app's driver API state after this view: a view unavailable is noted (and nothing
/// more is done: `None`); else its executors, whose list they are, and whether they only
/// add beside the driver's own reads (an event log's, after the driver's API answered).
fn note_driver_api(
    app: &mut AppRecord,
    view: DriverView,
    at: Time,
) -> Option<(Vec<DriverExecutor>, ExecutorList, bool)> {
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
                from: previous.as_ref().map_or_else(Default::default, |p| p.from),
            });
            return None;
        }
        DriverView::Ok { executors } => (executors, ExecutorList::DriverApi),
        DriverView::Logged { executors } => (executors, ExecutorList::EventLog),
    };
    let (executors, from) = executors;
    // The driver's own reads are there: an event log (older, buffered) only adds what
    // they lack, never replaces what they said.
    let beside = from == ExecutorList::EventLog
        && previous
            .as_ref()
            .is_some_and(|p| p.from == ExecutorList::DriverApi);
    if !beside {
        if previous.as_ref().is_some_and(|p| p.unavailable.is_some()) {
            app.log(at, None, "driver view available again".to_owned());
        }
        app.driver_api = Some(DriverApiState {
            at,
            unavailable: None,
            last_ok: Some(at),
            active: executors.iter().filter(|e| e.active).count(),
            from,
        });
    }
    Some((executors, from, beside))
}

/// What one driver view does to the executors it names: updated in place (`due`: judge
/// again), new (`fresh`), or known only from the driver and changed (`rebuilt`).
struct Attached {
    due: Vec<i64>,
    fresh: Vec<DriverExecutor>,
    rebuilt: Vec<(String, DriverExecutor)>,
}

/// Each executor the driver names, attached to its record when it has one.
fn attach(
    app: &mut AppRecord,
    executors: Vec<DriverExecutor>,
    from: ExecutorList,
    at: Time,
) -> Attached {
    let mut due = Vec::new();
    let mut fresh = Vec::new();
    let mut rebuilt = Vec::new();
    for d in executors {
        match app.executors.get_mut(&d.id) {
            Some(rec)
                if from == ExecutorList::EventLog
                    && rec
                        .driver
                        .as_ref()
                        .is_some_and(|d| d.from == ExecutorList::DriverApi) => {}
            Some(rec) => {
                let rec = Arc::make_mut(rec);
                let changed = rec
                    .driver
                    .as_ref()
                    .is_none_or(|old| driver_gist(old.exec.as_ref()) != driver_gist(Some(&d)));
                // Known only from the driver, now removed (or back): its pod is rebuilt
                // from the driver's words, as a fresh one would be.
                if changed && matches!(rec.gone, Some(Gone::DriverOnly { .. })) {
                    rebuilt.push((rec.pod.name.clone(), d));
                    continue;
                }
                rec.driver = Some(Box::new(DriverSeen {
                    at,
                    exec: Some(d),
                    from,
                }));
                if changed || may_come_due(rec) {
                    due.push(rec.id);
                }
            }
            None if !app.forgotten.contains(&d.id) => fresh.push(d),
            None => {}
        }
    }
    Attached {
        due,
        fresh,
        rebuilt,
    }
}

/// The app's executors the driver's list does not name: by the driver, it does not know
/// them (unless this list only adds beside its reads); returned, those to judge again.
fn unlisted(
    app: &mut AppRecord,
    listed: &std::collections::BTreeSet<i64>,
    beside: bool,
    from: ExecutorList,
    at: Time,
) -> Vec<i64> {
    let mut due = Vec::new();
    for rec in app.executors.values_mut() {
        // Not listed: by the driver, it does not know it; by an event log beside the
        // driver's reads, nothing (the log lags). An executor an event log says was
        // removed keeps that when the driver no longer lists it (it keeps at most
        // spark.ui.retainedDeadExecutors).
        let logged_removal = rec.driver.as_ref().is_some_and(|d| {
            d.from == ExecutorList::EventLog && d.exec.as_ref().is_some_and(|e| !e.active)
        });
        if !listed.contains(&rec.id) && !beside && !logged_removal {
            let rec = Arc::make_mut(rec);
            let changed = rec.driver.as_ref().is_none_or(|old| old.exec.is_some());
            rec.driver = Some(Box::new(DriverSeen {
                at,
                exec: None,
                from,
            }));
            if changed || may_come_due(rec) {
                due.push(rec.id);
            }
        } else if !listed.contains(&rec.id) && logged_removal && may_come_due(rec) {
            // Removed by the log, no longer named (a view names a removal once): a
            // disagreement with its pod (a zombie) still comes due with time.
            due.push(rec.id);
        }
    }
    due
}

/// What adding or rebuilding executors known only from the driver needs of the view.
#[derive(Clone, Copy)]
struct DriverOnly<'a> {
    key: &'a AppKey,
    from: ExecutorList,
    at: Time,
    kills: &'a LoggedKills,
}

/// How long before a LIST an executor must have registered with the driver for its pod to
/// have been in that LIST (a pod exists seconds before its executor registers; the margin
/// covers the driver's and the API server's clocks disagreeing).
const REGISTERED_BEFORE_LIST: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// How to name the pod of an executor known only from the driver: Spark's own allocator
/// names it `<podNamePrefix>-exec-<id>` (the prefix read off a pod seen); a StatefulSet or a
/// ReplicaSet names it by an ordinal or a random suffix no record keeps, so such a pod is
/// `<controller>-?` (no pod by that name can exist: no action or event lookup finds one).
fn driver_only_pod_name(app: &AppRecord, app_id: &str) -> impl Fn(i64) -> String + use<> {
    // Any pod seen tells the allocator (an app has one).
    let seen = app
        .executors
        .values()
        .find(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })));
    let controller = seen
        .and_then(|e| Controller::of(&e.pod))
        .map(|c| c.name().to_owned())
        .or_else(|| match app.config.allocator.as_deref() {
            Some("statefulset") => Some(format!("spark-s-{app_id}")),
            Some("deployment") => Some(format!("spark-d-{app_id}")),
            _ => None,
        });
    let prefix = seen
        .and_then(|e| e.pod.name.rsplit_once("-exec-").map(|(p, _)| p.to_owned()))
        .or_else(|| app.app_name.clone())
        .unwrap_or_else(|| app_id.to_owned());
    move |id| match &controller {
        Some(c) => format!("{c}-?"),
        None => format!("{prefix}-exec-{id}"),
    }
}
