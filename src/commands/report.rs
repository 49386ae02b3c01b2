//! `report`: the post-mortem of a recording.

use clap::{Args, ValueEnum};

use crate::cli::ReadLimits;
use std::process::ExitCode;

use crate::cli::Failure;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The recording (plain or .zst).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = ReportOutput::Md)]
    pub output: ReportOutput,
    #[command(flatten)]
    pub limits: ReadLimits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportOutput {
    Md,
    Json,
}

pub(crate) fn run(args: ReportArgs) -> Result<ExitCode, Failure> {
    let rec = super::open_recording(&args.file, args.limits)?;
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let report = crate::report::build(&name, &rec);
    match args.output {
        ReportOutput::Md => super::write_stdout(&crate::report::markdown(&report))?,
        ReportOutput::Json => super::json_out::write(&report)?,
    }
    Ok(ExitCode::SUCCESS)
}
