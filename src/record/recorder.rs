//! The one recorder loop (`record` and the live view's `--record` tee): events to a
//! recording file or a directory of rotating segments, keyframes, forgetting, and the
//! figures the flight recorder's `/metrics` serves; one recorder per file or directory.

use std::path::Path;
use std::time::{Duration, Instant};

use super::segments::{self, Retention, SegmentWriter};
use super::{FileOut, Writer};
use crate::evidence::tails::Tails;
use crate::failure::Failure;
use crate::publish::metrics::Metrics;
use crate::record;
use crate::record::Header;
use crate::record::lock::RecorderLock;
use crate::source::SourceEvent;
use crate::source::clock::Clock;
use crate::source::connection::Connection;
use crate::store::Store;

pub(crate) fn recording_header(conn: &Connection) -> Header {
    Header::new(
        conn.clock.now(),
        conn.scope.describe(),
        conn.selector.clone(),
        conn.server.clone(),
    )
}

pub(crate) fn create_recording(
    path: &std::path::Path,
    conn: &Connection,
    force: bool,
) -> Result<record::Writer<record::FileOut>, Failure> {
    record::create(path, &recording_header(conn), force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            exists(path)
        } else {
            Failure::Runtime(format!("cannot create {}: {e}", path.display()))
        }
    })
}

fn exists(path: &std::path::Path) -> Failure {
    Failure::Runtime(format!(
        "{} exists; not overwriting it (use `record --force`, or another name)",
        path.display()
    ))
}

/// The recording's lock (one recorder per file or directory), or who holds it.
pub(crate) fn lock(path: &std::path::Path, dir: bool) -> Result<RecorderLock, Failure> {
    RecorderLock::acquire(path, dir).map_err(|e| Failure::Runtime(e.to_string()))
}

/// Refuses before connecting, so the user hears it at once.
pub(crate) fn refuse_existing(path: Option<&std::path::Path>, force: bool) -> Result<(), Failure> {
    match path {
        Some(p) if !force && p.exists() => Err(exists(p)),
        _ => Ok(()),
    }
}

/// The one recorder loop (`record` and the live view's `--record`): writes every event to
/// the recording, a keyframe every `keyframe_every` (from its own store), flushes every
/// second (a crash loses at most a second).
pub(crate) struct Recorder {
    pub writer: record::Writer<record::FileOut>,
    pub store: Store,
    keyframe_every: std::time::Duration,
    /// Rotating segments in a directory, when recording one.
    pub segments: Option<Segmented>,
    pub metrics: Option<std::sync::Arc<Metrics>>,
    /// Events and bytes of the segments closed before the current one.
    closed: (u64, u64),
    /// `/readyz` fails when the last complete LIST is older than this.
    pub stale_after: std::time::Duration,
    /// Executors whose pods are gone are kept in memory this long (a directory's recorder).
    pub forget_after: Option<std::time::Duration>,
    /// When the directory was last listed for `/metrics` (every 15 s, and at rotation).
    listed: Option<std::time::Instant>,
    /// No executor gone at or after this (µs since the epoch) is forgotten: `--tables` has
    /// not written its row yet.
    pub hold: Option<std::sync::Arc<std::sync::atomic::AtomicI64>>,
    /// The log tails of executors that ended badly, read into the recording (`record`; the
    /// live view's `--record` gets its tails from the view).
    pub tails: Option<Tails>,
    /// A single-file recording's path (its size for `/metrics`).
    pub file: Option<std::path::PathBuf>,
    /// The cluster's clock (what is forgotten, and the figures, are as of its now).
    clock: Clock,
}

impl Recorder {
    pub(crate) fn new(
        writer: record::Writer<record::FileOut>,
        keyframe_every: std::time::Duration,
        clock: Clock,
    ) -> Self {
        Self {
            writer,
            store: Store::new(),
            keyframe_every: keyframe_every.max(std::time::Duration::from_secs(1)),
            segments: None,
            metrics: None,
            closed: (0, 0),
            stale_after: std::time::Duration::from_secs(120),
            forget_after: None,
            listed: None,
            hold: None,
            tails: None,
            file: None,
            clock,
        }
    }

    /// A daemon's memory stays bounded: executors gone longer than `forget_after` are
    /// forgotten, and the recording says so (a replay forgets the same ones).
    fn forget(&mut self) -> std::io::Result<()> {
        let Some(after) = self
            .forget_after
            .and_then(|d| chrono::Duration::from_std(d).ok())
        else {
            return Ok(());
        };
        let now = self.clock.now();
        let mut before = now - after;
        if let Some(hold) = &self.hold
            && let Some(t) = chrono::DateTime::from_timestamp_micros(
                hold.load(std::sync::atomic::Ordering::Relaxed),
            )
        {
            before = before.min(t);
        }
        let ev = SourceEvent::Forget { before, at: now };
        self.writer.write(&ev)?;
        self.store.apply(ev);
        Ok(())
    }

    /// Events recorded, bytes written (every segment of this run).
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.closed.0 + self.writer.events,
            self.closed.1 + self.writer.bytes,
        )
    }

    /// Each second: a new segment when one is due, then the figures for `/metrics`.
    fn maintain(&mut self) -> std::io::Result<()> {
        if self.segments.as_ref().is_some_and(|s| s.due()) {
            self.forget()?;
            let Some(seg) = &mut self.segments else {
                return Ok(());
            };
            let next = seg.rotate(&self.store)?;
            self.writer.flush()?;
            self.closed.0 += self.writer.events;
            self.closed.1 += self.writer.bytes;
            // The old segment's compressed stream is finished as it is dropped.
            drop(std::mem::replace(&mut self.writer, next));
            self.listed = None;
            if let Some(m) = &self.metrics {
                m.segment_opened();
            }
        }
        if let Some(m) = &self.metrics {
            let (events, bytes) = self.totals();
            // The segments' count and size change slowly: not a directory read a second.
            let due = self
                .listed
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(15));
            let dir = self
                .segments
                .as_ref()
                .filter(|_| due)
                .map(|s| s.writer.dir());
            if dir.is_some() {
                self.listed = Some(std::time::Instant::now());
            }
            m.publish(
                &self.store,
                events,
                bytes,
                self.stale_after,
                self.clock.now(),
            );
            if let Some(segs) = dir.and_then(|d| super::segments::list(d).ok()) {
                m.on_disk(segs.len(), segs.iter().map(|s| s.bytes).sum());
            }
            if due
                && self.segments.is_none()
                && let Some(len) = self.file.as_ref().and_then(|f| std::fs::metadata(f).ok())
            {
                self.listed = Some(std::time::Instant::now());
                m.on_disk(1, len.len());
            }
        }
        Ok(())
    }

    /// Records until the events end, `forward` (which gets every event after it is
    /// written) closes, `each_second` says stop, or `stop` completes.
    pub(crate) async fn run(
        &mut self,
        rx: &mut tokio::sync::mpsc::Receiver<SourceEvent>,
        forward: Option<&tokio::sync::mpsc::Sender<SourceEvent>>,
        mut each_second: impl FnMut(&Self) -> bool,
        stop: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
        // Endings in a resumed state were handled by the run that saw them (their tails
        // read then, or not at all).
        self.store.take_finished();
        let mut second = tokio::time::interval(std::time::Duration::from_secs(1));
        let every = self.keyframe_every;
        let mut keyframe = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    self.writer.write(&ev)?;
                    match forward {
                        Some(tx) => {
                            self.store.apply(ev.clone());
                            if tx.send(ev).await.is_err() {
                                break;
                            }
                        }
                        None => self.store.apply(ev),
                    }
                    // Drained whatever reads them (a long-running recorder once kept every
                    // ending it saw in this list).
                    let finished = self.store.take_finished();
                    if let Some(tails) = &mut self.tails
                        && !finished.is_empty()
                    {
                        let now = self.store.view().now.unwrap_or_else(chrono::Utc::now);
                        tails.ended(self.store.view(), finished, now);
                    }
                }
                _ = second.tick() => {
                    self.writer.flush()?;
                    if !each_second(self) {
                        break;
                    }
                    self.maintain()?;
                }
                _ = keyframe.tick() => {
                    self.forget()?;
                    let at = self.store.view().now.unwrap_or_else(chrono::Utc::now);
                    self.writer.write_keyframe(&self.store, at)?;
                }
                () = &mut stop => break,
            }
        }
        self.writer.flush()
    }
}

/// Passes events through to the live view while recording them.
pub(crate) fn tee_to_file(
    conn: &Connection,
    path: &std::path::Path,
    mut rx: tokio::sync::mpsc::Receiver<SourceEvent>,
) -> Result<
    (
        tokio::sync::mpsc::Receiver<SourceEvent>,
        tokio::task::JoinHandle<()>,
    ),
    Failure,
> {
    let lock = lock(path, false)?;
    let writer = create_recording(path, conn, false)?;
    let (tx, out) = tokio::sync::mpsc::channel(65_536);
    let clock = conn.clock.clone();
    let task = tokio::spawn(async move {
        let _lock = lock;
        let mut rec = Recorder::new(writer, std::time::Duration::from_secs(300), clock);
        let _ = rec
            .run(&mut rx, Some(&tx), |_| true, std::future::pending())
            .await;
    });
    Ok((out, task))
}

/// A directory being recorded: when to rotate, what to keep.
pub(crate) struct Segmented {
    pub writer: SegmentWriter,
    rotate: Duration,
    budget: Retention,
    opened: Instant,
}

impl Segmented {
    /// Starts a run in `dir`: resumes the state of the directory's last segment (a
    /// recorder that was killed or restarted goes on where it was, with a gap between),
    /// refuses a directory that records another cluster or scope, and opens a segment.
    pub fn start(
        dir: &Path,
        header: Header,
        rotate: Duration,
        budget: Retention,
    ) -> Result<(Self, Writer<FileOut>, Store), Failure> {
        let store = match segments::resume(dir) {
            Some((h, store)) => {
                let same = (&h.server, &h.scope, &h.selector)
                    == (&header.server, &header.scope, &header.selector);
                if !same {
                    return Err(Failure::Usage(format!(
                        "{} holds the recording of {} ({}, {}); record {} ({}, {}) in another directory",
                        dir.display(),
                        h.server,
                        h.scope,
                        h.selector,
                        header.server,
                        header.scope,
                        header.selector
                    )));
                }
                store
            }
            None => Store::new(),
        };
        let (writer, out) = SegmentWriter::start(dir, header, &store, chrono::Utc::now())
            .map_err(|e| Failure::Runtime(format!("cannot record in {}: {e}", dir.display())))?;
        let mut s = Self {
            writer,
            rotate: rotate.max(Duration::from_secs(1)),
            budget,
            opened: Instant::now(),
        };
        s.prune();
        Ok((s, out, store))
    }

    /// Whether the current segment is old enough to close.
    pub fn due(&self) -> bool {
        self.opened.elapsed() >= self.rotate
    }

    /// The next segment (the caller swaps the writers; dropping the old one finishes its
    /// compressed stream), then what the budget no longer keeps goes.
    pub fn rotate(&mut self, store: &Store) -> std::io::Result<Writer<FileOut>> {
        let out = self.writer.open(store, chrono::Utc::now())?;
        self.opened = Instant::now();
        self.prune();
        Ok(out)
    }

    /// Deletes what the budget no longer keeps; a failure is logged, recording goes on.
    fn prune(&mut self) -> Vec<std::path::PathBuf> {
        match segments::prune(
            self.writer.dir(),
            self.budget,
            chrono::Utc::now(),
            &self.writer.current,
        ) {
            Ok(deleted) => {
                for d in &deleted {
                    tracing::info!("retention: deleted {}", d.display());
                }
                deleted
            }
            Err(e) => {
                tracing::warn!("retention: {e}");
                Vec::new()
            }
        }
    }
}
