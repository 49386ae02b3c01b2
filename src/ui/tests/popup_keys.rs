//! Popups own their keys, as drawn: with each popup open, each key of the keymap is pressed,
//! then Esc; the screen beneath is the one that was there before (the same app, executor,
//! view and filters), and `End` in a detail shows its last page, not a blank one.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{draw, etl_exec, session};
use crate::app::keymap::{Action, KEYMAP};
use crate::app::{App, Confirm, LogView, Msg, Popup, update};

fn press(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn opened(popup: Popup) -> App {
    let mut app = session();
    etl_exec(&mut app, 7);
    if popup == Popup::Log {
        app.log_view = Some(LogView {
            pod: "etl-nightly-exec-7".into(),
            captured: true,
            lines: Ok((1..=120).map(|i| format!("log line {i}")).collect()),
            ..Default::default()
        });
    }
    app.popup = Some(popup);
    app
}

/// Closes whatever is open (a prompt inside the popup, then the popup) with Esc.
fn close(app: &mut App) {
    for _ in 0..3 {
        if app.popup.is_some() || app.command.is_some() || app.editing_filter {
            press(app, KeyCode::Esc);
        }
    }
}

/// The frame without its last row: the footer, where a key's answer is flashed (`y` in a
/// detail copies its pod's name and says so; that is the popup's own subject).
fn panes(frame: &str) -> String {
    let rows: Vec<&str> = frame.lines().collect();
    rows[..rows.len() - 1].join("\n")
}

#[test]
fn every_key_in_every_popup_leaves_the_screen_beneath_as_it_was() {
    for popup in [
        Popup::Detail,
        Popup::Help,
        Popup::Describe,
        Popup::Timeline,
        Popup::Log,
    ] {
        let mut app = opened(popup);
        close(&mut app);
        let beneath = panes(&draw(&mut app, 80, 24));
        for b in KEYMAP {
            // `z` switches every time on screen between local and UTC: a display setting,
            // not a move; `q` quits (the frame is the last one).
            if b.action == Action::ToggleUtc {
                continue;
            }
            for code in b.keys {
                let mut app = opened(popup);
                draw(&mut app, 80, 24);
                press(&mut app, *code);
                draw(&mut app, 80, 24);
                close(&mut app);
                let after = panes(&draw(&mut app, 80, 24));
                assert_eq!(
                    after, beneath,
                    "{popup:?}: {} ({code:?}) then Esc changed the screen beneath",
                    b.label
                );
            }
        }
    }
}

#[test]
fn end_in_a_detail_shows_its_last_page() {
    let mut app = opened(Popup::Detail);
    let first = draw(&mut app, 80, 24);
    press(&mut app, KeyCode::End);
    let last = draw(&mut app, 80, 24);
    assert_ne!(first, last, "End moved the page");
    assert!(app.scroll > 0, "the detail is longer than a page at 80x24");
    // The last page is full, not blank under the title.
    let body: Vec<&str> = last
        .lines()
        .filter(|l| l.contains('│'))
        .filter(|l| l.split('│').nth(1).is_some_and(|c| !c.trim().is_empty()))
        .collect();
    assert!(body.len() >= 10, "End shows a full last page:\n{last}");
    // The detail's last line (its last transition) is on it: rows were counted as ratatui
    // wraps them.
    assert!(last.contains("deleted (pod deleted)"), "{last}");
    insta::assert_snapshot!("detail_popup_end_80x24", last);
}

/// A confirmation owns every key: only `y`/Enter (do it), `n`/Esc (cancel) and `f` (a kill's
/// force) mean anything; every other key of the keymap leaves it open, asks for nothing, and
/// after Esc the screen beneath is as it was.
#[test]
fn a_confirmation_takes_only_its_own_keys() {
    let confirm_of = || {
        let mut app = opened(Popup::Confirm);
        let a = app.current_app().cloned().expect("an app is selected");
        app.confirm = Some(Confirm::Hold {
            namespace: a.namespace.clone(),
            app_id: a.app_id.clone(),
            on: true,
        });
        app
    };
    let mut app = confirm_of();
    close(&mut app);
    assert!(app.confirm.is_none(), "Esc cancels");
    let beneath = panes(&draw(&mut app, 80, 24));
    let own = [
        KeyCode::Char('y'),
        KeyCode::Enter,
        KeyCode::Char('n'),
        KeyCode::Esc,
    ];
    // Every key, `z` too (a confirmation takes it as well, unlike the other popups).
    for b in KEYMAP {
        for code in b.keys.iter().filter(|c| !own.contains(c)) {
            let mut app = confirm_of();
            draw(&mut app, 80, 24);
            let effects = update(&mut app, Msg::Key(KeyEvent::new(*code, KeyModifiers::NONE)));
            assert!(
                effects.is_empty(),
                "{} ({code:?}) asked for {effects:?}",
                b.label
            );
            assert_eq!(
                app.popup,
                Some(Popup::Confirm),
                "{} ({code:?}) closed it",
                b.label
            );
            assert!(app.confirm.is_some(), "{} ({code:?})", b.label);
            draw(&mut app, 80, 24);
            close(&mut app);
            assert_eq!(
                panes(&draw(&mut app, 80, 24)),
                beneath,
                "Confirm: {} ({code:?}) then Esc changed the screen beneath",
                b.label
            );
        }
    }
}
