//! Applications before their pods on a real API server (#56): the operators' CRDs installed
//! into kube-apiserver (tests/fixtures/operator-crds.yaml), SparkApplications whose status
//! is written as each operator writes it (no operator runs here: the object is the
//! witness), and the tool's discovery and list against them. Before the CRDs, the tool asks
//! nothing of them.

use serde_json::Value;

use super::Cluster;
use super::cmd::wait_until;

const NS: &str = "spark-operators";

const APPS: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: spark-operators}
---
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: nightly, namespace: spark-operators}
spec:
  type: Scala
  mode: cluster
  sparkVersion: 4.0.1
  restartPolicy: {type: OnFailure, onFailureRetries: 2, onSubmissionFailureRetries: 1}
---
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: sessionize, namespace: spark-operators}
spec:
  type: Scala
  mode: cluster
  restartPolicy: {type: OnFailure, onFailureRetries: 3}
---
apiVersion: spark.apache.org/v1
kind: SparkApplication
metadata: {name: pi, namespace: spark-operators}
spec:
  mainClass: org.apache.spark.examples.SparkPi
  applicationTolerations: {restartConfig: {restartPolicy: Never}}
---
apiVersion: sparkoperator.k8s.io/v1beta2
kind: ScheduledSparkApplication
metadata: {name: hourly, namespace: spark-operators}
spec:
  schedule: "0 * * * *"
  template: {type: Scala, mode: cluster}
---
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: hourly-1765000000
  namespace: spark-operators
  labels: {sparkoperator.k8s.io/scheduled-app-name: hourly}
spec: {type: Scala, mode: cluster}
---
apiVersion: sparkoperator.k8s.io/v1beta2
kind: ScheduledSparkApplication
metadata: {name: typo, namespace: spark-operators}
spec:
  schedule: "0 0 2 * * *"
  concurrencyPolicy: Allow
  template: {type: Scala, mode: cluster}
"#;

/// The status each operator would write, through the status subresource.
fn set_status(c: &Cluster, resource: &str, name: &str, status: &Value) {
    let patch = serde_json::json!({ "status": status }).to_string();
    c.kubectl(
        &[
            "-n",
            NS,
            "patch",
            resource,
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ],
        None,
    );
}

fn status_json(c: &Cluster) -> Value {
    let (code, out, err) = c.triage(
        &c.admin,
        &[
            "status",
            "-n",
            NS,
            "-o",
            "json",
            "--no-driver-api",
            "--poll-interval",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

pub fn before_their_pods(c: &Cluster) {
    // Without the CRDs: nothing of them, and the status answers.
    c.kubectl(&["create", "namespace", NS], None);
    let doc = status_json(c);
    assert!(!doc.to_string().contains("\"operator\""), "{doc}");

    let crds = std::fs::read_to_string(format!(
        "{}/tests/fixtures/operator-crds.yaml",
        super::root()
    ))
    .expect("the CRDs");
    c.kubectl(&["apply", "-f", "-"], Some(&crds));
    c.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/sparkapplications.sparkoperator.k8s.io",
            "crd/sparkapplications.spark.apache.org",
            "crd/scheduledsparkapplications.sparkoperator.k8s.io",
        ],
        None,
    );
    let apps = APPS
        .split("---\n")
        .filter(|d| !d.contains("kind: Namespace"))
        .collect::<Vec<_>>()
        .join("---\n");
    // The API server may take a moment to serve a CRD just Established.
    wait_until("the SparkApplications are created", 60, || {
        let kc = c.admin.display().to_string();
        let (code, _, _) = super::cmd::cmd(
            "kubectl",
            &["--kubeconfig", &kc, "apply", "-f", "-"],
            Some(&apps),
        );
        code == 0
    });
    let quota = "failed to submit spark application: failed to run spark-submit: Exception in \
        thread \"main\" io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: \
        POST at: https://kubernetes.default.svc/api/v1/namespaces/spark-operators/pods. Message: \
        pods \"nightly-driver\" is forbidden: exceeded quota: compute, requested: \
        limits.memory=4505Mi, used: limits.memory=60Gi, limited: limits.memory=62Gi. Received \
        status: Status(apiVersion=v1, code=403, kind=Status, reason=Forbidden, status=Failure).";
    set_status(
        c,
        "sparkapplications.sparkoperator.k8s.io",
        "nightly",
        &serde_json::json!({"applicationState": {"state": "SUBMISSION_FAILED", "errorMessage": quota},
                            "submissionAttempts": 2, "executionAttempts": 0}),
    );
    set_status(
        c,
        "sparkapplications.sparkoperator.k8s.io",
        "sessionize",
        &serde_json::json!({"applicationState": {"state": "PENDING_RERUN",
                                "errorMessage": "driver container failed with ExitCode: 1, Reason: Error"},
                            "submissionAttempts": 1, "executionAttempts": 1}),
    );
    set_status(
        c,
        "sparkapplications.spark.apache.org",
        "pi",
        &serde_json::json!({"currentState": {"currentStateSummary": "SchedulingFailure",
                "message": "Failed to request driver from scheduler backend. pods \"pi-0-driver\" is \
                    forbidden: User \"system:serviceaccount:spark-operators:spark\" cannot create \
                    resource \"pods\" in API group \"\" in the namespace \"spark-operators\""},
            "stateTransitionHistory": {"0": {"currentStateSummary": "Submitted"},
                                       "1": {"currentStateSummary": "SchedulingFailure"}}}),
    );
    // A schedule with no concurrencyPolicy whose first run's object exists, COMPLETED
    // (kubeflow starts no other while it does),
    // its next run two hours past; one whose cron the operator could not parse.
    let hour = |h: i64| {
        (chrono::Utc::now() + chrono::Duration::hours(h))
            .format("%Y-%m-%dT%H:00:00Z")
            .to_string()
    };
    set_status(
        c,
        "scheduledsparkapplications.sparkoperator.k8s.io",
        "hourly",
        &serde_json::json!({"scheduleState": "Scheduled", "lastRun": hour(-3),
            "nextRun": hour(-2), "lastRunName": "hourly-1765000000"}),
    );
    set_status(
        c,
        "sparkapplications.sparkoperator.k8s.io",
        "hourly-1765000000",
        &serde_json::json!({"applicationState": {"state": "COMPLETED"}}),
    );
    set_status(
        c,
        "scheduledsparkapplications.sparkoperator.k8s.io",
        "typo",
        &serde_json::json!({"scheduleState": "FailedValidation",
            "reason": "expected exactly 5 fields, found 6: [0 0 2 * * *]"}),
    );

    let doc = status_json(c);
    let app = |name: &str| {
        doc["apps"]
            .as_array()
            .expect("apps")
            .iter()
            .find(|a| a["app_name"] == name)
            .unwrap_or_else(|| panic!("no app {name}: {doc:#}"))
            .clone()
    };
    let nightly = app("nightly");
    assert_eq!(
        nightly["verdict"]["cause"], "submission-failed",
        "{nightly:#}"
    );
    assert!(
        nightly["verdict"]["summary"]
            .as_str()
            .expect("a summary")
            .contains("the ResourceQuota compute refused the driver pod"),
        "{nightly:#}"
    );
    assert_eq!(
        nightly["operator"]["api_version"],
        "sparkoperator.k8s.io/v1beta2"
    );
    let rerun = app("sessionize");
    assert_eq!(rerun["verdict"]["cause"], "rerun-pending", "{rerun:#}");
    let pi = app("pi");
    assert_eq!(pi["verdict"]["cause"], "submission-failed", "{pi:#}");
    assert!(
        pi["verdict"]["summary"].as_str().expect("a summary").contains(
            "system:serviceaccount:spark-operators:spark may not create pods in namespace spark-operators"
        ),
        "{pi:#}"
    );
    assert_eq!(pi["operator"]["api_version"], "spark.apache.org/v1");
    let hourly = app("hourly");
    assert_eq!(hourly["verdict"]["cause"], "runs-skipped", "{hourly:#}");
    assert!(
        hourly["verdict"]["summary"]
            .as_str()
            .expect("a summary")
            .contains("concurrencyPolicy is not set"),
        "{hourly:#}"
    );
    assert_eq!(hourly["operator"]["kind"], "ScheduledSparkApplication");
    let typo = app("typo");
    assert_eq!(typo["verdict"]["cause"], "schedule-invalid", "{typo:#}");
    c.kubectl(&["delete", "namespace", NS, "--wait=false"], None);
}
