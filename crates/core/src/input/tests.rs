//! Reading the documents people hand the tool: shapes, sizes, and errors.

use super::*;
use crate::model::GroupKind;

fn pods(text: &str) -> Result<Objects, InputError> {
    read_pods(text.as_bytes(), "test")
}

#[test]
fn single_pod_json_and_yaml() {
    let o = pods(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}"#)
        .unwrap();
    assert_eq!(o.pods.len(), 1);
    assert_eq!(o.pods[0].key(), "n/a");
    let o = pods("kind: Pod\napiVersion: v1\nmetadata:\n  name: b\n").unwrap();
    assert_eq!(o.pods[0].name, "b");
}

#[test]
fn list_with_pods_events_and_others() {
    let o = pods(
        r#"{"kind":"List","apiVersion":"v1","items":[
            {"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}},
            {"kind":"Event","apiVersion":"v1","metadata":{"name":"a.1"},"involvedObject":{"kind":"Pod","name":"a"},"reason":"Killing"},
            {"kind":"Service","apiVersion":"v1","metadata":{"name":"s"}}
        ]}"#,
    )
    .unwrap();
    assert_eq!((o.pods.len(), o.events.len()), (1, 1));
    assert_eq!(o.skipped, vec!["skipped document 1 item 3: a Service (v1)"]);
}

#[test]
fn raw_pod_list_items_have_no_kind() {
    let o = pods(r#"{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#).unwrap();
    assert_eq!(o.pods.len(), 2);
}

#[test]
fn json_stream_and_multi_doc_yaml() {
    let o =
        pods(r#"{"kind":"Pod","metadata":{"name":"a"}} {"kind":"Pod","metadata":{"name":"b"}}"#)
            .unwrap();
    assert_eq!(o.pods.len(), 2);
    let o = pods("kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\n").unwrap();
    assert_eq!(o.pods.len(), 2);
}

#[test]
fn events_v1_list() {
    let o = read_events(
        br#"{"kind":"EventList","apiVersion":"events.k8s.io/v1","items":[
            {"metadata":{"name":"x","namespace":"n"},"eventTime":null,"regarding":{"kind":"Pod","name":"a","namespace":"n"},
             "reason":"FailedScheduling","note":"0/1 nodes are available: 1 Insufficient memory.","type":"Warning",
             "reportingController":"default-scheduler","deprecatedCount":4}]}"#,
        "ev",
    )
    .unwrap();
    assert_eq!(o.events.len(), 1);
    let e = &o.events[0];
    assert_eq!((e.object_name.as_str(), e.count), ("a", 4));
    assert_eq!(
        e.message.as_deref(),
        Some("0/1 nodes are available: 1 Insufficient memory.")
    );
    assert_eq!(e.source.as_deref(), Some("default-scheduler"));
}

#[test]
fn errors_are_one_clear_line() {
    let e = pods("{\"kind\": \"Pod\",\n \"metadata\": {")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("test: not valid JSON: EOF while parsing"),
        "{e}"
    );
    assert!(e.ends_with("at line 2, column 14"), "{e}");
    let e = pods("kind: Pod\nmetadata: [\n").unwrap_err().to_string();
    assert!(e.starts_with("test: not valid YAML"), "{e}");
    assert!(e.contains("line"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = pods(r#"{"kind":"Deployment","apiVersion":"apps/v1"}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "test: document 1 is a Deployment (apps/v1), not a Pod or a List of pods"
    );
    let e = pods("   \n").unwrap_err().to_string();
    assert_eq!(
        e,
        "test: empty input; expected a Pod, a PodList or a List of pods"
    );
    let e = pods("42").unwrap_err().to_string();
    assert_eq!(
        e,
        "test: document 1 is a number, not a Pod or a List of pods"
    );
    let e = read_pods(b"\xff\xfe", "bin").unwrap_err().to_string();
    assert_eq!(e, "bin: not text (invalid UTF-8 at byte 0)");
}

#[test]
fn malformed_item_is_a_problem_not_a_failure() {
    let o = pods(
        r#"{"kind":"List","items":[
            {"kind":"Pod","metadata":{"name":"good"}},
            {"kind":"Pod","metadata":{"name":"bad","namespace":"n"},"status":{"containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0,"state":{"terminated":{"exitCode":"x"}}}]}}
        ]}"#,
    )
    .unwrap();
    assert_eq!(o.pods.len(), 1);
    assert_eq!(o.invalid.len(), 1);
    assert!(
        o.invalid[0].starts_with("skipped document 1 item 2 (n/bad): not a valid Pod: status.containerStatuses[0].state.terminated.exitCode: invalid type: string"),
        "{}",
        o.invalid[0]
    );
}

#[test]
fn empty_list_is_fine() {
    let o = pods(r#"{"apiVersion":"v1","kind":"List","items":[]}"#).unwrap();
    assert!(o.pods.is_empty() && o.skipped.is_empty() && o.invalid.is_empty());
}

#[test]
fn group_objects_beside_pods_are_read_and_unknown_kinds_skipped() {
    let o = pods(
        r#"{"kind":"List","apiVersion":"v1","items":[
            {"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"},
             "spec":{"workloadRef":{"name":"gang","podGroup":"executors"},"containers":[]}},
            {"kind":"PodGroup","apiVersion":"scheduling.volcano.sh/v1beta1","metadata":{"name":"pg","namespace":"n"},"status":{"phase":"Pending"}},
            {"kind":"Workload","apiVersion":"kueue.x-k8s.io/v1beta1","metadata":{"name":"pod-a-1f2e3","namespace":"n"}},
            {"kind":"Workload","apiVersion":"scheduling.k8s.io/v1alpha1","metadata":{"name":"gang","namespace":"n"}},
            {"kind":"Workload","apiVersion":"example.com/v1","metadata":{"name":"w"}}
        ]}"#,
    )
    .unwrap();
    let kinds: Vec<_> = o.groups.iter().map(|g| g.kind).collect();
    assert_eq!(
        kinds,
        vec![
            Some(GroupKind::VolcanoPodGroup),
            Some(GroupKind::KueueWorkload),
            Some(GroupKind::Workload)
        ]
    );
    assert_eq!(o.groups[0].phase.as_deref(), Some("Pending"));
    assert_eq!(
        o.skipped,
        vec!["skipped document 1 item 5: a Workload (example.com/v1)"]
    );
    // The pod's workloadRef is newer than the typed client's API level: read anyway.
    assert_eq!(o.pods[0].groups.len(), 1);
    assert_eq!(o.pods[0].groups[0].name, "gang");
    // A file of group objects only is not an error (they may come with the pods later).
    assert!(pods(r#"{"kind":"PodGroup","apiVersion":"scheduling.volcano.sh/v1beta1","metadata":{"name":"pg"}}"#).is_ok());
}
