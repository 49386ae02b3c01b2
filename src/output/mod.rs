//! What the commands print: the `status` and `report` documents (as JSON, YAML, tables,
//! markdown), JSON written to stdout, and the progress line on stderr.

use serde::Serialize;
use spark_triage_core::model::OperatorApp;

use crate::store::{AppRecord, Natural};

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

impl AppName for status::AppStatus {
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

/// What the operator's object says.
#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct OperatorStatus {
    /// `sparkoperator.k8s.io/v1beta2` or `spark.apache.org/v1`.
    pub api_version: String,
    /// `SparkApplication`.
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
            describe: o.describe_command(),
        }
    }
}
