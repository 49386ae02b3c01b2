//! Small helpers to edit pod JSON the way the kubelet and scheduler do.

use serde_json::{Value, json};

/// Sets (or replaces) the condition of this type.
pub fn set_condition(
    pod: &mut Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let mut cond =
        json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if !reason.is_empty() {
        cond["reason"] = json!(reason);
    }
    if !message.is_empty() {
        cond["message"] = json!(message);
    }
    if let Some(list) = pod["status"]["conditions"].as_array_mut() {
        match list.iter_mut().find(|c| c["type"] == type_) {
            Some(c) => {
                if c["status"] == status {
                    cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
                }
                *c = cond;
            }
            None => list.push(cond),
        }
    }
}

/// The names of the pod's regular containers.
pub fn container_names(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One container status.
pub fn container_status(
    name: &str,
    image: &str,
    state: Value,
    ready: bool,
    restarts: i64,
) -> Value {
    json!({"name": name, "image": image, "imageID": if state.get("waiting").is_some() { "" } else { "sim://sha256:5f0d" },
           "ready": ready, "started": ready, "restartCount": restarts, "lastState": {}, "state": state})
}

/// Every container of the pod in this state.
pub fn set_all_containers(pod: &mut Value, state: &Value, ready: bool) {
    let specs = pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = specs
        .iter()
        .map(|c| {
            container_status(
                c["name"].as_str().unwrap_or_default(),
                c["image"].as_str().unwrap_or_default(),
                state.clone(),
                ready,
                0,
            )
        })
        .collect();
    pod["status"]["containerStatuses"] = json!(statuses);
}
