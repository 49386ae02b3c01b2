//! The process kubelet through the real API with the kube client: executor pods whose
//! container is Spark's `executor` entrypoint run as local processes. A shell script stands
//! in for `java` here (scripts/e2e-spark.sh runs the real JVMs); it reads the arguments the
//! kubelet built and behaves by executor id.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::{DeleteParams, LogParams, PostParams, WatchEvent, WatchParams};
use spark_triage_sim::process::ProcessOptions;
use spark_triage_sim::proctree::is_running as alive;

use crate::common::{client, eventually, phase, start_sim_with};

/// By `--executor-id`: 1 serves until SIGTERM (143), 2 grows a grandchild in its own session
/// past the limit, 3 fails like a JVM OOM (52).
const FAKE_JAVA: &str = r#"#!/bin/sh
echo $$ > java.pid
id=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--executor-id" ]; then id=$a; fi
  prev=$a
done
echo "args: $*"
echo "pod ip: $SPARK_EXECUTOR_POD_IP, local dirs: $SPARK_LOCAL_DIRS, home: $SPARK_HOME"
cat "$SPARK_CONF_DIR/spark.properties"
case "$id" in
  2) setsid sh -c 'head -c 600M /dev/zero | tail' ; sleep 60 ;;
  3) echo "java.lang.OutOfMemoryError: Java heap space" >&2; exit 52 ;;
  *) trap 'echo "RECEIVED SIGNAL TERM"; exit 143' TERM
     while true; do sleep 0.1; done ;;
esac
"#;

fn executor_pod(id: u32, limit: &str) -> Pod {
    let env: Vec<serde_json::Value> = [
        ("SPARK_DRIVER_URL", "spark://CoarseGrainedScheduler@127.0.0.1:7078"),
        ("SPARK_EXECUTOR_CORES", "1"),
        ("SPARK_EXECUTOR_MEMORY", "512m"),
        ("SPARK_APPLICATION_ID", "spark-proc"),
        ("SPARK_CONF_DIR", "/opt/spark/conf"),
        ("SPARK_RESOURCE_PROFILE_ID", "0"),
        ("SPARK_JAVA_OPT_1", "-Done"),
        ("SPARK_JAVA_OPT_0", "-Dzero"),
        ("SPARK_LOCAL_DIRS", "/var/data/spark-1"),
    ]
    .iter()
    .map(|(k, v)| serde_json::json!({"name": k, "value": v}))
    .chain([
        serde_json::json!({"name": "SPARK_EXECUTOR_ID", "value": id.to_string()}),
        serde_json::json!({"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
        serde_json::json!({"name": "SPARK_EXECUTOR_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
    ])
    .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("proc-exec-{id}"),
                     "labels": {"spark-app-selector": "spark-proc", "spark-role": "executor",
                                "spark-exec-id": id.to_string()}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "volumes": [{"name": "local", "emptyDir": {}},
                        {"name": "conf", "configMap": {"name": "proc-conf-map"}}],
            "containers": [{
                "name": "spark-kubernetes-executor", "image": "apache/spark:4.3.0", "args": ["executor"],
                "resources": {"requests": {"cpu": "100m", "memory": limit}, "limits": {"memory": limit}},
                "volumeMounts": [{"name": "local", "mountPath": "/var/data/spark-1"},
                                 {"name": "conf", "mountPath": "/opt/spark/conf"}],
                "env": env
            }]
        }
    }))
    .expect("pod")
}

fn terminated(p: &Pod) -> Option<(i32, String)> {
    let t = p
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .as_ref()?;
    Some((t.exit_code, t.reason.clone().unwrap_or_default()))
}

fn pid_of(work: &std::path::Path, pod: &str) -> Option<i32> {
    let dir = std::fs::read_dir(work.join("spark-jobs")).ok()?;
    dir.flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{pod}-"))
        })
        .and_then(|e| std::fs::read_to_string(e.path().join("java.pid")).ok())
        .and_then(|s| s.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executor_pods_run_as_processes() {
    let root = std::env::temp_dir().join(format!("spark-triage-pk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let spark_home = root.join("spark");
    std::fs::create_dir_all(spark_home.join("jars")).unwrap();
    let java = root.join("java");
    std::fs::write(&java, FAKE_JAVA).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&java)
        .status()
        .unwrap();
    let work = root.join("work");
    let opts = ProcessOptions {
        spark_home: spark_home.clone(),
        work_dir: work.clone(),
        java: Some(java),
    };
    let sim = start_sim_with("empty", 1.0, &[], |o| o.process = Some(opts)).await;
    let client = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "spark-jobs");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "spark-jobs");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "proc-conf-map"},
            "data": {"spark.properties": "spark.app.name=proc\n"}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let rv = pods
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for (id, limit) in [(1, "1Gi"), (2, "64Mi"), (3, "1Gi")] {
        pods.create(&PostParams::default(), &executor_pod(id, limit))
            .await
            .unwrap();
    }

    // 1 runs: pod IP, env, volumes and the launch line are what entrypoint.sh would make.
    let p1 = eventually(20, "exec-1 running", || async {
        let p = pods.get("proc-exec-1").await.ok()?;
        (phase(&p) == "Running").then_some(p)
    })
    .await;
    assert_eq!(
        p1.status.as_ref().unwrap().pod_ip.as_deref(),
        Some("127.0.0.1")
    );
    let log = eventually(10, "exec-1's log", || async {
        let l = pods.logs("proc-exec-1", &LogParams::default()).await.ok()?;
        l.contains("spark.app.name=proc").then_some(l)
    })
    .await;
    let work_s = work.display().to_string();
    assert!(log.contains("pod ip: 127.0.0.1"), "{log}");
    assert!(
        log.contains(&format!("local dirs: {work_s}/spark-jobs/proc-exec-1-")),
        "{log}"
    );
    assert!(
        log.contains(&format!("home: {}", spark_home.display())),
        "{log}"
    );
    assert!(
        log.contains("-Dzero -Done -Xms512m -Xmx512m -cp ")
            && log.contains(
                "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend --driver-url spark://CoarseGrainedScheduler@127.0.0.1:7078 --executor-id 1 --cores 1 --app-id spark-proc --hostname 127.0.0.1 --resourceProfileId 0 --podName proc-exec-1"
            ),
        "{log}"
    );

    // 2 passes its 64Mi limit through a grandchild in another session: OOMKilled, 137.
    let p2 = eventually(30, "exec-2 OOM-killed", || async {
        let p = pods.get("proc-exec-2").await.ok()?;
        (phase(&p) == "Failed").then_some(p)
    })
    .await;
    assert_eq!(terminated(&p2), Some((137, "OOMKilled".to_owned())));

    // 3 exits 52 on its own.
    let p3 = eventually(20, "exec-3 failed", || async {
        let p = pods.get("proc-exec-3").await.ok()?;
        (phase(&p) == "Failed").then_some(p)
    })
    .await;
    assert_eq!(terminated(&p3), Some((52, "Error".to_owned())));
    let log3 = pods
        .logs("proc-exec-3", &LogParams::default())
        .await
        .unwrap();
    assert!(log3.contains("java.lang.OutOfMemoryError: Java heap space"));

    // Deleting 1: SIGTERM, the process exits 143, the pod goes with that last state.
    let pid1 = pid_of(&work, "proc-exec-1").expect("exec-1 pid");
    assert!(alive(pid1));
    let mut stream = pods
        .watch(
            &WatchParams::default().fields("metadata.name=proc-exec-1"),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    pods.delete("proc-exec-1", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            if let WatchEvent::Deleted(p) = ev {
                return p;
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("exec-1 deleted within 20 s");
    assert_eq!(terminated(&deleted), Some((143, "Error".to_owned())));
    assert!(!alive(pid1));

    // A pod removed with no event (the simulator's `vanish`): the kubelet still stops it.
    pods.create(&PostParams::default(), &executor_pod(4, "1Gi"))
        .await
        .unwrap();
    let pid4 = eventually(20, "exec-4 running", || async {
        let p = pods.get("proc-exec-4").await.ok()?;
        (phase(&p) == "Running").then(|| pid_of(&work, "proc-exec-4"))?
    })
    .await;
    let req = http::Request::post("/_sim/namespaces/spark-jobs/pods/proc-exec-4/vanish")
        .body(vec![])
        .unwrap();
    client.request_text(req).await.expect("vanish");
    assert!(pods.get_opt("proc-exec-4").await.unwrap().is_none());
    eventually(10, "exec-4's process stopped", || async {
        (!alive(pid4)).then_some(())
    })
    .await;

    // Stopping the simulator leaves no process behind.
    pods.create(&PostParams::default(), &executor_pod(5, "1Gi"))
        .await
        .unwrap();
    let pid5 = eventually(20, "exec-5 running", || async {
        let p = pods.get("proc-exec-5").await.ok()?;
        (phase(&p) == "Running").then(|| pid_of(&work, "proc-exec-5"))?
    })
    .await;
    assert!(alive(pid5));
    sim.stop().await;
    eventually(5, "exec-5's process killed", || async {
        (!alive(pid5)).then_some(())
    })
    .await;
    let _ = std::fs::remove_dir_all(&root);
}

/// A simulator killed with SIGKILL (no Drop, no signal handler) still leaves no executor
/// process: each was started under `setpriv --pdeathsig KILL`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_simulator_leaves_no_executor_behind() {
    let root = std::env::temp_dir().join(format!("spark-triage-pk9-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("spark/jars")).unwrap();
    std::fs::create_dir_all(root.join("jdk/bin")).unwrap();
    let java = root.join("jdk/bin/java");
    std::fs::write(&java, FAKE_JAVA).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&java)
        .status()
        .unwrap();
    let work = root.join("work");
    let kc = root.join("kubeconfig");
    let mut sim = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args(["sim", "--scenario", "empty", "--kubelet", "process"])
        .arg("--spark-home")
        .arg(root.join("spark"))
        .arg("--work-dir")
        .arg(&work)
        .arg("--kubeconfig-out")
        .arg(&kc)
        .env("JAVA_HOME", root.join("jdk"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("sim starts");
    let kubeconfig = eventually(10, "the kubeconfig", || async {
        let text = std::fs::read_to_string(&kc).ok()?;
        text.contains("server:").then_some(())?;
        kube::config::Kubeconfig::read_from(&kc).ok()
    })
    .await;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "spark-jobs");
    let cms: Api<ConfigMap> = Api::namespaced(pods.clone().into_client(), "spark-jobs");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "proc-conf-map"}, "data": {"spark.properties": "x=1\n"}
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    pods.create(&PostParams::default(), &executor_pod(1, "1Gi"))
        .await
        .unwrap();
    let pid = eventually(20, "exec-1 running", || async {
        let p = pods.get("proc-exec-1").await.ok()?;
        (phase(&p) == "Running").then(|| pid_of(&work, "proc-exec-1"))?
    })
    .await;
    assert!(alive(pid));
    sim.start_kill().expect("SIGKILL the simulator");
    let _ = sim.wait().await;
    eventually(
        5,
        "the executor process killed with its simulator",
        || async { (!alive(pid)).then_some(()) },
    )
    .await;
    let _ = std::fs::remove_dir_all(&root);
}
