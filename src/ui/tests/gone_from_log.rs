//! An executor known only from a real event log (Spark 4.3.0's, executor 4 frozen and
//! expired by its heartbeat), opened in the live view: its pod is gone, so describe, detail
//! and the log popup read its events from the cluster once, tell "reading" from "none", and
//! the log popup says when it went and what Spark said of it, every removal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{draw, select_app};
use crate::app::{App, Context, Focus, Mode, Msg, Popup, update};
use crate::effect::Effect;
use crate::eventlog;
use crate::record::Recording;
use crate::settings::ReadOnly;

fn live_from_the_log() -> App {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/real-spark-k8s-heartbeat"
    );
    let rec = eventlog::open(std::path::Path::new(dir), 1 << 20, None)
        .map(Recording::from)
        .expect("the real log reads");
    let mut app = App::new(Context {
        context: "kind-spark".into(),
        scope: "namespace spark-jobs".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Live,
    });
    for ev in rec.events {
        update(&mut app, Msg::Source(ev));
    }
    select_app(&mut app, "real-spark-oom");
    app.focus = Focus::Executors;
    app.selected_exec = Some(4);
    app
}

fn key(app: &mut App, c: char) -> Vec<Effect> {
    update(
        app,
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
    )
}

#[test]
fn a_gone_executor_from_a_real_log_reads_its_events_once_and_says_what_spark_said() {
    let mut app = live_from_the_log();
    let pod = app.selected().expect("executor 4").pod.name.clone();
    // Before anything is opened: not read, and said so.
    let reads = |effects: &[Effect]| {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::ReadEvents { pod: p, .. } if *p == pod))
            .count()
    };
    // Describe: its events are asked for once; meanwhile "reading", not "none".
    let effects = key(&mut app, 'D');
    assert_eq!(app.popup, Some(Popup::Describe));
    assert_eq!(reads(&effects), 1, "{effects:?}");
    let screen = draw(&mut app, 200, 50);
    assert!(
        screen.contains("reading its events from the cluster…"),
        "{screen}"
    );
    assert!(
        screen.contains("Node:           <not known yet: reading its events>"),
        "{screen}"
    );
    assert!(
        screen.contains("Gone:           removed by the driver 2026-12-05"),
        "{screen}"
    );
    // The cluster has none (a log's executor, its events expired): "none in the cluster".
    update(
        &mut app,
        Msg::EventsRead {
            namespace: "spark-jobs".into(),
            pod: pod.clone(),
            result: Ok(0),
        },
    );
    let screen = draw(&mut app, 200, 50);
    assert!(screen.contains("none in the cluster (read:"), "{screen}");
    assert!(
        screen.contains("Node:           <none (no kubelet event names one)>"),
        "{screen}"
    );
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
    );
    // Detail and the log popup: not read again.
    let effects = key(&mut app, 'd');
    assert_eq!(app.popup, Some(Popup::Detail));
    assert_eq!(reads(&effects), 0, "read once: {effects:?}");
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
    );
    let effects = key(&mut app, 'l');
    assert_eq!(app.popup, Some(Popup::Log));
    assert_eq!(reads(&effects), 0, "read once: {effects:?}");
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::FetchLog { .. })),
        "a gone pod's log is not asked of the API: {effects:?}"
    );
    let words = app
        .log_view
        .as_ref()
        .and_then(|l| l.lines.as_ref().err())
        .expect("the log popup's words")
        .clone();
    // When it went by the driver's clock (its first removal), no log, and every removal.
    let when = app.when(
        &app.selected()
            .and_then(|e| e.driver.as_ref()?.exec.as_ref()?.remove_time)
            .expect("the driver's removeTime"),
    );
    assert!(
        words.starts_with(&format!(
            "The pod is removed by the driver at {when}; no log was captured"
        )),
        "{words}"
    );
    assert!(
        words.contains("Spark's reason: Executor killed by driver.")
            && words.contains("Then: Executor heartbeat timed out after 23671 ms"),
        "{words}"
    );
}
