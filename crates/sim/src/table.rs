//! Server-side Tables (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which is how
//! `kubectl get` prints columns. Pods get kubectl's real STATUS logic (`printPod` in
//! kubernetes `pkg/printers/internalversion/printers.go`), events the events columns, other
//! kinds NAME and AGE.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::store::{Obj, Resource};

/// What `includeObject` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

fn col(name: &str, ty: &str, format: &str, priority: u8, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

fn columns(resource: Resource) -> Value {
    match resource {
        Resource::Pods => pod_columns(),
        Resource::Events => event_columns(),
        _ => other_columns(),
    }
}

/// A pod's columns, as `kubectl get pods` (`-o wide` shows priority 1).
fn pod_columns() -> Value {
    json!([
        col(
            "Name",
            "string",
            "name",
            0,
            "Name must be unique within a namespace."
        ),
        col(
            "Ready",
            "string",
            "",
            0,
            "The aggregate readiness state of this pod for accepting traffic."
        ),
        col(
            "Status",
            "string",
            "",
            0,
            "The aggregate status of the containers in this pod."
        ),
        col(
            "Restarts",
            "string",
            "",
            0,
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."
        ),
        col(
            "Age",
            "string",
            "",
            0,
            "CreationTimestamp is a timestamp representing the server time when this object was created."
        ),
        col(
            "IP",
            "string",
            "",
            1,
            "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
        ),
        col(
            "Node",
            "string",
            "",
            1,
            "NodeName is a request to schedule this pod onto a specific node."
        ),
        col(
            "Nominated Node",
            "string",
            "",
            1,
            "nominatedNodeName is set only when this pod preempts other pods on the node."
        ),
        col(
            "Readiness Gates",
            "string",
            "",
            1,
            "If specified, all readiness gates will be evaluated for pod readiness."
        ),
    ])
}

/// An event's columns, as `kubectl get events`.
fn event_columns() -> Value {
    json!([
        col(
            "Last Seen",
            "string",
            "",
            0,
            "Time when this Event was last observed."
        ),
        col(
            "Type",
            "string",
            "",
            0,
            "Type of this event (Normal, Warning), new types could be added in the future."
        ),
        col(
            "Reason",
            "string",
            "",
            0,
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."
        ),
        col(
            "Object",
            "string",
            "",
            0,
            "The object that this event is about."
        ),
        col(
            "Subobject",
            "string",
            "",
            1,
            "The subobject this event is about (fieldPath)."
        ),
        col(
            "Source",
            "string",
            "",
            1,
            "The component reporting this event."
        ),
        col(
            "Message",
            "string",
            "",
            0,
            "A human-readable description of the status of this operation."
        ),
        col(
            "First Seen",
            "string",
            "",
            1,
            "The time at which the event was first recorded."
        ),
        col(
            "Count",
            "string",
            "",
            1,
            "The number of times this event has occurred."
        ),
        col(
            "Name",
            "string",
            "name",
            1,
            "Name must be unique within a namespace."
        ),
    ])
}

/// Any other resource's: its name and age.
fn other_columns() -> Value {
    json!([
        col(
            "Name",
            "string",
            "name",
            0,
            "Name must be unique within a namespace."
        ),
        col(
            "Age",
            "string",
            "",
            0,
            "CreationTimestamp is a timestamp representing the server time when this object was created."
        ),
    ])
}

/// A Table of `objects`. `with_columns` false leaves the definitions out (watch rows).
pub fn table(
    resource: Resource,
    objects: &[&Obj],
    rv: u64,
    continue_token: Option<&str>,
    include: Include,
    now: DateTime<Utc>,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({"cells": cells(resource, &o.value(), now)});
            match include {
                Include::None => {}
                Include::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                           "metadata": o.value()["metadata"]});
                }
                Include::Object => row["object"] = o.value(),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string(), "continue": continue_token.unwrap_or_default()},
        "columnDefinitions": if with_columns { columns(resource) } else { json!([]) },
        "rows": rows,
    })
}

fn cells(resource: Resource, v: &Value, now: DateTime<Utc>) -> Value {
    let age = |field: &Value| {
        field
            .as_str()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map_or_else(|| "<unknown>".to_owned(), |t| kubectl_age(now - t.to_utc()))
    };
    match resource {
        Resource::Pods => {
            let p = pod_row(v);
            json!([
                v["metadata"]["name"],
                p.ready,
                p.status,
                p.restarts,
                age(&v["metadata"]["creationTimestamp"]),
                v["status"]["podIP"].as_str().unwrap_or("<none>"),
                v["spec"]["nodeName"].as_str().unwrap_or("<none>"),
                v["status"]["nominatedNodeName"]
                    .as_str()
                    .unwrap_or("<none>"),
                "<none>",
            ])
        }
        Resource::Events => {
            let last = if v["lastTimestamp"].is_string() {
                &v["lastTimestamp"]
            } else {
                &v["eventTime"]
            };
            let first = if v["firstTimestamp"].is_string() {
                &v["firstTimestamp"]
            } else {
                &v["eventTime"]
            };
            let obj = &v["involvedObject"];
            let source = v["source"]["component"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| v["reportingComponent"].as_str())
                .unwrap_or_default();
            json!([
                age(last),
                v["type"],
                v["reason"],
                format!(
                    "{}/{}",
                    obj["kind"].as_str().unwrap_or_default().to_lowercase(),
                    obj["name"].as_str().unwrap_or_default()
                ),
                obj["fieldPath"].as_str().unwrap_or_default(),
                source,
                v["message"],
                age(first),
                v["count"].as_i64().unwrap_or(1).to_string(),
                v["metadata"]["name"],
            ])
        }
        _ => json!([
            v["metadata"]["name"],
            age(&v["metadata"]["creationTimestamp"])
        ]),
    }
}

struct PodRow {
    ready: String,
    status: String,
    restarts: String,
}

/// kubectl's READY, STATUS and RESTARTS for a pod.
fn pod_row(pod: &Value) -> PodRow {
    let status = &pod["status"];
    let empty = Vec::new();
    let spec_containers = pod["spec"]["containers"].as_array().map_or(0, Vec::len);
    let init_specs = pod["spec"]["initContainers"].as_array().map_or(0, Vec::len);
    let phase = status["phase"].as_str().unwrap_or_default();
    let mut reason = status["reason"]
        .as_str()
        .filter(|r| !r.is_empty())
        .unwrap_or(phase)
        .to_owned();
    // kubectl's printer (1.27+): a pod its scheduling gates hold says so.
    if phase == "Pending"
        && status["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
        })
    {
        reason = "SchedulingGated".to_owned();
    }
    let mut restarts = 0i64;
    let mut ready = 0usize;
    let mut initializing = false;
    for (i, c) in status["initContainerStatuses"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        restarts += c["restartCount"].as_i64().unwrap_or(0);
        let st = &c["state"];
        let term = &st["terminated"];
        let waiting_reason = st["waiting"]["reason"].as_str().unwrap_or_default();
        if term.is_object() && term["exitCode"].as_i64() == Some(0) {
            continue;
        } else if term.is_object() {
            reason = match term["reason"].as_str().filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None => match term["signal"].as_i64().filter(|s| *s != 0) {
                    Some(s) => format!("Init:Signal:{s}"),
                    None => format!("Init:ExitCode:{}", term["exitCode"].as_i64().unwrap_or(0)),
                },
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{init_specs}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        for c in status["containerStatuses"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .rev()
        {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            let st = &c["state"];
            let term = &st["terminated"];
            if let Some(w) = st["waiting"]["reason"].as_str().filter(|r| !r.is_empty()) {
                reason = w.to_owned();
            } else if let Some(r) = term["reason"].as_str().filter(|r| !r.is_empty()) {
                reason = r.to_owned();
            } else if term.is_object() {
                reason = match term["signal"].as_i64().filter(|s| *s != 0) {
                    Some(s) => format!("Signal:{s}"),
                    None => format!("ExitCode:{}", term["exitCode"].as_i64().unwrap_or(0)),
                };
            } else if c["ready"].as_bool() == Some(true) && st["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let ready_cond = status["conditions"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if ready_cond { "Running" } else { "NotReady" }.to_owned();
        }
    }
    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && status["reason"] == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_owned();
    }
    PodRow {
        ready: format!("{ready}/{spec_containers}"),
        status: reason,
        restarts: restarts.to_string(),
    }
}

/// kubectl's `duration.HumanDuration`.
pub fn kubectl_age(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    let secs = secs.max(0);
    let (m, h, days) = (secs / 60, secs / 3600, secs / 86_400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{mm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        let hh = h % 24;
        if hh == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{hh}h")
        }
    } else if days < 730 {
        format!("{days}d")
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(pod: Value) -> String {
        pod_row(&pod).status
    }

    #[test]
    fn kubectl_status_column() {
        assert_eq!(
            status_of(json!({"status": {"phase": "Pending"}})),
            "Pending"
        );
        assert_eq!(
            status_of(json!({"status": {"phase": "Pending", "containerStatuses": [
            {"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}})),
            "ImagePullBackOff"
        );
        assert_eq!(
            status_of(json!({"status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})),
            "OOMKilled"
        );
        assert_eq!(
            status_of(
                json!({"status": {"phase": "Failed", "reason": "Evicted", "containerStatuses": [
            {"name": "c", "ready": false, "state": {"running": {}}}]}})
            ),
            "Evicted"
        );
        assert_eq!(
            status_of(json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "c", "ready": true, "state": {"running": {}}}]}})),
            "Running"
        );
        assert_eq!(
            status_of(
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Running", "containerStatuses": [
            {"name": "c", "ready": true, "state": {"running": {}}}]}})
            ),
            "Terminating"
        );
        assert_eq!(
            status_of(
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "state": {"terminated": {"exitCode": 143, "reason": "Error"}}}]}})
            ),
            "Error"
        );
        assert_eq!(
            status_of(json!({"status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "state": {"terminated": {"exitCode": 3}}}]}})),
            "ExitCode:3"
        );
        assert_eq!(
            status_of(
                json!({"spec": {"initContainers": [{}, {}]}, "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "i", "state": {"terminated": {"exitCode": 0}}}, {"name": "j", "state": {"running": {}}}]}})
            ),
            "Init:1/2"
        );
        assert_eq!(
            status_of(
                json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}], "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "b", "ready": true, "state": {"running": {}}}]}})
            ),
            "NotReady"
        );
    }

    #[test]
    fn kubectl_ages() {
        let d = chrono::Duration::seconds;
        assert_eq!(kubectl_age(d(5)), "5s");
        assert_eq!(kubectl_age(d(119)), "119s");
        assert_eq!(kubectl_age(d(150)), "2m30s");
        assert_eq!(kubectl_age(d(900)), "15m");
        assert_eq!(kubectl_age(d(3 * 3600 + 60)), "3h1m");
        assert_eq!(kubectl_age(d(20 * 3600)), "20h");
        assert_eq!(kubectl_age(d(3 * 86_400)), "3d");
    }
}
