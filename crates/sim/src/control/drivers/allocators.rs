//! Spark's `statefulset` and `deployment` allocators: the driver makes one controller (per
//! resource profile; the simulator has only profile 0) owned by its pod, and that controller
//! owns the executor pods. The simulated driver plays the controllers too: it creates each
//! pod under the controller's name and owner reference, with `spark-exec-id=EXECID` as
//! Spark's template has it, and labels it with its id at once (Spark's driver does so when
//! the executor asks `GenerateExecID`). A StatefulSet's pod takes the lowest free ordinal,
//! so a deleted pod comes back under its old name; a ReplicaSet's gets a random suffix.
//! `spec.replicas` follows the executor target.

use serde_json::{Value, json};

use super::*;
use crate::scenario::Allocator;
use crate::store::DeleteOptions;

/// The controller an app's executor pods belong to.
#[derive(Debug, Clone)]
pub(super) struct SetRef {
    resource: Resource,
    name: String,
    uid: String,
}

fn owner(kind: &str, name: &str, uid: &str) -> Value {
    json!([{"apiVersion": if kind == "Pod" { "v1" } else { "apps/v1" }, "kind": kind, "name": name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true}])
}

impl Drivers {
    /// The app's controller, made once its driver runs (Spark's allocators wait for the
    /// driver to be ready); `None` for the direct allocator, or when the driver pod is gone.
    fn set_of(&mut self, rng: &mut fastrand::Rng, i: usize) -> Option<SetRef> {
        let d = &self.drivers[i];
        if d.spec.allocator == Allocator::Direct {
            return None;
        }
        if let Some(s) = &d.controller {
            return Some(s.clone());
        }
        // The ReplicaSet's pod-template-hash (a hash of the template there; random here).
        let hash = hex(rng, 10);
        let d = &self.drivers[i];
        let ns = d.spec.namespace.clone();
        let driver = self.store.get(Resource::Pods, &ns, &d.driver_pod)?;
        let selector = json!({"matchLabels": {"spark-app-selector": d.app_id, "spark-role": "executor",
                                              "spark-exec-resourceprofile-id": "0"}});
        let mut template = json!({"metadata": {"labels": {"spark-app-selector": d.app_id, "spark-role": "executor",
            "spark-exec-id": "EXECID", "spark-exec-resourceprofile-id": "0", "spark-app-name": d.spec.name,
            "spark-version": d.spec.spark_version}}});
        operator_labels(
            &d.spec,
            self.store.clock.epoch(),
            &mut template["metadata"]["labels"],
        );
        let replicas = d.target.unwrap_or(d.spec.executors);
        let driver_owner = owner("Pod", &d.driver_pod, driver.uid());
        let set = match d.spec.allocator {
            Allocator::Statefulset => {
                let name = format!("spark-s-{}-0", d.app_id);
                let sts = json!({"metadata": {"name": name, "ownerReferences": driver_owner},
                    "spec": {"podManagementPolicy": "Parallel", "replicas": replicas, "selector": selector,
                             "serviceName": "", "template": template},
                    "status": {"replicas": 0, "availableReplicas": 0}});
                let obj = self.store.create(Resource::StatefulSets, &ns, sts).ok()?;
                SetRef {
                    resource: Resource::StatefulSets,
                    name,
                    uid: obj.uid().to_owned(),
                }
            }
            Allocator::Deployment => {
                let name = format!("spark-d-{}-0", d.app_id);
                let dep = json!({"metadata": {"name": name, "ownerReferences": driver_owner},
                    "spec": {"replicas": replicas, "selector": selector, "template": template},
                    "status": {"replicas": 0, "availableReplicas": 0}});
                let dep = self.store.create(Resource::Deployments, &ns, dep).ok()?;
                let mut rs_selector = selector.clone();
                rs_selector["matchLabels"]["pod-template-hash"] = json!(hash);
                let mut rs_template = template.clone();
                rs_template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
                rs_template["metadata"]["annotations"] =
                    json!({"controller.kubernetes.io/pod-deletion-cost": "0"});
                let rs_name = format!("{name}-{hash}");
                let rs = json!({"metadata": {"name": rs_name, "labels": {"pod-template-hash": hash},
                        "annotations": {"deployment.kubernetes.io/revision": "1"},
                        "ownerReferences": owner("Deployment", &name, dep.uid())},
                    "spec": {"replicas": replicas, "selector": rs_selector, "template": rs_template},
                    "status": {"replicas": 0}});
                let obj = self.store.create(Resource::ReplicaSets, &ns, rs).ok()?;
                SetRef {
                    resource: Resource::ReplicaSets,
                    name: rs_name,
                    uid: obj.uid().to_owned(),
                }
            }
            Allocator::Direct => return None,
        };
        self.drivers[i].controller = Some(set.clone());
        Some(set)
    }

    /// The name, owner and extra annotations of executor `id`'s new pod: the driver's
    /// (`<prefix>-exec-<id>`, owned by the driver pod) or the controller's; `None` when the
    /// StatefulSet has no free ordinal below its replicas (a pod still terminating, held by a
    /// finalizer, keeps its ordinal: the StatefulSet waits for it to go).
    pub(super) fn executor_identity(
        &mut self,
        rng: &mut fastrand::Rng,
        i: usize,
        id: i64,
        driver_uid: &str,
    ) -> Option<(String, Value, Option<Value>)> {
        let Some(set) = self.set_of(rng, i) else {
            let d = &self.drivers[i];
            return Some((
                format!("{}-exec-{id}", d.prefix),
                owner("Pod", &d.driver_pod, driver_uid),
                None,
            ));
        };
        let d = &self.drivers[i];
        let ns = d.spec.namespace.clone();
        let replicas = d.target.unwrap_or(d.spec.executors);
        let kind = set.resource.kind();
        match set.resource {
            Resource::StatefulSets => {
                let name = (0..replicas)
                    .map(|o| format!("{}-{o}", set.name))
                    .find(|n| self.store.get(Resource::Pods, &ns, n).is_none())?;
                Some((name, owner(kind, &set.name, &set.uid), None))
            }
            _ => {
                let suffix: String = (0..5)
                    .map(|_| {
                        let c = rng.u8(0..36);
                        char::from(if c < 10 { b'0' + c } else { b'a' + c - 10 })
                    })
                    .collect();
                Some((
                    format!("{}-{suffix}", set.name),
                    owner(kind, &set.name, &set.uid),
                    Some(json!({"controller.kubernetes.io/pod-deletion-cost": "0"})),
                ))
            }
        }
    }

    /// After the pod is created with `spark-exec-id=EXECID`: the driver's label, as its
    /// `GenerateExecID` answer writes it.
    pub(super) fn assign_exec_id(&mut self, i: usize, name: &str, id: i64) {
        if self.drivers[i].controller.is_none() {
            return;
        }
        let ns = self.drivers[i].spec.namespace.clone();
        self.store.modify(Resource::Pods, &ns, name, |v| {
            v["metadata"]["labels"]["spark-exec-id"] = json!(id.to_string());
            true
        });
    }

    /// A controller's pod whose containers restarted in place (`restartPolicy: Always`): the
    /// new JVM asks the driver for an id (`GenerateExecID`) and the driver labels the pod
    /// with it; the executor that died is removed. (Spark removes it when its heartbeats
    /// stop, `spark.network.timeout` later; the simulated driver does at once.)
    pub(super) fn relabel_restarted(&mut self, i: usize, t: f64) {
        if self.drivers[i].controller.is_none() {
            return;
        }
        let restarts = |p: &Obj| {
            p.value()["status"]["containerStatuses"][0]["restartCount"]
                .as_i64()
                .unwrap_or(0)
        };
        let d = &self.drivers[i];
        let restarted: Vec<(i64, Arc<Obj>, i64)> = d
            .snapshot
            .iter()
            .map(|(id, p)| (*id, p.clone(), restarts(p)))
            .filter(|(_, p, n)| *n > d.restarts.get(p.uid()).copied().unwrap_or(0))
            .collect();
        for (old, pod, n) in restarted {
            let d = &mut self.drivers[i];
            d.restarts.insert(pod.uid().to_owned(), n);
            let new = d.next_id;
            d.next_id += 1;
            d.snapshot.remove(&old);
            d.registered.remove(&old);
            let reason = "Executor heartbeat timed out after 120000 ms".to_owned();
            d.removed.insert(old, reason.clone());
            d.newly_created.insert(new, t);
            self.registry_update(i, old, |e, now| {
                e.remove_time = Some(now);
                e.remove_reason = Some(reason);
            });
            self.assign_exec_id(i, pod.name(), new);
        }
    }

    /// The executor target changed: the controller's replicas follow it (the Deployment's
    /// and its ReplicaSet's both).
    pub(super) fn set_replicas(&mut self, i: usize, replicas: u32) {
        let Some(set) = self.drivers[i].controller.clone() else {
            return;
        };
        let ns = self.drivers[i].spec.namespace.clone();
        let scale = |v: &mut Value| {
            let changed = v["spec"]["replicas"] != json!(replicas);
            v["spec"]["replicas"] = json!(replicas);
            changed
        };
        self.store.modify(set.resource, &ns, &set.name, scale);
        if set.resource == Resource::ReplicaSets {
            let dep = format!("spark-d-{}-0", self.drivers[i].app_id);
            self.store.modify(Resource::Deployments, &ns, &dep, scale);
        }
    }

    /// The app is over (its pod gone, or `spark.stop()`): the controllers go too (Spark's
    /// allocator `stop`, or the garbage collector).
    pub(super) fn delete_sets(&mut self, i: usize) {
        let Some(set) = self.drivers[i].controller.take() else {
            return;
        };
        let ns = self.drivers[i].spec.namespace.clone();
        let opts = DeleteOptions::default();
        let _ = self.store.delete(set.resource, &ns, &set.name, &opts);
        if set.resource == Resource::ReplicaSets {
            let dep = format!("spark-d-{}-0", self.drivers[i].app_id);
            let _ = self.store.delete(Resource::Deployments, &ns, &dep, &opts);
        }
    }
}
