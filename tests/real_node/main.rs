//! The truth table on a real node (docs/control-plane.md, "A real node"): the kubelet,
//! containerd and runc of `scripts/control-plane.sh up --real-node` end executor pods for
//! real — a kernel OOM kill in a memory cgroup, exits, a deletion past the grace period, the
//! kubelet's ephemeral-storage eviction, image pulls that fail, a missing ConfigMap, the real
//! scheduler's preemption, `kubectl drain`, the kubelet stopped — and the tool's verdicts
//! (`status -o json` watching throughout, and the live view in tmux) must be the ones the
//! table promises (tests/fixtures/real-kubelet/verdicts.json).
//!
//! What the kubelet wrote for each case (the pod's last status and its events, normalized) is
//! compared with tests/fixtures/real-kubelet/<case>.json, which the simulator's own run of the
//! same cases is diffed against (tests/integration/real_kubelet.rs). `REAL_NODE_FIXTURES=write`
//! writes them again from this run. Finally `down` must leave no process, mount, cgroup or
//! network device behind.
//!
//! Root, the tools, and a host with cgroups, overlayfs, the CNI plugins and no swap are
//! needed: without them (build.rs) it is ignored, with its reason; a node the script still
//! would not start fails.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use cmd::{cmd, wait_until};
use serde_json::Value;
use tmux::Tmux;

#[path = "../support/cmd.rs"]
mod cmd;
mod fixtures;
mod recorder;
#[allow(dead_code)] // its REFERENCE is the mixed scenario's
#[path = "../support/reference.rs"]
mod reference;
mod spark;
#[path = "../support/spark_pod.rs"]
mod spark_pod;
#[path = "../support/tmux.rs"]
mod tmux;

const NS: &str = "spark-jobs";
const APP: &str = "spark-rn-0001";
const NODE: &str = "spark-triage-node";
const BUSYBOX: &str = "localhost/spark-triage-busybox:1";
/// `status` as the tests ask it (the drivers here are not Spark: no REST API to read).
const STATUS: &[&str] = &["status", "-n", NS, "-o", "json", "--no-driver-api"];
/// The API server's port (not the script's default: a cluster started by hand keeps running).
const PORT: &str = "16643";

/// A container that ends on SIGTERM with 143, as a JVM does (a shell as PID 1 ignores it).
const JVM_LIKE: &str = "trap 'exit 143' TERM; while true; do sleep 1; done";

/// The cases: executor id, name, what its container runs, and the rest of its pod spec.
/// `fixtures.rs` names the same ids.
const CASES: &[(u32, &str, &str, &str)] = &[
    // A kernel OOM kill in the container's memory cgroup, as Spark's image has it: PID 1
    // (tini there, a shell here) outlives its child (the JVM there, dd here), which the
    // kernel kills, and exits with its status (137 only if the kernel did kill it: a run
    // where nothing was killed exits 0 and fails below). It allocates two seconds after
    // the start, once containerd's shim watches the cgroup's memory.events (an OOM kill
    // before that is never reported, and containerd 1.6 then says `Error` 137, which no
    // tool can tell from another SIGKILL), and exits two seconds after the kill, once the
    // OOM event was handled. The verdict is held to what the kubelet reported (below).
    (
        1,
        "cgroup-oom",
        "sleep 2; dd if=/dev/zero of=/dev/null bs=200M count=1; s=$?; sleep 2; exit $s",
        "memory: 64Mi",
    ),
    // Spark's executor exits 52 when its JVM throws OutOfMemoryError (SparkExitCode.OOM).
    (2, "exit-52", "sleep 2; exit 52", ""),
    (3, "exit-1", "sleep 2; exit 1", ""),
    // Deleted; it ignores SIGTERM, so the kubelet kills it when the grace period ends.
    (
        4,
        "sigterm-past-grace",
        "trap 'echo SIGTERM ignored' TERM; while true; do sleep 1; done",
        "",
    ),
    // Writes past its emptyDir's sizeLimit: the kubelet's eviction manager evicts it.
    (
        5,
        "emptydir-eviction",
        "dd if=/dev/zero of=/scratch/fill bs=1M count=30; sleep 3600",
        "scratch",
    ),
    (
        6,
        "image-pull",
        "",
        "image: localhost/spark-triage-missing:1",
    ),
    (7, "config-error", "sleep 3600", "configmap"),
    // Preempted by a pod of a higher PriorityClass that needs its CPU. It stops on SIGTERM
    // (143) as an executor's JVM does.
    (8, "preemption", JVM_LIKE, "cpu: most"),
    // Evicted through the Eviction API (kubectl drain).
    (9, "drain", JVM_LIKE, ""),
    // Runs while the kubelet is stopped: the node goes NotReady, then comes back.
    (10, "node-not-ready", "sleep 3600", ""),
    (
        11,
        "image-never-pull",
        "",
        "image: localhost/spark-triage-missing:1, never",
    ),
];

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn run_dir() -> PathBuf {
    PathBuf::from(root()).join("target/control-plane/run-real-node")
}

fn script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(format!("{}/scripts/control-plane.sh", root()))
        .args(args)
        .env("CP_DIR", run_dir())
        .env("CP_PORT", PORT)
        .output()
        .expect("bash runs")
}

/// The running cluster; `down` on drop, whatever happened.
struct Cluster {
    admin: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&["down"]);
    }
}

impl Cluster {
    fn port(&self) -> &'static str {
        PORT
    }

    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (code, out, err) = self.kubectl_try(args, stdin);
        assert_eq!(code, 0, "kubectl {args:?}: {err}");
        out
    }

    fn kubectl_try(&self, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
        let kc = self.admin.display().to_string();
        cmd(
            "kubectl",
            &[&["--kubeconfig", &kc, "--request-timeout=20s"], args].concat(),
            stdin,
        )
    }

    fn pod(&self, name: &str) -> Option<Value> {
        let (code, out, _) = self.kubectl_try(&["-n", NS, "get", "pod", name, "-o", "json"], None);
        (code == 0).then(|| serde_json::from_str(&out).expect("pod json"))
    }

    fn triage(&self, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_spark-triage"))
            .args(args)
            .args(["--kubeconfig", &self.admin.display().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spark-triage runs")
    }

    fn node_ready(&self) -> String {
        self.kubectl(
            &[
                "get",
                "node",
                NODE,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
            None,
        )
    }
}

/// Three quarters of the node's allocatable CPU (set once the node is up; 1500m before): the
/// preemption case's executor asks it, then a pod of higher priority asks it again, which
/// fits only if the executor goes, whatever the machine's core count.
static MOST_CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn most_cpu() -> &'static str {
    MOST_CPU.get().map_or("1500m", String::as_str)
}

fn executor(driver_uid: &str, id: u32, run: &str, extra: &str) -> String {
    let mut image = BUSYBOX.to_owned();
    let mut policy = "Never";
    let mut resources = String::new();
    let mut volumes = String::new();
    let mut env = String::new();
    if let Some(img) = extra.strip_prefix("image: ") {
        let (img, never) = img.split_once(", ").unwrap_or((img, ""));
        image = img.to_owned();
        policy = if never == "never" {
            "Never"
        } else {
            "IfNotPresent"
        };
    }
    match extra {
        "memory: 64Mi" => resources = "limits: {memory: 64Mi}".into(),
        "cpu: most" => resources = format!("requests: {{cpu: {}}}", most_cpu()),
        "scratch" => {
            volumes = "volumes: [{name: scratch, emptyDir: {sizeLimit: 10Mi}}]".into();
        }
        "configmap" => {
            env = "env: [{name: SPARK_CONF_X, valueFrom: {configMapKeyRef: {name: rn-missing-conf, key: spark.properties}}}]".into();
        }
        _ => {}
    }
    let mounts = if volumes.is_empty() {
        String::new()
    } else {
        "volumeMounts: [{name: scratch, mountPath: /scratch}]".into()
    };
    let command = if run.is_empty() {
        String::new()
    } else {
        format!(
            "command: [sh, -c, {}]",
            serde_json::to_string(run).expect("json")
        )
    };
    let spec = format!("nodeSelector: {{kubernetes.io/hostname: {NODE}}}\n  {volumes}");
    let container = [
        format!("image: {image}"),
        format!("imagePullPolicy: {policy}"),
        command,
        env,
        mounts,
        format!("resources: {{{resources}}}"),
    ]
    .join("\n    ");
    spark_pod::Executor {
        app: "rn-etl",
        app_id: APP,
        namespace: NS,
        driver_uid,
        id,
        annotations: "",
        grace: 3,
        spec: &spec,
        container: &container,
    }
    .manifest()
}

fn driver() -> String {
    spark_pod::driver(
        "rn-etl",
        APP,
        NS,
        &format!("nodeSelector: {{kubernetes.io/hostname: {NODE}}}"),
        &format!("image: {BUSYBOX}\n    imagePullPolicy: Never\n    command: [sleep, \"3600\"]"),
    )
}

/// What `down` must leave as it found: network devices, mounts, the kubelet's cgroups, the
/// node's processes, iptables rules, the kernel settings the kubelet and the CNI bridge
/// change, the directories the node makes.
fn machine_state() -> BTreeMap<&'static str, Vec<String>> {
    let links = cmd("ip", &["-o", "link", "show"], None).1;
    let links: Vec<String> = links
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_owned())
        .collect();
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_owned))
        .collect();
    let cgroups: Vec<String> = std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .map(|c| c.path().join("kubepods"))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    let procs: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|p| std::fs::read_to_string(p.path().join("cmdline")).ok())
        .filter(|c| c.contains(&*run_dir().to_string_lossy()))
        .map(|c| c.replace('\0', " "))
        .collect();
    let kube_rules: Vec<String> = cmd("iptables", &["-S"], None)
        .1
        .lines()
        .filter(|l| l.contains("KUBE"))
        .map(str::to_owned)
        .collect();
    let sysctls: Vec<String> = [
        "net/ipv4/ip_forward",
        "vm/overcommit_memory",
        "vm/panic_on_oom",
        "kernel/panic",
        "kernel/panic_on_oops",
    ]
    .iter()
    .map(|k| {
        let v = std::fs::read_to_string(format!("/proc/sys/{k}")).unwrap_or_default();
        format!("{k}={}", v.trim())
    })
    .collect();
    let dirs: Vec<String> = [
        "/run/containerd",
        "/run/netns",
        "/var/lib/cni",
        "/var/log/containers",
    ]
    .iter()
    .filter(|d| std::path::Path::new(d).exists())
    .map(|d| (*d).to_owned())
    .collect();
    let mut state = BTreeMap::new();
    state.insert("iptables rules naming KUBE", kube_rules);
    state.insert("kernel settings", sysctls);
    state.insert("directories", dirs);
    state.insert("network devices", links);
    state.insert("mounts", mounts);
    state.insert("kubepods cgroups", cgroups);
    state.insert("processes naming the node's directory", procs);
    for v in state.values_mut() {
        v.sort();
        v.dedup();
    }
    state
}

fn status_doc(child: Child) -> Value {
    let out = child.wait_with_output().expect("status ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status json")
}

#[test]
#[cfg_attr(
    not(all(
        have_go,
        have_kubectl,
        have_openssl,
        have_containerd,
        have_runc,
        have_root,
        have_java,
        have_python3,
        have_pypi,
        have_debootstrap,
        have_node_host
    )),
    ignore = "needs root, go, kubectl, openssl, containerd, runc, debootstrap, java, python3, the Python package index, and a host with a memory cgroup, overlayfs, the CNI plugins, a static busybox and no swap (Spark in cluster mode; .ci/run installs Debian's containerd, runc, containernetworking-plugins, busybox-static and debootstrap)"
)]
fn verdicts_of_a_real_kubelet() {
    let before = machine_state();
    // down at the end whatever happens, a failed or skipped up included.
    let guard = Cluster {
        admin: PathBuf::new(),
    };
    let out = script(&["up", "--real-node"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    // What the build found (the tools, the host) was there: a node the script still would
    // not start (another kubelet here, swap turned on since) is a failure, with its reason.
    let skipped = stdout
        .lines()
        .find(|l| l.contains("control-plane: SKIPPED"));
    assert!(skipped.is_none(), "{}", skipped.unwrap_or_default());
    assert!(
        out.status.success(),
        "control-plane.sh up --real-node failed: {stdout}"
    );
    let admin = PathBuf::from(stdout.lines().last().expect("a last line").trim());
    std::mem::forget(guard);
    let c = Cluster { admin };
    let millis = |q: &str| {
        q.strip_suffix('m')
            .map_or_else(|| q.parse::<u64>().map(|c| c * 1000), str::parse)
            .expect("a CPU quantity")
    };
    let allocatable = millis(&c.kubectl(
        &[
            "get",
            "node",
            NODE,
            "-o",
            "jsonpath={.status.allocatable.cpu}",
        ],
        None,
    ));
    MOST_CPU
        .set(format!("{}m", allocatable * 3 / 4))
        .expect("set once");

    // The contract: the real node is Ready and carries no kwok annotation.
    let node: Value =
        serde_json::from_str(&c.kubectl(&["get", "node", NODE, "-o", "json"], None)).expect("node");
    assert_eq!(c.node_ready(), "True");
    let annotations = node["metadata"]["annotations"].to_string();
    assert!(!annotations.contains("kwok"), "{annotations}");
    assert!(
        node["status"]["nodeInfo"]["containerRuntimeVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("containerd://")),
        "{}",
        node["status"]["nodeInfo"]
    );

    // Every pod's every state, for the fixtures: a watch from before the first pod.
    let kc = c.admin.display().to_string();
    // Into a file: a pipe read only at the end would fill and stop kubectl.
    let watch_file = run_dir().with_file_name("real-node-watch.json");
    let mut watch = Command::new("kubectl")
        .args([
            "--kubeconfig",
            &kc,
            "-n",
            NS,
            "get",
            "pods",
            "-w",
            "-o",
            "json",
        ])
        .args(["--output-watch-events"])
        .stdout(std::fs::File::create(&watch_file).expect("watch file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl watch");
    // The tool watches throughout (the deleted executors are known only to a watch).
    let watcher = c.triage(&[STATUS, &["--for", "100s"]].concat());

    c.kubectl(&["apply", "-f", "-"], Some(&driver()));
    let uid = c.kubectl(
        &[
            "-n",
            NS,
            "get",
            "pod",
            "rn-etl-driver",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
        None,
    );
    let manifests: Vec<String> = CASES
        .iter()
        .map(|(id, _, run, extra)| executor(&uid, *id, run, extra))
        .collect();
    c.kubectl(&["apply", "-f", "-"], Some(&manifests.join("---\n")));
    let running = |c: &Cluster, id: u32| {
        c.pod(&format!("rn-etl-exec-{id}"))
            .is_some_and(|p| p["status"]["phase"] == "Running")
    };
    wait_until("executors 4, 8, 9 and 10 run", 60, || {
        [4, 8, 9, 10].iter().all(|id| running(&c, *id))
    });

    // 4: deleted; it ignores SIGTERM, the kubelet kills it 3 s later.
    c.kubectl(
        &["-n", NS, "delete", "pod", "rn-etl-exec-4", "--wait=false"],
        None,
    );
    // 9: kubectl drain (the Eviction API); the node is uncordoned at once.
    let (code, out, err) = c.kubectl_try(
        &[
            "drain",
            NODE,
            "--pod-selector",
            "spark-exec-id=9",
            "--force",
            "--timeout=60s",
        ],
        None,
    );
    c.kubectl(&["uncordon", NODE], None);
    assert_eq!(code, 0, "drain: {out}{err}");
    // 8: a pod of a higher PriorityClass asks for its CPU: the real scheduler preempts it.
    c.kubectl(
        &["apply", "-f", "-"],
        Some(&format!(
            r#"apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: rn-urgent}}
value: 1000000
---
apiVersion: v1
kind: Pod
metadata: {{name: rn-urgent, namespace: {NS}}}
spec:
  priorityClassName: rn-urgent
  nodeSelector: {{kubernetes.io/hostname: {NODE}}}
  terminationGracePeriodSeconds: 1
  containers:
  - {{name: c, image: {BUSYBOX}, imagePullPolicy: Never, command: [sleep, "3600"], resources: {{requests: {{cpu: {cpu}}}}}}}
"#,
            cpu = most_cpu()
        )),
    );
    wait_until("4, 8 and 9 are gone, 5 evicted", 120, || {
        [4, 8, 9]
            .iter()
            .all(|id| c.pod(&format!("rn-etl-exec-{id}")).is_none())
            && c.pod("rn-etl-exec-5")
                .is_some_and(|p| p["status"]["reason"] == "Evicted")
    });
    // What the tool said, compared as it said it: nothing of it is rewritten. What it must
    // say follows what the kubelet reported: containerd 1.6 has reported the cgroup OOM kill
    // as `Error` 137 (one run in three when the container allocated at once, before the
    // shim watched its cgroup; none in three since it waits two seconds first), and from
    // `Error` 137 no tool can know it was the OOM killer: the verdict must then be
    // node-sigkill, naming that possibility. Any other exit is no OOM kill: a failure.
    let doc = status_doc(watcher);
    let mut want: Value =
        serde_json::from_str(include_str!("../fixtures/real-kubelet/verdicts.json")).expect("json");
    let reported = doc["apps"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["app_id"] == APP))
        .and_then(|a| a["executors"].as_array())
        .and_then(|e| e.iter().find(|e| e["id"] == 1))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        reported["exit_code"], 137,
        "executor 1 was not killed (dd's own exit): {reported}"
    );
    let oom_label = match reported["container_reason"].as_str() {
        Some("OOMKilled") => "OOMKilled (137)",
        Some("Error") => {
            eprintln!("the kubelet reported executor 1's OOM kill as Error 137 this run");
            want["apps"]["rn-etl"]["executors"]["1"]["cause"] = "node-sigkill".into();
            assert!(
                reported["summary"]
                    .as_str()
                    .is_some_and(|s| s.contains("OOM killer")),
                "{reported}"
            );
            "SIGKILL (137)"
        }
        other => panic!("executor 1's container ended {other:?}: {reported}"),
    };
    let diffs = reference::compare(&doc, &want);
    let app = doc["apps"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["app_id"] == APP))
        .cloned()
        .unwrap_or(Value::Null);
    eprintln!(
        "the tool's verdicts on the real node:\n{}",
        serde_json::to_string_pretty(&app["executors"]).unwrap_or_default()
    );
    assert!(
        diffs.is_empty(),
        "the truth table does not hold:\n{}",
        diffs.join("\n")
    );

    // The live view in a real terminal (200×50) names the app, the kernel's OOM kill and why
    // executors wait.
    if Tmux::available() {
        let screen = tmux::live_view(
            &format!("-n {NS} --no-driver-api --kubeconfig {kc}"),
            &["rn-etl", oom_label, "JVM OOM (52)"],
            30,
        );
        eprintln!("the live view on the real node:\n{screen}");
    }

    // The kubelet's API through the API server (logs): the kubelet asks the API server whether
    // its client may (authorization: Webhook), and it may.
    c.kubectl(&["-n", NS, "logs", "rn-etl-exec-3"], None);

    // 10: the kubelet stops; the node controller marks the node NotReady; the kubelet comes
    // back and the node is Ready again, executor 10 still running.
    let stopped = script(&["kubelet", "stop"]);
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    wait_until("the node NotReady (Unknown)", 120, || {
        c.node_ready() == "Unknown"
    });
    // The node controller marks the node's pods not ready (event NodeNotReady) a moment
    // after the node: the tool says node-lost from then on.
    let mut e10 = Value::Null;
    wait_until("the tool says executor 10's node is lost", 60, || {
        let (code, out, err) = cmd(
            env!("CARGO_BIN_EXE_spark-triage"),
            &[STATUS, &["--kubeconfig", &kc]].concat(),
            None,
        );
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&out).expect("status json");
        e10 = doc["apps"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["app_id"] == APP))
            .map(|a| a["executors"].clone())
            .unwrap_or_default()
            .as_array()
            .and_then(|e| e.iter().find(|e| e["id"] == 10))
            .cloned()
            .expect("executor 10");
        e10["findings"][0] == "node-lost"
    });
    assert_eq!(
        e10["state"], "running",
        "Spark still counts it running: {e10}"
    );
    eprintln!("executor 10 while its node is NotReady: {e10}");
    let mut snapshots = BTreeMap::new();
    snapshots.insert(
        "node-not-ready",
        c.pod("rn-etl-exec-10").expect("executor 10"),
    );
    let started = script(&["kubelet", "start"]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    wait_until("the node Ready again", 90, || c.node_ready() == "True");
    assert!(
        running(&c, 10),
        "executor 10 survived the kubelet's restart"
    );

    // The flight recorder's image as a real pod, watching what follows.
    recorder::start(&c);
    // Real Spark in cluster mode on the node: a kernel OOM kill of an executor, of a driver.
    spark::cluster_mode(&c);
    recorder::check(&c);

    // The kubelet's own words, kept as fixtures (or compared with them).
    let _ = watch.kill();
    let _ = watch.wait();
    let stream = std::fs::read(&watch_file).expect("the watch's output");
    let _ = std::fs::remove_file(&watch_file);
    let events: Value =
        serde_json::from_str(&c.kubectl(&["-n", NS, "get", "events", "-o", "json"], None))
            .expect("events");
    fixtures::keep(&stream, &events, &snapshots);

    // down leaves the machine as it was.
    drop(c);
    let after = machine_state();
    for (what, was) in &before {
        let now = &after[what];
        let extra: Vec<&String> = now.iter().filter(|x| !was.contains(x)).collect();
        assert!(
            extra.is_empty(),
            "down left {what}: {extra:?} (before: {was:?})"
        );
    }
    assert!(!run_dir().exists(), "down removes its state");
}

/// The cases' manifests are the pods they mean (checked without a cluster).
#[test]
fn the_cases_manifests_parse() {
    for (id, case, run, extra) in CASES {
        let text = executor("uid-1", *id, run, extra);
        let pod: Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{case}: {e}\n{text}"));
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["spark-exec-id"], id.to_string(), "{case}");
        assert_eq!(labels["spark-role"], "executor", "{case}");
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["uid"], "uid-1",
            "{case}"
        );
        assert_eq!(
            pod["spec"]["nodeSelector"]["kubernetes.io/hostname"], NODE,
            "{case}"
        );
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 3, "{case}");
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["name"], "spark-kubernetes-executor", "{case}");
        if !run.is_empty() {
            assert_eq!(c["command"][2], *run, "{case}");
        }
        match *extra {
            "memory: 64Mi" => assert_eq!(c["resources"]["limits"]["memory"], "64Mi"),
            "cpu: most" => assert_eq!(c["resources"]["requests"]["cpu"], most_cpu()),
            "scratch" => {
                assert_eq!(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "10Mi");
                assert_eq!(c["volumeMounts"][0]["mountPath"], "/scratch");
            }
            "configmap" => assert_eq!(
                c["env"][0]["valueFrom"]["configMapKeyRef"]["name"],
                "rn-missing-conf"
            ),
            e if e.starts_with("image: ") => {
                assert_eq!(c["image"], "localhost/spark-triage-missing:1", "{case}");
                let want = if e.ends_with("never") {
                    "Never"
                } else {
                    "IfNotPresent"
                };
                assert_eq!(c["imagePullPolicy"], want, "{case}");
            }
            _ => assert_eq!(c["image"], BUSYBOX, "{case}"),
        }
    }
    let d: Value = serde_saphyr::from_str(&driver()).expect("driver yaml");
    assert_eq!(d["metadata"]["name"], "rn-etl-driver");
    assert_eq!(d["spec"]["nodeSelector"]["kubernetes.io/hostname"], NODE);
    assert_eq!(d["spec"]["containers"][0]["command"][1], "3600");
}
