//! The real kubelet's output per case, kept in tests/fixtures/real-kubelet/<case>.json: written
//! with `REAL_NODE_FIXTURES=write`, else compared with this run (what a verdict rests on must
//! agree; messages that differ are shown).

use std::collections::BTreeMap;
use std::path::PathBuf;

use kubelet_fixture::{essentials, events, pod};
use serde_json::{Value, json};

#[path = "../support/kubelet_fixture.rs"]
mod kubelet_fixture;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-kubelet")
}

/// The last state of each pod in a `kubectl get -w -o json --output-watch-events` stream.
fn last_states(stream: &[u8]) -> BTreeMap<String, Value> {
    let mut last = BTreeMap::new();
    for ev in serde_json::Deserializer::from_slice(stream).into_iter::<Value>() {
        let Ok(ev) = ev else { break };
        let obj = &ev["object"];
        if let Some(name) = obj["metadata"]["name"].as_str() {
            last.insert(name.to_owned(), obj.clone());
        }
    }
    last
}

/// `snapshots`: pods taken at a moment of their own (the node NotReady), by case.
pub fn keep(stream: &[u8], all_events: &Value, snapshots: &BTreeMap<&str, Value>) {
    let last = last_states(stream);
    let write = std::env::var("REAL_NODE_FIXTURES").as_deref() == Ok("write");
    let mut disagree = Vec::new();
    for (id, case, _, _) in super::CASES {
        let name = format!("rn-etl-exec-{id}");
        let p = snapshots
            .get(case)
            .or_else(|| last.get(&name))
            .unwrap_or_else(|| panic!("no state of {name} in the watch"));
        let got = json!({
            "case": case,
            "about": "what a real kubelet (scripts/control-plane.sh up --real-node) wrote; tests/real_node/ writes it with REAL_NODE_FIXTURES=write",
            "pod": pod(p),
            "events": events(all_events, &name),
        });
        let path = dir().join(format!("{case}.json"));
        if write {
            let text = serde_json::to_string_pretty(&got).expect("json") + "\n";
            std::fs::write(&path, text).expect("write fixture");
            continue;
        }
        let kept: Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (REAL_NODE_FIXTURES=write)", path.display())),
        )
        .expect("fixture json");
        if essentials(&kept) != essentials(&got) {
            disagree.push(format!(
                "{case}: kept {}\n  now  {}",
                essentials(&kept),
                essentials(&got)
            ));
        } else if kept["pod"] != got["pod"] || kept["events"] != got["events"] {
            eprintln!(
                "{case}: the kubelet's messages differ from the fixture's (not required):\n  kept {kept}\n  now  {got}"
            );
        }
    }
    assert!(
        disagree.is_empty(),
        "the real kubelet no longer writes what the fixtures keep (REAL_NODE_FIXTURES=write to take this run's):\n{}",
        disagree.join("\n")
    );
}
