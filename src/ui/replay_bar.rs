//! The replay timeline bar: play state, speed, the replay clock, a progress bar with the
//! failures marked, and the keys.

use ratatui::{
    Frame,
    layout::Rect,
    style::Color,
    text::{Line, Span},
    widgets::Paragraph,
};

use super::theme;
use crate::{app::App, diagnose::human_duration};

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(r) = &app.replay else { return };
    if area.height == 0 || area.width < 10 {
        return;
    }
    let total = (r.end - r.start).num_milliseconds().max(1);
    let done = (r.position - r.start).num_milliseconds().clamp(0, total);
    let head = format!(
        " {} {:>2}x  {}  ",
        if r.playing { "▶" } else { "⏸" },
        r.speed,
        super::when(&r.position)
    );
    let tail = match &r.seeking {
        Some(buf) => format!("  seek to: {buf}▏ (1m30s, 10:43:00, RFC 3339; Enter)"),
        None => format!(
            "  +{} / {}  Space play · +/- speed · n/N change · f failure · : seek",
            human_duration(r.position - r.start),
            human_duration(r.end - r.start)
        ),
    };
    let width = usize::from(area.width)
        .saturating_sub(head.chars().count() + tail.chars().count())
        .max(10);
    let filled = (width as i64 * done / total) as usize;
    let mut bar: Vec<char> = (0..width)
        .map(|i| if i < filled { '━' } else { '─' })
        .collect();
    for t in r.failures.iter().map(|f| &f.at) {
        let at = ((*t - r.start).num_milliseconds().clamp(0, total) * (width as i64 - 1) / total)
            as usize;
        if let Some(c) = bar.get_mut(at) {
            *c = '✗';
        }
    }
    let line = Line::from(vec![
        Span::styled(head, theme::badge(Color::Yellow)),
        Span::raw(" "),
        Span::styled(
            bar.into_iter().collect::<String>(),
            theme::severity(crate::diagnose::Severity::Warn),
        ),
        Span::styled(tail, theme::dim()),
    ]);
    f.render_widget(Paragraph::new(line), area);
}
