//! How pods end: scenario fates striking, containers exiting, evictions, graceful termination and the final delete.

use serde_json::{Value, json};

use super::{Kubelet, PodRef, Stage};
use crate::control::context::Cx;
use crate::control::{Disruption, PodFate, hex};
use crate::kube_status;
use crate::kube_status::{container_status, set_condition};
use crate::store::{DeleteOptions, Obj, Resource};

/// The kubelet's node-pressure eviction message.
/// The kubelet's eviction message for node memory pressure, naming the pod's first container.
fn node_pressure(p: &Obj) -> String {
    let container = kube_status::container_names(&p.value())
        .into_iter()
        .next()
        .unwrap_or_else(|| "spark-kubernetes-executor".to_owned());
    format!(
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 88512Ki. Container {container} was using 2912Mi, request is 2432Mi, has larger consumption of memory. "
    )
}
/// The kubelet's message when a pod's ephemeral storage passes its containers' limits.
const OVER_STORAGE_LIMIT: &str =
    "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ";

impl Kubelet {
    /// The fate strikes a running pod.
    pub(super) fn strike(&mut self, cx: &mut Cx<'_>, p: &Obj, fate: &PodFate, _since: f64, t: f64) {
        match fate.action {
            Some(Disruption::Vanish) => {
                self.store.vanish(Resource::Pods, p.namespace(), p.name());
                self.logs.remove_pod(p.namespace(), p.name());
                return;
            }
            Some(Disruption::Delete) => {
                self.delete_pod(p);
                return;
            }
            Some(Disruption::Evict) => {
                self.evict(cx, p, &node_pressure(p), false, t);
                return;
            }
            Some(Disruption::EvictStorage) => {
                self.evict(cx, p, OVER_STORAGE_LIMIT, true, t);
                return;
            }
            Some(Disruption::Shutdown) => {
                self.shutdown(cx, p, t);
                return;
            }
            Some(Disruption::Preempt) => {
                let now = self.now();
                let updated = self.store.modify(Resource::Pods, p.namespace(), p.name(), |v| {
                    set_condition(v, "DisruptionTarget", "True", "PreemptionByScheduler",
                        "Scheduler: preempting to accommodate a higher priority pod, scheduled by \"default-scheduler\"", &now);
                    true
                });
                if let Some(u) = updated {
                    let node = u.value()["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    // The scenario's preemptor: that app's driver pod, named as the scheduler
                    // names it (uid in the message, the pod as the event's `related`).
                    let preemptor = fate
                        .preempted_by
                        .as_ref()
                        .and_then(|(ns, pod)| self.store.get(Resource::Pods, ns, pod));
                    if let Some(by) = preemptor {
                        let related = json!({"apiVersion": "v1", "kind": "Pod", "namespace": by.namespace(),
                                             "name": by.name(), "uid": by.uid()});
                        cx.events.event_about(
                            cx.rng,
                            &u.value(),
                            "Normal",
                            "Preempted",
                            &format!("Preempted by pod {} on node {node}", by.uid()),
                            "default-scheduler",
                            t,
                            related,
                        );
                        self.delete_pod(p);
                        return;
                    }
                    let by = format!(
                        "{}-{}-{}-{}-{}",
                        hex(cx.rng, 8),
                        hex(cx.rng, 4),
                        hex(cx.rng, 4),
                        hex(cx.rng, 4),
                        hex(cx.rng, 12)
                    );
                    cx.event(
                        &u.value(),
                        "Normal",
                        "Preempted",
                        &format!("Preempted by pod {by} on node {node}"),
                        "default-scheduler",
                        t,
                    );
                }
                self.delete_pod(p);
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
            self.log(p, l);
        }
        self.exit_containers(p, code, &reason, t);
        if let Some(to) = &fate.resized_to {
            self.resized_not_applied(p, to);
        }
    }

    /// The spec resized in place (the `resize` subresource raises limit and request), the
    /// kubelet unable to apply it: the status keeps what the container had, and says why.
    fn resized_not_applied(&mut self, p: &Obj, to: &str) {
        let now = self.now();
        self.store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                let had = v["spec"]["containers"][0]["resources"]["limits"]["memory"].clone();
                let cpu = v["spec"]["containers"][0]["resources"]["requests"]["cpu"].clone();
                v["spec"]["containers"][0]["resources"]["limits"]["memory"] = json!(to);
                v["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!(to);
                v["status"]["containerStatuses"][0]["allocatedResources"] =
                    json!({"cpu": cpu, "memory": had});
                v["status"]["containerStatuses"][0]["resources"] =
                    json!({"limits": {"memory": had}, "requests": {"cpu": cpu, "memory": had}});
                let msg = format!(
                    "Node didn't have enough capacity: memory, requested: {to}, allocated: {}",
                    had.as_str().unwrap_or_default()
                );
                set_condition(v, "PodResizePending", "True", "Infeasible", &msg, &now);
                true
            });
    }

    /// Deletes the pod with its own grace period (as `kubectl delete` would).
    fn delete_pod(&self, p: &Obj) {
        let _ = self.store.delete(
            Resource::Pods,
            p.namespace(),
            p.name(),
            &DeleteOptions::default(),
        );
    }

    pub(in crate::control) fn exit_containers(&mut self, p: &Obj, code: i32, reason: &str, t: f64) {
        let v = p.value();
        if v["spec"]["restartPolicy"] == "Always" && v["metadata"]["deletionTimestamp"].is_null() {
            self.restart_in_place(p, code, reason, t);
            return;
        }
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
        for c in kube_status::container_names(&p.value()) {
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

    /// `restartPolicy: Always` (a StatefulSet's or Deployment's pod): the kubelet starts the
    /// containers again in the same pod; the exit is their `lastState`, the restart counted.
    /// (The real kubelet waits a back-off first, CrashLoopBackOff after repeated exits.)
    fn restart_in_place(&mut self, p: &Obj, code: i32, reason: &str, t: f64) {
        let now = self.now();
        let updated = self.store.modify(Resource::Pods, p.namespace(), p.name(), |v| {
            let Some(statuses) = v["status"]["containerStatuses"].as_array_mut() else {
                return false;
            };
            for c in statuses {
                let started = c["state"]["running"]["startedAt"].clone();
                c["lastState"] = json!({"terminated": {"exitCode": code, "reason": reason,
                    "startedAt": started, "finishedAt": now, "containerID": "containerd://5f0d1c2b3a49"}});
                c["state"] = json!({"running": {"startedAt": now}});
                c["restartCount"] = json!(c["restartCount"].as_i64().unwrap_or(0) + 1);
            }
            true
        });
        if updated.is_some() {
            self.set_stage(
                &(p.namespace().to_owned(), p.name().to_owned()),
                Stage::Running { since: t },
            );
        }
    }

    /// The kubelet's eviction, with its message (node pressure or the pod's own limit).
    /// An eviction by the kubelet. For node pressure (`storage` false): a `DisruptionTarget`
    /// condition, and the container statuses left as last seen (not ready), as kubelets up to
    /// 1.21 did, which is what makes kubectl print `Evicted`. For a local-storage limit, as a
    /// 1.37 kubelet does it (checked against one, tests/real_node/): no condition (the eviction
    /// manager passes one only for node pressure) and the containers killed at once (grace 0),
    /// so they end terminated 137.
    fn evict(&mut self, cx: &mut Cx<'_>, p: &Obj, msg: &str, storage: bool, t: f64) {
        let now = self.now();
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["phase"] = json!("Failed");
                v["status"]["reason"] = json!("Evicted");
                v["status"]["message"] = json!(msg);
                if !storage {
                    set_condition(
                        v,
                        "DisruptionTarget",
                        "True",
                        "TerminationByKubelet",
                        msg.trim(),
                        &now,
                    );
                }
                set_condition(v, "Ready", "False", "PodFailed", "", &now);
                if storage {
                    set_condition(v, "ContainersReady", "False", "PodFailed", "", &now);
                }
                if let Some(list) = v["status"]["containerStatuses"].as_array_mut() {
                    for c in list {
                        c["ready"] = json!(false);
                        if storage {
                            let started = c["state"]["running"]["startedAt"].clone();
                            c["started"] = json!(false);
                            c["state"] = json!({"terminated": {"exitCode": 137, "reason": "Error",
                                "startedAt": started, "finishedAt": now}});
                        }
                    }
                }
                true
            });
        if let Some(u) = updated {
            // The kubelet's message as it is (its trailing space too, as on the pod).
            cx.event(&u.value(), "Warning", "Evicted", msg, "kubelet", t);
            cx.event(
                &u.value(),
                "Normal",
                "Killing",
                "Stopping container spark-kubernetes-executor",
                "kubelet",
                t,
            );
        }
        for c in kube_status::container_names(&p.value()) {
            self.logs.finish(p.namespace(), p.name(), &c);
        }
        self.set_stage(
            &(p.namespace().to_owned(), p.name().to_owned()),
            Stage::Done,
        );
    }

    /// Graceful node shutdown (kubelet 1.21+): the containers get SIGTERM and end with 143,
    /// the pod is Failed with reason `Terminated` and a `DisruptionTarget` condition.
    fn shutdown(&mut self, cx: &mut Cx<'_>, p: &Obj, t: f64) {
        const MSG: &str = "Pod was terminated in response to imminent node shutdown.";
        cx.event(
            &p.value(),
            "Normal",
            "Killing",
            "Stopping container spark-kubernetes-executor",
            "kubelet",
            t,
        );
        self.exit_containers(p, 143, "Error", t);
        let now = self.now();
        self.store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["reason"] = json!("Terminated");
                v["status"]["message"] = json!(MSG);
                set_condition(
                    v,
                    "DisruptionTarget",
                    "True",
                    "TerminationByKubelet",
                    MSG,
                    &now,
                );
                true
            });
    }

    /// The kubelet refuses a bound pod on admission: Failed, no container ever created.
    pub(super) fn reject(&mut self, cx: &mut Cx<'_>, p: &Obj, reason: &str, t: f64) {
        let resource = reason.strip_prefix("OutOf").unwrap_or("cpu");
        let detail = format!(
            "Node didn't have enough resource: {resource}, requested: 1000, used: 3500, capacity: 4000"
        );
        let msg = format!("Pod was rejected: {detail}");
        let now = self.now();
        let updated = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                v["status"]["phase"] = json!("Failed");
                v["status"]["reason"] = json!(reason);
                v["status"]["message"] = json!(msg);
                v["status"]["startTime"] = json!(now);
                true
            });
        if let Some(u) = updated {
            cx.event(&u.value(), "Warning", reason, &detail, "kubelet", t);
        }
    }

    /// Graceful termination: SIGTERM (143 after a moment), then the final DELETE.
    pub(super) fn terminate(&mut self, cx: &mut Cx<'_>, p: &Obj, stage: Stage, t: f64) {
        let key = (p.namespace().to_owned(), p.name().to_owned());
        if self.is_process_pod(p)
            && let Some(procs) = self.procs.as_mut()
        {
            let ckey = Self::container_key(p);
            if procs.is_running(&ckey) {
                // SIGTERM now, SIGKILL after the grace; the exit is reaped like any other.
                if matches!(stage, Stage::Running { .. }) {
                    procs.stop(&ckey, Self::grace_of(&p.value()));
                    cx.event(
                        &p.value(),
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
                    p,
                    self.log_line(
                        "ERROR",
                        "CoarseGrainedExecutorBackend",
                        "RECEIVED SIGNAL TERM",
                    ),
                );
                cx.event(
                    &p.value(),
                    "Normal",
                    "Killing",
                    &format!(
                        "Stopping container {}",
                        p.value()["spec"]["containers"][0]["name"]
                            .as_str()
                            .unwrap_or_default()
                    ),
                    "kubelet",
                    t,
                );
                // A fate `{action: delete, exit: 137}`: the executor ignores SIGTERM (stuck in
                // native code, a shutdown hook that hangs) and the kubelet kills it when the
                // grace period ends, as a real kubelet does (tests/real_node/).
                let stuck = self.fates.get(&key).is_some_and(|f| {
                    f.action == Some(Disruption::Delete)
                        && f.exit.as_ref().is_some_and(|(c, _)| *c == 137)
                });
                let (exit_at, code) = if stuck {
                    (t + Self::grace_of(&p.value()).as_secs_f64(), 137)
                } else {
                    (t + 0.5, 143)
                };
                self.set_stage(&key, Stage::Terminating { exit_at, code });
            }
            Stage::Terminating { exit_at, code } if t >= exit_at => {
                self.exit_containers(p, code, "Error", t);
                self.final_delete(p);
            }
            Stage::Terminating { .. } => {}
            _ => self.final_delete(p),
        }
    }

    pub(super) fn final_delete(&mut self, p: &Obj) {
        let Some(current) = self.store.get(Resource::Pods, p.namespace(), p.name()) else {
            return;
        };
        if current.value()["metadata"]["deletionGracePeriodSeconds"] == json!(0) {
            return; // done already; only finalizers keep it
        }
        let uid = self.runtimes.get(&PodRef::of(p)).map(|r| r.uid.clone());
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
}
