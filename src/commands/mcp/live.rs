//! The live source: the connection made in the background (again while it fails), its
//! sources, and the store they feed, published as snapshots for the tools.

use super::*;
use crate::record::recorder;
use crate::redact;
use crate::source::clock::Clock;
use crate::source::connection::LiveOptions;
use crate::source::extra::Extra;
use crate::source::{SourceEvent, connection, live};
use crate::store::Store;

/// Aborts its tasks when dropped (the connecting task's children, when it is).
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The live source: the connection (made again every few seconds, up to 30, while it
/// fails: the server answers meanwhile, and each tool says why it has no answer), then its
/// sources and the store, until this task is aborted.
pub(super) async fn connected(
    opts: LiveOptions,
    extra: Option<Arc<dyn Extra>>,
    link: tokio::sync::watch::Sender<Link>,
    snap: tokio::sync::watch::Sender<Arc<Snapshot>>,
) {
    let mut attempt = connection::connect(&opts).await;
    let mut wait = Duration::from_secs(2);
    let mut conn = loop {
        match attempt {
            Ok(conn) => break conn,
            Err(e) => {
                let why = redact::one_line(&e.to_string());
                eprintln!(
                    "spark-triage mcp: {why}; trying again in {} s",
                    wait.as_secs()
                );
                let _ = link.send(Link::Connecting(Some(why)));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
                attempt = connection::connect(&opts).await;
            }
        }
    };
    conn.extra = extra;
    let (tx, rx) = tokio::sync::mpsc::channel(4096);
    let mut tasks = live::spawn(&conn, tx);
    tasks.push(tokio::spawn(keep_store(rx, snap, conn.clock.clone())));
    let _tasks = AbortOnDrop(tasks);
    let _ = link.send(Link::Up(Arc::new(Up {
        header: Arc::new(recorder::recording_header(&conn)),
        scope: conn.scope.describe(),
        clock: conn.clock.clone(),
        stale_after: conn.stale_after(),
        listed: conn.listed.clone(),
    })));
    std::future::pending::<()>().await;
}

/// The live store: every source event applied (a driver's executor list after the first
/// LIST, as `status` does), the snapshot published at most every 250 ms.
async fn keep_store(
    mut rx: tokio::sync::mpsc::Receiver<SourceEvent>,
    tx: tokio::sync::watch::Sender<Arc<Snapshot>>,
    clock: Clock,
) {
    let mut store = Store::new();
    let mut held = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut changed = false;
    let mut last = tokio::time::Instant::now();
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => {
                    super::super::apply_after_first_list(&mut store, &mut held, ev);
                    changed = true;
                }
                None => return,
            },
            _ = tick.tick() => {
                // What changed, at most every 250 ms; and every second anyway, so that waits
                // and ages grow on a quiet cluster.
                if changed || last.elapsed() >= Duration::from_secs(1) {
                    // As of now on the cluster's clock (a wait is as long as it is now).
                    store.apply(SourceEvent::Tick { at: clock.now() });
                    changed = false;
                    last = tokio::time::Instant::now();
                    if tx.send(Arc::new(store.snapshot())).is_err() {
                        return;
                    }
                }
            }
        }
    }
}
