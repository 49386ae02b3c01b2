//! Helpers shared by the integration tests: start a simulator in-process, get a real kube
//! client for it, wait for conditions.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use spark_triage_sim::{self as sim, SimHandle, SimOptions};

/// A simulator on a free port with this scenario, speed and faults.
/// A finished command that must have succeeded: its stderr when it did not.
pub fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub async fn start_sim(scenario: &str, speed: f64, faults: &[&str]) -> SimHandle {
    start_sim_with(scenario, speed, faults, |_| {}).await
}

pub async fn start_sim_with(
    scenario: &str,
    speed: f64,
    faults: &[&str],
    tweak: impl FnOnce(&mut SimOptions),
) -> SimHandle {
    let mut opts = SimOptions::new(sim::scenario::load(scenario).expect("scenario"));
    opts.speed = speed;
    opts.faults = faults.iter().map(|f| f.parse().expect("fault")).collect();
    tweak(&mut opts);
    sim::start(opts.for_external_clients())
        .await
        .expect("simulator starts")
}

/// A kube client built from the simulator's kubeconfig file, as a user's would be.
pub async fn client(sim: &SimHandle) -> Client {
    let kc = Kubeconfig::read_from(&sim.kubeconfig).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    Client::try_from(config).expect("client")
}

/// Polls `f` until it returns `Some`, or panics after `secs` seconds with `what`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {secs}s waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A plain pod (one container) in `ns`.
pub fn plain_pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).into()))
        .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    }))
    .expect("pod")
}

pub fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub async fn wait_running(api: &Api<Pod>, name: &str) -> Pod {
    eventually(15, &format!("{name} running"), || async {
        api.get_opt(name)
            .await
            .ok()
            .flatten()
            .filter(|p| phase(p) == "Running")
    })
    .await
}

/// The real binary with these arguments, no stdin: (exit code, stdout, stderr).
pub async fn triage(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run spark-triage");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The app of a `status`/`report` JSON document with this name.
pub fn app<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["apps"]
        .as_array()
        .expect("an apps list")
        .iter()
        .find(|a| a["app_name"] == name)
        .unwrap_or_else(|| panic!("no app {name} in {doc}"))
}

/// `spark-triage status --kubeconfig KC -n spark-jobs -o json ARGS…` (without `-n` when
/// ARGS has `-A`), which must succeed.
pub async fn status_json(kc: &str, args: &[&str]) -> serde_json::Value {
    let scope: &[&str] = if args.contains(&"-A") {
        &[]
    } else {
        &["-n", "spark-jobs"]
    };
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"))
        .args(["status", "--kubeconfig", kc, "-o", "json"])
        .args(scope)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run status");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status JSON")
}

/// `6m36s`, `6m28s ago`, `45s`, `1h02m` → seconds; `None` for anything else (`≥3m`, `-`).
pub fn age_seconds(age: &str) -> Option<i64> {
    let age = age.trim_end_matches(" ago").trim();
    let num = |s: &str| s.parse::<i64>().ok();
    if let Some((h, m)) = age.split_once('h') {
        return Some(num(h)? * 3600 + num(m.strip_suffix('m')?)? * 60);
    }
    if let Some((m, s)) = age.split_once('m') {
        return Some(num(m)? * 60 + num(s.strip_suffix('s')?)?);
    }
    num(age.strip_suffix('s')?)
}
