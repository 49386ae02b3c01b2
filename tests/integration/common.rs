//! Helpers shared by the integration tests: the binary's outputs; the simulator's own
//! (start one, a real kube client, waiting) come from `spark_triage_sim::testing`.

pub use spark_triage_sim::testing::{
    client, eventually, phase, plain_pod, start_sim, start_sim_with, wait_running,
};

/// A finished command that must have succeeded: its stderr when it did not.
pub fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The real binary, no stdin, killed when its handle goes: the one way the tests start it
/// (`triage` and `triage_blocking` run it to its end).
pub fn bin() -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"));
    c.stdin(std::process::Stdio::null()).kill_on_drop(true);
    c
}

/// A finished run as (exit code, stdout, stderr); -1 when a signal ended it.
pub fn outcome(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The real binary with these arguments, no stdin: (exit code, stdout, stderr).
pub async fn triage(args: &[&str]) -> (i32, String, String) {
    outcome(&bin().args(args).output().await.expect("run spark-triage"))
}

/// [`bin`] outside a runtime.
pub fn bin_blocking() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"));
    c.stdin(std::process::Stdio::null());
    c
}

/// `triage` outside a runtime.
pub fn triage_blocking(args: &[&str]) -> (i32, String, String) {
    outcome(
        &bin_blocking()
            .args(args)
            .output()
            .expect("run spark-triage"),
    )
}

/// A command with none of the machine's AWS settings ([`AWS_UNSET`]) and stand-ins for
/// them ([`AWS_SET`]): the object-store tests give their keys per test.
pub fn without_machine_aws<C: EnvCommand>(c: &mut C) {
    for k in AWS_UNSET {
        c.remove(k);
    }
    for (k, v) in AWS_SET {
        c.set(k, v);
    }
}

/// The environment of a command, blocking or not.
pub trait EnvCommand {
    fn remove(&mut self, key: &str);
    fn set(&mut self, key: &str, value: &str);
}

impl EnvCommand for std::process::Command {
    fn remove(&mut self, key: &str) {
        self.env_remove(key);
    }
    fn set(&mut self, key: &str, value: &str) {
        self.env(key, value);
    }
}

impl EnvCommand for tokio::process::Command {
    fn remove(&mut self, key: &str) {
        self.env_remove(key);
    }
    fn set(&mut self, key: &str, value: &str) {
        self.env(key, value);
    }
}

/// The machine's AWS settings a test must not see (its credentials, profiles, instance
/// metadata), and what stands in for them.
pub const AWS_UNSET: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
];
pub const AWS_SET: &[(&str, &str)] = &[
    ("AWS_EC2_METADATA_DISABLED", "true"),
    ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
    ("AWS_CONFIG_FILE", "/nonexistent"),
    ("AWS_DEFAULT_REGION", "us-east-1"),
];

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
