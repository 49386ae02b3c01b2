//! The driver REST view: every driver's own executor list (its `allexecutors`, through the
//! API server's service proxy), read every `--driver-poll-interval` (the app in view more
//! often than the others, in the live view).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::ListParams;
use kube::{Api, Client};
use spark_triage_core::diagnose::app::refused_creation;
use spark_triage_core::diagnose::memory::SettingsFrom;
use spark_triage_core::diagnose::verdict;
use spark_triage_core::model::{ExecutorPod, Time, driver};
use tokio::sync::mpsc;

use super::clock::Clock;
use super::connection::{Connection, DriversListed, pods_api, send};
use super::errors::masked_line;
use super::{DriverView, Scope, SourceEvent, driver_self, errors};
use crate::redact;

/// Reads every driver's executor list in scope (those in focus) every `every`.
pub(super) async fn driver_poll(conn: Connection, every: Duration, tx: mpsc::Sender<SourceEvent>) {
    let pods: Api<Pod> = pods_api(&conn.client, &conn.scope);
    let services: Api<Service> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let sel = &conn.driver_selector;
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_read: std::collections::HashMap<(String, String), std::time::Instant> =
        std::collections::HashMap::new();
    // The drivers whose settings were read from their REST API (once each).
    let mut configured: std::collections::HashSet<(String, String)> =
        std::collections::HashSet::new();
    // The "killed by driver" removals whose driver's log was read for a heartbeat, by app.
    let mut heard: std::collections::HashMap<(String, String), std::collections::BTreeSet<i64>> =
        std::collections::HashMap::new();
    // When each driver's log was last read for them: at most once a minute per driver (a
    // scale-down storm under dynamic allocation must not read a log every round).
    let mut log_read: std::collections::HashMap<(String, String), std::time::Instant> =
        std::collections::HashMap::new();
    // What each driver said of itself: no allocation gauges (not asked again), its jobs'
    // last read, a streaming query seen (its jobs not read again).
    let mut own = Own::default();
    loop {
        tick.tick().await;
        // The drivers and the services in front of them, at once.
        let (of_drivers, any) = (ListParams::default().labels(sel), ListParams::default());
        let (drivers, svcs) = tokio::join!(pods.list(&of_drivers), services.list(&any));
        let drivers = match drivers {
            Ok(l) => l.items,
            Err(_) => continue, // the pod sources report API trouble
        };
        // What is kept per driver goes with its pod (a namespace of nightly jobs has new
        // drivers every day).
        let listed: std::collections::HashSet<(String, String)> = drivers
            .iter()
            .filter_map(|d| {
                let ns = d.metadata.namespace.clone()?;
                let id = d.metadata.labels.as_ref()?.get("spark-app-selector")?;
                Some((ns, id.clone()))
            })
            .collect();
        last_read.retain(|k, _| listed.contains(k));
        configured.retain(|k| listed.contains(k));
        heard.retain(|k, _| listed.contains(k));
        log_read.retain(|k, _| listed.contains(k));
        own.retain(|k| listed.contains(k));
        let svcs = svcs.map(|l| l.items).unwrap_or_default();
        // Several drivers at a time, so slow ones do not hold up the others.
        let svcs = std::sync::Arc::new(svcs);
        let started = std::time::Instant::now();
        let wanted: Vec<(Pod, ExecutorPod, String)> = drivers
            .into_iter()
            .filter_map(|d| {
                let pod = ExecutorPod::from_pod(&d);
                let app_id = pod.app_id()?.to_owned();
                let key = (pod.namespace.to_string(), app_id.clone());
                let since = last_read.get(&key).map(|t| started.duration_since(*t));
                conn.focus
                    .due(&pod.namespace, &app_id, since, every)
                    .then(|| {
                        last_read.insert(key, started);
                        (d, pod, app_id)
                    })
            })
            .collect();
        // What is known of each beside its list, taken before the reads (they run at once).
        let wanted: Vec<_> = wanted
            .into_iter()
            .map(|(d, pod, app_id)| {
                let key = (pod.namespace.to_string(), app_id.clone());
                let known = Known {
                    settings: configured.contains(&key),
                    heard: heard.get(&key).cloned().unwrap_or_default(),
                    may_read_log: log_read
                        .get(&key)
                        .is_none_or(|t| t.elapsed() >= DRIVER_LOG_EVERY),
                    own: own.known(&key),
                };
                (d, pod, app_id, known)
            })
            .collect();
        let mut reads =
            futures::stream::iter(wanted.into_iter().map(|(d, pod, app_id, known)| {
                let (client, svcs, clock) = (conn.client.clone(), svcs.clone(), conn.clock.clone());
                let listed = conn.listed.clone();
                async move {
                    read_one(&client, &svcs, (&d, &pod, app_id), known, (&clock, &listed)).await
                }
            }))
            .buffer_unordered(DRIVERS_AT_ONCE);
        while let Some(Read {
            events,
            looked_up,
            log_read: was_read,
            said,
        }) = reads.next().await
        {
            for ev in events {
                if let SourceEvent::DriverExecutors {
                    namespace, app_id, ..
                } = &ev
                {
                    own.note((namespace.clone(), app_id.clone()), &said);
                }
                match &ev {
                    SourceEvent::DriverConfig {
                        namespace, app_id, ..
                    } => {
                        configured.insert((namespace.clone(), app_id.clone()));
                    }
                    SourceEvent::DriverExecutors {
                        namespace, app_id, ..
                    } if was_read => {
                        let key = (namespace.clone(), app_id.clone());
                        log_read.insert(key.clone(), std::time::Instant::now());
                        heard
                            .entry(key)
                            .or_default()
                            .extend(looked_up.iter().copied());
                    }
                    _ => {}
                }
                if !send(&tx, ev).await {
                    return;
                }
            }
        }
    }
}

/// What the drivers said of themselves, by (namespace, app id), across rounds.
#[derive(Default)]
struct Own {
    allocation_off: std::collections::HashSet<(String, String)>,
    metrics_failed: std::collections::HashMap<(String, String), std::time::Instant>,
    jobs_read: std::collections::HashMap<(String, String), std::time::Instant>,
    streaming: std::collections::HashSet<(String, String)>,
    cost_read: std::collections::HashMap<(String, String), std::time::Instant>,
}

impl Own {
    fn known(&self, key: &(String, String)) -> driver_self::Known {
        let failed_lately = self
            .metrics_failed
            .get(key)
            .is_some_and(|t| t.elapsed() < DRIVER_LOG_EVERY);
        driver_self::Known {
            allocation_off: self.allocation_off.contains(key) || failed_lately,
            may_read_jobs: !self.streaming.contains(key),
            jobs_read_since: self.jobs_read.get(key).map(std::time::Instant::elapsed),
            cost_due: self
                .cost_read
                .get(key)
                .is_none_or(|t| t.elapsed() >= driver_self::COST_EVERY),
        }
    }

    fn note(&mut self, key: (String, String), said: &driver_self::Said) {
        if said.allocation_off {
            self.allocation_off.insert(key.clone());
        }
        if said.metrics_failed {
            self.metrics_failed
                .insert(key.clone(), std::time::Instant::now());
        }
        if said.streaming.is_some() {
            self.streaming.insert(key.clone());
        }
        if said.cost_read {
            self.cost_read
                .insert(key.clone(), std::time::Instant::now());
        }
        if said.jobs_read {
            self.jobs_read.insert(key, std::time::Instant::now());
        }
    }

    /// Keeps only the drivers still listed.
    fn retain(&mut self, keep: impl Fn(&(String, String)) -> bool) {
        self.allocation_off.retain(&keep);
        self.metrics_failed.retain(|k, _| keep(k));
        self.jobs_read.retain(|k, _| keep(k));
        self.cost_read.retain(|k, _| keep(k));
        self.streaming.retain(&keep);
    }
}

/// What was already read of one driver beside its executor list.
struct Known {
    /// Its settings (a client-mode driver's, from its REST API).
    settings: bool,
    /// The "killed by driver" removals whose heartbeat its log was read for.
    heard: std::collections::BTreeSet<i64>,
    /// Whether its log may be read this round.
    may_read_log: bool,
    /// What it said of itself.
    own: driver_self::Known,
}

/// One round's reads of one driver: the events to send, in order, and the removals its log
/// was read for.
struct Read {
    events: Vec<SourceEvent>,
    looked_up: Vec<i64>,
    /// Its log was read this round (for the removals or for a refusal).
    log_read: bool,
    /// What it said of itself this round.
    said: driver_self::Said,
}

/// Reads one driver: its executor list; once, a client-mode driver's settings (it has no
/// ConfigMap); and, when it records new removals as "Executor killed by driver." (a
/// heartbeat timeout on Spark 3.5 to 4.3 as often as a scale-down), its log's
/// `HeartbeatReceiver` lines. The settings and the log's words go first: the executors'
/// verdicts are then made with them.
async fn read_one(
    client: &Client,
    svcs: &[Service],
    (d, pod, app_id): (&Pod, &ExecutorPod, String),
    known: Known,
    (clock, listed): (&Clock, &DriversListed),
) -> Read {
    let now = || clock.now();
    let namespace = pod.namespace.to_string();
    let view = read_driver(client, d, pod, &app_id, svcs).await;
    listed.note(&namespace, &app_id);
    let mut events = Vec::new();
    let mut looked_up = Vec::new();
    let mut log_read = false;
    let mut said = driver_self::Said::default();
    if let DriverView::Ok { executors } = &view {
        // What else it is asked, at once: its own state (and the loss chain), a
        // client-mode driver's settings, its log's words on its removals.
        let own = async {
            match ui_path(d, &app_id, svcs) {
                Some(ui) => {
                    driver_self::read(client, (&ui, pod, &app_id), executors, known.own, now())
                        .await
                }
                None => driver_self::Said::default(),
            }
        };
        let settings = async {
            if pod.conf_config_map.is_none() && !known.settings {
                read_settings(client, d, &app_id, svcs).await
            } else {
                None
            }
        };
        let words = log_words(client, (d, pod, &app_id), executors, &known, now());
        let (own, properties, words) = tokio::join!(own, settings, words);
        said = own;
        if let Some(cost) = said.cost.take() {
            events.push(SourceEvent::AppCost {
                namespace: namespace.clone(),
                app_id: app_id.clone(),
                cost: Box::new(cost),
                at: now(),
            });
        }
        if let Some(allocation) = said.allocation {
            events.push(SourceEvent::DriverAllocation {
                namespace: namespace.clone(),
                app_id: app_id.clone(),
                allocation,
                at: now(),
            });
        }
        if let Some(query) = said.streaming.clone() {
            events.push(SourceEvent::DriverStreaming {
                namespace: namespace.clone(),
                app_id: app_id.clone(),
                query,
                at: now(),
            });
        }
        if let Some(properties) = properties {
            events.push(SourceEvent::DriverConfig {
                namespace: namespace.clone(),
                app_id: app_id.clone(),
                properties,
                from: Some(SettingsFrom::DriverRest),
                at: now(),
            });
        }
        (looked_up, log_read) = (words.looked_up, words.log_read);
        events.extend(words.event);
    }
    events.push(SourceEvent::DriverExecutors {
        namespace,
        app_id,
        view,
        at: now(),
    });
    Read {
        events,
        looked_up,
        log_read,
        said,
    }
}

/// What a driver's log said of its removals (or of a refusal), and what it was read for.
struct LogWords {
    event: Option<SourceEvent>,
    looked_up: Vec<i64>,
    log_read: bool,
}

/// Reads a driver's log when it records new removals as "Executor killed by driver." (for
/// its `HeartbeatReceiver` lines), or when it has run a while with no executor (its log
/// says why when the API server refuses its executor pods: RBAC, a webhook; no pod and no
/// event show it).
async fn log_words(
    client: &Client,
    (d, pod, app_id): (&Pod, &ExecutorPod, &str),
    executors: &[driver::DriverExecutor],
    known: &Known,
    now: Time,
) -> LogWords {
    let namespace = pod.namespace.to_string();
    let mut words = LogWords {
        event: None,
        looked_up: Vec::new(),
        log_read: false,
    };
    if !known.may_read_log {
        return words;
    }
    words.looked_up = executors
        .iter()
        .filter(|e| {
            e.remove_reason.as_deref().map(str::trim) == Some(KILLED_BY_DRIVER)
                && !known.heard.contains(&e.id)
        })
        .map(|e| e.id)
        .collect();
    let idle =
        pod.created_at.is_some_and(|t| now - t >= REFUSAL_AFTER) && pod.phase() == Some("Running");
    if words.looked_up.is_empty() && executors.is_empty() && idle {
        // Tried counts as read: a log that cannot be read is not asked every round.
        words.log_read = true;
        if let Some(lines) = driver_log(client, d).await
            && let Some(line) = refused_creation(&lines)
        {
            words.event = Some(SourceEvent::DriverRefused {
                namespace,
                app_id: app_id.to_owned(),
                line: line.to_owned(),
                at: now,
            });
        }
    } else if !words.looked_up.is_empty() {
        words.log_read = true;
        let removed = driver_log(client, d)
            .await
            .map(|lines| verdict::heartbeat_removals(&lines))
            .unwrap_or_default();
        let said: Vec<i64> = words
            .looked_up
            .iter()
            .copied()
            .filter(|id| removed.contains(id))
            .collect();
        if !said.is_empty() {
            words.event = Some(SourceEvent::DriverHeartbeats {
                namespace,
                app_id: app_id.to_owned(),
                executors: said,
                at: now,
            });
        }
    }
    words
}

/// How many drivers are read at once: each read is a few requests through the API
/// server's proxy at once (its list, then its metrics, jobs and the rest), so about 50 in
/// flight, within what API Priority and Fairness gives one client; 100 drivers are read
/// in about seven of their answer times.
const DRIVERS_AT_ONCE: usize = 16;

/// How long a running driver may have no executor before its log is read for a refusal.
const REFUSAL_AFTER: chrono::Duration = chrono::Duration::seconds(30);

/// Spark's removal text for a kill by the driver: a scale-down, a kill request, or (Spark
/// 3.5 to 4.3) a heartbeat timeout (apache/spark#57494).
const KILLED_BY_DRIVER: &str = "Executor killed by driver.";

/// How often one driver's log may be read for its heartbeat removals.
const DRIVER_LOG_EVERY: Duration = Duration::from_secs(60);

/// The most of a driver's log read for its heartbeat removals (its tail).
const DRIVER_LOG_TAIL_LINES: i64 = 5_000;
const DRIVER_LOG_MAX_BYTES: i64 = 4 << 20;

/// A running driver's log tail (bounded, with a timeout); none when it cannot be read (no
/// `pods/log` right, a driver whose log is elsewhere).
async fn driver_log(client: &Client, driver: &Pod) -> Option<Vec<String>> {
    let (Some(ns), Some(name)) = (
        driver.metadata.namespace.as_deref(),
        driver.metadata.name.as_deref(),
    ) else {
        return None;
    };
    let containers = driver
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let container = containers
        .iter()
        .find(|c| c.name == "spark-kubernetes-driver")
        .or(containers.first())
        .map(|c| c.name.clone());
    let params = kube::api::LogParams {
        container,
        tail_lines: Some(DRIVER_LOG_TAIL_LINES),
        limit_bytes: Some(DRIVER_LOG_MAX_BYTES),
        ..Default::default()
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    match tokio::time::timeout(Duration::from_secs(10), api.logs(name, &params)).await {
        Ok(Ok(text)) => Some(text.lines().map(str::to_owned).collect()),
        Ok(Err(e)) => {
            tracing::debug!("driver log {ns}/{name}: {}", errors::error_line(&e));
            None
        }
        Err(_) => None,
    }
}

/// Where the driver's UI is: the service selecting the driver (Spark's `…-driver-svc`,
/// the operator's `…-ui-svc`) on its `spark-ui` port (or 4040), else the pod's own 4040.
pub fn ui_path(pod: &Pod, app_id: &str, services: &[Service]) -> Option<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let svc_port = services
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(ns))
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|sp| sp.selector.as_ref())
                .and_then(|sel| sel.get("spark-app-selector"))
                .is_some_and(|a| a == app_id)
        })
        .find_map(|s| {
            let ports = s.spec.as_ref()?.ports.as_ref()?;
            let p = ports
                .iter()
                .find(|p| p.name.as_deref() == Some("spark-ui"))
                .or_else(|| ports.iter().find(|p| p.port == 4040))?;
            let port = p.name.clone().unwrap_or_else(|| p.port.to_string());
            Some(format!("services/{}:{port}", s.metadata.name.as_deref()?))
        });
    let target = svc_port.or_else(|| {
        let name = pod.metadata.name.as_deref()?;
        let ports = pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten());
        let p = ports
            .clone()
            .find(|p| p.name.as_deref() == Some("spark-ui"))
            .or_else(|| ports.clone().find(|p| p.container_port == 4040))?;
        Some(format!("pods/{name}:{}", p.container_port))
    })?;
    Some(format!(
        "/api/v1/namespaces/{ns}/{target}/proxy/api/v1/applications/{app_id}/allexecutors"
    ))
}

/// A driver's Spark properties from its REST API's `environment`, masked; `None` when it
/// could not be read (the executors' read says why a driver is unreachable; a driver that
/// answers that but not this is left on what else is known, and tried again next round).
async fn read_settings(
    client: &Client,
    raw: &Pod,
    app_id: &str,
    services: &[Service],
) -> Option<std::collections::BTreeMap<String, String>> {
    let path = ui_path(raw, app_id, services)?;
    let path = format!("{}environment", path.strip_suffix("allexecutors")?);
    let req = http::Request::get(&path).body(Vec::new()).ok()?;
    let body = tokio::time::timeout(Duration::from_secs(10), client.request_text(req))
        .await
        .ok()?
        .map_err(|e| tracing::debug!("driver environment {path}: {}", errors::error_line(&e)))
        .ok()?;
    let mut properties = driver::parse_environment(&body)
        .map_err(|e| tracing::debug!("driver environment {path}: {e}"))
        .ok()?;
    // Secrets never enter the process's state (recordings are shared).
    redact::properties(&mut properties);
    Some(properties)
}

async fn read_driver(
    client: &Client,
    raw: &Pod,
    pod: &ExecutorPod,
    app_id: &str,
    services: &[Service],
) -> DriverView {
    let unavailable = |reason: String| DriverView::Unavailable { reason };
    match pod.phase() {
        Some("Running") => {}
        Some(p @ ("Succeeded" | "Failed")) => {
            return unavailable(format!("driver gone (pod {} is {p})", pod.name));
        }
        p => {
            return unavailable(format!(
                "driver not ready (pod {} is {})",
                pod.name,
                p.unwrap_or("without status")
            ));
        }
    }
    if pod.deletion.is_some() {
        return unavailable(format!("driver gone (pod {} is being deleted)", pod.name));
    }
    let Some(path) = ui_path(raw, app_id, services) else {
        return unavailable(
            "no UI port: no service selecting the driver with a spark-ui port, no container port 4040"
                .to_owned(),
        );
    };
    let req = match http::Request::get(&path).body(Vec::new()) {
        Ok(r) => r,
        Err(e) => return unavailable(format!("bad proxy path {path}: {e}")),
    };
    let proxied = if path.contains("/services/") {
        "services/proxy"
    } else {
        "pods/proxy"
    };
    match tokio::time::timeout(Duration::from_secs(10), client.request_text(req)).await {
        Err(_) => unavailable("the driver did not answer within 10 s".to_owned()),
        Ok(Ok(body)) => match driver::parse_executors(&body) {
            Ok(executors) => DriverView::Ok { executors },
            Err(e) => unavailable(e),
        },
        Ok(Err(kube::Error::Api(s))) => unavailable(match s.code {
            403 => format!(
                "forbidden: cannot get {proxied} in namespace {} ({})",
                pod.namespace,
                masked_line(&s.message)
            ),
            503 => format!("driver not reachable: {}", masked_line(&s.message)),
            404 => format!("not found: {}", masked_line(&s.message)),
            c => format!("HTTP {c}: {}", masked_line(&s.message)),
        }),
        Ok(Err(e)) => unavailable(errors::error_line(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::connection::{BACKGROUND_FACTOR, DriverFocus};

    fn pod(ports: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "etl-driver", "namespace": "spark-jobs"},
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "ports": ports}]}
        }))
        .unwrap()
    }

    fn svc(name: &str, ns: &str, app: &str, ports: serde_json::Value) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"spark-app-selector": app, "spark-role": "driver"}, "ports": ports}
        }))
        .unwrap()
    }

    #[test]
    fn every_driver_is_read_first_then_the_app_in_view_more_often() {
        let every = Duration::from_secs(10);
        let f = DriverFocus::default();
        // status/record: every app every interval.
        assert!(f.due("ns", "a", Some(every), every) && f.due("ns", "b", Some(every), every));
        let shared = f.clone(); // the live view's handle, the poll's handle
        shared.prefer(Some(("ns".into(), "a".into())));
        // Never read: due whatever the focus (the first screen knows every app's dead).
        assert!(f.due("ns", "b", None, every) && f.due("other", "a", None, every));
        assert!(f.due("ns", "a", Some(every), every));
        assert!(!f.due("ns", "b", Some(every), every));
        assert!(!f.due("ns", "b", Some(every * 5), every));
        assert!(f.due("ns", "b", Some(every * BACKGROUND_FACTOR), every));
        shared.prefer(None);
        assert!(!f.due("ns", "a", Some(every), every));
        assert_eq!(
            super::super::connection::narrowed("spark-role=driver", Some(" team=x ")),
            "spark-role=driver,team=x"
        );
    }

    #[test]
    fn the_driver_ui_is_found_where_spark_and_the_operator_put_it() {
        let p = pod(serde_json::json!([{"name": "spark-ui", "containerPort": 4040}]));
        let tail = "proxy/api/v1/applications/spark-1/allexecutors";
        // Spark's own driver service: its spark-ui port, by name.
        let spark_svc = svc(
            "etl-driver-svc",
            "spark-jobs",
            "spark-1",
            serde_json::json!([{"name": "driver-rpc-port", "port": 7078}, {"name": "spark-ui", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[spark_svc]).unwrap(),
            format!("/api/v1/namespaces/spark-jobs/services/etl-driver-svc:spark-ui/{tail}")
        );
        // The operator's UI service: port 4040 under another name.
        let op = svc(
            "etl-ui-svc",
            "spark-jobs",
            "spark-1",
            serde_json::json!([{"name": "spark-driver-ui-port", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[op]).unwrap(),
            format!(
                "/api/v1/namespaces/spark-jobs/services/etl-ui-svc:spark-driver-ui-port/{tail}"
            )
        );
        // Services of other apps or namespaces do not count: the pod's own port.
        let other = svc(
            "x",
            "spark-jobs",
            "spark-2",
            serde_json::json!([{"name": "spark-ui", "port": 4040}]),
        );
        let elsewhere = svc(
            "y",
            "default",
            "spark-1",
            serde_json::json!([{"name": "spark-ui", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[other, elsewhere]).unwrap(),
            format!("/api/v1/namespaces/spark-jobs/pods/etl-driver:4040/{tail}")
        );
        // Nothing at all.
        assert_eq!(ui_path(&pod(serde_json::json!([])), "spark-1", &[]), None);
    }
}
