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
//! The parts, each over the store and each with its own state: the cluster timeline
//! (`timeline.rs`), the drivers (`drivers/`), the scheduler (`scheduler.rs`), the kubelet
//! (`kubelet/`), the event recorder (`events.rs`) and the Spark operators (`operator.rs`:
//! they submit the apps a scenario sends through one). What one part needs of another is
//! lent by `&mut` for a call: every part gets a `Cx` (`context.rs`: the one seeded rng,
//! the event recorder, the scenario), the drivers and the timeline the kubelet too. So the
//! parts depend one way: the drivers and the timeline use the kubelet, every part the
//! context, and the context the event recorder.
//!
//! Weak spots: no preemption victims are chosen for real (a `preempt` fate names its
//! victim); CPU/memory accounting ignores init containers and overhead.

use std::sync::Arc;
use std::time::Duration;

use context::Cx;
use drivers::Drivers;
use events::EventRecorder;
use kubelet::Kubelet;
use operator::Operators;
use scheduler::Scheduler;
use serde_json::json;
use timeline::{Timeline, node_objects};

use crate::clock::fmt_time;
use crate::logs::Logs;
use crate::process::{ProcessOptions, ProcessRuntime};
use crate::scenario::Scenario;
use crate::spark_registry::SparkRegistry;
use crate::store::{ObjectStore, Resource};

mod context;
mod drivers;
mod events;
mod kubelet;
mod operator;
mod scheduler;
mod timeline;

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

/// A fate resolved for one pod: the drivers resolve it when they create the pod, the
/// kubelet carries it out.
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
    /// Preempted for this driver pod, `(namespace, name)`: the one of the app the scenario
    /// names (`by`), found when the fate is resolved.
    preempted_by: Option<(String, String)>,
    /// Resized in place to this memory before its exit, not applied (see `Fate`).
    resized_to: Option<String>,
}

/// The control plane. Owned by one task; talks to the world only through the store.
///
/// Its parts each keep their own state over the same store: the cluster timeline, the
/// Spark-like drivers, the scheduler, the kubelet and the event recorder. `step` runs them
/// in turn, lending each the one seeded rng, the recorder and the scenario, and the
/// kubelet to the parts that ask it for something.
#[derive(Debug)]
pub struct Control {
    store: Arc<ObjectStore>,
    /// What the drivers know, for their REST API (the drivers write it; the API server
    /// reads it).
    pub registry: Arc<SparkRegistry>,
    scenario: Scenario,
    /// The one random stream of the whole control plane: every part draws from it, in
    /// the order `step` runs them, so a seed replays exactly.
    rng: fastrand::Rng,
    timeline: Timeline,
    drivers: Drivers,
    /// The Spark operators, for the apps submitted through one.
    operators: Operators,
    scheduler: Scheduler,
    kubelet: Kubelet,
    events: EventRecorder,
}

fn hex(rng: &mut fastrand::Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.usize(..16)]))
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
        let registry = Arc::new(SparkRegistry::default());
        let mut rng = fastrand::Rng::with_seed(seed);
        let drivers = Drivers::new(store.clone(), registry.clone(), &scenario.apps, &mut rng);
        Self {
            timeline: Timeline::new(store.clone(), scenario.timeline.len()),
            operators: Operators::new(store.clone(), &scenario.apps),
            scheduler: Scheduler::new(store.clone()),
            kubelet: Kubelet::new(store.clone(), logs),
            events: EventRecorder::new(store.clone(), event_ttl),
            store,
            registry,
            scenario,
            rng,
            drivers,
        }
    }

    /// Runs Spark executor containers as local processes from now on.
    pub fn with_processes(mut self, opts: ProcessOptions) -> Self {
        self.kubelet.run_processes(ProcessRuntime::new(opts));
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
        let mut cx = Cx {
            events: &mut self.events,
            rng: &mut self.rng,
            scenario: &self.scenario,
        };
        self.timeline.step(&mut cx, &mut self.kubelet, t);
        self.drivers.drain_feed(t);
        self.operators.step(
            cx.rng,
            &mut self.drivers,
            &mut self.kubelet,
            &cx.scenario.apps,
            t,
        );
        self.drivers.drive(&mut cx, &mut self.kubelet, t);
        self.store.recount_quotas();
        self.scheduler.schedule(&mut cx, t);
        self.kubelet.step(&mut cx, t);
        self.events.expire(t);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{Control, Resource};
    use crate::clock::SimClock;
    use crate::logs::Logs;
    use crate::scenario;
    use crate::store::ObjectStore;

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
