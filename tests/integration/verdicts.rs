//! One trustworthy verdict per executor: `status --for` on `mixed` gives the same reference
//! verdicts (tests/fixtures/mixed-verdicts.json) under each simulator fault alone and under
//! all of them together, and a settled cluster gives the same bytes run after run.

use serde_json::Value;

use super::common::{start_sim, status_json as status};
use super::reference::{REFERENCE, compare};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_verdicts_under_every_fault() {
    let reference: Value = serde_json::from_str(REFERENCE).expect("reference parses");
    let all = [
        "drop-watches=5s",
        "expire-watches",
        "error-rate=0.05",
        "latency=100ms",
        "restart-after=12s",
        "no-websocket",
        "event-ttl=30s",
    ];
    let mut runs: Vec<(String, Vec<&str>)> = vec![("no fault".to_owned(), vec![])];
    runs.extend(all.iter().map(|f| ((*f).to_owned(), vec![*f])));
    runs.push(("all faults together".to_owned(), all.to_vec()));
    // Three at a time: each run is a simulator at 4x plus a status process, on 2 cores.
    let mut failures = Vec::new();
    for pair in runs.chunks(3) {
        let results = futures::future::join_all(pair.iter().map(|(label, faults)| {
            let reference = &reference;
            async move {
                let sim = start_sim("mixed", 4.0, faults).await;
                let kc = sim.kubeconfig.display().to_string();
                let doc = status(&kc, &["--for", "40s", "--poll-interval", "2s"]).await;
                let diffs = compare(&doc, reference);
                (label.clone(), diffs)
            }
        }))
        .await;
        for (label, diffs) in results {
            if !diffs.is_empty() {
                failures.push(format!("{label}:\n  {}", diffs.join("\n  ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Run-time stamps (when something was read) differ between runs; nothing else may, but
/// the kubelet's own flip of a failing pull between ErrImagePull and ImagePullBackOff
/// (the cluster changing, not the tool).
fn without_read_times(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["at", "last_ok", "full_snapshot_at"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            Value::String(t) if t == "ErrImagePull" => *t = "ImagePullBackOff".to_owned(),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_cluster_gives_the_same_answer_ten_times() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    // At rest from 60 scenario seconds (plus Spark's 30 s poll for the vanished pod): 25 s.
    tokio::time::sleep(std::time::Duration::from_secs(25)).await;
    let first = without_read_times(status(&kc, &[]).await);
    for run in 2..=10 {
        let next = without_read_times(status(&kc, &[]).await);
        assert_eq!(
            serde_json::to_string_pretty(&next).expect("json"),
            serde_json::to_string_pretty(&first).expect("json"),
            "run {run} differs from run 1"
        );
    }
}
