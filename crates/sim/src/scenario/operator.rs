//! The apps a scenario submits through a Spark operator: which operator, its restart
//! policy, and (kubeflow) the ScheduledSparkApplication whose run the app is.

use std::time::Duration;

use serde::Deserialize;

use super::{AppSpec, humantime_serde_opt, humantime_serde_req};
use crate::resource::Resource;

impl OperatorSpec {
    /// The object's name: `name`, else the app's; a schedule's run is
    /// `<schedule>-<unix nanoseconds of its start>`, as kubeflow names its runs at its
    /// default precision (`epoch`: the simulated time at scenario time 0).
    pub fn object_name(&self, app: &AppSpec, epoch: chrono::DateTime<chrono::Utc>) -> String {
        match &self.scheduled {
            Some(sc) => {
                let start = chrono::Duration::from_std(app.start.unwrap_or_default());
                format!(
                    "{}-{}",
                    sc.name,
                    (epoch + start.unwrap_or_default()).timestamp()
                )
            }
            None => self.name.clone().unwrap_or_else(|| app.name.clone()),
        }
    }
}

impl OperatorKind {
    /// The resource its objects are stored as.
    pub fn resource(self) -> Resource {
        match self {
            Self::Kubeflow => Resource::KubeflowSparkApps,
            Self::Apache => Resource::ApacheSparkApps,
        }
    }
}

/// An app submitted as an operator's `SparkApplication` (docs/simulator.md).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OperatorSpec {
    /// `kubeflow` (`sparkoperator.k8s.io/v1beta2`) or `apache` (`spark.apache.org/v1`).
    pub kind: OperatorKind,
    /// The object's name (default the app's name).
    #[serde(default)]
    pub name: Option<String>,
    /// `Never`, `OnFailure` or `Always` (default `Never`).
    #[serde(default, rename = "restartPolicy")]
    pub restart_policy: Option<String>,
    /// Reruns after a failed run (kubeflow `onFailureRetries`, Apache `maxRestartAttempts`).
    #[serde(default, rename = "onFailureRetries")]
    pub on_failure_retries: Option<u32>,
    /// Resubmissions after a failed submission (kubeflow `onSubmissionFailureRetries`).
    #[serde(default, rename = "onSubmissionFailureRetries")]
    pub on_submission_failure_retries: Option<u32>,
    /// The wait before a rerun or a resubmission (default 10s).
    #[serde(default, rename = "retryInterval", with = "humantime_serde_opt")]
    pub retry_interval: Option<Duration>,
    /// The run is one of a kubeflow `ScheduledSparkApplication`'s (docs/simulator.md).
    #[serde(default)]
    pub scheduled: Option<ScheduledSpec>,
}

/// A kubeflow `ScheduledSparkApplication` whose run the app is. The simulator plays one
/// run: the schedule's status names it, and the next run due is never started (as the
/// operator skips it under `Forbid` while the run lasts, or under no `concurrencyPolicy`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScheduledSpec {
    /// The schedule object's name (its run is `<name>-<unix nanoseconds>`).
    pub name: String,
    /// The interval (`spec.schedule: "@every 10s"`).
    #[serde(with = "humantime_serde_req")]
    pub every: Duration,
    /// `Forbid`, or none (the only policies under which the operator starts no second run
    /// while the first exists).
    #[serde(default, rename = "concurrencyPolicy")]
    pub concurrency_policy: Option<String>,
}

/// Which operator.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OperatorKind {
    Kubeflow,
    Apache,
}
