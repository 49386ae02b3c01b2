//! Containers other than the Spark one, and a Spark container Spark cannot see.
//!
//! Ref: Spark `ExecutorPodsSnapshot.scala` (`checkAllContainers`, SPARK-30821 and
//! SPARK-49804 for the container-name rule); docs/diagnosis.md §1.

use super::exit::describe_terminated;
use super::{Code, Finding, Severity, Subject};
use crate::classify::{ClassifyConfig, ContainerSource, classify, detect_spark_container};
use crate::model::{DEFAULT_EXECUTOR_CONTAINER, ExecutorState, Role};

const REF_SNAPSHOT: &str = "https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsSnapshot.scala";
const REF_INIT: &str = "https://kubernetes.io/docs/concepts/workloads/pods/init-containers/";

pub(super) fn sidecar_failed(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let spark = s.spark_container();
    let config = &s.resolved.config;
    let spark_fails_pod = config.check_all_containers
        && s.pod.restart_policy.as_deref() == Some("Never")
        && s.pod
            .phase()
            .is_some_and(|p| p.eq_ignore_ascii_case("running"));
    for c in s.pod.container_statuses() {
        if c.name == spark {
            continue;
        }
        let Some(t) = c.terminated().filter(|t| t.exit_code != 0) else {
            continue;
        };
        let oom = if t.reason.as_deref() == Some("OOMKilled") {
            ", OOMKilled"
        } else {
            ""
        };
        let (severity, consequence) = if spark_fails_pod {
            (
                Severity::Error,
                "; with checkAllContainers=true and restartPolicy Never, Spark fails the executor for it",
            )
        } else {
            (
                Severity::Warn,
                "; Spark ignores it while the Spark container runs",
            )
        };
        out.push(
            Finding::new(
                Code::SidecarFailed,
                severity,
                format!(
                    "Sidecar {} exited {}{oom}{consequence}",
                    c.name, t.exit_code
                ),
            )
            .hint(
                "Fix the sidecar (its log: kubectl logs -c <name>). Spark 4 defaults \
                 spark.kubernetes.executor.checkAllContainers=true, so any container exiting \
                 non-zero fails an executor with restartPolicy Never; set it to false to judge \
                 executors by the Spark container alone.",
            )
            .reference(REF_SNAPSHOT)
            .evidence(describe_terminated(&c.name, "state", t)),
        );
    }
}

pub(super) fn init_container_failed(s: &Subject<'_>, out: &mut Vec<Finding>) {
    for c in s.pod.init_container_statuses() {
        let Some((t, field)) = c
            .terminated()
            .map(|t| (t, "state"))
            .or_else(|| c.last_state.terminated().map(|t| (t, "lastState")))
            .filter(|(t, _)| t.exit_code != 0)
        else {
            continue;
        };
        out.push(
            Finding::new(
                Code::InitContainerFailed,
                Severity::Error,
                format!(
                    "Init container {} failed (exit {}); the executor never started",
                    c.name, t.exit_code
                ),
            )
            .hint("Read the init container's log (kubectl logs -c <name>); it comes from the pod template.")
            .reference(REF_INIT)
            .evidence(describe_terminated(&c.name, field, t)),
        );
    }
}

/// The executor JVM's container exited, but Spark looks for a container of another name, so
/// it keeps calling the executor running (docs/diagnosis.md §1).
pub(super) fn stuck_running(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.role() == Some(Role::Driver) || s.pod.executor_id().is_none() {
        return;
    }
    let (jvm, how) = detect_spark_container(s.pod);
    if how == ContainerSource::Assumed {
        return;
    }
    let Some(t) = s.pod.container_status(&jvm).and_then(|c| c.terminated()) else {
        return;
    };
    let configured = s.resolved.source == ContainerSource::Configured;
    let spark_config = if configured {
        s.resolved.config.clone()
    } else {
        ClassifyConfig {
            spark_container: DEFAULT_EXECUTOR_CONTAINER.to_owned(),
            check_all_containers: s.resolved.config.check_all_containers,
        }
    };
    if spark_config.spark_container == jvm
        || classify(s.pod, &spark_config) != ExecutorState::Running
    {
        return;
    }
    let (severity, summary) = if configured {
        (
            Severity::Error,
            format!(
                "The executor container {jvm} exited {}, but Spark watches container {} (absent), \
                 so Spark still counts this executor as running",
                t.exit_code, spark_config.spark_container
            ),
        )
    } else {
        (
            Severity::Warn,
            format!(
                "The executor container {jvm} exited {}; unless \
                 spark.kubernetes.executor.podTemplateContainerName={jvm} is set, Spark looks for \
                 {DEFAULT_EXECUTOR_CONTAINER} and still counts this executor as running",
                t.exit_code
            ),
        )
    };
    out.push(
        Finding::new(Code::StuckRunning, severity, summary)
            .hint(format!(
                "Set spark.kubernetes.executor.podTemplateContainerName={jvm} (the name of the \
                 executor container in the pod template), or name that container \
                 {DEFAULT_EXECUTOR_CONTAINER}. Until then Spark neither replaces nor deletes \
                 executors whose JVM exited 0, and only checkAllContainers catches non-zero exits."
            ))
            .reference(REF_SNAPSHOT)
            .evidence(describe_terminated(&jvm, "state", t))
            .evidence(format!(
                "Spark's container name: {} ({})",
                spark_config.spark_container,
                if configured {
                    "configured"
                } else {
                    "Spark's default"
                }
            )),
    );
}
