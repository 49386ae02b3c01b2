//! Spark's own words about an executor it removes: the exit code it reads, the text it logs,
//! and whether it blames the application (docs/diagnosis.md §1–§2, Spark 4.0 baseline).
//!
//! Ref: apache/spark `ExecutorPodsLifecycleManager.scala` (`findExitCode`,
//! `describeExitCode`, `exitReasonMessage`), `KubernetesUtils.containersDescription`.

use serde::{Deserialize, Serialize};

use crate::classify::ClassifyConfig;
use crate::model::{ContainerState, ExecutorPod, ExecutorState, fmt_time};

/// Spark's `UNKNOWN_EXIT_CODE`.
pub const UNKNOWN_EXIT_CODE: i32 = -1;

/// What Spark's driver concludes about an executor in a final state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SparkView {
    /// The exit code Spark reads (`-1` when its container has not terminated).
    pub exit_code: i32,
    /// `describeExitCode`, e.g. `137(SIGKILL, possible container OOM)`.
    pub exit_description: String,
    /// `exitCausedByApp`: whether Spark counts task losses on it against the app.
    pub caused_by_app: bool,
    /// Whether it counts toward `spark.executor.maxNumFailures` (distinct ids seen failed).
    pub counts_as_failure: bool,
    /// The removal reason Spark's driver logs, verbatim.
    pub message: String,
}

/// Spark 4.0's `findExitCode`: the first container status named like the Spark container
/// that has terminated; else `-1`.
pub fn find_exit_code(pod: &ExecutorPod, spark_container: &str) -> i32 {
    pod.container_statuses()
        .iter()
        .filter(|c| c.name == spark_container)
        .find_map(|c| c.terminated())
        .map_or(UNKNOWN_EXIT_CODE, |t| t.exit_code)
}

/// Spark's `describeExitCode`: the code followed, without a space, by its text.
pub fn describe_exit_code(code: i32) -> String {
    let text = match code {
        0 => "(success)",
        1 => "(generic, look at logs to clarify)",
        42 => "(Douglas Adams fan)",
        10 | 50 => "(Uncaught exception)",
        52 => "(JVM OOM)",
        53 => "(DiskStore failed to create temp dir)",
        126 => "(not executable - possibly perm or arch)",
        137 => "(SIGKILL, possible container OOM)",
        139 => "(SIGSEGV: that's unexpected)",
        255 => "(exit-1, your guess is as good as mine)",
        _ => "(unexpected)",
    };
    format!("{code}{text}")
}

/// What Spark will log and conclude when it removes this executor; `None` for states Spark
/// does not act on (pending, running, unknown, terminating) or pods that are not executors.
pub fn spark_view(
    pod: &ExecutorPod,
    state: ExecutorState,
    config: &ClassifyConfig,
) -> Option<SparkView> {
    let id = pod.executor_id()?;
    let exit_code = find_exit_code(pod, &config.spark_container);
    let exit_description = describe_exit_code(exit_code);
    match state {
        ExecutorState::Deleted => Some(SparkView {
            exit_code,
            exit_description,
            caused_by_app: false,
            counts_as_failure: false,
            message: format!("The executor with id {id} was deleted by a user or the framework."),
        }),
        ExecutorState::Failed | ExecutorState::Succeeded => Some(SparkView {
            exit_code,
            message: exit_reason_message(pod, id, &exit_description),
            exit_description,
            caused_by_app: true,
            counts_as_failure: state == ExecutorState::Failed,
        }),
        _ => None,
    }
}

/// The message Spark builds for a failed or succeeded executor (docs/diagnosis.md §2), byte for byte,
/// including the trailing six spaces of Scala's `stripMargin`.
fn exit_reason_message(pod: &ExecutorPod, id: i64, exit_description: &str) -> String {
    let status = pod.status.as_ref();
    let reason = status
        .and_then(|s| s.reason.as_deref())
        .map(|r| format!("The API gave the following brief reason: {r}"))
        .unwrap_or_default();
    let message = status
        .and_then(|s| s.message.as_deref())
        .map(|m| format!("The API gave the following message: {m}"))
        .unwrap_or_default();
    format!(
        "\nThe executor with id {id} exited with exit code {exit_description}.\n{reason}\n{message}\n\n\
         The API gave the following container statuses:\n\n{}\n      ",
        containers_description(pod)
    )
}

/// `KubernetesUtils.containersDescription(pod, indent = 1)`.
pub fn containers_description(pod: &ExecutorPod) -> String {
    fn value<S: AsRef<str>>(v: Option<S>) -> String {
        v.as_ref()
            .map(AsRef::as_ref)
            .filter(|s| !s.is_empty())
            .unwrap_or("N/A")
            .to_owned()
    }
    pod.container_statuses()
        .iter()
        .map(|c| {
            let mut pairs: Vec<(&str, String)> = vec![
                ("container name", value(Some(&c.name))),
                ("container image", value(c.image.as_ref())),
            ];
            match &c.state {
                ContainerState::Running { started_at } => {
                    pairs.push(("container state", "running".into()));
                    pairs.push((
                        "container started at",
                        value(started_at.as_ref().map(fmt_time)),
                    ));
                }
                ContainerState::Terminated(t) => {
                    pairs.push(("container state", "terminated".into()));
                    pairs.push((
                        "container started at",
                        value(t.started_at.as_ref().map(fmt_time)),
                    ));
                    pairs.push((
                        "container finished at",
                        value(t.finished_at.as_ref().map(fmt_time)),
                    ));
                    pairs.push(("exit code", t.exit_code.to_string()));
                    pairs.push(("termination reason", value(t.reason.as_ref())));
                }
                ContainerState::Waiting { reason, .. } => {
                    pairs.push(("container state", "waiting".into()));
                    pairs.push(("pending reason", value(reason.as_ref())));
                }
                ContainerState::None => pairs.push(("container state", "N/A".into())),
            }
            pairs
                .into_iter()
                .map(|(k, v)| format!("\n\t {k}: {v}"))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// What Spark does after a user deletes an executor pod (a kill), said once.
pub const AFTER_KILL: &str = "Spark will log \"The executor with id N was deleted by a user or the framework.\", \
not count it against the application, and request a replacement under a new id if the app is below its target.";

/// Spark's booleans: `true`/`false` in any case (Scala's `toBoolean`); `None` for anything else.
pub fn spark_bool(v: &str) -> Option<bool> {
    let v = v.trim();
    if v.eq_ignore_ascii_case("true") {
        Some(true)
    } else if v.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Spark's time strings (`JavaUtils.timeStringAs`): `30s`, `500ms`, `2min`, `1h`, `100us`,
/// or a bare number in the setting's own unit (`unit`: milliseconds for most, seconds for
/// `spark.network.timeout`). `None` for anything Spark would refuse.
pub fn spark_time(v: &str, unit: std::time::Duration) -> Option<std::time::Duration> {
    use std::time::Duration;
    let v = v.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, suffix) = v.split_at(split);
    let n: u64 = n.parse().ok()?;
    let one = match suffix.trim() {
        "" => unit,
        "us" => Duration::from_micros(1),
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" | "min" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86_400),
        _ => return None,
    };
    one.checked_mul(u32::try_from(n).ok()?)
}

/// Spark's size strings as MiB (`JavaUtils.byteStringAs`, the unit of
/// `spark.executor.memory` and `…memoryOverhead`): `512m`, `4g`, `1536mb`, `2t`, or a bare
/// number of MiB. `None` for anything Spark would refuse.
pub fn spark_size_mib(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, suffix) = v.split_at(split);
    let n: u64 = n.parse().ok()?;
    match suffix.trim() {
        "b" => Some(n / (1024 * 1024)),
        "k" | "kb" => Some(n / 1024),
        "" | "m" | "mb" => Some(n),
        "g" | "gb" => n.checked_mul(1024),
        "t" | "tb" => n.checked_mul(1024 * 1024),
        "p" | "pb" => n.checked_mul(1024 * 1024 * 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;

    #[test]
    fn spark_sizes_are_read_as_spark_reads_them() {
        assert_eq!(spark_size_mib("512m"), Some(512));
        assert_eq!(spark_size_mib(" 4G "), Some(4096));
        assert_eq!(spark_size_mib("1536mb"), Some(1536));
        assert_eq!(spark_size_mib("2048"), Some(2048));
        assert_eq!(spark_size_mib("1t"), Some(1024 * 1024));
        assert_eq!(spark_size_mib("4096k"), Some(4));
        assert_eq!(spark_size_mib("1.5g"), None);
        assert_eq!(spark_size_mib("lots"), None);
        assert_eq!(spark_size_mib("99999999999999999999p"), None);
    }

    #[test]
    fn describe_exit_code_table() {
        let cases = [
            (0, "0(success)"),
            (1, "1(generic, look at logs to clarify)"),
            (10, "10(Uncaught exception)"),
            (42, "42(Douglas Adams fan)"),
            (50, "50(Uncaught exception)"),
            (52, "52(JVM OOM)"),
            (53, "53(DiskStore failed to create temp dir)"),
            (126, "126(not executable - possibly perm or arch)"),
            (137, "137(SIGKILL, possible container OOM)"),
            (139, "139(SIGSEGV: that's unexpected)"),
            (143, "143(unexpected)"),
            (255, "255(exit-1, your guess is as good as mine)"),
            (-1, "-1(unexpected)"),
            (56, "56(unexpected)"),
        ];
        for (code, want) in cases {
            assert_eq!(describe_exit_code(code), want);
        }
    }

    fn executor(statuses: serde_json::Value, phase: &str, deleted: bool) -> ExecutorPod {
        let mut meta = json!({"name": "app-exec-7", "labels": {"spark-exec-id": "7", "spark-role": "executor"}});
        if deleted {
            meta["deletionTimestamp"] = json!("2026-11-29T10:00:00Z");
        }
        pod(json!({"metadata": meta,
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": phase, "containerStatuses": statuses}}))
    }

    #[test]
    fn exit_code_comes_from_the_spark_container_only() {
        let p = executor(
            json!([
                {"name": "sidecar", "image": "s", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 2}}},
                {"name": "spark-kubernetes-executor", "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
            ]),
            "Failed",
            false,
        );
        assert_eq!(find_exit_code(&p, "spark-kubernetes-executor"), 137);
        assert_eq!(find_exit_code(&p, "other"), -1);
    }

    #[test]
    fn failed_view_has_spark_exact_message() {
        let p = executor(
            json!([{"name": "spark-kubernetes-executor", "image": "spark:4.0", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2026-11-29T10:00:00Z", "finishedAt": "2026-11-29T10:05:00Z"}}}]),
            "Failed",
            false,
        );
        let v = spark_view(&p, ExecutorState::Failed, &ClassifyConfig::default()).unwrap();
        assert_eq!(v.exit_description, "137(SIGKILL, possible container OOM)");
        assert!(v.caused_by_app && v.counts_as_failure);
        assert_eq!(
            v.message,
            "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\n\
             The API gave the following container statuses:\n\n\
             \n\t container name: spark-kubernetes-executor\
             \n\t container image: spark:4.0\
             \n\t container state: terminated\
             \n\t container started at: 2026-11-29T10:00:00Z\
             \n\t container finished at: 2026-11-29T10:05:00Z\
             \n\t exit code: 137\
             \n\t termination reason: OOMKilled\n      "
        );
    }

    #[test]
    fn deleted_view_is_not_caused_by_app() {
        let p = executor(
            json!([{"name": "spark-kubernetes-executor", "image": "spark", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"terminated": {"exitCode": 143}}}]),
            "Failed",
            true,
        );
        let v = spark_view(&p, ExecutorState::Deleted, &ClassifyConfig::default()).unwrap();
        assert_eq!(v.exit_code, 143);
        assert!(!v.caused_by_app && !v.counts_as_failure);
        assert_eq!(
            v.message,
            "The executor with id 7 was deleted by a user or the framework."
        );
    }

    #[test]
    fn running_and_non_executors_have_no_view() {
        let p = executor(json!([]), "Running", false);
        assert_eq!(
            spark_view(&p, ExecutorState::Running, &ClassifyConfig::default()),
            None
        );
        let driver = pod(
            json!({"metadata": {"name": "d", "labels": {"spark-role": "driver"}}, "status": {"phase": "Failed"}}),
        );
        assert_eq!(
            spark_view(&driver, ExecutorState::Failed, &ClassifyConfig::default()),
            None
        );
    }

    #[test]
    fn description_of_waiting_and_empty_states() {
        let p = executor(
            json!([
                {"name": "a", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                {"name": "b", "image": "img", "imageID": "", "ready": false, "restartCount": 0, "state": {}},
            ]),
            "Pending",
            false,
        );
        assert_eq!(
            containers_description(&p),
            "\n\t container name: a\n\t container image: N/A\n\t container state: waiting\n\t pending reason: ImagePullBackOff\
             \n\n\n\t container name: b\n\t container image: img\n\t container state: N/A"
        );
    }
}
