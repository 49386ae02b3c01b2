//! Finished driver pods a namespace keeps (`drivers-kept`): counted whatever became of
//! their apps, with when each ended; gone when deleted, or when a LIST no longer has them.

use serde_json::json;
use spark_triage_core::diagnose::Code;
use spark_triage_core::diagnose::housekeeping::PILE;
use spark_triage_core::model::testing::pod;
use spark_triage_core::model::{OperatorApp, OperatorKind};

use super::*;

/// Driver `n` of app `spark-n` in `ns`, in `phase` (ended at `t(n)` when finished).
fn driver(n: u32, ns: &str, phase: &str) -> ExecutorPod {
    let state = if phase == "Running" {
        json!({"running": {"startedAt": t(0).to_rfc3339()}})
    } else {
        json!({"terminated": {"exitCode": 0, "finishedAt": t(n).to_rfc3339()}})
    };
    pod(json!({
        "metadata": {"name": format!("app-{n}-driver"), "namespace": ns, "uid": format!("d{n}"),
                     "labels": {"spark-app-selector": format!("spark-{n}"), "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "spark-kubernetes-driver",
            "image": "spark", "imageID": "", "ready": false, "restartCount": 0, "state": state}]}
    }))
}

fn kept(s: &Store) -> Vec<(String, usize)> {
    s.view()
        .kept_drivers
        .iter()
        .map(|(ns, pods)| (ns.clone(), pods.len()))
        .collect()
}

#[tokio::test]
async fn finished_drivers_are_counted_by_namespace_until_deleted_or_unlisted() {
    let s = run(vec![
        up(driver(1, "etl", "Running"), 1),
        up(driver(1, "etl", "Succeeded"), 5),
        up(driver(2, "etl", "Failed"), 6),
        up(driver(3, "ml", "Succeeded"), 7),
    ])
    .await;
    assert_eq!(kept(&s), [("etl".into(), 2), ("ml".into(), 1)]);
    // When each ended: its container's end, not the sighting.
    assert_eq!(s.view().kept_drivers["etl"]["app-1-driver"].ended, t(1));

    // A deletion seen, and a LIST that no longer names one.
    let s = run(vec![
        up(driver(1, "etl", "Succeeded"), 5),
        up(driver(2, "etl", "Failed"), 6),
        up(driver(3, "ml", "Succeeded"), 7),
        del(driver(2, "etl", "Failed"), 8),
        list(vec![driver(1, "etl", "Succeeded")], 9, 9),
    ])
    .await;
    assert_eq!(kept(&s), [("etl".into(), 1)]);

    // A LIST older than a driver's sighting does not remove it.
    let mut newer = driver(4, "etl", "Succeeded");
    newer.resource_version = Some("20".into());
    let s = run(vec![up(newer, 8), list(vec![], 9, 9)]).await;
    assert_eq!(kept(&s), [("etl".into(), 1)]);
}

#[tokio::test]
async fn a_pile_is_a_housekeeping_finding_few_recent_ones_are_not() {
    let few = run((1..4)
        .map(|n| up(driver(n, "etl", "Succeeded"), n))
        .collect())
    .await;
    assert!(few.view().housekeeping(t(100)).is_empty());
    let n = u32::try_from(PILE).unwrap();
    let pile = run((1..=n)
        .map(|n| up(driver(n, "etl", "Succeeded"), n))
        .collect())
    .await;
    let said = pile.view().housekeeping(t(100));
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].1.code, Code::DriversKept);
    assert_eq!(said[0].0.count, PILE);
    assert_eq!(said[0].0.oldest, Some(t(1)));
    // Their apps forgotten, the pods are still counted.
    let mut s = pile;
    s.apply(SourceEvent::Forget {
        before: t(1_000_000),
        at: t(1_000_000),
    });
    assert!(s.view().apps.is_empty(), "{:?}", s.view().apps.keys());
    assert_eq!(kept(&s), [("etl".into(), PILE)]);
}

/// Who keeps them comes from the operators' objects the pods name: kubeflow with no
/// `timeToLiveSeconds` keeps its driver forever, one past its TTL is an operator not acting,
/// and a pod naming an object not read is said as such.
#[tokio::test]
async fn who_keeps_them_is_read_from_their_operators_objects() {
    let by_operator = |n: u32, app: &str| {
        let mut p = driver(n, "etl", "Succeeded");
        p.labels.insert(
            "sparkoperator.k8s.io/app-name".into(),
            app.to_owned().into(),
        );
        p
    };
    let object = |name: &str, ttl: Option<i64>| {
        let mut spec = json!({"type": "Scala"});
        if let Some(t) = ttl {
            spec["timeToLiveSeconds"] = json!(t);
        }
        OperatorApp::from_value(
            OperatorKind::Kubeflow,
            &json!({"metadata": {"name": name, "namespace": "etl"}, "spec": spec,
                    "status": {"applicationState": {"state": "COMPLETED"}}}),
        )
    };
    let mut events: Vec<SourceEvent> = vec![
        up(by_operator(1, "forever"), 1),
        up(by_operator(2, "short-lived"), 2),
        up(by_operator(3, "gone"), 3),
    ];
    events.extend((4..=u32::try_from(PILE).unwrap()).map(|n| up(driver(n, "etl", "Succeeded"), n)));
    events.push(SourceEvent::OperatorAppsListed {
        operator_kind: OperatorKind::Kubeflow,
        namespace: None,
        objects: vec![object("forever", None), object("short-lived", Some(60))],
        unknown: None,
        complete: true,
        at: t(100),
    });
    let s = run(events).await;
    let said = s.view().housekeeping(t(1000));
    let by = said[0].0.by;
    assert_eq!(
        (by.forever, by.past_ttl, by.unread, by.submit),
        (1, 1, 1, PILE - 3)
    );
}
