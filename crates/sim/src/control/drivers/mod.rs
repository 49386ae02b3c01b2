//! The Spark-like drivers: executor allocation, Spark's snapshot (watch + 30 s poll), missing-pod detection, removal reasons and app failure.
//!
//! `mod.rs` keeps the drivers' state, their watch and one pass of a driver; `app.rs` the
//! app's start and end, `executors.rs` its executors' lifecycle, `allocators.rs` the
//! statefulset and deployment allocators, `batch.rs` what batch schedulers write.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::context::Cx;
use super::hex;
use super::kubelet::Kubelet;
use crate::classify::{ClassifyConfig, classify};
use crate::clock::fmt_time;
use crate::model::{ExecutorPod, ExecutorState};
use crate::scenario::{AppSpec, DriverFate, OperatorKind};
use crate::selector::LabelSelector;
use crate::spark_registry::{ExecView, SparkRegistry};
use crate::store::{Change, Obj, ObjectStore, Query, Resource};

mod allocators;
mod app;
mod batch;
mod executors;

/// Spark's `apiPollingInterval` and `missingPodDetectDelta` defaults.
const POLL_SECS: f64 = 30.0;
const MISSING_DELTA_SECS: f64 = 30.0;

/// The Spark-like drivers, one per scenario app: each watches the store's change feed into
/// Spark's snapshot, allocates and removes executors, and tells the registry what it knows.
#[derive(Debug)]
pub(super) struct Drivers {
    store: Arc<ObjectStore>,
    /// What the drivers know, for their REST API (the API server holds it too).
    registry: Arc<SparkRegistry>,
    /// One per scenario app, in the scenario's order.
    drivers: Vec<Driver>,
    /// The drivers' watch: the store's change feed.
    feed: broadcast::Receiver<Arc<Change>>,
}

/// One app's Spark driver: its names, Spark's snapshot of its executors and what it
/// decided about them.
#[derive(Debug)]
struct Driver {
    spec: AppSpec,
    app_id: String,
    prefix: String,
    driver_pod: String,
    service: String,
    started: bool,
    finished: bool,
    next_id: i64,
    max_failures: u32,
    failed_ids: Vec<i64>,
    /// Executor pod creations the API server refused (Spark 4.3 counts them as failures).
    creation_failures: u32,
    /// After a refused creation, the next allocation round (`allocation.batch.delay`, 1 s).
    allocate_after: f64,
    /// Spark's snapshot: id → last pod seen (watch = upsert, poll = replace).
    snapshot: BTreeMap<i64, Arc<Obj>>,
    /// Ids Spark already removed (its `removedExecutorsCache`, without expiry).
    removed: BTreeMap<i64, String>,
    /// Ids created but not yet seen in any snapshot.
    newly_created: BTreeMap<i64, f64>,
    registered: BTreeMap<i64, f64>,
    last_poll: f64,
    /// Spark state per executor at the resourceVersion it was computed for.
    states: hashbrown::HashMap<i64, (u64, ExecutorState)>,
    /// Executors whose driver view departs from their pod (scenario `driver:` fates), with
    /// the fate's time.
    driver_fates: BTreeMap<i64, (DriverFate, Option<f64>)>,
    /// Its pod is gone and the garbage collector deleted its executors.
    collected: bool,
    /// Dynamic allocation's current target (`scale` steps), else `spec.executors`.
    target: Option<u32>,
    /// The statefulset or deployment allocator's controller, once made.
    controller: Option<allocators::SetRef>,
    /// Container restarts already answered with a new executor id, by pod uid.
    restarts: BTreeMap<String, i64>,
}

impl Driver {
    /// A driver for `spec`, not started, with fresh names (a rerun gets new ones, as
    /// spark-submit makes them).
    fn new(spec: &AppSpec, rng: &mut fastrand::Rng) -> Self {
        let hex16 = hex(rng, 16);
        let prefix = format!("{}-{hex16}", spec.name);
        Self {
            app_id: format!("spark-{}", hex(rng, 32)),
            driver_pod: format!("{prefix}-driver"),
            service: format!("{prefix}-driver-svc"),
            prefix,
            started: false,
            finished: false,
            next_id: 1,
            max_failures: spec
                .max_failures
                .unwrap_or_else(|| (2 * spec.executors).max(3)),
            failed_ids: Vec::new(),
            creation_failures: 0,
            allocate_after: 0.0,
            snapshot: BTreeMap::new(),
            removed: BTreeMap::new(),
            newly_created: BTreeMap::new(),
            registered: BTreeMap::new(),
            last_poll: 0.0,
            states: Default::default(),
            driver_fates: BTreeMap::new(),
            collected: false,
            target: None,
            controller: None,
            restarts: BTreeMap::new(),
            spec: spec.clone(),
        }
    }

    /// Dynamic allocation is on: `scale` steps, or the property set.
    fn dynamic(&self) -> bool {
        !self.spec.scale.is_empty()
            || self
                .spec
                .conf
                .get("spark.dynamicAllocation.enabled")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    fn driver_fate(&self, id: i64) -> Option<DriverFate> {
        self.driver_fates.get(&id).map(|(f, _)| *f)
    }
}

impl Driver {
    /// Spark's state of a snapshot pod, computed once per resourceVersion.
    fn state(&mut self, id: i64, pod: &Obj) -> ExecutorState {
        cached_state(&mut self.states, id, pod)
    }

    /// The snapshot's executors the lifecycle has something to do for: all but those
    /// running and registered already (most of a big app, every pass).
    fn unsettled(&mut self) -> Vec<(i64, Arc<Obj>)> {
        let mut out = Vec::new();
        for (id, pod) in &self.snapshot {
            if cached_state(&mut self.states, *id, pod) == ExecutorState::Running
                && self.registered.contains_key(id)
            {
                continue;
            }
            out.push((*id, pod.clone()));
        }
        out
    }
}

fn cached_state(
    states: &mut hashbrown::HashMap<i64, (u64, ExecutorState)>,
    id: i64,
    pod: &Obj,
) -> ExecutorState {
    let rv = pod.rv();
    if let Some((at, s)) = states.get(&id)
        && *at == rv
    {
        return *s;
    }
    let s = state_of(pod, &ClassifyConfig::default());
    states.insert(id, (rv, s));
    s
}

/// The labels an operator puts on the pods of an app it submits (the object's name).
fn operator_labels(spec: &AppSpec, epoch: DateTime<Utc>, labels: &mut Value) {
    let Some(op) = &spec.operator else { return };
    let name = op.object_name(spec, epoch);
    match op.kind {
        OperatorKind::Kubeflow => {
            labels["sparkoperator.k8s.io/app-name"] = json!(name);
            labels["sparkoperator.k8s.io/launched-by-spark-operator"] = json!("true");
        }
        OperatorKind::Apache => labels["spark.operator/spark-app-name"] = json!(name),
    }
}

fn store_feed(store: &ObjectStore) -> broadcast::Receiver<Arc<Change>> {
    // A subscription with no replay: the control plane starts with the store.
    store
        .subscribe(Resource::Pods, &Query::default(), None)
        .map(|s| s.rx)
        .unwrap_or_else(|_| broadcast::channel(1).1)
}

fn to_executor_pod(pod: &Obj) -> ExecutorPod {
    ExecutorPod::from_value(&pod.value()).unwrap_or_default()
}

fn state_of(pod: &Obj, config: &ClassifyConfig) -> ExecutorState {
    classify(&to_executor_pod(pod), config)
}

impl Drivers {
    /// A driver for each app, its names drawn from `rng`; none started yet.
    pub(super) fn new(
        store: Arc<ObjectStore>,
        registry: Arc<SparkRegistry>,
        apps: &[AppSpec],
        rng: &mut fastrand::Rng,
    ) -> Self {
        let feed = store_feed(&store);
        let drivers = apps.iter().map(|spec| Driver::new(spec, rng)).collect();
        Self {
            store,
            registry,
            drivers,
            feed,
        }
    }

    /// Spark's watch: every change to one of a driver's executor pods upserts its snapshot;
    /// a feed that lagged relists them all.
    pub(super) fn drain_feed(&mut self, t: f64) {
        loop {
            match self.feed.try_recv() {
                Ok(c) => {
                    if c.resource != Resource::Pods {
                        continue;
                    }
                    if c.new.label("spark-role") != Some("executor") {
                        continue;
                    }
                    let Some(id) = c
                        .new
                        .label("spark-exec-id")
                        .and_then(|s| s.parse::<i64>().ok())
                    else {
                        continue;
                    };
                    let app = c.new.label("spark-app-selector");
                    for d in &mut self.drivers {
                        if app == Some(d.app_id.as_str()) && c.new.namespace() == d.spec.namespace {
                            // Spark's watch ignores the event type: every event upserts.
                            d.snapshot.insert(id, c.new.clone());
                            d.newly_created.remove(&id);
                        }
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(broadcast::error::TryRecvError::Lagged(_)) => self.relist_executors(t),
                Err(broadcast::error::TryRecvError::Closed) => {
                    self.feed = store_feed(&self.store);
                    return;
                }
            }
        }
    }

    /// The feed lost changes: every driver's snapshot becomes a full list of its executor
    /// pods, from one pass over the store for all of them.
    fn relist_executors(&mut self, t: f64) {
        let q = Query {
            labels: LabelSelector::parse("spark-role=executor,spark-exec-inactive!=true")
                .unwrap_or_default(),
            ..Query::default()
        };
        let (pods, _) = self.store.list_all(Resource::Pods, &q);
        for d in &mut self.drivers {
            d.snapshot.clear();
        }
        for p in pods {
            let Some(id) = p.label("spark-exec-id").and_then(|s| s.parse::<i64>().ok()) else {
                continue;
            };
            let app = p.label("spark-app-selector");
            for d in &mut self.drivers {
                if app == Some(d.app_id.as_str()) && p.namespace() == d.spec.namespace {
                    d.snapshot.insert(id, p.clone());
                    d.newly_created.remove(&id);
                }
            }
        }
        // Each driver's next pass polls at once: its missing-pod check runs there, under
        // the same conditions as every poll (a running driver).
        for d in &mut self.drivers {
            d.last_poll = t - POLL_SECS;
        }
    }

    /// spark-submit for app `i`, as an operator runs it: its driver pod and the rest, or
    /// the API server's refusal of the driver pod (a quota, a webhook), as
    /// spark-submit's client prints it.
    pub(super) fn submit(
        &mut self,
        rng: &mut fastrand::Rng,
        kubelet: &mut Kubelet,
        i: usize,
    ) -> Result<(), String> {
        self.start_app(rng, kubelet, i)
    }

    /// The query of app `i`'s executor pods (its `spark-app-selector`, `spark-role=executor`).
    pub(super) fn executor_pods(&self, i: usize) -> Query {
        let d = &self.drivers[i];
        Query {
            namespace: Some(d.spec.namespace.clone()),
            labels: LabelSelector::parse(&format!(
                "spark-app-selector={},spark-role=executor",
                d.app_id
            ))
            .unwrap_or_default(),
            ..Query::default()
        }
    }

    /// A rerun of app `i`: a new driver with new names; the old one's objects stay to the
    /// operator to delete.
    pub(super) fn rerun(&mut self, rng: &mut fastrand::Rng, i: usize) {
        // The earlier run's leftovers first, as the garbage collector takes them with its
        // driver: its executor pods and its allocator's set.
        if self.drivers[i].started {
            let ns = self.drivers[i].spec.namespace.clone();
            let q = self.executor_pods(i);
            self.delete_sets(i);
            let (pods, _) = self.store.list_all(Resource::Pods, &q);
            for p in pods {
                let _ = self
                    .store
                    .delete(Resource::Pods, &ns, p.name(), &Default::default());
            }
        }
        let spec = self.drivers[i].spec.clone();
        self.drivers[i] = Driver::new(&spec, rng);
    }

    /// App `i`'s namespace, driver pod and Spark app id.
    pub(super) fn names(&self, i: usize) -> (String, String, String) {
        let d = &self.drivers[i];
        (
            d.spec.namespace.clone(),
            d.driver_pod.clone(),
            d.app_id.clone(),
        )
    }

    /// One pass of every driver, in the scenario's order.
    pub(super) fn drive(&mut self, cx: &mut Cx<'_>, kubelet: &mut Kubelet, t: f64) {
        for i in 0..self.drivers.len() {
            self.drive_app(cx, kubelet, i, t);
        }
    }

    /// One pass of driver `i`: it starts its app when due, then reacts to its driver pod,
    /// polls, removes and allocates executors.
    fn drive_app(&mut self, cx: &mut Cx<'_>, kubelet: &mut Kubelet, i: usize, t: f64) {
        let start = self.drivers[i].spec.start.map_or(0.0, |d| d.as_secs_f64());
        if t < start {
            return;
        }
        if !self.drivers[i].started {
            // Through an operator, the operator submits it (`Drivers::submit`).
            if self.drivers[i].spec.operator.is_none() {
                let _ = self.start_app(cx.rng, kubelet, i);
            }
            return;
        }
        let (ns, driver_pod) = (
            self.drivers[i].spec.namespace.clone(),
            self.drivers[i].driver_pod.clone(),
        );
        self.batch(cx, i, t);
        let driver = self.store.get(Resource::Pods, &ns, &driver_pod);
        let driver_running = driver.as_ref().is_some_and(|d| d.phase() == "Running");
        self.driver_over(kubelet, i, driver.as_deref(), t);
        if !driver_running || self.drivers[i].finished {
            return;
        }
        self.scale(i, t);
        // The poll, every 30 s: Spark's full list replaces the snapshot. The feed missed
        // nothing since the last full list (a lag relists at once, below), so the list
        // would only drop what is gone (or inactive) and refresh the rest: read those by
        // key (100 drivers listing 100k pods every 30 s would cost a core).
        if t - self.drivers[i].last_poll >= POLL_SECS {
            self.drivers[i].last_poll = t;
            let d = &self.drivers[i];
            let snapshot: BTreeMap<i64, Arc<Obj>> = d
                .snapshot
                .iter()
                .filter_map(|(id, p)| {
                    // The same pod (a StatefulSet reuses its name for the next executor).
                    let now = self
                        .store
                        .get(Resource::Pods, &ns, p.name())
                        .filter(|now| now.uid() == p.uid())?;
                    (now.label("spark-exec-inactive") != Some("true")).then_some((*id, now))
                })
                .collect();
            self.drivers[i].snapshot = snapshot;
            self.detect_missing(i, t);
        }
        self.zombies(kubelet, i, t);
        self.relabel_restarted(i, t);
        self.lifecycle(kubelet, i, t);
        self.allocate(cx.rng, kubelet, i, t);
    }

    fn registry_update(&self, i: usize, id: i64, f: impl FnOnce(&mut ExecView, DateTime<Utc>)) {
        let d = &self.drivers[i];
        let now = self.store.clock.now();
        self.registry.update(&d.app_id, |app| {
            let e = app.executors.entry(id).or_insert_with(|| ExecView {
                // The pod Spark's snapshot has for the id (a controller names it), else the
                // name Spark's own allocator gives it.
                pod: d
                    .snapshot
                    .get(&id)
                    .map(|p| p.name().to_owned())
                    .unwrap_or_else(|| format!("{}-exec-{id}", d.prefix)),
                host: String::new(),
                cores: d.spec.cores,
                max_memory: d.spec.memory_mib * 1024 * 1024 * 6 / 10,
                ..ExecView::default()
            });
            f(e, now);
        });
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}

/// The app's priority on one of its pods, as admission leaves it (`priorityClassName` and
/// the `priority` the class resolves to, 0 without one).
fn with_priority(pod: &mut Value, spec: &AppSpec) {
    if let Some(c) = &spec.priority_class {
        pod["spec"]["priorityClassName"] = json!(c);
    }
    // Admission always resolves a priority: 0 without a class (no global default here).
    pod["spec"]["priority"] = json!(spec.priority.unwrap_or(0));
}
