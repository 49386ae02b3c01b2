//! Each theme on the busiest frames: `dark` never uses dark grey (the background of common
//! dark terminals), `light` never uses yellow, white or the light greys (unreadable on white),
//! `mono` uses no colour at all and still shows the same text (letters carry the states).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;

use super::{etl_exec, session};
use crate::app::{App, Msg, Popup, Theme, View, update};
use crate::ui;

fn frame(app: &mut App, theme: Theme) -> Buffer {
    app.theme = theme;
    update(app, Msg::Resize(200, 50));
    let mut t = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    t.draw(|f| ui::render(app, f)).expect("draw");
    t.backend().buffer().clone()
}

fn text(b: &Buffer) -> String {
    b.content.iter().map(|c| c.symbol()).collect()
}

/// The busiest frames: the map, the table, the detail and help popups.
fn frames(theme: Theme) -> Vec<Buffer> {
    let mut out = Vec::new();
    for setup in [
        |a: &mut App| etl_exec(a, 7),
        |a: &mut App| {
            etl_exec(a, 8);
            a.view = View::Table;
        },
        |a: &mut App| {
            etl_exec(a, 10);
            a.popup = Some(Popup::Detail);
        },
        |a: &mut App| a.popup = Some(Popup::Help),
    ] {
        let mut app = session();
        setup(&mut app);
        out.push(frame(&mut app, theme));
    }
    out
}

fn colours(b: &Buffer) -> Vec<Color> {
    let mut v: Vec<Color> = b.content.iter().flat_map(|c| [c.fg, c.bg]).collect();
    v.sort_by_key(|c| format!("{c:?}"));
    v.dedup();
    v
}

#[test]
fn dark_never_draws_dark_grey() {
    for b in frames(Theme::Dark) {
        let c = colours(&b);
        assert!(!c.contains(&Color::DarkGray), "{c:?}");
        assert!(c.contains(&Color::LightRed), "failures are red: {c:?}");
    }
}

#[test]
fn light_avoids_colours_unreadable_on_white() {
    for b in frames(Theme::Light) {
        // Foregrounds: a badge's background (black on yellow) reads fine.
        let c: Vec<Color> = b.content.iter().map(|c| c.fg).collect();
        for bad in [
            Color::Yellow,
            Color::White,
            Color::Gray,
            Color::LightYellow,
            Color::DarkGray,
        ] {
            assert!(!c.contains(&bad), "{bad:?} in {c:?}");
        }
    }
}

#[test]
fn mono_has_no_colour_and_the_same_text() {
    let mono = frames(Theme::Mono);
    let dark = frames(Theme::Dark);
    for (m, d) in mono.iter().zip(&dark) {
        let c = colours(m);
        assert_eq!(c, vec![Color::Reset], "{c:?}");
        assert_eq!(text(m), text(d), "the letters carry the states");
    }
}

#[test]
fn the_theme_follows_the_environment() {
    assert_eq!(Theme::choose(None, false), Theme::Dark);
    assert_eq!(Theme::choose(None, true), Theme::Mono);
    assert_eq!(Theme::choose(Some("light"), true), Theme::Light);
    assert_eq!(Theme::choose(Some("mono"), false), Theme::Mono);
    assert_eq!(Theme::choose(Some("neon"), false), Theme::Dark);
}
