//! Rendering: `render(&App, &mut Frame)` draws everything from `&App` alone — no clock, no
//! I/O, no mutation — and never panics, whatever the area (down to 1×1).
//!
//! The layout (`app::layout`) is the app's: `update` uses it for moves that depend on it (a
//! map row's width) and mouse hit-testing; this module only draws into it.

mod actions;
mod apps;
mod describe;
mod detail;
mod executors;
pub mod glyphs;
mod help;
pub(crate) mod incident;
mod replay_bar;
mod status_bar;
pub mod theme;
mod timeline;

use ratatui::Frame;
use ratatui::layout::Rect;
use spark_triage_core::model;
use spark_triage_core::model::Time;

use crate::app::layout::apps_width;
pub use crate::app::layout::{CELL_WIDTH, Layout, layout};
use crate::app::{App, Popup};

/// Draws the whole screen.
pub fn render(app: &App, f: &mut Frame<'_>) {
    let area = f.area();
    // The incident strip's height follows its wrapped lines at this width.
    let right_w = area
        .width
        .saturating_sub(apps_width(area.width).min(area.width));
    app.incident_rows.set(incident::rows(app, right_w));
    let inner_w = right_w.saturating_sub(2);
    app.strip_rows.set(executors::strip_rows(app, inner_w));
    app.main_rows.set(executors::content_rows(app, inner_w));
    let l = layout((area.width, area.height), app);
    status_bar::render_top(app, f, l.top);
    apps::render(app, f, l.apps, l.app_rows);
    incident::render(app, f, l.incident);
    executors::render(app, f, &l);
    executors::render_strip(app, f, l.strip);
    replay_bar::render(app, f, l.replay);
    status_bar::render_footer(app, f, l.footer);
    match app.popup {
        Some(Popup::Help) => help::render(app, f, area),
        Some(Popup::Detail) => detail::render(app, f, area),
        Some(Popup::Describe) => describe::render(app, f, area),
        Some(Popup::Timeline) => timeline::render(app, f, area),
        Some(Popup::Log) => actions::render_log(app, f, area),
        Some(Popup::Confirm) => actions::render_confirm(app, f, area),
        None => {}
    }
}

impl App {
    /// A time as the screen shows it: UTC as RFC 3339 (`…Z`), or in the local zone with its
    /// offset (`2026-11-30 23:10:05 +01:00`), as the app's `display_offset` says.
    pub(crate) fn when(&self, t: &Time) -> String {
        match self.display_offset() {
            None => model::fmt_time(t),
            Some(off) => t
                .with_timezone(&off)
                .format("%Y-%m-%d %H:%M:%S %:z")
                .to_string(),
        }
    }
}

/// `text` cut to `width` columns at a word boundary, with `…` when cut (never mid-word,
/// unless one word is longer than the whole width).
pub(crate) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let head: String = text.chars().take(width - 1).collect();
    let cut = match head.rfind(' ') {
        Some(i) if i > 0 => head[..i].trim_end().to_owned(),
        _ => head,
    };
    format!("{cut}…")
}

/// `text` wrapped at words into rows of at most `width` columns (a word longer than a row
/// is cut into pieces); at least one row.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut row = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        let used = row.chars().count();
        if used > 0 && used + 1 + word.len() > width {
            rows.push(std::mem::take(&mut row));
        }
        while word.len() > width {
            if !row.is_empty() {
                rows.push(std::mem::take(&mut row));
            }
            rows.push(word.drain(..width).collect());
        }
        if word.is_empty() {
            continue;
        }
        if !row.is_empty() {
            row.push(' ');
        }
        row.extend(word);
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// A border title that fits a box `width` wide (its corners and one space each side
/// kept): cut at a word with `…`, never mid-word at the corner.
pub(crate) fn title_text(text: &str, width: u16) -> String {
    let room = usize::from(width.saturating_sub(2));
    if text.chars().count() <= room {
        return text.to_owned();
    }
    format!(" {} ", fit(text.trim(), room.saturating_sub(2)))
}

/// A popup of wrapped lines scrolled by `scroll`, titled (fitted to the box), over what is
/// under it.
fn scrolled_popup(
    f: &mut Frame<'_>,
    r: Rect,
    title: &str,
    lines: Vec<ratatui::text::Line<'_>>,
    app: &App,
) {
    use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
    // Never scrolled past its last page (a blank one): the furthest it can go, in rows once
    // wrapped, is told back to the app, which keeps its scroll within it.
    let inner = usize::from(r.width.saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| wrapped_rows(l, inner)).sum();
    let max = rows.saturating_sub(usize::from(r.height.saturating_sub(2)));
    let max = u16::try_from(max).unwrap_or(u16::MAX);
    app.popup_max_scroll.set(max);
    let scroll = app.scroll.min(max);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(ratatui::text::Span::styled(
            title_text(title, r.width),
            theme::title(),
        ));
    clear_popup(f, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        r,
    );
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

/// Clears a popup's box and two columns each side of it, so no fragment of the panes
/// beneath shows at its edges. Rows above and below are left as they are: a row's margin
/// once erased a pane's title line, leaving its box without a name.
pub(crate) fn clear_popup(f: &mut Frame<'_>, r: Rect) {
    let screen = f.area();
    let x = r.x.saturating_sub(2).max(screen.x);
    let right = (r.x + r.width + 2).min(screen.x + screen.width);
    f.render_widget(
        ratatui::widgets::Clear,
        Rect::new(x, r.y, right.saturating_sub(x), r.height),
    );
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

/// How many rows a line takes when word-wrapped at `width` (as the popup's `Wrap` does:
/// greedy, by words; a word longer than the width is cut).
pub(crate) fn wrapped_rows(line: &ratatui::text::Line<'_>, width: usize) -> usize {
    // ratatui's own word wrapper counts (a hand count missed words moved whole to the
    // next row, so a popup's End stopped short of its last lines).
    use ratatui::widgets::{Paragraph, Wrap};
    let width = u16::try_from(width.max(1)).unwrap_or(u16::MAX);
    Paragraph::new(line.clone())
        .wrap(Wrap { trim: false })
        .line_count(width)
        .max(1)
}
