//! The flight recorder's image as a real pod: scripts/image.sh assembles it (this test's
//! binary inside), the node's containerd imports it, and deploy/'s cluster variant with the
//! events component runs it on the real node (its PVC an emptyDir, its image local, its CPU
//! request 0 so the Spark jobs' pods fit the node as before; the control plane's kwok nodes
//! would take it otherwise, and fake it). Its readiness probe passing means the image's
//! entrypoint runs `record` with the ServiceAccount and the read-only ClusterRole as the
//! manifests grant them; after the Spark jobs, its Events are on their drivers. (Its /metrics
//! are checked on the simulator, tests/integration/metrics.rs; a scrape by a busybox pod on
//! this node came back empty, not looked into.)

use std::path::PathBuf;

use super::{Cluster, NS, cmd, root, run_dir, script, wait_until};

const IMAGE: &str = "localhost/spark-triage:real-node";

fn overlay() -> PathBuf {
    run_dir().join("recorder")
}

/// Builds and imports the image, applies the manifests; returns once the pod is Ready.
pub fn start(c: &Cluster) {
    let tar = run_dir().join("recorder-image.tar");
    let (code, _, err) = cmd(
        &format!("{}/scripts/image.sh", root()),
        &[
            "--bin",
            env!("CARGO_BIN_EXE_spark-triage"),
            "--out",
            &tar.display().to_string(),
            "--ref",
            IMAGE,
        ],
        None,
    );
    assert_eq!(code, 0, "scripts/image.sh: {err}");
    let out = script(&["import-image", &tar.display().to_string()]);
    assert!(
        out.status.success(),
        "import-image: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = overlay();
    std::fs::create_dir_all(&dir).expect("overlay dir");
    // The pod reaches the API server at the node's bridge address (no kube-proxy here: the
    // Service's address is not routed), as the Spark drivers do.
    let port = c.port();
    let (name, tag) = IMAGE.rsplit_once(':').expect("name:tag");
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../../../deploy/cluster
components:
  - ../../../../deploy/components/events
images:
  - name: ghcr.io/spark-triage/spark-triage
    newName: {name}
    newTag: {tag}
patches:
  - target: {{kind: Deployment, name: spark-triage-recorder}}
    patch: |-
      - op: replace
        path: /spec/template/spec/volumes/0
        value: {{name: recordings, emptyDir: {{}}}}
      - op: add
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests
        value: {{cpu: "0", memory: 64Mi}}
      - op: add
        path: /spec/template/spec/nodeSelector
        value: {{kubernetes.io/hostname: spark-triage-node}}
      - op: add
        path: /spec/template/spec/containers/0/env
        value:
          - {{name: KUBERNETES_SERVICE_HOST, value: "10.89.0.1"}}
          - {{name: KUBERNETES_SERVICE_PORT, value: "{port}"}}
  - target: {{kind: PersistentVolumeClaim, name: spark-triage-recordings}}
    patch: |-
      $patch: delete
      apiVersion: v1
      kind: PersistentVolumeClaim
      metadata:
        name: spark-triage-recordings
        namespace: spark-triage
"#
        ),
    )
    .expect("overlay");
    c.kubectl(&["apply", "-k", &dir.display().to_string()], None);
    wait_until("the recorder pod Ready", 120, || {
        let (code, out, _) = recorder_pods(
            c,
            "{.items[*].status.conditions[?(@.type==\"Ready\")].status}",
        );
        code == 0 && out.trim() == "True"
    });
}

/// A jsonpath of the recorder's pods.
fn recorder_pods(c: &Cluster, jsonpath: &str) -> (i32, String, String) {
    c.kubectl_try(
        &[
            "-n",
            "spark-triage",
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/component=flight-recorder",
            "-o",
            &format!("jsonpath={jsonpath}"),
        ],
        None,
    )
}

/// The Event of this reason on the driver of the app whose pods' names start with `app`.
fn on_driver(c: &Cluster, reason: &str, app: &str) -> Option<serde_json::Value> {
    events(c, reason).into_iter().find(|e| {
        e["involvedObject"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with(app) && n.ends_with("-driver"))
    })
}

fn events(c: &Cluster, reason: &str) -> Vec<serde_json::Value> {
    let out = c.kubectl(
        &[
            "-n",
            NS,
            "get",
            "events",
            "--field-selector",
            &format!("reason={reason}"),
            "-o",
            "json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("events json");
    v["items"].as_array().cloned().unwrap_or_default()
}

/// After the Spark jobs: what the recorder pod says of them.
pub fn check(c: &Cluster) {
    // Verdicts settle 15 s; Events are planned and written every 5 s.
    wait_until(
        "the recorder's Events on the Spark jobs' drivers",
        90,
        || {
            on_driver(c, "SparkExecutorContainerOOMKilled", "rn-spark-oom").is_some()
                && on_driver(c, "SparkExecutorJVMOOM", "rn-jvm-oom").is_some()
                && on_driver(c, "SparkAppDriverOOMKilled", "rn-driver-oom").is_some()
        },
    );
    // (The truth table's OOM kill has one too, on its fake driver rn-etl-driver.)
    let oom = on_driver(c, "SparkExecutorContainerOOMKilled", "rn-spark-oom").expect("waited for");
    assert!(
        oom["message"]
            .as_str()
            .is_some_and(|m| m.contains("memoryOverhead")),
        "{oom}"
    );
    // Nothing leaves the recorder but reads and its Events: the ServiceAccount may not
    // delete a pod (the manifests' read-only grant, enforced by a real API server).
    let (code, out, _) = c.kubectl_try(
        &[
            "auth",
            "can-i",
            "delete",
            "pods",
            "-n",
            NS,
            "--as",
            "system:serviceaccount:spark-triage:spark-triage-recorder",
        ],
        None,
    );
    assert_eq!(
        (code, out.trim()),
        (1, "no"),
        "the recorder cannot delete pods"
    );
    let (_, out, _) = c.kubectl_try(
        &[
            "auth",
            "can-i",
            "create",
            "events",
            "-n",
            NS,
            "--as",
            "system:serviceaccount:spark-triage:spark-triage-recorder",
        ],
        None,
    );
    assert_eq!(out.trim(), "yes", "the events component's grant");
}
