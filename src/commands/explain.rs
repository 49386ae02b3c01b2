//! `explain`: pods from a file or stdin, explained.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use spark_triage_core::classify::ClassifyOptions;
use spark_triage_core::explain::{explain_with, render_text};
use spark_triage_core::input;
use spark_triage_core::model::Time;
use spark_triage_core::version::SparkVersion;

use crate::failure::Failure;
use crate::output::{json, yaml};
use crate::redact;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Input file, or `-` for stdin.
    #[arg(value_name = "FILE|-")]
    pub file: Option<String>,
    /// An EventList (core/v1 or events.k8s.io/v1, JSON or YAML) to match to the pods.
    #[arg(long, value_name = "FILE")]
    pub events: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The executor container's name (spark.kubernetes.executor.podTemplateContainerName).
    /// Detected from each pod when not given.
    #[arg(long, value_name = "NAME")]
    pub spark_container: Option<String>,
    /// spark.kubernetes.executor.checkAllContainers (default: the app's Spark version's:
    /// true from 4.0, false before).
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
    pub check_all_containers: Option<bool>,
    /// The app's Spark version (e.g. 3.5.7): which Spark's semantics to follow. Default: each
    /// pod's spark-version label, else the newest the tool knows.
    #[arg(long, value_name = "X.Y[.Z]", value_parser = parse_spark_version)]
    pub spark_version: Option<SparkVersion>,
    /// Evaluate time-based rules at this RFC 3339 time instead of now (for reproducible output).
    #[arg(long, value_name = "RFC3339", hide = true)]
    pub now: Option<String>,
}

fn parse_spark_version(s: &str) -> Result<SparkVersion, String> {
    SparkVersion::parse(s).ok_or_else(|| format!("{s:?} is not a Spark version (e.g. 3.5.7, 4.0)"))
}

/// The output names `status` uses for the same things (`table` for the text a person
/// reads; `text`, this command's older name, still taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    #[value(alias = "text")]
    Table,
    Json,
    Yaml,
}

pub(crate) fn run(args: ExplainArgs) -> Result<ExitCode, Failure> {
    let file = match args.file {
        Some(f) => f,
        None if std::io::stdin().is_terminal() => {
            return Err(Failure::Usage(
                "explain needs a FILE, or `-` with a pod on stdin (e.g. kubectl get pod X -o json | spark-triage explain -)".into(),
            ));
        }
        None => "-".to_owned(),
    };
    let now: Time = match &args.now {
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|e| Failure::Usage(format!("--now {t:?}: {e}")))?
            .to_utc(),
        None => chrono::Utc::now(),
    };
    let origin = input::origin_name(&file);
    let mut objects = input::read_pods(&input::read_source(&file)?, &origin)?;
    if let Some(path) = &args.events {
        let events = input::read_events(&input::read_source(path)?, &input::origin_name(path))?;
        objects.events.extend(events.events);
        objects.skipped.extend(events.skipped);
        objects.invalid.extend(events.invalid);
    }
    for line in &objects.skipped {
        eprintln!("note: {}", redact::escape_controls(line));
    }
    for line in &objects.invalid {
        eprintln!("error: {}", redact::escape_controls(line));
    }
    let opts = ClassifyOptions {
        spark_container: args.spark_container,
        check_all_containers: args.check_all_containers,
        spark_version: args.spark_version,
    };
    let report = explain_with(&objects.pods, &objects.events, &objects.groups, &opts, now);
    match args.output {
        Output::Table => super::write_stdout(&render_text(&report))?,
        Output::Json => json::write(&report)?,
        Output::Yaml => super::write_stdout(&yaml::to_string(&report)?)?,
    }
    Ok(if objects.invalid.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
