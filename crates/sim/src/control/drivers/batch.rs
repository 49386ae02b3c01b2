//! The batch schedulers and admission controllers of a scenario's `scheduling:`, played as
//! far as their words go: what Kueue, Volcano and YuniKorn write on an app's pods and
//! group objects, and the native gang's Workload. None of them schedules anything here: the
//! default scheduler leaves their pods alone (a gate, another `schedulerName`, an
//! incomplete gang), and they stay Pending with the words the real ones write.
//!
//! Ref (strings): Kueue `pkg/scheduler/flavorassigner`, `pkg/workload`; Volcano
//! `plugins/gang/gang.go`, `cache/cache.go`; yunikorn-k8shim `application.go`; kubernetes
//! `pkg/registry/core/pod/strategy.go` (the gated condition, set by `writes.rs`).

use serde_json::{Value, json};

use super::*;
use crate::kube_status::set_condition;
use crate::scenario::{AppSpec, SchedulerKind};

/// Kueue's admission gate.
const KUEUE_GATE: &str = "kueue.x-k8s.io/admission";

/// The scheduling fields of one of an app's pods, as the batch system's webhook or Spark's
/// feature step leaves them.
pub(super) fn with_scheduling(pod: &mut Value, spec: &AppSpec, app_id: &str, driver: bool) {
    let Some(sc) = &spec.scheduling else { return };
    match sc.by {
        // Through an operator, Kueue admits the SparkApplication, not its pods.
        SchedulerKind::Kueue if spec.operator.is_some() => {}
        SchedulerKind::Kueue if driver => {
            let queue = sc.queue.as_deref().unwrap_or("default");
            pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!(queue);
            pod["metadata"]["labels"]["kueue.x-k8s.io/managed"] = json!("true");
            pod["spec"]["schedulingGates"] = json!([{"name": KUEUE_GATE}]);
        }
        SchedulerKind::Kueue => {}
        SchedulerKind::Volcano => {
            pod["spec"]["schedulerName"] = json!("volcano");
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] =
                json!(format!("{app_id}-podgroup"));
        }
        SchedulerKind::Yunikorn => {
            pod["spec"]["schedulerName"] = json!("yunikorn");
            pod["metadata"]["labels"]["queue"] =
                json!(format!("root.{}", sc.queue.as_deref().unwrap_or("default")));
        }
        SchedulerKind::Gang if !driver => {
            pod["spec"]["workloadRef"] =
                json!({"name": format!("{}-gang", spec.name), "podGroup": "executors"});
        }
        SchedulerKind::Gang => {}
        SchedulerKind::Named => {
            pod["spec"]["schedulerName"] = json!(sc.scheduler_name.as_deref().unwrap_or_default());
        }
    }
}

/// A 5-hex suffix as Kueue's workload names have (a hash there; any stable one here).
fn suffix(s: &str) -> String {
    let h = s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{:05x}", h & 0xf_ffff)
}

impl Drivers {
    /// At the app's start, after its driver pod: the group objects its scheduler keeps.
    pub(super) fn batch_start(&mut self, i: usize) {
        let d = &self.drivers[i];
        let Some(sc) = d.spec.scheduling.clone() else {
            return;
        };
        let ns = d.spec.namespace.clone();
        let now = self.now();
        match sc.by {
            SchedulerKind::Volcano => {
                let min = sc.min_member.unwrap_or(1);
                let pg = json!({"metadata": {"name": format!("{}-podgroup", d.app_id)},
                    "spec": {"minMember": min, "queue": sc.queue.as_deref().unwrap_or("default"),
                             "minResources": {"cpu": "1", "memory": "1408Mi"}},
                    "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True",
                        "reason": "NotEnoughResources", "transitionID": suffix(&d.app_id),
                        "lastTransitionTime": now,
                        "message": format!("1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, {min} minAvailable; Pending: 1 Unschedulable")}]}});
                let _ = self.store.create(Resource::PodGroups, &ns, pg);
            }
            SchedulerKind::Kueue if d.spec.operator.is_some() => {}
            SchedulerKind::Kueue => {
                let Some(driver) = self.store.get(Resource::Pods, &ns, &d.driver_pod) else {
                    return;
                };
                let name = format!("pod-{}-{}", d.driver_pod, suffix(driver.uid()));
                let message = sc.waiting.clone().unwrap_or_else(|| {
                    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more needed".to_owned()
                });
                let wl = json!({"metadata": {"name": name,
                        "labels": {"kueue.x-k8s.io/job-uid": driver.uid()},
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": d.driver_pod,
                                             "uid": driver.uid(), "controller": true, "blockOwnerDeletion": true}]},
                    "spec": {"queueName": sc.queue.as_deref().unwrap_or("default"), "active": true,
                             "podSets": [{"name": "main", "count": 1}]},
                    "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                        "message": message, "lastTransitionTime": now, "observedGeneration": 1}]}});
                let _ = self.store.create(Resource::KueueWorkloads, &ns, wl);
            }
            SchedulerKind::Gang => {
                let wl = json!({"metadata": {"name": format!("{}-gang", d.spec.name)},
                    "spec": {"podGroups": [
                        {"name": "executors", "policy": {"gang": {"minCount": sc.min_member.unwrap_or(1)}}}]}});
                let _ = self.store.create(Resource::Workloads, &ns, wl);
            }
            SchedulerKind::Yunikorn | SchedulerKind::Named => {}
        }
    }

    /// Every pass: what the app's scheduler says of its waiting driver.
    pub(super) fn batch(&mut self, cx: &mut Cx<'_>, i: usize, t: f64) {
        let d = &self.drivers[i];
        let Some(sc) = d.spec.scheduling.clone() else {
            return;
        };
        let (ns, pod_name, app_id) = (
            d.spec.namespace.clone(),
            d.driver_pod.clone(),
            d.app_id.clone(),
        );
        let start = d.spec.start.map_or(0.0, |s| s.as_secs_f64());
        let Some(pod) = self.store.get(Resource::Pods, &ns, &pod_name) else {
            return;
        };
        let v = pod.value();
        if pod.bound() || pod.phase() != "Pending" || pod.deleting() {
            return;
        }
        match sc.by {
            SchedulerKind::Kueue if d.spec.operator.is_some() => {}
            SchedulerKind::Kueue => {
                let Some(at) = sc.admit_at.map(|a| a.as_secs_f64()) else {
                    return;
                };
                if t - start < at {
                    return;
                }
                let now = self.now();
                self.store.modify(Resource::Pods, &ns, &pod_name, |p| {
                    p["spec"]["schedulingGates"] = json!([]);
                    if let Some(c) = p["status"]["conditions"].as_array_mut() {
                        c.retain(|c| c["reason"] != "SchedulingGated");
                    }
                    true
                });
                let (list, _) = self
                    .store
                    .list_all(Resource::KueueWorkloads, &Query::default());
                let queue = sc.queue.as_deref().unwrap_or("default").to_owned();
                for w in list.iter().filter(|w| {
                    w.namespace() == ns
                        && w.value()["metadata"]["ownerReferences"][0]["name"] == pod_name.as_str()
                }) {
                    self.store
                        .modify(Resource::KueueWorkloads, &ns, w.name(), |wv| {
                            wv["status"] = json!({
                                "admission": {"clusterQueue": format!("{queue}-cluster-queue"),
                                              "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "default-flavor", "memory": "default-flavor"}}]},
                                "conditions": [
                                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                     "message": format!("Quota reserved in ClusterQueue {queue}-cluster-queue"), "lastTransitionTime": now},
                                    {"type": "Admitted", "status": "True", "reason": "Admitted",
                                     "message": "The workload is admitted", "lastTransitionTime": now}]});
                            true
                        });
                }
            }
            SchedulerKind::Volcano => {
                let min = sc.min_member.unwrap_or(1);
                let msg = format!(
                    "pod group is not ready, 1 Pending, {min} minAvailable; Pending: 1 Unschedulable"
                );
                let changed = v["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["type"] == "PodScheduled")
                    .is_none_or(|c| c["message"] != msg.as_str());
                if changed {
                    let now = self.now();
                    self.store.modify(Resource::Pods, &ns, &pod_name, |pv| {
                        set_condition(pv, "PodScheduled", "False", "Unschedulable", &msg, &now);
                        true
                    });
                    cx.event(&v, "Warning", "FailedScheduling", &msg, "volcano", t);
                }
            }
            SchedulerKind::Yunikorn => {
                if let Some(reason) = &sc.rejected {
                    if t - start < 2.0 {
                        return;
                    }
                    // The shim keeps the text between the first two colons of
                    // "ApplicationRejected: <reason>" in the status; the event has it whole.
                    let full = format!("ApplicationRejected: {reason}");
                    let cut = full.split(':').nth(1).unwrap_or_default().to_owned();
                    self.store.modify(Resource::Pods, &ns, &pod_name, |pv| {
                        pv["status"] =
                            json!({"phase": "Failed", "reason": "ApplicationRejected", "message": cut});
                        true
                    });
                    let msg = format!("Application {app_id} scheduling failed, reason: {full}");
                    cx.event(&v, "Warning", "ApplicationFailed", &msg, "yunikorn", t);
                } else {
                    let queue = sc.queue.as_deref().unwrap_or("default");
                    let msg = sc.waiting.clone().unwrap_or_else(|| {
                        format!(
                            "Request '{}' does not fit in queue 'root.{queue}' (requested map[memory:1476395008 pods:1 vcore:1000], available map[memory:536870912 vcore:500])",
                            pod.uid()
                        )
                    });
                    if cx.events.should_repeat(&v, "Informational", &msg, t) {
                        cx.event(&v, "Normal", "Informational", &msg, "yunikorn", t);
                    }
                }
            }
            SchedulerKind::Gang | SchedulerKind::Named => {}
        }
    }
}
