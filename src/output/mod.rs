//! What the commands print: the `status` and `report` documents (as JSON, YAML, tables,
//! markdown), JSON written to stdout, and the progress line on stderr.

use serde::Serialize;
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model::{OperatorApp, Time, fmt_time};

use crate::store::{AppRecord, Natural, Snapshot};

pub mod cost;
pub mod fleet;
pub mod json;
pub mod progress;
pub mod report;
pub mod status;
pub mod yaml;

/// The order of the applications in a listing (`--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AppOrder {
    /// The most trouble first: the app verdict's severity, then failures, missing
    /// executors, waiting executors, then the name (the live view's order).
    #[default]
    Trouble,
    /// By namespace, name and id.
    Name,
}

/// An application in a listing, by name: (namespace, name, id).
pub trait AppName {
    fn app_key(&self) -> (&str, Option<&str>, &str);
}

impl AppName for AppRecord {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl AppName for status::AppStatus<'_> {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl AppName for report::AppReport<'_> {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl<T: AppName> AppName for std::sync::Arc<T> {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (**self).app_key()
    }
}

impl<T: AppName> AppName for &T {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (**self).app_key()
    }
}

impl AppOrder {
    /// Re-sorts a listing made in trouble order when the name order was asked for.
    pub fn apply<T: AppName>(self, apps: &mut [T]) {
        if self == Self::Name {
            apps.sort_by_cached_key(|a| {
                let (ns, name, id) = a.app_key();
                (
                    Natural(ns.to_owned()),
                    name.map(|n| Natural(n.to_owned())),
                    Natural(id.to_owned()),
                )
            });
        }
    }
}

/// What a namespace keeps that nobody reads (`drivers-kept`): said beside the apps, not
/// as one of them.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Housekeeping {
    pub namespace: String,
    pub code: Code,
    pub severity: Severity,
    pub summary: String,
    pub hint: String,
    /// Finished driver pods still present.
    pub finished_driver_pods: usize,
    /// When the first of them ended (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_ended_at: Option<String>,
}

/// The namespaces' housekeeping findings at `now` (the cluster's clock).
pub fn housekeeping(snap: &Snapshot, now: Option<Time>) -> Vec<Housekeeping> {
    let Some(now) = now.or(snap.now) else {
        return Vec::new();
    };
    snap.housekeeping(now)
        .into_iter()
        .map(|(k, f)| Housekeeping {
            namespace: k.namespace,
            code: f.code,
            severity: f.severity,
            summary: f.summary,
            hint: f.hint,
            finished_driver_pods: k.count,
            oldest_ended_at: k.oldest.map(|t| fmt_time(&t)),
        })
        .collect()
}

/// What the operator's object says.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct OperatorStatus {
    /// `sparkoperator.k8s.io/v1beta2` or `spark.apache.org/v1`.
    pub api_version: String,
    /// `SparkApplication`, or kubeflow's `ScheduledSparkApplication` (its state is its
    /// `scheduleState`, its phase `running` while it schedules).
    pub kind: &'static str,
    /// The object's name (its namespace is the app's).
    pub name: String,
    /// The operator's own state name, verbatim (`SUBMISSION_FAILED`, `SchedulingFailure`).
    pub state: String,
    /// That state in the tool's words (`submission-failed`, `pending-rerun`, …).
    pub phase: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_attempts: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_attempts: Option<i64>,
    /// A ScheduledSparkApplication's next run due (RFC 3339; in the past while runs are
    /// skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
    /// A ScheduledSparkApplication's last run (its SparkApplication's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run_name: Option<String>,
    /// The command that shows it whole (its events too).
    pub describe: String,
}

impl OperatorStatus {
    pub fn of(o: &OperatorApp) -> Self {
        Self {
            api_version: format!("{}/{}", o.kind.group(), o.kind.version()),
            kind: o.kind.kind(),
            name: o.name.to_string(),
            state: o.state.to_string(),
            phase: o.phase.as_str(),
            submission_attempts: o.submission_attempts,
            execution_attempts: o.execution_attempts,
            next_run: o
                .schedule
                .as_ref()
                .and_then(|s| s.next_run)
                .map(|t| fmt_time(&t)),
            last_run_name: o
                .schedule
                .as_ref()
                .and_then(|s| s.last_run_name.as_ref())
                .map(ToString::to_string),
            describe: o.describe_command(),
        }
    }
}
