//! The dense state map: an app too big for 7-character cells is drawn one letter per
//! executor, and past that two executors per character (half blocks, colour only), so 10,000
//! executors show at once at 200×50.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;
use spark_triage_core::model::ExecutorPod;

use crate::app::layout::Density;
use crate::app::{App, Context, Mode, Msg, layout, update};
use crate::settings::ReadOnly;
use crate::source::SourceEvent;
use crate::ui;

/// An app of `n` executors: every tenth OOM-killed, every tenth + 1 waiting on its image,
/// the rest running.
fn big_app(n: i64) -> App {
    let mut app = App::new(Context {
        context: "prod-eu".into(),
        scope: "namespace spark-scale".into(),
        readonly: ReadOnly::flag(),
        mode: Mode::Replay,
    });
    let at: chrono::DateTime<chrono::Utc> = "2026-11-29T10:05:00Z".parse().expect("time");
    for id in 1..=n {
        let (phase, state) = match id % 10 {
            0 => (
                "Failed",
                json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
            ),
            1 => (
                "Pending",
                json!({"waiting": {"reason": "ImagePullBackOff"}}),
            ),
            _ => (
                "Running",
                json!({"running": {"startedAt": "2026-11-29T10:00:00Z"}}),
            ),
        };
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("big-app-exec-{id}"), "namespace": "spark-scale", "uid": format!("uid-{id}"),
                "resourceVersion": (id + 100).to_string(), "creationTimestamp": "2026-11-29T10:00:00Z",
                "labels": {"spark-app-selector": "spark-big", "spark-app-name": "big-app", "spark-role": "executor",
                           "spark-exec-id": id.to_string()}},
            "spec": {"restartPolicy": "Never", "nodeName": "node-1",
                "containers": [{"name": "spark-kubernetes-executor", "image": "apache/spark:4.0.1",
                    "resources": {"limits": {"memory": "4505Mi"}}}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "apache/spark:4.0.1",
                "imageID": "", "ready": phase == "Running", "restartCount": 0, "state": state}]}
        }))
        .expect("pod");
        let ev = SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(ExecutorPod::from_pod(&pod)),
            at,
        };
        update(&mut app, Msg::Source(ev));
    }
    app.select_app_at(0);
    app
}

fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    update(app, Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::render(app, f)).expect("draw");
    t
}

fn density(app: &App, w: u16, h: u16) -> Density {
    layout::layout((w, h), app).density
}

#[test]
fn a_thousand_executors_are_one_letter_each_with_a_ruler() {
    let mut app = big_app(1_000);
    app.selected_exec = Some(500);
    assert_eq!(density(&app, 200, 50), Density::Letters);
    let t = draw(&mut app, 200, 50);
    insta::assert_snapshot!("dense_1k_200x50", format!("{}", t.backend()));
    // Small apps keep their cells.
    let mut small = big_app(40);
    assert_eq!(density(&small, 200, 50), Density::Cells);
    let _ = draw(&mut small, 200, 50);
}

#[test]
fn ten_thousand_executors_fit_one_screen_at_200x50() {
    let mut app = big_app(10_000);
    app.selected_exec = Some(10_000);
    assert_eq!(density(&app, 200, 50), Density::HalfBlocks);
    let t = draw(&mut app, 200, 50);
    let text = format!("{}", t.backend());
    insta::assert_snapshot!("dense_10k_200x50", text);
    // The whole app from the first line: the ruler starts at 1 and the last executor (the
    // selection) is on screen, shown by its letter.
    let l = layout::layout((200, 50), &app);
    assert_eq!(layout::scroll_offset(&app, &l), 0);
    let map: Vec<&str> = text
        .lines()
        .skip(usize::from(l.main.y) + 1)
        .take(usize::from(l.main.height) - 2)
        .collect();
    assert!(map[0].contains("│    1 ▀▀"), "{}", map[0]);
    let last = map
        .iter()
        .rfind(|line| line.contains('▀'))
        .expect("map lines");
    assert!(
        last.contains('F'),
        "the selected 10000 (failed) shows its letter: {last}"
    );
    // Colour carries the state: an upper half red (OOMKilled, exit 137) over a lower half
    // green (running), and yellow (pending) above.
    let buf = t.backend().buffer();
    let x0 = l.main.x + 1 + l.ruler;
    let row = l.main.y + 1;
    let colours: Vec<(Color, Color)> = (0..10)
        .map(|i| {
            let c = &buf[(x0 + i, row)];
            (c.fg, c.bg)
        })
        .collect();
    // Executors 1..10 on top, 1+cols.. below: 1 is pending, 10 OOM-killed, the rest running.
    assert_ne!(
        colours[0].0, colours[1].0,
        "pending and running differ: {colours:?}"
    );
    assert_ne!(
        colours[9].0, colours[1].0,
        "failed and running differ: {colours:?}"
    );
}

#[test]
fn a_click_in_the_dense_map_selects_the_executor_under_it() {
    let mut app = big_app(1_000);
    let _ = draw(&mut app, 200, 50);
    let l = layout::layout((200, 50), &app);
    let x = l.main.x + 1 + l.ruler + 4; // the fifth column
    let y = l.main.y + 1 + 2; // the third line
    let i = l.executor_at(x, y, &app).expect("an executor");
    let want = 2 * usize::from(l.map_columns) + 4;
    assert_eq!(i, want);
    assert_eq!(
        l.executor_at(l.main.x + 1, y, &app),
        None,
        "the ruler is not an executor"
    );
}
