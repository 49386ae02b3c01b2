//! The operators' application objects: kubeflow's `SparkApplication`
//! (`sparkoperator.k8s.io/v1beta2`) and Apache's (`spark.apache.org/v1`). For an
//! application submitted through an operator they are the only witness before its driver
//! pod exists (a submission refused, an admission awaited, a rerun scheduled). Projected
//! like pods: only what diagnosis reads, from the JSON the API serves, never failing.
//!
//! Ref (the documented API, not copied files): kubeflow/spark-operator
//! `api/v1beta2/sparkapplication_types.go` (`status.applicationState.{state,errorMessage}`,
//! `submissionAttempts`, `executionAttempts`, `driverInfo.podName`, `sparkApplicationId`,
//! `lastSubmissionAttemptTime`, `terminationTime`, `spec.restartPolicy`); the pod label
//! `sparkoperator.k8s.io/app-name`. apache/spark-kubernetes-operator `spark-operator-api`
//! (`status.currentState.{currentStateSummary,message,lastTransitionTime}`,
//! `status.stateTransitionHistory`, `status.currentAttemptSummary.attemptInfo.id`,
//! `spec.applicationTolerations.restartConfig.{restartPolicy,maxRestartAttempts}`); the pod
//! label `spark.operator/spark-app-name`. Kueue's `kueue.x-k8s.io/queue-name` label.

use serde::{Deserialize, Serialize};

use super::{Text, Time, wire};

mod schedule;

pub use schedule::{MAX_RUNS, Schedule};

/// Which operator's object.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum OperatorKind {
    /// `sparkapplications.sparkoperator.k8s.io` (v1beta2): the kubeflow spark-operator.
    Kubeflow,
    /// `sparkapplications.spark.apache.org` (v1): Apache's spark-kubernetes-operator.
    Apache,
    /// `scheduledsparkapplications.sparkoperator.k8s.io` (v1beta2): kubeflow's cron of
    /// SparkApplications. It makes runs (each a `SparkApplication` of its own) and has no
    /// pod of its own.
    KubeflowScheduled,
}

impl OperatorKind {
    /// Every kind, in the order they are read (a schedule after the runs it names).
    pub const ALL: [Self; 3] = [Self::Kubeflow, Self::Apache, Self::KubeflowScheduled];

    /// The API group.
    pub fn group(self) -> &'static str {
        match self {
            Self::Kubeflow | Self::KubeflowScheduled => "sparkoperator.k8s.io",
            Self::Apache => "spark.apache.org",
        }
    }

    /// The served version read.
    pub fn version(self) -> &'static str {
        match self {
            Self::Kubeflow | Self::KubeflowScheduled => "v1beta2",
            Self::Apache => "v1",
        }
    }

    /// The object kind (both operators call theirs `SparkApplication`).
    pub fn kind(self) -> &'static str {
        match self {
            Self::KubeflowScheduled => "ScheduledSparkApplication",
            _ => "SparkApplication",
        }
    }

    /// The resource's plural.
    pub fn plural(self) -> &'static str {
        match self {
            Self::KubeflowScheduled => "scheduledsparkapplications",
            _ => "sparkapplications",
        }
    }

    /// `sparkapplications.sparkoperator.k8s.io`: how RBAC and kubectl name the resource.
    pub fn resource(self) -> String {
        format!("{}.{}", self.plural(), self.group())
    }

    /// The label the operator puts on the pods it makes, valued with the object's name
    /// (a schedule has no pods: its runs' pods carry their run's name).
    pub fn pod_label(self) -> Option<&'static str> {
        match self {
            Self::Kubeflow => Some("sparkoperator.k8s.io/app-name"),
            Self::Apache => Some("spark.operator/spark-app-name"),
            Self::KubeflowScheduled => None,
        }
    }

    /// Who keeps the object.
    pub fn owner(self) -> &'static str {
        match self {
            Self::Kubeflow | Self::KubeflowScheduled => "the kubeflow spark-operator",
            Self::Apache => "Apache's spark-kubernetes-operator",
        }
    }
}

/// Where the operator says the application is, in the tool's words (each operator's own
/// state is kept beside it, verbatim).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum OperatorPhase {
    /// Accepted, not yet submitted (no state yet, kubeflow's empty state or `NEW`).
    New,
    /// Submitted: the driver is requested or starting (kubeflow `SUBMITTED`; Apache
    /// `Submitted`, `DriverRequested`, `DriverStarted`).
    Submitted,
    /// Running (kubeflow `RUNNING`; Apache `DriverReady`, `RunningHealthy`, …).
    Running,
    /// The submission failed (kubeflow `SUBMISSION_FAILED`; Apache `SchedulingFailure`).
    SubmissionFailed,
    /// Failed, a rerun scheduled (kubeflow `PENDING_RERUN`; Apache `ScheduledToRestart`).
    PendingRerun,
    /// Held by the operator or an admission (kubeflow `SUSPENDING`, `SUSPENDED`).
    Suspended,
    /// Ending with a success (kubeflow `SUCCEEDING`).
    Succeeding,
    /// Ending with a failure (kubeflow `FAILING`).
    Failing,
    /// Succeeded (kubeflow `COMPLETED`; Apache `Succeeded`).
    Succeeded,
    /// Failed for good (kubeflow `FAILED`; Apache `Failed`, `DriverEvicted`, …).
    Failed,
    /// A state this build does not know, kept verbatim in `state`.
    Unknown,
}

impl OperatorPhase {
    /// The phase of an operator's own state name.
    pub fn of(kind: OperatorKind, state: &str) -> Self {
        match kind {
            OperatorKind::Kubeflow => match state {
                "" | "NEW" => Self::New,
                "SUBMITTED" => Self::Submitted,
                "RUNNING" => Self::Running,
                "SUBMISSION_FAILED" | "FAILED_SUBMISSION" => Self::SubmissionFailed,
                "PENDING_RERUN" | "INVALIDATING" => Self::PendingRerun,
                "SUSPENDING" | "SUSPENDED" => Self::Suspended,
                // Admitted again: about to be submitted.
                "RESUMING" => Self::New,
                "SUCCEEDING" => Self::Succeeding,
                "FAILING" => Self::Failing,
                "COMPLETED" => Self::Succeeded,
                "FAILED" => Self::Failed,
                _ => Self::Unknown,
            },
            OperatorKind::Apache => match state {
                "" => Self::New,
                "Submitted" | "DriverRequested" | "DriverStarted" => Self::Submitted,
                "DriverReady"
                | "InitializedBelowThresholdExecutors"
                | "RunningHealthy"
                | "RunningWithBelowThresholdExecutors" => Self::Running,
                "SchedulingFailure" => Self::SubmissionFailed,
                "ScheduledToRestart" => Self::PendingRerun,
                "Succeeded" => Self::Succeeded,
                "Failed"
                | "DriverEvicted"
                | "DriverStartTimedOut"
                | "ExecutorsStartTimedOut"
                | "DriverReadyTimedOut" => Self::Failed,
                // Terminal after either end: the state before it says which
                // (`OperatorApp::from_value` reads the history).
                "ResourceReleased" | "TerminatedWithoutReleaseResources" => Self::Unknown,
                _ => Self::Unknown,
            },
            // `status.scheduleState`: running means scheduling runs.
            OperatorKind::KubeflowScheduled => match state {
                "" | "Validating" => Self::New,
                "Scheduled" => Self::Running,
                "FailedValidation" => Self::Failed,
                _ => Self::Unknown,
            },
        }
    }

    /// Whether the operator is done with the application.
    pub fn is_end(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::SubmissionFailed
        )
    }

    /// The phase's name as the tool prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Submitted => "submitted",
            Self::Running => "running",
            Self::SubmissionFailed => "submission-failed",
            Self::PendingRerun => "pending-rerun",
            Self::Suspended => "suspended",
            Self::Succeeding => "succeeding",
            Self::Failing => "failing",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
        }
    }
}

/// What the operator's restart policy allows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// `Never`, `OnFailure`, `Always` (kubeflow `spec.restartPolicy.type`; Apache
    /// `restartConfig.restartPolicy`, which adds `OnInfrastructureFailure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Text>,
    /// Reruns allowed after a failed run (kubeflow `onFailureRetries`; Apache
    /// `maxRestartAttempts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<i64>,
    /// Resubmissions allowed after a failed submission (kubeflow
    /// `onSubmissionFailureRetries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_submission_failure: Option<i64>,
}

/// One state the object went through (Apache's `stateTransitionHistory`; kubeflow keeps
/// only its current state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorState {
    /// The operator's own state name.
    pub state: Text,
    /// When it was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// What the operator said with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Text>,
}

/// An operator's application object, projected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorApp {
    /// Which operator's object.
    pub kind: OperatorKind,
    /// Its namespace.
    pub namespace: Text,
    /// Its name (the value of the operator's pod label).
    pub name: Text,
    /// `metadata.creationTimestamp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// The operator's own state name, verbatim (`SUBMISSION_FAILED`, `SchedulingFailure`);
    /// after Apache's `ResourceReleased`, the state that ended the run (`DriverEvicted`).
    pub state: Text,
    /// That state in the tool's words.
    pub phase: OperatorPhase,
    /// When the state was entered (Apache), or the last submission (kubeflow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// What the operator said: kubeflow's `errorMessage`, Apache's state message (bounded;
    /// made safe to print where it is printed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Text>,
    /// Submissions tried (kubeflow `submissionAttempts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_attempts: Option<i64>,
    /// Runs tried (kubeflow `executionAttempts`; Apache the current attempt's id + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_attempts: Option<i64>,
    /// What the restart policy allows.
    #[serde(default)]
    pub restart: RestartPolicy,
    /// The driver pod the operator made (kubeflow `driverInfo.podName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_pod: Option<Text>,
    /// Spark's application id once the driver has one (kubeflow `sparkApplicationId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<Text>,
    /// Kueue's queue (`kueue.x-k8s.io/queue-name`), when admission goes through Kueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<Text>,
    /// Whether `spec.suspend` holds it (Kueue suspends what it has not admitted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended: bool,
    /// The states it went through, oldest first (Apache's history; at most `MAX_HISTORY`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<OperatorState>,
    /// A ScheduledSparkApplication's schedule and runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Box<Schedule>>,
    /// How long after its end the operator keeps the object and its driver pod: kubeflow's
    /// `spec.timeToLiveSeconds` (the object deleted, its pods with it), Apache's
    /// `resourceRetainDurationMillis` under a retaining policy or `ttlAfterStopMillis`,
    /// whichever is shorter (in seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<i64>,
    /// Apache's `applicationTolerations.resourceRetainPolicy` (`Always`, `OnFailure`,
    /// `Never`: the default, the driver's resources deleted at its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_policy: Option<Text>,
}

/// The most states kept of one object's history (a long-lived streaming app restarts many
/// times; the last ones say what is happening).
pub const MAX_HISTORY: usize = 32;

/// The longest message kept (the operator quotes spark-submit's stderr whole).
const MAX_MESSAGE: usize = 4096;

impl OperatorApp {
    /// Projects an object of `kind` from the JSON the API served. Never fails: absent or
    /// malformed fields become empty.
    pub fn from_value(kind: OperatorKind, v: &serde_json::Value) -> Self {
        let text = |p: &str, max: usize| wire::text_at(v, p, max);
        let int = |p: &str| v.pointer(p).and_then(serde_json::Value::as_i64);
        let time = |p: &str| {
            v.pointer(p)
                .and_then(|t| t.as_str())
                .and_then(wire::parse_time)
        };
        let mut app = Self {
            kind,
            namespace: text("/metadata/namespace", 256).unwrap_or_default(),
            name: text("/metadata/name", 256).unwrap_or_default(),
            created_at: time("/metadata/creationTimestamp"),
            state: Text::default(),
            phase: OperatorPhase::New,
            since: None,
            message: None,
            submission_attempts: None,
            execution_attempts: None,
            restart: RestartPolicy::default(),
            driver_pod: None,
            app_id: None,
            queue: text("/metadata/labels/kueue.x-k8s.io~1queue-name", 256),
            suspended: v
                .pointer("/spec/suspend")
                .and_then(serde_json::Value::as_bool)
                == Some(true),
            history: Vec::new(),
            schedule: None,
            ttl_seconds: None,
            retain_policy: None,
        };
        match kind {
            OperatorKind::Kubeflow => {
                app.state = text("/status/applicationState/state", 64).unwrap_or_default();
                app.message = text("/status/applicationState/errorMessage", MAX_MESSAGE);
                app.submission_attempts = int("/status/submissionAttempts");
                app.execution_attempts = int("/status/executionAttempts");
                app.since = time("/status/terminationTime")
                    .or_else(|| time("/status/lastSubmissionAttemptTime"));
                app.restart = RestartPolicy {
                    policy: text("/spec/restartPolicy/type", 64),
                    on_failure: int("/spec/restartPolicy/onFailureRetries"),
                    on_submission_failure: int("/spec/restartPolicy/onSubmissionFailureRetries"),
                };
                app.driver_pod = text("/status/driverInfo/podName", 256);
                app.app_id = text("/status/sparkApplicationId", 256);
                app.ttl_seconds = int("/spec/timeToLiveSeconds").filter(|s| *s >= 0);
            }
            OperatorKind::Apache => {
                let tolerations = "/spec/applicationTolerations";
                app.retain_policy = text(&format!("{tolerations}/resourceRetainPolicy"), 32);
                // The retained resources go after their duration, and the whole app after
                // ttlAfterStopMillis: whichever comes first (negative: not set).
                let secs = |field: &str| {
                    int(&format!("{tolerations}/{field}"))
                        .filter(|ms| *ms >= 0)
                        .map(|ms| ms / 1000)
                };
                app.ttl_seconds = match (
                    secs("resourceRetainDurationMillis"),
                    secs("ttlAfterStopMillis"),
                ) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                app.state =
                    text("/status/currentState/currentStateSummary", 64).unwrap_or_default();
                app.message = text("/status/currentState/message", MAX_MESSAGE);
                app.since = time("/status/currentState/lastTransitionTime");
                app.execution_attempts =
                    int("/status/currentAttemptSummary/attemptInfo/id").map(|id| id + 1);
                let restart = "/spec/applicationTolerations/restartConfig";
                app.restart = RestartPolicy {
                    policy: text(&format!("{restart}/restartPolicy"), 64),
                    on_failure: int(&format!("{restart}/maxRestartAttempts")),
                    on_submission_failure: None,
                };
                app.history = apache_history(v);
            }
            OperatorKind::KubeflowScheduled => {
                app.state = text("/status/scheduleState", 64).unwrap_or_default();
                app.message = text("/status/reason", MAX_MESSAGE);
                app.since = time("/status/lastRun");
                let names = |p: &str| -> Vec<Text> {
                    let all = v.pointer(p).and_then(|a| a.as_array());
                    let all = all.map(Vec::as_slice).unwrap_or_default();
                    let skip = all.len().saturating_sub(MAX_RUNS);
                    all.iter()
                        .skip(skip)
                        .filter_map(|n| n.as_str())
                        .map(|n| Text::from(wire::bounded(n, 256)))
                        .collect()
                };
                app.schedule = Some(Box::new(Schedule {
                    cron: text("/spec/schedule", 256),
                    time_zone: text("/spec/timeZone", 64),
                    concurrency: text("/spec/concurrencyPolicy", 64),
                    last_run: time("/status/lastRun"),
                    next_run: time("/status/nextRun"),
                    last_run_name: text("/status/lastRunName", 256),
                    past_failed: names("/status/pastFailedRunNames"),
                    past_succeeded: names("/status/pastSuccessfulRunNames"),
                    last_run_state: None,
                    last_run_ended: None,
                    run_present: None,
                    read_at: None,
                }));
            }
        }
        app.phase = OperatorPhase::of(kind, &app.state);
        if matches!(
            app.state.as_str(),
            "ResourceReleased" | "TerminatedWithoutReleaseResources"
        ) {
            // Resources released after the run ended: the end is the state before, with its
            // name, words and time.
            let end = app
                .history
                .iter()
                .rev()
                .find(|h| OperatorPhase::of(kind, &h.state).is_end())
                .cloned();
            match end {
                Some(h) => {
                    app.phase = OperatorPhase::of(kind, &h.state);
                    app.state = h.state;
                    app.message = h.message.or(app.message);
                    app.since = h.at.or(app.since);
                }
                None => app.phase = OperatorPhase::Unknown,
            }
        }
        app
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// `SparkApplication etl/nightly`: the object as the TUI names it.
    pub fn title(&self) -> String {
        format!("{} {}", self.kind.kind(), self.key())
    }

    /// `kubectl describe sparkapplications.sparkoperator.k8s.io -n etl nightly`.
    pub fn describe_command(&self) -> String {
        format!(
            "kubectl describe {} -n {} {}",
            self.kind.resource(),
            self.namespace,
            self.name
        )
    }

    /// The reruns (or, after a refused submission, resubmissions) the restart policy
    /// allows: `Some(0)` under `Never`, `None` under `Always` (no limit) or when not said.
    pub fn reruns_allowed(&self) -> Option<i64> {
        match self.restart.policy.as_deref() {
            Some("Never") => Some(0),
            Some("Always") => None,
            _ if self.phase == OperatorPhase::SubmissionFailed || self.submission_refused() => {
                self.restart.on_submission_failure
            }
            _ => self.restart.on_failure,
        }
    }

    /// Whether the operator will run it again after this failure (kubeflow's rule: `Always`,
    /// or `OnFailure` while the attempts are within its retries); `None` when not known.
    pub fn will_rerun(&self) -> Option<bool> {
        match self.restart.policy.as_deref() {
            Some("Never") => Some(false),
            Some("Always") => Some(true),
            _ => {
                // OnFailure without a count reruns nothing (kubeflow's ShouldRetry).
                let allowed = self.reruns_allowed().unwrap_or(0);
                let tried = if self.submission_refused() {
                    self.submission_attempts?
                } else {
                    self.execution_attempts?
                };
                Some(tried <= allowed)
            }
        }
    }

    /// Whether the last thing that failed was a submission (no run started): kubeflow ends
    /// a refused submission in `FAILED` once its retries are spent, with spark-submit's
    /// words.
    pub fn submission_refused(&self) -> bool {
        self.phase == OperatorPhase::SubmissionFailed
            || matches!(self.phase, OperatorPhase::Failed | OperatorPhase::Failing)
                && self
                    .message
                    .as_deref()
                    .is_some_and(|m| m.starts_with("failed to submit spark application"))
    }
}

/// Apache's `stateTransitionHistory` (a map from a counter to a state), in counter order,
/// the last `MAX_HISTORY`.
fn apache_history(v: &serde_json::Value) -> Vec<OperatorState> {
    let Some(map) = v
        .pointer("/status/stateTransitionHistory")
        .and_then(|h| h.as_object())
    else {
        return Vec::new();
    };
    let mut states: Vec<(i64, OperatorState)> = map
        .iter()
        .filter_map(|(k, s)| {
            let state = s["currentStateSummary"]
                .as_str()
                .filter(|x| !x.is_empty())?;
            Some((
                k.parse().unwrap_or(i64::MAX),
                OperatorState {
                    state: Text::from(wire::bounded(state, 64)),
                    at: s["lastTransitionTime"].as_str().and_then(wire::parse_time),
                    message: s["message"]
                        .as_str()
                        .filter(|m| !m.is_empty())
                        .map(|m| Text::from(wire::bounded(m, MAX_MESSAGE))),
                },
            ))
        })
        .collect();
    states.sort_by_key(|(k, _)| *k);
    let skip = states.len().saturating_sub(MAX_HISTORY);
    states.into_iter().skip(skip).map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests;
