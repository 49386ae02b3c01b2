//! The application timeline popup: executors added, running, failed with the reason,
//! deleted, missing, in order.

use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Clear, Paragraph},
};

use super::theme;
use crate::{app::App, model::fmt_time};

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(a) = app.current_app() else {
        return;
    };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    let lines: Vec<Line<'_>> = a
        .timeline
        .iter()
        .map(|e| {
            Line::from(vec![
                Span::styled(format!("{} ", fmt_time(&e.at)), theme::dim()),
                Span::raw(e.text.clone()),
            ])
        })
        .collect();
    let name = a.app_name.clone().unwrap_or_else(|| a.app_id.clone());
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        super::title_text(
            &format!(
                " Timeline of {name} ({} entries) · ↑↓ scroll · Esc close ",
                a.timeline.len()
            ),
            r.width,
        ),
        theme::title(),
    ));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(block).scroll((app.scroll, 0)),
        r,
    );
}
