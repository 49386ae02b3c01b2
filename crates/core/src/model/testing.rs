//! Builders for tests (this crate's and the product's): real `Pod` JSON through the
//! real projection. Not part of the API.
//!
//! [`executor`] and [`driver`] start a pod as `spark-submit` creates it; a test changes what
//! it needs with [`PodBuilder`]'s methods, each a JSON merge patch ([`merge`]: `null`
//! removes a key), and projects it with [`PodBuilder::build`].

use serde_json::{Map, Value, json};

use super::{ExecutorPod, PodEvent};

/// Projects a Pod written as JSON (`metadata.namespace` defaults to `spark-jobs`).
pub fn pod(mut v: Value) -> ExecutorPod {
    if v["metadata"].get("namespace").is_none() {
        v["metadata"]["namespace"] = "spark-jobs".into();
    }
    let pod: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(v).expect("test pod must be a valid Pod");
    ExecutorPod::from_pod(&pod)
}

/// Projects a core/v1 Event written as JSON.
pub fn event(v: Value) -> PodEvent {
    let e: k8s_openapi::api::core::v1::Event =
        serde_json::from_value(v).expect("test event must be a valid Event");
    PodEvent::from_core(&e)
}

/// `extra` merged over `base` as a JSON merge patch (RFC 7396): objects key by key, `null`
/// removes the key, anything else replaces.
pub fn merge(base: Value, extra: Value) -> Value {
    let Value::Object(extra) = extra else {
        return extra;
    };
    let mut out = match base {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    for (k, v) in extra {
        if v.is_null() {
            out.remove(&k);
        } else {
            let old = out.get_mut(&k).map(Value::take).unwrap_or_default();
            out.insert(k, merge(old, v));
        }
    }
    Value::Object(out)
}

/// A container's status as the kubelet writes it: `name` in `state`, apache/spark:4.0.1,
/// not ready, never restarted.
pub fn container_status(name: &str, state: Value) -> Value {
    json!({"name": name, "image": "apache/spark:4.0.1", "imageID": "", "ready": false,
           "restartCount": 0, "state": state})
}

/// A terminated container's state: exit `code` for `reason` (no times).
pub fn terminated(code: i32, reason: &str) -> Value {
    json!({"terminated": {"exitCode": code, "reason": reason}})
}

/// A running container's state (no `startedAt`).
pub fn running() -> Value {
    json!({"running": {}})
}

/// An executor pod: `etl-exec-{id}` (uid `uid-{id}`) of app `spark-abc` in `spark-jobs`, one
/// `spark-kubernetes-executor` container (apache/spark:4.0.1, 4505Mi for 4g), Running.
pub fn executor(id: i64) -> PodBuilder {
    PodBuilder(json!({
        "metadata": {"name": format!("etl-exec-{id}"), "namespace": "spark-jobs", "uid": format!("uid-{id}"),
            "labels": {"spark-app-selector": "spark-abc", "spark-role": "executor",
                       "spark-exec-id": id.to_string()}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor",
            "image": "apache/spark:4.0.1",
            "resources": {"requests": {"cpu": "1", "memory": "4505Mi"}, "limits": {"memory": "4505Mi"}},
            "env": [{"name": "SPARK_EXECUTOR_ID", "value": id.to_string()}]}]},
        "status": {"phase": "Running"}
    }))
}

/// A driver pod: `etl-driver` (uid `uid-driver`) of app `spark-abc` in `spark-jobs`, one
/// `spark-kubernetes-driver` container (apache/spark:4.0.1, 1408Mi for 1g), Running.
pub fn driver() -> PodBuilder {
    PodBuilder(json!({
        "metadata": {"name": "etl-driver", "namespace": "spark-jobs", "uid": "uid-driver",
            "labels": {"spark-app-selector": "spark-abc", "spark-role": "driver"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-driver",
            "image": "apache/spark:4.0.1",
            "resources": {"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}}}]},
        "status": {"phase": "Running"}
    }))
}

/// A Pod's JSON being built (from [`executor`] or [`driver`]); every change is a [`merge`].
#[derive(Clone, Debug)]
#[must_use]
pub struct PodBuilder(Value);

impl PodBuilder {
    /// Sets `metadata.name`.
    pub fn name(self, name: &str) -> Self {
        self.meta(json!({ "name": name }))
    }

    /// Sets `metadata.uid`.
    pub fn uid(self, uid: &str) -> Self {
        self.meta(json!({ "uid": uid }))
    }

    /// Sets the application id (label `spark-app-selector`).
    pub fn app(self, app_id: &str) -> Self {
        self.meta(json!({"labels": {"spark-app-selector": app_id}}))
    }

    /// Merges `extra` over `metadata`.
    pub fn meta(self, extra: Value) -> Self {
        self.merge_at("metadata", extra)
    }

    /// Merges `extra` over `spec`.
    pub fn spec(self, extra: Value) -> Self {
        self.merge_at("spec", extra)
    }

    /// Merges `extra` over the spec's first container.
    pub fn container(mut self, extra: Value) -> Self {
        let first = &mut self.0["spec"]["containers"][0];
        *first = merge(first.take(), extra);
        self
    }

    /// Merges `extra` over `status`.
    pub fn status(self, extra: Value) -> Self {
        self.merge_at("status", extra)
    }

    /// The Pod's JSON.
    pub fn json(self) -> Value {
        self.0
    }

    /// Projects it through the typed `Pod`, as [`pod`] does.
    pub fn build(self) -> ExecutorPod {
        pod(self.0)
    }

    /// Projects it through the wire projection alone, which also reads fields newer than
    /// the typed client's API level (such as `spec.workloadRef`).
    pub fn build_wire(self) -> ExecutorPod {
        ExecutorPod::from_value(&self.0).expect("test pod must project")
    }

    fn merge_at(mut self, key: &str, extra: Value) -> Self {
        let part = &mut self.0[key];
        *part = merge(part.take(), extra);
        self
    }
}
