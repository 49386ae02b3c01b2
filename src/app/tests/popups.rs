//! Popups own their keys (#33): with one open, no key of the keymap and no click moves
//! the selection, the pane, the app, the view or the filters beneath it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use serde_json::json;
use spark_triage_core::model::testing::pod;

use super::keymap::KEYMAP;
use super::*;
use crate::settings::ReadOnly;
use crate::source::SourceEvent;

fn session() -> App {
    let mut app = App::new(Context {
        context: "c".into(),
        scope: "s".into(),
        readonly: ReadOnly::flag(),
        mode: Mode::Live,
    });
    update(&mut app, Msg::Resize(120, 40));
    for (name, id) in [("etl", 1), ("etl", 2), ("etl", 3), ("zeta", 1)] {
        let p = pod(
            json!({"metadata": {"name": format!("{name}-exec-{id}"), "resourceVersion": id.to_string(),
                "labels": {"spark-app-selector": format!("spark-{name}"), "spark-app-name": name,
                           "spark-role": "executor", "spark-exec-id": id.to_string()}},
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
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)),
    );
    app.selected_exec = Some(2);
    app
}

/// What must not change under a popup.
fn beneath(app: &App) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        app.selected_exec,
        app.focus,
        app.current_app().map(|a| a.app_id.clone()),
        app.view,
        app.filter,
        app.state_filter,
        app.sort
    )
}

#[test]
fn no_key_or_click_reaches_beneath_an_open_popup() {
    for popup in [Popup::Detail, Popup::Help, Popup::Describe, Popup::Timeline] {
        for b in KEYMAP {
            for code in b.keys {
                let mut app = session();
                app.popup = Some(popup);
                let before = beneath(&app);
                update(&mut app, Msg::Key(KeyEvent::new(*code, KeyModifiers::NONE)));
                assert_eq!(beneath(&app), before, "{popup:?}: {} ({code:?})", b.label);
                assert!(
                    !app.editing_filter && app.command.is_none(),
                    "{popup:?}: {} opened a prompt",
                    b.label
                );
            }
        }
        let mut app = session();
        app.popup = Some(popup);
        let before = beneath(&app);
        for kind in [
            MouseEventKind::Down(MouseButton::Left),
            MouseEventKind::ScrollDown,
            MouseEventKind::ScrollUp,
        ] {
            for (column, row) in [(2, 3), (60, 8), (100, 20)] {
                let m = MouseEvent {
                    kind,
                    column,
                    row,
                    modifiers: KeyModifiers::NONE,
                };
                update(&mut app, Msg::Mouse(m));
            }
        }
        assert_eq!(beneath(&app), before, "{popup:?}: the mouse");
    }
}

#[test]
fn end_goes_to_a_popups_last_page_and_no_further_and_home_to_its_top() {
    let mut app = session();
    app.popup = Some(Popup::Detail);
    for _ in 0..3 {
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)),
        );
    }
    assert_eq!(app.scroll, 3);
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE)),
    );
    assert_eq!(app.scroll, 0);
    // As drawn, the popup's last page starts 5 rows down: End goes there, Down no further,
    // and Up moves at once.
    app.popup_max_scroll.set(5);
    let press =
        |app: &mut App, code| update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    press(&mut app, KeyCode::End);
    assert_eq!(app.selected_exec, Some(2), "End stays in the popup");
    assert_eq!(app.popup, Some(Popup::Detail));
    assert_eq!(app.scroll, 5);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.scroll, 5);
    press(&mut app, KeyCode::Up);
    assert_eq!(app.scroll, 4);
}
