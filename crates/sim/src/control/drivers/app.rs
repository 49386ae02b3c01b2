//! A driver's app: its start (config map, driver pod, service, registry entry) and its end
//! (the driver pod ended or gone, or the app failed).

use serde_json::json;

use super::batch::with_scheduling;
use super::*;
use crate::control::last_chars;
use crate::scenario::Allocator;
use crate::spark_registry::AppView;
use crate::store::{DeleteOptions, Obj};

impl Drivers {
    /// Starts app `i`: its config map, driver pod (with the scenario's driver fate), batch
    /// scheduler objects, service and registry entry.
    /// An API server that refuses the driver pod (a quota, a webhook) leaves nothing made:
    /// its refusal is returned as spark-submit's client prints it.
    pub(super) fn start_app(
        &mut self,
        rng: &mut fastrand::Rng,
        kubelet: &mut Kubelet,
        i: usize,
    ) -> Result<(), String> {
        let d = &self.drivers[i];
        let (ns, prefix, app_id) = (d.spec.namespace.clone(), d.prefix.clone(), d.app_id.clone());
        let mut labels = json!({"spark-app-selector": app_id, "spark-role": "driver", "spark-app-name": d.spec.name, "spark-version": d.spec.spark_version});
        operator_labels(&d.spec, self.store.clock.epoch(), &mut labels);
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
            Allocator::Direct => props,
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
        with_scheduling(&mut driver, &d.spec, &app_id, true);
        let driver_name = d.driver_pod.clone();
        // Only an operator's submission stops at a refused driver pod (plain apps go on as
        // they always did: their spark-submit is not played).
        let created = self.store.create(Resource::Pods, &ns, driver);
        if let Err(e) = &created
            && d.spec.operator.is_some()
        {
            let _ = self.store.delete(
                Resource::ConfigMaps,
                &ns,
                &cm_name,
                &DeleteOptions::default(),
            );
            return Err(format!(
                "Exception in thread \"main\" io.fabric8.kubernetes.client.KubernetesClientException: \
                 Failure executing: POST at: https://kubernetes.default.svc/api/v1/namespaces/{ns}/pods. \
                 Message: {}. Received status: Status(apiVersion=v1, code={}, kind=Status, \
                 message={}, reason={}, status=Failure).",
                e.message, e.code, e.message, e.reason
            ));
        }
        self.batch_start(i);
        if let Some(f) = driver_fate {
            let fate = self.pod_fate(rng, &f);
            kubelet.set_fate((ns.clone(), driver_name), fate);
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
            target: d.dynamic().then(|| d.target.unwrap_or(d.spec.executors)),
            streaming: d.spec.streaming.clone(),
        };
        self.registry.insert(view);
        self.drivers[i].started = true;
        self.drivers[i].last_poll = self.store.clock.elapsed_secs();
        Ok(())
    }

    /// The driver pod ended or went: with its JVM gone, running executors lose their driver
    /// and exit (1, "Driver … disassociated! Shutting down."); with its pod gone, the
    /// garbage collector deletes the executor pods it owned.
    pub(super) fn driver_over(
        &mut self,
        kubelet: &mut Kubelet,
        i: usize,
        driver: Option<&Obj>,
        t: f64,
    ) {
        let q = self.executor_pods(i);
        let d = &self.drivers[i];
        let ns = d.spec.namespace.clone();
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
                // Spark's SparkKubernetesDiagnosticsSetter: the main's exception on the pod.
                if let Some(text) = self.drivers[i]
                    .spec
                    .driver_fate
                    .as_ref()
                    .filter(|f| f.exit.is_some_and(|c| c != 0) && f.action.is_none())
                    .and_then(|f| f.exit_exception.clone())
                    .filter(|_| !succeeded)
                {
                    self.store.modify(Resource::Pods, &ns, p.name(), |v| {
                        v["metadata"]["annotations"]["spark.exit-exception"] = json!(text);
                        true
                    });
                }
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
                        kubelet.exit_containers(p, 1, "Error", t);
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn fail_app(&mut self, kubelet: &mut Kubelet, i: usize, t: f64) {
        self.drivers[i].finished = true;
        let d = &self.drivers[i];
        let (ns, app_id, driver_pod, max) = (
            d.spec.namespace.clone(),
            d.app_id.clone(),
            d.driver_pod.clone(),
            d.max_failures,
        );
        if let Some(dp) = self.store.get(Resource::Pods, &ns, &driver_pod) {
            let line = kubelet.log_line(
                "ERROR",
                "ExecutorPodsAllocator",
                &format!("Max number of executor failures ({max}) reached"),
            );
            kubelet.log(&dp, line);
            kubelet.exit_containers(&dp, 11, "Error", t);
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
}
