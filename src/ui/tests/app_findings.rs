//! Findings about the whole app on screen.

use spark_triage_core::diagnose::Code;
use spark_triage_core::model::testing::pod;

use super::*;
use crate::app::Msg;
use crate::settings::ReadOnly;
use crate::source::SourceEvent;

/// An app whose executors keep dying the same way: the crash loop and Spark's failure budget
/// show on the executors pane's bottom border.
#[test]
fn a_crash_loop_is_the_apps_headline() {
    let mut app = App::new(Context {
        context: "kind-spark".into(),
        scope: "namespace spark-jobs".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Live,
    });
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:30:00Z")
        .unwrap()
        .to_utc();
    for id in 1..=4 {
        let phase = if id == 4 { "Running" } else { "Failed" };
        let state = if id == 4 {
            serde_json::json!({"running": {"startedAt": "2026-11-29T10:20:00Z"}})
        } else {
            serde_json::json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
                "startedAt": "2026-11-29T10:20:00Z", "finishedAt": "2026-11-29T10:25:00Z"}})
        };
        let p = pod(serde_json::json!({
            "metadata": {"name": format!("etl-exec-{id}"), "uid": format!("u{id}"), "resourceVersion": id.to_string(),
                "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "executor",
                           "spark-exec-id": id.to_string(), "spark-version": "4.0.1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor",
                "resources": {"limits": {"memory": "4505Mi"}}}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "spark",
                "imageID": "", "ready": false, "restartCount": 0, "state": state}]}
        }));
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(p),
                at,
            }),
        );
    }
    update(&mut app, Msg::Tick(at));
    let screen = draw(&mut app, 200, 30);
    // The crash loop is the app's headline: its label under the app's name, its budget on
    // the strip (the executors pane's border is for a finding the strip does not lead with).
    assert!(screen.contains("1R 3F 3× OOMKilled"), "{screen}");
    assert!(
        screen.contains("failures 3 (limit unknown: driver config not read)"),
        "{screen}"
    );
    assert_eq!(
        app.current_app().map(|a| a.verdict().cause().code),
        Some(Code::CrashLoop)
    );
    insta::assert_snapshot!("crash_loop_80x24", draw(&mut app, 80, 24));
}
