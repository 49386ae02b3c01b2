//! An app on Spark's statefulset allocator: its executors' StatefulSet, not the driver,
//! replaces a killed pod, and a held pod that ended blocks its ordinal. The kill and hold
//! confirmations and the detail say so.

use spark_triage_core::model::HOLD_FINALIZER;
use spark_triage_core::model::testing::pod;

use super::*;
use crate::app::{Confirm, Msg};
use crate::settings::ReadOnly;
use crate::source::SourceEvent;

/// Executors 1, 4 and 3 on ordinals 0, 1 and 2; with `held`, executor 3's pod was deleted
/// and waits on the tool's hold.
fn statefulset_app(held: bool) -> App {
    let mut app = App::new(Context {
        context: "kind-spark".into(),
        scope: "namespace spark-jobs".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Demo,
    });
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:30:00Z")
        .unwrap()
        .to_utc();
    let labels = |role: &str, id: Option<i64>| {
        let mut l = serde_json::json!({"spark-app-selector": "spark-0a1b", "spark-app-name": "sts-etl",
            "spark-role": role, "spark-version": "3.5.3"});
        if let Some(id) = id {
            l["spark-exec-id"] = id.to_string().into();
        }
        l
    };
    let running = serde_json::json!({"phase": "Running", "containerStatuses": [{"name": "spark-kubernetes-executor",
        "image": "spark", "imageID": "", "ready": true, "restartCount": 0,
        "state": {"running": {"startedAt": "2026-11-29T10:20:00Z"}}}]});
    let mut pods = vec![pod(serde_json::json!({
        "metadata": {"name": "sts-etl-driver", "uid": "d-1", "resourceVersion": "1", "labels": labels("driver", None)},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}
    }))];
    for (ordinal, id) in [(0, 1), (1, 4), (2, 3)] {
        let mut meta = serde_json::json!({"name": format!("spark-s-spark-0a1b-0-{ordinal}"), "uid": format!("u{id}"),
            "resourceVersion": (10 + id).to_string(), "labels": labels("executor", Some(id)),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "spark-s-spark-0a1b-0",
                                 "uid": "s-1", "controller": true}]});
        // Executor 3 ended and is held: Spark's deletion waits on the tool's finalizer.
        if held && id == 3 {
            meta["deletionTimestamp"] = "2026-11-29T10:29:00Z".into();
            meta["finalizers"] = serde_json::json!([HOLD_FINALIZER]);
        }
        pods.push(pod(serde_json::json!({"metadata": meta,
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": running})));
    }
    for p in pods {
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(p),
                at,
            }),
        );
    }
    app
}

fn press(app: &mut App, c: char) {
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
}

#[test]
fn a_statefulsets_executors_say_who_replaces_them_and_what_a_hold_blocks() {
    let mut app = statefulset_app(false);
    select_app(&mut app, "sts-etl");
    app.selected_exec = Some(1);
    press(&mut app, 'K');
    assert!(
        matches!(&app.confirm, Some(Confirm::Kill { targets, .. }) if targets[0].via.is_some()),
        "{:?}",
        app.notice
    );
    let small = draw(&mut app, 80, 24);
    assert!(
        small.contains("recreates the pod under the same name"),
        "{small}"
    );
    assert!(
        small.contains(" y  delete"),
        "the key line is not cut: {small}"
    );
    insta::assert_snapshot!("statefulset_kill_confirm_80x24", small);
    insta::assert_snapshot!("statefulset_kill_confirm_200x50", draw(&mut app, 200, 50));
    app.confirm = None;
    app.popup = None;
    press(&mut app, 'H');
    let hold = draw(&mut app, 200, 50);
    assert!(
        hold.contains(
            "Hold the executor pods of sts-etl in context kind-spark, namespace spark-jobs?"
        ),
        "{hold}"
    );
    assert!(
        hold.contains("the held pod blocks its ordinal of"),
        "{hold}"
    );
    insta::assert_snapshot!("statefulset_hold_confirm_200x50", hold);
    let mut app = statefulset_app(true);
    select_app(&mut app, "sts-etl");
    app.selected_exec = Some(3);
    app.popup = Some(Popup::Detail);
    let detail = draw(&mut app, 200, 50);
    assert!(
        detail.contains("held while deleted: the pod blocks ordinal 2 of StatefulSet"),
        "{detail}"
    );
    insta::assert_snapshot!("statefulset_held_detail_200x50", detail);
}
