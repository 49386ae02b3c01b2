//! The simulated control plane: a scheduler, a kubelet following kwok's pod stages, and one
//! Spark-like driver per scenario application, all writing through the same store (and so
//! the same watch feed) that clients read.
//!
//! The Spark-like driver keeps Spark's own snapshot semantics: it sees changes through the
//! store's change feed (a watch: upsert, never remove) and replaces its snapshot with a full
//! list every `apiPollingInterval` (30 s), so a pod removed with no watch event is noticed at
//! the next poll and declared missing only when Spark's `missingPodDetectDelta` rule says so.
//! It classifies pods with the same `classify` the tool uses and logs Spark's exact texts.
//!
//! Weak spots: no preemption victims are chosen for real (a `preempt` fate names its
//! victim); CPU/memory accounting ignores init containers and overhead.

use crate::spark_registry::{AppView, ExecView, SparkRegistry};
use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::sync::broadcast;

mod allocators;
mod batch;
mod container_logs;
mod drivers;
mod events;
mod kubelet;
mod scheduler;
mod termination;

use crate::model::quantity;
use crate::process::{self, ProcessOptions, ProcessRuntime};
use crate::{
    classify::{ClassifyConfig, classify},
    model::{ExecutorPod, ExecutorState},
    selector::LabelSelector,
    spark,
};
use crate::{
    clock::fmt_time,
    kube_status::{container_status, set_all_containers, set_condition},
    logs::Logs,
    scenario::{AppSpec, DriverFate, ExecutorSel, Fate, FateAction, NodeSpec, Scenario},
    store::{DeleteOptions, Obj, ObjectStore, Query, Resource},
};

/// Scenario seconds from bind to running containers.
const START_SECS: f64 = 1.5;
/// Spark's `apiPollingInterval` and `missingPodDetectDelta` defaults.
const POLL_SECS: f64 = 30.0;
const MISSING_DELTA_SECS: f64 = 30.0;
/// Repeated scheduler/kubelet warnings are counted on one event at most this often.
const EVENT_REPEAT_SECS: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Disruption {
    Vanish,
    Evict,
    /// Evicted for exceeding its own ephemeral-storage limit.
    EvictStorage,
    /// Ended by the kubelet for a graceful node shutdown.
    Shutdown,
    Preempt,
    Delete,
}

/// A fate resolved for one pod.
#[derive(Debug, Clone, Default)]
struct PodFate {
    /// Scenario second at which it strikes, or seconds after running.
    at: Option<f64>,
    after: Option<f64>,
    exit: Option<(i32, String)>,
    action: Option<Disruption>,
    image_pull_error: Option<String>,
    /// The kubelet rejects the pod on admission with this reason (`OutOfcpu`, …).
    admission: Option<String>,
    /// Preempted for this app's driver pod.
    preempted_by: Option<String>,
    /// Resized in place to this memory before its exit, not applied (see `Fate`).
    resized_to: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Creating {
        since: f64,
    },
    PullFailing {
        since: f64,
        backoff: bool,
        attempt: u32,
    },
    Running {
        since: f64,
    },
    Terminating {
        exit_at: f64,
        code: i32,
    },
    Done,
}

#[derive(Debug)]
struct Runtime {
    uid: String,
    stage: Stage,
    last_log: f64,
    log_seq: u64,
    struck: bool,
    /// The scenario gave this pod a fate (looked up only then, not on every pass).
    fated: bool,
}

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

/// The control plane. Owned by one task; talks to the world only through the store.
#[derive(Debug)]
pub struct Control {
    store: Arc<ObjectStore>,
    logs: Arc<Logs>,
    pub registry: Arc<SparkRegistry>,
    scenario: Scenario,
    rng: fastrand::Rng,
    drivers: Vec<Driver>,
    runtimes: hashbrown::HashMap<(String, String), Runtime>,
    last_runtime_gc: f64,
    schedule_cursor: usize,
    fates: hashbrown::HashMap<(String, String), PodFate>,
    event_names: HashMap<(String, String, String), (String, f64)>,
    timeline_done: Vec<bool>,
    feed: broadcast::Receiver<Arc<crate::store::Change>>,
    event_ttl: Duration,
    last_gc: f64,
    /// The process kubelet's runtime: Spark executor containers run as local JVMs.
    procs: Option<ProcessRuntime>,
}

fn hex(rng: &mut fastrand::Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.usize(..16)]))
        .collect()
}

fn node_objects(spec: &NodeSpec, now: &str) -> Vec<Value> {
    (1..=spec.count)
        .map(|i| {
            let name = if spec.count == 1 { spec.name.clone() } else { format!("{}-{i}", spec.name) };
            let taints: Vec<Value> = spec
                .taints
                .iter()
                .map(|t| {
                    let (kv, effect) = t.split_once(':').unwrap_or((t.as_str(), "NoSchedule"));
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    json!({"key": k, "value": v, "effect": effect})
                })
                .collect();
            let mut labels = json!({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"});
            for (k, v) in &spec.labels {
                labels[k] = json!(v);
            }
            json!({"metadata": {"name": name, "labels": labels},
                   "spec": {"taints": taints},
                   "status": {"capacity": {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods.to_string()},
                              "allocatable": {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods.to_string()},
                              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                              "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}],
                              "nodeInfo": {"kubeletVersion": "v1.33.0-sim", "containerRuntimeVersion": "sim://1.0",
                                           "operatingSystem": "linux", "architecture": "amd64"}}})
        })
        .collect()
}

impl Control {
    pub fn new(
        store: Arc<ObjectStore>,
        logs: Arc<Logs>,
        scenario: Scenario,
        seed: u64,
        event_ttl: Duration,
    ) -> Self {
        let feed = store_feed(&store);
        let mut rng = fastrand::Rng::with_seed(seed);
        let drivers = scenario
            .apps
            .iter()
            .map(|spec| {
                let hex16 = hex(&mut rng, 16);
                let prefix = format!("{}-{hex16}", spec.name);
                Driver {
                    app_id: format!("spark-{}", hex(&mut rng, 32)),
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
            })
            .collect();
        let timeline_done = vec![false; scenario.timeline.len()];
        Self {
            store,
            logs,
            registry: Arc::new(SparkRegistry::default()),
            scenario,
            rng,
            drivers,
            runtimes: Default::default(),
            last_runtime_gc: 0.0,
            schedule_cursor: 0,
            fates: Default::default(),
            event_names: HashMap::new(),
            timeline_done,
            feed,
            event_ttl,
            last_gc: 0.0,
            procs: None,
        }
    }

    /// Runs Spark executor containers as local processes from now on.
    pub fn with_processes(mut self, opts: ProcessOptions) -> Self {
        self.procs = Some(ProcessRuntime::new(opts));
        self
    }

    /// Creates the scenario's namespaces, nodes and plain pods.
    pub fn bootstrap(&mut self) {
        let now = fmt_time(self.store.clock.now());
        let mut namespaces = vec!["default".to_owned(), "kube-system".to_owned()];
        namespaces.extend(self.scenario.namespaces.iter().cloned());
        namespaces.extend(self.scenario.apps.iter().map(|a| a.namespace.clone()));
        namespaces.extend(self.scenario.pods.iter().map(|p| p.namespace.clone()));
        namespaces.extend(self.scenario.quotas.iter().map(|q| q.namespace.clone()));
        namespaces.sort();
        namespaces.dedup();
        for ns in namespaces {
            let _ = self
                .store
                .create(Resource::Namespaces, "", json!({"metadata": {"name": ns}}));
        }
        for spec in self.scenario.nodes.clone() {
            for node in node_objects(&spec, &now) {
                let _ = self.store.create(Resource::Nodes, "", node);
            }
        }
        for p in self.scenario.pods.clone() {
            let pod = json!({"metadata": {"name": p.name, "labels": p.labels},
                             "spec": {"containers": [{"name": p.name.split('-').next().unwrap_or("app"), "image": p.image,
                                      "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}});
            let _ = self.store.create(Resource::Pods, &p.namespace, pod);
        }
        for q in self.scenario.quotas.clone() {
            let quota = json!({"metadata": {"name": q.name}, "spec": {"hard": q.hard}});
            let _ = self
                .store
                .create(Resource::ResourceQuotas, &q.namespace, quota);
        }
        self.store.recount_quotas();
    }

    /// One pass of every controller.
    pub fn step(&mut self) {
        let t = self.store.clock.elapsed_secs();
        self.cluster_timeline(t);
        self.drain_feed(t);
        for i in 0..self.drivers.len() {
            self.drive(i, t);
        }
        self.store.recount_quotas();
        self.schedule(t);
        self.kubelet(t);
        if t - self.last_gc > 5.0 {
            self.last_gc = t;
            self.expire_events();
        }
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}

/// The last `n` characters (scenario app names may be any UTF-8).
fn last_chars(s: &str, n: usize) -> &str {
    let start = s
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    &s[start..]
}

/// A pod's `(namespace, name)`, borrowed: finds an entry of a map keyed by owned strings
/// without allocating a key (it hashes as the owned tuple does).
#[derive(Hash)]
struct PodRef<'a>(&'a str, &'a str);

impl PodRef<'_> {
    fn of(p: &Obj) -> PodRef<'_> {
        PodRef(p.namespace(), p.name())
    }
}

impl hashbrown::Equivalent<(String, String)> for PodRef<'_> {
    fn equivalent(&self, key: &(String, String)) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

fn store_feed(store: &ObjectStore) -> broadcast::Receiver<Arc<crate::store::Change>> {
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

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::{Control, Resource};
    use crate::{clock::SimClock, logs::Logs, scenario, store::ObjectStore};

    /// Steps a scenario at speed 100 (one simulated second per 10 ms) until `done` holds or
    /// 60 simulated seconds pass.
    fn run_until(yaml: &str, done: impl Fn(&ObjectStore) -> bool) -> (Arc<ObjectStore>, Arc<Logs>) {
        let store = Arc::new(ObjectStore::new(
            SimClock::new(chrono::Utc::now(), 100.0),
            1000,
            7,
        ));
        let logs = Arc::new(Logs::default());
        let mut c = Control::new(
            store.clone(),
            logs.clone(),
            scenario::parse(yaml).expect("scenario"),
            7,
            Duration::from_secs(3600),
        );
        c.bootstrap();
        while store.clock.elapsed_secs() < 60.0 && !done(&store) {
            c.step();
            std::thread::sleep(Duration::from_millis(1));
        }
        (store, logs)
    }

    const QUOTA: &str = "name: q\nnodes: [{name: n, count: 2}]\n\
        quotas: [{namespace: spark-jobs, name: spark-quota, hard: {pods: \"2\"}}]\n\
        apps: [{name: starved, namespace: spark-jobs, executors: 3, maxFailures: 2, sparkVersion: VERSION}]\n";

    fn driver_log(store: &ObjectStore, logs: &Logs) -> String {
        let (pods, _) = store.list_all(Resource::Pods, &Default::default());
        let d = pods
            .iter()
            .find(|p| p.label("spark-role") == Some("driver"))
            .expect("driver pod");
        let c = d.field("/spec/containers/0/name");
        logs.read(d.namespace(), d.name(), c, false, None)
            .map(|r| r.lines.join("\n"))
            .unwrap_or_default()
    }

    fn driver_phase(store: &ObjectStore) -> Option<String> {
        let (pods, _) = store.list_all(Resource::Pods, &Default::default());
        pods.iter()
            .find(|p| p.label("spark-role") == Some("driver"))
            .map(|p| p.phase().to_owned())
    }

    #[test]
    fn spark_4_3_counts_refused_creations_and_aborts_the_app() {
        let (store, logs) = run_until(&QUOTA.replace("VERSION", "4.3.0"), |s| {
            driver_phase(s).as_deref() == Some("Failed")
        });
        assert_eq!(
            driver_phase(&store).as_deref(),
            Some("Failed"),
            "the app aborts"
        );
        let all = driver_log(&store, &logs);
        assert!(
            all.contains("Failed to create executor pod 2. Total failures: 1"),
            "{all}"
        );
        assert!(
            all.contains(
                "exceeded quota: spark-quota, requested: pods=1, used: pods=2, limited: pods=2"
            ),
            "{all}"
        );
        assert!(
            all.contains("Max number of executor failures (2) reached"),
            "{all}"
        );
    }

    #[test]
    fn before_4_3_refused_creations_are_retried_and_not_counted() {
        let (store, logs) = run_until(&QUOTA.replace("VERSION", "4.0.1"), |s| {
            s.clock.elapsed_secs() > 10.0
        });
        assert_eq!(driver_phase(&store).as_deref(), Some("Running"));
        let all = driver_log(&store, &logs);
        assert!(!all.contains("Total failures"), "{all}");
        // About one attempt per second, each using up an executor id.
        let tries = all
            .matches("Exception when notifying snapshot subscriber.")
            .count();
        assert!((5..=12).contains(&tries), "{tries} attempts in 10 s: {all}");
    }

    #[test]
    fn last_chars_is_char_safe() {
        assert_eq!(super::last_chars("abcdef", 3), "def");
        assert_eq!(super::last_chars("ab", 5), "ab");
        assert_eq!(super::last_chars("été-x", 3), "é-x");
    }
}
