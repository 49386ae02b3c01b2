//! The Spark-like drivers' monitoring REST API (`/api/v1/applications/…`), reached through
//! the API server's service proxy, as the real driver UI is.

use serde_json::{Value, json};

use super::{
    control::{AppView, SparkRegistry},
    error::ApiError,
    selector::LabelSelector,
    store::{Obj, Query, Resource, Store},
};

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    t.map_or(Value::Null, |t| {
        json!(t.format("%Y-%m-%dT%H:%M:%S%.3fGMT").to_string())
    })
}

fn executors(app: &AppView, all: bool) -> Value {
    let mut out = vec![
        json!({"id": "driver", "hostPort": format!("{}.{}.svc:7079", app.service, app.namespace), "isActive": true,
        "rddBlocks": 0, "memoryUsed": 0, "diskUsed": 0, "totalCores": 0, "maxTasks": 0, "activeTasks": 0, "failedTasks": 0,
        "completedTasks": 0, "totalTasks": 0, "addTime": time(app.start), "maxMemory": 455501414}),
    ];
    for (id, e) in &app.executors {
        let active = e.remove_time.is_none();
        if !all && !active {
            continue;
        }
        let mut v = json!({"id": id.to_string(), "hostPort": format!("{}:7079", e.pod), "isActive": active,
            "rddBlocks": 0, "memoryUsed": 0, "diskUsed": 0, "totalCores": e.cores, "maxTasks": e.cores, "activeTasks": 0,
            "failedTasks": e.failed_tasks, "completedTasks": e.completed_tasks, "totalTasks": e.failed_tasks + e.completed_tasks,
            "addTime": time(e.add_time), "maxMemory": e.max_memory,
            "attributes": {"LOG_FILES": "log", "POD_NAME": e.pod}});
        if let Some(r) = &e.remove_reason {
            v["removeTime"] = time(e.remove_time);
            v["removeReason"] = json!(r);
        }
        out.push(v);
    }
    Value::Array(out)
}

/// Answers a proxied request to a service, or says why it cannot.
pub fn serve(
    store: &Store,
    registry: &SparkRegistry,
    service: &Obj,
    _port: Option<&str>,
    path: &str,
    _query: Option<&str>,
) -> Result<(u16, Value), ApiError> {
    let name = service.name();
    let ns = service.namespace();
    let selector = service.value["spec"]["selector"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let q = Query {
        namespace: Some(ns.to_owned()),
        labels: LabelSelector::parse(&selector).unwrap_or_default(),
        ..Query::default()
    };
    let (pods, _) = store.list_all(Resource::Pods, &q);
    let ready = !selector.is_empty()
        && pods.iter().any(|p| {
            p.value["status"]["phase"] == "Running"
                && !p.value["metadata"]["deletionTimestamp"].is_string()
        });
    if !ready {
        return Err(ApiError::unavailable(format!(
            "no endpoints available for service \"{name}\""
        )));
    }
    let apps = registry.apps.lock().unwrap_or_else(|e| e.into_inner());
    let Some(app) = apps
        .values()
        .find(|a| a.service == name && a.namespace == ns)
    else {
        return Err(ApiError::unavailable(format!(
            "error trying to reach service: dial tcp {name}: connect: connection refused"
        )));
    };
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", "v1", "applications"] => Ok((
            200,
            json!([{"id": app.app_id, "name": app.name,
            "attempts": [{"startTime": time(app.start), "endTime": "1969-12-31T23:59:59.999GMT", "lastUpdated": time(app.start),
                          "duration": 0, "sparkUser": "spark", "completed": false, "appSparkVersion": "4.0.1"}]}]),
        )),
        [
            "api",
            "v1",
            "applications",
            id,
            which @ ("executors" | "allexecutors"),
        ] if *id == app.app_id => Ok((200, executors(app, *which == "allexecutors"))),
        ["api", "v1", "applications", id, ..] if *id != app.app_id => {
            Ok((404, json!(format!("unknown app: {id}"))))
        }
        _ => Ok((404, json!(format!("no such path: /{path}")))),
    }
}
