//! Every pane and popup at every size from 60×16 to 200×50, live and in replay: what an
//! on-call engineer reads first is on screen at each (the namespace and context in the
//! header, the worst executor's cause, the keys that matter), whatever else gives way.

use super::{draw, etl_exec, replay_at, session};
use crate::app::{App, Focus, LogView, Mode, Msg, Popup, View, update};
use crate::settings::ReadOnly;
use crate::source::{Health, SourceEvent, SourceKind};

const SIZES: [(u16, u16); 4] = [(60, 16), (80, 24), (120, 40), (200, 50)];

fn key(app: &mut App, c: crossterm::event::KeyCode) {
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            c,
            crossterm::event::KeyModifiers::NONE,
        )),
    );
}

/// A screen to check: its name, how to get there, and whether it is a popup.
type Screen = (&'static str, fn(&mut App), bool);

const SCREENS: &[Screen] = &[
    ("map", |app| etl_exec(app, 7), false),
    (
        "table",
        |app| {
            etl_exec(app, 7);
            app.view = View::Table;
        },
        false,
    ),
    (
        "apps focused",
        |app| {
            etl_exec(app, 7);
            app.focus = Focus::Apps;
        },
        false,
    ),
    (
        "detail",
        |app| {
            etl_exec(app, 7);
            app.popup = Some(Popup::Detail);
        },
        true,
    ),
    (
        "describe",
        |app| {
            etl_exec(app, 7);
            app.popup = Some(Popup::Describe);
        },
        true,
    ),
    (
        "timeline",
        |app| {
            etl_exec(app, 7);
            app.popup = Some(Popup::Timeline);
        },
        true,
    ),
    ("help", |app| app.popup = Some(Popup::Help), true),
];

fn live() -> App {
    let mut app = session();
    app.ctx.mode = Mode::Live;
    app
}

/// The checks every frame passes; `what` names it in a failure.
fn check(frame: &str, what: &str, popup: bool, live: bool) {
    let rows: Vec<&str> = frame.lines().collect();
    let header = rows.first().copied().unwrap_or_default();
    let footer = rows.last().copied().unwrap_or_default();
    assert!(
        header.contains("spark-jobs") && header.contains("ctx "),
        "{what}: the context and namespace in the header:\n{frame}"
    );
    assert!(
        header.contains(if live { "LIVE" } else { "REPLAY" }) || header.contains("RPL"),
        "{what}: the mode in the header:\n{frame}"
    );
    if !popup {
        assert!(
            frame.contains("OOMKilled"),
            "{what}: the worst executor's cause on screen:\n{frame}"
        );
        assert!(
            frame.contains("etl-nightly"),
            "{what}: the worst app named:\n{frame}"
        );
    } else {
        assert!(frame.contains("Esc"), "{what}: how to close it:\n{frame}");
    }
    for hint in ["l log", "? help"] {
        assert!(
            footer.contains(hint),
            "{what}: `{hint}` in the footer:\n{frame}"
        );
    }
    if live {
        assert!(
            footer.contains("K kill"),
            "{what}: `K kill` in the footer:\n{frame}"
        );
    }
}

#[test]
fn every_pane_and_popup_keeps_what_matters_at_every_size_live() {
    for (name, setup, popup) in SCREENS {
        for (w, h) in SIZES {
            let mut app = live();
            setup(&mut app);
            let frame = draw(&mut app, w, h);
            check(&frame, &format!("live {name} {w}x{h}"), *popup, true);
        }
    }
}

#[test]
fn every_pane_and_popup_keeps_what_matters_at_every_size_in_replay() {
    for (name, setup, popup) in SCREENS {
        for (w, h) in SIZES {
            let mut app = replay_at(Some(3600));
            setup(&mut app);
            let frame = draw(&mut app, w, h);
            check(&frame, &format!("replay {name} {w}x{h}"), *popup, false);
            if *name == "map" {
                insta::assert_snapshot!(format!("replay_map_{w}x{h}"), frame);
            }
        }
    }
}

/// The popups an action opens (the log, the kill confirm) at every size: wrapped, their
/// keys on screen.
#[test]
fn the_log_and_the_confirm_keep_their_keys_at_every_size() {
    for (w, h) in SIZES {
        let mut app = live();
        etl_exec(&mut app, 9);
        app.log_view = Some(LogView {
            pod: "etl-nightly-a83c0ccd92120d16-exec-9".into(),
            lines: Err("container \"spark-kubernetes-executor\" in pod \"etl-nightly-a83c0ccd92120d16-exec-9\" is waiting to start: trying and failing to pull image".into()),
            ..LogView::default()
        });
        app.popup = Some(Popup::Log);
        let frame = draw(&mut app, w, h);
        assert!(
            frame.contains("failing to pull") || frame.contains("pull image"),
            "{w}x{h}: the log's error wrapped to its reason:\n{frame}"
        );
        let mut app = live();
        etl_exec(&mut app, 2);
        key(&mut app, crossterm::event::KeyCode::Char('K'));
        assert_eq!(app.popup, Some(Popup::Confirm), "{w}x{h}");
        let frame = draw(&mut app, w, h);
        for want in ["kind-spark", "spark-jobs", " y  delete", "n/Esc"] {
            assert!(
                frame.contains(want),
                "{w}x{h}: {want} in the confirm:\n{frame}"
            );
        }
    }
}

/// A long context (an EKS ARN) is cut before an alarm goes: at 80 and 60 columns the
/// header still says STALE and read-only, with the namespace.
#[test]
fn a_long_context_is_cut_before_the_alarms() {
    for w in [80, 60] {
        let mut app = live();
        assert!(app.store.view().scope.is_none(), "the context is the app's");
        app.ctx.context = "arn:aws:eks:eu-west-1:123456789012:cluster/prod-eu-spark".into();
        app.ctx.readonly = ReadOnly::flag();
        app.stale_after = Some(std::time::Duration::from_secs(2));
        etl_exec(&mut app, 7);
        let frame = draw(&mut app, w, 24);
        let header = frame.lines().next().unwrap_or_default();
        assert!(header.contains("arn:aws:eks"), "{w}: {header}");
        assert!(header.contains("spark-jobs"), "{w}: {header}");
        assert!(header.contains("STALE"), "{w}: {header}");
        assert!(
            header.contains("RO") || header.contains("READ-ONLY"),
            "{w}: {header}"
        );
    }
}

/// A long namespace at 60 columns is cut with `…` inside the header, its head kept (it was
/// cut at the screen's edge with no mark).
#[test]
fn a_long_namespace_is_cut_with_a_mark() {
    let mut app = live();
    app.ctx.scope = "namespace data-platform-nightly-batch-etl-team-x".into();
    etl_exec(&mut app, 7);
    let frame = draw(&mut app, 60, 16);
    let header = frame.lines().next().unwrap_or_default().trim_matches('"');
    assert!(header.contains("ns data-platform"), "{header}");
    assert!(header.trim_end().ends_with('…'), "{header}");
    assert!(header.chars().count() <= 60, "{header}");
}

/// A failing source's error: under the header its last clause and where the rest is; in
/// the help popup the whole text (it once pushed the context and namespace off the header).
#[test]
fn a_source_error_has_its_own_line_and_its_whole_text_in_help() {
    let error = "client error (Connect): tcp connect error: Connection refused (os error 111)";
    for (w, h) in SIZES {
        let mut app = live();
        etl_exec(&mut app, 7);
        let at = app.store.view().now.expect("a clock");
        update(
            &mut app,
            Msg::Source(SourceEvent::SourceHealth {
                source: SourceKind::PodWatch,
                health: Health::Retrying {
                    error: error.into(),
                },
                at,
            }),
        );
        let frame = draw(&mut app, w, h);
        let rows: Vec<&str> = frame.lines().collect();
        assert!(rows[0].contains("spark-jobs"), "{w}x{h}:\n{frame}");
        assert!(
            rows[1].contains("pod watch: ")
                && rows[1].contains("Connection refused (os error 111)")
                && rows[1].contains(" · ? "),
            "{w}x{h}: the error's last clause whole, and where the rest is:\n{frame}"
        );
        app.popup = Some(Popup::Help);
        let frame = draw(&mut app, w, h);
        let joined: String = frame
            .lines()
            .map(|l| l.trim_matches('"').trim_matches(|c| c == '│' || c == ' '))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            joined.contains("tcp connect error") && joined.contains("Sources failing"),
            "{w}x{h}: the whole error in help:\n{frame}"
        );
    }
}
