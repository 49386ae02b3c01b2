//! Spark's pod → executor-state rules, to the letter (`ExecutorPodsSnapshot.scala`, Spark 4.0
//! baseline: SPARK-49804's container-name rule, `checkAllContainers` default `true`).
//!
//! [`classify`] is Spark; [`ClassifyOptions::resolve`] is the tool: when the user did not say
//! which container is the executor, it guesses from the pod (Spark itself never guesses; it
//! uses `spark.kubernetes.executor.podTemplateContainerName` or its default), and it says how
//! it chose so diagnosis can warn when Spark's own choice would differ.

use serde::Serialize;

use crate::model::{
    DEFAULT_DRIVER_CONTAINER, DEFAULT_EXECUTOR_CONTAINER, ExecutorPod, ExecutorState, Role,
};
use crate::version::{self, SparkVersion, VersionSource};

/// The two settings Spark's classification depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifyConfig {
    /// `spark.kubernetes.executor.podTemplateContainerName`, else `spark-kubernetes-executor`.
    pub spark_container: String,
    /// `spark.kubernetes.executor.checkAllContainers` (true since Spark 4.0).
    pub check_all_containers: bool,
}

impl Default for ClassifyConfig {
    /// Spark 4's defaults.
    fn default() -> Self {
        Self {
            spark_container: DEFAULT_EXECUTOR_CONTAINER.to_owned(),
            check_all_containers: true,
        }
    }
}

/// What the user told us (from flags or the driver's `spark.properties`); `None` = not known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassifyOptions {
    /// The container Spark treats as the executor's (`spark.kubernetes.executor.podTemplateContainerName`); `None`: guess per pod.
    pub spark_container: Option<String>,
    /// `spark.kubernetes.executor.checkAllContainers`; `None`: Spark's default for the app's version.
    pub check_all_containers: Option<bool>,
    /// The app's Spark version (`--spark-version`); `None`: the pod's `spark-version` label.
    pub spark_version: Option<SparkVersion>,
}

/// How the Spark container name was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerSource {
    /// Given by the user or the app's configuration.
    Configured,
    /// The pod has a container with Spark's default name.
    DefaultName,
    /// The pod has exactly one container.
    OnlyContainer,
    /// The container whose env defines `SPARK_EXECUTOR_ID`.
    ExecutorEnv,
    /// Nothing matched; Spark's default name is assumed.
    Assumed,
}

/// A config plus how its container name was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The configuration classification uses.
    pub config: ClassifyConfig,
    /// How the Spark container was chosen.
    pub source: ContainerSource,
    /// The Spark version whose semantics apply.
    pub spark_version: SparkVersion,
    /// Where that version came from.
    pub version_source: VersionSource,
}

impl ClassifyOptions {
    /// Fills what the user did not give: the container from the pod (the role's default
    /// name if present, else the only container, else the one running Spark's executor
    /// entrypoint), `checkAllContainers` from the default of the app's Spark version
    /// (`false` before 4.0).
    pub fn resolve(&self, pod: &ExecutorPod) -> Resolved {
        let (spark_container, source) = match &self.spark_container {
            Some(name) => (name.clone(), ContainerSource::Configured),
            None => detect_spark_container(pod),
        };
        let (spark_version, version_source) = version::resolve(self.spark_version, pod);
        Resolved {
            config: ClassifyConfig {
                spark_container,
                check_all_containers: self
                    .check_all_containers
                    .unwrap_or_else(|| spark_version.check_all_containers_default()),
            },
            source,
            spark_version,
            version_source,
        }
    }
}

/// The container that most likely runs Spark (ignores any configured name).
pub(crate) fn detect_spark_container(pod: &ExecutorPod) -> (String, ContainerSource) {
    let default = match pod.role() {
        Some(Role::Driver) => DEFAULT_DRIVER_CONTAINER,
        _ => DEFAULT_EXECUTOR_CONTAINER,
    };
    // The spec is the authority; a status-only object (rare) still names its containers.
    let names: Vec<&str> = if pod.containers.is_empty() {
        pod.container_statuses()
            .iter()
            .map(|c| c.name.as_str())
            .collect()
    } else {
        pod.containers.iter().map(|c| c.name.as_str()).collect()
    };
    if names.contains(&default) {
        return (default.to_owned(), ContainerSource::DefaultName);
    }
    if let [only] = names.as_slice() {
        return ((*only).to_owned(), ContainerSource::OnlyContainer);
    }
    if let Some(c) = pod.containers.iter().find(|c| c.runs_executor) {
        return (c.name.to_string(), ContainerSource::ExecutorEnv);
    }
    (default.to_owned(), ContainerSource::Assumed)
}

/// Spark's `isDeleted`: a deletion timestamp, and no status, no phase, or a phase other than
/// `terminating`/`running` (case-insensitive). The timestamp's value is never read.
pub fn is_deleted(pod: &ExecutorPod) -> bool {
    if pod.deletion.is_none() {
        return false;
    }
    match pod.phase() {
        None => true,
        Some(phase) => {
            let phase = phase.to_lowercase();
            phase != "terminating" && phase != "running"
        }
    }
}

/// Spark's `toState`, evaluated in Spark's order (docs/diagnosis.md §1).
///
/// Ref: apache/spark `ExecutorPodsSnapshot.scala` `toState` / `isDeleted`.
pub fn classify(pod: &ExecutorPod, config: &ClassifyConfig) -> ExecutorState {
    if is_deleted(pod) {
        return ExecutorState::Deleted;
    }
    // Spark throws a NullPointerException here; the driver logs it and moves on.
    let Some(phase) = pod.phase() else {
        return ExecutorState::Unknown;
    };
    match phase.to_lowercase().as_str() {
        "pending" => ExecutorState::Pending,
        "running" => classify_running(pod, config),
        "failed" => ExecutorState::Failed,
        "succeeded" => ExecutorState::Succeeded,
        "terminating" => ExecutorState::Terminating,
        _ => ExecutorState::Unknown,
    }
}

fn classify_running(pod: &ExecutorPod, config: &ClassifyConfig) -> ExecutorState {
    let statuses = pod.container_statuses();
    if config.check_all_containers
        && pod.restart_policy.as_deref() == Some("Never")
        && statuses
            .iter()
            .any(|c| c.terminated().is_some_and(|t| t.exit_code != 0))
    {
        return ExecutorState::Failed;
    }
    match pod
        .container_status(&config.spark_container)
        .and_then(|c| c.terminated())
    {
        Some(t) if t.exit_code == 0 => ExecutorState::Succeeded,
        Some(_) => ExecutorState::Failed,
        None => ExecutorState::Running,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;
    use crate::model::{Deletion, ExecIdLabel};

    fn cfg() -> ClassifyConfig {
        ClassifyConfig::default()
    }

    fn running_pod(statuses: serde_json::Value, restart_policy: &str) -> ExecutorPod {
        pod(json!({
            "metadata": {"name": "e", "labels": {"spark-exec-id": "1", "spark-role": "executor"}},
            "spec": {"restartPolicy": restart_policy, "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Running", "containerStatuses": statuses}
        }))
    }

    fn status(name: &str, state: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "image": "spark:4", "imageID": "", "ready": false,
               "restartCount": 0, "state": state})
    }

    fn terminated(code: i32) -> serde_json::Value {
        json!({"terminated": {"exitCode": code, "reason": if code == 0 {"Completed"} else {"Error"}}})
    }

    fn with_phase(phase: Option<&str>, deleted: bool) -> ExecutorPod {
        let mut meta = json!({"name": "e", "labels": {"spark-exec-id": "1"}});
        if deleted {
            meta["deletionTimestamp"] = json!("2026-11-29T10:00:00Z");
        }
        let status = match phase {
            Some(p) => json!({"phase": p}),
            None => json!({}),
        };
        pod(
            json!({"metadata": meta, "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": status}),
        )
    }

    // docs/diagnosis.md §1, rule 1 (`isDeleted`).
    #[test]
    fn deletion_with_non_running_phase_is_deleted() {
        for phase in ["Pending", "Failed", "Succeeded", "Unknown", "Whatever"] {
            assert_eq!(
                classify(&with_phase(Some(phase), true), &cfg()),
                ExecutorState::Deleted,
                "{phase}"
            );
        }
    }

    #[test]
    fn deletion_with_null_phase_or_no_status_is_deleted() {
        assert_eq!(
            classify(&with_phase(None, true), &cfg()),
            ExecutorState::Deleted
        );
        let mut p = with_phase(None, true);
        p.status = None;
        assert_eq!(classify(&p, &cfg()), ExecutorState::Deleted);
    }

    #[test]
    fn deletion_with_running_phase_is_decided_by_the_phase() {
        assert_eq!(
            classify(&with_phase(Some("Running"), true), &cfg()),
            ExecutorState::Running
        );
        // case-insensitive
        assert_eq!(
            classify(&with_phase(Some("RUNNING"), true), &cfg()),
            ExecutorState::Running
        );
    }

    #[test]
    fn deletion_with_running_phase_and_exited_spark_container_is_failed_or_succeeded() {
        let mut p = running_pod(
            json!([status("spark-kubernetes-executor", terminated(143))]),
            "Never",
        );
        p.deletion = Some(Deletion {
            at: chrono::DateTime::UNIX_EPOCH,
            grace_period_seconds: Some(30),
        });
        assert_eq!(classify(&p, &cfg()), ExecutorState::Failed);
        let mut p = running_pod(
            json!([status("spark-kubernetes-executor", terminated(0))]),
            "Never",
        );
        p.deletion = Some(Deletion {
            at: chrono::DateTime::UNIX_EPOCH,
            grace_period_seconds: Some(30),
        });
        assert_eq!(classify(&p, &cfg()), ExecutorState::Succeeded);
    }

    #[test]
    fn deletion_with_terminating_phase_is_terminating() {
        assert_eq!(
            classify(&with_phase(Some("Terminating"), true), &cfg()),
            ExecutorState::Terminating
        );
        assert_eq!(
            classify(&with_phase(Some("terminating"), true), &cfg()),
            ExecutorState::Terminating
        );
    }

    // docs/diagnosis.md §1, rule 2: no deletion and no status/phase: Spark throws; we say unknown.
    #[test]
    fn missing_status_or_phase_without_deletion_is_unknown() {
        assert_eq!(
            classify(&with_phase(None, false), &cfg()),
            ExecutorState::Unknown
        );
        let mut p = with_phase(None, false);
        p.status = None;
        assert_eq!(classify(&p, &cfg()), ExecutorState::Unknown);
    }

    // §3.3 rule 3: the phase.
    #[test]
    fn phases_map_to_states() {
        let cases = [
            ("Pending", ExecutorState::Pending),
            ("Failed", ExecutorState::Failed),
            ("Succeeded", ExecutorState::Succeeded),
            ("Terminating", ExecutorState::Terminating),
            ("Unknown", ExecutorState::Unknown),
            ("SomethingNew", ExecutorState::Unknown),
            ("pending", ExecutorState::Pending),
            ("FAILED", ExecutorState::Failed),
        ];
        for (phase, want) in cases {
            assert_eq!(
                classify(&with_phase(Some(phase), false), &cfg()),
                want,
                "{phase}"
            );
        }
    }

    #[test]
    fn pending_ignores_waiting_reasons() {
        let p = pod(json!({
            "metadata": {"name": "e"},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Pending", "containerStatuses": [status("spark-kubernetes-executor",
                json!({"waiting": {"reason": "ImagePullBackOff"}}))]}
        }));
        assert_eq!(classify(&p, &cfg()), ExecutorState::Pending);
    }

    // §3.3 rule 3 running (a): checkAllContainers + restartPolicy Never + any non-zero exit.
    #[test]
    fn sidecar_failure_fails_the_pod_with_check_all_and_never() {
        let p = running_pod(
            json!([
                status(
                    "spark-kubernetes-executor",
                    json!({"running": {"startedAt": "2026-11-29T10:00:00Z"}})
                ),
                status("log-shipper", terminated(1)),
            ]),
            "Never",
        );
        assert_eq!(classify(&p, &cfg()), ExecutorState::Failed);
    }

    #[test]
    fn sidecar_failure_is_running_without_check_all() {
        let p = running_pod(
            json!([
                status("spark-kubernetes-executor", json!({"running": {}})),
                status("log-shipper", terminated(1)),
            ]),
            "Never",
        );
        let config = ClassifyConfig {
            check_all_containers: false,
            ..cfg()
        };
        assert_eq!(classify(&p, &config), ExecutorState::Running);
    }

    #[test]
    fn sidecar_failure_is_running_unless_restart_policy_is_exactly_never() {
        for policy in ["OnFailure", "Always", "never"] {
            let p = running_pod(
                json!([
                    status("spark-kubernetes-executor", json!({"running": {}})),
                    status("log-shipper", terminated(1)),
                ]),
                policy,
            );
            assert_eq!(classify(&p, &cfg()), ExecutorState::Running, "{policy}");
        }
    }

    #[test]
    fn sidecar_exit_zero_with_check_all_is_not_a_failure() {
        let p = running_pod(
            json!([
                status("spark-kubernetes-executor", json!({"running": {}})),
                status("init-like-sidecar", terminated(0)),
            ]),
            "Never",
        );
        assert_eq!(classify(&p, &cfg()), ExecutorState::Running);
    }

    // §3.3 rule 3 running (b): the first status with the spark container's name.
    #[test]
    fn spark_container_exit_decides() {
        let ok = running_pod(
            json!([status("spark-kubernetes-executor", terminated(0))]),
            "Never",
        );
        assert_eq!(classify(&ok, &cfg()), ExecutorState::Succeeded);
        let bad = running_pod(
            json!([status("spark-kubernetes-executor", terminated(52))]),
            "Always",
        );
        assert_eq!(classify(&bad, &cfg()), ExecutorState::Failed);
    }

    #[test]
    fn spark_container_exited_while_sidecar_runs_is_decided_by_the_spark_container() {
        let p = running_pod(
            json!([
                status("spark-kubernetes-executor", terminated(0)),
                status("istio-proxy", json!({"running": {}})),
            ]),
            "Never",
        );
        assert_eq!(classify(&p, &cfg()), ExecutorState::Succeeded);
    }

    #[test]
    fn first_status_with_the_name_wins() {
        let p = running_pod(
            json!([
                status("spark-kubernetes-executor", json!({"running": {}})),
                status("spark-kubernetes-executor", terminated(1)),
            ]),
            "Always",
        );
        assert_eq!(classify(&p, &cfg()), ExecutorState::Running);
    }

    #[test]
    fn no_spark_container_status_is_running() {
        let p = running_pod(json!([]), "Never");
        assert_eq!(classify(&p, &cfg()), ExecutorState::Running);
    }

    // §3.4: template container named `executor`, podTemplateContainerName unset.
    #[test]
    fn container_name_mismatch_stays_running_after_a_zero_exit() {
        let p = running_pod(json!([status("executor", terminated(0))]), "Never");
        assert_eq!(classify(&p, &cfg()), ExecutorState::Running);
        // only checkAllContainers catches a non-zero exit
        let p = running_pod(json!([status("executor", terminated(1))]), "Never");
        assert_eq!(classify(&p, &cfg()), ExecutorState::Failed);
        let config = ClassifyConfig {
            check_all_containers: false,
            ..cfg()
        };
        assert_eq!(classify(&p, &config), ExecutorState::Running);
    }

    // §3.4: lastState, ready, restartCount, conditions and OOMKilled are never read.
    #[test]
    fn last_state_ready_restarts_conditions_and_reason_are_ignored() {
        let p = pod(json!({
            "metadata": {"name": "e"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}, {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
                "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "x", "imageID": "",
                    "ready": false, "restartCount": 7,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
        }));
        assert_eq!(classify(&p, &cfg()), ExecutorState::Running);
    }

    // §3.1: which pods are executors.
    #[test]
    fn exec_id_label() {
        let with = |v: Option<&str>| {
            let mut labels = json!({});
            if let Some(v) = v {
                labels["spark-exec-id"] = json!(v);
            }
            pod(json!({"metadata": {"name": "e", "labels": labels}}))
        };
        assert_eq!(with(Some("7")).exec_id_label(), ExecIdLabel::Id(7));
        assert_eq!(
            with(Some("EXECID")).exec_id_label(),
            ExecIdLabel::Placeholder
        );
        assert_eq!(with(None).exec_id_label(), ExecIdLabel::Missing);
        assert_eq!(
            with(Some("seven")).exec_id_label(),
            ExecIdLabel::Invalid("seven".into())
        );
        assert_eq!(with(Some("EXECID")).executor_id(), None);
        assert_eq!(
            with(Some("12345678901")).executor_id(),
            Some(12_345_678_901)
        );
    }

    #[test]
    fn resolve_detects_the_container() {
        let two = |a: &str, b: &str, env_on_b: bool| {
            let env = if env_on_b {
                json!([{"name": "SPARK_EXECUTOR_ID", "value": "1"}])
            } else {
                json!([])
            };
            pod(
                json!({"metadata": {"name": "e"}, "spec": {"containers": [{"name": a}, {"name": b, "env": env}]}}),
            )
        };
        let opts = ClassifyOptions::default();
        let r = opts.resolve(&two("sidecar", "spark-kubernetes-executor", false));
        assert_eq!(
            (r.config.spark_container.as_str(), r.source),
            ("spark-kubernetes-executor", ContainerSource::DefaultName)
        );
        let r = opts.resolve(&two("sidecar", "exec", true));
        assert_eq!(
            (r.config.spark_container.as_str(), r.source),
            ("exec", ContainerSource::ExecutorEnv)
        );
        let r = opts.resolve(&two("a", "b", false));
        assert_eq!(
            (r.config.spark_container.as_str(), r.source),
            ("spark-kubernetes-executor", ContainerSource::Assumed)
        );
        let one =
            pod(json!({"metadata": {"name": "e"}, "spec": {"containers": [{"name": "executor"}]}}));
        let r = opts.resolve(&one);
        assert_eq!(
            (r.config.spark_container.as_str(), r.source),
            ("executor", ContainerSource::OnlyContainer)
        );
        assert!(r.config.check_all_containers, "Spark 4 default");
        let given = ClassifyOptions {
            spark_container: Some("x".into()),
            check_all_containers: Some(false),
            spark_version: None,
        };
        let r = given.resolve(&one);
        assert_eq!(
            (
                r.config.spark_container.as_str(),
                r.source,
                r.config.check_all_containers
            ),
            ("x", ContainerSource::Configured, false)
        );
    }
}
