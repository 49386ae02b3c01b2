//! Real Spark 4.3 in cluster mode on the real node: `spark-submit --deploy-mode cluster` with
//! the local image (localhost/spark-triage-spark:4.3.0, `scripts/control-plane.sh
//! spark-image`). A driver pod creates a real executor pod; the first attempt of a PySpark
//! task grows its Python worker until the kernel OOM-kills the executor's JVM (137,
//! OOMKilled); the driver replaces the executor and the job ends. The tool watches throughout
//! and must show the driver, the OOM as Spark counted it, the replacement and the end; the
//! driver's event log gives the same verdict, with Spark's own removal text. Then a driver
//! OOM-killed by the kernel (the app's verdict is the driver's end) and executors whose JVM
//! runs out of heap for real (exit 52). Last, a driver whose service account may not create
//! pods: every executor pod refused, which only its log says (`executors-refused`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{Cluster, NS, cmd, root, run_dir, script};

/// spark-submit's command line for a job of the image's /opt/jobs, as a platform team's
/// would be (with what this node needs: its API server address for the driver, the driver's
/// pod address for the executors, no DNS here; the node's selector).
fn submit(c: &Cluster, spark_home: &Path, name: &str, job: &str, extra: &[&str]) {
    let port = c.port();
    let mut args: Vec<String> = vec![
        "--master".into(),
        format!("k8s://https://127.0.0.1:{port}"),
        "--deploy-mode".into(),
        "cluster".into(),
        "--name".into(),
        name.into(),
    ];
    let confs = [
        format!("spark.kubernetes.namespace={NS}"),
        "spark.kubernetes.container.image=localhost/spark-triage-spark:4.3.0".into(),
        "spark.kubernetes.container.image.pullPolicy=Never".into(),
        "spark.kubernetes.authenticate.driver.serviceAccountName=spark".into(),
        format!("spark.kubernetes.driver.master=https://10.89.0.1:{port}"),
        "spark.kubernetes.executor.useDriverPodIP=true".into(),
        "spark.kubernetes.node.selector.kubernetes.io/hostname=spark-triage-node".into(),
        "spark.kubernetes.driver.request.cores=0.5".into(),
        "spark.kubernetes.executor.request.cores=0.5".into(),
        "spark.executor.instances=1".into(),
        "spark.kubernetes.submission.waitAppCompletion=false".into(),
    ];
    for conf in confs
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
    {
        args.push("--conf".into());
        args.push(conf.to_owned());
    }
    args.push(format!("local:///opt/jobs/{job}"));
    let out = Command::new(spark_home.join("bin/spark-submit"))
        .args(&args)
        .env("KUBECONFIG", &c.admin)
        .env("SPARK_HOME", spark_home)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("spark-submit runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("Deployed Spark application"),
        "spark-submit {name}: {err}"
    );
}

/// `wait_until` for Spark's drivers, saying on a timeout what the nodes and the drivers were
/// doing: a node under DiskPressure admits and keeps nothing (the machine's disk nearly
/// full: the kubelet here evicts under 1% free, and the Spark image takes 861 MB).
fn wait_for_drivers(c: &Cluster, what: &str, secs: u64, done: impl FnMut() -> bool) {
    let said = |args: &[&str]| c.kubectl_try(args, None).1;
    super::cmd::wait_until_or(what, secs, done, || {
        format!(
            "; the nodes' true conditions: {}the drivers: {}",
            said(&[
                "get",
                "nodes",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name}:{range .status.conditions[?(@.status==\"True\")]} {.type}{end}; {end}",
            ]),
            said(&[
                "-n",
                NS,
                "get",
                "pods",
                "-l",
                "spark-role=driver",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name}={.status.phase}/{.status.reason} {end}",
            ]),
        )
    });
}

fn driver_phase(c: &Cluster, app_name: &str) -> Option<String> {
    let out = c.kubectl(
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("spark-role=driver,spark-app-name={app_name}"),
            "-o",
            "jsonpath={.items[*].status.phase}",
        ],
        None,
    );
    Some(out.trim().to_owned()).filter(|p| !p.is_empty())
}

fn app<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["apps"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["app_name"] == name))
        .unwrap_or_else(|| panic!("no app {name} in {doc}"))
}

pub fn cluster_mode(c: &Cluster) {
    // The node's CPU back from the preemptor (1.5 of its 2 CPUs).
    c.kubectl(
        &["-n", NS, "delete", "pod", "rn-urgent", "--wait=true"],
        None,
    );
    // PyPI's pyspark (the real-Spark test's venv, installed once) and the image built from it.
    let (code, out, err) = cmd(
        &format!("{}/scripts/e2e/pyspark-venv.sh", root()),
        &["4.3.0"],
        None,
    );
    assert_eq!(code, 0, "pyspark: {err}");
    let spark_home = PathBuf::from(out.lines().last().expect("a path").trim());
    let image = script(&["spark-image", &spark_home.display().to_string()]);
    assert!(
        image.status.success(),
        "spark-image: {}",
        String::from_utf8_lossy(&image.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&image.stderr).trim());
    let logs = run_dir().join("eventlogs");
    std::fs::create_dir_all(&logs).expect("event log dir");

    // 1. The executor OOM-killed by the kernel, replaced; the job ends.
    let watcher = c.triage(&["status", "-n", NS, "-o", "json", "--for", "100s"]);
    let event_log = [
        "spark.eventLog.enabled=true".to_owned(),
        "spark.eventLog.dir=file:///eventlogs".to_owned(),
        "spark.kubernetes.driver.volumes.hostPath.eventlogs.mount.path=/eventlogs".to_owned(),
        format!(
            "spark.kubernetes.driver.volumes.hostPath.eventlogs.options.path={}",
            logs.display()
        ),
    ];
    let mut extra: Vec<&str> = event_log.iter().map(String::as_str).collect();
    extra.extend([
        "spark.executor.memory=512m",
        "spark.executor.memoryOverhead=400m",
        // The heap touched at start: the JVM is the largest process of the container when the
        // Python worker pushes it past its limit, so the kernel kills the JVM.
        "spark.executor.extraJavaOptions=-XX:+AlwaysPreTouch",
    ]);
    submit(c, &spark_home, "rn-spark-oom", "executor_oom.py", &extra);
    wait_for_drivers(c, "the rn-spark-oom driver Succeeded", 180, || {
        driver_phase(c, "rn-spark-oom").as_deref() == Some("Succeeded")
    });
    let doc = super::status_doc(watcher);
    let a = app(&doc, "rn-spark-oom");
    eprintln!(
        "real Spark in cluster mode, as the tool saw it:\n{}",
        serde_json::to_string_pretty(a).unwrap_or_default()
    );
    // The app's headline is what happened to it: the OOM kill, with a value; the driver's
    // success is a note under it.
    assert_eq!(
        a["verdict"]["cause"], "executors-failed",
        "{}",
        a["verdict"]
    );
    assert!(
        a["verdict"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("OOMKilled (137)")),
        "{}",
        a["verdict"]
    );
    assert!(
        a["verdict"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--conf spark.executor.memoryOverhead=")),
        "{}",
        a["verdict"]
    );
    assert!(
        a["verdict"]["supporting"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["code"] == "app-succeeded")),
        "{}",
        a["verdict"]
    );
    assert!(
        a["driver"].to_string().contains("Succeeded"),
        "the driver pod: {}",
        a["driver"]
    );
    // Its driver's configuration was read from the real ConfigMap (spark-submit makes it
    // right after the driver pod).
    assert_eq!(a["config_read"], true, "the driver's ConfigMap: {a}");
    let execs = a["executors"].as_array().expect("executors");
    let e1 = execs.iter().find(|e| e["id"] == 1).expect("executor 1");
    assert_eq!(e1["findings"][0], "container-oom-killed", "{e1}");
    assert_eq!(e1["exit_code"], 137, "{e1}");
    assert_eq!(e1["container_reason"], "OOMKilled", "{e1}");
    assert_eq!(e1["spark"]["counted"], true, "Spark counts it: {e1}");
    assert!(
        execs.iter().any(|e| e["id"] == 2),
        "the replacement executor: {execs:?}"
    );

    // The driver's event log (zstd, Spark 4's default) says the same. (Its executors'
    // `Attributes` are empty on a real kubelet too: Spark 4.3 puts the pod name there only from
    // SPARK_EXECUTOR_ATTRIBUTE_* variables, which its pods do not set.)
    let dir = std::fs::read_dir(&logs)
        .expect("event logs")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("eventlog_v2_"))
        })
        .expect("the driver wrote its event log");
    let (code, out, err) = cmd(
        env!("CARGO_BIN_EXE_spark-triage"),
        &["report", &dir.display().to_string(), "-o", "json"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).expect("report json");
    let text = report.to_string();
    assert!(text.contains("container-oom-killed"), "{text}");
    assert!(text.contains("rn-spark-oom"), "{text}");
    // Spark's own removal text (the driver ran 20 s: its REST API, polled, may not have said
    // it before the end; its event log does).
    assert!(
        text.contains("The executor with id 1 exited with exit code 137"),
        "Spark's removal text: {text}"
    );
    if std::env::var("REAL_NODE_FIXTURES").as_deref() == Ok("write") {
        let to = Path::new(root())
            .join("tests/fixtures/real-kubelet/eventlog")
            .join(dir.file_name().expect("name"));
        let _ = std::fs::remove_dir_all(to.parent().expect("parent"));
        std::fs::create_dir_all(&to).expect("fixture dir");
        for f in std::fs::read_dir(&dir).expect("event log").flatten() {
            std::fs::copy(f.path(), to.join(f.file_name())).expect("copy");
        }
    }

    // 2. Beside each other (a CPU each: the node's two): a driver OOM-killed by the kernel,
    // whose app's verdict is its driver's end; and executors whose JVM runs out of heap for
    // real, exit 52 (spark.task.maxFailures=2: the driver outlives the first one's exit).
    let watcher = c.triage(&["status", "-n", NS, "-o", "json", "--for", "100s"]);
    submit(
        c,
        &spark_home,
        "rn-driver-oom",
        "driver_oom.py",
        &[
            "spark.driver.memory=512m",
            "spark.driver.memoryOverhead=400m",
            "spark.driver.extraJavaOptions=-XX:+AlwaysPreTouch",
        ],
    );
    submit(
        c,
        &spark_home,
        "rn-jvm-oom",
        "jvm_oom.py",
        &["spark.executor.memory=512m", "spark.task.maxFailures=2"],
    );
    wait_for_drivers(
        c,
        "the rn-driver-oom and rn-jvm-oom drivers Failed",
        180,
        || {
            ["rn-driver-oom", "rn-jvm-oom"]
                .iter()
                .all(|a| driver_phase(c, a).as_deref() == Some("Failed"))
        },
    );
    let doc = super::status_doc(watcher);
    let a = app(&doc, "rn-driver-oom");
    assert_eq!(
        a["verdict"]["cause"], "driver-oom-killed",
        "{}",
        a["verdict"]
    );
    eprintln!("the driver OOM-killed by the kernel: {}", a["verdict"]);
    let a = app(&doc, "rn-jvm-oom");
    let e1 = a["executors"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["id"] == 1))
        .unwrap_or_else(|| panic!("executor 1 of rn-jvm-oom: {a}"));
    eprintln!("a real JVM heap OOM: {e1}");
    // A configuration finding made from the real ConfigMap: spark.task.maxFailures=2 set.
    assert_eq!(a["config_read"], true, "the driver's ConfigMap: {a}");
    assert!(
        a["findings"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["code"] == "failure-budgets"
                && f["summary"].as_str().is_some_and(|s| s.contains("2")))),
        "failure-budgets from the ConfigMap's spark.task.maxFailures=2: {}",
        a["findings"]
    );
    assert_eq!(e1["findings"][0], "jvm-oom", "{e1}");
    assert_eq!(e1["exit_code"], 52, "{e1}");
    assert_eq!(e1["state"], "failed", "{e1}");

    // 3. A driver whose service account may read pods but not create them (#56): the API
    // server refuses every executor pod, which only the driver's log says; the tool reads
    // it once the driver has run 30 s with no executor and names the missing grant.
    // (spark.executor.maxNumFailures high: from 4.3 each refused creation counts, and the
    // default budget would end the driver in seconds.)
    c.kubectl(&["apply", "-f", "-"], Some(NO_POD_CREATE));
    let watcher = c.triage(&["status", "-n", NS, "-o", "json", "--for", "75s"]);
    submit(
        c,
        &spark_home,
        "rn-no-executors",
        "jvm_oom.py",
        &[
            "spark.kubernetes.authenticate.driver.serviceAccountName=spark-no-pods",
            "spark.executor.maxNumFailures=100000",
        ],
    );
    let doc = super::status_doc(watcher);
    let a = app(&doc, "rn-no-executors");
    eprintln!(
        "a driver that may not create its executors: {}",
        a["verdict"]
    );
    assert_eq!(
        a["verdict"]["cause"], "executors-refused",
        "{}",
        a["verdict"]
    );
    assert!(
        a["verdict"]["summary"].as_str().is_some_and(|s| s.contains(
            "system:serviceaccount:spark-jobs:spark-no-pods may not create pods in namespace spark-jobs"
        )),
        "{}",
        a["verdict"]
    );
    c.kubectl(
        &[
            "-n",
            NS,
            "delete",
            "pods",
            "-l",
            "spark-app-name=rn-no-executors",
            "--wait=true",
        ],
        None,
    );

    // 4. Dynamic allocation's scale-up stopped by a quota (#56): the backlog makes the driver
    // ask for 4 executors (its metrics servlet, read through the API server's service proxy)
    // where the namespace's quota has room for the driver and one.
    let live = c.kubectl(
        &[
            "-n",
            NS,
            "get",
            "pods",
            "--field-selector=status.phase!=Succeeded,status.phase!=Failed",
            "--no-headers",
        ],
        None,
    );
    let room = live.lines().filter(|l| !l.trim().is_empty()).count() + 2;
    let quota = format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: rn-pods, namespace: {NS}}}\n\
         spec: {{hard: {{pods: \"{room}\"}}}}\n"
    );
    c.kubectl(&["apply", "-f", "-"], Some(&quota));
    let watcher = c.triage(&["status", "-n", NS, "-o", "json", "--for", "70s"]);
    submit(
        c,
        &spark_home,
        "rn-elastic",
        "slow_tasks.py",
        &[
            "spark.dynamicAllocation.enabled=true",
            "spark.dynamicAllocation.shuffleTracking.enabled=true",
            "spark.dynamicAllocation.initialExecutors=1",
            "spark.dynamicAllocation.minExecutors=1",
            "spark.dynamicAllocation.maxExecutors=4",
            "spark.dynamicAllocation.schedulerBacklogTimeout=1s",
            // From 4.3 each refused creation counts toward the failure budget.
            "spark.executor.maxNumFailures=100000",
        ],
    );
    let doc = super::status_doc(watcher);
    let a = app(&doc, "rn-elastic");
    eprintln!(
        "dynamic allocation behind a quota, real Spark: {} {}",
        a["dynamic_allocation"], a["verdict"]
    );
    assert_eq!(a["driver_api"]["state"], "ok", "{a}");
    assert_eq!(a["dynamic_allocation"]["target"], 4, "{a}");
    assert_eq!(a["verdict"]["cause"], "quota-exhausted", "{}", a["verdict"]);
    assert!(
        a["verdict"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with(
                "1 of 4 executors dynamic allocation asks for: quota rn-pods rejects the rest"
            )),
        "{}",
        a["verdict"]
    );
    c.kubectl(&["-n", NS, "delete", "resourcequota", "rn-pods"], None);
    c.kubectl(
        &[
            "-n",
            NS,
            "delete",
            "pods",
            "-l",
            "spark-app-name=rn-elastic",
            "--wait=true",
        ],
        None,
    );
}

/// A service account a Spark driver can start with but not create executors with: it reads
/// pods (its own, at start) and makes its ConfigMaps and services, but may not create pods.
const NO_POD_CREATE: &str = r#"apiVersion: v1
kind: ServiceAccount
metadata: {name: spark-no-pods, namespace: spark-jobs}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: spark-no-pods, namespace: spark-jobs}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, delete]
- apiGroups: [""]
  resources: [services, configmaps, persistentvolumeclaims]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: spark-no-pods, namespace: spark-jobs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: spark-no-pods}
subjects:
- {kind: ServiceAccount, name: spark-no-pods, namespace: spark-jobs}
"#;
