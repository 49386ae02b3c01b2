//! The hostile world, second round: actions that fail halfway, and (beside the code they
//! test) proxies, credentials, a recorder sharing its directory and port.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{io::AsyncWriteExt, net::TcpListener};

use super::hostile::{Auth, TOKEN, json, kubeconfig, request, run, temp_dir};

/// A server on a free loopback port that runs `conn` for each connection; its port.
async fn serve_each<F, Fut>(conn: F) -> u16
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
fn held_pod(i: usize) -> String {
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

async fn status(s: &mut tokio::net::TcpStream, code: u16, reason: &str) -> bool {
    let body = format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{reason}","reason":"{reason}","code":{code}}}"#
    );
    let resp = format!(
        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(resp.as_bytes()).await.is_ok()
}

/// Answers reads and access reviews; a PATCH of the driver is a 404 (the app ended while
/// it was released), of `etl-exec-3` a 500; a DELETE a 404 (deleted meanwhile); every
/// request line is kept.
async fn halfway_server(seen: Arc<Mutex<Vec<String>>>) -> u16 {
    serve_each(move |mut s| {
        let seen = seen.clone();
        async move {
                while let Some(head) = request(&mut s).await {
                    let line = head.lines().next().unwrap_or_default().to_owned();
                    seen.lock().unwrap().push(line.clone());
                    let path = line.split(' ').nth(1).unwrap_or_default();
                    let pod = path
                        .split('?')
                        .next()
                        .unwrap_or_default()
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    let one = (0..=10).find(|&i| {
                        pod == if i == 0 {
                            "etl-driver".to_owned()
                        } else {
                            format!("etl-exec-{i}")
                        }
                    });
                    let ok = if line.starts_with("POST ") {
                        json(
                            &mut s,
                            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{},"status":{"allowed":true}}"#,
                        )
                        .await
                    } else if line.starts_with("DELETE ")
                        || (line.starts_with("PATCH ") && pod == "etl-driver")
                    {
                        status(&mut s, 404, "NotFound").await
                    } else if line.starts_with("PATCH ") && pod == "etl-exec-3" {
                        status(&mut s, 500, "InternalError").await
                    } else if line.starts_with("PATCH ") && pod == "etl-exec-5" {
                        status(&mut s, 409, "Conflict").await
                    } else if line.starts_with("PATCH ") && pod == "etl-exec-7" {
                        status(&mut s, 422, "Invalid").await
                    } else if let Some(i) = one {
                        json(&mut s, &held_pod(i)).await
                    } else {
                        let items: Vec<String> = (0..=10).map(held_pod).collect();
                        json(
                            &mut s,
                            &format!(
                                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"30"}},"items":[{}]}}"#,
                                items.join(",")
                            ),
                        )
                        .await
                    };
                    if !ok {
                        return;
                    }
                }
        }
    })
    .await
}

/// `release --all` tries every pod: a 404 on the driver (the app ended meanwhile) is
/// nothing left to release; a 500, a 409 and a 422 (retried, then given up) on three
/// executors are their pods' failure lines; the other seven are released and the exit
/// status is 1.
#[tokio::test]
async fn release_all_tries_every_pod_and_says_which_failed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = halfway_server(seen.clone()).await;
    let dir = temp_dir("halfway");
    let kc = kubeconfig(&dir, port, Auth::Token);
    for which in [&["release", "--all"][..], &["release", "--expired"][..]] {
        seen.lock().unwrap().clear();
        let r = run(which, &kc, Duration::from_secs(60)).await;
        assert_eq!(r.code, Some(1), "{which:?}: {r:?}");
        assert!(r.out.contains("etl-driver: already gone"), "{r:?}");
        for failed in [3, 5, 7] {
            assert!(
                r.out.contains(&format!("spark-jobs/etl-exec-{failed}")),
                "{r:?}"
            );
        }
        assert!(r.out.contains("released 7 pod(s)"), "{which:?}: {r:?}");
        assert!(
            r.err.contains("3 of 11 pod writes failed, the others were done; the first: patch spark-jobs/etl-exec-3"),
            "{which:?}: {r:?}"
        );
        assert!(!r.out.contains(TOKEN) && !r.err.contains(TOKEN));
        let patched: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("PATCH "))
            .cloned()
            .collect();
        for i in 1..=10 {
            assert!(
                patched
                    .iter()
                    .any(|l| l.contains(&format!("/pods/etl-exec-{i}?"))),
                "{which:?}: etl-exec-{i} was not tried: {patched:?}"
            );
        }
    }
    // A kill whose pod was deleted meanwhile: what was asked holds.
    let r = run(
        &["kill", "--app", "etl", "2", "--yes"],
        &kc,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.out.contains("spark-jobs/etl-exec-2: already gone"),
        "{r:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A termination message written by the job's code: a line feed that would forge a row of
/// the table, a right-to-left override that would reverse the line, an escape sequence.
const FORGED: &str = "boom\u{202E}evil\u{1b}[2J\n99  running  -  -  active  -  -  forged-exec-99";

/// `status` (table and wide) and `explain` print a value from the cluster on its own line,
/// with its line feeds joined and its controls and bidi overrides escaped.
#[tokio::test]
async fn text_outputs_cannot_be_forged_by_cluster_data() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::{
        Api,
        api::{Patch, PatchParams, PostParams},
    };

    use super::common::{client, plain_pod, start_sim, triage, wait_running};
    let sim = start_sim("empty", 1.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    let app = [("spark-app-selector", "spark-x"), ("spark-app-name", "x")];
    let mut driver = plain_pod("x-driver", &[("spark-role", "driver"), app[0], app[1]]);
    driver.spec.as_mut().unwrap().containers[0].name = "spark-kubernetes-driver".into();
    let exec = plain_pod(
        "x-exec-1",
        &[
            ("spark-role", "executor"),
            ("spark-exec-id", "1"),
            app[0],
            app[1],
        ],
    );
    for p in [driver, exec] {
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    wait_running(&pods, "x-exec-1").await;
    let status = serde_json::json!({"status": {"phase": "Failed", "containerStatuses": [
        {"name": "main", "image": "busybox:1.36", "imageID": "", "ready": false, "restartCount": 0,
         "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": FORGED}}}]}});
    pods.patch_status("x-exec-1", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    let kc = sim.kubeconfig.to_str().unwrap();
    let check = |what: &str, out: &str| {
        assert!(!out.is_empty(), "{what}: no output");
        for bad in ['\u{202E}', '\u{1b}'] {
            assert!(!out.contains(bad), "{what}: {bad:?} passed through:\n{out}");
        }
        assert!(
            !out.lines().any(|l| l.trim_start().starts_with("99 ")),
            "{what}: a forged row:\n{out}"
        );
    };
    for o in ["table", "wide"] {
        let (code, out, err) =
            triage(&["status", "--kubeconfig", kc, "-n", "default", "-o", o]).await;
        assert_eq!(code, 0, "{err}");
        check(o, &out);
    }
    let pod = pods.get("x-exec-1").await.unwrap();
    let file = temp_dir("forged").join("pod.json");
    std::fs::write(&file, serde_json::to_vec(&pod).unwrap()).unwrap();
    let (code, out, err) = triage(&["explain", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    check("explain", &out);
    assert!(
        out.contains("boom\\u{202e}evil\\u{1b}[2J"),
        "explain: the override and the escape are shown:\n{out}"
    );
    // The post-mortem of a recording of it (markdown, its only text format).
    let rec = file.parent().unwrap().join("forged.ndjson");
    let rec_s = rec.to_str().unwrap();
    let (code, _, err) = triage(&[
        "record",
        rec_s,
        "--kubeconfig",
        kc,
        "-n",
        "default",
        "--duration",
        "3s",
        "--poll-interval",
        "1s",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = triage(&["report", rec_s]).await;
    assert_eq!(code, 0, "{err}");
    check("report", &out);
    // The report is about the forged executor (its row is there, whole).
    assert!(
        out.lines()
            .any(|l| l.starts_with("| ") && l.contains(" | 1 | yes | failed | 1 | generic-error |")),
        "report: the executor's row:\n{out}"
    );
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

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
    .await;
    assert_eq!(code, 0, "{err}");
    let lists = sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.uri.contains("/events?") && !r.uri.contains("watch="))
        .count();
    eprintln!("forbidden event LISTs in 20 s: {lists}");
    let selectors = spark_triage::source::live::EVENT_SELECTORS.len();
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
    use super::common::start_sim;
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
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"));
        cmd.args([
            "status",
            "-n",
            "spark-jobs",
            "-o",
            "json",
            "--request-timeout",
            "5s",
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .stdin(std::process::Stdio::null());
        for k in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(k);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.unwrap();
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

/// Every duration is bounded with a usage error (exit 2) naming the range: a poll interval
/// of u64::MAX seconds used to panic a worker thread while `status` exited 0, a hold TTL of
/// u64::MAX became 2 h silently and `100000y` never expired.
#[tokio::test]
async fn durations_out_of_range_are_usage_errors() {
    use super::common::triage;
    let dir = temp_dir("durations");
    let conf = dir.join("config.toml");
    std::fs::write(&conf, "poll-interval = \"100000y\"\n").unwrap();
    let conf = conf.to_str().unwrap().to_owned();
    let cases: [(&[&str], &str); 6] = [
        (
            &["status", "--poll-interval", "18446744073709551615s"],
            "more than ten years",
        ),
        (&["status", "--poll-interval", "0s"], "from 1s to 1day"),
        (
            &["status", "--request-timeout", "100000y"],
            "more than ten years",
        ),
        (&["status", "--request-timeout", "2h"], "from 1ms to 1h"),
        (
            &["hold", "--app", "x", "on", "--ttl", "100000y"],
            "more than ten years",
        ),
        (
            &["hold", "--app", "x", "on", "--ttl", "90d"],
            "from 1s to 30days",
        ),
    ];
    for (args, expect) in cases {
        let (code, out, err) = triage(args).await;
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    let (code, _, err) = triage(&["status", "--config", &conf]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than ten years"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A kill or a hold that cannot be logged is not made: the actions log is a directory here,
/// so nothing is sent (it used to go ahead with a warning).
#[tokio::test]
async fn a_write_that_cannot_be_logged_is_refused() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = halfway_server(seen.clone()).await;
    let dir = temp_dir("unlogged");
    let kc = kubeconfig(&dir, port, Auth::Token);
    std::fs::create_dir_all(kc.with_file_name("actions.log")).unwrap();
    for args in [
        &["kill", "--app", "etl", "2", "--yes"][..],
        &["hold", "--app", "etl", "on"][..],
    ] {
        seen.lock().unwrap().clear();
        let r = run(args, &kc, Duration::from_secs(60)).await;
        assert_eq!(r.code, Some(1), "{args:?}: {r:?}");
        assert!(
            r.out.contains("the actions log cannot be written"),
            "{args:?}: {r:?}"
        );
        let writes: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("DELETE ") || l.starts_with("PATCH "))
            .cloned()
            .collect();
        assert!(writes.is_empty(), "{args:?}: sent {writes:?}");
    }
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

/// A refusal names what made the run read-only (it said `--readonly` whatever set it), and
/// another configuration file (`--config`, `$SPARK_TRIAGE_CONFIG`) cannot lift a read-only
/// the default file sets.
#[tokio::test]
async fn read_only_says_what_set_it_and_another_config_cannot_lift_it() {
    use super::common::start_sim;
    let sim = start_sim("mixed", 1.0, &[]).await;
    let dir = temp_dir("readonly");
    let home = dir.join("xdg");
    std::fs::create_dir_all(home.join("spark-triage")).unwrap();
    let default = home.join("spark-triage").join("config.toml");
    std::fs::write(&default, "readonly = true\n").unwrap();
    let other = dir.join("other.toml");
    std::fs::write(&other, "readonly = false\n").unwrap();
    let kill = |extra: &[&str], env: Option<&std::path::Path>| {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_spark-triage"));
        c.args([
            "kill",
            "-n",
            "spark-jobs",
            "--app",
            "etl-nightly",
            "1",
            "--yes",
        ])
        .args(extra)
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .env("XDG_CONFIG_HOME", &home)
        .env("SPARK_TRIAGE_ACTIONS_LOG", dir.join("actions.log"))
        .env_remove("SPARK_TRIAGE_CONFIG")
        .stdin(std::process::Stdio::null());
        if let Some(p) = env {
            c.env("SPARK_TRIAGE_CONFIG", p);
        }
        async move { c.output().await.unwrap() }
    };
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).trim().to_owned();
    // The default file's own read-only (once the simulator has made executor 1).
    let mut o = kill(&[], None).await;
    for _ in 0..100 {
        if !said(&o).contains("no executor") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        o = kill(&[], None).await;
    }
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        said(&o),
        format!(
            "spark-triage: refusing: read-only mode (readonly = true in {})",
            default.display()
        )
    );
    // Another file, by flag or by environment, does not lift it.
    let lifted = format!(
        "spark-triage: refusing: read-only mode (readonly = true in {}; another configuration file cannot lift it)",
        default.display()
    );
    let o = kill(&["--config", other.to_str().unwrap()], None).await;
    assert_eq!((o.status.code(), said(&o)), (Some(1), lifted.clone()));
    let o = kill(&[], Some(&other)).await;
    assert_eq!((o.status.code(), said(&o)), (Some(1), lifted));
    // The flag says itself.
    std::fs::remove_file(&default).unwrap();
    let o = kill(&["--readonly"], None).await;
    assert_eq!(
        said(&o),
        "spark-triage: refusing: read-only mode (--readonly)"
    );
    let _ = std::fs::remove_dir_all(dir);
}
