//! A real preemption: kube-scheduler evicts a low-priority executor from the tainted node for a
//! higher-priority pod, and the tool calls it preempted from what the scheduler wrote (its
//! `DisruptionTarget` condition and `Preempted` event). (In `mixed`, the driver plays the
//! scheduler's calls itself; see mixed.rs.)

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const OBJECTS: &str = r#"apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: spark-triage-test-high}
value: 1000000
---
apiVersion: v1
kind: Pod
metadata:
  name: cp-preempt-exec-1
  namespace: spark-jobs
  labels: {spark-app-selector: spark-cp-preempt, spark-app-name: cp-preempt, spark-role: executor, spark-exec-id: "1"}
spec:
  restartPolicy: Never
  nodeSelector: {kubernetes.io/hostname: kwok-gpu-1}
  tolerations: [{key: dedicated, value: gpu, effect: NoSchedule}]
  containers:
  - name: spark-kubernetes-executor
    image: apache/spark:4.0.1
    resources: {requests: {cpu: "1", memory: 100Gi}, limits: {memory: 100Gi}}
"#;

const PREEMPTOR: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: urgent-inference, namespace: spark-jobs}
spec:
  priorityClassName: spark-triage-test-high
  nodeSelector: {kubernetes.io/hostname: kwok-gpu-1}
  tolerations: [{key: dedicated, value: gpu, effect: NoSchedule}]
  containers:
  - name: model
    image: inference:1
    resources: {requests: {cpu: "1", memory: 100Gi}, limits: {memory: 100Gi}}
"#;

pub fn by_the_real_scheduler(c: &super::Cluster) {
    c.kubectl(&["apply", "-f", "-"], Some(OBJECTS));
    super::wait_until("the executor runs on the gpu node", 60, || {
        c.pods().iter().any(|p| {
            p["metadata"]["name"] == "cp-preempt-exec-1" && p["status"]["phase"] == "Running"
        })
    });
    let kc = c.admin.display().to_string();
    let watcher = Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args([
            "status",
            "-n",
            "spark-jobs",
            "-o",
            "json",
            "--no-driver-api",
        ])
        .args(["--for", "15s", "--kubeconfig", &kc])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("status --for");
    std::thread::sleep(Duration::from_secs(3));
    c.kubectl(&["apply", "-f", "-"], Some(PREEMPTOR));
    let out = watcher.wait_with_output().expect("status --for ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("status json");
    let app = doc["apps"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["app_id"] == "spark-cp-preempt"))
        .unwrap_or_else(|| panic!("no app spark-cp-preempt in {doc}"));
    let e = &app["executors"][0];
    assert_eq!(e["findings"][0], "preempted", "{e}");
    assert_eq!(e["state"], "deleted", "{e}");
    eprintln!("a real preemption: {e}");
    let events = c.kubectl(
        &[
            "-n",
            "spark-jobs",
            "get",
            "events",
            "--field-selector",
            "reason=Preempted",
        ],
        None,
    );
    assert!(events.contains("cp-preempt-exec-1"), "{events}");
    c.kubectl(
        &["-n", "spark-jobs", "delete", "pod", "urgent-inference"],
        None,
    );
    c.kubectl(&["delete", "priorityclass", "spark-triage-test-high"], None);
}
