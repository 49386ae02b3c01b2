//! `report`: the post-mortem of a recording (a file, or a directory of segments) or of
//! Spark's event logs (for runs nobody recorded).

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::failure::Failure;
use crate::flags::{ReadLimits, WindowArgs};
use crate::fleet::{Place, check_cluster};
use crate::output::fleet::{Filter, build, markdown};
use crate::output::report::Window;
use crate::output::{AppOrder, json, report, yaml};
use crate::record::{Recording, timeline};
use crate::storage::remote;
use crate::{eventlog, flags, redact};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The recording (plain or .zst), a directory of segments (`record DIR --rotate`), or
    /// a Spark event log (a file, an `eventlog_v2_*` directory, or a directory of them:
    /// `spark.eventLog.dir`), in any codec Spark writes.
    #[arg(value_name = "FILE|DIR", required_unless_present_any = ["history_server", "tables"])]
    pub file: Option<std::path::PathBuf>,
    /// Read the applications from a Spark History Server's REST API instead
    /// (`http://history:18080`; credentials in the URL are used, never shown): `--app`,
    /// or the newest 20.
    #[arg(long, value_name = "URL", conflicts_with = "file")]
    pub history_server: Option<String>,
    /// Report on the fleet tables under this directory or object-store URL instead
    /// (`record --tables`, `export --tables`; docs/fleet.md): every cluster's applications
    /// over the window (default --since 30d), read a partition at a time.
    #[arg(long, value_name = "DIR|URL", conflicts_with_all = ["file", "history_server", "event_log"])]
    pub tables: Option<String>,
    /// With --tables: only this cluster's partitions.
    #[arg(long, value_name = "NAME", requires = "tables")]
    pub cluster: Option<String>,
    /// Spark's event log of the same run, read beside the recording (a file, an
    /// `eventlog_v2_*` directory, `spark.eventLog.dir`, or its URL: s3a://…): it fills the
    /// executors the recording missed (those that ended before it started); the recording
    /// adds pods, nodes and events. Only the apps that ran during the recording are taken.
    #[arg(long, value_name = "PATH|URL", requires = "file")]
    pub event_log: Option<std::path::PathBuf>,
    /// How long one request to the History Server may take.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = flags::parse_timeout, requires = "history_server")]
    pub request_timeout: std::time::Duration,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = ReportOutput::Md)]
    pub output: ReportOutput,
    /// Also draw each app's executors over time into this SVG file (a lane per executor:
    /// registered, busy, its end and cause; the stage attempts its losses added), from the
    /// apps' event logs. Not with --tables or --history-server.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tables", "history_server"])]
    pub svg: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub window: WindowArgs,
    /// Only this application (name or id).
    #[arg(long, value_name = "APP")]
    pub app: Option<String>,
    /// The order of the applications: the most trouble first (the live view's), or by name.
    #[arg(long, value_enum, default_value_t = AppOrder::Trouble)]
    pub sort: AppOrder,
    #[command(flatten)]
    pub limits: ReadLimits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportOutput {
    Md,
    Json,
    Yaml,
}

/// `report --tables`: the fleet report over the window, now back (default 30 days).
fn fleet(args: &ReportArgs, url: &str) -> Result<ExitCode, Failure> {
    if let Some(c) = &args.cluster {
        check_cluster(c).map_err(|e| Failure::Usage(format!("--cluster {e}")))?;
    }
    // This machine's clock: no cluster is asked (the tables' times are the clusters').
    let now = chrono::Utc::now();
    let long_ago = now - chrono::Duration::days(3660);
    let at = |s: &str| timeline::moment(s, long_ago, now);
    let since = at(args.window.from()?.as_deref().unwrap_or("-30d"))?;
    let until = args
        .window
        .to
        .as_deref()
        .map(at)
        .transpose()?
        .unwrap_or(now);
    let reading = args.limits.reading();
    let place = Place::open(url, &reading.store)?;
    // A mistyped path is said, not reported on as an empty fleet.
    if let Some(dir) = place.local_dir()
        && !dir.is_dir()
    {
        return Err(Failure::Runtime(format!(
            "--tables {}: no such directory",
            place.shown
        )));
    }
    let filter = Filter {
        since,
        until,
        cluster: args.cluster.clone(),
        app: args.app.clone(),
    };
    let report = super::block_on(async move {
        build(&place, &filter)
            .await
            .map_err(|e| Failure::Runtime(redact::escape_controls(&e).into_owned()))
    })?;
    if let Some(app) = &args.app
        && report.apps.is_empty()
    {
        return Err(Failure::Runtime(format!(
            "no application named {app:?} in the tables at {} in that window",
            report.source
        )));
    }
    match args.output {
        ReportOutput::Md => super::write_stdout(&markdown(&report))?,
        ReportOutput::Json => json::write(&report)?,
        ReportOutput::Yaml => super::write_stdout(&yaml::to_string(&report)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run(args: ReportArgs) -> Result<ExitCode, Failure> {
    if let Some(url) = &args.tables {
        return fleet(&args, url);
    }
    let from = args.window.from()?;
    let window = |from, to| Window {
        from,
        to,
        app: args.app.clone(),
    };
    let (name, (header, state, from, to)) = match (&args.file, &args.history_server) {
        (_, Some(url)) => {
            let rec = Recording::from(eventlog::from_history_server(
                url,
                args.app.as_deref(),
                args.request_timeout,
            )?);
            for d in &rec.damaged {
                eprintln!("warning: {}", redact::escape_controls(d));
            }
            let name = rec
                .header
                .converted_from()
                .map_or_else(|| remote::shown_location(url), str::to_owned);
            let read = timeline::read_state_of(
                rec,
                args.limits.max_line,
                from.as_deref(),
                args.window.to.as_deref(),
                |f, t| window(f, t).state(),
            )?;
            (name, read)
        }
        (Some(file), None) => {
            let mut reading = args.limits.reading();
            reading.app = args.app.clone();
            let logs = match args.event_log.as_deref() {
                Some(l) => {
                    let mut logs = timeline::event_logs(l, &reading)?;
                    // The logs' own damage, said as theirs.
                    let shown = remote::shown_location(&l.to_string_lossy());
                    for d in logs.damaged.drain(..) {
                        eprintln!(
                            "warning: --event-log {shown}: {}",
                            redact::escape_controls(&d)
                        );
                    }
                    Some(logs)
                }
                None => None,
            };
            // Streamed: a week of segments costs the memory of the state, not of the events.
            let read = timeline::read_state_beside(
                file,
                &reading,
                logs,
                from.as_deref(),
                args.window.to.as_deref(),
                |f, t| window(f, t).state(),
            )?;
            let name = if remote::is_url(&file.to_string_lossy()) {
                remote::shown_location(&file.to_string_lossy())
            } else {
                file.file_name().map_or_else(
                    || file.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                )
            };
            let name = match &args.event_log {
                Some(l) => format!(
                    "{name}, with the event log {}",
                    remote::shown_location(&l.to_string_lossy())
                ),
                None => name,
            };
            (name, read)
        }
        (None, None) => {
            return Err(Failure::Usage(
                "report wants a FILE|DIR or --history-server URL".into(),
            ));
        }
    };
    let report = report::from_state(&name, &header, &state, &window(from, to)).sorted(args.sort);
    if let Some(app) = &args.app
        && report.apps.is_empty()
    {
        return Err(Failure::Runtime(format!(
            "no application named {app:?} in {name} in that window"
        )));
    }
    if let Some(path) = &args.svg {
        let drawing = report::svg(&state, &report).ok_or_else(|| {
            Failure::Runtime(format!(
                "--svg: no app in {name} has executors to draw (they come from its event log: \
                 report EVENTLOG, or --event-log beside a recording)"
            ))
        })?;
        std::fs::write(path, drawing)
            .map_err(|e| Failure::Runtime(format!("--svg {}: {e}", path.display())))?;
    }
    match args.output {
        ReportOutput::Md => super::write_stdout(&report::markdown(&report))?,
        ReportOutput::Json => json::write(&report)?,
        ReportOutput::Yaml => super::write_stdout(&yaml::to_string(&report)?)?,
    }
    Ok(ExitCode::SUCCESS)
}
