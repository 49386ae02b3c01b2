//! The kubelet: kwok-like pod stages (creating, image pulls, running) and the process runtime that runs Spark executor containers as local JVMs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::PodFate;
use super::context::Cx;
use crate::clock::fmt_time;
use crate::kube_status;
use crate::kube_status::{set_all_containers, set_condition};
use crate::logs::Logs;
use crate::process::{self, ProcessRuntime};
use crate::store::{Obj, ObjectStore, Query, Resource};

mod container_logs;
mod termination;

/// Scenario seconds from bind to running containers.
const START_SECS: f64 = 1.5;

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

/// The kubelet of every node: runs bound pods through their stages, carries out their
/// fates, ends them, and writes their containers' logs.
#[derive(Debug)]
pub(super) struct Kubelet {
    store: Arc<ObjectStore>,
    logs: Arc<Logs>,
    /// The pods it runs, by (namespace, name).
    runtimes: hashbrown::HashMap<(String, String), Runtime>,
    /// Scenario second runtimes of pods gone were last dropped.
    last_runtime_gc: f64,
    /// What the scenario does to each pod, as the drivers resolved it.
    fates: hashbrown::HashMap<(String, String), PodFate>,
    /// The process kubelet's runtime: Spark executor containers run as local JVMs.
    procs: Option<ProcessRuntime>,
}

impl Kubelet {
    pub(super) fn new(store: Arc<ObjectStore>, logs: Arc<Logs>) -> Self {
        Self {
            store,
            logs,
            runtimes: Default::default(),
            last_runtime_gc: 0.0,
            fates: Default::default(),
            procs: None,
        }
    }

    /// Runs Spark executor containers as local processes from now on.
    pub(super) fn run_processes(&mut self, procs: ProcessRuntime) {
        self.procs = Some(procs);
    }

    /// What the scenario does to this pod (its drivers resolve it at creation).
    pub(super) fn set_fate(&mut self, key: (String, String), fate: PodFate) {
        self.fates.insert(key, fate);
    }

    /// The pod's node is lost: its kubelet is gone, nothing more happens to the pod.
    pub(super) fn node_lost(&mut self, p: &Obj) {
        if let Some(rt) = self.runtimes.get_mut(&PodRef::of(p)) {
            rt.stage = Stage::Done;
        }
    }

    /// Whether this pod's containers run as processes here.
    fn is_process_pod(&self, pod: &Obj) -> bool {
        self.procs.is_some() && process::executor_container(&pod.value()).is_some()
    }

    fn container_key(p: &Obj) -> process::Key {
        let v = p.value();
        let c = process::executor_container(&v)
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
    fn start_process(&mut self, cx: &mut Cx<'_>, p: &Obj, t: f64) {
        let store = self.store.clone();
        let ns = p.namespace().to_owned();
        let config_map = move |name: &str| {
            store
                .get(Resource::ConfigMaps, &ns, name)
                .map(|cm| cm.value()["data"].clone())
        };
        let host_env = |k: &str| std::env::var(k).ok();
        let key = Self::container_key(p);
        let Some(procs) = self.procs.as_mut() else {
            return;
        };
        let planned = process::executor_container(&p.value())
            .ok_or_else(|| "no executor container".to_owned())
            .and_then(|c| process::plan(&p.value(), c, &procs.opts, &config_map, &host_env));
        self.logs.start(&key.0, &key.1, &key.2);
        let started = planned.and_then(|l| procs.start(key.clone(), &l, self.logs.clone()));
        match started {
            Ok(pid) => {
                tracing::info!("process kubelet: {}/{} runs as pid {pid}", key.0, key.1);
                self.run_containers(cx, p, t, true);
                self.set_stage(&(key.0, key.1), Stage::Running { since: t });
            }
            Err(e) => {
                self.logs.append(&key.0, &key.1, &key.2, e.clone());
                cx.event(
                    &p.value(),
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
    fn reap_processes(&mut self, cx: &mut Cx<'_>, t: f64) {
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
                cx.event(
                    &p.value(),
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
            if p.deleting() {
                self.final_delete(&p);
            }
        }
    }

    /// One pass over the bound pods.
    pub(super) fn step(&mut self, cx: &mut Cx<'_>, t: f64) {
        self.reap_processes(cx, t);
        let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
        // The list is in (namespace, name) order: membership is a binary search.
        let live = |ns: &str, name: &str| {
            pods.binary_search_by(|p| (p.namespace(), p.name()).cmp(&(ns, name)))
                .is_ok()
        };
        if let Some(procs) = self.procs.as_mut() {
            // A pod removed behind the kubelet's back (force-deleted, or gone with no event):
            // the kubelet still stops its containers, with the default grace.
            for (ns, name, c) in procs.keys() {
                if !live(&ns, &name) {
                    tracing::info!("process kubelet: pod {ns}/{name} is gone: stopping it");
                    procs.stop_orphan(&(ns, name, c), Duration::from_secs(30));
                }
            }
        }
        // Runtimes of pods gone are dropped now and then; one whose pod was replaced
        // under the same name is noticed by its uid below.
        if t - self.last_runtime_gc >= 30.0 {
            self.last_runtime_gc = t;
            self.runtimes.retain(|k, _| live(&k.0, &k.1));
        }
        let log_every = (pods.len() as f64 / 2_000.0).max(2.0);
        for p in &pods {
            if !p.bound() {
                // Unscheduled pods being deleted go at once (grace 0, as the API server forces).
                continue;
            }
            let pref = PodRef::of(p);
            if self.runtimes.get(&pref).is_none_or(|r| r.uid != p.uid()) {
                let key = (p.namespace().to_owned(), p.name().to_owned());
                let uid = p.uid().to_owned();
                let fated = self.fates.contains_key(&pref);
                let admission = self.fates.get(&pref).and_then(|f| f.admission.clone());
                let terminal = p.terminal();
                let stage = if terminal {
                    Stage::Done
                } else if let Some(reason) = admission {
                    self.reject(cx, p, &reason, t);
                    Stage::Done
                } else {
                    self.start_pod(cx, p, t);
                    Stage::Creating { since: t }
                };
                self.runtimes.insert(
                    key.clone(),
                    Runtime {
                        uid,
                        stage,
                        last_log: t,
                        log_seq: 0,
                        struck: stage == Stage::Done,
                        fated,
                    },
                );
                // Just started or rejected: nothing more for it this pass.
                if !terminal {
                    continue;
                }
            }
            let deleting = p.deleting();
            let Some((stage, fated, struck, last_log)) = self
                .runtimes
                .get(&pref)
                .map(|r| (r.stage, r.fated, r.struck, r.last_log))
            else {
                continue;
            };
            if deleting {
                self.terminate(cx, p, stage, t);
                continue;
            }
            match stage {
                Stage::Creating { since } if t - since >= START_SECS => {
                    let fate = self.fates.get(&pref).cloned().unwrap_or_default();
                    if let Some(err) = fate.image_pull_error {
                        self.pull_failing(cx, p, &err, false, t);
                        self.set_stage(
                            &pref,
                            Stage::PullFailing {
                                since: t,
                                backoff: false,
                                attempt: 0,
                            },
                        );
                    } else if self.is_process_pod(p) {
                        self.start_process(cx, p, t);
                    } else {
                        self.run_containers(cx, p, t, false);
                        self.set_stage(&pref, Stage::Running { since: t });
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
                            .get(&pref)
                            .and_then(|f| f.image_pull_error.clone())
                            .unwrap_or_default();
                        self.pull_failing(cx, p, &err, !backoff, t);
                        let attempt = if backoff { attempt + 1 } else { attempt };
                        self.set_stage(
                            &pref,
                            Stage::PullFailing {
                                since: t,
                                backoff: !backoff,
                                attempt,
                            },
                        );
                    }
                }
                Stage::Running { .. } if self.is_process_pod(p) => {}
                Stage::Running { since } => {
                    if t - last_log >= log_every {
                        self.write_logs(p, t);
                    }
                    let due = fated
                        && !struck
                        && self.fates.get(&pref).is_some_and(|fate| {
                            fate.at.is_some_and(|a| t >= a)
                                || fate.after.is_some_and(|a| t - since >= a)
                        });
                    if due {
                        if let Some(r) = self.runtimes.get_mut(&pref) {
                            r.struck = true;
                        }
                        let fate = self.fates.get(&pref).cloned().unwrap_or_default();
                        self.strike(cx, p, &fate, since, t);
                    }
                }
                Stage::Terminating { .. } => self.terminate(cx, p, stage, t),
                _ => {}
            }
        }
    }

    fn set_stage(
        &mut self,
        key: &(impl std::hash::Hash + hashbrown::Equivalent<(String, String)> + ?Sized),
        stage: Stage,
    ) {
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

    fn start_pod(&mut self, cx: &mut Cx<'_>, p: &Obj, t: f64) {
        let now = self.now();
        let ip_tail = cx.rng.u32(2..250);
        let pod_ip = if self.is_process_pod(p) {
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
                let names = kube_status::container_names(v).join(" ");
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
            let image = Self::image_of(&u.value());
            cx.event(
                &u.value(),
                "Normal",
                "Pulling",
                &format!("Pulling image \"{image}\""),
                "kubelet",
                t,
            );
        }
    }

    fn pull_failing(&mut self, cx: &mut Cx<'_>, p: &Obj, err: &str, backoff: bool, t: f64) {
        let image = Self::image_of(&p.value());
        // containerd's words: a request that never got an answer (a dial error) is
        // `failed to do request: Head "URL": …` (a real kubelet's, compared in
        // tests/integration/real_kubelet.rs), an answer that is an error status
        // `unexpected status from HEAD request to URL: …`. The image is said as written
        // (containerd says its normalised reference: `docker.io/library/…`).
        let url = manifest_url(&image);
        let resolve = if err.starts_with("dial tcp") {
            format!("failed to do request: Head \"{url}\": {err}")
        } else {
            format!("unexpected status from HEAD request to {url}: {err}")
        };
        let fail_msg = format!(
            "Failed to pull image \"{image}\": failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {resolve}"
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
                cx.event(&u.value(), "Normal", "BackOff", &m, "kubelet", t);
                // As a real kubelet: the back-off is also a warning.
                cx.event(
                    &u.value(),
                    "Warning",
                    "Failed",
                    "Error: ImagePullBackOff",
                    "kubelet",
                    t,
                );
            } else {
                cx.event(&u.value(), "Warning", "Failed", &fail_msg, "kubelet", t);
                cx.event(
                    &u.value(),
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
    fn run_containers(&mut self, cx: &mut Cx<'_>, p: &Obj, t: f64, process: bool) {
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
        let image = Self::image_of(&u.value());
        cx.event(
            &u.value(),
            "Normal",
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "kubelet",
            t,
        );
        for c in kube_status::container_names(&u.value()) {
            cx.event(
                &u.value(),
                "Normal",
                "Created",
                &format!("Created container: {c}"),
                "kubelet",
                t,
            );
            cx.event(
                &u.value(),
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
            self.log_start(&u);
        }
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}

/// The manifest URL containerd asks a registry for an image: `docker.io` names (no registry
/// in the name) at `registry-1.docker.io`, `library/` for one-part names; plain http for
/// `localhost`, https otherwise; the tag `latest` when none is named.
fn manifest_url(image: &str) -> String {
    // A digest wins over a tag (containerd drops the tag then).
    let (name, reference) = match image.split_once('@') {
        Some((n, digest)) => (
            n.rsplit_once(':')
                .filter(|(_, tag)| !tag.contains('/'))
                .map_or(n, |(n, _)| n),
            digest.to_owned(),
        ),
        None => match image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')) {
            Some((n, tag)) => (n, tag.to_owned()),
            None => (image, "latest".to_owned()),
        },
    };
    let docker = |repo: &str| {
        let repo = if repo.contains('/') {
            repo.to_owned()
        } else {
            format!("library/{repo}")
        };
        ("registry-1.docker.io".to_owned(), repo)
    };
    let (host, repo) = match name.split_once('/') {
        Some(("docker.io" | "index.docker.io", r)) => docker(r),
        Some((h, r)) if h.contains('.') || h.contains(':') || h == "localhost" => {
            (h.to_owned(), r.to_owned())
        }
        _ => docker(name),
    };
    let local = host == "localhost"
        || host.starts_with("localhost:")
        || host.starts_with("127.")
        || host.starts_with("[::1]");
    let scheme = if local { "http" } else { "https" };
    format!("{scheme}://{host}/v2/{repo}/manifests/{reference}")
}

#[cfg(test)]
mod url_tests {
    use super::manifest_url;

    #[test]
    fn manifest_urls_are_containerds() {
        assert_eq!(
            manifest_url("localhost/spark-triage-missing:1"),
            "http://localhost/v2/spark-triage-missing/manifests/1"
        );
        assert_eq!(
            manifest_url("registry.example.com/data/spark:4.0.1-etl"),
            "https://registry.example.com/v2/data/spark/manifests/4.0.1-etl"
        );
        assert_eq!(
            manifest_url("apache/spark"),
            "https://registry-1.docker.io/v2/apache/spark/manifests/latest"
        );
        assert_eq!(
            manifest_url("busybox"),
            "https://registry-1.docker.io/v2/library/busybox/manifests/latest"
        );
        assert_eq!(
            manifest_url("reg:5000/a/b"),
            "https://reg:5000/v2/a/b/manifests/latest"
        );
        assert_eq!(
            manifest_url("docker.io/busybox:1.36"),
            "https://registry-1.docker.io/v2/library/busybox/manifests/1.36"
        );
        assert_eq!(
            manifest_url("apache/spark:4.0.1@sha256:ab"),
            "https://registry-1.docker.io/v2/apache/spark/manifests/sha256:ab"
        );
        assert_eq!(
            manifest_url("[::1]:5000/x:1"),
            "http://[::1]:5000/v2/x/manifests/1"
        );
    }
}
