//! spark-triage against a real Kubernetes control plane (kube-apiserver with RBAC, etcd,
//! kube-scheduler, kube-controller-manager, kwok's fake nodes), built from Go modules by
//! `scripts/control-plane.sh`. One cluster for the whole file, used in order: the `mixed`
//! scenario played by a Spark-like driver (mixed.rs) against the simulator's reference
//! verdicts; a preemption by the real scheduler; verdicts of
//! executors that kwok ends with 137 OOMKilled, 52 and 0; the real scheduler's
//! FailedScheduling messages as pending reasons; a watch across an API server restart; the
//! live view in tmux; the simulator compared with the real API server (compare.rs); a
//! least-privileged user's real 403s and
//! the operators' SparkApplications with their CRDs installed (operators.rs);
//! access reviews; `kill`, `hold` and `release` with the real finalizer and graceful-deletion
//! semantics; `down` leaving no process. Without Go, kubectl or openssl (build.rs) it is
//! ignored, with its reason; a run the script skips all the same fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use cmd::{cmd, wait_until};
use serde_json::Value;
use tmux::Tmux;

#[path = "../support/cmd.rs"]
mod cmd;
mod compare;
mod mixed;
mod operators;
mod preemption;
#[path = "../support/reference.rs"]
mod reference;
#[path = "../support/spark_pod.rs"]
mod spark_pod;
#[path = "../support/tmux.rs"]
mod tmux;

const NS: &str = "spark-jobs";
const APP: &str = "spark-cp-0001";

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

/// The running cluster; `down` on drop, whatever happened.
struct Cluster {
    admin: PathBuf,
    viewer: PathBuf,
    run: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&["down"]);
    }
}

fn script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(format!("{}/scripts/control-plane.sh", root()))
        .args(args)
        .env("CP_DIR", run_dir())
        // Not the script's default port: a cluster someone started by hand keeps running.
        .env("CP_PORT", "16543")
        .output()
        .expect("bash runs")
}

fn run_dir() -> PathBuf {
    PathBuf::from(root()).join("target/control-plane/run-test")
}

fn up() -> Cluster {
    let out = script(&["up"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    // The build found go, kubectl and openssl: a skip now is a failure, with its reason.
    let skipped = stdout
        .lines()
        .find(|l| l.contains("control-plane: SKIPPED"));
    assert!(skipped.is_none(), "{}", skipped.unwrap_or_default());
    assert!(out.status.success(), "control-plane.sh up failed: {stdout}");
    let admin = PathBuf::from(stdout.lines().last().expect("a last line").trim());
    assert!(admin.is_file(), "{}", admin.display());
    let run = admin.parent().expect("run dir").to_path_buf();
    Cluster {
        viewer: run.join("viewer.kubeconfig"),
        admin,
        run,
    }
}

impl Cluster {
    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let kc = self.admin.display().to_string();
        let (code, out, err) = cmd(
            "kubectl",
            &[&["--kubeconfig", &kc, "--request-timeout=20s"], args].concat(),
            stdin,
        );
        assert_eq!(code, 0, "kubectl {args:?}: {err}");
        out
    }

    fn pods(&self) -> Vec<Value> {
        let out = self.kubectl(&["-n", NS, "get", "pods", "-o", "json"], None);
        let v: Value = serde_json::from_str(&out).expect("pods json");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// spark-triage as `kubeconfig`'s user.
    fn triage(&self, kubeconfig: &Path, args: &[&str]) -> (i32, String, String) {
        let kc = kubeconfig.display().to_string();
        cmd(
            env!("CARGO_BIN_EXE_spark-triage"),
            &[args, &["--kubeconfig", &kc]].concat(),
            None,
        )
    }

    fn status(&self) -> Value {
        let (code, out, err) = self.triage(
            &self.admin,
            &["status", "-n", NS, "-o", "json", "--no-driver-api"],
        );
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("status json")
    }
}

fn executor(
    driver_uid: &str,
    id: u32,
    annotations: &str,
    spec_extra: &str,
    memory: &str,
) -> String {
    let container = format!(
        "image: apache/spark:4.0.1\n    args: [executor]\n    resources:\n      requests: {{cpu: \"1\", memory: {memory}}}\n      limits: {{memory: {memory}}}"
    );
    spark_pod::Executor {
        app: "cp-etl",
        app_id: APP,
        namespace: NS,
        driver_uid,
        id,
        annotations,
        grace: 30,
        spec: spec_extra,
        container: &container,
    }
    .manifest()
}

fn driver() -> String {
    spark_pod::driver(
        "cp-etl",
        APP,
        NS,
        "",
        "image: apache/spark:4.0.1\n    args: [driver]\n    resources:\n      requests: {cpu: \"1\", memory: 2Gi}",
    )
}

fn app(doc: &Value) -> &Value {
    doc["apps"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["app_id"] == APP))
        .unwrap_or_else(|| panic!("no app {APP} in {doc}"))
}

fn exec(doc: &Value, id: i64) -> &Value {
    app(doc)["executors"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["id"] == id))
        .unwrap_or_else(|| panic!("no executor {id} in {}", app(doc)))
}

#[test]
#[cfg_attr(
    not(all(have_go, have_kubectl, have_openssl)),
    ignore = "needs go, kubectl and openssl (the control plane is built from Go modules; .ci/run installs them)"
)]
fn spark_triage_on_a_real_control_plane() {
    let c = up();

    // The kwok nodes are Ready.
    let nodes: Value =
        serde_json::from_str(&c.kubectl(&["get", "nodes", "-o", "json"], None)).expect("nodes");
    let ready = nodes["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|n| {
            n["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
        .count();
    assert_eq!(ready, 4, "{nodes}");

    // The `mixed` scenario played by a Spark-like driver: the simulator's reference verdicts.
    mixed::same_verdicts_as_the_simulator(&c);
    // The real scheduler preempts an executor.
    preemption::by_the_real_scheduler(&c);

    // An app: a driver and executors that kwok ends (137 OOMKilled, 52, 0), one that runs,
    // one too big for any node, one bound for the tainted node.
    c.kubectl(&["apply", "-f", "-"], Some(&driver()));
    let uid = c.kubectl(
        &[
            "-n",
            NS,
            "get",
            "pod",
            "cp-etl-driver",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
        None,
    );
    let ends = |code: u32, reason: &str| {
        format!(
            r#""spark-triage.test/exit-code": "{code}", "spark-triage.test/after": "2s"{}"#,
            if reason.is_empty() {
                String::new()
            } else {
                format!(r#", "spark-triage.test/reason": "{reason}""#)
            }
        )
    };
    let manifests = [
        executor(&uid, 1, &ends(137, "OOMKilled"), "", "1Gi"),
        executor(&uid, 2, &ends(52, ""), "", "1Gi"),
        executor(&uid, 3, "", "", "1Gi"),
        executor(&uid, 4, "", "", "100Gi"),
        executor(&uid, 5, "", "nodeSelector: {pool: gpu}", "1Gi"),
        executor(&uid, 6, &ends(0, ""), "", "1Gi"),
    ]
    .join("---\n");
    c.kubectl(&["apply", "-f", "-"], Some(&manifests));
    let phase_of = |c: &Cluster, name: &str| {
        c.pods()
            .into_iter()
            .find(|p| p["metadata"]["name"] == name)
            .map(|p| p["status"]["phase"].as_str().unwrap_or_default().to_owned())
    };
    wait_until("executors 1, 2 and 6 ended", 60, || {
        [1, 2, 6].iter().all(|id| {
            matches!(
                phase_of(&c, &format!("cp-etl-exec-{id}")).as_deref(),
                Some("Failed" | "Succeeded")
            )
        })
    });
    wait_until("FailedScheduling events for 4 and 5", 60, || {
        let ev = c.kubectl(
            &[
                "-n",
                NS,
                "get",
                "events",
                "--field-selector",
                "reason=FailedScheduling",
                "-o",
                "name",
            ],
            None,
        );
        ev.lines().count() >= 2
    });

    // Verdicts from the real API server's pods and events.
    let doc = c.status();
    let e1 = exec(&doc, 1);
    assert_eq!(e1["findings"][0], "container-oom-killed", "{e1}");
    assert_eq!(
        (e1["state"].as_str(), e1["exit_code"].as_i64()),
        (Some("failed"), Some(137))
    );
    let e2 = exec(&doc, 2);
    assert_eq!(e2["findings"][0], "jvm-oom", "{e2}");
    assert_eq!(exec(&doc, 3)["state"], "running");
    assert_eq!(exec(&doc, 6)["state"], "succeeded", "{}", exec(&doc, 6));
    let reasons = app(&doc)["pending_reasons"].to_string();
    assert!(reasons.contains("Insufficient memory"), "{reasons}");
    assert!(reasons.contains("untolerated taint"), "{reasons}");
    eprintln!("verdicts on the real control plane: {}", app(&doc));

    // The API server restarts while the tool watches: the watches resume (or relist) and an
    // executor that kwok ends after the restart is seen with its verdict.
    c.kubectl(
        &["apply", "-f", "-"],
        Some(&executor(
            &uid,
            7,
            &ends(137, "OOMKilled").replace("2s", "15s"),
            "",
            "1Gi",
        )),
    );
    let kc = c.admin.display().to_string();
    let watcher = Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args([
            "status",
            "-n",
            NS,
            "-o",
            "json",
            "--no-driver-api",
            "--for",
            "35s",
        ])
        .args(["--poll-interval", "5s", "--kubeconfig", &kc])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("status --for");
    std::thread::sleep(Duration::from_secs(3));
    let restart = script(&["restart-apiserver"]);
    assert!(
        restart.status.success(),
        "{}",
        String::from_utf8_lossy(&restart.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&restart.stderr).trim());
    let out = watcher.wait_with_output().expect("status --for ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("status json");
    let e7 = exec(&doc, 7);
    assert_eq!(e7["findings"][0], "container-oom-killed", "{e7}");
    assert_eq!(e7["exit_code"], 137, "{e7}");
    assert_eq!(exec(&doc, 3)["state"], "running");

    // The live view in a real terminal (tmux, 200×50) on the real cluster: the first screen
    // names the app, its OOM kills and why executors wait; q quits and restores the terminal.
    // Without tmux (not found when the tests were built) this part is said and left out.
    if Tmux::available() {
        let screen = tmux::live_view(
            &format!("-n {NS} --no-driver-api --kubeconfig {kc}"),
            &[
                "cp-etl",
                "OOMKilled (137)",
                "JVM OOM (52)",
                "Insufficient memory",
            ],
            30,
        );
        eprintln!("the live view on the real control plane:\n{screen}");
    }

    // The least-privileged user (get/list/watch pods in spark-jobs, nothing else): all
    // namespaces is refused by the real API server, in one line; in its namespace the tool
    // works and says what it may not read; writes are refused before any request by the real
    // SelfSubjectAccessReview.
    let (code, _, err) = c.triage(&c.viewer, &["status", "-A"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("spark-triage: forbidden"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, out, err) = c.triage(&c.viewer, &["status", "-n", NS, "--no-driver-api"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("cp-etl"), "{out}");
    eprintln!("viewer's status:\n{out}{err}");
    assert!(
        format!("{out}{err}").contains("forbidden"),
        "the events it may not read are said: {out}{err}"
    );
    let (code, out, err) = c.triage(&c.viewer, &["kill", "-n", NS, "--app", APP, "3", "--yes"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(format!("{out}{err}").contains("delete pods"), "{out}{err}");
    assert_eq!(phase_of(&c, "cp-etl-exec-3").as_deref(), Some("Running"));

    // kill: a graceful deletion that kwok completes; nothing left Terminating.
    let (code, out, err) = c.triage(&c.admin, &["kill", "-n", NS, "--app", APP, "3", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    wait_until("executor 3 deleted", 60, || {
        phase_of(&c, "cp-etl-exec-3").is_none()
    });

    // hold: the tool's finalizer keeps a deleted executor pod (Terminating) until release.
    let (code, out, err) = c.triage(
        &c.admin,
        &["hold", "-n", NS, "--app", APP, "on", "--ttl", "10m"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let held = |c: &Cluster, name: &str| {
        c.pods()
            .into_iter()
            .find(|p| p["metadata"]["name"] == name)
            .is_some_and(|p| {
                p["metadata"]["finalizers"].as_array().is_some_and(|f| {
                    f.iter()
                        .any(|f| f.as_str().is_some_and(|f| f.contains("spark-triage")))
                })
            })
    };
    wait_until("executor 1 held", 30, || held(&c, "cp-etl-exec-1"));
    c.kubectl(
        &["-n", NS, "delete", "pod", "cp-etl-exec-1", "--wait=false"],
        None,
    );
    std::thread::sleep(Duration::from_secs(3));
    let kept = c
        .pods()
        .into_iter()
        .find(|p| p["metadata"]["name"] == "cp-etl-exec-1")
        .expect("a held pod outlives its deletion");
    assert!(kept["metadata"]["deletionTimestamp"].is_string(), "{kept}");
    let (code, out, err) = c.triage(&c.admin, &["release", "-n", NS, "--app", APP]);
    assert_eq!(code, 0, "{out}{err}");
    wait_until("the released pod is gone", 60, || {
        phase_of(&c, "cp-etl-exec-1").is_none()
    });
    wait_until("no pod left Terminating", 60, || {
        c.pods()
            .iter()
            .all(|p| p["metadata"]["deletionTimestamp"].is_null())
    });

    // Applications before their pods: the operators' CRDs installed, their objects read.
    operators::before_their_pods(&c);

    // The simulator against the real API server, operation by operation.
    let sim = compare::start_sim(&c.run);
    compare::compare(&sim.kubeconfig, &c.admin);
    drop(sim);

    // down leaves no process behind.
    let pids: Vec<i32> = std::fs::read_dir(&c.run)
        .expect("run dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "pid"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
        .collect();
    assert_eq!(
        pids.len(),
        5,
        "etcd, apiserver, scheduler, controller-manager, kwok"
    );
    let out = script(&["down"]);
    assert!(out.status.success());
    for pid in pids {
        assert!(
            !PathBuf::from(format!("/proc/{pid}")).exists(),
            "process {pid} outlived down"
        );
    }
    assert!(!c.run.exists(), "down removes its state");
}

/// The executors' manifests are the pods they mean (checked without a cluster).
#[test]
fn executor_manifests_parse() {
    let text = executor(
        "uid-1",
        5,
        r#""spark-triage.test/exit-code": "137""#,
        "nodeSelector: {pool: gpu}",
        "1Gi",
    );
    let pod: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(pod["metadata"]["name"], "cp-etl-exec-5");
    assert_eq!(pod["metadata"]["labels"]["spark-app-selector"], APP);
    assert_eq!(
        pod["metadata"]["annotations"]["spark-triage.test/exit-code"],
        "137"
    );
    assert_eq!(
        pod["metadata"]["ownerReferences"][0]["name"],
        "cp-etl-driver"
    );
    assert_eq!(pod["spec"]["nodeSelector"]["pool"], "gpu");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        (c["image"].as_str(), c["args"][0].as_str()),
        (Some("apache/spark:4.0.1"), Some("executor"))
    );
    assert_eq!(c["resources"]["requests"]["memory"], "1Gi");
    assert_eq!(c["resources"]["limits"]["memory"], "1Gi");
    let d: Value = serde_saphyr::from_str(&driver()).expect("driver yaml");
    assert_eq!(d["metadata"]["name"], "cp-etl-driver");
    assert_eq!(d["metadata"]["labels"]["spark-role"], "driver");
    assert_eq!(
        d["spec"]["containers"][0]["resources"]["requests"]["memory"],
        "2Gi"
    );
}
