//! The Spark-like drivers: executor allocation, Spark's snapshot (watch + 30 s poll), missing-pod detection, removal reasons and app failure.

use super::*;

impl Control {
    pub(super) fn drain_feed(&mut self, t: f64) {
        loop {
            match self.feed.try_recv() {
                Ok(c) => {
                    if c.resource != Resource::Pods {
                        continue;
                    }
                    if c.new.label("spark-role") != Some("executor") {
                        continue;
                    }
                    let Some(id) = c
                        .new
                        .label("spark-exec-id")
                        .and_then(|s| s.parse::<i64>().ok())
                    else {
                        continue;
                    };
                    let app = c.new.label("spark-app-selector");
                    for d in &mut self.drivers {
                        if app == Some(d.app_id.as_str()) && c.new.namespace() == d.spec.namespace {
                            // Spark's watch ignores the event type: every event upserts.
                            d.snapshot.insert(id, c.new.clone());
                            d.newly_created.remove(&id);
                        }
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(broadcast::error::TryRecvError::Lagged(_)) => self.relist_executors(t),
                Err(broadcast::error::TryRecvError::Closed) => {
                    self.feed = store_feed(&self.store);
                    return;
                }
            }
        }
    }

    pub(super) fn drive(&mut self, i: usize, t: f64) {
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
        self.batch(i, t);
        let driver = self.store.get(Resource::Pods, &ns, &driver_pod);
        let driver_running = driver.as_ref().is_some_and(|d| d.phase() == "Running");
        self.driver_over(i, driver.as_deref(), t);
        if !driver_running || self.drivers[i].finished {
            return;
        }
        self.scale(i, t);
        // The poll, every 30 s: Spark's full list replaces the snapshot. The feed missed
        // nothing since the last full list (a lag relists at once, below), so the list
        // would only drop what is gone (or inactive) and refresh the rest: read those by
        // key (100 drivers listing 100k pods every 30 s would cost a core).
        if t - self.drivers[i].last_poll >= POLL_SECS {
            self.drivers[i].last_poll = t;
            let d = &self.drivers[i];
            let snapshot: BTreeMap<i64, Arc<Obj>> = d
                .snapshot
                .iter()
                .filter_map(|(id, p)| {
                    // The same pod (a StatefulSet reuses its name for the next executor).
                    let now = self
                        .store
                        .get(Resource::Pods, &ns, p.name())
                        .filter(|now| now.uid() == p.uid())?;
                    (now.label("spark-exec-inactive") != Some("true")).then_some((*id, now))
                })
                .collect();
            self.drivers[i].snapshot = snapshot;
            self.detect_missing(i, t);
        }
        self.zombies(i, t);
        self.relabel_restarted(i, t);
        self.lifecycle(i, t);
        self.allocate(i, t);
    }

    /// The driver pod ended or went: with its JVM gone, running executors lose their driver
    /// and exit (1, "Driver … disassociated! Shutting down."); with its pod gone, the
    /// garbage collector deletes the executor pods it owned.
    fn driver_over(&mut self, i: usize, driver: Option<&Obj>, t: f64) {
        let d = &self.drivers[i];
        let ns = d.spec.namespace.clone();
        let q = Query {
            namespace: Some(ns.clone()),
            labels: LabelSelector::parse(&format!(
                "spark-app-selector={},spark-role=executor",
                d.app_id
            ))
            .unwrap_or_default(),
            ..Query::default()
        };
        match driver {
            None if !d.collected => {
                self.drivers[i].collected = true;
                self.drivers[i].finished = true;
                self.delete_sets(i);
                let (pods, _) = self.store.list_all(Resource::Pods, &q);
                for p in pods {
                    let _ =
                        self.store
                            .delete(Resource::Pods, &ns, p.name(), &DeleteOptions::default());
                }
            }
            Some(p) if matches!(p.phase(), "Failed" | "Succeeded") && !d.finished => {
                self.drivers[i].finished = true;
                let succeeded = p.phase() == "Succeeded";
                if succeeded {
                    // Spark's allocator `stop` deletes its controller.
                    self.delete_sets(i);
                }
                let (pods, _) = self.store.list_all(Resource::Pods, &q);
                for p in pods.iter().filter(|p| p.phase() == "Running") {
                    if succeeded {
                        // SparkContext.stop(): the executor pods are deleted.
                        let _ = self.store.delete(
                            Resource::Pods,
                            &ns,
                            p.name(),
                            &DeleteOptions::default(),
                        );
                    } else {
                        self.exit_containers(p, 1, "Error", t);
                    }
                }
            }
            _ => {}
        }
    }

    /// Dynamic allocation's target: the newest executors above it are removed.
    fn scale(&mut self, i: usize, t: f64) {
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

    /// The feed lost changes: every driver's snapshot becomes a full list of its executor
    /// pods, from one pass over the store for all of them.
    fn relist_executors(&mut self, t: f64) {
        let q = Query {
            labels: LabelSelector::parse("spark-role=executor,spark-exec-inactive!=true")
                .unwrap_or_default(),
            ..Query::default()
        };
        let (pods, _) = self.store.list_all(Resource::Pods, &q);
        for d in &mut self.drivers {
            d.snapshot.clear();
        }
        for p in pods {
            let Some(id) = p.label("spark-exec-id").and_then(|s| s.parse::<i64>().ok()) else {
                continue;
            };
            let app = p.label("spark-app-selector");
            for d in &mut self.drivers {
                if app == Some(d.app_id.as_str()) && p.namespace() == d.spec.namespace {
                    d.snapshot.insert(id, p.clone());
                    d.newly_created.remove(&id);
                }
            }
        }
        // Each driver's next pass polls at once: its missing-pod check runs there, under
        // the same conditions as every poll (a running driver).
        for d in &mut self.drivers {
            d.last_poll = t - POLL_SECS;
        }
    }

    /// `zombie` fates: the driver removes the executor (a heartbeat timeout) but its pod is
    /// never deleted.
    pub(super) fn zombies(&mut self, i: usize, t: f64) {
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
                self.log(&dp, line);
            }
        }
    }

    pub(super) fn start_app(&mut self, i: usize) {
        let d = &self.drivers[i];
        let (ns, prefix, app_id) = (d.spec.namespace.clone(), d.prefix.clone(), d.app_id.clone());
        let labels = json!({"spark-app-selector": app_id, "spark-role": "driver", "spark-app-name": d.spec.name, "spark-version": d.spec.spark_version});
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
        // What Spark's driver would have in its conf for the budget the scenario gives it.
        let props = match d.spec.max_failures {
            Some(m) => format!("{props}spark.executor.maxNumFailures={m}\n"),
            None => props,
        };
        let props = match d.spec.allocator {
            crate::scenario::Allocator::Direct => props,
            a => format!(
                "{props}spark.kubernetes.allocation.pods.allocator={}\n",
                a.as_str()
            ),
        };
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
        let driver_mem = d
            .spec
            .driver_memory
            .clone()
            .unwrap_or_else(|| "1408Mi".into());
        let driver_fate = d.spec.driver_fate.as_ref().map(|f| f.as_fate());
        let driver_image = if driver_fate
            .as_ref()
            .is_some_and(|f| f.image_pull_error.is_some())
        {
            format!(
                "registry.example.com/data/spark:{}-etl",
                d.spec.spark_version
            )
        } else {
            d.spec.image.clone()
        };
        let driver = json!({
            "metadata": {"name": d.driver_pod, "labels": labels},
            "spec": {"restartPolicy": "Never", "serviceAccountName": "spark",
                     "containers": [{"name": "spark-kubernetes-driver", "image": driver_image, "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties"],
                                     "ports": [{"name": "driver-rpc-port", "containerPort": 7078}, {"name": "blockmanager", "containerPort": 7079}, {"name": "spark-ui", "containerPort": 4040}],
                                     "resources": {"requests": {"cpu": "1", "memory": driver_mem}, "limits": {"memory": driver_mem}},
                                     "volumeMounts": [{"name": "spark-conf-volume-driver", "mountPath": "/opt/spark/conf"}]}],
                     "volumes": [{"name": "spark-conf-volume-driver", "configMap": {"name": cm_name, "items": [{"key": "spark.properties", "path": "spark.properties"}]}}]}
        });
        let mut driver = driver;
        with_priority(&mut driver, &d.spec);
        super::batch::with_scheduling(&mut driver, &d.spec, &app_id, true);
        let driver_name = d.driver_pod.clone();
        let _ = self.store.create(Resource::Pods, &ns, driver);
        self.batch_start(i);
        if let Some(f) = driver_fate {
            let fate = self.pod_fate(&f);
            self.fates.insert((ns.clone(), driver_name), fate);
        }
        let d = &self.drivers[i];
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

    pub(super) fn resolve_fate(&mut self, i: usize, id: i64) -> (PodFate, Option<Fate>) {
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
        (self.pod_fate(&f), fate)
    }

    /// What the kubelet and the control plane do to a pod with this fate.
    pub(super) fn pod_fate(&mut self, f: &Fate) -> PodFate {
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
        let after = f.after_running(&mut self.rng).map(|d| d.as_secs_f64());
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
                preempted_by: f.by.clone(),
                resized_to: f.resized_to.clone(),
            }
        }
    }

    /// Creates executor `next_id` (the id is used up either way, as Spark's counter is); false
    /// when the API server refused the pod, or when the app's StatefulSet has no free
    /// ordinal (a held pod keeps its place; no id is used up then).
    pub(super) fn create_executor(&mut self, i: usize, t: f64) -> bool {
        let id = self.drivers[i].next_id;
        let ns = self.drivers[i].spec.namespace.clone();
        let driver_uid = self
            .store
            .get(Resource::Pods, &ns, &self.drivers[i].driver_pod)
            .map(|p| p.uid().to_owned())
            .unwrap_or_default();
        let Some((name, owners, annotations)) = self.executor_identity(i, id, &driver_uid) else {
            return false;
        };
        self.drivers[i].next_id += 1;
        let (fate, raw) = self.resolve_fate(i, id);
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
        super::batch::with_scheduling(
            &mut pod,
            &self.drivers[i].spec,
            &self.drivers[i].app_id,
            false,
        );
        match self.store.create(Resource::Pods, &ns, pod) {
            Ok(_) => {
                self.assign_exec_id(i, &name, id);
                self.fates.insert((ns, name), fate);
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
                self.creation_failed(i, id, &e.message);
                false
            }
        }
    }

    /// A refused creation, as the driver logs it; Spark 4.3 counts it toward
    /// `spark.executor.maxNumFailures` (`registerPodCreationFailure`).
    fn creation_failed(&mut self, i: usize, id: i64, why: &str) {
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
                let line = self.log_line(level, class, &msg);
                self.log(&dp, line);
            }
            // The exception's first line, as a stack trace starts.
            self.log(
                &dp,
                format!("io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: POST at: https://kubernetes.default.svc/api/v1/namespaces/{ns}/pods. Message: {why}."),
            );
        }
    }

    pub(super) fn allocate(&mut self, i: usize, t: f64) {
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
            if !self.create_executor(i, t) {
                self.drivers[i].allocate_after = t + 1.0;
                break;
            }
        }
    }

    pub(super) fn lifecycle(&mut self, i: usize, t: f64) {
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
                            self.log_line("INFO", "ExecutorPodsLifecycleManager", msg.trim())
                        }
                        _ => self.log_line(
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
                    self.log(&dp, line);
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
            self.fail_app(i, t);
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

    pub(super) fn fail_app(&mut self, i: usize, t: f64) {
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
            self.log(&dp, line);
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

    pub(super) fn registry_update(
        &self,
        i: usize,
        id: i64,
        f: impl FnOnce(&mut ExecView, DateTime<Utc>),
    ) {
        let d = &self.drivers[i];
        let now = self.store.clock.now();
        let mut apps = self.registry.apps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(app) = apps.get_mut(&d.app_id) {
            let e = app.executors.entry(id).or_insert_with(|| ExecView {
                // The pod Spark's snapshot has for the id (a controller names it), else the
                // name Spark's own allocator gives it.
                pod: d
                    .snapshot
                    .get(&id)
                    .map(|p| p.name().to_owned())
                    .unwrap_or_else(|| format!("{}-exec-{id}", d.prefix)),
                host: String::new(),
                cores: d.spec.cores,
                max_memory: d.spec.memory_mib * 1024 * 1024 * 6 / 10,
                ..ExecView::default()
            });
            f(e, now);
        }
    }
}

/// The app's priority on one of its pods, as admission leaves it (`priorityClassName` and
/// the `priority` the class resolves to, 0 without one).
fn with_priority(pod: &mut Value, spec: &crate::scenario::AppSpec) {
    if let Some(c) = &spec.priority_class {
        pod["spec"]["priorityClassName"] = json!(c);
    }
    // Admission always resolves a priority: 0 without a class (no global default here).
    pod["spec"]["priority"] = json!(spec.priority.unwrap_or(0));
}
