//! Sources the layers above provide, started with the others on every connection the view
//! runs on (a context switch included): Spark's event logs (`--event-log-dir`, read by
//! `record::eventlog::live`). Such a source is handed the apps in scope, as their drivers'
//! pods name them, at every poll; it runs on a thread of its own (its reads block) and ends
//! when the connection's sources are stopped (its list of apps closes).

use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::ListParams};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{SourceEvent, connection::Connection};
use spark_triage_core::model::ExecutorPod;

/// The apps in scope: (namespace, app id) of each driver pod.
pub type Apps = Vec<(String, String)>;

/// A source started with a connection's own.
pub trait Extra: Send + Sync + std::fmt::Debug {
    /// Starts it: `apps` gets the apps in scope at every poll and closes when the
    /// connection's sources stop; what it learns goes to `tx`.
    fn start(&self, apps: Receiver<Apps>, tx: mpsc::Sender<SourceEvent>);
}

/// Starts `extra` on `conn`: the task that lists the drivers for it.
pub(super) fn spawn(
    extra: &dyn Extra,
    conn: &Connection,
    tx: mpsc::Sender<SourceEvent>,
) -> JoinHandle<()> {
    // One list waiting at most: a source still busy with the last one skips a poll.
    let (apps_tx, apps_rx) = std::sync::mpsc::sync_channel(1);
    extra.start(apps_rx, tx);
    tokio::spawn(drivers(conn.clone(), conn.poll_interval, apps_tx))
}

async fn drivers(conn: Connection, every: Duration, apps: SyncSender<Apps>) {
    let pods: Api<Pod> = super::connection::pods_api(&conn.client, &conn.scope);
    let params = ListParams::default().labels(&conn.driver_selector);
    let mut tick = tokio::time::interval(every.max(Duration::from_secs(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // The pod sources report API trouble; this one waits for the next poll.
        let Ok(list) = pods.list(&params).await else {
            continue;
        };
        let mut found: Apps = list
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
