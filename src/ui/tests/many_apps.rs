//! More applications than the apps pane has rows (#32): the pane scrolls with its
//! selection, `g`/`G`/`End`/PgDn move through it, a click selects the app drawn there.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use spark_triage_core::model::testing::pod;

use crate::app::{App, Context, Focus, Mode, Msg, layout, update};
use crate::settings::ReadOnly;
use crate::source::SourceEvent;
use crate::store::Store;

/// `n` apps (`app-01` …) of one running executor each, at `w`×`h`.
fn apps(n: usize, w: u16, h: u16) -> App {
    let mut app = App::new(Context {
        context: "c".into(),
        scope: "namespace spark-jobs".into(),
        readonly: ReadOnly::flag(),
        mode: Mode::Live,
    });
    update(&mut app, Msg::Resize(w, h));
    for i in 1..=n {
        let name = format!("app-{i:02}");
        let p = pod(
            json!({"metadata": {"name": format!("{name}-exec-1"), "resourceVersion": i.to_string(),
            "labels": {"spark-app-selector": format!("spark-{i:02}"), "spark-app-name": name,
                       "spark-role": "executor", "spark-exec-id": "1"}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Running"}}),
        );
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(p),
                at: chrono::DateTime::UNIX_EPOCH,
            }),
        );
    }
    app.focus = Focus::Apps;
    app
}

fn draw(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(app.size.0, app.size.1)).expect("terminal");
    t.draw(|f| super::super::render(app, f)).expect("draw");
    format!("{}", t.backend())
}

fn key(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    let _ = draw(app);
}

fn selected(app: &App) -> String {
    app.current_app()
        .and_then(|a| a.app_name.clone())
        .unwrap_or_default()
}

#[test]
fn the_apps_pane_scrolls_with_its_selection() {
    let mut app = apps(40, 80, 40);
    let _ = draw(&app);
    key(&mut app, KeyCode::Char('G'));
    assert_eq!(selected(&app), "app-40");
    let frame = draw(&app);
    assert!(
        frame.contains("▶ app-40"),
        "the last app is in view:\n{frame}"
    );
    insta::assert_snapshot!("many_apps_at_the_end_80x40", frame);
    key(&mut app, KeyCode::Char('g'));
    assert_eq!(selected(&app), "app-01");
    assert!(draw(&app).contains("▶ app-01"));
    key(&mut app, KeyCode::PageDown);
    let page = app.apps_window.get().1;
    assert!(page > 1 && page < 40, "{page} apps fit");
    assert_eq!(selected(&app), format!("app-{:02}", 1 + page));
    assert!(draw(&app).contains(&format!("▶ app-{:02}", 1 + page)));
    key(&mut app, KeyCode::End);
    assert_eq!(selected(&app), "app-40");
    // Up from the bottom moves the selection, not the window, until its top.
    key(&mut app, KeyCode::Up);
    assert_eq!(app.apps_window.get().0, 40 - page);
    // A click on the first row drawn selects the app drawn there.
    let layout = layout::layout(app.size, &app);
    update(
        &mut app,
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: layout.apps.x + 2,
            row: layout.apps.y + 1,
            modifiers: KeyModifiers::NONE,
        }),
    );
    assert_eq!(selected(&app), format!("app-{:02}", 41 - page));
}

#[test]
fn three_thousand_apps_keep_the_selection_in_view() {
    let mut app = apps(3000, 200, 50);
    let _ = draw(&app);
    for _ in 0..5 {
        key(&mut app, KeyCode::PageDown);
    }
    let name = selected(&app);
    assert!(draw(&app).contains(&format!("▶ {name}")), "{name} in view");
    key(&mut app, KeyCode::End);
    let last = app
        .apps()
        .last()
        .and_then(|a| a.app_name.clone())
        .expect("apps");
    assert_eq!(selected(&app), last);
    assert!(draw(&app).contains(&format!("▶ {last}")));
}

/// A view left open forgets executors gone longer than `--forget-after` (bounded memory)
/// and its header says so once it has.
#[test]
fn the_header_says_when_gone_executors_were_forgotten() {
    let mut app = apps(2, 200, 50);
    app.forget_after = Some(std::time::Duration::from_secs(3600));
    assert!(!draw(&app).contains("forgotten"), "nothing forgotten yet");
    let gone = pod(
        json!({"metadata": {"name": "app-01-exec-1", "resourceVersion": "9",
        "labels": {"spark-app-selector": "spark-01", "spark-app-name": "app-01",
                   "spark-role": "executor", "spark-exec-id": "1"}},
        "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Failed"}}),
    );
    let t = |s| chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(s);
    for ev in [
        SourceEvent::PodDeleted {
            pod: std::sync::Arc::new(gone),
            at: t(10),
        },
        SourceEvent::Forget {
            before: t(20),
            at: t(3700),
        },
    ] {
        update(&mut app, Msg::Source(ev));
    }
    let frame = draw(&app);
    assert!(frame.contains("gone >1h forgotten"), "{frame}");
}

/// Past the store's bound, the executors that ended first are counted, not kept: the
/// header says how many, so the state map's counts are not taken for the whole run.
#[test]
fn the_header_says_when_ended_executors_were_counted_not_kept() {
    let mut app = apps(2, 200, 50);
    assert!(!draw(&app).contains("not kept"));
    let mut snap = app.store.snapshot();
    snap.trimmed = 183_733;
    app.store = Store::from_snapshot(snap);
    let frame = draw(&app);
    assert!(frame.contains("183733 ended counted, not kept"), "{frame}");
}
