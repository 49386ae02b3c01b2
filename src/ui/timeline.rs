//! The application timeline popup: executors added, running, failed with the reason,
//! deleted, missing, in order.

use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Paragraph},
};

use super::theme;
use crate::app::App;

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(a) = app.current_app() else {
        return;
    };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    // Newest first by the cluster's clocks (the store keeps them in time order); within one
    // second (what the screen shows) by executor id (1, 2, 10), then as they came. A time
    // only this view knows (when it first saw a thing) is marked `*`.
    let mut entries: Vec<(usize, &crate::store::TimelineEntry)> =
        a.timeline.iter().enumerate().collect();
    entries.sort_by(|(i, x), (j, y)| {
        y.at.timestamp()
            .cmp(&x.at.timestamp())
            .then(x.executor.cmp(&y.executor))
            .then(i.cmp(j))
    });
    let lines: Vec<Line<'_>> = entries
        .into_iter()
        .map(|(_, e)| {
            let mark = if e.clock.is_bound() { "*" } else { " " };
            Line::from(vec![
                Span::styled(format!("{}{mark} ", app.when(&e.at)), app.theme.dim()),
                Span::raw(e.text.clone()),
            ])
        })
        .collect();
    let name = a.app_name.clone().unwrap_or_else(|| a.app_id.clone());
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        super::title_text(
            &format!(
                " Timeline of {name} ({} entries, newest first; * first seen by this view) · ↑↓ scroll · Esc close ",
                a.timeline.len()
            ),
            r.width,
        ),
        theme::title(),
    ));
    super::clear_popup(f, r);
    f.render_widget(
        Paragraph::new(lines).block(block).scroll((app.scroll, 0)),
        r,
    );
}
