//! The Spark operators, played for the apps a scenario submits through one: each app's
//! `SparkApplication` is created at its start; the operator submits it (spark-submit, which
//! the API server may refuse), resubmits a refused submission and reruns a failed run as
//! its restart policy allows, and writes the object's status as that operator does
//! (kubeflow's `applicationState` and attempt counters; Apache's `currentState` and
//! `stateTransitionHistory`). Kueue's integration is kubeflow's: the object is created
//! suspended with a Workload it owns, and submitted once the Workload is admitted.
//!
//! Ref (documented behaviour, not copied code): kubeflow/spark-operator's
//! `SparkApplication` status and restart policy; apache/spark-kubernetes-operator's
//! `ApplicationStateSummary`; Kueue's SparkApplication integration (suspend, Workload owned
//! by the object, QuotaReserved/Admitted conditions).

use std::sync::Arc;

use serde_json::{Value, json};

use super::drivers::Drivers;
use super::kubelet::Kubelet;
use crate::clock::fmt_time;
use crate::scenario::{AppSpec, OperatorKind, OperatorSpec, SchedulerKind};
use crate::store::{DeleteOptions, ObjectStore, Resource};

/// The wait before a resubmission or a rerun when the scenario names none.
const RETRY_SECS: f64 = 10.0;

/// Where one app stands with its operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Its start is not due.
    Waiting,
    /// Held for admission (Kueue's Workload not admitted).
    Suspended,
    /// To be submitted at `next`.
    ToSubmit,
    /// Submitted: its driver runs.
    Submitted,
    /// Failed (a run or a submission); rerun or resubmitted at `next`.
    Retrying,
    /// Done for good.
    Done,
}

#[derive(Debug)]
struct Op {
    /// The app's index among the drivers.
    app: usize,
    spec: OperatorSpec,
    name: String,
    namespace: String,
    stage: Stage,
    next: f64,
    submissions: u32,
    runs: u32,
    /// Apache's history: (state, time, message), oldest first.
    history: Vec<(String, String, String)>,
    /// The driver pod of the current run.
    driver: Option<String>,
    /// The last run failed and is rerun when `next` comes.
    failed_run: bool,
}

/// The operators of a scenario's operator apps.
#[derive(Debug)]
pub(super) struct Operators {
    store: Arc<ObjectStore>,
    ops: Vec<Op>,
}

impl Operators {
    pub(super) fn new(store: Arc<ObjectStore>, apps: &[AppSpec]) -> Self {
        let ops = apps
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let spec = a.operator.clone()?;
                Some(Op {
                    app: i,
                    name: spec.object_name(a, store.clock.epoch()),
                    namespace: a.namespace.clone(),
                    spec,
                    stage: Stage::Waiting,
                    next: 0.0,
                    submissions: 0,
                    runs: 0,
                    history: Vec::new(),
                    driver: None,
                    failed_run: false,
                })
            })
            .collect();
        Self { store, ops }
    }

    /// One pass of every operator app.
    pub(super) fn step(
        &mut self,
        rng: &mut fastrand::Rng,
        drivers: &mut Drivers,
        kubelet: &mut Kubelet,
        apps: &[AppSpec],
        t: f64,
    ) {
        for k in 0..self.ops.len() {
            let app = &apps[self.ops[k].app];
            self.step_one(rng, drivers, kubelet, app, k, t);
        }
    }

    fn step_one(
        &mut self,
        rng: &mut fastrand::Rng,
        drivers: &mut Drivers,
        kubelet: &mut Kubelet,
        app: &AppSpec,
        k: usize,
        t: f64,
    ) {
        let start = app.start.map_or(0.0, |d| d.as_secs_f64());
        let kueue = app.scheduling.as_ref().filter(|s| {
            s.by == SchedulerKind::Kueue && self.ops[k].spec.kind == OperatorKind::Kubeflow
        });
        match self.ops[k].stage {
            Stage::Waiting if t >= start => {
                self.create(app, k, kueue.is_some());
                if let Some(sc) = kueue {
                    self.create_workload(k, sc.queue.as_deref(), sc.waiting.as_deref());
                    self.ops[k].stage = Stage::Suspended;
                    self.set_state(k, "SUSPENDED", "");
                } else {
                    self.ops[k].stage = Stage::ToSubmit;
                    self.ops[k].next = t;
                }
            }
            Stage::Suspended => {
                let admit = kueue
                    .and_then(|s| s.admit_at)
                    .map(|a| start + a.as_secs_f64());
                if admit.is_some_and(|a| t >= a) {
                    self.admit(k, kueue.and_then(|s| s.queue.as_deref()));
                    self.ops[k].stage = Stage::ToSubmit;
                    self.ops[k].next = t;
                    self.set_state(k, "RESUMING", "");
                }
            }
            Stage::ToSubmit | Stage::Retrying if t >= self.ops[k].next => {
                if std::mem::take(&mut self.ops[k].failed_run) {
                    self.rerun_due(drivers, k);
                }
                self.submit(rng, drivers, kubelet, k, t);
            }
            Stage::Submitted => self.follow(drivers, k, t),
            _ => {}
        }
    }

    /// The object, as the user applied it (with the queue label Kueue's integration reads);
    /// a schedule's run as its operator makes it, after the schedule.
    fn create(&mut self, app: &AppSpec, k: usize, suspend: bool) {
        let owner = self.create_schedule(k);
        let op = &self.ops[k];
        let mut labels = json!({});
        if let Some(sc) = &op.spec.scheduled {
            labels["sparkoperator.k8s.io/scheduled-app-name"] = json!(sc.name);
        }
        if let Some(q) = app.scheduling.as_ref().and_then(|s| s.queue.as_deref()) {
            labels["kueue.x-k8s.io/queue-name"] = json!(q);
        }
        let policy = op.spec.restart_policy.as_deref().unwrap_or("Never");
        let spec = match op.spec.kind {
            OperatorKind::Kubeflow => json!({
                "type": "Scala", "mode": "cluster", "sparkVersion": app.spark_version,
                "image": app.image, "mainClass": "org.apache.spark.examples.SparkPi",
                "suspend": suspend,
                "restartPolicy": {"type": policy,
                    "onFailureRetries": op.spec.on_failure_retries,
                    "onSubmissionFailureRetries": op.spec.on_submission_failure_retries},
                "driver": {"cores": 1, "memory": "1g", "serviceAccount": "spark"},
                "executor": {"instances": app.executors, "cores": app.cores,
                             "memory": format!("{}m", app.memory_mib)}}),
            OperatorKind::Apache => json!({
                "mainClass": "org.apache.spark.examples.SparkPi",
                "runtimeVersions": {"sparkVersion": app.spark_version},
                "applicationTolerations": {"restartConfig": {"restartPolicy": policy,
                    "maxRestartAttempts": op.spec.on_failure_retries.unwrap_or(0)}},
                "sparkConf": {"spark.executor.instances": app.executors.to_string(),
                              "spark.kubernetes.container.image": app.image}}),
        };
        let mut obj = json!({"metadata": {"name": op.name, "labels": labels}, "spec": spec});
        if let Some(o) = owner {
            obj["metadata"]["ownerReferences"] = json!([o]);
        }
        let _ = self
            .store
            .create(op.spec.kind.resource(), &op.namespace, obj);
        if op.spec.kind == OperatorKind::Apache {
            self.set_state(k, "Submitted", "");
        }
    }

    /// A schedule whose run this app is: the `ScheduledSparkApplication` with the status
    /// kubeflow writes when it starts a run (`OperatorSpec::object_name`);
    /// its owner reference for the run. The next run is never started (docs/simulator.md).
    fn create_schedule(&mut self, k: usize) -> Option<Value> {
        let sc = self.ops[k].spec.scheduled.clone()?;
        let now = self.store.clock.now();
        let run = self.ops[k].name.clone();
        let mut spec = json!({"schedule": format!("@every {}", humantime::format_duration(sc.every)),
            "template": {"type": "Scala", "mode": "cluster"}});
        if let Some(p) = &sc.concurrency_policy {
            spec["concurrencyPolicy"] = json!(p);
        }
        let ns = self.ops[k].namespace.clone();
        let resource = Resource::KubeflowScheduledApps;
        let created = self
            .store
            .create(
                resource,
                &ns,
                json!({"metadata": {"name": sc.name}, "spec": spec}),
            )
            .ok()?;
        let next = now + chrono::Duration::from_std(sc.every).unwrap_or_default();
        self.store.modify(resource, &ns, &sc.name, |o| {
            o["status"] = json!({"scheduleState": "Scheduled", "lastRun": fmt_time(now),
                "nextRun": fmt_time(next), "lastRunName": run});
            true
        });
        Some(json!({"apiVersion": "sparkoperator.k8s.io/v1beta2",
            "kind": "ScheduledSparkApplication", "name": sc.name,
            "uid": created.value()["metadata"]["uid"], "blockOwnerDeletion": true}))
    }

    /// Kueue's Workload for the object: owned by it, not admitted, with why.
    fn create_workload(&self, k: usize, queue: Option<&str>, waiting: Option<&str>) {
        let op = &self.ops[k];
        let Some(owner) = self
            .store
            .get(op.spec.kind.resource(), &op.namespace, &op.name)
        else {
            return;
        };
        let now = fmt_time(self.store.clock.now());
        let message = waiting.unwrap_or(
            "couldn't assign flavors to pod set driver: insufficient unused quota for cpu in \
             flavor default-flavor, 1 more needed",
        );
        let wl = json!({"metadata": {"name": format!("sparkapplication-{}-{}", op.name, &owner.uid()[..5.min(owner.uid().len())]),
                "labels": {"kueue.x-k8s.io/job-uid": owner.uid()},
                "ownerReferences": [{"apiVersion": op.spec.kind.resource().group_version(),
                    "kind": "SparkApplication", "name": op.name, "uid": owner.uid(),
                    "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"queueName": queue.unwrap_or("default"), "active": true,
                     "podSets": [{"name": "driver", "count": 1}, {"name": "executor", "count": 1}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                "reason": "Pending", "message": message, "lastTransitionTime": now,
                "observedGeneration": 1}]}});
        let _ = self
            .store
            .create(Resource::KueueWorkloads, &op.namespace, wl);
    }

    /// The Workload admitted and the object let go (`spec.suspend: false`).
    fn admit(&self, k: usize, queue: Option<&str>) {
        let op = &self.ops[k];
        let now = fmt_time(self.store.clock.now());
        let queue = queue.unwrap_or("default");
        let name = self
            .store
            .list_all(Resource::KueueWorkloads, &Default::default())
            .0
            .iter()
            .find(|w| {
                w.namespace() == op.namespace
                    && w.value()["metadata"]["ownerReferences"][0]["name"] == op.name.as_str()
            })
            .map(|w| w.name().to_owned());
        if let Some(name) = name {
            self.store
                .modify(Resource::KueueWorkloads, &op.namespace, &name, |w| {
                    w["status"] = json!({
                        "admission": {"clusterQueue": format!("{queue}-cluster-queue")},
                        "conditions": [
                            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                             "message": format!("Quota reserved in ClusterQueue {queue}-cluster-queue"),
                             "lastTransitionTime": now},
                            {"type": "Admitted", "status": "True", "reason": "Admitted",
                             "message": "The workload is admitted", "lastTransitionTime": now}]});
                    true
                });
        }
        self.store
            .modify(op.spec.kind.resource(), &op.namespace, &op.name, |o| {
                o["spec"]["suspend"] = json!(false);
                true
            });
    }

    /// spark-submit: a driver, or the API server's refusal.
    fn submit(
        &mut self,
        rng: &mut fastrand::Rng,
        drivers: &mut Drivers,
        kubelet: &mut Kubelet,
        k: usize,
        t: f64,
    ) {
        if self.ops[k].runs > 0 || self.ops[k].submissions > 0 {
            drivers.rerun(rng, self.ops[k].app);
        }
        self.ops[k].submissions += 1;
        let kind = self.ops[k].spec.kind;
        match drivers.submit(rng, kubelet, self.ops[k].app) {
            Ok(()) => {
                let (_, pod, app_id) = drivers.names(self.ops[k].app);
                self.ops[k].runs += 1;
                self.ops[k].stage = Stage::Submitted;
                self.ops[k].driver = Some(pod.clone());
                let (state, msg) = match kind {
                    OperatorKind::Kubeflow => ("SUBMITTED", String::new()),
                    OperatorKind::Apache => ("DriverRequested", String::new()),
                };
                self.set_state(k, state, &msg);
                self.status(k, |s| {
                    s["driverInfo"] = json!({"podName": pod});
                    s["sparkApplicationId"] = json!(app_id);
                });
            }
            Err(stderr) => {
                let op = &self.ops[k];
                // kubeflow's rule: Always retries, OnFailure up to its submission retries.
                let retry = match op.spec.restart_policy.as_deref().unwrap_or("Never") {
                    "Always" => true,
                    "OnFailure" => {
                        op.submissions <= op.spec.on_submission_failure_retries.unwrap_or(0)
                    }
                    _ => false,
                };
                self.ops[k].stage = if retry { Stage::Retrying } else { Stage::Done };
                self.ops[k].next = t + self.retry_secs(k);
                match kind {
                    OperatorKind::Kubeflow => {
                        let msg = format!(
                            "failed to submit spark application: failed to run spark-submit: {stderr}"
                        );
                        self.set_state(k, "SUBMISSION_FAILED", &msg);
                        if !retry {
                            // Its retries spent, kubeflow ends it FAILED, with the same words.
                            self.set_state(k, "FAILED", &msg);
                        }
                    }
                    OperatorKind::Apache => {
                        let msg =
                            format!("Failed to request driver from scheduler backend. {stderr}");
                        self.set_state(k, "SchedulingFailure", &msg);
                        if retry {
                            self.set_state(k, "ScheduledToRestart", "");
                        } else {
                            self.set_state(k, "ResourceReleased", "");
                        }
                    }
                }
            }
        }
    }

    /// The run's driver: its phase is the app's.
    fn follow(&mut self, drivers: &Drivers, k: usize, t: f64) {
        let (ns, pod, _) = drivers.names(self.ops[k].app);
        let kind = self.ops[k].spec.kind;
        let driver = self.store.get(Resource::Pods, &ns, &pod);
        let phase = driver.as_ref().map(|d| d.phase().to_owned());
        match phase.as_deref() {
            Some("Running") => {
                let s = match kind {
                    OperatorKind::Kubeflow => "RUNNING",
                    OperatorKind::Apache => "RunningHealthy",
                };
                if self.state(k) != s {
                    if kind == OperatorKind::Apache {
                        self.set_state(k, "DriverReady", "");
                    }
                    self.set_state(k, s, "");
                }
            }
            Some("Succeeded") => {
                let (s, end) = match kind {
                    OperatorKind::Kubeflow => ("COMPLETED", None),
                    OperatorKind::Apache => ("Succeeded", Some("ResourceReleased")),
                };
                self.set_state(k, s, "");
                if let Some(e) = end {
                    self.set_state(k, e, "");
                }
                self.ended(k);
                self.ops[k].stage = Stage::Done;
            }
            Some("Failed") | None => {
                let why = driver.as_ref().map_or_else(
                    || format!("driver pod {pod} not found"),
                    |d| {
                        let v = d.value();
                        let c = &v["status"]["containerStatuses"][0]["state"]["terminated"];
                        format!(
                            "driver container failed with ExitCode: {}, Reason: {}",
                            c["exitCode"].as_i64().unwrap_or(1),
                            c["reason"].as_str().unwrap_or("Error")
                        )
                    },
                );
                let op = &self.ops[k];
                // kubeflow's rule: Always reruns, OnFailure up to its retries.
                let rerun = match op.spec.restart_policy.as_deref().unwrap_or("Never") {
                    "Always" => true,
                    "OnFailure" => op.runs <= op.spec.on_failure_retries.unwrap_or(0),
                    _ => false,
                };
                self.ended(k);
                match (kind, rerun) {
                    // kubeflow waits out the retry interval FAILING, the failed driver kept;
                    // then deletes it, PENDING_RERUN, and submits again (`rerun_due`).
                    (OperatorKind::Kubeflow, true) => self.set_state(k, "FAILING", &why),
                    (OperatorKind::Kubeflow, false) => {
                        self.set_state(k, "FAILING", &why);
                        self.set_state(k, "FAILED", &why);
                    }
                    (OperatorKind::Apache, true) => {
                        self.set_state(k, "Failed", &why);
                        self.set_state(k, "ScheduledToRestart", "");
                    }
                    (OperatorKind::Apache, false) => {
                        self.set_state(k, "Failed", &why);
                        self.set_state(k, "ResourceReleased", "");
                    }
                }
                self.ops[k].failed_run = rerun;
                self.ops[k].stage = if rerun { Stage::Retrying } else { Stage::Done };
                self.ops[k].next = t + self.retry_secs(k);
            }
            _ => {}
        }
    }

    /// The retry interval passed after a failed run: its driver deleted, the object
    /// pending its rerun (the submission follows at once).
    fn rerun_due(&mut self, drivers: &Drivers, k: usize) {
        let (ns, pod, _) = drivers.names(self.ops[k].app);
        let _ = self
            .store
            .delete(Resource::Pods, &ns, &pod, &DeleteOptions::default());
        if self.ops[k].spec.kind == OperatorKind::Kubeflow {
            let why = self.message(k);
            self.set_state(k, "PENDING_RERUN", &why);
        }
    }

    /// The operator's current message.
    fn message(&self, k: usize) -> String {
        let op = &self.ops[k];
        self.store
            .get(op.spec.kind.resource(), &op.namespace, &op.name)
            .and_then(|o| {
                o.value()
                    .pointer("/status/applicationState/errorMessage")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    fn retry_secs(&self, k: usize) -> f64 {
        self.ops[k]
            .spec
            .retry_interval
            .map_or(RETRY_SECS, |d| d.as_secs_f64())
    }

    /// kubeflow's `terminationTime`.
    fn ended(&self, k: usize) {
        let now = fmt_time(self.store.clock.now());
        self.status(k, |s| s["terminationTime"] = json!(now));
    }

    /// The operator's current state name.
    fn state(&self, k: usize) -> String {
        let op = &self.ops[k];
        let Some(o) = self
            .store
            .get(op.spec.kind.resource(), &op.namespace, &op.name)
        else {
            return String::new();
        };
        let v = o.value();
        let p = match op.spec.kind {
            OperatorKind::Kubeflow => "/status/applicationState/state",
            OperatorKind::Apache => "/status/currentState/currentStateSummary",
        };
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// A new state, with its message, in each operator's shape.
    fn set_state(&mut self, k: usize, state: &str, message: &str) {
        let now = fmt_time(self.store.clock.now());
        let (kind, submissions, runs) = {
            let op = &self.ops[k];
            (op.spec.kind, op.submissions, op.runs)
        };
        match kind {
            OperatorKind::Kubeflow => self.status(k, |s| {
                s["applicationState"] = json!({"state": state, "errorMessage": message});
                s["submissionAttempts"] = json!(submissions);
                s["executionAttempts"] = json!(runs);
                if state == "SUBMITTED" {
                    s["lastSubmissionAttemptTime"] = json!(now);
                }
            }),
            OperatorKind::Apache => {
                self.ops[k]
                    .history
                    .push((state.to_owned(), now.clone(), message.to_owned()));
                let history: serde_json::Map<String, Value> = self.ops[k]
                    .history
                    .iter()
                    .enumerate()
                    .map(|(i, (s, at, m))| {
                        (i.to_string(), json!({"currentStateSummary": s, "lastTransitionTime": at, "message": m}))
                    })
                    .collect();
                let attempt = runs.saturating_sub(1);
                self.status(k, |s| {
                    s["currentState"] = json!({"currentStateSummary": state,
                        "lastTransitionTime": now, "message": message});
                    s["stateTransitionHistory"] = Value::Object(history);
                    s["currentAttemptSummary"] = json!({"attemptInfo": {"id": attempt}});
                });
            }
        }
    }

    fn status(&self, k: usize, f: impl FnOnce(&mut Value)) {
        let op = &self.ops[k];
        self.store
            .modify(op.spec.kind.resource(), &op.namespace, &op.name, |o| {
                if !o["status"].is_object() {
                    o["status"] = json!({});
                }
                f(&mut o["status"]);
                true
            });
    }
}
