//! Events (with kubectl-like repeat counting and expiry) and the scenario's cluster-wide timeline.

use super::*;

impl Control {
    /// Records an event about a pod; a repeat within a while bumps `count` on the same one.
    pub(super) fn event(
        &mut self,
        pod: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        t: f64,
    ) {
        self.event_about(pod, type_, reason, message, component, t, Value::Null);
    }

    /// An event with a secondary object (`related`: a preemptor).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event_about(
        &mut self,
        pod: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        t: f64,
        related: Value,
    ) {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = (ns.clone(), name.clone(), format!("{reason}\u{0}{message}"));
        let now = self.now();
        if let Some((ev_name, _)) = self.event_names.get(&key).cloned() {
            let updated = self.store.modify(Resource::Events, &ns, &ev_name, |e| {
                let c = e["count"].as_i64().unwrap_or(1);
                e["count"] = json!(c + 1);
                e["lastTimestamp"] = json!(now);
                true
            });
            if updated.is_some() {
                self.event_names.insert(key, (ev_name, t));
                return;
            }
        }
        let ev_name = format!(
            "{name}.{:x}",
            self.store.clock.now().timestamp_nanos_opt().unwrap_or(0) as u64 ^ self.rng.u64(..)
        );
        let host = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let source = if component == "kubelet" {
            json!({"component": component, "host": host})
        } else {
            json!({"component": component})
        };
        let mut ev = json!({
            "metadata": {"name": ev_name},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns,
                               "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"],
                               "fieldPath": if component == "kubelet" { json!("spec.containers{spark-kubernetes-executor}") } else { Value::Null }},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "eventTime": null,
            "source": source, "reportingComponent": if component == "kubelet" { "" } else { component },
            "reportingInstance": "",
        });
        if !related.is_null() {
            ev["related"] = related;
        }
        if self.store.create(Resource::Events, &ns, ev).is_ok() {
            self.event_names.insert(key, (ev_name, t));
        }
    }

    pub(super) fn should_repeat(&self, pod: &Value, reason: &str, message: &str, t: f64) -> bool {
        let key = (
            pod["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            format!("{reason}\u{0}{message}"),
        );
        self.event_names
            .get(&key)
            .is_none_or(|(_, last)| t - last >= EVENT_REPEAT_SECS)
    }

    pub(super) fn expire_events(&mut self) {
        let now = self.store.clock.now();
        let ttl = chrono::Duration::from_std(self.event_ttl).unwrap_or(chrono::Duration::hours(1));
        let (events, _) = self.store.list_all(Resource::Events, &Query::default());
        for e in events {
            let last = Some(e.field("/lastTimestamp"))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| e.field("/eventTime"));
            let last = DateTime::parse_from_rfc3339(last).ok();
            if let Some(last) = last
                && now - last.to_utc() > ttl
            {
                let _ = self.store.delete(
                    Resource::Events,
                    e.namespace(),
                    e.name(),
                    &DeleteOptions::default(),
                );
            }
        }
        let store = &self.store;
        self.event_names
            .retain(|(ns, _, _), (name, _)| store.get(Resource::Events, ns, name).is_some());
    }

    pub(super) fn cluster_timeline(&mut self, t: f64) {
        for i in 0..self.scenario.timeline.len() {
            if self.timeline_done[i] || self.scenario.timeline[i].at.as_secs_f64() > t {
                continue;
            }
            self.timeline_done[i] = true;
            let step = self.scenario.timeline[i].clone();
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
                    self.event(
                        &p.value(),
                        "Warning",
                        "NodeNotReady",
                        "Node is not ready",
                        "node-controller",
                        t,
                    );
                    if let Some(rt) = self.runtimes.get_mut(&PodRef::of(p)) {
                        rt.stage = Stage::Done; // the kubelet is gone: nothing more happens on it
                    }
                }
            }
        }
    }
}
