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

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::process::{self, ProcessOptions, ProcessRuntime};
use super::{
    clock::fmt_time,
    kube_status::{container_status, set_all_containers, set_condition},
    logs::Logs,
    scenario::{AppSpec, DriverFate, ExecutorSel, Fate, NodeSpec, Scenario},
    store::{DeleteOptions, Obj, Query, Resource, Store},
};
use crate::model::quantity;
use crate::{
    classify::{ClassifyConfig, classify},
    model::{ExecutorPod, ExecutorState},
    selector::LabelSelector,
    spark,
};

/// Scenario seconds from bind to running containers.
const START_SECS: f64 = 1.5;
/// Spark's `apiPollingInterval` and `missingPodDetectDelta` defaults.
const POLL_SECS: f64 = 30.0;
const MISSING_DELTA_SECS: f64 = 30.0;
/// Repeated scheduler/kubelet warnings are counted on one event at most this often.
const EVENT_REPEAT_SECS: f64 = 10.0;

/// What the Spark-like drivers know, for their REST API behind the service proxy.
#[derive(Debug, Default)]
pub struct SparkRegistry {
    pub apps: Mutex<BTreeMap<String, AppView>>,
}

/// One application as its driver's REST API shows it.
#[derive(Debug, Clone, Default)]
pub struct AppView {
    pub app_id: String,
    pub name: String,
    pub namespace: String,
    pub driver_pod: String,
    pub service: String,
    pub start: Option<DateTime<Utc>>,
    pub executors: BTreeMap<i64, ExecView>,
}

/// One executor as Spark's `allexecutors` endpoint shows it.
#[derive(Debug, Clone, Default)]
pub struct ExecView {
    pub pod: String,
    pub host: String,
    pub cores: u32,
    pub max_memory: u64,
    pub add_time: Option<DateTime<Utc>>,
    pub remove_time: Option<DateTime<Utc>>,
    pub remove_reason: Option<String>,
    pub failed_tasks: u32,
    pub completed_tasks: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Vanish,
    Evict,
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
    action: Option<Action>,
    image_pull_error: Option<String>,
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
    /// Spark's snapshot: id → last pod seen (watch = upsert, poll = replace).
    snapshot: BTreeMap<i64, Arc<Obj>>,
    /// Ids Spark already removed (its `removedExecutorsCache`, without expiry).
    removed: BTreeMap<i64, String>,
    /// Ids created but not yet seen in any snapshot.
    newly_created: BTreeMap<i64, f64>,
    registered: BTreeMap<i64, f64>,
    last_poll: f64,
    /// Spark state per executor at the resourceVersion it was computed for.
    states: HashMap<i64, (u64, ExecutorState)>,
    /// Executors whose driver view departs from their pod (scenario `driver:` fates), with
    /// the fate's time.
    driver_fates: BTreeMap<i64, (DriverFate, Option<f64>)>,
}

impl Driver {
    fn driver_fate(&self, id: i64) -> Option<DriverFate> {
        self.driver_fates.get(&id).map(|(f, _)| *f)
    }
}

impl Driver {
    /// Spark's state of a snapshot pod, computed once per resourceVersion.
    fn state(&mut self, id: i64, pod: &Obj) -> ExecutorState {
        let rv = pod.rv();
        if let Some((at, s)) = self.states.get(&id)
            && *at == rv
        {
            return *s;
        }
        let s = state_of(pod, &ClassifyConfig::default());
        self.states.insert(id, (rv, s));
        s
    }
}

/// The control plane. Owned by one task; talks to the world only through the store.
#[derive(Debug)]
pub struct Control {
    store: Arc<Store>,
    logs: Arc<Logs>,
    pub registry: Arc<SparkRegistry>,
    scenario: Scenario,
    rng: fastrand::Rng,
    drivers: Vec<Driver>,
    runtimes: HashMap<(String, String), Runtime>,
    fates: HashMap<(String, String), PodFate>,
    event_names: HashMap<(String, String, String), (String, f64)>,
    timeline_done: Vec<bool>,
    feed: broadcast::Receiver<Arc<super::store::Change>>,
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

fn requests(pod: &Value) -> (f64, f64) {
    let mut cpu = 0.0;
    let mut mem = 0.0;
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        cpu += c["resources"]["requests"]["cpu"]
            .as_str()
            .and_then(quantity::parse)
            .unwrap_or(0.0);
        mem += c["resources"]["requests"]["memory"]
            .as_str()
            .and_then(quantity::parse)
            .unwrap_or(0.0);
    }
    (cpu, mem)
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

impl Control {
    pub fn new(
        store: Arc<Store>,
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
                    snapshot: BTreeMap::new(),
                    removed: BTreeMap::new(),
                    newly_created: BTreeMap::new(),
                    registered: BTreeMap::new(),
                    last_poll: 0.0,
                    states: HashMap::new(),
                    driver_fates: BTreeMap::new(),
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
            runtimes: HashMap::new(),
            fates: HashMap::new(),
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

    /// Whether this pod's containers run as processes here.
    fn is_process_pod(&self, pod: &Value) -> bool {
        self.procs.is_some() && process::executor_container(pod).is_some()
    }

    fn container_key(p: &Obj) -> process::Key {
        let c = process::executor_container(&p.value)
            .and_then(|c| c["name"].as_str())
            .unwrap_or_default();
        (p.namespace().to_owned(), p.name().to_owned(), c.to_owned())
    }

    /// Grace for a pod being deleted: what the deletion set, else the pod's own.
    fn grace_of(v: &Value) -> Duration {
        let secs = v["metadata"]["deletionGracePeriodSeconds"]
            .as_u64()
            .or_else(|| v["spec"]["terminationGracePeriodSeconds"].as_u64())
            .unwrap_or(30);
        Duration::from_secs(secs)
    }

    /// Starts the executor process of a pod whose containers are due to run.
    fn start_process(&mut self, p: &Obj, t: f64) {
        let store = self.store.clone();
        let ns = p.namespace().to_owned();
        let config_map = move |name: &str| {
            store
                .get(Resource::ConfigMaps, &ns, name)
                .map(|cm| cm.value["data"].clone())
        };
        let host_env = |k: &str| std::env::var(k).ok();
        let key = Self::container_key(p);
        let Some(procs) = self.procs.as_mut() else {
            return;
        };
        let planned = process::executor_container(&p.value)
            .ok_or_else(|| "no executor container".to_owned())
            .and_then(|c| process::plan(&p.value, c, &procs.opts, &config_map, &host_env));
        self.logs.start(&key.0, &key.1, &key.2);
        let started = planned.and_then(|l| procs.start(key.clone(), &l, self.logs.clone()));
        match started {
            Ok(pid) => {
                tracing::info!("process kubelet: {}/{} runs as pid {pid}", key.0, key.1);
                self.run_containers(p, t, true);
                self.set_stage(&(key.0, key.1), Stage::Running { since: t });
            }
            Err(e) => {
                self.logs.append(&key.0, &key.1, &key.2, e.clone());
                self.event(
                    &p.value,
                    "Warning",
                    "Failed",
                    &format!("Error: {e}"),
                    "kubelet",
                    t,
                );
                self.exit_containers(p, 128, "StartError", t);
            }
        }
    }

    /// Containers that ended since the last step become terminated container states.
    fn reap_processes(&mut self, t: f64) {
        let Some(procs) = self.procs.as_mut() else {
            return;
        };
        for ((ns, name, _), exit) in procs.poll() {
            let Some(p) = self.store.get(Resource::Pods, &ns, &name) else {
                continue;
            };
            tracing::info!(
                "process kubelet: {ns}/{name} exited {} ({}), peak memory {} MiB",
                exit.code,
                exit.reason,
                exit.peak_memory >> 20
            );
            if exit.reason == "OOMKilled" {
                self.event(
                    &p.value,
                    "Warning",
                    "OOMKilling",
                    &format!(
                        "Memory cgroup out of memory: Killed process tree of {name} (peak {} MiB)",
                        exit.peak_memory >> 20
                    ),
                    "kubelet",
                    t,
                );
            }
            self.exit_containers(&p, exit.code, exit.reason, t);
            if p.value["metadata"]["deletionTimestamp"].is_string() {
                self.final_delete(&p);
            }
        }
    }

    /// Creates the scenario's namespaces, nodes and plain pods.
    pub fn bootstrap(&mut self) {
        let now = fmt_time(self.store.clock.now());
        let mut namespaces = vec!["default".to_owned(), "kube-system".to_owned()];
        namespaces.extend(self.scenario.namespaces.iter().cloned());
        namespaces.extend(self.scenario.apps.iter().map(|a| a.namespace.clone()));
        namespaces.extend(self.scenario.pods.iter().map(|p| p.namespace.clone()));
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
    }

    /// One pass of every controller.
    pub fn step(&mut self) {
        let t = self.store.clock.elapsed_secs();
        self.cluster_timeline(t);
        self.drain_feed(t);
        for i in 0..self.drivers.len() {
            self.drive(i, t);
        }
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

    // ---- events -------------------------------------------------------------------

    /// Records an event about a pod; a repeat within a while bumps `count` on the same one.
    fn event(
        &mut self,
        pod: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        t: f64,
    ) {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = (ns.clone(), name.clone(), format!("{reason}\u{0}{message}"));
        let now = self.now();
        if let Some((ev_name, _)) = self.event_names.get(&key).cloned() {
            let updated = self.store.modify(Resource::Events, &ns, &ev_name, |e| {
                let c = e["count"].as_i64().unwrap_or(1);
                e["count"] = json!(c + 1);
                e["lastTimestamp"] = json!(now);
                true
            });
            if updated.is_some() {
                self.event_names.insert(key, (ev_name, t));
                return;
            }
        }
        let ev_name = format!(
            "{name}.{:x}",
            self.store.clock.now().timestamp_nanos_opt().unwrap_or(0) as u64 ^ self.rng.u64(..)
        );
        let host = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let source = if component == "kubelet" {
            json!({"component": component, "host": host})
        } else {
            json!({"component": component})
        };
        let ev = json!({
            "metadata": {"name": ev_name},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns,
                               "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"],
                               "fieldPath": if component == "kubelet" { json!("spec.containers{spark-kubernetes-executor}") } else { Value::Null }},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "eventTime": null,
            "source": source, "reportingComponent": if component == "kubelet" { "" } else { component },
            "reportingInstance": "",
        });
        if self.store.create(Resource::Events, &ns, ev).is_ok() {
            self.event_names.insert(key, (ev_name, t));
        }
    }

    fn should_repeat(&self, pod: &Value, reason: &str, message: &str, t: f64) -> bool {
        let key = (
            pod["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            format!("{reason}\u{0}{message}"),
        );
        self.event_names
            .get(&key)
            .is_none_or(|(_, last)| t - last >= EVENT_REPEAT_SECS)
    }

    fn expire_events(&mut self) {
        let now = self.store.clock.now();
        let ttl = chrono::Duration::from_std(self.event_ttl).unwrap_or(chrono::Duration::hours(1));
        let (events, _) = self.store.list_all(Resource::Events, &Query::default());
        for e in events {
            let last = e.value["lastTimestamp"]
                .as_str()
                .or_else(|| e.value["eventTime"].as_str())
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok());
            if let Some(last) = last
                && now - last.to_utc() > ttl
            {
                let _ = self.store.delete(
                    Resource::Events,
                    e.namespace(),
                    e.name(),
                    &DeleteOptions::default(),
                );
            }
        }
        let store = &self.store;
        self.event_names
            .retain(|(ns, _, _), (name, _)| store.get(Resource::Events, ns, name).is_some());
    }

    // ---- cluster timeline ----------------------------------------------------------

    fn cluster_timeline(&mut self, t: f64) {
        for i in 0..self.scenario.timeline.len() {
            if self.timeline_done[i] || self.scenario.timeline[i].at.as_secs_f64() > t {
                continue;
            }
            self.timeline_done[i] = true;
            let step = self.scenario.timeline[i].clone();
            if let Some(spec) = &step.add_node {
                let now = self.now();
                for node in node_objects(spec, &now) {
                    let _ = self.store.create(Resource::Nodes, "", node);
                }
            }
            if let Some(node) = &step.lose_node {
                let now = self.now();
                self.store.modify(Resource::Nodes, "", node, |n| {
                    n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                        "message": "Kubelet stopped posting node status.", "lastTransitionTime": now}]);
                    n["spec"]["taints"] = json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}]);
                    true
                });
                let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
                for p in pods
                    .iter()
                    .filter(|p| p.value["spec"]["nodeName"] == node.as_str())
                {
                    self.store
                        .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                            set_condition(v, "Ready", "False", "NodeNotReady", "", &now);
                            true
                        });
                    self.event(
                        &p.value,
                        "Warning",
                        "NodeNotReady",
                        "Node is not ready",
                        "node-controller",
                        t,
                    );
                    if let Some(rt) = self
                        .runtimes
                        .get_mut(&(p.namespace().to_owned(), p.name().to_owned()))
                    {
                        rt.stage = Stage::Done; // the kubelet is gone: nothing more happens on it
                    }
                }
            }
        }
    }

    // ---- scheduler -----------------------------------------------------------------

    fn schedule(&mut self, t: f64) {
        let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
        let (nodes, _) = self.store.list_all(Resource::Nodes, &Query::default());
        let mut used: HashMap<String, (f64, f64, u32)> = HashMap::new();
        for p in &pods {
            if let Some(n) = p.value["spec"]["nodeName"].as_str()
                && !is_terminal(&p.value)
            {
                let (c, m) = requests(&p.value);
                let e = used.entry(n.to_owned()).or_default();
                e.0 += c;
                e.1 += m;
                e.2 += 1;
            }
        }
        for p in pods {
            let v = &p.value;
            if v["spec"]["nodeName"].is_string()
                || v["metadata"]["deletionTimestamp"].is_string()
                || v["status"]["phase"] != "Pending"
            {
                continue;
            }
            let (cpu, mem) = requests(v);
            let mut reasons: BTreeMap<String, u32> = BTreeMap::new();
            let mut best: Option<(String, f64)> = None;
            for node in &nodes {
                let nv = &node.value;
                let name = node.name().to_owned();
                let ready = nv["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                let untolerated =
                    nv["spec"]["taints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|taint| {
                            matches!(taint["effect"].as_str(), Some("NoSchedule" | "NoExecute"))
                                && !v["spec"]["tolerations"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .any(|tol| {
                                        tol["key"] == taint["key"]
                                            && (tol["operator"] == "Exists"
                                                || tol["value"] == taint["value"])
                                    })
                        });
                if let Some(taint) = untolerated {
                    *reasons
                        .entry(format!(
                            "node(s) had untolerated taint {{{}: {}}}",
                            taint["key"].as_str().unwrap_or_default(),
                            taint["value"].as_str().unwrap_or_default()
                        ))
                        .or_default() += 1;
                    continue;
                }
                if !ready {
                    *reasons
                        .entry("node(s) were unschedulable".into())
                        .or_default() += 1;
                    continue;
                }
                let selector_ok = v["spec"]["nodeSelector"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .all(|(k, want)| nv["metadata"]["labels"][k] == *want);
                if !selector_ok {
                    *reasons
                        .entry("node(s) didn't match Pod's node affinity/selector".into())
                        .or_default() += 1;
                    continue;
                }
                let (uc, um, up) = used.get(&name).copied().unwrap_or_default();
                let alloc = |k: &str| {
                    nv["status"]["allocatable"][k]
                        .as_str()
                        .and_then(quantity::parse)
                        .unwrap_or(0.0)
                };
                let mut fits = true;
                if up + 1 > alloc("pods") as u32 {
                    *reasons.entry("Too many pods".into()).or_default() += 1;
                    fits = false;
                }
                if uc + cpu > alloc("cpu") + 1e-9 {
                    *reasons.entry("Insufficient cpu".into()).or_default() += 1;
                    fits = false;
                }
                if um + mem > alloc("memory") + 0.5 {
                    *reasons.entry("Insufficient memory".into()).or_default() += 1;
                    fits = false;
                }
                if fits {
                    let free = alloc("memory") - um;
                    if best.as_ref().is_none_or(|(_, f)| free > *f) {
                        best = Some((name, free));
                    }
                }
            }
            let now = self.now();
            match best {
                Some((node, _)) => {
                    let e = used.entry(node.clone()).or_default();
                    e.0 += cpu;
                    e.1 += mem;
                    e.2 += 1;
                    let bound = self
                        .store
                        .modify(Resource::Pods, p.namespace(), p.name(), |pv| {
                            pv["spec"]["nodeName"] = json!(node);
                            set_condition(pv, "PodScheduled", "True", "", "", &now);
                            true
                        });
                    if let Some(b) = bound {
                        let msg = format!(
                            "Successfully assigned {}/{} to {node}",
                            p.namespace(),
                            p.name()
                        );
                        self.event(
                            &b.value,
                            "Normal",
                            "Scheduled",
                            &msg,
                            "default-scheduler",
                            t,
                        );
                    }
                }
                None => {
                    let total = nodes.len();
                    let mut parts: Vec<String> =
                        reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
                    parts.sort();
                    let helpful = reasons
                        .keys()
                        .any(|r| r.starts_with("Insufficient") || r == "Too many pods");
                    let preemption = if helpful {
                        format!(
                            "0/{total} nodes are available: {total} No preemption victims found for incoming pod."
                        )
                    } else {
                        format!(
                            "0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
                        )
                    };
                    let msg = if total == 0 {
                        "no nodes available to schedule pods".to_owned()
                    } else {
                        format!(
                            "0/{total} nodes are available: {}. preemption: {preemption}",
                            parts.join(", ")
                        )
                    };
                    let changed = v["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|c| c["type"] == "PodScheduled")
                        .is_none_or(|c| c["message"] != msg.as_str());
                    if changed {
                        self.store
                            .modify(Resource::Pods, p.namespace(), p.name(), |pv| {
                                set_condition(
                                    pv,
                                    "PodScheduled",
                                    "False",
                                    "Unschedulable",
                                    &msg,
                                    &now,
                                );
                                true
                            });
                    }
                    if self.should_repeat(v, "FailedScheduling", &msg, t) {
                        self.event(
                            v,
                            "Warning",
                            "FailedScheduling",
                            &msg,
                            "default-scheduler",
                            t,
                        );
                    }
                }
            }
        }
    }

    // ---- kubelet -------------------------------------------------------------------

    fn kubelet(&mut self, t: f64) {
        self.reap_processes(t);
        let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
        let live: std::collections::HashSet<(String, String)> = pods
            .iter()
            .map(|p| (p.namespace().to_owned(), p.name().to_owned()))
            .collect();
        if let Some(procs) = self.procs.as_mut() {
            // A pod removed behind the kubelet's back (force-deleted, or gone with no event):
            // the kubelet still stops its containers, with the default grace.
            for (ns, name, c) in procs.keys() {
                if !live.contains(&(ns.clone(), name.clone())) {
                    tracing::info!("process kubelet: pod {ns}/{name} is gone: stopping it");
                    procs.stop_orphan(&(ns, name, c), Duration::from_secs(30));
                }
            }
        }
        self.runtimes.retain(|k, _| live.contains(k));
        for p in pods {
            let v = &p.value;
            if !v["spec"]["nodeName"].is_string() {
                // Unscheduled pods being deleted go at once (grace 0, as the API server forces).
                continue;
            }
            let key = (p.namespace().to_owned(), p.name().to_owned());
            let uid = v["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
            if !self.runtimes.contains_key(&key) {
                if is_terminal(v) {
                    self.runtimes.insert(
                        key.clone(),
                        Runtime {
                            uid,
                            stage: Stage::Done,
                            last_log: t,
                            log_seq: 0,
                            struck: true,
                        },
                    );
                } else {
                    self.start_pod(&p, t);
                    self.runtimes.insert(
                        key.clone(),
                        Runtime {
                            uid,
                            stage: Stage::Creating { since: t },
                            last_log: t,
                            log_seq: 0,
                            struck: false,
                        },
                    );
                    continue;
                }
            }
            let deleting = v["metadata"]["deletionTimestamp"].is_string();
            let Some(stage) = self.runtimes.get(&key).map(|r| r.stage) else {
                continue;
            };
            if deleting {
                self.terminate(&p, stage, t);
                continue;
            }
            match stage {
                Stage::Creating { since } if t - since >= START_SECS => {
                    let fate = self.fates.get(&key).cloned().unwrap_or_default();
                    if let Some(err) = fate.image_pull_error {
                        self.pull_failing(&p, &err, false, t);
                        self.set_stage(
                            &key,
                            Stage::PullFailing {
                                since: t,
                                backoff: false,
                                attempt: 0,
                            },
                        );
                    } else if self.is_process_pod(v) {
                        self.start_process(&p, t);
                    } else {
                        self.run_containers(&p, t, false);
                        self.set_stage(&key, Stage::Running { since: t });
                    }
                }
                // The kubelet's image back-off: ErrImagePull for a moment, then
                // ImagePullBackOff for 10 s, 20 s, 40 s … (capped at 300 s) before retrying.
                Stage::PullFailing {
                    since,
                    backoff,
                    attempt,
                } => {
                    let wait = if backoff {
                        (10.0 * 2f64.powi(attempt as i32)).min(300.0)
                    } else {
                        1.0
                    };
                    if t - since >= wait {
                        let err = self
                            .fates
                            .get(&key)
                            .and_then(|f| f.image_pull_error.clone())
                            .unwrap_or_default();
                        self.pull_failing(&p, &err, !backoff, t);
                        let attempt = if backoff { attempt + 1 } else { attempt };
                        self.set_stage(
                            &key,
                            Stage::PullFailing {
                                since: t,
                                backoff: !backoff,
                                attempt,
                            },
                        );
                    }
                }
                Stage::Running { .. } if self.is_process_pod(v) => {}
                Stage::Running { since } => {
                    self.write_logs(&p, t);
                    let fate = self.fates.get(&key).cloned().unwrap_or_default();
                    let struck = self.runtimes.get(&key).is_some_and(|r| r.struck);
                    let due = fate.at.map(|a| t >= a).unwrap_or(false)
                        || fate.after.map(|a| t - since >= a).unwrap_or(false);
                    if due && !struck {
                        if let Some(r) = self.runtimes.get_mut(&key) {
                            r.struck = true;
                        }
                        self.strike(&p, &fate, since, t);
                    }
                }
                Stage::Terminating { .. } => self.terminate(&p, stage, t),
                _ => {}
            }
        }
    }

    fn set_stage(&mut self, key: &(String, String), stage: Stage) {
        if let Some(r) = self.runtimes.get_mut(key) {
            r.stage = stage;
        }
    }

    fn image_of(v: &Value) -> String {
        v["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn start_pod(&mut self, p: &Obj, t: f64) {
        let now = self.now();
        let ip_tail = self.rng.u32(2..250);
        let pod_ip = if self.is_process_pod(&p.value) {
            process::POD_IP.to_owned()
        } else {
            format!("10.244.1.{ip_tail}")
        };
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["hostIP"] = json!("10.0.12.34");
                v["status"]["startTime"] = json!(now);
                set_condition(v, "PodReadyToStartContainers", "False", "", "", &now);
                set_condition(v, "Initialized", "True", "", "", &now);
                let names = super::kube_status::container_names(v).join(" ");
                set_condition(
                    v,
                    "Ready",
                    "False",
                    "ContainersNotReady",
                    &format!("containers with unready status: [{names}]"),
                    &now,
                );
                set_condition(
                    v,
                    "ContainersReady",
                    "False",
                    "ContainersNotReady",
                    &format!("containers with unready status: [{names}]"),
                    &now,
                );
                set_all_containers(
                    v,
                    &json!({"waiting": {"reason": "ContainerCreating"}}),
                    false,
                );
                v["status"]["podIP"] = Value::Null;
                v["metadata"]["annotations"]["sim.spark-triage.dev/pod-ip"] = json!(pod_ip);
                true
            });
        if let Some(u) = updated {
            let image = Self::image_of(&u.value);
            self.event(
                &u.value,
                "Normal",
                "Pulling",
                &format!("Pulling image \"{image}\""),
                "kubelet",
                t,
            );
        }
    }

    fn pull_failing(&mut self, p: &Obj, err: &str, backoff: bool, t: f64) {
        let image = Self::image_of(&p.value);
        let fail_msg = format!(
            "Failed to pull image \"{image}\": failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": unexpected status from HEAD request: {err}"
        );
        let (reason, message) = if backoff {
            (
                "ImagePullBackOff",
                format!("Back-off pulling image \"{image}\""),
            )
        } else {
            ("ErrImagePull", fail_msg.clone())
        };
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                set_all_containers(
                    v,
                    &json!({"waiting": {"reason": reason, "message": message}}),
                    false,
                );
                true
            });
        if let Some(u) = updated {
            if backoff {
                let m = format!("Back-off pulling image \"{image}\"");
                self.event(&u.value, "Normal", "BackOff", &m, "kubelet", t);
            } else {
                self.event(&u.value, "Warning", "Failed", &fail_msg, "kubelet", t);
                self.event(
                    &u.value,
                    "Warning",
                    "Failed",
                    "Error: ErrImagePull",
                    "kubelet",
                    t,
                );
            }
        }
    }

    /// Containers running: status, events and (unless a process writes it) the log.
    fn run_containers(&mut self, p: &Obj, t: f64, process: bool) {
        let now = self.now();
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["phase"] = json!("Running");
                let ip = v["metadata"]["annotations"]["sim.spark-triage.dev/pod-ip"].clone();
                v["status"]["podIP"] = ip.clone();
                v["status"]["podIPs"] = json!([{"ip": ip}]);
                set_condition(v, "PodReadyToStartContainers", "True", "", "", &now);
                set_condition(v, "Ready", "True", "", "", &now);
                set_condition(v, "ContainersReady", "True", "", "", &now);
                set_all_containers(v, &json!({"running": {"startedAt": now}}), true);
                true
            });
        let Some(u) = updated else { return };
        let image = Self::image_of(&u.value);
        self.event(
            &u.value,
            "Normal",
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "kubelet",
            t,
        );
        for c in super::kube_status::container_names(&u.value) {
            self.event(
                &u.value,
                "Normal",
                "Created",
                &format!("Created container: {c}"),
                "kubelet",
                t,
            );
            self.event(
                &u.value,
                "Normal",
                "Started",
                &format!("Started container {c}"),
                "kubelet",
                t,
            );
            if !process {
                self.logs.start(p.namespace(), p.name(), &c);
            }
        }
        if !process {
            self.log_start(&u.value);
        }
    }

    fn log_line(&self, level: &str, class: &str, msg: &str) -> String {
        let ts = self.store.clock.now().format("%y/%m/%d %H:%M:%S");
        format!("{ts} {level} {class}: {msg}")
    }

    fn log(&self, v: &Value, line: String) {
        let c = v["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap_or_default();
        self.logs.append(
            v["metadata"]["namespace"].as_str().unwrap_or_default(),
            v["metadata"]["name"].as_str().unwrap_or_default(),
            c,
            line,
        );
    }

    fn log_start(&self, v: &Value) {
        let name = v["metadata"]["name"].as_str().unwrap_or_default();
        let role = v["metadata"]["labels"]["spark-role"].as_str();
        let lines: Vec<String> = match role {
            Some("executor") => {
                let id = v["metadata"]["labels"]["spark-exec-id"]
                    .as_str()
                    .unwrap_or("?");
                let ip = v["status"]["podIP"].as_str().unwrap_or("10.244.1.2");
                vec![
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        &format!("Started daemon with process name: 14@{name}"),
                    ),
                    self.log_line("INFO", "SignalUtils", "Registering signal handler for TERM"),
                    self.log_line("INFO", "SignalUtils", "Registering signal handler for HUP"),
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        "Connecting to driver: spark://CoarseGrainedScheduler@driver-svc:7078",
                    ),
                    self.log_line(
                        "INFO",
                        "CoarseGrainedExecutorBackend",
                        "Successfully registered with driver",
                    ),
                    self.log_line(
                        "INFO",
                        "Executor",
                        &format!("Starting executor ID {id} on host {ip}"),
                    ),
                ]
            }
            Some("driver") => vec![
                self.log_line("INFO", "SparkContext", "Running Spark version 4.0.1"),
                self.log_line(
                    "INFO",
                    "SparkContext",
                    &format!(
                        "Submitted application: {}",
                        v["metadata"]["labels"]["spark-app-name"]
                            .as_str()
                            .unwrap_or_default()
                    ),
                ),
                self.log_line(
                    "INFO",
                    "Utils",
                    "Successfully started service 'sparkDriver' on port 7078.",
                ),
                self.log_line(
                    "INFO",
                    "SparkUI",
                    "Bound SparkUI to 0.0.0.0, and started at http://driver-svc:4040",
                ),
            ],
            _ => vec![format!("{} started", name)],
        };
        for l in lines {
            self.log(v, l);
        }
    }

    fn write_logs(&mut self, p: &Obj, t: f64) {
        let key = (p.namespace().to_owned(), p.name().to_owned());
        let Some(rt) = self.runtimes.get_mut(&key) else {
            return;
        };
        if t - rt.last_log < 2.0 {
            return;
        }
        rt.last_log = t;
        rt.log_seq += 1;
        let seq = rt.log_seq;
        if p.value["metadata"]["labels"]["spark-role"] == "executor" {
            let stage = seq / 8;
            let task = seq % 8;
            let tid = seq * 3 + 1;
            let line = self.log_line(
                "INFO",
                "Executor",
                &format!("Running task {task}.0 in stage {stage}.0 (TID {tid})"),
            );
            self.log(&p.value, line);
            let line = self.log_line("INFO", "Executor", &format!("Finished task {task}.0 in stage {stage}.0 (TID {tid}). 2104 bytes result sent to driver"));
            self.log(&p.value, line);
        }
    }

    /// The fate strikes a running pod.
    fn strike(&mut self, p: &Obj, fate: &PodFate, _since: f64, t: f64) {
        match fate.action {
            Some(Action::Vanish) => {
                self.store.vanish(Resource::Pods, p.namespace(), p.name());
                self.logs.remove_pod(p.namespace(), p.name());
                return;
            }
            Some(Action::Delete) => {
                let _ = self.store.delete(
                    Resource::Pods,
                    p.namespace(),
                    p.name(),
                    &DeleteOptions::default(),
                );
                return;
            }
            Some(Action::Evict) => {
                self.evict(p, t);
                return;
            }
            Some(Action::Preempt) => {
                let now = self.now();
                let updated = self.store.modify(Resource::Pods, p.namespace(), p.name(), |v| {
                    set_condition(v, "DisruptionTarget", "True", "PreemptionByScheduler",
                        "Scheduler: preempting to accommodate a higher priority pod, scheduled by \"default-scheduler\"", &now);
                    true
                });
                if let Some(u) = updated {
                    let node = u.value["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let by = format!(
                        "{}-{}-{}-{}-{}",
                        hex(&mut self.rng, 8),
                        hex(&mut self.rng, 4),
                        hex(&mut self.rng, 4),
                        hex(&mut self.rng, 4),
                        hex(&mut self.rng, 12)
                    );
                    self.event(
                        &u.value,
                        "Normal",
                        "Preempted",
                        &format!("Preempted by pod {by} on node {node}"),
                        "default-scheduler",
                        t,
                    );
                }
                let _ = self.store.delete(
                    Resource::Pods,
                    p.namespace(),
                    p.name(),
                    &DeleteOptions::default(),
                );
                return;
            }
            None => {}
        }
        let Some((code, reason)) = fate.exit.clone() else {
            return;
        };
        let pre: Vec<String> = match code {
            52 => vec![
                self.log_line("ERROR", "Executor", "Exception in task 5.0 in stage 2.0 (TID 41)"),
                "java.lang.OutOfMemoryError: Java heap space".to_owned(),
                "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)".to_owned(),
                "\tat org.apache.spark.util.collection.PartitionedPairBuffer.growArray(PartitionedPairBuffer.scala:67)".to_owned(),
                self.log_line("ERROR", "SparkUncaughtExceptionHandler", "Uncaught exception in thread Thread[Executor task launch worker for task 5.0 in stage 2.0 (TID 41),5,main]"),
                "java.lang.OutOfMemoryError: Java heap space".to_owned(),
            ],
            56 => vec![
                self.log_line("WARN", "Executor", "Issue communicating with driver in heartbeater"),
                "org.apache.spark.rpc.RpcTimeoutException: Futures timed out after [10000 milliseconds]. This timeout is controlled by spark.executor.heartbeatInterval".to_owned(),
                self.log_line("ERROR", "Executor", "Exit as unable to send heartbeats to driver more than 60 times"),
            ],
            50 => vec![self.log_line("ERROR", "SparkUncaughtExceptionHandler", "Uncaught exception in thread Thread[dispatcher-Executor,5,main]")],
            _ => Vec::new(),
        };
        for l in pre {
            self.log(&p.value, l);
        }
        self.exit_containers(p, code, &reason, t);
    }

    fn exit_containers(&mut self, p: &Obj, code: i32, reason: &str, t: f64) {
        let now = self.now();
        let updated = self.store.modify(Resource::Pods, p.namespace(), p.name(), |v| {
            let started = v["status"]["containerStatuses"][0]["state"]["running"]["startedAt"].clone();
            let term = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now,
                                             "containerID": "containerd://5f0d1c2b3a49"}});
            let specs = v["spec"]["containers"].as_array().cloned().unwrap_or_default();
            let statuses: Vec<Value> = specs
                .iter()
                .map(|c| container_status(c["name"].as_str().unwrap_or_default(), c["image"].as_str().unwrap_or_default(), term.clone(), false, 0))
                .collect();
            v["status"]["containerStatuses"] = json!(statuses);
            v["status"]["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
            let why = if code == 0 { "PodCompleted" } else { "PodFailed" };
            set_condition(v, "Ready", "False", why, "", &now);
            set_condition(v, "ContainersReady", "False", why, "", &now);
            set_condition(v, "PodReadyToStartContainers", "False", "", "", &now);
            true
        });
        for c in super::kube_status::container_names(&p.value) {
            self.logs.finish(p.namespace(), p.name(), &c);
        }
        if updated.is_some() {
            self.set_stage(
                &(p.namespace().to_owned(), p.name().to_owned()),
                Stage::Done,
            );
        }
        let _ = t;
    }

    fn evict(&mut self, p: &Obj, t: f64) {
        let now = self.now();
        let msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 88512Ki. Container spark-kubernetes-executor was using 2912Mi, request is 2432Mi, has larger consumption of memory. ";
        // Kubelets up to 1.21 leave the container statuses as last seen (not ready), which is
        // what makes kubectl print `Evicted`.
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["phase"] = json!("Failed");
                v["status"]["reason"] = json!("Evicted");
                v["status"]["message"] = json!(msg);
                set_condition(
                    v,
                    "DisruptionTarget",
                    "True",
                    "TerminationByKubelet",
                    msg.trim(),
                    &now,
                );
                set_condition(v, "Ready", "False", "PodFailed", "", &now);
                if let Some(list) = v["status"]["containerStatuses"].as_array_mut() {
                    for c in list {
                        c["ready"] = json!(false);
                    }
                }
                true
            });
        if let Some(u) = updated {
            self.event(&u.value, "Warning", "Evicted", msg.trim(), "kubelet", t);
            self.event(
                &u.value,
                "Normal",
                "Killing",
                "Stopping container spark-kubernetes-executor",
                "kubelet",
                t,
            );
        }
        for c in super::kube_status::container_names(&p.value) {
            self.logs.finish(p.namespace(), p.name(), &c);
        }
        self.set_stage(
            &(p.namespace().to_owned(), p.name().to_owned()),
            Stage::Done,
        );
    }

    /// Graceful termination: SIGTERM (143 after a moment), then the final DELETE.
    fn terminate(&mut self, p: &Obj, stage: Stage, t: f64) {
        let key = (p.namespace().to_owned(), p.name().to_owned());
        if self.is_process_pod(&p.value)
            && let Some(procs) = self.procs.as_mut()
        {
            let ckey = Self::container_key(p);
            if procs.is_running(&ckey) {
                // SIGTERM now, SIGKILL after the grace; the exit is reaped like any other.
                if matches!(stage, Stage::Running { .. }) {
                    procs.stop(&ckey, Self::grace_of(&p.value));
                    self.event(
                        &p.value,
                        "Normal",
                        "Killing",
                        &format!("Stopping container {}", ckey.2),
                        "kubelet",
                        t,
                    );
                    self.set_stage(
                        &key,
                        Stage::Terminating {
                            exit_at: f64::INFINITY,
                            code: 137,
                        },
                    );
                }
                return;
            }
        }
        match stage {
            Stage::Running { .. } => {
                self.log(
                    &p.value,
                    self.log_line(
                        "ERROR",
                        "CoarseGrainedExecutorBackend",
                        "RECEIVED SIGNAL TERM",
                    ),
                );
                self.event(
                    &p.value,
                    "Normal",
                    "Killing",
                    &format!(
                        "Stopping container {}",
                        p.value["spec"]["containers"][0]["name"]
                            .as_str()
                            .unwrap_or_default()
                    ),
                    "kubelet",
                    t,
                );
                self.set_stage(
                    &key,
                    Stage::Terminating {
                        exit_at: t + 0.5,
                        code: 143,
                    },
                );
            }
            Stage::Terminating { exit_at, code } if t >= exit_at => {
                self.exit_containers(p, code, "Error", t);
                self.final_delete(p);
            }
            Stage::Terminating { .. } => {}
            _ => self.final_delete(p),
        }
    }

    fn final_delete(&mut self, p: &Obj) {
        let Some(current) = self.store.get(Resource::Pods, p.namespace(), p.name()) else {
            return;
        };
        if current.value["metadata"]["deletionGracePeriodSeconds"] == json!(0) {
            return; // done already; only finalizers keep it
        }
        let uid = self
            .runtimes
            .get(&(p.namespace().to_owned(), p.name().to_owned()))
            .map(|r| r.uid.clone());
        let _ = self.store.delete(
            Resource::Pods,
            p.namespace(),
            p.name(),
            &DeleteOptions {
                grace_period_seconds: Some(0),
                precondition_uid: uid,
                ..DeleteOptions::default()
            },
        );
        self.set_stage(
            &(p.namespace().to_owned(), p.name().to_owned()),
            Stage::Done,
        );
    }

    // ---- Spark-like drivers --------------------------------------------------------

    fn drain_feed(&mut self, t: f64) {
        loop {
            match self.feed.try_recv() {
                Ok(c) => {
                    if c.resource != Resource::Pods {
                        continue;
                    }
                    let labels = &c.new.value["metadata"]["labels"];
                    if labels["spark-role"] != "executor" {
                        continue;
                    }
                    let Some(id) = labels["spark-exec-id"]
                        .as_str()
                        .and_then(|s| s.parse::<i64>().ok())
                    else {
                        continue;
                    };
                    for d in &mut self.drivers {
                        if labels["spark-app-selector"] == d.app_id.as_str()
                            && c.new.namespace() == d.spec.namespace
                        {
                            // Spark's watch ignores the event type: every event upserts.
                            d.snapshot.insert(id, c.new.clone());
                            d.newly_created.remove(&id);
                        }
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    for d in &mut self.drivers {
                        d.last_poll = t - POLL_SECS; // relist now
                    }
                }
                Err(broadcast::error::TryRecvError::Closed) => {
                    self.feed = store_feed(&self.store);
                    return;
                }
            }
        }
    }

    fn drive(&mut self, i: usize, t: f64) {
        let start = self.drivers[i].spec.start.map_or(0.0, |d| d.as_secs_f64());
        if t < start {
            return;
        }
        if !self.drivers[i].started {
            self.start_app(i);
            return;
        }
        let (ns, driver_pod) = (
            self.drivers[i].spec.namespace.clone(),
            self.drivers[i].driver_pod.clone(),
        );
        let driver_running = self
            .store
            .get(Resource::Pods, &ns, &driver_pod)
            .is_some_and(|d| d.value["status"]["phase"] == "Running");
        if !driver_running || self.drivers[i].finished {
            return;
        }
        // The poll: a full list replaces the snapshot.
        if t - self.drivers[i].last_poll >= POLL_SECS {
            self.drivers[i].last_poll = t;
            let d = &self.drivers[i];
            let q = Query {
                namespace: Some(ns.clone()),
                labels: LabelSelector::parse(&format!(
                    "spark-app-selector={},spark-role=executor,spark-exec-inactive!=true",
                    d.app_id
                ))
                .unwrap_or_default(),
                ..Query::default()
            };
            let (pods, _) = self.store.list_all(Resource::Pods, &q);
            let snapshot: BTreeMap<i64, Arc<Obj>> = pods
                .into_iter()
                .filter_map(|p| {
                    Some((
                        p.value["metadata"]["labels"]["spark-exec-id"]
                            .as_str()?
                            .parse()
                            .ok()?,
                        p,
                    ))
                })
                .collect();
            let d = &mut self.drivers[i];
            for id in snapshot.keys() {
                d.newly_created.remove(id);
            }
            d.snapshot = snapshot;
            self.detect_missing(i, t);
        }
        self.zombies(i, t);
        self.lifecycle(i, t);
        self.allocate(i, t);
    }

    /// `zombie` fates: the driver removes the executor (a heartbeat timeout) but its pod is
    /// never deleted.
    fn zombies(&mut self, i: usize, t: f64) {
        let due: Vec<i64> = self.drivers[i]
            .driver_fates
            .iter()
            .filter(|(id, (f, at))| {
                *f == DriverFate::Zombie
                    && at.is_some_and(|a| t >= a)
                    && self.drivers[i].registered.contains_key(id)
                    && !self.drivers[i].removed.contains_key(id)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let msg = "Executor heartbeat timed out after 120000 ms".to_owned();
            self.drivers[i].removed.insert(id, msg.clone());
            self.registry_update(i, id, |e, now| {
                e.remove_time = Some(now);
                e.remove_reason = Some(msg.clone());
            });
            let (ns, driver_pod) = (
                self.drivers[i].spec.namespace.clone(),
                self.drivers[i].driver_pod.clone(),
            );
            if let Some(dp) = self.store.get(Resource::Pods, &ns, &driver_pod) {
                let line = self.log_line(
                    "WARN",
                    "HeartbeatReceiver",
                    &format!("Removing executor {id} with no recent heartbeats: 120000 ms exceeds timeout 120000 ms"),
                );
                self.log(&dp.value, line);
            }
        }
    }

    fn start_app(&mut self, i: usize) {
        let d = &self.drivers[i];
        let (ns, prefix, app_id) = (d.spec.namespace.clone(), d.prefix.clone(), d.app_id.clone());
        let labels = json!({"spark-app-selector": app_id, "spark-role": "driver", "spark-app-name": d.spec.name, "spark-version": "4.0.1"});
        let cm_name = format!("spark-drv-{}-conf-map", last_chars(&prefix, 16));
        let props = format!(
            "spark.app.name={}\nspark.app.id={app_id}\nspark.executor.instances={}\nspark.executor.cores={}\nspark.executor.memory={}m\n\
             spark.executor.memoryOverhead={}m\nspark.kubernetes.namespace={ns}\nspark.kubernetes.driver.pod.name={}\n\
             spark.kubernetes.executor.podNamePrefix={prefix}\nspark.kubernetes.container.image={}\n\
             spark.kubernetes.executor.deleteOnTermination={}\nspark.kubernetes.executor.apiPollingInterval=30s\n",
            d.spec.name,
            d.spec.executors,
            d.spec.cores,
            d.spec.memory_mib,
            d.spec.overhead_mib,
            d.driver_pod,
            d.spec.image,
            d.spec.delete_on_termination
        );
        let props = d
            .spec
            .conf
            .iter()
            .fold(props, |acc, (k, v)| format!("{acc}{k}={v}\n"));
        let _ = self.store.create(
            Resource::ConfigMaps,
            &ns,
            json!({"metadata": {"name": cm_name}, "data": {"spark.properties": props}}),
        );
        let driver = json!({
            "metadata": {"name": d.driver_pod, "labels": labels},
            "spec": {"restartPolicy": "Never", "serviceAccountName": "spark",
                     "containers": [{"name": "spark-kubernetes-driver", "image": d.spec.image, "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties"],
                                     "ports": [{"name": "driver-rpc-port", "containerPort": 7078}, {"name": "blockmanager", "containerPort": 7079}, {"name": "spark-ui", "containerPort": 4040}],
                                     "resources": {"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}},
                                     "volumeMounts": [{"name": "spark-conf-volume-driver", "mountPath": "/opt/spark/conf"}]}],
                     "volumes": [{"name": "spark-conf-volume-driver", "configMap": {"name": cm_name, "items": [{"key": "spark.properties", "path": "spark.properties"}]}}]}
        });
        let _ = self.store.create(Resource::Pods, &ns, driver);
        let svc = json!({"metadata": {"name": d.service, "labels": {"spark-app-selector": app_id}},
            "spec": {"clusterIP": "None", "selector": {"spark-app-selector": app_id, "spark-role": "driver"},
                     "ports": [{"name": "driver-rpc-port", "port": 7078, "targetPort": 7078, "protocol": "TCP"},
                               {"name": "blockmanager", "port": 7079, "targetPort": 7079, "protocol": "TCP"},
                               {"name": "spark-ui", "port": 4040, "targetPort": 4040, "protocol": "TCP"}]}});
        let _ = self.store.create(Resource::Services, &ns, svc);
        let view = AppView {
            app_id: app_id.clone(),
            name: d.spec.name.clone(),
            namespace: ns,
            driver_pod: d.driver_pod.clone(),
            service: d.service.clone(),
            start: Some(self.store.clock.now()),
            executors: BTreeMap::new(),
        };
        self.registry
            .apps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(app_id, view);
        self.drivers[i].started = true;
        self.drivers[i].last_poll = self.store.clock.elapsed_secs();
    }

    fn resolve_fate(&mut self, i: usize, id: i64) -> (PodFate, Option<Fate>) {
        let spec = &self.drivers[i].spec;
        let fate = spec
            .fates
            .iter()
            .find(|f| f.executor == ExecutorSel::Id(id))
            .or_else(|| spec.fates.iter().find(|f| f.executor == ExecutorSel::All))
            .cloned();
        let Some(f) = fate.clone() else {
            return (PodFate::default(), None);
        };
        let action = match f.action.as_deref() {
            Some("vanish") => Some(Action::Vanish),
            Some("evict") => Some(Action::Evict),
            Some("preempt") => Some(Action::Preempt),
            Some("delete") => Some(Action::Delete),
            _ => None,
        };
        let after = f.after_running(&mut self.rng).map(|d| d.as_secs_f64());
        (
            PodFate {
                at: f.at.map(|d| d.as_secs_f64()),
                after,
                exit: f.exit.map(|c| {
                    (
                        c,
                        f.reason.clone().unwrap_or_else(|| {
                            if c == 0 {
                                "Completed".into()
                            } else {
                                "Error".into()
                            }
                        }),
                    )
                }),
                action,
                image_pull_error: f.image_pull_error.clone(),
            },
            fate,
        )
    }

    fn create_executor(&mut self, i: usize, t: f64) {
        let id = self.drivers[i].next_id;
        self.drivers[i].next_id += 1;
        let (fate, raw) = self.resolve_fate(i, id);
        let d = &self.drivers[i];
        let name = format!("{}-exec-{id}", d.prefix);
        let ns = d.spec.namespace.clone();
        let driver_uid = self
            .store
            .get(Resource::Pods, &ns, &d.driver_pod)
            .and_then(|p| p.value["metadata"]["uid"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let mem = raw
            .as_ref()
            .and_then(|f| f.memory.clone())
            .unwrap_or_else(|| format!("{}Mi", d.spec.memory_mib + d.spec.overhead_mib));
        let image = if fate.image_pull_error.is_some() {
            format!("registry.example.com/data/spark:{}-etl", "4.0.1")
        } else {
            d.spec.image.clone()
        };
        let mut pod = json!({
            "metadata": {"name": name,
                "labels": {"spark-app-selector": d.app_id, "spark-role": "executor", "spark-exec-id": id.to_string(),
                           "spark-exec-resourceprofile-id": "0", "spark-app-name": d.spec.name, "spark-version": "4.0.1"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": d.driver_pod, "uid": driver_uid, "controller": true}]},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "hostname": name.chars().rev().take(63).collect::<String>().chars().rev().collect::<String>(),
                "serviceAccountName": "spark",
                "containers": [{"name": "spark-kubernetes-executor", "image": image, "imagePullPolicy": "IfNotPresent", "args": ["executor"],
                    "ports": [{"name": "blockmanager", "containerPort": 7079, "protocol": "TCP"}],
                    "env": [{"name": "SPARK_USER", "value": "spark"},
                            {"name": "SPARK_DRIVER_URL", "value": format!("spark://CoarseGrainedScheduler@{}.{ns}.svc:7078", d.service)},
                            {"name": "SPARK_EXECUTOR_CORES", "value": d.spec.cores.to_string()},
                            {"name": "SPARK_EXECUTOR_MEMORY", "value": format!("{}m", d.spec.memory_mib)},
                            {"name": "SPARK_APPLICATION_ID", "value": d.app_id},
                            {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"},
                            {"name": "SPARK_EXECUTOR_ID", "value": id.to_string()},
                            {"name": "SPARK_RESOURCE_PROFILE_ID", "value": "0"},
                            {"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                            {"name": "SPARK_EXECUTOR_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "SPARK_LOCAL_DIRS", "value": "/var/data/spark-3f1b9c2e"}],
                    "resources": {"requests": {"cpu": d.spec.cores.to_string(), "memory": mem}, "limits": {"memory": mem}},
                    "volumeMounts": [{"name": "spark-local-dir-1", "mountPath": "/var/data/spark-3f1b9c2e"},
                                     {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"}]}],
                "volumes": [{"name": "spark-local-dir-1", "emptyDir": {}},
                            {"name": "spark-conf-volume-exec", "configMap": {"name": format!("spark-exec-{}-conf-map", last_chars(&d.prefix, 16))}}]}
        });
        if let Some(f) = &raw
            && !f.node_selector.is_empty()
        {
            pod["spec"]["nodeSelector"] = json!(f.node_selector);
        }
        if self.store.create(Resource::Pods, &ns, pod).is_ok() {
            self.fates.insert((ns, name), fate);
            self.drivers[i].newly_created.insert(id, t);
            if let Some(f) = raw.as_ref()
                && let Some(df) = f.driver
            {
                let at = f.at.map(|d| d.as_secs_f64());
                self.drivers[i].driver_fates.insert(id, (df, at));
            }
        }
    }

    fn allocate(&mut self, i: usize, t: f64) {
        let d = &mut self.drivers[i];
        if d.finished {
            return;
        }
        let mut count = d.newly_created.len() as u32;
        let pods: Vec<(i64, Arc<Obj>)> = d.snapshot.iter().map(|(k, v)| (*k, v.clone())).collect();
        // The driver never saw these go (a `lost-pod` fate): it still counts them.
        let lost: Vec<i64> = d
            .driver_fates
            .iter()
            .filter(|(id, (f, _))| *f == DriverFate::LostPod && d.registered.contains_key(id))
            .map(|(id, _)| *id)
            .collect();
        count += lost.len() as u32;
        for (id, pod) in pods {
            if lost.contains(&id) {
                continue;
            }
            if matches!(
                d.state(id, &pod),
                ExecutorState::Running | ExecutorState::Pending
            ) {
                count += 1;
            }
        }
        // spark.kubernetes.allocation.batch.size (10 in Spark 4.0) per round.
        let want = d
            .spec
            .executors
            .saturating_sub(count)
            .min(d.spec.allocation_batch);
        for _ in 0..want {
            self.create_executor(i, t);
        }
    }

    fn lifecycle(&mut self, i: usize, t: f64) {
        let config = ClassifyConfig::default();
        let ids: Vec<(i64, Arc<Obj>)> = self.drivers[i]
            .snapshot
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        for (id, pod) in ids {
            if pod.value["metadata"]["labels"]["spark-exec-inactive"] == "true" {
                continue;
            }
            let state = self.drivers[i].state(id, &pod);
            let fate = self.drivers[i].driver_fate(id);
            if fate == Some(DriverFate::Unregistered) {
                continue; // never reaches the driver: nothing to register or remove
            }
            if state == ExecutorState::Running && !self.drivers[i].registered.contains_key(&id) {
                self.drivers[i].registered.insert(id, t);
                self.registry_update(i, id, |e, now| {
                    e.add_time.get_or_insert(now);
                });
            }
            if fate == Some(DriverFate::LostPod)
                || !matches!(
                    state,
                    ExecutorState::Deleted | ExecutorState::Failed | ExecutorState::Succeeded
                )
            {
                continue;
            }
            if state == ExecutorState::Failed && !self.drivers[i].failed_ids.contains(&id) {
                self.drivers[i].failed_ids.push(id);
            }
            let d = &self.drivers[i];
            if !d.removed.contains_key(&id) {
                let ep = to_executor_pod(&pod);
                let msg = spark::spark_view(&ep, state, &config)
                    .map(|v| v.message)
                    .unwrap_or_default();
                self.drivers[i].removed.insert(id, msg.clone());
                self.registry_update(i, id, |e, now| {
                    e.remove_time = Some(now);
                    e.remove_reason = Some(msg.trim().to_owned());
                });
                let driver_pod = self.drivers[i].driver_pod.clone();
                if let Some(dp) =
                    self.store
                        .get(Resource::Pods, &self.drivers[i].spec.namespace, &driver_pod)
                {
                    let line = match state {
                        ExecutorState::Deleted => {
                            self.log_line("INFO", "ExecutorPodsLifecycleManager", msg.trim())
                        }
                        _ => self.log_line(
                            "ERROR",
                            "TaskSchedulerImpl",
                            &format!(
                                "Lost executor {id} on {}: {}",
                                pod.value["status"]["podIP"].as_str().unwrap_or("?"),
                                msg.trim()
                            ),
                        ),
                    };
                    self.log(&dp.value, line);
                }
            }
            if state == ExecutorState::Deleted {
                continue;
            }
            // removeExecutorFromK8s: delete (unless already deleting), or label it inactive.
            let (ns, name) = (pod.namespace().to_owned(), pod.name().to_owned());
            if self.drivers[i].spec.delete_on_termination {
                if !pod.value["metadata"]["deletionTimestamp"].is_string()
                    && self
                        .store
                        .get(Resource::Pods, &ns, &name)
                        .is_some_and(|p| !p.value["metadata"]["deletionTimestamp"].is_string())
                {
                    let _ =
                        self.store
                            .delete(Resource::Pods, &ns, &name, &DeleteOptions::default());
                }
            } else {
                self.store.modify(Resource::Pods, &ns, &name, |v| {
                    if v["metadata"]["labels"]["spark-exec-inactive"] == "true" {
                        return false;
                    }
                    v["metadata"]["labels"]["spark-exec-inactive"] = json!("true");
                    true
                });
            }
        }
        // spark.executor.maxNumFailures: the driver gives up with exit code 11.
        let d = &self.drivers[i];
        if d.failed_ids.len() as u32 > d.max_failures && !d.finished {
            self.fail_app(i, t);
        }
    }

    fn detect_missing(&mut self, i: usize, t: f64) {
        let d = &self.drivers[i];
        let missing: Vec<(i64, f64)> = d
            .registered
            .iter()
            .filter(|(id, reg)| {
                !d.snapshot.contains_key(id)
                    && !d.removed.contains_key(id)
                    && d.driver_fate(**id) != Some(DriverFate::LostPod)
                    && t - **reg > MISSING_DELTA_SECS
            })
            .map(|(id, reg)| (*id, *reg))
            .collect();
        for (id, reg) in missing {
            let start = self.drivers[i].spec.start.map_or(0.0, |d| d.as_secs_f64());
            let msg = format!(
                "The executor with ID {id} (registered at {} ms) was not found in the cluster at the polling time ({} ms) which is after the accepted detect delta time ({} ms) configured by `spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the driver missed the deletion event. Marking this executor as failed.",
                ((reg - start) * 1000.0) as i64,
                ((t - start) * 1000.0) as i64,
                (MISSING_DELTA_SECS * 1000.0) as i64
            );
            self.drivers[i].removed.insert(id, msg.clone());
            self.registry_update(i, id, |e, now| {
                e.remove_time = Some(now);
                e.remove_reason = Some(msg.clone());
            });
        }
    }

    fn fail_app(&mut self, i: usize, t: f64) {
        self.drivers[i].finished = true;
        let d = &self.drivers[i];
        let (ns, app_id, driver_pod, max) = (
            d.spec.namespace.clone(),
            d.app_id.clone(),
            d.driver_pod.clone(),
            d.max_failures,
        );
        if let Some(dp) = self.store.get(Resource::Pods, &ns, &driver_pod) {
            let line = self.log_line(
                "ERROR",
                "ExecutorPodsAllocator",
                &format!("Max number of executor failures ({max}) reached"),
            );
            self.log(&dp.value, line);
            self.exit_containers(&dp, 11, "Error", t);
        }
        // SparkContext.stop(): executor pods deleted by label.
        let q = Query {
            namespace: Some(ns.clone()),
            labels: LabelSelector::parse(&format!(
                "spark-app-selector={app_id},spark-role=executor"
            ))
            .unwrap_or_default(),
            ..Query::default()
        };
        let (pods, _) = self.store.list_all(Resource::Pods, &q);
        for p in pods {
            let _ = self
                .store
                .delete(Resource::Pods, &ns, p.name(), &DeleteOptions::default());
        }
    }

    fn registry_update(&self, i: usize, id: i64, f: impl FnOnce(&mut ExecView, DateTime<Utc>)) {
        let d = &self.drivers[i];
        let now = self.store.clock.now();
        let mut apps = self.registry.apps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(app) = apps.get_mut(&d.app_id) {
            let e = app.executors.entry(id).or_insert_with(|| ExecView {
                pod: format!("{}-exec-{id}", d.prefix),
                host: String::new(),
                cores: d.spec.cores,
                max_memory: d.spec.memory_mib * 1024 * 1024 * 6 / 10,
                ..ExecView::default()
            });
            f(e, now);
        }
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

fn store_feed(store: &Store) -> broadcast::Receiver<Arc<super::store::Change>> {
    // A subscription with no replay: the control plane starts with the store.
    store
        .subscribe(Resource::Pods, &Query::default(), None)
        .map(|s| s.rx)
        .unwrap_or_else(|_| broadcast::channel(1).1)
}

fn to_executor_pod(pod: &Obj) -> ExecutorPod {
    let p: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(pod.value.clone()).unwrap_or_default();
    ExecutorPod::from_pod(&p)
}

fn state_of(pod: &Obj, config: &ClassifyConfig) -> ExecutorState {
    classify(&to_executor_pod(pod), config)
}

#[cfg(test)]
mod tests {
    #[test]
    fn last_chars_is_char_safe() {
        assert_eq!(super::last_chars("abcdef", 3), "def");
        assert_eq!(super::last_chars("ab", 5), "ab");
        assert_eq!(super::last_chars("été-x", 3), "é-x");
    }
}
