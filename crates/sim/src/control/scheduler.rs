//! The scheduler: binds pending pods to nodes, or says why none fits in the default
//! scheduler's words. The filter is the pure [`fit`]; `schedule` only keeps the books.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

use super::context::Cx;
use crate::clock::fmt_time;
use crate::kube_status::set_condition;
use crate::model::quantity;
use crate::scenario::SchedulerKind;
#[cfg(test)]
use crate::store;
use crate::store::{Obj, ObjectStore, Query, Resource};

/// What a node already carries: the requests of the non-terminal pods bound to it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Used {
    pub cpu: f64,
    pub memory: f64,
    pub pods: u32,
}

impl Used {
    fn add(&mut self, (cpu, memory): (f64, f64)) {
        self.cpu += cpu;
        self.memory += memory;
        self.pods += 1;
    }
}

/// Why a node cannot take a pod; `Display` gives the default scheduler's text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Reason {
    Taint { key: String, value: String },
    NotReady,
    Selector,
    TooManyPods,
    InsufficientCpu,
    InsufficientMemory,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Taint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Self::NotReady => f.write_str("node(s) were unschedulable"),
            Self::Selector => f.write_str("node(s) didn't match Pod's node affinity/selector"),
            Self::TooManyPods => f.write_str("Too many pods"),
            Self::InsufficientCpu => f.write_str("Insufficient cpu"),
            Self::InsufficientMemory => f.write_str("Insufficient memory"),
        }
    }
}

impl Reason {
    /// Whether evicting lower-priority pods could make room (resource reasons only).
    fn preemption_could_help(&self) -> bool {
        matches!(
            self,
            Self::TooManyPods | Self::InsufficientCpu | Self::InsufficientMemory
        )
    }
}

fn allocatable(node: &Value, resource: &str) -> f64 {
    node["status"]["allocatable"][resource]
        .as_str()
        .and_then(quantity::parse)
        .unwrap_or(0.0)
}

/// What the filters read of a node, read once a pass (a pass weighs every pending pod
/// against every node: 1,000 nodes at 100k pods).
pub(super) struct NodeInfo {
    name: String,
    /// Taints that keep pods off (NoSchedule, NoExecute): key, value.
    taints: Vec<(Value, Value)>,
    ready: bool,
    labels: Value,
    cpu: f64,
    memory: f64,
    pods: u32,
}

impl NodeInfo {
    pub(super) fn of(node: &Value) -> Self {
        Self {
            name: node["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            taints: node["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
                .map(|t| (t["key"].clone(), t["value"].clone()))
                .collect(),
            ready: node["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True"),
            labels: node["metadata"]["labels"].clone(),
            cpu: allocatable(node, "cpu"),
            memory: allocatable(node, "memory"),
            pods: allocatable(node, "pods") as u32,
        }
    }
}

/// Whether `node`, already carrying `used`, can take `pod`. Like the default scheduler's
/// filters: a taint, a node that is not Ready or a selector mismatch rules the node out on
/// its own; the resource checks all report.
#[cfg(test)]
pub(super) fn fit(pod: &Value, node: &Value, used: Used) -> Result<(), Vec<Reason>> {
    fit_info(pod, store::pod_requests(pod), &NodeInfo::of(node), used)
}

/// [`fit`] on a node read once, with the pod's requests summed once.
pub(super) fn fit_info(
    pod: &Value,
    (cpu, memory): (f64, f64),
    node: &NodeInfo,
    used: Used,
) -> Result<(), Vec<Reason>> {
    let tolerated = |key: &Value, value: &Value| {
        pod["spec"]["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|tol| {
                tol["key"] == *key && (tol["operator"] == "Exists" || tol["value"] == *value)
            })
    };
    if let Some((key, value)) = node.taints.iter().find(|(k, v)| !tolerated(k, v)) {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        return Err(vec![Reason::Taint {
            key: text(key),
            value: text(value),
        }]);
    }
    if !node.ready {
        return Err(vec![Reason::NotReady]);
    }
    let selector_ok = pod["spec"]["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, want)| node.labels[k] == *want);
    if !selector_ok {
        return Err(vec![Reason::Selector]);
    }
    let mut reasons = Vec::new();
    if used.pods + 1 > node.pods {
        reasons.push(Reason::TooManyPods);
    }
    if used.cpu + cpu > node.cpu + 1e-9 {
        reasons.push(Reason::InsufficientCpu);
    }
    if used.memory + memory > node.memory + 0.5 {
        reasons.push(Reason::InsufficientMemory);
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// The FailedScheduling message for a pod no node can take, `reasons` counted over nodes.
pub(super) fn unschedulable_message(total: usize, reasons: &BTreeMap<Reason, u32>) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".to_owned();
    }
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    let preemption = if reasons.keys().any(Reason::preemption_could_help) {
        format!(
            "0/{total} nodes are available: {total} No preemption victims found for incoming pod."
        )
    } else {
        format!("0/{total} nodes are available: {total} Preemption is not helpful for scheduling.")
    };
    format!(
        "0/{total} nodes are available: {}. preemption: {preemption}",
        parts.join(", ")
    )
}

/// A pod's native gang, from `spec.workloadRef`.
fn gang_key(v: &serde_json::Value) -> Option<(String, String, String)> {
    let r = &v["spec"]["workloadRef"];
    Some((
        v["metadata"]["namespace"].as_str()?.to_owned(),
        r["name"].as_str()?.to_owned(),
        r["podGroup"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// Not in a gang, or its gang has `minCount` pods (the GangScheduling plugin's PreEnqueue;
/// it says nothing while it waits).
fn gang_complete(
    v: &serde_json::Value,
    gangs: &HashMap<(String, String, String), (u32, u32)>,
) -> bool {
    gang_key(v).is_none_or(|k| gangs.get(&k).is_some_and(|(min, have)| have >= min))
}

/// Whether the default scheduler may consider this pod: not gated, asking for it, and not
/// a member of a gang still short of pods.
fn default_schedules(v: &Value) -> bool {
    let gated = v["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty());
    let other = v["spec"]["schedulerName"]
        .as_str()
        .is_some_and(|s| !s.is_empty() && s != "default-scheduler");
    !gated && !other
}

/// Pods a scheduling pass considers at most.
const SCHEDULE_BATCH: usize = 2_000;

/// The default scheduler: binds pending pods to nodes, a bounded batch a pass.
#[derive(Debug)]
pub(super) struct Scheduler {
    store: Arc<ObjectStore>,
    /// Where the next pass's batch starts among the pending pods.
    cursor: usize,
}

impl Scheduler {
    pub(super) fn new(store: Arc<ObjectStore>) -> Self {
        Self { store, cursor: 0 }
    }

    /// One pass: places a batch of the pending pods, or says why none fits.
    pub(super) fn schedule(&mut self, cx: &mut Cx<'_>, t: f64) {
        let (pods, _) = self.store.list_all(Resource::Pods, &Query::default());
        let pending: Vec<_> = pods
            .iter()
            .filter(|p| !p.bound() && !p.deleting() && p.phase() == "Pending")
            .collect();
        if pending.is_empty() {
            return;
        }
        // Only a scenario with a native gang pays for reading every pod's gang.
        let gangs = if cx.scenario.apps.iter().any(|a| {
            a.scheduling
                .as_ref()
                .is_some_and(|s| s.by == SchedulerKind::Gang)
        }) {
            self.gangs(&pods)
        } else {
            HashMap::new()
        };
        let (nodes, _) = self.store.list_all(Resource::Nodes, &Query::default());
        let nodes: Vec<NodeInfo> = nodes.iter().map(|n| NodeInfo::of(&n.value())).collect();
        let slot: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut used = vec![Used::default(); nodes.len()];
        for p in &pods {
            if p.bound()
                && !p.terminal()
                && let Some(&i) = slot.get(p.node())
            {
                used[i].add(p.requests);
            }
        }
        // Like the real scheduler's queue, a pass takes a bounded batch, resuming where
        // the last one stopped, so a burst of 100k pods is placed over many passes and a
        // pod no node takes does not starve the ones behind it.
        let start = self.cursor % pending.len();
        let batch = pending.len().min(SCHEDULE_BATCH);
        self.cursor = start + batch;
        for p in pending.iter().cycle().skip(start).take(batch) {
            let v = &p.value();
            // Gated, another scheduler's, or a gang short of pods: not this scheduler's.
            if !default_schedules(v) || !gang_complete(v, &gangs) {
                continue;
            }
            let mut reasons: BTreeMap<Reason, u32> = BTreeMap::new();
            // The node with the most free memory wins (the default scheduler spreads).
            let mut best: Option<(usize, f64)> = None;
            for (i, node) in nodes.iter().enumerate() {
                match fit_info(v, p.requests, node, used[i]) {
                    Ok(()) => {
                        let free = node.memory - used[i].memory;
                        if best.is_none_or(|(_, f)| free > f) {
                            best = Some((i, free));
                        }
                    }
                    Err(why) => why
                        .into_iter()
                        .for_each(|r| *reasons.entry(r).or_default() += 1),
                }
            }
            match best {
                Some((i, _)) => {
                    used[i].add(p.requests);
                    self.bind(cx, p, &nodes[i].name, t);
                }
                None => {
                    let msg = unschedulable_message(nodes.len(), &reasons);
                    self.unschedulable(cx, p, &msg, t);
                }
            }
        }
    }

    /// The native gangs: (namespace, workload, pod group) → (minCount, pods naming it).
    /// A pod group the scheduler cannot find (no Workload) has minCount `u32::MAX`.
    fn gangs(&self, pods: &[Arc<Obj>]) -> HashMap<(String, String, String), (u32, u32)> {
        let mut out: HashMap<(String, String, String), (u32, u32)> = HashMap::new();
        for p in pods {
            if p.terminal() || p.deleting() {
                continue;
            }
            let v = p.value();
            let Some(key) = gang_key(&v) else { continue };
            let entry = out.entry(key.clone()).or_insert_with(|| {
                let min = self
                    .store
                    .get(Resource::Workloads, &key.0, &key.1)
                    .and_then(|w| {
                        w.value()["spec"]["podGroups"]
                            .as_array()?
                            .iter()
                            .find(|g| g["name"] == key.2.as_str())
                            .map(|g| {
                                g["policy"]["gang"]["minCount"]
                                    .as_u64()
                                    .map_or(1, |m| u32::try_from(m).unwrap_or(u32::MAX))
                            })
                    })
                    .unwrap_or(u32::MAX);
                (min, 0)
            });
            entry.1 += 1;
        }
        out
    }

    fn bind(&self, cx: &mut Cx<'_>, p: &Obj, node: &str, t: f64) {
        let now = self.now();
        let bound = self
            .store
            .modify(Resource::Pods, p.namespace(), p.name(), |pv| {
                pv["spec"]["nodeName"] = json!(node);
                set_condition(pv, "PodScheduled", "True", "", "", &now);
                true
            });
        if let Some(b) = bound {
            let msg = format!(
                "Successfully assigned {}/{} to {node}",
                p.namespace(),
                p.name()
            );
            cx.event(
                &b.value(),
                "Normal",
                "Scheduled",
                &msg,
                "default-scheduler",
                t,
            );
        }
    }

    fn unschedulable(&self, cx: &mut Cx<'_>, p: &Obj, msg: &str, t: f64) {
        let v = &p.value();
        let changed = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "PodScheduled")
            .is_none_or(|c| c["message"] != msg);
        if changed {
            let now = self.now();
            self.store
                .modify(Resource::Pods, p.namespace(), p.name(), |pv| {
                    set_condition(pv, "PodScheduled", "False", "Unschedulable", msg, &now);
                    true
                });
        }
        if cx.events.should_repeat(v, "FailedScheduling", msg, t) {
            cx.event(
                v,
                "Warning",
                "FailedScheduling",
                msg,
                "default-scheduler",
                t,
            );
        }
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Reason, Used, fit, unschedulable_message};

    fn node(cpu: &str, memory: &str, pods: u32) -> serde_json::Value {
        json!({"metadata": {"name": "n1", "labels": {"pool": "spark"}},
               "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods.to_string()},
                          "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    fn pod(cpu: &str, memory: &str) -> serde_json::Value {
        json!({"spec": {"containers": [{"name": "spark-kubernetes-executor",
               "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}})
    }

    #[test]
    fn a_pod_fits_an_empty_node_that_has_room() {
        assert_eq!(
            fit(&pod("1", "1Gi"), &node("4", "8Gi", 10), Used::default()),
            Ok(())
        );
    }

    #[test]
    fn every_short_resource_is_reported() {
        let used = Used {
            cpu: 3.5,
            memory: 7.5 * 1024.0 * 1024.0 * 1024.0,
            pods: 10,
        };
        assert_eq!(
            fit(&pod("1", "1Gi"), &node("4", "8Gi", 10), used),
            Err(vec![
                Reason::TooManyPods,
                Reason::InsufficientCpu,
                Reason::InsufficientMemory
            ])
        );
        // Exactly full still fits (no rounding error from the quantity parse).
        let used = Used {
            cpu: 3.0,
            memory: 7.0 * 1024.0 * 1024.0 * 1024.0,
            pods: 9,
        };
        assert_eq!(fit(&pod("1", "1Gi"), &node("4", "8Gi", 10), used), Ok(()));
    }

    #[test]
    fn a_taint_rules_the_node_out_unless_tolerated() {
        let mut n = node("4", "8Gi", 10);
        n["spec"]["taints"] = json!([{"key": "spot", "value": "true", "effect": "NoSchedule"}]);
        let taint = Reason::Taint {
            key: "spot".into(),
            value: "true".into(),
        };
        assert_eq!(
            fit(&pod("1", "1Gi"), &n, Used::default()),
            Err(vec![taint.clone()])
        );
        assert_eq!(
            taint.to_string(),
            "node(s) had untolerated taint {spot: true}"
        );
        let mut p = pod("1", "1Gi");
        p["spec"]["tolerations"] = json!([{"key": "spot", "operator": "Exists"}]);
        assert_eq!(fit(&p, &n, Used::default()), Ok(()));
        // A PreferNoSchedule taint never filters.
        n["spec"]["taints"][0]["effect"] = json!("PreferNoSchedule");
        assert_eq!(fit(&pod("1", "1Gi"), &n, Used::default()), Ok(()));
    }

    #[test]
    fn not_ready_and_selector_mismatch() {
        let mut n = node("4", "8Gi", 10);
        let mut p = pod("1", "1Gi");
        p["spec"]["nodeSelector"] = json!({"pool": "gpu"});
        assert_eq!(fit(&p, &n, Used::default()), Err(vec![Reason::Selector]));
        n["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(fit(&p, &n, Used::default()), Err(vec![Reason::NotReady]));
    }

    #[test]
    fn the_message_matches_the_default_scheduler() {
        let reasons = [(Reason::InsufficientMemory, 2), (Reason::Selector, 1)]
            .into_iter()
            .collect();
        assert_eq!(
            unschedulable_message(3, &reasons),
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             2 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims \
             found for incoming pod."
        );
        let reasons = [(Reason::NotReady, 1)].into_iter().collect();
        assert!(
            unschedulable_message(1, &reasons)
                .ends_with("1 Preemption is not helpful for scheduling.")
        );
        assert_eq!(
            unschedulable_message(0, &Default::default()),
            "no nodes available to schedule pods"
        );
    }
}
