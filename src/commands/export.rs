//! `export DIR`: a directory's segments over a window, as one tar on stdout, to take a
//! flight recorder's evidence off its pod (the image has no shell and no tar):
//! `kubectl exec -n spark-triage deploy/spark-triage-recorder -- spark-triage export /data
//! --since 24h > night.tar`, then `spark-triage replay night.tar` (docs/flight-recorder.md).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;

use crate::failure::Failure;
use crate::flags::{ReadLimits, WindowArgs};
use crate::fleet::rows::Ready;
use crate::fleet::{Place, TablesWriter, rows};
use crate::output::report::Window;
use crate::record::{ReadError, segments, timeline};
use crate::store::MAX_KEPT;
use crate::{fleet, redact};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The directory of segments (`record DIR --rotate`); with --tables, any recording (a
    /// file or directory) or a Spark event log (a file, directory or URL).
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
    #[command(flatten)]
    pub window: WindowArgs,
    /// Write the tar here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE", conflicts_with = "tables")]
    pub out: Option<std::path::PathBuf>,
    /// Write the fleet tables (Parquet, docs/fleet.md) of the window under this directory or
    /// object-store URL instead of a tar.
    #[arg(long, value_name = "DIR|URL", requires = "cluster_name")]
    pub tables: Option<String>,
    /// The cluster's name in the tables' partitions: the name its recorder writes with, so
    /// rows it already wrote are not written twice.
    #[arg(long, value_name = "NAME", requires = "tables")]
    pub cluster_name: Option<String>,
    #[command(flatten)]
    pub limits: ReadLimits,
}

/// `export --tables`: the window's rows, each once.
fn tables(args: &ExportArgs, url: &str) -> Result<ExitCode, Failure> {
    let cluster = args.cluster_name.clone().unwrap_or_default();
    fleet::check_cluster(&cluster).map_err(|e| Failure::Usage(format!("--cluster-name {e}")))?;
    let reading = args.limits.reading();
    let place = Place::open(url, &reading.store)?;
    let (_, state, _, _) = timeline::read_state_beside(
        &args.dir,
        &reading,
        None,
        args.window.from()?.as_deref(),
        args.window.to.as_deref(),
        |from, to| {
            Window {
                from,
                to,
                app: None,
            }
            .state()
        },
    )?;
    let rows = rows::of(state.store.view(), |_, _| Ready::Yes);
    let trimmed: usize = state
        .store
        .view()
        .apps
        .values()
        .map(|a| a.trimmed.executors)
        .sum();
    // The rows are all the tables need: the store goes before they are encoded.
    drop(state);
    if trimmed > 0 {
        eprintln!(
            "warning: tables: {trimmed} executors that ended first have no executor_endings row \
             (a store keeps {} executors whole); their apps' app_runs rows count them",
            MAX_KEPT
        );
    }
    let shown = place.shown.clone();
    let done = super::block_on(async move {
        Ok(TablesWriter::new(place, cluster)
            .write(&rows, chrono::Utc::now())
            .await)
    })?;
    for f in &done.unreadable {
        eprintln!(
            "warning: tables: cannot read {}",
            redact::escape_controls(f)
        );
    }
    if let Some(e) = &done.error {
        return Err(Failure::Runtime(format!(
            "tables: {e} ({} rows were written; running the export again writes the rest)",
            done.rows
        )));
    }
    eprintln!(
        "exported {} rows in {} files ({} bytes) to {shown}; {} were there already",
        done.rows, done.files, done.bytes, done.skipped
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run(args: ExportArgs) -> Result<ExitCode, Failure> {
    if let Some(url) = &args.tables {
        return tables(&args, url);
    }
    let all = segments::list(&args.dir).map_err(|source| ReadError::Io {
        path: args.dir.display().to_string(),
        source,
    })?;
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Err(ReadError::NoSegments {
            path: args.dir.display().to_string(),
        }
        .into());
    };
    let end = timeline::last_written(last);
    let resolve = |s: Option<&str>| s.map(|a| timeline::moment(a, first.start, end)).transpose();
    let from = resolve(args.window.from()?.as_deref())?;
    let to = resolve(args.window.to.as_deref())?;
    let chosen = segments::select(&all, from, to);
    let write = |out: &mut dyn std::io::Write| -> std::io::Result<()> {
        let mut tar = tar::Builder::new(out);
        for s in chosen {
            let file = std::fs::File::open(&s.path)?;
            let meta = file.metadata()?;
            // The segment being written grows: what was flushed when it was opened goes.
            let len = meta.len();
            let mut h = tar::Header::new_gnu();
            h.set_size(len);
            h.set_mode(0o644);
            h.set_mtime(
                meta.modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs()),
            );
            let name = s.path.file_name().unwrap_or_default();
            tar.append_data(&mut h, name, std::io::Read::take(file, len))?;
        }
        tar.finish()
    };
    match &args.out {
        Some(p) => {
            let mut f = std::fs::File::create(p)
                .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", p.display())))?;
            write(&mut f)
        }
        None if std::io::stdout().is_terminal() => {
            return Err(Failure::Usage(
                "export writes a tar: redirect it (> night.tar) or use -o FILE".into(),
            ));
        }
        None => write(&mut std::io::stdout().lock()),
    }
    .map_err(|e| Failure::Runtime(format!("cannot export {}: {e}", args.dir.display())))?;
    eprintln!(
        "exported {} segment{} of {}",
        chosen.len(),
        if chosen.len() == 1 { "" } else { "s" },
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
