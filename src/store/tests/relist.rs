//! The periodic relist: a metadata-only LIST finds missing executors without touching the
//! rest, and a relist of unchanged pods recomputes nothing.

use std::sync::Arc;

use spark_triage_core::diagnose::Severity;

use super::{app, exec, list, run, running, t, up, *};
use crate::source::{DriverView, PresentPod};

fn present(ids: &[i64], rv: u64, at: u32) -> SourceEvent {
    SourceEvent::PodsPresent {
        pods: ids
            .iter()
            .map(|id| PresentPod {
                namespace: "spark-jobs".into(),
                name: format!("app-exec-{id}"),
                app_id: Some("spark-1".into()),
                executor_id: Some(*id),
                resource_version: Some(10 + *id as u64),
                uid: None,
            })
            .collect(),
        resource_version: Some(rv),
        at: t(at),
    }
}

#[tokio::test]
async fn a_metadata_only_list_marks_the_absent_executor_missing() {
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        up(exec(2, 12, running()), 1),
        present(&[1], 40, 30),
    ])
    .await;
    let a = app(&s);
    assert!(a.executors[&1].gone.is_none());
    assert!(matches!(
        a.executors[&2].gone,
        Some(Gone::Missing {
            list_rv: Some(40),
            ..
        })
    ));
    assert_eq!(s.view().full_snapshot_at, Some(t(30)));
    assert_eq!(s.view().list_rv, Some(40));
}

#[tokio::test]
async fn a_metadata_only_list_older_than_the_last_sighting_marks_nothing() {
    let s = run(vec![up(exec(1, 11, running()), 1), present(&[], 5, 30)]).await;
    assert!(app(&s).executors[&1].gone.is_none());
}

#[tokio::test]
async fn a_relist_of_unchanged_pods_leaves_the_records_shared() {
    let mut s = run(vec![
        up(exec(1, 11, running()), 1),
        up(exec(2, 12, running()), 1),
    ])
    .await;
    let before = s.snapshot();
    s.apply(list(
        vec![exec(1, 11, running()), exec(2, 12, running())],
        40,
        30,
    ));
    let key = ("spark-jobs".to_owned(), "spark-1".to_owned());
    let (old, new) = (&before.apps[&key], &s.view().apps[&key]);
    assert!(
        Arc::ptr_eq(old, new),
        "nothing changed: the app is not copied"
    );
    // A changed pod is applied.
    s.apply(up(exec(2, 13, super::tests::oom()), 31));
    assert_eq!(app(&s).executors[&2].pod_state, ExecutorState::Failed);
    assert!(!Arc::ptr_eq(&before.apps[&key], &s.view().apps[&key]));
}

/// A DELETED that a later complete LIST contradicts (a proxy's or a broken watch's): the
/// pod is there, so the executor is not gone. A real deletion (newer than the list) stays.
#[tokio::test]
async fn a_false_deletion_is_withdrawn_by_the_next_list_that_has_the_pod() {
    use super::tests::del;
    // Forged with the live pod's own version; the metadata relist at 40 still has it.
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        del(exec(1, 11, running()), 2),
        present(&[1], 40, 30),
    ])
    .await;
    let e = &app(&s).executors[&1];
    assert!(e.gone.is_none(), "{:?}", e.gone);
    assert_eq!(e.pod_state, ExecutorState::Running);
    assert_eq!(e.state(), ExecutorState::Running, "the verdict follows");
    let last = e
        .history
        .back()
        .and_then(|t| t.note.as_deref())
        .unwrap_or_default();
    assert!(last.starts_with("deletion withdrawn"), "{last}");
    assert!(
        app(&s)
            .findings()
            .iter()
            .all(|f| f.code.as_str() != "deleted")
    );
    // The full LIST does the same.
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        del(exec(1, 11, running()), 2),
        list(vec![exec(1, 11, running())], 40, 30),
    ])
    .await;
    assert!(app(&s).executors[&1].gone.is_none());
    // So does an update of the same pod after its DELETED.
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        del(exec(1, 11, running()), 2),
        up(exec(1, 12, running()), 3),
    ])
    .await;
    assert!(app(&s).executors[&1].gone.is_none());
    // A list older than a real deletion (rv 50) had the pod: the deletion stands.
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        del(exec(1, 50, running()), 2),
        present(&[1], 40, 30),
    ])
    .await;
    assert!(matches!(
        app(&s).executors[&1].gone,
        Some(Gone::Deleted { .. })
    ));
}

fn driver_lists_active(ids: &[i64], at: u32) -> SourceEvent {
    SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view: DriverView::Ok {
            executors: ids
                .iter()
                .map(|id| super::tests::driver_exec(*id, true))
                .collect(),
        },
        at: t(at),
    }
}

/// A tool opened in the minute after a pod vanished: the driver still lists the executor
/// active, the cluster has no pod. It is missing (an error, for `--exit-code`), never shown
/// running; only once a LIST after the driver's read lacks it, and only where this scope
/// lists the app's executor pods at all.
#[tokio::test]
async fn an_executor_only_the_driver_still_lists_is_missing_after_the_next_list() {
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        driver_lists_active(&[1, 2], 5),
        present(&[1], 40, 30),
    ])
    .await;
    let e = &app(&s).executors[&2];
    assert!(matches!(e.gone, Some(Gone::Missing { .. })), "{:?}", e.gone);
    assert_ne!(e.state(), ExecutorState::Running);
    assert_eq!(
        e.verdict.severity(),
        Some(Severity::Error),
        "{:?}",
        e.findings()
    );
    assert!(e.findings().iter().any(|f| f.code.as_str() == "missing"));
    // A LIST from before the driver's read says nothing about it.
    let s = run(vec![
        up(exec(1, 11, running()), 1),
        driver_lists_active(&[1, 2], 50),
        present(&[1], 40, 30),
    ])
    .await;
    assert!(matches!(
        app(&s).executors[&2].gone,
        Some(Gone::DriverOnly { .. })
    ));
    // A scope that lists none of the app's executor pods (a selector) says nothing either.
    let s = run(vec![driver_lists_active(&[1, 2], 5), present(&[], 40, 30)]).await;
    assert!(matches!(
        app(&s).executors[&2].gone,
        Some(Gone::DriverOnly { .. })
    ));
}

/// The pod watch's own LIST, read a page at a time (`PodsListing`, then `PodsPresent`
/// naming what it had), leaves the store as the same LIST in one `PodsListed` does: the
/// pods it has upserted, the executor it lacks missing.
#[tokio::test]
async fn a_list_read_a_page_at_a_time_is_the_same_as_one_list() {
    let before = || {
        vec![
            up(exec(1, 11, running()), 1),
            up(exec(2, 12, running()), 1),
            up(exec(3, 13, running()), 1),
        ]
    };
    let pods = || vec![exec(1, 21, running()), exec(2, 22, super::oom())];
    let mut whole = before();
    whole.push(list(pods(), 40, 30));
    let mut paged = before();
    for p in pods() {
        paged.push(SourceEvent::PodsListing {
            pods: vec![Arc::new(p)],
            at: t(30),
        });
    }
    let mut names = present(&[1, 2], 40, 30);
    if let SourceEvent::PodsPresent { pods, .. } = &mut names {
        for (p, rv) in pods.iter_mut().zip([21, 22]) {
            p.resource_version = Some(rv);
        }
    }
    paged.push(names);
    let (whole, paged) = (run(whole).await, run(paged).await);
    let (w, p) = (app(&whole), app(&paged));
    assert!(
        matches!(p.executors[&3].gone, Some(Gone::Missing { .. })),
        "{:?}",
        p.executors[&3].gone
    );
    assert_eq!(p.executors.len(), w.executors.len());
    for (id, e) in &w.executors {
        let q = &p.executors[id];
        assert_eq!(
            (q.state(), &q.gone, q.last_rv),
            (e.state(), &e.gone, e.last_rv),
            "executor {id}"
        );
        assert_eq!(q.verdict, e.verdict, "executor {id}");
    }
    assert_eq!(paged.view().full_snapshot_at, whole.view().full_snapshot_at);
}
