//! `replay`: a recording in the live view, on a timeline.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use spark_triage_core::model::Time;

use crate::app::replay::Replay;
use crate::app::{App, Context, Mode, Msg, ViewSettings};
use crate::failure::Failure;
use crate::flags::ReadLimits;
use crate::record::{Recording, timeline};
use crate::settings::ReadOnly;
use crate::{app, tui};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording (plain or .zst), a directory of segments (`record DIR --rotate`), or
    /// a Spark event log (a file, an `eventlog_v2_*` directory, or a directory of them).
    #[arg(value_name = "FILE|DIR")]
    pub file: std::path::PathBuf,
    /// Open at this moment instead of the first failure: RFC 3339, a local time
    /// (2026-12-01 03:00, 03:00), before the end (-2h) or after the start (90s).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
    /// A directory: read from the segment holding this moment (default: --at's, else all).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub from: Option<String>,
    #[command(flatten)]
    pub limits: ReadLimits,
    /// Show times in UTC (default: local time; `z` toggles).
    #[arg(long)]
    pub utc: bool,
    /// The configuration file (default: $SPARK_TRIAGE_CONFIG, else
    /// $XDG_CONFIG_HOME/spark-triage/config.toml when it exists; docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// An app positioned in a recording (shared by `replay` and tests).
pub fn replay_app(rec: Recording, at: Option<Time>) -> app::App {
    let mut app = App::new(Context {
        context: if rec.header.is_converted() {
            format!("{} (Spark's words, no pods)", rec.header.server)
        } else {
            format!("recording of {}", rec.header.server)
        },
        scope: rec.header.scope.clone(),
        readonly: ReadOnly::On("a replay".to_owned()),
        mode: Mode::Replay,
    });
    let mut r = Replay::new(rec.events, rec.keyframes, rec.header.started_at);
    r.gaps = rec.gaps;
    // Without --at: the first failure (selected), or the end when nothing failed, never an
    // empty first instant.
    let (to, failure) = match at {
        Some(t) => (t, None),
        None => {
            let (t, f) = r.opening();
            (t, f.cloned())
        }
    };
    r.seek(&mut app.store, to);
    app.store.take_finished();
    app.replay = Some(r);
    if let Some(f) = failure {
        app.selected_app = Some(f.app);
        app.selected_exec = f.executor;
    }
    app::update(&mut app, Msg::Resize(80, 24));
    app
}

pub(crate) fn run(args: ReplayArgs, view: ViewSettings) -> Result<ExitCode, Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("replay needs a terminal; use `spark-triage status --recording FILE --at …` for output to a pipe".into()));
    }
    // A directory is read from the segment holding --from (else --at) on.
    let opened = timeline::open_recording(
        &args.file,
        &args.limits.reading(),
        args.from.as_deref().or(args.at.as_deref()),
        None,
    )?;
    let at = args
        .at
        .as_deref()
        .map(|a| timeline::moment(a, opened.rec.header.started_at, opened.end))
        .transpose()?;
    let app = replay_app(opened.rec, at);
    super::block_on(async move {
        let (_tx, rx) = tokio::sync::mpsc::channel(1);
        tui::run(app, rx, None, None, None, view)
            .await
            .map_err(|e| Failure::Runtime(format!("terminal: {e}")))?;
        Ok(ExitCode::SUCCESS)
    })
}
