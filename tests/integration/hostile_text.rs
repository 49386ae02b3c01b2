//! Input that must not forge output or pass unbounded: a termination message written to
//! forge a table row (line feeds, bidi overrides, escapes), durations out of range.

use super::hostile::temp_dir;

/// A termination message written by the job's code: a line feed that would forge a row of
/// the table, a right-to-left override that would reverse the line, an escape sequence.
const FORGED: &str = "boom\u{202E}evil\u{1b}[2J\n99  running  -  -  active  -  -  forged-exec-99";

/// `status` (table and wide) and `explain` print a value from the cluster on its own line,
/// with its line feeds joined and its controls and bidi overrides escaped.
#[tokio::test]
async fn text_outputs_cannot_be_forged_by_cluster_data() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::Api;
    use kube::api::{Patch, PatchParams, PostParams};

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
        let (code, out, err) = triage(&["status", "--kubeconfig", kc, "-n", "default", "-o", o])
            .run()
            .await;
        assert_eq!(code, 0, "{err}");
        check(o, &out);
    }
    let pod = pods.get("x-exec-1").await.unwrap();
    let file = temp_dir("forged").join("pod.json");
    std::fs::write(&file, serde_json::to_vec(&pod).unwrap()).unwrap();
    let (code, out, err) = triage(&["explain", file.to_str().unwrap()]).run().await;
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
    .run()
    .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = triage(&["report", rec_s]).run().await;
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
        let (code, out, err) = triage(args).run().await;
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    let (code, _, err) = triage(&["status", "--config", &conf]).run().await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than ten years"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
