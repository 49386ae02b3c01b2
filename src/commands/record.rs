//! `record`: the cluster's source events to a file, headless; and the `--record` tee of
//! the live view. One recorder loop for both.

use std::process::ExitCode;

use clap::Args;

use crate::evidence::tails::Tails;
use crate::failure::Failure;
use crate::flags::{ClusterArgs, LiveArgs, WatchArgs, parse_duration, parse_size};
use crate::fleet;
use crate::fleet::{Feed, Place};
use crate::output::progress::Progress;
use crate::publish::events::{Planned, Planner};
use crate::publish::metrics::Metrics;
use crate::publish::{events, metrics};
use crate::record::lock::RecorderLock;
use crate::record::recorder::{
    Recorder, Segmented, create_recording, lock, recording_header, refuse_existing,
};
use crate::record::segments::Retention;
use crate::source::connection::Connection;
use crate::source::{Health, LOG_TAIL_LINES, SourceEvent, live};
use crate::storage::remote::StoreOptions;

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
    #[arg(long, value_name = "ADDR", value_parser = metrics::parse_listen_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Write each executor or app verdict of warning or error severity as a Kubernetes
    /// Event on the app's driver pod (one per driver and reason, with a count; needs create,
    /// get and update on events: deploy/components/events).
    #[arg(long)]
    pub emit_events: bool,
    /// Write the fleet tables (executor_endings, app_runs, pending_waits: Parquet,
    /// docs/fleet.md) under this directory or object-store URL (s3://bucket/spark-triage,
    /// gs://…, abfss://…), partitioned by cluster and date, every --tables-every.
    #[arg(long, value_name = "DIR|URL")]
    pub tables: Option<String>,
    /// How often the tables get their new rows (one file per table and date each time).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration, requires = "tables")]
    pub tables_every: std::time::Duration,
    /// The cluster's name in the tables' partitions (default: the kube context's name;
    /// needed in a pod, where the context is "in-cluster" in every cluster).
    #[arg(long, value_name = "NAME", requires = "tables")]
    pub cluster_name: Option<String>,
    /// An object store's setting, for --tables and --event-log-dir at a URL: KEY=VALUE,
    /// repeated (endpoint=http://127.0.0.1:9000, region=eu-west-1, …). The clouds' usual
    /// environment (AWS_*, AWS_PROFILE, GOOGLE_*, AZURE_*) is read too. Values are never shown.
    #[arg(long = "store-option", value_name = "KEY=VALUE", value_parser = StoreOptions::parse_option)]
    pub store_options: Vec<(String, String)>,
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
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
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

pub(crate) fn run(live_args: &LiveArgs, args: RecordArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    let segmented = args.segmented();
    let (_lock, store, place) = set_up(&args, segmented)?;
    super::block_on(async move {
        let mut conn = super::connect(&opts).await?;
        conn.extra = live_args.event_logs(&store);
        let mut rec = open_recorder(&args, &conn, segmented).await?;
        let mut sources = start_sources(&args, &conn, &mut rec, place)?;
        let progress = progress_line(&args);
        let recorded = record_until_stopped(&args, &conn, &mut rec, &mut sources, &progress).await;
        close(&args, &conn, rec, sources, recorded, &progress).await
    })
}

/// Before connecting: the directory made, the lock taken (one recorder per file or
/// directory), FILE refused when it exists, the cluster's name checked, the tables' place
/// opened.
fn set_up(
    args: &RecordArgs,
    segmented: bool,
) -> Result<(RecorderLock, StoreOptions, Option<Place>), Failure> {
    if segmented {
        std::fs::create_dir_all(&args.file).map_err(|e| {
            Failure::Runtime(format!("cannot record in {}: {e}", args.file.display()))
        })?;
    }
    // One recorder per file or directory, before anything is truncated or written.
    let locked = lock(&args.file, segmented)?;
    if !segmented {
        refuse_existing(Some(&args.file), args.force)?;
    }
    if let Some(name) = &args.cluster_name {
        fleet::check_cluster(name).map_err(|e| Failure::Usage(format!("--cluster-name {e}")))?;
    }
    let store = StoreOptions {
        options: args.store_options.clone(),
        timeout: None,
    };
    let place = args
        .tables
        .as_deref()
        .map(|t| Place::open(t, &store))
        .transpose()?;
    Ok((locked, store, place))
}

/// The recorder on the connection: a directory's segments (resuming its state) or one
/// file, and /metrics when asked for.
async fn open_recorder(
    args: &RecordArgs,
    conn: &Connection,
    segmented: bool,
) -> Result<Recorder, Failure> {
    let mut rec = if segmented {
        let budget = Retention {
            retain: args.retain.and_then(|d| chrono::Duration::from_std(d).ok()),
            max_bytes: args.max_size,
        };
        let rotate = args.rotate.unwrap_or(std::time::Duration::from_secs(3600));
        let (seg, writer, store) =
            Segmented::start(&args.file, recording_header(conn), rotate, budget)?;
        let every = args
            .keyframe_every
            .unwrap_or(std::time::Duration::from_secs(900));
        let mut rec = Recorder::new(writer, every, conn.clock.clone());
        rec.store = store;
        rec.segments = Some(seg);
        rec.forget_after = Some(args.forget_after);
        rec
    } else {
        let mut rec = Recorder::new(
            create_recording(&args.file, conn, args.force)?,
            args.keyframe_every
                .unwrap_or(std::time::Duration::from_secs(300)),
            conn.clock.clone(),
        );
        rec.file = Some(args.file.clone());
        rec
    };
    rec.stale_after = conn.stale_after();
    if let Some(addr) = args.metrics_addr {
        let m = Metrics::new();
        m.watch_credentials(conn.credentials.clone());
        // Endings in the state resumed from the directory were counted by the run that
        // recorded them.
        m.verdicts.resumed(rec.store.view());
        metrics::serve(addr, m.clone()).await?;
        rec.metrics = Some(m);
    }
    Ok(rec)
}

/// --emit-events: the planner, the channel to the Events writer, when it last planned.
type Events = (
    Planner,
    tokio::sync::mpsc::Sender<Vec<Planned>>,
    std::time::Instant,
);

/// What feeds the recorder and what it feeds, once the sources are started.
struct Sources {
    /// The source events.
    rx: tokio::sync::mpsc::Receiver<SourceEvent>,
    /// The sources' tasks and the Events writer's.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    events: Option<Events>,
    /// --tables: the rows' feed.
    tables: Option<Feed>,
    /// The rows' cluster.
    cluster: String,
}

/// The sources started (the log tails with them), the Events writer (--emit-events) and
/// the tables' feed (--tables).
fn start_sources(
    args: &RecordArgs,
    conn: &Connection,
    rec: &mut Recorder,
    place: Option<Place>,
) -> Result<Sources, Failure> {
    let (tx, rx) = tokio::sync::mpsc::channel(65_536);
    // The log tails of executors that end badly, as the live view keeps them.
    rec.tails = Some(Tails::new(
        conn.client.clone(),
        &tx,
        LOG_TAIL_LINES,
        conn.clock.clone(),
    ));
    let mut tasks = live::spawn(conn, tx);
    // --emit-events: planned every 5 s from the store, written by their own task.
    let events = args.emit_events.then(|| {
        let (etx, erx) = tokio::sync::mpsc::channel(16);
        tasks.push(events::spawn_writer(conn.client.clone(), erx));
        (Planner::default(), etx, std::time::Instant::now())
    });
    // --tables: rows planned every --tables-every from the store, written by their task.
    // In a pod every cluster's context is "in-cluster": its tables need a name.
    if place.is_some() && args.cluster_name.is_none() && conn.context == "in-cluster" {
        return Err(Failure::Usage(
            "--tables in a pod needs --cluster-name NAME (the context is \"in-cluster\" \
             in every cluster: their rows would mix)"
                .into(),
        ));
    }
    // The rows' cluster: a rerun from the recording must write under the same name.
    let cluster = args
        .cluster_name
        .clone()
        .unwrap_or_else(|| fleet::cluster_of_context(&conn.context));
    let tables = place.map(|place| {
        Feed::start(
            place,
            cluster.clone(),
            args.tables_every,
            rec.metrics.clone(),
        )
    });
    rec.hold = tables.as_ref().map(Feed::hold);
    Ok(Sources {
        rx,
        tasks,
        events,
        tables,
        cluster,
    })
}

/// The recorder's line (`last`: the closing one).
fn progress_line(args: &RecordArgs) -> impl Fn(&Recorder, bool) + '_ {
    // On a terminal, a spinner with the line; without one (CI, journald, a pipe), a
    // plain line a minute and the last one, never a `\r` flood.
    let spinner = std::cell::RefCell::new(Progress::spinner(format!(
        "recording {}",
        args.file.display()
    )));
    let last_line = std::cell::Cell::new(None::<std::time::Instant>);
    move |r: &Recorder, last: bool| {
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
            Health::Retrying { error } => Some((k, format!("retrying: {error}"))),
            Health::Forbidden { permission } => Some((k, format!("forbidden: needs {permission}"))),
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
    }
}

/// The recorder's loop, until --duration or a signal: each second the line, the Events
/// due, the tables' rows.
async fn record_until_stopped(
    args: &RecordArgs,
    conn: &Connection,
    rec: &mut Recorder,
    sources: &mut Sources,
    progress: &impl Fn(&Recorder, bool),
) -> std::io::Result<()> {
    let Sources {
        rx, events, tables, ..
    } = sources;
    let until = args.duration.map(|d| tokio::time::Instant::now() + d);
    rec.run(
        rx,
        None,
        |r| {
            progress(r, false);
            if let Some((planner, etx, last)) = events.as_mut()
                && last.elapsed() >= std::time::Duration::from_secs(5)
            {
                *last = std::time::Instant::now();
                let due = planner.plan(r.store.view(), *last);
                // A full channel: the writer is behind; the next round plans again.
                if !due.is_empty() && etx.try_send(due).is_err() {
                    planner.forget_sent();
                }
            }
            if let Some(t) = tables.as_mut() {
                t.each_second(r.store.view(), conn.clock.now());
            }
            until.is_none_or(|u| tokio::time::Instant::now() < u)
        },
        super::wait_for_signal(),
    )
    .await
}

/// The close: the sources stopped, what they sent written, the recording flushed, the
/// last line, the tables' last rows.
async fn close(
    args: &RecordArgs,
    conn: &Connection,
    mut rec: Recorder,
    sources: Sources,
    recorded: std::io::Result<()>,
    progress: &impl Fn(&Recorder, bool),
) -> Result<ExitCode, Failure> {
    let Sources {
        mut rx,
        tasks,
        tables,
        cluster,
        ..
    } = sources;
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
    // The rows not written yet, settled or not: the recording is closed.
    if let Some(t) = tables
        && !t.finish(rec.store.view(), conn.clock.now()).await
    {
        // The recording is whole; the tables miss rows (a rerun of `export --tables`
        // on it writes them).
        return Err(Failure::Runtime(format!(
            "tables: the last rows were not written (see the warnings above); {} is whole: \
             `spark-triage export {} --tables {} --cluster-name {cluster}` writes them",
            args.file.display(),
            args.file.display(),
            args.tables.as_deref().unwrap_or("URL"),
        )));
    }
    Ok(ExitCode::SUCCESS)
}
