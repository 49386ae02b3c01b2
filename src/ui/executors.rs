//! The executors pane: a state map (a grid of ids, coloured and lettered by state, scrolling
//! to keep the selection visible: 10,000 executors fit) or a table; and the strip under it
//! that summarises the selected executor.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    style::Style,
    text::{Line, Span},
    widgets::{Block, Borders, Paragraph, Row, Table, Wrap},
};

use super::{CELL_WIDTH, Layout, theme};
use crate::app::layout::scroll_offset;
use crate::{
    app::{App, Focus, View},
    diagnose::human_duration,
};

pub fn render(app: &App, f: &mut Frame<'_>, l: &Layout) {
    let area = l.main;
    if area.width < 3 || area.height < 3 {
        return;
    }
    let visible = app.visible();
    let total = app.current_app().map_or(0, |a| a.executors.len());
    let border = if app.focus == Focus::Executors {
        theme::focused_border()
    } else {
        Style::default()
    };
    let name = app
        .current_app()
        .map(|a| a.app_name.clone().unwrap_or_else(|| a.app_id.clone()))
        .unwrap_or_default();
    let (dot, held, kept) = app.current_app().map_or((true, 0, 0), |a| {
        (
            a.config.delete_on_termination,
            a.executors.values().filter(|e| e.pod.is_held()).count(),
            a.executors.values().filter(|e| e.pod.is_inactive()).count(),
        )
    });
    let hold_on = app
        .current_app()
        .and_then(|a| a.driver.as_ref())
        .and_then(|d| d.hold_until)
        .is_some();
    let driver_view = app
        .current_app()
        .and_then(|a| a.driver_api.as_ref())
        .map(|d| match &d.unavailable {
            Some(r) => format!(" · driver view unavailable: {r}"),
            None => format!(" · driver: {} active", d.active),
        })
        .unwrap_or_default();
    let title = format!(
        " Executors of {name} ({}{}) · {} · deleteOnTermination={dot} · held {held} · kept by Spark {kept}{}{driver_view} ",
        visible.len(),
        if visible.len() == total {
            String::new()
        } else {
            format!(" of {total}")
        },
        match app.view {
            View::Map => "map",
            View::Table => "table",
        },
        if hold_on { " · HOLD ON" } else { "" }
    );
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(title, theme::title()));
    // The app's own worst finding (a crash loop, a broken snapshot) on the bottom border:
    // seen without taking a row from the executors.
    if let Some(worst) = app
        .current_app()
        .and_then(|a| a.findings().into_iter().next())
    {
        block = block.title_bottom(Span::styled(
            format!(" {}: {} ", worst.code, worst.summary),
            theme::severity(worst.severity),
        ));
    }
    let offset = scroll_offset(app, l);
    let selected = app.selected_exec;
    match app.view {
        View::Map => {
            let cols = usize::from(l.map_columns.max(1));
            let rows = usize::from(area.height.saturating_sub(2));
            let mut lines = Vec::new();
            if visible.is_empty() {
                lines.push(Line::styled("no executors match", theme::dim()));
            }
            for chunk in visible.chunks(cols).skip(offset).take(rows) {
                let mut spans = Vec::new();
                let key = app
                    .current_app()
                    .map(|a| (a.namespace.clone(), a.app_id.clone()))
                    .unwrap_or_default();
                for e in chunk {
                    let (letter, style) = theme::cell(e);
                    let mark = if app.marked.contains(&(key.0.clone(), key.1.clone(), e.id)) {
                        '*'
                    } else if e.driver_disagrees() {
                        '!'
                    } else if e.pod.is_held() {
                        'h'
                    } else {
                        ' '
                    };
                    let text = format!(
                        "{:>w$}{letter}{mark}",
                        e.id,
                        w = usize::from(CELL_WIDTH) - 2
                    );
                    let style = if Some(e.id) == selected {
                        style.patch(theme::selected())
                    } else {
                        style
                    };
                    spans.push(Span::styled(text, style));
                }
                lines.push(Line::from(spans));
            }
            f.render_widget(Paragraph::new(lines).block(block), area);
        }
        View::Table => {
            let now = app.store.view().now;
            let header = Row::new([
                "ID", "STATE", "AGE", "NODE", "EXIT", "REASON", "DRIVER", "FINDING", "POD",
            ])
            .style(theme::title());
            let rows_fit = usize::from(area.height.saturating_sub(3));
            let rows: Vec<Row<'_>> = visible
                .iter()
                .skip(offset)
                .take(rows_fit)
                .map(|e| {
                    let state = if e.is_missing() {
                        format!("{} (missing)", e.state())
                    } else {
                        e.state().to_string()
                    };
                    let age =
                        now.map_or_else(|| "-".to_owned(), |n| human_duration(n - e.first_seen));
                    let style = if Some(e.id) == selected {
                        theme::state_style(e.state()).patch(theme::selected())
                    } else {
                        theme::state_style(e.state())
                    };
                    Row::new(vec![
                        e.id.to_string(),
                        state,
                        age,
                        e.pod.node_name.clone().unwrap_or_else(|| "-".to_owned()),
                        e.exit_code()
                            .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                        e.container_reason().unwrap_or("-").to_owned(),
                        if e.driver_disagrees() {
                            format!("{}!", e.driver_word())
                        } else {
                            e.driver_word().to_owned()
                        },
                        e.findings()
                            .first()
                            .map_or_else(|| "-".to_owned(), |f| f.code.as_str().to_owned()),
                        e.pod.name.clone(),
                    ])
                    .style(style)
                })
                .collect();
            let widths = [
                Constraint::Length(6),
                Constraint::Length(19),
                Constraint::Length(7),
                Constraint::Length(14),
                Constraint::Length(5),
                Constraint::Length(17),
                Constraint::Length(8),
                Constraint::Length(21),
                Constraint::Min(10),
            ];
            f.render_widget(Table::new(rows, widths).header(header).block(block), area);
        }
    }
}

/// The selected executor in a few lines: state, pod, the first finding and its hint.
pub fn render_strip(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height < 3 || area.width < 3 {
        return;
    }
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        match &app.notice {
            Some(n) => format!(" Selected · {n} "),
            None => " Selected ".to_owned(),
        },
        theme::title(),
    ));
    let Some(e) = app.selected() else {
        f.render_widget(
            Paragraph::new(Line::styled("nothing selected", theme::dim())).block(block),
            area,
        );
        return;
    };
    let (letter, style) = theme::cell(e);
    let mut head = vec![
        Span::styled(format!("executor {} ", e.id), theme::title()),
        Span::styled(format!("[{letter}] {}", e.state()), style),
    ];
    // What Spark did about it comes first: it says whether the app is at risk.
    if let Some(v) = &e.verdict.spark {
        head.push(Span::styled(format!("; {}", counted_words(v)), style));
    }
    if e.is_missing() {
        head.push(Span::styled(" · missing", style));
    } else if e.verdict.ending != crate::diagnose::verdict::Ending::Present {
        head.push(Span::styled(
            format!(" · {}", e.verdict.ending.describe()),
            theme::dim(),
        ));
    }
    if let Some(code) = e.exit_code() {
        head.push(Span::raw(format!(" · exit {code}")));
    }
    if let Some(r) = e.container_reason() {
        head.push(Span::raw(format!(" · {r}")));
    }
    head.push(Span::styled(format!(" · {}", e.pod.name), theme::dim()));
    let mut lines = vec![Line::from(head)];
    match e.findings().first() {
        Some(fd) => {
            lines.push(Line::from(vec![
                Span::styled(format!("{} ", fd.code), theme::severity(fd.severity)),
                Span::raw(fd.summary.clone()),
            ]));
            lines.push(Line::styled(format!("hint: {}", fd.hint), theme::dim()));
        }
        None => lines.push(Line::styled("no findings", theme::dim())),
    }
    if let Some(d) = &e.driver {
        let text = match &d.exec {
            None => "driver: does not list this executor".to_owned(),
            Some(x) if x.active => format!(
                "driver: active · tasks {} done, {} failed",
                x.completed_tasks, x.failed_tasks
            ),
            Some(x) => format!(
                "driver: removed · {}",
                crate::model::driver::reason_headline(x.remove_reason.as_deref().unwrap_or("-"))
            ),
        };
        lines.push(Line::styled(text, theme::dim()));
    }
    f.render_widget(
        Paragraph::new(lines).block(block).wrap(Wrap { trim: true }),
        area,
    );
}

/// Whether Spark counted it, in a few words (the strip and the detail say the same).
pub(super) fn counted_words(v: &crate::diagnose::verdict::SparkAccount) -> &'static str {
    if v.counted {
        "counted as a failure"
    } else if v.caused_by_app {
        "blamed on the app, not counted as a failure"
    } else {
        "not counted against the app"
    }
}

/// `counted_words` with the setting it counts toward and any version note.
pub(super) fn counted_text(v: &crate::diagnose::verdict::SparkAccount) -> String {
    let mut s = counted_words(v).to_owned();
    if v.counted {
        s.push_str(" (spark.executor.maxNumFailures)");
    }
    if let Some(n) = &v.note {
        s.push_str(&format!(" ({n})"));
    }
    s
}
