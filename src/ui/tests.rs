//! Frame snapshots: every pane and popup at 80×24 and 200×50, on a recorded session of the
//! simulator's `mixed` scenario (so the data and its times are fixed).

use ratatui::{Terminal, backend::TestBackend};

use crate::{
    app::{App, Context, Mode, Popup, View, update},
    record,
};

fn session() -> App {
    let bytes = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
    let rec = record::read("mixed-session", &bytes[..]).expect("fixture reads");
    assert!(rec.damaged.is_empty());
    let mut app = App::new(Context {
        context: "kind-spark".into(),
        scope: "namespace spark-jobs".into(),
        readonly: false,
        mode: Mode::Replay,
    });
    for ev in rec.events {
        update(&mut app, crate::app::Msg::Source(ev));
    }
    app
}

fn etl_exec(app: &mut App, id: i64) {
    app.selected_app = app
        .apps()
        .iter()
        .position(|a| a.app_name.as_deref() == Some("etl-nightly"))
        .expect("etl app");
    app.selected_exec = Some(id);
}

fn draw(app: &mut App, w: u16, h: u16) -> String {
    update(app, crate::app::Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| super::render(app, f)).expect("draw");
    format!("{}", t.backend())
}

macro_rules! frames {
    ($name:ident, $setup:expr) => {
        #[test]
        fn $name() {
            let mut app = session();
            #[allow(clippy::redundant_closure_call)]
            ($setup)(&mut app);
            insta::assert_snapshot!(concat!(stringify!($name), "_80x24"), draw(&mut app, 80, 24));
            insta::assert_snapshot!(
                concat!(stringify!($name), "_200x50"),
                draw(&mut app, 200, 50)
            );
        }
    };
}

frames!(state_map, |app: &mut App| etl_exec(app, 7));
frames!(table, |app: &mut App| {
    etl_exec(app, 9);
    app.view = View::Table;
});
frames!(detail_popup, |app: &mut App| {
    etl_exec(app, 7);
    app.popup = Some(Popup::Detail);
});
frames!(missing_detail, |app: &mut App| {
    etl_exec(app, 10);
    app.popup = Some(Popup::Detail);
});
frames!(help_popup, |app: &mut App| app.popup = Some(Popup::Help));
frames!(timeline_popup, |app: &mut App| {
    etl_exec(app, 7);
    app.popup = Some(Popup::Timeline);
});
frames!(filtering, |app: &mut App| {
    etl_exec(app, 12);
    app.editing_filter = true;
    app.filter = "unsch".into();
});

#[test]
fn empty_and_tiny_screens_do_not_panic() {
    let mut empty = App::new(Context {
        context: "c".into(),
        scope: "all namespaces".into(),
        readonly: true,
        mode: Mode::Live,
    });
    insta::assert_snapshot!("empty_80x24", draw(&mut empty, 80, 24));
    let mut app = session();
    etl_exec(&mut app, 7);
    for (w, h) in [(1, 1), (2, 2), (5, 3), (20, 6), (0, 0), (300, 2)] {
        for popup in [
            None,
            Some(Popup::Detail),
            Some(Popup::Help),
            Some(Popup::Timeline),
        ] {
            app.popup = popup;
            for view in [View::Map, View::Table] {
                app.view = view;
                let _ = draw(&mut app, w.max(1), h.max(1));
            }
        }
    }
}
