//! The applications pane: one entry per app with its driver phase, a bar of executor counts
//! by state, and the number of executors with error findings.

use ratatui::{
    Frame,
    layout::Rect,
    style::Style,
    text::{Line, Span},
    widgets::{Block, Borders, Paragraph},
};

use super::theme;
use crate::{
    app::{App, Focus},
    model::ExecutorState,
};

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    let border = if app.focus == Focus::Apps {
        theme::focused_border()
    } else {
        Style::default()
    };
    let apps = app.apps();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(
            format!(" Applications ({}) ", apps.len()),
            theme::title(),
        ));
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut lines = Vec::new();
    if apps.is_empty() {
        lines.push(Line::styled(
            "no Spark applications in scope yet",
            theme::dim(),
        ));
    }
    let current = app.selected_app_index();
    for (i, a) in apps.iter().enumerate() {
        let selected = Some(i) == current;
        let name = a.app_name.clone().unwrap_or_else(|| a.app_id.clone());
        let alerts = a.alerts();
        let mut head = vec![Span::styled(
            format!("{}{}", if selected { "▶ " } else { "  " }, name),
            if selected {
                theme::title()
            } else {
                Style::default()
            },
        )];
        if alerts > 0 {
            head.push(Span::styled(
                format!(" ⚠{alerts}"),
                theme::severity(crate::diagnose::Severity::Error),
            ));
        }
        lines.push(Line::from(head));
        let c = a.counts();
        let driver = a
            .driver
            .as_ref()
            .and_then(|d| d.phase.clone())
            .unwrap_or_else(|| "?".to_owned());
        let mut bar = vec![Span::styled(
            format!("  {} · drv {} ", a.namespace, driver),
            theme::dim(),
        )];
        for (letter, s) in [
            ('R', ExecutorState::Running),
            ('P', ExecutorState::Pending),
            ('F', ExecutorState::Failed),
            ('D', ExecutorState::Deleted),
        ] {
            let n = c.get(s);
            if n > 0 {
                bar.push(Span::styled(format!("{n}{letter} "), theme::state_style(s)));
            }
        }
        if c.missing > 0 {
            bar.push(Span::styled(format!("{}M", c.missing), theme::missing()));
        }
        let _ = inner_w;
        lines.push(Line::from(bar));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}
