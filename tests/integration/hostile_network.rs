//! The network between the tool and the API server: proxies as kubectl honours them, a
//! forbidden event watch that backs off, a malformed watch line, a false deletion undone
//! by the next LIST.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spark_triage::source::live::EVENT_SELECTORS;
use tokio::io::AsyncWriteExt;

use super::hostile::{Auth, held_pod, json, kubeconfig, request, run, serve_each, temp_dir};

/// Forbidden events: each event watch backs off (0.8 s, 1.6 s, 3.2 s, …) instead of
/// relisting about 3.4 times a second forever, and the event watch's health says
/// forbidden without flipping to connected at each retry (the watcher's `Init` used to
/// count as a recovery and reset the backoff).
#[tokio::test]
async fn forbidden_events_back_off_and_stay_forbidden() {
    use super::common::{start_sim, triage};
    let sim = start_sim("mixed", 1.0, &["forbid=events"]).await;
    let dir = temp_dir("forbidden-events");
    let rec = dir.join("r.ndjson");
    let kc = sim.kubeconfig.to_str().unwrap();
    let (code, _, err) = triage(&[
        "record",
        "--kubeconfig",
        kc,
        "-n",
        "spark-jobs",
        rec.to_str().unwrap(),
        "--duration",
        "20s",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "{err}");
    let lists = sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.uri.contains("/events?") && !r.uri.contains("watch="))
        .count();
    eprintln!("forbidden event LISTs in 20 s: {lists}");
    let selectors = EVENT_SELECTORS.len();
    assert!(
        lists >= selectors && lists <= selectors * 6,
        "{lists} event LISTs in 20 s from {selectors} watches"
    );
    let text = std::fs::read_to_string(&rec).unwrap();
    let health: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""kind":"source-health","source":"event-watch""#))
        .collect();
    assert!(
        !health.iter().any(|l| l.contains(r#""state":"connected""#)),
        "the event watch never says connected: {health:#?}"
    );
    assert!(
        health.iter().any(|l| l.contains("forbidden")),
        "it says forbidden: {health:#?}"
    );
    assert!(
        health.len() <= selectors * 6,
        "{} health lines",
        health.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A CONNECT proxy on loopback that tunnels only to `kube.proxy-test.invalid` (a name no
/// resolver knows: reaching the simulator at all proves the proxy was used), to the
/// simulator's port; it keeps every CONNECT target.
async fn connect_proxy(sim_port: u16, seen: Arc<Mutex<Vec<String>>>) -> u16 {
    serve_each(move |mut s| {
        let seen = seen.clone();
        async move {
            let Some(head) = request(&mut s).await else {
                return;
            };
            let line = head.lines().next().unwrap_or_default().to_owned();
            seen.lock().unwrap().push(line.clone());
            let target = line.split(' ').nth(1).unwrap_or_default();
            if !line.starts_with("CONNECT ") || !target.starts_with("kube.proxy-test.invalid:") {
                let _ = s
                    .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
                    .await;
                return;
            }
            let Ok(mut up) = tokio::net::TcpStream::connect(("127.0.0.1", sim_port)).await else {
                return;
            };
            if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_ok()
            {
                let _ = tokio::io::copy_bidirectional(&mut s, &mut up).await;
            }
        }
    })
    .await
}

/// Proxies as kubectl honours them: `HTTP_PROXY` (the server is plain http) and a
/// kubeconfig's `proxy-url` are used (they used to fail every command: "requires the
/// disabled feature kube/http-proxy"); `NO_PROXY` matched against the API server's host
/// sends it direct.
#[tokio::test]
async fn proxies_from_the_environment_and_the_kubeconfig_as_kubectl_honours_them() {
    use super::common::{start_sim, triage};
    let sim = start_sim("mixed", 1.0, &[]).await;
    let text = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    let sim_port: u16 = text
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .expect("the simulator's port in its kubeconfig");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let proxy = format!(
        "http://127.0.0.1:{}",
        connect_proxy(sim_port, seen.clone()).await
    );
    let dir = temp_dir("proxy");
    let hidden = text.replace("127.0.0.1:", "kube.proxy-test.invalid:");
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, &hidden).unwrap();
    let status = |kc: std::path::PathBuf, env: Vec<(&'static str, String)>| async move {
        let mut cmd = triage(&[
            "status",
            "-n",
            "spark-jobs",
            "-o",
            "json",
            "--request-timeout",
            "5s",
        ])
        .arg("--kubeconfig")
        .arg(&kc);
        for k in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd = cmd.env_remove(k);
        }
        let out = cmd.envs(env).output().await;
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let tunnels = || {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("CONNECT kube.proxy-test.invalid:"))
            .count()
    };

    let (code, out, err) = status(kc.clone(), vec![("HTTP_PROXY", proxy.clone())]).await;
    assert_eq!(code, Some(0), "through HTTP_PROXY: {err}");
    assert!(out.contains("etl-nightly"), "{out}");
    assert!(tunnels() > 0, "the proxy was used");

    // NO_PROXY names the server (a domain, with other entries): direct, so the name does
    // not resolve, and the proxy sees nothing more.
    let before = tunnels();
    let (code, _, err) = status(
        kc.clone(),
        vec![
            ("HTTP_PROXY", proxy.clone()),
            (
                "NO_PROXY",
                "localhost,10.0.0.0/8,.proxy-test.invalid".to_owned(),
            ),
        ],
    )
    .await;
    assert_eq!(
        code,
        Some(1),
        "direct to a name that does not resolve: {err}"
    );
    assert_eq!(tunnels(), before, "NO_PROXY sent it direct");
    // NO_PROXY for another port of the server's host: still proxied.
    let (code, _, err) = status(
        kc.clone(),
        vec![
            ("http_proxy", proxy.clone()),
            ("no_proxy", "kube.proxy-test.invalid:1".to_owned()),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert!(tunnels() > before);

    // The kubeconfig's proxy-url, with no proxy in the environment.
    let with_url = hidden.replacen(
        "    server: ",
        &format!("    proxy-url: {proxy}\n    server: "),
        1,
    );
    let kc2 = dir.join("kubeconfig-proxy-url");
    std::fs::write(&kc2, &with_url).unwrap();
    let before = tunnels();
    let (code, _, err) = status(kc2, vec![]).await;
    assert_eq!(
        code,
        Some(0),
        "through the kubeconfig's proxy-url: {err}\n{with_url}"
    );
    assert!(tunnels() > before);

    // A dead proxy is named, with the variable it came from (it read `tunnel error: …
    // Connection refused`, naming neither).
    let (code, _, err) = status(
        kc.clone(),
        vec![("http_proxy", "http://127.0.0.1:9".to_owned())],
    )
    .await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("through the proxy 127.0.0.1:9 (from http_proxy)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// One chunk of a chunked HTTP body.
fn chunk(body: &str) -> Vec<u8> {
    format!("{:x}\r\n{body}\r\n", body.len()).into_bytes()
}

/// A server whose pod watch sends these lines (then stays open and quiet); every pod list
/// has executor 1 at resourceVersion 20, every other list is empty and every other watch
/// quiet.
async fn scripted_watch_server(lines: Vec<String>) -> u16 {
    let lines = Arc::new(lines);
    serve_each(move |mut s| {
        let lines = lines.clone();
        async move {
                while let Some(head) = request(&mut s).await {
                    let line = head.lines().next().unwrap_or_default().to_owned();
                    let pods = line.contains("/pods?") || line.contains("/pods ");
                    if line.contains("watch=") {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                        if s.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        if pods {
                            for l in lines.iter() {
                                let _ = s.write_all(&chunk(&format!("{l}\n"))).await;
                            }
                        }
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    }
                    let items = if pods { held_pod(1) } else { String::new() };
                    let body = format!(
                        r#"{{"kind":"List","apiVersion":"v1","metadata":{{"resourceVersion":"20"}},"items":[{items}]}}"#
                    );
                    if !json(&mut s, &body).await {
                        return;
                    }
                }
        }
    })
    .await
}

/// A server whose pod watch sends one malformed line and then a good event.
async fn garbled_watch_server() -> u16 {
    let good = format!(r#"{{"type":"ADDED","object":{}}}"#, held_pod(2));
    scripted_watch_server(vec![
        "{\"type\":\"ADDED\",\"object\":{not json".to_owned(),
        good,
    ])
    .await
}

/// A malformed line in the pod watch is a warning: the pod watch's health never says
/// retrying (it said `retrying (HTTP 0)` while the stream was up), and the good event after
/// it is delivered.
#[tokio::test]
async fn a_malformed_watch_line_does_not_mark_the_watch_as_failing() {
    let port = garbled_watch_server().await;
    let dir = temp_dir("garbled");
    let kc = kubeconfig(&dir, port, Auth::Token);
    let rec = dir.join("r.ndjson");
    let r = run(
        &[
            "record",
            rec.to_str().unwrap(),
            "--duration",
            "4s",
            "--no-driver-api",
        ],
        &kc,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let health: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""kind":"source-health","source":"pod-watch""#))
        .collect();
    assert!(
        !health.iter().any(|l| l.contains("retrying")),
        "{health:#?}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains(r#""kind":"pod-upserted""#) && l.contains("etl-exec-2")),
        "the event after the bad line arrives:\n{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A DELETED for a pod that is still there (a proxy's, a broken watch's) is withdrawn by
/// the next complete LIST that has the pod: the executor is running, not deleted (it stayed
/// deleted for good).
#[tokio::test]
async fn a_false_deletion_is_undone_by_the_next_list() {
    let deleted = format!(r#"{{"type":"DELETED","object":{}}}"#, held_pod(1));
    let port = scripted_watch_server(vec![deleted]).await;
    let dir = temp_dir("false-delete");
    let kc = kubeconfig(&dir, port, Auth::Token);
    let rec = dir.join("r.ndjson");
    let r = run(
        &[
            "record",
            rec.to_str().unwrap(),
            "--duration",
            "4s",
            "--poll-interval",
            "1s",
            "--no-driver-api",
        ],
        &kc,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(
        text.contains(r#""kind":"pod-deleted""#),
        "the DELETED was recorded"
    );
    let (code, out, err) =
        super::common::triage(&["status", "--recording", rec.to_str().unwrap(), "-o", "json"])
            .run()
            .await;
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let app = super::common::app(&doc, "etl");
    let e = app["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == 1)
        .unwrap_or_else(|| panic!("{app}"));
    assert_eq!(e["state"], "running", "{e}\n{text}");
    let _ = std::fs::remove_dir_all(dir);
}
