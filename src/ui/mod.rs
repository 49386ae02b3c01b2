//! Rendering: `render(&App, &mut Frame)` draws everything from `&App` alone — no clock, no
//! I/O, no mutation — and never panics, whatever the area (down to 1×1).
//!
//! The layout (`app::layout`) is the app's: `update` uses it for moves that depend on it (a
//! map row's width) and mouse hit-testing; this module only draws into it.

mod actions;
mod apps;
mod detail;
mod executors;
mod help;
mod replay_bar;
mod status_bar;
pub mod theme;
mod timeline;

use ratatui::{Frame, layout::Rect};

pub use crate::app::layout::{CELL_WIDTH, Layout, layout};
use crate::app::{App, Popup};

/// Draws the whole screen.
pub fn render(app: &App, f: &mut Frame<'_>) {
    let area = f.area();
    let l = layout((area.width, area.height), app);
    status_bar::render_top(app, f, l.top);
    apps::render(app, f, l.apps);
    executors::render(app, f, &l);
    executors::render_strip(app, f, l.strip);
    replay_bar::render(app, f, l.replay);
    status_bar::render_footer(app, f, l.footer);
    match app.popup {
        Some(Popup::Help) => help::render(f, area),
        Some(Popup::Detail) => detail::render(app, f, area),
        Some(Popup::Timeline) => timeline::render(app, f, area),
        Some(Popup::Log) => actions::render_log(app, f, area),
        Some(Popup::Confirm) => actions::render_confirm(app, f, area),
        None => {}
    }
}

/// The area of a full-screen popup, or `None` when the screen is too small for one.
fn popup_area(area: Rect) -> Option<Rect> {
    let r = centered(
        area,
        area.width.saturating_sub(4).max(1),
        area.height.saturating_sub(2).max(1),
    );
    (r.width >= 3 && r.height >= 3).then_some(r)
}

/// A centred rectangle of at most `w`×`h` inside `area`.
fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

#[cfg(test)]
mod tests;
