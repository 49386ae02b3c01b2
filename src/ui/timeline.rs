//! The application timeline popup: executors added, running, failed with the reason,
//! deleted, missing, in order.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;
use spark_triage_core::model::cost::lanes::{Cell, MAX_LANES};
use spark_triage_core::model::cost::{AppCost, ms};

use crate::app::App;
use crate::store::{AppRecord, TimelineEntry};

/// Lanes drawn at most (the rest are counted).
const MOST_LANES: usize = 24;

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
    if let Some(cost) = a.cost.as_deref().filter(|c| !c.lanes.is_empty()) {
        lanes(app, a, cost, inner_w, &mut lines);
    }
    // What was paid for and not used (idle time, what shuffle tracking held), then what
    // its pods cost beside (pods deleted before they ran, memory against its peak).
    let mut paid = match a.cost.as_deref() {
        Some(c) if c.in_progress && c.waste.executors > 0 => {
            let mut l = vec!["so far (its event log is still being written):".to_owned()];
            l.extend(c.waste.lines());
            l
        }
        Some(c) => c.waste.lines(),
        None => Vec::new(),
    };
    paid.extend(a.pod_cost().lines());
    for l in &paid {
        lines.extend(
            super::wrap_words(l, inner_w)
                .into_iter()
                .map(|p| Line::styled(p, app.theme.dim())),
        );
    }
    if !paid.is_empty() {
        lines.push(Line::raw(""));
    }
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

/// The app's executors over time, from its event log: a lane per executor (busy, idle, its
/// end), and above them where the stage attempts its losses added ran.
fn lanes(app: &App, a: &AppRecord, cost: &AppCost, width: usize, lines: &mut Vec<Line<'_>>) {
    let Some(start) = cost
        .started
        .or_else(|| cost.lanes.iter().map(|l| l.added).min())
    else {
        return;
    };
    const LABEL: usize = 11;
    let cols = width.saturating_sub(LABEL).max(1);
    lines.push(Line::styled(
        format!(
            "Executors over {}: █ busy ░ idle ✗ failed ┤ ended ▲ stage retries",
            ms(cost.run_ms)
        ),
        app.theme.dim(),
    ));
    let span = cost.run_ms.max(1) as f64;
    let col = |t: Time| {
        let off = (t - start).num_milliseconds().max(0) as f64;
        ((off / span) * cols as f64).min(cols as f64 - 1.0) as usize
    };
    let mut ruler = vec![' '; cols];
    let end = start + chrono::TimeDelta::milliseconds(i64::try_from(cost.run_ms).unwrap_or(0));
    for r in cost.losses.iter().flat_map(|l| &l.reruns) {
        let (from, to) = (col(r.submitted), col(r.completed.unwrap_or(end)));
        ruler[from..=to.max(from)].fill('▲');
    }
    if ruler.contains(&'▲') {
        lines.push(Line::from(vec![
            Span::raw(" ".repeat(LABEL)),
            Span::styled(
                ruler.into_iter().collect::<String>(),
                app.theme.severity(Severity::Warn),
            ),
        ]));
    }
    for lane in cost.lanes.iter().take(MOST_LANES) {
        let failed = a
            .executors
            .values()
            .rev()
            .find(|e| e.id == lane.executor)
            .is_some_and(|e| e.verdict.is_failure());
        let mut spans = vec![Span::styled(
            format!("exec {:<5} ", lane.executor),
            app.theme.dim(),
        )];
        for cell in lane.cells(start, cost.run_ms, cols) {
            spans.push(match cell {
                Cell::Absent => Span::raw(" "),
                Cell::Idle => Span::styled("░", app.theme.dim()),
                Cell::Busy => Span::raw("█"),
                Cell::End if failed => Span::styled("✗", app.theme.severity(Severity::Error)),
                Cell::End => Span::styled("┤", app.theme.dim()),
            });
        }
        lines.push(Line::from(spans));
    }
    let more = cost.lanes.len().saturating_sub(MOST_LANES) + cost.lanes_left_out as usize;
    if more > 0 {
        lines.push(Line::styled(
            format!("{more} more executors not drawn (report --svg draws up to {MAX_LANES})"),
            app.theme.dim(),
        ));
    }
    lines.push(Line::raw(""));
}
