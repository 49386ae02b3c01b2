//! The scenario's cluster-wide timeline: nodes that join, nodes that are lost.

use std::sync::Arc;

use serde_json::{Value, json};

use super::context::Cx;
use super::kubelet::Kubelet;
use crate::clock::fmt_time;
use crate::kube_status::set_condition;
use crate::scenario::NodeSpec;
use crate::store::{ObjectStore, Query, Resource};

/// The cluster timeline: each of the scenario's `timeline:` steps, done once when its time
/// comes.
#[derive(Debug)]
pub(super) struct Timeline {
    store: Arc<ObjectStore>,
    /// Which steps are done, by index in the scenario's timeline.
    done: Vec<bool>,
}

impl Timeline {
    pub(super) fn new(store: Arc<ObjectStore>, steps: usize) -> Self {
        Self {
            store,
            done: vec![false; steps],
        }
    }

    /// Does the steps whose time has come.
    pub(super) fn step(&mut self, cx: &mut Cx<'_>, kubelet: &mut Kubelet, t: f64) {
        for i in 0..cx.scenario.timeline.len() {
            if self.done[i] || cx.scenario.timeline[i].at.as_secs_f64() > t {
                continue;
            }
            self.done[i] = true;
            let step = cx.scenario.timeline[i].clone();
            if let Some(spec) = &step.add_node {
                let now = self.now();
                for node in node_objects(spec, &now) {
                    let _ = self.store.create(Resource::Nodes, "", node);
                }
            }
            if let Some(node) = &step.lose_node {
                let now = self.now();
                self.store.modify(Resource::Nodes, "", node, |n| {
                    n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                        "message": "Kubelet stopped posting node status.", "lastTransitionTime": now}]);
                    n["spec"]["taints"] = json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}]);
                    true
                });
                let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
                for p in pods.iter().filter(|p| p.node() == node.as_str()) {
                    self.store
                        .modify(Resource::Pods, p.namespace(), p.name(), |v| {
                            set_condition(v, "Ready", "False", "NodeNotReady", "", &now);
                            true
                        });
                    cx.event(
                        &p.value(),
                        "Warning",
                        "NodeNotReady",
                        "Node is not ready",
                        "node-controller",
                        t,
                    );
                    kubelet.node_lost(p);
                }
            }
        }
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}

/// The nodes of a scenario's node spec, as the API has them.
pub(super) fn node_objects(spec: &NodeSpec, now: &str) -> Vec<Value> {
    (1..=spec.count)
        .map(|i| {
            let name = if spec.count == 1 { spec.name.clone() } else { format!("{}-{i}", spec.name) };
            let taints: Vec<Value> = spec
                .taints
                .iter()
                .map(|t| {
                    let (kv, effect) = t.split_once(':').unwrap_or((t.as_str(), "NoSchedule"));
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    json!({"key": k, "value": v, "effect": effect})
                })
                .collect();
            let mut labels = json!({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"});
            for (k, v) in &spec.labels {
                labels[k] = json!(v);
            }
            json!({"metadata": {"name": name, "labels": labels},
                   "spec": {"taints": taints},
                   "status": {"capacity": {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods.to_string()},
                              "allocatable": {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods.to_string()},
                              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                              "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}],
                              "nodeInfo": {"kubeletVersion": "v1.33.0-sim", "containerRuntimeVersion": "sim://1.0",
                                           "operatingSystem": "linux", "architecture": "amd64"}}})
        })
        .collect()
}
