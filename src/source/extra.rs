//! Sources the layers above provide, started with the others on every connection the view
//! runs on (a context switch included): Spark's event logs (`--event-log-dir`, read by
//! `eventlog::live`). Such a source is handed the apps in scope, as their drivers'
//! pods name them, at every poll; it runs on a thread of its own (its reads block) and ends
//! when the connection's sources are stopped (its list of apps closes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

use tokio::sync::mpsc;

use super::SourceEvent;

/// The apps in scope: (namespace, app id) of each driver pod.
pub type Apps = Vec<(String, String)>;

/// Set when the connection's sources were stopped (a context switch, the end): a source
/// on a thread of its own sends nothing after it, even what it was reading then.
#[derive(Debug, Clone, Default)]
pub struct Stopped(Arc<AtomicBool>);

impl Stopped {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Sets [`Stopped`] when dropped: the drivers' task holds it, so aborting the task sets it.
pub(super) struct SetOnDrop(pub(super) Stopped);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        (self.0).0.store(true, Ordering::SeqCst);
    }
}

/// A source started with a connection's own.
pub trait Extra: Send + Sync + std::fmt::Debug {
    /// Starts it: `apps` gets the apps in scope at every poll and closes when the
    /// connection's sources stop (and `stop` is set then); what it learns goes to `tx`,
    /// stamped with the connection's `clock`.
    fn start(
        &self,
        apps: Receiver<Apps>,
        tx: mpsc::Sender<SourceEvent>,
        stop: Stopped,
        clock: super::clock::Clock,
    );
}
