//! A complete LIST: the pods it names replace what was known, and an executor it no longer
//! names, with no deletion seen, is missing (a deletion the watch reported and the LIST
//! contradicts is withdrawn).

use super::*;

/// A pod a complete LIST named.
pub(super) struct Present<'a> {
    pub(super) namespace: &'a str,
    pub(super) name: &'a str,
    pub(super) app_id: Option<&'a str>,
    pub(super) executor_id: Option<i64>,
    pub(super) uid: Option<&'a str>,
}

impl Store {
    /// A page of a LIST being read: its pods upserted as they come (the LIST's end, a
    /// `PodsPresent`, says which executors it lacks).
    pub(super) fn listing(&mut self, pods: Vec<Arc<ExecutorPod>>, at: Time) {
        for p in pods {
            self.upsert(p, at, false);
        }
    }

    /// A full LIST: Spark replaces its snapshot; the tool keeps tombstones and decides
    /// which executors are missing.
    pub(super) fn replace(&mut self, pods: Vec<Arc<ExecutorPod>>, list_rv: Option<u64>, at: Time) {
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
    pub(super) fn mark_missing(
        &mut self,
        present: Vec<Present<'_>>,
        list_rv: Option<u64>,
        at: Time,
    ) {
        self.snap.full_snapshot_at = Some(at);
        self.snap.list_rv = list_rv;
        // Sorted lists, searched by halves: at 100,000 pods two BTreeSets held 14 MB at the
        // first view's peak, these 8.5 (heaptrack).
        let present_names: Sorted<(&str, &str)> =
            present.iter().map(|p| (p.namespace, p.name)).collect();
        let present_ids: Sorted<(&str, &str, i64)> = present
            .iter()
            .filter_map(|p| Some((p.namespace, p.app_id?, p.executor_id?)))
            .collect();
        self.withdraw_false_deletions(&present, list_rv, at);
        self.settle_preemptors(at);
        // Finished drivers deleted while no watch said so (not one seen after the LIST).
        let stays = |ns: &str, p: &str, k: &KeptDriver| {
            present_names.contains(&(ns, p))
                || k.rv
                    .zip(list_rv)
                    .is_some_and(|(seen, listed)| seen > listed)
        };
        let gone = self
            .snap
            .kept_drivers
            .iter()
            .any(|(ns, pods)| pods.iter().any(|(p, k)| !stays(ns, p, k)));
        if gone {
            let all = Arc::make_mut(&mut self.snap.kept_drivers);
            for (ns, pods) in all.iter_mut() {
                pods.retain(|p, k| stays(ns, p, k));
            }
            all.retain(|_, pods| !pods.is_empty());
        }
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

    /// Executors seen deleted that a complete LIST newer than the deletion still has (the
    /// same pod: its name, and its uid when both are known): the DELETED was false (a proxy's
    /// or a broken watch's), so the executor is not gone. Spark's own full snapshot would
    /// show the pod as listed too.
    pub(super) fn withdraw_false_deletions(
        &mut self,
        present: &[Present<'_>],
        list_rv: Option<u64>,
        at: Time,
    ) {
        let Some(list_rv) = list_rv else {
            return; // no order between the list and the deletion: keep what was seen
        };
        // A LIST names an app's pods together: its key is copied once per app, not per pod.
        let mut key = AppKey::default();
        for p in present {
            let (Some(app_id), Some(id)) = (p.app_id, p.executor_id) else {
                continue;
            };
            if key.0 != p.namespace || key.1 != app_id {
                key = (p.namespace.to_owned(), app_id.to_owned());
            }
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
            let ctx = AppCtx::of(app, &self.logged_kills);
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
}

/// A sorted list asked whether it holds a value (a set's `contains`, without its nodes).
/// Collected, it sorts itself.
struct Sorted<T>(Vec<T>);

impl<T: Ord> FromIterator<T> for Sorted<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut v: Vec<T> = items.into_iter().collect();
        v.sort_unstable();
        Self(v)
    }
}

impl<T: Ord> Sorted<T> {
    fn contains(&self, x: &T) -> bool {
        self.0.binary_search(x).is_ok()
    }
}
