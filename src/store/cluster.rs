//! What the cluster says around the pods: events (a preemption's preemptor completed from
//! the store), the namespace's quotas, and the batch schedulers' pod groups.

use spark_triage_core::diagnose::disruption;
use spark_triage_core::diagnose::disruption::{complete_preemptor, names_pod};
use spark_triage_core::model::{GroupKind, Quota, Related, SchedGroup};

use super::*;

impl Store {
    /// A list of ResourceQuotas: in one namespace, or (`None`) in all of them.
    pub(super) fn quotas(&mut self, namespace: Option<String>, quotas: Vec<Quota>) {
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
    pub(super) fn groups_listed(
        &mut self,
        kind: GroupKind,
        namespace: Option<&str>,
        objects: Vec<SchedGroup>,
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
        if kind == GroupKind::KueueWorkload {
            // An operator's application waits on the Workload it owns.
            self.settle_operators(at);
        }
    }

    /// Gives an app its slice of the group objects; re-verdicts its pods that name groups
    /// when the slice changed.
    pub(super) fn settle_groups(&mut self, key: &AppKey, at: Time) {
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
    pub(super) fn note_groups(&mut self, key: &AppKey, pod: &ExecutorPod) {
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
        if pod.groups.iter().any(|r| r.kind == GroupKind::Workload) {
            let mut pods: Vec<ExecutorPod> = app
                .pods_naming_groups()
                .filter(|p| p.name != pod.name)
                .cloned()
                .collect();
            pods.push(pod.clone());
            Arc::make_mut(&mut app.groups).count_members(&pods);
        }
    }

    /// A `Preempted` event's preemptor, completed with what the store knows of that pod (its
    /// app, priority class and priority) when it is a Spark pod in scope.
    pub(super) fn resolve_preemptor(&self, r: &mut Related) {
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

    /// Preemptors named before their pod was known (the events listed before the pods, a
    /// preemptor that started later), completed once it is: the preempted executors are
    /// re-diagnosed, so their app's finding names the preemptor's app and priority.
    pub(super) fn settle_preemptors(&mut self, at: Time) {
        let unsettled = |e: &PodEvent| {
            e.reason_is("Preempted") && e.related.as_ref().is_some_and(|r| r.app.is_none())
        };
        let mut settled: Vec<((String, String), usize, Related)> = Vec::new();
        for (key, q) in &self.events {
            for (i, e) in q.iter().enumerate().filter(|(_, e)| unsettled(e)) {
                let Some(mut r) = e.related.clone() else {
                    continue;
                };
                self.resolve_preemptor(&mut r);
                if r.app.is_some() {
                    settled.push((key.clone(), i, r));
                }
            }
        }
        let mut keys: Vec<(String, String)> = Vec::new();
        for (key, i, r) in settled {
            if let Some(e) = self.events.get_mut(&key).and_then(|q| q.get_mut(i)) {
                e.related = Some(r);
            }
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for key in keys {
            self.rediagnose_named(&key, at);
        }
    }

    pub(super) fn event(&mut self, mut event: PodEvent, at: Time) {
        if event.reason_is("Preempted")
            && let Some(mut r) = disruption::preemptor_of([&event])
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
            if let Some(rec) = app.executors_named(&key.1).find(|e| event.is_about(&e.pod)) {
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
            self.rediagnose_executor(&key, (&k, id), at);
        }
    }

    /// The pods named `key` (namespace, name), re-diagnosed with their events: every
    /// executor of that name (a controller's pod recreated keeps it), else the driver.
    fn rediagnose_named(&mut self, key: &(String, String), at: Time) {
        let executors: Vec<(AppKey, i64)> = self
            .snap
            .apps
            .iter()
            .filter(|(k, _)| k.0 == key.0)
            .flat_map(|(k, app)| app.executors_named(&key.1).map(|rec| (k.clone(), rec.id)))
            .collect();
        for (k, id) in &executors {
            self.rediagnose_executor(key, (k, *id), at);
        }
        if !executors.is_empty() {
            return;
        }
        let driver_of: Option<AppKey> = self
            .snap
            .apps
            .iter()
            .find(|(k, a)| k.0 == key.0 && a.driver.as_ref().is_some_and(|d| d.pod == key.1))
            .map(|(k, _)| k.clone());
        if let Some(k) = driver_of {
            let events = events_named(&self.events, &key.0, &key.1);
            if let Some(app) = self.snap.apps.get_mut(&k) {
                let app = derived::edit(app);
                app.as_of = Some(at);
                if let Some(d) = &mut app.driver {
                    d.events = events;
                }
            }
            self.driver_changed(&k, at);
        }
    }

    fn rediagnose_executor(&mut self, key: &(String, String), (k, id): (&AppKey, i64), at: Time) {
        let events: Vec<PodEvent> = self
            .events
            .get(key)
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default();
        let Some(app) = self.snap.apps.get_mut(k) else {
            return;
        };
        let app = derived::edit(app);
        let ctx = AppCtx::of(app, &self.logged_kills);
        if let Some(rec) = app.executors.get_mut(&id) {
            let rec = Arc::make_mut(rec);
            if let Some(note) = refresh(rec, &events, &ctx, None, at) {
                app.log(at, Some(id), note);
            }
        }
    }
}
