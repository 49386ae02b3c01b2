//! Actions against a hostile cluster: a release that fails halfway (404, 500, 409, 422 on
//! some pods) tries every pod and says which failed; a kill or hold that cannot be logged
//! is not made; a read-only run says what made it so, and another file cannot lift it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::hostile::{
    Auth, TOKEN, held_pod, json, kubeconfig, request, run, serve_each, status, temp_dir,
};

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

/// A refusal names what made the run read-only (it said `--readonly` whatever set it), and
/// another configuration file (`--config`, `$SPARK_TRIAGE_CONFIG`) cannot lift a read-only
/// the default file sets.
#[tokio::test]
async fn read_only_says_what_set_it_and_another_config_cannot_lift_it() {
    use super::common::{start_sim, triage};
    let sim = start_sim("mixed", 1.0, &[]).await;
    let dir = temp_dir("readonly");
    let home = dir.join("xdg");
    std::fs::create_dir_all(home.join("spark-triage")).unwrap();
    let default = home.join("spark-triage").join("config.toml");
    std::fs::write(&default, "readonly = true\n").unwrap();
    let other = dir.join("other.toml");
    std::fs::write(&other, "readonly = false\n").unwrap();
    let kill = |extra: &[&str], env: Option<&std::path::Path>| {
        let c = triage(&[
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
        .env_remove("SPARK_TRIAGE_CONFIG");
        let c = match env {
            Some(p) => c.env("SPARK_TRIAGE_CONFIG", p),
            None => c,
        };
        c.output()
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
