//! `record`: the cluster's source events to a file, headless; and the `--record` tee of
//! the live view. One recorder loop for both.

use clap::Args;

use crate::cli::{LiveArgs, parse_duration, parse_size};
use std::process::ExitCode;

use crate::cli::Failure;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording to write (docs/recording-format.md), or a directory of segments (with
    /// --rotate, --retain or --max-size, or when it is a directory: docs/flight-recorder.md).
    #[arg(value_name = "FILE|DIR")]
    pub file: std::path::PathBuf,
    /// Record into the directory FILE|DIR, a new segment this often (default 1h when the
    /// directory is given alone).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub rotate: Option<std::time::Duration>,
    /// Delete segments that ended longer ago than this (e.g. 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retain: Option<std::time::Duration>,
    /// Keep the directory's segments under this size (e.g. 5GiB), deleting the oldest.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Recording a directory: executors whose pods are gone stay in memory (and in each
    /// segment's opening state) this long; the segments keep them for the retention.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub forget_after: std::time::Duration,
    /// Serve /healthz, /readyz and /metrics (Prometheus) on this address: a bare port
    /// (9090) is loopback only; 0.0.0.0:9090 in a pod.
    #[arg(long, value_name = "ADDR", value_parser = super::flight::parse_listen_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Stop after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Write a keyframe (the whole state, for instant seeking in replays) this often
    /// (default 5m; 15m in a directory, where each segment also opens with one).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub keyframe_every: Option<std::time::Duration>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub cluster: crate::cli::ClusterArgs,
    #[command(flatten)]
    pub watch: crate::cli::WatchArgs,
}

impl RecordArgs {
    /// Whether FILE|DIR is a directory of segments.
    fn segmented(&self) -> bool {
        self.rotate.is_some()
            || self.retain.is_some()
            || self.max_size.is_some()
            || self.file.is_dir()
    }
}

fn recording_header(conn: &crate::source::live::Connection) -> crate::record::Header {
    crate::record::Header::new(
        crate::source::clock::now(),
        conn.scope.describe(),
        conn.selector.clone(),
        conn.server.clone(),
    )
}

fn create_recording(
    path: &std::path::Path,
    conn: &crate::source::live::Connection,
    force: bool,
) -> Result<crate::record::Writer<crate::record::FileOut>, Failure> {
    crate::record::create(path, &recording_header(conn), force).map_err(|e| {
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
pub(crate) fn lock(
    path: &std::path::Path,
    dir: bool,
) -> Result<crate::record::lock::RecorderLock, Failure> {
    crate::record::lock::RecorderLock::acquire(path, dir)
        .map_err(|e| Failure::Runtime(e.to_string()))
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
    pub writer: crate::record::Writer<crate::record::FileOut>,
    pub store: crate::store::Store,
    keyframe_every: std::time::Duration,
    /// Rotating segments in a directory, when recording one.
    segments: Option<super::flight::Segmented>,
    metrics: Option<std::sync::Arc<super::flight::Metrics>>,
    /// Events and bytes of the segments closed before the current one.
    closed: (u64, u64),
    /// `/readyz` fails when the last complete LIST is older than this.
    stale_after: std::time::Duration,
    /// Executors whose pods are gone are kept in memory this long (a directory's recorder).
    forget_after: Option<std::time::Duration>,
    /// When the directory was last listed for `/metrics` (every 15 s, and at rotation).
    listed: Option<std::time::Instant>,
}

impl Recorder {
    pub(crate) fn new(
        writer: crate::record::Writer<crate::record::FileOut>,
        keyframe_every: std::time::Duration,
    ) -> Self {
        Self {
            writer,
            store: crate::store::Store::new(),
            keyframe_every: keyframe_every.max(std::time::Duration::from_secs(1)),
            segments: None,
            metrics: None,
            closed: (0, 0),
            stale_after: std::time::Duration::from_secs(120),
            forget_after: None,
            listed: None,
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
        let now = crate::source::clock::now();
        let ev = crate::source::SourceEvent::Forget {
            before: now - after,
            at: now,
        };
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
            m.publish(&self.store, events, bytes, dir, self.stale_after);
        }
        Ok(())
    }

    /// Records until the events end, `forward` (which gets every event after it is
    /// written) closes, `each_second` says stop, or `stop` completes.
    pub(crate) async fn run(
        &mut self,
        rx: &mut tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
        forward: Option<&tokio::sync::mpsc::Sender<crate::source::SourceEvent>>,
        mut each_second: impl FnMut(&Self) -> bool,
        stop: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
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
    conn: &crate::source::live::Connection,
    path: &std::path::Path,
    mut rx: tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
) -> Result<
    (
        tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
        tokio::task::JoinHandle<()>,
    ),
    Failure,
> {
    let lock = lock(path, false)?;
    let writer = create_recording(path, conn, false)?;
    let (tx, out) = tokio::sync::mpsc::channel(65_536);
    let task = tokio::spawn(async move {
        let _lock = lock;
        let mut rec = Recorder::new(writer, std::time::Duration::from_secs(300));
        let _ = rec
            .run(&mut rx, Some(&tx), |_| true, std::future::pending())
            .await;
    });
    Ok((out, task))
}

pub(crate) fn run(live_args: &LiveArgs, args: RecordArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    let segmented = args.segmented();
    if segmented {
        std::fs::create_dir_all(&args.file).map_err(|e| {
            Failure::Runtime(format!("cannot record in {}: {e}", args.file.display()))
        })?;
    }
    // One recorder per file or directory, before anything is truncated or written.
    let _lock = lock(&args.file, segmented)?;
    if !segmented {
        refuse_existing(Some(&args.file), args.force)?;
    }
    super::block_on(async move {
        let conn = super::connect(&opts).await?;
        let mut rec = if segmented {
            let budget = crate::record::segments::Budget {
                retain: args.retain.and_then(|d| chrono::Duration::from_std(d).ok()),
                max_bytes: args.max_size,
            };
            let rotate = args.rotate.unwrap_or(std::time::Duration::from_secs(3600));
            let (seg, writer, store) = super::flight::Segmented::start(
                &args.file,
                recording_header(&conn),
                rotate,
                budget,
            )?;
            let every = args
                .keyframe_every
                .unwrap_or(std::time::Duration::from_secs(900));
            let mut rec = Recorder::new(writer, every);
            rec.store = store;
            rec.segments = Some(seg);
            rec.forget_after = Some(args.forget_after);
            rec
        } else {
            Recorder::new(
                create_recording(&args.file, &conn, args.force)?,
                args.keyframe_every
                    .unwrap_or(std::time::Duration::from_secs(300)),
            )
        };
        // Not ready when the pods have not been listed for two relists and a timeout.
        rec.stale_after = 2 * opts.poll_interval + opts.timeout();
        if let Some(addr) = args.metrics_addr {
            let m = super::flight::Metrics::new();
            m.watch_credentials(conn.credentials.clone());
            super::flight::serve(addr, m.clone()).await?;
            rec.metrics = Some(m);
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel(65_536);
        let tasks = crate::source::live::spawn(&conn, opts.poll_interval, tx);
        let until = args.duration.map(|d| tokio::time::Instant::now() + d);
        // On a terminal, a spinner with the line; without one (CI, journald, a pipe), a
        // plain line a minute and the last one, never a `\r` flood.
        let spinner = std::cell::RefCell::new(super::progress::Progress::spinner(format!(
            "recording {}",
            args.file.display()
        )));
        let last_line = std::cell::Cell::new(None::<std::time::Instant>);
        let progress = |r: &Recorder, last: bool| {
            let (events, bytes) = r.totals();
            let view = r.store.view();
            let mut line = format!(
                "recording {}: {events} events, {} apps, {} KiB",
                args.file.display(),
                view.apps.len(),
                bytes / 1024
            );
            // Headless, this line is all an operator sees: a failing source is said in it.
            if let Some((kind, why)) = view.health.iter().find_map(|(k, h)| match h {
                crate::source::Health::Retrying { error } => {
                    Some((k, format!("retrying: {error}")))
                }
                crate::source::Health::Forbidden { permission } => {
                    Some((k, format!("forbidden: needs {permission}")))
                }
                _ => None,
            }) {
                line.push_str(&format!(" · {} {why}", kind.as_str()));
            }
            let mut spinner = spinner.borrow_mut();
            if last {
                spinner.clear();
                eprintln!("{line}");
            } else if spinner.shown() {
                spinner.set(line);
            } else if last_line
                .get()
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60))
            {
                last_line.set(Some(std::time::Instant::now()));
                eprintln!("{line}");
            }
        };
        let recorded = rec
            .run(
                &mut rx,
                None,
                |r| {
                    progress(r, false);
                    until.is_none_or(|u| tokio::time::Instant::now() < u)
                },
                super::wait_for_signal(),
            )
            .await;
        for t in tasks {
            t.abort();
        }
        while let Ok(ev) = rx.try_recv() {
            let _ = rec.writer.write(&ev);
        }
        recorded
            .and_then(|()| rec.writer.flush())
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", args.file.display())))?;
        progress(&rec, true);
        Ok(ExitCode::SUCCESS)
    })
}
