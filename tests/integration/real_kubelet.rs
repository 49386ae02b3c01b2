//! The simulator against a real kubelet: the truth table's cases (tests/real_node/) played by
//! the simulator (tests/fixtures/real-kubelet/scenario.yaml), each pod's last status and
//! events normalized as the real kubelet's were (tests/fixtures/real-kubelet/<case>.json),
//! and diffed on what a verdict rests on. Every difference must be one of `DIFFERENCES`
//! (each listed in docs/simulator.md, with why it stays); one that appears, or one that goes
//! away, fails the test.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Api;
use kube::api::{EvictParams, ListParams, WatchEvent, WatchParams};
use kubelet_fixture::{essentials, events, messages, pod};
use serde_json::{Value, json};

use super::common::{client, start_sim};
#[path = "../support/kubelet_fixture.rs"]
mod kubelet_fixture;

/// (case, the part of its essentials that differs, why it stays). Kept in docs/simulator.md
/// ("Differences from a real kubelet").
const DIFFERENCES: &[(&str, &str, &str)] = &[(
    "emptydir-eviction",
    "messages",
    "the simulator's storage eviction is the pod-limit one, the real node's the emptyDir sizeLimit one",
)];

/// The cases the simulator cannot make: no fate makes them (docs/simulator.md).
const NOT_SIMULATED: &[&str] = &["config-error", "image-never-pull"];

fn fixtures() -> BTreeMap<String, Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-kubelet");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures dir").flatten() {
        let path = entry.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.ends_with(".json") || name == "verdicts.json" {
            continue;
        }
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        out.insert(v["case"].as_str().expect("case").to_owned(), v);
    }
    out
}

/// The case names by executor id, as tests/real_node/main.rs's CASES has them.
fn case_of(id: &str) -> Option<&'static str> {
    Some(match id {
        "1" => "cgroup-oom",
        "2" => "exit-52",
        "3" => "exit-1",
        "4" => "sigterm-past-grace",
        "5" => "emptydir-eviction",
        "6" => "image-pull",
        "7" => "config-error",
        "8" => "preemption",
        "9" => "drain",
        "10" => "node-not-ready",
        "11" => "image-never-pull",
        _ => return None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_against_a_real_kubelet() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/real-kubelet/scenario.yaml"
    );
    let sim = start_sim(path, 2.0, &[]).await;
    let client = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "spark-jobs");

    // Every state of every pod, from the start.
    let last: std::sync::Arc<std::sync::Mutex<BTreeMap<String, Value>>> = Default::default();
    let gone: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>> =
        Default::default();
    let watch = {
        let pods = pods.clone();
        let last = last.clone();
        let gone = gone.clone();
        tokio::spawn(async move {
            let mut stream = pods
                .watch(&WatchParams::default().timeout(120), "0")
                .await
                .expect("watch")
                .boxed();
            while let Ok(Some(ev)) = stream.try_next().await {
                let (p, deleted) = match ev {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) => (p, false),
                    WatchEvent::Deleted(p) => (p, true),
                    _ => continue,
                };
                let v = serde_json::to_value(&p).expect("pod json");
                if let Some(id) = v["metadata"]["labels"]["spark-exec-id"].as_str() {
                    if deleted {
                        gone.lock().expect("lock").insert(id.to_owned());
                    }
                    last.lock().expect("lock").insert(id.to_owned(), v);
                }
            }
        })
    };

    // 9: evicted through the Eviction API, as kubectl drain does, once it runs.
    let start = tokio::time::Instant::now();
    let nine = loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "executor 9 never ran"
        );
        let list = pods
            .list(&ListParams::default().labels("spark-exec-id=9"))
            .await
            .expect("list");
        if let Some(p) = list
            .items
            .into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let name = nine.metadata.name.clone().expect("name");
    pods.evict(&name, &EvictParams::default())
        .await
        .expect("eviction");

    // The fates (at 6 s; 4's grace period is 30 s) and the lost node (12 s), at speed 2.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let done = {
            let gone = gone.lock().expect("lock");
            ["4", "8", "9"].iter().all(|id| gone.contains(*id))
        } && last.lock().expect("lock").get("10").is_some_and(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "False")
        });
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cases did not end within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    watch.abort();
    let events_api: Api<Event> = Api::namespaced(client, "spark-jobs");
    let items: Vec<Value> = events_api
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .iter()
        .map(|e| serde_json::to_value(e).expect("event json"))
        .collect();
    let all_events = json!({"items": items});

    let kept = fixtures();
    let last = last.lock().expect("lock").clone();
    let mut found: Vec<(String, String)> = Vec::new();
    let mut report = Vec::new();
    for (id, p) in &last {
        let Some(case) = case_of(id) else { continue };
        let Some(real) = kept.get(case) else {
            panic!("no fixture for {case} (tests/real_node/ with REAL_NODE_FIXTURES=write)")
        };
        if NOT_SIMULATED.contains(&case) {
            continue;
        }
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        let sim_case = json!({"case": case, "pod": pod(p), "events": events(&all_events, name)});
        let (mut want, mut got) = (essentials(real), essentials(&sim_case));
        want["messages"] = messages(real);
        got["messages"] = messages(&sim_case);
        for key in want.as_object().expect("object").keys() {
            if want[key] != got[key] {
                found.push((case.to_owned(), key.clone()));
                report.push(format!(
                    "{case} {key}:\n  real kubelet {}\n  simulator    {}",
                    want[key], got[key]
                ));
            }
        }
    }
    eprintln!("simulator vs real kubelet:\n{}", report.join("\n"));
    // Every kept case the simulator can make was made.
    for case in kept.keys() {
        let made = last.keys().any(|id| case_of(id) == Some(case.as_str()));
        assert!(
            made || NOT_SIMULATED.contains(&case.as_str()),
            "the simulator did not make {case}"
        );
    }
    let listed: Vec<(String, String)> = DIFFERENCES
        .iter()
        .map(|(c, k, _)| ((*c).to_owned(), (*k).to_owned()))
        .collect();
    let new: Vec<_> = found.iter().filter(|d| !listed.contains(d)).collect();
    let gone: Vec<_> = listed.iter().filter(|d| !found.contains(d)).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "differences not listed (fix the simulator or list them with why): {new:?}\nlisted but gone (drop them from DIFFERENCES and docs/simulator.md): {gone:?}\n{}",
        report.join("\n")
    );
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/simulator.md"))
        .expect("docs/simulator.md");
    for (case, key, _) in DIFFERENCES {
        assert!(
            doc.contains(&format!("`{case}` {key}")),
            "docs/simulator.md does not list `{case}` {key}"
        );
    }
    drop(sim);
}

/// The event log a real Spark 4.3 driver wrote in cluster mode on the real node
/// (tests/real_node/spark.rs keeps it): the executor the kernel OOM-killed is
/// `container-oom-killed`, 137, counted, with Spark's own removal text; its replacement ended
/// with the application.
#[tokio::test]
async fn report_of_the_real_nodes_event_log() {
    let dir = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/real-kubelet/eventlog"
    ))
    .expect("the kept event log")
    .flatten()
    .map(|e| e.path())
    .next()
    .expect("one event log");
    let (code, out, err) =
        super::common::triage(&["report", &dir.display().to_string(), "-o", "json"])
            .run()
            .await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("report json");
    let app = super::common::app(&doc, "rn-spark-oom");
    let ended = app["failures"].as_array().expect("endings");
    let one = ended
        .iter()
        .find(|e| e["executor"] == 1)
        .expect("executor 1");
    assert_eq!(one["finding"], "container-oom-killed", "{one}");
    assert_eq!(
        (one["exit_code"].as_i64(), one["counted"].as_bool()),
        (Some(137), Some(true)),
        "{one}"
    );
    assert!(
        one["driver_remove_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("The executor with id 1 exited with exit code 137")),
        "{one}"
    );
    let two = ended
        .iter()
        .find(|e| e["executor"] == 2)
        .expect("executor 2, the replacement");
    assert_eq!(
        (two["finding"].as_str(), two["counted"].as_bool()),
        (Some("ended-with-driver"), Some(false)),
        "{two}"
    );
    assert_eq!(app["failures_counted"], 1, "{app}");
}
