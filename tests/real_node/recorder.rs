//! The flight recorder's image as a real pod: scripts/image.sh assembles it (this test's
//! binary inside), the node's containerd imports it, and deploy/'s cluster variant with the
//! events component runs it (its PVC an emptyDir, its image local, its CPU request 0 so the
//! Spark jobs' pods fit the node as before). Its readiness probe passing means the image's
//! entrypoint runs `record` with the ServiceAccount and the read-only ClusterRole as the
//! manifests grant them; after the Spark jobs, its /metrics (through the API server's pod
//! proxy) counts their endings and its Events are on their drivers.

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

/// Its /metrics, through `kubectl port-forward` (the API server, the kubelet's stream into
/// the pod's network): on this machine the node's pod addresses are not reachable from a
/// test's process directly (a sandbox proxy answers), nor through the API server's pod proxy
/// ("resolve_deny: denied destination").
fn metrics(c: &Cluster) -> String {
    use std::io::{BufRead, Read, Write};
    let (code, name, err) = recorder_pods(c, "{.items[0].metadata.name}");
    assert_eq!(code, 0, "{err}");
    let mut pf = std::process::Command::new("kubectl")
        .args(["--kubeconfig", &c.admin.display().to_string()])
        .args(["-n", "spark-triage", "port-forward"])
        .arg(format!("pod/{}", name.trim()))
        .arg(":9090")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl port-forward");
    let mut first = String::new();
    std::io::BufReader::new(pf.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("reads");
    // "Forwarding from 127.0.0.1:43127 -> 9090"
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("port-forward said {first:?}"))
        .to_owned();
    let addr = format!("127.0.0.1:{port}");
    let got = (|| -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(&addr)?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut text = String::new();
        s.read_to_string(&mut text)?;
        Ok(text)
    })();
    let _ = pf.kill();
    let _ = pf.wait();
    let text = got.unwrap_or_else(|e| panic!("{addr}: {e}"));
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

fn endings(text: &str, app: &str, cause: &str) -> f64 {
    let want = format!("app=\"{app}\",cause=\"{cause}\"");
    text.lines()
        .filter(|l| l.starts_with("spark_triage_executor_endings_total{") && l.contains(&want))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
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
    let mut last = String::new();
    // Endings are counted 15 s after they settle; Events are planned and written every 5 s.
    wait_until(
        "the recorder's metrics and Events for the Spark jobs",
        90,
        || {
            last = metrics(c);
            endings(&last, "rn-spark-oom", "container-oom-killed") >= 1.0
            && endings(&last, "rn-jvm-oom", "jvm-oom") >= 1.0
            && last.contains(r#"spark_triage_app_verdict{namespace="spark-jobs",app="rn-driver-oom",cause="driver-oom-killed"} 1"#)
            && !events(c, "SparkExecutorContainerOOMKilled").is_empty()
            && !events(c, "SparkAppDriverOOMKilled").is_empty()
        },
    );
    eprintln!(
        "the recorder pod's verdict metrics:\n{}",
        last.lines()
            .filter(|l| l.starts_with("spark_triage_executor_endings_total")
                || l.starts_with("spark_triage_app_verdict{"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let oom = &events(c, "SparkExecutorContainerOOMKilled")[0];
    assert!(
        oom["involvedObject"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("rn-spark-oom") && n.ends_with("-driver")),
        "on the driver: {oom}"
    );
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
