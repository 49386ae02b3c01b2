//! What an app's pods cost beside its event log: pods deleted before any container ran
//! (their pending time), and the memory limits against the peaks the driver measured.

use serde_json::json;
use spark_triage_core::model::DriverExecutor;
use spark_triage_core::model::driver::PeakMemory;

use super::{app, del, driver_exec, exec_with, list, run, running, t, up, *};
use crate::source::DriverView;

fn pending() -> serde_json::Value {
    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu."}]})
}

fn with_memory(id: i64, status: serde_json::Value) -> ExecutorPod {
    let mut p = exec_with(
        id,
        10 + id as u64,
        json!({"creationTimestamp": t(0).to_rfc3339()}),
        status,
    );
    p.containers[0].limits.memory = Some("4Gi".into());
    p
}

fn measured(id: i64, heap: u64, off_heap: u64) -> DriverExecutor {
    DriverExecutor {
        peak: PeakMemory {
            jvm_heap: Some(heap),
            jvm_off_heap: Some(off_heap),
            process_tree_rss: None,
        },
        ..driver_exec(id, true)
    }
}

#[tokio::test]
async fn pods_deleted_before_they_ran_and_memory_against_its_limit_are_counted() {
    let s = run(vec![
        // 1 and 2 run; 3 and 4 wait for a node and are deleted at 40 s and 100 s (a
        // scale-down); 5 waits still.
        up(with_memory(1, running()), 1),
        up(with_memory(2, running()), 1),
        up(with_memory(3, pending()), 1),
        up(with_memory(4, pending()), 1),
        up(with_memory(5, pending()), 1),
        del(with_memory(3, pending()), 40),
        del(with_memory(4, pending()), 100),
        // 2 ran and was deleted: no pod that never ran.
        del(with_memory(2, running()), 120),
        // 6 was last seen pending when deleted, but the driver registered it: it ran.
        up(with_memory(6, pending()), 1),
        del(with_memory(6, pending()), 50),
        // 7 vanished from a LIST while pending: it may have run unseen.
        up(with_memory(7, pending()), 1),
        list(
            vec![with_memory(1, running()), with_memory(5, pending())],
            200,
            125,
        ),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![
                    measured(1, 1 << 30, 256 << 20),
                    measured(2, 512 << 20, 0),
                    driver_exec(6, false),
                ],
            },
            at: t(130),
        },
    ])
    .await;
    let a = app(&s);
    assert!(a.executors[&7].is_missing(), "{:?}", a.executors[&7].gone);
    let c = a.pod_cost();
    assert_eq!((c.never_ran, c.never_ran_pending_ms), (2, 140_000));
    let m = c.memory.as_ref().expect("measured");
    // The highest peak: 1.25 GiB of 4 GiB = 31 %, from the JVM's figures alone.
    assert_eq!(
        (
            m.measured,
            m.limit_bytes,
            m.peak_bytes,
            m.peak_percent,
            m.whole_process
        ),
        (2, 4 << 30, (1 << 30) + (256 << 20), 31, false)
    );
    assert_eq!(m.out_of_memory, 0);
    assert_eq!(a.cost_headline().as_deref(), Some("2 pods never ran"));
}
