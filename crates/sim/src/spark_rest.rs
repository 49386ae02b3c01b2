//! The Spark-like drivers' monitoring REST API (`/api/v1/applications/…`), reached through
//! the API server's service proxy, as the real driver UI is.

use serde_json::{Value, json};

use super::error::ApiError;
use super::selector::LabelSelector;
use super::spark_registry::{AppView, SparkRegistry};
use super::store::{Obj, ObjectStore, Query, Resource};

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

/// The metrics servlet's JSON: the block manager's gauge always, dynamic allocation's
/// (`ExecutorAllocationManager`) only with it on, as Spark registers them.
fn metrics(app: &AppView) -> Value {
    let prefix = format!("{}.driver", app.app_id);
    let mut gauges = serde_json::Map::new();
    gauges.insert(
        format!("{prefix}.BlockManager.memory.maxMem_MB"),
        json!({"value": 434}),
    );
    if let Some(target) = app.target {
        let registered = app
            .executors
            .values()
            .filter(|e| e.remove_time.is_none() && e.add_time.is_some())
            .count();
        let eam = format!("{prefix}.ExecutorAllocationManager.executors");
        for (name, v) in [
            ("numberTargetExecutors", target as usize),
            ("numberMaxNeededExecutors", target as usize),
            ("numberAllExecutors", registered),
            ("numberExecutorsPendingToRemove", 0),
            ("numberExecutorsToAdd", 1),
        ] {
            gauges.insert(format!("{eam}.{name}"), json!({"value": v}));
        }
    }
    json!({"version": "4.0.0", "gauges": gauges, "counters": {}, "histograms": {}, "meters": {}, "timers": {}})
}

/// The driver's jobs, newest first: a streaming app's are micro-batches, named as
/// `StreamExecution` describes them (the job group its run id).
fn jobs(app: &AppView) -> Value {
    let submitted = time(app.start);
    match &app.streaming {
        Some(name) => {
            let id = format!("{}-query", app.app_id);
            let run = format!("{}-run", app.app_id);
            Value::Array(
                (0..3)
                    .rev()
                    .map(|batch| {
                        json!({"jobId": batch, "name": "start at stream.py:12",
                            "description": format!("{name}\nid = {id}\nrunId = {run}\nbatch = {batch}"),
                            "submissionTime": submitted, "jobGroup": run, "status": "SUCCEEDED",
                            "numTasks": 4, "numCompletedTasks": 4, "stageIds": [batch]})
                    })
                    .collect(),
            )
        }
        None => json!([{"jobId": 0, "name": "count at etl.py:21", "submissionTime": submitted,
            "status": "SUCCEEDED", "numTasks": 8, "numCompletedTasks": 8, "stageIds": [0]}]),
    }
}

/// Answers a proxied request to a service, or says why it cannot.
pub fn serve(
    ready: bool,
    registry: &SparkRegistry,
    service: &Obj,
    _port: Option<&str>,
    path: &str,
    _query: Option<&str>,
) -> Result<(u16, bytes::Bytes), ApiError> {
    let name = service.name();
    let ns = service.namespace();
    if !ready {
        return Err(ApiError::unavailable(format!(
            "no endpoints available for service \"{name}\""
        )));
    }
    let predicate = |a: &AppView| a.service == name && a.namespace == ns;
    serve_app(registry, ns, predicate, path).ok_or_else(|| {
        ApiError::unavailable(format!(
            "error trying to reach service: dial tcp {name}: connect: connection refused"
        ))
    })
}

/// The selected pods of a service include a running one.
pub fn has_endpoints(store: &ObjectStore, registry: &SparkRegistry, service: &Obj) -> bool {
    let selector = service.value()["spec"]["selector"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    if selector.is_empty() {
        return false;
    }
    let labels = LabelSelector::parse(&selector).unwrap_or_default();
    let up = |p: &Obj| p.phase() == "Running" && !p.deleting();
    // A simulated driver's own service selects its driver pod: that pod looked up by name
    // first, not every pod of the namespace matched (100,000 at scale, for each request).
    let ns = service.namespace();
    let driver = registry.read(|apps| {
        apps.values()
            .find(|a| a.namespace == ns && a.service == service.name())
            .map(|a| a.driver_pod.clone())
    });
    if let Some(pod) = driver.and_then(|d| store.get(Resource::Pods, ns, &d))
        && labels.matches_with(|k| pod.label(k))
        && up(&pod)
    {
        return true;
    }
    let q = Query {
        namespace: Some(ns.to_owned()),
        labels,
        ..Query::default()
    };
    let (pods, _) = store.list_all(Resource::Pods, &q);
    pods.iter().any(|p| up(p))
}

/// The service port's target port number (`port` is a name or number; default the first).
pub fn target_port(service: &Obj, port: Option<&str>) -> Option<u16> {
    let service = service.value();
    let ports = service["spec"]["ports"].as_array()?;
    let p = match port {
        Some(p) => ports.iter().find(|x| {
            x["name"].as_str() == Some(p)
                || x["port"].as_u64().map(|n| n.to_string()).as_deref() == Some(p)
        })?,
        None => ports.first()?,
    };
    p["targetPort"]
        .as_u64()
        .or_else(|| p["port"].as_u64())
        .and_then(|n| u16::try_from(n).ok())
}

/// GET `http://127.0.0.1:{port}/{path}?{query}`: a real driver UI on this host.
pub async fn forward_local(
    port: u16,
    path: &str,
    query: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    use http_body_util::BodyExt;
    let uri = match query {
        Some(q) => format!("http://127.0.0.1:{port}/{path}?{q}"),
        None => format!("http://127.0.0.1:{port}/{path}"),
    };
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let uri: axum::http::Uri = uri.parse().map_err(|e| format!("bad path: {e}"))?;
    let resp = tokio::time::timeout(std::time::Duration::from_secs(10), client.get(uri))
        .await
        .map_err(|_| "i/o timeout".to_owned())?
        .map_err(|e| format!("connect: {e}"))?;
    let code = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((code, body.to_vec()))
}

/// The REST API of the simulated app that `which` picks, if any.
pub fn serve_app(
    registry: &SparkRegistry,
    ns: &str,
    which: impl Fn(&AppView) -> bool,
    path: &str,
) -> Option<(u16, bytes::Bytes)> {
    registry.read(|apps| {
        let app = apps.values().find(|a| a.namespace == ns && which(a))?;
        let (code, v) = answer(app, path);
        let body = match v {
            Answer::Value(v) => bytes::Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
            Answer::Executors(all) => registry.executors_written(apps, &app.app_id, all, || {
                bytes::Bytes::from(serde_json::to_vec(&executors(app, all)).unwrap_or_default())
            }),
        };
        Some((code, body))
    })
}

/// What an app's REST API answers: a document, or its executor list (written once per
/// change).
enum Answer {
    Value(Value),
    Executors(bool),
}

fn answer(app: &AppView, path: &str) -> (u16, Answer) {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (code, v) = match segs.as_slice() {
        ["api", "v1", "applications"] => (
            200,
            json!([{"id": app.app_id, "name": app.name,
            "attempts": [{"startTime": time(app.start), "endTime": "1969-12-31T23:59:59.999GMT", "lastUpdated": time(app.start),
                          "duration": 0, "sparkUser": "spark", "completed": false, "appSparkVersion": "4.0.1"}]}]),
        ),
        [
            "api",
            "v1",
            "applications",
            id,
            which @ ("executors" | "allexecutors"),
        ] if *id == app.app_id => return (200, Answer::Executors(*which == "allexecutors")),
        ["api", "v1", "applications", id, "jobs"] if *id == app.app_id => (200, jobs(app)),
        // Spark's servlet is a Jetty context at /metrics/json: without the slash, a redirect
        // (which the API server's proxy hands back, not follows).
        ["metrics", "json"] if path.ends_with('/') => (200, metrics(app)),
        ["metrics", "json"] => (301, Value::Null),
        ["api", "v1", "applications", id, ..] if *id != app.app_id => {
            (404, json!(format!("unknown app: {id}")))
        }
        _ => (404, json!(format!("no such path: /{path}"))),
    };
    (code, Answer::Value(v))
}
