//! Event logs in an object store: the real-Spark logs of tests/fixtures/eventlog/ put in a
//! real S3 API on loopback (moto's server, from PyPI: scripts/s3/moto.sh, which `.ci/run`
//! runs first), checking every request's signature. `report s3://…` gives what `report` gives
//! on the same files on disk; wrong credentials or a missing bucket get one line, exit 1,
//! with no credential in any output.

use std::process::Stdio;

use super::common::triage;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/eventlog");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// moto's S3 on a free loopback port, stopped when dropped.
pub(super) struct Moto(std::process::Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The venv's bin directory (scripts/s3/moto.sh). The index was reachable when the tests
/// were built (`have_pypi`), so a failed install is a failure.
fn moto_bin() -> String {
    let out = std::process::Command::new("bash")
        .arg(format!("{ROOT}/scripts/s3/moto.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "scripts/s3/moto.sh failed (see above)"
    );
    String::from_utf8(out.stdout)
        .ok()
        .and_then(|s| s.lines().last().map(str::to_owned))
        .expect("moto.sh says its venv's bin")
}

/// moto's S3 on a free loopback port (stopped when the first value is dropped), its
/// endpoint and its venv's bin directory.
pub(super) fn moto() -> (Moto, String, String) {
    let bin = moto_bin();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let moto = Moto(
        std::process::Command::new(format!("{bin}/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", "3")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts"),
    );
    let endpoint = format!("http://127.0.0.1:{port}");
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed().as_secs() < 60,
            "moto_server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (moto, endpoint, bin)
}

fn apps_by_id(out: &str) -> Vec<(String, serde_json::Value)> {
    let doc: serde_json::Value = serde_json::from_str(out).expect("JSON");
    let mut apps: Vec<(String, serde_json::Value)> = doc["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .map(|a| {
            (
                a["app_id"].as_str().unwrap_or_default().to_owned(),
                a.clone(),
            )
        })
        .collect();
    apps.sort_by(|a, b| a.0.cmp(&b.0));
    apps
}

#[test]
#[cfg_attr(
    not(all(have_python3, have_pypi)),
    ignore = "needs python3 and the Python package index (moto's S3 server: scripts/s3/moto.sh)"
)]
fn event_logs_in_s3_give_the_report_the_files_give() {
    let (_moto, endpoint, bin) = moto();
    let fill = std::process::Command::new(format!("{bin}/python"))
        .arg(format!("{ROOT}/scripts/s3/fill.py"))
        .args([endpoint.as_str(), FIXTURES])
        .stderr(Stdio::inherit())
        .output()
        .expect("fill.py runs");
    assert!(fill.status.success(), "scripts/s3/fill.py failed");
    let key: serde_json::Value = serde_json::from_slice(&fill.stdout).expect("the key as JSON");
    let (id, secret) = (
        key["access_key_id"].as_str().expect("an id"),
        key["secret_access_key"].as_str().expect("a secret"),
    );
    assert_eq!(
        key["objects"], 10,
        "five logs, each an events file and its appstatus"
    );

    // The same five logs from disk, one report each.
    let mut on_disk = Vec::new();
    for dir in [
        "real-spark-k8s",
        "real-spark-k8s-heartbeat",
        "real-spark-k8s-lz4",
        "real-spark-k8s-none",
        "real-spark-k8s-snappy",
    ] {
        let (code, out, err) = triage(&["report", &format!("{FIXTURES}/{dir}"), "-o", "json"])
            .without_machine_aws()
            .run_blocking();
        assert_eq!(code, 0, "{err}");
        on_disk.extend(apps_by_id(&out));
    }
    on_disk.sort_by(|a, b| a.0.cmp(&b.0));

    // The directory of logs in the bucket, keys from the environment, as s3:// and s3a://.
    let env = [
        ("AWS_ACCESS_KEY_ID", id),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("AWS_ENDPOINT", endpoint.as_str()),
    ];
    for url in [
        "s3://spark-logs/spark-events/",
        "s3a://spark-logs/spark-events",
    ] {
        let (code, out, err) = triage(&["report", url, "-o", "json"])
            .without_machine_aws()
            .envs(env)
            .run_blocking();
        assert_eq!(code, 0, "{url}: {err}");
        assert!(err.is_empty(), "{url}: nothing to warn of: {err}");
        assert_eq!(
            apps_by_id(&out),
            on_disk,
            "{url}: not the report of the files"
        );
    }
    // One rolling log, keys and endpoint as --store-option; `status --recording` too.
    let one = "s3://spark-logs/spark-events/eventlog_v2_spark-e2e54b27c4fcee42bfa";
    let opts = [
        "--store-option".to_owned(),
        format!("endpoint={endpoint}"),
        "--store-option".to_owned(),
        format!("access_key_id={id}"),
        "--store-option".to_owned(),
        format!("secret_access_key={secret}"),
    ];
    let mut args: Vec<&str> = vec!["status", "--recording", one, "-o", "json"];
    args.extend(opts.iter().map(String::as_str));
    let (code, out, err) = triage(&args).without_machine_aws().run_blocking();
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let oom = doc["apps"][0]["executors"]
        .as_array()
        .expect("executors")
        .iter()
        .find(|e| e["exit_code"] == 137)
        .cloned()
        .unwrap_or_default();
    assert_eq!(oom["findings"][0], "container-oom-killed", "{oom}");
    assert_eq!(oom["witness"], "event-log");

    // Wrong secret, unknown key, missing bucket: one line, exit 1, no secret anywhere.
    for (what, url, env) in [
        (
            "a wrong secret",
            "s3://spark-logs/spark-events/",
            [
                ("AWS_ACCESS_KEY_ID", id),
                ("AWS_SECRET_ACCESS_KEY", "wrong-secret-value"),
                ("AWS_ENDPOINT", endpoint.as_str()),
            ],
        ),
        (
            "an unknown key",
            "s3://spark-logs/spark-events/",
            [
                ("AWS_ACCESS_KEY_ID", "AKIANOSUCHKEY0000000"),
                ("AWS_SECRET_ACCESS_KEY", "wrong-secret-value"),
                ("AWS_ENDPOINT", endpoint.as_str()),
            ],
        ),
        (
            "a missing bucket",
            "s3://no-such-bucket/spark-events/",
            [
                ("AWS_ACCESS_KEY_ID", id),
                ("AWS_SECRET_ACCESS_KEY", secret),
                ("AWS_ENDPOINT", endpoint.as_str()),
            ],
        ),
    ] {
        let (code, out, err) = triage(&["report", url])
            .without_machine_aws()
            .envs(env)
            .run_blocking();
        assert_eq!(code, 1, "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: one line: {err}");
        assert!(err.contains("cannot read"), "{what}: {err}");
        for s in [secret, "wrong-secret-value"] {
            assert!(
                !err.contains(s) && !out.contains(s),
                "{what}: a secret shown: {err}"
            );
        }
    }
    let (_, _, err) = triage(&["report", "s3://spark-logs/spark-events/"])
        .without_machine_aws()
        .envs([
            ("AWS_ACCESS_KEY_ID", id),
            ("AWS_SECRET_ACCESS_KEY", "wrong-secret-value"),
            ("AWS_ENDPOINT", endpoint.as_str()),
        ])
        .run_blocking();
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    let (_, _, err) = triage(&["report", "s3://no-such-bucket/x"])
        .without_machine_aws()
        .envs([
            ("AWS_ACCESS_KEY_ID", id),
            ("AWS_SECRET_ACCESS_KEY", secret),
            ("AWS_ENDPOINT", endpoint.as_str()),
        ])
        .run_blocking();
    assert!(err.contains("NoSuchBucket"), "{err}");
}
