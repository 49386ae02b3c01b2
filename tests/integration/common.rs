//! Helpers shared by the integration tests: the binary's outputs; the simulator's own
//! (start one, a real kube client, waiting) come from `spark_triage_sim::testing`.

use std::ffi::{OsStr, OsString};
use std::process::{Output, Stdio};

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

/// A finished run as (exit code, stdout, stderr); -1 when a signal ended it.
pub fn outcome(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The real binary with these arguments, no stdin: the one way the tests run it. Add to it
/// ([`Triage::arg`], [`Triage::env`], [`Triage::without_machine_aws`], [`Triage::stdin`]…),
/// then run it to its end ([`Triage::run`]: exit code, stdout, stderr; [`Triage::output`];
/// their `_blocking` twins outside a runtime) or take the command to start it yourself
/// ([`Triage::command`], killed when its handle goes; [`Triage::command_blocking`]).
pub fn triage(args: &[&str]) -> Triage {
    Triage::default().args(args)
}

/// A run of the real binary being put together: see [`triage`].
#[derive(Debug, Clone, Default)]
pub struct Triage {
    args: Vec<OsString>,
    /// Set (`Some`) or removed (`None`), in the order given, over `aws_free`'s.
    vars: Vec<(OsString, Option<OsString>)>,
    /// Without the machine's AWS settings ([`AWS_UNSET`], [`AWS_SET`]).
    aws_free: bool,
    /// Written to its stdin (then closed) by the `output`s and `run`s.
    input: Option<Vec<u8>>,
}

impl Triage {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<S: AsRef<OsStr>>(self, args: impl IntoIterator<Item = S>) -> Self {
        args.into_iter().fold(self, |t, a| t.arg(a))
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.vars
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        vars.into_iter().fold(self, |t, (k, v)| t.env(k, v))
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.vars.push((key.as_ref().to_owned(), None));
        self
    }

    /// None of the machine's AWS settings ([`AWS_UNSET`]) and stand-ins for them
    /// ([`AWS_SET`]), whenever it is called: [`Triage::env`]'s settings go over them (the
    /// object-store tests give their keys per test).
    pub fn without_machine_aws(mut self) -> Self {
        self.aws_free = true;
        self
    }

    /// `input` on its stdin instead of nothing (for the `output`s and `run`s, not the
    /// `command`s); the child may exit before reading it all.
    pub fn stdin(mut self, input: &[u8]) -> Self {
        self.input = Some(input.to_vec());
        self
    }

    /// The command, no stdin, outside a runtime.
    pub fn command_blocking(self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"));
        c.args(&self.args).stdin(Stdio::null());
        if self.aws_free {
            for k in AWS_UNSET {
                c.env_remove(k);
            }
            c.envs(AWS_SET.iter().copied());
        }
        for (k, v) in &self.vars {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }

    /// The command, no stdin, killed when its handle goes.
    pub fn command(self) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.command_blocking());
        c.kill_on_drop(true);
        c
    }

    /// Runs it to its end.
    pub async fn output(mut self) -> Output {
        use tokio::io::AsyncWriteExt as _;
        let input = self.input.take();
        let mut c = self.command();
        let Some(input) = input else {
            return c.output().await.expect("run spark-triage");
        };
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run spark-triage");
        // The child may exit before reading everything (bad input): a broken pipe is fine.
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&input).await;
        }
        child.wait_with_output().await.expect("wait")
    }

    /// Runs it to its end: (exit code, stdout, stderr), as [`outcome`].
    pub async fn run(self) -> (i32, String, String) {
        outcome(&self.output().await)
    }

    /// [`Triage::output`] outside a runtime.
    pub fn output_blocking(mut self) -> Output {
        use std::io::Write as _;
        let input = self.input.take();
        let mut c = self.command_blocking();
        let Some(input) = input else {
            return c.output().expect("run spark-triage");
        };
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run spark-triage");
        // The child may exit before reading everything (bad input): a broken pipe is fine.
        let _ = child.stdin.take().expect("stdin").write_all(&input);
        child.wait_with_output().expect("wait")
    }

    /// [`Triage::run`] outside a runtime.
    pub fn run_blocking(self) -> (i32, String, String) {
        outcome(&self.output_blocking())
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
    let out = triage(&["status", "--kubeconfig", kc, "-o", "json"])
        .args(scope)
        .args(args)
        .output()
        .await;
    succeeded(&out);
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
