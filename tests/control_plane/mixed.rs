//! The `mixed` scenario (assets/scenarios/mixed.yaml, read with the simulator's own parser)
//! played on the real control plane by a Spark-like driver written with kube-rs, so the same
//! scenario runs on both and `status --for` can be held to the same reference verdicts.
//!
//! The driver does what Spark's does through the API: per app a ConfigMap with
//! `spark.properties` and a driver pod; executor pods with Spark's labels and an owner
//! reference to the driver, created up to `spark.executor.instances` and replaced when they
//! end; finished executors deleted, or labelled `spark-exec-inactive` when
//! `deleteOnTermination` is false. It polls with a LIST every half second (Spark watches and
//! polls every 30 s; only the timing differs).
//!
//! Who plays each fate: the kubelet's part (exit codes, the image pull error, the eviction) is
//! kwok's, through the annotations of scripts/control-plane/stages.yaml; the driver sets them
//! at the fate's time. `vanish` is `scripts/control-plane.sh vanish` (the key deleted in etcd
//! while the API server is down, history compacted: the watches get 410 and relist).
//! `preempt` is the one fate the driver plays itself, with the API calls kube-scheduler 1.37
//! makes for a victim (pkg/scheduler/framework/preemption/executor.go: a `DisruptionTarget`
//! condition `PreemptionByScheduler` patched into the status, a `Preempted` event, a delete),
//! because which pod the real scheduler picks as the victim depends on placement; the test
//! beside it has the real scheduler preempt a pod.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};
use spark_triage_sim::scenario;
use spark_triage_sim::scenario::{AppSpec, ExecutorSel, Fate, FateAction, Scenario};

/// Deletes a pod behind the API server's back (`control-plane.sh vanish`).
pub type Vanish = Box<dyn Fn(&str, &str) + Send>;

/// A running driver; `stop` ends it and returns what it did, one line per action.
pub struct Driver {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<String>>>,
}

impl Driver {
    pub fn start(kubeconfig: PathBuf, scenario: Scenario, vanish: Vanish) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(run(kubeconfig, scenario, vanish, flag))
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    pub fn stop(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("the driver does not panic")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

struct App {
    spec: AppSpec,
    app_id: String,
    prefix: String,
    driver_pod: String,
    driver_uid: String,
    next_id: i64,
    /// Created, not yet seen in a LIST.
    created: BTreeSet<i64>,
    /// Seen in a LIST at least once.
    listed: BTreeSet<i64>,
    /// Ended (failed, succeeded, deleted, gone): Spark removed it.
    removed: BTreeSet<i64>,
    struck: BTreeSet<i64>,
}

impl App {
    fn fate(&self, id: i64) -> Option<&Fate> {
        let f = &self.spec.fates;
        f.iter()
            .find(|f| f.executor == ExecutorSel::Id(id))
            .or_else(|| f.iter().find(|f| f.executor == ExecutorSel::All))
    }
}

async fn run(
    kubeconfig: PathBuf,
    scenario: Scenario,
    vanish: Vanish,
    stop: Arc<AtomicBool>,
) -> Vec<String> {
    let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    let client = Client::try_from(config).expect("client");
    let mut log = Vec::new();
    let t0 = Instant::now();
    let mut apps = Vec::new();
    for (n, spec) in scenario.apps.into_iter().enumerate() {
        apps.push(start_app(&client, spec, n).await);
    }
    while !stop.load(Ordering::SeqCst) {
        for app in &mut apps {
            let step = tick(&client, app, t0.elapsed(), &vanish, &mut log);
            match tokio::time::timeout(Duration::from_secs(10), step).await {
                Ok(Ok(())) => {}
                // The API server is down for a moment (a vanish): the next tick retries.
                Ok(Err(e)) => log.push(format!("{}: {e}", app.spec.name)),
                Err(_) => log.push(format!("{}: a tick timed out", app.spec.name)),
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    log
}

/// The ConfigMap and the driver pod, as spark-submit creates them.
async fn start_app(client: &Client, spec: AppSpec, n: usize) -> App {
    let ns = spec.namespace.clone();
    let app_id = format!("spark-{:032x}", 0x5eed_0000 + n);
    let prefix = format!("{}-{:016x}", spec.name, 0x00c0_ffee_0000_u64 + n as u64);
    let driver_pod = format!("{prefix}-driver");
    let cm = format!("spark-drv-{}-conf-map", &prefix[prefix.len() - 16..]);
    let props = format!(
        "spark.app.name={}\nspark.app.id={app_id}\nspark.executor.instances={}\nspark.executor.cores={}\n\
         spark.executor.memory={}m\nspark.executor.memoryOverhead={}m\nspark.kubernetes.namespace={ns}\n\
         spark.kubernetes.driver.pod.name={driver_pod}\nspark.kubernetes.executor.podNamePrefix={prefix}\n\
         spark.kubernetes.executor.deleteOnTermination={}\n",
        spec.name,
        spec.executors,
        spec.cores,
        spec.memory_mib,
        spec.overhead_mib,
        spec.delete_on_termination
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let map = json!({"metadata": {"name": cm, "labels": {"spark-app-name": spec.name}}, "data": {"spark.properties": props}});
    cms.create(&PostParams::default(), &from(map))
        .await
        .expect("create the driver's ConfigMap");
    let pod = json!({
        "metadata": {"name": driver_pod, "labels": {"spark-app-selector": app_id, "spark-role": "driver",
                     "spark-app-name": spec.name, "spark-version": spec.spark_version}},
        "spec": {"restartPolicy": "Never", "serviceAccountName": "spark",
                 "containers": [{"name": "spark-kubernetes-driver", "image": spec.image,
                                 "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties"],
                                 "resources": {"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}},
                                 "volumeMounts": [{"name": "spark-conf-volume-driver", "mountPath": "/opt/spark/conf"}]}],
                 "volumes": [{"name": "spark-conf-volume-driver",
                              "configMap": {"name": cm, "items": [{"key": "spark.properties", "path": "spark.properties"}]}}]}
    });
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let created = pods
        .create(&PostParams::default(), &from(pod))
        .await
        .expect("create the driver pod");
    App {
        driver_uid: created.metadata.uid.expect("a uid"),
        spec,
        app_id,
        prefix,
        driver_pod,
        next_id: 1,
        created: BTreeSet::new(),
        listed: BTreeSet::new(),
        removed: BTreeSet::new(),
        struck: BTreeSet::new(),
    }
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a well-formed object")
}

/// One round of Spark's loop: read the executors, strike the fates that are due, remove what
/// ended, allocate up to the target.
async fn tick(
    client: &Client,
    app: &mut App,
    elapsed: Duration,
    vanish: &Vanish,
    log: &mut Vec<String>,
) -> Result<(), kube::Error> {
    let ns = app.spec.namespace.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let lp = ListParams::default().labels(&format!(
        "spark-app-selector={},spark-role=executor",
        app.app_id
    ));
    let list = pods.list(&lp).await?;
    let mut present = BTreeMap::new();
    for p in list.items {
        let v = serde_json::to_value(&p).unwrap_or_default();
        let Some(id) = v["metadata"]["labels"]["spark-exec-id"]
            .as_str()
            .and_then(|s| s.parse::<i64>().ok())
        else {
            continue;
        };
        present.insert(id, v);
    }
    let mut alive = 0;
    for (id, v) in &present {
        let (id, name) = (*id, v["metadata"]["name"].as_str().unwrap_or_default());
        app.created.remove(&id);
        app.listed.insert(id);
        if app.removed.contains(&id) {
            continue;
        }
        let phase = v["status"]["phase"].as_str().unwrap_or_default();
        let deleting = v["metadata"]["deletionTimestamp"].is_string();
        match phase {
            "Failed" | "Succeeded" => {
                app.removed.insert(id);
                if !app.spec.delete_on_termination {
                    let labels = json!({"metadata": {"labels": {"spark-exec-inactive": "true"}}});
                    pods.patch(name, &PatchParams::default(), &Patch::Merge(labels))
                        .await?;
                    log.push(format!("{name}: {phase}, labelled inactive"));
                } else if !deleting {
                    pods.delete(name, &DeleteParams::default()).await?;
                    log.push(format!("{name}: {phase}, deleted"));
                }
            }
            _ if deleting => {
                app.removed.insert(id);
            }
            _ => alive += 1,
        }
        let due = app
            .fate(id)
            .and_then(|f| Some((f.clone(), f.at?)))
            .filter(|(_, at)| elapsed >= *at);
        if phase == "Running"
            && !deleting
            && let Some((fate, _)) = due
            && app.struck.insert(id)
        {
            strike(client, &pods, v, &fate, vanish).await?;
            log.push(format!(
                "{name}: {:?}/{:?} at {elapsed:?}",
                fate.action, fate.exit
            ));
        }
    }
    // Gone from the LIST: deleted, or vanished (Spark counts it as missing).
    let gone: Vec<i64> = (app.listed.iter())
        .filter(|id| !present.contains_key(id) && !app.removed.contains(id))
        .copied()
        .collect();
    app.removed.extend(gone);
    let want = app.spec.executors as usize;
    for _ in (alive + app.created.len())..want {
        let id = app.next_id;
        app.next_id += 1;
        let pod = executor(app, id);
        pods.create(&PostParams::default(), &from(pod)).await?;
        app.created.insert(id);
        log.push(format!("{}-exec-{id}: created at {elapsed:?}", app.prefix));
    }
    Ok(())
}

async fn strike(
    client: &Client,
    pods: &Api<Pod>,
    pod: &Value,
    fate: &Fate,
    vanish: &Vanish,
) -> Result<(), kube::Error> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let annotate = |a: Value| Patch::Merge(json!({"metadata": {"annotations": a}}));
    match (fate.action, fate.exit) {
        (None, Some(code)) => {
            let reason = fate.reason.clone().unwrap_or_default();
            let a = json!({"spark-triage.test/exit-code": code.to_string(), "spark-triage.test/after": "0s",
                           "spark-triage.test/reason": if reason.is_empty() { Value::Null } else { json!(reason) }});
            pods.patch(name, &PatchParams::default(), &annotate(a))
                .await?;
        }
        (Some(FateAction::Evict), _) => {
            let a = json!({"spark-triage.test/evict": "0s"});
            pods.patch(name, &PatchParams::default(), &annotate(a))
                .await?;
        }
        (Some(FateAction::Vanish), _) => vanish(ns, name),
        (Some(FateAction::Preempt), _) => preempt(client, pods, pod).await?,
        other => panic!("{name}: the fate {other:?} is not played on the real control plane"),
    }
    Ok(())
}

/// What kube-scheduler does to a victim of preemption.
async fn preempt(client: &Client, pods: &Api<Pod>, pod: &Value) -> Result<(), kube::Error> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let now = chrono::Utc::now();
    let condition = json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
        "reason": "PreemptionByScheduler", "lastTransitionTime": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "message": "default-scheduler: preempting to accommodate a higher priority pod"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(condition))
        .await?;
    let preemptor = "0f3c2a9e-5b1d-4c7e-9a2f-6d8b1e4c3a70";
    let event = json!({
        "metadata": {"name": format!("{name}.{:x}", now.timestamp_micros())},
        "eventTime": now.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-kwok",
        "action": "Preempting", "reason": "Preempted", "type": "Normal",
        "note": format!("Preempted by pod {preemptor} on node {node}"),
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name,
                      "uid": pod["metadata"]["uid"]},
    });
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events.create(&PostParams::default(), &from(event)).await?;
    pods.delete(name, &DeleteParams::default()).await?;
    Ok(())
}

/// An executor pod as Spark's `BasicExecutorFeatureStep` builds it (the parts the tool reads).
fn executor(app: &App, id: i64) -> Value {
    let spec = &app.spec;
    let fate = app.fate(id);
    let memory = fate
        .and_then(|f| f.memory.clone())
        .unwrap_or_else(|| format!("{}Mi", spec.memory_mib + spec.overhead_mib));
    let pull_error = fate.and_then(|f| f.image_pull_error.clone());
    let image = match pull_error {
        Some(_) => "registry.example.com/data/spark:4.0.1-etl".to_owned(),
        None => spec.image.clone(),
    };
    let name = format!("{}-exec-{id}", app.prefix);
    let mut pod = json!({
        "metadata": {"name": name,
            "labels": {"spark-app-selector": app.app_id, "spark-role": "executor", "spark-exec-id": id.to_string(),
                       "spark-exec-resourceprofile-id": "0", "spark-app-name": spec.name, "spark-version": spec.spark_version},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": app.driver_pod, "uid": app.driver_uid, "controller": true}]},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "serviceAccountName": "spark",
            "containers": [{"name": "spark-kubernetes-executor", "image": image, "imagePullPolicy": "IfNotPresent",
                "args": ["executor"], "ports": [{"name": "blockmanager", "containerPort": 7079, "protocol": "TCP"}],
                "env": [{"name": "SPARK_EXECUTOR_ID", "value": id.to_string()},
                        {"name": "SPARK_APPLICATION_ID", "value": app.app_id}],
                "resources": {"requests": {"cpu": spec.cores.to_string(), "memory": memory}, "limits": {"memory": memory}}}]}
    });
    if let Some(err) = pull_error {
        pod["metadata"]["annotations"] = json!({"spark-triage.test/image-pull-error": err});
    }
    if let Some(f) = fate
        && !f.node_selector.is_empty()
    {
        pod["spec"]["nodeSelector"] = json!(f.node_selector);
    }
    pod
}

/// `status --for` while the driver plays `mixed` gives the simulator's reference verdicts,
/// but for the one documented difference: kube-scheduler 1.37 no longer names the taint
/// (docs/simulator.md). The apps are deleted afterwards.
pub fn same_verdicts_as_the_simulator(c: &super::Cluster) {
    let scenario = scenario::load("mixed").expect("the mixed scenario");
    let names: Vec<String> = scenario.apps.iter().map(|a| a.name.clone()).collect();
    let kc = c.admin.display().to_string();
    // The tool first, so it has seen every executor before any ends (a missing executor is
    // one it saw and then did not find).
    let watcher = std::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args([
            "status",
            "-n",
            "spark-jobs",
            "-o",
            "json",
            "--no-driver-api",
        ])
        .args(["--for", "45s", "--poll-interval", "5s", "--kubeconfig", &kc])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("status --for");
    std::thread::sleep(Duration::from_secs(2));
    let vanish: Vanish = Box::new(|ns, pod| {
        let out = super::script(&["vanish", ns, pod]);
        eprintln!("{}", String::from_utf8_lossy(&out.stderr).trim());
    });
    let driver = Driver::start(c.admin.clone(), scenario, vanish);
    let out = watcher.wait_with_output().expect("status --for ends");
    let log = driver.stop();
    eprintln!("the driver:\n  {}", log.join("\n  "));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("status json");
    let mut reference: Value =
        serde_json::from_str(super::reference::REFERENCE).expect("the reference parses");
    let taint = &mut reference["apps"]["adhoc-analysis"]["pending_reasons"][0][0];
    assert_eq!(taint, "node(s) had untolerated taint {dedicated: gpu}");
    *taint = json!("node(s) had untolerated taint(s)");
    let diffs = super::reference::compare(&doc, &reference);
    assert!(
        diffs.is_empty(),
        "mixed on the real control plane:\n  {}\n{doc:#}",
        diffs.join("\n  ")
    );
    let selector = format!("spark-app-name in ({})", names.join(","));
    c.kubectl(
        &[
            "-n",
            "spark-jobs",
            "delete",
            "pods,configmaps",
            "-l",
            &selector,
        ],
        None,
    );
}
