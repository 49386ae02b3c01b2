//! Credentials that the API server stops accepting, through the binary: the flight recorder
//! against a simulator that checks bearer tokens (`PUT /_sim/tokens`, refused with the
//! API server's 401). A revoked token is fetched again (the exec plugin run again, the
//! token file read again, as client-go does) and recording goes on; credentials that stay
//! refused make `/healthz` fail, so a Deployment's liveness probe restarts the recorder.

use std::path::Path;
use std::time::Duration;

use spark_triage_sim::{SimHandle, testing};

use super::common::{eventually, start_sim};
use super::flight::{get, metric, recorder_logged};
use super::hostile::temp_dir;

/// Only these bearer tokens are accepted from now on.
async fn accept(sim: &SimHandle, tokens: &[&str]) {
    let body = serde_json::to_string(tokens).unwrap();
    let addr = sim.url.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    s.write_all(
        format!(
            "PUT /_sim/tokens HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

/// A kubeconfig for the simulator whose user is `user` (YAML lines under `user:`).
fn kubeconfig(dir: &Path, url: &str, user: &str) -> String {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: spark-jobs\ncurrent-context: ctx\nusers:\n- name: u\n  user:\n{user}"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

async fn metrics(addr: &str) -> String {
    get(addr, "/metrics").await.1
}

/// Revokes the first token, gives the source a second, then revokes every token.
async fn revoke_then_refuse(user: &str, dir: &Path, rotate: impl Fn(&str)) {
    let sim = start_sim("mixed", 1.0, &[]).await;
    rotate("tok-1");
    accept(&sim, &["tok-1"]).await;
    let kc = kubeconfig(dir, &sim.url, user);
    let out = dir.join("rec");
    let (mut child, addr, log) = recorder_logged(&kc, &out, &["--poll-interval", "1s"]).await;
    eventually(30, "the recorder is ready", || async {
        get(&addr, "/readyz").await.0.contains("200").then_some(())
    })
    .await;
    // Revoked: the next request is refused; the credential is fetched again, the request
    // sent again with it, and the recorder goes on with it (it used to keep sending the
    // revoked one forever).
    rotate("tok-2");
    accept(&sim, &["tok-2"]).await;
    let text = eventually(60, "the credential fetched again and accepted", || async {
        let text = metrics(&addr).await;
        (metric(&text, "spark_triage_recorder_credential_fetches_total") >= 1.0
            && metric(&text, "spark_triage_recorder_auth_refused_in_a_row") == 0.0)
            .then_some(text)
    })
    .await;
    assert!(get(&addr, "/healthz").await.0.contains("200"), "{text}");
    eventually(30, "the pods listed again after the refusal", || async {
        let text = metrics(&addr).await;
        (metric(&text, "spark_triage_recorder_last_full_list_age_seconds") < 2.5).then_some(())
    })
    .await;
    // Refused whatever is fetched: /healthz fails (a liveness probe restarts the pod).
    accept(&sim, &[]).await;
    let (status, body) = eventually(90, "/healthz failing", || async {
        let r = get(&addr, "/healthz").await;
        r.0.contains("503").then_some(r)
    })
    .await;
    assert!(status.contains("503"));
    assert!(
        body.contains("refused the last") && body.contains("HTTP 401"),
        "{body}"
    );
    // The recorder's own last line says why its sources fail.
    let pid = child.id().unwrap();
    assert!(testing::terminate(pid), "SIGTERM to the recorder");
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    let lines = log.await.unwrap().join("\n");
    assert!(!lines.contains("tok-"), "a token in the output:\n{lines}");
    let last = lines.lines().last().unwrap_or_default();
    assert!(
        last.contains("retrying: HTTP 401 Unauthorized: the API server refused the credentials"),
        "{lines}"
    );
    // The recording keeps the sources' health: the refusal and what was done about it.
    let mut recorded = String::new();
    for e in std::fs::read_dir(&out).unwrap().filter_map(Result::ok) {
        if e.file_name().to_string_lossy().ends_with(".ndjson.zst") {
            let bytes = std::fs::read(e.path()).unwrap();
            // The last segment may be cut short by the kill: what decodes is enough.
            let mut d = zstd::stream::read::Decoder::new(&bytes[..]).unwrap();
            let mut text = Vec::new();
            let _ = std::io::Read::read_to_end(&mut d, &mut text);
            recorded.push_str(&String::from_utf8_lossy(&text));
        }
    }
    // (A revoked token fetched again is sent again at once and accepted: that refusal
    // never reaches the sources' health. The lasting one does.)
    assert!(
        recorded.contains("refused the credentials"),
        "no refusal in the recording's health"
    );
    assert!(!recorded.contains("tok-"), "a token in the recording");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_plugin_is_run_again_after_a_401_and_healthz_fails_when_refused_still() {
    let dir = temp_dir("exec-401");
    let token = dir.join("token");
    let runs = dir.join("runs");
    let script = dir.join("plugin.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> {runs}\nprintf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\"}}}}' \"$(cat {token})\"\n",
            runs = runs.display(),
            token = token.display()
        ),
    )
    .unwrap();
    let user = format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [\"{}\"]\n      interactiveMode: Never\n",
        script.display()
    );
    let t = token.clone();
    revoke_then_refuse(&user, &dir.clone(), move |v| std::fs::write(&t, v).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_is_read_again_after_a_401() {
    let dir = temp_dir("file-401");
    let token = dir.join("token");
    let user = format!("    tokenFile: {}\n", token.display());
    let t = token.clone();
    revoke_then_refuse(&user, &dir.clone(), move |v| std::fs::write(&t, v).unwrap()).await;
}

/// Tokens that live less than `--poll-interval`: every LIST goes out with a token revoked
/// since the last fetch. The refused LIST is sent again at once with the new token (#55: it
/// waited for the next poll, whose token was revoked again by then, so no full LIST ever
/// succeeded and `/readyz` went 503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_list_is_sent_again_with_the_new_token() {
    let dir = temp_dir("file-401-again");
    let token = dir.join("token");
    let sim = start_sim("mixed", 1.0, &[]).await;
    std::fs::write(&token, "tok-0").unwrap();
    accept(&sim, &["tok-0"]).await;
    let kc = kubeconfig(
        &dir,
        &sim.url,
        &format!("    tokenFile: {}\n", token.display()),
    );
    let out = dir.join("rec");
    let (mut child, addr, _log) = recorder_logged(
        &kc,
        &out,
        &["--poll-interval", "4s", "--request-timeout", "2s"],
    )
    .await;
    eventually(30, "the recorder is ready", || async {
        get(&addr, "/readyz").await.0.contains("200").then_some(())
    })
    .await;
    // A new token every 3 s, the old one revoked: shorter than the 4 s between LISTs.
    for n in 1..=8 {
        let t = format!("tok-{n}");
        std::fs::write(&token, &t).unwrap();
        accept(&sim, &[&t]).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let text = metrics(&addr).await;
    let age = metric(&text, "spark_triage_recorder_last_full_list_age_seconds");
    let (ready, why) = get(&addr, "/readyz").await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(age < 5.0, "the last full LIST is {age} s old");
    assert!(ready.contains("200"), "{ready}: {why}");
}
