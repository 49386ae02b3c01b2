//! The application timeline popup: executors added, running, failed with the reason,
//! deleted, missing, in order.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::store::TimelineEntry;

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
    let mut entries: Vec<(usize, &TimelineEntry)> = a.timeline.iter().enumerate().collect();
    entries.sort_by(|(i, x), (j, y)| {
        y.at.timestamp()
            .cmp(&x.at.timestamp())
            .then(x.executor.cmp(&y.executor))
            .then(i.cmp(j))
    });
    // Each entry's text wrapped under itself, right of its time (a hanging indent), so a
    // message is read whole at 80 columns; on a screen too narrow for that, under its time.
    let inner_w = usize::from(r.width.saturating_sub(2)).max(1);
    // What the list is, above it: the title keeps only the name and the keys (the keys
    // were the part cut at 60 columns).
    let mut lines: Vec<Line<'_>> = vec![Line::styled(
        format!(
            "{} entries, newest first; * first seen by this view",
            a.timeline.len()
        ),
        app.theme.dim(),
    )];
    for (_, e) in entries {
        let mark = if e.clock.is_bound() { "*" } else { " " };
        let when = format!("{}{mark} ", app.when(&e.at));
        let indent = when.chars().count();
        let beside = inner_w.saturating_sub(indent);
        if beside >= 24 {
            for (i, piece) in super::wrap_words(&e.text, beside).into_iter().enumerate() {
                let head = if i == 0 {
                    when.clone()
                } else {
                    " ".repeat(indent)
                };
                lines.push(Line::from(vec![
                    Span::styled(head, app.theme.dim()),
                    Span::raw(piece),
                ]));
            }
        } else {
            lines.push(Line::styled(when, app.theme.dim()));
            lines.extend(
                super::wrap_words(&e.text, inner_w.saturating_sub(2))
                    .into_iter()
                    .map(|p| Line::raw(format!("  {p}"))),
            );
        }
    }
    let name = a.app_name.clone().unwrap_or_else(|| a.app_id.clone());
    let title = format!(" Timeline of {name} · ↑↓ scroll · Esc close ");
    super::scrolled_popup(f, r, &title, lines, app);
}
