//! The flight recorder end to end against the simulator: segments rotate, a recorder killed
//! with SIGKILL mid-segment and restarted loses nothing but its last second, /metrics and
//! /healthz answer, retention keeps the directory small.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use spark_triage_sim::SimHandle;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use super::common::{start_sim, succeeded, triage};

type Time = chrono::DateTime<chrono::Utc>;

/// `record DIR` with its metrics on a free port: the child and that port's address.
async fn recorder(kc: &str, dir: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let (child, addr, _) = recorder_logged(kc, dir, extra).await;
    (child, addr)
}

/// [`recorder`], and its later stderr lines once it ends.
pub(super) async fn recorder_logged(
    kc: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Child, String, tokio::task::JoinHandle<Vec<String>>) {
    recorder_serving(kc, dir, &[&["--rotate", "20s"], extra].concat()).await
}

/// `record TARGET` (a file, or a directory with `--rotate`) serving `/metrics` on a free
/// port: the child, the address it serves, its stderr lines.
pub(super) async fn recorder_serving(
    kc: &str,
    target: &std::path::Path,
    args: &[&str],
) -> (Child, String, tokio::task::JoinHandle<Vec<String>>) {
    let mut child = triage(&["record", "--kubeconfig", kc, "-A"])
        .arg(target)
        .args(["--metrics-addr", "127.0.0.1:0"])
        .args(args)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("record starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let addr = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the recorder says where it serves")
            .expect("stderr reads")
            .expect("the recorder is running");
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.trim().to_owned();
        }
    };
    // Its stderr keeps being read (a full pipe would block it).
    let log = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(l)) = lines.next_line().await {
            all.push(l);
        }
        all
    });
    (child, addr, log)
}

/// One GET over HTTP/1.1: (status line, body).
pub(super) async fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).await.expect("response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// A metric's value from Prometheus text.
pub(super) fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in:\n{text}"))
}

async fn report(args: &[&str]) -> Value {
    let out = triage(&["report"])
        .args(args)
        .args(["-o", "json"])
        .output()
        .await;
    succeeded(&out);
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

/// flaky-stream's failures: executor → (when, exit code).
fn failures(report: &Value) -> BTreeMap<i64, (Time, Option<i64>)> {
    report["apps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["app_name"] == "flaky-stream")
        .flat_map(|a| a["failures"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            let at = f["at"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .expect("failure time");
            (
                f["executor"].as_i64().expect("id"),
                (at, f["exit_code"].as_i64()),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_killed_mid_segment_and_restarted_loses_only_its_last_second() {
    let sim = start_sim("churn", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let base = std::env::temp_dir().join(format!("st-flight-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("tmp");
    let dir = base.join("segments");
    let reference = base.join("reference.ndjson.zst");
    // The reference: one uninterrupted recording of the whole run.
    let mut whole = triage(&["record", "--kubeconfig", &kc, "-A"])
        .arg(&reference)
        .args(["--duration", "140s"])
        .command()
        .stderr(Stdio::null())
        .spawn()
        .expect("reference starts");
    let (mut first, addr) = recorder(&kc, &dir, &[]).await;
    tokio::time::sleep(Duration::from_secs(70)).await;

    // /metrics and /healthz, scraped as Prometheus and a kubelet probe would.
    let (status, text) = get(&addr, "/metrics").await;
    assert!(status.contains("200"), "{status}");
    assert!(
        metric(&text, "spark_triage_recorder_segments_opened_total") >= 3.0,
        "{text}"
    );
    assert!(
        metric(&text, "spark_triage_recorder_segments") >= 4.0,
        "{text}"
    );
    assert!(
        metric(&text, "spark_triage_recorder_events_total") > 20.0,
        "{text}"
    );
    assert!(
        metric(&text, "spark_triage_recorder_written_bytes_total") > 0.0,
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "spark_triage_recorder_source_up{source=\"pod watch\"}"
        ),
        1.0
    );
    assert!(
        metric(&text, "spark_triage_recorder_last_full_list_age_seconds") < 60.0,
        "{text}"
    );
    assert!(get(&addr, "/healthz").await.0.contains("200"));
    assert!(get(&addr, "/readyz").await.0.contains("200"));

    // SIGKILL 10 s into the fourth segment, then a new run over the same directory.
    first.start_kill().expect("SIGKILL");
    let _ = first.wait().await;
    let killed_at = chrono::Utc::now();
    let (mut second, _) = recorder(&kc, &dir, &["--duration", "55s"]).await;
    let restarted_at = chrono::Utc::now();
    assert!(second.wait().await.expect("second run").success());
    assert!(whole.wait().await.expect("reference run").success());

    let segments = std::fs::read_dir(&dir)
        .expect("dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".ndjson.zst"))
        })
        .count();
    assert!(segments >= 5, "{segments} segments");

    let dir_s = dir.display().to_string();
    let got = report(&[&dir_s]).await;
    let gaps = got["gaps"].as_array().cloned().unwrap_or_default();
    assert_eq!(gaps.len(), 1, "the restart is one gap: {gaps:?}");
    let gap_from: Time = gaps[0]["from"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("gap");
    let gap_to: Time = gaps[0]["to"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("gap");
    assert!(gap_from <= killed_at && gap_to >= killed_at - chrono::Duration::seconds(1));
    let ended = got["ended_at"].as_str().expect("end").to_owned();
    let want = failures(&report(&[&reference.display().to_string(), "--to", &ended]).await);
    let have = failures(&got);
    // The scenario: every executor of flaky-stream dies with exit 56, dozens in two minutes.
    assert!(want.len() >= 30, "{} failures in the reference", want.len());
    assert!(want.values().all(|(_, code)| *code == Some(56)), "{want:?}");
    // Only failures in the last second before the kill, or before the restart had listed
    // the pods, may be missing or seen differently.
    let allowed = |at: Time| {
        at >= killed_at - chrono::Duration::seconds(1)
            && at <= restarted_at + chrono::Duration::seconds(5)
    };
    let mut excused = Vec::new();
    for (id, (at, code)) in &want {
        match have.get(id) {
            Some((_, c)) if c == code => {}
            _ if allowed(*at) => excused.push(*id),
            other => panic!(
                "executor {id} failed at {at} (exit {code:?}) but the directory has {other:?} \
                 (killed {killed_at}, restarted {restarted_at})"
            ),
        }
    }
    eprintln!(
        "flight: {segments} segments, {} failures, {} excused around the kill: {excused:?}",
        want.len(),
        excused.len()
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_the_directory_to_its_budget_while_recording() {
    let sim = start_sim("churn", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let dir = std::env::temp_dir().join(format!("st-flight-retain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = triage(&["record", "--kubeconfig", &kc, "-A"])
        .arg(&dir)
        .args(["--rotate", "2s", "--retain", "3s", "--duration", "11s"])
        .output()
        .await;
    succeeded(&out);
    let left = std::fs::read_dir(&dir).expect("dir").count();
    // About five segments were opened; those that ended over 3 s ago are gone.
    assert!((1..=3).contains(&left), "{left} segments left");
    let out = triage(&["status", "--recording"])
        .arg(&dir)
        .args(["--at", "-1s", "-o", "json"])
        .output()
        .await;
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["apps"][0]["app_name"], "flaky-stream", "{doc}");

    // Off the pod: `export` writes the segments as one tar, which reads as the directory.
    let tar = dir.with_extension("tar");
    let out = triage(&["export"])
        .arg(&dir)
        .arg("-o")
        .arg(&tar)
        .output()
        .await;
    succeeded(&out);
    let dir_s = dir.display().to_string();
    let tar_s = tar.display().to_string();
    let (from_dir, from_tar) = (report(&[&dir_s]).await, report(&[&tar_s]).await);
    assert_eq!(from_dir["apps"], from_tar["apps"]);
    assert!(
        !from_dir["apps"][0]["failures"]
            .as_array()
            .expect("failures")
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&tar);
}

/// One recorder per directory or file: a second one is refused with the holder's pid (a
/// second recorder on one file with `--force` used to truncate it under the first); once
/// the holder is SIGKILLed, its lock is taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_recorder_per_directory_and_per_file() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8 path").to_owned();
    let base = std::env::temp_dir().join(format!("st-lock-{}", std::process::id()));
    let dir = base.join("segments");
    let (mut first, _) = recorder(&kc, &dir, &[]).await;
    let holder = format!("pid {}", first.id().expect("pid"));
    let out = triage(&["record", "--kubeconfig", &kc, "-A"])
        .arg(&dir)
        .args(["--duration", "5s"])
        .output()
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&holder) && err.contains("directory"), "{err}");
    first.start_kill().expect("SIGKILL");
    let _ = first.wait().await;
    let out = triage(&["record", "--kubeconfig", &kc, "-A"])
        .arg(&dir)
        .args(["--duration", "2s"])
        .output()
        .await;
    succeeded(&out);

    let file = base.join("r.ndjson");
    let mut first = triage(&["record", "--kubeconfig", &kc, "-A"])
        .arg(&file)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("record starts");
    // Within 30 s: a recorder that never writes its header fails the test, not hangs it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let header = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            break line.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no header in {} after 30 s",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let out = triage(&["record", "--kubeconfig", &kc, "-A", "--force"])
        .arg(&file)
        .args(["--duration", "2s"])
        .output()
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.id().expect("pid"))),
        "{err}"
    );
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert_eq!(text.lines().next(), Some(header.as_str()), "untouched");
    first.start_kill().expect("SIGKILL");
    let _ = first.wait().await;
    let out = triage(&["record", "--kubeconfig", &kc, "-A", "--force"])
        .arg(&file)
        .args(["--duration", "1s"])
        .output()
        .await;
    succeeded(&out);
    let _ = std::fs::remove_dir_all(base);
}

/// The endpoints against idle and slow clients: a recorder with 256 file descriptors meets
/// 2,000 idle connections and a slowloris client (a header byte a second). It keeps
/// recording and rotating, closes the slow and idle ones, and `/metrics` answers again
/// (it used to hold every connection until its descriptors ran out, then exit at the
/// next rotation with "Too many open files"). `scripts/bench-metrics-flood.sh` does it
/// with 20,000.
/// The two tests that hold thousands of this process's descriptors take turns: the one
/// that takes the limit's whole left the other none ("Too many open files" in CI).
static DESCRIPTORS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_clients_cannot_stop_the_recorder() {
    let _turn = DESCRIPTORS.lock().await;
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8 path").to_owned();
    let dir = std::env::temp_dir().join(format!("st-flood-{}", std::process::id()));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 256 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_spark-triage"))
        .args(["record", "--kubeconfig", &kc, "-A"])
        .arg(&dir)
        .args(["--rotate", "2s", "--metrics-addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("record starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let addr = loop {
        let line = lines.next_line().await.expect("reads").expect("running");
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.trim().to_owned();
        }
    };
    let log = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(l)) = lines.next_line().await {
            all.push(l);
        }
        all
    });
    let opened = |text: &str| metric(text, "spark_triage_recorder_segments_opened_total");
    let before = opened(&get(&addr, "/metrics").await.1);
    let started = std::time::Instant::now();
    let mut idle = Vec::new();
    for _ in 0..2000 {
        match tokio::net::TcpStream::connect(&addr).await {
            Ok(s) => idle.push(s),
            Err(e) => panic!("connect: {e}"),
        }
    }
    let mut slow = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connects");
    slow.write_all(b"GET /metrics HTTP/1.1\r\n")
        .await
        .expect("sends");
    let slow_closed = tokio::spawn(async move {
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if slow.write_all(b"X").await.is_err() {
                return true;
            }
            let mut buf = [0u8; 64];
            if let Ok(Ok(0)) =
                tokio::time::timeout(Duration::from_millis(1), slow.read(&mut buf)).await
            {
                return true;
            }
        }
        false
    });
    // Every idle connection is closed by the server (each reads its end) within the bounds.
    for s in &mut idle {
        let mut buf = [0u8; 64];
        let r = tokio::time::timeout(Duration::from_secs(40), s.read(&mut buf)).await;
        assert!(
            matches!(r, Ok(Ok(0) | Err(_))),
            "an idle connection still open after {:?}",
            started.elapsed()
        );
    }
    assert!(
        slow_closed.await.expect("task"),
        "the slowloris client was never closed"
    );
    let idle_closed = started.elapsed();
    let text = get(&addr, "/metrics").await;
    assert!(text.0.contains("200"), "{text:?}");
    assert!(
        opened(&text.1) > before,
        "the recorder rotated during the flood"
    );
    assert!(
        child.try_wait().expect("status").is_none(),
        "the recorder is still running"
    );
    eprintln!("2000 idle connections and a slowloris client closed within {idle_closed:?}");
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let log = log.await.expect("log");
    assert!(
        !log.iter().any(|l| l.contains("Too many open files")),
        "{log:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The simulator's `mixed` scenario and a recorder of it (into a file named by `tag`)
/// serving its endpoints on loopback, `/readyz` answering: the simulator (kept alive by the
/// caller), the recorder, its address, its file.
async fn mixed_recorder(tag: &str) -> (SimHandle, Child, String, std::path::PathBuf) {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8 path").to_owned();
    let file = std::env::temp_dir().join(format!("st-{tag}-{}.ndjson", std::process::id()));
    let (child, addr, _log) = recorder_serving(&kc, &file, &["--force"]).await;
    until_ready(&addr).await;
    (sim, child, addr, file)
}

/// Waits (10 s at most) for the recorder's `/readyz` to answer 200.
async fn until_ready(addr: &str) {
    for _ in 0..100 {
        if probe(addr, "/readyz", "127.0.0.1")
            .await
            .is_ok_and(|h| h.contains(" 200 "))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("/readyz never answered 200");
}

/// A probe as a kubelet sends it: `GET path`, answered within a second (`timeoutSeconds: 1`),
/// from the address `from` (a node's, not the pods').
async fn probe(addr: &str, path: &str, from: &str) -> Result<String, String> {
    let ask = async {
        let socket = tokio::net::TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
        socket
            .bind(
                format!("{from}:0")
                    .parse()
                    .map_err(|e| format!("{from}: {e}"))?,
            )
            .map_err(|e| format!("bind {from}: {e}"))?;
        let mut s = socket
            .connect(addr.parse().map_err(|e| format!("{addr}: {e}"))?)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .map_err(|e| format!("send: {e}"))?;
        let mut text = String::new();
        s.read_to_string(&mut text)
            .await
            .map_err(|e| format!("read: {e}"))?;
        Ok(text
            .lines()
            .next()
            .unwrap_or("(closed, no answer)")
            .to_owned())
    };
    tokio::time::timeout(Duration::from_secs(1), ask)
        .await
        .unwrap_or_else(|_| Err("no answer within 1 s".to_owned()))
}

/// A client that holds every connection the endpoints take (300 of them), and opens again
/// each one they close, cannot keep the kubelet's probes from being answered (#55:
/// `/healthz` failed 29 of 29 probes so, and a recorder in a pod would be restarted every
/// minute): a connection that sends a request takes the place of one that never did, and
/// one address holds at most 16 places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_every_connection_cannot_starve_the_probes() {
    let (_sim, mut child, addr, file) = mixed_recorder("probes").await;
    // Nearly five times as many holders as there are places, each opening again 50 ms after
    // it is closed (a client library's pause; none at all makes it a CPU flood from this
    // machine, which no server on two cores answers through).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // From eight addresses (pods), 16 places each at most: together they fill every place
    // and every wait, so a probe gets in only by taking a silent connection's place.
    let holders: Vec<_> = (0..300)
        .map(|n| {
            let (addr, stop, opened) = (addr.clone(), stop.clone(), opened.clone());
            let from = format!("127.0.0.{}", 3 + n % 8);
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let connected = async {
                        let socket = tokio::net::TcpSocket::new_v4()?;
                        socket.bind(format!("{from}:0").parse().map_err(std::io::Error::other)?)?;
                        socket
                            .connect(addr.parse().map_err(std::io::Error::other)?)
                            .await
                    };
                    let Ok(mut s) = connected.await else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let mut buf = [0u8; 64];
                    let _ = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut failed = Vec::new();
    for n in 0..20 {
        let path = if n % 2 == 0 { "/healthz" } else { "/readyz" };
        // The kubelet probes from the node's address; the holders come from a pod's.
        match probe(&addr, path, "127.0.0.2").await {
            Ok(head) if head.contains(" 200 ") => {}
            Ok(head) => failed.push(format!("probe {n} {path}: {head}")),
            Err(e) => failed.push(format!("probe {n} {path}: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let held = opened.load(std::sync::atomic::Ordering::Relaxed);
    for h in holders {
        h.abort();
    }
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let _ = std::fs::remove_file(&file);
    assert!(held >= 300, "the holders opened {held} connections");
    assert!(
        failed.is_empty(),
        "with every place held ({held} connections opened), {} of 20 probes failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// 300 slowloris connections (a request head sent a byte every half second, never ended),
/// from eight addresses: each is closed by the server within its header timeout (5 s);
/// those past the places and the waits at once. The figures are printed (`--nocapture`;
/// 2026-12-06: median 0.0 s, 90 % 5.0 s, last 5.0 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_connections_are_closed_within_the_header_timeout() {
    use tokio::io::AsyncWriteExt;
    let (_sim, mut child, addr, file) = mixed_recorder("slowloris").await;
    let head = b"GET /metrics HTTP/1.1\r\nHost: recorder\r\nUser-Agent: slow\r\nAccept: */*\r\n";
    let conns: Vec<_> = (0..300)
        .map(|n| {
            let addr = addr.clone();
            let from = format!("127.0.0.{}", 3 + n % 8);
            tokio::spawn(async move {
                let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                socket
                    .bind(format!("{from}:0").parse().expect("address"))
                    .expect("bind");
                let started = std::time::Instant::now();
                let mut s = socket
                    .connect(addr.parse().expect("address"))
                    .await
                    .expect("connect");
                // A byte every half second, and a look for the server's close between them;
                // the head is sent over and over, never ended by the empty line.
                for (i, b) in head.iter().cycle().enumerate() {
                    if s.write_all(&[*b]).await.is_err() {
                        return started.elapsed();
                    }
                    let mut buf = [0u8; 256];
                    // Closed (an answer, a 408 or a 400, comes before the close).
                    let read = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf));
                    if let Ok(Ok(0) | Err(_)) = read.await {
                        return started.elapsed();
                    }
                    if i > 120 {
                        break;
                    }
                }
                started.elapsed()
            })
        })
        .collect();
    let mut closed = Vec::new();
    for c in conns {
        closed.push(c.await.expect("a connection's task"));
    }
    // The recorder still answers its probes after.
    let after = probe(&addr, "/healthz", "127.0.0.2").await;
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let _ = std::fs::remove_file(&file);
    closed.sort();
    let at = |q: usize| closed[(closed.len() - 1) * q / 100].as_secs_f64();
    eprintln!(
        "300 slowloris connections closed: median {:.1} s, 90% {:.1} s, last {:.1} s",
        at(50),
        at(90),
        at(100)
    );
    // The header timeout (5 s), this client's half-second steps, and a loaded machine.
    let bound = Duration::from_secs(7);
    let late = closed.iter().filter(|d| **d > bound).count();
    assert_eq!(
        late, 0,
        "{late} of 300 were still open after {bound:?}: {closed:?}"
    );
    assert!(after.is_ok_and(|h| h.contains(" 200 ")), "the probe after");
}

/// 20,000 idle connections held open (never a byte sent) from one address: a `/metrics`
/// scrape from another answers within 5 s, every time (#55: it got no answer at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_answers_under_twenty_thousand_idle_connections() {
    let _turn = DESCRIPTORS.lock().await;
    // Descriptors for them all: this process's limit raised (util-linux's prlimit; as
    // root, past the hard limit too), else as many as the limit allows.
    let _ = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg("--nofile=25000:25000")
        .output();
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(3)
                        .and_then(|n| n.parse::<usize>().ok())
                })
        })
        .unwrap_or(1024);
    let n = 20_000.min(limit.saturating_sub(300));
    let (_sim, mut child, addr, file) = mixed_recorder("idle").await;
    let scrape = || async {
        let ask = async {
            let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
            socket
                .bind("127.0.0.2:0".parse().expect("address"))
                .map_err(|e| e.to_string())?;
            let mut s = socket
                .connect(addr.parse().expect("address"))
                .await
                .map_err(|e| format!("connect: {e}"))?;
            s.write_all(
                format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .map_err(|e| format!("send: {e}"))?;
            let mut text = String::new();
            s.read_to_string(&mut text)
                .await
                .map_err(|e| format!("read: {e}"))?;
            Ok::<_, String>(text)
        };
        match tokio::time::timeout(Duration::from_secs(5), ask).await {
            Ok(r) => r,
            Err(_) => Err("no answer within 5 s".to_owned()),
        }
    };
    let first = scrape().await;
    assert!(
        first.as_ref().is_ok_and(|t| t.starts_with("HTTP/1.1 200")),
        "before the flood: {first:?}"
    );
    let started = std::time::Instant::now();
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.3:0".parse().expect("address"))
            .expect("bind");
        match socket.connect(addr.parse().expect("address")).await {
            Ok(s) => held.push(s),
            Err(e) => panic!("connection {} of {n}: {e}", held.len() + 1),
        }
    }
    eprintln!(
        "{n} idle connections opened in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut failed = Vec::new();
    for k in 0..5 {
        match scrape().await {
            Ok(t) if t.starts_with("HTTP/1.1 200") && t.contains("spark_triage_") => {}
            other => failed.push(format!(
                "scrape {k}: {:?}",
                other.map(|t| t.lines().next().map(str::to_owned))
            )),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    drop(held);
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let _ = std::fs::remove_file(&file);
    assert!(
        n >= 19_000 || std::env::var("CI").as_deref() != Ok("true"),
        "only {n} descriptors"
    );
    assert!(
        failed.is_empty(),
        "with {n} idle connections held: {failed:?}"
    );
}
