//! Live sources against a real (or simulated) API server, as Spark's driver watches its
//! executors: a pod watch (`pod_stream.rs`: kube-runtime's watcher's states with its LIST
//! pipelined, with `backoff.rs`'s backoff, reset only by a delivery: a dropped watch is
//! resumed, a 410 relists; its own LIST is the first complete view), a complete LIST
//! every `--poll-interval` (30 s, as Spark; metadata only: `poll.rs`), an event watch of what
//! the diagnoses read, and each driver's `spark.properties` from its ConfigMap.
//!
//! This is the edge: it stamps every event with the connection's clock when it arrives. Errors
//! become `SourceHealth` events (retrying with the cause; forbidden with the permission).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::watcher;
use spark_triage_core::diagnose::memory::SettingsFrom;
use spark_triage_core::model::{ExecutorPod, Role, Time};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::clock::Clock;
use super::connection::{Connection, pods_api, send};
use super::errors::{self, forbidden_permission, health_of, masked_line};
use super::lean::{LeanEvent, LeanPod};
use super::poll::{Delivered, pod_poll};
use super::{Health, PresentPod, Scope, SourceEvent, SourceKind, parse_properties};
use crate::redact;

/// Pods a `PodsListing` carries (a page of the LIST).
const LISTING_PAGE: usize = 500;

/// A watcher's error in one line.
fn describe_watch(e: &watcher::Error) -> String {
    match e {
        watcher::Error::InitialListFailed(k)
        | watcher::Error::WatchStartFailed(k)
        | watcher::Error::WatchFailed(k) => errors::error_line(k),
        other => masked_line(&other.to_string()),
    }
}

/// Starts every source; events go to `tx` until it closes.
/// The LISTs come every `conn.poll_interval` (`--poll-interval`'s one lane).
pub fn spawn(conn: &Connection, tx: mpsc::Sender<SourceEvent>) -> Vec<JoinHandle<()>> {
    let poll_interval = conn.poll_interval;
    let delivered = Delivered::default();
    let wanted = super::groups::Wanted::default();
    let mut tasks = vec![
        tokio::spawn(pod_watch(
            conn.clone(),
            tx.clone(),
            delivered.clone(),
            wanted.clone(),
        )),
        tokio::spawn(pod_poll(conn.clone(), poll_interval, tx.clone(), delivered)),
        tokio::spawn(super::quotas::quota_poll(
            conn.clone(),
            poll_interval,
            tx.clone(),
        )),
        tokio::spawn(super::scope::scope_note(conn.clone(), tx.clone())),
        tokio::spawn(super::groups::group_poll(
            conn.clone(),
            poll_interval,
            wanted,
            tx.clone(),
        )),
    ];
    if let Some(every) = conn.driver_poll {
        tasks.push(tokio::spawn(super::driver_view::driver_poll(
            conn.clone(),
            every,
            tx.clone(),
        )));
    }
    if let Some(extra) = &conn.extra {
        tasks.push(spawn_extra(extra.as_ref(), conn, tx.clone()));
    }
    tasks.push(tokio::spawn(logged_kills(
        conn.server.clone(),
        conn.scope.clone(),
        conn.clock.clone(),
        tx.clone(),
    )));
    tasks.push(tokio::spawn(event_watch(conn.clone(), tx)));
    tasks
}

/// How far back the actions log's kills are taken (a streaming app's driver lists its
/// executors for as long as it runs).
const KILLS_LOGGED_SINCE: chrono::Duration = chrono::Duration::days(7);

/// The kills this user made through spark-triage against this API server, from the local
/// actions log, once: a pod deleted before this view started has no mark left to say it
/// was the tool's.
async fn logged_kills(server: String, scope: Scope, clock: Clock, tx: mpsc::Sender<SourceEvent>) {
    let since = clock.now() - KILLS_LOGGED_SINCE;
    let path = super::actions_log::path_from_env();
    let mut kills = tokio::task::spawn_blocking(move || {
        super::actions_log::kills(path.as_deref(), &server, since)
    })
    .await
    .unwrap_or_default();
    // Only the scope's (a recording of one namespace keeps nothing of the others).
    if let Scope::Namespace(ns) = &scope {
        kills.retain(|k| &k.namespace == ns);
    }
    if !kills.is_empty() {
        let _ = send(
            &tx,
            SourceEvent::KillsLogged {
                kills,
                at: clock.now(),
            },
        )
        .await;
    }
}

async fn pod_watch(
    conn: Connection,
    tx: mpsc::Sender<SourceEvent>,
    delivered: Delivered,
    wanted: super::groups::Wanted,
) {
    let now = || conn.clock.now();
    let api: Api<LeanPod> = pods_api(&conn.client, &conn.scope);
    let selector = Some(conn.selector.clone()).filter(|s| !s.is_empty());
    let mut stream =
        super::backoff::watch_backoff(super::pod_stream::watch(api, conn.client.clone(), selector));
    let mut configs_read: BTreeSet<(String, String)> = BTreeSet::new();
    send(
        &tx,
        SourceEvent::SourceHealth {
            source: SourceKind::PodWatch,
            health: Health::Connecting,
            at: now(),
        },
    )
    .await;
    // Health follows the last success: after an error, the first event through says the
    // watch works again (a resumed watch sends no InitDone).
    let mut failing = false;
    // The watch's (re)list: its pods are delivered a page at a time as they come
    // (`PodsListing`: the store applies a page while the next decodes), and its end says
    // which pods it had (`PodsPresent`: what it lacks is missing), so it is a complete LIST
    // (the first view needs no LIST of its own, and a relist after a 410 finds what
    // vanished in the gap at once).
    let mut listing: Option<Vec<PresentPod>> = None;
    let mut page: Vec<Arc<ExecutorPod>> = Vec::new();
    while let Some(item) = stream.next().await {
        let outcome = super::backoff::outcome(&item);
        if !recovered(
            &mut failing,
            outcome,
            SourceKind::PodWatch,
            &conn.clock,
            &tx,
        )
        .await
        {
            return;
        }
        let ev = match item {
            Ok(
                watcher::Event::Apply(LeanPod { pod, .. })
                | watcher::Event::InitApply(LeanPod { pod, .. }),
            ) => {
                maybe_read_config(&conn, &pod, &mut configs_read, &tx);
                wanted.note(&pod);
                delivered.saw(&pod);
                if let Some(list) = listing.as_mut() {
                    list.push(PresentPod::of(&pod));
                    page.push(Arc::new(pod));
                    if page.len() >= LISTING_PAGE {
                        let pods = std::mem::take(&mut page);
                        if !send(&tx, SourceEvent::PodsListing { pods, at: now() }).await {
                            return;
                        }
                    }
                    continue;
                }
                SourceEvent::PodUpserted {
                    pod: Arc::new(pod),
                    at: now(),
                }
            }
            Ok(watcher::Event::Delete(LeanPod { pod, .. })) => {
                delivered.saw(&pod);
                SourceEvent::PodDeleted {
                    pod: Arc::new(pod),
                    at: now(),
                }
            }
            Ok(watcher::Event::Init) => {
                listing = Some(Vec::new());
                page.clear();
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                let pods = std::mem::take(&mut page);
                if !pods.is_empty()
                    && !send(&tx, SourceEvent::PodsListing { pods, at: now() }).await
                {
                    return;
                }
                let pods = listing.take().unwrap_or_default();
                // The newest pod in the list is a lower bound of its resourceVersion, which
                // keeps missing-pod detection conservative (a pod seen at or after it is
                // never called missing by this list).
                let resource_version = Some(
                    pods.iter()
                        .filter_map(|p| p.resource_version)
                        .max()
                        .unwrap_or(0),
                );
                let listed = SourceEvent::PodsPresent {
                    pods,
                    resource_version,
                    at: now(),
                };
                if !send(&tx, listed).await {
                    return;
                }
                SourceEvent::SourceHealth {
                    source: SourceKind::PodWatch,
                    health: Health::Connected,
                    at: now(),
                }
            }
            Err(e) => match watch_failed(
                &e,
                outcome,
                SourceKind::PodWatch,
                "pods",
                &conn.scope,
                now(),
            ) {
                Some(ev) => ev,
                None => continue,
            },
        };
        if !send(&tx, ev).await {
            return;
        }
    }
}

/// A watch's error, as the pod and event watches both take it: one unreadable line is
/// logged and the stream goes on (`None`: the header stays as it is); anything else is the
/// source's health, forbidden (naming the permission) when the API server said so.
fn watch_failed(
    e: &watcher::Error,
    outcome: super::backoff::Outcome,
    source: SourceKind,
    resource: &str,
    scope: &Scope,
    at: Time,
) -> Option<SourceEvent> {
    if outcome == super::backoff::Outcome::Garbled {
        tracing::warn!(
            "{}: a line could not be read: {}",
            source.as_str(),
            describe_watch(e)
        );
        return None;
    }
    let forbidden = match e {
        watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) => {
            forbidden_permission(k, "watch", resource, scope)
        }
        _ => None,
    };
    Some(SourceEvent::SourceHealth {
        source,
        health: health_of(&describe_watch(e), forbidden),
        at,
    })
}

/// Tracks a watch's failing state; on the first success after a failure, says the source
/// is connected again. False when the receiver is gone.
async fn recovered(
    failing: &mut bool,
    outcome: super::backoff::Outcome,
    source: SourceKind,
    clock: &Clock,
    tx: &mpsc::Sender<SourceEvent>,
) -> bool {
    use super::backoff::Outcome;
    // A (re)list that begins says nothing: only a delivery is a recovery.
    let ok = match outcome {
        Outcome::Starting | Outcome::Garbled => return true,
        Outcome::Delivered => true,
        Outcome::Failed => false,
    };
    let was = std::mem::replace(failing, !ok);
    if was && ok {
        tracing::info!("{source:?}: connected again");
        let health = Health::Connected;
        return send(
            tx,
            SourceEvent::SourceHealth {
                source,
                health,
                at: clock.now(),
            },
        )
        .await;
    }
    true
}

/// Reads a driver's `spark.properties` once per (namespace, ConfigMap).
fn maybe_read_config(
    conn: &Connection,
    pod: &ExecutorPod,
    seen: &mut BTreeSet<(String, String)>,
    tx: &mpsc::Sender<SourceEvent>,
) {
    if pod.role() != Some(Role::Driver) {
        return;
    }
    let (Some(cm), Some(app_id)) = (
        pod.conf_config_map.as_deref().map(str::to_owned),
        pod.app_id().map(str::to_owned),
    ) else {
        return;
    };
    if !seen.insert((pod.namespace.to_string(), cm.clone())) {
        return;
    }
    let api: Api<ConfigMap> = Api::namespaced(conn.client.clone(), &pod.namespace);
    // A driver made in the last two minutes may not have its ConfigMap yet.
    let young = pod
        .created_at
        .is_none_or(|c| conn.clock.now() - c < chrono::Duration::minutes(2));
    let tx = tx.clone();
    let clock = conn.clock.clone();
    let namespace = pod.namespace.to_string();
    let scope = Scope::Namespace(namespace.clone());
    tokio::spawn(async move {
        // A few tries: one failed request must not leave the app on Spark's defaults. A 404
        // is tried again too: spark-submit creates the driver pod first and its ConfigMap
        // right after (owned by the pod), so a driver seen at once has none yet (seen on a
        // real cluster: every configuration finding then rested on Spark's defaults).
        let mut got = api.get(&cm).await;
        for wait in [1, 2, 4, 8, 15] {
            // An old driver's ConfigMap that is not there will not come.
            let final_404 = !young && matches!(&got, Err(kube::Error::Api(s)) if s.code == 404);
            if got.is_ok() || final_404 || matches!(&got, Err(kube::Error::Api(s)) if s.code == 403)
            {
                break;
            }
            tokio::time::sleep(Duration::from_secs(wait)).await;
            got = api.get(&cm).await;
        }
        let ev = match got {
            Ok(map) => {
                let text = map
                    .data
                    .as_ref()
                    .and_then(|d| d.get("spark.properties"))
                    .cloned()
                    .unwrap_or_default();
                // Secrets never enter the process's state (recordings are shared).
                let mut properties = parse_properties(&text);
                redact::properties(&mut properties);
                SourceEvent::DriverConfig {
                    namespace,
                    app_id,
                    properties,
                    from: Some(SettingsFrom::ConfigMap),
                    at: clock.now(),
                }
            }
            Err(e) => SourceEvent::SourceHealth {
                source: SourceKind::DriverConfig,
                health: health_of(
                    &format!("configmap {cm}: {}", errors::error_line(&e)),
                    forbidden_permission(&e, "get", "configmaps", &scope),
                ),
                at: clock.now(),
            },
        };
        let _ = tx.send(ev).await;
    });
}

/// The events the diagnoses read, not every event: all `Warning`s, and the few `Normal`
/// reasons that carry evidence (the kubelet's `Killing`, the scheduler's `Preempted`, the
/// taint manager's `TaintManagerEviction`, YuniKorn's queue and gang events). A cluster's events are mostly `Normal` chatter
/// (`Scheduled`, `Pulled`, `Created`, `Started`): at 10,000 executors that is tens of
/// thousands of objects the first view would wait for. Field selectors cannot say "or", so
/// it is one watch per selector, merged.
pub const EVENT_SELECTORS: &[&str] = &[
    "involvedObject.kind=Pod,type=Warning",
    "involvedObject.kind=Pod,type=Normal,reason=Killing",
    "involvedObject.kind=Pod,type=Normal,reason=Preempted",
    "involvedObject.kind=Pod,type=Normal,reason=TaintManagerEviction",
    // YuniKorn's words on a pod it holds (one watch: every list of events costs the API
    // server a scan of them all): its core's queue and quota events (`Informational`), its
    // gang's (`GangScheduling`), and "queued and waiting for allocation" (`Scheduling`),
    // which tells a silent scheduler from a waiting one.
    "involvedObject.kind=Pod,type=Normal,reportingComponent=yunikorn",
];

async fn event_watch(conn: Connection, tx: mpsc::Sender<SourceEvent>) {
    let now = || conn.clock.now();
    let api: Api<LeanEvent> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let streams = EVENT_SELECTORS.iter().enumerate().map(|(i, sel)| {
        let cfg = watcher::Config::default().fields(sel);
        super::backoff::watch_backoff(watcher(api.clone(), cfg))
            .map(move |item| (i, item))
            .boxed()
    });
    let mut stream = futures::stream::select_all(streams);
    // Connected once every watch has listed (the first view waits for all of them).
    let mut listed = BTreeSet::new();
    let mut failing = false;
    while let Some((i, item)) = stream.next().await {
        let outcome = super::backoff::outcome(&item);
        if !recovered(
            &mut failing,
            outcome,
            SourceKind::EventWatch,
            &conn.clock,
            &tx,
        )
        .await
        {
            return;
        }
        let ev = match item {
            Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => SourceEvent::EventSeen {
                event: Box::new(e.event),
                at: now(),
            },
            Ok(watcher::Event::Delete(_) | watcher::Event::Init) => continue,
            Ok(watcher::Event::InitDone) => {
                listed.insert(i);
                if listed.len() < EVENT_SELECTORS.len() {
                    continue;
                }
                SourceEvent::SourceHealth {
                    source: SourceKind::EventWatch,
                    health: Health::Connected,
                    at: now(),
                }
            }
            Err(e) => {
                match watch_failed(
                    &e,
                    outcome,
                    SourceKind::EventWatch,
                    "events",
                    &conn.scope,
                    now(),
                ) {
                    Some(ev) => ev,
                    None => continue,
                }
            }
        };
        if !send(&tx, ev).await {
            return;
        }
    }
}

/// Starts `extra` on `conn`: the task that lists the drivers for it.
fn spawn_extra(
    extra: &dyn super::extra::Extra,
    conn: &Connection,
    tx: mpsc::Sender<SourceEvent>,
) -> JoinHandle<()> {
    // One list waiting at most: a source still busy with the last one skips a poll.
    let (apps_tx, apps_rx) = std::sync::mpsc::sync_channel(1);
    let stop = super::extra::Stopped::default();
    extra.start(apps_rx, tx, stop.clone(), conn.clock.clone());
    tokio::spawn(extra_drivers(
        conn.clone(),
        conn.poll_interval,
        apps_tx,
        super::extra::SetOnDrop(stop),
    ))
}

async fn extra_drivers(
    conn: Connection,
    every: Duration,
    apps: std::sync::mpsc::SyncSender<super::extra::Apps>,
    _stop: super::extra::SetOnDrop,
) {
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        super::connection::pods_api(&conn.client, &conn.scope);
    let params = kube::api::ListParams::default().labels(&conn.driver_selector);
    let mut tick = tokio::time::interval(every.max(Duration::from_secs(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // The pod sources report API trouble; this one waits for the next poll.
        let Ok(list) = pods.list(&params).await else {
            continue;
        };
        let mut found: super::extra::Apps = list
            .items
            .iter()
            .filter_map(|d| {
                let pod = ExecutorPod::from_pod(d);
                Some((pod.namespace.to_string(), pod.app_id()?.to_owned()))
            })
            .collect();
        found.sort();
        found.dedup();
        match apps.try_send(found) {
            Ok(()) | Err(std::sync::mpsc::TrySendError::Full(_)) => {}
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => return,
        }
    }
}
