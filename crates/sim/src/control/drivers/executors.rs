//! A driver's executors: allocation rounds and pod creation (with each pod's scenario fate),
//! Spark's lifecycle manager (registration, removal reasons, missing pods, zombies) and
//! dynamic allocation's target.

use serde_json::json;

use super::batch::with_scheduling;
use super::*;
use crate::control::{Disruption, PodFate, last_chars};
use crate::error::ApiError;
use crate::scenario::{ExecutorSel, Fate, FateAction};
use crate::spark;
use crate::store::DeleteOptions;

impl Drivers {
    /// Dynamic allocation's target: the newest executors above it are removed.
    pub(super) fn scale(&mut self, i: usize, t: f64) {
        let start = self.drivers[i].spec.start.map_or(0.0, |d| d.as_secs_f64());
        let Some(target) = self.drivers[i]
            .spec
            .scale
            .iter()
            .filter(|s| s.at.as_secs_f64() + start <= t)
            .max_by_key(|s| s.at)
            .map(|s| s.executors)
        else {
            return;
        };
        if self.drivers[i].target != Some(target) {
            self.set_replicas(i, target);
            let app_id = self.drivers[i].app_id.clone();
            self.registry
                .update(&app_id, |app| app.target = Some(target));
        }
        self.drivers[i].target = Some(target);
        let d = &mut self.drivers[i];
        let live: Vec<(i64, Arc<Obj>)> = d
            .snapshot
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect::<Vec<_>>()
            .into_iter()
            .filter(|(id, p)| {
                !d.removed.contains_key(id)
                    && matches!(
                        d.state(*id, p),
                        ExecutorState::Running | ExecutorState::Pending
                    )
            })
            .collect();
        let surplus = live.len().saturating_sub(target as usize);
        let ns = d.spec.namespace.clone();
        for (id, pod) in live.into_iter().rev().take(surplus) {
            let msg = "Executor killed by driver.".to_owned();
            self.drivers[i].removed.insert(id, msg.clone());
            self.registry_update(i, id, |e, now| {
                e.remove_time = Some(now);
                e.remove_reason = Some(msg);
            });
            let _ = self
                .store
                .delete(Resource::Pods, &ns, pod.name(), &DeleteOptions::default());
        }
    }

    /// `zombie` fates: the driver removes the executor (a heartbeat timeout) but its pod is
    /// never deleted. `heartbeat-kill`: the same timeout, recorded as Spark 3.5 to 4.3 often
    /// record it ("Executor killed by driver."), and the pod deleted.
    pub(super) fn zombies(&mut self, kubelet: &Kubelet, i: usize, t: f64) {
        let due: Vec<(i64, DriverFate)> = self.drivers[i]
            .driver_fates
            .iter()
            .filter(|(id, (f, at))| {
                matches!(f, DriverFate::Zombie | DriverFate::HeartbeatKill)
                    && at.is_some_and(|a| t >= a)
                    && self.drivers[i].registered.contains_key(id)
                    && !self.drivers[i].removed.contains_key(id)
            })
            .map(|(id, (f, _))| (*id, *f))
            .collect();
        for (id, fate) in due {
            let msg = match fate {
                DriverFate::HeartbeatKill => "Executor killed by driver.",
                _ => "Executor heartbeat timed out after 120000 ms",
            }
            .to_owned();
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
                let line = kubelet.log_line(
                    "WARN",
                    "HeartbeatReceiver",
                    &format!("Removing executor {id} with no recent heartbeats: 120000 ms exceeds timeout 120000 ms"),
                );
                kubelet.log(&dp, line);
            }
            if fate == DriverFate::HeartbeatKill
                && let Some(name) = self.drivers[i]
                    .snapshot
                    .get(&id)
                    .map(|p| p.name().to_owned())
            {
                let _ = self
                    .store
                    .delete(Resource::Pods, &ns, &name, &DeleteOptions::default());
            }
        }
    }

    fn resolve_fate(&self, rng: &mut fastrand::Rng, i: usize, id: i64) -> (PodFate, Option<Fate>) {
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
        (self.pod_fate(rng, &f), fate)
    }

    /// What the kubelet and the control plane do to a pod with this fate.
    pub(super) fn pod_fate(&self, rng: &mut fastrand::Rng, f: &Fate) -> PodFate {
        let action = f.action.and_then(|a| match a {
            FateAction::Vanish => Some(Disruption::Vanish),
            FateAction::Evict => Some(Disruption::Evict),
            FateAction::EvictStorage => Some(Disruption::EvictStorage),
            FateAction::Shutdown => Some(Disruption::Shutdown),
            FateAction::Preempt => Some(Disruption::Preempt),
            FateAction::Delete => Some(Disruption::Delete),
            // Happens at admission, before anything runs (see `admission`).
            FateAction::Reject => None,
        });
        let after = f.after_running(rng).map(|d| d.as_secs_f64());
        {
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
                admission: (f.action == Some(FateAction::Reject))
                    .then(|| f.reason.clone().unwrap_or_else(|| "OutOfcpu".into())),
                preempted_by: f.by.as_ref().and_then(|app| {
                    let d = self.drivers.iter().find(|d| &d.spec.name == app)?;
                    Some((d.spec.namespace.clone(), d.driver_pod.clone()))
                }),
                resized_to: f.resized_to.clone(),
            }
        }
    }

    /// Creates executor `next_id` (the id is used up either way, as Spark's counter is); false
    /// when the API server refused the pod, or when the app's StatefulSet has no free
    /// ordinal (a held pod keeps its place; no id is used up then).
    fn create_executor(
        &mut self,
        rng: &mut fastrand::Rng,
        kubelet: &mut Kubelet,
        i: usize,
        t: f64,
    ) -> bool {
        let id = self.drivers[i].next_id;
        let ns = self.drivers[i].spec.namespace.clone();
        let driver_uid = self
            .store
            .get(Resource::Pods, &ns, &self.drivers[i].driver_pod)
            .map(|p| p.uid().to_owned())
            .unwrap_or_default();
        let Some((name, owners, annotations)) = self.executor_identity(rng, i, id, &driver_uid)
        else {
            return false;
        };
        self.drivers[i].next_id += 1;
        let (fate, raw) = self.resolve_fate(rng, i, id);
        // The statefulset and deployment allocators' template: the id comes later.
        let id_label = match self.drivers[i].controller {
            Some(_) => "EXECID".to_owned(),
            None => id.to_string(),
        };
        let d = &self.drivers[i];
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
                "labels": {"spark-app-selector": d.app_id, "spark-role": "executor", "spark-exec-id": id_label,
                           "spark-exec-resourceprofile-id": "0", "spark-app-name": d.spec.name, "spark-version": d.spec.spark_version},
                "ownerReferences": owners},
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
                            {"name": "SPARK_EXECUTOR_ID", "value": id_label},
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
        operator_labels(
            &d.spec,
            self.store.clock.epoch(),
            &mut pod["metadata"]["labels"],
        );
        if let Some(a) = annotations {
            pod["metadata"]["annotations"] = a;
        }
        // Spark's template for a StatefulSet or Deployment (their API requires it).
        if self.drivers[i].controller.is_some() {
            pod["spec"]["restartPolicy"] = json!("Always");
        }
        if let Some(f) = &raw
            && !f.node_selector.is_empty()
        {
            pod["spec"]["nodeSelector"] = json!(f.node_selector);
        }
        with_priority(&mut pod, &self.drivers[i].spec);
        with_scheduling(
            &mut pod,
            &self.drivers[i].spec,
            &self.drivers[i].app_id,
            false,
        );
        let created = if self.drivers[i].spec.executors_forbidden {
            // RBAC, before admission: the driver's service account may not create pods
            // (fabric8 prefixes its 403 text).
            let sa = format!("system:serviceaccount:{ns}:spark");
            Err(ApiError::forbidden_in(&sa, "create", "pods", "", Some(&ns)))
        } else {
            self.store.create(Resource::Pods, &ns, pod)
        };
        match created {
            Ok(_) => {
                self.assign_exec_id(i, &name, id);
                kubelet.set_fate((ns, name), fate);
                self.drivers[i].newly_created.insert(id, t);
                if let Some(f) = raw.as_ref()
                    && let Some(df) = f.driver
                {
                    let at = f.at.map(|d| d.as_secs_f64());
                    self.drivers[i].driver_fates.insert(id, (df, at));
                }
                true
            }
            Err(e) => {
                let why = if e.code == 403 && !e.message.contains("exceeded quota") {
                    format!(
                        "Forbidden!Configured service account doesn't have access. Service account may have been revoked. {}",
                        e.message
                    )
                } else {
                    e.message
                };
                self.creation_failed(kubelet, i, id, &why);
                false
            }
        }
    }

    /// A refused creation, as the driver logs it; Spark 4.3 counts it toward
    /// `spark.executor.maxNumFailures` (`registerPodCreationFailure`).
    fn creation_failed(&mut self, kubelet: &Kubelet, i: usize, id: i64, why: &str) {
        let d = &mut self.drivers[i];
        let v: Vec<u32> = d
            .spec
            .spark_version
            .split('.')
            .take(2)
            .filter_map(|x| x.parse().ok())
            .collect();
        let counts = v.as_slice() >= [4, 3].as_slice();
        let mut lines = Vec::new();
        if counts {
            d.creation_failures += 1;
            lines.push((
                "ERROR",
                "ExecutorPodsAllocator",
                format!(
                    "Failed to create executor pod {id}. Total failures: {}",
                    d.creation_failures
                ),
            ));
        }
        lines.push((
            "WARN",
            "ExecutorPodsSnapshotsStoreImpl",
            "Exception when notifying snapshot subscriber.".to_owned(),
        ));
        let (ns, driver_pod) = (d.spec.namespace.clone(), d.driver_pod.clone());
        if let Some(dp) = self.store.get(Resource::Pods, &ns, &driver_pod) {
            for (level, class, msg) in lines {
                let line = kubelet.log_line(level, class, &msg);
                kubelet.log(&dp, line);
            }
            // The exception's first line, as a stack trace starts.
            kubelet.log(
                &dp,
                format!("io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: POST at: https://kubernetes.default.svc/api/v1/namespaces/{ns}/pods. Message: {why}."),
            );
        }
    }

    pub(super) fn allocate(
        &mut self,
        rng: &mut fastrand::Rng,
        kubelet: &mut Kubelet,
        i: usize,
        t: f64,
    ) {
        let d = &mut self.drivers[i];
        if d.finished || t < d.allocate_after {
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
            .target
            .unwrap_or(d.spec.executors)
            .saturating_sub(count)
            .min(d.spec.allocation_batch);
        // A refused creation throws out of the round, as in Spark; the next round retries.
        for _ in 0..want {
            if !self.create_executor(rng, kubelet, i, t) {
                self.drivers[i].allocate_after = t + 1.0;
                break;
            }
        }
    }

    pub(super) fn lifecycle(&mut self, kubelet: &mut Kubelet, i: usize, t: f64) {
        let config = ClassifyConfig::default();
        for (id, pod) in self.drivers[i].unsettled() {
            if pod.label("spark-exec-inactive") == Some("true") {
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
                            kubelet.log_line("INFO", "ExecutorPodsLifecycleManager", msg.trim())
                        }
                        _ => kubelet.log_line(
                            "ERROR",
                            "TaskSchedulerImpl",
                            &format!(
                                "Lost executor {id} on {}: {}",
                                Some(pod.field("/status/podIP"))
                                    .filter(|s| !s.is_empty())
                                    .unwrap_or("?"),
                                msg.trim()
                            ),
                        ),
                    };
                    kubelet.log(&dp, line);
                }
            }
            if state == ExecutorState::Deleted {
                continue;
            }
            // removeExecutorFromK8s: delete (unless already deleting), or label it inactive.
            let (ns, name) = (pod.namespace().to_owned(), pod.name().to_owned());
            if self.drivers[i].spec.delete_on_termination {
                if !pod.deleting()
                    && self
                        .store
                        .get(Resource::Pods, &ns, &name)
                        .is_some_and(|p| !p.deleting())
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
        if d.failed_ids.len() as u32 + d.creation_failures > d.max_failures && !d.finished {
            self.fail_app(kubelet, i, t);
        }
    }

    pub(super) fn detect_missing(&mut self, i: usize, t: f64) {
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
}
