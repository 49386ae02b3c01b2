//! The executors pane: a state map (a grid of ids, coloured and lettered by state, scrolling
//! to keep the selection visible: 10,000 executors fit) or a table; and the strip under it
//! that summarises the selected executor.

use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use spark_triage_core::diagnose::verdict::{Ending, SparkAccount};
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model::{OperatorKind, Time, driver};

use super::{CELL_WIDTH, Layout, theme};
use crate::app::layout::{Density, scroll_offset};
use crate::app::{App, Focus, Sort, StateFilter, View, layout};
use crate::store;
use crate::store::{ExecutorRecord, times};

pub fn render(app: &App, f: &mut Frame<'_>, l: &Layout) {
    let area = l.main;
    if area.width < 3 || area.height < 3 {
        return;
    }
    let visible = app.visible();
    let block = pane_block(app, l, &visible);
    let offset = scroll_offset(app, l);
    match app.view {
        View::Map => {
            let rows = usize::from(area.height.saturating_sub(2));
            let mut lines = Vec::new();
            if visible.is_empty() {
                // An operator's app before any pod: there is nothing to filter.
                let object = app
                    .current_app()
                    .filter(|a| a.executors.is_empty())
                    .and_then(|a| a.operator.as_deref());
                let text = match object.map(|o| o.kind) {
                    Some(OperatorKind::KubeflowScheduled) => {
                        "no pods of its own: its runs are apps of their own"
                    }
                    Some(_) => "no pod yet: the operator's object is all there is",
                    None => "no executors match",
                };
                lines.push(Line::styled(text, app.theme.dim()));
            }
            lines.extend(map_lines(app, l, &visible, offset, rows));
            // Room left under the map: the endings, newest first, so a small app's pane
            // explains itself instead of staying empty.
            let spare = rows.saturating_sub(lines.len());
            if spare >= 2 && offset == 0 {
                lines.extend(endings(
                    app,
                    spare,
                    usize::from(area.width.saturating_sub(2)),
                ));
            }
            f.render_widget(Paragraph::new(lines).block(block), area);
        }
        View::Table => render_table(app, f, area, &visible, offset, block),
    }
}

/// The pane's box: its title (app, counts, filters, sort, view), the app's worst finding.
fn pane_block(app: &App, l: &Layout, visible: &[&Arc<ExecutorRecord>]) -> Block<'static> {
    let area = l.main;
    let total = app.current_app().map_or(0, |a| a.executors.len());
    let border = if app.focus == Focus::Executors {
        app.theme.focused_border()
    } else {
        Style::default()
    };
    let name = app.current_app().map(|a| a.title()).unwrap_or_default();
    // The app's settings and the driver view are in the incident strip above: the title
    // stays short enough for 80 columns.
    let sort = match app.sort {
        Sort::Id => "by id",
        Sort::State => "by state",
        Sort::Age => "by age",
    };
    let of = if name.is_empty() {
        String::new()
    } else {
        format!(" of {name}")
    };
    // The filters in force, named where their effect shows (not only in the footer).
    let mut filters = Vec::new();
    if app.state_filter != StateFilter::All {
        filters.push(app.state_filter.label());
    }
    if !app.filter.is_empty() {
        filters.push(format!("/{}", app.filter));
    }
    let title = format!(
        " Executors{of} ({}{}{}) · {} {sort} ",
        visible.len(),
        if visible.len() == total {
            String::new()
        } else {
            format!(" of {total}")
        },
        if filters.is_empty() {
            String::new()
        } else {
            format!(", {}", filters.join(" "))
        },
        match (app.view, l.density) {
            (View::Table, _) => "table",
            (View::Map, Density::Cells) => "map",
            (View::Map, Density::Letters) => "map, 1 per cell",
            (View::Map, Density::HalfBlocks) => "map, 2 per cell (colour; v: table)",
        },
    );
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(
            super::title_text(&title, area.width),
            theme::title(),
        ));
    // The app's own worst finding (a crash loop, a broken snapshot) on the bottom border:
    // seen without taking a row from the executors.
    // Not the one the strip above already leads with (the app verdict's cause).
    if let Some(worst) = app.current_app().and_then(|a| {
        let cause = a.verdict().cause().code;
        a.findings().iter().find(|f| f.code != cause)
    }) {
        block = block.title_bottom(Span::styled(
            super::title_text(&format!(" {}: {} ", worst.code, worst.summary), area.width),
            app.theme.severity(worst.severity),
        ));
    }
    block
}

/// The table: a header marking the sort, a row per executor from `offset`.
fn render_table(
    app: &App,
    f: &mut Frame<'_>,
    area: Rect,
    visible: &[&Arc<ExecutorRecord>],
    offset: usize,
    block: Block<'_>,
) {
    let selected = app.selected_exec;
    let now = app.store.view().now;
    let key = app
        .current_app()
        .map(|a| (a.namespace.clone(), a.app_id.clone()))
        .unwrap_or_default();
    let cols = columns(area.width.saturating_sub(2));
    let header = Row::new(cols.iter().map(|c| match (c, app.sort) {
        (Col::Id, Sort::Id) | (Col::State, Sort::State) | (Col::Age, Sort::Age) => {
            format!("{}▼", c.name())
        }
        _ => c.name().to_owned(),
    }))
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
            // A gone executor's age is how long ago it ended ("died 3m ago").
            // By the cluster's clocks (`≥` when only first sight is known).
            let age = times::age(e, now);
            let (_, cell_style) = app.theme.cell(e);
            let style = if Some(e.id) == selected {
                cell_style.patch(theme::selected())
            } else {
                cell_style
            };
            let marked = app.marked.contains(&(key.0.clone(), key.1.clone(), e.id));
            Row::new(cols.iter().map(|c| {
                match c {
                    Col::Mark => if marked { "*" } else { " " }.to_owned(),
                    Col::Id => e.id.to_string(),
                    Col::State => state.clone(),
                    Col::Age => age.clone(),
                    Col::Node => e.pod.node_name.as_deref().unwrap_or("-").to_owned(),
                    Col::Exit => e
                        .exit_code()
                        .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                    Col::Reason => e.container_reason().unwrap_or("-").to_owned(),
                    Col::Driver => {
                        if e.driver_disagrees() {
                            format!("{}!", e.driver_word())
                        } else {
                            e.driver_word().to_owned()
                        }
                    }
                    Col::Finding => e
                        .findings()
                        .first()
                        .map_or_else(|| "-".to_owned(), |f| f.code.as_str().to_owned()),
                    Col::Pod => e.pod.name.clone(),
                }
            }))
            .style(style)
        })
        .collect();
    // Without the pod column, the finding takes the rest of the row (at 80 columns
    // the fixed widths once squeezed AGE to `6m37s a`).
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            Col::Finding if !cols.contains(&Col::Pod) => Constraint::Min(8),
            _ => c.width(),
        })
        .collect();
    f.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

/// A table column, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Mark,
    Id,
    State,
    Age,
    Node,
    Exit,
    Reason,
    Driver,
    Finding,
    Pod,
}

impl Col {
    fn name(self) -> &'static str {
        match self {
            Self::Mark => "",
            Self::Id => "ID",
            Self::State => "STATE",
            Self::Age => "AGE",
            Self::Node => "NODE",
            Self::Exit => "EXIT",
            Self::Reason => "REASON",
            Self::Driver => "DRIVER",
            Self::Finding => "FINDING",
            Self::Pod => "POD",
        }
    }

    fn width(self) -> Constraint {
        Constraint::Length(match self {
            Self::Mark => 1,
            Self::Id => 6,
            Self::State => 17,
            Self::Age => 11,
            Self::Node => 14,
            Self::Exit => 5,
            Self::Reason => 17,
            Self::Driver => 8,
            Self::Finding => 21,
            Self::Pod => return Constraint::Min(10),
        })
    }
}

/// The columns that fit `width`: POD, NODE and DRIVER go first, then REASON and EXIT, so an
/// 80-column table keeps the id, state, age and finding readable.
fn columns(width: u16) -> Vec<Col> {
    let all = [
        Col::Mark,
        Col::Id,
        Col::State,
        Col::Age,
        Col::Node,
        Col::Exit,
        Col::Reason,
        Col::Driver,
        Col::Finding,
        Col::Pod,
    ];
    let need = |cols: &[Col]| -> u16 {
        cols.iter()
            .map(|c| match c.width() {
                Constraint::Length(n) | Constraint::Min(n) => n + 1,
                _ => 0,
            })
            .sum()
    };
    let mut cols = all.to_vec();
    // The finding counts as its narrowest (it takes the rest of the row).
    let need = |cols: &[Col]| need(cols) - if cols.contains(&Col::Pod) { 0 } else { 13 };
    for drop in [Col::Pod, Col::Node, Col::Driver, Col::Reason, Col::Exit] {
        if need(&cols) <= width {
            break;
        }
        cols.retain(|c| *c != drop);
    }
    cols
}

/// The map's lines from map row `offset`: cells, letters or half blocks (`Layout::density`).
fn map_lines(
    app: &App,
    l: &Layout,
    visible: &[&std::sync::Arc<ExecutorRecord>],
    offset: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    let cols = usize::from(l.map_columns.max(1));
    let selected = app.selected_exec;
    let key = app
        .current_app()
        .map(|a| (a.namespace.clone(), a.app_id.clone()))
        .unwrap_or_default();
    let marked = |e: &ExecutorRecord| app.marked.contains(&(key.0.clone(), key.1.clone(), e.id));
    let styled = |e: &ExecutorRecord, style: Style| {
        if Some(e.id) == selected {
            style.patch(theme::selected())
        } else if marked(e) {
            style.add_modifier(Modifier::UNDERLINED)
        } else {
            style
        }
    };
    let ruler = |first: &ExecutorRecord| {
        Span::styled(
            format!(
                "{:>w$} ",
                first.id,
                w = usize::from(l.ruler.saturating_sub(1))
            ),
            app.theme.dim(),
        )
    };
    let per = l.lines_per_row();
    let mut chunks = visible.chunks(cols).skip(offset);
    let mut lines = Vec::new();
    while lines.len() < rows {
        let Some(top) = chunks.next() else { break };
        let mut spans = Vec::new();
        match l.density {
            Density::Cells => {
                for e in top {
                    let (letter, style) = app.theme.cell(e);
                    let mark = if marked(e) {
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
                    spans.push(Span::styled(text, styled(e, style)));
                }
            }
            Density::Letters => {
                spans.push(ruler(top[0]));
                for e in top {
                    let (letter, style) = app.theme.cell(e);
                    spans.push(Span::styled(letter.to_string(), styled(e, style)));
                }
            }
            Density::HalfBlocks => {
                let bottom = if per == 2 { chunks.next() } else { None };
                spans.push(ruler(top[0]));
                for (j, e) in top.iter().enumerate() {
                    let under = bottom.and_then(|b| b.get(j));
                    let chosen = [Some(e), under]
                        .into_iter()
                        .flatten()
                        .find(|x| Some(x.id) == selected);
                    if let Some(sel) = chosen {
                        let (letter, style) = app.theme.cell(sel);
                        spans.push(Span::styled(letter.to_string(), styled(sel, style)));
                        continue;
                    }
                    let colour =
                        |x: &ExecutorRecord| app.theme.cell(x).1.fg.unwrap_or(Color::Reset);
                    let mut style = Style::default().fg(colour(e));
                    if let Some(u) = under {
                        style = style.bg(colour(u));
                    }
                    spans.push(Span::styled("▀", style));
                }
            }
        }
        lines.push(Line::from(spans));
    }
    lines
}

/// Lines for the room under the map: the app's ended executors with a warning or an error,
/// newest first (when, id, cause, summary), cut to `width`.
fn endings(app: &App, rows: usize, width: usize) -> Vec<Line<'static>> {
    let now = app.store.view().now;
    let ended = ended_badly(app);
    if ended.is_empty() {
        return Vec::new();
    }
    // The blank line above the heading goes first when rows are short.
    let blank = rows >= ended.len() + 2;
    let mut out = Vec::new();
    if blank {
        out.push(Line::raw(""));
    }
    out.push(Line::styled("Endings, newest first", theme::title()));
    let shown: Vec<_> = ended
        .into_iter()
        .take(rows.saturating_sub(out.len()))
        .filter_map(|(at, e)| Some((at, e, e.verdict.cause()?)))
        .collect();
    let agos: Vec<String> = shown
        .iter()
        .map(|(at, _, _)| now.map_or_else(String::new, |n| format!("{} ago", times::span(n, *at))))
        .collect();
    // One column for the ages (`12m00s ago` once pushed its row one to the right).
    let age_w = agos
        .iter()
        .map(|a| a.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    for ((_, e, f), ago) in shown.into_iter().zip(agos) {
        let label = store::cause_label(f.code, e.exit_code());
        let text = format!("{ago:>age_w$}  executor {:<5} {label}: {}", e.id, f.summary);
        // Cut at a word with `…` (never mid-word: the detail has the rest).
        out.push(Line::styled(
            super::fit(&text, width),
            app.theme.severity(f.severity),
        ));
    }
    out
}

/// The app's executors that ended with a warning or an error, newest first by the
/// cluster's clocks; then the ones killed through spark-triage (the operator's own acts,
/// never before an incident).
fn ended_badly(app: &App) -> Vec<((Time, times::Clock), &ExecutorRecord)> {
    let Some(a) = app.current_app() else {
        return Vec::new();
    };
    let mut ended: Vec<((Time, times::Clock), &ExecutorRecord)> = a
        .executors
        .values()
        .filter(|e| {
            (e.verdict.severity().is_some_and(|s| s != Severity::Info) || killed(e))
                && (e.state().is_final() || e.is_missing() || e.verdict.ending.is_gone())
        })
        .filter_map(|e| Some((times::ended(e)?, &**e)))
        .collect();
    ended.sort_by(|x, y| {
        killed(x.1)
            .cmp(&killed(y.1))
            .then(y.0.0.cmp(&x.0.0))
            .then(y.1.id.cmp(&x.1.id))
    });
    ended
}

/// Killed through spark-triage (its verdict says so first).
fn killed(e: &ExecutorRecord) -> bool {
    e.verdict
        .cause()
        .is_some_and(|f| f.code == Code::KilledByTool)
}

/// The rows the executors pane has content for at this inner width: the map's rows and
/// the endings under it (cells at their widest), or the table's.
pub fn content_rows(app: &App, width: u16) -> u16 {
    let n = app.visible().len();
    let rows = match app.view {
        View::Table => n + 1,
        View::Map => {
            let cols = usize::from((width / layout::CELL_WIDTH).max(1));
            let ended = ended_badly(app).len();
            n.div_ceil(cols) + if ended > 0 { 2 + ended } else { 0 }
        }
    };
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// The rows the Selected strip's lines wrap to at this inner width.
pub fn strip_rows(app: &App, width: u16) -> u16 {
    let lines = strip_lines(app);
    let n = Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .line_count(width.max(1));
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The selected executor in a few lines: state, pod, the first finding and its hint.
pub fn render_strip(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height < 3 || area.width < 3 {
        return;
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" Selected ", theme::title()));
    f.render_widget(
        Paragraph::new(strip_lines(app))
            .block(block)
            .wrap(Wrap { trim: true }),
        area,
    );
}

fn strip_lines(app: &App) -> Vec<Line<'static>> {
    // A notice (an action's result, why a key is off) is the footer's flash line.
    let Some(e) = app.selected() else {
        return vec![Line::styled("nothing selected", app.theme.dim())];
    };
    let (letter, style) = app.theme.cell(e);
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
    } else if e.verdict.ending != Ending::Present {
        head.push(Span::styled(
            format!(" · {}", e.verdict.ending.describe()),
            app.theme.dim(),
        ));
    }
    if let Some(code) = e.exit_code() {
        head.push(Span::raw(format!(" · exit {code}")));
    }
    if let Some(r) = e.container_reason() {
        head.push(Span::raw(format!(" · {r}")));
    }
    head.push(Span::styled(format!(" · {}", e.pod.name), app.theme.dim()));
    let mut lines: Vec<Line<'static>> = vec![Line::from(head)];
    match e.findings().first() {
        Some(fd) => {
            lines.push(Line::from(vec![
                Span::styled(format!("{} ", fd.code), app.theme.severity(fd.severity)),
                Span::raw(fd.summary.clone()),
            ]));
            lines.push(Line::styled(format!("hint: {}", fd.hint), app.theme.dim()));
        }
        None => lines.push(Line::styled("no findings", app.theme.dim())),
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
                driver::reason_headline(x.remove_reason.as_deref().unwrap_or("-"))
            ),
        };
        lines.push(Line::styled(text, app.theme.dim()));
    }
    lines
}

/// Whether Spark counted it, in a few words (the strip and the detail say the same).
pub(super) fn counted_words(v: &SparkAccount) -> &'static str {
    if v.counted {
        "counted as a failure"
    } else if v.caused_by_app {
        "blamed on the app, not counted as a failure"
    } else {
        "not counted against the app"
    }
}

/// `counted_words` with the setting it counts toward and any version note.
pub(super) fn counted_text(v: &SparkAccount) -> String {
    let mut s = counted_words(v).to_owned();
    if v.counted {
        s.push_str(" (spark.executor.maxNumFailures)");
    }
    if let Some(n) = &v.note {
        s.push_str(&format!(" ({n})"));
    }
    s
}
