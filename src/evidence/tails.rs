//! The flight recorder's log tails: the live view's budget (a few executors per app and
//! cause per 10 minutes, 30 reads a minute), each tail read by its own task, a few at once,
//! and sent into the recording as a `LogCaptured` event, so a replay's `l` shows the
//! stack trace of a JVM OOM that nobody watched.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use spark_triage_core::model::Time;
use tokio::sync::{Semaphore, mpsc};

use super::EvidenceReads;
use crate::source::clock::Clock;
use crate::source::{SourceEvent, lean};
use crate::store::{Finished, Snapshot};

/// Tails read at once.
const AT_ONCE: usize = 4;
/// Tails waiting for a turn; past that one is dropped (the budget caps the rate anyway).
const QUEUE: usize = 64;
/// How long one read may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Reads the tails of executors that ended badly, into the events being recorded.
pub struct Tails {
    client: kube::Client,
    /// The recorder's own input (weak: the recording ends when its sources do).
    tx: mpsc::WeakSender<SourceEvent>,
    reads: EvidenceReads,
    /// Lines per tail.
    lines: usize,
    permits: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    /// The cluster's clock, which a tail read is stamped with.
    clock: Clock,
}

impl std::fmt::Debug for Tails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tails")
            .field("lines", &self.lines)
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Tails {
    pub fn new(
        client: kube::Client,
        tx: &mpsc::Sender<SourceEvent>,
        lines: usize,
        clock: Clock,
    ) -> Self {
        Self {
            client,
            clock,
            tx: tx.downgrade(),
            reads: EvidenceReads::default(),
            lines: lines.max(1),
            permits: Arc::new(Semaphore::new(AT_ONCE)),
            queued: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The executors (and drivers) that ended since the last call: the ones the budget
    /// lets through are read, each by a task of its own.
    pub fn ended(&mut self, snap: &Snapshot, finished: Vec<Finished>, now: Time) {
        for f in finished {
            if !super::due(&mut self.reads, snap, &f, now) {
                continue;
            }
            // The recording ended: nothing to read for.
            if self.tx.upgrade().is_none() {
                return;
            }
            if self.queued.fetch_add(1, Ordering::SeqCst) >= QUEUE {
                self.queued.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!(
                    "evidence: log tail of {}/{} not read: {QUEUE} reads wait already",
                    f.namespace,
                    f.pod
                );
                continue;
            }
            let (client, permits, queued, weak, clock) = (
                self.client.clone(),
                self.permits.clone(),
                self.queued.clone(),
                self.tx.clone(),
                self.clock.clone(),
            );
            let lines = i64::try_from(self.lines).unwrap_or(i64::MAX);
            tokio::spawn(async move {
                let turn = permits.acquire_owned().await;
                queued.fetch_sub(1, Ordering::SeqCst);
                let Ok(_turn) = turn else { return };
                let read = tokio::time::timeout(
                    TIMEOUT,
                    lean::log_tail(
                        &client,
                        &f.namespace,
                        &f.pod,
                        &f.container,
                        f.previous,
                        lines,
                    ),
                )
                .await;
                let lines = match read {
                    Ok(Ok(lines)) => lines,
                    Ok(Err(e)) => {
                        tracing::warn!("evidence: log tail of {}/{}: {e}", f.namespace, f.pod);
                        return;
                    }
                    Err(_) => {
                        tracing::warn!(
                            "evidence: log tail of {}/{}: no answer within {}s",
                            f.namespace,
                            f.pod,
                            TIMEOUT.as_secs()
                        );
                        return;
                    }
                };
                tracing::info!(
                    "evidence: log tail of {}/{} ({} lines)",
                    f.namespace,
                    f.pod,
                    lines.len()
                );
                // Held only to send: a recording whose sources ended is not kept open by
                // reads still waiting.
                let Some(tx) = weak.upgrade() else { return };
                let _ = tx
                    .send(SourceEvent::LogCaptured {
                        namespace: f.namespace,
                        pod: f.pod,
                        lines,
                        at: clock.now(),
                    })
                    .await;
            });
        }
    }
}
