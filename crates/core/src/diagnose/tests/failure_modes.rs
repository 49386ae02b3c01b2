//! #15: the failure modes users hit, modelled on the public objects cited in each test.

use super::*;

#[test]
fn kubelet_admission_rejection_is_a_finding() {
    // kubernetes/website#47264: Failed, no container ever ran, reason OutOfcpu.
    let p = executor(json!({"phase": "Failed", "reason": "OutOfcpu",
        "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 7800, capacity: 8000"}));
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::AdmissionRejected]);
    assert_eq!(f[0].severity, Severity::Error);
    assert!(f[0].summary.contains("(OutOfcpu)"), "{}", f[0].summary);
    assert!(f[0].evidence[0].contains("Node didn't have enough resource: cpu"));
    let p = executor(
        json!({"phase": "Failed", "reason": "UnexpectedAdmissionError",
        "message": "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected",
        "containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "ContainerCreating"}}))]}),
    );
    assert_eq!(codes(&run(&p, &[])), vec![Code::AdmissionRejected]);
    // A Failed pod whose container ran is an exit, not an admission rejection.
    let p = executor(json!({"phase": "Failed", "reason": "OutOfmemory",
        "containerStatuses": [cs("spark-kubernetes-executor", term(1, "Error"))]}));
    assert!(!codes(&run(&p, &[])).contains(&Code::AdmissionRejected));
}

#[test]
fn container_status_unknown_with_137_is_not_an_oom() {
    // kubeflow/spark-operator#781.
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor",
        json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was deleted.  The container used to be Running"}}))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::ContainerStatusUnknown]);
    assert!(f[0].summary.contains("not an OOM"), "{}", f[0].summary);
}

#[test]
fn exit_codes_58_101_and_3() {
    let exit = |code| {
        let p = executor(json!({"phase": "Failed",
            "containerStatuses": [cs("spark-kubernetes-executor", term(code, "Error"))]}));
        run(&p, &[])
    };
    assert_eq!(codes(&exit(58)), vec![Code::BlockManagerReregistration]);
    assert_eq!(codes(&exit(101)), vec![Code::ClassNotFound]);
    let oom = exit(3);
    assert_eq!(codes(&oom), vec![Code::JvmOom]);
    assert!(oom[0].hint.contains("ExitOnOutOfMemoryError"));
}

#[test]
fn storage_limit_evictions_are_not_node_pressure() {
    // kubeflow/spark-operator#1340, bitnami/charts#14538.
    for message in [
        "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
        "Container spark-kubernetes-executor exceeded its local ephemeral storage limit \"1Gi\". ",
        "Usage of EmptyDir volume \"spark-local-dir-1\" exceeds the limit \"10Gi\". ",
    ] {
        let p = executor(json!({"phase": "Failed", "reason": "Evicted", "message": message}));
        let f = run(&p, &[]);
        assert_eq!(codes(&f), vec![Code::LocalStorageExceeded], "{message}");
        assert!(f[0].hint.contains("spark-local-dir"), "{message}");
    }
    // Node pressure stays `evicted`.
    let p = executor(json!({"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi. "}));
    assert_eq!(codes(&run(&p, &[])), vec![Code::Evicted]);
}

#[test]
fn graceful_node_shutdown_is_its_own_finding() {
    let p = executor(json!({"phase": "Failed", "reason": "Terminated",
        "message": "Pod was terminated in response to imminent node shutdown.",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
            "message": "Pod was terminated in response to imminent node shutdown."}],
        "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}));
    let f = run(&p, &[]);
    assert!(codes(&f).contains(&Code::NodeShutdown), "{:?}", codes(&f));
    assert!(!codes(&f).contains(&Code::Evicted), "not node pressure");
    assert!(
        f.iter()
            .find(|x| x.code == Code::NodeShutdown)
            .unwrap()
            .hint
            .contains("spark.decommission.enabled")
    );
    // The older kubelet's words.
    let p = executor(
        json!({"phase": "Failed", "reason": "Shutdown", "message": "Node is shutting, evicting pods"}),
    );
    assert_eq!(codes(&run(&p, &[])), vec![Code::NodeShutdown]);
}

#[test]
fn the_grace_period_hint_follows_the_spark_version() {
    let killed = |version: &str| {
        let p = executor_with(
            json!({"deletionTimestamp": "2026-11-29T10:19:00Z", "deletionGracePeriodSeconds": 30,
                   "labels": {"spark-app-selector": "spark-abc", "spark-role": "executor", "spark-exec-id": "7", "spark-version": version}}),
            json!({"containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}),
        );
        find(&run(&p, &[]), Code::NodeSigkill).hint.clone()
    };
    assert!(killed("4.1.0").contains("Spark 4.1+; it overrides the pod template"));
    assert!(killed("4.0.1").contains("executor pod template"));
    assert!(!killed("4.0.1").contains("spark.kubernetes.executor.terminationGracePeriodSeconds"));
}

#[test]
fn the_oom_hint_gives_a_value_to_copy() {
    use super::memory::overhead_from_limit as overhead_suggestion;
    // 4g heap + 10 % overhead, as Spark sizes it: 4505Mi.
    assert_eq!(
        overhead_suggestion("4505Mi"),
        Some((4095, 410, "1g".to_owned()))
    );
    // 1g heap + the 384Mi minimum: 1408Mi.
    assert_eq!(
        overhead_suggestion("1408Mi"),
        Some((1024, 384, "768m".to_owned()))
    );
    assert_eq!(overhead_suggestion("256Mi"), None);
    assert_eq!(overhead_suggestion("lots"), None);
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "OOMKilled"))]}),
    );
    let f = find(&run(&p, &[]), Code::ContainerOomKilled).clone();
    assert!(
        f.hint.contains("--conf spark.executor.memoryOverhead=1g"),
        "{}",
        f.hint
    );
}

#[test]
fn a_pod_deleted_while_running_is_still_running_to_spark() {
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:29:50Z", "deletionGracePeriodSeconds": 30}),
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"running": {"startedAt": "2026-11-29T10:00:00Z"}}))]}),
    );
    let f = find(&run(&p, &[]), Code::Deleted).clone();
    assert!(
        f.summary
            .ends_with("Spark still counts the executor as running"),
        "{}",
        f.summary
    );
    assert!(f.hint.contains("not found in the cluster"), "{}", f.hint);
    // Once the phase has left Running, Spark says "deleted by a user or the framework".
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:29:50Z", "deletionGracePeriodSeconds": 30}),
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    let f = find(&run(&p, &[]), Code::Deleted).clone();
    assert!(
        f.hint.contains("deleted by a user or the framework"),
        "{}",
        f.hint
    );
}
