//! The simulator checked by a client nobody here wrote: the real `kubectl` on PATH.
//! Without kubectl these tests are ignored with that reason (build.rs), except in CI
//! (`CI=true`), where they run and a missing kubectl fails them.

use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use spark_triage_sim::SimHandle;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::common::{client, eventually, phase, plain_pod, start_sim, wait_running};

struct Kubectl {
    kubeconfig: String,
    cache: tempdir::TempDir,
}

mod tempdir {
    /// A directory removed on drop (kubectl's discovery cache must not leak between runs).
    pub struct TempDir(pub std::path::PathBuf);
    impl TempDir {
        pub fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!(
                "spark-triage-{tag}-{}-{:x}",
                std::process::id(),
                fastrand::u64(..)
            ));
            std::fs::create_dir_all(&p).expect("temp dir");
            Self(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Kubectl {
    fn new(sim: &SimHandle) -> Self {
        Self {
            kubeconfig: sim.kubeconfig.display().to_string(),
            cache: tempdir::TempDir::new("kubectl-cache"),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache.0)
            .args(args);
        c.stdin(Stdio::null()).kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = tokio::time::timeout(Duration::from_secs(30), self.cmd(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} hung"))
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The STATUS cell of a pod's row in `kubectl get pods` output.
fn status_of(table: &str, name: &str) -> Option<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(2))
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (a real third-party client; .ci/run installs it)"
)]
async fn kubectl_reads_the_mixed_scenario() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let k = Kubectl::new(&sim);
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let names = eventually(40, "etl executors 9, 12 and 13 exist", || async {
        let l = pods
            .list(&ListParams::default().labels("spark-app-name=etl-nightly,spark-role=executor"))
            .await
            .ok()?;
        let find = |id: &str| {
            l.items
                .iter()
                .find(|p| p.labels()["spark-exec-id"] == id)
                .map(ResourceExt::name_any)
        };
        let thirteen = l
            .items
            .iter()
            .find(|p| p.labels()["spark-exec-id"] == "13")
            .filter(|p| phase(p) == "Running")?;
        Some((find("9")?, find("12")?, thirteen.name_any(), find("1")?))
    })
    .await;
    let (nine, twelve, thirteen, one) = names;
    // The kubelet retries the pull now and then (ErrImagePull for a moment): look again.
    let table = eventually(30, "exec 9 in ImagePullBackOff", || async {
        let t = k
            .run(&[
                "get",
                "pods",
                "-n",
                "spark-jobs",
                "-l",
                "spark-role=executor",
            ])
            .await;
        (status_of(&t, &nine).as_deref() == Some("ImagePullBackOff")).then_some(t)
    })
    .await;
    assert!(table.starts_with("NAME"), "{table}");
    assert_eq!(
        status_of(&table, &twelve).as_deref(),
        Some("Pending"),
        "{table}"
    );
    assert_eq!(
        status_of(&table, &thirteen).as_deref(),
        Some("Running"),
        "{table}"
    );
    assert!(
        !table.contains("-driver "),
        "the selector keeps drivers out: {table}"
    );

    let json_out = k
        .run(&["get", "pods", "-n", "spark-jobs", "-o", "json"])
        .await;
    let list: serde_json::Value = serde_json::from_str(&json_out).expect("kubectl -o json is JSON");
    assert_eq!(list["kind"], "List");
    assert!(list["items"].as_array().unwrap().len() >= 17);

    let described = k
        .run(&["describe", "pod", "-n", "spark-jobs", &twelve])
        .await;
    let events = described
        .split("Events:")
        .nth(1)
        .expect("an Events section");
    assert!(
        events.contains("FailedScheduling") && events.contains("Insufficient memory"),
        "{described}"
    );

    let logs = k.run(&["logs", "-n", "spark-jobs", &one]).await;
    assert!(logs.contains("Starting executor ID 1"), "{logs}");
    let svc = k.run(&["get", "svc", "-n", "spark-jobs"]).await;
    assert!(
        svc.contains("etl-nightly-") && svc.contains("-driver-svc"),
        "{svc}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (a real third-party client; .ci/run installs it)"
)]
async fn kubectl_status_column_watch_and_delete() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let k = Kubectl::new(&sim);
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    for n in ["oom", "evicted", "victim"] {
        pods.create(
            &PostParams::default(),
            &plain_pod(n, &[("spark-role", "executor")]),
        )
        .await
        .unwrap();
    }
    let mut stuck = plain_pod("stuck", &[("spark-role", "executor")]);
    stuck.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    stuck.spec.as_mut().unwrap().node_selector =
        Some([("pool".to_owned(), "none".to_owned())].into());
    pods.create(&PostParams::default(), &stuck).await.unwrap();
    for n in ["oom", "evicted", "victim"] {
        wait_running(&pods, n).await;
    }
    let ps = PatchParams::default();
    pods.patch_status(
        "oom",
        &ps,
        &Patch::Merge(json!({"status": {"phase": "Failed", "containerStatuses": [
        {"name": "main", "image": "busybox:1.36", "imageID": "", "ready": false, "restartCount": 0,
         "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})),
    )
    .await
    .unwrap();
    pods.patch_status(
        "evicted",
        &ps,
        &Patch::Merge(json!({"status": {"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: memory."}})),
    )
    .await
    .unwrap();
    pods.delete("stuck", &DeleteParams::default())
        .await
        .unwrap();

    // `get -w` prints a change within seconds.
    let mut watch = k
        .cmd(&["get", "pods", "-n", "default", "-w"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl -w");
    let mut stdout = watch.stdout.take().expect("stdout");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    pods.create(&PostParams::default(), &plain_pod("late-arrival", &[]))
        .await
        .unwrap();
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        while !seen.contains("late-arrival") {
            let n = stdout.read(&mut buf).await.expect("read");
            assert!(n > 0, "kubectl -w ended early: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "kubectl -w did not print the new pod: {seen}"
    );
    let _ = watch.kill().await;

    let table = k
        .run(&["get", "pods", "-n", "default", "-l", "spark-role=executor"])
        .await;
    assert_eq!(
        status_of(&table, "oom").as_deref(),
        Some("OOMKilled"),
        "{table}"
    );
    assert_eq!(
        status_of(&table, "evicted").as_deref(),
        Some("Evicted"),
        "{table}"
    );
    assert_eq!(
        status_of(&table, "victim").as_deref(),
        Some("Running"),
        "{table}"
    );
    assert_eq!(
        status_of(&table, "stuck").as_deref(),
        Some("Terminating"),
        "{table}"
    );

    // `delete` returns, and the pod is gone after its grace (the kubelet's final delete).
    let t = std::time::Instant::now();
    let out = k.run(&["delete", "pod", "-n", "default", "victim"]).await;
    assert!(out.contains("pod \"victim\" deleted"), "{out}");
    assert!(t.elapsed() < Duration::from_secs(15));
    assert!(pods.get_opt("victim").await.unwrap().is_none());
}
