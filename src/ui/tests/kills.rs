//! A kill through spark-triage is the operator's own act: labelled as such, never the `last:`
//! failure, not counted, listed after the failures, never the app's headline.

use spark_triage_core::diagnose::Code;
use spark_triage_core::model::Deletion;

use super::{draw, select_app, session};
use crate::app::{Msg, update};
use crate::source::SourceEvent;

#[test]
fn a_kill_through_the_tool_is_labelled_and_never_the_incident() {
    let mut app = session();
    select_app(&mut app, "etl-nightly");
    let key = (
        "spark-jobs".to_owned(),
        "spark-888a9cde86121a7e2806447171f1117a".to_owned(),
    );
    let at = app.store.view().now.expect("a clock");
    let before = app.store.view().apps[&key].verdict().cause().clone();
    let pod = app.store.view().apps[&key].executors[&3].pod.clone();
    // `K` on executor 3: the runner's timeline line, then the pod's deletion as watched.
    update(
        &mut app,
        Msg::Source(SourceEvent::ActionTaken {
            namespace: key.0.clone(),
            app_id: key.1.clone(),
            text: format!("action by oncall: killed executor 3 ({})", pod.name),
            killed: Some(3),
            at: at + chrono::Duration::seconds(1),
        }),
    );
    let mut deleted = (*pod).clone();
    deleted.deletion = Some(Deletion {
        at: at + chrono::Duration::seconds(31),
        grace_period_seconds: Some(30),
    });
    update(
        &mut app,
        Msg::Source(SourceEvent::PodDeleted {
            pod: std::sync::Arc::new(deleted),
            at: at + chrono::Duration::seconds(2),
        }),
    );
    let a = &app.store.view().apps[&key];
    let e = &a.executors[&3];
    let cause = e.verdict.cause().expect("a cause");
    assert_eq!(cause.code, Code::KilledByTool, "{:?}", e.verdict);
    assert!(cause.summary.contains("by oncall"), "{}", cause.summary);
    assert!(!e.verdict.counted() && !e.verdict.is_failure());
    // The app's headline and budget are its failures', as before the kill.
    assert_eq!(a.verdict().cause().code, before.code);
    assert_eq!(a.verdict().cause().summary, before.summary);
    assert_eq!(a.failure_budget().0, 2);
    let screen = draw(&mut app, 200, 50);
    assert!(
        screen.contains("last: executor 8 JVM OOM (52)"),
        "the last failure is the last failure:\n{screen}"
    );
    // Endings: the failures first, the kill after them.
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains(" ago  executor "))
        .collect();
    let pos = |id: &str| {
        rows.iter()
            .position(|l| l.contains(&format!("executor {id} ")))
            .unwrap_or_else(|| panic!("executor {id} in the endings:\n{screen}"))
    };
    assert!(pos("7") < pos("3") && pos("8") < pos("3"), "{screen}");
    assert!(
        rows[pos("3")].contains("killed by spark-triage"),
        "{screen}"
    );
}
