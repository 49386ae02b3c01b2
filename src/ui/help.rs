//! The help popup, generated from the keymap.

use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Clear, Paragraph},
};

use super::{centered, theme};
use crate::app::keymap::KEYMAP;

pub fn render(f: &mut Frame<'_>, area: Rect) {
    let r = centered(area, 76, KEYMAP.len() as u16 + 6);
    if r.width < 3 || r.height < 3 {
        return;
    }
    let mut lines: Vec<Line<'_>> = KEYMAP
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!(" {:<9}", b.label), theme::title()),
                Span::raw(b.help),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(" Map letters: R running P pending F failed S succeeded D deleted T terminating U unknown M missing · marks: * marked, ! pod and driver disagree, h held", theme::dim()));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" Help · Esc close ", theme::title()));
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(lines).block(block), r);
}
