//! What a test of the simulator needs (the simulator's own HTTP tests and the product's):
//! a simulator on a free port, a real kube client for it, a pod, and a way to wait.
//! Behind the `testing` feature (it brings kube's client), for tests only.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::{SimHandle, SimOptions, scenario, start};

/// A simulator on a free port with this scenario, speed and faults.
pub async fn start_sim(scenario: &str, speed: f64, faults: &[&str]) -> SimHandle {
    start_sim_with(scenario, speed, faults, |_| {}).await
}

pub async fn start_sim_with(
    scenario: &str,
    speed: f64,
    faults: &[&str],
    tweak: impl FnOnce(&mut SimOptions),
) -> SimHandle {
    let mut opts = SimOptions::new(scenario::load(scenario).expect("scenario"));
    opts.speed = speed;
    opts.faults = faults.iter().map(|f| f.parse().expect("fault")).collect();
    tweak(&mut opts);
    start(opts.for_external_clients())
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

/// Sends SIGTERM to a process (a machine with only Rust may have no `kill` binary: it is
/// procps's, not coreutils').
pub fn terminate(pid: u32) -> bool {
    signal(pid, nix::sys::signal::Signal::SIGTERM)
}

/// Sends SIGHUP to a process (its terminal closed).
pub fn hang_up(pid: u32) -> bool {
    signal(pid, nix::sys::signal::Signal::SIGHUP)
}

fn signal(pid: u32, sig: nix::sys::signal::Signal) -> bool {
    i32::try_from(pid)
        .ok()
        .is_some_and(|p| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), sig).is_ok())
}
