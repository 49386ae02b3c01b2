//! Hostile and broken API servers, as loopback servers that misbehave on purpose: silent
//! (accepts, never answers), slow drip (one byte a second), an endless 200 PodList,
//! garbage instead of HTTP, a 500 with a Status; and kubeconfigs whose exec credential
//! plugin hangs, or prints a token and fails. Every command that talks to a cluster must
//! end within its timeout plus 5 s with one clear line, in bounded memory, with no
//! credential in anything it prints.
//! The loopback servers' helpers here serve the other hostile files too (actions, network,
//! text).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use spark_triage::record::Header;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::common::triage;

/// How a server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Silent,
    Drip,
    EndlessList,
    Garbage,
    Status500,
    /// Answers reads (one app: a driver and its executor 1) and access reviews; every
    /// write hangs.
    SilentWrites,
}

pub(super) const TOKEN: &str = "tok-SECRET-4f1d9c";
const EXEC_TOKEN: &str = "tok-EXEC-SECRET-77ab";
/// The request timeout every run here uses.
pub(super) const TIMEOUT_S: u64 = 3;

/// Starts a server on loopback; it runs until the test's runtime ends.
async fn serve(b: Behaviour) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            tokio::spawn(conn(s, b));
        }
    });
    port
}

/// Reads one request head (with a body, up to its content-length); `None` at the end.
pub(super) async fn request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                match s.read(&mut byte).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => buf.extend_from_slice(&byte[..n]),
                }
            }
            return Some(head);
        }
        match s.read(&mut byte).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
        if buf.len() > 1 << 20 {
            return None;
        }
    }
}

pub(super) async fn json(s: &mut TcpStream, body: &str) -> bool {
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(resp.as_bytes()).await.is_ok()
}

/// Reads are answered, writes hang.
async fn silent_writes(mut s: TcpStream) {
    let driver = r#"{"metadata":{"name":"etl-driver","namespace":"spark-jobs","uid":"d-1","resourceVersion":"5","labels":{"spark-role":"driver","spark-app-selector":"spark-1","spark-app-name":"etl"}},"spec":{"containers":[{"name":"spark-kubernetes-driver"}]},"status":{"phase":"Running"}}"#;
    let exec = r#"{"metadata":{"name":"etl-exec-1","namespace":"spark-jobs","uid":"e-1","resourceVersion":"6","labels":{"spark-role":"executor","spark-app-selector":"spark-1","spark-app-name":"etl","spark-exec-id":"1"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"etl-driver","uid":"d-1","controller":true}]},"spec":{"containers":[{"name":"spark-kubernetes-executor"}]},"status":{"phase":"Running"}}"#;
    while let Some(head) = request(&mut s).await {
        let line = head.lines().next().unwrap_or_default().to_owned();
        let ok = if line.starts_with("GET ") {
            json(
                &mut s,
                &format!(r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"7"}},"items":[{driver},{exec}]}}"#),
            )
            .await
        } else if line.starts_with("POST ") && line.contains("selfsubjectaccessreviews") {
            json(
                &mut s,
                r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{},"status":{"allowed":true}}"#,
            )
            .await
        } else {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            false
        };
        if !ok {
            return;
        }
    }
}

/// Reads one request head (the requests here have no body).
async fn head(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
        if buf.len() > 64 * 1024 {
            return false;
        }
    }
    true
}

async fn conn(mut s: TcpStream, b: Behaviour) {
    if b == Behaviour::SilentWrites {
        return silent_writes(s).await;
    }
    loop {
        if !head(&mut s).await {
            return;
        }
        match b {
            Behaviour::Silent => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Behaviour::Drip => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if s.write_all(b"1\r\n \r\n").await.is_err() {
                        return;
                    }
                }
            }
            Behaviour::EndlessList => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                let start = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":["#;
                let mut chunk = Vec::new();
                write!(chunk, "{:x}\r\n", start.len()).unwrap();
                chunk.extend_from_slice(start);
                chunk.extend_from_slice(b"\r\n");
                if s.write_all(&chunk).await.is_err() {
                    return;
                }
                let pod = br#"{"metadata":{"name":"p","namespace":"x","labels":{"spark-role":"executor"}}},"#;
                let body: Vec<u8> = pod.iter().copied().cycle().take(pod.len() * 800).collect();
                let mut frame = Vec::new();
                write!(frame, "{:x}\r\n", body.len()).unwrap();
                frame.extend_from_slice(&body);
                frame.extend_from_slice(b"\r\n");
                loop {
                    if s.write_all(&frame).await.is_err() {
                        return;
                    }
                }
            }
            Behaviour::Garbage => {
                let _ = s
                    .write_all(b"\x16\x03\x01 this is not HTTP at all\r\n\r\n")
                    .await;
                return;
            }
            Behaviour::SilentWrites => return,
            Behaviour::Status500 => {
                let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcdserver: request timed out","reason":"InternalError","code":500}"#;
                let mut resp = Vec::new();
                write!(
                    resp,
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                )
                .unwrap();
                resp.extend_from_slice(body);
                if s.write_all(&resp).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// How the kubeconfig authenticates.
pub(super) enum Auth {
    Token,
    /// An exec plugin running this shell script.
    Exec(&'static str),
}

pub(super) fn kubeconfig(dir: &Path, port: u16, auth: Auth) -> PathBuf {
    let user = match auth {
        Auth::Token => format!("    token: {TOKEN}\n"),
        Auth::Exec(script) => {
            let path = dir.join("plugin.sh");
            std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
            format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: /bin/sh\n      args: [\"{}\"]\n      interactiveMode: Never\n",
                path.display()
            )
        }
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: spark-jobs\ncurrent-context: ctx\nusers:\n- name: u\n  user:\n{user}"
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

pub(super) fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "st-hostile-{tag}-{}-{:x}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[derive(Debug)]
pub(super) struct Run {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
    pub took: Duration,
    /// Peak resident memory (VmHWM) as last sampled, KiB.
    peak_kib: u64,
}

fn hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs the binary with `args` against the kubeconfig, sampling its peak memory; kills it
/// after `limit`.
pub(super) async fn run(args: &[&str], kc: &Path, limit: Duration) -> Run {
    let cmd = triage(args)
        .arg("--kubeconfig")
        .arg(kc)
        .args(["--request-timeout", &format!("{TIMEOUT_S}s")])
        .env("SPARK_TRIAGE_ACTIONS_LOG", kc.with_file_name("actions.log"))
        .command();
    sampled(cmd, limit).await
}

/// Runs a command, sampling its peak memory; kills it after `limit`.
pub(super) async fn sampled(mut cmd: tokio::process::Command, limit: Duration) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = tokio::spawn(async move {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let _ = tokio::join!(out.read_to_end(&mut o), err.read_to_end(&mut e));
        (o, e)
    });
    let mut peak = 0;
    let code = loop {
        if let Some(k) = hwm(pid) {
            peak = peak.max(k);
        }
        if let Ok(Some(status)) = child.try_wait() {
            break status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill().await;
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (o, e) = reader.await.unwrap();
    Run {
        code,
        out: String::from_utf8_lossy(&o).into_owned(),
        err: String::from_utf8_lossy(&e).into_owned(),
        took: start.elapsed(),
        peak_kib: peak,
    }
}

/// The checks every hostile run must pass.
fn assert_clear_failure(what: &str, r: &Run, budget: Duration, expect: &str) {
    assert_eq!(r.code, Some(1), "{what}: exit code; {r:?}");
    assert!(
        r.took <= budget,
        "{what}: took {:?} > {budget:?}; {r:?}",
        r.took
    );
    assert!(
        r.peak_kib < 300 * 1024,
        "{what}: peak RSS {} KiB; {r:?}",
        r.peak_kib
    );
    for secret in [TOKEN, EXEC_TOKEN] {
        assert!(
            !r.out.contains(secret) && !r.err.contains(secret),
            "{what}: a token leaked; {r:?}"
        );
    }
    let last = r.err.lines().last().unwrap_or_default();
    eprintln!(
        "{what}: {:.1?}, peak {} MiB: {last}",
        r.took,
        r.peak_kib / 1024
    );
    assert!(
        last.contains(expect),
        "{what}: expected {expect:?} in the last stderr line; {r:?}"
    );
    assert!(
        !r.err.contains("Status {") && !r.err.contains("Output {") && !r.err.contains("ApiError"),
        "{what}: a debug dump; {r:?}"
    );
}

/// Every cluster command against `b`, each bounded by the timeout plus 5 s.
async fn every_command_fails_clearly(b: Behaviour, expect: &str) {
    let port = serve(b).await;
    let dir = temp_dir(&format!("{b:?}"));
    let kc = kubeconfig(&dir, port, Auth::Token);
    let rec = dir.join("r.ndjson");
    let rec = rec.to_str().unwrap();
    let cases: [(&str, Vec<&str>, u64); 5] = [
        ("status", vec!["status"], 0),
        ("status --for", vec!["status", "--for", "5s"], 5),
        (
            "record --duration",
            vec!["record", rec, "--duration", "5s"],
            5,
        ),
        ("kill", vec!["kill", "--app", "etl", "1", "--yes"], 0),
        ("release", vec!["release", "--all"], 0),
    ];
    // Up to three tries of the first request (two for a 5xx) plus slack.
    let retries = if b == Behaviour::Status500 { 2 } else { 0 };
    for (what, args, extra) in cases {
        let budget = Duration::from_secs(TIMEOUT_S + 5 + extra + retries);
        let r = run(&args, &kc, budget + Duration::from_secs(20)).await;
        assert_clear_failure(&format!("{b:?} {what}"), &r, budget, expect);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_silent_server_is_a_clear_error_within_the_timeout() {
    every_command_fails_clearly(Behaviour::Silent, "no complete answer within 3s").await;
}

#[tokio::test]
async fn a_server_that_drips_a_byte_a_second_is_a_clear_error_within_the_timeout() {
    every_command_fails_clearly(Behaviour::Drip, "no complete answer within 3s").await;
}

#[tokio::test]
async fn an_endless_list_is_cut_at_its_size_in_bounded_memory() {
    every_command_fails_clearly(Behaviour::EndlessList, "response larger than 64 MiB").await;
}

#[tokio::test]
async fn garbage_instead_of_http_is_a_clear_error() {
    every_command_fails_clearly(Behaviour::Garbage, "cannot reach the API server").await;
}

#[tokio::test]
async fn a_500_with_a_status_is_one_human_line() {
    every_command_fails_clearly(
        Behaviour::Status500,
        "HTTP 500 InternalError: etcdserver: request timed out",
    )
    .await;
}

#[tokio::test]
async fn a_hanging_exec_plugin_costs_a_timeout_not_the_process() {
    let port = serve(Behaviour::Status500).await;
    let dir = temp_dir("exec-hang");
    let kc = kubeconfig(&dir, port, Auth::Exec("sleep 600"));
    let r = run(&["status"], &kc, Duration::from_secs(30)).await;
    assert_clear_failure(
        "hanging exec plugin",
        &r,
        Duration::from_secs(TIMEOUT_S + 5),
        "exec credential plugin did not finish within 3s",
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_exec_plugin_that_prints_a_token_then_fails_never_shows_the_token() {
    let port = serve(Behaviour::Status500).await;
    let dir = temp_dir("exec-fail");
    let script = format!(
        "echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{EXEC_TOKEN}\"}}}}'\necho 'login required: run sso-login' >&2\nexit 1"
    );
    let kc = kubeconfig(&dir, port, Auth::Exec(Box::leak(script.into_boxed_str())));
    let r = run(&["status"], &kc, Duration::from_secs(30)).await;
    assert_clear_failure(
        "failing exec plugin",
        &r,
        Duration::from_secs(TIMEOUT_S + 5),
        "exec credential plugin failed (exit status: 1): login required: run sso-login",
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A recording with a 300 MB line (and a zstd one that expands to 1 GiB of zeros): the
/// line is skipped with a warning, the bomb refused from its first bytes, in bounded memory.
#[tokio::test]
async fn a_huge_recording_line_and_a_zstd_bomb_cost_no_memory() {
    let dir = temp_dir("huge-line");
    let header = Header::new(
        chrono::DateTime::UNIX_EPOCH,
        "namespace x".into(),
        "spark-role".into(),
        "127.0.0.1:1".into(),
    );
    let tick = r#"{"kind":"tick","at":"1970-01-01T00:00:01Z"}"#;
    let path = dir.join("huge.ndjson");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        serde_json::to_writer(&mut f, &header).unwrap();
        writeln!(f, "\n{tick}").unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..300 {
            f.write_all(&chunk).unwrap();
        }
        writeln!(f, "\n{tick}").unwrap();
    }
    let cmd = triage(&["report"]).arg(&path).command();
    let r = sampled(cmd, Duration::from_secs(120)).await;
    eprintln!(
        "300 MB line: {:.1?}, peak {} MiB",
        r.took,
        r.peak_kib / 1024
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.err
            .contains("over the line limit of 64 MiB (--max-line); skipped"),
        "{r:?}"
    );
    assert!(r.peak_kib < 300 * 1024, "peak RSS {} KiB", r.peak_kib);

    let bomb = dir.join("bomb.ndjson.zst");
    {
        let f = std::fs::File::create(&bomb).unwrap();
        let mut enc = zstd::stream::write::Encoder::new(f, 1).unwrap();
        std::io::copy(
            &mut std::io::Read::take(std::io::repeat(0), 1 << 30),
            &mut enc,
        )
        .unwrap();
        enc.finish().unwrap();
    }
    for args in [vec!["report"], vec!["status", "--recording"]] {
        let cmd = triage(&args).arg(&bomb).command();
        let r = sampled(cmd, Duration::from_secs(60)).await;
        assert_eq!(r.code, Some(1), "{args:?}: {r:?}");
        assert!(r.err.contains("is not a spark-triage recording"), "{r:?}");
        assert!(
            r.took < Duration::from_secs(5),
            "{args:?} took {:?}",
            r.took
        );
        assert!(r.peak_kib < 300 * 1024, "peak RSS {} KiB", r.peak_kib);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The cluster answers reads but a write never completes: `kill` and `hold` fail with the
/// pod and the bound named, within the timeout plus 5 s, instead of hanging.
#[tokio::test]
async fn a_write_that_never_completes_fails_clearly_after_the_timeout() {
    let port = serve(Behaviour::SilentWrites).await;
    let dir = temp_dir("silent-writes");
    let kc = kubeconfig(&dir, port, Auth::Token);
    let budget = Duration::from_secs(TIMEOUT_S + 5);
    let r = run(
        &["kill", "--app", "etl", "1", "--yes"],
        &kc,
        Duration::from_secs(60),
    )
    .await;
    assert!(r.out.contains("will delete spark-jobs/etl-exec-1"), "{r:?}");
    assert_clear_failure(
        "kill with a silent DELETE",
        &r,
        budget,
        "delete spark-jobs/etl-exec-1: no complete answer within 3s (--request-timeout)",
    );
    let r = run(
        &["hold", "--app", "etl", "on"],
        &kc,
        Duration::from_secs(60),
    )
    .await;
    assert_clear_failure(
        "hold with a silent PATCH",
        &r,
        budget,
        "no complete answer within 3s (--request-timeout)",
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A server on a free loopback port that runs `conn` for each connection; its port.
pub(super) async fn serve_each<F, Fut>(conn: F) -> u16
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(conn(s));
        }
    });
    port
}

/// A driver marked held (index 0) and ten held executors of app `etl`.
pub(super) fn held_pod(i: usize) -> String {
    let mut labels = serde_json::json!({
        "spark-role": "driver", "spark-app-selector": "spark-1", "spark-app-name": "etl"
    });
    let mut meta = serde_json::json!({
        "name": "etl-driver", "namespace": "spark-jobs", "uid": format!("u-{i}"),
        "resourceVersion": format!("{}", 10 + i),
        "annotations": {"spark-triage.dev/hold-expires": "2026-01-01T00:00:00Z"},
    });
    if i > 0 {
        labels["spark-role"] = "executor".into();
        labels["spark-exec-id"] = i.to_string().into();
        meta["name"] = format!("etl-exec-{i}").into();
        meta["finalizers"] = serde_json::json!(["spark-triage.dev/hold"]);
        meta["ownerReferences"] = serde_json::json!([{
            "apiVersion": "v1", "kind": "Pod", "name": "etl-driver", "uid": "u-0", "controller": true
        }]);
    }
    meta["labels"] = labels;
    serde_json::json!({
        "metadata": meta,
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    })
    .to_string()
}

pub(super) async fn status(s: &mut tokio::net::TcpStream, code: u16, reason: &str) -> bool {
    let body = format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{reason}","reason":"{reason}","code":{code}}}"#
    );
    let resp = format!(
        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(resp.as_bytes()).await.is_ok()
}
