//! Property tests: `explain`'s whole pipeline (read → project → classify → diagnose → render)
//! never panics, whatever it is given: arbitrary bytes, arbitrary JSON/YAML shapes made of
//! pod-like keys and values, and real fixtures with random subtrees replaced or bytes cut.

use proptest::prelude::*;
use serde_json::{Map, Value};
use spark_triage::record;
use spark_triage::store::Store;
use spark_triage_core::classify::ClassifyOptions;
use spark_triage_core::{explain, input};

/// Runs everything `explain` runs, in-process. Errors are fine; panics are not.
fn pipeline(bytes: &[u8]) {
    let now = chrono::DateTime::UNIX_EPOCH;
    if let Ok(objects) = input::read_pods(bytes, "fuzz") {
        for opts in [
            ClassifyOptions::default(),
            ClassifyOptions {
                spark_container: Some("executor".into()),
                check_all_containers: Some(false),
                spark_version: None,
            },
        ] {
            let report = explain::explain(&objects.pods, &objects.events, &opts, now);
            let _ = explain::render_text(&report);
            let _ = serde_json::to_string(&report).expect("a report always serialises");
        }
    }
    let _ = input::read_events(bytes, "fuzz");
}

const KEYS: &[&str] = &[
    "kind",
    "apiVersion",
    "items",
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "spark-exec-id",
    "spark-role",
    "spark-app-selector",
    "spark-exec-inactive",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "ownerReferences",
    "spec",
    "containers",
    "initContainers",
    "env",
    "resources",
    "limits",
    "requests",
    "memory",
    "restartPolicy",
    "nodeName",
    "status",
    "phase",
    "reason",
    "message",
    "conditions",
    "type",
    "containerStatuses",
    "initContainerStatuses",
    "state",
    "lastState",
    "terminated",
    "running",
    "waiting",
    "exitCode",
    "startedAt",
    "finishedAt",
    "image",
    "imageID",
    "ready",
    "restartCount",
    "involvedObject",
    "regarding",
    "note",
    "count",
    "series",
    "lastTimestamp",
];

const WORDS: &[&str] = &[
    "Pod",
    "PodList",
    "List",
    "Event",
    "EventList",
    "v1",
    "events.k8s.io/v1",
    "executor",
    "driver",
    "EXECID",
    "7",
    "-1",
    "Running",
    "Pending",
    "Failed",
    "Succeeded",
    "Unknown",
    "Terminating",
    "Never",
    "OOMKilled",
    "Evicted",
    "Error",
    "spark-kubernetes-executor",
    "DisruptionTarget",
    "PodScheduled",
    "True",
    "False",
    "Unschedulable",
    "FailedScheduling",
    "ImagePullBackOff",
    "ContainerCreating",
    "PreemptionByScheduler",
    "0/3 nodes are available: 3 Insufficient memory. preemption: x",
    "0/2 nodes are available: , , {{{, that the pod didn't tolerate",
    "2026-11-29T10:00:00Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "",
    "\u{0}",
    "The node was low on resource: ",
    "é",
    "4505Mi",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just(0i64),
            Just(137),
            Just(143),
            Just(52),
            Just(-1),
            Just(i64::from(i32::MAX) + 1),
            Just(i64::MAX),
            Just(i64::MIN)
        ]
        .prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ]
}

fn pod_like() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|kvs| {
                Value::Object(
                    kvs.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

fn fixtures() -> Vec<Value> {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("fixtures dir") {
        let path = entry.expect("entry").path();
        // The pod documents; folders (event logs) are other tests' fixtures.
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).expect("read fixture");
        for doc in input::parse_documents(&bytes, "fixture").expect("fixtures parse") {
            out.push(doc);
        }
    }
    out.sort_by_key(|v| v.to_string());
    out
}

/// Every path (as indexes into objects/arrays) in a value.
fn paths(v: &Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(PathStep::Key(k.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(PathStep::Index(i));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn replace_at(v: &mut Value, path: &[PathStep], new: Value) {
    let mut cur = v;
    for step in path {
        let next = match (step, cur) {
            (PathStep::Key(k), Value::Object(m)) => m.get_mut(k),
            (PathStep::Index(i), Value::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    *cur = new;
}

fn to_yaml(v: &Value) -> Option<String> {
    serde_saphyr::to_string(v).ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        pipeline(&bytes);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(\\PC|[\\[\\]{}:,\"'\\-\\n #&*!|>])*") {
        pipeline(text.as_bytes());
    }

    #[test]
    fn arbitrary_pod_shapes_never_panic(v in pod_like()) {
        pipeline(v.to_string().as_bytes());
        if let Some(y) = to_yaml(&v) {
            pipeline(y.as_bytes());
        }
    }

    #[test]
    fn pod_shapes_wrapped_as_pods_never_panic(body in pod_like(), status in pod_like(), meta in pod_like()) {
        let mut pod = serde_json::json!({"kind": "Pod", "apiVersion": "v1"});
        pod["metadata"] = meta;
        pod["status"] = status;
        pod["spec"] = body;
        let list = serde_json::json!({"kind": "List", "items": [pod.clone(), pod]});
        pipeline(list.to_string().as_bytes());
    }

    #[test]
    fn mutated_fixtures_never_panic(which in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), new in pod_like()) {
        let docs = fixtures();
        let mut doc = which.get(&docs).clone();
        let mut all = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all);
        let path = at.get(&all).clone();
        replace_at(&mut doc, &path, new);
        pipeline(doc.to_string().as_bytes());
    }

    #[test]
    fn truncated_fixtures_never_panic(which in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(), yaml in any::<bool>()) {
        let docs = fixtures();
        let doc = which.get(&docs);
        let text = if yaml { to_yaml(doc).unwrap_or_default() } else { doc.to_string() };
        let bytes = text.as_bytes();
        let end = cut.index(bytes.len().max(1));
        pipeline(&bytes[..end.min(bytes.len())]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// The recording reader never panics: arbitrary bytes, and the real fixture cut or
    /// corrupted anywhere.
    #[test]
    fn the_recording_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), with in any::<u8>()) {
        let _ = record::read("fuzz", &bytes[..]);
        let fixture = include_bytes!("../fixtures/mixed-session.ndjson");
        let mut mutated = fixture[..cut.index(fixture.len())].to_vec();
        if !mutated.is_empty() {
            let i = flip.index(mutated.len());
            mutated[i] = with;
        }
        if let Ok(rec) = record::read("fuzz", &mutated[..]) {
            let mut store = Store::new();
            for ev in rec.events {
                store.apply(ev);
            }
        }
    }
}
