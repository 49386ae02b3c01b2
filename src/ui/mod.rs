//! Rendering: `render(&App, &mut Frame)` draws everything from `&App` alone — no clock, no
//! I/O, no mutation — and never panics, whatever the area (down to 1×1).
//!
//! The layout is a pure function of the terminal size so that `update` can use it for moves
//! that depend on it (a map row's width) and mouse hit-testing.

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

use crate::app::{App, Popup, View};

/// Width of one executor cell in the state map.
pub const CELL_WIDTH: u16 = 7;

/// Where everything goes at a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub top: Rect,
    /// The replay timeline bar (zero height when live).
    pub replay: Rect,
    pub apps: Rect,
    pub main: Rect,
    pub strip: Rect,
    pub footer: Rect,
    /// Executors per row in the state map.
    pub map_columns: u16,
}

/// The layout for a terminal of `size`.
pub fn layout(size: (u16, u16), app: &App) -> Layout {
    let (w, h) = size;
    let full = Rect::new(0, 0, w, h);
    let top = Rect::new(0, 0, w, h.min(1));
    let footer = Rect::new(0, h.saturating_sub(1), w, u16::from(h >= 2));
    let bar_h = u16::from(app.replay.is_some() && h >= 6);
    let replay = Rect::new(0, h.saturating_sub(1 + bar_h), w, bar_h);
    let body_h = h.saturating_sub(2 + bar_h);
    let apps_w = if w >= 120 { 44 } else { (w / 3).clamp(1, 34) };
    let apps = Rect::new(0, 1.min(h), apps_w.min(w), body_h);
    let right_x = apps.width;
    let right_w = w.saturating_sub(apps.width);
    let strip_h = if body_h >= 16 {
        8
    } else if body_h >= 10 {
        5
    } else {
        0
    };
    let main = Rect::new(right_x, 1.min(h), right_w, body_h.saturating_sub(strip_h));
    let strip = Rect::new(right_x, main.y + main.height, right_w, strip_h);
    let inner_w = main.width.saturating_sub(2);
    let map_columns = (inner_w / CELL_WIDTH).max(1);
    let _ = full;
    Layout {
        top,
        replay,
        apps,
        main,
        strip,
        footer,
        map_columns,
    }
}

impl Layout {
    /// The app row under a click, if any (one app per two lines, inside the border).
    pub fn app_at(&self, x: u16, y: u16) -> Option<usize> {
        let inside = x > self.apps.x
            && x < self.apps.x + self.apps.width.saturating_sub(1)
            && y > self.apps.y
            && y < self.apps.y + self.apps.height.saturating_sub(1);
        inside.then(|| usize::from((y - self.apps.y - 1) / apps::ROWS_PER_APP))
    }

    /// The visible-executor index under a click in the map or table.
    pub fn executor_at(&self, x: u16, y: u16, app: &App) -> Option<usize> {
        let m = self.main;
        if !(x > m.x
            && x < m.x + m.width.saturating_sub(1)
            && y > m.y
            && y < m.y + m.height.saturating_sub(1))
        {
            return None;
        }
        let row = usize::from(y - m.y - 1);
        let offset = executors::scroll_offset(app, self);
        let i = match app.view {
            View::Map => {
                let col = usize::from((x - m.x - 1) / CELL_WIDTH);
                if col >= usize::from(self.map_columns) {
                    return None;
                }
                (row + offset) * usize::from(self.map_columns) + col
            }
            View::Table => (row + offset).checked_sub(1)?, // header row
        };
        (i < app.visible().len()).then_some(i)
    }
}

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
