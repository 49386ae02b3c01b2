//! `report`: the post-mortem of a recording (a file, or a directory of segments) or of
//! Spark's event logs (for runs nobody recorded).

use clap::{Args, ValueEnum};

use crate::flags::ReadLimits;
use std::process::ExitCode;

use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The recording (plain or .zst), a directory of segments (`record DIR --rotate`), or
    /// a Spark event log (a file, an `eventlog_v2_*` directory, or a directory of them:
    /// `spark.eventLog.dir`), in any codec Spark writes.
    #[arg(value_name = "FILE|DIR")]
    pub file: std::path::PathBuf,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = ReportOutput::Md)]
    pub output: ReportOutput,
    #[command(flatten)]
    pub window: crate::flags::WindowArgs,
    /// Only this application (name or id).
    #[arg(long, value_name = "APP")]
    pub app: Option<String>,
    #[command(flatten)]
    pub limits: ReadLimits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportOutput {
    Md,
    Json,
}

pub(crate) fn run(args: ReportArgs) -> Result<ExitCode, Failure> {
    let from = args.window.from()?;
    let window = |from, to| crate::output::report::Window {
        from,
        to,
        app: args.app.clone(),
    };
    // Streamed: a week of segments costs the memory of the state, not of the events.
    let (header, state, from, to) = crate::record::timeline::read_state(
        &args.file,
        args.limits.max_line,
        from.as_deref(),
        args.window.to.as_deref(),
        |f, t| window(f, t).state(),
    )?;
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let report = crate::output::report::from_state(&name, &header, &state, &window(from, to));
    if let Some(app) = &args.app
        && report.apps.is_empty()
    {
        return Err(Failure::Runtime(format!(
            "no application named {app:?} in {} in that window",
            args.file.display()
        )));
    }
    match args.output {
        ReportOutput::Md => super::write_stdout(&crate::output::report::markdown(&report))?,
        ReportOutput::Json => crate::output::json::write(&report)?,
    }
    Ok(ExitCode::SUCCESS)
}
